/* Constant scaling, y = factor x: the paper's constant-scaling shortcut (and
 * branch), Table 1. */
#ifndef RESGEN_KERNELS_SCALE_H
#define RESGEN_KERNELS_SCALE_H

#include "kernels/common.h"

static void scale_forward(real *out, const real *in, real factor, long count)
{
	double started = profile_clock();
	#pragma omp parallel for schedule(static)
	for (long j = 0; j < count; j++)
		out[j] = factor * in[j];
	profile_add(PROFILE_ELEMENTWISE, started);
}

static void scale_backward(real *din, const real *dout, real factor, long count)
{
	double started = profile_clock();
	#pragma omp parallel for schedule(static)
	for (long j = 0; j < count; j++)
		din[j] += factor * dout[j];
	profile_add(PROFILE_ELEMENTWISE, started);
}

#endif
