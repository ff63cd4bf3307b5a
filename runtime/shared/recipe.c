/* --set KEY=VALUE, the schedule it feeds, and the recipe in checkpoints;
 * see recipe.h. The keys, ranges and messages are the spec's
 * (generator/stage1-spec/spec.c), and so is the notation of numbers
 * (plain_number.h). */
#include "recipe.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "data_sets.h"
#include "nearest.h"
#include "plain_number.h"
#include "real_text.h"

#define AT(field) offsetof(struct net_defaults, field)
const struct recipe_key recipe_keys[RECIPE_KEY_COUNT] = {
	{"lr.base", RECIPE_REAL, 0, 10, true, 0.1, NULL, AT(lr_base), 0, NULL},
	{"lr.schedule", RECIPE_SCHEDULE, 0, 0, false, LR_SCHEDULE_STEP, "step or cosine", AT(lr_schedule), 0, NULL},
	{"lr.warmup.lr", RECIPE_REAL, 0, 10, true, 0.01, NULL, AT(warmup_lr), 0, NULL},
	{"lr.warmup.iterations", RECIPE_INTEGER, 0, RECIPE_ITERATIONS_MAX, false, 400, NULL, AT(warmup_iterations),
	 sizeof(long), NULL},
	{"lr.steps", RECIPE_STEPS, 0, 0, false, 0, "such as [0.5,0.75] or [32000,48000]", AT(lr_steps), 0, NULL},
	{"lr.gamma", RECIPE_REAL, 0, 1, true, 0.1, NULL, AT(lr_gamma), 0, NULL},
	{"momentum", RECIPE_REAL, 0, 0.999, false, 0.9, NULL, AT(momentum), 0, NULL},
	{"weight_decay", RECIPE_REAL, 0, 1, false, 0.0001, NULL, AT(weight_decay), 0, NULL},
	{"augment.pad", RECIPE_INTEGER, 0, 16, false, 4, NULL, AT(augment_pad), sizeof(int), NULL},
	{"augment.flip", RECIPE_BOOLEAN, 0, 0, false, true, NULL, AT(augment_flip), 0, NULL},
	{"augment.aspect", RECIPE_BOOLEAN, 0, 0, false, false, "folders of images: true or false", AT(augment_aspect), 0,
	 NULL},
	{"iterations", RECIPE_OPTION, 1, RECIPE_ITERATIONS_MAX, false, 64000, NULL, AT(iterations), sizeof(long),
	 "--iterations"},
	{"batch", RECIPE_OPTION, 1, RECIPE_BATCH_MAX, false, 128, NULL, AT(batch), sizeof(int), "--batch"},
	{"seed", RECIPE_OPTION, 0, RECIPE_SEED_MAX, false, 1, NULL, AT(seed), sizeof(long), "--seed"},
	{"eval_every", RECIPE_OPTION, 1, RECIPE_ITERATIONS_MAX, false, 2000, NULL, AT(eval_every), sizeof(long),
	 "--eval-every"},
	/* a run's length said another way: no field of the recipe holds it
	 * (size 0), nor has the spec the key */
	{"epochs", RECIPE_OPTION, 1, RECIPE_EPOCHS_MAX, false, 0, NULL, 0, 0, "--epochs"},
};

const struct recipe_key *recipe_key(const char *name)
{
	for (int i = 0; i < RECIPE_KEY_COUNT; i++)
		if (strcmp(recipe_keys[i].name, name) == 0)
			return &recipe_keys[i];
	return NULL;
}

/* The bit of the key called name (a key of the table above). */
static unsigned key_bit(const char *name)
{
	int i = 0;
	while (strcmp(recipe_keys[i].name, name) != 0)
		i++;
	return 1u << i;
}

/* The key nearest to name, for "did you mean". */
static const char *nearest_key(const char *name)
{
	const char *names[RECIPE_KEY_COUNT];
	for (int i = 0; i < RECIPE_KEY_COUNT; i++)
		names[i] = recipe_keys[i].name;
	return nearest(name, names, RECIPE_KEY_COUNT);
}

/* A located message: the argument as written, the column of what is
 * wrong in it (column counts from 0 in the assignment; the message counts
 * from 1 in "--set KEY=VALUE"), and what. */
__attribute__((format(printf, 5, 6))) static int fail(char *error, size_t size, const char *assignment,
						      size_t column, const char *format, ...)
{
	int used = snprintf(error, size, "--set %s, column %zu: ", assignment, column + 1 + strlen("--set "));
	va_list arguments;
	va_start(arguments, format);
	if (used >= 0 && (size_t)used < size)
		vsnprintf(error + used, size - (size_t)used, format, arguments);
	va_end(arguments);
	return -1;
}

/* text as a real in [min, max] (min excluded when min_open), in the
 * spec's notation and words. */
static int read_real(const struct recipe_key *k, const char *text, const char *assignment, size_t column, double *out,
		     char *error, size_t size)
{
	char *end;
	errno = 0;
	double value = strtod(text, &end);
	/* as the spec reader (check.c): past double's range is out of range */
	if (!plain_number(text, true) || *end != '\0')
		return fail(error, size, assignment, column,
			    "'%s' must be a number, not '%s'; write it in plain decimal, such as 0.1 or 1e-4 (no "
			    "quotes, hex, .inf or .nan)",
			    k->name, text);
	if (value < k->min || (k->min_open && value == k->min) || value > k->max)
		return fail(error, size, assignment, column, "'%s' is %s, out of range; it must be %s %g and at most %g",
			    k->name, text, k->min_open ? "above" : "at least", k->min, k->max);
	*out = value;
	return 0;
}

static int read_integer(const struct recipe_key *k, const char *text, const char *assignment, size_t column, long *out,
			char *error, size_t size)
{
	char *end;
	errno = 0;
	long value = strtol(text, &end, 10);
	if (!plain_number(text, false) || *end != '\0')
		return fail(error, size, assignment, column,
			    "'%s' must be an integer, not '%s'; write it in plain decimal, such as 110 (no quotes, "
			    "leading zeros or hex)",
			    k->name, text);
	if (errno == ERANGE || value < k->min || value > k->max)
		return fail(error, size, assignment, column, "'%s' is %s, out of range; it must be from %.0f to %.0f",
			    k->name, text, k->min, k->max);
	*out = value;
	return 0;
}

/* [32000, 48000] or [0.5, 0.75], as the spec takes them: all iterations
 * or all fractions of the run, increasing, at most 16. */
static int read_steps(struct net_defaults *r, const char *text, const char *assignment, size_t column, char *error,
		      size_t size)
{
	size_t length = strlen(text);
	if (length < 2 || text[0] != '[' || text[length - 1] != ']')
		return fail(error, size, assignment, column, RECIPE_STEPS_NOT_A_LIST, "lr.steps", "[32000,48000]",
			    "[0.5,0.75]");
	struct net_defaults steps = *r;
	steps.lr_step_count = 0;
	const char *at = text + 1, *close = text + length - 1, *previous = NULL;
	while (at < close && *at == ' ')
		at++;
	while (at < close) {
		const char *end = at;
		while (end < close && *end != ',')
			end++;
		char item[64];
		size_t item_length = (size_t)(end - at);
		while (item_length > 0 && at[item_length - 1] == ' ')
			item_length--;
		size_t item_column = column + (size_t)(at - text);
		if (item_length == 0 || item_length >= sizeof item)
			return fail(error, size, assignment, item_column,
				    "'lr.steps' has an empty or overlong item; give numbers such as [0.5,0.75]");
		memcpy(item, at, item_length);
		item[item_length] = '\0';
		if (steps.lr_step_count == (int)(sizeof steps.lr_steps / sizeof steps.lr_steps[0]))
			return fail(error, size, assignment, item_column, "'lr.steps' has more than %d items",
				    (int)(sizeof steps.lr_steps / sizeof steps.lr_steps[0]));
		bool fraction = strpbrk(item, ".eE") != NULL;
		if (steps.lr_step_count == 0)
			steps.lr_step_fractions = fraction;
		else if (fraction != steps.lr_step_fractions)
			return fail(error, size, assignment, item_column, RECIPE_STEPS_MIXED, "lr.steps", "[32000,48000]",
				    "[0.5,0.75]");
		const struct recipe_key k = {"lr.steps", fraction ? RECIPE_REAL : RECIPE_INTEGER, fraction ? 0 : 1,
					     fraction ? 1 : RECIPE_ITERATIONS_MAX, fraction, 0, NULL, 0, 0, NULL};
		double value;
		long whole;
		if (fraction ? read_real(&k, item, assignment, item_column, &value, error, size)
			     : read_integer(&k, item, assignment, item_column, &whole, error, size))
			return -1;
		if (fraction && value == 1)
			return fail(error, size, assignment, item_column, RECIPE_STEPS_AT_THE_END, "lr.steps");
		if (!fraction)
			value = (double)whole;
		if (steps.lr_step_count > 0 && value <= steps.lr_steps[steps.lr_step_count - 1])
			return fail(error, size, assignment, item_column, RECIPE_STEPS_UNORDERED, "lr.steps", item,
				    (int)strcspn(previous, ", ]"), previous);
		steps.lr_steps[steps.lr_step_count++] = value;
		previous = at;
		at = end < close ? end + 1 : close;
		while (at < close && *at == ' ')
			at++;
	}
	r->lr_step_count = steps.lr_step_count;
	r->lr_step_fractions = steps.lr_step_fractions;
	memcpy(r->lr_steps, steps.lr_steps, sizeof r->lr_steps);
	return 0;
}

int recipe_set(struct net_defaults *recipe, const char *assignment, unsigned *set, const char **option,
	       const char **value, char *error, size_t size)
{
	const char *equals = strchr(assignment, '=');
	if (!equals)
		return fail(error, size, assignment, 0, "give KEY=VALUE, such as lr.base=0.05");
	char name[64];
	size_t length = (size_t)(equals - assignment), skipped = 0;
	if (length > 6 && strncmp(assignment, "train.", 6) == 0)
		skipped = 6; /* the spec's path, train.lr.base, reads the same */
	snprintf(name, sizeof name, "%.*s", (int)(length - skipped < sizeof name ? length - skipped : sizeof name - 1),
		 assignment + skipped);
	int i = 0;
	while (i < RECIPE_KEY_COUNT && strcmp(name, recipe_keys[i].name) != 0)
		i++;
	if (i == RECIPE_KEY_COUNT)
		return fail(error, size, assignment, skipped,
			    "'%s' is not a key --set takes; did you mean '%s'? (keys that change the network's code, "
			    "under net: and data:, need a spec and a build)",
			    name, nearest_key(name));
	const struct recipe_key *k = &recipe_keys[i];
	const char *text = equals + 1;
	size_t column = length + 1;
	if (*set & (1u << i))
		return fail(error, size, assignment, skipped, "'%s' is set twice; set it once", k->name);
	char *field = (char *)recipe + k->offset;
	long whole;
	switch (k->kind) {
	case RECIPE_OPTION:
		/* the option's own range is checked where the option is read */
		if (!plain_number(text, false))
			return fail(error, size, assignment, column,
				    "'%s' must be an integer, not '%s'; write it in plain decimal, such as 110 (no quotes, "
				    "leading zeros or hex)",
				    k->name, text);
		*option = k->option;
		*value = text;
		*set |= 1u << i;
		return 1;
	case RECIPE_REAL:
		if (read_real(k, text, assignment, column, (double *)field, error, size) != 0)
			return -1;
		break;
	case RECIPE_INTEGER:
		if (read_integer(k, text, assignment, column, &whole, error, size) != 0)
			return -1;
		if (k->size == sizeof(int))
			*(int *)field = (int)whole;
		else
			*(long *)field = whole;
		break;
	case RECIPE_BOOLEAN:
		if (strcmp(text, "true") != 0 && strcmp(text, "false") != 0)
			return fail(error, size, assignment, column, "'%s' must be true or false, not '%s'", k->name,
				    text);
		*(int *)field = strcmp(text, "true") == 0;
		break;
	case RECIPE_SCHEDULE: {
		int s = 0;
		while (s < LR_SCHEDULE_COUNT && strcmp(text, lr_schedule_names[s]) != 0)
			s++;
		if (s == LR_SCHEDULE_COUNT)
			return fail(error, size, assignment, column,
				    "'lr.schedule' is '%s', which is not one of step or cosine; did you mean '%s'?",
				    text, nearest(text, lr_schedule_names, LR_SCHEDULE_COUNT));
		*(int *)field = s;
		break;
	}
	case RECIPE_STEPS:
		if (read_steps(recipe, text, assignment, column, error, size) != 0)
			return -1;
		break;
	}
	*set |= 1u << i;
	return 0;
}

int recipe_check(const struct net_defaults *recipe, unsigned set, char *error, size_t size)
{
	unsigned steps = key_bit("lr.steps"), gamma = key_bit("lr.gamma");
	int stepped = set & steps ? __builtin_ctz(steps) : set & gamma ? __builtin_ctz(gamma) : -1;
	if (recipe->lr_schedule == LR_SCHEDULE_COSINE && stepped >= 0) {
		snprintf(error, size,
			 "--set %s is for the step schedule, and this run's is cosine, which falls from lr.base to 0 "
			 "over the run; leave it out, or --set lr.schedule=step",
			 recipe_keys[stepped].name);
		return -1;
	}
	return 0;
}

long recipe_step_at(const struct net_defaults *recipe, int i, long iterations)
{
	return schedule_step_at(recipe->lr_steps[i], recipe->lr_step_fractions, iterations);
}

double recipe_rate(const struct net_defaults *r, long iteration, long iterations)
{
	if (iteration < r->warmup_iterations)
		return r->warmup_lr;
	if (r->lr_schedule == LR_SCHEDULE_COSINE) {
		long span = iterations - r->warmup_iterations;
		double done = span > 0 ? (double)(iteration - r->warmup_iterations) / (double)span : 1;
		return 0.5 * r->lr_base * (1 + cos(M_PI * done));
	}
	double lr = r->lr_base;
	for (int i = 0; i < r->lr_step_count; i++)
		if (iteration >= recipe_step_at(r, i, iterations))
			lr *= r->lr_gamma;
	return lr;
}

void recipe_describe(FILE *out, const struct net_defaults *r, long iterations, int crop)
{
	fprintf(out, "lr %g", r->lr_base);
	if (r->warmup_iterations > 0)
		fprintf(out, " (%g for the first %ld iterations)", r->warmup_lr, r->warmup_iterations);
	if (r->lr_schedule == LR_SCHEDULE_COSINE) {
		fprintf(out, ", then a cosine down to 0 at iteration %ld", iterations);
	} else if (r->lr_step_count > 0) {
		fprintf(out, ", times %g at iteration%s", r->lr_gamma, r->lr_step_count == 1 ? "" : "s");
		for (int i = 0; i < r->lr_step_count; i++)
			fprintf(out, " %ld", recipe_step_at(r, i, iterations));
		if (r->lr_step_fractions) {
			fprintf(out, " (");
			for (int i = 0; i < r->lr_step_count; i++)
				fprintf(out, "%s%g", i ? ", " : "", r->lr_steps[i]);
			fprintf(out, " of the run)");
		}
	}
	fprintf(out, "; momentum %g, weight decay %g; augmentation: ", r->momentum, r->weight_decay);
	bool folder = r->data_set >= 0 && r->data_set < SET_COUNT && data_set_is_folder(r->data_set);
	if (folder && r->augment_aspect) /* image_folder.h */
		fprintf(out, "random crops of 8%% to 100%% of the area and aspect ratio 3/4 to 4/3, scaled to the input%s",
			r->augment_flip ? ", random horizontal flip" : "");
	else if (folder) { /* the paper's range for a 224 crop, scaled with the crop, or the spec's */
		char scaled[80] = " (the spec's augment.scale)";
		if (!r->augment_scale[1] && crop != 224)
			snprintf(scaled, sizeof scaled, " (the paper's [256, 480] for a 224 crop, scaled to this %d crop)", crop);
		else if (!r->augment_scale[1])
			scaled[0] = '\0';
		int low, high;
		recipe_scale_range(r, crop, &low, &high);
		fprintf(out, "shorter side scaled to [%d, %d]%s, random %dx%d crop%s", low, high, scaled, crop, crop,
			r->augment_flip ? ", random horizontal flip" : "");
	}
	else if (r->augment_pad > 0)
		fprintf(out, "%d-pixel pad and random crop%s", r->augment_pad,
			r->augment_flip ? ", random horizontal flip" : "");
	else
		fprintf(out, "%s", r->augment_flip ? "random horizontal flip" : "none");
	if (folder && r->normalise == NORMALISE_FOLDER)
		fprintf(out, "; inputs normalised by the training images' own channel statistics, computed as the run "
			"starts (data.normalise: folder)");
	else if (folder && r->normalise == NORMALISE_GIVEN)
		fprintf(out, "; inputs normalised by the spec's mean [%g, %g, %g] and deviation [%g, %g, %g]",
			r->normalise_mean[0], r->normalise_mean[1], r->normalise_mean[2], r->normalise_std[0],
			r->normalise_std[1], r->normalise_std[2]);
	else if (folder)
		fprintf(out, "; inputs normalised by ImageNet's channel mean and deviation (torchvision's)");
}

void recipe_scale_range(const struct net_defaults *r, int crop, int *low, int *high)
{
	*low = r->augment_scale[1] ? r->augment_scale[0] : (int)lround(256.0 * crop / 224);
	*high = r->augment_scale[1] ? r->augment_scale[1] : (int)lround(480.0 * crop / 224);
}

/* Key i's value in r, as --set would take it. */
static void value_text(char *out, size_t size, const struct net_defaults *r, int i)
{
	const struct recipe_key *k = &recipe_keys[i];
	const char *field = (const char *)r + k->offset;
	char number[32];
	size_t used;
	switch (k->kind) {
	case RECIPE_REAL:
		snprintf(out, size, "%s", real_text(number, *(const double *)field));
		break;
	case RECIPE_INTEGER:
	case RECIPE_OPTION:
		if (k->size == 0)
			snprintf(out, size, "-");
		else
			snprintf(out, size, "%ld", k->size == sizeof(int) ? (long)*(const int *)field : *(const long *)field);
		break;
	case RECIPE_BOOLEAN:
		snprintf(out, size, "%s", *(const int *)field ? "true" : "false");
		break;
	case RECIPE_SCHEDULE:
		snprintf(out, size, "%s", lr_schedule_names[*(const int *)field]);
		break;
	case RECIPE_STEPS:
		snprintf(out, size, "[");
		for (int s = 0; s < r->lr_step_count; s++) {
			used = strlen(out);
			if (r->lr_step_fractions)
				snprintf(out + used, size - used, "%s", real_text(number, r->lr_steps[s]));
			else
				snprintf(out + used, size - used, "%.0f", r->lr_steps[s]);
			used = strlen(out);
			snprintf(out + used, size - used, "%s", s + 1 < r->lr_step_count ? "," : "");
		}
		used = strlen(out);
		snprintf(out + used, size - used, "]");
		break;
	}
}

void recipe_set_text(char *out, size_t size, const struct net_defaults *r, unsigned set, bool options)
{
	out[0] = '\0';
	for (int i = 0; i < RECIPE_KEY_COUNT; i++) {
		if (!(set & (1u << i)) || (recipe_keys[i].kind == RECIPE_OPTION && !options))
			continue;
		char value[256];
		value_text(value, sizeof value, r, i);
		size_t used = strlen(out);
		snprintf(out + used, size - used, "%s%s=%s", used ? " " : "", recipe_keys[i].name, value);
	}
}

int recipe_differs(const struct net_defaults *a, const struct net_defaults *b, unsigned mask, char *in_a, char *in_b,
		   size_t size)
{
	for (int i = 0; i < RECIPE_KEY_COUNT; i++) {
		if (recipe_keys[i].kind == RECIPE_OPTION || !(mask & (1u << i)))
			continue;
		char x[256], y[256];
		value_text(x, sizeof x, a, i);
		value_text(y, sizeof y, b, i);
		if (strcmp(x, y) != 0) {
			snprintf(in_a, size, "%s=%s", recipe_keys[i].name, x);
			snprintf(in_b, size, "%s=%s", recipe_keys[i].name, y);
			return 1;
		}
	}
	return 0;
}

unsigned recipe_differing(const struct net_defaults *a, const struct net_defaults *b)
{
	unsigned differing = 0;
	for (int i = 0; i < RECIPE_KEY_COUNT; i++) {
		char x[256], y[256];
		value_text(x, sizeof x, a, i);
		value_text(y, sizeof y, b, i);
		differing |= (unsigned)(strcmp(x, y) != 0) << i;
	}
	differing &= ~key_bit("seed"); /* each run's own */
	if (a->lr_schedule == LR_SCHEDULE_COSINE)
		differing &= ~(key_bit("lr.steps") | key_bit("lr.gamma")); /* set aside by a cosine */
	return differing;
}

void recipe_pack(const struct net_defaults *r, double *v)
{
	double packed[12] = {r->lr_base,	r->lr_schedule, r->warmup_lr,	      (double)r->warmup_iterations,
			     r->lr_step_count, r->lr_step_fractions, r->lr_gamma, r->momentum,
			     r->weight_decay,	r->augment_pad, r->augment_flip, r->augment_aspect};
	memcpy(v, packed, sizeof packed);
	for (int i = 0; i < 16; i++)
		v[12 + i] = i < r->lr_step_count ? r->lr_steps[i] : 0;
}

static bool whole_in(double v, double min, double max) { return v >= min && v <= max && v == floor(v); }

int recipe_unpack(struct net_defaults *r, const double *v)
{
	bool ok = v[0] > 0 && v[0] <= 10 && whole_in(v[1], 0, LR_SCHEDULE_COUNT - 1) && v[2] > 0 && v[2] <= 10 &&
		  whole_in(v[3], 0, 1e9) && whole_in(v[4], 0, 16) && whole_in(v[5], 0, 1) && v[6] > 0 && v[6] <= 1 &&
		  v[7] >= 0 && v[7] <= 0.999 && v[8] >= 0 && v[8] <= 1 && whole_in(v[9], 0, 16) && whole_in(v[10], 0, 1) &&
		  whole_in(v[11], 0, 1); /* 0 in checkpoints from before augment.aspect */
	/* steps as the spec takes them: fractions in (0, 1), or whole
	 * iterations from 1; increasing */
	for (int i = 0; ok && i < (int)v[4]; i++)
		ok = isfinite(v[12 + i]) && (v[5] ? v[12 + i] > 0 && v[12 + i] < 1 : whole_in(v[12 + i], 1, 1e9)) &&
		     (i == 0 || v[12 + i] > v[12 + i - 1]);
	if (!ok)
		return -1;
	r->lr_base = v[0];
	r->lr_schedule = (int)v[1];
	r->warmup_lr = v[2];
	r->warmup_iterations = (long)v[3];
	r->lr_step_count = (int)v[4];
	r->lr_step_fractions = (int)v[5];
	r->lr_gamma = v[6];
	r->momentum = v[7];
	r->weight_decay = v[8];
	r->augment_pad = (int)v[9];
	r->augment_flip = (int)v[10];
	r->augment_aspect = (int)v[11];
	for (int i = 0; i < 16; i++)
		r->lr_steps[i] = i < r->lr_step_count ? v[12 + i] : 0;
	return 0;
}
