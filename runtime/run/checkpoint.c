/* Checkpoints; see checkpoint.h for what they hold. */
#include "checkpoint.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_replace.h" /* file_open_regular */
#include "recipe.h"
#include "meta.h"
#include "version.h"

static const char magic[8] = {'R', 'E', 'S', 'G', 'E', 'N', 'K', '1'};
/* 2: the data's fingerprint (checkpoint/data) and the version of resgen
 * that wrote it (checkpoint/version); 3: each image's augmentation keyed
 * by (seed, iteration, image), the random state shuffling's alone, so a
 * run of version 2 would not go on as it began */
enum { VERSION = 3 };

/* Setting i as the command line spells it (the option table's). */
static const char *spelt(const struct run_settings *o, int i) { return o->spelling[i] ? o->spelling[i] : "a setting"; }

static long *setting_field(struct run_settings *o, int i)
{
	long *fields[SETTING_COUNT] = {&o->iterations, NULL, &o->seed, &o->eval_every, &o->train_limit,
				       &o->test_limit, NULL, &o->checkpoint_every};
	return fields[i];
}

static double setting_value(const struct run_settings *o, int i)
{
	if (1u << i == SETTING_BATCH)
		return o->batch;
	if (1u << i == SETTING_SYNTHETIC)
		return o->synthetic;
	return (double)*setting_field((struct run_settings *)o, i);
}

/* A setting as the user would write it: "--batch 8", "--synthetic", or
 * "no --train-limit" (0: not given). */
static void describe_setting(const struct run_settings *o, int i, double value, char *out, size_t size)
{
	bool flag = 1u << i == SETTING_SYNTHETIC;
	bool absent = value == 0 && (flag || 1u << i == SETTING_TRAIN_LIMIT || 1u << i == SETTING_TEST_LIMIT ||
				     1u << i == SETTING_CHECKPOINT_EVERY);
	if (absent)
		snprintf(out, size, "no %s", spelt(o, i));
	else if (flag)
		snprintf(out, size, "%s", spelt(o, i));
	else
		snprintf(out, size, "%s %.0f", spelt(o, i), value);
}

/* A 64-bit word as two exact doubles, and back. */
static void put_word(double *out, uint64_t v)
{
	out[0] = (double)(v >> 32);
	out[1] = (double)(v & 0xffffffffu);
}

static int get_word(const double *in, uint64_t *v)
{
	for (int i = 0; i < 2; i++)
		if (!(in[i] >= 0 && in[i] <= 4294967295.0 && in[i] == floor(in[i])))
			return -1;
	*v = (uint64_t)in[0] << 32 | (uint64_t)in[1];
	return 0;
}

/* A run's training time: at most about 30 years. */
#define MAX_SECONDS 1e9

static int is_whole(double v, double min, double max) { return v >= min && v <= max && v == floor(v); }

/* The version string's bytes, one a value. */
enum { VERSION_MAX = 96 };

bool checkpoint_written_by(const struct tensor_file *f, char *out, size_t size)
{
	const struct tensor_file_entry *e = tensor_file_find(f, "checkpoint/version");
	size_t length = 0;
	for (long i = 0; e && i < e->count && i < VERSION_MAX && length + 1 < size; i++) {
		double v = e->values[i];
		out[length++] = v >= 0x20 && v < 0x7f && v == floor(v) ? (char)v : '?';
	}
	if (length == 0)
		snprintf(out, size, "unknown");
	else
		out[length] = '\0';
	return strcmp(out, resgen_version()) == 0;
}

int checkpoint_save(const char *path, const struct run_settings *o, const struct weights_meta *meta, int shares,
		    int ranks, const struct net_state *s,
		    const struct progress *p, const long *order, long train_count, uint64_t data, char *error,
		    size_t size)
{
	struct tensor_file f = {0};
	double header[3] = {VERSION};
	put_word(header + 1, net_info.identity);
	double settings[SETTING_COUNT + 2];
	for (int i = 0; i < SETTING_COUNT; i++)
		settings[i] = setting_value(o, i);
	settings[SETTING_COUNT] = shares; /* written before shares were apart from threads: the thread count, the same */
	settings[SETTING_COUNT + 1] = (double)train_count;
	double position[9] = {(double)p->iteration, (double)p->position, p->interval_loss,
			      (double)p->interval_errors, (double)p->interval_images, p->seconds, (double)p->log_bytes};
	double random[8], fingerprint[2], version[VERSION_MAX];
	put_word(fingerprint, data);
	int version_length = (int)strnlen(resgen_version(), VERSION_MAX);
	for (int i = 0; i < version_length; i++)
		version[i] = (unsigned char)resgen_version()[i];
	for (int i = 0; i < 4; i++)
		put_word(random + 2 * i, p->rng.s[i]);
	double *indices = malloc((size_t)(train_count ? train_count : 1) * sizeof *indices);
	int failed = !indices;
	for (long i = 0; !failed && i < train_count; i++)
		indices[i] = (double)order[i];
	failed = failed || tensor_file_add_double(&f, "checkpoint/header", header, 3) ||
		 tensor_file_add_double(&f, "checkpoint/settings", settings, SETTING_COUNT + 2) ||
		 tensor_file_add_double(&f, "checkpoint/progress", position, 7) ||
		 tensor_file_add_double(&f, "checkpoint/rng", random, 8) ||
		 tensor_file_add_double(&f, "checkpoint/order", indices, train_count) ||
		 tensor_file_add_double(&f, "checkpoint/ranks", &(double){ranks}, 1) ||
		 tensor_file_add_double(&f, "checkpoint/data", fingerprint, 2) ||
		 tensor_file_add_double(&f, "checkpoint/version", version, version_length);
	double recipe[RECIPE_VALUES];
	recipe_pack(&o->recipe, recipe);
	failed = failed || tensor_file_add_double(&f, "checkpoint/recipe", recipe, RECIPE_VALUES);
	double window[4] = {(double)p->log_every, p->window_loss, (double)p->window_errors, (double)p->window_images};
	failed = failed || tensor_file_add_double(&f, "checkpoint/log_window", window, 4);
	double best[2] = {p->best_error, (double)p->best_iteration};
	double *frozen = malloc((size_t)net_info.group_count * sizeof *frozen);
	bool any_frozen = false;
	for (int g = 0; frozen && g < net_info.group_count; g++) {
		frozen[g] = o->frozen && o->frozen[g];
		any_frozen = any_frozen || frozen[g];
	}
	failed = failed || !frozen ||
		 (any_frozen && tensor_file_add_double(&f, "checkpoint/frozen", frozen, net_info.group_count));
	free(frozen);
	failed = failed || tensor_file_add_double(&f, "checkpoint/validation", &(double){(double)o->validation}, 1) ||
		 tensor_file_add_double(&f, "checkpoint/best", best, 2) || weights_meta_add(&f, meta) != 0;
	for (int i = 0; !failed && i < net_info.param_tensor_count; i++) {
		const struct net_param *q = &net_info.params[i];
		char name[300];
		failed = tensor_file_add(&f, q->name, (q->trained ? s->params : s->buffers) + q->offset, q->count);
		snprintf(name, sizeof name, "velocity/%s", q->name);
		if (!failed && q->trained)
			failed = tensor_file_add(&f, name, s->velocity + q->offset, q->count);
	}
	free(indices);
	int status = -1;
	if (failed)
		snprintf(error, size, "%s: out of memory", path);
	else
		status = tensor_file_save_sealed(&f, path, magic, error, size);
	tensor_file_free(&f);
	return status;
}

bool checkpoint_is(const char *path)
{
	char error[64], start[8];
	FILE *file = file_open_regular(path, NULL, error, sizeof error);
	bool is = file && fread(start, 1, sizeof start, file) == sizeof start && memcmp(start, magic, sizeof start) == 0;
	if (file)
		fclose(file);
	return is;
}

int checkpoint_load_tensors(struct tensor_file *f, const char *path, char *error, size_t size)
{
	return tensor_file_load_sealed(f, path, magic, "checkpoint", error, size);
}

/* The entry called name with count values, or NULL and a message. */
static const struct tensor_file_entry *entry(const struct tensor_file *f, const char *path, const char *name,
					     long count, char *error, size_t size)
{
	const struct tensor_file_entry *e = tensor_file_find(f, name);
	if (!e)
		snprintf(error, size, "%s: no %s; the checkpoint is incomplete", path, name);
	else if (e->count != count)
		snprintf(error, size, "%s: %s has %ld values where %ld belong; the checkpoint is damaged", path, name,
			 e->count, count);
	return e && e->count == count ? e : NULL;
}

int checkpoint_open(struct tensor_file *f, const char *path, struct run_settings *o, int *ranks,
		    char *error, size_t size)
{
	if (tensor_file_load_sealed(f, path, magic, "checkpoint", error, size) != 0)
		return -1;
	const struct tensor_file_entry *header = entry(f, path, "checkpoint/header", 3, error, size);
	const struct tensor_file_entry *settings =
		header ? entry(f, path, "checkpoint/settings", SETTING_COUNT + 2, error, size) : NULL;
	uint64_t identity = 0;
	if (!settings)
		goto refused;
	if (header->values[0] != VERSION) {
		snprintf(error, size, "%s: a checkpoint of format version %g; this binary reads version %d%s", path,
			 header->values[0], VERSION,
			 header->values[0] == 2 ? " (version 2 drew each image's augmentation from the run's stream; "
						  "this binary keys it by seed, iteration and image, so the run "
						  "cannot go on as it began: start it again, or resume with the "
						  "binary that wrote it)"
						: "");
		goto refused;
	}
	if (get_word(header->values + 1, &identity) != 0 || identity != net_info.identity) {
		snprintf(error, size,
			 "%s: a checkpoint of another network (identity %016llx; %s %s is %016llx); resume it with "
			 "the binary that wrote it",
			 path, (unsigned long long)identity, net_info.name, net_info.dtype,
			 (unsigned long long)net_info.identity);
		goto refused;
	}
	/* --epochs: the run's length over the images it trains on, which the
	 * checkpoint keeps */
	double batch = settings->values[1], images = settings->values[SETTING_COUNT + 1];
	if (o->epochs && is_whole(batch, 1, 4096) && is_whole(images, 1, 1e8)) {
		o->iterations = epoch_iterations(o->epochs, (long)images, (int)batch);
		o->given |= SETTING_ITERATIONS;
	}
	static const double limits[SETTING_COUNT][2] = {
		{1, 1e9}, {1, 4096}, {0, 2147483647}, {1, 1e9}, {0, 1e8}, {0, 1e8}, {0, 1}, {0, 1e9},
	};
	for (int i = 0; i < SETTING_COUNT; i++) {
		double v = settings->values[i];
		if (!is_whole(v, limits[i][0], limits[i][1])) {
			snprintf(error, size, "%s: its %s setting is %g; the checkpoint is damaged", path,
				 spelt(o, i), v);
			goto refused;
		}
		if (1u << i == SETTING_CHECKPOINT_EVERY && (o->given & SETTING_CHECKPOINT_EVERY))
			continue; /* how often to checkpoint may change */
		if (1u << i == SETTING_ITERATIONS && (o->given & SETTING_ITERATIONS) && o->iterations > v) {
			o->extends = (long)v; /* a longer run: train says what its schedule becomes */
			continue;
		}
		if ((o->given & (1u << i)) && v != setting_value(o, i)) {
			char started[64], given[64];
			describe_setting(o, i, v, started, sizeof started);
			describe_setting(o, i, setting_value(o, i), given, sizeof given);
			snprintf(error, size, "%s: the run was started with %s, and this command gives %s; leave the option "
					      "out to resume",
				 path, started, given);
			goto refused;
		}
		if (1u << i == SETTING_BATCH)
			o->batch = (int)v;
		else if (1u << i == SETTING_SYNTHETIC)
			o->synthetic = v != 0;
		else
			*setting_field(o, i) = (long)v;
	}
	double shares = settings->values[SETTING_COUNT];
	if (!is_whole(shares, 1, 1024)) {
		snprintf(error, size, "%s: its share count is %g; the checkpoint is damaged", path, shares);
		goto refused;
	}
	if (o->shares > 0 && o->shares != shares) {
		snprintf(error, size,
			 "%s: the run cuts each pass into %.0f shares, and this command gives --shares %d; leave "
			 "--shares out to resume (the run keeps its shares on any number of threads)",
			 path, shares, o->shares);
		goto refused;
	}
	/* The recipe the run trained with (the spec's, in checkpoints written
	 * before --set); a --set given now must agree with it. */
	struct net_defaults recipe = net_info.defaults;
	const struct tensor_file_entry *kept = tensor_file_find(f, "checkpoint/recipe");
	if (kept && (kept->count != RECIPE_VALUES || recipe_unpack(&recipe, kept->values) != 0)) {
		snprintf(error, size, "%s: its recipe (checkpoint/recipe) is out of range; the checkpoint is damaged", path);
		goto refused;
	}
	char started[300], given[300];
	if (recipe_differs(&recipe, &o->recipe, o->recipe_set, started, given, sizeof started)) {
		snprintf(error, size,
			 "%s: the run was started with %s, and this command gives --set %s; leave the --set out to "
			 "resume",
			 path, started, given);
		goto refused;
	}
	o->recipe = recipe;
	o->shares = (int)shares;
	/* written since --validation came; before, no run held any out */
	const struct tensor_file_entry *validation = tensor_file_find(f, "checkpoint/validation");
	double held = validation && validation->count == 1 ? validation->values[0] : 0;
	if (validation && (validation->count != 1 || !is_whole(held, 0, 1e8))) {
		snprintf(error, size, "%s: its validation count is out of range; the checkpoint is damaged", path);
		goto refused;
	}
	if (o->validation && o->validation != held) {
		char started[64] = "no --validation";
		if (held)
			snprintf(started, sizeof started, "--validation %.0f", held);
		snprintf(error, size, "%s: the run was started with %s, and this command gives --validation %ld; leave "
				      "the option out to resume",
			 path, started, o->validation);
		goto refused;
	}
	o->validation = (long)held;
	/* train --freeze: a flag a group, written where the run froze any */
	const struct tensor_file_entry *frozen = tensor_file_find(f, "checkpoint/frozen");
	bool flags = frozen && frozen->count == net_info.group_count;
	for (long g = 0; flags && g < frozen->count; g++)
		flags = frozen->values[g] == 0 || frozen->values[g] == 1;
	if (frozen && !flags) {
		snprintf(error, size, "%s: its frozen parts (checkpoint/frozen) are not a flag for each of %s's %d "
			 "groups; the checkpoint is damaged", path, net_info.name, net_info.group_count);
		goto refused;
	}
	for (int g = 0; o->frozen_started && g < net_info.group_count; g++)
		o->frozen_started[g] = frozen && frozen->values[g] == 1;
	/* written since training across ranks came; before, every run had one */
	const struct tensor_file_entry *split = tensor_file_find(f, "checkpoint/ranks");
	*ranks = 1;
	if (split && (split->count != 1 || !is_whole(split->values[0], 1, 1e6))) {
		snprintf(error, size, "%s: its rank count is out of range; the checkpoint is damaged", path);
		goto refused;
	}
	if (split)
		*ranks = (int)split->values[0];
	return 0;
refused:
	tensor_file_free(f);
	return -1;
}

int checkpoint_restore(const struct tensor_file *f, const char *path, long train_count, uint64_t data,
		       struct net_state *s, struct progress *p, long *order, char *error, size_t size)
{
	const struct tensor_file_entry *settings = tensor_file_find(f, "checkpoint/settings");
	const struct tensor_file_entry *fingerprint = entry(f, path, "checkpoint/data", 2, error, size);
	uint64_t run_data;
	if (!fingerprint)
		return -1;
	if (get_word(fingerprint->values, &run_data) != 0) {
		snprintf(error, size, "%s: its data fingerprint is out of range; the checkpoint is damaged", path);
		return -1;
	}
	if (run_data != data) {
		snprintf(error, size,
			 "%s: the run trained on other data (fingerprint %016llx) than this command's (%016llx); "
			 "resume with the data the run started on (--data)",
			 path, (unsigned long long)run_data, (unsigned long long)data);
		return -1;
	}
	const struct tensor_file_entry *position = entry(f, path, "checkpoint/progress", 7, error, size);
	const struct tensor_file_entry *random = position ? entry(f, path, "checkpoint/rng", 8, error, size) : NULL;
	const struct tensor_file_entry *indices =
		random ? entry(f, path, "checkpoint/order", train_count, error, size) : NULL;
	if (!indices)
		return -1;
	struct progress q = {0};
	const double *v = position->values;
	double iterations = settings->values[0];
	if (!is_whole(v[0], 0, iterations) || !is_whole(v[1], 0, (double)train_count) || !isfinite(v[2]) ||
	    !is_whole(v[3], 0, 1e18) || !is_whole(v[4], 0, 1e18) || !(v[5] >= 0 && v[5] <= MAX_SECONDS) ||
	    !is_whole(v[6], -1, 1e18)) {
		snprintf(error, size, "%s: its position in the run is out of range; the checkpoint is damaged", path);
		return -1;
	}
	q.iteration = (long)v[0];
	q.position = (long)v[1];
	q.interval_loss = v[2];
	q.interval_errors = (long)v[3];
	q.interval_images = (long)v[4];
	q.seconds = v[5];
	q.log_bytes = (long)v[6];
	/* written since the log had training rows; before, the window is empty */
	const struct tensor_file_entry *window = tensor_file_find(f, "checkpoint/log_window");
	if (window) {
		const double *w = window->values;
		if (window->count != 4 || !is_whole(w[0], 1, 1e9) || !isfinite(w[1]) || !is_whole(w[2], 0, 1e18) ||
		    !is_whole(w[3], 0, 1e18)) {
			snprintf(error, size, "%s: its log window is out of range; the checkpoint is damaged", path);
			return -1;
		}
		q.log_every = (long)w[0];
		q.window_loss = w[1];
		q.window_errors = (long)w[2];
		q.window_images = (long)w[3];
	}
	/* written since --keep-best came; before, nothing was kept */
	const struct tensor_file_entry *best = tensor_file_find(f, "checkpoint/best");
	if (best) {
		const double *b = best->values;
		if (best->count != 2 || !(b[0] >= 0 && b[0] <= 1) || !is_whole(b[1], 0, v[0])) {
			snprintf(error, size, "%s: its best evaluation is out of range; the checkpoint is damaged", path);
			return -1;
		}
		q.best_error = b[0];
		q.best_iteration = (long)b[1];
	}
	for (int i = 0; i < 4; i++)
		if (get_word(random->values + 2 * i, &q.rng.s[i]) != 0) {
			snprintf(error, size, "%s: its random state is out of range; the checkpoint is damaged", path);
			return -1;
		}
	/* The order must be a permutation of the images. */
	unsigned char *seen = calloc((size_t)(train_count ? train_count : 1), 1);
	if (!seen) {
		snprintf(error, size, "%s: out of memory", path);
		return -1;
	}
	int status = 0;
	for (long i = 0; status == 0 && i < train_count; i++) {
		double index = indices->values[i];
		if (!is_whole(index, 0, (double)train_count - 1) || seen[(long)index]++) {
			snprintf(error, size,
				 "%s: its data order is not a permutation of the images; the checkpoint is damaged",
				 path);
			status = -1;
		}
	}
	free(seen);
	/* Every tensor, with its momentum, of its size and finite. */
	for (int i = 0; status == 0 && i < 2 * net_info.param_tensor_count; i++) {
		const struct net_param *t = &net_info.params[i / 2];
		char name[300];
		snprintf(name, sizeof name, i % 2 ? "velocity/%s" : "%s", t->name);
		if (i % 2 && !t->trained)
			continue;
		const struct tensor_file_entry *e = entry(f, path, name, t->count, error, size);
		for (long j = 0; e && j < e->count; j++) {
			const char *why = stored_value_unloadable(e->values[j]);
			if (why) {
				snprintf(error, size, "%s: %s value %ld %s; the checkpoint is damaged", path, name, j,
					 why);
				e = NULL;
			}
		}
		if (!e)
			status = -1;
	}
	if (status != 0)
		return -1;
	for (int i = 0; i < net_info.param_tensor_count; i++) {
		const struct net_param *t = &net_info.params[i];
		char name[300];
		const struct tensor_file_entry *e = tensor_file_find(f, t->name);
		real *values = (t->trained ? s->params : s->buffers) + t->offset;
		for (long j = 0; j < t->count; j++)
			values[j] = (real)e->values[j];
		snprintf(name, sizeof name, "velocity/%s", t->name);
		e = tensor_file_find(f, name);
		for (long j = 0; t->trained && j < t->count; j++)
			s->velocity[t->offset + j] = (real)e->values[j];
	}
	for (long i = 0; i < train_count; i++)
		order[i] = (long)indices->values[i];
	*p = q;
	return 0;
}
