/* The binaries as users run them: help, argument errors, broken data files,
 * bad specs, determinism, f32 against f64, and a short real training run. */
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

#include "tensor_file.h"

static char build[256], scratch[300];

/* Runs command with stdout and stderr captured; returns the exit status. */
static int run(const char *command, char *out, size_t out_size, char *err, size_t err_size)
{
	char full[4096], out_path[400], err_path[400];
	snprintf(out_path, sizeof out_path, "%s/stdout", scratch);
	snprintf(err_path, sizeof err_path, "%s/stderr", scratch);
	snprintf(full, sizeof full, "%s >%s 2>%s", command, out_path, err_path);
	int status = system(full);
	const char *paths[] = {out_path, err_path};
	char *texts[] = {out, err};
	size_t sizes[] = {out_size, err_size};
	for (int i = 0; i < 2; i++) {
		if (!texts[i])
			continue;
		FILE *file = fopen(paths[i], "r");
		size_t got = file ? fread(texts[i], 1, sizes[i] - 1, file) : 0;
		texts[i][got] = '\0';
		if (file)
			fclose(file);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void expect_failure(const char *command, int status, const char *message)
{
	char err[2048];
	int got = run(command, NULL, 0, err, sizeof err);
	if (got != status || strcmp(err, message) != 0)
		print_error("command: %s\nexpected %d: %s     got %d: %s", command, status, message, got,
			    err);
	assert_int_equal(got, status);
	assert_string_equal(err, message);
}

static int setup(void **unused)
{
	(void)unused;
	snprintf(build, sizeof build, "%s", getenv("BUILD") ? getenv("BUILD") : "build");
	snprintf(scratch, sizeof scratch, "%s/tests/scratch-binaries", build);
	char command[4096];
	snprintf(command, sizeof command, "rm -rf %s && mkdir -p %s", scratch, scratch);
	return system(command);
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
		 "demo: fly is not a command (train, step, init, info); see %s/bin/demo --help\n", build);
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

	/* A header announcing 100 images of 28x28, then only 1000 bytes. */
	unsigned char truncated[16 + 1000] = {0, 0, 8, 3, 0, 0, 0, 100, 0, 0, 0, 28, 0, 0, 0, 28};
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
}

static void test_binary_bad_spec_emits_nothing(void **unused)
{
	(void)unused;
	char spec[400], out_dir[500], command[4096], message[4096];
	snprintf(spec, sizeof spec, "%s/bad.yaml", scratch);
	snprintf(out_dir, sizeof out_dir, "%s/bad-out", scratch);
	FILE *file = fopen(spec, "w");
	assert_non_null(file);
	fputs("name: bad\ndata: {set: cifar10}\nnet: {unit: basic, ordering: original, depth: 21}\n", file);
	fclose(file);
	snprintf(command, sizeof command, "%s/bin/resgen generate %s -o %s", build, spec, out_dir);
	snprintf(message, sizeof message,
		 "%s:3:47: 'depth' 21 is not of the form 6n+2 for basic units in 3 stages; the nearest "
		 "valid depths are 20 and 26\n",
		 spec);
	expect_failure(command, 2, message);
	struct stat st;
	assert_int_not_equal(stat(out_dir, &st), 0);
}

static bool same_file(const char *a, const char *b)
{
	char command[4096];
	snprintf(command, sizeof command, "cmp -s %s %s", a, b);
	return system(command) == 0;
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
	double first_loss = -1, last_loss = -1, first_test = -1, last_test = -1;
	int rows = 0;
	assert_non_null(fgets(line, sizeof line, file)); /* header */
	while (fgets(line, sizeof line, file)) {
		long iteration;
		double lr, train_loss, train_error, test_loss;
		assert_int_equal(sscanf(line, "%ld,%lf,%lf,%lf,%lf", &iteration, &lr, &train_loss,
					&train_error, &test_loss),
				 5);
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
	assert_true(last_loss < 0.8 * first_loss);
	assert_true(last_test < first_test);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binary_help_answers_questions),
		cmocka_unit_test(test_binary_rejects_bad_arguments),
		cmocka_unit_test(test_binary_rejects_missing_and_broken_idx_files),
		cmocka_unit_test(test_binary_rejects_truncated_cifar),
		cmocka_unit_test(test_binary_reads_cifar_binary_files),
		cmocka_unit_test(test_binary_bad_spec_emits_nothing),
		cmocka_unit_test(test_binary_same_seed_and_threads_give_identical_weights),
		cmocka_unit_test(test_binary_f32_agrees_with_f64),
		cmocka_unit_test(test_binary_rejects_weights_of_another_network),
		cmocka_unit_test(test_binary_loss_falls_on_real_data),
	};
	return cmocka_run_group_tests_name("binaries", tests, setup, NULL);
}
