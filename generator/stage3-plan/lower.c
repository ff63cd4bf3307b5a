/* Graph -> steps: which consecutive ops run as one fused kernel. */
#include "lower.h"

#include <stdlib.h>
#include <string.h>

#include "fusions.h"
#include "ops.h"

/* Whether ops first.. are fusion f's pattern: its kinds, of one group,
 * each reading the one before (as exactly one of its inputs), every output
 * but the last read by the next op alone, and each op the fusion needs to
 * pass its gradient on doing so. */
static bool fusion_at(const struct lowering *l, const int *readers, int first, const struct fusion_info *f)
{
	const struct graph *g = l->graph;
	if (first + f->op_count > g->op_count)
		return false;
	const struct op *ops = &g->ops[first];
	for (int k = 0; k < f->op_count; k++) {
		if (ops[k].kind != f->pattern[k] || ops[k].group != ops[0].group ||
		    (f->must_pass >> k & 1 && !l->passes_gradient[first + k]))
			return false;
		if (k + 1 < f->op_count && readers[ops[k].output] != 1)
			return false;
		if (k > 0) {
			int reads = 0;
			for (int i = 0; i < ops[k].input_count; i++)
				reads += ops[k].inputs[i] == ops[k - 1].output;
			if (reads != 1)
				return false;
		}
	}
	return true;
}

/* Step kind's ops, from first, become one step: what it computes inside
 * is no longer stored. */
static struct step fuse(struct lowering *l, enum step_kind kind, int first)
{
	const struct fusion_info *f = &fusions[kind];
	for (int k = 0; k < f->op_count; k++) {
		int t = l->graph->ops[first + k].output;
		if (f->not_stored >> k & 1)
			l->stored[t] = false;
		if (f->gradient_not_stored >> k & 1)
			l->gradient_stored[t] = false;
	}
	return (struct step){kind, first, f->op_count, first + f->kernel_at, false, -1, false, -1};
}

/* Whether addition i can pass its output's gradient to its inputs by
 * sharing its slot (see lower.h). Both inputs differ, have the output's
 * shape and a producer, and the addition is the last to read them, so its
 * backward writes their gradients first. After it, the slot is still read
 * as the gradient of one input (y) until y's producer's backward, so
 * nothing may add to it before then: y has no other reader and does not
 * extend the slot upwards, and the other input (x), which may, has its
 * producer and its other readers earlier than y's producer, whose backward
 * therefore comes first. */
static bool passes_gradient_at(const struct graph *g, const struct lowering *l, const int *readers,
			       const int *last_reader, int i)
{
	const struct op *add = &g->ops[i];
	if (!op_kinds[add->kind].hands_gradient_on || add->inputs[0] == add->inputs[1] ||
	    !l->gradient_stored[add->output] || readers[add->output] == 0)
		return false;
	bool extends[2];
	for (int k = 0; k < 2; k++) {
		int t = add->inputs[k], producer = g->tensors[t].producer;
		if (graph_tensor_size(g, t) != graph_tensor_size(g, add->output) || producer < 0 || last_reader[t] != i ||
		    !l->gradient_stored[t])
			return false;
		extends[k] = readers[t] > 1 || l->passes_gradient[producer];
	}
	if (extends[0] && extends[1])
		return false;
	int x = add->inputs[extends[0] ? 0 : 1], y = add->inputs[extends[0] ? 1 : 0];
	int y_step = l->step_of_op[g->tensors[y].producer];
	if (!extends[0] && !extends[1])
		return true;
	if (l->step_of_op[g->tensors[x].producer] >= y_step)
		return false;
	for (int j = 0; j < i; j++)
		for (int k = 0; k < g->ops[j].input_count; k++)
			if (g->ops[j].inputs[k] == x && l->step_of_op[j] >= y_step)
				return false;
	return true;
}

/* Whether step j, a fused step, can take the addition that is step j + 1
 * as its epilogue (see lower.h): that addition alone reads the
 * convolution's output, passes its gradient, and its other input is
 * computed before step j (whose new index, the steps before it already
 * renumbered, is kept). */
static bool takes_addition(const struct lowering *l, const int *readers, int j, int kept)
{
	const struct graph *g = l->graph;
	const struct step *step = &l->steps[j], *next = step + 1;
	if (j + 1 >= l->step_count || !fusions[step->kind].takes_addition ||
	    step->op_count != fusions[step->kind].op_count || next->kind != STEP_OP)
		return false;
	/* the next op passes its gradient on: an addition */
	const struct op *conv = &g->ops[step->kernel_op], *add = &g->ops[next->first_op];
	if (add->group != conv->group || !l->passes_gradient[next->first_op] ||
	    readers[conv->output] != 1 || add->inputs[0] == add->inputs[1])
		return false;
	if (add->inputs[0] != conv->output && add->inputs[1] != conv->output)
		return false;
	int other = add->inputs[0] == conv->output ? add->inputs[1] : add->inputs[0];
	int producer = g->tensors[other].producer;
	return producer < 0 || l->step_of_op[producer] < kept;
}

/* Each fused step takes the addition after it where it can; the steps
 * after move up by one. */
static void fuse_additions(struct lowering *l, const int *readers)
{
	int kept = 0;
	for (int j = 0; j < l->step_count; j++) {
		struct step step = l->steps[j];
		if (takes_addition(l, readers, j, kept)) {
			step.op_count = 4;
			l->stored[l->graph->ops[step.kernel_op].output] = false;
			j++;
		}
		for (int k = 0; k < step.op_count; k++)
			l->step_of_op[step.first_op + k] = kept;
		l->steps[kept++] = step;
	}
	l->step_count = kept;
}

/* Whether steps j.. are single ops that fusion kind can make one step. */
static bool fusion_of_steps_at(const struct lowering *l, const int *readers, int j, enum step_kind kind)
{
	const struct fusion_info *f = &fusions[kind];
	if (j + f->op_count > l->step_count)
		return false;
	for (int k = 0; k < f->op_count; k++)
		if (l->steps[j + k].kind != STEP_OP)
			return false;
	return fusion_at(l, readers, l->steps[j].first_op, f);
}

/* The fusions matched once additions are fused (BN -> addition -> ReLU,
 * BN -> ReLU), on steps left as single ops, the first of the table's order
 * that applies; the steps after move up (see lower.h). */
static void fuse_batch_norms(struct lowering *l, const int *readers)
{
	int kept = 0;
	for (int j = 0; j < l->step_count; j++) {
		struct step step = l->steps[j];
		for (int kind = 0; kind < STEP_KIND_COUNT; kind++)
			if (fusions[kind].after_additions && fusion_of_steps_at(l, readers, j, kind)) {
				step = fuse(l, kind, step.first_op);
				j += step.op_count - 1;
				break;
			}
		for (int k = 0; k < step.op_count; k++)
			l->step_of_op[step.first_op + k] = kept;
		l->steps[kept++] = step;
	}
	l->step_count = kept;
}

/* The step that produced the input of step j's BN, if step j, a fused BN
 * + ReLU + convolution or BN + addition + ReLU, can leave BN's input
 * gradient to it (see lower.h): a convolution's output, stored, that only
 * BN reads, whose gradient has its own slot, and that convolution, of
 * BN's group, ends its step, which takes no other deferred gradient; else
 * -1. BN + addition + ReLU hands BN the sum's gradient, whose slot the
 * shortcut's gradient shares: only to the step just before, which reads
 * it before any other step adds to it. */
static int takes_gradient_of(const struct lowering *l, const int *readers, int j)
{
	const struct graph *g = l->graph;
	const struct step *step = &l->steps[j];
	enum leaves_gradient leaves = fusions[step->kind].leaves_gradient;
	if (leaves == LEAVES_NOWHERE)
		return -1;
	int t = g->ops[step->first_op].inputs[0], producer = g->tensors[t].producer;
	if (producer < 0 || !op_kinds[g->ops[producer].kind].takes_gradient_source ||
	    g->ops[producer].group != g->ops[step->first_op].group ||
	    readers[t] != 1 || !l->stored[t] || !l->gradient_stored[t] || l->gradient_slot[t] != t)
		return -1;
	int k = l->step_of_op[producer];
	const struct step *conv_step = &l->steps[k];
	if (conv_step->kernel_op != producer || conv_step->first_op + conv_step->op_count - 1 != producer ||
	    conv_step->applies_for >= 0 || (leaves == LEAVES_TO_PREVIOUS && k != j - 1))
		return -1;
	return k;
}

/* Each BN that can leaves its input gradient to the convolution before it. */
static void defer_gradients(struct lowering *l, const int *readers)
{
	for (int j = 0; j < l->step_count; j++) {
		int k = takes_gradient_of(l, readers, j);
		if (k < 0)
			continue;
		l->steps[j].leaves_gradient = true;
		l->steps[k].applies_for = j;
		l->gradient_stored[l->graph->ops[l->steps[j].first_op].inputs[0]] = false;
	}
}

/* The step whose backward reads tensor t first (the latest in forward
 * order of those whose backward reads it), or -1. */
static int first_backward_reader(const struct lowering *l, int t)
{
	const struct graph *g = l->graph;
	int first = -1;
	for (int i = 0; i < g->op_count; i++) {
		const struct op *op = &g->ops[i];
		bool reads = op->output == t && op_kinds[op->kind].backward_reads_output;
		for (int k = 0; k < op->input_count; k++)
			reads = reads || (op->inputs[k] == t && op_kinds[op->kind].backward_reads_inputs);
		if (reads && l->step_of_op[i] > first)
			first = l->step_of_op[i];
	}
	return first;
}

/* The sums computed again in backward (see lower.h): of a BN + ReLU + 1x1
 * convolution + addition that reads nothing of its own output in backward
 * (takes no BN's deferred gradient), whose shortcut is kept, read in
 * backward by a later step; every RECOMPUTE_EVERY-th of them in forward
 * order. */
static void recompute_sums(struct lowering *l)
{
	const struct graph *g = l->graph;
	int kept = 0; /* since the last one computed again */
	for (int j = 0; j < l->step_count; j++) {
		const struct step *step = &l->steps[j];
		if (step->kind != STEP_BN_RELU_CONV || step->op_count != 4 || step->applies_for >= 0)
			continue;
		const struct op *conv = &g->ops[step->kernel_op], *add = &g->ops[step->first_op + 3];
		int sum = add->output, shortcut = add->inputs[0] == conv->output ? add->inputs[1] : add->inputs[0];
		int reader = first_backward_reader(l, sum);
		if (conv->kernel_size != 1 || !l->stored[sum] || !l->stored[shortcut] || reader <= j || sum == g->logits)
			continue;
		/* one whose shortcut is computed again is kept: it is what that is computed from */
		if (++kept < RECOMPUTE_EVERY || l->recomputed_before[shortcut] >= 0)
			continue;
		kept = 0;
		l->recomputed_before[sum] = reader;
		l->steps[reader].recompute = j;
	}
}

int lower(struct lowering *l, const struct graph *g)
{
	memset(l, 0, sizeof *l);
	l->graph = g;
	int ops = g->op_count, tensors = g->tensor_count;
	l->steps = malloc((size_t)(ops ? ops : 1) * sizeof *l->steps);
	l->step_of_op = malloc((size_t)(ops ? ops : 1) * sizeof *l->step_of_op);
	l->stored = malloc((size_t)tensors * sizeof *l->stored);
	l->gradient_stored = malloc((size_t)tensors * sizeof *l->gradient_stored);
	l->gradient_slot = malloc((size_t)tensors * sizeof *l->gradient_slot);
	l->passes_gradient = calloc((size_t)(ops ? ops : 1), sizeof *l->passes_gradient);
	l->recomputed_before = malloc((size_t)(tensors ? tensors : 1) * sizeof *l->recomputed_before);
	int *readers = calloc((size_t)tensors, sizeof *readers);
	int *last_reader = malloc((size_t)tensors * sizeof *last_reader);
	if (!l->steps || !l->step_of_op || !l->stored || !l->gradient_stored || !l->gradient_slot ||
	    !l->passes_gradient || !l->recomputed_before || !readers || !last_reader) {
		free(readers);
		free(last_reader);
		lowering_free(l);
		return -1;
	}
	for (int t = 0; t < tensors; t++) {
		l->stored[t] = l->gradient_stored[t] = true;
		l->gradient_slot[t] = t;
		l->recomputed_before[t] = -1;
		last_reader[t] = -1;
	}
	for (int i = 0; i < ops; i++)
		for (int k = 0; k < g->ops[i].input_count; k++) {
			readers[g->ops[i].inputs[k]]++;
			last_reader[g->ops[i].inputs[k]] = i;
		}
	for (int i = 0; i < ops;) {
		struct step *step = &l->steps[l->step_count];
		*step = (struct step){STEP_OP, i, 1, i, false, -1, false, -1};
		for (int kind = 0; kind < STEP_KIND_COUNT; kind++)
			if (fusions[kind].template_name && !fusions[kind].after_additions &&
			    fusion_at(l, readers, i, &fusions[kind])) {
				*step = fuse(l, kind, i);
				break;
			}
		for (int j = 0; j < step->op_count; j++)
			l->step_of_op[i + j] = l->step_count;
		i += step->op_count;
		l->step_count++;
	}
	/* In forward order, so that an addition sees whether the ones before
	 * it pass their gradients. */
	for (int i = 0; i < ops; i++)
		if (passes_gradient_at(g, l, readers, last_reader, i)) {
			const struct op *add = &g->ops[i];
			l->passes_gradient[i] = true;
			l->gradient_slot[add->inputs[0]] = l->gradient_slot[add->inputs[1]] = add->output;
		}
	fuse_additions(l, readers);
	fuse_batch_norms(l, readers);
	defer_gradients(l, readers);
	for (int j = 0; j + 1 < l->step_count; j++) {
		const struct step *step = &l->steps[j], *next = step + 1;
		const struct op *kernel = &g->ops[step->kernel_op], *bn = &g->ops[next->first_op];
		int result = g->ops[step->first_op + step->op_count - 1].output;
		l->steps[j].sums_for_next = op_kinds[kernel->kind].takes_next_sums &&
					    op_kinds[bn->kind].takes_sums_given && bn->inputs[0] == result;
	}
	recompute_sums(l);
	free(readers);
	free(last_reader);
	return 0;
}

void lowering_free(struct lowering *l)
{
	free(l->steps);
	free(l->step_of_op);
	free(l->stored);
	free(l->gradient_stored);
	free(l->gradient_slot);
	free(l->passes_gradient);
	free(l->recomputed_before);
	memset(l, 0, sizeof *l);
}
