/* bf16 networks (net.precision: bf16): every path of an arithmetic this
 * processor has trains the demo to the same bits, weights and log alike,
 * the portable one included; a run resumes on another path to the bits of
 * an unbroken one; staging and streaming each output image changes no bit;
 * and RESGEN_BF16 is refused in one line where it cannot be used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bf16.h"
#include "command.h"

static int setup(void **unused)
{
	(void)unused;
	return command_setup("precision");
}

/* A short run of name on path (RESGEN_BF16), its log and weights named by
 * tag and the path; the binary's exit status, its errors in err. */
static int train_on(const char *name, const char *path, const char *tag, const char *options, char *err, size_t size)
{
	char prefix[64], all[2048];
	snprintf(prefix, sizeof prefix, "RESGEN_BF16=%s", path);
	snprintf(all, sizeof all,
		 "train --batch 8 --eval-every 4 --test-limit 200 --log-every 2 --threads 2 --log %s/%s-%s.csv "
		 "--save-weights %s/%s-%s.w %s",
		 scratch, tag, path, scratch, tag, path, options);
	return binary(prefix, name, all, NULL, 0, err, size);
}

static void file_of(char *out, size_t size, const char *tag, const char *path, const char *ending)
{
	snprintf(out, size, "%s/%s-%s.%s", scratch, tag, path, ending);
}

/* Every path name trains name where this processor has it for arithmetic,
 * to the portable path's weights and log rows bit for bit; the others are
 * refused in one line saying why. */
static void every_path_gives_the_same_bits(const char *name, enum bf16_arithmetic arithmetic)
{
	char err[4096], first_weights[512], first_log[512], weights[512], log[512];
	file_of(first_weights, sizeof first_weights, name, "portable", "w");
	file_of(first_log, sizeof first_log, name, "portable", "csv");
	int trained = 0;
	for (int path = 0; path < BF16_PATH_COUNT; path++) {
		const char *path_name = bf16_path_names[path];
		int status = train_on(name, path_name, name, "--iterations 4", err, sizeof err);
		char why[160];
		if (!bf16_path_available((enum bf16_path)path, arithmetic, why, sizeof why)) {
			assert_int_equal(status, 2);
			expect_in(err, "cannot compute this network's bf16 products");
			expect_in(err, why);
			continue;
		}
		if (status != 0)
			fail_msg("%s on the %s path: exit %d: %s", name, path_name, status, err);
		file_of(weights, sizeof weights, name, path_name, "w");
		file_of(log, sizeof log, name, path_name, "csv");
		assert_true(same_file(first_weights, weights));
		assert_true(same_rows(first_log, log));
		trained++;
	}
	print_message("%s: %d path%s of the %s order on this processor gave the same bits\n", name, trained,
		      trained == 1 ? "" : "s", bf16_arithmetic_names[arithmetic]);
	assert_true(trained >= 1);
}

static void test_tiles_order_is_the_same_on_every_path(void **unused)
{
	(void)unused;
	every_path_gives_the_same_bits("demo-bf16-f32", BF16_TILES);
}

static void test_pairs_order_is_the_same_on_every_path(void **unused)
{
	(void)unused;
	every_path_gives_the_same_bits("demo-bf16-pairs-f32", BF16_PAIRS);
}

/* Two iterations on the portable path, checkpointed, then two more on the
 * fastest: the weights of four unbroken ones on the fastest. */
static void test_a_run_resumes_on_another_path(void **unused)
{
	(void)unused;
	const char *fastest = bf16_path_names[bf16_best_path(BF16_TILES)];
	char err[4096], options[1024], unbroken[512], resumed[512];
	assert_int_equal(train_on("demo-bf16-f32", fastest, "unbroken", "--iterations 4", err, sizeof err), 0);
	snprintf(options, sizeof options, "--iterations 2 --checkpoint %s/half.ckpt", scratch);
	assert_int_equal(train_on("demo-bf16-f32", "portable", "half", options, err, sizeof err), 0);
	char prefix[64], command[1024];
	snprintf(prefix, sizeof prefix, "RESGEN_BF16=%s", fastest);
	snprintf(command, sizeof command, "train --resume %s/half.ckpt --iterations 4 --save-weights %s/resumed.w", scratch,
		 scratch);
	if (binary(prefix, "demo-bf16-f32", command, NULL, 0, err, sizeof err) != 0)
		fail_msg("the resumed run: %s", err);
	file_of(unbroken, sizeof unbroken, "unbroken", fastest, "w");
	snprintf(resumed, sizeof resumed, "%s/resumed.w", scratch);
	assert_true(same_file(unbroken, resumed));
}

/* Each output image staged and streamed past the caches, as a pass whose
 * tensors exceed the last-level cache runs (RESGEN_CHOICES=stream=on
 * forces it): the weights of the same run written in place. */
static void test_streaming_changes_no_bit(void **unused)
{
	(void)unused;
	static const char *const ways[] = {"off", "on"};
	const char *fastest = bf16_path_names[bf16_best_path(BF16_TILES)];
	char err[4096], prefix[128], command[1200], weights[2][512];
	for (int way = 0; way < 2; way++) {
		snprintf(prefix, sizeof prefix, "RESGEN_BF16=%s RESGEN_CHOICES=stream=%s", fastest, ways[way]);
		snprintf(weights[way], sizeof weights[way], "%s/stream-%s.w", scratch, ways[way]);
		snprintf(command, sizeof command, "train --batch 8 --iterations 4 --eval-every 4 --test-limit 200 --threads 2 --save-weights %s",
			 weights[way]);
		if (binary(prefix, "demo-bf16-f32", command, NULL, 0, err, sizeof err) != 0)
			fail_msg("streaming %s: %s", ways[way], err);
	}
	assert_true(same_file(weights[0], weights[1]));
}

/* RESGEN_BF16 naming no path, or one that cannot compute the network's
 * order (vdpbf16ps sums in pairs alone, on any processor), is refused
 * before the run, in one line. */
static void test_bf16_path_refusals(void **unused)
{
	(void)unused;
	char err[4096];
	assert_int_equal(binary("RESGEN_BF16=fastest", "demo-bf16-f32", "train --iterations 1", NULL, 0, err, sizeof err), 2);
	expect_line(err, "demo-bf16: RESGEN_BF16=fastest names no path of bf16 products: portable, avx2, avx512, avx512-bf16 "
			 "or amx\n");
	assert_int_equal(binary("RESGEN_BF16=avx512-bf16", "demo-bf16-f32", "train --iterations 1", NULL, 0, err, sizeof err), 2);
	expect_line(err, "demo-bf16-f32: RESGEN_BF16=avx512-bf16 cannot compute this network's bf16 products (the tiles "
			 "order): vdpbf16ps sums in the pairs order alone; unset it for the fastest path there is\n");
}

/* explain names each convolution's path, RESGEN_BF16's where it is set,
 * what the path multiplies by, and the product each pass makes, and the
 * summary says the network multiplies in bf16. */
static void test_explain_names_the_path(void **unused)
{
	(void)unused;
	char out[65536], err[4096];
	assert_int_equal(binary("RESGEN_BF16=avx2", "demo-bf16-pairs-f32", "explain", out, sizeof out, err, sizeof err), 0);
	expect_in(out, "demo-bf16-pairs: basic units, full-preact ordering, depth 20, identity shortcut, conv1x1 projection, "
		       "bf16 products summed in f32 (the pairs order), f32, batch 64");
	expect_in(out, "stem_conv: 3x3 convolution, stride 1, 1 -> 16 channels, 28x28 -> 28x28\n"
		       "    forward  bf16 operands, their products summed in f32 in the pairs order by the avx2 path (f32 FMAs): the columns "
		       "packed, then one product an image\n"
		       "    data     bf16 operands, their products summed in f32 in the pairs order by the avx2 path (f32 FMAs): dY "
		       "convolved with W flipped, the columns read in place from the image, masked at its rows' ends, then one "
		       "product an image\n"
		       "    weight   bf16 operands, their products summed in f32 in the pairs order by the avx2 path (f32 FMAs): dY . "
		       "columns(X)^T an image\n");
	/* a 3x3 of K even: AVX2 reads its columns in place (28 columns a row:
	 * masked), so the demo that trains bit for bit on every path checks
	 * that reading against the portable path */
	expect_in(out, "stage1_unit01_conv1: 3x3 convolution, stride 1, 16 -> 16 channels, 28x28 -> 28x28\n"
		       "    forward  bf16 operands, their products summed in f32 in the pairs order by the avx2 path (f32 FMAs): the columns "
		       "read in place from the image, masked at its rows' ends, then one product an image\n");
	/* on 7x7, five images' 49 pixels (a pair past them) in one weight gradient product */
	expect_in(out, "stage3_unit01_shortcut_conv: 1x1 convolution, stride 2, 32 -> 64 channels, 14x14 -> 7x7\n");
	expect_in(out, "    weight   bf16 operands, their products summed in f32 in the pairs order by the avx2 path (f32 FMAs): dY . "
		       "columns(X)^T, one product for 5 images side by side along K\n");
	/* the avx512 path sums the tiles order by vdpbf16ps where the processor has it */
	if (__builtin_cpu_supports("avx512f")) {
		assert_int_equal(binary("RESGEN_BF16=avx512", "demo-bf16-f32", "explain", out, sizeof out, err, sizeof err), 0);
		expect_in(out, __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw")
				       ? "in the tiles order by the avx512 path (vdpbf16ps, two of a chain's FMAs an instruction): "
				       : "in the tiles order by the avx512 path (f32 FMAs): ");
	}
}

/* An export of a bf16 network's weights (its f32 masters) says how they
 * were trained, in what it prints and in the file. */
static void test_export_says_how_the_weights_were_trained(void **unused)
{
	(void)unused;
	char err[4096], out[8192], arguments[1024];
	/* avx2: a path every x86-64-v3 processor has */
	assert_int_equal(train_on("demo-bf16-f32", "avx2", "export", "--iterations 2", err, sizeof err), 0);
	snprintf(arguments, sizeof arguments, "export tests/specs/demo-bf16.yaml %s/export-avx2.w %s/export.pt", scratch,
		 scratch);
	if (torch_tool(arguments, out, sizeof out, err, sizeof err) != 0)
		fail_msg("%s", err);
	size_t printed = strlen(out);
	snprintf(arguments, sizeof arguments,
		 "/usr/bin/python3 -c 'import torch; print(torch.load(\"%s/export.pt\")[\"trained_precision\"])'", scratch);
	assert_int_equal(run(arguments, out + printed, sizeof out - printed, err, sizeof err), 0);
	const char *said = "trained in bf16 mixed precision: its convolutions and classifier multiplied bf16 operands, "
			   "summed in f32 in the tiles order; these are its f32 weights, and the export computes in full "
			   "precision";
	char line[1024];
	snprintf(line, sizeof line, "demo-bf16 was %s (under \"trained_precision\" too)\n", said);
	expect_in(out, line);
	snprintf(line, sizeof line, "\n%s\n", said);
	expect_in(out, line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bf16_path_refusals),
		cmocka_unit_test(test_tiles_order_is_the_same_on_every_path),
		cmocka_unit_test(test_pairs_order_is_the_same_on_every_path),
		cmocka_unit_test(test_a_run_resumes_on_another_path),
		cmocka_unit_test(test_streaming_changes_no_bit),
		cmocka_unit_test(test_export_says_how_the_weights_were_trained),
		cmocka_unit_test(test_explain_names_the_path),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
