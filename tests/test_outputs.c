/* What a command writes, and over what: plots and exports that would
 * write over their inputs, the make variables that reach a shell or
 * gnuplot, the PyTorch tool's readers, a resume's recipe and the command
 * a stopped run gives to resume it with every output. Each case failed on
 * the code before its fix. */
#include <limits.h>
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
#include "tensor_file.h"

static int setup(void **unused)
{
	(void)unused;
	return command_setup("outputs");
}

/* make as a user runs it; the test's own make settings stay out. */
static int make(const char *arguments, char *err, size_t err_size)
{
	char command[4096];
	snprintf(command, sizeof command, "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s %s", arguments);
	return run(command, NULL, 0, err, err_size);
}

/* fashion-tiny's initial weights, exported by its binary, into path. */
static void export_initial_weights(const char *path)
{
	char options[1024];
	snprintf(options, sizeof options, "init --save-weights %s", path);
	assert_int_equal(binary("", "fashion-tiny-f32", options, NULL, 0, NULL, 0), 0);
}

static void test_make_checks_the_bench_variables(void **unused)
{
	(void)unused;
	static const char *const cases[][2] = {
		{"\"BENCH_PYTORCH_LAYOUT=x; touch PWNED; exit 0; :\"",
		 "BENCH_PYTORCH_LAYOUT='x; touch PWNED; exit 0; :' is not a layout resgen's bench knows: use "
		 "channels-last or nchw"},
		{"\"BENCH_ROUNDS=2; touch PWNED\"",
		 "BENCH_ROUNDS='2; touch PWNED' is not what resgen accepts: use whole numbers from 1 in plain decimal, "
		 "such as 2"},
		{"\"BENCH_LOOPS=1 3;touch PWNED\"",
		 "BENCH_LOOPS='1 3;touch PWNED' is not what resgen accepts: use whole numbers from 0 in plain "
		 "decimal, such as 2"},
		{"\"BENCH_STEPS_demo=4;touch PWNED\"",
		 "BENCH_STEPS_demo='4;touch PWNED' is not what resgen accepts: use whole numbers from 1 in plain "
		 "decimal, such as 2"},
		{"\"FUZZ_SECONDS=0\"",
		 "FUZZ_SECONDS='0' is not what resgen accepts: use whole numbers from 1 in plain decimal, such as 2"},
		{"\"RESGEN_VERSION=x';touch PWNED;'\"",
		 "RESGEN_VERSION='x';touch PWNED;'' is not a path resgen accepts: use letters, digits, '.', '_', '-' "
		 "and '/', not starting with '-', such as build/demo.csv"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char arguments[1024], err[2048], expected[1024];
		remove("PWNED");
		snprintf(arguments, sizeof arguments, "bench BENCH=demo %s", cases[i][0]);
		int status = make(arguments, err, sizeof err);
		bool pwned = exists("PWNED");
		remove("PWNED");
		assert_false(pwned);
		assert_int_equal(status, 2);
		snprintf(expected, sizeof expected, ": *** %s.  Stop.\n", cases[i][1]);
		expect_in(err, expected);
	}
}

static void test_plots_never_write_over_their_input(void **unused)
{
	(void)unused;
	/* an input named as one of its pictures: the make goal and its
	 * variable, the input's name and its text */
	static const char *const cases[][4] = {
		{"plot-confusion", "CONFUSION", "m.svg", "true\\predicted,0,1\n0,5,1\n1,2,7\n"},
		{"plot", "LOG", "run.png",
		 "iteration,lr,train_loss,train_error,val_loss,val_error,test_loss,test_error,seconds,images_per_second\n5,0.1,2,0.5,,,2,0.5,1,100\n"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char input[400], copy[400], arguments[1024], err[2048], expected[1024];
		snprintf(input, sizeof input, "%s/%s", scratch, cases[i][2]);
		snprintf(copy, sizeof copy, "%s/copy-%zu", scratch, i);
		write_text(input, cases[i][3]);
		write_text(copy, cases[i][3]);
		snprintf(arguments, sizeof arguments, "%s %s=%s", cases[i][0], cases[i][1], input);
		assert_int_equal(make(arguments, err, sizeof err), 2);
		snprintf(expected, sizeof expected,
			 "%1$s: the picture would be written over it, as %1$s; give the input a name ending in .csv\n",
			 input);
		assert_memory_equal(err, expected, strlen(expected));
		assert_true(same_file(input, copy));
	}
}

static void test_plot_confusion_refuses_a_matrix_larger_than_any_network(void **unused)
{
	(void)unused;
	char matrix[400], arguments[1024], err[2048], expected[1024];
	snprintf(matrix, sizeof matrix, "%s/big.csv", scratch);
	FILE *file = fopen(matrix, "w");
	assert_non_null(file);
	fputs("true\\predicted", file);
	for (int j = 0; j < 1200; j++)
		fprintf(file, ",%d", j);
	fputc('\n', file);
	for (int i = 0; i < 1200; i++) {
		fprintf(file, "%d", i);
		for (int j = 0; j < 1200; j++)
			fputs(",0", file);
		fputc('\n', file);
	}
	assert_int_equal(fclose(file), 0);
	snprintf(arguments, sizeof arguments, "plot-confusion CONFUSION=%s", matrix);
	assert_int_equal(make(arguments, err, sizeof err), 2);
	snprintf(expected, sizeof expected,
		 "%s: larger than a confusion matrix of 1000 classes, the most a network has (1001 rows of 1001 "
		 "fields, 16 MB)\n",
		 matrix);
	assert_memory_equal(err, expected, strlen(expected));
	char picture[400];
	snprintf(picture, sizeof picture, "%s/big.svg", scratch);
	assert_false(exists(picture));
}

/* export refuses an output that is one of its inputs or the other output,
 * compared as files (a link counts), and leaves every file as it was. */
static void test_torch_export_never_writes_over_its_inputs(void **unused)
{
	(void)unused;
	char w[400], copy[400], spec[400], pt[400], link[400], arguments[2048], err[2048], expected[2048];
	snprintf(w, sizeof w, "%s/export.weights", scratch);
	snprintf(copy, sizeof copy, "%s/export-copy.weights", scratch);
	snprintf(spec, sizeof spec, "%s/fashion-tiny.yaml", scratch);
	snprintf(pt, sizeof pt, "%s/o.pt", scratch);
	snprintf(link, sizeof link, "%s/link.pt", scratch);
	export_initial_weights(w);
	export_initial_weights(copy);
	snprintf(arguments, sizeof arguments, "cp tests/specs/fashion-tiny.yaml %s && ln -sf export.weights %s", spec,
		 link);
	assert_int_equal(system(arguments), 0);
	static const struct {
		const char *arguments; /* %1$s spec, %2$s weights, %3$s o.pt, %4$s a link to the weights */
		const char *message;
	} cases[] = {
		{"export %1$s %2$s %2$s", "%2$s: OUT and the weights name one file"},
		{"export %1$s %2$s %1$s", "%1$s: OUT and the spec name one file"},
		{"export %1$s %2$s %3$s --onnx %3$s", "%3$s: --onnx and OUT name one file"},
		{"export %1$s %2$s %4$s", "%4$s: OUT and the weights name one file"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char message[1024];
		snprintf(arguments, sizeof arguments, cases[i].arguments, spec, w, pt, link);
		snprintf(message, sizeof message, cases[i].message, spec, w, pt, link);
		snprintf(expected, sizeof expected,
			 "resgen_torch: %s; writing one would destroy the other, so give another name\n", message);
		assert_int_equal(torch_tool(arguments, NULL, 0, err, sizeof err), 2);
		expect_line(err, expected);
		assert_true(same_file(w, copy));
		assert_true(same_file(spec, "tests/specs/fashion-tiny.yaml"));
		assert_false(exists(pt));
	}
	/* names apart: both written, through a temporary that is gone */
	char out[4096];
	snprintf(arguments, sizeof arguments, "export %s %s %s --onnx %s/o.onnx", spec, w, pt, scratch);
	if (torch_tool(arguments, out, sizeof out, err, sizeof err) != 0)
		fail_msg("export failed: %s", err);
	snprintf(expected, sizeof expected,
		 "wrote %s: the state dict of fashion-tiny (19714 parameters, float64) under \"state_dict\", without "
		 "normalisation or class names (the weights file holds none: written by init, or by a resgen before they "
		 "were stored)\n", pt);
	expect_in(out, expected);
	expect_in(out, "/o.onnx: the network in evaluation as ONNX in float64, checked; its metadata holds neither\n");
	snprintf(arguments, sizeof arguments, "{ ls -A %s | grep -c resgen_torch || true; }", scratch);
	assert_int_equal(run(arguments, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "0\n");
}

/* A weights file is checked as the binaries check it: a NaN, bytes after
 * the last tensor, a tensor given twice, a truncation, an absurd count;
 * a FIFO or a device is refused without waiting on it or reading it. */
static void test_torch_tool_reads_weights_as_the_binaries_do(void **unused)
{
	(void)unused;
	char w[400], bad[400], arguments[2048], err[4096], expected[2048], error[1024], command[2048];
	snprintf(w, sizeof w, "%s/read.weights", scratch);
	snprintf(bad, sizeof bad, "%s/bad.weights", scratch);
	export_initial_weights(w);
	struct tensor_file f;
	assert_int_equal(tensor_file_load(&f, w, error, sizeof error), 0);

	f.entries[1].values[3] = 0.0 / 0.0;
	assert_int_equal(tensor_file_save(&f, bad, error, sizeof error), 0);
	f.entries[1].values[3] = 0.5;
	snprintf(arguments, sizeof arguments, "evaluate tests/specs/fashion-tiny.yaml %s --test-limit 10", bad);
	assert_int_equal(torch_tool(arguments, NULL, 0, err, sizeof err), 2);
	snprintf(expected, sizeof expected,
		 "resgen_torch: %s: tensor %s value 3 is NaN; weights must be finite numbers\n", bad, f.entries[1].name);
	expect_line(err, expected);

	/* a tensor twice: the last entry renamed as the first */
	char *last_name = f.entries[f.count - 1].name;
	long last_count = f.entries[f.count - 1].count;
	f.entries[f.count - 1].name = f.entries[0].name;
	f.entries[f.count - 1].count = f.entries[0].count < last_count ? f.entries[0].count : last_count;
	assert_int_equal(tensor_file_save(&f, bad, error, sizeof error), 0);
	f.entries[f.count - 1].name = last_name;
	f.entries[f.count - 1].count = last_count;
	assert_int_equal(torch_tool(arguments, NULL, 0, err, sizeof err), 2);
	snprintf(expected, sizeof expected,
		 "resgen_torch: %s: tensor %s appears twice; a weights file names each tensor once\n", bad,
		 f.entries[0].name);
	expect_line(err, expected);
	tensor_file_free(&f);

	static const struct {
		const char *make; /* a shell command making bad (%1$s) from w (%2$s) */
		const char *message;
	} cases[] = {
		{"cp %2$s %1$s && printf xyz >> %1$s", "%1$s: 3 bytes after the last tensor; the file is damaged"},
		{"head -c 1000 %2$s > %1$s", "%1$s: truncated; the file ends inside a tensor"},
		/* one tensor whose value count is 2^63 */
		{"printf 'RESGENT1\\001\\000\\000\\000\\001\\000\\000\\000a\\000\\000\\000\\000\\000\\000\\000\\200' > %1$s",
		 "%1$s: truncated; the file ends inside a tensor"},
		{"rm -f %1$s && mkfifo %1$s",
		 "%1$s: cannot open: it is not a regular file (a FIFO, device or socket)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char message[1024];
		snprintf(command, sizeof command, cases[i].make, bad, w);
		assert_int_equal(system(command), 0);
		snprintf(message, sizeof message, cases[i].message, bad);
		snprintf(expected, sizeof expected, "resgen_torch: %s\n", message);
		assert_int_equal(torch_tool(arguments, NULL, 0, err, sizeof err), 2);
		expect_line(err, expected);
	}
	remove(bad);
	assert_int_equal(torch_tool("evaluate tests/specs/fashion-tiny.yaml /dev/zero", NULL, 0, err, sizeof err), 2);
	expect_line(err, "resgen_torch: /dev/zero: cannot open: it is not a regular file (a FIFO, device or socket)\n");
}

/* The tool builds only what resgen check accepts, with its message; a
 * name with escape bytes is never echoed raw. */
static void test_torch_tool_checks_specs_as_resgen_does(void **unused)
{
	(void)unused;
	char w[400], spec[400], arguments[2048], err[4096], command[2048], resgen_err[4096];
	snprintf(w, sizeof w, "%s/spec.weights", scratch);
	snprintf(spec, sizeof spec, "%s/hostile.yaml", scratch);
	export_initial_weights(w);
	static const char *const specs[] = {
		"name: deep\ndata: {set: fashion-mnist}\nnet: {unit: basic, ordering: full-preact, depth: 2000000}\n",
		"name: wide\ndata: {set: fashion-mnist}\nnet: {unit: basic, ordering: full-preact, depth: 8, "
		"widths: [8, 16, 100000]}\n",
		"name: \"a\\e[31mred\"\ndata: {set: fashion-mnist}\nnet: {unit: basic, ordering: full-preact, depth: 8}\n",
	};
	for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
		write_text(spec, specs[i]);
		snprintf(command, sizeof command, "%s/bin/resgen check %s", build, spec);
		assert_int_equal(run(command, NULL, 0, resgen_err, sizeof resgen_err), 2);
		snprintf(arguments, sizeof arguments, "export %s %s %s/never.pt", spec, w, scratch);
		assert_int_equal(torch_tool(arguments, NULL, 0, err, sizeof err), 2);
		char expected[4200];
		snprintf(expected, sizeof expected, "resgen_torch: %s", resgen_err);
		expect_line(err, expected);
		expect_printable(err);
	}
}

static void test_resume_refuses_a_forged_recipe(void **unused)
{
	(void)unused;
	static const char magic[8] = {'R', 'E', 'S', 'G', 'E', 'N', 'K', '1'};
	static const struct {
		double steps[2];
		int count, fractions;
	} forged[] = {{{5.0, 0}, 1, 1}, {{12, 6}, 2, 0}, {{0.5, 0.25}, 2, 1}, {{2.5, 0}, 1, 0}};
	for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
		char c[400], options[1024], error[1024], err[2048], expected[1024];
		snprintf(c, sizeof c, "%s/recipe-%zu.ckpt", scratch, i);
		snprintf(options, sizeof options, "train --iterations 4 --eval-every 2 --checkpoint-every 2 --checkpoint %s",
			 c);
		assert_int_equal(binary("", "tiny-f64", options, NULL, 0, NULL, 0), 0);
		struct tensor_file f;
		assert_int_equal(tensor_file_load_sealed(&f, c, magic, "checkpoint", error, sizeof error), 0);
		struct tensor_file_entry *recipe = (struct tensor_file_entry *)tensor_file_find(&f, "checkpoint/recipe");
		struct tensor_file_entry *progress = (struct tensor_file_entry *)tensor_file_find(&f, "checkpoint/progress");
		assert_non_null(recipe);
		assert_non_null(progress);
		progress->values[0] = 2; /* mid-run, so that it would go on */
		recipe->values[4] = forged[i].count;
		recipe->values[5] = forged[i].fractions;
		recipe->values[12] = forged[i].steps[0];
		recipe->values[13] = forged[i].steps[1];
		assert_int_equal(tensor_file_save_sealed(&f, c, magic, error, sizeof error), 0);
		tensor_file_free(&f);
		snprintf(options, sizeof options, "train --resume %s", c);
		snprintf(expected, sizeof expected,
			 "tiny: %s: its recipe (checkpoint/recipe) is out of range; the checkpoint is damaged\n", c);
		assert_int_equal(binary("", "tiny-f64", options, NULL, 0, err, sizeof err), 2);
		expect_line(err, expected);
	}
}

/* Issue 84, item 12: the stop's hint said "resume with --resume C", and
 * doing just that wrote no weights, no best weights and no log rows,
 * silently. The hint is the whole command, outputs included, and a
 * resume without them says what it will not write. */
static void test_resume_hint_keeps_every_output(void **unused)
{
	(void)unused;
	static char out[16384], err[8192];
	char command[4096], a[400], b[400];
	snprintf(a, sizeof a, "%s/hint", scratch);
	snprintf(command, sizeof command, "rm -rf %1$s && mkdir -p '%1$s/my run'", a);
	assert_int_equal(system(command), 0);
	/* the run never stopped, then the one stopped at 6 (SIGTERM = 15) */
	snprintf(command, sizeof command,
		 "(cd %1$s && %2$s/tests/bin/tiny-f32 train --synthetic --iterations 12 --eval-every 4 --log whole.csv "
		 "--save-weights whole.w --keep-best whole-best.w)",
		 a, realpath(build, b) ? b : build);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	snprintf(command, sizeof command,
		 "(cd %1$s && RESGEN_TEST_RAISE=15@8 %2$s/tests/bin/tiny-f32 train --synthetic --iterations 12 "
		 "--eval-every 4 --checkpoint 'my run/c.ckpt' --log log.csv --save-weights 'my run/w' --keep-best "
		 "best.w)",
		 a, b);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 4);
	char expected[2048];
	snprintf(expected, sizeof expected,
		 "tiny: stopped by SIGTERM after iteration 8; resume with: %s/tests/bin/tiny-f32 train --resume 'my "
		 "run/c.ckpt' --log log.csv --save-weights 'my run/w' --keep-best "
		 "best.w\n",
		 b);
	const char *hint = strstr(err, "tiny: stopped by");
	assert_non_null(hint);
	assert_string_equal(hint, expected);
	/* the hint as it is, run by the shell, ends where the run never stopped */
	snprintf(command, sizeof command, "(cd %s && %.*s)", a, (int)strlen(strstr(expected, "with: ") + 7),
		 strstr(expected, "with: ") + 6);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	assert_null(strstr(out, "note: this resume writes"));
	char x[600], y[600];
	snprintf(x, sizeof x, "%s/whole.w", a);
	snprintf(y, sizeof y, "%s/my run/w", a);
	assert_true(same_file(x, y));
	snprintf(x, sizeof x, "%s/whole-best.w", a);
	snprintf(y, sizeof y, "%s/best.w", a);
	assert_true(same_file(x, y));
	snprintf(x, sizeof x, "%s/whole.csv", a);
	snprintf(y, sizeof y, "%s/log.csv", a);
	assert_true(same_rows(x, y));
	/* a resume without its outputs says what it will not write */
	snprintf(command, sizeof command,
		 "(cd %1$s && { RESGEN_TEST_RAISE=15@8 %2$s/tests/bin/tiny-f32 train --synthetic --iterations 12 "
		 "--eval-every 4 --checkpoint again.ckpt > /dev/null 2>&1; %2$s/tests/bin/tiny-f32 train --resume "
		 "again.ckpt; })",
		 a, b);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "note: this resume writes no log rows (--log), no weights at the end (--save-weights), no best "
		       "evaluation's weights (--keep-best): a checkpoint keeps the run's settings, "
		       "not its outputs; give those the run had again to have them\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_make_checks_the_bench_variables),
		cmocka_unit_test(test_plots_never_write_over_their_input),
		cmocka_unit_test(test_plot_confusion_refuses_a_matrix_larger_than_any_network),
		cmocka_unit_test(test_torch_export_never_writes_over_its_inputs),
		cmocka_unit_test(test_torch_tool_reads_weights_as_the_binaries_do),
		cmocka_unit_test(test_torch_tool_checks_specs_as_resgen_does),
		cmocka_unit_test(test_resume_refuses_a_forged_recipe),
		cmocka_unit_test(test_resume_hint_keeps_every_output),
	};
	command_only_some();
	return cmocka_run_group_tests_name("what commands write, and over what", tests, setup, NULL);
}
