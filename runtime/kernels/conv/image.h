/* What a convolution does to an image besides its product: the prologue,
 * y = relu(scale x + shift) per channel (the BN + ReLU of a fused step,
 * applied as the input is read, never stored); the forward epilogue (the
 * residual sum, then BN's sums of the image while it is in the cache);
 * stores that stream past the caches; and how the threads claim images. */
#ifndef RESGEN_KERNELS_CONV_IMAGE_H
#define RESGEN_KERNELS_CONV_IMAGE_H

#include "kernels/conv/choices.h"

/* The claims of a pass over n images: an int an image (conv_claim), then
 * one a share of the weight gradient (share_claim). */
#define CONV_CLAIMS(n) ((n) + share_count())

/* The forward pass's epilogue: shortcut, if not NULL, a tensor of the
 * output's shape added to the convolution's output; sums, if not
 * NULL, where each output image's batch_norm_image_sums go. And where the
 * threads claim the images (conv_claim): CONV_CLAIMS(n) ints, zero, shared
 * by them. */
struct conv_epilogue {
	const real *shortcut;
	double *sums;
	int *claims;
};

/* After output image i is computed (out: the image, which the convolution
 * set): the shortcut added, channel by channel, each channel summed for BN
 * while it is in the L1 cache. A copy of the shortcut into the output for the
 * convolution to add to (beta 1) would take one more pass over the image, and
 * the micro-kernel's read of it back (docs/kernel-measurements.md
 * (conv_epilogue_end)). Where the product is one sum (the micro-kernel's,
 * Winograd's output transform), it is the same sum, rounded once; the row
 * split and the reference's gemm, which add partial products, add the
 * shortcut after them. */
KERNEL_HELPER void conv_epilogue_end(struct conv_epilogue e, real *out, int i, struct conv_shape s)
{
	int pixels = s.h_out * s.w_out;
	const real *shortcut = e.shortcut ? e.shortcut + (size_t)i * s.c_out * pixels : NULL;
	if (!shortcut && !e.sums)
		return;
	for (int c = 0; c < s.c_out; c++) {
		real *x = out + (size_t)c * pixels;
		if (shortcut) {
			const real *from = shortcut + (size_t)c * pixels;
			for (int p = 0; p < pixels; p++)
				x[p] += from[p];
		}
		if (e.sums)
			batch_norm_channel_sums(e.sums + BATCH_NORM_IMAGE_SUMS * ((size_t)i * s.c_out + c), x, pixels);
	}
}

/* One non-temporal store of CONV_STREAM_BYTES from from to to (aligned to
 * them): a whole line where the build has AVX-512 (narrower stores made the
 * store loop a large part of a pass: docs/kernel-measurements.md
 * (conv_stream_store)), else 32 bytes with AVX, else 16 with SSE2, which
 * every x86-64 has. */
#if defined(__AVX512F__)
enum { CONV_STREAM_BYTES = 64 };
KERNEL_HELPER void conv_stream_store(real *to, const real *from) { _mm512_stream_si512((__m512i *)to, _mm512_loadu_si512(from)); }
#elif defined(__AVX__)
enum { CONV_STREAM_BYTES = 32 };
KERNEL_HELPER void conv_stream_store(real *to, const real *from) { _mm256_stream_si256((__m256i *)to, _mm256_loadu_si256((const __m256i *)from)); }
#elif defined(__SSE2__)
enum { CONV_STREAM_BYTES = 16 };
KERNEL_HELPER void conv_stream_store(real *to, const real *from) { _mm_stream_si128((__m128i *)to, _mm_loadu_si128((const __m128i *)from)); }
#endif

/* to[0..count) = from[0..count), stored past the caches where the machine
 * can (conv_stream_store), so that no line of to is read first; the fence
 * orders them before what follows (the barrier after which other threads
 * read to). */
KERNEL_HELPER void conv_stream_image(real *restrict to, const real *restrict from, size_t count)
{
#ifdef __SSE2__
	enum { LANES = CONV_STREAM_BYTES / sizeof(real) };
	size_t t = 0;
	for (; t < count && (uintptr_t)(to + t) % CONV_STREAM_BYTES; t++)
		to[t] = from[t];
	for (; t + LANES <= count; t += LANES)
		conv_stream_store(to + t, from + t);
	for (; t < count; t++)
		to[t] = from[t];
	_mm_sfence();
#else
	memcpy(to, from, sizeof(real) * count);
#endif
}

/* A convolution's prologue, pre: BN's scale and shift of every input
 * channel (scale[c_in], then shift[c_in]), with ReLU after it. The
 * convolution reads max(x * scale + shift, 0) where its input holds x;
 * with pre NULL, it reads x. */

/* max(x * scale + shift, 0): BN-apply, then ReLU; the multiply-add
 * rounded once whatever the build's optimisation contracts (a bf16
 * convolution's rounding pass computes the same, bf16_round_rows). */
KERNEL_HELPER real conv_activated(real x, real scale, real shift)
{
	real y = REAL_FMA(x, scale, shift);
	return y > 0 ? y : 0;
}

KERNEL_HELPER void conv_activate_run(real *out, const real *in, int count, real scale, real shift)
{
	/* simd: with count a constant 16 (haswell's f32 panels, skx's f64
	 * ones), GCC otherwise unrolled the loop whole into scalar code */
	#pragma omp simd
	for (int t = 0; t < count; t++)
		out[t] = conv_activated(in[t], scale, shift);
}

/* out[t] = in[t] for t < count, activated by channel c's prologue if pre is
 * not NULL. The plain copy is a simd loop for the same reason
 * (docs/kernel-measurements.md (conv_read_run)). */
KERNEL_HELPER void conv_read_run(real *out, const real *in, int count, const real *pre, int c, int channels)
{
	if (pre) {
		conv_activate_run(out, in, count, pre[c], pre[channels + c]);
		return;
	}
	#pragma omp simd
	for (int t = 0; t < count; t++)
		out[t] = in[t];
}

/* The image (C, PIXELS) a convolution reads: the input itself, or with a
 * prologue, its activation, written to out. */
KERNEL_HELPER const real *conv_activate(real *out, const real *image, const real *pre, int channels, int pixels)
{
	if (!pre)
		return image;
	for (int c = 0; c < channels; c++)
		conv_activate_run(out + (size_t)c * pixels, image + (size_t)c * pixels, pixels, pre[c], pre[channels + c]);
	return out;
}

/* The output columns [*lo, *hi) whose input column ox * stride - pad + kx
 * falls inside the image; the rest read the zero padding. */
KERNEL_HELPER void conv_inside(int *lo, int *hi, int kx, int pad, int stride, int width, int width_out)
{
	int first = 0, last = width_out;
	while (first < width_out && first * stride - pad + kx < 0)
		first++;
	while (last > first && (last - 1) * stride - pad + kx >= width)
		last--;
	*lo = first;
	*hi = last;
}

/* The drivers below (conv_forward, conv_backward, conv_backward_weights,
 * conv_backward_data and their references) are called by every thread of a
 * parallel region that the kernel instance opens, so that they are inlined
 * there with the instance's constant shape; the references share the images
 * with orphaned omp for loops. Every pass shares the images by thread_share
 * (kernels.h), a fixed contiguous share a thread, so that a thread reads back
 * from its own caches what it wrote in the pass before (elementwise passes
 * share them alike, by omp for's static schedule). The weight gradient's sums
 * add each thread's images, and must not depend on which thread took which;
 * but what the forward pass computes of an image, output and BN's sums, and
 * what conv_backward's data gradient does, is that image's alone, and there a
 * thread done with its own share takes the groups of images the others have
 * not reached (conv_next_group), so that a thread a neighbour on the machine
 * slowed is helped rather than waited for. Handing the groups out in turn as
 * the threads come free (omp for, dynamic) would have most images read by the
 * other thread than wrote them, which costs most where the two cores have a
 * last-level cache each (docs/kernel-measurements.md, conv_next_group). */

/* Whether the calling thread is the first to claim the group of images
 * from first (claims: an int an image, zero, shared by the threads). */
KERNEL_HELPER bool conv_claim(int *claims, int first) { return claim_first(&claims[first]); }

/* The groups of images a thread takes, in groups of group images from
 * the first of each share: its own share's from its first (with own),
 * then each other thread's from its last back, while it claims them. A
 * group already claimed ends a share: its owner has got there, or
 * another thread from the other end. */
struct conv_groups {
	int n, group, other, first, from, to;
};

KERNEL_HELPER struct conv_groups conv_groups_begin(int n, int group, bool own)
{
	struct conv_groups g = {n, group, 0, -1, 0, 0};
	if (own) {
		thread_share(n, &g.from, &g.to);
		g.first = g.from;
	}
	return g;
}

/* The next group claimed, from *first, count images; false when none is left. */
KERNEL_HELPER bool conv_next_group(struct conv_groups *g, int *claims, int *first, int *count)
{
	int shares = share_count();
	while (g->first < g->from || g->first >= g->to || !conv_claim(claims, g->first)) {
		if (++g->other >= shares)
			return false;
		thread_share_of(g->n, (omp_get_thread_num() + g->other) % shares, &g->from, &g->to);
		g->first = g->to > g->from ? g->from + (g->to - 1 - g->from) / g->group * g->group : g->from - 1;
	}
	*first = g->first;
	*count = g->to - g->first < g->group ? g->to - g->first : g->group;
	g->first += g->other ? -g->group : g->group;
	return true;
}

#endif
