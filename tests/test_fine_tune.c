/* Fine-tuning (issue 87, item 3): a 1000-class torchvision ResNet-50
 * (random weights) trained on a 6-class folder of images with a fresh
 * classifier (train --load-weights --fresh-classifier, and
 * resgen_torch.py import-torchvision --fresh-classifier) and its stem
 * frozen (--freeze): the tensors loaded, initialised and frozen as the
 * tools say, the frozen ones bitwise unchanged, and a resumed run
 * bitwise the unbroken one's, its checkpoint keeping the frozen parts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "command.h"
#include "tensor_file.h"

static char photos[400];

static int setup(void **unused)
{
	(void)unused;
	if (command_setup("fine-tune") != 0)
		return -1;
	snprintf(photos, sizeof photos, "%s/photos", scratch);
	char command[2048];
	snprintf(command, sizeof command,
		 "/usr/bin/python3 tests/images/make_folder.py %1$s --classes 6 --train 4 --val 2 && "
		 "/usr/bin/python3 -c 'import sys, torch, torchvision; torch.manual_seed(5); "
		 "torch.save(torchvision.models.resnet50().state_dict(), sys.argv[1])' %2$s/resnet50.pt",
		 photos, scratch);
	return system(command);
}

/* The values of tensor name in the weights file at path (a copy), and
 * their count. */
static double *tensor_values(const char *path, const char *name, long *count)
{
	struct tensor_file f;
	char error[512];
	if (tensor_file_load(&f, path, error, sizeof error) != 0)
		fail_msg("%s", error);
	const struct tensor_file_entry *e = tensor_file_find(&f, name);
	if (!e)
		fail_msg("%s: no tensor %s", path, name);
	double *values = malloc((size_t)e->count * sizeof *values);
	assert_non_null(values);
	memcpy(values, e->values, (size_t)e->count * sizeof *values);
	*count = e->count;
	tensor_file_free(&f);
	return values;
}

/* How many tensors whose names start with prefix hold the same values
 * (bit for bit) in files a and b, and how many differ. */
static void compare_tensors(const char *a, const char *b, const char *prefix, int *same, int *different)
{
	struct tensor_file f, g;
	char error[512];
	*same = *different = 0;
	if (tensor_file_load(&f, a, error, sizeof error) != 0 || tensor_file_load(&g, b, error, sizeof error) != 0)
		fail_msg("%s", error);
	for (int i = 0; i < f.count; i++) {
		const struct tensor_file_entry *e = &f.entries[i], *other = tensor_file_find(&g, e->name);
		if (strncmp(e->name, prefix, strlen(prefix)) != 0)
			continue;
		bool equal = other && other->count == e->count &&
			     memcmp(other->values, e->values, (size_t)e->count * sizeof *e->values) == 0;
		*same += equal;
		*different += !equal;
	}
	tensor_file_free(&f);
	tensor_file_free(&g);
}

static void test_fine_tunes_a_torchvision_resnet50_with_its_stem_frozen(void **unused)
{
	(void)unused;
	static char out[16384], err[4096];
	char arguments[2048], options[2048], expected[2048];
	char source[400], thousand[400], fresh[400], whole[400], first[400], resumed[400], checkpoint[400];
	snprintf(source, sizeof source, "%s/resnet50.pt", scratch);
	snprintf(thousand, sizeof thousand, "%s/resnet50-1000.weights", scratch);
	snprintf(fresh, sizeof fresh, "%s/resnet50-fresh.weights", scratch);
	snprintf(whole, sizeof whole, "%s/whole.weights", scratch);
	snprintf(first, sizeof first, "%s/first.weights", scratch);
	snprintf(resumed, sizeof resumed, "%s/resumed.weights", scratch);
	snprintf(checkpoint, sizeof checkpoint, "%s/run.checkpoint", scratch);

	/* the 1000-class weights as a weights file of the same network with
	 * 1000 classes (resnet-50-small), and imported for the 6-class spec
	 * with the classifier left out */
	snprintf(arguments, sizeof arguments, "import-torchvision tests/specs/resnet-50-small.yaml %s %s", source,
		 thousand);
	assert_int_equal(torch_tool(arguments, NULL, 0, err, sizeof err), 0);
	snprintf(arguments, sizeof arguments, "import-torchvision tests/specs/resnet-50-photos.yaml %s %s", source, fresh);
	assert_int_equal(torch_tool(arguments, NULL, 0, err, sizeof err), 2);
	snprintf(expected, sizeof expected, "resgen_torch: %s: fc.weight has the shape [1000, 2048], for 1000 classes, "
		 "but resnet-50-photos has 6; to fine-tune these weights to its classes, give --fresh-classifier\n", source);
	assert_string_equal(err, expected);
	snprintf(arguments, sizeof arguments, "import-torchvision tests/specs/resnet-50-photos.yaml %s %s "
		 "--fresh-classifier", source, fresh);
	assert_int_equal(torch_tool(arguments, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "left out fc.weight [1000, 2048] and fc.bias [1000]: resnet-50-photos's binary initialises its "
		       "classifier for 6 classes with train --load-weights ");

	/* the binary refuses 1000 classes' weights without the flag */
	snprintf(options, sizeof options, "train --data %s --load-weights %s --iterations 1", photos, thousand);
	assert_int_equal(binary("", "resnet-50-photos-f32", options, out, sizeof out, err, sizeof err), 2);
	snprintf(expected, sizeof expected, "resnet-50-photos: %s: tensor head_fc_weight has 2048000 values, but "
		 "resnet-50-photos's is (6, 2048), 12288 values, for its 6 classes; to fine-tune these weights to them, "
		 "give --fresh-classifier\n", thousand);
	assert_string_equal(err, expected);

	/* fine-tuned, stem frozen: what it says it loaded, initialised and froze */
	snprintf(options, sizeof options, "train --data %s --load-weights %s --fresh-classifier --freeze stem "
		 "--iterations 4 --save-weights %s", photos, thousand, whole);
	assert_int_equal(binary("", "resnet-50-photos-f32", options, out, sizeof out, err, sizeof err), 0);
	snprintf(expected, sizeof expected, "weights: loaded 265 of the 267 tensors (23561152 values) from %s; the "
		 "classifier (2 tensors, 12294 values, for 6 classes) initialised afresh, the file's (2049000 values) "
		 "left out\n", thousand);
	expect_in(out, expected);
	expect_in(out, "frozen: stem: 5 tensors (9536 parameters and 128 BN running statistics) kept as they began\n");
	int same, different;
	compare_tensors(whole, thousand, "stem_", &same, &different);
	assert_int_equal(same, 5); /* conv, BN's gamma and beta, its running mean and variance */
	assert_int_equal(different, 0);
	compare_tensors(whole, thousand, "stage1_unit01_", &same, &different);
	assert_int_equal(same, 0); /* trained: every other tensor moved */
	long count;
	free(tensor_values(whole, "head_fc_weight", &count));
	assert_int_equal(count, 6 * 2048);

	/* stopped after 2 iterations and resumed: the checkpoint keeps the
	 * frozen parts, and the weights end as the unbroken run's */
	snprintf(options, sizeof options, "train --data %s --load-weights %s --fresh-classifier --freeze stem "
		 "--iterations 2 --checkpoint %s", photos, thousand, checkpoint);
	assert_int_equal(binary("", "resnet-50-photos-f32", options, out, sizeof out, err, sizeof err), 0);
	snprintf(options, sizeof options, "train --data %s --resume %s --iterations 4 --freeze stem,stage1", photos,
		 checkpoint);
	assert_int_equal(binary("", "resnet-50-photos-f32", options, out, sizeof out, err, sizeof err), 2);
	snprintf(expected, sizeof expected, "resnet-50-photos: %s: the run was started with stem frozen, and this "
		 "command gives --freeze stem,stage1; leave the option out to resume\n", checkpoint);
	assert_string_equal(err, expected);
	snprintf(options, sizeof options, "train --data %s --resume %s --iterations 4 --save-weights %s", photos,
		 checkpoint, resumed);
	assert_int_equal(binary("", "resnet-50-photos-f32", options, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "frozen: stem: 5 tensors (9536 parameters and 128 BN running statistics) kept as they began, as "
		       "the run began (its checkpoint keeps the list)\n");
	assert_true(same_file(whole, resumed));

	/* the imported file without a classifier: the same start */
	snprintf(options, sizeof options, "train --data %s --load-weights %s --fresh-classifier --freeze stem "
		 "--iterations 4 --save-weights %s", photos, fresh, first);
	assert_int_equal(binary("", "resnet-50-photos-f32", options, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "initialised afresh, the file holding none\n");
	compare_tensors(first, whole, "", &same, &different);
	assert_int_equal(different, 0);
}

/* --freeze names a network's parts; others are refused, naming them. */
static void test_freeze_refuses_a_part_the_network_lacks(void **unused)
{
	(void)unused;
	char options[1024], err[2048];
	snprintf(options, sizeof options, "train --data %s --freeze stem,stage5 --iterations 1", photos);
	assert_int_equal(binary("", "resnet-50-photos-f32", options, NULL, 0, err, sizeof err), 2);
	assert_string_equal(err, "resnet-50-photos: --freeze stem,stage5: 'stage5' is no part of resnet-50-photos; its "
				 "parts are stem, stage1 to stage4 (a stage's units; or a unit alone, stage1_unit01) and "
				 "head, given as a list: --freeze stem,stage1\n");
	snprintf(options, sizeof options, "train --data %s --fresh-classifier --iterations 1", photos);
	assert_int_equal(binary("", "resnet-50-photos-f32", options, NULL, 0, err, sizeof err), 2);
	expect_in(err, "--fresh-classifier initialises the classifier of weights loaded by --load-weights FILE");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fine_tunes_a_torchvision_resnet50_with_its_stem_frozen),
		cmocka_unit_test(test_freeze_refuses_a_part_the_network_lacks),
	};
	command_only_some();
	return cmocka_run_group_tests(tests, setup, NULL);
}
