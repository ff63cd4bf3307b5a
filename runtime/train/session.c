/* A run's session: what train, gradflow and step share once the data are
 * loaded and the network's state made; see session.h. */
#include "session.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "printable.h"
#include "ranks.h"
#include "recipe.h"
#include "threads.h"

/* An error every rank meets alike (the data, the batch, a checkpoint) is
 * printed by rank 0 alone, once. */
void shared_error(const char *format, ...)
{
	if (ranks_rank() != 0)
		return;
	va_list arguments;
	va_start(arguments, format);
	error_line_v(format, arguments);
	va_end(arguments);
}

void session_free(struct session *s)
{
	dataset_free(&s->train);
	dataset_free(&s->test);
	state_free(&s->state);
	free(s->running_sums);
	s->running_sums = NULL;
}

/* The groups' parameters lie in forward order, one after another, so that
 * once backward has run group g, params + group g's offset onwards are
 * final (what the gradient buckets need). */
static int groups_hold_params_in_order(void)
{
	long next = 0;
	for (int g = 0; g < net_info.group_count; g++) {
		if (net_info.groups[g].param_offset != next)
			return 0;
		next += net_info.groups[g].param_count;
	}
	return next == net_info.param_count;
}

/* Data, threads, memory and weights: everything before the first step. */
int session_open(struct session *s, const struct run_options *o)
{
	memset(s, 0, sizeof *s);
	const struct net_defaults *d = &net_info.defaults;
	struct data_error error;
	struct data_request want = {
		.set = o->synthetic ? SET_SYNTHETIC : (enum data_set)d->data_set,
		.dir = o->data_dir,
		.channels = net_info.channels,
		.height = net_info.height,
		.width = net_info.width,
		.classes = net_info.classes,
		.skip_bad = o->skip_bad_images,
		.seed = (uint64_t)o->seed,
	};
	if (want.set == SET_SYNTHETIC) {
		/* a folder's network takes large images: fewer of them */
		bool large = data_set_is_folder(d->data_set);
		want.train_images = d->train_images > 0 ? d->train_images : large ? 1024 : 10000;
		want.test_images = d->test_images > 0 ? d->test_images : large ? 256 : 2000;
	}
	int status = data_open(&want, &s->train, &s->test, &error);
	if (status != 0) {
		shared_error("%s: %s\n", net_info.name, error.text);
		return 2;
	}
	for (struct dataset *split = &s->train; split; split = split == &s->train ? &s->test : NULL) {
		const char *first;
		long skipped = data_skipped(split, &first);
		if (skipped > 0 && ranks_rank() == 0)
			printf("data: left out %ld file%s that cannot be decoded (--skip-bad-images), the first %s\n",
			       skipped, skipped == 1 ? "" : "s", first);
	}
	s->data_identity = dataset_identity(&s->test, dataset_identity(&s->train, CHECKSUM_BASIS));
	if (o->train_limit > 0)
		dataset_truncate(&s->train, o->train_limit);
	if (o->test_limit > 0)
		dataset_truncate(&s->test, o->test_limit);
	if (o->validation > 0 && o->validation + o->batch > s->train.count) {
		shared_error("%s: --validation %ld leaves %ld of the %ld training images to train on, fewer than a "
			     "batch of %d; hold out fewer\n",
			     net_info.name, o->validation, s->train.count - o->validation, s->train.count, o->batch);
		session_free(s);
		return 2;
	}
	if (o->validation > 0)
		dataset_hold_out(&s->train, o->validation, &s->validation);
	if (o->batch > s->train.count) {
		shared_error("%s: --batch %d is larger than the %ld training images; use a smaller batch\n",
			net_info.name, o->batch, s->train.count);
		session_free(s);
		return 2;
	}
	s->rank = ranks_rank();
	s->ranks = ranks_count();
	if (o->batch % s->ranks != 0) {
		shared_error("%s: the batch of %d images does not split evenly across %d ranks; give a batch that "
				"%d divides (--batch), or another number of ranks\n",
			net_info.name, o->batch, s->ranks, s->ranks);
		session_free(s);
		return 2;
	}
	s->batch = o->batch / s->ranks;
	if (s->ranks > 1 && !groups_hold_params_in_order()) {
		error_line("%s: the groups' parameters are not laid out in order, which training across "
				"ranks needs; this is a bug of resgen's generator\n", net_info.name);
		session_free(s);
		return 1;
	}
	if (!o->normalisation_stored)
		data_normalisation(&s->train, o->recipe.normalise, o->recipe.normalise_mean, o->recipe.normalise_std,
				   s->mean, s->std);
	s->threads = threads_setup(o->threads, o->shares);
	s->shares = threads_shares();
	net_choose(); /* before any pass: the passes below call the groups' functions */
	char message[512];
	if (state_create(&s->state, s->batch, s->shares, message, sizeof message) != 0) {
		error_line("%s: %s\n", net_info.name, message);
		session_free(s);
		return 1;
	}
	s->state.ranks = (struct net_ranks){
		.count = s->ranks,
		.bn_sync = net_info.defaults.bn_sync,
		.first_image = (long)s->rank * s->batch,
		.add = ranks_add,
	};
	if (s->ranks > 1 && !net_info.defaults.bn_sync) {
		s->running_sums = malloc((size_t)(net_info.buffer_count ? net_info.buffer_count : 1) * sizeof(double));
		if (!s->running_sums) {
			error_line("%s: out of memory\n", net_info.name);
			session_free(s);
			return 1;
		}
	}
	state_init(&s->state, (uint64_t)o->seed);
	if (o->load_weights &&
	    state_load_weights(&s->state, o->load_weights, o->fresh_classifier, &s->loaded, message, sizeof message) != 0) {
		error_line("%s: %s\n", net_info.name, message);
		session_free(s);
		return 2;
	}
	return 0;
}

struct weights_meta session_meta(const struct session *s)
{
	return (struct weights_meta){s->mean, s->std, s->train.count, &s->train};
}

/* Backward group by group, last to first: as soon as a group's parameter
 * gradients are final, their sums across the ranks can start. The frozen
 * groups before the first trained one are not run: their gradients stay
 * the zeros they were given, and the step puts their weights back. */
void backward_summing_gradients(struct session *s)
{
	ranks_gradients_begin(s->state.grads, net_info.param_count);
	for (int g = net_info.group_count - 1; g >= s->first_trained_group; g--) {
		net_info.groups[g].backward(&s->state, s->batch);
		ranks_gradients_ready(net_info.groups[g].param_offset);
	}
	if (s->first_trained_group > 0)
		ranks_gradients_ready(0);
	ranks_gradients_end();
}

/* With BN's statistics per rank, each rank's running statistics move
 * towards its own: they are averaged across the ranks after every step, so
 * that every rank evaluates and checkpoints the same ones. */
void average_running_statistics(struct session *s)
{
	if (!s->running_sums)
		return;
	for (long i = 0; i < net_info.buffer_count; i++)
		s->running_sums[i] = s->state.buffers[i];
	ranks_add(s->running_sums, (int)net_info.buffer_count);
	for (long i = 0; i < net_info.buffer_count; i++)
		s->state.buffers[i] = (real)(s->running_sums[i] / s->ranks);
}

uint64_t weights_checksum(const struct net_state *state)
{
	uint64_t sum = checksum_add(CHECKSUM_BASIS, state->params, sizeof(real) * (size_t)net_info.param_count);
	sum = checksum_add(sum, state->velocity, sizeof(real) * (size_t)net_info.param_count);
	return checksum_add(sum, state->buffers, sizeof(real) * (size_t)net_info.buffer_count);
}

/* The CSV log: opened before the first step, every write checked, so a log
 * that cannot be written stops the run at once instead of losing it. */
int log_check(FILE *log, const char *path)
{
	if (fflush(log) == 0 && !ferror(log))
		return 0;
	error_line("%s: %s: cannot write the log: %s\n", net_info.name, path,
		strerror(errno ? errno : EIO));
	return 1;
}
