/* Hostile and careless input, third round: how a binary is started, make
 * variables that reach a shell, plots and exports that would write over
 * their inputs, figures reported on outputs that are not numbers, the
 * PyTorch tool's readers, and the environment variables the binaries
 * read. Each case failed on the code before its fix. */
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
	return command_setup("hostile-round3");
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

/* make as a user runs it; the test's own make settings stay out. */
static int make(const char *arguments, char *err, size_t err_size)
{
	char command[4096];
	snprintf(command, sizeof command, "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s %s", arguments);
	return run(command, NULL, 0, err, err_size);
}

/* One line on stderr, exactly expected. */
static void expect_line(const char *err, const char *expected)
{
	if (strcmp(err, expected) != 0)
		fail_msg("expected the line\n%sgot\n%s", expected, err);
}

/* Every line of text is printable: no control byte but the newlines. */
static void expect_printable(const char *text)
{
	for (const unsigned char *at = (const unsigned char *)text; *at; at++)
		if ((*at < 0x20 && *at != '\n') || *at == 0x7f)
			fail_msg("byte 0x%02x at %td of:\n%s", *at, (const char *)at - text, text);
}

/* ---- 1. the binary runs as itself, however it is started -------------------- */

static const char loader[] = "/lib64/ld-linux-x86-64.so.2";

/* Through the dynamic loader the binary trains, and its first argument is
 * never taken for a program; the short spin is in force (the machine line
 * reads it back from the libgomp the binary runs on), and libgomp, which
 * prints what it read of the environment (OMP_DISPLAY_ENV), read the
 * user's: no GOMP_SPINCOUNT. */
static void test_binary_runs_as_itself_through_the_loader(void **unused)
{
	(void)unused;
	if (!exists(loader))
		skip();
	char prefix[600], out[16384], err[16384], pwned[400], options[1024];
	snprintf(prefix, sizeof prefix, "env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY OMP_DISPLAY_ENV=verbose %s", loader);
	assert_int_equal(binary(prefix, "tiny-f32", "train --synthetic --iterations 2 --batch 8 --threads 2", out,
				sizeof out, err, sizeof err),
			 0);
	expect_in(out, "; threads wait: spin 1000, then sleep; ");
	expect_in(err, "OPENMP DISPLAY ENVIRONMENT BEGIN");
	assert_null(strstr(err, "GOMP_SPINCOUNT = '1000'"));
	/* the program's first argument is a command to it, not a program */
	snprintf(pwned, sizeof pwned, "%s/PWNED", scratch);
	snprintf(options, sizeof options, "/usr/bin/touch %s", pwned);
	assert_int_equal(binary(loader, "tiny-f32", options, NULL, 0, err, sizeof err), 2);
	assert_false(exists(pwned));
	expect_in(err, "tiny: /usr/bin/touch is not a command (");
}

/* The process keeps its name (pgrep -x NAME finds it) and runs under
 * valgrind, which a restart would leave. */
static void test_binary_keeps_its_name_and_its_tool(void **unused)
{
	(void)unused;
	char command[4096], out[16384], err[16384];
	snprintf(command, sizeof command,
		 "{ env -u GOMP_SPINCOUNT %s/tests/bin/tiny-f32 train --synthetic --iterations 1000000 --batch 8 "
		 "> /dev/null & pid=$!; sleep 1; cat /proc/$pid/comm; kill -KILL $pid; wait $pid; true; }",
		 build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "tiny-f32\n");
	/* valgrind runs no sanitized binary */
	const char *sanitize = getenv("SANITIZE");
	if (system("valgrind --version > /dev/null 2>&1") != 0 || (sanitize && strcmp(sanitize, "1") == 0))
		skip();
	/* a command refused before any kernel runs. valgrind 3.19's processor
	 * has no AVX-512: where -march=native gave the build some, the binary
	 * refuses that processor, in its own name, from inside the tool */
	char expected[1024];
	snprintf(expected, sizeof expected,
		 "tiny: nosuch is not a command (train, evaluate, step, init, gradflow, explain, info); see "
		 "%s/tests/bin/tiny-f32 --help\n",
		 build);
	assert_int_equal(binary("env -u GOMP_SPINCOUNT valgrind -q --tool=none", "tiny-f32", "nosuch", out, sizeof out,
				err, sizeof err),
			 2);
	if (strncmp(err, "tiny-f32: this processor lacks avx512", 37) != 0)
		expect_line(err, expected);
}

/* ---- 2. make variables never reach a shell ----------------------------------- */

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

/* ---- 3 and 12. plots: never over their input, never unbounded ---------------- */

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

/* ---- 5, 6 and 7. figures only on numbers ------------------------------------- */

/* fashion-tiny's initial weights with the classifier's weights set to
 * value and, where variance is not 1, the stem BN's first running
 * variance set to it; written to path. */
static void write_weights(const char *path, double value, double variance)
{
	char options[1024], error[1024];
	snprintf(options, sizeof options, "init --save-weights %s", path);
	assert_int_equal(binary("", "fashion-tiny-f32", options, NULL, 0, NULL, 0), 0);
	struct tensor_file f;
	assert_int_equal(tensor_file_load(&f, path, error, sizeof error), 0);
	bool classifier = false, statistic = false;
	for (int i = 0; i < f.count; i++) {
		struct tensor_file_entry *e = &f.entries[i];
		if (strcmp(e->name, "head_fc_weight") == 0 || strcmp(e->name, "head_fc_bias") == 0) {
			for (long j = 0; j < e->count; j++)
				e->values[j] = value;
			classifier = true;
		}
		if (variance != 1 && strcmp(e->name, "stem_bn_running_var") == 0) {
			e->values[0] = variance;
			statistic = true;
		}
	}
	assert_true(classifier);
	assert_true(variance == 1 || statistic);
	assert_int_equal(tensor_file_save(&f, path, error, sizeof error), 0);
	tensor_file_free(&f);
}

/* A classifier of all-zero weights ties every class: no label is in its
 * top 5 (ties count against the label); every image is taken for class
 * 0, 8 of the first 100 test images' class. */
static void test_evaluate_counts_ties_against_the_label(void **unused)
{
	(void)unused;
	char weights[400], options[1024], out[8192];
	snprintf(weights, sizeof weights, "%s/zero.weights", scratch);
	write_weights(weights, 0, 1);
	snprintf(options, sizeof options, "evaluate --load-weights %s --train-limit 200 --test-limit 100", weights);
	assert_int_equal(binary("", "fashion-tiny-f32", options, out, sizeof out, NULL, 0), 0);
	expect_in(out, "\nerror 92.00% (92 of 100), top-5 error 100.00% (100), loss 2.302585093\n");
}

/* Weights whose outputs overflow stop evaluate as they stop train (exit
 * 3); a negative running variance is refused as it is loaded. */
static void test_evaluate_refuses_outputs_that_are_not_numbers(void **unused)
{
	(void)unused;
	char weights[400], options[1024], err[2048], expected[1024];
	snprintf(weights, sizeof weights, "%s/huge.weights", scratch);
	write_weights(weights, 3e38, 1);
	snprintf(options, sizeof options, "evaluate --load-weights %s --train-limit 200 --test-limit 100", weights);
	assert_int_equal(binary("", "fashion-tiny-f32", options, NULL, 0, err, sizeof err), 3);
	expect_in(err, "fashion-tiny: the loss on these weights is ");
	expect_in(err, ": the network's outputs are not finite numbers, so no error can be measured; were these "
		       "weights from a run that diverged?\n");

	write_weights(weights, 0.01, -1);
	assert_int_equal(binary("", "fashion-tiny-f32", options, NULL, 0, err, sizeof err), 2);
	snprintf(expected, sizeof expected,
		 "fashion-tiny: %s: tensor stem_bn_running_var value 0 is -1; a running variance is never negative\n",
		 weights);
	expect_line(err, expected);
}

/* step stops a recipe that diverges, as train does, and writes no dump. */
static void test_step_stops_when_training_diverges(void **unused)
{
	(void)unused;
	char dump[400], options[1024], err[2048];
	snprintf(dump, sizeof dump, "%s/diverged.dump", scratch);
	snprintf(options, sizeof options,
		 "step --dump %s --steps 30 --set lr.warmup.lr=10 --set lr.warmup.iterations=30 --set weight_decay=1",
		 dump);
	assert_int_equal(binary("", "tiny-f32", options, NULL, 0, err, sizeof err), 3);
	/* the loss or a running statistic first, as the build rounds */
	assert_memory_equal(err, "tiny: ", 6);
	expect_in(err, " became non-finite at step ");
	expect_in(err, "(lr 10); training diverged, try a smaller learning rate; no dump written\n");
	assert_false(exists(dump));
}

/* ---- 8. a forged checkpoint's recipe ----------------------------------------- */

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

/* ---- 4, 8, 10 and 11. the PyTorch tool --------------------------------------- */

/* fashion-tiny's initial weights, exported by its binary, into path. */
static void export_initial_weights(const char *path)
{
	char options[1024];
	snprintf(options, sizeof options, "init --save-weights %s", path);
	assert_int_equal(binary("", "fashion-tiny-f32", options, NULL, 0, NULL, 0), 0);
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

/* ---- 9. a study whose variants share one binary ------------------------------ */
/* (test_binaries.c: test_study_shares_one_binary_across_recipes, with a
 * variant for every run-time key) */

/* ---- 13, 14 and 17. the environment the binaries read ------------------------ */

/* The user's wait is shown printable: an escape or a newline in it can
 * neither drive the terminal nor forge a line. */
static void test_binary_shows_the_wait_printable(void **unused)
{
	(void)unused;
	char out[16384];
	assert_int_equal(binary("env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=\"$(printf '5\\033[2J\\ntest error: 0.00 (forged)')\"",
				"tiny-f64", "train --iterations 2", out, sizeof out, NULL, 0),
			 0);
	expect_in(out, "; threads wait: GOMP_SPINCOUNT=5\\x1b[2J\\x0atest error: 0.00 (forged); ");
	assert_null(strstr(out, "\ntest error: 0.00 (forged)"));
	expect_printable(out);
}

static void test_binary_refuses_thread_variables_it_cannot_use(void **unused)
{
	(void)unused;
	static const char *const cases[][3] = {
		{"RESGEN_TEAM=abc", "--threads 2",
		 "tiny: RESGEN_TEAM is 'abc'; it must be a whole number from 1 to the run's 2 threads, or unset (each "
		 "pass then runs on the free cores)\n"},
		{"RESGEN_TEAM=0", "--threads 2",
		 "tiny: RESGEN_TEAM is '0'; it must be a whole number from 1 to the run's 2 threads, or unset (each "
		 "pass then runs on the free cores)\n"},
		{"RESGEN_TEAM=-1", "--threads 2",
		 "tiny: RESGEN_TEAM is '-1'; it must be a whole number from 1 to the run's 2 threads, or unset (each "
		 "pass then runs on the free cores)\n"},
		{"RESGEN_TEAM=3", "--threads 2",
		 "tiny: RESGEN_TEAM is '3'; it must be a whole number from 1 to the run's 2 threads, or unset (each "
		 "pass then runs on the free cores)\n"},
		{"RESGEN_TEAM=73786976294838206464", "--threads 1",
		 "tiny: RESGEN_TEAM is '73786976294838206464'; it must be a whole number from 1 to the run's 1 thread, "
		 "or unset (each pass then runs on the free cores)\n"},
		{"OMP_NUM_THREADS=100000", "",
		 "tiny: OMP_NUM_THREADS is '100000'; it must be a whole number from 1 to 1024, or unset for every core "
		 "(--threads T sets the count too)\n"},
		{"OMP_NUM_THREADS=2000", "",
		 "tiny: OMP_NUM_THREADS is '2000'; it must be a whole number from 1 to 1024, or unset for every core "
		 "(--threads T sets the count too)\n"},
		{"OMP_NUM_THREADS=2,1", "",
		 "tiny: OMP_NUM_THREADS is '2,1'; it must be a whole number from 1 to 1024, or unset for every core "
		 "(--threads T sets the count too)\n"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char prefix[256], options[256], err[2048];
		snprintf(prefix, sizeof prefix, "env %s", cases[i][0]);
		snprintf(options, sizeof options, "train --iterations 2 %s", cases[i][1]);
		assert_int_equal(binary(prefix, "tiny-f64", options, NULL, 0, err, sizeof err), 2);
		expect_line(err, cases[i][2]);
	}
	/* --threads sets the count where OMP_NUM_THREADS cannot */
	assert_int_equal(binary("env OMP_NUM_THREADS=100000", "tiny-f64", "train --iterations 2 --threads 1", NULL, 0,
				NULL, 0),
			 0);
	/* a team fixed by RESGEN_TEAM is said to be, not blamed on others */
	char out[16384];
	assert_int_equal(binary("env RESGEN_TEAM=1", "tiny-f64", "train --iterations 2 --threads 2", out, sizeof out,
				NULL, 0),
			 0);
	expect_in(out, " passes ran on 1 of the 2 threads, as RESGEN_TEAM=1 fixed\n");
	assert_null(strstr(out, "other work"));
}

/* ---- 15 and 16. the notations of RESGEN_CHOICES and --set -------------------- */

static void test_binary_refuses_a_choice_given_twice(void **unused)
{
	(void)unused;
	char err[2048];
	assert_int_equal(binary("env RESGEN_CHOICES=winograd=on,winograd=off", "tiny-f64", "train --iterations 2", NULL,
				0, err, sizeof err),
			 2);
	expect_line(err, "tiny: RESGEN_CHOICES, character 13: 'winograd' is given twice; give each choice once\n");
}

static void test_set_reads_numbers_as_the_spec_does(void **unused)
{
	(void)unused;
	char out[16384], err[2048];
	assert_int_equal(binary("", "tiny-f64", "train --set iterations=010", NULL, 0, err, sizeof err), 2);
	expect_in(err, "tiny: --set iterations=010, column 18: 'iterations' must be an integer, not '010'; write it in "
		       "plain decimal, such as 110 (no quotes, leading zeros or hex)");
	/* a value in plain decimal past double's range is out of range, not
	 * misspelt; one within it is taken */
	assert_int_equal(binary("", "tiny-f64", "train --iterations 2 --set lr.base=1e999", NULL, 0, err, sizeof err), 2);
	expect_in(err, "tiny: --set lr.base=1e999, column 15: 'lr.base' is 1e999, out of range; it must be above 0 and "
		       "at most 10");
	assert_int_equal(binary("", "tiny-f64", "train --iterations 2 --set lr.base=1e-320", out, sizeof out, NULL, 0), 0);
	expect_in(out, "; --set lr.base=1e-320");
	/* and echoed as written in the spec's notation */
	assert_int_equal(binary("", "tiny-f64", "train --iterations 2 --set lr.base=10", out, sizeof out, NULL, 0), 0);
	expect_in(out, "; --set lr.base=10\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binary_runs_as_itself_through_the_loader),
		cmocka_unit_test(test_binary_keeps_its_name_and_its_tool),
		cmocka_unit_test(test_make_checks_the_bench_variables),
		cmocka_unit_test(test_plots_never_write_over_their_input),
		cmocka_unit_test(test_plot_confusion_refuses_a_matrix_larger_than_any_network),
		cmocka_unit_test(test_evaluate_counts_ties_against_the_label),
		cmocka_unit_test(test_evaluate_refuses_outputs_that_are_not_numbers),
		cmocka_unit_test(test_step_stops_when_training_diverges),
		cmocka_unit_test(test_resume_refuses_a_forged_recipe),
		cmocka_unit_test(test_torch_export_never_writes_over_its_inputs),
		cmocka_unit_test(test_torch_tool_reads_weights_as_the_binaries_do),
		cmocka_unit_test(test_torch_tool_checks_specs_as_resgen_does),
		cmocka_unit_test(test_binary_shows_the_wait_printable),
		cmocka_unit_test(test_binary_refuses_thread_variables_it_cannot_use),
		cmocka_unit_test(test_binary_refuses_a_choice_given_twice),
		cmocka_unit_test(test_set_reads_numbers_as_the_spec_does),
	};
	command_only_some();
	return cmocka_run_group_tests_name("hostile input, third round", tests, setup, NULL);
}
