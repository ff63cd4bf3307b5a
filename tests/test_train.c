/* Training and resuming as users run them: the same seed gives the same
 * weights, a run stopped anywhere resumes bitwise (on other threads, under
 * another version), f32 agrees with f64, the loss falls on real data, the
 * log's columns, validation and the best weights, epochs and progress,
 * --set, and the gradient's flow. */
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
	return command_setup("train");
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

/* A network's identity is what it computes, not the version of resgen that
 * built it: a checkpoint written by one version resumes in a binary of
 * another (tiny-f64's network, another version string), says which
 * versions wrote and read it, and ends on the weights of the run never
 * stopped. (Nor is the text of the templates or kernels part of it:
 * test_refusals' test_identity_is_what_the_network_computes.) */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binary_reads_cifar_binary_files),
		cmocka_unit_test(test_binary_same_seed_and_threads_give_identical_weights),
		cmocka_unit_test(test_binary_f32_agrees_with_f64),
		cmocka_unit_test(test_binary_resumes_exactly),
		cmocka_unit_test(test_binary_resumes_on_other_threads),
		cmocka_unit_test(test_binary_resumes_across_versions),
		cmocka_unit_test(test_binary_gradflow_measures_the_units),
		cmocka_unit_test(test_resumed_rate_counts_its_own_images),
		cmocka_unit_test(test_binary_loss_falls_on_real_data),
		cmocka_unit_test(test_binary_log_columns_mean_one_thing),
		cmocka_unit_test(test_binary_validates_and_keeps_the_best),
		cmocka_unit_test(test_binary_counts_epochs_and_shows_progress),
		cmocka_unit_test(test_binary_set_changes_the_recipe),
	};
	command_only_some();
	return cmocka_run_group_tests_name("train and resume", tests, setup, NULL);
}
