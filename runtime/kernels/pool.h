/* Pooling. Global average pooling, (n, C, H, W) -> (n, C, 1, 1): out[i][c]
 * is the mean of image i's channel c, summed in double; backward hands
 * each pixel a 1 / (H W) share of its channel's gradient. Max pooling
 * over k x k windows with a stride, padded by k / 2 (the ImageNet stem's):
 * each output the largest of its window, the first in row order among
 * equals (as PyTorch's, so that ties after a ReLU route the gradient to
 * the same pixel); backward finds that pixel again from the input rather
 * than storing it. Called by every thread of a parallel region (the
 * images shared by omp for). */
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

/* A max pooling's sizes: its channels, input, output, window and stride. */
struct max_pool_shape {
	int c, h_in, w_in, h_out, w_out, k, stride;
};

/* The index in x (one channel of one image) of output (y, x0)'s maximum:
 * the first of the largest in row order, a NaN taking the place of any
 * number (PyTorch's rule). */
KERNEL_HELPER int max_pool_argmax(const real *x, struct max_pool_shape s, int y, int x0)
{
	int pad = s.k / 2, best = -1;
	real most = 0;
	for (int ky = 0; ky < s.k; ky++) {
		int iy = y * s.stride - pad + ky;
		if (iy < 0 || iy >= s.h_in)
			continue;
		for (int kx = 0; kx < s.k; kx++) {
			int ix = x0 * s.stride - pad + kx;
			if (ix < 0 || ix >= s.w_in)
				continue;
			real v = x[iy * s.w_in + ix];
			if (best < 0 || v > most || isnan(v)) {
				best = iy * s.w_in + ix;
				most = v;
			}
		}
	}
	return best;
}

KERNEL_ENTRY(void, max_pool_forward, (real *out, const real *in, int n, struct max_pool_shape s))
{
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++)
		for (int c = 0; c < s.c; c++) {
			const real *x = in + ((size_t)i * s.c + c) * s.h_in * s.w_in;
			real *y = out + ((size_t)i * s.c + c) * s.h_out * s.w_out;
			for (int oy = 0; oy < s.h_out; oy++)
				for (int ox = 0; ox < s.w_out; ox++)
					y[oy * s.w_out + ox] = x[max_pool_argmax(x, s, oy, ox)];
		}
}

/* din += each output's gradient at its maximum */
KERNEL_ENTRY(void, max_pool_backward, (real *din, const real *dout, const real *in, int n, struct max_pool_shape s))
{
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++)
		for (int c = 0; c < s.c; c++) {
			size_t plane = ((size_t)i * s.c + c) * s.h_in * s.w_in;
			const real *dy = dout + ((size_t)i * s.c + c) * s.h_out * s.w_out;
			for (int oy = 0; oy < s.h_out; oy++)
				for (int ox = 0; ox < s.w_out; ox++)
					din[plane + max_pool_argmax(in + plane, s, oy, ox)] += dy[oy * s.w_out + ox];
		}
}

#endif
