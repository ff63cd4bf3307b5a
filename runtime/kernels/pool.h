/* Global average pooling, (n, C, H, W) -> (n, C, 1, 1): out[i][c] is the
 * mean of image i's channel c, summed in double; backward hands each
 * pixel a 1 / (H W) share of its channel's gradient. Called by every
 * thread of a parallel region (the images shared by omp for). */
#ifndef RESGEN_KERNELS_POOL_H
#define RESGEN_KERNELS_POOL_H

#include "kernels/common.h"

KERNEL_ENTRY(void, average_pool_forward, (real *out, const real *in, int n, int channels, int pixels))
{
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++)
		for (int c = 0; c < channels; c++) {
			const real *x = in + ((size_t)i * channels + c) * pixels;
			double sum = 0;
			for (int p = 0; p < pixels; p++)
				sum += x[p];
			out[(size_t)i * channels + c] = (real)(sum / pixels);
		}
}

/* din += the gradient of the mean */
KERNEL_ENTRY(void, average_pool_backward, (real *din, const real *dout, int n, int channels, int pixels))
{
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++)
		for (int c = 0; c < channels; c++) {
			real share = dout[(size_t)i * channels + c] / pixels;
			real *dx = din + ((size_t)i * channels + c) * pixels;
			for (int p = 0; p < pixels; p++)
				dx[p] += share;
		}
}

#endif
