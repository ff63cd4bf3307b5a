/* Everything the generator knows about a fused step kind (lower.h), in one
 * entry per kind, as ops.h is for op kinds: the ops it fuses, what of
 * theirs the arena no longer holds, what lowering may add to it, its
 * template and the op kinds whose helpers that template calls, its
 * kernels' names, and the template values of its calls. No other file
 * dispatches on step kinds: a fusion is one entry here, one template
 * (templates/ops/) and its kernels. */
#ifndef RESGEN_FUSIONS_H
#define RESGEN_FUSIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "plan.h"
#include "template.h"

/* Where a fused step's BN may leave its input gradient (lower.h): nowhere,
 * to the convolution that produced BN's input, or only where that
 * convolution is the step just before. */
enum leaves_gradient { LEAVES_NOWHERE, LEAVES_TO_PRODUCER, LEAVES_TO_PREVIOUS };

struct fusion_info {
	const char *template_name; /* templates/ops/NAME.c.tmpl; NULL: a single op's step, its op's template */
	/* The ops it fuses, consecutive, of one group, each reading the one
	 * before, every output but the last read by the next op alone. */
	int op_count;
	enum op_kind pattern[3];
	int kernel_at;        /* the op among them whose kernel runs, which names and sizes it */
	bool after_additions; /* matched on the steps left single once additions are fused, in the
				 order of the table; else on the graph's ops, first */
	unsigned must_pass;   /* bit k: op k passes its gradient on (lower.h) */
	unsigned not_stored, gradient_not_stored; /* bit k: op k's output, its gradient: computed
						     inside, never stored */
	bool takes_addition;  /* may take the addition after it as its epilogue */
	enum leaves_gradient leaves_gradient;
	const char *deferred; /* what the convolution before computes BN's input gradient from, where
				 this step's BN left it that (DY_FROM_BN_RELU, DY_FROM_BN) */
	enum op_kind helpers[2]; /* whose kernels' parts its template calls */
	/* Its kernel's name, from the shape of its kernel op's input and that
	 * op's own kernel name. */
	void (*kernel_name)(struct shape in, const char *op_name, char *name, size_t size);
	/* Its calls' values beyond those every fusion has (fusion_values). */
	void (*values)(const struct plan *p, int j, struct template_vars *v);
};

extern const struct fusion_info fusions[STEP_KIND_COUNT];

/* The values of fused step j's forward and backward calls. */
void fusion_values(const struct plan *p, int j, struct template_vars *v);

/* Whether step j's BN finds its sums taken by the step before (SUMS_GIVEN),
 * and where step j's convolution puts those of the BN after it
 * (NEXT_SUMS). */
const char *step_sums_given(const struct lowering *l, int j);
const char *step_next_sums(const struct lowering *l, int j);

/* Where step j's convolution backward reads dY: DOUT and DEFERRED. */
void step_gradient_values(const struct plan *p, int j, struct template_vars *v);

#endif
