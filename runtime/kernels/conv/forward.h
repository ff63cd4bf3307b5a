/* The forward pass: the driver that shares the images among the threads,
 * runs the method chosen (direct, row split or Winograd: conv_choose) on
 * groups of them, and applies the epilogue to each image while it is
 * fresh. */
#ifndef RESGEN_KERNELS_CONV_FORWARD_H
#define RESGEN_KERNELS_CONV_FORWARD_H

#include "kernels/conv/winograd.h"

/* The weights packed for a method; flipped: for the data gradient, whose
 * convolution has the forward's inputs for channels. */
KERNEL_HELPER void conv_pack_weights_for(real *packed, const real *weight, enum conv_method method, bool flipped, const struct gemm_micro *micro, struct conv_shape s)
{
	int channels = flipped ? s.c_in : s.c_out, inputs = flipped ? s.c_out : s.c_in, width = conv_channel_width(micro);
	if (conv_winograd_applies(s) && method == CONV_WINOGRAD)
		CONV_WITH_WINOGRAD_TILE(s, conv_pack_weights_winograd, packed, weight, channels, inputs, width, flipped, s);
	else if (conv_row_split_applies(s) && method == CONV_ROW_SPLIT)
		conv_pack_weights_split(packed, weight, channels, inputs, width, flipped, s);
	else
		conv_pack_weights(packed, weight, channels, CONV_PATCH(inputs, s.k), width, flipped, s);
}

/* The convolution of count consecutive images of in (a group: more than
 * one only for Winograd's: its choice's group) by method, the weights packed
 * for it, each image padded into padded in turn; pre, if not NULL: the
 * prologue. rows: the row split's partial outputs or Winograd's tiles. */
KERNEL_HELPER void conv_group(real *out, const real *in, const real *pre, real *padded, const real *packed, real *panel, real *rows, enum conv_method method, int count, struct conv_shape s, real beta, const struct gemm_micro *micro)
{
	/* A 1x1 convolution reads its input only while packing, so that is
	 * where its prologue goes; a wider one pads the image, activated, first. */
	const real *packing_pre = s.k == 1 ? pre : NULL, *padding_pre = s.k == 1 ? NULL : pre;
	if (conv_winograd_applies(s) && method == CONV_WINOGRAD) {
		CONV_WITH_PIXEL_WIDTH(micro, conv_winograd_tiled, out, in, padding_pre, padded, packed, rows, count, s, beta, micro);
		return;
	}
	for (int g = 0; g < count; g++) {
		const real *image = conv_pad(padded, in + (size_t)g * s.c_in * s.h_in * s.w_in, padding_pre, s.c_in, s.h_in, s.w_in, s.k / 2);
		real *result = out + (size_t)g * s.c_out * s.h_out * s.w_out;
		if (conv_row_split_applies(s) && method == CONV_ROW_SPLIT)
			CONV_WITH_PIXEL_WIDTH(micro, conv_implicit_gemm_split_of, result, image, packed, panel, rows, s, beta, micro);
		else
			CONV_WITH_PIXEL_WIDTH(micro, conv_implicit_gemm_of, result, image, packing_pre, packed, panel,
					      s.k == 1 ? padded : NULL, s, beta, micro);
	}
}

/* out = conv(in), pre the prologue if not NULL, then the epilogue, as c
 * chose: called by every thread of a parallel region. */
KERNEL_ENTRY(void, conv_forward, (real *out, const real *in, const real *weight, const real *pre, struct conv_epilogue epilogue, int n, struct conv_shape s, const struct conv_choices *c, real *scratch, size_t scratch_per_thread))
{
	const struct gemm_micro *micro = gemm_micro();
	size_t in_size = (size_t)s.c_in * s.h_in * s.w_in, out_size = (size_t)s.c_out * s.h_out * s.w_out;
	size_t tensors = n * (in_size + (epilogue.shortcut ? 2 : 1) * out_size);
	if (c->forward.method == CONV_REFERENCE) {
		conv_forward_reference(out, in, weight, pre, epilogue, n, s, scratch, scratch_per_thread, conv_streams(c, tensors), c->products);
		return;
	}
	int patch = CONV_PATCH(s.c_in, s.k);
	enum conv_method method = CONV_ALGORITHM_OF(s.forward, c->forward.method);
	int group = method == CONV_WINOGRAD ? c->forward.group : 1; /* 1, a constant, where the shape allows no Winograd */
	real *padded = scratch + (size_t)omp_get_thread_num() * scratch_per_thread + CONV_ALIGN(s.c_out * patch);
	real *packed = padded + CONV_PADDED(s.c_in, s.h_in, s.w_in, s.k);
	real *panel = packed + CONV_PACKED_ANY(s.c_out, s.c_in, s.k);
	real *rows = panel + CONV_PANEL(patch);
	real *staged = rows + CONV_ROWS_OR_TILES(s.c_in, s.c_out, s.h_in, s.w_out, s.k);
	bool staging = group == 1 && conv_streams(c, tensors);
	if (s.k > 1)
		memset(padded, 0, sizeof(real) * CONV_PADDED(s.c_in, s.h_in, s.w_in, s.k));
	conv_pack_weights_for(packed, weight, method, false, micro, s);
	struct conv_groups groups = conv_groups_begin(n, group, true);
	int first, count;
	while (conv_next_group(&groups, epilogue.claims, &first, &count)) {
		real *result = staging ? staged : out + first * out_size;
		conv_group(result, in + first * in_size, pre, padded, packed, panel, rows, method, count, s, 0, micro);
		for (int i = first; i < first + count; i++)
			conv_epilogue_end(epilogue, result + (i - first) * out_size, i, s);
		if (staging)
			conv_stream_image(out + first * out_size, staged, out_size);
	}
	#pragma omp barrier
}

#endif
