/* The training loop: steps, evaluation, logs, checkpoints, and stopping
 * on a signal (signals.c); under mpirun, each rank runs it on its part of
 * every batch (ranks.h). The session it runs on: session.c. */
#include "train.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "run_agreement.h"
#include "checkpoint.h"
#include "data.h"
#include "evaluate.h"
#include "freeze.h"
#include "gemm.h"
#include "gradflow.h"
#include "isa.h"
#include "machine.h"
#include "net_api.h"
#include "printable.h"
#include "ranks.h"
#include "recipe.h"
#include "rng.h"
#include "session.h"
#include "signals.h"
#include "state.h"
#include "tensor_file.h"
#include "threads.h"
#include "version.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int count_errors(const real *logits, const int *labels, int n)
{
	int errors = 0;
	for (int i = 0; i < n; i++)
		errors += predicted_class(logits + (size_t)i * net_info.classes) != labels[i];
	return errors;
}

/* A split's mean loss and error, or none (NAN): a log row's columns. */
struct measured {
	double loss, error;
};
static const struct measured unmeasured = {NAN, NAN};

/* A split, its sums added across the ranks. */
static struct measured evaluate(struct session *s, const struct dataset *split)
{
	struct evaluation e = {0};
	evaluate_split(s, split, &e);
	return (struct measured){e.loss_sum / (double)split->count, (double)e.errors / (double)split->count};
}

/* Seconds between the progress lines of a run whose stderr is a file or a
 * pipe (a terminal's line is redrawn four times a second). */
enum { PLAIN_PROGRESS_SECONDS = 10 };

/* --iterations' largest */
enum { MAX_ITERATIONS = 1000000000 };

/* --keep-best: the weights of an evaluation whose error is below every
 * earlier one's (the first evaluation's too), written over the last kept.
 * 0, or 1 with the error printed. */
static int keep_best(const struct session *s, const struct run_options *o, struct progress *at, long iteration,
		     struct measured measured, bool writer)
{
	if (!o->keep_best || (at->best_iteration > 0 && !(measured.error < at->best_error)))
		return 0;
	at->best_error = measured.error;
	at->best_iteration = iteration;
	char message[PATH_MAX + 512];
	struct weights_meta meta = session_meta(s);
	if (writer && state_save_weights(&s->state, &meta, o->keep_best, message, sizeof message) != 0) {
		error_line("%s: %s\n", net_info.name, message);
		return 1;
	}
	return 0;
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

/* The CSV log's columns, each of one meaning on every row (--help and
 * specs/README.md say them): a row every --log-every iterations and at
 * every evaluation, its train_* the mean over the iterations since the row
 * before; val_* on evaluation rows with --validation, test_* on evaluation
 * rows without it (with it, on the last row); images_per_second over the
 * row's iterations. */
#define LOG_HEADER                                                                                                    \
	"iteration,lr,train_loss,train_error,val_loss,val_error,test_loss,test_error,seconds,images_per_second\n"

/* A number, or nothing where NAN says none was measured. */
static void log_field(FILE *log, double value)
{
	if (isnan(value))
		fputc(',', log);
	else
		fprintf(log, ",%.17g", value);
}

static void log_row(FILE *log, long iteration, double lr, struct measured train, struct measured validation,
		    struct measured test, double seconds, double images_per_second)
{
	fprintf(log, "%ld,%.17g", iteration, lr);
	const double values[] = {train.loss, train.error, validation.loss, validation.error, test.loss, test.error};
	for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
		log_field(log, values[i]);
	fprintf(log, ",%.3f,%.1f\n", seconds, images_per_second);
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
	fputs(LOG_HEADER, *log);
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

/* Points where the tests act on a run (train.h): nothing here. The test
 * builds link tests/hooks.c, whose definitions replace these. */
__attribute__((weak)) void train_hook_stepped(struct net_state *state, long iteration)
{
	(void)state;
	(void)iteration;
}

__attribute__((weak)) void train_hook_checkpointed(long iteration) { (void)iteration; }

__attribute__((weak)) double train_hook_progress_seconds(double seconds) { return seconds; }

/* This rank's images of the whole batch at order, each augmented by its
 * own key (data_augment_key): the draws of the single-process run. */
static void fill_training_batch(struct session *s, const long *order, const struct augment *augment,
				long iteration, int *labels)
{
	int n = s->batch;
	data_fill_batch(&s->train, order + (long)s->rank * n, n, s->mean, s->std, augment, iteration,
			state_input(&s->state, n), labels);
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
	/* a log of an older resgen has other columns: rows of these would not fit it */
	char header[256] = "";
	FILE *old = fopen(path, "r");
	if (old && (!fgets(header, sizeof header, old) || strcmp(header, LOG_HEADER) != 0)) {
		fclose(old);
		error_line("%s: %s: the log's columns are not this resgen's (its first line should be %.*s); resume "
			   "with the resgen that started the run, or without --log\n",
			   net_info.name, path, (int)strlen(LOG_HEADER) - 1, LOG_HEADER);
		return 2;
	}
	if (old)
		fclose(old);
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
	char share[32] = "none of it";
	if (hidden >= 0.005)
		snprintf(share, sizeof share, "%.0f%% of it", 100 * hidden);
	printf("gradient sums across %d ranks: %.2f MB per step, %.2f ms alone; waited %.2f ms per step after "
	       "backward on the last rank to finish it (%s hidden behind backward), %.2f ms on the first\n",
	       s->ranks, (double)timing.reals_per_step * sizeof(real) / 1e6, 1e3 * alone, 1e3 * least, share,
	       1e3 * most);
}

/* What a run's output says before its first step, for whoever reads it
 * later (a study's report among them): the machine, resgen's version and
 * the date; the recipe and what --set changed; and what the spec's
 * warnings would say of this run's schedule, which --iterations and --set
 * may have made (gradflow's short runs too). */
static void describe_run(const struct run_options *o, int threads)
{
	const struct net_defaults *r = &o->recipe;
	char processor[64], started[32];
	machine_processor(processor, sizeof processor);
	time_t clock_now = time(NULL);
	strftime(started, sizeof started, "%Y-%m-%d %H:%M UTC", gmtime(&clock_now));
	int busy = threads_busy_elsewhere();
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	char others[64] = "";
	if (busy >= 0)
		snprintf(others, sizeof others, ", %d other task%s running at start", busy, busy == 1 ? "" : "s");
	printf("machine: %s, %ld cores online%s; threads wait: %s; kernels for %s; resgen %s; started %s\n", processor,
	       cores, others, threads_wait(), isa_taken(), resgen_version(), started);
	int team = threads_team_beside(threads, busy);
	if (team < threads)
		printf("note: %d other task%s running at start: while some cores are busy, each pass runs on as many "
		       "of the %d threads as there are free cores (%d now), with the same result "
		       "(docs/shared-machine.md)\n",
		       busy, busy == 1 ? " was" : "s were", threads, team);
	printf("recipe: ");
	struct net_defaults described = *r;
	if (o->synthetic) /* generated images are padded and cropped, whatever the spec's set */
		described.data_set = SET_SYNTHETIC;
	recipe_describe(stdout, &described, o->iterations, net_info.height);
	char set[1024];
	recipe_set_text(set, sizeof set, r, o->recipe_set, false);
	printf("%s%s\n", set[0] ? "; --set " : "", set);
	fflush(stdout);
	const struct schedule_facts facts = {
		r->warmup_iterations, r->warmup_lr, r->lr_base, r->lr_gamma,
		r->lr_schedule == LR_SCHEDULE_STEP ? r->lr_step_count : 0, r->lr_steps, r->lr_step_fractions,
	};
	char warnings[4][320];
	bool at_steps[4];
	int count = o->iterations > 0 ? schedule_warnings(&facts, o->iterations, warnings, at_steps, 4) : 0;
	for (int i = 0; i < count; i++)
		shared_error("%s: %s\n", net_info.name, warnings[i]);
}

/* A training run between its phases: what train_run's phases share. */
struct training {
	struct run_options o;         /* as given, then as the checkpoint fills them in */
	struct tensor_file checkpoint; /* the run resumed, until restored */
	int checkpoint_ranks;
	struct session s;
	bool opened;                  /* s is open */
	bool writer;                  /* rank 0: the log, checkpoints and weights */
	bool terminal;                /* progress redrawn on a terminal */
	struct augment augment;
	struct progress at;           /* what a checkpoint keeps */
	long *order;                  /* the training images' order */
	int *labels;
	FILE *log, *gradflow;
	long first;                   /* the iteration the run starts from */
	double start, resumed, last_progress, progress_every;
	/* the interval since the last evaluation and the window since the log's
	 * last row, as this process counts them (a resumed interval began
	 * before the stop) */
	double interval_start, window_start;
	long interval_images_here, window_images_here;
	/* this run's seconds in its training steps, and in their data loading
	 * and augmentation: what train costs past the network's kernels */
	double step_seconds, data_seconds;
	/* --freeze: a flag a group (the checkpoint's on a resume), and the
	 * frozen values, put back after every step */
	unsigned char *frozen, *frozen_started;
	struct freeze freeze;
	char message[PATH_MAX + 512];
};

/* The settings a checkpoint keeps, out of the run's options and back. */
static struct run_settings kept_settings(const struct run_options *o, const unsigned char *frozen)
{
	struct run_settings kept = {
		.frozen = frozen,
		.iterations = o->iterations, .batch = o->batch, .seed = o->seed, .eval_every = o->eval_every,
		.train_limit = o->train_limit, .test_limit = o->test_limit, .synthetic = o->synthetic,
		.checkpoint_every = o->checkpoint_every, .shares = o->shares, .validation = o->validation,
		.epochs = o->epochs, .given = o->given, .recipe = o->recipe, .recipe_set = o->recipe_set,
		.extends = o->extends,
	};
	memcpy(kept.spelling, o->setting_spelling, sizeof kept.spelling);
	return kept;
}

static void take_settings(struct run_options *o, const struct run_settings *k)
{
	o->iterations = k->iterations;
	o->batch = k->batch;
	o->seed = k->seed;
	o->eval_every = k->eval_every;
	o->train_limit = k->train_limit;
	o->test_limit = k->test_limit;
	o->synthetic = k->synthetic;
	o->checkpoint_every = k->checkpoint_every;
	o->shares = k->shares;
	o->validation = k->validation;
	o->given = k->given;
	o->recipe = k->recipe;
	o->extends = k->extends;
}

/* Reads the checkpoint to resume, if any, and opens the session; its
 * settings are agreed on across the ranks. 0, or the exit status. */
static int open_session(struct training *t)
{
	struct run_options *o = &t->o;
	t->checkpoint_ranks = 1;
	t->frozen = calloc((size_t)net_info.group_count, 1);
	t->frozen_started = calloc((size_t)net_info.group_count, 1);
	if (!t->frozen || !t->frozen_started) {
		shared_error("%s: out of memory\n", net_info.name);
		return ranks_agree_status(1);
	}
	if (o->freeze && freeze_parse(o->freeze, t->frozen, t->message, sizeof t->message) != 0) {
		shared_error("%s: %s\n", net_info.name, t->message);
		return ranks_agree_status(2);
	}
	if (o->resume_path) {
		struct run_settings kept = kept_settings(o, t->frozen);
		kept.frozen_started = t->frozen_started;
		if (checkpoint_open(&t->checkpoint, o->resume_path, &kept, &t->checkpoint_ranks, t->message,
				    sizeof t->message) != 0) {
			shared_error("%s: %s\n", net_info.name, t->message);
			return ranks_agree_status(2);
		}
		take_settings(o, &kept);
		if (o->freeze && memcmp(t->frozen, t->frozen_started, (size_t)net_info.group_count) != 0) {
			char started[512];
			freeze_describe(t->frozen_started, started, sizeof started);
			shared_error("%s: %s: the run was started with %s frozen, and this command gives --freeze %s; "
				     "leave the option out to resume\n", net_info.name, o->resume_path, started, o->freeze);
			return ranks_agree_status(2);
		}
		memcpy(t->frozen, t->frozen_started, (size_t)net_info.group_count);
		if (!o->checkpoint_path)
			o->checkpoint_path = o->resume_path;
		char writer[128];
		if (!checkpoint_written_by(&t->checkpoint, writer, sizeof writer))
			shared_error("%s: note: %s was written by resgen %s, and this binary is resgen %s; the network "
				     "is the same, so the run goes on\n",
				     net_info.name, o->resume_path, writer, resgen_version());
	}
	int opened = session_open(&t->s, o), status = ranks_agree_status(opened);
	t->opened = opened == 0;
	if (status == 0 && o->epochs && !o->resume_path) /* a resumed run's were counted by checkpoint_open */
		o->iterations = epoch_iterations(o->epochs, t->s.train.count, o->batch);
	if (status == 0 && o->epochs && o->iterations > MAX_ITERATIONS)
		shared_error("%s: --epochs %ld is %ld iterations, more than the %d a run may have; give fewer\n",
			     net_info.name, o->epochs, o->iterations, MAX_ITERATIONS);
	if (status == 0)
		status = ranks_agree_status(o->epochs && o->iterations > MAX_ITERATIONS ? 2 : 0);
	if (status == 0)
		status = agree_on_settings(&t->s, o);
	return status;
}

/* The data order and the weights, fresh or restored, agreed on across the
 * ranks; then the log (truncated only now, so that a run refused for its
 * input leaves an earlier log as it was) and gradflow's CSV. 0, or the
 * exit status; every rank returns the same. */
static int open_run(struct training *t)
{
	const struct run_options *o = &t->o;
	struct session *s = &t->s;
	t->writer = s->rank == 0;
	int scale[2];
	recipe_scale_range(&o->recipe, net_info.height, &scale[0], &scale[1]);
	t->augment = data_augment(&s->train, (uint64_t)o->seed, o->recipe.augment_pad, o->recipe.augment_flip,
				  o->recipe.augment_aspect, scale);
	t->at.log_bytes = -1;
	rng_seed(&t->at.rng, (uint64_t)o->seed, 0xba7c);
	t->order = malloc((size_t)s->train.count * sizeof *t->order);
	t->labels = malloc((size_t)s->batch * sizeof *t->labels);
	int status = 0;
	if (!t->order || !t->labels) {
		error_line("%s: out of memory\n", net_info.name);
		status = 1;
	}
	for (long i = 0; status == 0 && i < s->train.count; i++)
		t->order[i] = i;
	if (status == 0)
		shuffle(t->order, s->train.count, &t->at.rng);
	if (status == 0 && o->resume_path) {
		status = checkpoint_restore(&t->checkpoint, o->resume_path, s->train.count, s->data_identity, &s->state,
					    &t->at, t->order, t->message, sizeof t->message);
		if (status == 0 && t->checkpoint_ranks != s->ranks)
			snprintf(t->message, sizeof t->message,
				 "%s: the run was split across %d ranks and this one has %d; resume it with "
				 "mpirun -np %d%s",
				 o->resume_path, t->checkpoint_ranks, s->ranks, t->checkpoint_ranks,
				 t->checkpoint_ranks == 1 ? ", or without mpirun" : "");
		if (status != 0 || t->checkpoint_ranks != s->ranks) {
			shared_error("%s: %s\n", net_info.name, t->message);
			status = 2;
		}
	}
	tensor_file_free(&t->checkpoint);
	if (status == 0 && freeze_begin(&t->freeze, t->frozen, &s->state) != 0) {
		error_line("%s: out of memory\n", net_info.name);
		status = 1;
	}
	while (s->first_trained_group < net_info.group_count && t->frozen[s->first_trained_group])
		s->first_trained_group++;
	/* every rank restored, or none: then they compare where they start */
	status = ranks_agree_status(status);
	if (status == 0)
		status = agree_on_start(s, t->at.iteration);
	if (status == 0 && t->writer)
		status = o->resume_path ? log_reopen(&t->log, o->log_path, t->at.log_bytes)
					: log_open(&t->log, o->log_path);
	if (status == 0 && o->gradflow_path) {
		t->gradflow = fopen(o->gradflow_path, "w");
		if (t->gradflow)
			fprintf(t->gradflow, "iteration,unit,name,input_norm,change_norm,gradient_norm,gradient_ratio\n");
		status = t->gradflow ? log_check(t->gradflow, o->gradflow_path) : 1;
		if (!t->gradflow)
			error_line("%s: %s: cannot write: %s\n", net_info.name, o->gradflow_path, strerror(errno));
	}
	return ranks_agree_status(status);
}

/* Where the weights start (--load-weights, --fresh-classifier) and what
 * stays as it began (--freeze). */
static void describe_weights(const struct training *t)
{
	const struct run_options *o = &t->o;
	const struct weights_loaded *l = &t->s.loaded;
	if (o->load_weights) {
		char shown[4 * PATH_MAX], fresh[256] = "";
		printable_text(shown, sizeof shown, o->load_weights);
		char file[64] = "the file holding none";
		if (l->left_out_values)
			snprintf(file, sizeof file, "the file's (%ld values) left out", l->left_out_values);
		if (o->fresh_classifier)
			snprintf(fresh, sizeof fresh, "; the classifier (%d tensors, %ld values, for %d classes) initialised "
				 "afresh, %s", l->fresh_tensors, l->fresh_values, net_info.classes, file);
		printf("weights: loaded %d of the %d tensors (%ld values) from %s%s\n", l->tensors,
		       net_info.param_tensor_count, l->values, shown, fresh);
	}
	if (t->freeze.tensors) {
		char parts[512];
		freeze_describe(t->frozen, parts, sizeof parts);
		printf("frozen: %s: %d tensors (%ld parameters and %ld BN running statistics) kept as they began%s\n",
		       parts, t->freeze.tensors, t->freeze.trained, t->freeze.values - t->freeze.trained,
		       o->resume_path && !o->freeze ? ", as the run began (its checkpoint keeps the list)" : "");
	}
}

/* What the run is, before its first step: the network, the data and
 * threads, the machine and recipe (describe_run), and where it resumes. */
static void describe_training(const struct training *t)
{
	const struct run_options *o = &t->o;
	const struct session *s = &t->s;
	const struct net_defaults *d = &net_info.defaults;
	printf("%s: %s, %ld parameters, %s\n", net_info.name, net_info.summary, net_info.param_count,
	       net_info.dtype);
	char shares[64] = "", held[96] = "", epochs[64] = "";
	if (s->shares != s->threads)
		snprintf(shares, sizeof shares, " (each pass in %d shares)", s->shares);
	if (s->validation.count)
		snprintf(held, sizeof held, " (and %ld held out to validate on, --validation)", s->validation.count);
	if (o->epochs)
		snprintf(epochs, sizeof epochs, " (%ld epoch%s)", o->epochs, o->epochs == 1 ? "" : "s");
	printf("data: %s, %ld training%s and %ld test images of %dx%dx%d; batch %d, %ld iterations%s, "
	       "%d thread%s%s, BLIS %s kernels\n",
	       data_sets[s->train.set].name, s->train.count, held, s->test.count, net_info.channels,
	       net_info.height, net_info.width, o->batch, o->iterations, epochs, s->threads, s->threads == 1 ? "" : "s",
	       shares, gemm_kernels());
	if (o->keep_best && !s->validation.count)
		printf("note: --keep-best picks the weights by their test error, which then overstates how well they "
		       "do; --validation N picks them on N training images held out instead\n");
	if (s->ranks > 1)
		printf("ranks: %d (Open MPI), %d images of each batch and %d thread%s%s each; BN statistics %s\n",
		       s->ranks, s->batch, s->threads, s->threads == 1 ? "" : "s", shares,
		       d->bn_sync ? "over the whole batch (bn_sync)" : "per rank, running statistics averaged");
	if (o->threads > s->threads)
		printf("note: --threads %d is more than the run's %d shares%s; %d threads run it, a thread a share\n",
		       o->threads, s->shares, o->resume_path ? " (its checkpoint's)" : "", s->threads);
	describe_run(o, s->threads);
	if (data_set_is_folder(s->train.set) && o->recipe.normalise == NORMALISE_FOLDER)
		printf("normalisation: the %ld training images' channel mean [%.4f, %.4f, %.4f] and deviation [%.4f, "
		       "%.4f, %.4f], stored with the weights\n", s->train.count, s->mean[0], s->mean[1], s->mean[2],
		       s->std[0], s->std[1], s->std[2]);
	describe_weights(t);
	if (o->resume_path) {
		char shown[4 * PATH_MAX];
		printable_text(shown, sizeof shown, o->resume_path);
		printf("resumed from %s after iteration %ld\n", shown, t->at.iteration);
		/* a resume's outputs are its command line's (its checkpoint the
		 * file resumed, unless given): what it lacks is said */
		char missing[512] = "";
		const char *outputs[][2] = {{o->log_path, "no log rows (--log)"},
					    {o->save_weights, "no weights at the end (--save-weights)"},
					    {o->keep_best, "no best evaluation's weights (--keep-best)"}};
		for (size_t i = 0; i < sizeof outputs / sizeof *outputs; i++)
			if (!outputs[i][0])
				snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s",
					 missing[0] ? ", " : "", outputs[i][1]);
		if (missing[0])
			printf("note: this resume writes %s: a checkpoint keeps the run's settings, not its outputs; give "
			       "those the run had again to have them\n",
			       missing);
	}
	if (o->extends)
		printf("extended from %ld to %ld iterations: the %ld done kept the rates of the %ld-iteration run; the "
		       "rest follow the recipe above, the schedule of a %ld-iteration run (from %g at iteration %ld)\n",
		       o->extends, o->iterations, t->at.iteration, o->extends, o->iterations,
		       recipe_rate(&o->recipe, t->at.iteration, o->iterations), t->at.iteration + 1);
	fflush(stdout);
}

/* The clocks and counters of the loop, and gradflow's measure at
 * initialisation. 0, or 1 with the error printed. */
static int start_loop(struct training *t)
{
	const struct run_options *o = &t->o;
	t->terminal = t->writer && isatty(STDERR_FILENO);
	t->progress_every = t->terminal ? 0.25 : train_hook_progress_seconds(PLAIN_PROGRESS_SECONDS);
	/* the log's training rows: as given, else as the run resumed had them,
	 * else about 250 in the run */
	t->at.log_every = o->log_every ? o->log_every : t->at.log_every ? t->at.log_every : (o->iterations + 249) / 250;
	t->first = t->at.iteration;
	if (t->gradflow && t->first == 0 && gradflow_record(&t->s, o, 0, t->gradflow) != 0)
		return 1;
	t->resumed = t->interval_start = t->window_start = now();
	t->start = t->resumed - t->at.seconds;
	return 0;
}

/* Iteration it's step: a batch in the run's order, forward, the loss
 * summed across the ranks, backward and SGD. 0, or 3 when the loss is no
 * longer a number. */
static int step(struct training *t, long it, double *lr, double *loss)
{
	const struct run_options *o = &t->o;
	struct session *s = &t->s;
	struct progress *at = &t->at;
	double step_start = now();
	if (at->position + o->batch > s->train.count) {
		shuffle(t->order, s->train.count, &at->rng);
		at->position = 0;
	}
	fill_training_batch(s, t->order + at->position, &t->augment, it, t->labels);
	t->data_seconds += now() - step_start;
	at->position += o->batch;
	*lr = recipe_rate(&o->recipe, it, o->iterations);
	s->state.labels = t->labels;
	s->state.step = it;
	net_forward(&s->state, s->batch);
	/* the whole batch's loss and errors: the ranks' sums added */
	double sums[2] = {s->state.loss * s->batch, count_errors(state_logits(&s->state, s->batch), t->labels, s->batch)};
	ranks_add(sums, 2);
	*loss = sums[0] / o->batch;
	if (!isfinite(*loss)) {
		error_line("%s: the loss became %g at iteration %ld (lr %g); training diverged, try a smaller learning "
			   "rate\n",
			   net_info.name, *loss, it + 1, *lr);
		return ranks_agree_status(3);
	}
	at->interval_loss += sums[0];
	at->interval_errors += (long)sums[1];
	at->interval_images += o->batch;
	at->window_loss += sums[0];
	at->window_errors += (long)sums[1];
	at->window_images += o->batch;
	t->interval_images_here += o->batch;
	t->window_images_here += o->batch;
	state_zero_grads(&s->state);
	backward_summing_gradients(s);
	net_sgd(&s->state, (real)*lr, (real)o->recipe.momentum, (real)o->recipe.weight_decay);
	average_running_statistics(s);
	freeze_restore(&t->freeze, &s->state);
	t->step_seconds += now() - step_start;
	at->iteration = it + 1;
	if (t->gradflow && (it + 1) % o->gradflow_every == 0 && gradflow_record(s, o, it + 1, t->gradflow) != 0)
		return 1;
	train_hook_stepped(&s->state, it + 1);
	return 0;
}

/* Whether iteration it ends with an evaluation: every --eval-every, and
 * the last. */
static bool evaluates(const struct run_options *o, long it)
{
	return (it + 1) % o->eval_every == 0 || it + 1 == o->iterations;
}

/* A progress line: redrawn on a terminal, a line a while otherwise. */
static void show_progress(struct training *t, long it, double lr, double loss, double when)
{
	if (!t->writer || when - t->last_progress <= t->progress_every)
		return;
	const struct run_options *o = &t->o;
	char eta[32];
	double rate = (double)(it + 1 - t->first) / (when - t->resumed);
	format_duration(eta, sizeof eta, (double)(o->iterations - it - 1) / rate);
	if (t->terminal)
		fprintf(stderr, "\r  iteration %ld/%ld  loss %.4f  lr %g  %.0f images/s  ETA %s   ", it + 1, o->iterations,
			loss, lr, rate * o->batch, eta);
	else if (t->last_progress > 0)
		fprintf(stderr, "  iteration %ld/%ld: loss %.4f, lr %g, %.0f images/s, ETA %s\n", it + 1, o->iterations,
			loss, lr, rate * o->batch, eta);
	t->last_progress = when;
}

/* The evaluation's line on stdout, the train loss and error over the
 * interval since the evaluation before. */
static void report_evaluation(const struct training *t, long it, double lr, struct measured validation,
			      struct measured test, double images_per_second)
{
	const struct progress *at = &t->at;
	if (t->terminal)
		fprintf(stderr, "\r%*s\r", 78, "");
	printf("iteration %ld: lr %g | train loss %.4f, error %.2f%%", it + 1, lr,
	       at->interval_loss / (double)at->interval_images,
	       100 * (double)at->interval_errors / (double)at->interval_images);
	if (!isnan(validation.loss))
		printf(" | val loss %.4f, error %.2f%%", validation.loss, 100 * validation.error);
	if (!isnan(test.loss))
		printf(" | test loss %.4f, error %.2f%%", test.loss, 100 * test.error);
	printf(" | %.0f images/s\n", images_per_second);
}

/* The run's last evaluation: its errors, and the best weights kept. */
static void report_end(const struct training *t, struct measured validation, struct measured test)
{
	const struct progress *at = &t->at;
	char took[32];
	format_duration(took, sizeof took, now() - t->start);
	printf("test error: %.2f%% on %ld test images, after %ld iterations (%s)\n", 100 * test.error,
	       t->s.test.count, t->o.iterations, took);
	if (t->s.validation.count)
		printf("validation error: %.2f%% on the last %ld training images, held out\n", 100 * validation.error,
		       t->s.validation.count);
	if (t->o.keep_best && at->best_iteration > 0) {
		char shown[4 * PATH_MAX];
		printable_text(shown, sizeof shown, t->o.keep_best);
		printf("best: %s error %.2f%% at iteration %ld, its weights in %s\n",
		       t->s.validation.count ? "validation" : "test", 100 * at->best_error, at->best_iteration, shown);
	}
}

/* Iteration it's row of the log, every --log-every iterations and at every
 * evaluation: the training window since the row before, and at an
 * evaluation the validation or test split measured, the best weights
 * kept, and the parameters checked. 0, or the exit status. */
static int log_row_and_evaluate(struct training *t, long it, double lr, double when)
{
	const struct run_options *o = &t->o;
	struct session *s = &t->s;
	struct progress *at = &t->at;
	bool evaluated = evaluates(o, it);
	if (!evaluated && (it + 1) % at->log_every != 0)
		return 0;
	struct measured window = {at->window_loss / (double)at->window_images,
				  (double)at->window_errors / (double)at->window_images};
	double window_rate = (double)t->window_images_here / (when - t->window_start);
	struct measured validation = unmeasured, test = unmeasured;
	int status = 0;
	if (evaluated && s->validation.count)
		validation = evaluate(s, &s->validation);
	if (evaluated && (!s->validation.count || it + 1 == o->iterations))
		test = evaluate(s, &s->test);
	if (evaluated) {
		report_evaluation(t, it, lr, validation, test,
				  (double)t->interval_images_here / (when - t->interval_start));
		status = keep_best(s, o, at, it + 1, s->validation.count ? validation : test, t->writer);
		fflush(stdout);
	}
	if (t->log) {
		log_row(t->log, it + 1, lr, window, validation, test, when - t->start, window_rate);
		if (status == 0)
			status = log_check(t->log, o->log_path);
	}
	const struct net_param *broken = evaluated ? state_non_finite_param(&s->state) : NULL;
	if (status == 0 && broken) {
		error_line("%s: %s %s became non-finite by iteration %ld (lr %g); training diverged, try a smaller "
			   "learning rate\n",
			   net_info.name, broken->trained ? "parameter" : "running statistic", broken->name, it + 1, lr);
		status = 3;
	}
	if ((status = ranks_agree_status(status)) != 0)
		return status;
	at->window_loss = 0;
	at->window_errors = at->window_images = 0;
	t->window_start = now();
	t->window_images_here = 0;
	if (evaluated) {
		at->interval_loss = 0;
		at->interval_errors = at->interval_images = 0;
		t->interval_start = t->window_start;
		t->interval_images_here = 0;
	}
	if (it + 1 == o->iterations)
		report_end(t, validation, test);
	return 0;
}

/* text as one word of a shell's command line, printable: as it is where
 * every byte is plain, else in single quotes. */
static void add_word(char *line, size_t size, const char *option, const char *text)
{
	char shown[4 * PATH_MAX];
	printable_text(shown, sizeof shown, text);
	size_t length = strlen(line);
	bool plain = shown[0] && strspn(shown, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=,:@%") ==
						 strlen(shown);
	length += (size_t)snprintf(line + length, length < size ? size - length : 0, " %s%s%s", option ? option : "",
				   option ? " " : "", plain ? shown : "'");
	for (const char *c = shown; !plain && *c && length + 5 < size; c++)
		length += (size_t)snprintf(line + length, size - length, *c == '\'' ? "'\\''" : "%c", *c);
	if (!plain && length + 2 < size)
		snprintf(line + length, size - length, "'");
}

/* The command that resumes a stopped run with every output it was given:
 * a resume takes its settings from the checkpoint, its outputs from the
 * command line alone. */
static void resume_command(const struct run_options *o, char *line, size_t size)
{
	line[0] = '\0';
	add_word(line, size, NULL, program_invocation_name);
	snprintf(line + strlen(line), size - strlen(line), " train");
	add_word(line, size, "--resume", o->checkpoint_path); /* which it goes on writing */
	if (o->data_dir && !o->synthetic && strcmp(o->data_dir, net_info.defaults.data_dir) != 0)
		add_word(line, size, "--data", o->data_dir);
	if (o->skip_bad_images)
		snprintf(line + strlen(line), size - strlen(line), " --skip-bad-images");
	if (o->log_path)
		add_word(line, size, "--log", o->log_path);
	if (o->save_weights)
		add_word(line, size, "--save-weights", o->save_weights);
	if (o->keep_best)
		add_word(line, size, "--keep-best", o->keep_best);
}

/* After iteration it: the ranks' weights compared now and then, the
 * checkpoint when due, and a stop asked for by a signal (4). 0, or the
 * exit status. */
static int checkpoint_and_stop(struct training *t, long it)
{
	const struct run_options *o = &t->o;
	struct session *s = &t->s;
	bool evaluated = evaluates(o, it);
	int status = 0;
	if ((evaluated || (it + 1) % CHECK_EVERY == 0) && (status = agree_during_run(s, it + 1)) != 0)
		return status;
	train_hook_checkpointed(it + 1);
	bool due = o->checkpoint_every ? (it + 1) % o->checkpoint_every == 0 || it + 1 == o->iterations : evaluated;
	int stopped_by = o->checkpoint_path ? ranks_max(signals_stop_noted()) : 0;
	if (o->checkpoint_path && (due || stopped_by)) {
		t->at.seconds = now() - t->start;
		t->at.log_bytes = t->log ? ftell(t->log) : -1;
		struct weights_meta meta = session_meta(s);
		struct run_settings kept = kept_settings(o, t->frozen);
		if (t->writer && checkpoint_save(o->checkpoint_path, &kept, &meta, s->shares, s->ranks, &s->state, &t->at,
						 t->order, s->train.count, s->data_identity, t->message,
						 sizeof t->message) != 0) {
			error_line("%s: %s\n", net_info.name, t->message);
			status = 1;
		}
		if ((status = ranks_agree_status(status)) != 0)
			return status;
	}
	if (!stopped_by)
		return 0;
	if (t->terminal)
		fprintf(stderr, "\r%*s\r", 78, "");
	if (t->writer) {
		static char command[8 * PATH_MAX];
		resume_command(o, command, sizeof command);
		error_line("%s: stopped by %s after iteration %ld; resume with:%s\n", net_info.name,
			   stopped_by == SIGINT ? "SIGINT" : "SIGTERM", it + 1, command);
	}
	return ranks_agree_status(4);
}

/* One iteration of the loop: 0 to go on, else the exit status. */
static int train_iteration(struct training *t, long it)
{
	double lr, loss;
	int status = step(t, it, &lr, &loss);
	if (status != 0)
		return status;
	double when = now();
	show_progress(t, it, lr, loss, when);
	status = log_row_and_evaluate(t, it, lr, when);
	return status != 0 ? status : checkpoint_and_stop(t, it);
}

/* After the loop: what the steps cost, how the threads ran, the ranks'
 * gradient sums, and the weights saved. The run's exit status. */
static int finish(struct training *t, int status)
{
	const struct run_options *o = &t->o;
	struct session *s = &t->s;
	long trained = o->iterations - t->first;
	if (o->resume_path && t->first >= o->iterations)
		printf("the run had already finished all %ld iterations\n", o->iterations);
	else if (status == 0 && trained > 0) /* gradflow may train none */
		printf("time: %.1f ms a training step, of which loading and augmenting the data %.2f ms (%.2f%%)\n",
		       1e3 * t->step_seconds / (double)trained, 1e3 * t->data_seconds / (double)trained,
		       100 * t->data_seconds / t->step_seconds);
	long fewer, passes;
	threads_team_counts(&fewer, &passes);
	if (fewer > 0 && threads_team_fixed())
		printf("threads: %ld of %ld passes ran on %d of the %d threads, as RESGEN_TEAM=%d fixed\n", fewer, passes,
		       threads_team_fixed(), s->threads, threads_team_fixed());
	else if (fewer > 0)
		printf("threads: %ld of %ld passes ran on fewer than %d threads, while other work kept cores busy\n",
		       fewer, passes, s->threads);
	if (status == 0 && s->ranks > 1)
		report_gradient_sums(s);
	struct weights_meta meta = session_meta(s);
	if (status == 0 && t->writer && o->save_weights &&
	    state_save_weights(&s->state, &meta, o->save_weights, t->message, sizeof t->message) != 0) {
		error_line("%s: %s\n", net_info.name, t->message);
		status = 1;
	}
	return ranks_agree_status(status);
}

static int close_run(struct training *t, int status)
{
	tensor_file_free(&t->checkpoint);
	if (log_close(t->log, t->o.log_path) != 0 && status == 0)
		status = 1;
	if (log_close(t->gradflow, t->o.gradflow_path) != 0 && status == 0)
		status = 1;
	free(t->order);
	free(t->labels);
	free(t->frozen);
	free(t->frozen_started);
	freeze_free(&t->freeze);
	if (t->opened)
		session_free(&t->s);
	return status;
}

/* A run, phase by phase. Across ranks, rank 0 alone writes the log,
 * checkpoints and weights; a failure of any rank is agreed on
 * (ranks_agree_status) where it can arise, so that every rank stops at
 * the same point. */
int train_run(const struct run_options *options)
{
	struct training *t = calloc(1, sizeof *t);
	if (!t) {
		error_line("%s: out of memory\n", net_info.name);
		return ranks_agree_status(1);
	}
	t->o = *options;
	int status = open_session(t);
	if (status == 0)
		status = open_run(t);
	if (status == 0) {
		if (t->o.checkpoint_path)
			signals_catch_stop();
		describe_training(t);
		status = start_loop(t);
		for (long it = t->first; status == 0 && it < t->o.iterations; it++)
			status = train_iteration(t, it);
		status = finish(t, status);
	}
	status = close_run(t, status);
	free(t);
	return status;
}
