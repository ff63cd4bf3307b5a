/* The graph: each ordering of the paper's Fig. 4 as an op sequence, the
 * pre-activation details, and the paper's parameter counts. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph.h"
#include "plan.h"

static const char *scratch = "build/tests/scratch-graph.yaml";

/* Builds the graph of a CIFAR-10 spec whose net has these values; extra is
 * more of the net mapping, such as "projection: zero-pad". */
static void build(struct spec *spec, struct graph *g, const char *unit, const char *ordering,
		  int depth, const char *extra)
{
	FILE *file = fopen(scratch, "w");
	assert_non_null(file);
	fprintf(file, "name: t\ndata: {set: cifar10}\nnet: {unit: %s, ordering: %s, depth: %d, %s}\n",
		unit, ordering, depth, extra);
	fclose(file);
	struct diag d = {{0}};
	assert_int_equal(spec_load(spec, scratch, &d), 0);
	assert_int_equal(graph_build(g, spec, &d), 0);
}

static const struct group *group_named(const struct graph *g, const char *name)
{
	for (int i = 0; i < g->group_count; i++)
		if (strcmp(g->groups[i].name, name) == 0)
			return &g->groups[i];
	fail_msg("no group %s", name);
	return NULL;
}

static void expect_unit(const char *ordering, const char *unit, const char *stem, const char *first,
			const char *second, const char *head)
{
	struct spec spec;
	struct graph g;
	build(&spec, &g, unit, ordering, strcmp(unit, "basic") == 0 ? 20 : 29, "projection: conv1x1");
	assert_string_equal(group_named(&g, "stem")->summary, stem);
	assert_string_equal(group_named(&g, "stage1_unit01")->summary, first);
	assert_string_equal(group_named(&g, "stage1_unit02")->summary, second);
	assert_string_equal(group_named(&g, "head")->summary, head);
	graph_free(&g);
}

static void test_graph_orderings_match_figure_4(void **unused)
{
	(void)unused;
	const char *stem = "conv bn relu";
	expect_unit("original", "basic", stem, "conv1 bn1 relu1 conv2 bn2 add post_relu",
		    "conv1 bn1 relu1 conv2 bn2 add post_relu", "pool fc loss");
	expect_unit("bn-after-add", "basic", stem, "conv1 bn1 relu1 conv2 add post_bn post_relu",
		    "conv1 bn1 relu1 conv2 add post_bn post_relu", "pool fc loss");
	expect_unit("relu-before-add", "basic", stem, "conv1 bn1 relu1 conv2 bn2 relu2 add",
		    "conv1 bn1 relu1 conv2 bn2 relu2 add", "pool fc loss");
	/* Pre-activation: the stem's activation serves the first unit. */
	expect_unit("relu-only-preact", "basic", stem, "conv1 bn1 relu1 conv2 bn2 add",
		    "relu1 conv1 bn1 relu2 conv2 bn2 add", "relu pool fc loss");
	expect_unit("full-preact", "basic", stem, "conv1 bn1 relu1 conv2 add",
		    "bn1 relu1 conv1 bn2 relu2 conv2 add", "bn relu pool fc loss");
	expect_unit("full-preact", "bottleneck", stem,
		    "conv1 bn1 relu1 conv2 bn2 relu2 conv3 shortcut_conv add",
		    "bn1 relu1 conv1 bn2 relu2 conv2 bn3 relu3 conv3 add", "bn relu pool fc loss");
	expect_unit("original", "bottleneck", stem,
		    "conv1 bn1 relu1 conv2 bn2 relu2 conv3 bn3 shortcut_conv add post_relu",
		    "conv1 bn1 relu1 conv2 bn2 relu2 conv3 bn3 add post_relu", "pool fc loss");
}

static const struct op *op_named(const struct graph *g, const char *name);

static void expect_shortcut(const char *unit, const char *ordering, const char *shortcut,
			    const char *second, const char *projecting)
{
	struct spec spec;
	struct graph g;
	build(&spec, &g, unit, ordering, strcmp(unit, "one-layer") == 0 ? 11 : 20, shortcut);
	assert_string_equal(group_named(&g, "stage1_unit02")->summary, second);
	assert_string_equal(group_named(&g, "stage2_unit01")->summary, projecting);
	graph_free(&g);
}

static void test_graph_shortcut_kinds_of_table_1(void **unused)
{
	(void)unused;
	expect_shortcut("basic", "original", "shortcut: scaling, scaling: {shortcut: 0.5, branch: 0.5}",
			"conv1 bn1 relu1 conv2 bn2 shortcut_scale branch_scale add post_relu",
			"conv1 bn1 relu1 conv2 bn2 shortcut_conv shortcut_scale branch_scale add post_relu");
	/* A branch factor of 1 is no op at all. */
	expect_shortcut("basic", "original", "shortcut: scaling, scaling: {shortcut: 0}",
			"conv1 bn1 relu1 conv2 bn2 shortcut_scale add post_relu",
			"conv1 bn1 relu1 conv2 bn2 shortcut_conv shortcut_scale add post_relu");
	expect_shortcut("basic", "original", "shortcut: exclusive-gating",
			"conv1 bn1 relu1 conv2 bn2 gate_conv gated_add post_relu",
			"conv1 bn1 relu1 conv2 bn2 shortcut_conv gate_conv gated_add post_relu");
	expect_shortcut("basic", "full-preact", "shortcut: shortcut-gating, gating: {bias: 0}",
			"bn1 relu1 conv1 bn2 relu2 conv2 gate_conv gated_add",
			"bn1 relu1 conv1 bn2 relu2 conv2 shortcut_conv gate_conv gated_add");
	expect_shortcut("basic", "original", "shortcut: conv1x1, shortcut_bn: true",
			"conv1 bn1 relu1 conv2 bn2 shortcut_conv shortcut_bn add post_relu",
			"conv1 bn1 relu1 conv2 bn2 shortcut_conv shortcut_bn add post_relu");
	expect_shortcut("basic", "original", "shortcut: dropout, dropout: {rate: 0.5}",
			"conv1 bn1 relu1 conv2 bn2 shortcut_dropout add post_relu",
			"conv1 bn1 relu1 conv2 bn2 shortcut_conv shortcut_dropout add post_relu");
	/* Table 3's 1-layer units: one 3x3 conv each, depth 3n+2. */
	expect_shortcut("one-layer", "original", "shortcut: identity", "conv1 bn1 add post_relu",
			"conv1 bn1 shortcut_conv add post_relu");
	expect_shortcut("one-layer", "full-preact", "shortcut: identity", "bn1 relu1 conv1 add",
			"bn1 relu1 conv1 shortcut_conv add");
}

static void test_graph_gate_reads_what_the_shortcut_reads(void **unused)
{
	(void)unused;
	struct spec spec;
	struct graph g;
	build(&spec, &g, "basic", "full-preact", 20, "shortcut: exclusive-gating, gating: {bias: -6}");
	const struct op *gate = op_named(&g, "stage2_unit01_gate_conv");
	assert_string_equal(g.tensors[gate->inputs[0]].name, "stage2_unit01_relu1");
	assert_int_equal(gate->stride, 2);
	const struct op *sum = op_named(&g, "stage2_unit02_gated_add");
	assert_int_equal(sum->input_count, 3);
	assert_true(sum->exclusive);
	assert_string_equal(g.tensors[sum->inputs[0]].name, "stage2_unit01_gated_add");
	assert_true(g.params[sum->params[0]].init == PARAM_CONSTANT);
	assert_true(g.params[sum->params[0]].init_scale == -6);
	graph_free(&g);
}

static const struct op *op_named(const struct graph *g, const char *name)
{
	for (int i = 0; i < g->op_count; i++)
		if (strcmp(g->ops[i].name, name) == 0)
			return &g->ops[i];
	fail_msg("no op %s", name);
	return NULL;
}

static void test_graph_projection_takes_preactivated_input(void **unused)
{
	(void)unused;
	struct spec spec;
	struct graph g;
	build(&spec, &g, "basic", "full-preact", 20, "projection: conv1x1");
	const struct op *shortcut = op_named(&g, "stage2_unit01_shortcut_conv");
	assert_string_equal(g.tensors[shortcut->inputs[0]].name, "stage2_unit01_relu1");
	assert_int_equal(shortcut->stride, 2);
	const struct op *add = op_named(&g, "stage2_unit02_add");
	assert_string_equal(g.tensors[add->inputs[0]].name, "stage2_unit01_add"); /* identity */
	graph_free(&g);

	build(&spec, &g, "basic", "original", 20, "projection: zero-pad");
	const struct op *pad = op_named(&g, "stage3_unit01_shortcut_pad");
	assert_string_equal(g.tensors[pad->inputs[0]].name, "stage2_unit03_post_relu");
	struct shape out = g.tensors[pad->output].shape;
	assert_int_equal(out.channels, 64);
	assert_int_equal(out.height, 8);
	graph_free(&g);
}

/* Weights of convolutions and the classifier (BN's gamma and beta aside). */
static long weight_parameters(const struct graph *g)
{
	long total = 0;
	for (int i = 0; i < g->op_count; i++)
		if (g->ops[i].kind == OP_CONV || g->ops[i].kind == OP_LINEAR)
			for (int k = 0; k < g->ops[i].param_count; k++)
				total += g->params[g->ops[i].params[k]].count;
	return total;
}

static void test_graph_parameter_counts_match_the_paper(void **unused)
{
	(void)unused;
	/* The paper: ResNet-110 1.7M, ResNet-164 1.7M, ResNet-1001 10.2M. Its
	 * 10.2M matches the weights without BN's gamma and beta (0.15M more
	 * for ResNet-1001), so that is what is compared. */
	struct {
		const char *unit;
		int depth;
		double millions;
	} nets[] = {{"basic", 110, 1.7}, {"bottleneck", 164, 1.7}, {"bottleneck", 1001, 10.2}};
	for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) {
		struct spec spec;
		struct graph g;
		build(&spec, &g, nets[i].unit, "full-preact", nets[i].depth, "projection: conv1x1");
		double millions = weight_parameters(&g) / 1e6;
		print_message("%s-%d: %.3fM weights\n", nets[i].unit, nets[i].depth, millions);
		assert_true(fabs(millions - nets[i].millions) < 0.05);
		graph_free(&g);
	}
}

/* Every trained parameter of g, BN's gamma and beta included. */
static long trained_parameters(const struct graph *g)
{
	long total = 0;
	for (int i = 0; i < g->param_count; i++)
		total += g->params[i].trained ? g->params[i].count : 0;
	return total;
}

/* The ImageNet networks count as torchvision's (the sum of numel() over
 * resnet50().parameters(), and so on), to the parameter: 11,689,512 for
 * ResNet-18, 21,797,672 for ResNet-34, 25,557,032 for ResNet-50 ("25.6M"
 * in He et al. 2015's code and torchvision's table), 44,549,160 for
 * ResNet-101 and 60,192,808 for ResNet-152; the shipped specs of the
 * first three among them. */
static void test_graph_imagenet_networks_count_as_torchvision(void **unused)
{
	(void)unused;
	struct {
		const char *unit, *stages;
		long parameters;
		const char *spec; /* the shipped spec of it, or NULL */
	} nets[] = {{"basic", "[2, 2, 2, 2]", 11689512, "specs/resnet-18.yaml"},
		    {"basic", "[3, 4, 6, 3]", 21797672, "specs/resnet-34.yaml"},
		    {"bottleneck", "[3, 4, 6, 3]", 25557032, "specs/resnet-50.yaml"},
		    {"bottleneck", "[3, 4, 23, 3]", 44549160, NULL},
		    {"bottleneck", "[3, 8, 36, 3]", 60192808, NULL}};
	for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) {
		if (nets[i].spec) {
			struct spec spec;
			struct graph g;
			struct diag d = {{0}};
			assert_int_equal(spec_load(&spec, nets[i].spec, &d), 0);
			assert_int_equal(graph_build(&g, &spec, &d), 0);
			assert_int_equal(trained_parameters(&g), nets[i].parameters);
			graph_free(&g);
		}
		FILE *file = fopen(scratch, "w");
		assert_non_null(file);
		fprintf(file, "name: t\ndata: {set: imagenet}\nnet: {unit: %s, ordering: original, stem: imagenet, "
			      "stages: %s, widths: [64, 128, 256, 512], shortcut_bn: true}\n",
			nets[i].unit, nets[i].stages);
		fclose(file);
		struct spec spec;
		struct graph g;
		struct diag d = {{0}};
		assert_int_equal(spec_load(&spec, scratch, &d), 0);
		assert_int_equal(graph_build(&g, &spec, &d), 0);
		assert_int_equal(trained_parameters(&g), nets[i].parameters);
		/* the stem quarters the image: 56x56 into the first unit */
		const struct group *first = group_named(&g, "stage1_unit01");
		const struct tensor *in = &g.tensors[g.ops[first->first_op].inputs[0]];
		assert_int_equal(in->shape.height, 56);
		assert_int_equal(in->shape.channels, 64);
		graph_free(&g);
	}
}

static void test_graph_deep_net_needs_few_kernels(void **unused)
{
	(void)unused;
	struct spec spec;
	struct graph g;
	struct plan p;
	struct diag d = {{0}};
	build(&spec, &g, "bottleneck", "full-preact", 1001, "projection: conv1x1");
	assert_int_equal(plan_build(&p, &g, &d), 0);
	print_message("resnet-1001: %d ops, %d kernel instances\n", g.op_count, p.kernel_count);
	assert_true(g.op_count > 3000);
	assert_true(p.kernel_count < 40);
	plan_free(&p);
	graph_free(&g);
}

/* A pre-activation bottleneck network's sums: one in RECOMPUTE_EVERY,
 * whose shortcut is kept, is computed again just before the backward of
 * the next unit's first step (which reads it), and its slot holds other
 * tensors in between; a basic network's (3x3 convolutions) are all kept. */
static void test_plan_computes_some_sums_again(void **unused)
{
	(void)unused;
	struct spec spec;
	struct graph g;
	struct plan p;
	struct diag d = {{0}};
	build(&spec, &g, "bottleneck", "full-preact", 164, "projection: conv1x1");
	assert_int_equal(plan_build(&p, &g, &d), 0);
	const struct lowering *l = &p.lowering;
	int again = 0, sums = 0, shared = 0;
	for (int i = 0; i < g.op_count; i++) {
		if (g.ops[i].kind != OP_ADD)
			continue;
		int sum = g.ops[i].output, reader = l->recomputed_before[sum];
		sums++;
		if (reader < 0)
			continue;
		again++;
		/* read in backward first by the step that runs it again, the next unit's first */
		assert_int_equal(l->steps[reader].recompute, l->step_of_op[i]);
		assert_int_equal(g.ops[l->steps[reader].first_op].inputs[0], sum);
		/* its shortcut is kept */
		const struct op *add = &g.ops[i];
		for (int k = 0; k < 2; k++)
			if (g.tensors[add->inputs[k]].producer != i - 1)
				assert_int_equal(l->recomputed_before[add->inputs[k]], -1);
		/* another tensor takes its slot while it is not kept */
		for (int t = 0; t < g.tensor_count; t++)
			if (t != sum && p.activation_offset[t] == p.activation_offset[sum])
				shared++;
	}
	print_message("preact-164: %d of %d sums computed again; arena %ld reals an image\n", again, sums,
		      p.arena_per_image);
	/* 54 sums; each stage's first is its projection's epilogue, never
	 * computed again; of the other 51, one in RECOMPUTE_EVERY, the count
	 * running on across stages */
	assert_int_equal(sums, 54);
	assert_int_equal(again, 51 / RECOMPUTE_EVERY);
	assert_true(shared >= again);
	plan_free(&p);
	graph_free(&g);

	build(&spec, &g, "basic", "full-preact", 110, "projection: conv1x1");
	assert_int_equal(plan_build(&p, &g, &d), 0);
	for (int t = 0; t < g.tensor_count; t++)
		assert_int_equal(p.lowering.recomputed_before[t], -1);
	plan_free(&p);
	graph_free(&g);
}

/* In every ordering of Fig. 4, with either projection, each residual
 * addition hands its gradient on without a copy: its inputs' gradients sit
 * in its output gradient's slot. */
/* make diff's story: the units whose ops changed, consecutive ones that
 * change alike on one line, then the units only one network has. */
static void test_graph_units_tell_the_story_of_a_diff(void **unused)
{
	(void)unused;
	struct spec spec_a, spec_b;
	struct graph a, b;
	build(&spec_a, &a, "basic", "original", 20, "projection: conv1x1");
	build(&spec_b, &b, "basic", "full-preact", 32, "projection: conv1x1");
	char *text = NULL;
	size_t length = 0;
	FILE *out = open_memstream(&text, &length);
	assert_non_null(out);
	graph_print_units(&a, &b, out);
	graph_print_units(&a, &a, out);
	graph_print_units(&a, NULL, out);
	fclose(out);
	const char *expected =
		"stage1_unit01: conv1 bn1 relu1 conv2 bn2 add post_relu -> conv1 bn1 relu1 conv2 add\n"
		"stage1_unit02 .. stage1_unit03 (2 units): conv1 bn1 relu1 conv2 bn2 add post_relu -> bn1 relu1 conv1 "
		"bn2 relu2 conv2 add\n"
		"stage2_unit01: conv1 bn1 relu1 conv2 bn2 shortcut_conv add post_relu -> bn1 relu1 conv1 bn2 relu2 "
		"conv2 shortcut_conv add\n"
		"stage2_unit02 .. stage2_unit03 (2 units): conv1 bn1 relu1 conv2 bn2 add post_relu -> bn1 relu1 conv1 "
		"bn2 relu2 conv2 add\n"
		"stage3_unit01: conv1 bn1 relu1 conv2 bn2 shortcut_conv add post_relu -> bn1 relu1 conv1 bn2 relu2 "
		"conv2 shortcut_conv add\n"
		"stage3_unit02 .. stage3_unit03 (2 units): conv1 bn1 relu1 conv2 bn2 add post_relu -> bn1 relu1 conv1 "
		"bn2 relu2 conv2 add\n"
		"head: pool fc loss -> bn relu pool fc loss\n"
		"stage1_unit04 .. stage1_unit05 (2 units): only in the second\n"
		"stage2_unit04 .. stage2_unit05 (2 units): only in the second\n"
		"stage3_unit04 .. stage3_unit05 (2 units): only in the second\n"
		"every unit both have computes the same ops\n"
		"stem: conv bn relu\n"
		"stage1_unit01: conv1 bn1 relu1 conv2 bn2 add post_relu\n"
		"stage1_unit02: conv1 bn1 relu1 conv2 bn2 add post_relu\n";
	assert_memory_equal(text, expected, strlen(expected));
	free(text);
	graph_free(&b);
	/* the same network in bf16: the same ops, multiplied otherwise */
	build(&spec_b, &b, "basic", "original", 20, "projection: conv1x1, precision: bf16, arithmetic: pairs");
	out = open_memstream(&text, &length);
	assert_non_null(out);
	graph_print_units(&a, &b, out);
	fclose(out);
	assert_string_equal(text, "every unit both have computes the same ops\n"
				  "the convolutions and the classifier multiply in f32 in the first and in bf16 (pairs) in "
				  "the second\n");
	free(text);
	graph_free(&a);
	graph_free(&b);
}

static void test_plan_additions_pass_gradients_in_one_slot(void **unused)
{
	(void)unused;
	const char *orderings[] = {"original", "bn-after-add", "relu-before-add", "relu-only-preact", "full-preact"};
	const char *projections[] = {"projection: zero-pad", "projection: conv1x1"};
	for (size_t o = 0; o < sizeof orderings / sizeof *orderings; o++)
		for (int j = 0; j < 2; j++) {
			struct spec spec;
			struct graph g;
			struct plan p;
			struct diag d = {{0}};
			build(&spec, &g, "basic", orderings[o], 20, projections[j]);
			assert_int_equal(plan_build(&p, &g, &d), 0);
			int additions = 0;
			for (int i = 0; i < g.op_count; i++) {
				const struct op *op = &g.ops[i];
				if (op->kind != OP_ADD)
					continue;
				additions++;
				assert_true(p.lowering.passes_gradient[i]);
				assert_true(p.gradient_offset[op->output] >= 0);
				assert_int_equal(p.gradient_offset[op->inputs[0]], p.gradient_offset[op->output]);
				assert_int_equal(p.gradient_offset[op->inputs[1]], p.gradient_offset[op->output]);
			}
			assert_int_equal(additions, 9);
			plan_free(&p);
			graph_free(&g);
		}
}

/* Pre-activation ResNet-20: every unit's second convolution takes its
 * addition as epilogue (but the two projection units', whose shortcut
 * convolution runs after it), whose output is then never stored; and every
 * BN after a convolution or a fused step's addition takes its statistics
 * from the sums that step's epilogue took. */
static void test_lowering_fuses_additions_and_batch_norm_sums(void **unused)
{
	(void)unused;
	struct spec spec;
	struct graph g;
	struct plan p;
	struct diag d = {{0}};
	build(&spec, &g, "basic", "full-preact", 20, "projection: conv1x1");
	assert_int_equal(plan_build(&p, &g, &d), 0);
	const struct lowering *l = &p.lowering;
	int fused = 0, summed = 0, batch_norms = 0;
	for (int j = 0; j < l->step_count; j++) {
		const struct step *step = &l->steps[j];
		const struct op *first = &g.ops[step->first_op];
		if (step->op_count == 4) {
			const struct op *conv = &g.ops[step->kernel_op], *add = &g.ops[step->first_op + 3];
			assert_int_equal(step->kind, STEP_BN_RELU_CONV);
			assert_int_equal(add->kind, OP_ADD);
			assert_int_equal(p.activation_offset[conv->output], -1);
			assert_int_equal(p.gradient_offset[conv->output], p.gradient_offset[add->output]);
			fused++;
		}
		if (first->kind == OP_BATCH_NORM) {
			batch_norms++;
			if (j > 0 && l->steps[j - 1].sums_for_next) {
				assert_int_equal(g.ops[l->steps[j - 1].kernel_op].kind, OP_CONV);
				summed++;
			}
		}
	}
	print_message("preact-20: %d of 9 additions fused, %d of %d BN take their sums from the step before\n", fused,
		      summed, batch_norms);
	assert_int_equal(fused, 7);
	/* all but the two projection units' first BNs, which read an addition
	 * that ran as its own step */
	assert_int_equal(summed, batch_norms - 2);
	plan_free(&p);
	graph_free(&g);
}

/* Original ResNet-20: every unit ends in BN -> addition -> ReLU run as one
 * step, but the two projection units', whose shortcut convolution runs
 * between BN and the addition; neither BN's output nor the sum is stored,
 * and the sum's gradient is BN's output's. */
static void test_lowering_fuses_batch_norm_addition_relu(void **unused)
{
	(void)unused;
	struct spec spec;
	struct graph g;
	struct plan p;
	struct diag d = {{0}};
	build(&spec, &g, "basic", "original", 20, "projection: conv1x1");
	assert_int_equal(plan_build(&p, &g, &d), 0);
	const struct lowering *l = &p.lowering;
	int fused = 0, additions = 0;
	for (int i = 0; i < g.op_count; i++)
		additions += g.ops[i].kind == OP_ADD;
	for (int j = 0; j < l->step_count; j++) {
		const struct step *step = &l->steps[j];
		if (step->kind != STEP_BN_ADD_RELU)
			continue;
		const struct op *bn = &g.ops[step->first_op], *add = bn + 1, *relu = bn + 2;
		assert_int_equal(step->op_count, 3);
		assert_int_equal(bn->kind, OP_BATCH_NORM);
		assert_int_equal(add->kind, OP_ADD);
		assert_int_equal(relu->kind, OP_RELU);
		assert_int_equal(p.activation_offset[bn->output], -1);
		assert_int_equal(p.activation_offset[add->output], -1);
		assert_true(p.activation_offset[relu->output] >= 0);
		assert_int_equal(p.gradient_offset[bn->output], p.gradient_offset[add->output]);
		fused++;
	}
	print_message("original-20: %d of %d additions fused with the BN before and the ReLU after\n", fused, additions);
	assert_int_equal(additions, 9);
	assert_int_equal(fused, 7);
	plan_free(&p);
	graph_free(&g);
}

/* Pre-activation ResNet-20 with projection shortcuts: the BN + ReLU that
 * both the first convolution and the projection of a projection unit read,
 * and the last one, before the pooling, run as one step each; BN's output
 * and its gradient are not stored, ReLU's output and its gradient are. */
static void test_lowering_fuses_batch_norm_relu(void **unused)
{
	(void)unused;
	struct spec spec;
	struct graph g;
	struct plan p;
	struct diag d = {{0}};
	build(&spec, &g, "basic", "full-preact", 20, "projection: conv1x1");
	assert_int_equal(plan_build(&p, &g, &d), 0);
	const struct lowering *l = &p.lowering;
	int fused = 0, relus = 0;
	for (int i = 0; i < g.op_count; i++)
		relus += g.ops[i].kind == OP_RELU;
	for (int j = 0; j < l->step_count; j++) {
		const struct step *step = &l->steps[j];
		assert_true(step->kind != STEP_OP || g.ops[step->first_op].kind != OP_RELU);
		if (step->kind != STEP_BN_RELU)
			continue;
		const struct op *bn = &g.ops[step->first_op], *relu = bn + 1;
		assert_int_equal(step->op_count, 2);
		assert_int_equal(bn->kind, OP_BATCH_NORM);
		assert_int_equal(relu->kind, OP_RELU);
		assert_int_equal(relu->inputs[0], bn->output);
		assert_int_equal(p.activation_offset[bn->output], -1);
		assert_int_equal(p.gradient_offset[bn->output], -1);
		assert_true(p.activation_offset[relu->output] >= 0);
		assert_true(p.gradient_offset[relu->output] >= 0);
		fused++;
	}
	print_message("preact-20: %d of %d ReLUs run with their BN as one step (the rest inside a convolution's)\n", fused, relus);
	assert_int_equal(fused, 4);
	plan_free(&p);
	graph_free(&g);
}

/* Whether the arena slots [a, a + size_a) and [b, b + size_b) share a real. */
static bool slots_overlap(long a, long size_a, long b, long size_b)
{
	return a < b + size_b && b < a + size_a;
}

/* BNs that normalise a convolution that only they read leave their input
 * gradients to that convolution (lower.h): neither gradient has a slot
 * (BN + addition + ReLU's sum gradient is the shortcut's, and stored),
 * the convolution's step, in BN's unit and (after BN + addition + ReLU)
 * just before, names the BN's, BN's input (the convolution's output) is
 * stored, and the gradient the convolution then reads lies apart from
 * those its own step writes. In preact-29's bottleneck units the second
 * and third BNs; the first, whose input the shortcut reads too, stores
 * its gradient. In original-29's, all three, but where a projection's
 * convolution comes between the last convolution and BN + addition +
 * ReLU. */
static void test_lowering_leaves_batch_norm_gradients_to_convolutions(void **unused)
{
	(void)unused;
	const char *orderings[] = {"full-preact", "original"};
	const int expected[] = {2 * 9, 3 * 9 - 3};
	for (int o = 0; o < 2; o++) {
		struct spec spec;
		struct graph g;
		struct plan p;
		struct diag d = {{0}};
		build(&spec, &g, "bottleneck", orderings[o], 29, "projection: conv1x1");
		assert_int_equal(plan_build(&p, &g, &d), 0);
		const struct lowering *l = &p.lowering;
		int left = 0, batch_norms = 0;
		for (int i = 0; i < g.op_count; i++)
			batch_norms += g.ops[i].kind == OP_BATCH_NORM;
		for (int j = 0; j < l->step_count; j++) {
			const struct step *step = &l->steps[j];
			if (!step->leaves_gradient)
				continue;
			assert_true(step->kind == STEP_BN_RELU_CONV || step->kind == STEP_BN_ADD_RELU);
			const struct op *bn = &g.ops[step->first_op];
			int t = bn->inputs[0], producer = g.tensors[t].producer, gradient = bn[1].output;
			assert_true(producer >= 0);
			assert_int_equal(g.ops[producer].kind, OP_CONV);
			assert_int_equal(g.ops[producer].group, bn->group); /* the unit's input gradient whole when its backward ends */
			const struct step *conv_step = &l->steps[l->step_of_op[producer]];
			assert_int_equal(conv_step->applies_for, j);
			if (step->kind == STEP_BN_ADD_RELU)
				assert_int_equal(l->step_of_op[producer], j - 1);
			assert_int_equal(p.gradient_offset[t], -1);
			assert_true(p.activation_offset[t] >= 0);
			assert_true(p.gradient_offset[gradient] >= 0);
			/* what the convolution's step writes in backward: its input's gradient, and a fused step's ReLU output's */
			const struct op *first = &g.ops[conv_step->first_op];
			int written[2] = {first->inputs[0], conv_step->kind == STEP_BN_RELU_CONV ? first[1].output : first->inputs[0]};
			for (int k = 0; k < 2; k++)
				if (p.gradient_offset[written[k]] >= 0)
					assert_false(slots_overlap(p.gradient_offset[gradient], graph_tensor_size(&g, gradient),
								   p.gradient_offset[written[k]], graph_tensor_size(&g, written[k])));
			left++;
		}
		print_message("%s-29 (bottleneck): %d of %d BNs leave their input gradient to the convolution before\n", orderings[o], left,
			      batch_norms);
		assert_int_equal(left, expected[o]);
		plan_free(&p);
		graph_free(&g);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_graph_orderings_match_figure_4),
		cmocka_unit_test(test_graph_projection_takes_preactivated_input),
		cmocka_unit_test(test_graph_shortcut_kinds_of_table_1),
		cmocka_unit_test(test_graph_gate_reads_what_the_shortcut_reads),
		cmocka_unit_test(test_graph_parameter_counts_match_the_paper),
		cmocka_unit_test(test_graph_imagenet_networks_count_as_torchvision),
		cmocka_unit_test(test_graph_deep_net_needs_few_kernels),
		cmocka_unit_test(test_plan_computes_some_sums_again),
		cmocka_unit_test(test_graph_units_tell_the_story_of_a_diff),
		cmocka_unit_test(test_plan_additions_pass_gradients_in_one_slot),
		cmocka_unit_test(test_lowering_fuses_additions_and_batch_norm_sums),
		cmocka_unit_test(test_lowering_fuses_batch_norm_addition_relu),
		cmocka_unit_test(test_lowering_fuses_batch_norm_relu),
		cmocka_unit_test(test_lowering_leaves_batch_norm_gradients_to_convolutions),
	};
	return cmocka_run_group_tests_name("graph", tests, NULL, NULL);
}
