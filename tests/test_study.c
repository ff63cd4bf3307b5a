/* Study files and their reports: every shipped study is valid; overrides
 * land where they should; a variant's written spec reads back as the
 * variant; every class of error gives its exact message at its place (in
 * the study, or in the spec it concerns); the report's figures. */
#include <glob.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "report.h"
#include "spec.h"
#include "statistics.h"
#include "strbuf.h"
#include "study.h"

static const char *scratch = "build/tests/scratch-study.yaml";

static void write_text(const char *path, const char *text)
{
	FILE *file = fopen(path, "w");
	assert_non_null(file);
	fputs(text, file);
	assert_int_equal(fclose(file), 0);
}

static char *read_text(const char *path)
{
	static char text[16384];
	FILE *file = fopen(path, "r");
	assert_non_null(file);
	size_t got = fread(text, 1, sizeof text - 1, file);
	text[got] = '\0';
	fclose(file);
	return text;
}

/* Asserts that the study text fails with expected, where "@" stands for
 * the study's path. */
static void expect_error(const char *text, const char *expected)
{
	write_text(scratch, text);
	struct study *study = calloc(1, sizeof *study);
	assert_non_null(study);
	struct diag d = {{0}};
	char full[1024];
	if (expected[0] == '@')
		snprintf(full, sizeof full, "%s%s", scratch, expected + 1);
	else
		snprintf(full, sizeof full, "%s", expected);
	int status = study_load(study, scratch, "specs", &d);
	if (status == 0 || strcmp(d.text, full) != 0)
		print_error("expected: %s\n     got: %s\n", full, status == 0 ? "(no error)" : d.text);
	if (status == 0)
		study_free(study);
	free(study);
	assert_int_equal(status, -1);
	assert_string_equal(d.text, full);
}

static void test_study_every_shipped_study_is_valid(void **unused)
{
	(void)unused;
	const char *patterns[] = {"specs/studies/*.yaml", "tests/studies/*.yaml"};
	int total = 0;
	struct study *study = calloc(1, sizeof *study);
	assert_non_null(study);
	for (size_t p = 0; p < sizeof patterns / sizeof patterns[0]; p++) {
		glob_t found;
		if (glob(patterns[p], 0, NULL, &found) != 0)
			continue;
		for (size_t i = 0; i < found.gl_pathc; i++, total++) {
			struct diag d = {{0}};
			if (study_load(study, found.gl_pathv[i], "specs", &d) != 0)
				fail_msg("%s", d.text);
			study_free(study);
		}
		globfree(&found);
	}
	free(study);
	assert_true(total >= 5); /* four in specs/studies/, the test's tiny one */
}

/* The spec, then the study's set, then the variant's, then its name. */
static void test_study_overrides_land_in_order(void **unused)
{
	(void)unused;
	struct study *study = calloc(1, sizeof *study);
	assert_non_null(study);
	struct diag d = {{0}};
	assert_int_equal(study_load(study, "tests/studies/tiny.yaml", "specs", &d), 0);
	assert_string_equal(study->name, "tiny");
	assert_int_equal(study->seed_count, 2);
	assert_int_equal(study->seeds[1], 2);
	assert_int_equal(study->train_limit, 2000);
	assert_int_equal(study->test_limit, 500);
	assert_int_equal(study->variant_count, 2);
	const struct spec *original = &study->variants[0].spec, *preact = &study->variants[1].spec;
	assert_string_equal(original->name, "original");
	assert_string_equal(study->variants[0].spec_name, "demo"); /* the study's base */
	assert_string_equal(study->variants[0].paper, "6.61");
	assert_int_equal(original->net.ordering, ORDER_ORIGINAL);   /* the variant's set */
	assert_int_equal(preact->net.ordering, ORDER_FULL_PREACT);  /* demo's own */
	assert_int_equal(original->net.depth, 8);                   /* the study's set */
	assert_int_equal(original->net.widths[2], 16);
	assert_int_equal(original->train.iterations, 50);
	assert_int_equal(original->train.warmup_iterations, 0);     /* merged into lr.warmup */
	assert_true(original->train.warmup_lr == 0.01);             /* kept from demo */
	assert_int_equal(original->train.augment_pad, 2);           /* demo's */
	assert_true(original->train.lr_step_fractions);
	assert_int_equal(study_test_images(study, 0), 500);
	study_free(study);
	free(study);
}

static char *described(const struct spec *spec)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	assert_non_null(out);
	spec_describe(spec, out, "");
	fclose(out);
	return text;
}

static void test_study_variant_spec_reads_back_as_the_variant(void **unused)
{
	(void)unused;
	static const char *const studies[] = {"specs/studies/table1-fmnist.yaml",
					      "tests/studies/tiny.yaml"};
	struct study *study = calloc(1, sizeof *study);
	assert_non_null(study);
	for (int s = 0; s < 2; s++) {
		struct diag d = {{0}};
		assert_int_equal(study_load(study, studies[s], "specs", &d), 0);
		for (int v = 0; v < study->variant_count; v++) {
			struct strbuf text = {0};
			study_variant_text(study, v, &text);
			assert_false(text.failed);
			struct spec spec;
			if (spec_parse(&spec, "written.yaml", text.text, text.length, &d) != 0)
				fail_msg("%s\n%s", d.text, text.text);
			char *want = described(&study->variants[v].spec), *got = described(&spec);
			assert_string_equal(got, want);
			free(want);
			free(got);
			strbuf_free(&text);
		}
		study_free(study);
	}
	free(study);
}

static void test_study_errors_name_their_place(void **unused)
{
	(void)unused;
	/* an override's mistake: at its place in the study */
	expect_error("name: x\nseeds: [1]\nvariants:\n  - {name: a, spec: demo, set: {net: {depht: 20}}}\n",
		     "@:4:39: unknown key 'depht' in 'net'; did you mean 'depth'?");
	expect_error("name: x\nseeds: [1]\nset: {net: {depth: 21}}\nvariants: [{name: a, spec: demo}]\n",
		     "@:3:20: 'depth' 21 is not of the form 6n+2 for basic units in 3 stages; the "
		     "nearest valid depths are 20 and 26");
	expect_error("name: x\nseeds: [1]\nset: {train: {batch: 100000}}\nvariants: [{name: a, spec: demo}]\n",
		     "@:3:22: 'batch' is 100000, out of range; it must be from 1 to 4096");
	/* a value the override makes wrong is reported where the spec wrote it */
	expect_error("name: x\nseeds: [1]\nset: {data: {set: synthetic, train_images: 10}}\n"
		     "variants: [{name: a, spec: demo}]\n",
		     "specs/demo.yaml:13:10: 'batch' 64 is larger than the synthetic set's 10 training "
		     "images; use a batch of at most 10 or more 'train_images'");
	/* the study's own keys */
	expect_error("name: x\nseedz: [1]\n", "@:2:1: unknown key 'seedz' in the study; did you mean 'seeds'?");
	expect_error("name: x\nvariants: [{name: a, spec: demo}]\n",
		     "@:1:1: the study is missing required key 'seeds'");
	expect_error("name: x\nseeds: [1, 1]\nvariants: [{name: a, spec: demo}]\n",
		     "@:2:12: seed 1 is listed twice; give each seed once");
	expect_error("name: x\nseeds: [1]\nvariants: []\n",
		     "@:3:11: 'variants' must be a list of variants, such as - {name: a-original, spec: "
		     "paper/t2-a-original-110}");
	expect_error("name: x\nseeds: [1]\nvariants: [{name: a, spec: demo}, {name: a, spec: demo}]\n",
		     "@:3:42: variant 'a' is listed twice; give each variant its own name");
	expect_error("name: x\nseeds: [1]\nvariants: [{name: A_b, spec: demo}]\n",
		     "@:3:19: 'name' must be 1 to 48 characters of a-z, 0-9 and '-', not starting with "
		     "'-'; try 'a-b'");
	expect_error("name: x\nseeds: [1]\nvariants: [{name: a}]\n",
		     "@:3:12: variant 'a' names no 'spec', and the study has no 'base'; give one of "
		     "them, such as spec: paper/t2-a-original-110");
	expect_error("name: x\nseeds: [1]\nvariants: [{name: a, spec: ../demo}]\n",
		     "@:3:28: 'spec' must name a spec under specs/ without '.yaml', in a-z, 0-9, '-' "
		     "and '/', such as paper/t2-a-original-110");
	expect_error("name: x\nseeds: [1]\nvariants: [{name: a, spec: paper/nope}]\n",
		     "@:3:28: no spec 'paper/nope' (specs/paper/nope.yaml does not exist); name a spec "
		     "of specs/, such as paper/t2-a-original-110");
	expect_error("name: x\nseeds: [1]\nvariants: [{name: a, spec: demo, set: {name: q}}]\n",
		     "@:3:46: 'set' cannot change 'name': a variant's spec is named after the variant; "
		     "give the variant a 'name' instead");
	expect_error("name: x\nseeds: [1]\nvariants: [{name: a, spec: demo, paper: \"6|1\"}]\n",
		     "@:3:41: 'paper' must be one line of text without control characters or '|'");
	expect_error("name: x\nseeds: [1]\ntest_limit: 0\nvariants: [{name: a, spec: demo}]\n",
		     "@:3:13: 'test_limit' is 0, out of range; it must be from 1 to 1000000000");
}

/* tests/studies/tiny.yaml's report from the runs in results: study_report's
 * status, d its message. */
static int report_tiny(const char *results, struct diag *d)
{
	struct study *study = calloc(1, sizeof *study);
	assert_non_null(study);
	assert_int_equal(study_load(study, "tests/studies/tiny.yaml", "specs", d), 0);
	int status = study_report(study, results, d);
	study_free(study);
	free(study);
	return status;
}

/* The report.md the study at study_path writes from the runs in results. */
static const char *report_text(const char *study_path, const char *results)
{
	struct study *study = calloc(1, sizeof *study);
	assert_non_null(study);
	struct diag d = {{0}};
	if (study_load(study, study_path, "specs", &d) != 0 || study_report(study, results, &d) != 0)
		fail_msg("%s", d.text);
	study_free(study);
	free(study);
	char path[256];
	snprintf(path, sizeof path, "%s/report.md", results);
	return read_text(path);
}

/* report_tiny's report.md, written from the runs in results. */
static const char *tiny_report_text(const char *results)
{
	struct diag d = {{0}};
	if (report_tiny(results, &d) != 0)
		fail_msg("%s", d.text);
	char path[256];
	snprintf(path, sizeof path, "%s/report.md", results);
	return read_text(path);
}

/* Two variants x two seeds, with known final errors; one run unfinished,
 * then diverged. */
static void test_study_report_summarises_the_seeds(void **unused)
{
	(void)unused;
	const char *results = "build/tests/scratch-report";
	mkdir(results, 0777);
	static const char header[] = "iteration,lr,train_loss,train_error,test_loss,test_error,seconds,"
				     "images_per_second\n";
	/* a log's test error is a count of the 500 test images: 0.124 is 62 */
	static const char *const runs[][2] = {
		/* a training row (--log-every) between evaluations: no test columns */
		{"original-seed1", "10,0.1,2.4,0.8,,,4.0,100\n25,0.1,2.0,0.7,2.1,0.50,10.0,100\n"
				   "50,0.01,1.5,0.5,1.6,0.10,20.0,100\n"},
		{"original-seed2", "25,0.1,2.2,0.7,2.3,0.60,10.0,100\n50,0.01,1.7,0.5,1.8,0.20,40.0,100\n"},
		{"full-preact-seed1", "25,0.1,2.0,0.7,2.1,0.40,10.0,100\n50,0.01,1.5,0.5,1.6,0.124,30.0,100\n"},
		{"full-preact-seed2", "25,0.1,2.0,0.7,2.1,0.30,10.0,100\n"}, /* under way */
	};
	for (int i = 0; i < 4; i++) {
		char path[256], text[512];
		snprintf(path, sizeof path, "%s/%s.csv", results, runs[i][0]);
		snprintf(text, sizeof text, "%s%s", header, runs[i][1]);
		write_text(path, text);
		snprintf(path, sizeof path, "%s/%s.diverged", results, runs[i][0]);
		remove(path);
		snprintf(path, sizeof path, "%s/%s.done", results, runs[i][0]);
		remove(path);
		if (i < 3)
			write_text(path, "finished\n");
	}
	struct diag d = {{0}};
	assert_int_equal(report_tiny(results, &d), 0);
	char path[256];
	snprintf(path, sizeof path, "%s/report.md", results);
	const char *report = read_text(path);
	const char *needles[] = {
		"2 variants x 2 seeds, 3 of 4 runs finished, 1 under way or stopped.",
		"Budget: Fashion-MNIST, the first 2000 training images, evaluated on the first 500 "
		"test images; 50 iterations at batch 16 (0.4 epochs of 2000 images), evaluated every "
		"25; seeds 1, 2.",
		"| original | basic original, depth 8, identity shortcut | 15.00 | 15.00 +- 7.07 | -48.53 to 78.53 | "
		"10.00, 20.00 | 6.61 | 30 s |",
		"| full-preact | basic full-preact, depth 8, identity shortcut | 12.40 | 12.40 | - | 12.40 "
		"| 6.37 | 30 s |",
		/* one finished seed cannot be tested against two */
		"| full-preact | -2.60 | - | - | - | cannot tell: a test needs two finished seeds of each, with some "
		"spread |",
		"- Command: `make study STUDY=tests/studies/tiny.yaml RESULTS=",
		"| original | 20.0 | 40.0 |\n| full-preact | 30.0 | - |\n",
		/* two runs of one variant, 20 and 40 s: the machine was busy */
		"Note: the runs of one variant do the same work, yet `original`'s took up to 2.0 times as long as each "
		"other",
	};
	for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
		if (!strstr(report, needles[i]))
			fail_msg("report.md lacks: %s\n%s", needles[i], report);
	snprintf(path, sizeof path, "%s/plot/errors.dat", results);
	assert_non_null(strstr(read_text(path), "0 original 15 10 20 10 20\n1 full-preact 12.4 12.4 12.4 12.4\n"));
	/* the curves: the mean over the seeds with a row at each iteration, with their
	 * range; an older log's evaluation row after training rows has a
	 * training loss over other iterations than the row before, and is
	 * left out of the training curve (original-seed1's at 25) */
	snprintf(path, sizeof path, "%s/plot/test-full-preact.dat", results);
	assert_non_null(strstr(read_text(path), "\n25 0.1 35 30 40 2\n50 0.01 12.4 12.4 12.4 1\n"));
	snprintf(path, sizeof path, "%s/plot/train-original.dat", results);
	assert_non_null(strstr(read_text(path), "\n50 0.01 1.6 1.5 1.7 2\n"));

	/* the unfinished run diverged: listed, not counted */
	snprintf(path, sizeof path, "%s/full-preact-seed2.diverged", results);
	write_text(path, "diverged\n");
	assert_int_equal(report_tiny(results, &d), 0);
	snprintf(path, sizeof path, "%s/report.md", results);
	report = read_text(path);
	assert_non_null(strstr(report, "2 variants x 2 seeds, 3 of 4 runs finished, 1 diverged."));
	assert_non_null(strstr(report, "| 12.40 | 12.40 | - | 12.40, diverged | 6.37 | 30 s |"));

	/* both seeds of both finished, one in a log of one meaning per column:
	 * the reading takes the paired test, adjusted by Holm's (for one
	 * comparison, as it is) */
	snprintf(path, sizeof path, "%s/full-preact-seed2.diverged", results);
	remove(path);
	snprintf(path, sizeof path, "%s/full-preact-seed2.csv", results);
	write_text(path, "iteration,lr,train_loss,train_error,val_loss,val_error,test_loss,test_error,seconds,"
			 "images_per_second\n10,0.1,2.2,0.75,,,,,4.0,100\n25,0.1,2.0,0.7,,,2.1,0.30,10.0,100\n"
			 "50,0.01,1.4,0.5,,,1.6,0.15,30.0,100\n");
	snprintf(path, sizeof path, "%s/full-preact-seed2.done", results);
	write_text(path, "finished\n");
	assert_int_equal(report_tiny(results, &d), 0);
	snprintf(path, sizeof path, "%s/report.md", results);
	report = read_text(path);
	/* paired differences 2.4 and -5: mean -1.3, standard error 3.7,
	 * t(1) = -1.3/3.7, p = 1 - 2 atan(1.3/3.7) / pi */
	const char *reading[] = {
		"| full-preact | -1.30 | -48.31 to +45.71 |",
		"| t = -0.35, df 1.0, p = 0.785 | within the noise of 2 and 2 seeds (paired, p = 0.785) |",
		"one comparison is made, so Holm's correction leaves its p as it is.",
	};
	for (int i = 0; i < 3; i++)
		if (!strstr(report, reading[i]))
			fail_msg("report.md lacks: %s\n%s", reading[i], report);
	snprintf(path, sizeof path, "%s/plot/train-full-preact.dat", results);
	assert_non_null(strstr(read_text(path), "\n10 0.1 2.2 2.2 2.2 1\n25 0.1 2 2 2 2\n50 0.01 1.45 1.4 1.5 2\n"));
	remove(path);
	snprintf(path, sizeof path, "%s/full-preact-seed2.done", results);
	remove(path);

	/* a row longer than the reader takes is an error at its place, not
	 * the log's silent end */
	char text[2048];
	int used = snprintf(text, sizeof text, "%s25,0.1,2.0,0.7,2.1,0.50,10.0,100", header);
	memset(text + used, '0', 1100);
	snprintf(text + used + 1100, sizeof text - (size_t)used - 1100, "\n50,0.01,1.5,0.5,1.6,0.10,20.0,100\n");
	snprintf(path, sizeof path, "%s/original-seed1.csv", results);
	write_text(path, text);
	assert_int_equal(report_tiny(results, &d), -1);
	char expected[512];
	snprintf(expected, sizeof expected,
		 "%s:2:1: a row longer than 1023 characters; a run's log holds short rows of numbers (remove "
		 "the run's files to run it again)", path);
	assert_string_equal(d.text, expected);
}

/* Two seeds whose errors differ by the same 2 points (7 and 9, 12 and 14%
 * of 500 images): the paired differences are equal, not equal up to
 * rounding, so no paired test can be made, and the report says so rather
 * than t = 1e15. */
/* count finished runs in results, each {name, final test error}: one
 * evaluation row at iteration 50. */
static void write_finished_runs(const char *results, const char *const runs[][2], size_t count)
{
	for (size_t i = 0; i < count; i++) {
		char path[256], text[512];
		snprintf(path, sizeof path, "%s/%s.csv", results, runs[i][0]);
		snprintf(text, sizeof text,
			 "iteration,lr,train_loss,train_error,test_loss,test_error,seconds,images_per_second\n"
			 "50,0.01,1.5,0.5,1.6,%s,20.0,100\n",
			 runs[i][1]);
		write_text(path, text);
		snprintf(path, sizeof path, "%s/%s.done", results, runs[i][0]);
		write_text(path, "finished\n");
	}
}

static void test_study_report_equal_differences_admit_no_test(void **unused)
{
	(void)unused;
	const char *results = "build/tests/scratch-report-equal";
	mkdir(results, 0777);
	static const char *const runs[][2] = {
		{"original-seed1", "0.07"},
		{"original-seed2", "0.12"},
		{"full-preact-seed1", "0.09"},
		{"full-preact-seed2", "0.14"},
	};
	write_finished_runs(results, runs, 4);
	const char *report = tiny_report_text(results);
	const char *needle = "| full-preact | +2.00 | - | t = 0.57, df 2.0, p = 0.629 | no spread | cannot tell: "
			     "every seed differs by the same +2.00 points, and no test can be made without some "
			     "spread |";
	if (!strstr(report, needle))
		fail_msg("report.md lacks: %s\n%s", needle, report);
	/* written by make study unless the tools say who */
	char expected[512];
	snprintf(expected, sizeof expected, "written by `make study STUDY=tests/studies/tiny.yaml RESULTS=%s`: 2 variants",
		 results);
	if (!strstr(report, expected))
		fail_msg("report.md lacks: %s\n%s", expected, report);
	/* a study sent to Slurm (its slurm/jobs) gives make study-submit as its command */
	char jobs[600];
	snprintf(jobs, sizeof jobs, "%s/slurm", results);
	mkdir(jobs, 0755); /* (there from an earlier run of the test) */
	strcat(jobs, "/jobs");
	write_text(jobs, "12\n");
	setenv("RESGEN_REPORT_WRITER", "Slurm's report job 12 of `make study-submit S=tiny`", 1);
	report = tiny_report_text(results);
	unsetenv("RESGEN_REPORT_WRITER");
	snprintf(expected, sizeof expected, "- Command: `make study-submit STUDY=tests/studies/tiny.yaml RESULTS=%s` "
		 "(it sends what is unfinished to Slurm, whose report job writes this report when the runs have ended; ",
		 results);
	if (!strstr(report, expected))
		fail_msg("report.md lacks: %s\n%s", expected, report);
	assert_non_null(strstr(report, "written by Slurm's report job 12 of `make study-submit S=tiny`: 2 variants"));
	assert_non_null(strstr(report, "- This report: written by Slurm's report job 12 of `make study-submit S=tiny`, "
				       "resgen "));
	/* and counts no comparison for Holm's correction */
	assert_non_null(strstr(report, "else Welch's; no comparison is made, so Holm's correction leaves its p as "
				   "it is."));
}

/* Variants that name another ('against') are compared with it, and only
 * they: two pairs of two seeds, Holm's correction over the two. A name
 * that is no earlier variant is refused where it is written. */
static void test_study_report_compares_each_variant_against_its_own(void **unused)
{
	(void)unused;
	const char *results = "build/tests/scratch-report-against", *spec = "build/tests/scratch-against.yaml";
	mkdir(results, 0777);
	write_text(spec, "name: pairs\nbase: demo\nseeds: [1, 2]\nvariants:\n  - {name: a}\n"
			 "  - {name: a-bf16, against: a, set: {net: {precision: bf16}}}\n"
			 "  - {name: b, set: {net: {ordering: original}}}\n"
			 "  - {name: b-bf16, against: b, set: {net: {ordering: original, precision: bf16}}}\n");
	static const char *const runs[][2] = {{"a-seed1", "0.10"}, {"a-seed2", "0.12"}, {"a-bf16-seed1", "0.11"},
					      {"a-bf16-seed2", "0.14"}, {"b-seed1", "0.30"}, {"b-seed2", "0.40"},
					      {"b-bf16-seed1", "0.31"}, {"b-bf16-seed2", "0.40"}};
	write_finished_runs(results, runs, sizeof runs / sizeof runs[0]);
	const char *report = report_text(spec, results);
	const char *wanted[] = {"Each variant that names another (`against`) against that one: ",
				"| variant | against | difference |", "| a-bf16 | a | +1.50 | -4.85 to +7.85 |",
				"| b-bf16 | b | +0.50 | -5.85 to +6.85 |", "as 2 comparisons are made"};
	for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
		if (!strstr(report, wanted[i]))
			fail_msg("report.md lacks: %s\n%s", wanted[i], report);
	assert_null(strstr(report, "| b | a |"));
	expect_error("name: x\nseeds: [1]\nvariants: [{name: a, spec: demo}, {name: b, spec: demo, against: c}]\n",
		     "@:3:66: 'against' names 'c', which is no variant listed before 'b'; name one of those, which "
		     "this one is compared with");
}

/* The plan of the study text, which must hold each of count lines; the
 * text from its first reuse line on, for a test to check. */
static char *expect_plan(const char *text, const char *const *lines, size_t count)
{
	write_text(scratch, text);
	struct study *study = calloc(1, sizeof *study);
	assert_non_null(study);
	struct diag d = {{0}};
	if (study_load(study, scratch, "specs", &d) != 0)
		fail_msg("%s", d.text);
	struct strbuf plan = {0};
	study_plan_text(study, &plan);
	for (size_t i = 0; i < count; i++)
		if (!strstr(plan.text, lines[i]))
			fail_msg("the plan lacks %s in:\n%s", lines[i], plan.text);
	const char *reuse = strstr(plan.text, "\nreuse ");
	char *reuses = strdup(reuse ? reuse : "");
	strbuf_free(&plan);
	study_free(study);
	free(study);
	return reuses;
}

/* Variants that differ in run-time train keys alone share the first's
 * binary, and the plan gives them those keys as settings; a variant whose
 * code differs (another ordering, or bn_sync) has its own; and a binary
 * whose network is its spec's reuses the spec's binary. */
static void test_study_plan_shares_binaries_across_recipes(void **unused)
{
	(void)unused;
	const char *lines[] = {
		"\nvariant paper 500 250 64 10000 paper\n",
		"\nvariant cosine 500 250 64 10000 paper lr.base=0.2 lr.schedule=cosine momentum=0.8\n",
		"\nvariant later 600 250 32 10000 paper lr.steps=[0.5,0.9] iterations=600 batch=32\n",
		"\nvariant original 500 250 64 10000 original\n",
		"\nvariant synced 500 250 64 10000 synced\n",
		/* paper's network is demo's: make links build/bin/demo for it */
		"\nreuse paper demo\n",
	};
	char *reuses = expect_plan("name: scratch-study\nbase: demo\nseeds: [1]\nvariants:\n"
				   "  - {name: paper}\n"
				   "  - {name: cosine, set: {train: {lr: {schedule: cosine, base: 0.2}, momentum: 0.8}}}\n"
				   "  - {name: later, set: {train: {lr: {steps: [0.5, 0.9]}, iterations: 600, batch: 32}}}\n"
				   "  - {name: original, set: {net: {ordering: original}, train: {weight_decay: 0.0005}}}\n"
				   "  - {name: synced, set: {train: {bn_sync: true}}}\n",
				   lines, sizeof lines / sizeof lines[0]);
	/* and only paper's: the others compute other networks, or share paper's */
	assert_string_equal(reuses, "\nreuse paper demo\n");
	free(reuses);
}

/* A variant that runs its spec's binary unchanged (a reuse line) is given
 * every run-time key the study or the variant sets, as settings against
 * that spec's values: the binary holds the spec's recipe, not the study's. */
static void test_study_plan_gives_a_reused_binary_the_study_recipe(void **unused)
{
	(void)unused;
	const char *lines[] = {
		"\nvariant a 3000 1000 64 10000 a iterations=3000 eval_every=1000\n",
		"\nvariant b 3000 1000 64 10000 a lr.steps=[2000,2500] iterations=3000 eval_every=1000\n",
		"\nreuse a demo\n",
	};
	free(expect_plan("name: scratch-study\nbase: demo\nseeds: [1]\n"
			 "set: {train: {iterations: 3000, eval_every: 1000}}\nvariants:\n"
			 "  - {name: a}\n"
			 "  - {name: b, set: {train: {lr: {steps: [2000, 2500]}}}}\n",
			 lines, sizeof lines / sizeof lines[0]));
}

/* 77.10. A variant's own cluster task: a resources line for each variant
 * that names one, '-' for what the submission gives; and what is wrong
 * with one, at its place. */
static void test_study_plan_gives_a_variant_its_own_task(void **unused)
{
	(void)unused;
	const char *lines[] = {
		"\nvariant short 500 250 64 10000 short\n",
		"\nresources deep 4 - 8:00:00\n",
		"\nresources wide - 2 -\n",
	};
	free(expect_plan("name: scratch-study\nbase: demo\nseeds: [1]\nvariants:\n"
				 "  - {name: short}\n"
				 "  - {name: deep, threads: 4, time: \"8:00:00\", set: {net: {depth: 26}}}\n"
				 "  - {name: wide, ranks: 2, set: {net: {depth: 32}}}\n",
				 lines, sizeof lines / sizeof lines[0]));
	expect_error("name: x\nseeds: [1]\nvariants: [{name: a, spec: demo, time: \"4h\"}]\n",
		     "@:3:40: 'time' is '4h'; give a Slurm time limit above zero as sbatch --time takes it: "
		     "minutes (90), hours:minutes:seconds (4:00:00) or days-hours (1-12)");
	expect_error("name: x\nseeds: [1]\nvariants: [{name: a, spec: demo, time: 0:00:00}]\n",
		     "@:3:40: 'time' is '0:00:00'; give a Slurm time limit above zero as sbatch --time takes "
		     "it: minutes (90), hours:minutes:seconds (4:00:00) or days-hours (1-12)");
	expect_error("name: x\nseeds: [1]\nvariants: [{name: a, spec: demo, threads: 0}]\n",
		     "@:3:43: 'threads' is 0, out of range; it must be from 1 to 1024");
}

/* 77.3. Variants that differ in recipe alone: the report's table says how,
 * in a column of its own, against the first variant's recipe. */
static void test_study_report_names_each_variants_recipe(void **unused)
{
	(void)unused;
	const char *results = "build/tests/scratch-recipes";
	mkdir(results, 0777);
	write_text(scratch, "name: recipes\nbase: demo\nseeds: [1]\nvariants:\n  - {name: paper}\n"
			    "  - {name: cosine, set: {train: {lr: {schedule: cosine}}}}\n");
	static const char log[] = "iteration,lr,train_loss,train_error,test_loss,test_error,seconds,images_per_second\n"
				  "500,0.001,1.5,0.5,1.6,0.2,20.0,100\n";
	const char *names[] = {"paper-seed1", "cosine-seed1"};
	for (int i = 0; i < 2; i++) {
		char path[256];
		snprintf(path, sizeof path, "%s/%s.csv", results, names[i]);
		write_text(path, log);
		snprintf(path, sizeof path, "%s/%s.done", results, names[i]);
		write_text(path, "");
	}
	const char *report = report_text(scratch, results);
	assert_non_null(strstr(report, "| variant | network | recipe, where it differs from the first variant's | median |"));
	assert_non_null(strstr(report, "| paper | basic full-preact, depth 20, identity shortcut | the first | 20.00 |"));
	assert_non_null(strstr(report, "| cosine | basic full-preact, depth 20, identity shortcut | lr.schedule=cosine | "
				       "20.00 |"));
	/* tiny's variants share a recipe: test_study_report_summarises_the_seeds
	 * finds its rows without the column */
}

/* Student's t against its tables, and the tests against p-values found by
 * integrating the t density numerically (numpy, 4 million points). */
static void test_statistics_match_known_values(void **unused)
{
	(void)unused;
	assert_true(fabs(student_quantile_975(1) - 12.7062) < 1e-4);
	assert_true(fabs(student_quantile_975(2) - 4.3027) < 1e-4);
	assert_true(fabs(student_quantile_975(10) - 2.2281) < 1e-4);
	assert_true(fabs(student_cdf(2.0, 3) - 0.930337) < 1e-6);
	const double a[] = {15.57, 16.16, 15.25}, b[] = {14.22, 13.89, 14.55};
	const long a_counts[] = {1557, 1616, 1525}, b_counts[] = {1422, 1389, 1455}; /* of 10000 images */
	struct comparison w = welch(a, 3, b, 3), p = paired(a_counts, b_counts, 3, 10000), m = mean_interval(a, 3);
	assert_true(w.valid && p.valid && m.valid);
	assert_true(fabs(w.difference - 1.44) < 1e-12 && fabs(w.df - 3.62083) < 1e-5);
	assert_true(fabs(w.p - 0.0146189) < 1e-6);
	assert_true(fabs(p.p - 0.0871557) < 1e-6);
	assert_true(fabs(m.low - 14.5133) < 1e-4 && fabs(m.high - 16.8067) < 1e-4);
	/* Holm's adjustment, as R's p.adjust(p, "holm") gives it */
	const double raw[] = {0.01, 0.04, 0.03, 0.005}, holm_r[] = {0.03, 0.06, 0.06, 0.02};
	double adjusted[4];
	holm(raw, 4, adjusted);
	for (int i = 0; i < 4; i++)
		assert_true(fabs(adjusted[i] - holm_r[i]) < 1e-15);
	/* no spread, or one seed: no test */
	const double same[] = {1, 1};
	assert_false(welch(same, 2, same, 2).valid);
	assert_false(mean_interval(a, 1).valid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_study_every_shipped_study_is_valid),
		cmocka_unit_test(test_statistics_match_known_values),
		cmocka_unit_test(test_study_report_names_each_variants_recipe),
		cmocka_unit_test(test_study_plan_gives_a_variant_its_own_task),
		cmocka_unit_test(test_study_plan_shares_binaries_across_recipes),
		cmocka_unit_test(test_study_plan_gives_a_reused_binary_the_study_recipe),
		cmocka_unit_test(test_study_overrides_land_in_order),
		cmocka_unit_test(test_study_variant_spec_reads_back_as_the_variant),
		cmocka_unit_test(test_study_errors_name_their_place),
		cmocka_unit_test(test_study_report_summarises_the_seeds),
		cmocka_unit_test(test_study_report_equal_differences_admit_no_test),
		cmocka_unit_test(test_study_report_compares_each_variant_against_its_own),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
