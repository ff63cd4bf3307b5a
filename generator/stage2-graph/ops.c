/* The op table: what the generator knows about each op kind (ops.h). */
#include "ops.h"

#include <stdio.h>

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

/* Per-thread scratch of a conv, as CONV_SCRATCH in runtime/kernels/conv/shape.h
 * (which each instance checks this figure against at compile time): a private weight gradient,
 * summed across threads in a fixed order, then the larger of the forward
 * pass's part and the backward pass's (the weight gradient's part, the
 * data gradient's, a fused BN's sums, and dY where BN's backward leaves
 * it to the convolution, side by side, as both gradients run in one
 * loop). The fast kernels' parts: a padded image, packed
 * operands and a panel, for the forward pass, the data gradient and the
 * weight gradient; the first two's row split adds its partial outputs,
 * or a 3x3 one's Winograd its transformed tiles and products, and both an
 * output image staged to be streamed to memory (conv_streams); the weight
 * gradient's row split dY padded, its Winograd both operands' tiles and
 * its products; Winograd's for each place of the larger of its two
 * tiles' (2 x 2: 16 places, 4 x 4: 36), and the weight gradient's dY and
 * input with their channels innermost; and a 1x1 weight gradient packs
 * its input instead. Each part is at least the reference
 * kernels' columns with the image a prologue computes. */
enum { PANEL_MAX = 32 }; /* GEMM_PANEL_MAX of runtime/gemm.h */

static long packed_panels(long channels, long k) { return align((channels + PANEL_MAX) * k + 16 * (channels + 1)); }

static long max_of(long a, long b) { return a > b ? a : b; }

/* CONV_PLACE: one place of Winograd's tiles, whole pages and a line apart */
static long place(long reals) { return (reals + 1023) / 1024 * 1024 + 16; }

/* CONV_GROUP times the tiles: those of as many images as make width
 * tiles (up to CONV_WINOGRAD_GROUP, 8) */
static long set_of(long tiles, long width)
{
	long group = tiles >= width || tiles == 0 ? 1 : (width + tiles - 1) / tiles;
	return (group < 8 ? group : 8) * tiles;
}

/* CONV_SET_TILES: the tiles of a group of images, as many as fill a panel */
static long group_tiles(long tiles) { return set_of(tiles, PANEL_MAX); }

/* CONV_PRODUCT_ROWS: Winograd's products' rows at most, the channels and
 * an eighth more where they are rounded up to whole blocks of the
 * micro-kernel */
static long product_rows(long channels) { return channels + channels / 8; }

/* CONV_WEIGHT_SET: the tiles the weight gradient's products sum over at
 * once, as many images' as make CONV_WEIGHT_TILES (64) */
static long weight_set(long tiles) { return set_of(tiles, 64); }

static long conv_scratch(struct shape in, struct shape out, const struct op *op)
{
	long kk = (long)op->kernel_size * op->kernel_size;
	long patch = in.channels * kk, flipped_patch = out.channels * kk;
	long pixels = (long)out.height * out.width;
	long border = op->kernel_size / 2 * 2;
	long padded_in = align(in.channels * (in.height + border) * (in.width + border));
	long padded_out = align(out.channels * (out.height + border) * (out.width + border));
	/* either packing of the weights, and the row split's partial outputs */
	long k = op->kernel_size;
	long packed_forward = max_of(packed_panels(out.channels, patch), packed_panels(out.channels * k, in.channels * k));
	long packed_data = max_of(packed_panels(in.channels, flipped_patch), packed_panels(in.channels * k, out.channels * k));
	long rows_forward = align(out.channels * k * (in.height + border) * out.width);
	long rows_data = align(in.channels * k * (out.height + border) * in.width);
	if (k == 3) { /* Winograd's weights, transformed tiles and products, for either tile (2 x 2: 16 places, 4 x 4: 36) */
		packed_forward = max_of(packed_forward, 36 * place(packed_panels(out.channels, in.channels)));
		packed_data = max_of(packed_data, 36 * place(packed_panels(in.channels, out.channels)));
		for (long m = 2; m <= 4; m += 2) {
			long places = (m + 2) * (m + 2);
			long tiles_forward = group_tiles((long)(in.height / m) * (out.width / m));
			long tiles_data = group_tiles((long)(out.height / m) * (in.width / m));
			rows_forward = max_of(rows_forward, places * (place(packed_panels(tiles_forward, in.channels)) + place(product_rows(out.channels) * tiles_forward)));
			rows_data = max_of(rows_data, places * (place(packed_panels(tiles_data, out.channels)) + place(product_rows(in.channels) * tiles_data)));
		}
	}
	/* the forward pass's and the data gradient's last: an output image staged to be streamed */
	long forward = padded_in + packed_forward + align(patch * PANEL_MAX) + rows_forward + align(out.channels * pixels);
	long data_gradient = padded_out + packed_data + align(flipped_patch * PANEL_MAX) + rows_data +
			     align((long)in.channels * in.height * in.width);
	long weight_gradient = packed_panels(out.channels, pixels) +
			       max_of(padded_in + align(pixels * PANEL_MAX), packed_panels(in.channels, pixels));
	/* the weight gradient's row split: dY's rows over the padded rows, dY padded by k - 1 */
	long split_pixels = (in.height + k - 1) * out.width;
	long padded_gradient = align(out.channels * (out.height + 2 * (k - 1)) * (out.width + 2 * (k - 1)));
	long weight_split = packed_panels(out.channels * k, split_pixels) + padded_in + align(split_pixels * PANEL_MAX) + padded_gradient;
	long reference = align(patch * pixels) + align(in.channels * in.height * in.width);
	long weight_part = max_of(max_of(weight_gradient, weight_split), reference);
	if (k == 3) { /* Winograd's: dY's and the input's tiles and the products, then dY and the input with their channels innermost */
		long places = 0;
		for (long m = 2; m <= 4; m += 2) {
			long tiles = weight_set((long)(out.height / m) * (out.width / m));
			places = max_of(places, (m + 2) * (m + 2) *
							(place(packed_panels(out.channels, tiles)) + place(packed_panels(in.channels, tiles)) +
							 place(product_rows(out.channels) * in.channels)));
		}
		weight_part = max_of(weight_part, places + align(out.channels * pixels) + padded_in);
	}
	/* CONV_DEFERRED: dY of the images taken at once, where BN's backward left it to the convolution */
	long deferred_images = 1;
	if (k == 3)
		for (long m = 2; m <= 4; m += 2)
			deferred_images = max_of(deferred_images, group_tiles((long)(out.height / m) * (out.width / m)) /
								     max_of((long)(out.height / m) * (out.width / m), 1));
	long deferred = align(out.channels * pixels * deferred_images);
	return align(out.channels * patch) +
	       max_of(max_of(forward, reference), weight_part + max_of(data_gradient, reference) + deferred);
}

/* Winograd's output tile, which the shape alone decides: 4 x 4 where the
 * sides are multiples of 4, else 2 x 2, where the algorithm applies (a 3x3
 * convolution of stride 1 keeping even sides), else 0. The instance
 * checks it against the library's rule (CONV_TILE). */
static int conv_tile(struct shape in, struct shape out, const struct op *op)
{
	if (op->kernel_size != 3 || op->stride != 1 || in.height != out.height || in.width != out.width || in.height % 2 ||
	    in.width % 2)
		return 0;
	return out.height % 4 == 0 && out.width % 4 == 0 ? 4 : 2;
}

static void conv_values(struct shape in, struct shape out, const struct op *op, struct template_vars *v)
{
	template_set(v, "K", "%d", op->kernel_size);
	template_set(v, "TILE", "%d", conv_tile(in, out, op));
	resampling_values(in, out, op, v);
}

static void conv_call(const struct graph *g, const struct op *op, const char *kernel, struct template_vars *v)
{
	template_set(v, "WEIGHT", "%s", param(g, op, 0));
	kernel_out_in(g, op, kernel, v);
}

/* ---- batch normalisation ----------------------------------------------- */

/* BN's sums per image and channel: BATCH_NORM_IMAGE_SUMS (3) doubles of
 * templates/ops/batch_norm.c.tmpl, two reals each in f32. */
enum { SUMS_PER_CHANNEL = 3 * 2 };

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

/* BN backward's sums per thread, BATCH_NORM_SCRATCH */
static long batch_norm_scratch(struct shape in, struct shape out, const struct op *op)
{
	(void)in;
	(void)op;
	return align(4L * out.channels);
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
	[OP_ADD] = {"add", {"SHORTCUT_WRITE", "BRANCH_WRITE"}, .flops = elementwise_flops,
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
};
