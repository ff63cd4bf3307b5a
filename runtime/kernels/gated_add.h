/* The gated sum of the paper's gating shortcuts: g = sigmoid(z + b), z the
 * 1x1 gate convolution's output and b a bias per channel; exclusive
 * gating gives (1 - g) shortcut + g branch, shortcut-only gating
 * (1 - g) shortcut + branch. Called by every thread of a parallel region:
 * the channels are shared among the threads (omp for), so the bias
 * gradient sums in a fixed order. exclusive, channels and pixels are
 * constants in each instance. */
#ifndef RESGEN_KERNELS_GATED_ADD_H
#define RESGEN_KERNELS_GATED_ADD_H

#include "kernels/common.h"

KERNEL_ENTRY(void, gated_add_forward, (real *out, const real *shortcut, const real *branch, const real *gate, const real *bias, int n, int channels, int pixels, bool exclusive))
{
	#pragma omp for schedule(static)
	for (int c = 0; c < channels; c++)
		for (int i = 0; i < n; i++) {
			size_t at = ((size_t)i * channels + c) * pixels;
			for (int p = 0; p < pixels; p++) {
				real g = 1 / (1 + exp(-(gate[at + p] + bias[c])));
				out[at + p] = (1 - g) * shortcut[at + p] + (exclusive ? g : 1) * branch[at + p];
			}
		}
}

KERNEL_ENTRY(void, gated_add_backward, (real *dshortcut, real *dbranch, real *dgate, real *dbias, const real *dout, const real *shortcut, const real *branch, const real *gate, const real *bias, int n, int channels, int pixels, bool exclusive))
{
	#pragma omp for schedule(static)
	for (int c = 0; c < channels; c++) {
		double sum = 0;
		for (int i = 0; i < n; i++) {
			size_t at = ((size_t)i * channels + c) * pixels;
			for (int p = 0; p < pixels; p++) {
				real g = 1 / (1 + exp(-(gate[at + p] + bias[c])));
				real dy = dout[at + p];
				dshortcut[at + p] += (1 - g) * dy;
				dbranch[at + p] += (exclusive ? g : 1) * dy;
				/* d out / d g = (branch if exclusive) - shortcut; dg/dz = g (1 - g) */
				real dz = dy * ((exclusive ? branch[at + p] : 0) - shortcut[at + p]) * g * (1 - g);
				dgate[at + p] += dz;
				sum += dz;
			}
		}
		dbias[c] += (real)sum;
	}
}

#endif
