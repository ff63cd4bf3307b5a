/* The binaries as users run them: help, argument errors, broken data files,
 * bad specs, determinism, f32 against f64, and a short real training run. */
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
	return command_setup("binaries");
}

static void test_binary_help_answers_questions(void **unused)
{
	(void)unused;
	char out[8192], command[4096];
	snprintf(command, sizeof command, "%s/bin/demo --help", build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	const char *needles[] = {"--data DIR", "--iterations N", "--batch B", "--threads T",
				 "--seed S", "--log FILE.csv", "--synthetic", "full-preact",
				 "/usr/share/datasets/fashion-mnist"};
	for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
		if (!strstr(out, needles[i]))
			fail_msg("--help does not mention %s", needles[i]);
	/* after a command and its options too, as a user of any tool asks */
	char again[8192];
	snprintf(command, sizeof command, "%s/bin/demo step --steps 2 --help", build);
	assert_int_equal(run(command, again, sizeof again, NULL, 0), 0);
	assert_string_equal(again, out);
	snprintf(command, sizeof command, "%s/bin/demo train -h", build);
	assert_int_equal(run(command, again, sizeof again, NULL, 0), 0);
	assert_string_equal(again, out);
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

/* A well-formed CIFAR-10 folder of a few records per file loads and trains. */
static void test_binary_reads_cifar_binary_files(void **unused)
{
	(void)unused;
	char dir[400], path[500], command[4096], out[4096];
	snprintf(dir, sizeof dir, "%s/cifar-good", scratch);
	mkdir(dir, 0777);
	const char *files[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
			       "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
	for (int f = 0; f < 6; f++) {
		snprintf(path, sizeof path, "%s/%s", dir, files[f]);
		FILE *file = fopen(path, "wb");
		assert_non_null(file);
		for (int record = 0; record < 4; record++) {
			fputc((record + f) % 10, file);
			for (int p = 0; p < 3072; p++)
				fputc((p * 7 + record * 13 + f) % 256, file);
		}
		fclose(file);
	}
	snprintf(command, sizeof command,
		 "%s/tests/bin/tiny-cifar-f32 train --data %s --iterations 2 --batch 4 --eval-every 2",
		 build, dir);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_non_null(strstr(out, "data: cifar10, 20 training and 4 test images of 3x32x32"));
	assert_non_null(strstr(out, "test error: "));
	/* the last line: the steps' time, and the data's share of it */
	const char *timing = strstr(out, "\ntime: ");
	double step_ms, data_ms, share;
	assert_non_null(timing);
	assert_int_equal(sscanf(timing, " time: %lf ms a training step, of which loading and augmenting the data %lf ms (%lf%%)",
				&step_ms, &data_ms, &share),
			 3);
	assert_true(data_ms > 0 && data_ms < step_ms);
	/* printed to two decimals: a step slowed by a busy machine (its
	 * kernels, not the data) rounds a small share to 0.00 */
	assert_true(share >= 0 && share < 100);
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

static void test_binary_same_seed_and_threads_give_identical_weights(void **unused)
{
	(void)unused;
	char command[4096], first[400], second[400];
	snprintf(first, sizeof first, "%s/weights-1", scratch);
	snprintf(second, sizeof second, "%s/weights-2", scratch);
	const char *paths[] = {first, second};
	for (int i = 0; i < 2; i++) {
		snprintf(command, sizeof command,
			 "%s/tests/bin/tiny-f32 train --iterations 6 --threads 2 --seed 3 "
			 "--save-weights %s",
			 build, paths[i]);
		assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	}
	assert_true(same_file(first, second));
	/* And a different seed gives different weights: the check can fail. */
	snprintf(command, sizeof command,
		 "%s/tests/bin/tiny-f32 train --iterations 6 --threads 2 --seed 4 --save-weights %s",
		 build, second);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	assert_false(same_file(first, second));
}

/* A short run of tiny-f64 (12 iterations, evaluations at 4, 8 and 12) on
 * threads threads with the given extra options and environment; returns
 * the exit status, its output in out. */
static int run_tiny_on(int threads, const char *environment, const char *options, char *out, size_t size)
{
	char command[4096];
	snprintf(command, sizeof command,
		 "%s %s/tests/bin/tiny-f64 train --synthetic --iterations 12 --eval-every 4 --batch 16 --threads %d %s",
		 environment, build, threads, options);
	return run(command, out, size, NULL, 0);
}

static int run_tiny(const char *environment, const char *options) { return run_tiny_on(2, environment, options, NULL, 0); }

/* Killed (SIGKILL) or stopped (SIGTERM) at several points, mid-interval,
 * right after an evaluation, right after a checkpoint, and twice in one
 * run, then resumed: the weights are bitwise and the log's rows exactly
 * those of the run that was never stopped. */
static void test_binary_resumes_exactly(void **unused)
{
	(void)unused;
	char options[2048], whole[400], whole_log[400], weights[400], log[400], checkpoint[400];
	snprintf(whole, sizeof whole, "%s/whole.w", scratch);
	snprintf(whole_log, sizeof whole_log, "%s/whole.csv", scratch);
	snprintf(weights, sizeof weights, "%s/resumed.w", scratch);
	snprintf(log, sizeof log, "%s/resumed.csv", scratch);
	snprintf(checkpoint, sizeof checkpoint, "%s/run.ckpt", scratch);
	snprintf(options, sizeof options, "--log %s --save-weights %s", whole_log, whole);
	assert_int_equal(run_tiny("", options), 0);
	/* kill points: after iteration 6 (mid-interval; checkpoint at 5, a
	 * row at 4), 8 (an evaluation after the checkpoint), 10 (a
	 * checkpoint); then 6 and 11 in one run; then SIGTERM at 7. */
	static const struct {
		int signal;
		long at, again;
	} stops[] = {{9, 6, 0}, {9, 8, 0}, {9, 10, 0}, {9, 6, 11}, {15, 7, 0}};
	for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
		char environment[64];
		remove(checkpoint);
		snprintf(environment, sizeof environment, "RESGEN_TEST_RAISE=%d@%ld", stops[i].signal, stops[i].at);
		snprintf(options, sizeof options, "--log %s --checkpoint %s --checkpoint-every 5 --save-weights %s", log,
			 checkpoint, weights);
		int stopped = run_tiny(environment, options);
		/* the shell reports a kill as 128 + the signal */
		assert_int_equal(stopped, stops[i].signal == 9 ? 128 + 9 : 4);
		snprintf(options, sizeof options, "--log %s --resume %s --save-weights %s", log, checkpoint, weights);
		if (stops[i].again) {
			snprintf(environment, sizeof environment, "RESGEN_TEST_RAISE=9@%ld", stops[i].again);
			assert_int_equal(run_tiny(environment, options), 128 + 9);
		}
		assert_int_equal(run_tiny("", options), 0);
		if (!same_file(whole, weights) || !same_rows(whole_log, log))
			print_error("stopped by signal %d after iteration %ld (and %ld)\n", stops[i].signal, stops[i].at,
				    stops[i].again);
		assert_true(same_file(whole, weights));
		assert_true(same_rows(whole_log, log));
	}
	/* The comparison can fail: a run with another seed differs. */
	snprintf(options, sizeof options, "--seed 5 --log %s --save-weights %s", log, weights);
	assert_int_equal(run_tiny("", options), 0);
	assert_false(same_file(whole, weights));
	assert_false(same_rows(whole_log, log));
}

/* A run keeps its shares: stopped on 2 threads and resumed on 1, or the
 * other way round, it ends on the weights and log rows of the run never
 * stopped; and a run of 1 thread with --shares 2 is the run of 2. */
static void test_binary_resumes_on_other_threads(void **unused)
{
	(void)unused;
	char options[2048], whole[400], whole_log[400], weights[400], log[400], checkpoint[400], out[8192];
	snprintf(whole, sizeof whole, "%s/whole.w", scratch);
	snprintf(whole_log, sizeof whole_log, "%s/whole.csv", scratch);
	snprintf(weights, sizeof weights, "%s/moved.w", scratch);
	snprintf(log, sizeof log, "%s/moved.csv", scratch);
	snprintf(checkpoint, sizeof checkpoint, "%s/moved.ckpt", scratch);
	snprintf(options, sizeof options, "--log %s --save-weights %s", whole_log, whole);
	assert_int_equal(run_tiny("", options), 0);
	static const struct {
		int first, then;
	} moves[] = {{2, 1}, {1, 2}};
	for (size_t i = 0; i < sizeof moves / sizeof moves[0]; i++) {
		remove(checkpoint);
		snprintf(options, sizeof options, "--shares 2 --log %s --checkpoint %s --checkpoint-every 5 --save-weights %s",
			 log, checkpoint, weights);
		assert_int_equal(run_tiny_on(moves[i].first, "RESGEN_TEST_RAISE=9@7", options, NULL, 0), 128 + 9);
		snprintf(options, sizeof options, "--log %s --resume %s --save-weights %s", log, checkpoint, weights);
		assert_int_equal(run_tiny_on(moves[i].then, "", options, out, sizeof out), 0);
		if (moves[i].then == 1)
			expect_in(out, "1 thread (each pass in 2 shares)");
		if (!same_file(whole, weights) || !same_rows(whole_log, log))
			print_error("stopped on %d threads, resumed on %d\n", moves[i].first, moves[i].then);
		assert_true(same_file(whole, weights));
		assert_true(same_rows(whole_log, log));
	}
	/* A resumed run's shares are its checkpoint's. */
	char command[4096];
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 train --synthetic --resume %s --shares 1", build,
		 checkpoint);
	assert_int_equal(run(command, NULL, 0, out, sizeof out), 2);
	expect_in(out, "the run cuts each pass into 2 shares, and this command gives --shares 1; leave --shares out");
	/* The comparison can fail: 1 thread cuts each pass in 1 share. */
	snprintf(options, sizeof options, "--log %s --save-weights %s", log, weights);
	assert_int_equal(run_tiny_on(1, "", options, NULL, 0), 0);
	assert_false(same_file(whole, weights));
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

/* A network's identity is what it computes, not the version of resgen that
 * built it: a checkpoint written by one version resumes in a binary of
 * another (tiny-f64's network, another version string), says which
 * versions wrote and read it, and ends on the weights of the run never
 * stopped. (Nor is the text of the templates or kernels part of it:
 * test_hostile's test_identity_is_what_the_network_computes.) */
static void test_binary_resumes_across_versions(void **unused)
{
	(void)unused;
	char command[4096], options[1024], whole[400], resumed[400], checkpoint[400], err[4096], expected[1024];
	snprintf(whole, sizeof whole, "%s/edit-whole.w", scratch);
	snprintf(resumed, sizeof resumed, "%s/edit-resumed.w", scratch);
	snprintf(checkpoint, sizeof checkpoint, "%s/edit.ckpt", scratch);
	snprintf(options, sizeof options, "--save-weights %s", whole);
	assert_int_equal(run_tiny("", options), 0);
	snprintf(options, sizeof options, "--checkpoint %s", checkpoint);
	assert_int_equal(run_tiny("RESGEN_TEST_RAISE=9@6", options), 128 + 9);
	snprintf(command, sizeof command, "%s/tests/bin/tiny-edited-f64 train --threads 2 --resume %s --save-weights %s",
		 build, checkpoint, resumed);
	assert_int_equal(run(command, NULL, 0, err, sizeof err), 0);
	snprintf(expected, sizeof expected, "tiny: note: %s was written by resgen ", checkpoint);
	assert_memory_equal(err, expected, strlen(expected));
	expect_in(err, ", and this binary is resgen edited-by-the-test; the network is the same, so the run goes on\n");
	assert_true(same_file(whole, resumed));
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

/* The Euclidean norm of a, or of a - b. */
static double norm_between(const struct tensor_file_entry *a, const struct tensor_file_entry *b)
{
	double sum = 0;
	for (long i = 0; i < a->count; i++) {
		double v = a->values[i] - (b ? b->values[i] : 0);
		sum += v * v;
	}
	return sqrt(sum);
}

/* gradflow's norms at initialisation are those of the unit outputs and
 * input gradients that `step --dump` writes for the same first batch; and
 * measuring while training leaves the run's weights bitwise as they were. */
static void test_binary_gradflow_measures_the_units(void **unused)
{
	(void)unused;
	char command[4096], csv[400], dump_path[400], first[400], second[400], message[512];
	snprintf(csv, sizeof csv, "%s/gradflow.csv", scratch);
	snprintf(dump_path, sizeof dump_path, "%s/gradflow.dump", scratch);
	snprintf(command, sizeof command,
		 "%s/tests/bin/tiny-f64 gradflow --synthetic --batch 16 --threads 2 --csv %s && "
		 "%s/tests/bin/tiny-f64 step --synthetic --batch 16 --threads 2 --dump %s",
		 build, csv, build, dump_path);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	struct tensor_file dump;
	assert_int_equal(tensor_file_load(&dump, dump_path, message, sizeof message), 0);
	FILE *file = fopen(csv, "r");
	assert_non_null(file);
	char line[1024], previous_unit[300] = "stem";
	assert_non_null(fgets(line, sizeof line, file));
	assert_string_equal(line, "iteration,unit,name,input_norm,change_norm,gradient_norm,gradient_ratio\n");
	int rows = 0, changes = 0;
	double top = norm_between(tensor_file_find(&dump, "grad_in/head"), NULL);
	while (fgets(line, sizeof line, file)) {
		long iteration;
		int unit, used;
		char name[300], act[320], grad[320], previous[320];
		double input, change = -1, gradient, ratio;
		assert_int_equal(sscanf(line, "%ld,%d,%299[^,],%lf,%n", &iteration, &unit, name, &input, &used), 4);
		if (line[used] != ',')
			assert_int_equal(sscanf(line + used, "%lf,%lf,%lf", &change, &gradient, &ratio), 3);
		else
			assert_int_equal(sscanf(line + used + 1, "%lf,%lf", &gradient, &ratio), 2);
		assert_int_equal(iteration, 0);
		snprintf(act, sizeof act, "act/%s", name);
		snprintf(previous, sizeof previous, "act/%s", previous_unit);
		snprintf(grad, sizeof grad, "grad_in/%s", name);
		const struct tensor_file_entry *out = tensor_file_find(&dump, act), *in = tensor_file_find(&dump, previous);
		const struct tensor_file_entry *gradient_in = tensor_file_find(&dump, grad);
		assert_non_null(out);
		assert_non_null(in);
		assert_non_null(gradient_in);
		/* the CSV's 9 significant digits */
		assert_true(fabs(input - norm_between(in, NULL)) <= 1e-8 * input);
		assert_true(fabs(gradient - norm_between(gradient_in, NULL)) <= 1e-8 * gradient);
		assert_true(fabs(ratio - gradient / top) <= 1e-8 * ratio);
		if (change >= 0) {
			assert_int_equal(out->count, in->count);
			assert_true(fabs(change - norm_between(out, in)) <= 1e-8 * change);
			changes++;
		} else {
			assert_int_not_equal(out->count, in->count);
		}
		snprintf(previous_unit, sizeof previous_unit, "%s", name);
		rows++;
	}
	fclose(file);
	tensor_file_free(&dump);
	/* tiny: 6 units, 3 of which change the shape */
	assert_int_equal(rows, 6);
	assert_int_equal(changes, 3);

	snprintf(first, sizeof first, "%s/gradflow.w", scratch);
	snprintf(second, sizeof second, "%s/trained.w", scratch);
	snprintf(command, sizeof command,
		 "%s/tests/bin/tiny-f64 gradflow --synthetic --batch 16 --threads 2 --iterations 6 --every 2 --csv %s "
		 "--save-weights %s && %s/tests/bin/tiny-f64 train --synthetic --batch 16 --threads 2 --iterations 6 "
		 "--save-weights %s",
		 build, csv, first, build, second);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	assert_true(same_file(first, second));
	snprintf(command, sizeof command, "grep -c '^[0246],' %s", csv);
	char out[64];
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "24\n"); /* 6 units at iterations 0, 2, 4 and 6 */
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

/* resgen summary names the shortcut's parameters and the recipe, and says
 * what its activations and the planned arena count. */
static void test_resgen_summary_says_what_it_counts(void **unused)
{
	(void)unused;
	char command[1024], out[8192];
	snprintf(command, sizeof command,
		 "(%1$s/bin/resgen summary specs/paper/t1-scaling-05-05.yaml && "
		 "%1$s/bin/resgen summary specs/paper/t1-exclusive-gating-6.yaml | head -1)",
		 build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, "scaling shortcut (0.5 times the shortcut, 0.5 times the branch), conv1x1 projection\n");
	expect_in(out, "training: batch 128, 64000 iterations; lr 0.1 (0.01 for the first 400 iterations), times 0.1 "
		       "at iterations 32000 48000; momentum 0.9, weight decay 0.0001; augmentation: 4-pixel pad and "
		       "random crop, random horizontal flip\n");
	expect_in(out, "activations: each op's output at batch 128 in float, counted once, as if all were kept\n");
	expect_in(out, "planned arena: ");
	expect_in(out, "(so less than the activations above, which count every output once and no gradient)\n");
	expect_in(out, "exclusive-gating shortcut (the gate's bias b_g starts at -6)");
}

/* A resumed run's images/s counts its own images only: checkpointed after
 * iteration 8 of an interval of 10 and killed after 9, the resumed run
 * trains two steps before it evaluates, and its rate must be theirs (it
 * was ten steps' images over two steps' time). */
static void test_resumed_rate_counts_its_own_images(void **unused)
{
	(void)unused;
	char command[4096], out[8192];
	snprintf(command, sizeof command,
		 "rm -f %2$s/rate.ckpt; env RESGEN_TEST_RAISE=9@9 %1$s/tests/bin/tiny-f64 train --synthetic --iterations 10 "
		 "--eval-every 10 --checkpoint %2$s/rate.ckpt --checkpoint-every 8 > /dev/null 2>&1; "
		 "%1$s/tests/bin/tiny-f64 train --synthetic --resume %2$s/rate.ckpt",
		 build, scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	const char *row = strstr(out, "iteration 10: "), *time = strstr(out, "\ntime: ");
	assert_non_null(row);
	assert_non_null(time);
	double rate, milliseconds;
	assert_int_equal(sscanf(strstr(row, "| ") ? strrchr(row, '|') + 1 : row, "%lf images/s", &rate), 1);
	assert_int_equal(sscanf(time, "\ntime: %lf ms a training step", &milliseconds), 1);
	double one_step = 8 / (milliseconds / 1e3); /* tiny's batch of 8 */
	print_message("resumed: %.0f images/s beside %.2f ms a step (%.0f images/s)\n", rate, milliseconds, one_step);
	assert_true(rate < 3 * one_step && rate > one_step / 3);
}

/* |a - b| / max(|a|, |b|) over a whole tensor, in the Euclidean norm. */
static double relative_error(const struct tensor_file_entry *a, const struct tensor_file_entry *b)
{
	double difference = 0, na = 0, nb = 0;
	for (long i = 0; i < a->count; i++) {
		difference += (a->values[i] - b->values[i]) * (a->values[i] - b->values[i]);
		na += a->values[i] * a->values[i];
		nb += b->values[i] * b->values[i];
	}
	double scale = fmax(sqrt(na), sqrt(nb));
	return scale > 0 ? sqrt(difference) / scale : 0;
}

/* f32 against f64 on the same weights and inputs: the f64 run is the
 * reference. Tolerance 1e-4: float's epsilon is 6e-8, and a forward and
 * backward pass through 20 layers with BN over a batch of 8 compounds it
 * (measured: 1.5e-6 at worst, a BN gamma gradient); a real mismatch (a
 * wrong op, a wrong shape) is off by far more. */
static void test_binary_f32_agrees_with_f64(void **unused)
{
	(void)unused;
	const double tolerance = 1e-4;
	char command[4096], weights[400], dump32[400], dump64[400], error[512];
	snprintf(weights, sizeof weights, "%s/tiny-initial", scratch);
	snprintf(dump32, sizeof dump32, "%s/tiny-f32.dump", scratch);
	snprintf(dump64, sizeof dump64, "%s/tiny-f64.dump", scratch);
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f32 init --save-weights %s", build, weights);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	const char *dtypes[] = {"f32", "f64"};
	const char *dumps[] = {dump32, dump64};
	for (int i = 0; i < 2; i++) {
		snprintf(command, sizeof command,
			 "%s/tests/bin/tiny-%s step --load-weights %s --steps 1 --dump %s", build,
			 dtypes[i], weights, dumps[i]);
		assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	}
	struct tensor_file a, b;
	assert_int_equal(tensor_file_load(&a, dump32, error, sizeof error), 0);
	assert_int_equal(tensor_file_load(&b, dump64, error, sizeof error), 0);
	assert_int_equal(a.count, b.count);
	double worst = 0;
	const char *worst_name = "";
	int failures = 0;
	for (int i = 0; i < a.count; i++) {
		const struct tensor_file_entry *reference = tensor_file_find(&b, a.entries[i].name);
		assert_non_null(reference);
		assert_int_equal(reference->count, a.entries[i].count);
		double e = relative_error(&a.entries[i], reference);
		if (e > worst) {
			worst = e;
			worst_name = a.entries[i].name;
		}
		if (!(e < tolerance)) {
			print_error("%s: f32 differs from f64 by %.3g (limit %.0e)\n", a.entries[i].name, e,
				    tolerance);
			failures++;
		}
	}
	print_message("f32 against f64: %d tensors (logits, loss, gradients, weights after one step); "
		      "worst %.2e (%s)\n",
		      a.count, worst, worst_name);
	/* The input itself is identical: both builds round it through float. */
	assert_true(relative_error(tensor_file_find(&a, "input"), tensor_file_find(&b, "input")) == 0);
	tensor_file_free(&a);
	tensor_file_free(&b);
	assert_int_equal(failures, 0);
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

/* A short run on real Fashion-MNIST (tests/specs/fashion-tiny.yaml): the
 * training and test losses must fall. The rate drops for the last third:
 * at the full rate, BN's running statistics lag the weights and the test
 * loss of one build or another rose (measured 1.52 -> 1.72 under the
 * sanitizers) while the training loss fell the same in every build. */
static void test_binary_loss_falls_on_real_data(void **unused)
{
	(void)unused;
	char command[4096], log[400], out[8192];
	snprintf(log, sizeof log, "%s/fashion.csv", scratch);
	snprintf(command, sizeof command,
		 "%s/tests/bin/fashion-tiny-f32 train --train-limit 6000 --test-limit 1000 --log %s",
		 build, log);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_non_null(strstr(out, "test error: "));
	FILE *file = fopen(log, "r");
	assert_non_null(file);
	char line[512];
	double first_loss = -1, last_loss = -1, first_test = -1, last_test = -1, rates[3] = {0};
	int rows = 0, training_rows = 0;
	assert_non_null(fgets(line, sizeof line, file)); /* header */
	while (fgets(line, sizeof line, file)) {
		long iteration;
		if (strstr(line, ",,,,,")) { /* a training row between evaluations */
			training_rows++;
			continue;
		}
		double lr, train_loss, train_error, test_loss;
		assert_int_equal(sscanf(line, "%ld,%lf,%lf,%lf,,,%lf", &iteration, &lr, &train_loss,
					&train_error, &test_loss),
				 5);
		if (rows < 3)
			rates[rows] = lr;
		if (rows++ == 0) {
			first_loss = train_loss;
			first_test = test_loss;
		}
		last_loss = train_loss;
		last_test = test_loss;
	}
	fclose(file);
	print_message("train loss %.3f -> %.3f, test loss %.3f -> %.3f over %d evaluations\n",
		      first_loss, last_loss, first_test, last_test, rows);
	assert_int_equal(rows, 3);
	assert_int_equal(training_rows, 117); /* every iteration of 120 (about 250 rows), but the evaluations' */
	assert_true(last_loss < 0.8 * first_loss);
	assert_true(last_test < first_test);
	/* The step at 0.667 of the run: iteration 80 of 120 (the rate of a
	 * row is that of its interval's last iteration), and 40 of 60. */
	assert_true(rates[0] == 0.05 && rates[1] == 0.05 && fabs(rates[2] - 0.005) < 1e-12);
	snprintf(command, sizeof command,
		 "%s/tests/bin/fashion-tiny-f32 train --train-limit 600 --test-limit 100 --iterations 60 --eval-every 20 "
		 "--log %s && grep -v ',,,,,' %s | cut -d, -f2 | tail -n +2 | tr '\\n' ' '",
		 build, log, log);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_non_null(strstr(out, "0.050000000000000003 0.050000000000000003 0.005000000000000001 "));
}

/* A log's row: its fields as numbers, NAN where a field is empty. */
static int log_fields(const char *line, double *fields, int max)
{
	int n = 0;
	for (const char *at = line; n < max; n++) {
		char *end;
		fields[n] = *at == ',' || *at == '\n' || *at == '\0' ? NAN : strtod(at, &end);
		at = strchr(at, ',');
		if (!at) {
			n++;
			break;
		}
		at++;
	}
	return n;
}

/* The rows of log at path, each of the log's 10 columns. */
static int read_log(const char *path, double rows[][10], int max)
{
	FILE *file = fopen(path, "r");
	assert_non_null(file);
	char line[1024];
	assert_non_null(fgets(line, sizeof line, file));
	assert_string_equal(line, "iteration,lr,train_loss,train_error,val_loss,val_error,test_loss,test_error,seconds,"
				  "images_per_second\n");
	int n = 0;
	while (n < max && fgets(line, sizeof line, file))
		assert_int_equal(log_fields(line, rows[n++], 10), 10);
	fclose(file);
	return n;
}

/* Each column of the log means one thing on every row: with --log-every 2
 * and evaluations every 5, a row's train_loss and train_error are the mean
 * over the iterations since the row before, an evaluation's row too (the
 * same run logged every iteration gives each iteration's own), the test
 * columns are filled on evaluation rows alone, the validation columns on
 * none without --validation. */
static void test_binary_log_columns_mean_one_thing(void **unused)
{
	(void)unused;
	char command[4096], every[400], second[400];
	double each[12][10], rows[12][10];
	snprintf(every, sizeof every, "%s/every.csv", scratch);
	snprintf(second, sizeof second, "%s/second.csv", scratch);
	const char *tiny = "tests/bin/tiny-f64 train --synthetic --batch 16 --iterations 12 --eval-every 5";
	snprintf(command, sizeof command, "%1$s/%2$s --log-every 1 --log %3$s > /dev/null && "
		 "%1$s/%2$s --log-every 2 --log %4$s > /dev/null", build, tiny, every, second);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	assert_int_equal(read_log(every, each, 12), 12);
	int n = read_log(second, rows, 12);
	static const long iterations[] = {2, 4, 5, 6, 8, 10, 12};
	assert_int_equal(n, 7);
	long before = 0;
	for (int r = 0; r < n; r++) {
		long iteration = (long)rows[r][0];
		assert_int_equal(iteration, iterations[r]);
		double loss = 0, error = 0;
		for (long i = before; i < iteration; i++) {
			assert_int_equal((long)each[i][0], i + 1);
			loss += each[i][2] / (double)(iteration - before);
			error += each[i][3] / (double)(iteration - before);
		}
		if (fabs(rows[r][2] - loss) > 1e-12 * loss || fabs(rows[r][3] - error) > 1e-12)
			fail_msg("row at iteration %ld: train loss %.17g and error %.17g, but its iterations' mean is %.17g "
				 "and %.17g", iteration, rows[r][2], rows[r][3], loss, error);
		bool evaluated = iteration % 5 == 0 || iteration == 12;
		assert_true(isnan(rows[r][4]) && isnan(rows[r][5]));
		assert_true(evaluated ? !isnan(rows[r][6]) && !isnan(rows[r][7]) : isnan(rows[r][6]) && isnan(rows[r][7]));
		before = iteration;
	}
	/* the check can fail: a row over two iterations is not either one's */
	assert_true(rows[0][2] != each[1][2] && rows[0][2] != each[0][2]);
}

/* --validation N holds the last N training images out and evaluates on
 * them as the run goes, the test split at the end; --keep-best keeps the
 * weights of the lowest validation error, which are the run's at that
 * iteration; a run stopped and resumed keeps both; and what does not fit
 * is refused. */
static void test_binary_validates_and_keeps_the_best(void **unused)
{
	(void)unused;
	char command[8192], out[16384], log[400], best[400], message[2048];
	double rows[16][10];
	snprintf(log, sizeof log, "%s/validated.csv", scratch);
	snprintf(best, sizeof best, "%s/best.w", scratch);
	const char *tiny = "tests/bin/tiny-f64 train --synthetic --batch 16 --iterations 12 --eval-every 3 "
			   "--set lr.base=0.5 --validation 64";
	snprintf(command, sizeof command, "%s/%s --keep-best %s --log %s", build, tiny, best, log);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, " training (and 64 held out to validate on, --validation) and ");
	expect_in(out, "validation error: ");
	int n = read_log(log, rows, 16);
	assert_int_equal(n, 12); /* --log-every: about 250 rows, so every iteration */
	int lowest = -1;
	for (int r = 0; r < n; r++) {
		bool evaluated = (r + 1) % 3 == 0;
		assert_true(evaluated ? !isnan(rows[r][5]) : isnan(rows[r][5]));
		assert_true(r + 1 == 12 ? !isnan(rows[r][7]) : isnan(rows[r][7])); /* the test split at the end */
		if (evaluated && (lowest < 0 || rows[r][5] < rows[lowest][5]))
			lowest = r;
	}
	snprintf(message, sizeof message, "best: validation error %.2f%% at iteration %d, its weights in %s\n",
		 100 * rows[lowest][5], lowest + 1, best);
	expect_in(out, message);
	/* the kept weights are the run's at that iteration: stopped there, its
	 * checkpoint's weights measure the same */
	snprintf(command, sizeof command,
		 "RESGEN_TEST_RAISE=15@%1$d %2$s/%3$s --checkpoint %4$s/at-best.ckpt > /dev/null 2>&1; "
		 "for w in %5$s %4$s/at-best.ckpt; do %2$s/tests/bin/tiny-f64 evaluate --synthetic --load-weights $w | "
		 "grep '^error'; done",
		 lowest + 1, build, tiny, scratch, best);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	char *second = strchr(out, '\n');
	assert_non_null(second);
	*second++ = '\0';
	assert_string_equal(out, second[0] ? strtok(second, "\n") : "");

	/* stopped at 7 and resumed: the same rows and the same best */
	char again[400], resumed_log[400];
	snprintf(again, sizeof again, "%s/best-again.w", scratch);
	snprintf(resumed_log, sizeof resumed_log, "%s/validated-again.csv", scratch);
	snprintf(command, sizeof command,
		 "RESGEN_TEST_RAISE=15@7 %1$s/%2$s --keep-best %3$s --log %4$s --checkpoint %5$s/v.ckpt --checkpoint-every 1 2>/dev/null "
		 "> /dev/null; %1$s/tests/bin/tiny-f64 train --synthetic --threads 2 --resume %5$s/v.ckpt --keep-best %3$s "
		 "--log %4$s > /dev/null",
		 build, tiny, again, resumed_log, scratch);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	assert_true(same_file(best, again));
	assert_true(same_rows(log, resumed_log));
	/* a resume that names another split is refused */
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 train --synthetic --resume %s/v.ckpt --validation 32",
		 build, scratch);
	snprintf(message, sizeof message,
		 "tiny: %s/v.ckpt: the run was started with --validation 64, and this command gives --validation 32; "
		 "leave the option out to resume\n", scratch);
	expect_failure(command, 2, message);
	/* too many held out */
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 train --synthetic --batch 16 --validation 999990",
		 build);
	run(command, out, sizeof out, message, sizeof message);
	expect_in(message, "tiny: --validation 999990 leaves ");
	expect_in(message, " training images to train on, fewer than a batch of 16; hold out fewer\n");
}

/* --epochs N (or --set epochs=N) says the run's length in passes over the
 * training images, printed as both; with --iterations too, it is refused,
 * naming both as written. Where stderr is a file, a progress line comes
 * every so often (here, at every iteration). */
static void test_binary_counts_epochs_and_shows_progress(void **unused)
{
	(void)unused;
	char command[4096], out[16384], err[16384], message[1024];
	snprintf(command, sizeof command,
		 "RESGEN_TEST_PROGRESS=0 %s/tests/bin/tiny-f64 train --synthetic --batch 16 --train-limit 40 --set epochs=2 "
		 "--eval-every 100",
		 build);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	/* 2 x 40 images at 16 a batch: 5 iterations */
	expect_in(out, "data: synthetic, 40 training and ");
	expect_in(out, "; batch 16, 5 iterations (2 epochs), ");
	expect_in(err, "  iteration 2/5: loss ");
	expect_in(err, "  iteration 5/5: loss ");
	expect_in(err, " images/s, ETA ");
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 train --synthetic --set epochs=2 --iterations 6", build);
	snprintf(message, sizeof message,
		 "tiny: --set epochs=2 and --iterations 6 both set the run's length; give one of them; see "
		 "%s/tests/bin/tiny-f64 --help\n", build);
	expect_failure(command, 2, message);
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 train --synthetic --iterations 6 --epochs 1", build);
	snprintf(message, sizeof message,
		 "tiny: --iterations 6 and --epochs 1 both set the run's length; give one of them; see "
		 "%s/tests/bin/tiny-f64 --help\n", build);
	expect_failure(command, 2, message);
}

/* evaluate measures saved weights as train's last evaluation measured
 * them (the normalisation they keep, the same test images), and
 * its confusion matrix, drawn by make plot-confusion's script, accounts
 * for every image. */
static void test_binary_evaluate_measures_saved_weights(void **unused)
{
	(void)unused;
	char command[8192], out[8192], trained[8192];
	snprintf(command, sizeof command,
		 "%1$s/tests/bin/fashion-tiny-f32 train --train-limit 1200 --test-limit 300 --iterations 30 "
		 "--eval-every 30 --save-weights %2$s/evaluated.w | grep '^test error'",
		 build, scratch);
	assert_int_equal(run(command, trained, sizeof trained, NULL, 0), 0);
	/* the weights keep the run's normalisation: no --train-limit needed,
	 * and one given is refused as changing nothing */
	snprintf(command, sizeof command,
		 "%1$s/tests/bin/fashion-tiny-f32 evaluate --load-weights %2$s/evaluated.w --train-limit 1200 "
		 "--test-limit 300", build, scratch);
	char message[2048];
	snprintf(message, sizeof message,
		 "fashion-tiny: --train-limit: %s/evaluated.w keeps the normalisation it was trained with (1200 "
		 "training images), so the limit would change nothing on the test split; leave it out\n", scratch);
	expect_failure(command, 2, message);
	snprintf(command, sizeof command,
		 "%1$s/tests/bin/fashion-tiny-f32 evaluate --load-weights %2$s/evaluated.w "
		 "--test-limit 300 --confusion %2$s/confusion.csv",
		 build, scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, "inputs normalised by the 1200 training images' channel statistics, as stored with the weights");
	/* "test error: 41.00% on 300 test images..." and "error 41.00% (123 of 300)..." */
	char percent[32];
	assert_int_equal(sscanf(trained, "test error: %31s", percent), 1);
	char expected[64];
	snprintf(expected, sizeof expected, "\nerror %s (", percent);
	if (!strstr(out, expected))
		fail_msg("train's last evaluation said %s; evaluate said:\n%s", trained, out);
	expect_in(out, " of 300), top-5 error ");
	expect_in(out, "class              images   error  most often taken for\n");
	expect_in(out, "evaluate: ");
	snprintf(command, sizeof command,
		 "(head -1 %1$s/confusion.csv; tail -n +2 %1$s/confusion.csv | tr ',' '\n' | "
		 "awk 'NR %% 11 != 1 { n += $1 } END { print n }'; "
		 "rm -f %1$s/confusion.png && gnuplot -c tools/plot-confusion.gp %1$s/confusion.csv %1$s/confusion && "
		 "head -c 4 %1$s/confusion.png | od -An -c | tr -d ' \n')",
		 scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "true\\predicted,T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle "
				 "boot\n300\n211PNG");
}

/* --set changes the recipe at run time: its values reach the schedule (the
 * log's rates), a cosine falls as it should, checkpoints keep the recipe
 * (a resume without --set goes on with it; one that contradicts it is
 * refused), and a run extended past its end by --resume --iterations is
 * bitwise the longer run where the schedule does not depend on the
 * length. Bad keys and values get the spec's messages, located. */
static void test_binary_set_changes_the_recipe(void **unused)
{
	(void)unused;
	char command[8192], out[8192], message[4096];
	const char *tiny = "tests/bin/tiny-f64 train --synthetic --batch 16 --threads 2";
	snprintf(command, sizeof command,
		 "(%1$s/%2$s --iterations 20 --eval-every 5 --set lr.warmup.iterations=0 --set lr.schedule=cosine "
		 "--set lr.base=0.2 --log %3$s/cosine.csv | grep '^recipe' && grep -v ',,,,,' %3$s/cosine.csv | cut -d, -f2 | tail -n +2 | "
		 "tr '\\n' ' ')",
		 build, tiny, scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, "recipe: lr 0.2, then a cosine down to 0 at iteration 20; momentum 0.9");
	expect_in(out, "; --set lr.base=0.2 lr.schedule=cosine lr.warmup.iterations=0\n");
	/* a row's rate is its last iteration's: iterations 4, 9, 14 and 19 of 20 */
	double rates[4];
	const char *row = strchr(out, '\n') + 1;
	assert_int_equal(sscanf(row, "%lf %lf %lf %lf", &rates[0], &rates[1], &rates[2], &rates[3]), 4);
	for (int i = 0; i < 4; i++)
		assert_true(fabs(rates[i] - 0.1 * (1 + cos(M_PI * (5 * i + 4) / 20.0))) < 1e-15);

	/* extended: 20 iterations, then to 40, against 40 at once (a step at
	 * iteration 30 in both) */
	snprintf(command, sizeof command,
		 "%1$s/%2$s --iterations 40 --set lr.steps=[30] --save-weights %3$s/whole.w > /dev/null && "
		 "%1$s/%2$s --iterations 20 --set lr.steps=[30] --checkpoint %3$s/set.ckpt > /dev/null && "
		 "%1$s/%2$s --resume %3$s/set.ckpt --iterations 40 --save-weights %3$s/extended.w | "
		 "grep '^recipe\\|^extended'",
		 build, tiny, scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, "recipe: lr 0.01, times 0.1 at iteration 30;");
	expect_in(out, "extended from 20 to 40 iterations: the 20 done kept the rates of the 20-iteration run;");
	char whole[400], extended[400];
	snprintf(whole, sizeof whole, "%s/whole.w", scratch);
	snprintf(extended, sizeof extended, "%s/extended.w", scratch);
	assert_true(same_file(whole, extended));

	/* the checkpoint keeps the recipe: a contradicting --set is refused */
	snprintf(command, sizeof command, "%s/%s --resume %s/set.ckpt --iterations 40 --set lr.steps=[20]", build, tiny,
		 scratch);
	snprintf(message, sizeof message,
		 "tiny: %s/set.ckpt: the run was started with lr.steps=[30], and this command gives --set "
		 "lr.steps=[20]; leave the --set out to resume\n",
		 scratch);
	expect_failure(command, 2, message);

	const char *cases[][2] = {
		{"--set lr.bsae=0.1", "--set lr.bsae=0.1, column 7: 'lr.bsae' is not a key --set takes; did you mean "
				      "'lr.base'? (keys that change the network's code, under net: and data:, need a spec "
				      "and a build)"},
		{"--set train.lr.base=0x1", "--set train.lr.base=0x1, column 21: 'lr.base' must be a number, not '0x1'; "
					    "write it in plain decimal, such as 0.1 or 1e-4 (no quotes, hex, .inf or .nan)"},
		{"--set momentum=1", "--set momentum=1, column 16: 'momentum' is 1, out of range; it must be at least 0 "
				     "and at most 0.999"},
		{"--set lr.steps=[0.5,300]", "--set lr.steps=[0.5,300], column 21: 'lr.steps' mixes iterations and "
					     "fractions of the run; give all as iterations, such as [32000,48000], or all "
					     "as fractions, such as [0.5,0.75]"},
		{"--set lr.steps=[300,200]", "--set lr.steps=[300,200], column 21: 'lr.steps' must increase, but 200 "
					     "follows 300; list them in order"},
		{"--set lr.schedule=cosine --set lr.gamma=0.5",
		 "--set lr.gamma is for the step schedule, and this run's is cosine, which falls from lr.base to 0 over "
		 "the run; leave it out, or --set lr.schedule=step"},
		{"--set augment.flip=yes", "--set augment.flip=yes, column 20: 'augment.flip' must be true or false, not "
					   "'yes'"},
		{"--set lr.base", "--set lr.base, column 7: give KEY=VALUE, such as lr.base=0.05"},
		{"--set momentum=0.5 --set momentum=0.6", "--set momentum=0.6, column 7: 'momentum' is set twice; set it "
							  "once"},
		{"--set iterations=0", "--set iterations=0 needs a whole number from 1 to 1000000000"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 train %s", build, cases[i][0]);
		snprintf(message, sizeof message, "tiny: %s; see %s/tests/bin/tiny-f64 --help\n", cases[i][1], build);
		expect_failure(command, 2, message);
	}
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

/* On a processor with AVX2 and FMA, BLIS must run real kernels, not its
 * portable C ones: Debian's BLIS 0.9 takes Zen 4 and Zen 5 processors for
 * unknown, and runtime/machine/gemm.c points them at the skx or zen3 kernels (3.3
 * times faster on a Zen 5). An Intel processor with AVX-512 must run the
 * skx kernels, whatever its name string says. */
/* Threads that wait spin briefly, then sleep (runtime/parallel/threads.h): the
 * binary gives the libgomp linked into it the short spin, unless the user
 * set GOMP_SPINCOUNT or OMP_WAIT_POLICY, and its machine line says which
 * wait is in force. The weights are the same bits whichever wait ran. */
static void test_binary_waits_briefly_unless_told(void **unused)
{
	(void)unused;
	static const char *const cases[][2] = {
		{"env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY", "; threads wait: spin 1000, then sleep; "},
		{"env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=5", "; threads wait: GOMP_SPINCOUNT=5; "},
		{"env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive", "; threads wait: OMP_WAIT_POLICY=passive; "},
	};
	char command[4096], out[8192], weights[3][400];
	for (int i = 0; i < 3; i++) {
		snprintf(weights[i], sizeof weights[i], "%s/waits-%d", scratch, i);
		snprintf(command, sizeof command,
			 "%s %s/tests/bin/tiny-f32 train --synthetic --iterations 4 --batch 8 --threads 2 --save-weights %s",
			 cases[i][0], build, weights[i]);
		assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
		expect_in(out, cases[i][1]);
		expect_in(out, " other task");
	}
	assert_true(same_file(weights[0], weights[1]));
	assert_true(same_file(weights[0], weights[2]));
}

/* The thread count, not the team that runs a pass (threads_team), sets the
 * bits: --threads 2 on a team of one (RESGEN_TEAM=1) dumps the same state
 * after two steps as on two, and --threads 1 another; a run on a smaller
 * team says how many passes it was. */
static void test_binary_team_keeps_the_bits(void **unused)
{
	(void)unused;
	char command[4096], out[8192], dumps[3][400];
	static const char *const runs[3][2] = {{"RESGEN_TEAM=1", "2"}, {"RESGEN_TEAM=2", "2"}, {"RESGEN_TEAM=1", "1"}};
	for (int i = 0; i < 3; i++) {
		snprintf(dumps[i], sizeof dumps[i], "%s/team-%d.dump", scratch, i);
		snprintf(command, sizeof command, "env %s %s/tests/bin/tiny-f32 step --synthetic --batch 37 --steps 2 --threads %s --dump %s",
			 runs[i][0], build, runs[i][1], dumps[i]);
		assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	}
	assert_true(same_file(dumps[0], dumps[1]));
	assert_false(same_file(dumps[0], dumps[2]));
	snprintf(command, sizeof command, "env RESGEN_TEAM=1 %s/tests/bin/tiny-f32 train --synthetic --iterations 3 --batch 8 --threads 2",
		 build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	const char *line = strstr(out, "\nthreads: ");
	assert_non_null(line);
	long fewer = 0, passes = -1;
	assert_int_equal(sscanf(line, "\nthreads: %ld of %ld passes ran on fewer than 2 threads, while other work kept cores busy", &fewer, &passes), 2);
	assert_true(passes >= 3);
	assert_int_equal(fewer, passes);
}

/* generated/ is the plain build's emitted code, which users read and diff;
 * a build folder of other settings has its own generator, and emits its
 * own copy, so that building there (the sanitizer build) leaves the plain
 * build's objects up to date. make -n says where each would write. */
static void test_make_build_folders_emit_their_own_code(void **unused)
{
	(void)unused;
	static char out[65536];
	char command[4096], expected[1024];
	snprintf(command, sizeof command,
		 "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n BUILD=%1$s/other %1$s/other/obj/net/demo.o", scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	snprintf(expected, sizeof expected, "/bin/resgen generate specs/demo.yaml -o %s/other/generated/demo\n", scratch);
	expect_in(out, expected);
	assert_null(strstr(out, " -o generated/"));
	assert_int_equal(run("env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n -W specs/demo.yaml BUILD=build build/obj/net/demo.o",
			     out, sizeof out, NULL, 0),
			 0);
	expect_in(out, "build/bin/resgen generate specs/demo.yaml -o generated/demo\n");
}

static void test_binary_runs_vector_blis_kernels(void **unused)
{
	(void)unused;
	char command[4096], out[8192];
	snprintf(command, sizeof command,
		 "env -u BLIS_ARCH_TYPE %s/tests/bin/tiny-f32 train --synthetic --iterations 1 --batch 4",
		 build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	char *at = strstr(out, ", BLIS ");
	assert_non_null(at);
	char kernels[32] = {0};
	assert_int_equal(sscanf(at, ", BLIS %31s kernels", kernels), 1);
	__builtin_cpu_init();
	bool vector = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	print_message("BLIS kernels: %s (this processor %s AVX2 and FMA)\n", kernels,
		      vector ? "has" : "lacks");
	if (vector)
		assert_string_not_equal(kernels, "generic");
	bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
		      __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
		      __builtin_cpu_supports("avx512vl");
	if (__builtin_cpu_is("intel") && avx512)
		assert_string_equal(kernels, "skx");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binary_help_answers_questions),
		cmocka_unit_test(test_binary_rejects_bad_arguments),
		cmocka_unit_test(test_binary_points_pytorch_habits_to_their_spelling),
		cmocka_unit_test(test_binary_rejects_missing_and_broken_idx_files),
		cmocka_unit_test(test_binary_rejects_truncated_cifar),
		cmocka_unit_test(test_binary_reads_cifar_binary_files),
		cmocka_unit_test(test_binary_bad_spec_emits_nothing),
		cmocka_unit_test(test_binary_same_seed_and_threads_give_identical_weights),
		cmocka_unit_test(test_binary_waits_briefly_unless_told),
		cmocka_unit_test(test_binary_team_keeps_the_bits),
		cmocka_unit_test(test_binary_f32_agrees_with_f64),
		cmocka_unit_test(test_binary_rejects_weights_of_another_network),
		cmocka_unit_test(test_binary_resumes_exactly),
		cmocka_unit_test(test_binary_resumes_on_other_threads),
		cmocka_unit_test(test_binary_refuses_a_processor_without_its_instructions),
		cmocka_unit_test(test_binary_refuses_bad_checkpoints),
		cmocka_unit_test(test_binary_resumes_across_versions),
		cmocka_unit_test(test_binary_gradflow_measures_the_units),
		cmocka_unit_test(test_plots_draw_a_log_and_gradflow),
		cmocka_unit_test(test_study_runs_resumes_and_reports),
		cmocka_unit_test(test_study_shares_one_binary_across_recipes),
		cmocka_unit_test(test_resgen_summary_says_what_it_counts),
		cmocka_unit_test(test_resumed_rate_counts_its_own_images),
		cmocka_unit_test(test_binary_loss_falls_on_real_data),
		cmocka_unit_test(test_binary_evaluate_measures_saved_weights),
		cmocka_unit_test(test_binary_log_columns_mean_one_thing),
		cmocka_unit_test(test_binary_validates_and_keeps_the_best),
		cmocka_unit_test(test_binary_counts_epochs_and_shows_progress),
		cmocka_unit_test(test_binary_set_changes_the_recipe),
		cmocka_unit_test(test_binary_options_belong_to_their_command),
		cmocka_unit_test(test_binary_checks_outputs_before_training),
		cmocka_unit_test(test_binary_save_follows_no_planted_link),
		cmocka_unit_test(test_binary_log_to_a_full_disk_fails),
		cmocka_unit_test(test_binary_refuses_weights_it_cannot_trust),
		cmocka_unit_test(test_binary_checks_parameters_at_each_evaluation),
		cmocka_unit_test(test_binary_cross_checks_idx_headers_before_reading),
		cmocka_unit_test(test_resgen_spec_path_never_reaches_code),
		cmocka_unit_test(test_resgen_refuses_networks_too_big_for_memory),
		cmocka_unit_test(test_binary_runs_vector_blis_kernels),
		cmocka_unit_test(test_make_build_folders_emit_their_own_code),
	};
	command_only_some();
	return cmocka_run_group_tests_name("binaries", tests, setup, NULL);
}
