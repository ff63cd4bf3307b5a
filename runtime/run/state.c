/* A network's memory: allocation, seeded initialisation, weights in and out. */
#include "state.h"

#include <float.h>
#include <limits.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "checkpoint.h"
#include "data.h"
#include "rng.h"
#include "tensor_file.h"

/* Buffers of a huge page or more (the arena, the scratch) start on a huge
 * page and are offered to the kernel as transparent huge pages, which Linux
 * grants where it has them (enabled: always or madvise). The kernels read
 * panels of rows 4 KiB apart and transpose eight channels at a time: with 4
 * KiB pages each such row is a TLB entry of its own
 * (docs/kernel-measurements.md (huge pages)). The advice may be refused; the
 * memory is the same either way. */
#define HUGE_PAGE ((size_t)2 << 20)

static real *allocate(long count, int *failed)
{
	size_t bytes = (size_t)(count > 0 ? count : 1) * sizeof(real);
	size_t alignment = bytes >= HUGE_PAGE ? HUGE_PAGE : 64;
	bytes = (bytes + alignment - 1) / alignment * alignment;
	real *p = aligned_alloc(alignment, bytes);
	if (!p) {
		*failed = 1;
		return NULL;
	}
#ifdef MADV_HUGEPAGE
	if (alignment == HUGE_PAGE)
		(void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
	memset(p, 0, bytes);
	return p;
}

int state_create(struct net_state *s, int max_batch, int shares, char *error, size_t size)
{
	memset(s, 0, sizeof *s);
	const struct net_info *info = &net_info;
	double arena_bytes = (double)info->arena_per_image * max_batch * sizeof(real);
	if (arena_bytes > 1e12) {
		snprintf(error, size, "batch %d needs %.1f GiB of activations; use a smaller --batch",
			 max_batch, arena_bytes / (1 << 30));
		return -1;
	}
	int failed = 0;
	s->arena = allocate(info->arena_per_image * max_batch, &failed);
	s->params = allocate(info->param_count, &failed);
	s->grads = allocate(info->param_count, &failed);
	s->velocity = allocate(info->param_count, &failed);
	s->buffers = allocate(info->buffer_count, &failed);
	s->stats = allocate(info->stats_count, &failed);
	s->scratch = allocate(info->scratch_per_thread * shares, &failed);
	if (failed) {
		state_free(s);
		snprintf(error, size,
			 "out of memory: batch %d needs %.1f GiB of activations and gradients; use a "
			 "smaller --batch",
			 max_batch, arena_bytes / (1 << 30));
		return -1;
	}
	s->training = 1;
	s->ranks.count = 1;
	return 0;
}

void state_free(struct net_state *s)
{
	free(s->arena);
	free(s->params);
	free(s->grads);
	free(s->velocity);
	free(s->buffers);
	free(s->stats);
	free(s->scratch);
	memset(s, 0, sizeof *s);
}

void state_init(struct net_state *s, uint64_t seed)
{
	struct rng rng;
	rng_seed(&rng, seed, 0x1417);
	for (int i = 0; i < net_info.param_tensor_count; i++) {
		const struct net_param *p = &net_info.params[i];
		real *values = (p->trained ? s->params : s->buffers) + p->offset;
		for (long j = 0; j < p->count; j++) {
			double v = 0;
			switch (p->init) {
			case NET_INIT_HE_NORMAL:
				v = p->init_scale * rng_normal(&rng);
				break;
			case NET_INIT_UNIFORM:
				v = p->init_scale * (2 * rng_uniform(&rng) - 1);
				break;
			case NET_INIT_ONES:
				v = 1;
				break;
			case NET_INIT_ZEROS:
				v = 0;
				break;
			case NET_INIT_CONSTANT:
				v = p->init_scale;
				break;
			}
			values[j] = (real)v;
		}
	}
	memset(s->velocity, 0, (size_t)net_info.param_count * sizeof(real));
	s->seed = seed;
	s->step = 0;
}

void state_zero_grads(struct net_state *s)
{
	memset(s->grads, 0, (size_t)net_info.param_count * sizeof(real));
}

real *state_input(const struct net_state *s, int n)
{
	return s->arena + (size_t)n * net_info.input_offset;
}

real *state_logits(const struct net_state *s, int n)
{
	return s->arena + (size_t)n * net_info.logits_offset;
}

real *state_input_gradient(const struct net_state *s, int n)
{
	return s->arena + (size_t)n * net_info.input_gradient_offset;
}

int state_load_normalisation(const char *path, double *mean, double *std, long *images, char *error, size_t size)
{
	struct tensor_file f;
	if ((checkpoint_is(path) ? checkpoint_load_tensors(&f, path, error, size)
				 : tensor_file_load(&f, path, error, size)) != 0)
		return 0; /* loading the weights says what is wrong with the file */
	int found = weights_meta_check(&f, path, error, size);
	if (found == 1) {
		const struct tensor_file_entry *m = tensor_file_find(&f, "meta/input_mean"),
					       *d = tensor_file_find(&f, "meta/input_std");
		for (int c = 0; c < net_info.channels; c++) {
			mean[c] = m->values[c];
			std[c] = d->values[c];
		}
		*images = (long)tensor_file_find(&f, "meta/input_images")->values[0];
	}
	tensor_file_free(&f);
	return found;
}

int state_save_weights(const struct net_state *s, const struct weights_meta *meta, const char *path, char *error,
		       size_t size)
{
	struct tensor_file f = {0};
	if (meta && weights_meta_add(&f, meta) != 0) {
		tensor_file_free(&f);
		snprintf(error, size, "%s: out of memory", path);
		return -1;
	}
	for (int i = 0; i < net_info.param_tensor_count; i++) {
		const struct net_param *p = &net_info.params[i];
		const real *values = (p->trained ? s->params : s->buffers) + p->offset;
		if (tensor_file_add(&f, p->name, values, p->count) != 0) {
			tensor_file_free(&f);
			snprintf(error, size, "%s: out of memory", path);
			return -1;
		}
	}
	int status = tensor_file_save(&f, path, error, size);
	tensor_file_free(&f);
	return status;
}

const struct net_param *state_non_finite_param(const struct net_state *s)
{
	for (int i = 0; i < net_info.param_tensor_count; i++) {
		const struct net_param *p = &net_info.params[i];
		const real *values = (p->trained ? s->params : s->buffers) + p->offset;
		for (long j = 0; j < p->count; j++)
			if (!isfinite(values[j]))
				return p;
	}
	return NULL;
}

/* Whether p is a BN's running variance, whose values cannot be negative. */
static bool is_variance(const struct net_param *p)
{
	static const char suffix[] = "_running_var";
	size_t length = strlen(p->name);
	return !p->trained && length >= sizeof suffix - 1 && strcmp(p->name + length - (sizeof suffix - 1), suffix) == 0;
}

bool state_is_classifier(const struct net_param *p) { return strncmp(p->name, "head_fc_", 8) == 0; }

/* The network's tensor called name, or NULL. */
static const struct net_param *param_named(const char *name)
{
	for (int k = 0; k < net_info.param_tensor_count; k++)
		if (strcmp(net_info.params[k].name, name) == 0)
			return &net_info.params[k];
	return NULL;
}

int state_load_weights(struct net_state *s, const char *path, bool fresh_classifier, struct weights_loaded *loaded,
		       char *error, size_t size)
{
	struct tensor_file f;
	*loaded = (struct weights_loaded){0};
	bool checkpoint = checkpoint_is(path); /* its weights, beside the rest of the run */
	if ((checkpoint ? checkpoint_load_tensors(&f, path, error, size) : tensor_file_load(&f, path, error, size)) != 0)
		return -1;
	/* Check everything before changing anything: the file holds exactly
	 * this network's tensors, each of its size, every value finite. */
	int status = 0;
	for (int i = 0; status == 0 && i < f.count; i++) {
		const struct tensor_file_entry *e = &f.entries[i];
		if ((checkpoint && (strncmp(e->name, "checkpoint/", 11) == 0 || strncmp(e->name, "velocity/", 9) == 0)) ||
		    strncmp(e->name, "meta/", 5) == 0)
			continue;
		const struct net_param *p = param_named(e->name);
		if (fresh_classifier && p && state_is_classifier(p)) {
			loaded->left_out_values += e->count;
			continue;
		}
		if (!p || tensor_file_find(&f, e->name) != e) {
			snprintf(error, size, "%s: tensor %.200s %s; were these weights exported by %s?",
				 path, e->name, p ? "appears twice" : "is not one of this network's",
				 net_info.name);
			status = -1;
		} else if (e->count != p->count && state_is_classifier(p) && !fresh_classifier) {
			snprintf(error, size,
				 "%s: tensor %s has %ld values, but %s's is %s, %ld values, for its %d classes; to "
				 "fine-tune these weights to them, give --fresh-classifier",
				 path, p->name, e->count, net_info.name, p->dims, p->count, net_info.classes);
			status = -1;
		} else if (e->count != p->count) {
			snprintf(error, size,
				 "%s: tensor %s has %ld values, but %s's is %s, %ld values; were these "
				 "weights exported by %s?",
				 path, p->name, e->count, net_info.name, p->dims, p->count, net_info.name);
			status = -1;
		}
		for (long j = 0; status == 0 && j < e->count; j++) {
			const char *why = stored_value_unloadable(e->values[j]);
			if (why) {
				snprintf(error, size,
					 "%s: tensor %s value %ld %s; weights must be finite numbers", path,
					 e->name, j, why);
				status = -1;
			} else if (e->values[j] < 0 && is_variance(p)) {
				snprintf(error, size,
					 "%s: tensor %s value %ld is %g; a running variance is never negative", path,
					 e->name, j, e->values[j]);
				status = -1;
			}
		}
	}
	for (int i = 0; status == 0 && i < net_info.param_tensor_count; i++) {
		const struct net_param *p = &net_info.params[i];
		if ((fresh_classifier && state_is_classifier(p)) || tensor_file_find(&f, p->name))
			continue;
		if (state_is_classifier(p))
			snprintf(error, size, "%s: no tensor %s, the classifier's; to fine-tune these weights to %s's %d "
				 "classes, give --fresh-classifier", path, p->name, net_info.name, net_info.classes);
		else
			snprintf(error, size, "%s: no tensor %s; were these weights exported by %s?", path, p->name,
				 net_info.name);
		status = -1;
	}
	for (int i = 0; status == 0 && i < net_info.param_tensor_count; i++) {
		const struct net_param *p = &net_info.params[i];
		if (fresh_classifier && state_is_classifier(p)) {
			loaded->fresh_tensors++;
			loaded->fresh_values += p->count;
			continue;
		}
		const struct tensor_file_entry *e = tensor_file_find(&f, p->name);
		real *values = (p->trained ? s->params : s->buffers) + p->offset;
		for (long j = 0; j < p->count; j++)
			values[j] = (real)e->values[j];
		loaded->tensors++;
		loaded->values += p->count;
	}
	tensor_file_free(&f);
	return status;
}
