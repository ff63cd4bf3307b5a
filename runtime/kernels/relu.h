/* ReLU, elementwise; its backward reads the output (y > 0 where x > 0). */
#ifndef RESGEN_KERNELS_RELU_H
#define RESGEN_KERNELS_RELU_H

#include "kernels/common.h"

static void relu_forward(real *out, const real *in, long count)
{
	double started = profile_clock();
	#pragma omp parallel for schedule(static)
	for (long j = 0; j < count; j++)
		out[j] = in[j] > 0 ? in[j] : 0;
	profile_add(PROFILE_ELEMENTWISE, started);
}

static void relu_backward(real *din, const real *dout, const real *out, long count, enum gradient_write write)
{
	double started = profile_clock();
	#pragma omp parallel for schedule(static)
	for (long j = 0; j < count; j++)
		din[j] = (write == GRADIENT_ADD ? din[j] : 0) + (out[j] > 0 ? dout[j] : 0);
	profile_add(PROFILE_ELEMENTWISE, started);
}

#endif
