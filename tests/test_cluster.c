/* A study on a real Slurm (Debian's slurm-wlm and munge, one node, started
 * here by tests/slurm/cluster and stopped by the process ids it
 * recorded): submitted, followed, requeued mid-run and at a time limit,
 * failed for its own reasons, refused on bad input; its runs equal, row
 * for row and bit for bit, make study's on this machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "command.h"

static char cluster[400], slurm_conf[500];

static int start_cluster(void **unused)
{
	(void)unused;
	if (command_setup("cluster") != 0)
		return -1;
	char command[1024], out[1024], err[4096];
	snprintf(cluster, sizeof cluster, "%s/slurm", scratch);
	snprintf(command, sizeof command, "tests/slurm/cluster start %s 2", cluster);
	if (run(command, out, sizeof out, err, sizeof err) != 0) {
		fprintf(stderr, "the test cluster did not start: %s", err);
		return -1;
	}
	snprintf(slurm_conf, sizeof slurm_conf, "%s/slurm.conf", cluster);
	setenv("SLURM_CONF", slurm_conf, 1);
	return 0;
}

static int stop_cluster(void **unused)
{
	(void)unused;
	char command[1024];
	snprintf(command, sizeof command, "tests/slurm/cluster stop %s", cluster);
	return run(command, NULL, 0, NULL, 0);
}

/* make with arguments, as a user runs it (in this build's flavour, with
 * the tests' hooks, the networks' helpers out of line); the test's own
 * make settings stay out. */
static int make(const char *environment, const char *arguments, char *out, size_t out_size, char *err,
		size_t err_size)
{
	char command[8192];
	snprintf(command, sizeof command,
		 "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL %s make -s TEST_HOOKS=1 OUT_OF_LINE=1 BUILD=%s STUDY_THREADS=2 %s",
		 environment, build, arguments);
	return run(command, out, out_size, err, err_size);
}

/* Waits (at most limit seconds) until Slurm's queue holds no job of the
 * study name (its array and its report job). */
static void wait_for_study(const char *name, int limit)
{
	char command[512], out[4096];
	snprintf(command, sizeof command, "{ squeue -h -o %%j | grep -c '^resgen-%s' || true; }", name);
	for (int i = 0; i < 10 * limit; i++) {
		assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
		if (strcmp(out, "0\n") == 0)
			return;
		nanosleep(&(struct timespec){0, 100000000}, NULL);
	}
	fail_msg("the study %s was still in Slurm's queue after %d s", name, limit);
}

/* Waits (at most 60 s) for a file to exist. */
static void wait_for_file(const char *path)
{
	for (int i = 0; i < 600 && access(path, F_OK) != 0; i++)
		nanosleep(&(struct timespec){0, 100000000}, NULL);
	assert_int_equal(access(path, F_OK), 0);
}

/* Whether two logs have the same rows but for the time columns, and two
 * weights files the same bytes. */
static bool same_run(const char *a, const char *b)
{
	char command[4096];
	snprintf(command, sizeof command,
		 "bash -c 'cmp -s <(cut -d, -f1-8 %1$s.csv) <(cut -d, -f1-8 %2$s.csv) && cmp -s %1$s.weights %2$s.weights'",
		 a, b);
	return system(command) == 0;
}

static const char tiny_runs[][24] = {"original-seed1", "original-seed2", "full-preact-seed1", "full-preact-seed2"};

/* Writes into a paused run's file (RESGEN_TEST_PAUSE), which goes on. */
static void go_on(const char *pause) { write_text(pause, "go\n"); }

/* tests/studies/tiny.yaml (2 variants x 2 seeds): two runs done by make
 * study on this machine, the other two submitted, followed (one running,
 * paused at iteration 25, the other pending behind it) to the report;
 * each run as make study ran it; submitted again, nothing is sent. */
static void test_cluster_runs_a_study_to_its_report(void **unused)
{
	(void)unused;
	static char out[16384], err[4096];
	char arguments[1024], a[600], b[600], environment[700], pause[500], command[2048];
	snprintf(arguments, sizeof arguments, "study STUDY=tests/studies/tiny.yaml RESULTS=%s/one", scratch);
	if (make("OMP_NUM_THREADS=2", arguments, out, sizeof out, err, sizeof err) != 0)
		fail_msg("make study failed:\n%s%s", out, err);
	snprintf(command, sizeof command, "mkdir -p %1$s/cluster && cp %1$s/one/original-seed* %1$s/cluster/", scratch);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	snprintf(pause, sizeof pause, "%s/pause-tiny", scratch);
	snprintf(environment, sizeof environment, "RESGEN_TEST_PAUSE=25@%s", pause);
	snprintf(arguments, sizeof arguments, "study-submit STUDY=tests/studies/tiny.yaml RESULTS=%s/cluster", scratch);
	if (make(environment, arguments, out, sizeof out, err, sizeof err) != 0)
		fail_msg("make study-submit failed:\n%s%s", out, err);
	expect_in(out, "tiny: 4 runs, 2 ended, 0 failed, 0 in Slurm's queue, 2 to submit\nsubmitted job ");
	expect_in(out, ": 2 task(s), runs 3,4, 2 core(s) each; the report is job ");
	snprintf(a, sizeof a, "follow it: make study-status STUDY=tests/studies/tiny.yaml RESULTS=%s/cluster (or squeue -j ",
		 scratch);
	expect_in(out, a);
	wait_for_file(pause); /* run 3 at iteration 25, on both cores; run 4 waits */
	snprintf(arguments, sizeof arguments, "study-status STUDY=tests/studies/tiny.yaml RESULTS=%s/cluster", scratch);
	assert_int_equal(make("", arguments, out, sizeof out, NULL, 0), 0);
	expect_in(out, "run   variant                  seed   state      details\n"
		       "1     original                 1      done       test error ");
	expect_in(out, "\n3     full-preact              1      running    on ");
	expect_in(out, ", at iteration 25 of 50, about ");
	expect_in(out, "\n4     full-preact              2      pending    in Slurm's queue\n"
		       "2 run(s) in Slurm's queue; expected finish: about ");
	expect_in(out, "with 1 run(s) at once as now, from the runs' own rates\n");
	go_on(pause);
	wait_for_study("tiny", 300);
	for (int i = 0; i < 4; i++) {
		snprintf(a, sizeof a, "%s/one/%s", scratch, tiny_runs[i]);
		snprintf(b, sizeof b, "%s/cluster/%s", scratch, tiny_runs[i]);
		if (!same_run(a, b))
			fail_msg("%s differs from make study's run", b);
	}
	snprintf(a, sizeof a, "cat %s/cluster/report.md", scratch);
	assert_int_equal(run(a, out, sizeof out, NULL, 0), 0);
	expect_in(out, "2 variants x 2 seeds, 4 of 4 runs finished.");

	assert_int_equal(make("", arguments, out, sizeof out, NULL, 0), 0);
	expect_in(out, "\n4     full-preact              2      done       test error ");
	snprintf(arguments, sizeof arguments, "study-submit STUDY=tests/studies/tiny.yaml RESULTS=%s/cluster", scratch);
	assert_int_equal(make("", arguments, out, sizeof out, NULL, 0), 0);
	expect_in(out, "tiny: 4 runs, 4 ended, 0 failed, 0 in Slurm's queue, 0 to submit\nnothing to submit\n");
}

/* A run requeued by an administrator at iteration 20 and stopped by its
 * time limit's signal at iteration 40 resumes each time from its
 * checkpoint: bitwise the run done in one go. The time limit's signal is
 * sent here as slurmctld sends it at sbatch --signal's time (USR1 to the
 * task's shell: scancel --batch --signal), whose timing is Slurm's own
 * (it looks at time limits about every 30 s). */
/* A study of one run of 60 iterations (evaluations and checkpoints at
 * 20, 40 and 60), into study; done once by make study, on this machine's
 * two threads, into scratch/long-one. */
static void long_study(char *study, size_t size)
{
	static char out[16384], err[4096];
	char arguments[1024], done[600];
	snprintf(study, size, "%s/long.yaml", scratch);
	write_text(study, "name: long\nbase: demo\nset:\n  net: {depth: 8, widths: [8, 16, 32]}\n"
			  "  train: {batch: 32, iterations: 60, eval_every: 20, lr: {warmup: {iterations: 0}, steps: [0.8]}}\n"
			  "seeds: [1]\ntrain_limit: 2000\ntest_limit: 200\nvariants:\n  - {name: full-preact}\n");
	snprintf(done, sizeof done, "%s/long-one/full-preact-seed1.done", scratch);
	if (access(done, F_OK) == 0)
		return;
	snprintf(arguments, sizeof arguments, "study STUDY=%s RESULTS=%s/long-one", study, scratch);
	if (make("OMP_NUM_THREADS=2", arguments, out, sizeof out, err, sizeof err) != 0)
		fail_msg("make study failed:\n%s%s", out, err);
}

static void test_cluster_requeues_lose_nothing(void **unused)
{
	(void)unused;
	static char out[16384], err[4096];
	char study[400], arguments[1024], environment[1600], pause[2][500], a[600], b[600], command[1024];
	long_study(study, sizeof study);
	for (int i = 0; i < 2; i++)
		snprintf(pause[i], sizeof pause[i], "%s/pause-%d", scratch, 20 * (i + 1));
	snprintf(environment, sizeof environment,
		 "RESGEN_TEST_PAUSE='20@%s 40@%s'", pause[0], pause[1]);
	snprintf(arguments, sizeof arguments, "study-submit STUDY=%s RESULTS=%s/long-cluster", study, scratch);
	if (make(environment, arguments, out, sizeof out, err, sizeof err) != 0)
		fail_msg("make study-submit failed:\n%s%s", out, err);
	wait_for_file(pause[0]);
	snprintf(command, sizeof command, "scontrol requeue $(squeue -h -n resgen-long -o %%i | grep _)");
	assert_int_equal(run(command, NULL, 0, err, sizeof err), 0);
	snprintf(arguments, sizeof arguments, "study-status STUDY=%s RESULTS=%s/long-cluster", study, scratch);
	/* the run stops at 20 (its log says so once it has ended), and waits
	 * to start again from there */
	const char *requeued = "\n1     full-preact              1      requeued   1 time(s), to resume from its "
			       "checkpoint at iteration 20\n";
	for (int i = 0; i < 100; i++) {
		assert_int_equal(make("", arguments, out, sizeof out, NULL, 0), 0);
		if (strstr(out, requeued))
			break;
		nanosleep(&(struct timespec){0, 100000000}, NULL);
	}
	expect_in(out, requeued);
	wait_for_file(pause[1]); /* then the time limit's signal stops it at 40 */
	snprintf(command, sizeof command, "scancel --batch --signal=USR1 $(squeue -h -n resgen-long -o %%i | grep _)");
	assert_int_equal(run(command, NULL, 0, err, sizeof err), 0);
	wait_for_study("long", 300);
	snprintf(a, sizeof a, "%s/long-one/full-preact-seed1", scratch);
	snprintf(b, sizeof b, "%s/long-cluster/full-preact-seed1", scratch);
	if (!same_run(a, b))
		fail_msg("%s differs from the run done in one go", b);
	snprintf(command, sizeof command, "{ wc -l < %s.starts; cat %s/long-cluster/slurm/task-1.out; }", b, scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_memory_equal(out, "3\n", 2);
	expect_in(out, "DUE TO JOB REQUEUE");
	expect_in(out, " the time limit is near: ");
	expect_in(out, "full-preact-seed1.ckpt written at iteration 40; Slurm requeues this task, which resumes from "
		       "there\n");
}

/* A task whose node dies (slurmd and the task's processes killed, then
 * slurmd started again) at iteration 20 is requeued by Slurm when the
 * node comes back, and resumes from its checkpoint: bitwise the run done
 * in one go. */
static void test_cluster_node_death_loses_nothing(void **unused)
{
	(void)unused;
	static char out[16384], err[4096];
	char study[400], arguments[1024], environment[700], pause[500], a[600], b[600], command[1024];
	long_study(study, sizeof study);
	snprintf(pause, sizeof pause, "%s/pause-node", scratch);
	snprintf(environment, sizeof environment, "RESGEN_TEST_PAUSE=20@%s", pause);
	snprintf(arguments, sizeof arguments, "study-submit STUDY=%s RESULTS=%s/long-node", study, scratch);
	if (make(environment, arguments, out, sizeof out, err, sizeof err) != 0)
		fail_msg("make study-submit failed:\n%s%s", out, err);
	wait_for_file(pause);
	/* Slurm counts a batch task missing from its node when the node
	 * registers once the task has not been seen for BatchStartTimeout and
	 * MessageTimeout (20 s); seen later, it is found out only at one of
	 * the node's later reports (102 s later in one run). So the node stays
	 * dead 22 s: Slurm finds the task gone when the node comes back, or
	 * finds the node not answering first (SlurmdTimeout, 20 s). */
	snprintf(command, sizeof command, "tests/slurm/cluster kill-node %s 22", cluster);
	if (run(command, out, sizeof out, err, sizeof err) != 0)
		fail_msg("the node was not killed and started again:\n%s%s", out, err);
	expect_in(out, "killed slurmd, 1 slurmstepd and ");
	/* Slurm requeues the task and starts it again */
	wait_for_study("long", 400);
	snprintf(a, sizeof a, "%s/long-one/full-preact-seed1", scratch);
	snprintf(b, sizeof b, "%s/long-node/full-preact-seed1", scratch);
	if (!same_run(a, b))
		fail_msg("%s differs from the run done in one go", b);
	snprintf(command, sizeof command, "wc -l < %s.starts", b);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "2\n");
}

/* Each run over 2 MPI ranks of a thread each (srun starts them as a step
 * of the task): stopped by the time limit's signal at iteration 20 and
 * requeued, it ends bitwise where the same run never stopped ends. */
static void test_cluster_runs_ranks_and_requeues_them(void **unused)
{
	(void)unused;
	static char out[16384], err[4096];
	char study[400], arguments[1024], environment[700], pause[500], a[600], b[600], command[2048];
	long_study(study, sizeof study);
	snprintf(arguments, sizeof arguments, "study-submit STUDY_RANKS=2 STUDY_THREADS=1 STUDY=%s RESULTS=%s/ranks-one",
		 study, scratch);
	if (make("", arguments, out, sizeof out, err, sizeof err) != 0)
		fail_msg("make study-submit failed:\n%s%s", out, err);
	expect_in(out, ": 1 task(s), runs 1, 2 MPI ranks of 1 core(s) each; the report is job ");
	wait_for_study("long", 300);
	snprintf(pause, sizeof pause, "%s/pause-ranks", scratch);
	snprintf(environment, sizeof environment, "RESGEN_TEST_PAUSE=20@%s", pause);
	snprintf(arguments, sizeof arguments, "study-submit STUDY_RANKS=2 STUDY_THREADS=1 STUDY=%s RESULTS=%s/ranks-cluster",
		 study, scratch);
	if (make(environment, arguments, out, sizeof out, err, sizeof err) != 0)
		fail_msg("make study-submit failed:\n%s%s", out, err);
	wait_for_file(pause);
	snprintf(command, sizeof command, "scancel --batch --signal=USR1 $(squeue -h -n resgen-long -o %%i | grep _)");
	assert_int_equal(run(command, NULL, 0, err, sizeof err), 0);
	wait_for_study("long", 300);
	snprintf(a, sizeof a, "%s/ranks-one/full-preact-seed1", scratch);
	snprintf(b, sizeof b, "%s/ranks-cluster/full-preact-seed1", scratch);
	if (!same_run(a, b))
		fail_msg("%s differs from the run of 2 ranks done in one go", b);
	snprintf(command, sizeof command, "{ wc -l < %s.starts; cat %s.log %s/ranks-cluster/slurm/task-1.out; }", b, b,
		 scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_memory_equal(out, "2\n", 2);
	expect_in(out, "ranks: 2 (Open MPI), 16 images of each batch and 1 thread each");
	expect_in(out, "stopped by SIGTERM after iteration 2");
	expect_in(out, " the time limit is near: ");
}

/* A run that fails for its own reasons (here, an environment variable
 * the binaries refuse, which sbatch passes to the task) is reported as
 * failed with its line, and not submitted again. */
static void test_cluster_reports_a_failed_run_once(void **unused)
{
	(void)unused;
	static char out[16384], err[4096];
	char arguments[1024];
	snprintf(arguments, sizeof arguments, "study-submit STUDY=tests/studies/tiny.yaml RESULTS=%s/failing", scratch);
	if (make("RESGEN_TEAM=abc", arguments, out, sizeof out, err, sizeof err) != 0)
		fail_msg("make study-submit failed:\n%s%s", out, err);
	wait_for_study("tiny", 120);
	snprintf(arguments, sizeof arguments, "study-status STUDY=tests/studies/tiny.yaml RESULTS=%s/failing", scratch);
	assert_int_equal(make("", arguments, out, sizeof out, NULL, 0), 0);
	expect_in(out, "\n1     original                 1      failed     original: RESGEN_TEAM is 'abc'; it must be a "
		       "whole number from 1 to the run's 2 threads, or unset (each pass then runs on the free cores)\n");
	snprintf(arguments, sizeof arguments, "study-submit STUDY=tests/studies/tiny.yaml RESULTS=%s/failing", scratch);
	assert_int_equal(make("", arguments, out, sizeof out, NULL, 0), 0);
	char expected[1024];
	snprintf(expected, sizeof expected,
		 "tiny: 4 runs, 0 ended, 4 failed, 0 in Slurm's queue, 0 to submit\n(a failed run is not submitted "
		 "again: make study-status STUDY=tests/studies/tiny.yaml RESULTS=%s/failing shows why; remove its "
		 ".failed file once mended)\nnothing to submit\n",
		 scratch);
	expect_in(out, expected);
}

/* Two submissions of one study into one folder at once queue its runs
 * once; a submission into another folder, while the first's tasks wait
 * in the queue under the same name, queues its own; and a clone under a
 * path with quotes and a semicolon passes it to the report job as an
 * argument: the report is written and nothing of the path runs. */
static void test_cluster_keeps_submissions_apart(void **unused)
{
	(void)unused;
	static char out[16384], err[4096], second[16384];
	char arguments[1024], environment[700], pause[500], command[6144], clone[600];
	snprintf(pause, sizeof pause, "%s/pause-apart", scratch);
	snprintf(environment, sizeof environment, "RESGEN_TEST_PAUSE=25@%s", pause);
	snprintf(arguments, sizeof arguments, "study-submit STUDY=tests/studies/tiny.yaml RESULTS=%s/apart-one", scratch);
	snprintf(command, sizeof command,
		 "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL %1$s make -s TEST_HOOKS=1 OUT_OF_LINE=1 BUILD=%2$s "
		 "STUDY_THREADS=2 %3$s > %4$s/first.out 2>&1 & "
		 "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL %1$s make -s TEST_HOOKS=1 OUT_OF_LINE=1 BUILD=%2$s "
		 "STUDY_THREADS=2 %3$s > %4$s/second.out 2>&1; wait; cat %4$s/first.out",
		 environment, build, arguments, scratch);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	snprintf(command, sizeof command, "cat %s/second.out", scratch);
	assert_int_equal(run(command, second, sizeof second, NULL, 0), 0);
	strncat(out, second, sizeof out - strlen(out) - 1);
	expect_in(out, "tiny: 4 runs, 0 ended, 0 failed, 0 in Slurm's queue, 4 to submit\nsubmitted job ");
	expect_in(out, "tiny: 4 runs, 0 ended, 0 failed, 4 in Slurm's queue, 0 to submit\nnothing to submit\n");
	wait_for_file(pause); /* run 1 at iteration 25; the others wait behind it */
	const char *queue = "squeue -h -r -n resgen-tiny,resgen-tiny-report -o '%K %j' | sort";
	assert_int_equal(run(queue, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "1 resgen-tiny\n2 resgen-tiny\n3 resgen-tiny\n4 resgen-tiny\nN/A resgen-tiny-report\n");

	snprintf(clone, sizeof clone, "%s/O'Brien x';touch PWNED;'x", scratch);
	snprintf(command, sizeof command,
		 "mkdir -p \"%1$s\" && cp -r tools \"%1$s/\" && \"%1$s/tools/slurm-study\" submit 2 1 %2$s/bin/resgen "
		 "tests/studies/tiny.yaml %2$s/study/tiny %2$s/bin/study/tiny %3$s/apart-other",
		 clone, build, scratch);
	if (run(command, out, sizeof out, err, sizeof err) != 0)
		fail_msg("the submission from the clone failed:\n%s%s", out, err);
	expect_in(out, "tiny: 4 runs, 0 ended, 0 failed, 0 in Slurm's queue, 4 to submit\nsubmitted job ");
	go_on(pause);
	wait_for_study("tiny", 300);
	snprintf(command, sizeof command, "{ cat %1$s/apart-other/slurm/report.out && cat %1$s/apart-other/report.md; }",
		 scratch);
	if (run(command, out, sizeof out, err, sizeof err) != 0)
		fail_msg("no report from the clone's submission:\n%s%s", out, err);
	expect_in(out, "wrote ");
	/* and the report says who wrote it */
	expect_in(out, "written by Slurm's report job ");
	expect_in(out, " of `make study-submit STUDY=tests/studies/tiny.yaml RESULTS=");
	assert_int_not_equal(access("PWNED", F_OK), 0);
	snprintf(command, sizeof command, "%s/PWNED", scratch);
	assert_int_not_equal(access(command, F_OK), 0);
	/* each run of the first folder ran once */
	snprintf(command, sizeof command, "cat %s/apart-one/*.starts | wc -l", scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "4\n");
}

/* 77.10. A variant's own threads and time limit (the study file's
 * threads:, time:): Slurm holds its runs' tasks with those, the others
 * with the submission's; make study-cancel takes them all out. */
static void test_cluster_gives_a_variant_its_own_task(void **unused)
{
	(void)unused;
	static char out[16384], err[4096];
	char dir[500], arguments[2048], command[2048];
	snprintf(dir, sizeof dir, "%s/own-task", scratch);
	snprintf(command, sizeof command,
		 "mkdir -p %1$s && { sed '/^variants:/q' tests/studies/tiny.yaml; printf '%%s\\n' "
		 "'  - {name: original, set: {net: {ordering: original}}}' '  - {name: full-preact, threads: 1, time: 20}'; "
		 "} > %1$s/tiny.yaml",
		 dir);
	assert_int_equal(system(command), 0);
	snprintf(arguments, sizeof arguments, "study-submit STUDY=%1$s/tiny.yaml RESULTS=%1$s/results", dir);
	if (make("SBATCH_HOLD=1", arguments, out, sizeof out, err, sizeof err) != 0)
		fail_msg("make study-submit failed:\n%s%s", out, err);
	expect_in(out, ": 2 task(s), runs 1,2, 2 core(s) each\nsubmitted job ");
	expect_in(out, ": 2 task(s), runs 3,4, 1 core(s) each, time limit 20\nthe report is job ");
	/* index, cores and time limit of each task Slurm holds */
	assert_int_equal(run("squeue -h -r -n resgen-tiny -o '%K %C %l' | sort", out, sizeof out, NULL, 0), 0);
	expect_in(out, "3 1 20:00\n4 1 20:00\n");
	assert_int_equal(strncmp(out, "1 2 ", 4), 0);
	snprintf(arguments, sizeof arguments, "study-cancel STUDY=%1$s/tiny.yaml RESULTS=%1$s/results", dir);
	assert_int_equal(make("", arguments, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "tiny: cancelled jobs ");
	wait_for_study("tiny", 60);
}

/* Issue 84, item 2: a job id recorded by a submission and given again by
 * Slurm (its state reset) to another job of the user is not the study's:
 * make study-cancel leaves it, and says why, whether its name differs (a
 * record of before the submissions' marks, as results/cluster-fmnist
 * ships) or only its mark (the study's name, another submission). */
static void test_cluster_cancel_leaves_another_job_of_a_recorded_id(void **unused)
{
	(void)unused;
	static char out[16384], err[4096];
	char dir[500], path[600], arguments[2048], command[2048], other[64], same_name[64], expected[2048];
	snprintf(dir, sizeof dir, "%s/reused-ids", scratch);
	assert_int_equal(run("sbatch --parsable --hold -J someone-elses-work --wrap 'sleep 300' | tr -d '\\n'", other,
			     sizeof other, NULL, 0),
			 0);
	assert_int_equal(run("sbatch --parsable --hold -J resgen-tiny --comment=resgen:0000000000000000 --wrap "
			     "'sleep 300' | tr -d '\\n'",
			     same_name, sizeof same_name, NULL, 0),
			 0);
	snprintf(command, sizeof command, "mkdir -p %s/results/slurm", dir);
	assert_int_equal(system(command), 0);
	snprintf(path, sizeof path, "%s/results/slurm/jobs", dir);
	snprintf(command, sizeof command, "%s\n%s 0123456789abcdef\n", other, same_name);
	write_text(path, command);
	snprintf(arguments, sizeof arguments, "study-cancel STUDY=tests/studies/tiny.yaml RESULTS=%s/results", dir);
	assert_int_equal(make("", arguments, out, sizeof out, err, sizeof err), 0);
	/* (make may print a build of resgen before) */
	snprintf(expected, sizeof expected,
		 "tiny: left job %1$s is named someone-elses-work, not resgen-tiny: Slurm gave its id again, so it is "
		 "another's; it was not cancelled\n"
		 "tiny: left job %2$s is not the submission recorded in %3$s/results/slurm/jobs (its comment differs): "
		 "Slurm gave its id again, so it is another's; it was not cancelled\n"
		 "tiny: nothing of %3$s/results is in Slurm's queue; nothing to cancel\n",
		 other, same_name, dir);
	const char *said = strstr(out, "tiny: left job ");
	assert_non_null(said);
	assert_string_equal(said, expected);
	/* both still held in the queue, then taken out by the test */
	snprintf(command, sizeof command, "squeue -h -j %s,%s -o '%%i %%j' | sort", other, same_name);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	snprintf(expected, sizeof expected, "%s someone-elses-work\n%s resgen-tiny\n", other, same_name);
	assert_string_equal(out, expected);
	snprintf(command, sizeof command, "scancel %s %s", other, same_name);
	assert_int_equal(system(command), 0);
	wait_for_study("tiny", 60);
}

/* Bad input: one line, exit 2, nothing queued. */
static void test_cluster_refuses_bad_input(void **unused)
{
	(void)unused;
	static char out[16384], err[4096];
	char arguments[1024], command[4096], dead[600];
	assert_int_equal(make("", "study-submit S=no-such-study", out, sizeof out, err, sizeof err), 2);
	expect_in(err, "specs/studies/no-such-study.yaml");

	snprintf(arguments, sizeof arguments, "study-submit STUDY=tests/studies/tiny.yaml RESULTS=%s/partition", scratch);
	assert_int_equal(make("SBATCH_PARTITION=no-such-partition", arguments, out, sizeof out, err, sizeof err), 2);
	expect_in(err, "sbatch refused the study's array: sbatch: error: Batch job submission failed: Invalid partition "
		       "name specified (SBATCH_PARTITION=no-such-partition); nothing was submitted\n");
	assert_int_equal(run("squeue -h | wc -l", out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "0\n");
	snprintf(command, sizeof command, "ls %s/partition/slurm", scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "submit.lock\n"); /* the submissions' lock, held no more */

	/* a controller that does not answer: the configuration of another port */
	snprintf(dead, sizeof dead, "%s/dead.conf", scratch);
	snprintf(command, sizeof command, "sed 's/^SlurmctldPort=.*/SlurmctldPort=16899/' %s > %s", slurm_conf, dead);
	assert_int_equal(system(command), 0);
	char environment[700];
	snprintf(environment, sizeof environment, "SLURM_CONF=%s", dead);
	assert_int_equal(make(environment, arguments, out, sizeof out, err, sizeof err), 2);
	expect_in(err, "Slurm's controller is not answering (scontrol ping: ");
	expect_in(err, "); is slurmctld running, and SLURM_CONF right?\n");

	/* Slurm's commands missing */
	snprintf(command, sizeof command,
		 "mkdir -p %1$s/bin && for t in sed dirname realpath; do ln -sf $(command -v $t) %1$s/bin/; done && "
		 "env PATH=%1$s/bin /bin/bash tools/slurm-study status %2$s/bin/resgen tests/studies/tiny.yaml "
		 "%2$s/study/tiny %2$s/bin/study/tiny %1$s/missing",
		 scratch, build);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 2);
	assert_string_equal(err, "sbatch is missing: Slurm's commands are not installed here (Debian's slurm-wlm)\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cluster_refuses_bad_input),
		cmocka_unit_test(test_cluster_runs_a_study_to_its_report),
		cmocka_unit_test(test_cluster_reports_a_failed_run_once),
		cmocka_unit_test(test_cluster_keeps_submissions_apart),
		cmocka_unit_test(test_cluster_gives_a_variant_its_own_task),
		cmocka_unit_test(test_cluster_cancel_leaves_another_job_of_a_recorded_id),
		cmocka_unit_test(test_cluster_requeues_lose_nothing),
		cmocka_unit_test(test_cluster_runs_ranks_and_requeues_them),
		cmocka_unit_test(test_cluster_node_death_loses_nothing),
	};
	command_only_some();
	return cmocka_run_group_tests_name("a study on a Slurm cluster", tests, start_cluster, stop_cluster);
}
