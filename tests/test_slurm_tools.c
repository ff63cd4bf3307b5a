/* The study tools on a cluster's edges, against stand-ins for Slurm's
 * commands that fail or report what a real Slurm reports only for an
 * instant (a squeue that fails while the controller answers, a task
 * COMPLETING as it is requeued), the make variables of a submission, a
 * run's lock, a recorded id given again, and every tool's --help. Each
 * case failed on the code before its fix; test_cluster.c runs the rest on
 * a real Slurm. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "command.h"

static char stub[400], plan[400];

/* Stand-ins for sbatch, squeue and scontrol in stub/: the controller
 * answers; squeue prints STUB_QUEUE's file, or fails with
 * STUB_SQUEUE_FAILS's message; sbatch records its arguments in
 * stub/sbatch.log and answers job 77. And the tiny study's plan. */
static int setup(void **unused)
{
	(void)unused;
	if (command_setup("slurm-tools") != 0)
		return -1;
	snprintf(stub, sizeof stub, "%s/stub", scratch);
	char command[4096];
	snprintf(command, sizeof command,
		 "mkdir -p %1$s && cd %1$s && "
		 "printf '#!/bin/sh\\ncase $1 in ping) echo \"Slurmctld(primary) at stub is UP\" ;; -o) echo "
		 "\"PartitionName=debug Default=YES DefaultTime=NONE MaxTime=UNLIMITED State=UP\" ;; "
		 "requeue) echo \"$*\" >> %1$s/scontrol.log ;; esac\\n' > scontrol && "
		 "printf '#!/bin/sh\\nif [ -n \"$STUB_SQUEUE_FAILS\" ]; then echo \"$STUB_SQUEUE_FAILS\" >&2; exit 1; fi\\n"
		 "case \" $* \" in *\" -r \"*) cat \"${STUB_QUEUE:-/dev/null}\" ;; "
		 "*) cat \"${STUB_JOBS:-/dev/null}\" ;; esac\\n' > squeue && "
		 "printf '#!/bin/sh\\necho \"$*\" >> %1$s/sbatch.log\\necho 77\\n' > sbatch && "
		 "printf '#!/bin/sh\\necho \"$*\" >> %1$s/scancel.log\\n' > scancel && chmod +x scontrol squeue sbatch scancel",
		 stub);
	if (system(command) != 0)
		return -1;
	snprintf(plan, sizeof plan, "%s/plan", scratch);
	snprintf(command, sizeof command, "%s/bin/resgen study plan tests/studies/tiny.yaml -o %s > /dev/null", build,
		 plan);
	return system(command);
}

/* tools/slurm-study MODE (submit: 2 threads, 1 rank) for the tiny study
 * into results, with the stand-ins first on PATH and an environment. */
static int slurm_study(const char *environment, const char *mode, const char *results, char *out, size_t out_size,
		       char *err, size_t err_size)
{
	char command[4096];
	snprintf(command, sizeof command,
		 "env PATH=%s:$PATH %s tools/slurm-study %s %s %s/bin/resgen tests/studies/tiny.yaml %s "
		 "%s/bin/study/tiny %s",
		 stub, environment, mode, strcmp(mode, "submit") == 0 ? "2 1" : "", build, plan, build, results);
	return run(command, out, out_size, err, err_size);
}

/* What the stand-in sbatch was asked, and it forgotten: "" for nothing. */
static const char *sbatch_calls(void)
{
	static char text[8192];
	char command[1024];
	snprintf(command, sizeof command, "{ cat %1$s/sbatch.log 2> /dev/null; rm -f %1$s/sbatch.log; }", stub);
	assert_int_equal(run(command, text, sizeof text, NULL, 0), 0);
	return text;
}

/* tools/slurm-study status of results, with Slurm's queue holding the
 * lines of queue ("ARRAY_JOB INDEX STATE NODE", as squeue -o '%F %K %T
 * %N' prints them). */
static int status_with_queue(const char *results, const char *queue, char *out, size_t out_size, char *err,
			     size_t err_size)
{
	char path[500], environment[600];
	snprintf(path, sizeof path, "%s/queue", scratch);
	write_text(path, queue);
	snprintf(environment, sizeof environment, "STUB_QUEUE=%s", path);
	return slurm_study(environment, "status", results, out, out_size, err, err_size);
}

/* A results folder that submitted job 77 (slurm/jobs), with run 1 started
 * once and stopped with a checkpoint. */
static void results_of_job_77(const char *results)
{
	char path[1024];
	snprintf(path, sizeof path, "mkdir -p %s/slurm", results);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof path, "%s/slurm/jobs", results);
	write_text(path, "77\n");
	snprintf(path, sizeof path, "%s/original-seed1.ckpt", results);
	write_text(path, "a checkpoint\n");
	snprintf(path, sizeof path, "%s/original-seed1.starts", results);
	write_text(path, "2026-12-02T03:00:00Z node1 job 77_1 restart 0\n");
}

/* 5. A squeue that fails while the controller answers: one line naming it
 * and its message, exit 2, nothing submitted and no state made up. */
static void test_slurm_study_stops_when_squeue_fails(void **unused)
{
	(void)unused;
	static char out[8192], err[4096];
	char results[400];
	snprintf(results, sizeof results, "%s/squeue-fails", scratch);
	results_of_job_77(results);
	const char *fails = "STUB_SQUEUE_FAILS='squeue: error: slurm_load_jobs error: Socket timed out on send/recv "
			    "operation'";
	assert_int_equal(slurm_study(fails, "submit", results, out, sizeof out, err, sizeof err), 2);
	assert_string_equal(err, "tools/slurm-study: squeue failed: squeue: error: slurm_load_jobs error: Socket timed "
				 "out on send/recv operation; nothing was submitted\n");
	assert_string_equal(sbatch_calls(), "");
	assert_int_equal(slurm_study(fails, "status", results, out, sizeof out, err, sizeof err), 2);
	assert_string_equal(out, "");
	assert_string_equal(err, "tools/slurm-study: squeue failed: squeue: error: slurm_load_jobs error: Socket timed "
				 "out on send/recv operation; the study's state is not known\n");
}

/* 6. A task COMPLETING as Slurm requeues it is requeued, not stopped, and
 * a submission then leaves it in the queue. 3. Only this folder's jobs
 * are its tasks: job 78's task 2, of the study's name but another
 * folder's submission, is not. */
static void test_slurm_study_sees_a_requeue_under_way(void **unused)
{
	(void)unused;
	static char out[8192], err[4096];
	char results[400], environment[600];
	snprintf(results, sizeof results, "%s/requeue", scratch);
	results_of_job_77(results);
	const char *queue = "77 1 COMPLETING (null) node1\n78 2 RUNNING (null) node1\n";
	assert_int_equal(status_with_queue(results, queue, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "\n1     original                 1      requeued   1 time(s), to resume from its checkpoint\n"
		       "2     original                 2      new        not in Slurm's queue: make study-submit "
		       "STUDY=tests/studies/tiny.yaml RESULTS=");
	snprintf(environment, sizeof environment, "STUB_QUEUE=%s/queue", scratch); /* as status left it */
	assert_int_equal(slurm_study(environment, "submit", results, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "tiny: 4 runs, 0 ended, 0 failed, 1 in Slurm's queue, 3 to submit\n");
	expect_in(sbatch_calls(), " --array=2,3,4 ");
	/* 10. the line to follow it names the study and folder as given */
	char expected[1024];
	snprintf(expected, sizeof expected,
		 "follow it: make study-status STUDY=tests/studies/tiny.yaml RESULTS=%s (or squeue -j 77); the "
		 "report: %s/report.md\n",
		 results, results);
	expect_in(out, expected);
}

/* 16. A log whose seconds cannot be right gives no rate, not an
 * expected finish "in 0 s". */
static void test_slurm_study_ignores_a_log_row_that_cannot_be_right(void **unused)
{
	(void)unused;
	static char out[8192], err[4096];
	char results[400], path[1024];
	snprintf(results, sizeof results, "%s/forged-log", scratch);
	results_of_job_77(results);
	snprintf(path, sizeof path, "%s/original-seed1.csv", results);
	write_text(path, "iteration,lr,train_loss,train_error,test_loss,test_error,seconds,images_per_second\n"
			 "10,0.1,2.2,0.75,,,1e300,100\n");
	assert_int_equal(status_with_queue(results, "77 1 RUNNING (null) node1\n", out, sizeof out, err, sizeof err), 0);
	expect_in(out, "\n1     original                 1      running    on node1\n");
	expect_in(out, "1 run(s) in Slurm's queue; expected finish: not known until a run has logged a row\n");
}

/* 77.4. The expected finish from the start: a variant none of whose runs
 * has logged takes the rate of one that has, carried over by their FLOPs
 * (resgen summary); a requeued run waiting says from which iteration it
 * resumes. */
static void test_slurm_study_expects_a_finish_from_the_start(void **unused)
{
	(void)unused;
	static char out[8192], err[4096];
	char results[400], path[1024];
	snprintf(results, sizeof results, "%s/early", scratch);
	results_of_job_77(results);
	snprintf(path, sizeof path, "%s/original-seed1.csv", results);
	write_text(path, "iteration,lr,train_loss,train_error,test_loss,test_error,seconds,images_per_second\n"
			 "20,0.1,2.2,0.75,,,10,32\n");
	snprintf(path, sizeof path, "%s/original-seed1.log", results);
	write_text(path, "tiny: stopped by SIGTERM after iteration 20; resume with --resume x\n");
	assert_int_equal(status_with_queue(results, "77 1 PENDING (null) none\n77 3 PENDING (null) none\n", out, sizeof out, err,
					   sizeof err),
			 0);
	expect_in(out, "\n1     original                 1      requeued   1 time(s), to resume from its checkpoint at "
		       "iteration 20\n");
	expect_in(out, "\n3     full-preact              1      pending    in Slurm's queue\n");
	expect_in(out, "2 run(s) in Slurm's queue; expected finish: about ");
	expect_in(out, ", with 1 run(s) at once as now, from the runs' own rates, and for 1 variant(s) not yet logged "
		       "from their FLOPs (resgen summary) at the rate of one that has\n");
}

/* 10. A variant's own threads, ranks and time limit (the study file's
 * threads:, ranks:, time:): its runs go as an array of their own, ranks
 * above 1 with the binaries' Open MPI flavour; the report waits for every
 * array; a variant's time inside the stop's margin is refused. */
static void test_slurm_study_gives_a_variant_its_own_task(void **unused)
{
	(void)unused;
	static char out[8192], err[4096], text[4096];
	char dir[400], path[600], command[4096];
	snprintf(dir, sizeof dir, "%s/own-task", scratch);
	const char *variants[] = {
		"  - {name: original, ranks: 2, set: {net: {ordering: original}}}\n"
		"  - {name: full-preact, threads: 4, time: \"2:00:00\"}\n",
		"  - {name: original, set: {net: {ordering: original}}}\n"
		"  - {name: full-preact, time: 5}\n",
	};
	for (int i = 0; i < 2; i++) {
		snprintf(command, sizeof command, "rm -rf %1$s && mkdir -p %1$s", dir);
		assert_int_equal(system(command), 0);
		snprintf(path, sizeof path, "%s/variants", dir);
		write_text(path, variants[i]);
		/* tiny's study with these variants */
		snprintf(command, sizeof command, "{ sed '/^variants:/q' tests/studies/tiny.yaml; cat %1$s/variants; } "
			 "> %1$s/tiny.yaml", dir);
		assert_int_equal(system(command), 0);
		snprintf(command, sizeof command,
			 "%2$s/bin/resgen study plan %1$s/tiny.yaml -o %1$s/plan > /dev/null && env PATH=%3$s:$PATH "
			 "RESGEN_STUDY_MPI_BIN_DIR=%1$s/mpi tools/slurm-study submit 2 1 %2$s/bin/resgen %1$s/tiny.yaml "
			 "%1$s/plan %2$s/bin/study/tiny %1$s/results",
			 dir, build, stub);
		int status = run(command, out, sizeof out, err, sizeof err);
		if (i == 1) {
			assert_int_equal(status, 2);
			expect_in(err, "tools/slurm-study: the time limit 5 of runs 3,4 (their variant's time in ");
			expect_in(err, "leaves a run less than a minute before it must stop, 300 s before the limit "
				       "(RESGEN_STOP_SECONDS); give a time of at least 6 minutes, or a smaller "
				       "RESGEN_STOP_SECONDS\n");
			assert_string_equal(sbatch_calls(), "");
			break;
		}
		assert_int_equal(status, 0);
		expect_in(out, "\nsubmitted job 77: 2 task(s), runs 1,2, 2 MPI ranks of 2 core(s) each\n"
			       "submitted job 77: 2 task(s), runs 3,4, 4 core(s) each, time limit 2:00:00\n"
			       "the report is job 77, after the last task of jobs 77 77\n");
		const char *calls = sbatch_calls();
		expect_in(calls, " --array=1,2 --cpus-per-task=2 --ntasks=2 --requeue ");
		snprintf(text, sizeof text, " %s/plan %s/mpi %s/results\n", dir, dir, dir);
		expect_in(calls, text);
		expect_in(calls, " --array=3,4 --cpus-per-task=4 --ntasks=1 --time=2:00:00 --requeue ");
		snprintf(text, sizeof text, " %s/plan %s/bin/study/tiny %s/results\n", dir, build, dir);
		expect_in(calls, text);
		expect_in(calls, " --dependency=afterany:77:77 ");
	}
}

/* 4. Before any run has logged a row: the speed of a few synthetic steps
 * of the variant of least work, measured at submission (here of a stand-in
 * binary), carried over to each variant by its FLOPs. */
static void test_slurm_study_expects_a_finish_before_any_row(void **unused)
{
	(void)unused;
	static char out[8192], err[4096];
	char results[400], bins[400], command[4096];
	snprintf(results, sizeof results, "%s/unlogged", scratch);
	snprintf(bins, sizeof bins, "%s/unlogged-bins", scratch);
	snprintf(command, sizeof command,
		 "mkdir -p %1$s && ln -sf \"$(realpath %2$s/tests/bin/tiny-f32)\" %1$s/original && ln -sf "
		 "\"$(realpath %2$s/tests/bin/tiny-f32)\" %1$s/full-preact && env PATH=%3$s:$PATH "
		 "tools/slurm-study submit 2 1 %2$s/bin/resgen tests/studies/tiny.yaml %4$s %1$s %5$s",
		 bins, build, stub, plan, results);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	sbatch_calls();
	snprintf(command, sizeof command, "wc -w < %s/slurm/speed", results);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "5\n");
	/* the queue's tasks bear the submission's mark (slurm/jobs) */
	char mark[64], queue[512];
	snprintf(command, sizeof command, "cut -d' ' -f2 %s/slurm/jobs | tr -d '\\n'", results);
	assert_int_equal(run(command, mark, sizeof mark, NULL, 0), 0);
	assert_int_equal(strlen(mark), 16);
	snprintf(queue, sizeof queue, "77 1 PENDING resgen:%1$s none\n77 2 PENDING resgen:%1$s none\n"
		 "77 3 PENDING resgen:%1$s none\n77 4 PENDING resgen:%1$s none\n", mark);
	assert_int_equal(status_with_queue(results, queue, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "\n4 run(s) in Slurm's queue; expected finish: about ");
	expect_in(out, ", with 1 run(s) at once as now, from the variants' FLOPs (resgen summary) at the speed of a "
		       "step of ");
	expect_in(out, " at submission (2 threads; a compute node may be faster or slower), since no run has logged "
		       "a row\n");
}

/* 8. A time limit that leaves no time after the stop's margin, and a
 * margin that is not a number: one line each, naming them, before
 * anything is sent. */
static void test_slurm_study_refuses_a_time_limit_inside_the_margin(void **unused)
{
	(void)unused;
	static char out[8192], err[4096];
	char results[400];
	snprintf(results, sizeof results, "%s/limit", scratch);
	assert_int_equal(slurm_study("SBATCH_TIMELIMIT=3", "submit", results, out, sizeof out, err, sizeof err), 2);
	assert_string_equal(err, "tools/slurm-study: the time limit of 180 s (SBATCH_TIMELIMIT=3) leaves a run less than "
				 "a minute before it must stop, 300 s before the limit (RESGEN_STOP_SECONDS); give a time "
				 "limit of at least 6 minutes, or a smaller RESGEN_STOP_SECONDS\n");
	assert_int_equal(slurm_study("SBATCH_TIMELIMIT=1-0 RESGEN_STOP_SECONDS=abc", "submit", results, out, sizeof out,
				     err, sizeof err),
			 2);
	assert_string_equal(err, "tools/slurm-study: RESGEN_STOP_SECONDS is 'abc'; give the seconds before the time "
				 "limit at which a run stops with its checkpoint, a whole number from 1 to 65535 (default "
				 "300)\n");
	assert_string_equal(sbatch_calls(), "");
	/* a day, or 7 minutes against 300 s, leaves time */
	assert_int_equal(slurm_study("SBATCH_TIMELIMIT=0:7:00", "submit", results, out, sizeof out, err, sizeof err), 0);
	expect_in(sbatch_calls(), "--signal=B:USR1@300 ");
}

/* 9. make's check of a study's threads and ranks: one number, or one line
 * naming the variable. */
static void test_make_checks_the_study_numbers(void **unused)
{
	(void)unused;
	static const char *const cases[][2] = {
		{"STUDY_THREADS='2 4'", "STUDY_THREADS='2 4' is not what resgen accepts: use one whole number from 1 in "
					"plain decimal, such as 2"},
		{"STUDY_RANKS=0", "STUDY_RANKS='0' is not what resgen accepts: use one whole number from 1 in plain "
				  "decimal, such as 2"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char command[1024], err[2048], expected[1024];
		snprintf(command, sizeof command,
			 "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s study-submit S=tiny %s", cases[i][0]);
		assert_int_equal(run(command, NULL, 0, err, sizeof err), 2);
		snprintf(expected, sizeof expected, ": *** %s.  Stop.\n", cases[i][1]);
		expect_in(err, expected);
	}
}

/* slurm-task as Slurm starts it, for run 1 of the tiny study into
 * results, under a prefix (flock holding a lock, say). */
static int slurm_task(const char *prefix, const char *results, char *out, size_t out_size, char *err,
		      size_t err_size)
{
	char command[4096];
	snprintf(command, sizeof command,
		 "env PATH=%s:$PATH SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_JOB_ID=79 %s tools/slurm-task \"$PWD/tools\" "
		 "%s/bin/resgen tests/studies/tiny.yaml %s %s/bin/study/tiny %s",
		 stub, prefix, build, plan, build, results);
	return run(command, out, out_size, err, err_size);
}

/* 4. A task whose run another live task holds leaves it, in one line;
 * 11. a task whose run-study refuses the study prints run-study's line
 * alone. */
static void test_slurm_task_runs_a_run_once_and_says_why_not(void **unused)
{
	(void)unused;
	static char out[8192], err[4096];
	char results[400], lock[500], prefix[600], path[1024], expected[1024];
	snprintf(results, sizeof results, "%s/task", scratch);
	snprintf(path, sizeof path, "mkdir -p %s/slurm", results);
	assert_int_equal(system(path), 0);
	snprintf(lock, sizeof lock, "%s/slurm/original-seed1.lock", results);
	write_text(lock, "job 6_1 on node9");
	snprintf(prefix, sizeof prefix, "flock %s", lock);
	assert_int_equal(slurm_task(prefix, results, out, sizeof out, err, sizeof err), 2);
	expect_in(err, "slurm-task: run 1 (original, seed 1) is being run by another live task (job 6_1 on node9); "
		       "this task (job 79_1 on ");
	expect_in(err, ") leaves it to that one\n");
	snprintf(path, sizeof path, "%s/original-seed1.starts", results);
	assert_int_not_equal(access(path, F_OK), 0); /* no start recorded */

	snprintf(path, sizeof path, "%s/original-seed1.done", results);
	write_text(path, "another record\n");
	assert_int_equal(slurm_task("", results, out, sizeof out, err, sizeof err), 2);
	snprintf(expected, sizeof expected,
		 "%s/original-seed1.*: 1 run(s) ended under another spec or options than the study's now; move their "
		 "files away to run them again, or restore the study\n",
		 results);
	assert_string_equal(err, expected);
}

/* Issue 84, item 3: a run's lock that is a symbolic link had the task's
 * holder line written over its target. A lock that is not a regular file
 * is refused, in one line, and nothing is written through it. */
static void test_slurm_task_refuses_a_lock_that_is_a_link(void **unused)
{
	(void)unused;
	static char out[8192], err[4096];
	char results[400], lock[500], victim[500], command[2048], expected[2048], text[256];
	snprintf(results, sizeof results, "%s/linked", scratch);
	snprintf(lock, sizeof lock, "%s/slurm/original-seed1.lock", results);
	snprintf(victim, sizeof victim, "%s/victim", scratch);
	write_text(victim, "someone's own words\n");
	snprintf(command, sizeof command, "mkdir -p %s/slurm && ln -s %s %s", results, victim, lock);
	assert_int_equal(system(command), 0);
	assert_int_equal(slurm_task("", results, out, sizeof out, err, sizeof err), 2);
	snprintf(expected, sizeof expected,
		 "slurm-task: %s is not a regular file (a link, folder or device); a run's lock must be one, and "
		 "this task writes through none: remove it, then requeue the task\n",
		 lock);
	assert_string_equal(err, expected);
	FILE *file = fopen(victim, "r");
	assert_non_null(file);
	size_t got = fread(text, 1, sizeof text - 1, file);
	fclose(file);
	text[got] = '\0';
	assert_string_equal(text, "someone's own words\n");
	/* a folder in its place, the same */
	snprintf(command, sizeof command, "rm %1$s && mkdir %1$s", lock);
	assert_int_equal(system(command), 0);
	assert_int_equal(slurm_task("", results, out, sizeof out, err, sizeof err), 2);
	assert_string_equal(err, expected);
	snprintf(command, sizeof command, "%s/original-seed1.starts", results);
	assert_int_not_equal(access(command, F_OK), 0); /* no start recorded */
}

/* 8. A task told that its time limit is near (USR1, as sbatch --signal
 * sends it) requeues a run that made progress since its start, and not
 * one that made none, which would only start and stop again. The run is
 * a stand-in for run-study that stops, when told, after the iteration it
 * is given, having resumed from 25. */
static void test_slurm_task_requeues_only_a_run_that_made_progress(void **unused)
{
	(void)unused;
	static const struct {
		int stopped_after;
		int status;
		const char *said;
	} cases[] = {
		{40, 0, "the time limit is near: %s/original-seed1.ckpt written at iteration 40; Slurm requeues this "
			"task, which resumes from there\n"},
		{25, 1, "the time limit is near, and the run made no progress since this start (iteration 25): not "
			"requeued, since it would do no more; give the task a longer time limit (SBATCH_TIMELIMIT) or a "
			"smaller RESGEN_STOP_SECONDS, and submit again\n"},
	};
	char tools[400], results[400], command[4096], out[8192], err[8192], expected[1024];
	snprintf(tools, sizeof tools, "%s/task-tools", scratch);
	snprintf(results, sizeof results, "%s/progress", scratch);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(command, sizeof command, "rm -rf %1$s %2$s %3$s/scontrol.log && mkdir -p %1$s %2$s && "
			 "cp tools/slurm-task %1$s/", tools, results, stub);
		assert_int_equal(run(command, NULL, 0, err, sizeof err), 0);
		char script[2048], path[600];
		snprintf(script, sizeof script,
			 "#!/bin/bash\n"
			 "[ \"$1\" = --list ] && { echo '1 original 1 stopped'; exit 0; }\n"
			 "log=$7/original-seed1.log\n"
			 "echo \"resumed from $7/original-seed1.ckpt after iteration 25\" >> \"$log\"\n"
			 "trap 'echo \"tiny: stopped by SIGTERM after iteration %d; resume with --resume x\" >> \"$log\"; "
			 "exit 4' TERM\n"
			 "touch \"$7/started\"\n"
			 "while :; do sleep 0.1; done\n",
			 cases[i].stopped_after);
		snprintf(path, sizeof path, "%s/run-study", tools);
		write_text(path, script);
		assert_int_equal(chmod(path, 0755), 0);
		snprintf(command, sizeof command,
			 "{ env PATH=%1$s:$PATH SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_JOB_ID=79 %2$s/slurm-task %2$s resgen study "
			 "plan bin %3$s & task=$!; while [ ! -f %3$s/started ]; do sleep 0.05; done; kill -USR1 $task; "
			 "wait $task; echo \"status $?\"; }",
			 stub, tools, results);
		run(command, out, sizeof out, err, sizeof err);
		snprintf(expected, sizeof expected, "status %d\n", cases[i].status);
		expect_in(out, expected);
		snprintf(expected, sizeof expected, cases[i].said, results);
		expect_in(cases[i].status ? err : out, expected);
		snprintf(command, sizeof command, "{ cat %s/scontrol.log 2> /dev/null || true; }", stub);
		assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
		assert_string_equal(out, cases[i].status ? "" : "requeue 79_1\n");
	}
}

/* 10. make study-cancel: the arrays and report jobs this results folder
 * submitted, and no other, are cancelled; the runs keep their
 * checkpoints. */
static void test_study_cancel_cancels_this_folders_jobs(void **unused)
{
	(void)unused;
	char results[400], path[600], out[4096], err[4096], command[2048];
	snprintf(results, sizeof results, "%s/cancelled", scratch);
	results_of_job_77(results);
	snprintf(path, sizeof path, "%s/slurm/reports", results);
	write_text(path, "78\n");
	snprintf(path, sizeof path, "%s/queue", scratch);
	/* job 77's tasks, its report job 78, and another folder's job 90 */
	write_text(path, "77 1 RUNNING (null) node1\n77 2 PENDING (null)\n90 3 PENDING (null) none\n");
	/* the user's jobs: id, name, comment (squeue -o '%F %j %k') */
	char jobs[500];
	snprintf(jobs, sizeof jobs, "%s/jobs-queued", scratch);
	write_text(jobs, "77 resgen-tiny (null)\n77 resgen-tiny (null)\n78 resgen-tiny-report (null)\n"
			 "90 resgen-tiny (null)\n");
	char environment[1400];
	snprintf(environment, sizeof environment, "STUB_QUEUE=%s STUB_JOBS=%s", path, jobs);
	assert_int_equal(slurm_study(environment, "cancel", results, out, sizeof out, err, sizeof err), 0);
	assert_string_equal(err, "");
	snprintf(command, sizeof command,
		 "tiny: cancelled jobs 77 78: 1 running task told to stop, writing checkpoints; 1 waiting task and the "
		 "report job taken out of the queue\nthe runs keep their checkpoints: make study-submit "
		 "STUDY=tests/studies/tiny.yaml RESULTS=%s resumes them\n",
		 results);
	assert_string_equal(out, command);
	snprintf(command, sizeof command, "{ cat %1$s/scancel.log; rm -f %1$s/scancel.log; }", stub);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "77 78\n");
	/* Issue 84, item 2: a recorded id that Slurm gave again, to a job of
	 * another submission (its comment not the recorded mark), is left */
	snprintf(command, sizeof command, "%s/slurm/jobs", results);
	write_text(command, "77 0123456789abcdef\n");
	write_text(jobs, "77 resgen-tiny resgen:fedcba9876543210\n78 resgen-tiny-report (null)\n");
	assert_int_equal(slurm_study(environment, "cancel", results, out, sizeof out, err, sizeof err), 0);
	snprintf(command, sizeof command,
		 "tiny: left job 77 is not the submission recorded in %1$s/slurm/jobs (its comment differs): Slurm "
		 "gave its id again, so it is another's; it was not cancelled\n"
		 "tiny: cancelled job 78: 0 running tasks told to stop, writing checkpoints; 0 waiting tasks and the "
		 "report job taken out of the queue\nthe runs keep their checkpoints: make study-submit "
		 "STUDY=tests/studies/tiny.yaml RESULTS=%1$s resumes them\n",
		 results);
	assert_string_equal(out, command);
	snprintf(command, sizeof command, "{ cat %1$s/scancel.log; rm -f %1$s/scancel.log; }", stub);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "78\n");
	/* nothing left in the queue: nothing cancelled */
	write_text(path, "");
	write_text(jobs, "");
	assert_int_equal(slurm_study(environment, "cancel", results, out, sizeof out, err, sizeof err), 0);
	snprintf(command, sizeof command, "tiny: nothing of %s is in Slurm's queue; nothing to cancel\n", results);
	assert_string_equal(out, command);
}

/* Issue 77, item 1: every tool answers --help (exit 0, what it is for),
 * and one given too few arguments says how to call it in one line. */
static void test_every_tool_answers_help(void **unused)
{
	(void)unused;
	static const char *const tools[][2] = {
		{"tools/run-study", "Runs a study's (variant, seed) runs"},
		{"tools/slurm-study", "A study's runs on a Slurm cluster"},
		{"tools/slurm-task", "One task of a study's job array"},
		{"tools/slurm-report", "A study's report job"},
		{"tools/pytorch/resgen_torch.py", "usage: resgen_torch.py"},
		{"tools/confusion-table", "Turns an evaluate --confusion CSV"},
	};
	char command[600], out[16384], err[4096];
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
		snprintf(command, sizeof command, "%s --help", tools[i][0]);
		assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
		assert_int_equal(strncmp(out, tools[i][1], strlen(tools[i][1])), 0);
		assert_string_equal(err, "");
	}
	assert_int_equal(run("tools/run-study --list", out, sizeof out, err, sizeof err), 2);
	assert_string_equal(err, "usage: tools/run-study [--check | --list | --one N | --finish] RESGEN STUDY PLAN_DIR "
				 "BIN_DIR RESULTS (make study, make study-status and tools/slurm-study call it; --help "
				 "says more)\n");
}

/* Issue 77, item 9: a study's warnings are said when it is planned anew,
 * not again by every make study-status that plans it unchanged. */
static void test_study_warnings_are_said_once(void **unused)
{
	(void)unused;
	char study[400], command[1024], err[4096];
	snprintf(study, sizeof study, "%s/warned.yaml", scratch);
	static const char warning[] = "specs/demo.yaml:15:62: warning: the schedule is cosine, which falls from lr.base "
				      "to 0 over the run: lr.steps and lr.gamma are set aside (variant cosine)\n";
	const char *seeds[] = {"[1]", "[1]", "[1, 2]"};
	for (int i = 0; i < 3; i++) {
		snprintf(command, sizeof command,
			 "name: warned\nbase: demo\nseeds: %s\nvariants:\n  - {name: cosine, set: {train: {lr: {schedule: "
			 "cosine}}}}\n",
			 seeds[i]);
		write_text(study, command);
		snprintf(command, sizeof command, "%s/bin/resgen study plan %s -o %s/warned-plan", build, study, scratch);
		assert_int_equal(run(command, NULL, 0, err, sizeof err), 0);
		assert_string_equal(err, i == 1 ? "" : warning); /* planned anew, planned so before, changed */
	}
}

/* Issue 87, item 5: make study-submit (and make study) look for every
 * variant's data before building or queueing anything: a line a variant
 * whose folder is missing or holds another count of classes. */
static void test_study_submit_looks_for_each_variants_data(void **unused)
{
	(void)unused;
	char study[400], text[2048], command[2048], err[4096], expected[2048];
	snprintf(study, sizeof study, "%s/data.yaml", scratch);
	snprintf(command, sizeof command, "mkdir -p %1$s/three/train/a %1$s/three/train/b %1$s/three/train/c "
		 "%1$s/three/val/a %1$s/three/val/b %1$s/three/val/c", scratch);
	assert_int_equal(system(command), 0);
	snprintf(text, sizeof text,
		 "name: data\nbase: demo\nseeds: [1]\nvariants:\n  - {name: here}\n"
		 "  - {name: elsewhere, set: {data: {dir: %1$s/nowhere}}}\n"
		 "  - {name: photos, spec: resnet-18, set: {data: {set: folder, dir: %1$s/three, classes: 4, crop: 32}, "
		 "train: {batch: 8}}}\n", scratch);
	write_text(study, text);
	snprintf(command, sizeof command,
		 "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL PATH=%s:$PATH make -s study-submit STUDY=%s RESULTS=%s/data-results",
		 stub, study, scratch);
	assert_int_equal(run(command, NULL, 0, err, sizeof err), 2);
	snprintf(expected, sizeof expected, "%1$s: variant elsewhere: its data folder %2$s/nowhere is missing; put the "
		 "data there, or give the variant another folder in the study (set: {data: {dir: DIR}}; "
		 "docs/imagenet.md)\n%1$s: variant photos: %2$s/three/train holds 3 class folders, but the spec has 4 "
		 "classes; put the data there, or give the variant another folder in the study (set: {data: {dir: DIR}}; "
		 "docs/imagenet.md)\n", study, scratch);
	assert_memory_equal(err, expected, strlen(expected));
	assert_string_equal(sbatch_calls(), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_study_cancel_cancels_this_folders_jobs),
		cmocka_unit_test(test_slurm_study_stops_when_squeue_fails),
		cmocka_unit_test(test_slurm_study_sees_a_requeue_under_way),
		cmocka_unit_test(test_slurm_study_ignores_a_log_row_that_cannot_be_right),
		cmocka_unit_test(test_slurm_study_expects_a_finish_from_the_start),
		cmocka_unit_test(test_slurm_study_gives_a_variant_its_own_task),
		cmocka_unit_test(test_slurm_study_expects_a_finish_before_any_row),
		cmocka_unit_test(test_slurm_study_refuses_a_time_limit_inside_the_margin),
		cmocka_unit_test(test_make_checks_the_study_numbers),
		cmocka_unit_test(test_slurm_task_runs_a_run_once_and_says_why_not),
		cmocka_unit_test(test_slurm_task_refuses_a_lock_that_is_a_link),
		cmocka_unit_test(test_slurm_task_requeues_only_a_run_that_made_progress),
		cmocka_unit_test(test_every_tool_answers_help),
		cmocka_unit_test(test_study_warnings_are_said_once),
		cmocka_unit_test(test_study_submit_looks_for_each_variants_data),
	};
	command_only_some();
	return cmocka_run_group_tests_name("the study tools against stand-ins for Slurm", tests, setup, NULL);
}
