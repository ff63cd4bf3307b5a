/* Graph -> plan: a lifetime for every activation and gradient over one
 * training step (forward ops, then backward ops in reverse), packed by
 * first fit; and one kernel per distinct op shape. */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct interval {
	long start, end; /* steps, inclusive */
	long size;       /* reals per image, aligned */
	long *offset;    /* where the result goes */
	int order;       /* position in the table, to break ties */
};

static long align(long reals) { return (reals + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN; }

static int by_start(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order - y->order;
}

/* First fit: each interval, in order of start, takes the lowest offset that
 * no overlapping, already placed interval occupies. */
static long pack(struct interval *intervals, int count)
{
	qsort(intervals, (size_t)count, sizeof *intervals, by_start);
	long total = 0;
	int *live = malloc((size_t)count * sizeof *live);
	int live_count = 0;
	if (!live)
		return -1;
	for (int i = 0; i < count; i++) {
		struct interval *next = &intervals[i];
		int kept = 0; /* drop intervals that ended, keep the rest sorted by offset */
		for (int j = 0; j < live_count; j++)
			if (intervals[live[j]].end >= next->start)
				live[kept++] = live[j];
		live_count = kept;
		long offset = 0;
		int position = 0;
		for (; position < live_count; position++) {
			const struct interval *placed = &intervals[live[position]];
			if (*placed->offset >= offset + next->size)
				break;
			if (*placed->offset + placed->size > offset)
				offset = *placed->offset + placed->size;
		}
		*next->offset = offset;
		memmove(live + position + 1, live + position, (size_t)(live_count - position) * sizeof *live);
		live[position] = i;
		live_count++;
		if (offset + next->size > total)
			total = offset + next->size;
	}
	free(live);
	return total;
}

static void kernel_name(const struct graph *g, const struct op *op, char *name, size_t size)
{
	struct shape in = g->tensors[op->inputs[0]].shape;
	struct shape out = g->tensors[op->output].shape;
	switch (op->kind) {
	case OP_CONV:
		snprintf(name, size, "conv%dx%d_s%d_%dx%dx%d_to_%d", op->kernel_size, op->kernel_size,
			 op->stride, in.channels, in.height, in.width, out.channels);
		break;
	case OP_BATCH_NORM:
		snprintf(name, size, "batch_norm_%dx%dx%d", in.channels, in.height, in.width);
		break;
	case OP_RELU:
		snprintf(name, size, "relu");
		break;
	case OP_ADD:
		snprintf(name, size, "add");
		break;
	case OP_PAD_SHORTCUT:
		snprintf(name, size, "pad_shortcut_s%d_%dx%dx%d_to_%d", op->stride, in.channels,
			 in.height, in.width, out.channels);
		break;
	case OP_AVERAGE_POOL:
		snprintf(name, size, "average_pool_%dx%dx%d", in.channels, in.height, in.width);
		break;
	case OP_LINEAR:
		snprintf(name, size, "linear_%d_to_%d", in.channels, out.channels);
		break;
	case OP_SOFTMAX_CROSS_ENTROPY:
		snprintf(name, size, "softmax_cross_entropy_%d", in.channels);
		break;
	case OP_SCALE:
		snprintf(name, size, "scale");
		break;
	case OP_DROPOUT:
		snprintf(name, size, "dropout");
		break;
	case OP_GATED_ADD:
		snprintf(name, size, "gated_add_%s_%dx%dx%d", op->exclusive ? "exclusive" : "shortcut",
			 out.channels, out.height, out.width);
		break;
	default:
		snprintf(name, size, "unknown");
	}
}

/* Per-thread scratch of a conv, as CONV_SCRATCH in templates/ops/conv.c.tmpl
 * (which checks this figure at compile time): a private weight gradient,
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

/* BN's sums per image and channel: BATCH_NORM_IMAGE_SUMS (3) doubles of
 * templates/ops/batch_norm.c.tmpl, two reals each in f32. */
enum { SUMS_PER_CHANNEL = 3 * 2 };

static void kernel_scratch(const struct graph *g, const struct op *op, struct kernel *kernel)
{
	if (op->kind == OP_BATCH_NORM) /* BN backward's sums per thread, BATCH_NORM_SCRATCH */
		kernel->scratch_per_thread = align(4L * g->tensors[op->output].shape.channels);
	if (op->kind != OP_CONV)
		return;
	struct shape in = g->tensors[op->inputs[0]].shape;
	struct shape out = g->tensors[op->output].shape;
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
	kernel->scratch_per_thread = align(out.channels * patch) +
				     max_of(max_of(forward, reference), weight_part + max_of(data_gradient, reference) + deferred);
}

static int find_kernels(struct plan *p, const struct graph *g)
{
	const struct lowering *l = &p->lowering;
	p->op_kernel = malloc((size_t)g->op_count * sizeof *p->op_kernel);
	p->kernels = calloc((size_t)g->op_count, sizeof *p->kernels);
	if (!p->op_kernel || !p->kernels)
		return -1;
	for (int i = 0; i < g->op_count; i++)
		p->op_kernel[i] = -1;
	for (int j = 0; j < l->step_count; j++) {
		const struct step *step = &l->steps[j];
		int i = step->kernel_op;
		char name[GRAPH_NAME_MAX], op_name[GRAPH_NAME_MAX];
		struct shape in = g->tensors[g->ops[i].inputs[0]].shape;
		kernel_name(g, &g->ops[i], op_name, sizeof op_name);
		if (step->kind == STEP_BN_RELU_CONV) /* conv names stay far below the limit */
			snprintf(name, sizeof name, "bn_relu_%.55s", op_name);
		else if (step->kind == STEP_BN_ADD_RELU)
			snprintf(name, sizeof name, "bn_add_relu_%dx%dx%d", in.channels, in.height, in.width);
		else if (step->kind == STEP_BN_RELU)
			snprintf(name, sizeof name, "bn_relu_%dx%dx%d", in.channels, in.height, in.width);
		else
			snprintf(name, sizeof name, "%s", op_name);
		int k = 0;
		while (k < p->kernel_count && strcmp(p->kernels[k].name, name) != 0)
			k++;
		if (k == p->kernel_count) {
			struct kernel *kernel = &p->kernels[p->kernel_count++];
			kernel->kind = g->ops[i].kind;
			kernel->step = step->kind;
			snprintf(kernel->name, sizeof kernel->name, "%s", name);
			kernel->op = i;
			kernel_scratch(g, &g->ops[i], kernel);
			if (kernel->scratch_per_thread > p->scratch_per_thread)
				p->scratch_per_thread = kernel->scratch_per_thread;
		}
		p->op_kernel[i] = k;
	}
	return 0;
}

static void place_params(struct plan *p, const struct graph *g)
{
	for (int i = 0; i < g->param_count; i++) {
		long *next = g->params[i].trained ? &p->param_count : &p->buffer_count;
		p->param_offset[i] = *next;
		*next += g->params[i].count;
	}
	p->stats_count = 0;
	for (int i = 0; i < g->op_count; i++) {
		p->stats_offset[i] = -1;
		if (g->ops[i].kind == OP_BATCH_NORM) {
			p->stats_offset[i] = p->stats_count;
			/* per channel: mean, 1/std, the scale and shift BN applies, and
			 * its backward's line (BATCH_NORM_SAVED) */
			p->stats_count += 7L * g->tensors[g->ops[i].output].shape.channels;
		}
	}
}

/* The tensor whose slot holds t's gradient, following the additions that
 * pass gradients down the chain. */
static int gradient_slot(const struct lowering *l, int t)
{
	while (l->gradient_slot[t] != t)
		t = l->gradient_slot[t];
	return t;
}

int plan_build(struct plan *p, const struct graph *g, struct diag *d)
{
	memset(p, 0, sizeof *p);
	p->graph = g;
	if (lower(&p->lowering, g) != 0)
		return diag_file(d, g->spec->path, "out of memory planning the network");
	const struct lowering *l = &p->lowering;
	int tensors = g->tensor_count, ops = g->op_count;
	p->activation_offset = malloc((size_t)tensors * sizeof(long));
	p->gradient_offset = malloc((size_t)tensors * sizeof(long));
	p->first_gradient_writer = malloc((size_t)tensors * sizeof(int));
	p->param_offset = malloc((size_t)(g->param_count ? g->param_count : 1) * sizeof(long));
	p->stats_offset = malloc((size_t)ops * sizeof(long));
	struct interval *intervals = malloc(((size_t)tensors * 2 + 1) * sizeof *intervals);
	long *last_use = malloc((size_t)tensors * sizeof(long));
	long *gradient_start = malloc((size_t)tensors * sizeof(long));
	long *gradient_end = malloc((size_t)tensors * sizeof(long));
	int *last_consumer = malloc((size_t)tensors * sizeof(int));
	bool ok = p->activation_offset && p->gradient_offset && p->first_gradient_writer &&
		  p->param_offset && p->stats_offset && intervals && last_use && gradient_start &&
		  gradient_end && last_consumer;
	if (!ok || find_kernels(p, g) != 0) {
		free(intervals);
		free(last_use);
		free(gradient_start);
		free(gradient_end);
		free(last_consumer);
		plan_free(p);
		return diag_file(d, g->spec->path, "out of memory planning the network");
	}
	place_params(p, g);

	/* Time s < steps is forward step s; 2 * steps - 1 - s is its backward.
	 * The ops of a fused step all run at its times. */
	long steps = l->step_count, backward_base = 2 * steps - 1;
	for (int t = 0; t < tensors; t++) {
		int producer = g->tensors[t].producer;
		last_use[t] = producer < 0 ? -1 : l->step_of_op[producer];
		last_consumer[t] = -1;
	}
	for (int i = 0; i < ops; i++) {
		const struct op *op = &g->ops[i];
		long forward = l->step_of_op[i], backward = backward_base - forward;
		for (int k = 0; k < op->input_count; k++) {
			int t = op->inputs[k];
			long use = op_backward_reads_inputs(op->kind) ? backward : forward;
			if (use > last_use[t])
				last_use[t] = use;
			last_consumer[t] = i;
		}
		if (op_backward_reads_output(op->kind) && backward > last_use[op->output])
			last_use[op->output] = backward;
	}
	long end_of_step = 2 * steps;
	last_use[g->logits] = end_of_step; /* read by the runtime after forward */

	/* A gradient lives from its tensor's last consumer's backward to its
	 * producer's; the input's gradient is kept for the caller. Gradients
	 * that share a slot (lower.h) give it the union of their lives. */
	for (int t = 0; t < tensors; t++) {
		int producer = g->tensors[t].producer;
		long produced = producer < 0 ? -1 : l->step_of_op[producer];
		gradient_start[t] = last_consumer[t] < 0 ? -1 : backward_base - l->step_of_op[last_consumer[t]];
		gradient_end[t] = t == g->input ? end_of_step : backward_base - produced;
	}
	/* A convolution that computes the input gradient of the BN after it
	 * (lower.h) reads, in its backward, BN's input (its own output) and
	 * the gradient BN's backward read (of the op after BN). */
	for (int j = 0; j < steps; j++)
		if (l->steps[j].leaves_gradient) {
			const struct op *bn = &g->ops[l->steps[j].first_op];
			int in = bn->inputs[0], gradient = bn[1].output;
			long consumer = backward_base - l->step_of_op[g->tensors[in].producer];
			if (consumer > last_use[in])
				last_use[in] = consumer;
			if (consumer > gradient_end[gradient])
				gradient_end[gradient] = consumer;
		}
	for (int t = 0; t < tensors; t++) {
		int slot = gradient_slot(l, t);
		if (slot == t || last_consumer[t] < 0)
			continue;
		if (gradient_start[t] < gradient_start[slot])
			gradient_start[slot] = gradient_start[t];
		if (gradient_end[t] > gradient_end[slot])
			gradient_end[slot] = gradient_end[t];
	}
	int count = 0;
	for (int t = 0; t < tensors; t++) {
		long size = align(graph_tensor_size(g, t));
		int producer = g->tensors[t].producer;
		long produced = producer < 0 ? -1 : l->step_of_op[producer];
		p->activation_offset[t] = -1;
		if (l->stored[t]) {
			intervals[count] = (struct interval){produced, last_use[t], size,
							     &p->activation_offset[t], count};
			count++;
		}
		p->gradient_offset[t] = -1;
		p->first_gradient_writer[t] = last_consumer[t];
		if (last_consumer[t] < 0 || !l->gradient_stored[t] || gradient_slot(l, t) != t)
			continue; /* the loss op's output, a gradient no kernel stores, or one in another's slot */
		intervals[count] = (struct interval){gradient_start[t], gradient_end[t], size,
						     &p->gradient_offset[t], count};
		count++;
	}
	/* BN's sums per image: the forward pass's statistics, then, in
	 * backward, the per-image sums a convolution's data gradient takes
	 * for the BN before it (batch_norm_relu_conv.c.tmpl): the whole step. */
	p->sums_offset = -1;
	p->sums_per_image = 0;
	for (int i = 0; i < ops; i++)
		if (g->ops[i].kind == OP_BATCH_NORM) {
			long sums = align(SUMS_PER_CHANNEL * g->tensors[g->ops[i].inputs[0]].shape.channels);
			p->sums_per_image = max_of(p->sums_per_image, sums);
		}
	if (p->sums_per_image > 0) {
		intervals[count] = (struct interval){0, end_of_step, p->sums_per_image, &p->sums_offset, count};
		count++;
	}
	p->arena_per_image = pack(intervals, count);
	for (int t = 0; t < tensors; t++)
		if (last_consumer[t] >= 0 && l->gradient_stored[t] && gradient_slot(l, t) != t)
			p->gradient_offset[t] = p->gradient_offset[gradient_slot(l, t)];
	free(intervals);
	free(last_use);
	free(gradient_start);
	free(gradient_end);
	free(last_consumer);
	if (p->arena_per_image < 0) {
		plan_free(p);
		return diag_file(d, g->spec->path, "out of memory planning the network");
	}
	return 0;
}

struct plan_memory plan_memory(const struct plan *p, int n, int threads, int real_size)
{
	struct plan_memory m = {
		.arena = (double)p->arena_per_image * n * real_size,
		.weights = 3.0 * (double)p->param_count * real_size,
		.statistics = ((double)p->buffer_count + (double)p->stats_count) * real_size,
		.scratch_per_thread = (double)p->scratch_per_thread * real_size,
	};
	m.total = m.arena + m.weights + m.statistics + m.scratch_per_thread * threads;
	return m;
}

void plan_free(struct plan *p)
{
	free(p->activation_offset);
	free(p->gradient_offset);
	free(p->first_gradient_writer);
	free(p->param_offset);
	free(p->stats_offset);
	free(p->op_kernel);
	free(p->kernels);
	lowering_free(&p->lowering);
	memset(p, 0, sizeof *p);
}
