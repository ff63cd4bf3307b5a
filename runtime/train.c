/* The training loop: data, schedule, steps, evaluation, logs; under
 * mpirun, each rank runs it on its part of every batch (ranks.h). */
#include "train.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agreement.h"
#include "checkpoint.h"
#include "checksum.h"
#include "data.h"
#include "gemm.h"
#include "net_api.h"
#include "printable.h"
#include "ranks.h"
#include "rng.h"
#include "schedule.h"
#include "state.h"
#include "tensor_file.h"
#include "threads.h"
#include "version.h"

struct session {
	struct dataset train, test;
	double mean[16], std[16];
	struct net_state state;
	int threads;
	/* Data parallel: rank of ranks, each running batch images of every
	 * step (the whole batch over ranks); alone, rank 0 of 1. */
	int rank, ranks, batch;
	double *running_sums; /* averaging the ranks' BN running statistics */
	uint64_t data_identity; /* the data as loaded, before any limit */
};

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

long train_lr_step_at(int i, long iterations)
{
	const struct net_defaults *d = &net_info.defaults;
	return schedule_step_at(d->lr_steps[i], d->lr_step_fractions, iterations);
}

/* The paper's schedule: a warm-up rate, then base, times gamma at each
 * step; steps given as fractions are of this run's iterations. */
static double learning_rate(long iteration, long iterations)
{
	const struct net_defaults *d = &net_info.defaults;
	if (iteration < d->warmup_iterations)
		return d->warmup_lr;
	double lr = d->lr_base;
	for (int i = 0; i < d->lr_step_count; i++)
		if (iteration >= train_lr_step_at(i, iterations))
			lr *= d->lr_gamma;
	return lr;
}

/* An error every rank meets alike (the data, the batch, a checkpoint) is
 * printed by rank 0 alone, once. */
static void shared_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

static void shared_error(const char *format, ...)
{
	if (ranks_rank() != 0)
		return;
	va_list arguments;
	va_start(arguments, format);
	error_line_v(format, arguments);
	va_end(arguments);
}

static void session_free(struct session *s)
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
static int session_open(struct session *s, const struct run_options *o)
{
	memset(s, 0, sizeof *s);
	const struct net_defaults *d = &net_info.defaults;
	struct data_error error;
	int status;
	if (o->synthetic || strcmp(d->data_set, "synthetic") == 0) {
		long train_count = d->train_images > 0 ? d->train_images : 10000;
		long test_count = d->test_images > 0 ? d->test_images : 2000;
		status = data_synthetic(net_info.channels, net_info.height, net_info.width,
					net_info.classes, train_count, test_count, (uint64_t)o->seed,
					&s->train, &s->test, &error);
	} else {
		status = data_load(d->data_set, o->data_dir, net_info.channels, net_info.height,
				   net_info.width, net_info.classes, &s->train, &s->test, &error);
	}
	if (status != 0) {
		shared_error("%s: %s\n", net_info.name, error.text);
		return 2;
	}
	s->data_identity = dataset_identity(&s->test, dataset_identity(&s->train, CHECKSUM_BASIS));
	if (o->train_limit > 0)
		dataset_truncate(&s->train, o->train_limit);
	if (o->test_limit > 0)
		dataset_truncate(&s->test, o->test_limit);
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
	dataset_channel_stats(&s->train, s->mean, s->std);
	s->threads = threads_setup(o->threads);
	char message[512];
	if (state_create(&s->state, s->batch, s->threads, message, sizeof message) != 0) {
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
	    state_load_weights(&s->state, o->load_weights, message, sizeof message) != 0) {
		error_line("%s: %s\n", net_info.name, message);
		session_free(s);
		return 2;
	}
	return 0;
}

static int count_errors(const real *logits, const int *labels, int n)
{
	int errors = 0;
	for (int i = 0; i < n; i++) {
		const real *z = logits + (size_t)i * net_info.classes;
		int best = 0;
		for (int j = 1; j < net_info.classes; j++)
			if (z[j] > z[best])
				best = j;
		errors += best != labels[i];
	}
	return errors;
}

/* The test split in batches of the training batch's size: across ranks,
 * each evaluates its share of the images and their sums are added. */
static void evaluate(struct session *s, double *loss, double *error)
{
	int batch = s->batch;
	long *indices = malloc((size_t)batch * sizeof *indices);
	int *labels = malloc((size_t)batch * sizeof *labels);
	double loss_sum = 0;
	long errors = 0;
	long first = s->test.count * s->rank / s->ranks, end = s->test.count * (s->rank + 1) / s->ranks;
	s->state.training = 0;
	for (long start = first; indices && labels && start < end; start += batch) {
		int n = (int)(end - start < batch ? end - start : batch);
		for (int i = 0; i < n; i++)
			indices[i] = start + i;
		data_fill_batch(&s->test, indices, n, s->mean, s->std, NULL, NULL,
				state_input(&s->state, n), labels);
		s->state.labels = labels;
		net_forward(&s->state, n);
		loss_sum += s->state.loss * n;
		errors += count_errors(state_logits(&s->state, n), labels, n);
	}
	s->state.training = 1;
	double sums[2] = {loss_sum, (double)errors};
	ranks_add(sums, 2);
	*loss = sums[0] / (double)s->test.count;
	*error = sums[1] / (double)s->test.count;
	free(indices);
	free(labels);
}

static void shuffle(long *order, long count, struct rng *rng)
{
	for (long i = count - 1; i > 0; i--) {
		long j = (long)(rng_uniform(rng) * (double)(i + 1));
		long t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
}

static void format_duration(char *out, size_t size, double seconds)
{
	long s = (long)(seconds + 0.5);
	if (s >= 3600)
		snprintf(out, size, "%ldh%02ldm", s / 3600, s / 60 % 60);
	else
		snprintf(out, size, "%ldm%02lds", s / 60, s % 60);
}

/* The CSV log: opened before the first step, every write checked, so a log
 * that cannot be written stops the run at once instead of losing it. */
static int log_check(FILE *log, const char *path)
{
	if (fflush(log) == 0 && !ferror(log))
		return 0;
	error_line("%s: %s: cannot write the log: %s\n", net_info.name, path,
		strerror(errno ? errno : EIO));
	return 1;
}

static int log_open(FILE **log, const char *path)
{
	*log = NULL;
	if (!path)
		return 0;
	*log = fopen(path, "w");
	if (!*log) {
		error_line("%s: %s: cannot write the log: %s\n", net_info.name, path, strerror(errno));
		return 1;
	}
	fprintf(*log, "iteration,lr,train_loss,train_error,test_loss,test_error,seconds,"
		      "images_per_second\n");
	if (log_check(*log, path) == 0)
		return 0;
	fclose(*log);
	*log = NULL;
	return 1;
}

static int log_close(FILE *log, const char *path)
{
	if (!log)
		return 0;
	int status = log_check(log, path);
	if (fclose(log) != 0 && status == 0) {
		error_line("%s: %s: cannot write the log: %s\n", net_info.name, path,
			strerror(errno));
		status = 1;
	}
	return status;
}

/* The first trained parameter or running statistic that is not a finite
 * number, or NULL. A NaN can hide from the loss (ReLU maps it to 0), so
 * the weights themselves are checked. */
static const struct net_param *non_finite_param(const struct net_state *s)
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

/* Gradient flow, the argument of the paper's sections 2 and 3 made
 * measurable: for each unit l, on a fixed batch (the first training images,
 * not augmented) in training mode, ||x_l|| (the unit's input), ||x_{l+1} -
 * x_l|| (what the unit adds: ||F(x_l)|| when its shortcut and its
 * after-addition are identities, as in full pre-activation; empty where the
 * shape changes), ||dL/dx_l||, and that over ||dL/dx_L||, x_L the last
 * unit's output. Norms over the whole batch. BN's running statistics are
 * put back afterwards, so measuring changes nothing in the run. */
static double norm_of(const real *values, const real *minus, long count)
{
	double sum = 0;
	for (long i = 0; i < count; i++) {
		double v = (double)values[i] - (minus ? (double)minus[i] : 0);
		sum += v * v;
	}
	return sqrt(sum);
}

static int gradflow_measure(struct session *s, int n, long iteration, FILE *csv)
{
	int groups = net_info.group_count;
	long largest = 0;
	for (int g = 0; g < groups; g++)
		if (net_info.groups[g].output_size > largest)
			largest = net_info.groups[g].output_size;
	real *previous = malloc((size_t)n * (size_t)largest * sizeof *previous);
	real *buffers = malloc((size_t)(net_info.buffer_count ? net_info.buffer_count : 1) * sizeof *buffers);
	double *norms = calloc((size_t)groups * 3, sizeof *norms); /* input, change, gradient */
	long *indices = malloc((size_t)n * sizeof *indices);
	int *labels = malloc((size_t)n * sizeof *labels);
	int status = 0;
	if (!previous || !buffers || !norms || !indices || !labels) {
		status = -1;
		goto done;
	}
	memcpy(buffers, s->state.buffers, (size_t)net_info.buffer_count * sizeof *buffers);
	for (int i = 0; i < n; i++)
		indices[i] = i;
	data_fill_batch(&s->train, indices, n, s->mean, s->std, NULL, NULL, state_input(&s->state, n), labels);
	s->state.labels = labels;
	s->state.step = iteration;
	state_zero_grads(&s->state);
	for (int g = 0; g < groups; g++) {
		const struct net_group *group = &net_info.groups[g];
		group->forward(&s->state, n);
		const real *out = s->state.arena + (size_t)n * group->output_offset;
		if (g > 0) {
			norms[3 * g] = norm_of(previous, NULL, (long)n * group->input_size);
			norms[3 * g + 1] = group->output_size == group->input_size
						   ? norm_of(out, previous, (long)n * group->output_size)
						   : NAN;
		}
		memcpy(previous, out, (size_t)n * (size_t)group->output_size * sizeof *previous);
	}
	for (int g = groups - 1; g >= 0; g--) {
		const struct net_group *group = &net_info.groups[g];
		group->backward(&s->state, n);
		norms[3 * g + 2] = norm_of(s->state.arena + (size_t)n * group->input_gradient_offset, NULL,
					   (long)n * group->input_size);
	}
	memcpy(s->state.buffers, buffers, (size_t)net_info.buffer_count * sizeof *buffers);
	state_zero_grads(&s->state);
	double last = norms[3 * (groups - 1) + 2];
	for (int g = 1; g < groups - 1; g++) {
		fprintf(csv, "%ld,%d,%s,%.9g,", iteration, g, net_info.groups[g].name, norms[3 * g]);
		if (isnan(norms[3 * g + 1]))
			fprintf(csv, ",");
		else
			fprintf(csv, "%.9g,", norms[3 * g + 1]);
		fprintf(csv, "%.9g,%.9g\n", norms[3 * g + 2], norms[3 * g + 2] / last);
	}
done:
	free(previous);
	free(buffers);
	free(norms);
	free(indices);
	free(labels);
	return status;
}

/* One measurement into the CSV, its writing checked. */
static int gradflow_record(struct session *s, const struct run_options *o, long iteration, FILE *csv)
{
	if (gradflow_measure(s, o->batch, iteration, csv) != 0) {
		error_line("%s: out of memory\n", net_info.name);
		return 1;
	}
	return log_check(csv, o->gradflow_path);
}

/* SIGINT and SIGTERM, while a run keeps checkpoints: noted here, acted on
 * between iterations (a checkpoint, then exit status 4). A second signal
 * ends the process at once; the last checkpoint stays whole. */
static volatile sig_atomic_t stop_signal;

static void note_signal(int signal) { stop_signal = signal; }

static void catch_stop_signals(void)
{
	struct sigaction action;
	memset(&action, 0, sizeof action);
	action.sa_handler = note_signal;
	action.sa_flags = SA_RESETHAND;
	sigemptyset(&action.sa_mask);
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGTERM, &action, NULL);
}

/* Points where the tests act on a run (train.h): nothing here. The test
 * builds link tests/hooks.c, whose definitions replace these. */
__attribute__((weak)) void train_hook_stepped(struct net_state *state, long iteration)
{
	(void)state;
	(void)iteration;
}

__attribute__((weak)) void train_hook_checkpointed(long iteration) { (void)iteration; }

/* This rank's images of the whole batch at order: the augmentation draws of
 * the other ranks' images are passed over, so that every image gets those
 * of the single-process run. */
static void fill_training_batch(struct session *s, const long *order, const struct augment *augment,
				struct rng *rng, int *labels)
{
	int n = s->batch;
	data_skip_augment(augment, rng, s->rank * n);
	data_fill_batch(&s->train, order + (long)s->rank * n, n, s->mean, s->std, augment, rng,
			state_input(&s->state, n), labels);
	data_skip_augment(augment, rng, (s->ranks - 1 - s->rank) * n);
}

/* Backward group by group, last to first: as soon as a group's parameter
 * gradients are final, their sums across the ranks can start. */
static void backward_summing_gradients(struct session *s)
{
	ranks_gradients_begin(s->state.grads, net_info.param_count);
	for (int g = net_info.group_count - 1; g >= 0; g--) {
		net_info.groups[g].backward(&s->state, s->batch);
		ranks_gradients_ready(net_info.groups[g].param_offset);
	}
	ranks_gradients_end();
}

/* With BN's statistics per rank, each rank's running statistics move
 * towards its own: they are averaged across the ranks after every step, so
 * that every rank evaluates and checkpoints the same ones. */
static void average_running_statistics(struct session *s)
{
	if (!s->running_sums)
		return;
	for (long i = 0; i < net_info.buffer_count; i++)
		s->running_sums[i] = s->state.buffers[i];
	ranks_add(s->running_sums, (int)net_info.buffer_count);
	for (long i = 0; i < net_info.buffer_count; i++)
		s->state.buffers[i] = (real)(s->running_sums[i] / s->ranks);
}

/* Every CHECK_EVERY iterations, and at each evaluation, the ranks compare a
 * checksum of their weights, momenta and running statistics: they must be
 * bitwise the same, and a run whose ranks have drifted apart is stopped. */
enum { CHECK_EVERY = 100 };

static uint64_t weights_checksum(const struct net_state *state)
{
	uint64_t sum = checksum_add(CHECKSUM_BASIS, state->params, sizeof(real) * (size_t)net_info.param_count);
	sum = checksum_add(sum, state->velocity, sizeof(real) * (size_t)net_info.param_count);
	return checksum_add(sum, state->buffers, sizeof(real) * (size_t)net_info.buffer_count);
}

static int check_ranks_agree(const struct session *s, long iteration)
{
	if (s->ranks == 1)
		return 0;
	int differing;
	uint64_t theirs;
	if (ranks_agree(weights_checksum(&s->state), &differing, &theirs))
		return 0;
	if (s->rank == 0)
		error_line(
			"%s: after iteration %ld the weights of rank %d differ from rank 0's; the ranks must train "
			"in step, so the run stops (its last checkpoint is from before)\n",
			net_info.name, iteration, differing);
	return 1;
}

/* Before the first step, the ranks compare the settings (as a checkpoint
 * filled them in) and the data: ranks on other settings would sum the
 * gradients of other batches, or meet at other collectives and wait
 * forever. */
static int agree_on_settings(const struct session *s, const struct run_options *o)
{
	const struct agreed values[] = {
		{"--batch", (uint64_t)o->batch, AGREED_NUMBER, NULL},
		{"--iterations", (uint64_t)o->iterations, AGREED_NUMBER, NULL},
		{"--eval-every", (uint64_t)o->eval_every, AGREED_NUMBER, NULL},
		{"--checkpoint-every", (uint64_t)o->checkpoint_every, AGREED_NUMBER, NULL},
		{"--seed", (uint64_t)o->seed, AGREED_NUMBER, NULL},
		{"--train-limit", (uint64_t)o->train_limit, AGREED_NUMBER, NULL},
		{"--test-limit", (uint64_t)o->test_limit, AGREED_NUMBER, NULL},
		{"--synthetic", o->synthetic, AGREED_GIVEN, NULL},
		{"--steps", (uint64_t)o->steps, AGREED_NUMBER, NULL},
		{"train.bn_sync", (uint64_t)net_info.defaults.bn_sync, AGREED_NUMBER, NULL},
		{"the data (a checksum of the images and labels)", s->data_identity, AGREED_HASH, NULL},
	};
	return ranks_agree_on(values, (int)(sizeof values / sizeof values[0]));
}

/* Then the weights they start from (loaded, resumed or seeded), and where
 * in the run they stand. */
static int agree_on_start(const struct session *s, long iteration)
{
	const struct agreed values[] = {
		{"the iteration to start from (--resume)", (uint64_t)iteration, AGREED_NUMBER, NULL},
		{"the starting weights (--load-weights, --resume)", weights_checksum(&s->state), AGREED_HASH, NULL},
	};
	return ranks_agree_on(values, (int)(sizeof values / sizeof values[0]));
}

/* The log of a resumed run: cut back to its length at the checkpoint (rows
 * written after it are written again), then appended to. */
static int log_reopen(FILE **log, const char *path, long bytes)
{
	*log = NULL;
	if (!path)
		return 0;
	if (bytes < 0)
		return log_open(log, path);
	struct stat info;
	int found = stat(path, &info) == 0 ? 0 : errno;
	if (found == 0 && S_ISREG(info.st_mode)) {
		if (info.st_size < bytes) {
			error_line(
				"%s: %s: the log is shorter (%lld bytes) than at the checkpoint (%ld); resume "
				"with the log the run was writing\n",
				net_info.name, path, (long long)info.st_size, bytes);
			return 2;
		}
		if (truncate(path, bytes) != 0) {
			error_line("%s: %s: cannot write the log: %s\n", net_info.name, path, strerror(errno));
			return 1;
		}
	} else if (found == ENOENT) {
		error_line("%s: %s: no such log; resume with the log the run was writing, or without --log\n",
			net_info.name, path);
		return 2;
	}
	*log = fopen(path, "a");
	if (!*log) {
		error_line("%s: %s: cannot write the log: %s\n", net_info.name, path, strerror(errno));
		return 1;
	}
	return 0;
}

/* What summing the gradients across the ranks cost: the bytes per step,
 * the time the sums take alone (measured now, on the same buckets), and the
 * time per step waited for them after backward by the last rank to finish
 * it (what backward did not hide) and by the first (which waits for the
 * slowest rank too: cores of one machine differ by percents). */
static void report_gradient_sums(struct session *s)
{
	struct ranks_timing timing = ranks_timing();
	double alone = ranks_gradients_alone(s->state.grads, net_info.param_count, 5);
	if (timing.steps == 0)
		return;
	double least = timing.least_waited / (double)timing.steps, most = timing.most_waited / (double)timing.steps;
	double hidden = alone > 0 ? 1 - least / alone : 0;
	printf("gradient sums across %d ranks: %.2f MB per step, %.2f ms alone; waited %.2f ms per step after "
	       "backward on the last rank to finish it (%.0f%% hidden behind it), %.2f ms on the first\n",
	       s->ranks, (double)timing.reals_per_step * sizeof(real) / 1e6, 1e3 * alone, 1e3 * least,
	       100 * (hidden > 0 ? hidden : 0), 1e3 * most);
}

int train_run(const struct run_options *options)
{
	/* The log's path was checked before; it is truncated only once the
	 * data and weights have loaded, so a run refused for its input leaves
	 * an earlier log as it was. A resumed run takes its settings from its
	 * checkpoint. Across ranks, rank 0 alone writes the log, checkpoints
	 * and weights; a failure of any rank is agreed on (ranks_agree_status)
	 * where it can arise, so that every rank stops at the same point. */
	struct run_options run = *options;
	const struct run_options *o = &run;
	char message[PATH_MAX + 512];
	struct tensor_file checkpoint = {0};
	int checkpoint_threads = 0, checkpoint_ranks = 1;
	if (o->resume_path) {
		if (checkpoint_open(&checkpoint, o->resume_path, &run, &checkpoint_threads, &checkpoint_ranks, message,
				    sizeof message) != 0) {
			shared_error("%s: %s\n", net_info.name, message);
			return ranks_agree_status(2);
		}
		if (!run.checkpoint_path)
			run.checkpoint_path = run.resume_path;
		char writer[128];
		if (!checkpoint_written_by(&checkpoint, writer, sizeof writer))
			shared_error("%s: note: %s was written by resgen %s, and this binary is resgen %s; the network "
				     "is the same, so the run goes on\n",
				     net_info.name, o->resume_path, writer, resgen_version());
	}
	struct session s;
	int opened = session_open(&s, o), status = ranks_agree_status(opened);
	if (status == 0)
		status = agree_on_settings(&s, o);
	if (status != 0) {
		if (opened == 0) /* another rank's failure, or a disagreement */
			session_free(&s);
		tensor_file_free(&checkpoint);
		return status;
	}
	bool writer = s.rank == 0; /* of the log, checkpoints and weights */
	const struct net_defaults *d = &net_info.defaults;
	struct augment augment = {d->augment_pad, d->augment_flip};
	struct progress at = {.log_bytes = -1};
	rng_seed(&at.rng, (uint64_t)o->seed, 0xba7c);
	long *order = malloc((size_t)s.train.count * sizeof *order);
	int *labels = malloc((size_t)s.batch * sizeof *labels);
	FILE *log = NULL, *gradflow = NULL;
	if (!order || !labels) {
		error_line("%s: out of memory\n", net_info.name);
		status = 1;
		goto agreed;
	}
	for (long i = 0; i < s.train.count; i++)
		order[i] = i;
	shuffle(order, s.train.count, &at.rng);
	if (o->resume_path) {
		status = checkpoint_restore(&checkpoint, o->resume_path, s.train.count, s.data_identity, &s.state, &at,
					    order, message, sizeof message);
		tensor_file_free(&checkpoint);
		if (status == 0 && checkpoint_ranks != s.ranks)
			snprintf(message, sizeof message,
				 "%s: the run was split across %d ranks and this one has %d; resume it with "
				 "mpirun -np %d%s",
				 o->resume_path, checkpoint_ranks, s.ranks, checkpoint_ranks,
				 checkpoint_ranks == 1 ? ", or without mpirun" : "");
		if (status != 0 || checkpoint_ranks != s.ranks) {
			shared_error("%s: %s\n", net_info.name, message);
			status = 2;
		} else if (checkpoint_threads != s.threads)
			shared_error(
				"%s: note: the run had %d threads and resumes on %d; its weights will not be bitwise "
				"those of an unbroken run\n",
				net_info.name, checkpoint_threads, s.threads);
	}
	/* every rank restored, or none: then they compare where they start */
	status = ranks_agree_status(status);
	if (status == 0)
		status = agree_on_start(&s, at.iteration);
	if (status == 0 && writer)
		status = o->resume_path ? log_reopen(&log, o->log_path, at.log_bytes) : log_open(&log, o->log_path);
	if (status == 0 && o->gradflow_path) {
		gradflow = fopen(o->gradflow_path, "w");
		if (gradflow)
			fprintf(gradflow, "iteration,unit,name,input_norm,change_norm,gradient_norm,gradient_ratio\n");
		status = gradflow ? log_check(gradflow, o->gradflow_path) : 1;
		if (!gradflow)
			error_line("%s: %s: cannot write: %s\n", net_info.name, o->gradflow_path, strerror(errno));
	}
agreed:
	status = ranks_agree_status(status);
	if (status != 0)
		goto done;
	if (o->checkpoint_path)
		catch_stop_signals();

	printf("%s: %s, %ld parameters, %s\n", net_info.name, net_info.summary, net_info.param_count,
	       net_info.dtype);
	printf("data: %s, %ld training and %ld test images of %dx%dx%d; batch %d, %ld iterations, "
	       "%d threads, BLIS %s kernels\n",
	       o->synthetic ? "synthetic" : d->data_set, s.train.count, s.test.count, net_info.channels,
	       net_info.height, net_info.width, o->batch, o->iterations, s.threads, gemm_kernels());
	if (s.ranks > 1)
		printf("ranks: %d (Open MPI), %d images of each batch and %d thread%s each; BN statistics %s\n",
		       s.ranks, s.batch, s.threads, s.threads == 1 ? "" : "s",
		       d->bn_sync ? "over the whole batch (bn_sync)" : "per rank, running statistics averaged");
	if (o->resume_path) {
		char shown[4 * PATH_MAX];
		printable_text(shown, sizeof shown, o->resume_path);
		printf("resumed from %s after iteration %ld\n", shown, at.iteration);
	}
	fflush(stdout);

	bool terminal = writer && isatty(STDERR_FILENO);
	long first = at.iteration;
	if (gradflow && first == 0 && gradflow_record(&s, o, 0, gradflow) != 0)
		status = 1;
	double start = now() - at.seconds, resumed = now(), interval_start = resumed, last_progress = 0;
	/* this run's seconds in its training steps, and in their data loading
	 * and augmentation: what `train` costs past the network's kernels */
	double step_seconds = 0, data_seconds = 0;
	for (long it = first; status == 0 && it < o->iterations; it++) {
		double step_start = now();
		if (at.position + o->batch > s.train.count) {
			shuffle(order, s.train.count, &at.rng);
			at.position = 0;
		}
		fill_training_batch(&s, order + at.position, &augment, &at.rng, labels);
		data_seconds += now() - step_start;
		at.position += o->batch;
		double lr = learning_rate(it, o->iterations);
		s.state.labels = labels;
		s.state.step = it;
		net_forward(&s.state, s.batch);
		/* the whole batch's loss and errors: the ranks' sums added */
		double sums[2] = {s.state.loss * s.batch,
				  count_errors(state_logits(&s.state, s.batch), labels, s.batch)};
		ranks_add(sums, 2);
		double loss = sums[0] / o->batch;
		if (!isfinite(loss)) {
			error_line(
				"%s: the loss became %g at iteration %ld (lr %g); training diverged, try "
				"a smaller learning rate\n",
				net_info.name, loss, it + 1, lr);
			status = ranks_agree_status(3);
			break;
		}
		at.interval_loss += sums[0];
		at.interval_errors += (long)sums[1];
		at.interval_images += o->batch;
		state_zero_grads(&s.state);
		backward_summing_gradients(&s);
		net_sgd(&s.state, (real)lr, (real)d->momentum, (real)d->weight_decay);
		average_running_statistics(&s);
		step_seconds += now() - step_start;
		at.iteration = it + 1;
		if (gradflow && (it + 1) % o->gradflow_every == 0 && gradflow_record(&s, o, it + 1, gradflow) != 0) {
			status = 1;
			break;
		}
		train_hook_stepped(&s.state, it + 1);

		double t = now();
		if (terminal && t - last_progress > 0.25) {
			char eta[32];
			double rate = (double)(it + 1 - first) / (t - resumed);
			format_duration(eta, sizeof eta, (double)(o->iterations - it - 1) / rate);
			fprintf(stderr, "\r  iteration %ld/%ld  loss %.4f  lr %g  %.0f images/s  ETA %s   ",
				it + 1, o->iterations, loss, lr, rate * o->batch, eta);
			last_progress = t;
		}
		bool evaluated = (it + 1) % o->eval_every == 0 || it + 1 == o->iterations;
		if (evaluated) {
			double images_per_second = (double)at.interval_images / (t - interval_start);
			double test_loss, test_error;
			evaluate(&s, &test_loss, &test_error);
			double train_loss = at.interval_loss / (double)at.interval_images;
			double train_error = (double)at.interval_errors / (double)at.interval_images;
			if (terminal)
				fprintf(stderr, "\r%*s\r", 78, "");
			printf("iteration %ld: lr %g | train loss %.4f, error %.2f%% | test loss %.4f, "
			       "error %.2f%% | %.0f images/s\n",
			       it + 1, lr, train_loss, 100 * train_error, test_loss, 100 * test_error,
			       images_per_second);
			fflush(stdout);
			if (log) {
				fprintf(log, "%ld,%.17g,%.17g,%.17g,%.17g,%.17g,%.3f,%.1f\n", it + 1, lr,
					train_loss, train_error, test_loss, test_error, now() - start,
					images_per_second);
				status = log_check(log, o->log_path);
			}
			const struct net_param *broken = non_finite_param(&s.state);
			if (status == 0 && broken) {
				error_line(
					"%s: %s %s became non-finite by iteration %ld (lr %g); training "
					"diverged, try a smaller learning rate\n",
					net_info.name, broken->trained ? "parameter" : "running statistic",
					broken->name, it + 1, lr);
				status = 3;
			}
			if ((status = ranks_agree_status(status)) != 0)
				break;
			at.interval_loss = 0;
			at.interval_errors = at.interval_images = 0;
			interval_start = now();
			if (it + 1 == o->iterations) {
				char took[32];
				format_duration(took, sizeof took, now() - start);
				printf("test error: %.2f%% on %ld test images, after %ld iterations (%s)\n",
				       100 * test_error, s.test.count, o->iterations, took);
			}
		}
		if ((evaluated || (it + 1) % CHECK_EVERY == 0) && (status = check_ranks_agree(&s, it + 1)) != 0)
			break;
		train_hook_checkpointed(it + 1);
		bool due = o->checkpoint_every ? (it + 1) % o->checkpoint_every == 0 || it + 1 == o->iterations
					       : evaluated;
		int stopped_by = o->checkpoint_path ? ranks_max(stop_signal) : 0, stopping = stopped_by != 0;
		if (o->checkpoint_path && (due || stopping)) {
			at.seconds = now() - start;
			at.log_bytes = log ? ftell(log) : -1;
			if (writer && checkpoint_save(o->checkpoint_path, o, s.threads, s.ranks, &s.state, &at, order,
						      s.train.count, s.data_identity, message, sizeof message) != 0) {
				error_line("%s: %s\n", net_info.name, message);
				status = 1;
			}
			if ((status = ranks_agree_status(status)) != 0)
				break;
		}
		if (stopping) {
			if (terminal)
				fprintf(stderr, "\r%*s\r", 78, "");
			if (writer)
				error_line("%s: stopped by %s after iteration %ld; resume with --resume %s\n",
					net_info.name, stopped_by == SIGINT ? "SIGINT" : "SIGTERM", it + 1,
					o->checkpoint_path);
			status = ranks_agree_status(4);
			break;
		}
	}
	if (o->resume_path && first >= o->iterations)
		printf("the run had already finished all %ld iterations\n", o->iterations);
	else if (status == 0 && o->iterations > first) /* gradflow may train none */
		printf("time: %.1f ms a training step, of which loading and augmenting the data %.2f ms (%.2f%%)\n",
		       1e3 * step_seconds / (double)(o->iterations - first),
		       1e3 * data_seconds / (double)(o->iterations - first), 100 * data_seconds / step_seconds);
	if (status == 0 && s.ranks > 1)
		report_gradient_sums(&s);
	if (status == 0 && writer && o->save_weights &&
	    state_save_weights(&s.state, o->save_weights, message, sizeof message) != 0) {
		error_line("%s: %s\n", net_info.name, message);
		status = 1;
	}
	status = ranks_agree_status(status);
done:
	tensor_file_free(&checkpoint);
	if (log_close(log, o->log_path) != 0 && status == 0)
		status = 1;
	if (log_close(gradflow, o->gradflow_path) != 0 && status == 0)
		status = 1;
	free(order);
	free(labels);
	session_free(&s);
	return status;
}

/* Dump of the first step on the first batch, for comparing builds, and of
 * the first batch evaluated with the weights after the last step. Across
 * ranks, each runs its part of the batch, and rank 0 dumps the whole
 * batch's first loss and the weights after the last step: what a reference
 * computing BN over each part (or over the whole batch, with bn_sync) can
 * check. */
int step_run(const struct run_options *o)
{
	struct session s;
	int opened = session_open(&s, o), status = ranks_agree_status(opened);
	if (status == 0 && (status = agree_on_settings(&s, o)) == 0)
		status = agree_on_start(&s, 0);
	if (status != 0) {
		if (opened == 0) /* another rank's failure, or a disagreement */
			session_free(&s);
		return status;
	}
	const struct net_defaults *d = &net_info.defaults;
	int n = s.batch;
	bool alone = s.ranks == 1;
	long *indices = malloc((size_t)n * sizeof *indices);
	int *labels = malloc((size_t)n * sizeof *labels);
	struct tensor_file dump = {0};
	int failed = ranks_max(!indices || !labels);
	for (int i = 0; !failed && i < n; i++)
		indices[i] = (long)s.rank * n + i;
	for (int step = 0; !failed && step < o->steps; step++) {
		data_fill_batch(&s.train, indices, n, s.mean, s.std, NULL, NULL, state_input(&s.state, n),
				labels);
		if (step == 0 && alone)
			failed |= tensor_file_add(&dump, "input", state_input(&s.state, n),
						  (long)n * net_info.channels * net_info.height *
							  net_info.width);
		s.state.labels = labels;
		s.state.step = step;
		state_zero_grads(&s.state);
		if (step > 0 || !alone) {
			net_forward(&s.state, n);
			backward_summing_gradients(&s);
		} else {
			/* Group by group, to dump each group's output and the
			 * gradient of its input while they are in the arena. */
			char name[300];
			for (int g = 0; g < net_info.group_count; g++) {
				const struct net_group *group = &net_info.groups[g];
				group->forward(&s.state, n);
				snprintf(name, sizeof name, "act/%s", group->name);
				failed |= tensor_file_add(&dump, name,
							  s.state.arena + (size_t)n * group->output_offset,
							  (long)n * group->output_size);
			}
			for (int g = net_info.group_count - 1; g >= 0; g--) {
				const struct net_group *group = &net_info.groups[g];
				group->backward(&s.state, n);
				snprintf(name, sizeof name, "grad_in/%s", group->name);
				failed |= tensor_file_add(
					&dump, name, s.state.arena + (size_t)n * group->input_gradient_offset,
					(long)n * group->input_size);
			}
			double label_values[4096];
			for (int i = 0; i < n; i++)
				label_values[i] = labels[i];
			failed |= tensor_file_add_double(&dump, "labels", label_values, n);
		}
		if (step == 0) {
			double loss = s.state.loss * n; /* the whole batch's: the ranks' sums added */
			ranks_add(&loss, 1);
			loss /= o->batch;
			failed |= tensor_file_add_double(&dump, "loss", alone ? &s.state.loss : &loss, 1);
		}
		if (step == 0 && alone) {
			failed |= tensor_file_add(&dump, "logits", state_logits(&s.state, n),
						  (long)n * net_info.classes);
			failed |= tensor_file_add(&dump, "input_gradient", state_input_gradient(&s.state, n),
						  (long)n * net_info.channels * net_info.height *
							  net_info.width);
			for (int i = 0; i < net_info.param_tensor_count; i++) {
				const struct net_param *p = &net_info.params[i];
				char name[300];
				snprintf(name, sizeof name, "grad/%s", p->name);
				if (p->trained)
					failed |= tensor_file_add(&dump, name, s.state.grads + p->offset,
								  p->count);
			}
		}
		net_sgd(&s.state, (real)learning_rate(step, o->iterations), (real)d->momentum, (real)d->weight_decay);
		average_running_statistics(&s);
		failed = ranks_max(failed);
	}
	if (!failed && alone) {
		/* The first batch again, in evaluation (BN by its running
		 * statistics, dropout scaling): the path test errors come from. */
		data_fill_batch(&s.train, indices, n, s.mean, s.std, NULL, NULL, state_input(&s.state, n), labels);
		s.state.labels = labels;
		s.state.training = 0;
		net_forward(&s.state, n);
		s.state.training = 1;
		failed |= tensor_file_add_double(&dump, "eval/loss", &s.state.loss, 1);
		failed |= tensor_file_add(&dump, "eval/logits", state_logits(&s.state, n), (long)n * net_info.classes);
	}
	for (int i = 0; !failed && i < net_info.param_tensor_count; i++) {
		const struct net_param *p = &net_info.params[i];
		char name[300];
		snprintf(name, sizeof name, "after/%s", p->name);
		failed |= tensor_file_add(&dump, name,
					  (p->trained ? s.state.params : s.state.buffers) + p->offset,
					  p->count);
	}
	char message[512];
	if (failed) {
		error_line("%s: out of memory\n", net_info.name);
		status = 1;
	} else if (s.rank == 0 &&
		   (tensor_file_save(&dump, o->dump_path, message, sizeof message) != 0 ||
		    (o->save_weights && state_save_weights(&s.state, o->save_weights, message, sizeof message) != 0))) {
		error_line("%s: %s\n", net_info.name, message);
		status = 1;
	}
	tensor_file_free(&dump);
	free(indices);
	free(labels);
	session_free(&s);
	return ranks_agree_status(status);
}

int init_run(const struct run_options *o)
{
	struct net_state state;
	char message[512];
	if (state_create(&state, 1, 1, message, sizeof message) != 0) {
		error_line("%s: %s\n", net_info.name, message);
		return 1;
	}
	state_init(&state, (uint64_t)o->seed);
	int status = 0;
	if (state_save_weights(&state, o->save_weights, message, sizeof message) != 0) {
		error_line("%s: %s\n", net_info.name, message);
		status = 1;
	}
	state_free(&state);
	return status;
}
