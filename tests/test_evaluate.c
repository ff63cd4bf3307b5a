/* What evaluate and step report on weights that tie, diverge or are not
 * numbers, on forged metadata, on the validation split and in the
 * predictions' header, and the PyTorch tool's evaluation of the same
 * checkpoint. Each case failed on the code before its fix. */
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
	return command_setup("evaluate");
}

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

/* fashion-tiny-f32 trained 4 steps: its weights (with their metadata) at
 * weights, its checkpoint at checkpoint. */
static void train_fashion_tiny(const char *weights, const char *checkpoint)
{
	char options[2048], err[4096];
	snprintf(options, sizeof options,
		 "train --iterations 4 --train-limit 200 --test-limit 50 --save-weights %s --checkpoint %s", weights,
		 checkpoint);
	if (binary("", "fashion-tiny-f32", options, NULL, 0, err, sizeof err) != 0)
		fail_msg("training failed: %s", err);
}

/* The entry called name in f; its values replaced by count values. */
static void replace_values(struct tensor_file *f, const char *name, const double *values, long count)
{
	for (int i = 0; i < f->count; i++)
		if (strcmp(f->entries[i].name, name) == 0) {
			free(f->entries[i].values);
			f->entries[i].values = malloc((size_t)count * sizeof(double));
			assert_non_null(f->entries[i].values);
			memcpy(f->entries[i].values, values, (size_t)count * sizeof(double));
			f->entries[i].count = count;
			return;
		}
	fail_msg("no tensor %s", name);
}

/* Text as a tensor of bytes, as state.c stores it. */
static long text_values(const char *text, double *values)
{
	long n = 0;
	for (const unsigned char *c = (const unsigned char *)text; *c; c++)
		values[n++] = *c;
	return n;
}

/* Issue 77, item 9: the predictions' probability columns are headed by
 * the classes' names; a set without names keeps p0, p1... */
static void test_predictions_are_headed_by_class_names(void **unused)
{
	(void)unused;
	char options[1024], path[400], out[8192];
	snprintf(path, sizeof path, "%s/predictions.csv", scratch);
	snprintf(options, sizeof options, "init --save-weights %s/init.weights", scratch);
	assert_int_equal(binary("", "fashion-tiny-f32", options, NULL, 0, NULL, 0), 0);
	snprintf(options, sizeof options, "evaluate --load-weights %s/init.weights --test-limit 3 --train-limit 100 "
		 "--predictions %s", scratch, path);
	assert_int_equal(binary("", "fashion-tiny-f32", options, NULL, 0, NULL, 0), 0);
	snprintf(options, sizeof options, "head -n 1 %s", path);
	assert_int_equal(run(options, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "image,label,predicted,T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,"
				 "Bag,Ankle boot\n");
	snprintf(options, sizeof options, "init --save-weights %s/tiny.weights", scratch);
	assert_int_equal(binary("", "tiny-f32", options, NULL, 0, NULL, 0), 0);
	snprintf(options, sizeof options, "evaluate --synthetic --load-weights %s/tiny.weights --predictions %s",
		 scratch, path);
	assert_int_equal(binary("", "tiny-f32", options, NULL, 0, NULL, 0), 0);
	snprintf(options, sizeof options, "head -n 1 %s", path);
	assert_int_equal(run(options, out, sizeof out, NULL, 0), 0);
	assert_int_equal(strncmp(out, "image,label,predicted,p0,p1,", 28), 0);
}

/* Issue 77, item 9: evaluate measures the images a run held out with
 * --validation N as the run measured them (its log's last val_error and
 * val_loss), and refuses the one option without the other. */
static void test_evaluate_measures_the_validation_split(void **unused)
{
	(void)unused;
	char options[1024], weights[400], log[400], command[1024], out[8192], err[4096], expected[1024];
	snprintf(weights, sizeof weights, "%s/validation.weights", scratch);
	snprintf(log, sizeof log, "%s/validation.csv", scratch);
	snprintf(options, sizeof options,
		 "train --iterations 40 --train-limit 300 --test-limit 100 --validation 50 --log %s --save-weights %s", log,
		 weights);
	assert_int_equal(binary("", "fashion-tiny-f32", options, NULL, 0, NULL, 0), 0);
	/* the last row's val_loss and val_error, as evaluate prints them */
	snprintf(command, sizeof command,
		 "awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } END { printf \"%%.2f%%%% (%%d of 50), top-5 "
		 "\", 100 * $c[\"val_error\"], 50 * $c[\"val_error\"] + 0.5; printf \"%%.9f\", $c[\"val_loss\"] }' %s",
		 log);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	char errors[128], loss[64];
	const char *top5 = strstr(out, "top-5 ");
	assert_non_null(top5);
	snprintf(errors, sizeof errors, "error %.*s", (int)(top5 - out), out);
	snprintf(loss, sizeof loss, "loss %.7s", top5 + 6);
	snprintf(options, sizeof options, "evaluate --load-weights %s --split validation --validation 50 --train-limit 300",
		 weights);
	assert_int_equal(binary("", "fashion-tiny-f32", options, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "on the validation (the last training images held out) split of fashion-mnist, 50 images");
	expect_in(out, errors);
	expect_in(out, loss);

	snprintf(options, sizeof options, "evaluate --load-weights %s --split validation", weights);
	assert_int_equal(binary("", "fashion-tiny-f32", options, NULL, 0, err, sizeof err), 2);
	snprintf(expected, sizeof expected,
		 "fashion-tiny: --split validation measures the training images a run held out with --validation N; give "
		 "the run's --validation N (and its --train-limit, if it had one); see %s/tests/bin/fashion-tiny-f32 "
		 "--help\n",
		 build);
	assert_string_equal(err, expected);
	snprintf(options, sizeof options, "evaluate --load-weights %s --validation 50", weights);
	assert_int_equal(binary("", "fashion-tiny-f32", options, NULL, 0, err, sizeof err), 2);
	expect_in(err, "fashion-tiny: --validation locates the images a run held out, which only --split validation "
		       "measures; give --split validation, or leave --validation out; see ");
}

/* 14. Metadata that no run could have stored is refused by the binaries'
 * evaluate and by the PyTorch tool's evaluate and export, in one line of
 * the same words, and nothing is written; weights with none are
 * normalised by the training images', and the binary says so. */
static void test_forged_metadata_is_refused(void **unused)
{
	(void)unused;
	char w[400], ckpt[400], bad[400], error[1024], options[2048], arguments[2048], err[4096], out[8192],
		expected[2048], pt[400];
	snprintf(w, sizeof w, "%s/meta.weights", scratch);
	snprintf(ckpt, sizeof ckpt, "%s/meta.ckpt", scratch);
	snprintf(bad, sizeof bad, "%s/forged.weights", scratch);
	snprintf(pt, sizeof pt, "%s/forged.pt", scratch);
	train_fashion_tiny(w, ckpt);
	const char *forged = "; were these weights edited or damaged?";
	double values[64];
	static const struct {
		const char *name;
		const char *text;     /* the tensor's new bytes, or NULL for number */
		double number;        /* its one value (a second, 0.3, for two) */
		int two;              /* two values */
		const char *message;  /* after "BAD: " */
	} cases[] = {
		{"meta/input_std", NULL, 0, 0,
		 "meta/input_std value 0 is 0; a standard deviation of pixels in 0..1 units is above 0 and at most 0.5 "
		 "(1 for images of one value)"},
		{"meta/input_std", NULL, -0.3, 0,
		 "meta/input_std value 0 is -0.3; a standard deviation of pixels in 0..1 units is above 0 and at most "
		 "0.5 (1 for images of one value)"},
		{"meta/input_mean", NULL, 7, 0, "meta/input_mean value 0 is 7; a mean of pixels in 0..1 units is from 0 to 1"},
		{"meta/input_mean", NULL, 0.2, 1, "meta/input_mean has 2 values, but fashion-tiny takes 1 channel"},
		{"meta/input_images", NULL, 2.5, 0,
		 "meta/input_images is not a whole number of training images from 1 to 1000000000"},
		{"meta/class_names", "a\nb\n", 0, 0,
		 "meta/class_names holds another number of names, but fashion-tiny has 10 classes, a name each of 1 to "
		 "1023 bytes of printable UTF-8"},
		{"meta/class_names", "a\nb\nc\nd\ne\nf\ng\nh\ni\n\033[31mj\n", 0, 0,
		 "meta/class_names holds unprintable or overlong names, but fashion-tiny has 10 classes, a name each of 1 "
		 "to 1023 bytes of printable UTF-8"},
		{"meta/class_names", "a\nb\nc\nd\ne\nf\ng\nh\ni\n\xc3(\n", 0, 0,
		 "meta/class_names holds unprintable or overlong names, but fashion-tiny has 10 classes, a name each of 1 "
		 "to 1023 bytes of printable UTF-8"},
		{"meta/data_set", "fashion\033[31m-mnist", 0, 0,
		 "meta/data_set is not a data set's name (1 to 63 printable characters)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tensor_file f;
		assert_int_equal(tensor_file_load(&f, w, error, sizeof error), 0);
		long count = 1;
		values[0] = cases[i].number;
		if (cases[i].text)
			count = text_values(cases[i].text, values);
		else if (cases[i].two)
			values[count++] = 0.3;
		replace_values(&f, cases[i].name, values, count);
		assert_int_equal(tensor_file_save(&f, bad, error, sizeof error), 0);
		tensor_file_free(&f);

		snprintf(options, sizeof options, "evaluate --load-weights %s --test-limit 10", bad);
		assert_int_equal(binary("", "fashion-tiny-f32", options, out, sizeof out, err, sizeof err), 2);
		snprintf(expected, sizeof expected, "fashion-tiny: %s: %s%s\n", bad, cases[i].message, forged);
		assert_string_equal(err, expected);

		snprintf(arguments, sizeof arguments, "evaluate tests/specs/fashion-tiny.yaml %s --test-limit 10", bad);
		assert_int_equal(torch_tool(arguments, NULL, 0, err, sizeof err), 2);
		snprintf(expected, sizeof expected, "resgen_torch: %s: %s%s\n", bad, cases[i].message, forged);
		assert_string_equal(err, expected);
		if (i > 0) /* the export reads them as evaluate does: checked once */
			continue;
		snprintf(arguments, sizeof arguments, "export tests/specs/fashion-tiny.yaml %s %s --onnx %s.onnx", bad,
			 pt, pt);
		assert_int_equal(torch_tool(arguments, NULL, 0, err, sizeof err), 2);
		assert_string_equal(err, expected);
		assert_int_not_equal(access(pt, F_OK), 0);
	}

	/* weights that store no normalisation: the training images', said */
	snprintf(options, sizeof options, "init --save-weights %s", bad);
	assert_int_equal(binary("", "fashion-tiny-f32", options, NULL, 0, NULL, 0), 0);
	snprintf(options, sizeof options, "evaluate --load-weights %s --test-limit 10 --train-limit 200", bad);
	assert_int_equal(binary("", "fashion-tiny-f32", options, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "inputs normalised by the 200 training images' channel statistics, computed now (the weights "
		       "store none)");
}

/* 15. The PyTorch tool evaluates a checkpoint as the binaries do (its
 * weights, its seal checked), and refuses a damaged one. */
static void test_torch_tool_evaluates_a_checkpoint(void **unused)
{
	(void)unused;
	char w[400], ckpt[400], bad[400], options[2048], arguments[2048], err[4096], expected[1024];
	static char out[16384], tool_out[16384];
	snprintf(w, sizeof w, "%s/checkpoint.weights", scratch);
	snprintf(ckpt, sizeof ckpt, "%s/checkpoint.ckpt", scratch);
	snprintf(bad, sizeof bad, "%s/damaged.ckpt", scratch);
	train_fashion_tiny(w, ckpt);
	snprintf(options, sizeof options, "evaluate --load-weights %s --test-limit 100", ckpt);
	assert_int_equal(binary("", "fashion-tiny-f32", options, out, sizeof out, err, sizeof err), 0);
	snprintf(arguments, sizeof arguments, "evaluate tests/specs/fashion-tiny.yaml %s --test-limit 100", ckpt);
	if (torch_tool(arguments, tool_out, sizeof tool_out, err, sizeof err) != 0)
		fail_msg("resgen_torch refused the checkpoint: %s", err);
	/* the same errors (the losses differ in float32's last digits) */
	const char *line = strstr(out, "\nerror ");
	assert_non_null(line);
	size_t length = (size_t)(strstr(line, ", loss") - line);
	char errors[256];
	snprintf(errors, sizeof errors, "%.*s", (int)length, line);
	expect_in(tool_out, errors);
	expect_in(tool_out, "inputs normalised as the weights file says (the statistics of 200 training images)");

	/* one byte changed inside: the seal does not match */
	snprintf(arguments, sizeof arguments,
		 "cp %1$s %2$s && printf '\\377' | dd of=%2$s bs=1 seek=100 conv=notrunc 2> /dev/null", ckpt, bad);
	assert_int_equal(system(arguments), 0);
	snprintf(arguments, sizeof arguments, "evaluate tests/specs/fashion-tiny.yaml %s --test-limit 10", bad);
	assert_int_equal(torch_tool(arguments, NULL, 0, err, sizeof err), 2);
	snprintf(expected, sizeof expected,
		 "resgen_torch: %s: its checksum does not match its contents; the file is damaged\n", bad);
	assert_string_equal(err, expected);
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
		 "rm -f %1$s/confusion.png && tools/confusion-table %1$s/confusion.csv %1$s/confusion.tsv && "
		 "gnuplot -c tools/plot-confusion.gp %1$s/confusion.tsv %1$s/confusion %1$s/confusion.csv && "
		 "head -c 4 %1$s/confusion.png | od -An -c | tr -d ' \n')",
		 scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "true\\predicted,T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle "
				 "boot\n300\n211PNG");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binary_evaluate_measures_saved_weights),
		cmocka_unit_test(test_evaluate_counts_ties_against_the_label),
		cmocka_unit_test(test_evaluate_refuses_outputs_that_are_not_numbers),
		cmocka_unit_test(test_step_stops_when_training_diverges),
		cmocka_unit_test(test_predictions_are_headed_by_class_names),
		cmocka_unit_test(test_evaluate_measures_the_validation_split),
		cmocka_unit_test(test_forged_metadata_is_refused),
		cmocka_unit_test(test_torch_tool_evaluates_a_checkpoint),
	};
	command_only_some();
	return cmocka_run_group_tests_name("what evaluate reports", tests, setup, NULL);
}
