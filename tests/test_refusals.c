/* The refusals of the binaries, resgen and make: bad arguments and the
 * spellings of other tools, missing, broken and forged data files,
 * checkpoints and weights, options of another command, outputs that name
 * one file or would clobber one, a full disk, names that would run code
 * through make and gnuplot, numbers in notations the binaries do not
 * take, bytes that would drive a terminal, networks too big for memory and
 * processors without their instructions. Each is one line and a non-zero
 * status, and leaves every file as it was. (Ranks given different
 * settings: test_ranks.c; a log row too long: test_study.c.) */
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
#include <unistd.h>
#include <sys/wait.h>
#include <zlib.h>

#include <cmocka.h>

#include "command.h"
#include "tensor_file.h"

static int setup(void **unused)
{
	(void)unused;
	return command_setup("refusals");
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
		 "preact-164 resnet-18 resnet-34 resnet-50 and 43 in specs/paper/ (make %s/bin/paper/NAME, or make "
		 "paper)",
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

/* The options of PyTorch's and timm's training scripts get their spelling
 * here, in one line; an option no one uses gets the plain refusal. */
static void test_binary_points_pytorch_habits_to_their_spelling(void **unused)
{
	(void)unused;
	static const struct {
		const char *option, *here;
	} habits[] = {
		{"--lr 0.1", "--lr is not an option; the learning rate is --set lr.base=RATE"},
		{"--learning-rate 0.1", "--learning-rate is not an option; the learning rate is --set lr.base=RATE"},
		{"--sched cosine", "--sched is not an option; the schedule is --set lr.schedule=steps or cosine"},
		{"--wd 5e-4", "--wd is not an option; weight decay is --set weight_decay=VALUE"},
		{"--momentum 0.9", "--momentum is not an option; momentum is --set momentum=VALUE"},
		{"--batch-size 64", "--batch-size is not an option; the batch is --batch B"},
	};
	char command[4096], message[4096];
	for (size_t i = 0; i < sizeof habits / sizeof habits[0]; i++) {
		snprintf(command, sizeof command, "%s/bin/demo train %s", build, habits[i].option);
		snprintf(message, sizeof message, "demo: %s (see %s/bin/demo --help)\n", habits[i].here, build);
		expect_failure(command, 2, message);
	}
	snprintf(command, sizeof command, "%s/bin/demo train --lrate 0.1", build);
	snprintf(message, sizeof message, "demo: --lrate is not an option; see %s/bin/demo --help\n", build);
	expect_failure(command, 2, message);
}

static void test_binary_rejects_bad_arguments(void **unused)
{
	(void)unused;
	char command[4096], message[4096];
	snprintf(command, sizeof command, "%s/bin/demo train --batch zero", build);
	snprintf(message, sizeof message,
		 "demo: --batch needs a whole number from 1 to 4096; see %s/bin/demo --help\n", build);
	expect_failure(command, 2, message);
	snprintf(command, sizeof command, "%s/bin/demo train --iterashuns 5", build);
	snprintf(message, sizeof message, "demo: --iterashuns is not an option; see %s/bin/demo --help\n",
		 build);
	expect_failure(command, 2, message);
	snprintf(command, sizeof command, "%s/bin/demo fly", build);
	snprintf(message, sizeof message,
		 "demo: fly is not a command (train, evaluate, step, init, gradflow, explain, info); see %s/bin/demo --help\n",
		 build);
	expect_failure(command, 2, message);
}

static void write_gz(const char *path, const unsigned char *bytes, size_t length)
{
	gzFile file = gzopen(path, "wb");
	assert_non_null(file);
	assert_int_equal(gzwrite(file, bytes, (unsigned)length), (int)length);
	gzclose(file);
}

static void test_binary_rejects_missing_and_broken_idx_files(void **unused)
{
	(void)unused;
	char dir[400], path[500], command[4096], message[4096];
	snprintf(dir, sizeof dir, "%s/idx", scratch);
	mkdir(dir, 0777);

	snprintf(command, sizeof command, "%s/bin/demo train --data %s", build, dir);
	snprintf(message, sizeof message,
		 "demo: %s/train-images-idx3-ubyte: cannot open: no such file (nor "
		 "%s/train-images-idx3-ubyte.gz); the data folder should hold the four IDX files, "
		 "gzip-compressed or not (pass --data DIR)\n",
		 dir, dir);
	expect_failure(command, 2, message);

	/* A header announcing 100 images of 28x28, then only 1000 bytes; the
	 * labels file agrees on 100. */
	unsigned char truncated[16 + 1000] = {0, 0, 8, 3, 0, 0, 0, 100, 0, 0, 0, 28, 0, 0, 0, 28};
	unsigned char labels[8 + 100] = {0, 0, 8, 1, 0, 0, 0, 100};
	snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte.gz", dir);
	write_gz(path, labels, sizeof labels);
	snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
	write_gz(path, truncated, sizeof truncated);
	snprintf(message, sizeof message,
		 "demo: %s: truncated: expected 78400 bytes of data, found 1000; re-download or "
		 "reinstall the file\n",
		 path);
	expect_failure(command, 2, message);

	/* Wrong magic: a labels header where images belong. */
	unsigned char wrong[8] = {0, 0, 8, 1, 0, 0, 0, 100};
	write_gz(path, wrong, sizeof wrong);
	snprintf(message, sizeof message,
		 "demo: %s: not an IDX file of unsigned bytes with 3 dimensions (magic 00 00 08 01); "
		 "expected 00 00 08 03\n",
		 path);
	expect_failure(command, 2, message);

	/* A header announcing more than any image set is refused before
	 * anything is allocated: 10M images of 1000x1000 bytes. */
	unsigned char large[16] = {0, 0, 8, 3, 0, 0x98, 0x96, 0x80, 0, 0, 0x03, 0xe8, 0, 0, 0x03, 0xe8};
	write_gz(path, large, sizeof large);
	snprintf(message, sizeof message,
		 "demo: %s: the header announces 10000000000000 bytes of data, more than 4 GiB; the "
		 "file is not an image set this tool reads\n",
		 path);
	expect_failure(command, 2, message);

	/* An absurd count is refused before anything is allocated. */
	unsigned char huge[16] = {0, 0, 8, 3, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 28, 0, 0, 0, 28};
	write_gz(path, huge, sizeof huge);
	snprintf(message, sizeof message,
		 "demo: %s: dimension 1 is 2147483647 in the header; expected 1 to 10000000\n", path);
	expect_failure(command, 2, message);
}

static void test_binary_rejects_truncated_cifar(void **unused)
{
	(void)unused;
	char dir[400], path[500], command[4096], message[4096];
	snprintf(dir, sizeof dir, "%s/cifar", scratch);
	mkdir(dir, 0777);
	snprintf(path, sizeof path, "%s/data_batch_1.bin", dir);
	FILE *file = fopen(path, "wb");
	assert_non_null(file);
	for (int i = 0; i < 2 * 3073 + 5; i++)
		fputc(i % 10, file);
	fclose(file);
	snprintf(command, sizeof command, "%s/tests/bin/tiny-cifar-f32 train --data %s", build, dir);
	snprintf(message, sizeof message,
		 "tiny-cifar: %s: 6151 bytes is not a whole number of 3073-byte records; the file is "
		 "truncated or not in the CIFAR binary format\n",
		 path);
	expect_failure(command, 2, message);
}

static void test_binary_bad_spec_emits_nothing(void **unused)
{
	(void)unused;
	char spec[400], out_dir[500], command[4096], message[4096];
	snprintf(spec, sizeof spec, "%s/bad.yaml", scratch);
	snprintf(out_dir, sizeof out_dir, "%s/bad-out", scratch);
	write_text(spec, "name: bad\ndata: {set: cifar10}\nnet: {unit: basic, ordering: original, depth: 21}\n");
	snprintf(command, sizeof command, "%s/bin/resgen generate %s -o %s", build, spec, out_dir);
	snprintf(message, sizeof message,
		 "%s:3:47: 'depth' 21 is not of the form 6n+2 for basic units in 3 stages; the nearest "
		 "valid depths are 20 and 26\n",
		 spec);
	expect_failure(command, 2, message);
	struct stat st;
	assert_int_not_equal(stat(out_dir, &st), 0);
}

/* On a processor without an instruction the build used (qemu's Nehalem
 * has no AVX), a binary says so in one line and exits 2, before any of
 * its code could die of an illegal instruction. */
static void test_binary_refuses_a_processor_without_its_instructions(void **unused)
{
	(void)unused;
	/* AddressSanitizer's start, before the check, cannot map its shadow
	 * memory under qemu-user: the sanitizer build is killed there */
	const char *sanitize = getenv("SANITIZE");
	if (sanitize && strcmp(sanitize, "1") == 0)
		skip();
	char command[1024], out[4096], err[4096];
	snprintf(command, sizeof command, "qemu-x86_64 -cpu Nehalem %s/bin/demo info", build);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 2);
	assert_string_equal(out, "");
	expect_in(err, "demo: this processor lacks avx, ");
	expect_in(err, "which this binary was built to use (MARCH=x86-64-v3, the default build's baseline); "
		       "resgen runs on processors with AVX2 and FMA (x86-64-v3) and newer (docs/cluster.md)\n");
	assert_non_null(strchr(err, '\n'));
	assert_string_equal(strchr(err, '\n'), "\n");
	/* The check can pass: on the machine that built it, it runs. */
	snprintf(command, sizeof command, "%s/bin/demo info", build);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "demo: ");
}

/* A damaged, truncated, foreign or other network's checkpoint, or options
 * that contradict it: one line, exit 2, and neither the checkpoint nor the
 * log is touched. */
static void test_binary_refuses_bad_checkpoints(void **unused)
{
	(void)unused;
	char options[2048], good[400], bad_file[400], log[400], saved_log[400], copy[400], command[4096];
	char message[4096];
	snprintf(good, sizeof good, "%s/good.ckpt", scratch);
	snprintf(bad_file, sizeof bad_file, "%s/bad.ckpt", scratch);
	snprintf(log, sizeof log, "%s/bad.csv", scratch);
	snprintf(saved_log, sizeof saved_log, "%s/bad-saved.csv", scratch);
	snprintf(copy, sizeof copy, "%s/bad-copy.ckpt", scratch);
	snprintf(options, sizeof options, "--log %s --checkpoint %s --iterations 4", log, good);
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 train --synthetic --batch 16 --eval-every 4 %s",
		 build, options);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	snprintf(command, sizeof command, "cp %s %s", log, saved_log);
	assert_int_equal(system(command), 0);
	static const struct {
		const char *make; /* shell text: %1$s the good checkpoint, %2$s the bad one */
		const char *binary, *options, *problem;
	} cases[] = {
		{"cp %1$s %2$s && printf 'X' | dd of=%2$s bs=1 seek=4000 conv=notrunc status=none", "tiny-f64", "",
		 "its checksum does not match its contents; the file is damaged"},
		{"head -c 3000 %1$s > %2$s", "tiny-f64", "",
		 "its checksum does not match its contents; the file is damaged"},
		{"head -c 10 %1$s > %2$s", "tiny-f64", "", "not a resgen checkpoint (it should start with RESGENK1)"},
		{"%3$s/tests/bin/tiny-f64 init --save-weights %2$s", "tiny-f64", "",
		 "not a resgen checkpoint (it should start with RESGENK1)"},
		{"cp %1$s %2$s", "tiny-f32", "", "a checkpoint of another network"},
		{"cp %1$s %2$s", "tiny-f64", "--batch 8",
		 "the run was started with --batch 16, and this command gives --batch 8; leave the option out to resume"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(command, sizeof command, cases[i].make, good, bad_file, build);
		assert_int_equal(system(command), 0);
		snprintf(command, sizeof command, "cp %s %s", bad_file, copy);
		assert_int_equal(system(command), 0);
		snprintf(command, sizeof command, "%s/tests/bin/%s train --resume %s --log %s %s", build, cases[i].binary,
			 bad_file, log, cases[i].options);
		char err[2048];
		int status = run(command, NULL, 0, err, sizeof err);
		snprintf(message, sizeof message, "tiny: %s: %s", bad_file, cases[i].problem);
		bool one_line = strchr(err, '\n') == err + strlen(err) - 1;
		if (status != 2 || strncmp(err, message, strlen(message)) != 0 || !one_line)
			print_error("case %zu: %s\nexpected 2: %s...\ngot %d: %s", i, command, message, status, err);
		assert_int_equal(status, 2);
		assert_memory_equal(err, message, strlen(message));
		assert_true(one_line);
		assert_true(same_file(bad_file, copy));
		assert_true(same_file(log, saved_log));
	}
}

static void test_binary_rejects_weights_of_another_network(void **unused)
{
	(void)unused;
	char command[4096], weights[400], message[4096];
	snprintf(weights, sizeof weights, "%s/demo-weights", scratch);
	snprintf(command, sizeof command, "%s/bin/demo init --save-weights %s", build, weights);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f32 train --load-weights %s", build, weights);
	snprintf(message, sizeof message,
		 "tiny: %s: tensor stem_bn_beta has 16 values, but tiny's is (4), 4 values; were these "
		 "weights exported by tiny?\n",
		 weights);
	expect_failure(command, 2, message);
}

/* ---- hostile input: options, outputs, weights files, data headers ---- */

static void test_binary_options_belong_to_their_command(void **unused)
{
	(void)unused;
	char command[4096], message[4096];
	const char *cases[][2] = {
		{"train --batch ' 8'", "--batch needs a whole number from 1 to 4096"},
		{"train --batch +8", "--batch needs a whole number from 1 to 4096"},
		{"train --steps 3", "--steps is for step, not for train"},
		{"train --dump x", "--dump is for step, not for train"},
		{"init --save-weights x --iterations 3", "--iterations is for train and gradflow, not for init"},
		{"train --seed 1 --seed 2", "--seed is given twice; give it once"},
		{"train --set iterations=4 --iterations 6",
		 "--set iterations=4 and --iterations 6 both set --iterations; give one of them"},
		{"train --iterations 6 --set iterations=4",
		 "--iterations 6 and --set iterations=4 both set --iterations; give one of them"},
		{"evaluate --load-weights w --split train --test-limit 100",
		 "--test-limit limits the test split, which --split train does not measure; give --train-limit N for the "
		 "first N training images"},
		{"train --log", "--log lacks its value"},
		{"init --save-weights x --batch 8",
		 "--batch is for train, step, gradflow, explain and evaluate, not for init"},
		{"evaluate --split test", "evaluate needs --load-weights FILE, the weights to measure"},
		{"evaluate --load-weights w --split held-out", "--split needs train, test or validation"},
		{"train --confusion c.csv", "--confusion is for evaluate, not for train"},
		{"evaluate --load-weights w --iterations 3", "--iterations is for train and gradflow, not for evaluate"},
		{"step --dump x --csv y", "--csv is for gradflow, not for step"},
		{"gradflow --iterations 3", "gradflow needs --csv FILE"},
		{"train --resume x --load-weights y",
		 "--load-weights cannot start a resumed run; give --resume or --load-weights"},
		{"train --checkpoint-every 5", "--checkpoint-every needs --checkpoint FILE"},
		/* options the command would pass over */
		{"train --log-every 5", "--log-every sets the rows of the log, and there is none; give --log FILE.csv too"},
		{"gradflow --csv g.csv --every 5",
		 "--every measures every N training iterations, and gradflow trains none without --iterations K"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(command, sizeof command, "%s/tests/bin/tiny-f32 %s", build, cases[i][0]);
		snprintf(message, sizeof message, "tiny: %s; see %s/tests/bin/tiny-f32 --help\n",
			 cases[i][1], build);
		expect_failure(command, 2, message);
	}
	/* on real data, evaluate draws nothing at random */
	snprintf(command, sizeof command, "%s/tests/bin/fashion-tiny-f32 evaluate --load-weights w --seed 3", build);
	snprintf(message, sizeof message,
		 "fashion-tiny: --seed draws synthetic data, and evaluate draws nothing at random on real data; leave it "
		 "out; see %s/tests/bin/fashion-tiny-f32 --help\n", build);
	expect_failure(command, 2, message);
}

/* An output that cannot be written is found before the run, and nothing
 * that is not a regular file is ever replaced. */
static void test_binary_checks_outputs_before_training(void **unused)
{
	(void)unused;
	char command[4096], message[4096], out[4096], target[400];
	snprintf(command, sizeof command,
		 "%s/tests/bin/tiny-f32 train --synthetic --iterations 2 --save-weights %s/missing/w",
		 build, scratch);
	snprintf(message, sizeof message,
		 "tiny: %s/missing/w: cannot write: the folder %s/missing does not exist\n", scratch,
		 scratch);
	expect_failure(command, 1, message);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 1);
	assert_string_equal(out, ""); /* refused before any data or training */

	snprintf(target, sizeof target, "%s/fifo-target", scratch);
	assert_int_equal(mkfifo(target, 0644), 0);
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f32 init --save-weights %s", build, target);
	snprintf(message, sizeof message,
		 "tiny: %s: cannot write: it exists and is not a regular file (a device, FIFO or "
		 "socket); name a regular file\n",
		 target);
	expect_failure(command, 1, message);
	struct stat st;
	assert_int_equal(lstat(target, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));

	snprintf(command, sizeof command, "%s/tests/bin/tiny-f32 step --dump %s --synthetic", build,
		 scratch);
	snprintf(message, sizeof message, "tiny: %s: cannot write: it is a folder; name a file inside it\n",
		 scratch);
	expect_failure(command, 1, message);
}

/* The old save wrote PATH.tmp through whatever was planted there. */
static void test_binary_save_follows_no_planted_link(void **unused)
{
	(void)unused;
	char folder[400], victim[500], planted[500], target[500], command[4096];
	snprintf(folder, sizeof folder, "%s/save-folder", scratch);
	assert_int_equal(mkdir(folder, 0777), 0);
	snprintf(victim, sizeof victim, "%s/victim", scratch);
	snprintf(target, sizeof target, "%s/weights", folder);
	snprintf(planted, sizeof planted, "%s/weights.tmp", folder);
	write_text(victim, "precious\n");
	assert_int_equal(symlink("../victim", planted), 0);
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f32 init --save-weights %s", build, target);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	char text[64] = {0};
	FILE *file = fopen(victim, "r");
	assert_non_null(file);
	assert_non_null(fgets(text, sizeof text, file));
	fclose(file);
	assert_string_equal(text, "precious\n");
	struct tensor_file weights;
	char error[512];
	assert_int_equal(tensor_file_load(&weights, target, error, sizeof error), 0);
	tensor_file_free(&weights);
	/* Only the target and the planted link are in the folder: no temporary. */
	snprintf(command, sizeof command, "ls -A %s | wc -l", folder);
	char out[64];
	run(command, out, sizeof out, NULL, 0);
	assert_string_equal(out, "2\n");
}

static void test_binary_log_to_a_full_disk_fails(void **unused)
{
	(void)unused;
	char command[4096], log[400], message[4096], out[4096];
	snprintf(command, sizeof command,
		 "%s/tests/bin/tiny-f32 train --synthetic --iterations 2 --batch 8 --log /dev/full", build);
	expect_failure(command, 1, "tiny: /dev/full: cannot write the log: No space left on device\n");
	/* A log that is a folder is refused before anything runs. */
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f32 train --synthetic --log %s", build,
		 scratch);
	snprintf(message, sizeof message, "tiny: %s: cannot write: it is a folder; name a file inside it\n",
		 scratch);
	expect_failure(command, 1, message);
	/* A run refused for its data leaves an earlier log as it was. */
	snprintf(log, sizeof log, "%s/earlier.csv", scratch);
	write_text(log, "iteration,lr\n1,0.1\n");
	snprintf(command, sizeof command, "%s/bin/demo train --data %s/nowhere --log %s", build,
		 scratch, log);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 2);
	FILE *file = fopen(log, "r");
	assert_non_null(file);
	size_t got = fread(out, 1, sizeof out - 1, file);
	out[got] = '\0';
	fclose(file);
	assert_string_equal(out, "iteration,lr\n1,0.1\n");
}

/* Writes the initial weights of tiny, with one value of one tensor set to
 * value (or, with extra, one more tensor), to path. */
static void write_weights(const char *path, const char *tensor, double value, const char *extra)
{
	char command[4096], error[512];
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 init --save-weights %s", build, path);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	struct tensor_file f;
	assert_int_equal(tensor_file_load(&f, path, error, sizeof error), 0);
	if (tensor) {
		struct tensor_file_entry *e = (struct tensor_file_entry *)tensor_file_find(&f, tensor);
		assert_non_null(e);
		e->values[e->count - 1] = value;
	}
	if (extra)
		assert_int_equal(tensor_file_add_double(&f, extra, &value, 1), 0);
	assert_int_equal(tensor_file_save(&f, path, error, sizeof error), 0);
	tensor_file_free(&f);
}

static void test_binary_refuses_weights_it_cannot_trust(void **unused)
{
	(void)unused;
	char weights[400], command[4096], message[4096];
	snprintf(weights, sizeof weights, "%s/hostile-weights", scratch);
	snprintf(command, sizeof command,
		 "%s/tests/bin/tiny-f32 train --synthetic --iterations 2 --load-weights %s", build,
		 weights);
	const struct {
		const char *tensor, *extra;
		double value;
		const char *why;
	} cases[] = {
		{"stem_conv_weight", NULL, NAN, "tensor stem_conv_weight value 107 is NaN"},
		{"stem_bn_running_var", NULL, NAN, "tensor stem_bn_running_var value 3 is NaN"},
		{"head_fc_bias", NULL, -INFINITY, "tensor head_fc_bias value 4 is infinite"},
		{"head_fc_weight", NULL, 1e300, "tensor head_fc_weight value 239 is too large for f32"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		write_weights(weights, cases[i].tensor, cases[i].value, cases[i].extra);
		snprintf(message, sizeof message, "tiny: %s: %s; weights must be finite numbers\n",
			 weights, cases[i].why);
		expect_failure(command, 2, message);
	}
	/* A deeper network's file holds tensors this one lacks. */
	write_weights(weights, NULL, 0, "stage1_unit09_conv1_weight");
	snprintf(message, sizeof message,
		 "tiny: %s: tensor stage1_unit09_conv1_weight is not one of this network's; were these "
		 "weights exported by tiny?\n",
		 weights);
	expect_failure(command, 2, message);
	/* A FIFO would block a reader forever; a folder is not a file. */
	char fifo[400];
	snprintf(fifo, sizeof fifo, "%s/weights-fifo", scratch);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	snprintf(command, sizeof command, "timeout 20 %s/tests/bin/tiny-f32 train --load-weights %s",
		 build, fifo);
	snprintf(message, sizeof message,
		 "tiny: %s: cannot open: it is not a regular file (a FIFO, device or socket)\n", fifo);
	expect_failure(command, 2, message);
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f32 train --load-weights %s", build,
		 scratch);
	snprintf(message, sizeof message, "tiny: %s: cannot open: it is a folder, not a file\n", scratch);
	expect_failure(command, 2, message);
}

/* Finite weights can still overflow float: 1e38 in the stem conv makes
 * infinite activations, NaN after BN, which ReLU turns into zeros, so the
 * loss stays finite while NaN reaches the BN parameters. The run must stop
 * at the evaluation with the parameter's name, not finish and save. */
static void test_binary_checks_parameters_at_each_evaluation(void **unused)
{
	(void)unused;
	char weights[400], saved[400], command[4096], err[4096];
	snprintf(weights, sizeof weights, "%s/overflowing-weights", scratch);
	snprintf(saved, sizeof saved, "%s/overflowed-weights", scratch);
	char error[512];
	write_weights(weights, NULL, 0, NULL);
	struct tensor_file f;
	assert_int_equal(tensor_file_load(&f, weights, error, sizeof error), 0);
	struct tensor_file_entry *conv = (struct tensor_file_entry *)tensor_file_find(&f, "stem_conv_weight");
	for (long i = 0; i < conv->count; i++)
		conv->values[i] = 1e38;
	assert_int_equal(tensor_file_save(&f, weights, error, sizeof error), 0);
	tensor_file_free(&f);
	snprintf(command, sizeof command,
		 "%s/tests/bin/tiny-f32 train --synthetic --iterations 2 --eval-every 1 --batch 8 "
		 "--load-weights %s --save-weights %s",
		 build, weights, saved);
	int status = run(command, NULL, 0, err, sizeof err);
	if (status != 3)
		print_error("%s\n", err);
	assert_int_equal(status, 3);
	assert_non_null(strstr(err, "became non-finite by iteration 1"));
	struct stat st;
	assert_int_not_equal(stat(saved, &st), 0); /* nothing saved */
}

static void test_binary_cross_checks_idx_headers_before_reading(void **unused)
{
	(void)unused;
	char dir[400], images[500], labels[500], command[4096], message[4096];
	snprintf(dir, sizeof dir, "%s/idx-headers", scratch);
	mkdir(dir, 0777);
	/* 5,000,000 images announced (3.9 GB once decompressed), 16 bytes sent;
	 * 200 labels. The old loader decompressed first and asked later. */
	unsigned char image_header[16] = {0, 0, 8, 3, 0, 0x4c, 0x4b, 0x40, 0, 0, 0, 28, 0, 0, 0, 28};
	unsigned char label_file[8 + 200] = {0, 0, 8, 1, 0, 0, 0, 200};
	snprintf(images, sizeof images, "%s/train-images-idx3-ubyte.gz", dir);
	snprintf(labels, sizeof labels, "%s/train-labels-idx1-ubyte.gz", dir);
	write_gz(images, image_header, sizeof image_header);
	write_gz(labels, label_file, sizeof label_file);
	snprintf(command, sizeof command, "%s/bin/demo train --data %s", build, dir);
	snprintf(message, sizeof message,
		 "demo: %s: 200 labels for the 5000000 images of %s; the two files must match\n", labels,
		 images);
	expect_failure(command, 2, message);
	/* The image shape is checked from the header too. */
	unsigned char wrong_shape[16] = {0, 0, 8, 3, 0, 0, 0, 200, 0, 0, 0, 32, 0, 0, 0, 32};
	write_gz(images, wrong_shape, sizeof wrong_shape);
	snprintf(message, sizeof message, "demo: %s: images are 32x32; this network expects 28x28\n",
		 images);
	expect_failure(command, 2, message);
	/* A folder where a file belongs is named as such. */
	remove(images);
	snprintf(images, sizeof images, "%s/train-images-idx3-ubyte", dir);
	assert_int_equal(mkdir(images, 0777), 0);
	snprintf(message, sizeof message, "demo: %s: cannot open: it is a folder, not a file\n", images);
	expect_failure(command, 2, message);
}

/* Runs argv (no shell: the arguments hold any bytes) with output discarded
 * and stderr to err; returns the exit status. */
static int run_argv(char *const argv[], char *err, size_t err_size)
{
	char err_path[400];
	snprintf(err_path, sizeof err_path, "%s/stderr-argv", scratch);
	pid_t child = fork();
	if (child == 0) {
		int null = open("/dev/null", O_WRONLY);
		int to = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(null, 1);
		dup2(to, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	int status;
	waitpid(child, &status, 0);
	FILE *file = fopen(err_path, "r");
	size_t got = file ? fread(err, 1, err_size - 1, file) : 0;
	err[got] = '\0';
	if (file)
		fclose(file);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Generates the spec at spec_path into out and compiles the three files
 * with every warning an error; the path must not reach the code. */
static void generate_and_compile(const char *spec_path, const char *out)
{
	char resgen[400], err[4096], command[4096];
	snprintf(resgen, sizeof resgen, "%s/bin/resgen", build);
	char *argv[] = {resgen, "generate", (char *)spec_path, "-o", (char *)out, NULL};
	int status = run_argv(argv, err, sizeof err);
	if (status != 0)
		print_error("%s", err);
	assert_int_equal(status, 0);
	snprintf(command, sizeof command,
		 "cc -fsyntax-only -std=gnu11 -fopenmp -Wall -Wextra -Werror -Iruntime -Iruntime/command -Iruntime/train "
		 "-Iruntime/run -Iruntime/data -Iruntime/parallel -Iruntime/machine -Iruntime/shared -I%s %s/net.c && "
		 "cc -fsyntax-only -std=gnu11 -fopenmp -Wall -Wextra -Werror -DNET_KERNELS=net_kernels_avx2 -Iruntime "
		 "-Iruntime/machine -Iruntime/shared -I%s %s/kernels.c",
		 out, out, out, out);
	status = run(command, NULL, 0, err, sizeof err);
	if (status != 0)
		print_error("%s", err);
	assert_int_equal(status, 0);
	/* Emitted text is printable ASCII, tabs and newlines. */
	const char *names[] = {"net.c", "kernels.h", "kernel_table.h", "kernels.c", "arena.h"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char path[600];
		snprintf(path, sizeof path, "%s/%s", out, names[i]);
		FILE *file = fopen(path, "rb");
		assert_non_null(file);
		for (int c; (c = fgetc(file)) != EOF;)
			if (!(c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)))
				fail_msg("%s holds byte 0x%02x", path, c);
		fclose(file);
	}
}

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	assert_non_null(in);
	assert_non_null(out);
	for (int c; (c = fgetc(in)) != EOF;)
		fputc(c, out);
	fclose(in);
	fclose(out);
}

/* A folder named x, star, backslash, newline, slash and C text once closed
 * the header comment (the preprocessor splices the two lines into a star
 * and a slash) and compiled the rest of the path. */
static void test_resgen_spec_path_never_reaches_code(void **unused)
{
	(void)unused;
	char folder[600], spec[800], out[600];
	snprintf(folder, sizeof folder, "%s/x*\\\n", scratch);
	assert_int_equal(mkdir(folder, 0777), 0);
	snprintf(folder + strlen(folder), sizeof folder - strlen(folder), "/ _Static_assert(0, \"planted\");");
	assert_int_equal(mkdir(folder, 0777), 0);
	snprintf(spec, sizeof spec, "%s/s.yaml", folder);
	copy_file("tests/specs/tiny.yaml", spec);
	snprintf(out, sizeof out, "%s/injected-out", scratch);
	generate_and_compile(spec, out);

	/* Every byte from 1 to 255 but '/' in one folder name. */
	size_t used = (size_t)snprintf(folder, sizeof folder, "%s/", scratch);
	for (int byte = 1; byte < 256; byte++)
		if (byte != '/')
			folder[used++] = (char)byte;
	folder[used] = '\0';
	assert_int_equal(mkdir(folder, 0777), 0);
	snprintf(spec, sizeof spec, "%s/s.yaml", folder);
	copy_file("tests/specs/tiny.yaml", spec);
	snprintf(out, sizeof out, "%s/every-byte-out", scratch);
	generate_and_compile(spec, out);
}

static void test_resgen_refuses_networks_too_big_for_memory(void **unused)
{
	(void)unused;
	char spec[400], command[4096], message[4096], out_dir[400];
	snprintf(spec, sizeof spec, "%s/huge.yaml", scratch);
	snprintf(out_dir, sizeof out_dir, "%s/huge-out", scratch);
	write_text(spec, "name: huge\ndata: {set: cifar10}\n"
			 "net: {unit: basic, ordering: original, depth: 20, widths: [2048, 2048, 2048]}\n"
			 "train: {batch: 4096}\n");
	/* One image fits: the code is the same at every batch, so the batch
	 * is warned of, with the batch that fits (it depends on the cores,
	 * each with its scratch) and the ranks that would share it. */
	snprintf(command, sizeof command, "%s/bin/resgen check %s --max-memory 64", build, spec);
	snprintf(message, sizeof message,
		 "%s:4:16: warning: at batch 4096 this network needs 457.0 GiB of memory in f32, more than the "
		 "64.0 GiB allowed (this machine's memory, or --max-memory); run it with --batch ",
		 spec);
	char err[4096];
	assert_int_equal(run(command, NULL, 0, err, sizeof err), 0);
	assert_memory_equal(err, message, strlen(message));
	assert_non_null(strstr(err, " at most, or spread the batch over "));
	assert_non_null(strstr(err, " or more ranks (mpirun), each holding its part\n"));
	/* Not one image fits: refused, and nothing is written. */
	snprintf(command, sizeof command, "%s/bin/resgen generate %s -o %s --max-memory 0.05", build, spec,
		 out_dir);
	snprintf(message, sizeof message,
		 "%s:4:16: at batch 4096 this network needs 457.0 GiB of memory in f32, more than the 51.2 MiB "
		 "allowed (this machine's memory, or --max-memory), and even one image does not fit: use fewer or "
		 "narrower layers, or pass --max-memory GIB\n",
		 spec);
	assert_int_equal(run(command, NULL, 0, err, sizeof err), 2);
	assert_string_equal(err, message);
	struct stat st;
	assert_int_not_equal(stat(out_dir, &st), 0);
	/* The flag raises the limit. */
	snprintf(command, sizeof command, "%s/bin/resgen check %s --max-memory 500", build, spec);
	assert_int_equal(run(command, NULL, 0, err, sizeof err), 0);
	assert_string_equal(err, "");
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
		cmocka_unit_test(test_binary_rejects_bad_arguments),
		cmocka_unit_test(test_binary_points_pytorch_habits_to_their_spelling),
		cmocka_unit_test(test_binary_rejects_missing_and_broken_idx_files),
		cmocka_unit_test(test_binary_rejects_truncated_cifar),
		cmocka_unit_test(test_binary_bad_spec_emits_nothing),
		cmocka_unit_test(test_binary_rejects_weights_of_another_network),
		cmocka_unit_test(test_binary_refuses_a_processor_without_its_instructions),
		cmocka_unit_test(test_binary_refuses_bad_checkpoints),
		cmocka_unit_test(test_binary_options_belong_to_their_command),
		cmocka_unit_test(test_binary_checks_outputs_before_training),
		cmocka_unit_test(test_binary_save_follows_no_planted_link),
		cmocka_unit_test(test_binary_log_to_a_full_disk_fails),
		cmocka_unit_test(test_binary_refuses_weights_it_cannot_trust),
		cmocka_unit_test(test_binary_checks_parameters_at_each_evaluation),
		cmocka_unit_test(test_binary_cross_checks_idx_headers_before_reading),
		cmocka_unit_test(test_resgen_spec_path_never_reaches_code),
		cmocka_unit_test(test_resgen_refuses_networks_too_big_for_memory),
	};
	command_only_some();
	return cmocka_run_group_tests_name("refusals", tests, setup, NULL);
}
