/* The spec checker: every shipped spec parses; every class of error gives
 * its exact one-line message at its exact position. */
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "spec.h"
#include "yaml_tree.h"

static const char *scratch = "build/tests/scratch-spec.yaml";

static void write_spec(const char *text)
{
	FILE *file = fopen(scratch, "w");
	assert_non_null(file);
	fputs(text, file);
	fclose(file);
}

/* Asserts that text fails with "scratch:expected". */
static void expect_error(const char *text, const char *expected)
{
	write_spec(text);
	struct spec spec;
	struct diag d = {{0}};
	char full[1024];
	snprintf(full, sizeof full, "%s:%s", scratch, expected);
	int status = spec_load(&spec, scratch, &d);
	if (status == 0 || strcmp(d.text, full) != 0)
		print_error("expected: %s\n     got: %s\n", full, status == 0 ? "(no error)" : d.text);
	assert_int_equal(status, -1);
	assert_string_equal(d.text, full);
}

#define VALID_NET "net:\n  unit: basic\n  ordering: original\n  depth: 20\n"
#define VALID_HEAD "name: t\ndata:\n  set: cifar10\n"
#define INTEGER_ADVICE "; write it in plain decimal, such as 110 (no quotes, leading zeros or hex)"
#define NUMBER_ADVICE "; write it in plain decimal, such as 0.1 or 1e-4 (no quotes, hex, .inf or .nan)"

static void test_spec_every_shipped_spec_is_valid(void **unused)
{
	(void)unused;
	const char *patterns[] = {"specs/*.yaml", "tests/specs/*.yaml", "tests/specs/*/*.yaml",
				  "tests/golden/*.yaml"};
	int total = 0;
	for (size_t p = 0; p < sizeof patterns / sizeof patterns[0]; p++) {
		glob_t found;
		if (glob(patterns[p], 0, NULL, &found) != 0)
			continue;
		for (size_t i = 0; i < found.gl_pathc; i++) {
			struct spec spec;
			struct diag d = {{0}};
			int status = spec_load(&spec, found.gl_pathv[i], &d);
			if (status != 0)
				print_error("%s\n", d.text);
			assert_int_equal(status, 0);
			total++;
		}
		globfree(&found);
	}
	assert_true(total >= 25);
}

static void test_spec_defaults_are_the_papers(void **unused)
{
	(void)unused;
	write_spec(VALID_HEAD VALID_NET);
	struct spec spec;
	struct diag d = {{0}};
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_int_equal(spec.train.batch, 128);
	assert_int_equal(spec.train.iterations, 64000);
	assert_true(spec.train.lr_base == 0.1 && spec.train.warmup_lr == 0.01);
	assert_int_equal(spec.train.warmup_iterations, 400);
	assert_int_equal(spec.train.lr_step_count, 2);
	assert_int_equal(spec.train.lr_steps[0], 32000);
	assert_int_equal(spec.train.lr_steps[1], 48000);
	assert_true(spec.train.momentum == 0.9 && spec.train.weight_decay == 0.0001);
	assert_int_equal(spec.train.augment_pad, 4);
	assert_true(spec.train.augment_flip);
	assert_int_equal(spec.net.widths[2], 64);
	assert_string_equal(spec.data.dir, "data/cifar10");
	assert_int_equal(spec.data.classes, 10);
}

static void test_spec_unknown_key_suggests_nearest(void **unused)
{
	(void)unused;
	expect_error(VALID_HEAD "net:\n  unit: basic\n  ordring: original\n  depth: 20\n",
		     "6:3: unknown key 'ordring' in 'net'; did you mean 'ordering'?");
	expect_error("name: t\ndata:\n  set: cifar10\n" VALID_NET "train:\n  batchsize: 64\n",
		     "9:3: unknown key 'batchsize' in 'train'; did you mean 'batch'?");
}

static void test_spec_wrong_type(void **unused)
{
	(void)unused;
	expect_error(VALID_HEAD "net:\n  unit: basic\n  ordering: original\n  depth: abc\n",
		     "7:10: 'depth' must be an integer, not 'abc'" INTEGER_ADVICE);
	expect_error(VALID_HEAD "net:\n  unit: basic\n  ordering: original\n  depth: \"20\"\n",
		     "7:10: 'depth' must be an integer, not '20'" INTEGER_ADVICE);
	expect_error(VALID_HEAD VALID_NET "train:\n  momentum: [0.9]\n",
		     "9:13: 'momentum' must be a number, not a list");
	expect_error(VALID_HEAD VALID_NET "train:\n  augment: {flip: yes}\n",
		     "9:19: 'flip' must be true or false, not 'yes'");
	expect_error(VALID_HEAD "net: basic\n", "4:6: 'net' must be a mapping of keys to values, not a single value");
}

static void test_spec_value_out_of_range(void **unused)
{
	(void)unused;
	expect_error(VALID_HEAD VALID_NET "train:\n  batch: 0\n",
		     "9:10: 'batch' is 0, out of range; it must be from 1 to 4096");
	expect_error(VALID_HEAD VALID_NET "train:\n  lr: {base: -0.1}\n",
		     "9:14: 'base' is -0.1, out of range; it must be above 0 and at most 10");
	expect_error(VALID_HEAD VALID_NET "train:\n  lr: {steps: [48000, 32000]}\n",
		     "9:23: 'steps' must increase, but 32000 follows 48000; list them in order");
}

/* Rate steps as fractions of the run, and the warnings for a schedule that
 * cannot be meant: a warm-up as long as the run, a step past its end. */
/* The cosine schedule: read, with no steps (so no step warnings), and
 * steps or gamma beside it set aside with a warning. */
static void test_spec_cosine_schedule(void **unused)
{
	(void)unused;
	write_spec(VALID_HEAD VALID_NET "train:\n  iterations: 1000\n  lr: {schedule: cosine, warmup: {iterations: 0}}\n");
	struct spec spec;
	struct diag d = {{0}}, warnings[4];
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_int_equal(spec.train.lr_schedule, LR_SCHEDULE_COSINE);
	assert_int_equal(spec.train.lr_step_count, 0);
	assert_int_equal(spec_warnings(&spec, warnings, 4), 0);
	/* steps beside a cosine (as a study's override over a base with steps
	 * gives them) are set aside, with a warning where they are */
	write_spec(VALID_HEAD VALID_NET "train:\n  lr: {schedule: cosine, steps: [0.5]}\n");
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_int_equal(spec.train.lr_step_count, 0);
	assert_int_equal(spec_warnings(&spec, warnings, 4), 1);
	char expected[512];
	snprintf(expected, sizeof expected,
		 "%s:9:33: warning: the schedule is cosine, which falls from lr.base to 0 over the run: lr.steps "
		 "and lr.gamma are set aside",
		 scratch);
	assert_string_equal(warnings[0].text, expected);
	expect_error(VALID_HEAD VALID_NET "train:\n  lr: {schedule: cosin}\n",
		     "9:18: 'schedule' is 'cosin', which is not one of step or cosine; did you mean 'cosine'?");
}

/* net.precision: f32 by default; bf16 with the tiles arithmetic unless
 * pairs is named; an arithmetic without bf16, or another precision, is
 * refused where it is written. */
static void test_spec_precision(void **unused)
{
	(void)unused;
	struct spec spec;
	struct diag d = {{0}};
	write_spec(VALID_HEAD VALID_NET);
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_int_equal(spec.net.precision, PRECISION_F32);
	assert_string_equal(spec_precision_text(&spec), "f32");
	write_spec(VALID_HEAD VALID_NET "  precision: bf16\n");
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_int_equal(spec.net.precision, PRECISION_BF16);
	assert_string_equal(spec_precision_text(&spec), "bf16 (tiles)");
	write_spec(VALID_HEAD VALID_NET "  precision: bf16\n  arithmetic: pairs\n");
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_string_equal(spec_precision_text(&spec), "bf16 (pairs)");
	expect_error(VALID_HEAD VALID_NET "  arithmetic: pairs\n",
		     "8:15: 'arithmetic' applies only to 'precision: bf16' (the order bf16 products are summed in), "
		     "and this spec's precision is f32; remove it or add 'precision: bf16'");
	expect_error(VALID_HEAD VALID_NET "  precision: fp16\n",
		     "8:14: 'precision' is 'fp16', which is not one of f32 or bf16; did you mean 'bf16'?");
	expect_error(VALID_HEAD VALID_NET "  precision: bf16\n  arithmetic: amx\n",
		     "9:15: 'arithmetic' is 'amx', a way of computing, not an order of sums: 'tiles' (AMX's order, on "
		     "every processor) or 'pairs' (vdpbf16ps's); RESGEN_BF16 picks a path at run time");
	expect_error(VALID_HEAD VALID_NET "  precision: bf16\n  arithmetic: pair\n",
		     "9:15: 'arithmetic' is 'pair', which is not one of tiles or pairs; did you mean 'pairs'?");
}

static void test_spec_lr_steps_as_fractions_and_warnings(void **unused)
{
	(void)unused;
	write_spec(VALID_HEAD VALID_NET "train:\n  iterations: 300\n  lr: {steps: [0.5, 0.75]}\n");
	struct spec spec;
	struct diag d = {{0}}, warnings[4];
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_true(spec.train.lr_step_fractions);
	assert_int_equal(spec_lr_step_at(&spec, 0, 300), 150);
	assert_int_equal(spec_lr_step_at(&spec, 1, 300), 225);
	assert_int_equal(spec_lr_step_at(&spec, 1, 1000), 750);
	/* the default warm-up (400 iterations) outlasts the run */
	char expected[1024];
	assert_int_equal(spec_warnings(&spec, warnings, 4), 1);
	snprintf(expected, sizeof expected,
		 "%s:10:7: warning: the warm-up lasts 400 iterations, the whole run of 300, so the rate stays "
		 "0.01 throughout; give lr.warmup.iterations below 300 (0 for none)",
		 scratch);
	assert_string_equal(warnings[0].text, expected);

	write_spec(VALID_HEAD VALID_NET "train:\n  iterations: 1000\n  lr: {warmup: {iterations: 0}, steps: [500, 2000]}\n");
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_false(spec.train.lr_step_fractions);
	assert_int_equal(spec_lr_step_at(&spec, 1, 1000), 2000);
	assert_int_equal(spec_warnings(&spec, warnings, 4), 1);
	snprintf(expected, sizeof expected,
		 "%s:10:40: warning: the rate step at iteration 2000 lies at or past the end of the run (1000 "
		 "iterations) and never takes effect; give it below 1000, or as a fraction of the run such as 0.5",
		 scratch);
	assert_string_equal(warnings[0].text, expected);

	/* the paper's schedule over its 64000 iterations: nothing to say */
	write_spec(VALID_HEAD VALID_NET);
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_int_equal(spec_warnings(&spec, warnings, 4), 0);

	expect_error(VALID_HEAD VALID_NET "train:\n  lr: {steps: [0.5, 48000]}\n",
		     "9:21: 'steps' mixes iterations and fractions of the run; give all as iterations, such "
		     "as [32000, 48000], or all as fractions, such as [0.5, 0.75]");
	expect_error(VALID_HEAD VALID_NET "train:\n  lr: {steps: [1.5]}\n",
		     "9:16: 'steps' is 1.5, out of range; it must be above 0 and at most 1");
	expect_error(VALID_HEAD VALID_NET "train:\n  lr: {steps: [0.5, 1.0]}\n",
		     "9:21: 'steps' has the fraction 1, the end of the run; a step must come before it, such "
		     "as 0.75");
	expect_error(VALID_HEAD VALID_NET "train:\n  lr: {steps: [0.75, 0.5]}\n",
		     "9:22: 'steps' must increase, but 0.5 follows 0.75; list them in order");
	expect_error(VALID_HEAD VALID_NET "train:\n  lr: {steps: 0.5}\n",
		     "9:15: 'steps' must be a list such as [32000, 48000] or [0.5, 0.75]");
}

static void test_spec_depth_not_of_the_form(void **unused)
{
	(void)unused;
	expect_error(VALID_HEAD "net:\n  unit: basic\n  ordering: original\n  depth: 100\n",
		     "7:10: 'depth' 100 is not of the form 6n+2 for basic units in 3 stages; the "
		     "nearest valid depths are 98 and 104");
	expect_error(VALID_HEAD "net:\n  unit: bottleneck\n  ordering: original\n  depth: 111\n",
		     "7:10: 'depth' 111 is not of the form 9n+2 for bottleneck units in 3 stages; the "
		     "nearest valid depths are 110 and 119");
	expect_error(VALID_HEAD "net:\n  unit: basic\n  ordering: original\n  depth: 4\n",
		     "7:10: 'depth' 4 is not of the form 6n+2 for basic units in 3 stages; the "
		     "smallest valid depth is 8");
}

static void test_spec_bad_name(void **unused)
{
	(void)unused;
	expect_error("name: Preact_110\ndata:\n  set: cifar10\n" VALID_NET,
		     "1:7: 'name' must be 1 to 48 characters of a-z, 0-9 and '-', not starting with "
		     "'-'; try 'preact-110'");
	expect_error("name: \"x; system()\"\ndata:\n  set: cifar10\n" VALID_NET,
		     "1:7: 'name' must be 1 to 48 characters of a-z, 0-9 and '-', not starting with "
		     "'-'; try 'x-system'");
}

static void test_spec_unknown_choice(void **unused)
{
	(void)unused;
	expect_error(VALID_HEAD "net:\n  unit: basic\n  ordering: full-pre\n  depth: 20\n",
		     "6:13: 'ordering' is 'full-pre', which is not one of original, bn-after-add, "
		     "relu-before-add, relu-only-preact or full-preact; did you mean 'full-preact'?");
	expect_error("name: t\ndata:\n  set: cifar-10\n" VALID_NET,
		     "3:8: 'set' is 'cifar-10', which is not one of cifar10, cifar100, fashion-mnist, "
		     "mnist, synthetic, imagenet or folder; did you mean 'cifar10'?");
}

/* The ImageNet networks: the stem, units given per stage, and folders of
 * images as data, each wrong use named where it is. */
static void test_spec_imagenet_networks(void **unused)
{
	(void)unused;
	const char *resnet50 = "name: r50\ndata:\n  set: imagenet\nnet:\n  unit: bottleneck\n  ordering: original\n"
			       "  stem: imagenet\n  stages: [3, 4, 6, 3]\n  widths: [64, 128, 256, 512]\n";
	write_spec(resnet50);
	struct spec spec;
	struct diag d = {{0}};
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_int_equal(spec.net.depth, 50);
	assert_int_equal(spec.net.units[2], 6);
	assert_int_equal(spec.net.stem, STEM_IMAGENET);
	assert_int_equal(spec.data.classes, 1000);
	assert_int_equal(spec.data.height, 224);
	assert_string_equal(spec.data.dir, "data/imagenet");
	expect_error(VALID_HEAD "net:\n  unit: basic\n  ordering: original\n  depth: 20\n  stages: [3, 3, 3]\n",
		     "8:11: 'net' has both 'depth' and 'stages'; give one: 'depth' for the formula of equal "
		     "stages, 'stages' for the units of each");
	expect_error(VALID_HEAD "net:\n  unit: bottleneck\n  ordering: original\n  stages: [3, 4, 6, 3]\n",
		     "7:11: 'stages' gives 4 stages but the default widths [16, 32, 64] have 3; give one width a "
		     "stage (ResNet-50: stages [3, 4, 6, 3], widths [64, 128, 256, 512])");
	expect_error(VALID_HEAD "net:\n  unit: bottleneck\n  ordering: original\n  stages: [3, 0, 3]\n",
		     "7:15: 'stages' is 0, out of range; it must be from 1 to 1202");
	expect_error(VALID_HEAD "net:\n  unit: bottleneck\n  ordering: original\n  stages: [300, 100, 3]\n",
		     "7:11: 'stages' makes a network of 1211 layers, deeper than resgen builds: at most 1202 "
		     "(the paper's deepest network has 1001)");
	expect_error(VALID_HEAD VALID_NET "  stem: imagenett\n",
		     "8:9: 'stem' is 'imagenett', which is not one of cifar or imagenet; did you mean "
		     "'imagenet'?");
	expect_error("name: t\ndata:\n  set: cifar10\n  crop: 64\n" VALID_NET,
		     "4:9: 'crop' is only for folders of images (imagenet, folder); cifar10 fixes its own shape "
		     "and size");
	expect_error("name: t\ndata:\n  set: imagenet\n  classes: 10\n" VALID_NET,
		     "4:12: 'classes' is only for the synthetic and folder sets; imagenet fixes its classes; "
		     "'crop' sets the input's size");
	expect_error("name: t\ndata:\n  set: folder\n  classes: 5\n" VALID_NET,
		     "3:3: 'data' is missing required key 'dir' (the folder that holds train/CLASS/ and "
		     "val/CLASS/)");
	expect_error("name: t\ndata:\n  set: folder\n  dir: photos\n" VALID_NET,
		     "3:3: 'data' is missing required key 'classes'");
	expect_error("name: t\ndata:\n  set: imagenet\n" VALID_NET "train:\n  augment: {pad: 4}\n",
		     "9:18: 'pad' is for the sets held in memory; imagenet's images are scaled to a shorter side drawn "
		     "from [256, 480] and cropped (docs/imagenet.md), so leave it out");
	expect_error(VALID_HEAD VALID_NET "train:\n  augment: {aspect: true}\n",
		     "9:21: 'aspect' is for folders of images (imagenet, folder), whose images come in any shape; "
		     "cifar10's are padded and cropped ('pad')");
	write_spec("name: t\ndata:\n  set: folder\n  dir: photos\n  classes: 5\n  crop: 64\n" VALID_NET);
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_int_equal(spec.data.classes, 5);
	assert_int_equal(spec.data.width, 64);
	/* issue 87, item 4: a folder's normalisation and scale range */
	expect_error(VALID_HEAD "  normalise: folder\n" VALID_NET,
		     "4:14: 'normalise' is for folders of images (imagenet, folder); cifar10's inputs are normalised "
		     "by its training images' channel statistics");
	expect_error("name: t\ndata:\n  set: imagenet\n  normalise: own\n" VALID_NET,
		     "4:14: 'normalise' must be imagenet (ImageNet's channel mean and deviation, torchvision's), folder "
		     "(the training images' own channel statistics, computed when a run starts) or {mean: [R, G, B], "
		     "std: [R, G, B]} in pixels' 0..1 units");
	expect_error("name: t\ndata:\n  set: imagenet\n  normalise: {mean: [0.5, 0.5], std: [0.2, 0.2, 0.2]}\n"
		     VALID_NET,
		     "4:21: 'mean' must be a list of 3 numbers, a channel each (red, green, blue), such as [0.485, "
		     "0.456, 0.406]");
	expect_error("name: t\ndata:\n  set: imagenet\n  normalise: {mean: [0.5, 0.5, 0.5], std: [0.2, 0.7, 0.2]}\n"
		     VALID_NET,
		     "4:49: 'std' is 0.7, out of range; it must be above 0 and at most 0.5");
	expect_error("name: t\ndata:\n  set: imagenet\n  crop: 64\n" VALID_NET "train:\n  augment: {scale: [32, 96]}\n",
		     "10:21: 'scale' is 32, out of range; it must be from 64 to 256");
	expect_error("name: t\ndata:\n  set: imagenet\n  crop: 64\n" VALID_NET "train:\n  augment: {scale: [96, 64]}\n",
		     "10:20: 'scale' must be [shortest, longest]: the range the shorter side is drawn from, in pixels, "
		     "from the crop (64) up, such as [64, 96]");
	expect_error("name: t\ndata:\n  set: imagenet\n" VALID_NET "train:\n  augment: {aspect: true, scale: [224, 300]}\n",
		     "9:34: 'scale' is the scale augmentation's range, and 'aspect: true' draws crops by area and "
		     "aspect ratio instead; give one of them");
	expect_error(VALID_HEAD VALID_NET "train:\n  augment: {scale: [32, 40]}\n",
		     "9:20: 'scale' is for folders of images (imagenet, folder), whose images are scaled; cifar10's "
		     "are padded and cropped ('pad')");
	write_spec("name: t\ndata:\n  set: folder\n  dir: photos\n  classes: 5\n  crop: 64\n  normalise: {mean: [0.5, "
		   "0.4, 0.3], std: [0.2, 0.2, 0.25]}\n" VALID_NET "train:\n  augment: {scale: [64, 80]}\n");
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_int_equal(spec.data.normalise, NORMALISE_GIVEN);
	assert_true(spec.data.normalise_mean[1] == 0.4 && spec.data.normalise_std[2] == 0.25);
	assert_int_equal(spec.train.augment_scale[1], 80);
}

static void test_spec_missing_required_key(void **unused)
{
	(void)unused;
	expect_error(VALID_HEAD "net:\n  unit: basic\n  ordering: original\n",
		     "5:3: 'net' is missing required key 'depth' (or 'stages': units per stage, such as "
		     "[3, 4, 6, 3])");
	expect_error("data:\n  set: cifar10\n" VALID_NET, "1:1: the spec is missing required key 'name'");
	expect_error(VALID_HEAD "net:\n  unit: basic\n  depth: 20\n",
		     "5:3: 'net' is missing required key 'ordering' (one of original, bn-after-add, "
		     "relu-before-add, relu-only-preact or full-preact)");
}

static void test_spec_structure(void **unused)
{
	(void)unused;
	expect_error(VALID_HEAD VALID_NET "net:\n  depth: 8\n",
		     "8:1: duplicate key 'net' (first given at line 4); give each key once");
	expect_error(VALID_HEAD VALID_NET "train: {lr: {warmup: {lr: {a: {b: {c: {d: {e: 1}}}}}}}}\n",
		     "8:43: spec nests deeper than 8 levels; the schema needs at most 4");
	expect_error(VALID_HEAD "net: &n\n  unit: basic\n", "4:6: YAML anchors are not supported in specs; write the value out");
	expect_error(VALID_HEAD "net:\n  unit: basic\n   depth: 8\n",
		     "6:9: YAML syntax error: mapping values are not allowed in this context; check "
		     "indentation and quoting");
	expect_error("", "1:1: spec is empty; it needs at least 'name', 'data' and 'net'");
	expect_error("name: t\ndata:\n  set: cifar10\n  shape: [1, 8, 8]\n" VALID_NET,
		     "4:10: 'shape' is only for the synthetic set; cifar10 fixes its own shape and size");
	expect_error(VALID_HEAD "net:\n  unit: basic\n  ordering: original\n  depth: 20\n"
		     "  widths: [16, 8, 32]\n  projection: zero-pad\n",
		     "8:11: 'projection: zero-pad' needs widths that never shrink, but stage 2 "
		     "narrows from 16 to 8 channels; use non-decreasing widths or 'projection: conv1x1'");
}

static void test_spec_shortcut_parameters(void **unused)
{
	(void)unused;
	expect_error(VALID_HEAD VALID_NET "  scaling: {shortcut: 0.5}\n",
		     "8:12: 'scaling' applies only to 'shortcut: scaling', and this spec's shortcut is "
		     "identity; remove it or change the shortcut");
	expect_error(VALID_HEAD VALID_NET "  shortcut: exclusive-gating\n  gating: {bais: -6}\n",
		     "9:12: unknown key 'bais' in 'gating'; did you mean 'bias'?");
	expect_error(VALID_HEAD VALID_NET "  shortcut: dropout\n  dropout: {rate: 1}\n",
		     "9:19: 'rate' is 1, out of range; it must be at least 0 and at most 0.99");
	expect_error(VALID_HEAD "net:\n  unit: one-layer\n  ordering: original\n  depth: 21\n",
		     "7:10: 'depth' 21 is not of the form 3n+2 for one-layer units in 3 stages; the "
		     "nearest valid depths are 20 and 23");
	write_spec(VALID_HEAD VALID_NET "  shortcut: shortcut-gating\n");
	struct spec spec;
	struct diag d = {{0}};
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_true(spec.net.gate_bias == -6);
}

static void test_spec_oversized_document(void **unused)
{
	(void)unused;
	size_t size = YAML_MAX_BYTES + 10;
	char *text = malloc(size + 1);
	assert_non_null(text);
	memset(text, '#', size);
	text[size] = '\0';
	write_spec(text);
	free(text);
	struct spec spec;
	struct diag d = {{0}};
	assert_int_equal(spec_load(&spec, scratch, &d), -1);
	char expected[256];
	snprintf(expected, sizeof expected,
		 "%s: spec is larger than %d bytes; a spec should be a short YAML file", scratch,
		 YAML_MAX_BYTES);
	assert_string_equal(d.text, expected);
}

static void test_spec_missing_file(void **unused)
{
	(void)unused;
	struct spec spec;
	struct diag d = {{0}};
	assert_int_equal(spec_load(&spec, "no/such/spec.yaml", &d), -1);
	assert_string_equal(d.text, "no/such/spec.yaml: cannot open: No such file or directory");
}

/* One notation for numbers, read alike here and by PyYAML (the PyTorch
 * check): YAML 1.1 reads 020 as octal 16, and tags change a value's type. */
static void test_spec_numbers_have_one_notation(void **unused)
{
	(void)unused;
	const char *integers[] = {"020", "0x14", "1_0", "2e1", "20.0", "+", "-0x1"};
	for (size_t i = 0; i < sizeof integers / sizeof integers[0]; i++) {
		char text[256], expected[256];
		snprintf(text, sizeof text, VALID_HEAD "net:\n  unit: basic\n  ordering: original\n  depth: %s\n",
			 integers[i]);
		snprintf(expected, sizeof expected, "7:10: 'depth' must be an integer, not '%s'" INTEGER_ADVICE,
			 integers[i]);
		expect_error(text, expected);
	}
	const char *reals[] = {"0x1p-3", ".inf", ".nan", "1.", ".5", "09.5", "1e", "0.5_0"};
	for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
		char text[256], expected[256];
		snprintf(text, sizeof text, VALID_HEAD VALID_NET "train:\n  momentum: %s\n", reals[i]);
		snprintf(expected, sizeof expected, "9:13: 'momentum' must be a number, not '%s'" NUMBER_ADVICE,
			 reals[i]);
		expect_error(text, expected);
	}
	/* What is accepted reads as PyYAML reads it (reals through float()). */
	write_spec(VALID_HEAD VALID_NET "train:\n  momentum: 9.5e-1\n  weight_decay: 1e-4\n  seed: +7\n");
	struct spec spec;
	struct diag d = {{0}};
	assert_int_equal(spec_load(&spec, scratch, &d), 0);
	assert_true(spec.train.momentum == 0.95 && spec.train.weight_decay == 1e-4);
	assert_int_equal(spec.train.seed, 7);
}

static void test_spec_refuses_tags_and_directives(void **unused)
{
	(void)unused;
	expect_error(VALID_HEAD "net:\n  unit: basic\n  ordering: original\n  depth: !!str 8\n",
		     "7:10: YAML tags such as '!!str' are not supported in specs; write the plain value");
	expect_error(VALID_HEAD "net: !!map\n  unit: basic\n",
		     "4:6: YAML tags such as '!!map' are not supported in specs; write the plain value");
	expect_error(VALID_HEAD "net:\n  unit: !local basic\n",
		     "5:9: YAML tags such as '!local' are not supported in specs; write the plain value");
	expect_error("%TAG ! tag:example.com,2000:\n---\n" VALID_HEAD VALID_NET,
		     "1:1: YAML directives (%YAML, %TAG) are not supported in specs; remove the line");
	expect_error("%YAML 1.1\n---\n" VALID_HEAD VALID_NET,
		     "1:1: YAML directives (%YAML, %TAG) are not supported in specs; remove the line");
}

/* An unknown key made of escapes: ESC and BEL would retitle and clear the
 * terminal, and a newline would forge a second FILE:LINE:COL line. */
static void test_spec_messages_echo_only_printable_text(void **unused)
{
	(void)unused;
	expect_error(VALID_HEAD VALID_NET "\"\\e]0;pwn\\a\\e[2J\\nx.yaml:1:1: fake\\x9b\": 1\n",
		     "8:1: unknown key '\\x1b]0;pwn\\x07\\x1b[2J\\x0ax.yaml:1:1: fake\\xc2\\x9b' in the spec; "
		     "did you mean 'name'?");
	/* Printable UTF-8 stays as it is. */
	expect_error(VALID_HEAD VALID_NET "d\xc3\xa9pth: 1\n",
		     "8:1: unknown key 'd\xc3\xa9pth' in the spec; did you mean 'data'?");
	char out[64];
	printable_text(out, sizeof out, "a\x01\xff\xe2\x82\xac\xed\xa0\x80z");
	assert_string_equal(out, "a\\x01\\xff\xe2\x82\xac\\xed\\xa0\\x80z");
}

static void test_spec_refuses_networks_that_cannot_be(void **unused)
{
	(void)unused;
	expect_error(VALID_HEAD "net:\n  unit: basic\n  ordering: original\n  depth: 99998\n",
		     "7:10: 'depth' 99998 is deeper than resgen builds: at most 1202 layers (the paper's "
		     "deepest network has 1001)");
	expect_error("name: t\ndata: {set: synthetic, train_images: 100}\n" VALID_NET,
		     "2:38: 'batch' 128 is larger than the synthetic set's 100 training images; use a "
		     "batch of at most 100 or more 'train_images'");
	expect_error("name: t\ndata: {set: synthetic, train_images: 100}\n" VALID_NET "train: {batch: 101}\n",
		     "7:16: 'batch' 101 is larger than the synthetic set's 100 training images; use a "
		     "batch of at most 100 or more 'train_images'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_every_shipped_spec_is_valid),
		cmocka_unit_test(test_spec_defaults_are_the_papers),
		cmocka_unit_test(test_spec_unknown_key_suggests_nearest),
		cmocka_unit_test(test_spec_wrong_type),
		cmocka_unit_test(test_spec_value_out_of_range),
		cmocka_unit_test(test_spec_lr_steps_as_fractions_and_warnings),
		cmocka_unit_test(test_spec_cosine_schedule),
		cmocka_unit_test(test_spec_precision),
		cmocka_unit_test(test_spec_depth_not_of_the_form),
		cmocka_unit_test(test_spec_bad_name),
		cmocka_unit_test(test_spec_unknown_choice),
		cmocka_unit_test(test_spec_missing_required_key),
		cmocka_unit_test(test_spec_structure),
		cmocka_unit_test(test_spec_shortcut_parameters),
		cmocka_unit_test(test_spec_oversized_document),
		cmocka_unit_test(test_spec_missing_file),
		cmocka_unit_test(test_spec_numbers_have_one_notation),
		cmocka_unit_test(test_spec_refuses_tags_and_directives),
		cmocka_unit_test(test_spec_messages_echo_only_printable_text),
		cmocka_unit_test(test_spec_refuses_networks_that_cannot_be),
		cmocka_unit_test(test_spec_imagenet_networks),
	};
	return cmocka_run_group_tests_name("spec", tests, NULL, NULL);
}
