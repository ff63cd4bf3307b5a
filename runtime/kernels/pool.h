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
 * number (PyTorch's rule). The definition, window by window; the kernels
 * below compute the same, checked by tests/test_kernels.c. */
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

/* Whether v takes most's place in a window's fold in row order: where it
 * is larger, or NaN. Folded so, a window gives max_pool_argmax's element,
 * and so does each row's fold folded down the rows: hence the kernels
 * below go across a row's windows first, then down, without branches. */
KERNEL_HELPER bool max_pool_takes(real v, real most) { return (v > most) | (v != v); }

enum { MAX_POOL_RUN = 64 }; /* outputs of a row folded at once */

/* Row row's window at left, [lo, hi) of it within the row: its element
 * that folds in first (*m) and where it lies (*a). */
KERNEL_HELPER void max_pool_window_edge(const real *row, int lo, int hi, real *m, int *a)
{
	*m = row[lo];
	*a = lo;
	for (int ix = lo + 1; ix < hi; ix++)
		if (max_pool_takes(row[ix], *m)) {
			*m = row[ix];
			*a = ix;
		}
}

/* most[j] and at[j] (at may be NULL) for row iy of x's windows at output
 * columns ox0 + j, j < count <= MAX_POOL_RUN: set from the row if first,
 * else folded with it. at is the index in x, as max_pool_argmax's. The
 * columns whose windows lie within the row are folded one of the window's
 * columns at a time, each loop one strided load, so that they vectorise. */
KERNEL_HELPER void max_pool_fold_row(real *most, int *at, const real *x, struct max_pool_shape s, int iy, int ox0,
				     int count, bool first)
{
	int pad = s.k / 2;
	int inner = (pad + s.stride - 1) / s.stride - ox0;
	int outer = s.w_in >= s.k ? (s.w_in - s.k + pad) / s.stride + 1 - ox0 : 0;
	inner = inner < 0 ? 0 : inner > count ? count : inner;
	outer = outer < inner ? inner : outer > count ? count : outer;
	const real *row = x + (size_t)iy * s.w_in;
	int base = iy * s.w_in;
	real across[MAX_POOL_RUN];
	int where[MAX_POOL_RUN];
	for (int j = 0; j < count; j++) {
		if (j == inner)
			j = outer; /* the windows within the row are below */
		if (j == count)
			break;
		int left = (ox0 + j) * s.stride - pad;
		max_pool_window_edge(row, left < 0 ? 0 : left, left + s.k > s.w_in ? s.w_in : left + s.k, &across[j],
				     &where[j]);
	}
	const real *w = row + (ox0 + inner) * s.stride - pad;
	for (int j = inner; j < outer; j++) {
		across[j] = w[(j - inner) * s.stride];
		where[j] = (ox0 + j) * s.stride - pad;
	}
	for (int kx = 1; kx < s.k; kx++)
		for (int j = inner; j < outer; j++) {
			real v = w[(j - inner) * s.stride + kx];
			bool takes = max_pool_takes(v, across[j]);
			across[j] = takes ? v : across[j];
			where[j] = takes ? (ox0 + j) * s.stride - pad + kx : where[j];
		}
	if (first)
		for (int j = 0; j < count; j++) {
			most[j] = across[j];
			where[j] += base;
		}
	else
		for (int j = 0; j < count; j++) {
			bool takes = max_pool_takes(across[j], most[j]);
			most[j] = takes ? across[j] : most[j];
			where[j] = takes ? base + where[j] : at ? at[j] : 0;
		}
	if (at)
		for (int j = 0; j < count; j++)
			at[j] = where[j];
}

/* Output row oy's columns [ox0, ox0 + count) of channel x: their maxima,
 * and where they lie if at is not NULL. */
KERNEL_HELPER void max_pool_run(real *most, int *at, const real *x, struct max_pool_shape s, int oy, int ox0, int count)
{
	int top = oy * s.stride - s.k / 2;
	int lo = top < 0 ? 0 : top, hi = top + s.k > s.h_in ? s.h_in : top + s.k;
	for (int iy = lo; iy < hi; iy++)
		max_pool_fold_row(most, at, x, s, iy, ox0, count, iy == lo);
}

KERNEL_ENTRY(void, max_pool_forward, (real *out, const real *in, int n, struct max_pool_shape s))
{
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++)
		for (int c = 0; c < s.c; c++) {
			const real *x = in + ((size_t)i * s.c + c) * s.h_in * s.w_in;
			real *y = out + ((size_t)i * s.c + c) * s.h_out * s.w_out;
			for (int oy = 0; oy < s.h_out; oy++)
				for (int ox = 0; ox < s.w_out; ox += MAX_POOL_RUN) {
					int count = s.w_out - ox < MAX_POOL_RUN ? s.w_out - ox : MAX_POOL_RUN;
					max_pool_run(y + oy * s.w_out + ox, NULL, x, s, oy, ox, count);
				}
		}
}

/* din += each output's gradient at its maximum, in the outputs' order */
KERNEL_ENTRY(void, max_pool_backward, (real *din, const real *dout, const real *in, int n, struct max_pool_shape s))
{
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++)
		for (int c = 0; c < s.c; c++) {
			size_t plane = ((size_t)i * s.c + c) * s.h_in * s.w_in;
			const real *dy = dout + ((size_t)i * s.c + c) * s.h_out * s.w_out;
			for (int oy = 0; oy < s.h_out; oy++)
				for (int ox = 0; ox < s.w_out; ox += MAX_POOL_RUN) {
					int count = s.w_out - ox < MAX_POOL_RUN ? s.w_out - ox : MAX_POOL_RUN;
					/* set by max_pool_run; zeroed for GCC, which cannot tell */
					int at[MAX_POOL_RUN] = {0};
					real most[MAX_POOL_RUN] = {0};
					max_pool_run(most, at, in + plane, s, oy, ox, count);
					for (int j = 0; j < count; j++)
						din[plane + at[j]] += dy[oy * s.w_out + ox + j];
				}
		}
}

#endif
