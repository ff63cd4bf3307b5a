/* The residual addition: shortcut + branch, elementwise. Its backward hands
 * the output's gradient to both inputs; where the lowering lets the inputs'
 * gradients share the output gradient's slot (generator/stage3-plan/lower.h), it has
 * nothing to do. */
#ifndef RESGEN_KERNELS_ADD_H
#define RESGEN_KERNELS_ADD_H

#include "kernels/common.h"

static void add_forward(real *out, const real *shortcut, const real *branch, long count)
{
	double started = profile_clock();
	#pragma omp parallel for schedule(static)
	for (long j = 0; j < count; j++)
		out[j] = shortcut[j] + branch[j];
	profile_add(PROFILE_ELEMENTWISE, started);
}

static inline void add_backward(real *dshortcut, real *dbranch, const real *dout, long count, enum gradient_write shortcut_write, enum gradient_write branch_write)
{
	double started = profile_clock();
	#pragma omp parallel for schedule(static)
	for (long j = 0; j < count; j++) {
		dshortcut[j] = (shortcut_write == GRADIENT_ADD ? dshortcut[j] : 0) + dout[j];
		dbranch[j] = (branch_write == GRADIENT_ADD ? dbranch[j] : 0) + dout[j];
	}
	profile_add(PROFILE_ELEMENTWISE, started);
}

#endif
