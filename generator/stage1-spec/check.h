/* Checked YAML values with located errors, for the spec and study readers.
 * Each reader checks one node's type and range; on failure it records
 * "FILE:LINE:COL: what is wrong, and what would be right" (the file is the
 * node's own when it names one, else the checker's path) and returns -1. */
#ifndef RESGEN_CHECK_H
#define RESGEN_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "nearest.h"
#include "yaml_tree.h"

#define COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))

struct checker {
	const char *path;
	struct diag *d;
};

int error_at(const struct checker *c, const struct ynode *node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "a, b or c" */
void join(char *out, size_t size, const char *const *words, int count);

int expect_map(const struct checker *c, const struct ynode *node, const char *what);
int expect_scalar(const struct checker *c, const struct ynode *node, const char *key,
		  const char *type);
/* Rejects keys outside allowed, suggesting the nearest allowed one. */
int check_keys(const struct checker *c, const struct ynode *map, const char *what,
	       const char *const *allowed, int count);
/* The value of a required key in *out, or an error naming what lacks it. */
int require(const struct checker *c, const struct ynode *map, const char *key, const char *what,
	    const struct ynode **out);

/* Numbers in the one notation specs allow (specs/README.md): plain decimal,
 * reals with an optional fraction and exponent. get_*: fallback when the
 * key is absent. min_open: the range excludes min itself. */
int parse_integer(const struct checker *c, const struct ynode *node, const char *key, long min,
		  long max, long *out);
int get_integer(const struct checker *c, const struct ynode *map, const char *key, long min,
		long max, long fallback, long *out);
int get_int(const struct checker *c, const struct ynode *map, const char *key, int min, int max,
	    int fallback, int *out);
int parse_real(const struct checker *c, const struct ynode *node, const char *key, double min,
	       bool min_open, double max, double *out);
int get_real(const struct checker *c, const struct ynode *map, const char *key, double min,
	     bool min_open, double max, double fallback, double *out);
int get_bool(const struct checker *c, const struct ynode *map, const char *key, bool fallback,
	     bool *out);
/* One of names, its index in *out. what: the mapping's name for the message
 * when a required key is missing; NULL when optional (fallback applies). */
int parse_choice(const struct checker *c, const struct ynode *node, const char *key,
		 const char *const *names, int count, int *out);
int get_choice(const struct checker *c, const struct ynode *map, const char *what, const char *key,
	       const char *const *names, int count, int fallback, int *out);
/* A list of 1 to max_count integers, each in [min, max]. */
int get_integer_list(const struct checker *c, const struct ynode *node, const char *key, long min,
		     long max, int max_count, long *out, int *count);

/* A name that becomes a file name: 1 to max characters of a-z, 0-9 and
 * '-', not starting with '-'; the message suggests one (example when the
 * text has nothing to keep). Copied into out (max + 1 bytes). */
int check_word(const struct checker *c, const struct ynode *node, const char *key, int max,
	       const char *example, char *out);

#endif
