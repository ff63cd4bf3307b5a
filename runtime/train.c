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

#include "checkpoint.h"
#include "data.h"
#include "evaluate.h"
#include "gemm.h"
#include "gradflow.h"
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
	struct weights_meta meta = session_meta(s, o);
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

/* Every CHECK_EVERY iterations, and at each evaluation, the ranks compare a
 * checksum of their weights, momenta and running statistics: they must be
 * bitwise the same, and a run whose ranks have drifted apart is stopped. */
enum { CHECK_EVERY = 100 };

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
	printf("machine: %s, %ld cores online%s; threads wait: %s; resgen %s; started %s\n", processor, cores, others,
	       threads_wait(), resgen_version(), started);
	int team = threads_team_beside(threads, busy);
	if (team < threads)
		printf("note: %d other task%s running at start: while some cores are busy, each pass runs on as many "
		       "of the %d threads as there are free cores (%d now), with the same result "
		       "(docs/shared-machine.md)\n",
		       busy, busy == 1 ? " was" : "s were", threads, team);
	printf("recipe: ");
	recipe_describe(stdout, r, o->iterations);
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
	int checkpoint_ranks = 1;
	if (o->resume_path) {
		if (checkpoint_open(&checkpoint, o->resume_path, &run, &checkpoint_ranks, message,
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
	if (status == 0 && o->epochs && !o->resume_path) /* a resumed run's were counted by checkpoint_open */
		run.iterations = epoch_iterations(o->epochs, s.train.count, o->batch);
	if (status == 0 && o->epochs && o->iterations > MAX_ITERATIONS) {
		shared_error("%s: --epochs %ld is %ld iterations, more than the %d a run may have; give fewer\n",
			     net_info.name, o->epochs, o->iterations, MAX_ITERATIONS);
		session_free(&s);
		tensor_file_free(&checkpoint);
		return 2;
	}
	if (status == 0)
		status = agree_on_settings(&s, o);
	if (status != 0) {
		if (opened == 0) /* another rank's failure, or a disagreement */
			session_free(&s);
		tensor_file_free(&checkpoint);
		return status;
	}
	bool writer = s.rank == 0; /* of the log, checkpoints and weights */
	const struct net_defaults *d = &net_info.defaults, *r = &o->recipe;
	struct augment augment = {r->augment_pad, r->augment_flip};
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
		}
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
		signals_catch_stop();

	printf("%s: %s, %ld parameters, %s\n", net_info.name, net_info.summary, net_info.param_count,
	       net_info.dtype);
	char shares[64] = "";
	if (s.shares != s.threads)
		snprintf(shares, sizeof shares, " (each pass in %d shares)", s.shares);
	char held[96] = "", epochs[64] = "";
	if (s.validation.count)
		snprintf(held, sizeof held, " (and %ld held out to validate on, --validation)", s.validation.count);
	if (o->epochs)
		snprintf(epochs, sizeof epochs, " (%ld epoch%s)", o->epochs, o->epochs == 1 ? "" : "s");
	printf("data: %s, %ld training%s and %ld test images of %dx%dx%d; batch %d, %ld iterations%s, "
	       "%d thread%s%s, BLIS %s kernels\n",
	       o->synthetic ? "synthetic" : d->data_set, s.train.count, held, s.test.count, net_info.channels,
	       net_info.height, net_info.width, o->batch, o->iterations, epochs, s.threads, s.threads == 1 ? "" : "s",
	       shares, gemm_kernels());
	if (o->keep_best && !s.validation.count)
		printf("note: --keep-best picks the weights by their test error, which then overstates how well they "
		       "do; --validation N picks them on N training images held out instead\n");
	if (s.ranks > 1)
		printf("ranks: %d (Open MPI), %d images of each batch and %d thread%s%s each; BN statistics %s\n",
		       s.ranks, s.batch, s.threads, s.threads == 1 ? "" : "s", shares,
		       d->bn_sync ? "over the whole batch (bn_sync)" : "per rank, running statistics averaged");
	if (o->threads > s.threads)
		printf("note: --threads %d is more than the run's %d shares%s; %d threads run it, a thread a share\n",
		       o->threads, s.shares, o->resume_path ? " (its checkpoint's)" : "", s.threads);
	describe_run(o, s.threads);
	if (o->resume_path) {
		char shown[4 * PATH_MAX];
		printable_text(shown, sizeof shown, o->resume_path);
		printf("resumed from %s after iteration %ld\n", shown, at.iteration);
	}
	if (o->extends)
		printf("extended from %ld to %ld iterations: the %ld done kept the rates of the %ld-iteration run; the "
		       "rest follow the recipe above, the schedule of a %ld-iteration run (from %g at iteration %ld)\n",
		       o->extends, o->iterations, at.iteration, o->extends, o->iterations,
		       recipe_rate(r, at.iteration, o->iterations), at.iteration + 1);
	fflush(stdout);

	bool terminal = writer && isatty(STDERR_FILENO);
	double progress_every = terminal ? 0.25 : train_hook_progress_seconds(PLAIN_PROGRESS_SECONDS);
	/* the log's training rows: as given, else as the run resumed had them,
	 * else about 250 in the run */
	at.log_every = o->log_every ? o->log_every : at.log_every ? at.log_every : (o->iterations + 249) / 250;
	long first = at.iteration;
	if (gradflow && first == 0 && gradflow_record(&s, o, 0, gradflow) != 0)
		status = 1;
	double start = now() - at.seconds, resumed = now(), interval_start = resumed, last_progress = 0;
	long interval_images_here = 0; /* trained by this process since interval_start */
	double window_start = resumed;
	long window_images_here = 0; /* and since window_start, the log's last row */
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
		double lr = recipe_rate(r, it, o->iterations);
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
		interval_images_here += o->batch;
		at.window_loss += sums[0];
		at.window_errors += (long)sums[1];
		at.window_images += o->batch;
		window_images_here += o->batch;
		state_zero_grads(&s.state);
		backward_summing_gradients(&s);
		net_sgd(&s.state, (real)lr, (real)r->momentum, (real)r->weight_decay);
		average_running_statistics(&s);
		step_seconds += now() - step_start;
		at.iteration = it + 1;
		if (gradflow && (it + 1) % o->gradflow_every == 0 && gradflow_record(&s, o, it + 1, gradflow) != 0) {
			status = 1;
			break;
		}
		train_hook_stepped(&s.state, it + 1);

		double t = now();
		if (writer && t - last_progress > progress_every) {
			char eta[32];
			double rate = (double)(it + 1 - first) / (t - resumed);
			format_duration(eta, sizeof eta, (double)(o->iterations - it - 1) / rate);
			if (terminal)
				fprintf(stderr, "\r  iteration %ld/%ld  loss %.4f  lr %g  %.0f images/s  ETA %s   ",
					it + 1, o->iterations, loss, lr, rate * o->batch, eta);
			else if (last_progress > 0) /* a line a while, for a file or a pipe */
				fprintf(stderr, "  iteration %ld/%ld: loss %.4f, lr %g, %.0f images/s, ETA %s\n",
					it + 1, o->iterations, loss, lr, rate * o->batch, eta);
			last_progress = t;
		}
		bool evaluated = (it + 1) % o->eval_every == 0 || it + 1 == o->iterations;
		if (evaluated || (it + 1) % at.log_every == 0) {
			/* the row's training window: its rate before any evaluation */
			struct measured window = {at.window_loss / (double)at.window_images,
						  (double)at.window_errors / (double)at.window_images};
			double window_rate = (double)window_images_here / (t - window_start);
			struct measured validation = unmeasured, test = unmeasured;
			if (evaluated && s.validation.count)
				validation = evaluate(&s, &s.validation);
			if (evaluated && (!s.validation.count || it + 1 == o->iterations))
				test = evaluate(&s, &s.test);
			if (evaluated) {
				/* this process's images only: a resumed interval began before the stop */
				double images_per_second = (double)interval_images_here / (t - interval_start);
				if (terminal)
					fprintf(stderr, "\r%*s\r", 78, "");
				printf("iteration %ld: lr %g | train loss %.4f, error %.2f%%", it + 1, lr,
				       at.interval_loss / (double)at.interval_images,
				       100 * (double)at.interval_errors / (double)at.interval_images);
				if (!isnan(validation.loss))
					printf(" | val loss %.4f, error %.2f%%", validation.loss, 100 * validation.error);
				if (!isnan(test.loss))
					printf(" | test loss %.4f, error %.2f%%", test.loss, 100 * test.error);
				printf(" | %.0f images/s\n", images_per_second);
				status = keep_best(&s, o, &at, it + 1, s.validation.count ? validation : test, writer);
				fflush(stdout);
			}
			if (log) {
				log_row(log, it + 1, lr, window, validation, test, t - start, window_rate);
				if (status == 0)
					status = log_check(log, o->log_path);
			}
			const struct net_param *broken = evaluated ? state_non_finite_param(&s.state) : NULL;
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
			at.window_loss = 0;
			at.window_errors = at.window_images = 0;
			window_start = now();
			window_images_here = 0;
			if (evaluated) {
				at.interval_loss = 0;
				at.interval_errors = at.interval_images = 0;
				interval_start = window_start;
				interval_images_here = 0;
			}
			if (it + 1 == o->iterations) {
				char took[32];
				format_duration(took, sizeof took, now() - start);
				printf("test error: %.2f%% on %ld test images, after %ld iterations (%s)\n",
				       100 * test.error, s.test.count, o->iterations, took);
				if (s.validation.count)
					printf("validation error: %.2f%% on the last %ld training images, held out\n",
					       100 * validation.error, s.validation.count);
				if (o->keep_best && at.best_iteration > 0) {
					char shown[4 * PATH_MAX];
					printable_text(shown, sizeof shown, o->keep_best);
					printf("best: %s error %.2f%% at iteration %ld, its weights in %s\n",
					       s.validation.count ? "validation" : "test", 100 * at.best_error,
					       at.best_iteration, shown);
				}
			}
		}
		if ((evaluated || (it + 1) % CHECK_EVERY == 0) && (status = check_ranks_agree(&s, it + 1)) != 0)
			break;
		train_hook_checkpointed(it + 1);
		bool due = o->checkpoint_every ? (it + 1) % o->checkpoint_every == 0 || it + 1 == o->iterations
					       : evaluated;
		int stopped_by = o->checkpoint_path ? ranks_max(signals_stop_noted()) : 0, stopping = stopped_by != 0;
		if (o->checkpoint_path && (due || stopping)) {
			at.seconds = now() - start;
			at.log_bytes = log ? ftell(log) : -1;
			struct weights_meta meta = session_meta(&s, o);
			if (writer && checkpoint_save(o->checkpoint_path, o, &meta, s.shares, s.ranks, &s.state, &at, order,
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
	long fewer, passes;
	threads_team_counts(&fewer, &passes);
	if (fewer > 0 && threads_team_fixed())
		printf("threads: %ld of %ld passes ran on %d of the %d threads, as RESGEN_TEAM=%d fixed\n", fewer, passes,
		       threads_team_fixed(), s.threads, threads_team_fixed());
	else if (fewer > 0)
		printf("threads: %ld of %ld passes ran on fewer than %d threads, while other work kept cores busy\n", fewer, passes,
		       s.threads);
	if (status == 0 && s.ranks > 1)
		report_gradient_sums(&s);
	struct weights_meta meta = session_meta(&s, o);
	if (status == 0 && writer && o->save_weights &&
	    state_save_weights(&s.state, &meta, o->save_weights, message, sizeof message) != 0) {
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

