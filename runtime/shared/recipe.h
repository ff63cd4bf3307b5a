/* The training recipe at run time: what a spec sets that does not change
 * the network's code (the learning rate and its schedule, warm-up,
 * momentum, weight decay, augmentation; iterations, batch, seed and the
 * evaluation interval are the binary's options too). A binary starts from
 * its spec's values (net_info.defaults) and takes `--set KEY=VALUE` with
 * the spec's keys below train: and its notation. */
#ifndef RESGEN_RECIPE_H
#define RESGEN_RECIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "net_api.h"

/* The recipe's keys: one table (recipe.c) that the spec reader
 * (generator/stage1-spec/spec.c), --set, the binaries' --help and resgen
 * summary all read. Each key is named as below the spec's train:; the
 * options among them (iterations, batch...) are the binary's options too,
 * whose values --set hands to them. One a bit, in the table's order. */
enum recipe_key_kind { RECIPE_REAL, RECIPE_INTEGER, RECIPE_BOOLEAN, RECIPE_SCHEDULE, RECIPE_STEPS, RECIPE_OPTION };
struct recipe_key {
	const char *name;
	enum recipe_key_kind kind;
	double min, max; /* REAL, INTEGER, OPTION: the range */
	bool min_open;   /* min itself is out of range */
	double fallback; /* the spec's default, where the spec has the key */
	const char *note; /* for --help: its values, where the name does not say them */
	size_t offset;   /* into struct net_defaults */
	int size;        /* INTEGER, OPTION: sizeof the field; 0: no field (epochs) */
	const char *option; /* OPTION: the binary's option it stands for (a run
			     * reads it there, not from the recipe) */
};
enum { RECIPE_KEY_COUNT = 16 };
extern const struct recipe_key recipe_keys[RECIPE_KEY_COUNT];
/* The key called name; NULL: none. */
const struct recipe_key *recipe_key(const char *name);

/* The ranges that the options share with the keys. */
#define RECIPE_ITERATIONS_MAX 1000000000
#define RECIPE_BATCH_MAX 4096
#define RECIPE_SEED_MAX 2147483647
#define RECIPE_EPOCHS_MAX 1000000

/* What is wrong with the steps of a step schedule, in the spec's words and
 * --set's alike: the key as each names it ('steps', 'lr.steps'), and the
 * examples as each writes them. */
#define RECIPE_STEPS_NOT_A_LIST "'%s' must be a list such as %s or %s"
#define RECIPE_STEPS_MIXED                                                                                    \
	"'%s' mixes iterations and fractions of the run; give all as iterations, such as %s, or all as fractions, " \
	"such as %s"
#define RECIPE_STEPS_AT_THE_END "'%s' has the fraction 1, the end of the run; a step must come before it, such as 0.75"
#define RECIPE_STEPS_UNORDERED "'%s' must increase, but %s follows %.*s; list them in order"

/* What one --set KEY=VALUE does: a recipe field set in *recipe (0, and the
 * key's bit in *set), or an option's value (1: *option names it, such as
 * "--iterations", and *value points into assignment), or an error (-1:
 * one line in error, located by column in the assignment). */
int recipe_set(struct net_defaults *recipe, const char *assignment, unsigned *set, const char **option,
	       const char **value, char *error, size_t size);

/* Once every --set is read: what they set together must hold (the steps
 * and their factor belong to the step schedule). 0, or -1 and one line. */
int recipe_check(const struct net_defaults *recipe, unsigned set, char *error, size_t size);

/* The rate at iteration of a run of iterations, and where step i falls. */
double recipe_rate(const struct net_defaults *recipe, long iteration, long iterations);
long recipe_step_at(const struct net_defaults *recipe, int i, long iterations);

/* "lr 0.1 (0.01 for the first 400 iterations), times 0.1 at iterations
 * 32000 48000; momentum 0.9, weight decay 0.0001; augmentation: ..." for a
 * run of iterations on inputs crop pixels a side (a folder's crop, whose
 * scale augmentation's range it scales; and its normalisation), without a
 * newline. */
void recipe_describe(FILE *out, const struct net_defaults *recipe, long iterations, int crop);

/* A folder's scale augmentation's range of the shorter side at crop: the
 * spec's augment.scale, else the paper's [256, 480] for a 224 crop scaled
 * to crop. */
void recipe_scale_range(const struct net_defaults *recipe, int crop, int *low, int *high);

/* The keys set, as KEY=VALUE with the values as the recipe holds them
 * ("lr.base=0.05 lr.steps=[0.5,0.75]"); empty when none. options: the
 * keys that are options too (iterations...) among them, from the recipe's
 * fields (a run keeps those in its options instead). */
void recipe_set_text(char *out, size_t size, const struct net_defaults *recipe, unsigned set, bool options);

/* The keys whose values differ between a and b, a bit each, each run's
 * seed aside, and the steps and their factor where a's schedule is a
 * cosine, which sets them aside: what --set must give b's binary to run
 * a (a study's plan). */
unsigned recipe_differing(const struct net_defaults *a, const struct net_defaults *b);

/* The recipe as numbers, for a checkpoint, and back: RECIPE_VALUES of
 * them. recipe_unpack checks each (-1: damaged). */
enum { RECIPE_VALUES = 12 + 16 };
void recipe_pack(const struct net_defaults *recipe, double *values);
int recipe_unpack(struct net_defaults *recipe, const double *values);

/* The first of the keys in mask (a bit each) whose value differs between
 * a and b: 1, with "KEY=VALUE" for each; 0 when none differs. */
int recipe_differs(const struct net_defaults *a, const struct net_defaults *b, unsigned mask, char *in_a, char *in_b,
		   size_t size);

#endif
