/* The fused-step table: what the generator knows about each fusion
 * (fusions.h). */
#include "fusions.h"

#include <stdio.h>
#include <string.h>

#include "ops.h"

/* ---- values every kind shares --------------------------------------------- */

const char *step_sums_given(const struct lowering *l, int j)
{
	return j > 0 && l->steps[j - 1].sums_for_next ? "SUMS_TAKEN" : "SUMS_TO_TAKE";
}

const char *step_next_sums(const struct lowering *l, int j)
{
	return l->steps[j].sums_for_next ? "IMAGE_SUMS" : "NULL";
}

/* DOUT is the gradient of the step's last output, or, where the BN after
 * it left that to it (lower.h), NULL, with DEFERRED naming what it
 * computes dY from: BN's output gradient, of the ReLU after it or of the
 * sum after it. */
void step_gradient_values(const struct plan *p, int j, struct template_vars *v)
{
	const struct graph *g = p->graph;
	const struct lowering *l = &p->lowering;
	const struct step *step = &l->steps[j];
	const struct op *last = &g->ops[step->first_op + step->op_count - 1];
	if (step->applies_for < 0) {
		template_set(v, "DOUT", "GRAD(%s)", g->tensors[last->output].name);
		template_set(v, "DEFERRED", "DY_STORED");
		return;
	}
	const struct step *after = &l->steps[step->applies_for];
	const struct op *bn = &g->ops[after->first_op];
	template_set(v, "DOUT", "NULL");
	template_set(v, "DEFERRED", "%s(%s, %s, %s)", fusions[after->kind].deferred, bn->name,
		     g->tensors[bn[1].output].name, g->tensors[bn->inputs[0]].name);
}

static const char *write_of(const struct plan *p, int op, int k)
{
	return plan_sets_gradient(p, op, k) ? "GRADIENT_SET" : "GRADIENT_ADD";
}

/* Every fusion starts with a BN: its names, its parameters, how it writes
 * its input gradient, and the ops' names in forward and backward order
 * (an addition that passes its gradient on says so). */
void fusion_values(const struct plan *p, int j, struct template_vars *v)
{
	const struct graph *g = p->graph;
	const struct step *step = &p->lowering.steps[j];
	const struct op *bn = &g->ops[step->first_op];
	const struct op *last = &g->ops[step->first_op + step->op_count - 1];
	char forward[4 * (GRAPH_NAME_MAX + 24)] = "", backward[sizeof forward] = "";
	for (int k = 0; k < step->op_count; k++) {
		int at = step->first_op + k, back = step->first_op + step->op_count - 1 - k;
		size_t used = strlen(forward), back_used = strlen(backward);
		snprintf(forward + used, sizeof forward - used, "%s%s", k ? " + " : "", g->ops[at].name);
		snprintf(backward + back_used, sizeof backward - back_used, "%s%s%s", k ? " + " : "", g->ops[back].name,
			 p->lowering.passes_gradient[back] ? " (passes its gradient)" : "");
	}
	template_set(v, "KERNEL", "%s", p->kernels[p->op_kernel[step->kernel_op]].name);
	template_set(v, "BN", "%s", bn->name);
	template_set(v, "IN", "%s", g->tensors[bn->inputs[0]].name);
	template_set(v, "OUT", "%s", g->tensors[last->output].name);
	template_set(v, "GAMMA", "%s", g->params[bn->params[0]].name);
	template_set(v, "BETA", "%s", g->params[bn->params[1]].name);
	template_set(v, "MEAN", "%s", g->params[bn->params[2]].name);
	template_set(v, "VAR", "%s", g->params[bn->params[3]].name);
	template_set(v, "WRITE", "%s", write_of(p, step->first_op, 0));
	template_set(v, "SUMS_GIVEN", "%s", step_sums_given(&p->lowering, j));
	template_set(v, "FORWARD_NAMES", "%s", forward);
	template_set(v, "BACKWARD_NAMES", "%s", backward);
	fusions[step->kind].values(p, j, v);
}

/* The gradient BN writes: none where it leaves it to the convolution
 * before. */
static void input_gradient_values(const struct plan *p, int j, struct template_vars *v)
{
	const struct graph *g = p->graph;
	const struct step *step = &p->lowering.steps[j];
	if (step->leaves_gradient)
		template_set(v, "DIN", "NULL");
	else
		template_set(v, "DIN", "GRAD(%s)", g->tensors[g->ops[step->first_op].inputs[0]].name);
}

/* ---- BN, ReLU, convolution (+ addition) ---------------------------------- */

static void bn_relu_conv_name(struct shape in, const char *op_name, char *name, size_t size)
{
	(void)in;
	snprintf(name, size, "bn_relu_%.55s", op_name); /* conv names stay far below the limit */
}

/* Second the ReLU, third the convolution, and a fourth, the addition
 * whose other input the output starts as. */
static void bn_relu_conv_values(const struct plan *p, int j, struct template_vars *v)
{
	const struct graph *g = p->graph;
	const struct step *step = &p->lowering.steps[j];
	const struct op *relu = &g->ops[step->first_op + 1], *conv = relu + 1;
	const struct op *last = &g->ops[step->first_op + step->op_count - 1];
	input_gradient_values(p, j, v);
	if (step->op_count == 4) {
		int other = last->inputs[0] == conv->output ? last->inputs[1] : last->inputs[0];
		template_set(v, "SHORTCUT", "ACT(%s)", g->tensors[other].name);
	} else {
		template_set(v, "SHORTCUT", "NULL");
	}
	template_set(v, "ACTIVATED", "%s", g->tensors[relu->output].name);
	template_set(v, "LAYER", "%s", conv->name);
	template_set(v, "HAS_SHORTCUT", "%s", step->op_count == 4 ? "true" : "false");
	template_set(v, "WEIGHT", "%s", g->params[conv->params[0]].name);
	template_set(v, "NEXT_SUMS", "%s", step_next_sums(&p->lowering, j));
	step_gradient_values(p, j, v);
}

/* ---- BN, addition, ReLU ------------------------------------------------------ */

static void bn_add_relu_name(struct shape in, const char *op_name, char *name, size_t size)
{
	(void)op_name;
	snprintf(name, size, "bn_add_relu_%dx%dx%d", in.channels, in.height, in.width);
}

/* Second the addition, whose other input is the shortcut. */
static void bn_add_relu_values(const struct plan *p, int j, struct template_vars *v)
{
	const struct graph *g = p->graph;
	const struct step *step = &p->lowering.steps[j];
	const struct op *bn = &g->ops[step->first_op], *add = bn + 1;
	input_gradient_values(p, j, v);
	int other = add->inputs[0] == bn->output ? add->inputs[1] : add->inputs[0];
	template_set(v, "SHORTCUT", "%s", g->tensors[other].name);
	template_set(v, "SUM", "%s", g->tensors[add->output].name);
	template_set(v, "SUM_WRITE", "%s", write_of(p, step->first_op + 2, 0));
}

/* ---- BN, ReLU ------------------------------------------------------------------ */

static void bn_relu_name(struct shape in, const char *op_name, char *name, size_t size)
{
	(void)op_name;
	snprintf(name, size, "bn_relu_%dx%dx%d", in.channels, in.height, in.width);
}

static void no_values(const struct plan *p, int j, struct template_vars *v)
{
	(void)p;
	(void)j;
	(void)v;
}

/* ---- the table ------------------------------------------------------------------ */

const struct fusion_info fusions[STEP_KIND_COUNT] = {
	[STEP_BN_RELU_CONV] = {"batch_norm_relu_conv", 3, {OP_BATCH_NORM, OP_RELU, OP_CONV}, 2, .not_stored = 1 | 2,
			       .gradient_not_stored = 1, .takes_addition = true,
			       .leaves_gradient = LEAVES_TO_PRODUCER, .deferred = "DY_FROM_BN_RELU",
			       .helpers = {OP_BATCH_NORM, OP_CONV}, .kernel_name = bn_relu_conv_name,
			       .values = bn_relu_conv_values},
	[STEP_BN_ADD_RELU] = {"batch_norm_add_relu", 3, {OP_BATCH_NORM, OP_ADD, OP_RELU}, 0, .after_additions = true,
			      .must_pass = 2, .not_stored = 1 | 2, .leaves_gradient = LEAVES_TO_PREVIOUS,
			      .deferred = "DY_FROM_BN", .helpers = {OP_BATCH_NORM, OP_BATCH_NORM},
			      .kernel_name = bn_add_relu_name, .values = bn_add_relu_values},
	[STEP_BN_RELU] = {"batch_norm_relu", 2, {OP_BATCH_NORM, OP_RELU}, 0, .after_additions = true, .not_stored = 1,
			  .gradient_not_stored = 1, .helpers = {OP_BATCH_NORM, OP_BATCH_NORM},
			  .kernel_name = bn_relu_name, .values = no_values},
};
