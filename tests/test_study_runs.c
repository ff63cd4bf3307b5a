/* Studies run as users run them: make study runs, resumes and reports a
 * study, one binary serves variants that differ in their recipe alone,
 * and make plot draws a log and the gradient's flow. */
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "command.h"
#include "tensor_file.h"

static int setup(void **unused)
{
	(void)unused;
	return command_setup("study-runs");
}

/* make plot's and make plot-gradflow's scripts draw a run's log and a
 * gradflow CSV as PNG and SVG. */
static void test_plots_draw_a_log_and_gradflow(void **unused)
{
	(void)unused;
	char command[8192], out[64];
	snprintf(command, sizeof command,
		 "%1$s/tests/bin/tiny-f64 train --synthetic --iterations 20 --eval-every 5 --log %2$s/plot.csv && "
		 "%1$s/tests/bin/tiny-f64 gradflow --synthetic --iterations 4 --every 2 --csv %2$s/flow.csv && "
		 "rm -f %2$s/plot.png %2$s/plot.svg %2$s/flow.png %2$s/flow.svg && "
		 "gnuplot -c tools/plot-log.gp %2$s/plot.csv %2$s/plot && "
		 "gnuplot -c tools/plot-gradflow.gp %2$s/flow '%2$s/flow.csv' && "
		 "for f in plot flow; do head -c 4 %2$s/$f.png | od -An -c | tr -d ' \\n'; grep -c '<svg' %2$s/$f.svg; done",
		 build, scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "211PNG1\n211PNG1\n");
}

/* make study on tests/studies/tiny.yaml (2 variants x 2 seeds, 50
 * iterations), into results under the scratch folder, in this build's
 * flavour (plain or sanitized), its networks' helpers out of line (quicker
 * to compile); the test's own make settings stay out. */
static int make_study_target(const char *target, const char *environment, const char *results, char *out,
			     size_t out_size, char *err, size_t err_size)
{
	char command[4096];
	const char *sanitize = getenv("SANITIZE");
	snprintf(command, sizeof command,
		 "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL %s make -s %s TEST_HOOKS=1 OUT_OF_LINE=1 BUILD=%s %s "
		 "STUDY=tests/studies/tiny.yaml RESULTS=%s/%s",
		 environment, target, build, sanitize && strcmp(sanitize, "1") == 0 ? "SANITIZE=1" : "", scratch,
		 results);
	return run(command, out, out_size, err, err_size);
}

static int make_study(const char *environment, const char *results, char *out, size_t out_size,
		      char *err, size_t err_size)
{
	return make_study_target("study", environment, results, out, out_size, err, err_size);
}

/* A study stopped by Ctrl-C mid-run resumes from its checkpoint to the
 * results of a study never stopped; it writes the report and its plots;
 * run again, it skips what is finished; a finished run whose record no
 * longer matches the study is refused, never overwritten. */
static void test_study_runs_resumes_and_reports(void **unused)
{
	(void)unused;
	static char out[16384], err[4096];
	char a[1024], b[512], command[4096];
	assert_int_equal(make_study("RESGEN_TEST_RAISE=2@30", "stopped", out, sizeof out, err, sizeof err), 2);
	expect_in(out, "tiny: 4 runs (2 variants x 2 seeds), 0 finished, 4 to run");
	expect_in(out, "estimated time: ");
	expect_in(out, "stopped: the run's checkpoint is ");
	assert_int_equal(make_study("", "stopped", out, sizeof out, err, sizeof err), 0);
	expect_in(out, "run 1/4: original, seed 1, resuming from ");
	expect_in(out, "run 4/4: full-preact, seed 2\n");
	expect_in(out, "/stopped/report.md, with curves, errors and gradflow plots");
	assert_int_equal(make_study("", "whole", out, sizeof out, err, sizeof err), 0);
	snprintf(a, sizeof a, "%s/stopped/original-seed1.csv", scratch);
	snprintf(b, sizeof b, "%s/whole/original-seed1.csv", scratch);
	assert_true(same_rows(a, b));
	snprintf(a, sizeof a, "%s/stopped/original-seed1.weights", scratch);
	snprintf(b, sizeof b, "%s/whole/original-seed1.weights", scratch);
	assert_true(same_file(a, b));
	/* the comparison can fail: another seed's run differs */
	snprintf(b, sizeof b, "%s/whole/original-seed2.weights", scratch);
	assert_false(same_file(a, b));

	snprintf(command, sizeof command, "cat %s/whole/report.md", scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, "# A tiny study: original against full pre-activation");
	expect_in(out, "2 variants x 2 seeds, 4 of 4 runs finished.");
	expect_in(out, "| original | basic original, depth 8, identity shortcut | ");
	expect_in(out, "| full-preact | basic full-preact, depth 8, identity shortcut | ");
	/* the statistics against the first variant, and how it was made */
	expect_in(out, "| variant | difference | 95% interval | Welch's t | paired t | reading: test, adjusted p |\n");
	expect_in(out, "\n| full-preact | ");
	expect_in(out, ", df 1.0, p = ");
	expect_in(out, "## How it was made\n\n- Command: `make study STUDY=tests/studies/tiny.yaml RESULTS=");
	expect_in(out, " cores; 2 threads a run (from each run's output");
	expect_in(out, "- Each run's compute time, the time of its starts to its last logged row (its log's `seconds`: a "
		       "cluster's waits between requeues are not in it) (s):\n\n| variant | seed 1 | seed 2 |\n");
	snprintf(command, sizeof command,
		 "(cd %s/whole && for f in curves errors gradflow; do head -c 4 $f.png | od -An -c | "
		 "tr -d ' \\n'; grep -c '<svg' $f.svg; done; ls gradflow specs)",
		 scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "211PNG1\n211PNG1\n211PNG1\ngradflow:\nfull-preact-init.csv\n"
			    "full-preact-trained.csv\noriginal-init.csv\noriginal-trained.csv\n\n"
			    "specs:\nfull-preact.yaml\noriginal.yaml\n");

	/* 77.6. A partial report, by make study-report: what exists is drawn,
	 * what is missing said once, without gnuplot's warnings */
	snprintf(command, sizeof command,
		 "cd %s && rm -rf partial && cp -r whole partial && cd partial && rm full-preact-seed1.done "
		 "full-preact-seed1.weights gradflow/full-preact-trained.csv gradflow.png",
		 scratch);
	assert_int_equal(system(command), 0);
	assert_int_equal(make_study_target("study-report", "", "partial", out, sizeof out, err, sizeof err), 0);
	expect_in(out, "/partial/report.md, with curves, errors and gradflow plots (PNG and SVG)\n(the gradient flow "
		       "of trained weights is not drawn for full-preact: its first seed's run has not finished)\n");
	assert_null(strstr(err, "warning"));
	snprintf(command, sizeof command,
		 "(cd %s/partial && head -c 4 gradflow.png | od -An -c | tr -d ' \\n'; cat report.md)", scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, "211PNG# A tiny study");
	snprintf(a, sizeof a, "written by `make study-report STUDY=tests/studies/tiny.yaml RESULTS=%s/partial`: "
		 "2 variants x 2 seeds, 3 of 4 runs finished, 1 under way or stopped.", scratch);
	expect_in(out, a);

	assert_int_equal(make_study("", "whole", out, sizeof out, err, sizeof err), 0);
	expect_in(out, "tiny: 4 runs (2 variants x 2 seeds), 4 finished, 0 to run\n");
	assert_null(strstr(out, "run 1/4"));
	/* two records that no longer match: both named, before anything is
	 * built (a binary removed stays removed) */
	const char *changed[] = {"original-seed1", "full-preact-seed2"};
	for (int i = 0; i < 2; i++) {
		snprintf(a, sizeof a, "%s/whole/%s.done", scratch, changed[i]);
		FILE *record = fopen(a, "a");
		assert_non_null(record);
		fputs("changed\n", record);
		assert_int_equal(fclose(record), 0);
	}
	snprintf(b, sizeof b, "%s/bin/study/tiny/original", build);
	assert_int_equal(remove(b), 0);
	assert_int_equal(make_study("", "whole", out, sizeof out, err, sizeof err), 2);
	snprintf(a, sizeof a,
		 "%1$s/whole/original-seed1.*, %1$s/whole/full-preact-seed2.*: 2 run(s) ended under another spec or "
		 "options than the study's now; move their files away to run them again, or restore the study\n",
		 scratch);
	expect_in(err, a);
	assert_int_equal(access(b, F_OK), -1);
}

/* A study whose variants differ in the recipe alone builds one binary and
 * runs it with each variant's settings (--set), then measures each one's
 * gradient flow and writes the report. */
static void test_study_shares_one_binary_across_recipes(void **unused)
{
	(void)unused;
	static char out[16384], err[4096];
	char study[400], command[4096], path[600];
	snprintf(study, sizeof study, "%s/recipes.yaml", scratch);
	write_text(study, "name: recipes\nbase: demo\nset:\n  net: {depth: 8, widths: [4, 8, 8]}\n"
			  "  train: {batch: 16, iterations: 6, eval_every: 6, lr: {warmup: {iterations: 0}, steps: [0.5]}}\n"
			  "seeds: [1]\ntrain_limit: 200\ntest_limit: 50\nvariants:\n  - {name: steps}\n"
			  "  - {name: cosine, set: {train: {lr: {schedule: cosine, base: 0.05}}}}\n"
			  /* every other run-time key, each a variant's difference:
			   * train takes them as --set, gradflow those it runs by */
			  "  - {name: warmup, set: {train: {lr: {warmup: {lr: 0.02, iterations: 2}}}}}\n"
			  "  - {name: later, set: {train: {lr: {steps: [4], gamma: 0.2}}}}\n"
			  "  - {name: momentum, set: {train: {momentum: 0.8, weight_decay: 0.0005}}}\n"
			  "  - {name: augment, set: {train: {augment: {pad: 2, flip: false}}}}\n"
			  "  - {name: longer, set: {train: {iterations: 8}}}\n"
			  "  - {name: batch, set: {train: {batch: 8}}}\n"
			  "  - {name: evals, set: {train: {eval_every: 3}}}\n");
	const char *sanitize = getenv("SANITIZE");
	snprintf(command, sizeof command,
		 "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s study TEST_HOOKS=1 OUT_OF_LINE=1 BUILD=%s %s STUDY=%s "
		 "RESULTS=%s/recipes-results",
		 build, sanitize && strcmp(sanitize, "1") == 0 ? "SANITIZE=1" : "", study, scratch);
	if (run(command, out, sizeof out, err, sizeof err) != 0)
		fail_msg("make study failed:\n%s%s", out, err);
	snprintf(path, sizeof path, "%s/bin/study/recipes/steps", build);
	assert_int_equal(access(path, X_OK), 0);
	snprintf(command, sizeof command, "{ ls %s/bin/study/recipes; grep -c '| seed 1 |' %s/recipes-results/report.md; }",
		 build, scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "steps\n1\n");
	snprintf(command, sizeof command, "ls %s/recipes-results/gradflow | wc -l", scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "18\n");
	snprintf(command, sizeof command, "grep '^recipe' %s/recipes-results/cosine-seed1.log", scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, "recipe: lr 0.05, then a cosine down to 0 at iteration 6;");
	expect_in(out, "; --set lr.base=0.05 lr.schedule=cosine\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plots_draw_a_log_and_gradflow),
		cmocka_unit_test(test_study_runs_resumes_and_reports),
		cmocka_unit_test(test_study_shares_one_binary_across_recipes),
	};
	command_only_some();
	return cmocka_run_group_tests_name("studies run", tests, setup, NULL);
}
