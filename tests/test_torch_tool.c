/* tools/pytorch/resgen_torch.py on files from someone else: a state dict
 * that would run code when unpickled, tensors of the wrong shape, values
 * no weights hold, and pairs of outputs it cannot write together. Each
 * refusal is one line, exit 2, with nothing written and nothing run.
 * The state dicts are torchvision's resnet18(num_classes=10), made by
 * tests/torch/state_dicts.py; tests/specs/resnet-18-small.yaml is its
 * spec. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "command.h"

#define SPEC "tests/specs/resnet-18-small.yaml"

static char marker[400];

static int setup(void **unused)
{
	(void)unused;
	if (command_setup("torch-tool") != 0)
		return -1;
	snprintf(marker, sizeof marker, "%s/MARKER", scratch);
	char command[2048];
	snprintf(command, sizeof command, "/usr/bin/python3 tests/torch/state_dicts.py %s %s", scratch, marker);
	return system(command) == 0 && access(marker, F_OK) != 0 ? 0 : -1;
}

/* The tool with arguments refuses them: exit 2, exactly expected on
 * stderr (with %1$s the scratch folder), nothing on stdout. */
static void expect_refusal(const char *arguments, const char *expected)
{
	char out[4096], err[4096], message[2048];
	int status = torch_tool(arguments, out, sizeof out, err, sizeof err);
	snprintf(message, sizeof message, expected, scratch);
	if (status != 2 || strcmp(err, message) != 0)
		print_error("resgen_torch.py %s\nexpected 2: %s     got %d: %s", arguments, message, status, err);
	assert_int_equal(status, 2);
	assert_string_equal(err, message);
	assert_string_equal(out, "");
}

static bool in_scratch(const char *name)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", scratch, name);
	return access(path, F_OK) == 0;
}

/* Issue 84, item 1: import-torchvision unpickled anything, and an object
 * whose unpickling calls os.system ran before the file was refused. Now
 * no command of the tool runs any of it, wherever the file is given. */
static void test_no_file_the_tool_reads_runs_code(void **unused)
{
	(void)unused;
	char arguments[2048];
	snprintf(arguments, sizeof arguments, "import-torchvision " SPEC " %s/code.pt %s/out.weights", scratch, scratch);
	expect_refusal(arguments, "resgen_torch: %1$s/code.pt: holds more than tensors (an object of posix.system); "
				  "a file of weights is read for its tensors alone, and nothing in it was run\n");
	assert_false(in_scratch("out.weights"));
	/* the same file where the other commands read weights, or a spec */
	const char *others[] = {"export " SPEC " %1$s/code.pt %1$s/out.pt",
				"export " SPEC " %1$s/code.pt %1$s/out.pt --torchvision",
				"export " SPEC " %1$s/code.pt %1$s/out.pt --torchscript %1$s/out.ts",
				"evaluate " SPEC " %1$s/code.pt",
				"evaluate %1$s/code.pt %1$s/good.pt",
				"import-torchvision %1$s/code.pt %1$s/good.pt %1$s/out.weights"};
	for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
		char err[4096];
		snprintf(arguments, sizeof arguments, others[i], scratch);
		assert_int_equal(torch_tool(arguments, NULL, 0, err, sizeof err), 2);
		assert_non_null(strchr(err, '\n'));
		assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);
	}
	assert_false(in_scratch("out.pt"));
	assert_false(in_scratch("out.ts"));
	assert_false(in_scratch("out.weights"));
	/* and nothing ran */
	assert_int_equal(access(marker, F_OK), -1);
}

/* Items 8 and 9: the right number of values in the wrong shape, a NaN, a
 * negative running variance, a list and integers were written as weights
 * (or ended in a traceback). torchvision's own load_state_dict refuses
 * the shapes; the binaries refuse the values. */
static void test_import_refuses_what_torchvision_would_not_load(void **unused)
{
	(void)unused;
	static const struct {
		const char *file, *message;
	} cases[] = {
		{"fc-transposed", "fc.weight has the shape [512, 10], but resnet-18-small's head_fc_weight is [10, 512] in "
				  "torchvision's layout; is it resnet18 with 10 classes, saved from torchvision's model?"},
		{"conv1-permuted", "conv1.weight has the shape [7, 7, 3, 64], but resnet-18-small's stem_conv_weight is "
				   "[64, 3, 7, 7] in torchvision's layout; is it resnet18 with 10 classes, saved from "
				   "torchvision's model?"},
		{"nan", "layer1.0.conv1.weight value 4 is NaN; weights must be finite numbers"},
		{"negative-variance", "bn1.running_var value 3 is -1; a running variance is never negative"},
		{"list", "holds more than tensors (a value other than a tensor, a whole number or a string: pickle "
			 "opcode 71); a file of weights is read for its tensors alone, and nothing in it was run"},
		{"integer", "fc.bias is a tensor of int64, not a tensor of floating-point numbers"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char arguments[2048], expected[2048];
		snprintf(arguments, sizeof arguments, "import-torchvision " SPEC " %1$s/%2$s.pt %1$s/out.weights", scratch,
			 cases[i].file);
		snprintf(expected, sizeof expected, "resgen_torch: %%1$s/%s.pt: %s\n", cases[i].file, cases[i].message);
		expect_refusal(arguments, expected);
		assert_false(in_scratch("out.weights"));
	}
	/* torchvision's own state dict still goes through */
	char arguments[2048], out[4096], err[4096];
	snprintf(arguments, sizeof arguments, "import-torchvision " SPEC " %1$s/good.pt %1$s/good.weights", scratch);
	assert_int_equal(torch_tool(arguments, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "102 tensors of");
	assert_true(in_scratch("good.weights"));
}

/* Item 10: export --torchvision --torchscript exited 0 and never wrote
 * the TorchScript file; the pair is refused as --torchvision --onnx is,
 * before anything is read or written. */
static void test_export_refuses_torchvision_with_torchscript(void **unused)
{
	(void)unused;
	char arguments[2048], out[4096], err[4096];
	snprintf(arguments, sizeof arguments, "import-torchvision " SPEC " %1$s/good.pt %1$s/r18.weights", scratch);
	assert_int_equal(torch_tool(arguments, out, sizeof out, err, sizeof err), 0);
	snprintf(arguments, sizeof arguments,
		 "export " SPEC " %1$s/r18.weights %1$s/r18.pt --torchvision --torchscript %1$s/r18.ts", scratch);
	expect_refusal(arguments, "resgen_torch: --torchvision writes torchvision's state dict alone, not "
				  "--torchscript's file; export TorchScript in another run, without --torchvision\n");
	snprintf(arguments, sizeof arguments,
		 "export " SPEC " %1$s/r18.weights %1$s/r18.pt --torchvision --onnx %1$s/r18.onnx", scratch);
	expect_refusal(arguments, "resgen_torch: --torchvision writes torchvision's state dict alone, not --onnx's "
				  "file; export ONNX in another run, without --torchvision\n");
	assert_false(in_scratch("r18.pt"));
	assert_false(in_scratch("r18.ts"));
	assert_false(in_scratch("r18.onnx"));

	/* item 13: the export's note says the normalisation these weights
	 * store is ImageNet's, not the statistics of training images */
	snprintf(arguments, sizeof arguments, "export " SPEC " %1$s/r18.weights %1$s/r18.pt", scratch);
	assert_int_equal(torch_tool(arguments, out, sizeof out, err, sizeof err), 0);
	snprintf(arguments, sizeof arguments,
		 "/usr/bin/python3 -c 'import sys, torch; print(torch.load(sys.argv[1])[\"normalisation\"])' %s/r18.pt",
		 scratch);
	assert_int_equal(run(arguments, out, sizeof out, err, sizeof err), 0);
	assert_string_equal(out, "each channel of an image: pixel / 255, less input_mean, over input_std (ImageNet's "
				 "channel mean and deviation, as torchvision normalises), rounded to float32\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_file_the_tool_reads_runs_code),
		cmocka_unit_test(test_import_refuses_what_torchvision_would_not_load),
		cmocka_unit_test(test_export_refuses_torchvision_with_torchscript),
	};
	command_only_some();
	return cmocka_run_group_tests_name("the PyTorch tool on files from someone else", tests, setup, NULL);
}
