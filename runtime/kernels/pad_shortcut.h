/* The paper's zero-padding shortcut (option A): every stride-th pixel
 * kept, then zero channels appended up to the output's. No parameters;
 * backward adds each kept pixel's gradient back to where it came from.
 * Called by every thread of a parallel region (the images shared by omp
 * for), with the shape's sizes, constants in each instance. */
#ifndef RESGEN_KERNELS_PAD_SHORTCUT_H
#define RESGEN_KERNELS_PAD_SHORTCUT_H

#include "kernels/common.h"

/* A shortcut's sizes: the input's, the output's and the stride. */
struct pad_shape {
	int c_in, h_in, w_in, c_out, h_out, w_out, stride;
};

KERNEL_ENTRY(void, pad_shortcut_forward, (real *out, const real *in, int n, struct pad_shape s))
{
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++)
		for (int c = 0; c < s.c_out; c++)
			for (int y = 0; y < s.h_out; y++)
				for (int x = 0; x < s.w_out; x++)
					out[(((size_t)i * s.c_out + c) * s.h_out + y) * s.w_out + x] =
						c < s.c_in ? in[(((size_t)i * s.c_in + c) * s.h_in + y * s.stride) * s.w_in + x * s.stride] : 0;
}

KERNEL_ENTRY(void, pad_shortcut_backward, (real *din, const real *dout, int n, struct pad_shape s))
{
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++)
		for (int c = 0; c < s.c_in; c++)
			for (int y = 0; y < s.h_out; y++)
				for (int x = 0; x < s.w_out; x++)
					din[(((size_t)i * s.c_in + c) * s.h_in + y * s.stride) * s.w_in + x * s.stride] +=
						dout[(((size_t)i * s.c_out + c) * s.h_out + y) * s.w_out + x];
}

#endif
