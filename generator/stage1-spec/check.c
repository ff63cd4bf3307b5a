/* Checked YAML values: each reader takes a node of a parsed file, checks its
 * type and range, and on failure records one located line (FILE:LINE:COL:
 * what is wrong, and what would be right) and returns -1. Shared by the
 * spec and the study readers. */
#include "check.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nearest.h"
#include "plain_number.h"

int error_at(const struct checker *c, const struct ynode *node, const char *fmt, ...)
{
	char message[512];
	va_list args;
	va_start(args, fmt);
	vsnprintf(message, sizeof message, fmt, args);
	va_end(args);
	return diag_at(c->d, node->file ? node->file : c->path, node->line, node->column, "%s", message);
}

void join(char *out, size_t size, const char *const *words, int count)
{
	out[0] = '\0';
	for (int i = 0; i < count; i++) {
		size_t used = strlen(out);
		snprintf(out + used, size - used, "%s%s", i ? (i == count - 1 ? " or " : ", ") : "",
			 words[i]);
	}
}

int expect_map(const struct checker *c, const struct ynode *node, const char *what)
{
	if (node->kind == YNODE_MAP)
		return 0;
	return error_at(c, node, "'%s' must be a mapping of keys to values, not %s", what,
			node->kind == YNODE_SEQ ? "a list" : "a single value");
}

/* Rejects keys outside allowed, suggesting the nearest allowed one. */
int check_keys(const struct checker *c, const struct ynode *map, const char *what,
		      const char *const *allowed, int count)
{
	for (size_t i = 0; i < map->count; i++) {
		const char *key = map->keys[i]->text;
		int j = 0;
		while (j < count && strcmp(key, allowed[j]) != 0)
			j++;
		if (j == count)
			return error_at(c, map->keys[i], "unknown key '%s' in %s; did you mean '%s'?", key,
					what, nearest(key, allowed, count));
	}
	return 0;
}

int require(const struct checker *c, const struct ynode *map, const char *key,
		   const char *what, const struct ynode **out)
{
	*out = ynode_get(map, key);
	if (*out)
		return 0;
	return error_at(c, map, "%s is missing required key '%s'", what, key);
}

int expect_scalar(const struct checker *c, const struct ynode *node, const char *key,
			 const char *type)
{
	if (node->kind == YNODE_SCALAR)
		return 0;
	return error_at(c, node, "'%s' must be %s, not %s", key, type,
			node->kind == YNODE_MAP ? "a mapping" : "a list");
}

/* Numbers in the one notation: runtime/shared/plain_number.h. */
int parse_integer(const struct checker *c, const struct ynode *node, const char *key,
			 long min, long max, long *out)
{
	if (expect_scalar(c, node, key, "an integer") != 0)
		return -1;
	char *end;
	errno = 0;
	long value = strtol(node->text, &end, 10);
	if (!node->plain || !plain_number(node->text, false) || *end != '\0')
		return error_at(c, node,
				"'%s' must be an integer, not '%s'; write it in plain decimal, "
				"such as 110 (no quotes, leading zeros or hex)",
				key, node->text);
	if (errno == ERANGE || value < min || value > max)
		return error_at(c, node, "'%s' is %s, out of range; it must be from %ld to %ld", key,
				node->text, min, max);
	*out = value;
	return 0;
}

int get_integer(const struct checker *c, const struct ynode *map, const char *key,
		       long min, long max, long fallback, long *out)
{
	const struct ynode *node = ynode_get(map, key);
	if (!node) {
		*out = fallback;
		return 0;
	}
	return parse_integer(c, node, key, min, max, out);
}

int get_int(const struct checker *c, const struct ynode *map, const char *key, int min,
		   int max, int fallback, int *out)
{
	long value;
	if (get_integer(c, map, key, min, max, fallback, &value) != 0)
		return -1;
	*out = (int)value;
	return 0;
}

/* min_open: the range excludes min itself. */
int parse_real(const struct checker *c, const struct ynode *node, const char *key, double min,
		      bool min_open, double max, double *out)
{
	if (expect_scalar(c, node, key, "a number") != 0)
		return -1;
	char *end;
	errno = 0;
	double value = strtod(node->text, &end);
	/* In the plain notation, a value past double's range is out of range,
	 * not misspelt: beyond its top it reads as infinite, below its
	 * smallest normal as the nearest subnormal, or 0. */
	if (!node->plain || !plain_number(node->text, true) || *end != '\0')
		return error_at(c, node,
				"'%s' must be a number, not '%s'; write it in plain decimal, such "
				"as 0.1 or 1e-4 (no quotes, hex, .inf or .nan)",
				key, node->text);
	if (value < min || (min_open && value == min) || value > max)
		return error_at(c, node, "'%s' is %s, out of range; it must be %s %g and at most %g", key,
				node->text, min_open ? "above" : "at least", min, max);
	*out = value;
	return 0;
}

int get_real(const struct checker *c, const struct ynode *map, const char *key, double min,
		    bool min_open, double max, double fallback, double *out)
{
	const struct ynode *node = ynode_get(map, key);
	if (!node) {
		*out = fallback;
		return 0;
	}
	return parse_real(c, node, key, min, min_open, max, out);
}

int get_bool(const struct checker *c, const struct ynode *map, const char *key,
		    bool fallback, bool *out)
{
	const struct ynode *node = ynode_get(map, key);
	if (!node) {
		*out = fallback;
		return 0;
	}
	if (expect_scalar(c, node, key, "true or false") != 0)
		return -1;
	if (node->plain && strcmp(node->text, "true") == 0)
		*out = true;
	else if (node->plain && strcmp(node->text, "false") == 0)
		*out = false;
	else
		return error_at(c, node, "'%s' must be true or false, not '%s'", key, node->text);
	return 0;
}

int parse_choice(const struct checker *c, const struct ynode *node, const char *key,
			const char *const *names, int count, int *out)
{
	char choices[256];
	join(choices, sizeof choices, names, count);
	if (node->kind != YNODE_SCALAR)
		return error_at(c, node, "'%s' must be one of %s", key, choices);
	for (int i = 0; i < count; i++)
		if (strcmp(node->text, names[i]) == 0) {
			*out = i;
			return 0;
		}
	return error_at(c, node, "'%s' is '%s', which is not one of %s; did you mean '%s'?", key,
			node->text, choices, nearest(node->text, names, count));
}

/* what: the mapping's name, for the message when a required key is missing;
 * NULL when the key is optional and fallback applies. */
int get_choice(const struct checker *c, const struct ynode *map, const char *what,
		      const char *key, const char *const *names, int count, int fallback, int *out)
{
	const struct ynode *node = ynode_get(map, key);
	if (!node) {
		if (what) {
			char choices[256];
			join(choices, sizeof choices, names, count);
			return error_at(c, map, "%s is missing required key '%s' (one of %s)", what, key,
					choices);
		}
		*out = fallback;
		return 0;
	}
	return parse_choice(c, node, key, names, count, out);
}

/* A list of integers each in [min, max], with between 1 and max_count items. */
int get_integer_list(const struct checker *c, const struct ynode *node, const char *key,
			    long min, long max, int max_count, long *out, int *count)
{
	if (node->kind != YNODE_SEQ)
		return error_at(c, node, "'%s' must be a list such as [16, 32, 64]", key);
	if (node->count < 1 || node->count > (size_t)max_count)
		return error_at(c, node, "'%s' has %zu items; it must have 1 to %d", key, node->count,
				max_count);
	for (size_t i = 0; i < node->count; i++)
		if (parse_integer(c, node->values[i], key, min, max, &out[i]) != 0)
			return -1;
	*count = (int)node->count;
	return 0;
}

int check_word(const struct checker *c, const struct ynode *node, const char *key, int max,
	       const char *example, char *out)
{
	const char *name = node->text;
	size_t length = strlen(name);
	bool valid = length > 0 && length <= (size_t)max && name[0] != '-';
	for (size_t i = 0; valid && i < length; i++)
		valid = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
			name[i] == '-';
	if (valid) {
		memcpy(out, name, length + 1);
		return 0;
	}
	char suggestion[64];
	size_t used = 0;
	for (size_t i = 0; i < length && used < (size_t)max && used + 1 < sizeof suggestion; i++) {
		char ch = name[i];
		if (ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		else if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
			ch = '-';
		if (ch == '-' && (used == 0 || suggestion[used - 1] == '-'))
			continue;
		suggestion[used++] = ch;
	}
	while (used > 0 && suggestion[used - 1] == '-')
		used--;
	suggestion[used] = '\0';
	return error_at(c, node,
			"'%s' must be 1 to %d characters of a-z, 0-9 and '-', not starting with '-'; "
			"try '%s'",
			key, max, used ? suggestion : example);
}
