/* The op table: what the generator knows about each op kind (ops.h). */
#include "ops.h"

#include <stdio.h>

#include "kernels/sizes.h"
#include "plan.h"
#include "real_text.h"

/* ---- shared rules ---------------------------------------------------------- */

static long align(long reals) { return (reals + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN; }

static double elements_of(struct shape s) { return (double)s.channels * s.height * s.width; }

static long count_of(const struct graph *g, int tensor) { return graph_tensor_size(g, tensor); }

static const char *tensor(const struct graph *g, int t) { return g->tensors[t].name; }

static const char *param(const struct graph *g, const struct op *op, int k) { return g->params[op->params[k]].name; }

/* The values most calls take: the instance, and the output and input. */
static void kernel_out_in(const struct graph *g, const struct op *op, const char *kernel, struct template_vars *v)
{
	template_set(v, "KERNEL", "%s", kernel);
	template_set(v, "OUT", "%s", tensor(g, op->output));
	template_set(v, "IN", "%s", tensor(g, op->inputs[0]));
}

static void out_in_count(const struct graph *g, const struct op *op, struct template_vars *v)
{
	template_set(v, "COUNT", "%ld", count_of(g, op->output));
	template_set(v, "OUT", "%s", tensor(g, op->output));
	template_set(v, "IN", "%s", tensor(g, op->inputs[0]));
}

/* An elementwise op's work: one operation an element. */
static double elementwise_flops(struct shape in, struct shape out, const struct op *op)
{
	(void)in;
	(void)op;
	return elements_of(out);
}

/* The shapes of an op that maps (C, H, W) to (C', H', W') with a stride. */
static void resampling_values(struct shape in, struct shape out, const struct op *op, struct template_vars *v)
{
	template_set(v, "C_IN", "%d", in.channels);
	template_set(v, "H_IN", "%d", in.height);
	template_set(v, "W_IN", "%d", in.width);
	template_set(v, "C_OUT", "%d", out.channels);
	template_set(v, "H_OUT", "%d", out.height);
	template_set(v, "W_OUT", "%d", out.width);
	template_set(v, "STRIDE", "%d", op->stride);
}

static void image_values(struct shape s, struct template_vars *v)
{
	template_set(v, "C", "%d", s.channels);
	template_set(v, "H", "%d", s.height);
	template_set(v, "W", "%d", s.width);
}

/* ---- convolution --------------------------------------------------------- */

static bool conv_weighted(const struct op *op) { return !op->projection; }

static double conv_flops(struct shape in, struct shape out, const struct op *op)
{
	return 2.0 * elements_of(out) * in.channels * op->kernel_size * op->kernel_size;
}

static void conv_name(struct shape in, struct shape out, const struct op *op, char *name, size_t size)
{
	snprintf(name, size, "conv%dx%d_s%d_%dx%dx%d_to_%d", op->kernel_size, op->kernel_size, op->stride, in.channels,
		 in.height, in.width, out.channels);
}

/* Per-thread scratch of a conv, and Winograd's tile: the kernels' own
 * rules (runtime/kernels/sizes.h), in long. */
static long conv_scratch(struct shape in, struct shape out, const struct op *op)
{
	return CONV_SCRATCH((long)in.channels, (long)in.height, (long)in.width, (long)out.channels, (long)out.height,
			    (long)out.width, (long)op->kernel_size);
}

static int conv_tile(struct shape in, struct shape out, const struct op *op)
{
	return CONV_TILE(op->kernel_size, op->stride, in.height, in.width, out.height, out.width);
}

/* Each pass's algorithm by the kernels' rules (runtime/kernels/sizes.h),
 * named as the kernels name it: the instance compiles that one alone. */
static void conv_algorithms(struct shape in, struct shape out, const struct op *op, struct template_vars *v)
{
	static const char *const methods[] = {"CONV_REFERENCE", "CONV_PLAIN", "CONV_ROW_SPLIT", "CONV_WINOGRAD"};
	static const char *const weight_methods[] = {"CONV_WEIGHT_REFERENCE", "CONV_WEIGHT_PATCHES", "CONV_WEIGHT_1X1",
						     "CONV_WEIGHT_SPLIT", "CONV_WEIGHT_WINOGRAD"};
	long c_in = in.channels, h_in = in.height, w_in = in.width, c_out = out.channels, h_out = out.height,
	     w_out = out.width, k = op->kernel_size, stride = op->stride;
	template_set(v, "FORWARD", "%s", methods[CONV_FORWARD_RULE(c_in, h_in, w_in, c_out, h_out, w_out, k, stride)]);
	template_set(v, "DATA", "%s", methods[CONV_DATA_RULE(c_in, h_in, w_in, c_out, h_out, w_out, k, stride)]);
	template_set(v, "WEIGHT", "%s", weight_methods[CONV_WEIGHT_RULE(c_in, h_in, w_in, c_out, h_out, w_out, k, stride)]);
}

static void conv_values(struct shape in, struct shape out, const struct op *op, struct template_vars *v)
{
	template_set(v, "K", "%d", op->kernel_size);
	template_set(v, "TILE", "%d", conv_tile(in, out, op));
	conv_algorithms(in, out, op, v);
	resampling_values(in, out, op, v);
}

static void conv_call(const struct graph *g, const struct op *op, const char *kernel, struct template_vars *v)
{
	template_set(v, "WEIGHT", "%s", param(g, op, 0));
	kernel_out_in(g, op, kernel, v);
	/* the images' own gradient only where a step asks for it (a dump) */
	bool images = op->inputs[0] == g->input;
	if (images)
		template_set(v, "DIN", "s->input_gradient ? GRAD(%s) : NULL", tensor(g, op->inputs[0]));
	else
		template_set(v, "DIN", "GRAD(%s)", tensor(g, op->inputs[0]));
	template_set(v, "IMAGES_NOTE", "%s", images ? " conv_explain_images(out);" : "");
}

/* ---- batch normalisation ----------------------------------------------- */

/* BN's sums per image and channel: BATCH_NORM_IMAGE_SUMS doubles, in reals
 * of f32 (the larger count). */
enum { SUMS_PER_CHANNEL = BATCH_NORM_IMAGE_SUMS * (int)(sizeof(double) / sizeof(float)) };

static double batch_norm_flops(struct shape in, struct shape out, const struct op *op)
{
	(void)in;
	(void)op;
	return 2.0 * elements_of(out); /* scale and shift, statistics aside */
}

static void batch_norm_name(struct shape in, struct shape out, const struct op *op, char *name, size_t size)
{
	(void)out;
	(void)op;
	snprintf(name, size, "batch_norm_%dx%dx%d", in.channels, in.height, in.width);
}

/* BN backward's sums per thread, on a whole line as every part of the
 * arena */
static long batch_norm_scratch(struct shape in, struct shape out, const struct op *op)
{
	(void)in;
	(void)op;
	return align((long)BATCH_NORM_SCRATCH(out.channels));
}

static void input_image_values(struct shape in, struct shape out, const struct op *op, struct template_vars *v)
{
	(void)out;
	(void)op;
	image_values(in, v);
}

static void batch_norm_call(const struct graph *g, const struct op *op, const char *kernel, struct template_vars *v)
{
	template_set(v, "GAMMA", "%s", param(g, op, 0));
	template_set(v, "BETA", "%s", param(g, op, 1));
	template_set(v, "MEAN", "%s", param(g, op, 2));
	template_set(v, "VAR", "%s", param(g, op, 3));
	template_set(v, "OP", "%s", op->name);
	kernel_out_in(g, op, kernel, v);
}

/* ---- ReLU, the sum, scaling and dropout: one shape-free kernel each,
 * named after its template ---- */

static void relu_call(const struct graph *g, const struct op *op, const char *kernel, struct template_vars *v)
{
	(void)kernel;
	out_in_count(g, op, v);
}

static void add_call(const struct graph *g, const struct op *op, const char *kernel, struct template_vars *v)
{
	(void)kernel;
	template_set(v, "SHORTCUT", "%s", tensor(g, op->inputs[0]));
	template_set(v, "BRANCH", "%s", tensor(g, op->inputs[1]));
	template_set(v, "COUNT", "%ld", count_of(g, op->output));
	template_set(v, "OUT", "%s", tensor(g, op->output));
}

static void scale_call(const struct graph *g, const struct op *op, const char *kernel, struct template_vars *v)
{
	(void)kernel;
	char number[32];
	template_set(v, "FACTOR", "%s", real_text(number, op->factor));
	out_in_count(g, op, v);
}

static void dropout_call(const struct graph *g, const struct op *op, const char *kernel, struct template_vars *v)
{
	(void)kernel;
	char number[32];
	template_set(v, "RATE", "%s", real_text(number, op->factor));
	template_set(v, "SALT", "%d", op->salt);
	out_in_count(g, op, v);
}

/* ---- the zero-padding shortcut ------------------------------------------- */

static void pad_shortcut_name(struct shape in, struct shape out, const struct op *op, char *name, size_t size)
{
	snprintf(name, size, "pad_shortcut_s%d_%dx%dx%d_to_%d", op->stride, in.channels, in.height, in.width,
		 out.channels);
}

static void plain_call(const struct graph *g, const struct op *op, const char *kernel, struct template_vars *v)
{
	kernel_out_in(g, op, kernel, v);
}

/* ---- the head: average pooling, the classifier, the loss ------------------ */

static double average_pool_flops(struct shape in, struct shape out, const struct op *op)
{
	(void)out;
	(void)op;
	return elements_of(in);
}

static void average_pool_name(struct shape in, struct shape out, const struct op *op, char *name, size_t size)
{
	(void)out;
	(void)op;
	snprintf(name, size, "average_pool_%dx%dx%d", in.channels, in.height, in.width);
}

static double max_pool_flops(struct shape in, struct shape out, const struct op *op)
{
	(void)in;
	return elements_of(out) * op->kernel_size * op->kernel_size;
}

static void max_pool_name(struct shape in, struct shape out, const struct op *op, char *name, size_t size)
{
	(void)out;
	snprintf(name, size, "max_pool%dx%d_s%d_%dx%dx%d", op->kernel_size, op->kernel_size, op->stride, in.channels,
		 in.height, in.width);
}

static void max_pool_values(struct shape in, struct shape out, const struct op *op, struct template_vars *v)
{
	template_set(v, "K", "%d", op->kernel_size);
	resampling_values(in, out, op, v);
}

static bool always(const struct op *op)
{
	(void)op;
	return true;
}

static double linear_flops(struct shape in, struct shape out, const struct op *op)
{
	(void)op;
	return 2.0 * elements_of(out) * in.channels;
}

static void linear_name(struct shape in, struct shape out, const struct op *op, char *name, size_t size)
{
	(void)op;
	snprintf(name, size, "linear_%d_to_%d", in.channels, out.channels);
}

static void linear_values(struct shape in, struct shape out, const struct op *op, struct template_vars *v)
{
	(void)op;
	template_set(v, "IN_FEATURES", "%d", in.channels);
	template_set(v, "OUT_FEATURES", "%d", out.channels);
}

static void linear_call(const struct graph *g, const struct op *op, const char *kernel, struct template_vars *v)
{
	template_set(v, "WEIGHT", "%s", param(g, op, 0));
	template_set(v, "BIAS", "%s", param(g, op, 1));
	kernel_out_in(g, op, kernel, v);
}

static void softmax_name(struct shape in, struct shape out, const struct op *op, char *name, size_t size)
{
	(void)out;
	(void)op;
	snprintf(name, size, "softmax_cross_entropy_%d", in.channels);
}

static void softmax_values(struct shape in, struct shape out, const struct op *op, struct template_vars *v)
{
	(void)out;
	(void)op;
	template_set(v, "CLASSES", "%d", in.channels);
}

/* ---- the gated sum --------------------------------------------------------- */

static double gated_add_flops(struct shape in, struct shape out, const struct op *op)
{
	(void)in;
	(void)op;
	return 8.0 * elements_of(out); /* sigmoid counted as four */
}

static void gated_add_name(struct shape in, struct shape out, const struct op *op, char *name, size_t size)
{
	(void)in;
	snprintf(name, size, "gated_add_%s_%dx%dx%d", op->exclusive ? "exclusive" : "shortcut", out.channels,
		 out.height, out.width);
}

static void gated_add_values(struct shape in, struct shape out, const struct op *op, struct template_vars *v)
{
	(void)in;
	image_values(out, v);
	template_set(v, "EXCLUSIVE", "%d", op->exclusive ? 1 : 0);
}

static void gated_add_call(const struct graph *g, const struct op *op, const char *kernel, struct template_vars *v)
{
	template_set(v, "SHORTCUT", "%s", tensor(g, op->inputs[0]));
	template_set(v, "BRANCH", "%s", tensor(g, op->inputs[1]));
	template_set(v, "GATE", "%s", tensor(g, op->inputs[2]));
	template_set(v, "BIAS", "%s", param(g, op, 0));
	template_set(v, "KERNEL", "%s", kernel);
	template_set(v, "OUT", "%s", tensor(g, op->output));
}

/* ---- the table ---------------------------------------------------------- */

const struct op_kind_info op_kinds[OP_KIND_COUNT] = {
	[OP_CONV] = {"conv", {"WRITE"}, .needs_batch_norm = true, /* the forward epilogue takes BN's sums */
		     .backward_reads_inputs = true, .convolution = true, .takes_next_sums = true,
		     .takes_gradient_source = true, .weighted = conv_weighted, .flops = conv_flops,
		     .kernel_name = conv_name, .scratch = conv_scratch, .kernel_values = conv_values,
		     .call_values = conv_call},
	[OP_BATCH_NORM] = {"batch_norm", {"WRITE"}, .backward_reads_inputs = true, .saved_per_channel = 7,
			   .image_sums_per_channel = SUMS_PER_CHANNEL, .takes_sums_given = true,
			   .flops = batch_norm_flops, .kernel_name = batch_norm_name, .scratch = batch_norm_scratch,
			   .kernel_values = input_image_values, .call_values = batch_norm_call},
	[OP_RELU] = {"relu", {"WRITE"}, .backward_reads_output = true, .flops = elementwise_flops,
		     .call_values = relu_call},
	[OP_ADD] = {"add", {"SHORTCUT_WRITE", "BRANCH_WRITE"}, .hands_gradient_on = true, .flops = elementwise_flops,
		    .call_values = add_call},
	[OP_PAD_SHORTCUT] = {"pad_shortcut", {NULL}, .kernel_name = pad_shortcut_name,
			     .kernel_values = resampling_values, .call_values = plain_call},
	[OP_AVERAGE_POOL] = {"average_pool", {NULL}, .flops = average_pool_flops, .kernel_name = average_pool_name,
			     .kernel_values = input_image_values, .call_values = plain_call},
	[OP_LINEAR] = {"linear", {NULL}, .backward_reads_inputs = true, .weighted = always, .flops = linear_flops,
		       .kernel_name = linear_name, .kernel_values = linear_values, .call_values = linear_call},
	[OP_SOFTMAX_CROSS_ENTROPY] = {"softmax_cross_entropy", {NULL}, .backward_reads_output = true,
				      .flops = elementwise_flops, .kernel_name = softmax_name,
				      .kernel_values = softmax_values, .call_values = plain_call},
	[OP_SCALE] = {"scale", {NULL}, .flops = elementwise_flops, .call_values = scale_call},
	[OP_GATED_ADD] = {"gated_add", {NULL}, .backward_reads_inputs = true, .flops = gated_add_flops,
			  .kernel_name = gated_add_name, .kernel_values = gated_add_values,
			  .call_values = gated_add_call},
	[OP_DROPOUT] = {"dropout", {NULL}, .flops = elementwise_flops,
			.call_values = dropout_call},
	[OP_MAX_POOL] = {"max_pool", {NULL}, .backward_reads_inputs = true, .flops = max_pool_flops,
			 .kernel_name = max_pool_name, .kernel_values = max_pool_values, .call_values = plain_call},
};
