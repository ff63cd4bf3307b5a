/* Convolution without bias (a BN or the sum follows), k x k, zero padding
 * k / 2. Images are shared among the threads. The fast kernels drive BLIS's
 * micro-kernel (runtime/gemm.h) on panels packed straight from the
 * activations (implicit im2col): the forward pass and the data gradient as
 * W . columns(X), the weight gradient as dY . columns(X)^T. The reference
 * kernels (im2col, then one BLIS gemm per image) are what the fast ones are
 * tested against (tests/test_kernels.c) and the fallback where a machine's
 * micro-kernel does not fit. The weight gradient is summed per thread, then
 * across threads in thread order, so a fixed thread count gives
 * bitwise-repeatable results. Every kernel but the data gradient takes an
 * optional prologue, the BN + ReLU that a fused step (generator/lower.h)
 * applies to the input as it is read: the activated input is never stored.
 * The forward pass takes an optional epilogue, run on each image while it is
 * fresh: a residual sum (the shortcut's image added to it, channel by
 * channel), and the sums per image from which the next BN takes its
 * statistics (kernels/batch_norm.h). */
#ifndef RESGEN_KERNELS_CONV_H
#define RESGEN_KERNELS_CONV_H

#include "kernels/common.h"
#include "kernels/batch_norm.h"

/* A convolution's sizes. Every instance passes constants, which the
 * always-inlined helpers below fold. */
struct conv_shape {
	int c_in, h_in, w_in, c_out, h_out, w_out, k, stride;
};

#define CONV_ALIGN(reals) (((reals) + 15) / 16 * 16)
#define CONV_PATCH(c_in, k) ((c_in) * (k) * (k))
#define CONV_MAX(a, b) ((a) > (b) ? (a) : (b))
/* Operands packed into panels of up to GEMM_PANEL_MAX rows of k reals,
 * each panel 64-byte aligned, as BLIS's kernels load them. */
#define CONV_PACKED(channels, k) CONV_ALIGN(((channels) + GEMM_PANEL_MAX) * (k) + 16 * ((channels) + 1))
#define CONV_PANEL(k) CONV_ALIGN((k) * GEMM_PANEL_MAX)
/* Either packing of the weights: per output channel, or per output
 * channel and kernel row (the row split, below). */
#define CONV_PACKED_EITHER(c_out, c_in, k) CONV_MAX(CONV_PACKED(c_out, CONV_PATCH(c_in, k)), CONV_PACKED((c_out) * (k), (c_in) * (k)))
/* The row split's partial outputs: per output channel and kernel row, the
 * output columns of every row of the padded input. */
#define CONV_ROWS(c_out, h_in, w_out, k) CONV_ALIGN((c_out) * (k) * ((h_in) + (k) / 2 * 2) * (w_out))
/* Winograd's F(2x2, 3x3) and F(4x4, 3x3) (below), for 3x3 convolutions
 * only, with room for either: the weights transformed, packed once for
 * each of the 16 or 36 places of a transformed tile; the input's tiles
 * transformed (V), packed the same way; and the products (M), per place
 * an output channel's tiles, with room for an eighth more rows
 * (CONV_PRODUCT_ROWS, conv_block_rows). Tiles of m x m output pixels. */
#define CONV_TILES_OF(h, w, m) (((h) / (m)) * ((w) / (m)))
#define CONV_PRODUCT_ROWS(channels) ((channels) + (channels) / 8)
/* Images with fewer tiles than a panel holds run in groups, their tiles
 * side by side in one set of products: up to CONV_WINOGRAD_GROUP images,
 * as many as fill a panel of width tiles. CONV_SET_TILES: the most tiles
 * a set has on any machine (panels at most GEMM_PANEL_MAX wide). */
#define CONV_WINOGRAD_GROUP 8
#define CONV_GROUP(tiles, width)                                                                                        \
	((tiles) >= (width) || (tiles) == 0 ? 1                                                                         \
	 : ((width) + (tiles) - 1) / (tiles) < CONV_WINOGRAD_GROUP ? ((width) + (tiles) - 1) / (tiles) : CONV_WINOGRAD_GROUP)
#define CONV_SET_TILES(h, w, m) (CONV_GROUP(CONV_TILES_OF(h, w, m), GEMM_PANEL_MAX) * CONV_TILES_OF(h, w, m))
/* The places lie a whole number of 4 KiB pages and one or two cache lines
 * apart: 16 streams a page apart would share a set of the L1 cache. */
#define CONV_PLACE(reals) (((reals) + 1023) / 1024 * 1024 + 16)
#define CONV_WINOGRAD_WEIGHTS(c_out, c_in, k) ((k) == 3 ? CONV_PLACES(4) * CONV_PLACE(CONV_PACKED(c_out, c_in)) : 0)
#define CONV_WINOGRAD_TILES_OF(c_in, c_out, h, w, m) \
	(CONV_PLACES(m) * (CONV_PLACE(CONV_PACKED(CONV_SET_TILES(h, w, m), c_in)) + CONV_PLACE(CONV_PRODUCT_ROWS(c_out) * CONV_SET_TILES(h, w, m))))
#define CONV_WINOGRAD_TILES(c_in, c_out, h, w, k) \
	((k) == 3 ? CONV_MAX(CONV_WINOGRAD_TILES_OF(c_in, c_out, h, w, 2), CONV_WINOGRAD_TILES_OF(c_in, c_out, h, w, 4)) : 0)
/* Any packing of the weights; the row split's outputs or Winograd's tiles. */
#define CONV_PACKED_ANY(c_out, c_in, k) CONV_MAX(CONV_PACKED_EITHER(c_out, c_in, k), CONV_WINOGRAD_WEIGHTS(c_out, c_in, k))
#define CONV_ROWS_OR_TILES(c_in, c_out, h_in, w_out, k) CONV_MAX(CONV_ROWS(c_out, h_in, w_out, k), CONV_WINOGRAD_TILES(c_in, c_out, h_in, w_out, k))
/* An image with the convolution's zero border, as packing reads it. */
#define CONV_PADDED(channels, height, width, k) CONV_ALIGN((channels) * ((height) + (k) / 2 * 2) * ((width) + (k) / 2 * 2))
/* Per-thread scratch, in reals: a private weight gradient, then the
 * larger of the forward pass's part and the backward pass's, which is the
 * weight gradient's part, the data gradient's after it (both run image by
 * image in one loop: conv_backward), and room for a fused BN's sums (4
 * reals a channel). The forward pass's: padded X, packed W, a panel of
 * columns, the row split's partial outputs or Winograd's transformed
 * tiles and products, and an output image staged (conv_streams); the data
 * gradient's the same of dY and the flipped W; the weight gradient's
 * CONV_WEIGHT_FAST; the reference kernels', in each part: columns, and the
 * input a prologue activates. generator/plan.c computes the same figure; each instance
 * checks it at compile time. */
#define CONV_REFERENCE(c_in, h_in, w_in, h_out, w_out, k) (CONV_ALIGN(CONV_PATCH(c_in, k) * (h_out) * (w_out)) + CONV_ALIGN((c_in) * (h_in) * (w_in)))
#define CONV_FORWARD_PART(c_in, h_in, w_in, c_out, h_out, w_out, k)                                                                      \
	CONV_MAX(CONV_PADDED(c_in, h_in, w_in, k) + CONV_PACKED_ANY(c_out, c_in, k) + CONV_PANEL(CONV_PATCH(c_in, k)) + CONV_ROWS_OR_TILES(c_in, c_out, h_in, w_out, k) + \
			 CONV_ALIGN((c_out) * (h_out) * (w_out)),                                                                         \
		 CONV_REFERENCE(c_in, h_in, w_in, h_out, w_out, k))
#define CONV_DATA_PART(c_in, h_in, w_in, c_out, h_out, w_out, k)                                                                             \
	CONV_MAX(CONV_PADDED(c_out, h_out, w_out, k) + CONV_PACKED_ANY(c_in, c_out, k) + CONV_PANEL(CONV_PATCH(c_out, k)) + CONV_ROWS_OR_TILES(c_out, c_in, h_out, w_in, k) + \
			 CONV_ALIGN((c_in) * (h_in) * (w_in)),                                                                             \
		 CONV_REFERENCE(c_in, h_in, w_in, h_out, w_out, k))
/* The weight gradient's fast kernels: packed dY, then padded X and a panel
 * of columns^T, or a 1x1 convolution's X packed; or for the row split, its
 * rows of dY packed, padded X, a panel, and dY padded by K - 1. */
#define CONV_SPLIT_PIXELS(h_in, w_out, k) (((h_in) + (k) - 1) * (w_out))
#define CONV_WEIGHT_FAST(c_in, h_in, w_in, c_out, h_out, w_out, k)                                                                 \
	CONV_MAX(CONV_PACKED(c_out, (h_out) * (w_out)) + CONV_MAX(CONV_PADDED(c_in, h_in, w_in, k) + CONV_PANEL((h_out) * (w_out)), \
								   CONV_PACKED(c_in, (h_out) * (w_out))),        \
		 CONV_PACKED((k) * (c_out), CONV_SPLIT_PIXELS(h_in, w_out, k)) + CONV_PADDED(c_in, h_in, w_in, k) +       \
			 CONV_PANEL(CONV_SPLIT_PIXELS(h_in, w_out, k)) + CONV_PADDED(c_out, h_out, w_out, 2 * (k) - 1))
/* Winograd's (3x3 only), with tiles of m x m outputs (2 or 4): per place
 * of a transformed tile, dY's tiles and the input's, and the products;
 * then dY and the padded input with their channels innermost. */
#define CONV_PLACES(m) (((m) + 2) * ((m) + 2))
/* The weight gradient's products sum over the tiles of as many images
 * as make CONV_WEIGHT_TILES tiles (up to CONV_WINOGRAD_GROUP): an 8x8
 * image has only 4 of 4 x 4, and sums of 4 on the micro-kernel were
 * mostly its start and end. One thread, zen3's kernels on the Zen 4, us
 * an image (64 images; 8 in brackets), 16 tiles against 64: 64 channels
 * at 8 x 8 (4 images at a time against 8) 20.8 (27.3) -> 18.6 (25.1), 32
 * at 16 x 16 (1 against 4) 26.7 (28.4) -> 23.5 (25.4); 128 gained no
 * more. (16 at 32 x 32 has 64 tiles an image either way.) */
#define CONV_WEIGHT_TILES 64
#define CONV_WEIGHT_GROUP(tiles) CONV_GROUP(tiles, CONV_WEIGHT_TILES)
#define CONV_WEIGHT_SET(h, w, m) (CONV_WEIGHT_GROUP(CONV_TILES_OF(h, w, m)) * CONV_TILES_OF(h, w, m))
#define CONV_WEIGHT_PLACES(c_in, c_out, h_out, w_out, m)                                        \
	(CONV_PLACES(m) * (CONV_PLACE(CONV_PACKED(c_out, CONV_WEIGHT_SET(h_out, w_out, m))) + \
			   CONV_PLACE(CONV_PACKED(c_in, CONV_WEIGHT_SET(h_out, w_out, m))) + CONV_PLACE(CONV_PRODUCT_ROWS(c_out) * (c_in))))
#define CONV_WEIGHT_WINOGRAD(c_in, h_in, w_in, c_out, h_out, w_out, k)                                                      \
	((k) == 3 ? CONV_MAX(CONV_WEIGHT_PLACES(c_in, c_out, h_out, w_out, 2), CONV_WEIGHT_PLACES(c_in, c_out, h_out, w_out, 4)) + \
			    CONV_ALIGN((c_out) * (h_out) * (w_out)) + CONV_PADDED(c_in, h_in, w_in, k)                                \
		  : 0)
#define CONV_WEIGHT_PART(c_in, h_in, w_in, c_out, h_out, w_out, k)                                                      \
	CONV_MAX(CONV_MAX(CONV_WEIGHT_FAST(c_in, h_in, w_in, c_out, h_out, w_out, k), CONV_REFERENCE(c_in, h_in, w_in, h_out, w_out, k)), \
		 CONV_WEIGHT_WINOGRAD(c_in, h_in, w_in, c_out, h_out, w_out, k))
/* dY of the images the backward pass takes at once, where BN's backward
 * left it to the convolution (batch_norm_deferred): one image, or a
 * group of Winograd's (for either tile). */
#define CONV_DEFERRED(c_out, h_out, w_out, k)                                                                       \
	CONV_ALIGN((c_out) * (h_out) * (w_out) *                                                                    \
		   ((k) == 3 ? CONV_MAX(CONV_GROUP(CONV_TILES_OF(h_out, w_out, 2), GEMM_PANEL_MAX),                 \
					CONV_GROUP(CONV_TILES_OF(h_out, w_out, 4), GEMM_PANEL_MAX))                 \
			     : 1))
#define CONV_SCRATCH(c_in, h_in, w_in, c_out, h_out, w_out, k)                                             \
	(CONV_ALIGN((c_out) * CONV_PATCH(c_in, k)) +                                                     \
	 CONV_MAX(CONV_FORWARD_PART(c_in, h_in, w_in, c_out, h_out, w_out, k),                           \
		  CONV_WEIGHT_PART(c_in, h_in, w_in, c_out, h_out, w_out, k) +                           \
			  CONV_DATA_PART(c_in, h_in, w_in, c_out, h_out, w_out, k) + CONV_DEFERRED(c_out, h_out, w_out, k)))
/* Where in a thread's scratch each part starts. */
#define CONV_PARTS_AT(s) CONV_ALIGN((s).c_out * CONV_PATCH((s).c_in, (s).k))
#define CONV_DATA_AT(s) (CONV_PARTS_AT(s) + CONV_WEIGHT_PART((s).c_in, (s).h_in, (s).w_in, (s).c_out, (s).h_out, (s).w_out, (s).k))
#define CONV_DEFERRED_AT(s) (CONV_DATA_AT(s) + CONV_DATA_PART((s).c_in, (s).h_in, (s).w_in, (s).c_out, (s).h_out, (s).w_out, (s).k))

/* The forward pass's epilogue: shortcut, if not NULL, a tensor of the
 * output's shape added to the convolution's output; sums, if not
 * NULL, where each output image's batch_norm_image_sums go. And where the
 * threads claim the images (conv_claim): n ints, zero, shared by them. */
struct conv_epilogue {
	const real *shortcut;
	double *sums;
	int *claims;
};

/* After output image i is computed (out: the image, which the
 * convolution set): the shortcut added, channel by channel, each channel
 * summed for BN while it is in the L1 cache. A copy of the shortcut into
 * the output for the convolution to add to (beta 1) took one more pass
 * over the image, and the micro-kernel's read of it back: ResNet-1001's
 * forward pass about 10 ms a step longer on one thread (the README's
 * Speed). Where the product is one sum (the micro-kernel's, Winograd's
 * output transform), it is the same sum, rounded once; the row split
 * and the reference's gemm, which add partial products, add the shortcut
 * after them. */
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

/* Whether a forward pass whose tensors, read and written over its n
 * images, come to reals reals should stage each output image in the
 * thread's scratch and stream it to memory from there (conv_stream_image),
 * rather than write it in place. Where they are larger than the
 * last-level cache, what the pass writes first is out of the cache by the
 * time anything reads it, and a plain store first reads each line it
 * writes from memory: streaming spares that read. On a 2-core Zen 4 (32 MiB of L3,
 * memory at 18 GB/s), preact-164's 16 -> 64 forward pass at 32 x 32
 * (72 MiB a call) took 89 to 114 ms a step streamed against 170 to 202
 * in place, four alternating pairs. Where the tensors fit, the next pass
 * may find what was written in the cache, and it is stored in place: the
 * Xeon's 260 MiB L3 holds any of the paper's networks' at batch 128, and
 * preact-110's (24 MiB a call) trained as fast on the Zen 4 streamed as
 * not, within the noise of four alternating pairs. conv_stream: -1
 * decides so (and conv_streams_gradient, below), 0 or 1 forces it (for
 * the tests). */
static int conv_stream = -1;

KERNEL_HELPER bool conv_streams(size_t reals)
{
	if (conv_stream >= 0)
		return conv_stream;
	size_t cache = cache_last_level_bytes();
	return cache && reals * sizeof(real) > cache;
}

/* Whether a convolution's data gradient, whose tensors come to reals
 * reals, should stage and stream the images it sets: where conv_streams
 * says, and wherever the two threads' cores have a last-level cache each
 * (cache_threads_apart: the Zen 4, at times; Speed, in the README). The
 * plan gives a gradient the slot of gradients no longer needed, of other
 * sizes, so that the lines an image's gradient is set in were mostly
 * written by the other thread, for other images, a pass or two before;
 * with a cache each, a plain store first fetches each line from the
 * other's. ResNet-1001 at batch 16, whose tensors fit the cache,
 * alternating runs: with a cache each, the data gradients took 433 to
 * 470 ms a step in place, 248 to 263 streamed (the step 1111 to 1194 ->
 * 894 to 934); with one cache, six alternating pairs, 233 to 237 in
 * place against 252 to 255 streamed (the step 840 to 864 against 865 to
 * 892; BN's passes after them, reading the gradients from the cache, 28
 * to 30 against 36 to 41); preact-110's and preact-164's steps within the
 * noise either way. The verdict is the last check's, at the start of the
 * backward pass: a move between placements during a pass is seen at the
 * next. */
KERNEL_HELPER bool conv_streams_gradient(size_t reals)
{
	return conv_stream >= 0 ? conv_stream : cache_threads_apart() || conv_streams(reals);
}

/* One non-temporal store of CONV_STREAM_BYTES from from to to (aligned
 * to them): a whole line where the build has AVX-512 (on the Zen 4, the
 * store loop of a 64 -> 16 channel data gradient took a sixth of its pass
 * with SSE2's 16 bytes a store), else 32 bytes with AVX, else 16 with
 * SSE2, which every x86-64 has. */
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

/* max(x * scale + shift, 0): BN-apply, then ReLU */
KERNEL_HELPER real conv_activated(real x, real scale, real shift)
{
	real y = x * scale + shift;
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

/* out[t] = in[t] for t < count, activated by channel c's prologue if pre
 * is not NULL. The plain copy is a simd loop for the same reason: with a
 * plain loop, a 1x1 convolution of 64 -> 16 channels at 32x32 packed
 * whole without a prologue (as the data gradient's were) took 43 us an
 * image against 36 (one thread, one image, in the cache). */
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
 * conv_backward_data and their references) are called by every thread of
 * a parallel region that the kernel instance opens, so that they are
 * inlined there with the instance's constant shape; the references share
 * the images with orphaned omp for loops. Every pass shares the images
 * by thread_share (kernels.h), a fixed contiguous share a thread, so
 * that a thread reads back from its own caches what it wrote in the pass
 * before (elementwise passes share them alike, by omp for's static
 * schedule).
 * The weight gradient's sums add each thread's images, and must not
 * depend on which thread took which; but what the forward pass computes
 * of an image, output and BN's sums, and what conv_backward's data
 * gradient does, is that image's alone, and there a thread done with its
 * own share takes the groups of images the others have not reached
 * (conv_next_group), so that a thread a neighbour on the machine slowed
 * is helped rather than waited for. The forward pass used to hand its
 * groups out in turn as the threads came free (omp for, dynamic), so
 * that most images were read by the other thread than wrote them: where
 * the hypervisor put the two cores on chiplets with a last-level cache
 * each (a cache line's round trip between them 365 to 390 ns against 55
 * to 80 on one chiplet; the machine moves between the two for minutes at
 * a time), preact-164's forward convolutions took 417 / 426 ms a step
 * against 383 / 375 by shares, preact-110's 219 / 220 / 241 against
 * 193 / 195 / 203. */

/* Whether the calling thread is the first to claim the group of images
 * from first (claims: an int an image, zero, shared by the threads). */
KERNEL_HELPER bool conv_claim(int *claims, int first) { return __atomic_exchange_n(&claims[first], 1, __ATOMIC_ACQ_REL) == 0; }

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
	int threads = omp_get_num_threads();
	while (g->first < g->from || g->first >= g->to || !conv_claim(claims, g->first)) {
		if (++g->other >= threads)
			return false;
		thread_share_of(g->n, (omp_get_thread_num() + g->other) % threads, &g->from, &g->to);
		g->first = g->to > g->from ? g->from + (g->to - 1 - g->from) / g->group * g->group : g->from - 1;
	}
	*first = g->first;
	*count = g->to - g->first < g->group ? g->to - g->first : g->group;
	g->first += g->other ? -g->group : g->group;
	return true;
}

/* ---- reference kernels: im2col, then one gemm per image ---- */

/* columns (C * K * K, H_OUT * W_OUT) of one image (C, H, W); zero outside */
KERNEL_HELPER void conv_im2col(real *columns, const real *image, int channels, int height, int width, int kernel_size, int stride, int height_out, int width_out)
{
	int pad = kernel_size / 2;
	for (int c = 0; c < channels; c++)
		for (int ky = 0; ky < kernel_size; ky++)
			for (int kx = 0; kx < kernel_size; kx++) {
				real *row = columns + ((size_t)(c * kernel_size + ky) * kernel_size + kx) * height_out * width_out;
				int lo, hi;
				conv_inside(&lo, &hi, kx, pad, stride, width, width_out);
				for (int oy = 0; oy < height_out; oy++) {
					int y = oy * stride - pad + ky;
					real *out = row + oy * width_out;
					if (y < 0 || y >= height) {
						memset(out, 0, sizeof(real) * width_out);
						continue;
					}
					const real *in = image + ((size_t)c * height + y) * width - pad + kx;
					for (int ox = 0; ox < lo; ox++)
						out[ox] = 0;
					for (int ox = lo; ox < hi; ox++)
						out[ox] = in[ox * stride];
					for (int ox = hi; ox < width_out; ox++)
						out[ox] = 0;
				}
			}
}

/* image (C, H, W) += the columns folded back onto the pixels they came from */
KERNEL_HELPER void conv_col2im_add(real *image, const real *columns, int channels, int height, int width, int kernel_size, int stride, int height_out, int width_out)
{
	int pad = kernel_size / 2;
	for (int c = 0; c < channels; c++)
		for (int ky = 0; ky < kernel_size; ky++)
			for (int kx = 0; kx < kernel_size; kx++) {
				const real *row = columns + ((size_t)(c * kernel_size + ky) * kernel_size + kx) * height_out * width_out;
				int lo, hi;
				conv_inside(&lo, &hi, kx, pad, stride, width, width_out);
				for (int oy = 0; oy < height_out; oy++) {
					int y = oy * stride - pad + ky;
					if (y < 0 || y >= height)
						continue;
					real *out = image + ((size_t)c * height + y) * width - pad + kx;
					const real *in = row + oy * width_out;
					for (int ox = lo; ox < hi; ox++)
						out[ox * stride] += in[ox];
				}
			}
}

/* out (n, C_OUT, H_OUT, W_OUT) = conv(in (n, C_IN, H_IN, W_IN), weight (C_OUT, C_IN, K, K)), then the epilogue */
KERNEL_HELPER void conv_forward_reference(real *out, const real *in, const real *weight, const real *pre, struct conv_epilogue epilogue, int n, struct conv_shape s, real *scratch, size_t scratch_per_thread)
{
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	bool direct = s.k == 1 && s.stride == 1; /* the image is its own columns */
	real *own = scratch + (size_t)omp_get_thread_num() * scratch_per_thread + CONV_ALIGN(s.c_out * patch);
	real *activated = own + CONV_ALIGN(patch * pixels);
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++) {
		const real *image = conv_activate(activated, in + (size_t)i * s.c_in * s.h_in * s.w_in, pre, s.c_in, s.h_in * s.w_in);
		const real *columns = image;
		if (!direct) {
			conv_im2col(own, image, s.c_in, s.h_in, s.w_in, s.k, s.stride, s.h_out, s.w_out);
			columns = own;
		}
		/* Y(i) (C_OUT, PIXELS) = W (C_OUT, PATCH) . columns (PATCH, PIXELS) */
		real *result = out + (size_t)i * s.c_out * pixels;
		gemm(0, 0, s.c_out, pixels, patch, 1, weight, patch, columns, pixels, 0, result, pixels);
		conv_epilogue_end(epilogue, result, i, s);
	}
}

/* Where a kernel keeps dW[co][c][ky][kx] in its own sum: at
 * co * co + c * c + ky * ky + kx * kx (these strides). */
struct conv_strides {
	int co, c, ky, kx;
};

/* dW (C_OUT, C_IN, K, K) += the threads' sums, added in thread order; each
 * thread's own sum sits at the start of its scratch, laid out by own. Sums
 * laid out as dW is (OIHW), or as a 1x1 convolution's transposed (C_IN,
 * C_OUT), are added a run of reals at a time, each thread's run after the
 * other's, which vectorises; taken element by element, with an index
 * divided into (co, c, ky, kx) for each, this took 1.3% of ResNet-1001's
 * step, and the transposed 1x1 sums 41 us a call for 256 x 64 channels. */
enum { CONV_SUM_RUN = 256 };

/* to[j] += the sum over threads of their own + from + j, j < count */
KERNEL_HELPER void conv_sum_run(real *to, const real *scratch, size_t scratch_per_thread, size_t from, int count)
{
	int threads = omp_get_num_threads();
	for (int first = 0; first < count; first += CONV_SUM_RUN) {
		int run = count - first < CONV_SUM_RUN ? count - first : CONV_SUM_RUN;
		real sum[CONV_SUM_RUN] = {0};
		for (int t = 0; t < threads; t++) {
			const real *part = scratch + (size_t)t * scratch_per_thread + from + first;
			for (int j = 0; j < run; j++)
				sum[j] += part[j];
		}
		for (int j = 0; j < run; j++)
			to[first + j] += sum[j];
	}
}

KERNEL_HELPER void conv_sum_weight_gradients(real *dweight, const real *scratch, size_t scratch_per_thread, struct conv_shape s, struct conv_strides own)
{
	int threads = omp_get_num_threads(), patch = CONV_PATCH(s.c_in, s.k);
	bool oihw = own.co == patch && own.c == s.k * s.k && (s.k == 1 || (own.ky == s.k && own.kx == 1)); /* a 1x1's ky, kx: any */
	if (s.k == 1 && own.co == 1 && own.c == s.c_out) {
		/* (C_IN, C_OUT): blocks of 16 x 16, read and written a line at a
		 * time (a column of dW at a time, its reals 1 KiB apart for 256
		 * input channels, shared a set of the L1 cache: 36 us a call for
		 * 256 x 64 channels, 9 now) */
		enum { SIDE = 16 };
		#pragma omp for schedule(static)
		for (int c0 = 0; c0 < s.c_in; c0 += SIDE)
			for (int co0 = 0; co0 < s.c_out; co0 += SIDE) {
				int columns = s.c_in - c0 < SIDE ? s.c_in - c0 : SIDE, rows = s.c_out - co0 < SIDE ? s.c_out - co0 : SIDE;
				real sum[SIDE][SIDE] = {0}; /* [c][co] */
				for (int t = 0; t < threads; t++)
					for (int j = 0; j < columns; j++) {
						const real *part = scratch + (size_t)t * scratch_per_thread + (size_t)(c0 + j) * s.c_out + co0;
						for (int i = 0; i < rows; i++)
							sum[j][i] += part[i];
					}
				for (int i = 0; i < rows; i++)
					for (int j = 0; j < columns; j++)
						dweight[(size_t)(co0 + i) * s.c_in + c0 + j] += sum[j][i];
			}
		return;
	}
	#pragma omp for schedule(static)
	for (int co = 0; co < s.c_out; co++) {
		real *to = dweight + (size_t)co * patch;
		if (oihw) {
			conv_sum_run(to, scratch, scratch_per_thread, (size_t)co * patch, patch);
			continue;
		}
		for (int c = 0; c < s.c_in; c++)
			for (int ky = 0; ky < s.k; ky++)
				for (int kx = 0; kx < s.k; kx++) {
					size_t from = (size_t)co * own.co + (size_t)c * own.c + (size_t)ky * own.ky + (size_t)kx * own.kx;
					real sum = 0;
					for (int t = 0; t < threads; t++)
						sum += scratch[(size_t)t * scratch_per_thread + from];
					to[(c * s.k + ky) * s.k + kx] += sum;
				}
	}
}

/* own += dY(i) . columns(X(i))^T for one image; columns, activated: this
 * thread's scratch for them. */
KERNEL_HELPER void conv_weight_gradient_reference_image(real *own, const real *dy, const real *image, const real *pre, struct conv_shape s, real *columns, real *activated)
{
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	bool direct = s.k == 1 && s.stride == 1;
	image = conv_activate(activated, image, pre, s.c_in, s.h_in * s.w_in);
	if (!direct)
		conv_im2col(columns, image, s.c_in, s.h_in, s.w_in, s.k, s.stride, s.h_out, s.w_out);
	gemm(0, 1, s.c_out, patch, pixels, 1, dy, pixels, direct ? image : columns, pixels, 1, own, patch);
}

/* dweight += sum over images of dY(i) . columns(X(i))^T */
KERNEL_HELPER void conv_weight_gradient_reference(real *dweight, const real *dout, const real *in, const real *pre, int n, struct conv_shape s, real *scratch, size_t scratch_per_thread)
{
	int patch = CONV_PATCH(s.c_in, s.k);
	real *dweight_own = scratch + (size_t)omp_get_thread_num() * scratch_per_thread;
	real *columns = dweight_own + CONV_PARTS_AT(s);
	memset(dweight_own, 0, sizeof(real) * s.c_out * patch);
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++)
		conv_weight_gradient_reference_image(dweight_own, dout + (size_t)i * s.c_out * s.h_out * s.w_out, in + (size_t)i * s.c_in * s.h_in * s.w_in, pre, s,
						     columns, columns + CONV_ALIGN(patch * s.h_out * s.w_out));
	conv_sum_weight_gradients(dweight, scratch, scratch_per_thread, s, (struct conv_strides){patch, s.k * s.k, s.k, 1});
}

/* dimage (+)= W^T . dy for one image, folded back onto the pixels the
 * columns came from; dcolumns: this thread's scratch for the columns. */
KERNEL_HELPER void conv_data_gradient_reference_image(real *dimage, const real *dy, const real *weight, struct conv_shape s, real *dcolumns, enum gradient_write write)
{
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	if (s.k == 1 && s.stride == 1) { /* the image is its own columns */
		gemm(1, 0, patch, pixels, s.c_out, 1, weight, patch, dy, pixels, write == GRADIENT_ADD, dimage, pixels);
		return;
	}
	if (write == GRADIENT_SET)
		memset(dimage, 0, sizeof(real) * s.c_in * s.h_in * s.w_in);
	gemm(1, 0, patch, pixels, s.c_out, 1, weight, patch, dy, pixels, 0, dcolumns, pixels);
	conv_col2im_add(dimage, dcolumns, s.c_in, s.h_in, s.w_in, s.k, s.stride, s.h_out, s.w_out);
}

/* din (+)= W^T . dY(i) for every image */
KERNEL_HELPER void conv_data_gradient_reference(real *din, const real *dout, const real *weight, int n, struct conv_shape s, real *scratch, size_t scratch_per_thread, enum gradient_write write)
{
	real *dcolumns = scratch + (size_t)omp_get_thread_num() * scratch_per_thread + CONV_ALIGN(s.c_out * CONV_PATCH(s.c_in, s.k));
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++)
		conv_data_gradient_reference_image(din + (size_t)i * s.c_in * s.h_in * s.w_in, dout + (size_t)i * s.c_out * s.h_out * s.w_out, weight, s, dcolumns, write);
}

/* ---- fast kernels: packed panels on BLIS's micro-kernel ---- */

/* One block of C = (channels x pixels) on the micro-kernel: the weight
 * panel on the side of C's rows if the kernel prefers row-stored C (the
 * channel's pixels are contiguous), on the side of its columns if not. */
KERNEL_HELPER void conv_tile(const struct gemm_micro *micro, int channels, int pixels, int k, const real *channel_panel, const real *pixel_panel, real beta, real *c, long channel_stride, long pixel_stride)
{
	if (micro->prefers_rows)
		gemm_micro_tile(channels, pixels, k, channel_panel, pixel_panel, beta, c, channel_stride, pixel_stride);
	else
		gemm_micro_tile(pixels, channels, k, pixel_panel, channel_panel, beta, c, pixel_stride, channel_stride);
}

/* Where panel b (of width rows of k reals) starts in a packed operand. */
KERNEL_HELPER size_t conv_panel_at(int c0, int width, int k) { return (size_t)(c0 / width) * CONV_ALIGN(width * k); }

/* The panel widths: channels along one side of the kernel's block, pixels along the other. */
KERNEL_HELPER int conv_channel_width(const struct gemm_micro *micro) { return micro->prefers_rows ? micro->mr : micro->nr; }
KERNEL_HELPER int conv_pixel_width(const struct gemm_micro *micro) { return micro->prefers_rows ? micro->nr : micro->mr; }

/* Weights (channels, patch) as panels of width channel rows: panel b holds,
 * for each p, weight[b * width + i][p] for i < width (zero past the last
 * channel). flipped: the weights of the data gradient's convolution, whose
 * channels are the forward's inputs: weight'[ci][(co, ky, kx)] =
 * weight[co][ci][K - 1 - ky][K - 1 - kx]. */
KERNEL_HELPER void conv_pack_weights(real *packed, const real *weight, int channels, int patch, int width, bool flipped, struct conv_shape s)
{
	int kk = s.k * s.k;
	for (int c0 = 0; c0 < channels; c0 += width) {
		real *panel = packed + conv_panel_at(c0, width, patch);
		for (int p = 0; p < patch; p++) {
			/* channel c's entry p at base + c * step; flipped: p = (co, ky, kx), c = ci */
			size_t base = flipped ? (size_t)(p / kk) * s.c_in * kk + (kk - 1 - p % kk) : (size_t)p;
			size_t step = flipped ? (size_t)kk : (size_t)patch;
			for (int i = 0; i < width; i++)
				panel[(size_t)p * width + i] = c0 + i < channels ? weight[base + (c0 + i) * step] : 0;
		}
	}
}

/* One image (C, H, W) as packing reads it, without bounds: copied
 * (activated by the prologue, if any) into the middle of padded
 * (C, H + 2 pad, W + 2 pad), whose border was zeroed once; or, with no
 * border and no prologue (a 1x1 convolution), the image itself. */
KERNEL_HELPER const real *conv_pad(real *padded, const real *image, const real *pre, int channels, int height, int width, int pad)
{
	if (pad == 0 && !pre)
		return image;
	int padded_width = width + 2 * pad;
	for (int c = 0; c < channels; c++)
		for (int y = 0; y < height; y++) {
			real *to = padded + ((size_t)c * (height + 2 * pad) + y + pad) * padded_width + pad;
			const real *from = image + ((size_t)c * height + y) * width;
			if (pre)
				conv_activate_run(to, from, width, pre[c], pre[channels + c]);
			else
				memcpy(to, from, sizeof(real) * width);
		}
	return padded;
}

/* The columns of output pixels [first, first + count) of one padded image,
 * as a panel: for each p = (c, ky, kx), width reals, zero past count. The
 * pixels run along output rows; each row's run reads one input row. pre,
 * if not NULL, activates what is read (a 1x1 convolution's prologue,
 * applied here rather than by conv_pad: one pass over the image fewer). */
KERNEL_HELPER void conv_pack_pixels(real *panel, const real *padded, const real *pre, struct conv_shape s, int first, int count, int width)
{
	int pad = s.k / 2, padded_height = s.h_in + 2 * pad, padded_width = s.w_in + 2 * pad;
	for (int j = 0; j < count;) {
		int oy = (first + j) / s.w_out, ox = (first + j) % s.w_out;
		int run = s.w_out - ox < count - j ? s.w_out - ox : count - j;
		const real *source = padded + (size_t)oy * s.stride * padded_width + ox * s.stride;
		for (int c = 0; c < s.c_in; c++)
			for (int ky = 0; ky < s.k; ky++)
				for (int kx = 0; kx < s.k; kx++) {
					real *out = panel + (size_t)((c * s.k + ky) * s.k + kx) * width + j;
					const real *in = source + ((size_t)c * padded_height + ky) * padded_width + kx;
					if (pre && run == width)
						for (int t = 0; t < width; t++)
							out[t] = conv_activated(in[t * s.stride], pre[c], pre[s.c_in + c]);
					else if (pre)
						for (int t = 0; t < run; t++)
							out[t] = conv_activated(in[t * s.stride], pre[c], pre[s.c_in + c]);
					else if (run == width) /* the usual case, a constant-length copy */
						for (int t = 0; t < width; t++)
							out[t] = in[t * s.stride];
					else
						for (int t = 0; t < run; t++)
							out[t] = in[t * s.stride];
				}
		j += run;
	}
	if (count < width)
		for (int p = 0; p < CONV_PATCH(s.c_in, s.k); p++)
			for (int j = count; j < width; j++)
				panel[(size_t)p * width + j] = 0;
}

/* A stride-1 1x1 convolution's columns are its image (C, PIXELS): a panel
 * of width pixels from first is every channel's run of them, one after
 * the other (activated by pre, if not NULL). Those runs lie a channel
 * apart, more streams than the hardware prefetches, so the runs
 * CONV_PANELS_AHEAD panels on are fetched as each is packed. Packed whole
 * instead, a channel's row at a time into a buffer of the image's size,
 * before any product (conv_pack_image_panels), the images of 16 x 16 and
 * 32 x 32 pixels ran slower; by panel without the fetches, as fast as
 * whole (64 -> 16 at 32x32: 37.5 to 40.7 us an image against 38 to 40),
 * in huge pages or not. Those of 8 x 8, whose rows hold only four panels
 * of 16 and leave the fetches little to run ahead of, ran faster whole,
 * and are still packed so: an image is packed a panel at a time if it has
 * 16 panels or more. On zen3's kernels, one thread, 256 images (from
 * memory), us an image, whole -> by panel: forward, BN and ReLU applied,
 * 64 -> 16 channels at 32x32 38.7 -> 32.6, 128 -> 32 at 16x16 31.9 ->
 * 29.3, 16 -> 64 at 32x32 37 -> 33.6, 256 -> 64 at 8x8 25.2 -> 26.4;
 * plain copy (the data gradient), 64 -> 16 at 32x32 45 -> 32.5. */
enum { CONV_PANELS_AHEAD = 2, CONV_LINE = 64 / sizeof(real) };
KERNEL_HELPER bool conv_packs_by_panel(int pixels, int width) { return pixels >= 16 * width; }
KERNEL_HELPER void conv_pack_run_panel(real *panel, const real *image, const real *pre, int channels, int pixels, int first, int width)
{
	int ahead = first + CONV_PANELS_AHEAD * width;
	for (int c = 0; c < channels; c++) {
		const real *row = image + (size_t)c * pixels;
		if (ahead < pixels)
			for (int l = 0; l < width; l += CONV_LINE)
				__builtin_prefetch(row + ahead + l, 0, 1);
		conv_read_run(panel + (size_t)c * width, row + first, width, pre, c, channels);
	}
}

/* The same image as all its panels at once, a channel's row at a time,
 * each row read in one run: the images of fewer than 16 panels. With a
 * prologue, the row two channels on is fetched as this one is packed, as
 * when 32 x 32 images were packed here too (their 4 KiB rows end where
 * the hardware's prefetch stops; 64 -> 16 forward, one thread, 42.6 ->
 * 37.3 us an image); for the smaller images now packed here it was not
 * measured again. */
enum { CONV_PREFETCH_ROWS = 2 };
KERNEL_HELPER void conv_pack_image_panels(real *panels, const real *image, const real *pre, int channels, int pixels, int width)
{
	for (int c = 0; c < channels; c++) {
		const real *row = image + (size_t)c * pixels;
		const real *ahead = pre && c + CONV_PREFETCH_ROWS < channels ? row + (size_t)CONV_PREFETCH_ROWS * pixels : NULL;
		for (int first = 0; first < pixels; first += width) {
			if (ahead)
				__builtin_prefetch(ahead + first, 0, 2);
			conv_read_run(panels + (size_t)first * channels + (size_t)c * width, row + first, width, pre, c, channels);
		}
	}
}

/* out (C_OUT, PIXELS) = beta out + W . columns(image), from the image
 * padded by conv_pad (activated by pre while packed, if not NULL) and W
 * packed by conv_pack_weights. Panel widths the machines have are passed
 * as constants, so their copies unroll. whole, if not NULL, has room for
 * a stride-1 1x1 convolution's image: a small one's panels are packed
 * there at once where they fill it whole, 64-byte aligned. */
KERNEL_HELPER void conv_implicit_gemm_of(real *out, const real *padded, const real *pre, const real *packed, real *panel, real *whole, struct conv_shape s, real beta, const struct gemm_micro *micro, int pixel_width)
{
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	int channel_width = conv_channel_width(micro);
	bool runs = s.k == 1 && s.stride == 1 && pixels % pixel_width == 0;
	bool by_panel = runs && conv_packs_by_panel(pixels, pixel_width);
	bool at_once = runs && !by_panel && whole && patch * pixel_width % 16 == 0;
	if (at_once)
		conv_pack_image_panels(whole, padded, pre, s.c_in, pixels, pixel_width);
	for (int first = 0; first < pixels; first += pixel_width) {
		int count = pixels - first < pixel_width ? pixels - first : pixel_width;
		const real *columns = at_once ? whole + (size_t)first * patch : panel;
		if (by_panel)
			conv_pack_run_panel(panel, padded, pre, s.c_in, pixels, first, pixel_width);
		else if (!at_once)
			conv_pack_pixels(panel, padded, pre, s, first, count, pixel_width);
		for (int c0 = 0; c0 < s.c_out; c0 += channel_width) {
			int channels = s.c_out - c0 < channel_width ? s.c_out - c0 : channel_width;
			conv_tile(micro, channels, count, patch, packed + conv_panel_at(c0, channel_width, patch), columns, beta,
				  out + (size_t)c0 * pixels + first, pixels, 1);
		}
	}
}

/* The row split of a stride-1 convolution that keeps the image's size:
 * with Y[(co, ky)] = sum over (ci, kx) of W[co][ci][ky][kx] X(ci, kx),
 * X(ci, kx) taken at every row of the padded image, the output is
 * out[co][y][x] = sum over ky of Y[(co, ky)][y + ky][x]. The GEMM then has
 * K times as many rows of C and K times shorter sums, over a few more
 * pixels (the padded rows). It pays when the channels fill the kernel's
 * block badly: 16 channels take two blocks of 12 on a 32 x 12 kernel,
 * 48 rows take four. conv_row_split: -1 chooses by the count of
 * micro-kernel steps (with a tenth's margin for adding the rows up), 0
 * or 1 forces it (for the tests). */
static int conv_row_split = -1;

KERNEL_HELPER bool conv_splits_rows(const struct gemm_micro *micro, struct conv_shape s)
{
	if (s.k == 1 || s.stride != 1 || s.h_out != s.h_in || s.w_out != s.w_in)
		return false;
	if (conv_row_split >= 0)
		return conv_row_split;
	int channel_width = conv_channel_width(micro), pixel_width = conv_pixel_width(micro);
	int pixels = s.h_out * s.w_out, row_pixels = (s.h_in + s.k - 1) * s.w_out;
	double plain = (double)((s.c_out + channel_width - 1) / channel_width) * ((pixels + pixel_width - 1) / pixel_width) * CONV_PATCH(s.c_in, s.k);
	double split = (double)((s.c_out * s.k + channel_width - 1) / channel_width) * ((row_pixels + pixel_width - 1) / pixel_width) * s.c_in * s.k;
	return split * 1.1 < plain;
}

/* The weights for the row split, as conv_pack_weights packs them, with
 * rows v = (co, ky) and, along each panel, p = (ci, kx). */
KERNEL_HELPER void conv_pack_weights_split(real *packed, const real *weight, int channels, int inputs, int width, bool flipped, struct conv_shape s)
{
	int k = s.k, kk = k * k, rows = channels * k, patch = inputs * k;
	for (int v0 = 0; v0 < rows; v0 += width) {
		real *panel = packed + conv_panel_at(v0, width, patch);
		for (int p = 0; p < patch; p++)
			for (int i = 0; i < width; i++) {
				int v = v0 + i, c_in = p / k, kx = p % k, c = v / k, ky = v % k;
				real value = 0;
				if (v < rows && !flipped)
					value = weight[((size_t)c * s.c_in + c_in) * kk + ky * k + kx];
				else if (v < rows) /* c: a forward input channel, c_in a forward output channel */
					value = weight[((size_t)c_in * s.c_in + c) * kk + (k - 1 - ky) * k + (k - 1 - kx)];
				panel[(size_t)p * width + i] = value;
			}
	}
}

/* Pixels [first, first + count) of the padded rows (every row of the
 * padded image, the output's columns) as a panel: for each p = (c, kx),
 * width reals, zero past count. */
KERNEL_HELPER void conv_pack_row_pixels(real *panel, const real *padded, struct conv_shape s, int first, int count, int width)
{
	int pad = s.k / 2, padded_height = s.h_in + 2 * pad, padded_width = s.w_in + 2 * pad;
	for (int j = 0; j < count;) {
		int y = (first + j) / s.w_out, x = (first + j) % s.w_out;
		int run = s.w_out - x < count - j ? s.w_out - x : count - j;
		const real *source = padded + (size_t)y * padded_width + x;
		for (int c = 0; c < s.c_in; c++)
			for (int kx = 0; kx < s.k; kx++) {
				real *out = panel + (size_t)(c * s.k + kx) * width + j;
				const real *in = source + (size_t)c * padded_height * padded_width + kx;
				if (run == width) /* the usual case, a constant-length copy */
					memcpy(out, in, sizeof(real) * width);
				else
					memcpy(out, in, sizeof(real) * run);
			}
		j += run;
	}
	if (count < width)
		for (int p = 0; p < s.c_in * s.k; p++)
			memset(panel + (size_t)p * width + count, 0, sizeof(real) * (width - count));
}

/* out (C_OUT, PIXELS) = beta out + the convolution, by the row split:
 * rows (the partial outputs) first, then their sums. */
KERNEL_HELPER void conv_implicit_gemm_split_of(real *out, const real *padded, const real *packed, real *panel, real *rows, struct conv_shape s, real beta, const struct gemm_micro *micro, int pixel_width)
{
	int patch = s.c_in * s.k, channels = s.c_out * s.k, channel_width = conv_channel_width(micro);
	int pixels = s.h_out * s.w_out, row_pixels = (s.h_in + s.k - 1) * s.w_out;
	for (int first = 0; first < row_pixels; first += pixel_width) {
		int count = row_pixels - first < pixel_width ? row_pixels - first : pixel_width;
		conv_pack_row_pixels(panel, padded, s, first, count, pixel_width);
		for (int v0 = 0; v0 < channels; v0 += channel_width) {
			int block = channels - v0 < channel_width ? channels - v0 : channel_width;
			conv_tile(micro, block, count, patch, packed + conv_panel_at(v0, channel_width, patch), panel, 0,
				  rows + (size_t)v0 * row_pixels + first, row_pixels, 1);
		}
	}
	/* out[co] (+)= the sum over ky of rows[(co, ky)] from padded row ky on */
	for (int c = 0; c < s.c_out; c++) {
		real *to = out + (size_t)c * pixels;
		for (int ky = 0; ky < s.k; ky++) {
			const real *from = rows + (size_t)(c * s.k + ky) * row_pixels + (size_t)ky * s.w_out;
			if (ky == 0 && beta == 0)
				memcpy(to, from, sizeof(real) * pixels);
			else
				for (int q = 0; q < pixels; q++)
					to[q] += from[q];
		}
	}
}

/* Eight reals as one vector (one register or two, as the machine has):
 * the unit of the transposes that packing for the weight gradient needs,
 * whose operands both run along the pixels in memory, and Winograd's
 * F(4x4) forward tiles, transformed along the channels. */
typedef real conv_vector __attribute__((vector_size(8 * sizeof(real))));
typedef __typeof__((conv_vector){0} > (conv_vector){0}) conv_mask; /* a comparison's lanes */

/* Sixteen reals as one vector (one to four registers, as the machine
 * has): Winograd's transforms run on sixteen channels at a time, and where
 * that is one register (f32 with AVX-512), the transposes below run on
 * 16 x 16 blocks. */
enum { CONV_LANES = 16 };
typedef real conv_lanes __attribute__((vector_size(CONV_LANES * sizeof(real))));
typedef __typeof__((conv_lanes){0} > (conv_lanes){0}) conv_lanes_mask;

/* to[l] = from[l] for l < count (up to 16), in pieces of constant size,
 * which are plain moves. */
KERNEL_HELPER void conv_copy_lanes(real *to, const real *from, int count)
{
	int l = 0;
	if (count & 16) {
		memcpy(to, from, sizeof(real) * 16);
		return;
	}
	if (count & 8) {
		memcpy(to, from, sizeof(real) * 8);
		l = 8;
	}
	if (count & 4) {
		memcpy(to + l, from + l, sizeof(real) * 4);
		l += 4;
	}
	if (count & 2) {
		memcpy(to + l, from + l, sizeof(real) * 2);
		l += 2;
	}
	if (count & 1)
		to[l] = from[l];
}

/* out[q * width + j] = 0 for j < length, for pixels q < pixels; a
 * constant length makes each a few vector stores. */
KERNEL_HELPER void conv_zero_run(real *out, int width, int pixels, int length)
{
	for (int q = 0; q < pixels; q++, out += width)
		memset(out, 0, sizeof(real) * length);
}

/* out[t * out_stride + i] = rows[i * row_stride + t] for t < 8 and
 * i < stored, zero for the rows from valid on: an 8 x 8 block transposed
 * in registers (interleave pairs of rows, then pairs of pairs, then
 * halves). With pre, row i is activated first:
 * max(x * pre[i] + pre[pre_shift + i], 0). */
KERNEL_HELPER void conv_transpose8(real *out, long out_stride, const real *rows, long row_stride, int valid, int stored, const real *pre, int pre_shift)
{
	conv_vector r[8], t[8], u[8];
	for (int i = 0; i < 8; i++)
		if (i < valid) {
			memcpy(&r[i], rows + i * row_stride, sizeof r[i]);
			if (pre) {
				r[i] = r[i] * pre[i] + pre[pre_shift + i];
				r[i] = (conv_vector)((conv_mask)r[i] & (r[i] > 0));
			}
		} else {
			r[i] = (conv_vector){0};
		}
	for (int i = 0; i < 8; i += 2) {
		t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
		t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
	}
	for (int i = 0; i < 8; i += 4)
		for (int h = 0; h < 2; h++) {
			u[i + 2 * h] = __builtin_shufflevector(t[i + h], t[i + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
			u[i + 2 * h + 1] = __builtin_shufflevector(t[i + h], t[i + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
		}
	for (int i = 0; i < 4; i++) {
		r[i] = __builtin_shufflevector(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
		r[i + 4] = __builtin_shufflevector(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
	}
	for (int i = 0; i < 8; i++) {
		if (stored == 8) { /* the usual case */
			memcpy(out + i * out_stride, &r[i], sizeof r[i]);
			continue;
		}
		real lanes[16]; /* as many as conv_copy_lanes may copy */
		memcpy(lanes, &r[i], sizeof r[i]);
		conv_copy_lanes(out + i * out_stride, lanes, stored);
	}
}

/* rows within [0, most]: the rows of a block that hold channels */
KERNEL_HELPER int conv_clamp(int rows, int most) { return rows < 0 ? 0 : rows > most ? most : rows; }

/* Whether conv_pack_channels transposes 16 x 16 blocks in one piece
 * (conv_transpose16): with AVX-512 in f32, where a row is one register,
 * that takes 64 shuffles, against 96 and twice the loads and stores for
 * four 8 x 8 blocks. One thread packing 64 channels of a 32 x 32 image
 * with BN + ReLU, us an image: 8.4 against 13.4 from the cache, 12.8
 * against 16.9 from a tensor of 128 images (32 MiB, as the network's),
 * 23.6 against 22.8 from 1024 (memory-bound either way); 128 channels at
 * 16 x 16 from 128 images, 6.1 against 6.4. Elsewhere (AVX2, or f64, whose
 * 16 lanes are two registers or more) the 8 x 8 blocks serve. */
#if defined(__AVX512F__) && !defined(RESGEN_F64)
enum { CONV_TRANSPOSE16 = 1 };
#else
enum { CONV_TRANSPOSE16 = 0 };
#endif

/* out[t * out_stride + i] = rows[i * row_stride + t] for t < 16 and
 * i < 16, zero for the rows from valid on; with pre, as conv_transpose8.
 * Four rounds of interleaving pairs of rows: of single lanes, of pairs,
 * of quarters (128 bits), of halves; after them, vector k holds column
 * k's bits reversed (0, 8, 4, 12, ...). */
KERNEL_HELPER void conv_transpose16(real *out, long out_stride, const real *rows, long row_stride, int valid, const real *pre, int pre_shift)
{
	static const int column[16] = {0, 8, 4, 12, 1, 9, 5, 13, 2, 10, 6, 14, 3, 11, 7, 15};
	conv_lanes r[16], t[16];
	for (int i = 0; i < 16; i++)
		if (i < valid) {
			memcpy(&r[i], rows + i * row_stride, sizeof r[i]);
			if (pre) {
				r[i] = r[i] * pre[i] + pre[pre_shift + i];
				r[i] = (conv_lanes)((conv_lanes_mask)r[i] & (r[i] > 0));
			}
		} else {
			r[i] = (conv_lanes){0};
		}
	for (int i = 0; i < 16; i += 2) {
		t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29);
		t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31);
	}
	for (int i = 0; i < 16; i += 4)
		for (int h = 0; h < 2; h++) {
			r[i + 2 * h] = __builtin_shufflevector(t[i + h], t[i + h + 2], 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
			r[i + 2 * h + 1] = __builtin_shufflevector(t[i + h], t[i + h + 2], 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
		}
	for (int i = 0; i < 16; i += 8)
		for (int h = 0; h < 4; h++) {
			t[i + 2 * h] = __builtin_shufflevector(r[i + h], r[i + h + 4], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
			t[i + 2 * h + 1] = __builtin_shufflevector(r[i + h], r[i + h + 4], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
		}
	for (int h = 0; h < 8; h++) {
		r[2 * h] = __builtin_shufflevector(t[h], t[h + 8], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
		r[2 * h + 1] = __builtin_shufflevector(t[h], t[h + 8], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
	}
	for (int k = 0; k < 16; k++)
		memcpy(out + column[k] * out_stride, &r[k], sizeof r[k]);
}

/* One image (C, H, W) copied (activated by the prologue, if any) into the
 * middle of a (H + 2 pad, W + 2 pad, C) buffer, whose border was zeroed
 * once: pixel by pixel, the channels innermost, so that each pixel's
 * channels are one run for the weight gradient's patches. Eight channels
 * of eight pixels are transposed at a time when the rows come in eights,
 * along the row before the next eight channels: the eight rows read lie
 * a channel apart, 4 KiB in a 32 x 32 image, in one set of the L1 cache,
 * and with the next channels read first they were evicted before the
 * next pixels (one thread, 16x32x32: 6.2 against 2.8 us an image).
 * 16 x 16 blocks (conv_transpose16) were slower here: 16 channels at 32 x
 * 32, 2.8 against 3.2 us an image, 32 at 16 x 16, 2.1 against 4.2 (the
 * images from the cache); their rows are stored a pixel's channels apart,
 * where a panel's are a panel's width apart. */
KERNEL_HELPER void conv_pad_transposed(real *padded, const real *image, const real *pre, int channels, int height, int width, int pad)
{
	int padded_width = width + 2 * pad;
	for (int y = 0; y < height; y++) {
		real *row = padded + ((size_t)(y + pad) * padded_width + pad) * channels;
		if (width % 8 != 0) {
			for (int c = 0; c < channels; c++) {
				const real *from = image + ((size_t)c * height + y) * width;
				for (int x = 0; x < width; x++)
					row[(size_t)x * channels + c] = pre ? conv_activated(from[x], pre[c], pre[channels + c]) : from[x];
			}
			continue;
		}
		for (int c = 0; c < channels; c += 8) {
			int valid = conv_clamp(channels - c, 8);
			const real *rows = image + ((size_t)c * height + y) * width, *rows_pre = pre ? pre + c : NULL;
			long row_stride = (long)height * width;
			if (valid == 8)
				for (int x = 0; x < width; x += 8)
					conv_transpose8(row + (size_t)x * channels + c, channels, rows + x, row_stride, 8, 8, rows_pre, channels);
			else
				for (int x = 0; x < width; x += 8)
					conv_transpose8(row + (size_t)x * channels + c, channels, rows + x, row_stride, valid, valid, rows_pre, channels);
		}
	}
}

/* The 1-D transforms of F(m, 3), m 2 or 4, from in[j * in_step] to
 * out[j * out_step], sixteen channels (or channel pairs) at a time: the
 * gradient's A y (m to m + 2), the input's B^T d (m + 2 to m + 2), and the
 * sums' G^T t (m + 2 to 3). */
KERNEL_HELPER void conv_winograd_gradient_1d(conv_lanes *out, int out_step, const conv_lanes *y, int in_step, int m)
{
	conv_lanes y0 = y[0], y1 = y[in_step];
	if (m == 2) {
		out[0] = y0;
		out[out_step] = y0 + y1;
		out[2 * out_step] = y0 - y1;
		out[3 * out_step] = -y1;
		return;
	}
	conv_lanes y2 = y[2 * in_step], y3 = y[3 * in_step];
	conv_lanes even = y0 + y2, odd = y1 + y3, even4 = y0 + 4 * y2, odd4 = 2 * y1 + 8 * y3;
	out[0] = y0;
	out[out_step] = even + odd;
	out[2 * out_step] = even - odd;
	out[3 * out_step] = even4 + odd4;
	out[4 * out_step] = even4 - odd4;
	out[5 * out_step] = y3;
}

KERNEL_HELPER void conv_winograd_input_1d(conv_lanes *out, int out_step, const conv_lanes *d, int in_step, int m)
{
	conv_lanes d0 = d[0], d1 = d[in_step], d2 = d[2 * in_step], d3 = d[3 * in_step];
	if (m == 2) {
		out[0] = d0 - d2;
		out[out_step] = d1 + d2;
		out[2 * out_step] = d2 - d1;
		out[3 * out_step] = d1 - d3;
		return;
	}
	conv_lanes d4 = d[4 * in_step], d5 = d[5 * in_step];
	out[0] = 4 * d0 - 5 * d2 + d4;
	out[out_step] = (d3 + d4) - 4 * (d1 + d2);
	out[2 * out_step] = (d4 - d3) + 4 * (d1 - d2);
	out[3 * out_step] = (d4 - d2) + 2 * (d3 - d1);
	out[4 * out_step] = (d4 - d2) - 2 * (d3 - d1);
	out[5 * out_step] = 4 * d1 - 5 * d3 + d5;
}

KERNEL_HELPER void conv_winograd_back_1d(conv_lanes *out, int out_step, const conv_lanes *t, int in_step, int m)
{
	conv_lanes t0 = t[0], t1 = t[in_step], t2 = t[2 * in_step], t3 = t[3 * in_step];
	if (m == 2) {
		out[0] = t0 + (t1 + t2) / 2;
		out[out_step] = (t1 - t2) / 2;
		out[2 * out_step] = (t1 + t2) / 2 + t3;
		return;
	}
	conv_lanes t4 = t[4 * in_step], t5 = t[5 * in_step];
	out[0] = t0 / 4 - (t1 + t2) / 6 + (t3 + t4) / 24;
	out[out_step] = (t2 - t1) / 6 + (t3 - t4) / 12;
	out[2 * out_step] = (t3 + t4 - t1 - t2) / 6 + t5;
}

/* The transformed tile v[e] (e = (m + 2) i + j: the transform's row i,
 * column j) of sixteen channels, lanes of them valid (the rest zero), of
 * an image with its channels innermost, rows row pixels apart, from at,
 * the tile's first pixel. gradient: the image is dY, A y A^T of the m x m
 * tile y; else the input padded by one, B^T d B of the (m + 2) x (m + 2)
 * block d. */
KERNEL_HELPER void conv_winograd_tile_transform(conv_lanes *v, const real *at, int channels, int row, int lanes, bool gradient, int m)
{
	enum { MOST = 6 }; /* m + 2 at most */
	int n = m + 2, size = gradient ? m : n;
	conv_lanes d[MOST][MOST], b[MOST][MOST];
	for (int y = 0; y < size; y++)
		for (int x = 0; x < size; x++) {
			const real *from = at + ((size_t)y * row + x) * channels;
			if (lanes == CONV_LANES) {
				memcpy(&d[y][x], from, sizeof d[y][x]);
			} else {
				real partial[CONV_LANES] = {0};
				conv_copy_lanes(partial, from, lanes);
				memcpy(&d[y][x], partial, sizeof partial);
			}
		}
	for (int x = 0; x < size; x++) /* down each column */
		if (gradient)
			conv_winograd_gradient_1d(&b[0][x], MOST, &d[0][x], MOST, m);
		else
			conv_winograd_input_1d(&b[0][x], MOST, &d[0][x], MOST, m);
	for (int k = 0; k < n; k++) /* along each row */
		if (gradient)
			conv_winograd_gradient_1d(&v[n * k], 1, b[k], 1, m);
		else
			conv_winograd_input_1d(&v[n * k], 1, b[k], 1, m);
}

/* Winograd's minimal filtering (Lavin and Gray, "Fast Algorithms for
 * Convolutional Neural Networks", 2016), for a stride-1 3x3 convolution
 * that keeps the image's size, both sides even. Each m x m block of output
 * pixels (a tile) comes from the n x n block d (n = m + 2) of the padded
 * input around it, channel by channel, as
 *     Y = A^T [ sum over input channels of (G g G^T) .* (B^T d B) ] A,
 * g the 3x3 kernel. The sums are n^2 matrix products, one per place
 * e = n i + j of the transformed tile,
 *     M[e] (C_OUT, TILES) = U[e] (C_OUT, C_IN) . V[e] (C_IN, TILES),
 * run on the micro-kernel as the other kernels are. Tiles of 2 x 2,
 * F(2x2, 3x3): 16 multiply-adds a tile and channel pair for 4 outputs
 * (the direct sums take 36), with
 *     B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
 *     A^T = [1 1 1 0; 0 1 -1 -1],  G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1];
 * or of 4 x 4, F(4x4, 3x3): 36 for 16 outputs, with
 *     B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0;
 *            0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1],
 *     A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1],
 *     G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6;
 *            1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1].
 * Either rounds differently from the direct sums (F(4x4)'s transforms
 * scale by up to 8 and 1/24 along each side); tests/test_kernels.c holds
 * both to the same bound against the reference kernel. The tiles of up
 * to CONV_WINOGRAD_GROUP images make one set of products where one image
 * has fewer than a panel's width (preact-110's 8 x 8 images: 16 tiles of
 * 2 x 2, 4 of 4 x 4, panels of 32 on skx): alone, half the panels' lanes
 * ran empty, and Winograd was no faster than the direct convolution there.
 * conv_winograd: -1 uses it where a group's tiles fill at least one panel
 * and their panels at least half, 0 or 1 forces it off or on where it
 * applies (for the tests). */
static int conv_winograd = -1;

KERNEL_HELPER bool conv_winograd_applies(struct conv_shape s)
{
	return s.k == 3 && s.stride == 1 && s.h_out == s.h_in && s.w_out == s.w_in && s.h_in % 2 == 0 && s.w_in % 2 == 0;
}

/* Whether Winograd applies with tiles of m x m, and the tile a shape
 * takes, in all three passes: 4 x 4 where the image's sides are multiples
 * of 4, else 2 x 2. A rule of the shape alone, so that an instance
 * compiles the transforms of one tile only (both, inlined in each of
 * ResNet-1001's instances, took its net.c from 53 s to 68 s to compile).
 * An 8x8 image has only 4 tiles of 4 x 4: the forward pass and the data
 * gradient take them in groups of images (CONV_GROUP), the weight
 * gradient's products sum over the tiles of several (CONV_WEIGHT_GROUP).
 * So, for 64 x 64 channels at 8x8, one thread, zen3's kernels, us an
 * image forward / data gradient / weight gradient: 22.0 / 21.3 / 24.9
 * against F(2x2)'s 36.2 / 36.1 / 37.1 (the weight gradient summing 4
 * images' tiles at a time, as then; an image's 4 tiles alone: 44.0).
 * conv_winograd_tile: -1 for the rule, 2 or 4 forces one where it applies
 * (for the tests). */
static int conv_winograd_tile = -1;

KERNEL_HELPER bool conv_winograd_tile_applies(struct conv_shape s, int m)
{
	return conv_winograd_applies(s) && s.h_out % m == 0 && s.w_out % m == 0;
}

KERNEL_HELPER int conv_winograd_tile_for(struct conv_shape s)
{
	if (conv_winograd_tile > 0 && conv_winograd_tile_applies(s, conv_winograd_tile))
		return conv_winograd_tile;
	return conv_winograd_tile_applies(s, 4) ? 4 : 2;
}

/* function(..., m) with shape s's tile m, 2 or 4, as a constant, for the
 * transforms to fold (as CONV_WITH_PIXEL_WIDTH passes a panel's width). */
#define CONV_WITH_WINOGRAD_TILE(s, function, ...)              \
	do {                                                   \
		if (conv_winograd_tile_for(s) == 4)            \
			function(__VA_ARGS__, 4);              \
		else                                           \
			function(__VA_ARGS__, 2);              \
	} while (0)

/* The forward pass's 1-D transforms of F(m, 3), m 2 or 4, from
 * in[j * in_step] to out[j * out_step]: the kernel's G g (3 to m + 2),
 * a kernel at a time, and the products' A^T q (m + 2 to m), eight tiles
 * at a time. */
KERNEL_HELPER void conv_winograd_kernel_1d(conv_lanes *out, int out_step, const conv_lanes *g, int in_step, int m)
{
	conv_lanes g0 = g[0], g1 = g[in_step], g2 = g[2 * in_step];
	if (m == 2) {
		out[0] = g0;
		out[out_step] = (g0 + g1 + g2) / 2;
		out[2 * out_step] = (g0 - g1 + g2) / 2;
		out[3 * out_step] = g2;
		return;
	}
	out[0] = g0 / 4;
	out[out_step] = -(g0 + g1 + g2) / 6;
	out[2 * out_step] = -(g0 - g1 + g2) / 6;
	out[3 * out_step] = g0 / 24 + g1 / 12 + g2 / 6;
	out[4 * out_step] = g0 / 24 - g1 / 12 + g2 / 6;
	out[5 * out_step] = g2;
}

KERNEL_HELPER void conv_winograd_output_1d(conv_vector *out, int out_step, const conv_vector *q, int in_step, int m)
{
	conv_vector q0 = q[0], q1 = q[in_step], q2 = q[2 * in_step], q3 = q[3 * in_step];
	if (m == 2) {
		out[0] = q0 + q1 + q2;
		out[out_step] = q1 - q2 - q3;
		return;
	}
	conv_vector q4 = q[4 * in_step], q5 = q[5 * in_step];
	conv_vector even = q1 + q2, odd = q1 - q2, even34 = q3 + q4, odd34 = q3 - q4;
	out[0] = q0 + even + even34;
	out[out_step] = odd + 2 * odd34;
	out[2 * out_step] = even + 4 * even34;
	out[3 * out_step] = odd + 8 * odd34 + q5;
}

/* U[e] = G g G^T for each kernel g, packed for each place e as
 * conv_pack_weights packs a (channels, inputs) matrix, place after place.
 * flipped: the data gradient's kernels, as conv_pack_weights flips them.
 * Sixteen kernels at a time, transformed as vectors: those of sixteen
 * consecutive reals of a panel (width channels of an input, then the
 * next input's), so that each place's are stored as one vector. A kernel
 * at a time, the divisions by 6, 12 and 24 took 52 us a call for 32 x 32
 * channels, 89 flipped: as long as the weight gradient of one of
 * ResNet-1001's images. Each lane computes what that code did, in the
 * same order; the rows past the last channel come out zero, if -0. */
KERNEL_HELPER void conv_pack_weights_winograd(real *packed, const real *weight, int channels, int inputs, int width, bool flipped, struct conv_shape s, int m)
{
	enum { MOST = 6 }; /* m + 2 at most */
	int n = m + 2, size = inputs * width;
	size_t place = CONV_PLACE(CONV_PACKED(channels, inputs));
	for (int c0 = 0; c0 < channels; c0 += width) {
		real *panel = packed + conv_panel_at(c0, width, inputs);
		for (int j0 = 0, p = 0, i = 0; j0 < size; j0 += CONV_LANES) {
			int lanes = size - j0 < CONV_LANES ? size - j0 : CONV_LANES;
			real values[9][CONV_LANES] = {0};
			for (int l = 0; l < lanes; l++) { /* real j0 + l of the panel: channel c0 + i of input p */
				int c = c0 + i;
				for (int k = 0; k < 9 && c < channels; k++)
					values[k][l] = flipped ? weight[((size_t)p * s.c_in + c) * 9 + 8 - k] : weight[((size_t)c * s.c_in + p) * 9 + k];
				if (++i == width) {
					i = 0;
					p++;
				}
			}
			conv_lanes g[9], t[MOST * 3], u[MOST * MOST];
			memcpy(g, values, sizeof g);
			for (int x = 0; x < 3; x++) /* G g, down each column */
				conv_winograd_kernel_1d(&t[x], 3, &g[x], 3, m);
			for (int y = 0; y < n; y++) /* (G g) G^T, along each row */
				conv_winograd_kernel_1d(&u[n * y], 1, &t[3 * y], 1, m);
			for (int e = 0; e < n * n; e++)
				conv_copy_lanes(panel + e * place + j0, (const real *)&u[e], lanes);
		}
	}
}

/* V[e] = B^T d B of every tile of one padded image, packed for each place
 * e as panels of width tiles (the pixels of the other kernels), place
 * after place, as tiles first, first + 1, ... of a set of total tiles
 * (its group's, conv_winograd_of): F(2x2)'s, from the image padded by
 * conv_pad. CONV_WINOGRAD_ROWS rows of tiles at a time: B^T d of each,
 * whole rows, then (B^T d) B of each in vectors along it. The second pass
 * reads what the first stored at other offsets; a row at a time, each read
 * came straight after the stores it overlaps, waited for them to reach
 * the cache (store forwarding fails), and the transform took 3 to 5 times
 * as long. */
enum { CONV_WINOGRAD_ROWS = 4 };

KERNEL_HELPER void conv_winograd_input(real *v, const real *padded, struct conv_shape s, int width, int first, int total)
{
	int padded_width = s.w_in + 2, padded_height = s.h_in + 2, across = s.w_in / 2;
	size_t place = CONV_PLACE(CONV_PACKED(total, s.c_in));
	real rows[CONV_WINOGRAD_ROWS][4][padded_width]; /* B^T d of rows of tiles */
	for (int c = 0; c < s.c_in; c++)
		for (int ty0 = 0; ty0 < s.h_in / 2; ty0 += CONV_WINOGRAD_ROWS) {
			int count = s.h_in / 2 - ty0 < CONV_WINOGRAD_ROWS ? s.h_in / 2 - ty0 : CONV_WINOGRAD_ROWS;
			for (int k = 0; k < count; k++) {
				const real *d0 = padded + ((size_t)c * padded_height + 2 * (ty0 + k)) * padded_width;
				const real *d1 = d0 + padded_width, *d2 = d1 + padded_width, *d3 = d2 + padded_width;
				for (int x = 0; x < padded_width; x++) {
					rows[k][0][x] = d0[x] - d2[x];
					rows[k][1][x] = d1[x] + d2[x];
					rows[k][2][x] = d2[x] - d1[x];
					rows[k][3][x] = d1[x] - d3[x];
				}
			}
			for (int k = 0; k < count; k++)
				for (int tx = 0; tx < across;) { /* (B^T d) B, a run of tiles in one panel at a time */
					int tile = first + (ty0 + k) * across + tx, at = tile % width;
					int run = across - tx < width - at ? across - tx : width - at;
					real *to = v + conv_panel_at(tile, width, s.c_in) + (size_t)c * width + at;
					for (int i = 0; i < 4; i++) {
						const real *r = rows[k][i] + 2 * tx;
						real *restrict o0 = to + 4 * i * place, *restrict o1 = o0 + place, *restrict o2 = o1 + place,
							       *restrict o3 = o2 + place;
						for (int j = 0; j < run; j++) {
							o0[j] = r[2 * j] - r[2 * j + 2];
							o1[j] = r[2 * j + 1] + r[2 * j + 2];
							o2[j] = r[2 * j + 2] - r[2 * j + 1];
							o3[j] = r[2 * j + 1] - r[2 * j + 3];
						}
					}
					tx += run;
				}
		}
}

/* (ty, tx) moved on by step tiles in rows of across tiles. */
KERNEL_HELPER void conv_next_tile(int *ty, int *tx, int step, int across)
{
	for (*tx += step; *tx >= across; *tx -= across)
		++*ty;
}

/* Row i of the pixels of eight consecutive tiles of an image (lanes of
 * them), the first at row ty and column tx of tiles, y[j] their pixel
 * (i, j), lane l for the l-th tile: image[m ty + i][m tx + j] (+)= y[j][l]
 * for each tile (ty, tx). The lanes interleaved in registers, the pixels
 * of 8 / m tiles a vector, where those lie in one row of tiles; else one
 * by one. */
KERNEL_HELPER void conv_winograd_store_row(real *image, const conv_vector *y, int i, int ty, int tx, int lanes, bool add, struct conv_shape s, int m)
{
	int across = s.w_out / m;
	if ((lanes == 8 || lanes == 4) && across % (8 / m) == 0 && tx % (8 / m) == 0) {
		conv_vector p[4];
		if (m == 2) {
			p[0] = __builtin_shufflevector(y[0], y[1], 0, 8, 1, 9, 2, 10, 3, 11);
			p[1] = __builtin_shufflevector(y[0], y[1], 4, 12, 5, 13, 6, 14, 7, 15);
		} else {
			conv_vector low01 = __builtin_shufflevector(y[0], y[1], 0, 8, 1, 9, 2, 10, 3, 11);
			conv_vector high01 = __builtin_shufflevector(y[0], y[1], 4, 12, 5, 13, 6, 14, 7, 15);
			conv_vector low23 = __builtin_shufflevector(y[2], y[3], 0, 8, 1, 9, 2, 10, 3, 11);
			conv_vector high23 = __builtin_shufflevector(y[2], y[3], 4, 12, 5, 13, 6, 14, 7, 15);
			p[0] = __builtin_shufflevector(low01, low23, 0, 1, 8, 9, 2, 3, 10, 11);
			p[1] = __builtin_shufflevector(low01, low23, 4, 5, 12, 13, 6, 7, 14, 15);
			p[2] = __builtin_shufflevector(high01, high23, 0, 1, 8, 9, 2, 3, 10, 11);
			p[3] = __builtin_shufflevector(high01, high23, 4, 5, 12, 13, 6, 7, 14, 15);
		}
		for (int k = 0; k < lanes * m / 8; k++, conv_next_tile(&ty, &tx, 8 / m, across)) {
			real *to = image + (size_t)(m * ty + i) * s.w_out + m * tx;
			if (add) {
				conv_vector old;
				memcpy(&old, to, sizeof old);
				p[k] += old;
			}
			memcpy(to, &p[k], sizeof p[k]);
		}
		return;
	}
	real pixels[4][8];
	memcpy(pixels, y, sizeof(real) * 8 * m);
	for (int l = 0; l < lanes; l++, conv_next_tile(&ty, &tx, 1, across)) {
		real *to = image + (size_t)(m * ty + i) * s.w_out + m * tx;
		for (int j = 0; j < m; j++)
			to[j] = add ? to[j] + pixels[j][l] : pixels[j][l];
	}
}

/* v = the reals from[l], l < lanes (up to 8), zero past them:
 * read as a vector where they make one or half of one. Copied lane by
 * lane to memory, the vector read from there waits for those writes to
 * reach the cache, and an 8x8 image's four tiles of 4 x 4 took twice as
 * long to transform back. */
typedef real conv_half __attribute__((vector_size(4 * sizeof(real))));

KERNEL_HELPER void conv_load_lanes(conv_vector *v, const real *from, int lanes)
{
	if (lanes == 8) {
		memcpy(v, from, sizeof *v);
	} else if (lanes == 4) {
		conv_half half;
		memcpy(&half, from, sizeof half);
		*v = __builtin_shufflevector(half, (conv_half){0}, 0, 1, 2, 3, 4, 5, 6, 7);
	} else {
		real values[16] = {0}; /* as many as conv_copy_lanes may copy */
		conv_copy_lanes(values, from, lanes);
		memcpy(v, values, sizeof *v);
	}
}

/* out (+)= A^T q A of every tile, q the tile's products (tiles first,
 * first + 1, ... of a set of total): eight tiles of an image at a time,
 * as vectors, then the pixels of each of their m rows interleaved in
 * registers, eight at a time (conv_winograd_store_row). */
KERNEL_HELPER void conv_winograd_output(real *out, const real *products, size_t place, struct conv_shape s, real beta, int first, int total, int m)
{
	enum { MOST = 6 }; /* m + 2 at most */
	int n = m + 2, tiles = CONV_TILES_OF(s.h_out, s.w_out, m), across = s.w_out / m;
	for (int c = 0; c < s.c_out; c++)
		for (int t0 = 0, ty = 0, tx = 0; t0 < tiles; t0 += 8, conv_next_tile(&ty, &tx, 8, across)) {
			int lanes = tiles - t0 < 8 ? tiles - t0 : 8;
			const real *q = products + (size_t)c * total + first + t0;
			conv_vector tile[MOST * MOST], a[MOST][MOST], y[4][4];
			for (int e = 0; e < n * n; e++)
				conv_load_lanes(&tile[e], q + e * place, lanes);
			for (int j = 0; j < n; j++) /* A^T q, down each column */
				conv_winograd_output_1d(&a[0][j], MOST, &tile[j], n, m);
			for (int i = 0; i < m; i++) /* (A^T q) A, along each row */
				conv_winograd_output_1d(y[i], 1, a[i], 1, m);
			for (int i = 0; i < m; i++)
				conv_winograd_store_row(out + (size_t)c * s.h_out * s.w_out, y[i], i, ty, tx, lanes, beta != 0, s, m);
		}
}

/* Each place's channels of count transformed tiles (batch: tile i's place
 * e at tile_stride i + e lanes) into their panel rows at to, eight
 * channels of the tiles at a time transposed. One call for each count
 * that comes as a constant, and the places' loop in it, so that GCC keeps
 * one pointer for the rows: with the cases inside the loop, it kept one
 * for each row of each case, 32 of them, on the stack, and the adds to
 * them took about a third of the transform's time. */
KERNEL_HELPER void conv_winograd_store_tiles(real *to, size_t place, int width, const conv_lanes *batch, long tile_stride, int places, int lanes, int count)
{
	int whole = lanes / 8 * 8;
	for (int e = 0; e < places; e++) {
		const real *rows = (const real *)&batch[e];
		real *panel_rows = to + e * place;
		for (int h = 0; h < whole; h += 8)
			conv_transpose8(panel_rows + (size_t)h * width, width, rows + h, tile_stride, count, count, NULL, 0);
		for (int l = whole; l < lanes; l++) /* the last few channels */
			for (int i = 0; i < count; i++)
				panel_rows[(size_t)l * width + i] = rows[i * tile_stride + l];
	}
}

/* V[e] as conv_winograd_input packs it, for tiles of m x m, from the image
 * padded by conv_pad_transposed (pixel by pixel, its channels innermost):
 * sixteen channels of up to eight tiles at a time transformed as vectors
 * (conv_winograd_tile_transform), then each place's eight channels of
 * those tiles transposed into their panel (conv_transpose8). Where a
 * panel is sixteen tiles wide and sixteen reals are one register
 * (CONV_TRANSPOSE16: zen3's kernels in f32 with AVX-512), sixteen tiles at
 * a time, each place's 16 x 16 block transposed in one piece and its
 * panel rows stored as whole cache lines: one thread, 32 images, us an
 * image, the 16-channel forward pass at 32 x 32 35.0 -> 33.4 and its data
 * gradient 35.8 -> 33.8 (32 channels at 16 x 16 about 1% faster). */
KERNEL_SHARED void conv_winograd_input_tiles(real *v, const real *padded, struct conv_shape s, int width, int first, int total, int m)
{
	enum { MOST = 36, BATCH = CONV_TRANSPOSE16 ? 16 : 8 }; /* places at most; tiles at a time, at most */
	int n = m + 2, places = n * n, across = s.w_in / m, tiles = CONV_TILES_OF(s.h_in, s.w_in, m), row = s.w_in + 2;
	size_t place = CONV_PLACE(CONV_PACKED(total, s.c_in));
	long tile_stride = MOST * CONV_LANES; /* reals from one tile's place to the next tile's */
	conv_lanes batch[BATCH][MOST];
	for (int c = 0; c < s.c_in; c += CONV_LANES) {
		int lanes = s.c_in - c < CONV_LANES ? s.c_in - c : CONV_LANES;
		for (int t = 0, ty = 0, tx = 0; t < tiles;) {
			/* a run of tiles in one panel, the first at row ty and column tx of tiles */
			int tile = first + t, at = tile % width;
			int count = tiles - t < width - at ? tiles - t : width - at;
			int most = CONV_TRANSPOSE16 && width == 16 && lanes == 16 ? 16 : 8;
			count = count < most ? count : most;
			for (int i = 0; i < count; i++, conv_next_tile(&ty, &tx, 1, across))
				conv_winograd_tile_transform(batch[i], padded + ((size_t)m * ty * row + m * tx) * s.c_in + c, s.c_in, row, lanes, false, m);
			real *to = v + conv_panel_at(tile, width, s.c_in) + (size_t)c * width + at;
			if (count == 16) /* a whole panel of sixteen channels */
				for (int e = 0; e < places; e++)
					conv_transpose16(to + e * place, width, (const real *)&batch[0][e], tile_stride, 16, NULL, 0);
			else if (count == 8) /* the usual case elsewhere, with constants */
				conv_winograd_store_tiles(to, place, width, &batch[0][0], tile_stride, places, lanes, 8);
			else if (count == 4) /* an 8x8 image's four tiles */
				conv_winograd_store_tiles(to, place, width, &batch[0][0], tile_stride, places, lanes, 4);
			else
				conv_winograd_store_tiles(to, place, width, &batch[0][0], tile_stride, places, lanes, count);
			t += count;
		}
	}
}

/* The rows of Winograd's products, in all three passes: the output
 * channels, rounded up to whole blocks of width (the micro-kernel's side
 * they lie on) where that adds at most an eighth of them (the room
 * CONV_PRODUCT_ROWS keeps). The packed
 * operand's rows past the channels are zeros, and the products' rows past
 * them are never read. BLIS computes a block of fewer rows into a
 * temporary and copies it out: on zen3's 6 x 16 blocks, one thread, a
 * place's products of 16 x 16 channels took 1.6 us for 192 tiles as rows
 * of 6 + 6 + 4 against 1.33 as 6 + 6 + 6 (the forward pass), 0.132
 * against 0.115 summed over 16 tiles (the weight gradient). */
KERNEL_HELPER int conv_block_rows(int channels, int width)
{
	int whole = (channels + width - 1) / width * width;
	return 8 * (whole - channels) <= channels ? whole : channels;
}

/* out (C_OUT, PIXELS) = beta out + the convolution, by Winograd with tiles
 * of m x m, of each of count consecutive images of in (a group:
 * CONV_GROUP): each padded (activated by pre, if not NULL) and its tiles
 * transformed (V, at tiles_of) in turn, the products of the group's tiles
 * (M, after V), the products transformed back into each image's out.
 * F(4x4)'s tiles are transformed from the image with its channels
 * innermost, as vectors along them: from the rows, as F(2x2)'s, its
 * transform reads every fourth pixel. */
KERNEL_HELPER void conv_winograd_of(real *out, const real *in, const real *pre, real *padded, const real *packed, real *tiles_of, int count, struct conv_shape s, real beta, const struct gemm_micro *micro, int pixel_width, int m)
{
	int tiles = CONV_TILES_OF(s.h_in, s.w_in, m), total = count * tiles, places = CONV_PLACES(m);
	int channel_width = conv_channel_width(micro), rows = conv_block_rows(s.c_out, channel_width);
	size_t weight_place = CONV_PLACE(CONV_PACKED(s.c_out, s.c_in)), tile_place = CONV_PLACE(CONV_PACKED(total, s.c_in));
	size_t product_place = CONV_PLACE(rows * total);
	real *v = tiles_of, *products = v + places * tile_place;
	for (int g = 0; g < count; g++) {
		const real *image = in + (size_t)g * s.c_in * s.h_in * s.w_in;
		if (m == 2) {
			conv_winograd_input(v, conv_pad(padded, image, pre, s.c_in, s.h_in, s.w_in, 1), s, pixel_width, g * tiles, total);
		} else {
			conv_pad_transposed(padded, image, pre, s.c_in, s.h_in, s.w_in, 1);
			conv_winograd_input_tiles(v, padded, s, pixel_width, g * tiles, total, m);
		}
	}
	if (total % pixel_width) /* zero past the last tile */
		for (int e = 0; e < places; e++)
			for (int c = 0; c < s.c_in; c++)
				memset(v + e * tile_place + conv_panel_at(total, pixel_width, s.c_in) + (size_t)c * pixel_width + total % pixel_width,
				       0, sizeof(real) * (pixel_width - total % pixel_width));
	for (int e = 0; e < places; e++)
		for (int first = 0; first < total; first += pixel_width) {
			int tile_count = total - first < pixel_width ? total - first : pixel_width;
			const real *panel = v + e * tile_place + conv_panel_at(first, pixel_width, s.c_in);
			for (int c0 = 0; c0 < rows; c0 += channel_width) {
				int channels = rows - c0 < channel_width ? rows - c0 : channel_width;
				conv_tile(micro, channels, tile_count, s.c_in, packed + e * weight_place + conv_panel_at(c0, channel_width, s.c_in),
					  panel, 0, products + e * product_place + (size_t)c0 * total + first, total, 1);
			}
		}
	for (int g = 0; g < count; g++)
		conv_winograd_output(out + (size_t)g * s.c_out * s.h_out * s.w_out, products, product_place, s, beta, g * tiles, total, m);
}

/* conv_winograd_of with the shape's tile as a constant. */
KERNEL_HELPER void conv_winograd_tiled(real *out, const real *in, const real *pre, real *padded, const real *packed, real *tiles_of, int count, struct conv_shape s, real beta, const struct gemm_micro *micro, int pixel_width)
{
	CONV_WITH_WINOGRAD_TILE(s, conv_winograd_of, out, in, pre, padded, packed, tiles_of, count, s, beta, micro, pixel_width);
}

/* How a stride-1 convolution that keeps its size runs on the fast path. */
enum conv_method { CONV_PLAIN, CONV_ROW_SPLIT, CONV_WINOGRAD };

/* How many images a group of Winograd's has, and their tiles. */
KERNEL_HELPER int conv_winograd_group(const struct gemm_micro *micro, struct conv_shape s)
{
	return CONV_GROUP(CONV_TILES_OF(s.h_in, s.w_in, conv_winograd_tile_for(s)), conv_pixel_width(micro));
}

KERNEL_HELPER enum conv_method conv_method_for(const struct gemm_micro *micro, struct conv_shape s)
{
	if (conv_winograd_applies(s)) {
		/* a group's tiles fill a panel at least, its panels half at least */
		int width = conv_pixel_width(micro);
		int set = conv_winograd_group(micro, s) * CONV_TILES_OF(s.h_in, s.w_in, conv_winograd_tile_for(s));
		int panels = (set + width - 1) / width;
		if (conv_winograd == 1 || (conv_winograd < 0 && set >= width && 2 * set >= panels * width))
			return CONV_WINOGRAD;
	}
	return conv_splits_rows(micro, s) ? CONV_ROW_SPLIT : CONV_PLAIN;
}

/* The weights packed for a method; flipped: for the data gradient, whose
 * convolution has the forward's inputs for channels. */
KERNEL_HELPER void conv_pack_weights_for(real *packed, const real *weight, enum conv_method method, bool flipped, const struct gemm_micro *micro, struct conv_shape s)
{
	int channels = flipped ? s.c_in : s.c_out, inputs = flipped ? s.c_out : s.c_in, width = conv_channel_width(micro);
	if (method == CONV_WINOGRAD)
		CONV_WITH_WINOGRAD_TILE(s, conv_pack_weights_winograd, packed, weight, channels, inputs, width, flipped, s);
	else if (method == CONV_ROW_SPLIT)
		conv_pack_weights_split(packed, weight, channels, inputs, width, flipped, s);
	else
		conv_pack_weights(packed, weight, channels, CONV_PATCH(inputs, s.k), width, flipped, s);
}

/* function(arguments..., width) with the micro-kernel's pixel panel width,
 * passed as a constant when it is one the machines have (skx's kernels and
 * haswell's: 32 and 16 reals in f32, 16 and 8 in f64), so that the
 * packing copies unroll; each constant is another copy of the packing in
 * every instance (ResNet-1001's net.c took 9 s longer to compile with all
 * three in both precisions). */
#ifdef RESGEN_F64
#define CONV_WIDE_PIXELS 16
#define CONV_NARROW_PIXELS 8
#else
#define CONV_WIDE_PIXELS 32
#define CONV_NARROW_PIXELS 16
#endif
#define CONV_WITH_PIXEL_WIDTH(micro, function, ...)                          \
	do {                                                                 \
		switch (conv_pixel_width(micro)) {                           \
		case CONV_NARROW_PIXELS:                                     \
			function(__VA_ARGS__, CONV_NARROW_PIXELS);           \
			break;                                               \
		case CONV_WIDE_PIXELS:                                       \
			function(__VA_ARGS__, CONV_WIDE_PIXELS);             \
			break;                                               \
		default:                                                     \
			function(__VA_ARGS__, conv_pixel_width(micro));      \
		}                                                            \
	} while (0)

/* The convolution of count consecutive images of in (a group: more than
 * one only for Winograd's, conv_group_of) by method, the weights packed
 * for it, each image padded into padded in turn; pre, if not NULL: the
 * prologue. rows: the row split's partial outputs or Winograd's tiles. */
KERNEL_HELPER void conv_group(real *out, const real *in, const real *pre, real *padded, const real *packed, real *panel, real *rows, enum conv_method method, int count, struct conv_shape s, real beta, const struct gemm_micro *micro)
{
	/* A 1x1 convolution reads its input only while packing, so that is
	 * where its prologue goes; a wider one pads the image, activated, first. */
	const real *packing_pre = s.k == 1 ? pre : NULL, *padding_pre = s.k == 1 ? NULL : pre;
	if (method == CONV_WINOGRAD) {
		CONV_WITH_PIXEL_WIDTH(micro, conv_winograd_tiled, out, in, padding_pre, padded, packed, rows, count, s, beta, micro);
		return;
	}
	for (int g = 0; g < count; g++) {
		const real *image = conv_pad(padded, in + (size_t)g * s.c_in * s.h_in * s.w_in, padding_pre, s.c_in, s.h_in, s.w_in, s.k / 2);
		real *result = out + (size_t)g * s.c_out * s.h_out * s.w_out;
		if (method == CONV_ROW_SPLIT)
			CONV_WITH_PIXEL_WIDTH(micro, conv_implicit_gemm_split_of, result, image, packed, panel, rows, s, beta, micro);
		else
			CONV_WITH_PIXEL_WIDTH(micro, conv_implicit_gemm_of, result, image, packing_pre, packed, panel,
					      s.k == 1 ? padded : NULL, s, beta, micro);
	}
}

/* The images a group of a method has: CONV_GROUP for Winograd's, else one. */
KERNEL_HELPER int conv_group_of(const struct gemm_micro *micro, enum conv_method method, struct conv_shape s)
{
	return method == CONV_WINOGRAD ? conv_winograd_group(micro, s) : 1;
}

KERNEL_HELPER void conv_forward(real *out, const real *in, const real *weight, const real *pre, struct conv_epilogue epilogue, int n, struct conv_shape s, real *scratch, size_t scratch_per_thread)
{
	const struct gemm_micro *micro = gemm_micro();
	if (!micro) {
		conv_forward_reference(out, in, weight, pre, epilogue, n, s, scratch, scratch_per_thread);
		return;
	}
	int patch = CONV_PATCH(s.c_in, s.k);
	enum conv_method method = conv_method_for(micro, s);
	int group = conv_group_of(micro, method, s);
	size_t in_size = (size_t)s.c_in * s.h_in * s.w_in, out_size = (size_t)s.c_out * s.h_out * s.w_out;
	real *padded = scratch + (size_t)omp_get_thread_num() * scratch_per_thread + CONV_ALIGN(s.c_out * patch);
	real *packed = padded + CONV_PADDED(s.c_in, s.h_in, s.w_in, s.k);
	real *panel = packed + CONV_PACKED_ANY(s.c_out, s.c_in, s.k);
	real *rows = panel + CONV_PANEL(patch);
	real *staged = rows + CONV_ROWS_OR_TILES(s.c_in, s.c_out, s.h_in, s.w_out, s.k);
	bool staging = group == 1 && conv_streams(n * (in_size + (epilogue.shortcut ? 2 : 1) * out_size));
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

/* One image (C, PIXELS) as panels of width channel rows, the pixels being
 * the sum's index: panel b holds, for each pixel q, image[b * width + i][q]
 * (zero past the last channel), transposed eight channels and eight pixels
 * at a time when the pixels come in eights (sixteen and sixteen where the
 * panel's width and the pixels come in sixteens and CONV_TRANSPOSE16);
 * activated first by pre, if not NULL. For the weight gradient: dY, and
 * the input of a 1x1 convolution.
 * Each transposed row is stored whole, 8 reals, even where the panel is
 * narrower (6 on a 6 x 16 kernel, 12 = 8 + 4 on a 32 x 12): what lies
 * past a pixel's width lands on the next pixel's first reals, stored
 * after it by the same eight channels' next pixel or by the panel's first
 * eight (the last eights go first); past a panel's last pixel, on the
 * next panel, packed after it, or in CONV_PACKED's slack past the last
 * (16 reals a channel). A narrower store went through memory lane by lane
 * (the 1x1 weight gradient of 64 -> 16 channels at 32 x 32 spent half its
 * time there). */
KERNEL_HELPER void conv_pack_channels(real *packed, const real *image, const real *pre, int channels, int pixels, int width)
{
	for (int c0 = 0; c0 < channels; c0 += width) {
		real *panel = packed + conv_panel_at(c0, width, pixels);
		if (CONV_TRANSPOSE16 && width % 16 == 0 && pixels % 16 == 0) {
			for (int i = 0; i < width; i += 16) {
				int valid = conv_clamp(channels - c0 - i, 16);
				const real *rows = image + (size_t)(c0 + i) * pixels, *rows_pre = pre ? pre + c0 + i : NULL;
				if (valid == 16) /* the usual case, with constants */
					for (int q = 0; q < pixels; q += 16)
						conv_transpose16(panel + (size_t)q * width + i, width, rows + q, pixels, 16, rows_pre, channels);
				else
					for (int q = 0; q < pixels; q += 16)
						conv_transpose16(panel + (size_t)q * width + i, width, rows + q, pixels, valid, rows_pre, channels);
			}
			continue;
		}
		if (pixels % 8 == 0) {
			for (int i = (width - 1) / 8 * 8; i >= 0; i -= 8) {
				int valid = conv_clamp(channels - c0 - i, 8);
				const real *rows = image + (size_t)(c0 + i) * pixels, *rows_pre = pre ? pre + c0 + i : NULL;
				if (valid == 8) /* the usual case, with constants */
					for (int q = 0; q < pixels; q += 8)
						conv_transpose8(panel + (size_t)q * width + i, width, rows + q, pixels, 8, 8, rows_pre, channels);
				else
					for (int q = 0; q < pixels; q += 8)
						conv_transpose8(panel + (size_t)q * width + i, width, rows + q, pixels, valid, 8, rows_pre, channels);
			}
			continue;
		}
		for (int i = 0; i < width; i++)
			for (int q = 0; q < pixels; q++) {
				int c = c0 + i;
				real value = c < channels ? image[(size_t)c * pixels + q] : 0;
				panel[(size_t)q * width + i] = pre && c < channels ? conv_activated(value, pre[c], pre[channels + c]) : value;
			}
	}
}

/* out[q * width + j] = in[q * step + j] for j < length, for the output
 * pixels q of one patch run: the pixels of a row are step reals apart in
 * the padded image, its rows row_step apart. */
KERNEL_HELPER void conv_copy_run_of(real *out, int width, const real *in, long step, long row_step, int rows, int columns, int length)
{
	for (int oy = 0; oy < rows; oy++, in += row_step)
		for (int ox = 0; ox < columns; ox++, out += width)
			memcpy(out, in + ox * step, sizeof(real) * length);
}

/* The same, with the lengths packing meets most (the panel widths, 16
 * channels) passed as constants, so that each copy is a few vector moves
 * rather than a call. */
KERNEL_HELPER void conv_copy_run(real *out, int width, const real *in, long step, long row_step, int rows, int columns, int length)
{
	switch (length) {
	case 8:
		conv_copy_run_of(out, width, in, step, row_step, rows, columns, 8);
		break;
	case 12:
		conv_copy_run_of(out, width, in, step, row_step, rows, columns, 12);
		break;
	case 16:
		conv_copy_run_of(out, width, in, step, row_step, rows, columns, 16);
		break;
	case 32:
		conv_copy_run_of(out, width, in, step, row_step, rows, columns, 32);
		break;
	default:
		conv_copy_run_of(out, width, in, step, row_step, rows, columns, length);
	}
}

/* Entries [first, first + count) of every output pixel's patch, the patch
 * in the order (ky, kx, c), from an image padded by conv_pad_transposed: a
 * panel of width reals per pixel, zero past count. The entries of one
 * (ky, kx) are consecutive channels of one padded pixel: one run each,
 * copied for all pixels before the next run. */
KERNEL_HELPER void conv_pack_patches(real *panel, const real *padded, struct conv_shape s, int first, int count, int width)
{
	int padded_width = s.w_in + 2 * (s.k / 2), pixels = s.h_out * s.w_out;
	long step = (long)s.stride * s.c_in, row_step = (long)s.stride * padded_width * s.c_in;
	for (int j = 0; j < count;) {
		int p = first + j, c = p % s.c_in, kx = p / s.c_in % s.k, ky = p / s.c_in / s.k;
		int length = s.c_in - c < count - j ? s.c_in - c : count - j;
		const real *from = padded + (long)(ky * padded_width + kx) * s.c_in + c;
		conv_copy_run(panel + j, width, from, step, row_step, s.h_out, s.w_out, length);
		j += length;
	}
	if (width - count == 16) /* a patch of 16 channels times 9, in panels of 32 */
		conv_zero_run(panel + count, width, pixels, 16);
	else if (count < width)
		conv_zero_run(panel + count, width, pixels, width - count);
}

/* dW (C_OUT, PATCH) += dY(i) . columns(X(i))^T for one image, the patch in
 * the order (ky, kx, c), X padded by conv_pad_transposed and dY packed by
 * conv_pack_channels: the pixels are the sum's index. pixel_width is the
 * panel width of the patches' side. */
KERNEL_HELPER void conv_weight_gradient_of(real *dweight, const real *gradient, const real *padded, real *panel, struct conv_shape s, const struct gemm_micro *micro, int pixel_width)
{
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	int channel_width = conv_channel_width(micro);
	for (int first = 0; first < patch; first += pixel_width) {
		int count = patch - first < pixel_width ? patch - first : pixel_width;
		conv_pack_patches(panel, padded, s, first, count, pixel_width);
		for (int c0 = 0; c0 < s.c_out; c0 += channel_width) {
			int channels = s.c_out - c0 < channel_width ? s.c_out - c0 : channel_width;
			conv_tile(micro, channels, count, pixels, gradient + conv_panel_at(c0, channel_width, pixels), panel, 1,
				  dweight + (size_t)c0 * patch + first, patch, 1);
		}
	}
}

KERNEL_HELPER void conv_weight_gradient(real *dweight, const real *gradient, const real *padded, real *panel, struct conv_shape s, const struct gemm_micro *micro)
{
	CONV_WITH_PIXEL_WIDTH(micro, conv_weight_gradient_of, dweight, gradient, padded, panel, s, micro);
}

/* A 1x1 convolution's weight gradient is dY . X^T, both operands packed
 * whole by conv_pack_channels, so either may take either side of the
 * micro-kernel's block. Swapped: dY's channels go on the pixels' side
 * (the forward pass's), the input channels on the channels' side. That
 * pays where it fills the blocks better: on a 32 x 12 kernel, 16 -> 64
 * takes 2 x 2 blocks swapped against 1 x 6. conv_swap_sides: -1 chooses
 * by the count of blocks, 0 or 1 forces it (for the tests). */
static int conv_swap_sides = -1;

KERNEL_HELPER int conv_blocks(int rows, int width) { return (rows + width - 1) / width; }

KERNEL_HELPER bool conv_swaps_sides(const struct gemm_micro *micro, struct conv_shape s)
{
	if (s.k != 1)
		return false;
	if (conv_swap_sides >= 0)
		return conv_swap_sides;
	int channel_width = conv_channel_width(micro), pixel_width = conv_pixel_width(micro);
	return conv_blocks(s.c_out, pixel_width) * conv_blocks(s.c_in, channel_width) <
	       conv_blocks(s.c_out, channel_width) * conv_blocks(s.c_in, pixel_width);
}

/* The row split of the weight gradient, for the convolutions whose
 * forward pass may take one (stride 1, the image's size kept). With rows
 * v = (ky, co) and columns u = (kx, c),
 * dW[co][c][ky][kx] = sum over the padded rows y' and the output columns x
 * of dY[co][y' - ky][x] X'[c][y'][x + kx], X' being X padded: sums over
 * (K - 1) W more pixels, but both operands pack as plain runs. At (y', x),
 * the columns u are one run of K C_IN reals of X padded by
 * conv_pad_transposed, and the rows v, K runs of C_OUT reals of dY padded
 * the same way by K - 1 rows. 16 channels at 32 x 32 on a 32 x 12 kernel:
 * 2 x 4 blocks over 1088 pixels, against 2 x 5 over 1024, and about half
 * as many reals packed. conv_weight_split: as conv_row_split. */
static int conv_weight_split = -1;

/* How a weight gradient runs: by the patches (the plain way), by the 1x1
 * packing (swapped or not), or by the row split. gradient_width: the width
 * of dY's panels; gradient_first: they are the micro-kernel's A. */
enum conv_weight_method { CONV_WEIGHT_PATCHES, CONV_WEIGHT_1X1, CONV_WEIGHT_SPLIT, CONV_WEIGHT_WINOGRAD };

struct conv_weight_plan {
	enum conv_weight_method method;
	int gradient_width, input_width;
	bool gradient_first;
	int pixels; /* the sums' length: the output's pixels, or the padded rows' */
	struct conv_strides own;
	struct conv_strides product; /* Winograd's: of the products of each place */
	int rows;                    /* Winograd's: the products' rows of output channels */
};

KERNEL_HELPER struct conv_weight_plan conv_weight_plan(const struct gemm_micro *micro, struct conv_shape s)
{
	int channel_width = conv_channel_width(micro), pixel_width = conv_pixel_width(micro);
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	struct conv_weight_plan w = {CONV_WEIGHT_PATCHES, channel_width, pixel_width, micro->prefers_rows, pixels,
				     {patch, 1, s.k * s.c_in, s.c_in}, {0, 0, 0, 0}, s.c_out};
	if (s.k == 1) {
		bool swapped = conv_swaps_sides(micro, s);
		w.method = CONV_WEIGHT_1X1;
		w.gradient_width = swapped ? pixel_width : channel_width;
		w.input_width = swapped ? channel_width : pixel_width;
		w.gradient_first = micro->prefers_rows != swapped;
		w.own = swapped ? (struct conv_strides){1, s.c_out, 0, 0} : (struct conv_strides){s.c_in, 1, 0, 0};
		return w;
	}
	if (s.stride != 1 || s.k % 2 == 0 || s.h_out != s.h_in || s.w_out != s.w_in)
		return w;
	/* dY's rows on the kernel's A side (mr wide) or on its B side */
	int rows = s.k * s.c_out, columns = s.k * s.c_in, row_pixels = (s.h_in + s.k - 1) * s.w_out;
	int on_a = conv_blocks(rows, micro->mr) * conv_blocks(columns, micro->nr);
	int on_b = conv_blocks(rows, micro->nr) * conv_blocks(columns, micro->mr);
	double patches = (double)conv_blocks(s.c_out, channel_width) * conv_blocks(patch, pixel_width) * pixels;
	double split_steps = 1.1 * (on_a < on_b ? on_a : on_b) * row_pixels;
	bool split = conv_weight_split >= 0 ? conv_weight_split : split_steps < patches;
	if (conv_winograd_applies(s) && conv_winograd != 0) {
		/* Winograd's products for each place of its tile, C_OUT on the A
		 * side or on the B side, each block's sum taken as 8 steps longer
		 * for its load and store of C, its transforms as a quarter as
		 * much again (an estimate: with it, skx's kernels and haswell's
		 * run the 32x32, 16x16 and 8x8 convolutions of 16, 32 and 64
		 * channels so, which measured faster) */
		int winograd_a = conv_blocks(s.c_out, micro->mr) * conv_blocks(s.c_in, micro->nr);
		int winograd_b = conv_blocks(s.c_out, micro->nr) * conv_blocks(s.c_in, micro->mr);
		int m = conv_winograd_tile_for(s);
		double winograd = 1.25 * CONV_PLACES(m) * (winograd_a < winograd_b ? winograd_a : winograd_b) *
				  (CONV_TILES_OF(s.h_out, s.w_out, m) + 8);
		if (conv_winograd == 1 || winograd < (split ? split_steps : patches)) {
			w.method = CONV_WEIGHT_WINOGRAD;
			w.gradient_first = winograd_a <= winograd_b;
			w.gradient_width = w.gradient_first ? micro->mr : micro->nr;
			w.input_width = w.gradient_first ? micro->nr : micro->mr;
			/* the products stored as the kernel prefers, the private sum as OIHW */
			w.product = w.gradient_first == micro->prefers_rows ? (struct conv_strides){s.c_in, 1, 0, 0}
									     : (struct conv_strides){1, s.c_out, 0, 0};
			if (w.product.co != 1) /* rows past the output channels: room after the last */
				w.rows = conv_block_rows(s.c_out, w.gradient_width);
			w.own = (struct conv_strides){patch, s.k * s.k, s.k, 1};
			return w;
		}
	}
	if (!split)
		return w;
	w.method = CONV_WEIGHT_SPLIT;
	w.gradient_first = on_a <= on_b;
	w.gradient_width = w.gradient_first ? micro->mr : micro->nr;
	w.input_width = w.gradient_first ? micro->nr : micro->mr;
	w.pixels = row_pixels;
	/* stored as the kernel prefers: A's index along C's columns or rows */
	int v_stride = 1, u_stride = rows;
	if (w.gradient_first == micro->prefers_rows) {
		v_stride = columns;
		u_stride = 1;
	}
	w.own = (struct conv_strides){v_stride, u_stride, s.c_out * v_stride, s.c_in * u_stride};
	return w;
}

/* own += dY(i) . X(i)^T for a 1x1 convolution, from dY and X packed by
 * conv_pack_channels in panels of the plan's widths. */
KERNEL_HELPER void conv_weight_gradient_1x1(real *own, const real *gradient, const real *input, struct conv_shape s, struct conv_weight_plan w)
{
	int pixels = s.h_out * s.w_out;
	for (int x0 = 0; x0 < s.c_in; x0 += w.input_width) {
		int inputs = s.c_in - x0 < w.input_width ? s.c_in - x0 : w.input_width;
		const real *input_panel = input + conv_panel_at(x0, w.input_width, pixels);
		for (int c0 = 0; c0 < s.c_out; c0 += w.gradient_width) {
			int channels = s.c_out - c0 < w.gradient_width ? s.c_out - c0 : w.gradient_width;
			const real *gradient_panel = gradient + conv_panel_at(c0, w.gradient_width, pixels);
			real *block = own + (long)c0 * w.own.co + (long)x0 * w.own.c;
			if (w.gradient_first)
				gemm_micro_tile(channels, inputs, pixels, gradient_panel, input_panel, 1, block, w.own.co, w.own.c);
			else
				gemm_micro_tile(inputs, channels, pixels, input_panel, gradient_panel, 1, block, w.own.c, w.own.co);
		}
	}
}

/* The split's rows v = (ky, co) of one image as panels of width reals,
 * from dY padded by K - 1 rows and columns by conv_pad_transposed: at each
 * padded row y' and column x, dY[co][y' - ky][x]. The rows past the last
 * are left as they are: conv_weight_gradient_begin zeroed them once. */
KERNEL_HELPER void conv_pack_split_gradient(real *packed, const real *padded, struct conv_shape s, int width)
{
	int rows = s.k * s.c_out, padded_width = s.w_out + 2 * (s.k - 1), row_pixels = (s.h_out + s.k - 1) * s.w_out;
	long step = s.c_out, row_step = (long)padded_width * s.c_out;
	for (int v0 = 0; v0 < rows; v0 += width) {
		real *panel = packed + conv_panel_at(v0, width, row_pixels);
		int j = 0;
		for (; j < width && v0 + j < rows;) {
			int ky = (v0 + j) / s.c_out, co = (v0 + j) % s.c_out;
			int length = s.c_out - co < width - j ? s.c_out - co : width - j;
			const real *from = padded + ((long)(s.k - 1 - ky) * padded_width + s.k - 1) * s.c_out + co;
			conv_copy_run(panel + j, width, from, step, row_step, s.h_out + s.k - 1, s.w_out, length);
			j += length;
		}
	}
}

/* own += the split's product for one image: dY's rows packed by
 * conv_pack_split_gradient, the columns u = (kx, c) packed here a panel at
 * a time from X padded by conv_pad_transposed (X'[c][y'][x + kx] at
 * (y', x): one run). */
KERNEL_HELPER void conv_weight_gradient_split(real *own, const real *gradient, const real *padded, real *panel, struct conv_shape s, struct conv_weight_plan w)
{
	int rows = s.k * s.c_out, columns = s.k * s.c_in, padded_width = s.w_in + 2 * (s.k / 2);
	for (int u0 = 0; u0 < columns; u0 += w.input_width) {
		int count = columns - u0 < w.input_width ? columns - u0 : w.input_width;
		conv_copy_run(panel, w.input_width, padded + u0, s.c_in, (long)padded_width * s.c_in, s.h_in + s.k - 1, s.w_in, count);
		if (count < w.input_width)
			conv_zero_run(panel + count, w.input_width, w.pixels, w.input_width - count);
		for (int v0 = 0; v0 < rows; v0 += w.gradient_width) {
			int block = rows - v0 < w.gradient_width ? rows - v0 : w.gradient_width;
			const real *gradient_panel = gradient + conv_panel_at(v0, w.gradient_width, w.pixels);
			real *c = own + (long)v0 * w.own.co + (long)u0 * w.own.c;
			if (w.gradient_first)
				gemm_micro_tile(block, count, w.pixels, gradient_panel, panel, 1, c, w.own.co, w.own.c);
			else
				gemm_micro_tile(count, block, w.pixels, panel, gradient_panel, 1, c, w.own.c, w.own.co);
		}
	}
}

/* Winograd's weight gradient, for the convolutions Winograd's forward pass
 * applies to. The forward pass's formula differentiated: for each pair of
 * channels, dW = G^T [ sum over tiles of (A dY A^T) .* (B^T d B) ] G, dY
 * the tile's m x m gradient, d the (m + 2) x (m + 2) block of padded
 * input around it. The sums over the tiles are a product an image for
 * each place of the transformed tile, (C_OUT, TILES) . (TILES, C_IN), on
 * the micro-kernel with the tiles as the sum's index, added to the
 * thread's own transformed sums; after the thread's last image, G^T . G
 * turns those into its private weight gradient. The tile is the forward
 * pass's (conv_winograd_tile_for). F(4x4) is what lets 16 channels use
 * Winograd on a micro-kernel 32 wide (skx's): a product of 16 x 16
 * channels fills a third of a 32 x 12 block either way, and a 32 x 32
 * image takes 36 places x 64 tiles x 2 blocks, 4608 block-steps, against
 * F(2x2)'s 8192 and the row split's 8704. On the network's shapes in f32
 * it differed from the reference by 2-6e-7 of the largest gradient, as
 * F(2x2) did. */

/* to[e * place + l] = lanes from + l of v[e], for l < count and each
 * place e < places; with the counts packing meets most (16 channels in
 * panels of 32, 12 + 4 in panels of 12, 6 + 6 + 4 in panels of 6) as
 * constants, so that each run is a few vector moves. */
KERNEL_HELPER void conv_store_places_of(real *to, size_t place, const conv_lanes *v, int places, int from, int count)
{
	for (int e = 0; e < places; e++)
		conv_copy_lanes(to + e * place, (const real *)&v[e] + from, count);
}

KERNEL_HELPER void conv_store_places(real *to, size_t place, const conv_lanes *v, int places, int from, int count)
{
	switch (count) {
	case 16:
		conv_store_places_of(to, place, v, places, from, 16);
		break;
	case 12:
		conv_store_places_of(to, place, v, places, from, 12);
		break;
	case 6:
		conv_store_places_of(to, place, v, places, from, 6);
		break;
	case 4:
		conv_store_places_of(to, place, v, places, from, 4);
		break;
	default:
		conv_store_places_of(to, place, v, places, from, count);
	}
}

/* The transformed tiles of one image stored pixel by pixel with its
 * channels innermost (conv_pad_transposed), for each place as panels of
 * width channels, the tiles being the sum's index; the lanes past the last
 * channel are left as they are (conv_weight_gradient_begin zeroed them
 * once: written for every tile of every image, they took a fifth of
 * 16x32x32's weight gradient). gradient: the image is dY, else the input
 * padded by one (conv_winograd_tile_transform). Sixteen channels of a
 * tile at a time, as vectors, whatever the panels' width: a vector's
 * lanes are stored in one run for each panel they fall in (12 and 4 of 16
 * channels in skx's panels of 12, 6, 6 and 4 in haswell's of 6). */
KERNEL_HELPER void conv_winograd_pack_tiles(real *restrict packed, const real *restrict image, int channels, int height, int image_width, bool gradient, int width, int first, int set, int m)
{
	enum { MOST = 6 }; /* m + 2 at most */
	int n = m + 2, across = image_width / m, tiles = CONV_TILES_OF(height, image_width, m);
	int row = gradient ? image_width : image_width + 2;
	size_t place = CONV_PLACE(CONV_PACKED(channels, set));
	for (int c = 0; c < channels; c += CONV_LANES) {
		int lanes = channels - c < CONV_LANES ? channels - c : CONV_LANES;
		/* the runs of lanes: run r from lane run_from[r], in its panel at run_at[r] */
		int runs = 0, run_from[CONV_LANES + 1];
		size_t run_at[CONV_LANES];
		for (int l = 0; l < lanes; l += width - (c + l) % width) {
			run_from[runs] = l;
			run_at[runs++] = conv_panel_at(c + l, width, set) + (c + l) % width;
		}
		run_from[runs] = lanes;
		for (int t = 0; t < tiles; t++) {
			conv_lanes v[MOST * MOST];
			conv_winograd_tile_transform(v, image + ((size_t)m * (t / across) * row + m * (t % across)) * channels + c, channels, row, lanes, gradient, m);
			for (int r = 0; r < runs; r++)
				conv_store_places(packed + run_at[r] + (size_t)(first + t) * width, place, v, n * n, run_from[r], run_from[r + 1] - run_from[r]);
		}
	}
}

/* products += the products of one image, place by place, from dY's tiles
 * and the input's packed by conv_winograd_pack_tiles in the plan's widths. */
KERNEL_HELPER void conv_weight_gradient_winograd(real *products, const real *gradient, const real *input, struct conv_shape s, struct conv_weight_plan w, int used, real beta)
{
	int m = conv_winograd_tile_for(s), set = CONV_WEIGHT_SET(s.h_out, s.w_out, m);
	size_t gradient_place = CONV_PLACE(CONV_PACKED(s.c_out, set)), input_place = CONV_PLACE(CONV_PACKED(s.c_in, set));
	size_t product_place = CONV_PLACE(w.rows * s.c_in);
	for (int e = 0; e < CONV_PLACES(m); e++)
		for (int x0 = 0; x0 < s.c_in; x0 += w.input_width) {
			int inputs = s.c_in - x0 < w.input_width ? s.c_in - x0 : w.input_width;
			const real *input_panel = input + e * input_place + conv_panel_at(x0, w.input_width, set);
			for (int c0 = 0; c0 < w.rows; c0 += w.gradient_width) {
				int channels = w.rows - c0 < w.gradient_width ? w.rows - c0 : w.gradient_width;
				const real *gradient_panel = gradient + e * gradient_place + conv_panel_at(c0, w.gradient_width, set);
				real *block = products + e * product_place + (long)c0 * w.product.co + (long)x0 * w.product.c;
				if (w.gradient_first)
					gemm_micro_tile(channels, inputs, used, gradient_panel, input_panel, beta, block, w.product.co, w.product.c);
				else
					gemm_micro_tile(inputs, channels, used, input_panel, gradient_panel, beta, block, w.product.c, w.product.co);
			}
		}
}

/* own += G^T m G for each pair of channels, m its summed products:
 * sixteen input channels at a time. */
KERNEL_HELPER void conv_winograd_weights_back(real *own, const real *products, struct conv_shape s, struct conv_weight_plan w, int m)
{
	enum { MOST = 6 };
	int n = m + 2;
	size_t product_place = CONV_PLACE(w.rows * s.c_in);
	/* sixteen pairs a vector, along the channels the products run along in memory */
	bool along_outputs = w.product.co == 1;
	int lines = along_outputs ? s.c_in : s.c_out, along = along_outputs ? s.c_out : s.c_in;
	long line_step = along_outputs ? w.product.c : w.product.co;
	long own_line = along_outputs ? w.own.c : w.own.co, own_lane = along_outputs ? w.own.co : w.own.c;
	for (int a = 0; a < lines; a++)
		for (int b0 = 0; b0 < along; b0 += CONV_LANES) {
			int lanes = along - b0 < CONV_LANES ? along - b0 : CONV_LANES;
			conv_lanes sums[MOST * MOST], t[3][MOST], kernel[3];
			for (int e = 0; e < n * n; e++) {
				real pairs[CONV_LANES] = {0};
				conv_copy_lanes(pairs, products + e * product_place + a * line_step + b0, lanes);
				memcpy(&sums[e], pairs, sizeof pairs);
			}
			for (int j = 0; j < n; j++) /* G^T m, down each column */
				conv_winograd_back_1d(&t[0][j], MOST, &sums[j], n, m);
			real *to = own + a * own_line + b0 * own_lane;
			for (int k = 0; k < 3; k++) { /* (G^T m) G, along each row */
				conv_winograd_back_1d(kernel, 1, t[k], 1, m);
				for (int x = 0; x < 3; x++) {
					real weights[CONV_LANES];
					memcpy(weights, &kernel[x], sizeof weights);
					for (int l = 0; l < lanes; l++)
						to[l * own_lane + k * w.own.ky + x * w.own.kx] += weights[l];
				}
			}
		}
}

/* The weight gradient of one image at a time, summed per thread in the
 * thread's private sum (at the start of its scratch), then across threads
 * in thread order by conv_weight_gradient_end. A strided convolution
 * (three of a network), or a machine without a usable micro-kernel, runs
 * the reference kernel's image. part: the calling thread's scratch for
 * it (CONV_WEIGHT_PART reals). */
struct conv_weight_gradient {
	const struct gemm_micro *micro; /* NULL: the reference kernel */
	struct conv_shape s;            /* the convolution's */
	const real *pre;                /* the prologue, or NULL */
	struct conv_weight_plan w;      /* the fast kernel's */
	real *own;                      /* the thread's private sum */
	/* the fast kernel's: packed dY; padded X (or a 1x1's X packed), a
	 * panel, and the row split's padded dY; the reference's: columns in
	 * gradient, the activated input in padded; Winograd's: dY's tiles in
	 * gradient, the input's in panel, dY and the input with their
	 * channels innermost in gradient_padded and padded, the products */
	real *gradient, *padded, *panel, *gradient_padded, *products;
	int filled;  /* Winograd's: the images whose tiles are packed, not yet summed */
	bool summed; /* Winograd's: whether products hold a sum yet (the first group sets them) */
};

/* The lanes past the last channel of Winograd's tiles, for each place:
 * zeroed once a call (the tiles' panels are written lane by lane for each
 * image, these never), rather than all the places' panels (1.2 MB a
 * thread a call for 16x32x32, with as few as 8 images a thread to spread
 * it over). */
KERNEL_HELPER void conv_winograd_zero_lanes(real *packed, int channels, int tiles, int places, int width)
{
	size_t place = CONV_PLACE(CONV_PACKED(channels, tiles));
	int valid = channels % width;
	if (valid)
		for (int e = 0; e < places; e++)
			conv_zero_run(packed + e * place + conv_panel_at(channels - valid, width, tiles) + valid, width, tiles, width - valid);
}

KERNEL_HELPER struct conv_weight_gradient conv_weight_gradient_begin(const real *pre, struct conv_shape s, real *scratch, size_t scratch_per_thread, real *part)
{
	struct conv_weight_gradient g = {gemm_micro(), s, pre, {0}, scratch + (size_t)omp_get_thread_num() * scratch_per_thread, part, NULL, NULL, NULL, NULL, 0, false};
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	memset(g.own, 0, sizeof(real) * s.c_out * patch);
	if (!g.micro || s.stride != 1) {
		g.micro = NULL;
		g.padded = part + CONV_ALIGN(patch * pixels);
		return g;
	}
	g.w = conv_weight_plan(g.micro, s);
	if (g.w.method == CONV_WEIGHT_WINOGRAD) {
		int m = conv_winograd_tile_for(s), set = CONV_WEIGHT_SET(s.h_out, s.w_out, m), places = CONV_PLACES(m);
		g.panel = g.gradient + places * CONV_PLACE(CONV_PACKED(s.c_out, set));
		g.gradient_padded = g.panel + places * CONV_PLACE(CONV_PACKED(s.c_in, set));
		g.padded = g.gradient_padded + CONV_ALIGN(s.c_out * pixels);
		g.products = g.padded + CONV_PADDED(s.c_in, s.h_in, s.w_in, s.k);
		conv_winograd_zero_lanes(g.gradient, s.c_out, set, places, g.w.gradient_width);
		conv_winograd_zero_lanes(g.panel, s.c_in, set, places, g.w.input_width);
		memset(g.padded, 0, sizeof(real) * CONV_PADDED(s.c_in, s.h_in, s.w_in, s.k));
		return g;
	}
	bool split = g.w.method == CONV_WEIGHT_SPLIT;
	g.padded = g.gradient + (split ? CONV_PACKED(s.k * s.c_out, g.w.pixels) : CONV_PACKED(s.c_out, pixels));
	g.panel = g.padded + CONV_PADDED(s.c_in, s.h_in, s.w_in, s.k);
	g.gradient_padded = g.panel + CONV_PANEL(g.w.pixels);
	if (s.k > 1)
		memset(g.padded, 0, sizeof(real) * CONV_PADDED(s.c_in, s.h_in, s.w_in, s.k));
	if (split) { /* the packed rows past the last, and dY's border */
		memset(g.gradient, 0, sizeof(real) * CONV_PACKED(s.k * s.c_out, g.w.pixels));
		memset(g.gradient_padded, 0, sizeof(real) * CONV_PADDED(s.c_out, s.h_out, s.w_out, 2 * s.k - 1));
	}
	return g;
}

/* Both operands' tiles of an image, from dY and X with their channels
 * innermost, after those of the images packed before it; m: the plan's
 * tile, a constant for the transforms to fold. */
KERNEL_HELPER void conv_winograd_pack_both(const struct conv_weight_gradient *g, int m)
{
	struct conv_shape s = g->s;
	int tiles = CONV_TILES_OF(s.h_out, s.w_out, m), set = CONV_WEIGHT_SET(s.h_out, s.w_out, m);
	conv_winograd_pack_tiles(g->gradient, g->gradient_padded, s.c_out, s.h_out, s.w_out, true, g->w.gradient_width, g->filled * tiles, set, m);
	conv_winograd_pack_tiles(g->panel, g->padded, s.c_in, s.h_in, s.w_in, false, g->w.input_width, g->filled * tiles, set, m);
}

/* Winograd's products of the images packed, added to the thread's sums:
 * the first group's set them (beta 0), rather than a zeroing of them all
 * first (the same values; 608 KiB a thread a call for 64 x 64 channels
 * at 8 x 8, where a thread may have one group of 8 images a call). */
KERNEL_HELPER void conv_winograd_sum_images(struct conv_weight_gradient *g)
{
	if (g->filled) {
		conv_weight_gradient_winograd(g->products, g->gradient, g->panel, g->s, g->w,
					      g->filled * CONV_TILES_OF(g->s.h_out, g->s.w_out, conv_winograd_tile_for(g->s)), g->summed ? 1 : 0);
		g->summed = true;
	}
	g->filled = 0;
}

/* own += dY(i) . columns(X(i))^T: dy, image: the image's dY and X */
KERNEL_HELPER void conv_weight_gradient_image(struct conv_weight_gradient *g, const real *dy, const real *image)
{
	struct conv_shape s = g->s;
	struct conv_weight_plan w = g->w;
	if (!g->micro) {
		conv_weight_gradient_reference_image(g->own, dy, image, g->pre, s, g->gradient, g->padded);
		return;
	}
	int pixels = s.h_out * s.w_out;
	switch (w.method) {
	case CONV_WEIGHT_1X1:
		conv_pack_channels(g->gradient, dy, NULL, s.c_out, pixels, w.gradient_width);
		conv_pack_channels(g->padded, image, g->pre, s.c_in, pixels, w.input_width);
		conv_weight_gradient_1x1(g->own, g->gradient, g->padded, s, w);
		break;
	case CONV_WEIGHT_SPLIT:
		conv_pad_transposed(g->gradient_padded, dy, NULL, s.c_out, s.h_out, s.w_out, s.k - 1);
		conv_pack_split_gradient(g->gradient, g->gradient_padded, s, w.gradient_width);
		conv_pad_transposed(g->padded, image, g->pre, s.c_in, s.h_in, s.w_in, s.k / 2);
		conv_weight_gradient_split(g->own, g->gradient, g->padded, g->panel, s, w);
		break;
	case CONV_WEIGHT_WINOGRAD:
		conv_pad_transposed(g->gradient_padded, dy, NULL, s.c_out, s.h_out, s.w_out, 0);
		conv_pad_transposed(g->padded, image, g->pre, s.c_in, s.h_in, s.w_in, 1);
		CONV_WITH_WINOGRAD_TILE(s, conv_winograd_pack_both, g);
		if (++g->filled == CONV_WEIGHT_GROUP(CONV_TILES_OF(s.h_out, s.w_out, conv_winograd_tile_for(s))))
			conv_winograd_sum_images(g);
		break;
	case CONV_WEIGHT_PATCHES: /* the patches in the order (ky, kx, c) */
		conv_pack_channels(g->gradient, dy, NULL, s.c_out, pixels, w.gradient_width);
		conv_pad_transposed(g->padded, image, g->pre, s.c_in, s.h_in, s.w_in, s.k / 2);
		conv_weight_gradient(g->own, g->gradient, g->padded, g->panel, s, g->micro);
	}
}

/* dweight += the threads' sums, after every thread's last image */
KERNEL_HELPER void conv_weight_gradient_end(struct conv_weight_gradient *g, real *dweight, const real *scratch, size_t scratch_per_thread)
{
	struct conv_shape s = g->s;
	struct conv_strides reference = {CONV_PATCH(s.c_in, s.k), s.k * s.k, s.k, 1};
	if (g->micro && g->w.method == CONV_WEIGHT_WINOGRAD) {
		conv_winograd_sum_images(g);
		if (g->summed) /* else a thread without images, its own sum zero */
			CONV_WITH_WINOGRAD_TILE(s, conv_winograd_weights_back, g->own, g->products, s, g->w);
		#pragma omp barrier /* every thread's sum in place before they are added */
	}
	conv_sum_weight_gradients(dweight, scratch, scratch_per_thread, s, g->micro ? g->w.own : reference);
}

/* dweight += the weight gradient, the images shared among the threads. */
KERNEL_HELPER void conv_backward_weights(real *dweight, const real *dout, const real *in, const real *pre, int n, struct conv_shape s, real *scratch, size_t scratch_per_thread)
{
	real *part = scratch + (size_t)omp_get_thread_num() * scratch_per_thread + CONV_PARTS_AT(s);
	struct conv_weight_gradient g = conv_weight_gradient_begin(pre, s, scratch, scratch_per_thread, part);
	int from, to;
	thread_share(n, &from, &to);
	for (int i = from; i < to; i++)
		conv_weight_gradient_image(&g, dout + (size_t)i * s.c_out * s.h_out * s.w_out, in + (size_t)i * s.c_in * s.h_in * s.w_in);
	#pragma omp barrier
	conv_weight_gradient_end(&g, dweight, scratch, scratch_per_thread);
}

/* The data gradient of one image at a time, din (+)= the gradient of the
 * input. That of a stride-1 convolution is itself one: dX = conv(dY, W
 * flipped and transposed), run as the forward pass is. A strided
 * convolution, or a machine without a usable micro-kernel, runs the
 * reference kernel. conv_data_gradient_begin prepares the calling thread's
 * part of its scratch for it (CONV_DATA_PART reals). */
struct conv_data_gradient {
	const struct gemm_micro *micro; /* NULL: the reference kernel */
	struct conv_shape s;            /* the convolution's */
	const real *weight;
	real *padded, *packed, *panel, *rows; /* the fast kernel's; panel: the reference's columns */
	real *staged; /* where an image's gradient is staged (conv_streams_gradient), or NULL: set in place */
	enum conv_method method;
	int group; /* the images conv_data_gradient_images takes at a time */
};

/* stream: whether conv_backward_data_images should stage and stream the
 * images it sets (conv_streams_gradient), where it takes them one at a
 * time. */
KERNEL_HELPER struct conv_data_gradient conv_data_gradient_begin(const real *weight, struct conv_shape s, real *part, bool stream)
{
	struct conv_data_gradient d = {gemm_micro(), s, weight, NULL, NULL, NULL, NULL, NULL, CONV_PLAIN, 1};
	int flipped_patch = CONV_PATCH(s.c_out, s.k);
	if (!d.micro || s.stride != 1) {
		d.micro = NULL;
		d.panel = part;
		return d;
	}
	struct conv_shape transposed = {s.c_out, s.h_out, s.w_out, s.c_in, s.h_in, s.w_in, s.k, 1};
	d.method = conv_method_for(d.micro, transposed);
	d.group = conv_group_of(d.micro, d.method, transposed);
	d.padded = part;
	d.packed = d.padded + CONV_PADDED(s.c_out, s.h_out, s.w_out, s.k);
	d.panel = d.packed + CONV_PACKED_ANY(s.c_in, s.c_out, s.k);
	d.rows = d.panel + CONV_PANEL(flipped_patch);
	if (stream && d.group == 1)
		d.staged = d.rows + CONV_ROWS_OR_TILES(s.c_out, s.c_in, s.h_out, s.w_in, s.k);
	if (s.k > 1)
		memset(d.padded, 0, sizeof(real) * CONV_PADDED(s.c_out, s.h_out, s.w_out, s.k));
	conv_pack_weights_for(d.packed, weight, d.method, true, d.micro, s);
	return d;
}

/* The data gradient of count consecutive images (d->group at most). */
KERNEL_HELPER void conv_data_gradient_images(const struct conv_data_gradient *d, real *dimage, const real *dy, int count, enum gradient_write write)
{
	struct conv_shape s = d->s;
	if (!d->micro) {
		for (int g = 0; g < count; g++)
			conv_data_gradient_reference_image(dimage + (size_t)g * s.c_in * s.h_in * s.w_in,
							   dy + (size_t)g * s.c_out * s.h_out * s.w_out, d->weight, s, d->panel, write);
		return;
	}
	struct conv_shape transposed = {s.c_out, s.h_out, s.w_out, s.c_in, s.h_in, s.w_in, s.k, 1};
	conv_group(dimage, dy, NULL, d->padded, d->packed, d->panel, d->rows, d->method, count, transposed, write == GRADIENT_ADD, d->micro);
}

/* din (+)= the data gradient, the images shared among the threads. */
KERNEL_HELPER void conv_backward_data(real *din, const real *dout, const real *weight, int n, struct conv_shape s, real *scratch, size_t scratch_per_thread, enum gradient_write write)
{
	struct conv_data_gradient d = conv_data_gradient_begin(weight, s, scratch + (size_t)omp_get_thread_num() * scratch_per_thread + CONV_PARTS_AT(s), false);
	size_t in_size = (size_t)s.c_in * s.h_in * s.w_in, out_size = (size_t)s.c_out * s.h_out * s.w_out;
	int from, to;
	thread_share(n, &from, &to);
	for (int first = from; first < to; first += d.group)
		conv_data_gradient_images(&d, din + first * in_size, dout + first * out_size, to - first < d.group ? to - first : d.group, write);
	#pragma omp barrier
}

/* The backward pass's epilogue: with saved not NULL, the convolution's
 * input is that of the BN whose saved values these are (the prologue is
 * its scale and shift, then ReLU), and each image's data gradient, the
 * gradient of ReLU's output, puts its part of BN's backward sums at sums,
 * 2 C_IN doubles an image (batch_norm_gradient_sums), while it is fresh.
 * claims: n ints, zero, shared by the threads (conv_backward). */
struct conv_backward_epilogue {
	const real *saved;
	double *sums;
	int *claims;
};

/* The data gradient of count images from first (their dY at dy), and the
 * epilogue's sums of each; an image that sets its gradient is staged and
 * streamed where d says (the sums read it staged, from the cache). */
KERNEL_HELPER void conv_backward_data_images(const struct conv_data_gradient *d, real *din, const real *dy, const real *in, int first, int count, enum gradient_write write, struct conv_backward_epilogue epilogue)
{
	struct conv_shape s = d->s;
	size_t in_size = (size_t)s.c_in * s.h_in * s.w_in;
	bool staging = d->staged && write == GRADIENT_SET; /* staged only where images go one at a time */
	real *result = staging ? d->staged : din + first * in_size;
	conv_data_gradient_images(d, result, dy, count, write);
	if (epilogue.saved)
		for (int i = first; i < first + count; i++) {
			double *sums = epilogue.sums + (size_t)2 * s.c_in * i;
			memset(sums, 0, sizeof(double) * 2 * s.c_in);
			batch_norm_gradient_sums(sums, in + i * in_size, result + (i - first) * in_size, epilogue.saved, s.c_in, s.h_in * s.w_in, true);
		}
	if (staging)
		conv_stream_image(din + first * in_size, result, in_size);
}

/* dY of count images from first: in dout, or, where BN left it deferred
 * (dout NULL), computed into the thread's scratch at computed. */
KERNEL_HELPER const real *conv_group_dy(real *computed, const real *dout, struct batch_norm_deferred deferred, int first, int count, struct conv_shape s)
{
	size_t out_size = (size_t)s.c_out * s.h_out * s.w_out;
	if (dout)
		return dout + first * out_size;
	batch_norm_deferred_images(computed, deferred, first, count, s.c_out, s.h_out * s.w_out);
	return computed;
}

/* Whether count reals at a and at b share memory. */
KERNEL_HELPER bool conv_overlaps(const real *a, size_t a_count, const real *b, size_t b_count)
{
	return a && b && a < b + b_count && b < a + a_count;
}

/* Both gradients, image by image: the weight gradient's part of an image,
 * then its data gradient, while dY(i), which both read, is still in the
 * cache, then the epilogue; each thread's parts of its scratch side by
 * side. With dout NULL, dY is BN's input gradient, which BN's backward
 * left to this pass (deferred): each image's is computed first, into the
 * thread's scratch, and never stored. The calling thread's seconds in the
 * data gradient and the epilogue are added to *data_seconds (the
 * profile's split). This is conv_backward_weights and conv_backward_data
 * in one loop: the same sums in the same order.
 * Each thread takes the weight gradient of its own share (thread_share: its
 * sums add its images), but the data gradient of a group of images goes
 * to whichever thread claims it first (epilogue.claims): a thread done
 * with its share takes the others' groups from their last, computing
 * their dY again if deferred, so that a thread a neighbour on the machine
 * slowed is helped rather than waited for. What a data gradient computes
 * of an image, its input gradient and BN's sums, is that image's alone,
 * so the results do not depend on who took it. Not where din shares
 * memory with what the images' dY is read from (an identity shortcut's
 * gradient can take the slot of the gradient it adds to, which BN left
 * deferred): there the owner must read an image's dY before its din is
 * written, as it does on its own. */
KERNEL_HELPER void conv_backward(real *din, real *dweight, const real *dout, struct batch_norm_deferred deferred, const real *in, const real *weight, const real *pre, int n, struct conv_shape s, real *scratch, size_t scratch_per_thread, enum gradient_write write, struct conv_backward_epilogue epilogue, double *data_seconds)
{
	real *mine = scratch + (size_t)omp_get_thread_num() * scratch_per_thread;
	real *computed = mine + CONV_DEFERRED_AT(s);
	struct conv_weight_gradient g = conv_weight_gradient_begin(pre, s, scratch, scratch_per_thread, mine + CONV_PARTS_AT(s));
	size_t in_size = (size_t)s.c_in * s.h_in * s.w_in, out_size = (size_t)s.c_out * s.h_out * s.w_out;
	/* the call's tensors: the input and dY, read; din, written */
	struct conv_data_gradient d = conv_data_gradient_begin(weight, s, mine + CONV_DATA_AT(s), conv_streams_gradient(n * (2 * in_size + out_size)));
	int from, to;
	thread_share(n, &from, &to);
	for (int first = from; first < to; first += d.group) {
		int count = to - first < d.group ? to - first : d.group;
		const real *dy = conv_group_dy(computed, dout, deferred, first, count, s);
		for (int i = 0; i < count; i++)
			conv_weight_gradient_image(&g, dy + i * out_size, in + (first + i) * in_size);
		double started = profile_clock();
		if (conv_claim(epilogue.claims, first))
			conv_backward_data_images(&d, din, dy, in, first, count, write, epilogue);
		*data_seconds += profile_clock() - started;
	}
	/* the other threads' groups still unclaimed, from their last */
	double started = profile_clock();
	size_t ins = n * in_size, outs = n * out_size;
	bool shared = conv_overlaps(din, ins, dout, outs) || conv_overlaps(din, ins, deferred.dy, outs) || conv_overlaps(din, ins, deferred.in, outs);
	struct conv_groups others = conv_groups_begin(n, d.group, false);
	int first, count;
	while (!shared && conv_next_group(&others, epilogue.claims, &first, &count))
		conv_backward_data_images(&d, din, conv_group_dy(computed, dout, deferred, first, count, s), in, first, count, write, epilogue);
	*data_seconds += profile_clock() - started;
	#pragma omp barrier
	conv_weight_gradient_end(&g, dweight, scratch, scratch_per_thread);
}

#endif
