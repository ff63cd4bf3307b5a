/* Training across ranks (the binaries' Open MPI flavour, runtime/parallel/ranks.h)
 * as users run it under mpirun: with bn_sync the weights of the
 * single-process run, over shared memory and over TCP; bitwise repeatable;
 * BN per rank against PyTorch computing BN over each part of the batch; a
 * rank that dies ends the job and the run resumes; ranks that drift apart
 * are stopped; and the errors of a batch that does not split or a
 * checkpoint of another rank count.
 *
 * The networks are f64, so that a match means the arithmetic: summing the
 * ranks' gradients and BN's sums in another order than one process does
 * changes the weights at rounding (about 1e-16 of them after five steps,
 * measured; 1e-10 passes any correct run and no wrong one: BN over the
 * wrong images moves them by 1e-3 or more). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "tensor_file.h"

static char build[256], scratch[300], mpirun[512];

/* When a rank exits non-zero, mpirun ends the job: SIGTERM to every rank,
 * then a grace period (odls_base_sigkill_timeout, 1 s) before SIGKILL,
 * waited out even when every rank has exited. The tests whose ranks all
 * stop by themselves give none: a rank left running is killed either way. */
static const char no_grace[] = "--mca odls_base_sigkill_timeout 0";

/* Runs command with its output captured (out may be NULL); returns the exit
 * status and, in *seconds, how long it took. */
static int run_timed(const char *command, char *out, size_t out_size, double *seconds)
{
	char full[8192], out_path[400];
	snprintf(out_path, sizeof out_path, "%s/output", scratch);
	snprintf(full, sizeof full, "(%s) >%s 2>&1", command, out_path);
	struct timespec started, ended;
	clock_gettime(CLOCK_MONOTONIC, &started);
	int status = system(full);
	clock_gettime(CLOCK_MONOTONIC, &ended);
	if (seconds)
		*seconds = (double)(ended.tv_sec - started.tv_sec) + 1e-9 * (double)(ended.tv_nsec - started.tv_nsec);
	if (out) {
		FILE *file = fopen(out_path, "r");
		size_t got = file ? fread(out, 1, out_size - 1, file) : 0;
		out[got] = '\0';
		if (file)
			fclose(file);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ranks 0 (no mpirun: the plain binary), or P ranks of the MPI flavour:
 * train of spec NAME (f64) with options, for five iterations unless they
 * say otherwise. */
static int train(const char *name, int ranks, const char *mca, const char *environment, const char *options,
		 char *out, size_t out_size, double *seconds)
{
	char command[4096];
	const char *iterations = strstr(options, "--iterations") || strstr(options, "--resume") ? "" : "--iterations 5";
	if (ranks == 0)
		snprintf(command, sizeof command, "%s %s/tests/bin/%s-f64 train %s --threads 1 %s", environment, build,
			 name, iterations, options);
	else
		snprintf(command, sizeof command, "%s %s -np %d %s %s/tests/bin/mpi/%s-f64 train %s %s", environment,
			 mpirun, ranks, mca, build, name, iterations, options);
	return run_timed(command, out, out_size, seconds);
}

/* The largest difference between two weights files, tensor by tensor,
 * relative to the tensor's largest magnitude (at least 1). */
static double weights_difference(const char *a_path, const char *b_path)
{
	struct tensor_file a = {0}, b = {0};
	char error[512];
	assert_int_equal(tensor_file_load(&a, a_path, error, sizeof error), 0);
	assert_int_equal(tensor_file_load(&b, b_path, error, sizeof error), 0);
	assert_int_equal(a.count, b.count);
	double worst = 0;
	for (int i = 0; i < a.count; i++) {
		const struct tensor_file_entry *x = &a.entries[i], *y = tensor_file_find(&b, x->name);
		assert_non_null(y);
		assert_int_equal(x->count, y->count);
		double largest = 1, difference = 0;
		for (long j = 0; j < x->count; j++) {
			largest = fmax(largest, fabs(x->values[j]));
			difference = fmax(difference, fabs(x->values[j] - y->values[j]));
		}
		worst = fmax(worst, difference / largest);
	}
	tensor_file_free(&a);
	tensor_file_free(&b);
	return worst;
}

static bool same_file(const char *a, const char *b)
{
	char command[2048];
	snprintf(command, sizeof command, "cmp -s %s %s", a, b);
	return system(command) == 0;
}

static void path_of(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/%s", scratch, name);
}

static int setup(void **unused)
{
	(void)unused;
	snprintf(build, sizeof build, "%s", getenv("BUILD") ? getenv("BUILD") : "build");
	snprintf(scratch, sizeof scratch, "%s/tests/scratch-ranks", build);
	/* As root (CI), mpirun asks for both; --oversubscribe lets 4 ranks
	 * share 2 cores. Open MPI's own allocations outlive MPI_Finalize,
	 * which LeakSanitizer would report in the sanitizer build. */
	setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
	snprintf(mpirun, sizeof mpirun, "mpirun --oversubscribe");
	char command[4096];
	snprintf(command, sizeof command, "rm -rf %s && mkdir -p %s", scratch, scratch);
	return system(command);
}

/* bn_sync: 2 and 4 ranks give the weights of one process at the same
 * batch, to rounding; the same ranks twice give the same bits. */
static void test_ranks_bn_sync_give_the_weights_of_one_process(void **unused)
{
	(void)unused;
	char alone[400], two[400], two_again[400], four[400], options[1024], out[8192];
	path_of(alone, sizeof alone, "alone.w");
	path_of(two, sizeof two, "two.w");
	path_of(two_again, sizeof two_again, "two-again.w");
	path_of(four, sizeof four, "four.w");
	snprintf(options, sizeof options, "--save-weights %s", alone);
	assert_int_equal(train("ranks-sync", 0, "", "", options, NULL, 0, NULL), 0);
	snprintf(options, sizeof options, "--save-weights %s", two);
	assert_int_equal(train("ranks-sync", 2, "--bind-to core", "", options, out, sizeof out, NULL), 0);
	if (!strstr(out, "ranks: 2 (Open MPI), 4 images of each batch and 1 thread each; BN statistics over the "
			 "whole batch (bn_sync)"))
		fail_msg("the run does not say how it is split:\n%s", out);
	if (!strstr(out, " iterations, 1 thread, BLIS ") || !strstr(out, " hidden behind backward), ") ||
	    strstr(out, "(0% "))
		fail_msg("the run does not say its thread count or the hidden share as written:\n%s", out);
	snprintf(options, sizeof options, "--save-weights %s", four);
	assert_int_equal(train("ranks-sync", 4, "", "", options, NULL, 0, NULL), 0);
	snprintf(options, sizeof options, "--save-weights %s", two_again);
	assert_int_equal(train("ranks-sync", 2, "--bind-to core", "", options, NULL, 0, NULL), 0);
	double to_two = weights_difference(alone, two), to_four = weights_difference(alone, four);
	if (to_two > 1e-10 || to_four > 1e-10)
		print_error("against one process: 2 ranks %.3g, 4 ranks %.3g\n", to_two, to_four);
	assert_true(to_two <= 1e-10);
	assert_true(to_four <= 1e-10);
	assert_true(same_file(two, two_again));
	/* The comparison can fail: BN per rank (tiny's) is another network. */
	char tiny_alone[400], tiny_two[400];
	path_of(tiny_alone, sizeof tiny_alone, "tiny-alone.w");
	path_of(tiny_two, sizeof tiny_two, "tiny-two.w");
	snprintf(options, sizeof options, "--save-weights %s", tiny_alone);
	assert_int_equal(train("tiny", 0, "", "", options, NULL, 0, NULL), 0);
	snprintf(options, sizeof options, "--save-weights %s", tiny_two);
	assert_int_equal(train("tiny", 2, "", "", options, NULL, 0, NULL), 0);
	assert_true(weights_difference(tiny_alone, tiny_two) > 1e-6);
}

/* The TCP path, as between machines: Open MPI's ob1 messaging over the tcp
 * transport on the loopback interface only. */
static void test_ranks_over_tcp_give_the_same_weights(void **unused)
{
	(void)unused;
	char alone[400], tcp[400], options[1024], out[16384];
	path_of(alone, sizeof alone, "alone.w");
	path_of(tcp, sizeof tcp, "tcp.w");
	snprintf(options, sizeof options, "--save-weights %s", tcp);
	assert_int_equal(train("ranks-sync", 2,
			       "--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo --mca btl_base_verbose 30",
			       "", options, out, sizeof out, NULL),
			 0);
	if (!strstr(out, "btl:tcp"))
		fail_msg("the run did not use TCP:\n%s", out);
	double difference = weights_difference(alone, tcp);
	if (difference > 1e-10)
		print_error("over TCP against one process: %.3g\n", difference);
	assert_true(difference <= 1e-10);
}

/* BN per rank (bn_sync false) against PyTorch computing BN over each half
 * (and quarter) of the batch, the reference implementation of the PyTorch
 * check; bn_sync too, against BN over the whole batch. */
static void test_ranks_match_pytorch_with_bn_per_part(void **unused)
{
	(void)unused;
	char command[4096], out[8192];
	for (int ranks = 2; ranks <= 4; ranks += 2) {
		snprintf(command, sizeof command,
			 "/usr/bin/python3 tests/reference/reference.py --ranks %d %s "
			 "tests/specs/tiny.yaml=%s/tests/bin/tiny-f64,%s/tests/bin/mpi/tiny-f64 "
			 "tests/specs/ranks-sync.yaml=%s/tests/bin/ranks-sync-f64,%s/tests/bin/mpi/ranks-sync-f64",
			 ranks, scratch, build, build, build, build);
		int status = run_timed(command, out, sizeof out, NULL);
		if (status != 0 || !strstr(out, "reference: 2 passed, 0 failed"))
			fail_msg("%d ranks against PyTorch (exit %d):\n%s", ranks, status, out);
		printf("%d ranks: %s", ranks, strstr(out, "worst"));
	}
}

/* A rank killed mid-run ends the job within seconds; the run resumes from
 * its last checkpoint on the same ranks and ends with the weights of a run
 * never broken. A checkpoint of 2 ranks is refused on 4. */
static void test_ranks_dead_rank_ends_the_job_and_the_run_resumes(void **unused)
{
	(void)unused;
	char whole[400], resumed[400], checkpoint[400], options[2048], out[16384], message[1024];
	path_of(whole, sizeof whole, "whole.w");
	path_of(resumed, sizeof resumed, "resumed.w");
	path_of(checkpoint, sizeof checkpoint, "run.ckpt");
	snprintf(options, sizeof options, "--iterations 40 --eval-every 10 --save-weights %s", whole);
	assert_int_equal(train("ranks-sync", 2, "", "", options, NULL, 0, NULL), 0);
	snprintf(options, sizeof options, "--iterations 40 --eval-every 10 --checkpoint %s --checkpoint-every 5 "
		 "--save-weights %s", checkpoint, resumed);
	double seconds;
	int status = train("ranks-sync", 2, "", "timeout 60 env RESGEN_TEST_RAISE=9@12/1", options, out, sizeof out,
			   &seconds);
	printf("killed rank 1 after iteration 12: mpirun exited %d after %.1f s\n", status, seconds);
	if (status == 0 || status == 124 || seconds > 10)
		fail_msg("a dead rank: exit %d after %.1f s:\n%s", status, seconds, out);
	snprintf(options, sizeof options, "--resume %s --save-weights %s", checkpoint, resumed);
	assert_int_equal(train("ranks-sync", 2, "", "", options, out, sizeof out, NULL), 0);
	if (!strstr(out, "resumed from") || !strstr(out, "after iteration 10"))
		fail_msg("the resumed run did not start from iteration 10:\n%s", out);
	assert_true(same_file(whole, resumed));
	assert_int_equal(train("ranks-sync", 4, "", "", options, out, sizeof out, NULL), 2);
	snprintf(message, sizeof message,
		 "ranks-sync: %s: the run was split across 2 ranks and this one has 4; resume it with mpirun -np 2\n",
		 checkpoint);
	if (!strstr(out, message))
		fail_msg("expected\n%sgot\n%s", message, out);
}

/* Ranks whose weights differ (one changed by the test's hook) are stopped
 * at the next check, with the rank named, and exit 1. */
static void test_ranks_that_drift_apart_are_stopped(void **unused)
{
	(void)unused;
	char out[8192];
	int status = train("ranks-sync", 2, no_grace, "env RESGEN_TEST_PERTURB=1@3", "--eval-every 5", out, sizeof out,
			   NULL);
	assert_int_equal(status, 1);
	if (!strstr(out, "ranks-sync: after iteration 5 the weights of rank 1 differ from rank 0's; the ranks must "
			 "train in step, so the run stops"))
		fail_msg("no message naming the rank:\n%s", out);
}

/* A batch that does not split evenly: one line, from rank 0 alone, exit 2. */
static void test_ranks_refuse_a_batch_that_does_not_split(void **unused)
{
	(void)unused;
	char out[8192];
	assert_int_equal(train("ranks-sync", 3, no_grace, "", "", out, sizeof out, NULL), 2);
	const char *message = "ranks-sync: the batch of 8 images does not split evenly across 3 ranks; give a batch "
			      "that 3 divides (--batch), or another number of ranks\n";
	const char *found = strstr(out, message);
	if (!found || strstr(found + 1, message))
		fail_msg("expected the message once:\n%s", out);
}

/* Ranks given different settings (an MPMD launch: one command line per
 * rank) are stopped before the first step, every rank with exit status 2,
 * rank 0 naming the setting and the ranks; none is left waiting at a
 * collective the others never reach (timeout would return 124). */
static void test_ranks_given_different_settings_are_stopped(void **unused)
{
	(void)unused;
	char a[400], b[400], command[4096];
	path_of(a, sizeof a, "start-a.w");
	path_of(b, sizeof b, "start-b.w");
	snprintf(command, sizeof command, "%1$s/tests/bin/tiny-f64 init --seed 1 --save-weights %2$s && "
					  "%1$s/tests/bin/tiny-f64 init --seed 2 --save-weights %3$s",
		 build, a, b);
	assert_int_equal(run_timed(command, NULL, 0, NULL), 0);
	static const struct {
		const char *first, *second, *message;
	} cases[] = {
		{"--batch 8", "--batch 16", "--batch: 8 on rank 0, 16 on rank 1"},
		{"--iterations 20", "--iterations 30", "--iterations: 20 on rank 0, 30 on rank 1"},
		{"--eval-every 10", "--eval-every 5", "--eval-every: 10 on rank 0, 5 on rank 1"},
		{"--seed 3", "", "--seed: 3 on rank 0, 1 on rank 1"},
		{"--checkpoint %s/ranks.ckpt", "", "--checkpoint: given on rank 0, not given on rank 1"},
		{"--load-weights %2$s", "--load-weights %3$s", "the starting weights (--load-weights, --resume): "},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char first[512], second[512], out[8192], message[512];
		snprintf(first, sizeof first, cases[i].first, scratch, a, b);
		snprintf(second, sizeof second, cases[i].second, scratch, a, b);
		snprintf(command, sizeof command,
			 "timeout 120 %1$s %5$s -np 1 %2$s/tests/bin/mpi/tiny-f64 train --threads 1 %3$s : "
			 "-np 1 %2$s/tests/bin/mpi/tiny-f64 train --threads 1 %4$s",
			 mpirun, build, first, second, no_grace);
		int status = run_timed(command, out, sizeof out, NULL);
		snprintf(message, sizeof message, "tiny: the ranks disagree on %s", cases[i].message);
		if (status != 2 || !strstr(out, message))
			print_error("case %zu: %s\nexpected 2 and: %s\ngot %d:\n%s", i, command, message, status, out);
		assert_int_equal(status, 2);
		assert_non_null(strstr(out, message));
		assert_null(strstr(out, "iteration 1")); /* stopped before the first step */
	}
	/* the kernels' override, which the environment gives each rank */
	char out[8192];
	snprintf(command, sizeof command,
		 "timeout 120 %1$s %3$s -np 1 env RESGEN_CHOICES=winograd=off %2$s/tests/bin/mpi/tiny-f64 train --threads 1 : "
		 "-np 1 %2$s/tests/bin/mpi/tiny-f64 train --threads 1",
		 mpirun, build, no_grace);
	int status = run_timed(command, out, sizeof out, NULL);
	if (status != 2 || !strstr(out, "tiny: the ranks disagree on RESGEN_CHOICES (the kernels' choices): "))
		print_error("%s\ngot %d:\n%s", command, status, out);
	assert_int_equal(status, 2);
	assert_non_null(strstr(out, "tiny: the ranks disagree on RESGEN_CHOICES (the kernels' choices): "));
	assert_null(strstr(out, "iteration 1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ranks_bn_sync_give_the_weights_of_one_process),
		cmocka_unit_test(test_ranks_over_tcp_give_the_same_weights),
		cmocka_unit_test(test_ranks_match_pytorch_with_bn_per_part),
		cmocka_unit_test(test_ranks_dead_rank_ends_the_job_and_the_run_resumes),
		cmocka_unit_test(test_ranks_that_drift_apart_are_stopped),
		cmocka_unit_test(test_ranks_refuse_a_batch_that_does_not_split),
		cmocka_unit_test(test_ranks_given_different_settings_are_stopped),
	};
	return cmocka_run_group_tests_name("ranks", tests, setup, NULL);
}
