/* Lowering: the graph's ops grouped into the steps the emitted code runs,
 * each step one kernel call in forward and one in backward. Between the
 * graph and the plan (plan_build runs it first); reads only the graph,
 * which stays the paper's network.
 *
 * Each fused step kind is an entry of the table in fusions.h (its ops,
 * what it leaves unstored, its template); this file says how the
 * entries are matched, in what order, and what each step then does.
 *
 * A step is one op, or consecutive ops of one group fused into one kernel:
 * a BN whose output only a ReLU reads, and that ReLU's output only a
 * convolution reads, become one convolution that applies BN and ReLU while
 * it packs its input (a prologue). Backward computes them again from BN's
 * input, so neither output is ever stored: of the three ops' tensors the
 * arena holds BN's input, the convolution's output and the gradient of the
 * convolution's input, which BN's backward (with ReLU's mask) reads.
 *
 * A fused step's convolution may also take, as its epilogue, the addition
 * that alone reads its output when that addition passes its gradient (see
 * below): the output then starts as the addition's other input and the
 * convolution adds to it, so the convolution's own output is never stored.
 * And a convolution's epilogue takes the sums per image that a BN starting
 * the next step computes its statistics from, sparing BN a pass over its
 * input.
 *
 * A BN whose output only an addition reads, that addition passing its
 * gradient (below) and only a ReLU reading its output, run as one step:
 * the end of an original unit, relu(shortcut + bn(x)), one pass over the
 * images in forward and two in backward (for BN's sums, then its input
 * gradient, unless the convolution before computes that: below), where
 * the three ops would take three in each, with neither
 * BN's output nor the sum stored. Backward reads ReLU's output for its
 * mask, as ReLU's own backward does.
 *
 * A BN whose output only a ReLU reads, where that ReLU's output has other
 * readers than one convolution (a pre-activation unit's first convolution
 * and its projection shortcut, or the pooling after the last unit), run
 * as one step: one pass over the images in forward, BN's output not
 * stored; backward takes the gradient of ReLU's output through ReLU's mask,
 * computed again from BN's input, so that neither BN's output nor its
 * gradient is stored and ReLU's backward pass is spared.
 *
 * A fused BN + ReLU + convolution, or BN + addition + ReLU, whose BN
 * normalises the output of a convolution that only BN reads (a
 * bottleneck unit's second and third BNs, a basic unit's second, both of
 * an original unit's) leaves BN's input gradient to that convolution's
 * backward, which runs after it: BN's backward takes its sums and keeps,
 * per channel, the line dx = scale dy + slope (x - mean) + offset; the
 * convolution computes dx of each image by it as it reads its dY, from
 * the gradient of BN's output (through ReLU's mask) or of the sum, and its
 * own output, into its scratch. So BN's input gradient is never stored,
 * nor read back: a pass over the images that wrote it and one that read
 * it are spared.
 * Both are of one group (unit): when a group's backward ends, its input
 * gradient is whole, as step --dump and gradflow read it. A pre-activation
 * unit's first BN, which adds its input gradient to the residual
 * stream's, could leave that to the unit before (its last convolution
 * reads the stream's gradient next), but then the unit's input gradient
 * would lack BN's part until that unit ran.
 *
 * An addition's backward only hands its output's gradient to both inputs.
 * Where that can be done without a copy, the inputs' gradients share the
 * output gradient's slot and the backward does nothing: the gradient of a
 * pre-activation network's residual stream is then one buffer per stage,
 * which each unit's first op adds its part to.
 *
 * A sum that a 1x1 convolution's epilogue makes (a pre-activation
 * bottleneck unit's output) is computed again in backward rather than kept
 * through the step, for every RECOMPUTE_EVERY-th such sum whose shortcut
 * is kept: freed after its last forward reader, it is made again, by the
 * same call with BN's saved values (SUMS_SAVED), just before the backward
 * of the step whose backward reads it (the next unit's first step), from the
 * convolution's input and the shortcut, both still kept for the unit's
 * own backward. The same call on the same inputs gives the same bits; the
 * convolution is about a quarter of the unit's forward work, and the sum two
 * thirds of what the unit keeps. */
#ifndef RESGEN_LOWER_H
#define RESGEN_LOWER_H

#include "graph.h"

enum step_kind {
	STEP_OP,           /* one op, its own kernel */
	STEP_BN_RELU_CONV, /* BN, ReLU, convolution (+ addition): the convolution's kernel with a BN +
			      ReLU prologue (and the addition as its epilogue) */
	STEP_BN_ADD_RELU,  /* BN, addition, ReLU: one elementwise pass after BN's statistics */
	STEP_BN_RELU,      /* BN, ReLU: one elementwise pass after BN's statistics */
	STEP_KIND_COUNT
};

struct step {
	enum step_kind kind;
	int first_op, op_count; /* consecutive ops of one group */
	int kernel_op;          /* the op whose kernel runs */
	bool sums_for_next;     /* its convolution takes the sums of the BN that starts the next step */
	int applies_for;        /* its convolution's dY is the input gradient of the BN of that step,
				   which left it to this one (see above); -1: dY is stored */
	bool leaves_gradient;   /* its BN's input gradient is left to the step that produced BN's
				   input */
	int recompute;          /* -1, or the step whose forward runs again just before this step's
				   backward, its output freed after forward (see above) */
};

struct lowering {
	const struct graph *graph;
	struct step *steps;
	int step_count;
	int *step_of_op;        /* per op */
	bool *stored;           /* per tensor: the arena holds it (false: a fused step computes it inside) */
	bool *gradient_stored;  /* per tensor: the arena holds its gradient, if it has one */
	int *gradient_slot;     /* per tensor: the tensor whose gradient slot holds its gradient
				   (itself, or the output of an addition that passes it on) */
	bool *passes_gradient;  /* per op: an addition whose inputs' gradients are its output's */
	int *recomputed_before; /* per tensor: -1, or the step before whose backward it is computed
				   again (it is not kept from forward to then) */
};

/* One sum in this many that could be computed again in backward is (see
 * above): for ResNet-1001 at batch 128, 7.4 GiB rather than 9.4 for about
 * 2.6% more arithmetic; 2 would take 6.4 GiB for twice that
 * (results/speed/recompute.md). */
enum { RECOMPUTE_EVERY = 3 };

int lower(struct lowering *l, const struct graph *g);
void lowering_free(struct lowering *l);

#endif
