/* Graph -> plan: a lifetime for every activation and gradient over one
 * training step (forward ops, then backward ops in reverse), packed by
 * first fit; and one kernel per distinct op shape. */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusions.h"
#include "ops.h"

struct interval {
	long start, end; /* steps, inclusive */
	long size;       /* reals per image, aligned */
	long *offset;    /* where the result goes */
	int order;       /* position in the table, to break ties */
	long hole_start, hole_end; /* steps within, inclusive, when it holds nothing (a tensor computed
				      again in backward: lower.h); none where hole_start > hole_end */
};

static long align(long reals) { return (reals + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN; }

static long max_of(long a, long b) { return a > b ? a : b; }

static int by_start(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order - y->order;
}

/* First fit: each interval, in order of start, takes the lowest offset that
 * no overlapping, already placed interval occupies; one that lies within
 * a placed interval's hole does not overlap it. */
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
			if (next->start >= placed->hole_start && next->end <= placed->hole_end)
				continue;
			if (*placed->offset >= offset + next->size)
				break;
			if (*placed->offset + placed->size > offset)
				offset = *placed->offset + placed->size;
		}
		*next->offset = offset;
		/* kept sorted by offset: a hole passed over may lie above it */
		position = 0;
		while (position < live_count && *intervals[live[position]].offset <= offset)
			position++;
		memmove(live + position + 1, live + position, (size_t)(live_count - position) * sizeof *live);
		live[position] = i;
		live_count++;
		if (offset + next->size > total)
			total = offset + next->size;
	}
	free(live);
	return total;
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
		struct shape out = g->tensors[g->ops[i].output].shape;
		const struct op_kind_info *kind = &op_kinds[g->ops[i].kind];
		if (kind->kernel_name)
			kind->kernel_name(in, out, &g->ops[i], op_name, sizeof op_name);
		else
			snprintf(op_name, sizeof op_name, "%s", kind->template_name);
		if (fusions[step->kind].kernel_name)
			fusions[step->kind].kernel_name(in, op_name, name, sizeof name);
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
			if (op_kinds[kernel->kind].scratch)
				kernel->scratch_per_thread = op_kinds[kernel->kind].scratch(in, out, &g->ops[i]);
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
		int saved = op_kinds[g->ops[i].kind].saved_per_channel;
		if (saved > 0) {
			p->stats_offset[i] = p->stats_count;
			/* BN's per channel: mean, 1/std, the scale and shift BN
			 * applies, and its backward's line (BATCH_NORM_SAVED) */
			p->stats_count += (long)saved * g->tensors[g->ops[i].output].shape.channels;
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
	long *forward_use = malloc((size_t)tensors * sizeof(long));
	long *gradient_start = malloc((size_t)tensors * sizeof(long));
	long *gradient_end = malloc((size_t)tensors * sizeof(long));
	int *last_consumer = malloc((size_t)tensors * sizeof(int));
	bool ok = p->activation_offset && p->gradient_offset && p->first_gradient_writer &&
		  p->param_offset && p->stats_offset && intervals && last_use && forward_use && gradient_start &&
		  gradient_end && last_consumer;
	if (!ok || find_kernels(p, g) != 0) {
		free(intervals);
		free(last_use);
		free(forward_use);
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
		last_use[t] = forward_use[t] = producer < 0 ? -1 : l->step_of_op[producer];
		last_consumer[t] = -1;
	}
	for (int i = 0; i < ops; i++) {
		const struct op *op = &g->ops[i];
		long forward = l->step_of_op[i], backward = backward_base - forward;
		for (int k = 0; k < op->input_count; k++) {
			int t = op->inputs[k];
			long use = op_kinds[op->kind].backward_reads_inputs ? backward : forward;
			if (use > last_use[t])
				last_use[t] = use;
			if (forward > forward_use[t])
				forward_use[t] = forward;
			last_consumer[t] = i;
		}
		if (op_kinds[op->kind].backward_reads_output && backward > last_use[op->output])
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
			/* computed again at its reader's backward: held nothing from after its last forward reader */
			long again = l->recomputed_before[t] < 0 ? -1 : backward_base - l->recomputed_before[t];
			intervals[count] = (struct interval){produced, last_use[t], size, &p->activation_offset[t], count,
							     again < 0 ? 1 : forward_use[t] + 1, again < 0 ? 0 : again - 1};
			count++;
		}
		p->gradient_offset[t] = -1;
		p->first_gradient_writer[t] = last_consumer[t];
		if (last_consumer[t] < 0 || !l->gradient_stored[t] || gradient_slot(l, t) != t)
			continue; /* the loss op's output, a gradient no kernel stores, or one in another's slot */
		intervals[count] = (struct interval){gradient_start[t], gradient_end[t], size,
						     &p->gradient_offset[t], count, 1, 0};
		count++;
	}
	/* BN's sums per image: the forward pass's statistics, then, in
	 * backward, the per-image sums a convolution's data gradient takes
	 * for the BN before it (batch_norm_relu_conv.c.tmpl): the whole step. */
	p->sums_offset = -1;
	p->sums_per_image = 0;
	for (int i = 0; i < ops; i++)
		if (op_kinds[g->ops[i].kind].image_sums_per_channel > 0) {
			long sums = align((long)op_kinds[g->ops[i].kind].image_sums_per_channel *
					  g->tensors[g->ops[i].inputs[0]].shape.channels);
			p->sums_per_image = max_of(p->sums_per_image, sums);
		}
	if (p->sums_per_image > 0) {
		intervals[count] = (struct interval){0, end_of_step, p->sums_per_image, &p->sums_offset, count, 1, 0};
		count++;
	}
	p->arena_per_image = pack(intervals, count);
	for (int t = 0; t < tensors; t++)
		if (last_consumer[t] >= 0 && l->gradient_stored[t] && gradient_slot(l, t) != t)
			p->gradient_offset[t] = p->gradient_offset[gradient_slot(l, t)];
	free(intervals);
	free(last_use);
	free(forward_use);
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

bool plan_sets_gradient(const struct plan *p, int index, int k)
{
	const struct op *op = &p->graph->ops[index];
	if (k >= 2 || !op_kinds[op->kind].write[k] || p->first_gradient_writer[op->inputs[k]] != index)
		return false;
	for (int j = 0; j < k; j++)
		if (op->inputs[j] == op->inputs[k])
			return false;
	return true;
}
