/* Hostile and careless input, second round: names that would run code
 * through make and gnuplot, outputs that name one file, a resume on other
 * data, checkpoints forged or resumed under another name, numbers in
 * notations the binaries do not take, and bytes that would drive a
 * terminal. Each case fails on the code before the fix. (Ranks given
 * different settings: test_ranks.c; a log row too long: test_study.c.) */
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
	return command_setup("hostile");
}

/* make with the given arguments, as a user runs it from the project's
 * folder; the test's own make settings stay out. */
static int make(const char *arguments, char *err, size_t err_size)
{
	char command[4096];
	snprintf(command, sizeof command, "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s %s", arguments);
	return run(command, NULL, 0, err, err_size);
}

/* make's one line for an error in the Makefile: "Makefile:N: *** MESSAGE.
 * Stop." */
static void expect_make_error(const char *err, const char *message)
{
	char expected[2048];
	snprintf(expected, sizeof expected, ": *** %s.  Stop.\n", message);
	assert_memory_equal(err, "Makefile:", 9);
	expect_in(err, expected);
	assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);
}

/* make help lists every target of the Makefiles, each as "make TARGET"
 * (all as plain "make"), from the Makefile's own "##" lines. */
static void test_make_help_lists_every_target(void **unused)
{
	(void)unused;
	char help[16384], targets[4096];
	assert_int_equal(run("env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s help", help, sizeof help, NULL, 0), 0);
	assert_int_equal(run("grep -hoE '^[a-z][a-z0-9-]*:' Makefile tests/tests.mk | tr -d : | sort -u | tr '\\n' ' '",
			     targets, sizeof targets, NULL, 0), 0);
	int count = 0;
	for (char *target = strtok(targets, " "); target; target = strtok(NULL, " "), count++) {
		char needle[128];
		if (strcmp(target, "all") == 0)
			snprintf(needle, sizeof needle, "\n  make   ");
		else
			snprintf(needle, sizeof needle, "\n  make %s", target);
		const char *at = strstr(help, needle);
		while (at && at[strlen(needle)] != ' ' && at[strlen(needle)] != '\n')
			at = strstr(at + 1, needle);
		if (!at)
			fail_msg("make help does not list %s:\n%s", target, help);
	}
	assert_true(count > 30);
}

/* Code in a log's name: a quote would have ended gnuplot's string and
 * system() run a shell. The name is refused before any recipe runs. */
static void test_make_plot_runs_no_code_from_a_log_name(void **unused)
{
	(void)unused;
	static const char log[] = "x';print system('touch PWNED');a='.csv";
	char err[2048];
	remove("PWNED");
	write_text(log, "iteration,lr,train_loss,train_error,val_loss,val_error,test_loss,test_error,seconds,images_per_second\n"
			"5,0.1,2,0.5,,,2,0.5,1,100\n");
	int status = make("plot LOG=\"x';print system('touch PWNED');a='.csv\"", err, sizeof err);
	bool pwned = exists("PWNED");
	remove("PWNED");
	remove(log);
	assert_false(pwned);
	assert_int_equal(status, 2);
	expect_make_error(err, "LOG='x';print system('touch PWNED');a='.csv' is not a path resgen accepts: use "
			       "letters, digits, '.', '_', '-' and '/', not starting with '-', such as build/demo.csv");
}

/* The plot scripts take paths as arguments; one that gnuplot would open
 * as a command's output ('<') is refused by the script itself. */
static void test_plot_scripts_take_no_command_as_a_file(void **unused)
{
	(void)unused;
	char command[4096], err[1024], pwned[400];
	snprintf(pwned, sizeof pwned, "%s/PWNED", scratch);
	static const char *const scripts[][2] = {
		{"tools/plot-log.gp", "'<touch %s' %s/out"},
		{"tools/plot-gradflow.gp", "%2$s/out '<touch %1$s'"},
		{"tools/plot-study.gp", "'<touch %s' 'a b' 1"},
	};
	for (int i = 0; i < 3; i++) {
		char arguments[1024];
		snprintf(arguments, sizeof arguments, scripts[i][1], pwned, scratch);
		snprintf(command, sizeof command, "gnuplot -c %s %s", scripts[i][0], arguments);
		assert_int_not_equal(run(command, NULL, 0, err, sizeof err), 0);
		expect_in(err, "not a");
		assert_false(exists(pwned));
	}
}

/* make variables that name a spec or a study never reach a shell, and
 * never lead outside the project. */
static void test_make_refuses_names_that_are_not_names(void **unused)
{
	(void)unused;
	char err[2048], escape_spec[512], escaped[512];
	remove("PWNED");
	assert_int_equal(make("study S='x;touch PWNED;'", err, sizeof err), 2);
	assert_false(exists("PWNED"));
	expect_make_error(err, "S='x;touch PWNED;' is not a name resgen accepts: use a-z, 0-9, '-' and '/', each "
			       "part starting with a letter or digit, such as paper/t2-a-original-110");
	assert_int_equal(make("diff A='demo;touch PWNED;' B=demo", err, sizeof err), 2);
	assert_false(exists("PWNED"));
	expect_make_error(err, "A='demo;touch PWNED;' is not a name resgen accepts: use a-z, 0-9, '-' and '/', "
			       "each part starting with a letter or digit, such as paper/t2-a-original-110");
	/* a spec outside specs/ whose emitted code would land outside
	 * generated/ */
	snprintf(escape_spec, sizeof escape_spec, "%s/escape.yaml", scratch);
	write_text(escape_spec, "name: escape\ndata: {set: synthetic, shape: [1, 8, 8], classes: 2}\n"
				"net: {unit: basic, ordering: full-preact, depth: 8, widths: [4, 8, 8]}\n");
	char arguments[1024];
	snprintf(arguments, sizeof arguments, "diff A=../%s/escape B=demo", scratch);
	assert_int_equal(make(arguments, err, sizeof err), 2);
	expect_in(err, "is not a name resgen accepts");
	snprintf(escaped, sizeof escaped, "%s/escape/net.c", scratch);
	assert_false(exists(escaped));
	/* and names that are names still work */
	assert_int_equal(make("-n diff A=paper/t1-original B=demo", err, sizeof err), 0);
	/* a binary with no spec: where one of its name lives, or what exists */
	char message[1024];
	snprintf(arguments, sizeof arguments, "BUILD=%s %s/bin/t2-a-original-110", build, build);
	assert_int_equal(make(arguments, err, sizeof err), 2);
	snprintf(message, sizeof message,
		 "no spec specs/t2-a-original-110.yaml; did you mean make %s/bin/paper/t2-a-original-110", build);
	expect_make_error(err, message);
	snprintf(arguments, sizeof arguments, "BUILD=%s %s/bin/no-such-network", build, build);
	assert_int_equal(make(arguments, err, sizeof err), 2);
	snprintf(message, sizeof message,
		 "no spec specs/no-such-network.yaml; the specs are demo original-110 original-164 preact-110 "
		 "preact-164 resnet-50 and 43 in specs/paper/ (make %s/bin/paper/NAME, or make paper)",
		 build);
	expect_make_error(err, message);
}

/* tiny-f64 (synthetic data) with options; its exit status. */
static int tiny(const char *options, char *err, size_t err_size)
{
	char command[4096];
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 %s", build, options);
	return run(command, NULL, 0, err, err_size);
}

/* Two outputs, or an output and an input, that name one file: refused
 * before any work, the file as it was. */
static void test_binary_refuses_outputs_that_name_one_file(void **unused)
{
	(void)unused;
	char options[2048], expected[2048], err[2048], c[400], copy[400], x[400], link[400];
	snprintf(c, sizeof c, "%s/run.ckpt", scratch);
	snprintf(copy, sizeof copy, "%s/run-copy.ckpt", scratch);
	snprintf(x, sizeof x, "%s/x", scratch);
	snprintf(link, sizeof link, "%s/link", scratch);
	snprintf(options, sizeof options, "train --iterations 4 --eval-every 2 --checkpoint %s", c);
	assert_int_equal(tiny(options, NULL, 0), 0);
	snprintf(options, sizeof options, "cp %s %s", c, copy);
	assert_int_equal(system(options), 0);
	static const struct {
		const char *options; /* %1$s the checkpoint, %2$s x, %3$s a link to x */
		const char *first, *second;
	} cases[] = {
		{"train --resume %1$s --log %1$s", "--log %1$s", "--resume %1$s"},
		{"train --checkpoint %2$s --log %2$s", "--checkpoint %2$s", "--log %2$s"},
		{"train --checkpoint %2$s --save-weights %2$s", "--save-weights %2$s", "--checkpoint %2$s"},
		{"train --checkpoint %2$s --log %3$s", "--checkpoint %2$s", "--log %3$s"},
		{"train --load-weights %1$s --save-weights %1$s", "--save-weights %1$s", "--load-weights %1$s"},
		{"step --dump %2$s --save-weights %2$s", "--save-weights %2$s", "--dump %2$s"},
	};
	assert_int_equal(symlink("x", link), 0); /* dangling: x is made by whichever writes first */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char first[512], second[512];
		snprintf(options, sizeof options, cases[i].options, c, x, link);
		snprintf(first, sizeof first, cases[i].first, c, x, link);
		snprintf(second, sizeof second, cases[i].second, c, x, link);
		snprintf(expected, sizeof expected,
			 "tiny: %s names the same file as %s; give each its own file; see %s/tests/bin/tiny-f64 --help\n",
			 first, second, build);
		int status = tiny(options, err, sizeof err);
		if (status != 2 || strcmp(err, expected) != 0)
			print_error("case %zu: %s\n", i, options);
		assert_int_equal(status, 2);
		assert_string_equal(err, expected);
		assert_true(same_file(c, copy));
		assert_false(exists(x));
	}
	/* the checkpoint resumed may be written again where it was */
	snprintf(options, sizeof options, "train --resume %1$s --checkpoint %1$s", c);
	assert_int_equal(tiny(options, NULL, 0), 0);
}

/* A folder of plain IDX files for fashion-tiny: count training and 16 test
 * images of 28x28, pixel values from seed, inverted if asked. */
static void write_idx_set(const char *dir, int count, bool inverted)
{
	mkdir(dir, 0777);
	static const char *const prefixes[] = {"train", "t10k"};
	for (int split = 0; split < 2; split++) {
		int n = split == 0 ? count : 16;
		char path[512];
		unsigned char header[16] = {0, 0, 8, 3, 0, 0, (unsigned char)(n >> 8), (unsigned char)n,
					    0, 0, 0, 28, 0, 0, 0, 28};
		snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", dir, prefixes[split]);
		FILE *file = fopen(path, "wb");
		assert_non_null(file);
		fwrite(header, 1, 16, file);
		for (long i = 0; i < (long)n * 784; i++) {
			unsigned char pixel = (unsigned char)((i * 7919 + split * 13) % 251);
			fputc(inverted ? 255 - pixel : pixel, file);
		}
		assert_int_equal(fclose(file), 0);
		unsigned char label_header[8] = {0, 0, 8, 1, 0, 0, (unsigned char)(n >> 8), (unsigned char)n};
		snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", dir, prefixes[split]);
		file = fopen(path, "wb");
		assert_non_null(file);
		fwrite(label_header, 1, 8, file);
		for (int i = 0; i < n; i++)
			fputc(i % 10, file);
		assert_int_equal(fclose(file), 0);
	}
}

/* A checkpoint records the data's fingerprint: a resume on a folder of the
 * same size holding other pixels is refused, naming both. */
static void test_binary_refuses_to_resume_on_other_data(void **unused)
{
	(void)unused;
	char plain[400], inverted[400], c[400], command[4096], err[2048], out[4096], expected[1024];
	snprintf(plain, sizeof plain, "%s/idx-plain", scratch);
	snprintf(inverted, sizeof inverted, "%s/idx-inverted", scratch);
	snprintf(c, sizeof c, "%s/data.ckpt", scratch);
	write_idx_set(plain, 64, false);
	write_idx_set(inverted, 64, true);
	snprintf(command, sizeof command,
		 "%s/tests/bin/fashion-tiny-f32 train --data %s --iterations 2 --eval-every 2 --checkpoint %s", build,
		 plain, c);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	snprintf(command, sizeof command, "%s/tests/bin/fashion-tiny-f32 train --data %s --resume %s", build, inverted,
		 c);
	assert_int_equal(run(command, NULL, 0, err, sizeof err), 2);
	snprintf(expected, sizeof expected, "fashion-tiny: %s: the run trained on other data (fingerprint ", c);
	assert_memory_equal(err, expected, strlen(expected));
	expect_in(err, ") than this command's (");
	expect_in(err, "); resume with the data the run started on (--data)\n");
	/* the same data resumes */
	snprintf(command, sizeof command, "%s/tests/bin/fashion-tiny-f32 train --data %s --resume %s", build, plain, c);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, "the run had already finished all 2 iterations\n");
}

/* The network's identity is what it computes: the spec's name is no part
 * of it (a study variant's binary resumes its base spec's checkpoint), nor
 * is the text of the templates (a comment edited in a kernel instance's);
 * a change of what it computes changes it. */
static void test_identity_is_what_the_network_computes(void **unused)
{
	(void)unused;
	char templates[512], command[4096];
	snprintf(templates, sizeof templates, "%s/templates", scratch);
	snprintf(command, sizeof command,
		 "rm -rf %1$s && cp -r templates %1$s && "
		 "sed -i 's|/\\* out = conv(in);|/* out = conv(in), a comment edited by the test;|' %1$s/ops/conv.c.tmpl && "
		 "grep -q 'a comment edited by the test' %1$s/ops/conv.c.tmpl",
		 templates);
	assert_int_equal(system(command), 0);
	static const struct {
		const char *name;
		int depth;
		bool edited;
	} variants[] = {{"renamed", 20, false}, {"tiny", 20, false}, {"tiny", 20, true}, {"tiny", 29, false}};
	char identities[4][256];
	for (int i = 0; i < 4; i++) {
		char spec[512], text[256];
		snprintf(spec, sizeof spec, "%s/identity-%d.yaml", scratch, i);
		snprintf(command, sizeof command,
			 "sed -e 's/^name: tiny/name: %s/' -e 's/depth: 20/depth: %d/' tests/specs/tiny.yaml > %s && "
			 "%s/bin/resgen generate %s -o %s/identity-%d%s%s && grep 'identity = ' %s/identity-%d/net.c",
			 variants[i].name, variants[i].depth, spec, build, spec, scratch, i,
			 variants[i].edited ? " --templates " : "", variants[i].edited ? templates : "", scratch, i);
		assert_int_equal(run(command, text, sizeof text, NULL, 0), 0);
		snprintf(identities[i], sizeof identities[i], "%s", text);
	}
	assert_string_equal(identities[0], identities[1]);
	assert_string_equal(identities[1], identities[2]);
	assert_string_not_equal(identities[1], identities[3]);
	/* the edit reached the emitted code */
	snprintf(command, sizeof command, "grep -q 'a comment edited by the test' %s/identity-2/kernels.h", scratch);
	assert_int_equal(system(command), 0);
}

/* Numbers in one plain decimal notation, with a sane range. */
static void test_resgen_max_memory_takes_plain_decimals(void **unused)
{
	(void)unused;
	static const char *const values[] = {"0x10", "0x1p4", "1e-300", "0", "-1", "1e3", " 64", "64."};
	for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
		char command[1024], err[4096];
		snprintf(command, sizeof command, "%s/bin/resgen check specs/demo.yaml --max-memory '%s'", build,
			 values[i]);
		static const char expected[] = "resgen: --max-memory needs a number of GiB in plain decimal from "
					       "0.01 to 1000000, such as 64 or 0.5\n";
		assert_int_equal(run(command, NULL, 0, err, sizeof err), 2);
		assert_memory_equal(err, expected, strlen(expected)); /* then the usage */
	}
	char command[1024];
	snprintf(command, sizeof command, "%s/bin/resgen check specs/demo.yaml --max-memory 0.5", build);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
}

/* gradflow at initialisation only ran no training step: no time per step. */
static void test_gradflow_without_steps_prints_no_time(void **unused)
{
	(void)unused;
	char options[1024], out[4096];
	snprintf(options, sizeof options, "gradflow --csv %s/flow.csv", scratch);
	char command[2048];
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 %s", build, options);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_null(strstr(out, "-nan"));
	assert_null(strstr(out, "time:"));
}

/* A setting that contradicts the checkpoint is named as the user writes
 * it: "no --train-limit", not "--train-limit 0". */
static void test_resume_mismatch_names_options_as_written(void **unused)
{
	(void)unused;
	char c[400], options[1024], expected[1024], err[2048];
	snprintf(c, sizeof c, "%s/settings.ckpt", scratch);
	snprintf(options, sizeof options, "train --iterations 2 --eval-every 2 --checkpoint %s", c);
	assert_int_equal(tiny(options, NULL, 0), 0);
	static const char *const cases[][2] = {
		{"--train-limit 50", "no --train-limit, and this command gives --train-limit 50"},
		{"--synthetic", "no --synthetic, and this command gives --synthetic"},
		{"--seed 9", "--seed 1, and this command gives --seed 9"},
	};
	for (int i = 0; i < 3; i++) {
		snprintf(options, sizeof options, "train --resume %s %s", c, cases[i][0]);
		snprintf(expected, sizeof expected,
			 "tiny: %s: the run was started with %s; leave the option out to resume\n", c, cases[i][1]);
		assert_int_equal(tiny(options, err, sizeof err), 2);
		assert_string_equal(err, expected);
	}
}

/* What the binaries echo is printable: no escape sequence reaches the
 * terminal, no stray byte. */
static void test_binary_echoes_only_printable_text(void **unused)
{
	(void)unused;
	char command[1024], expected[1024];
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 train --$(printf '\\033[31m\\377')", build);
	snprintf(expected, sizeof expected,
		 "tiny: --\\x1b[31m\\xff is not an option; see %s/tests/bin/tiny-f64 --help\n", build);
	expect_failure(command, 2, expected);
}

/* --data on a network whose data are synthetic would be ignored: refused. */
static void test_binary_refuses_data_for_synthetic_networks(void **unused)
{
	(void)unused;
	char command[1024], expected[1024];
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 train --data %s", build, scratch);
	snprintf(expected, sizeof expected,
		 "tiny: --data is for a network trained on a data set; this one's data are synthetic (its spec's "
		 "data.set), so leave --data out; see %s/tests/bin/tiny-f64 --help\n",
		 build);
	expect_failure(command, 2, expected);
	snprintf(command, sizeof command, "%s/tests/bin/fashion-tiny-f32 train --synthetic --data %s", build, scratch);
	snprintf(expected, sizeof expected,
		 "fashion-tiny: --data and --synthetic contradict each other; give one of them; see "
		 "%s/tests/bin/fashion-tiny-f32 --help\n",
		 build);
	expect_failure(command, 2, expected);
}

/* A forged checkpoint (a valid seal over values out of range) whose
 * training time reads 1e300 seconds is refused like any damaged field. */
static void test_binary_refuses_a_forged_training_time(void **unused)
{
	(void)unused;
	char c[400], options[1024], expected[1024], err[2048];
	snprintf(c, sizeof c, "%s/forged.ckpt", scratch);
	snprintf(options, sizeof options, "train --iterations 4 --eval-every 2 --checkpoint-every 2 --checkpoint %s",
		 c);
	assert_int_equal(tiny(options, NULL, 0), 0);
	static const char magic[8] = {'R', 'E', 'S', 'G', 'E', 'N', 'K', '1'};
	struct tensor_file f = {0};
	char error[1024];
	assert_int_equal(tensor_file_load_sealed(&f, c, magic, "checkpoint", error, sizeof error), 0);
	struct tensor_file_entry *progress = (struct tensor_file_entry *)tensor_file_find(&f, "checkpoint/progress");
	assert_non_null(progress);
	progress->values[0] = 2; /* mid-run, so that it would go on */
	progress->values[5] = 1e300;
	assert_int_equal(tensor_file_save_sealed(&f, c, magic, error, sizeof error), 0);
	tensor_file_free(&f);
	snprintf(options, sizeof options, "train --resume %s", c);
	snprintf(expected, sizeof expected,
		 "tiny: %s: its position in the run is out of range; the checkpoint is damaged\n", c);
	assert_int_equal(tiny(options, err, sizeof err), 2);
	assert_string_equal(err, expected);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_make_help_lists_every_target),
		cmocka_unit_test(test_make_plot_runs_no_code_from_a_log_name),
		cmocka_unit_test(test_plot_scripts_take_no_command_as_a_file),
		cmocka_unit_test(test_make_refuses_names_that_are_not_names),
		cmocka_unit_test(test_binary_refuses_outputs_that_name_one_file),
		cmocka_unit_test(test_binary_refuses_to_resume_on_other_data),
		cmocka_unit_test(test_identity_is_what_the_network_computes),
		cmocka_unit_test(test_resgen_max_memory_takes_plain_decimals),
		cmocka_unit_test(test_gradflow_without_steps_prints_no_time),
		cmocka_unit_test(test_resume_mismatch_names_options_as_written),
		cmocka_unit_test(test_binary_echoes_only_printable_text),
		cmocka_unit_test(test_binary_refuses_data_for_synthetic_networks),
		cmocka_unit_test(test_binary_refuses_a_forged_training_time),
	};
	command_only_some();
	return cmocka_run_group_tests_name("hostile input", tests, setup, NULL);
}
