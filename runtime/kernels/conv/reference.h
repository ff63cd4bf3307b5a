/* The reference kernels, one screen each: im2col, then one BLIS gemm per
 * image. Y = W . im2col(X); dX = col2im(W^T . dY); dW = sum over the
 * images of dY . im2col(X)^T, summed per thread and then across the threads
 * in thread order. What the fast kernels are tested against
 * (tests/test_kernels.c), and the fallback where a machine's micro-kernel
 * does not fit. A bf16 network's convolutions run them too, each gemm's
 * operands rounded to bf16 (kernels/products.h): Winograd's transforms
 * would multiply other values than the bf16 ones. */
#ifndef RESGEN_KERNELS_CONV_REFERENCE_H
#define RESGEN_KERNELS_CONV_REFERENCE_H

#include "kernels/conv/image.h"

/* ---- reference kernels: im2col, then one gemm per image ---- */

/* columns (C * K * K, H_OUT * W_OUT) of one image (C, H, W); zero outside */
KERNEL_HELPER void conv_im2col_rows(real *columns, int ld, const real *image, int channels, int height, int width, int kernel_size, int stride, int height_out, int width_out)
{
	int pad = kernel_size / 2;
	for (int c = 0; c < channels; c++)
		for (int ky = 0; ky < kernel_size; ky++)
			for (int kx = 0; kx < kernel_size; kx++) {
				real *row = columns + ((size_t)(c * kernel_size + ky) * kernel_size + kx) * ld;
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
					if (stride == 1) /* a copy, where the stride is not a constant (out of line) */
						memcpy(out + lo, in + lo, sizeof(real) * (size_t)(hi > lo ? hi - lo : 0));
					else
						for (int ox = lo; ox < hi; ox++)
							out[ox] = in[ox * stride];
					for (int ox = hi; ox < width_out; ox++)
						out[ox] = 0;
				}
			}
}

KERNEL_HELPER void conv_im2col(real *columns, const real *image, int channels, int height, int width, int kernel_size, int stride, int height_out, int width_out)
{
	conv_im2col_rows(columns, height_out * width_out, image, channels, height, width, kernel_size, stride, height_out, width_out);
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
					if (stride == 1) /* vectorised where the stride is not a constant */
						for (int ox = lo; ox < hi; ox++)
							out[ox] += in[ox];
					else
						for (int ox = lo; ox < hi; ox++)
							out[ox * stride] += in[ox];
				}
			}
}

/* An image rounded once to bf16 with its convolution's zeros (rows wp
 * apart), in the thread's PRODUCTS_PADDED_SLOT; and where each row of its
 * columns (c, ky, kx) starts in it for output row 0 of a stride-1
 * convolution: output row oy's are wp * oy further on. The image as bf16
 * with the whole border (x, conv_pad_rounded: what a caller gathers
 * columns from), or as rounded reals (wide, conv_pad_widened: what a path
 * that reads the columns in place reads, products_read_image), with zero
 * rows above and below, and beside the rows too or not as
 * products_image_rows_apart says (masks standing for them). */
struct conv_padded {
	const ptrdiff_t *offsets;
	const uint16_t *x;
	const real *wide;
	int wp;
};

/* The image, activated by its prologue pre where that is not NULL (BN's
 * scale and shift, then ReLU: conv_activate's values), bordered in bf16
 * (conv_pad_rounded) or in rounded reals (conv_pad_widened): each
 * plane's rows activated and converted or rounded in one call
 * (products_image_rows), the zeros before, between and after them, size
 * bytes a value. A plane: pad rows of zeros, and pad zeros more, before
 * the first value and after the last. Where there are zeros beside the
 * rows, the whole image is zeroed first in one call: a call a gap of a
 * few bytes cost more than the rounding. */
KERNEL_HELPER struct conv_padded conv_pad_image(const real *image, const real *pre, struct conv_shape s, bool widened)
{
	int pad = s.k / 2, wp = widened ? products_image_rows_apart(s.w_in) : s.w_in + 2 * pad, side = (wp - s.w_in) / 2;
	int patch = CONV_PATCH(s.c_in, s.k);
	size_t lead = (size_t)pad * wp + pad, plane = (size_t)(s.h_in + 2 * pad) * wp + 2 * (pad - side);
	size_t last = lead + (size_t)(s.h_in - 1) * wp + s.w_in, size = widened ? sizeof(real) : sizeof(uint16_t);
	ptrdiff_t *offsets = products_scratch(PRODUCTS_PADDED_SLOT, sizeof(ptrdiff_t) * patch + size * s.c_in * plane);
	char *padded = (char *)(offsets + patch);
	if (side > 0)
		memset(padded, 0, size * s.c_in * plane);
	for (int c = 0; c < s.c_in; c++) {
		char *to = padded + size * c * plane;
		const real *from = image + (size_t)c * s.h_in * s.w_in;
		real prologue[2] = {pre ? pre[c] : 1, pre ? pre[s.c_in + c] : 0};
		const real *activation = pre ? prologue : NULL;
		if (side == 0) { /* the rows one run */
			memset(to, 0, size * lead);
			products_image_rows(to + size * lead, 0, from, 0, 1, s.h_in * s.w_in, widened, activation);
			memset(to + size * last, 0, size * (plane - last));
		} else
			products_image_rows(to + size * lead, wp, from, s.w_in, s.h_in, s.w_in, widened, activation);
		for (int ky = 0; ky < s.k; ky++)
			for (int kx = 0; kx < s.k; kx++)
				offsets[(c * s.k + ky) * s.k + kx] = (ptrdiff_t)(c * plane) + ky * wp + kx;
	}
	return (struct conv_padded){offsets, widened ? NULL : (const uint16_t *)padded, widened ? (const real *)padded : NULL, wp};
}

KERNEL_HELPER struct conv_padded conv_pad_rounded(const real *image, const real *pre, struct conv_shape s) { return conv_pad_image(image, pre, s, false); }
KERNEL_HELPER struct conv_padded conv_pad_widened(const real *image, const real *pre, struct conv_shape s) { return conv_pad_image(image, pre, s, true); }

/* columns(X) of a stride-1 convolution written into packed in pairs of
 * rows (products_columns), each output row's pixels gathered from the
 * image activated by pre (or not, where NULL), padded and rounded once. */
KERNEL_HELPER void conv_columns_pairs(struct products_columns packed, const real *image, const real *pre, struct conv_shape s)
{
	struct conv_padded padded = conv_pad_rounded(image, pre, s);
	for (int oy = 0; oy < s.h_out; oy++)
		products_gather(packed, 0, oy * s.w_out, false, padded.x + (size_t)oy * padded.wp, padded.offsets, CONV_PATCH(s.c_in, s.k), s.w_out);
}

/* columns(X)^T of a stride-1 convolution (an even number of output
 * columns where in pairs) written into packed, each output row's pixels
 * gathered from the image activated by pre (or not, where NULL), padded
 * and rounded once. */
KERNEL_HELPER void conv_columns_transposed(struct products_columns packed, const real *image, const real *pre, struct conv_shape s)
{
	struct conv_padded padded = conv_pad_rounded(image, pre, s);
	for (int oy = 0; oy < s.h_out; oy++)
		products_gather(packed, oy * s.w_out / (packed.pairs ? 2 : 1), 0, true, padded.x + (size_t)oy * padded.wp, padded.offsets,
				CONV_PATCH(s.c_in, s.k), s.w_out);
}

/* The output rows whose columns one product takes, where conv_products_image
 * widens a stride-1 convolution's columns from its padded image
 * (products_band_rows); all of them elsewhere. */
KERNEL_HELPER int conv_band_rows(struct conv_shape s, struct products p)
{
	int patch = CONV_PATCH(s.c_in, s.k);
	if (s.k == 1 || s.stride != 1 || products_read_image(p, s.c_out, patch, s.k))
		return s.h_out;
	return products_band_rows(p, s.c_out, patch, s.w_out, s.h_out);
}

/* result (C_OUT, PIXELS) = beta result + W . columns(image) for one image
 * of a convolution of shape s, the image activated by its prologue pre
 * (or not, where NULL), w as products_pack made W (C_OUT x PATCH): the
 * columns written packed where p's path reads them so
 * (products_columns), else made in own (PATCH x PIXELS reals) and packed
 * by the product; activated: room for the image activated or rounded
 * (C_IN x H_IN x W_IN reals). Where the image is padded (the columns read
 * in place, or gathered from it: every stride-1 convolution wider than
 * 1x1 whose columns are written packed), it is activated and rounded in
 * that one pass. */
KERNEL_HELPER void conv_products_image(real *result, const real *image, const real *pre, struct products_operand w, struct conv_shape s, real *own,
				       real *activated, real beta, struct products p)
{
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	bool direct = s.k == 1 && s.stride == 1; /* the image is its own columns */
	int band = conv_band_rows(s, p); /* all rows but where the widened columns go in bands */
	struct products_columns packed = products_columns(p, patch, band * s.w_out);
	if (!direct && s.stride == 1 && products_read_image(p, s.c_out, patch, s.k)) {
		/* the columns read in place from the image rounded once */
		struct conv_padded padded = conv_pad_widened(image, pre, s);
		products_gemm_image(p, w, s.c_out, pixels, patch, padded.wide, padded.offsets, s.w_out, padded.wp, beta, result, pixels);
		return;
	}
	if (packed.x && direct) { /* the image activated and rounded straight into the columns */
		products_image_columns(p, packed, image, s.c_in, pixels, pre);
		products_gemm_columns(p, w, packed, s.c_out, pixels, patch, beta, result, pixels);
		return;
	}
	if (packed.x && !direct && packed.pairs && s.stride == 1) {
		conv_columns_pairs(packed, image, pre, s);
		products_gemm_columns(p, w, packed, s.c_out, pixels, patch, beta, result, pixels);
		return;
	}
	if (packed.x && !direct && s.stride == 1) {
		/* widened: the image activated and rounded in one pass, with its
		 * border, then its columns widened from it row by row, a band
		 * of output rows for each product */
		struct conv_padded padded = conv_pad_rounded(image, pre, s);
		for (int oy = 0; oy < s.h_out; oy += band) {
			int rows = oy + band <= s.h_out ? band : s.h_out - oy;
			struct products_columns part = products_columns(p, patch, rows * s.w_out);
			products_gather_along(part, padded.x + (size_t)oy * padded.wp, padded.offsets, patch, rows, padded.wp, s.w_out);
			products_gemm_columns(p, w, part, s.c_out, rows * s.w_out, patch, beta, result + (size_t)oy * s.w_out, pixels);
		}
		return;
	}
	image = conv_activate(activated, image, pre, s.c_in, s.h_in * s.w_in);
	if (packed.x && !direct && !packed.pairs) {
		/* strided: the image rounded once, its columns then written packed */
		products_round(activated, image, (size_t)s.c_in * s.h_in * s.w_in);
		conv_im2col_rows(packed.x, packed.ld, activated, s.c_in, s.h_in, s.w_in, s.k, s.stride, s.h_out, s.w_out);
		products_gemm_columns(p, w, packed, s.c_out, pixels, patch, beta, result, pixels);
	} else {
		const real *columns = image;
		if (!direct) {
			conv_im2col(own, image, s.c_in, s.h_in, s.w_in, s.k, s.stride, s.h_out, s.w_out);
			columns = own;
		}
		products_gemm_with(p, w, 0, s.c_out, pixels, patch, columns, pixels, beta, result, pixels);
	}
}

/* Where a reference kernel stages an output image (CONV_REFERENCE): after
 * its columns and the input activated. */
KERNEL_HELPER real *conv_reference_staged(real *own, struct conv_shape s)
{
	return own + CONV_ALIGN(CONV_PATCH(s.c_in, s.k) * s.h_out * s.w_out) + CONV_ALIGN(s.c_in * s.h_in * s.w_in);
}

/* out (n, C_OUT, H_OUT, W_OUT) = conv(in (n, C_IN, H_IN, W_IN), weight (C_OUT, C_IN, K, K)), then the epilogue;
 * stream: each image staged in the thread's scratch and streamed to out (conv_streams) */
KERNEL_HELPER void conv_forward_reference(real *out, const real *in, const real *weight, const real *pre, struct conv_epilogue epilogue, int n, struct conv_shape s, real *scratch, size_t scratch_per_thread, bool stream, struct products p)
{
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	size_t out_size = (size_t)s.c_out * pixels;
	real *own = scratch + (size_t)omp_get_thread_num() * scratch_per_thread + CONV_ALIGN(s.c_out * patch);
	real *activated = own + CONV_ALIGN(patch * pixels);
	real *staged = stream ? conv_reference_staged(own, s) : NULL;
	struct products_operand w = products_pack(p, 0, false, s.c_out, patch, weight, patch);
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++) {
		/* Y(i) (C_OUT, PIXELS) = W (C_OUT, PATCH) . columns (PATCH, PIXELS) */
		real *result = staged ? staged : out + i * out_size;
		size_t in_size = (size_t)s.c_in * s.h_in * s.w_in;
		if (i + 1 < n) /* the next image, and the shortcut the epilogue adds, fetched while the product sums */
			products_fetch_during(p, in + (i + 1) * in_size, in_size);
		if (epilogue.shortcut)
			products_fetch_during(p, epilogue.shortcut + i * out_size, out_size);
		conv_products_image(result, in + i * in_size, pre, w, s, own, activated, 0, p);
		conv_epilogue_end(epilogue, result, i, s);
		if (staged)
			conv_stream_image(out + i * out_size, staged, out_size);
	}
}

/* Where a kernel keeps dW[co][c][ky][kx] in its own sum: at
 * co * co + c * c + ky * ky + kx * kx (these strides). */
struct conv_strides {
	int co, c, ky, kx;
};

/* dW (C_OUT, C_IN, K, K) += the shares' sums (share_count), added in share
 * order; each share's own sum sits at the start of the scratch of the
 * thread whose share it is, laid out by own. Sums laid out as dW is
 * (OIHW), or as a 1x1 convolution's transposed (C_IN, C_OUT), are added a
 * run of reals at a time, each share's run after the other's, which
 * vectorises; element by element, with an index divided into
 * (co, c, ky, kx) for each, they took a measurable part of a deep network's
 * step (docs/kernel-measurements.md, conv_sum_weight_gradients). */
enum { CONV_SUM_RUN = 256 };

/* to[j] += the sum over shares of their own + from + j, j < count */
KERNEL_HELPER void conv_sum_run(real *to, const real *scratch, size_t scratch_per_thread, size_t from, int count)
{
	int shares = share_count();
	for (int first = 0; first < count; first += CONV_SUM_RUN) {
		int run = count - first < CONV_SUM_RUN ? count - first : CONV_SUM_RUN;
		real sum[CONV_SUM_RUN] = {0};
		for (int t = 0; t < shares; t++) {
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
	int shares = share_count(), patch = CONV_PATCH(s.c_in, s.k);
	bool oihw = own.co == patch && own.c == s.k * s.k && (s.k == 1 || (own.ky == s.k && own.kx == 1)); /* a 1x1's ky, kx: any */
	if (s.k == 1 && own.co == 1 && own.c == s.c_out) {
		/* (C_IN, C_OUT): blocks of 16 x 16, read and written a line
		 * at a time (a column of dW at a time, its reals 1 KiB apart
		 * for 256 input channels, would share a set of the L1 cache) */
		enum { SIDE = 16 };
		#pragma omp for schedule(static)
		for (int c0 = 0; c0 < s.c_in; c0 += SIDE)
			for (int co0 = 0; co0 < s.c_out; co0 += SIDE) {
				int columns = s.c_in - c0 < SIDE ? s.c_in - c0 : SIDE, rows = s.c_out - co0 < SIDE ? s.c_out - co0 : SIDE;
				real sum[SIDE][SIDE] = {0}; /* [c][co] */
				for (int t = 0; t < shares; t++)
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
					for (int t = 0; t < shares; t++)
						sum += scratch[(size_t)t * scratch_per_thread + from];
					to[(c * s.k + ky) * s.k + kx] += sum;
				}
	}
}

/* Whether a bf16 network's weight gradient keeps its sums transposed,
 * dW^T (PATCH, C_OUT) = columns(X) . dY^T: in f32 builds where p's path
 * reads operands a caller may write, for a stride-1 convolution wider
 * than 1x1 whose output rows hold pairs whole, of more than 16 output
 * channels or whose columns p's path reads in place as A
 * (conv_weight_gradient_in_place). Then the columns, the larger operand,
 * are read in place or copied as A, row by row of the padded image, where
 * as B they would be transposed; and dY^T, C_OUT columns, is packed as B.
 * Copied, with 16 the kernels' blocks of 32 columns ran half full, slower
 * than the transposed copy they spare, but where they are gathered
 * straight into the pairs the kernel reads (bf16_gathers_into_pairs).
 * A 1x1 convolution of stride 1 to fewer channels than it takes, more
 * than 16, swaps too, so that dY, the smaller, is the operand transposed:
 * on images of more than BF16_K_PART / 2 pixels, which take one product
 * an image (conv_weight_gradient_batch) either way. With 16 output
 * channels, a product of 16 columns ran at two thirds of the rate of one
 * of 16 rows, which cost more than the smaller transpose spared (64 -> 16
 * at 32x32).
 * Each product is the same and so is every sum's order (a . b = b . a
 * exactly): the bits do not change. */
KERNEL_HELPER bool conv_weight_gradient_in_place(struct conv_shape s, struct products p);

KERNEL_HELPER bool conv_weight_gradient_swapped(struct conv_shape s, struct products p)
{
#ifdef RESGEN_F64
	(void)s;
	(void)p;
	return false;
#else
	enum bf16_path path = (enum bf16_path)p.path;
	if (!products_bf16(p) || bf16_b_layout(path) == BF16_B_OWN || s.stride != 1)
		return false;
	if (s.k == 1)
		return s.c_out < s.c_in && s.c_out > 16 && s.h_out * s.w_out > BF16_K_PART / 2;
	return s.w_out % 2 == 0 && (s.c_out > 16 || conv_weight_gradient_in_place(s, p) ||
				    (s.c_out == 16 && bf16_gathers_into_pairs(path, (enum bf16_arithmetic)p.arithmetic)));
#endif
}

/* Whether the swapped weight gradient reads the columns in place from the
 * image in bf16 (products_read_image_a: vdpbf16ps, a 3x3 kernel whose
 * output keeps the image's size), rather than copying them. */
KERNEL_HELPER bool conv_weight_gradient_in_place(struct conv_shape s, struct products p)
{
	return s.stride == 1 && s.h_in == s.h_out && s.w_in == s.w_out &&
	       products_read_image_a(p, CONV_PATCH(s.c_in, s.k), s.h_out * s.w_out, s.w_out, s.k);
}

/* Where the reference weight gradient keeps dW[co][c][ky][kx] in a
 * share's own sum: as dW, or transposed (conv_weight_gradient_swapped). */
KERNEL_HELPER struct conv_strides conv_reference_strides(struct conv_shape s, struct products p)
{
	if (conv_weight_gradient_swapped(s, p))
		return (struct conv_strides){1, s.k * s.k * s.c_out, s.k * s.c_out, s.c_out};
	return (struct conv_strides){CONV_PATCH(s.c_in, s.k), s.k * s.k, s.k, 1};
}

/* Whether a bf16 weight gradient that is not swapped writes its columns
 * straight into the product's packed operand (products_columns, where
 * the path reads one a caller may write): a stride-1 convolution wider
 * than 1x1, whose output rows hold pairs whole where the path reads B in
 * pairs. Elsewhere they are made in f32 and the product packs them, but
 * for a 1x1 one of stride 1 that takes its images one at a time
 * (conv_weight_gradient_batch): its image is its columns, activated as it
 * is written into B (or packed as A, where swapped). */
KERNEL_HELPER bool conv_weight_gradient_writes_packed(struct conv_shape s, struct products p)
{
#ifdef RESGEN_F64
	(void)s;
	(void)p;
	return false;
#else
	enum bf16_b_layout layout = products_bf16(p) ? bf16_b_layout((enum bf16_path)p.path) : BF16_B_OWN;
	return layout != BF16_B_OWN && s.k > 1 && s.stride == 1 && (layout != BF16_B_PAIRS || s.w_out % 2 == 0);
#endif
}

/* own += dY(i) . columns(X(i))^T for one image (laid out by
 * conv_reference_strides); columns, activated: this thread's scratch for
 * them. */
KERNEL_HELPER void conv_weight_gradient_reference_image(real *own, const real *dy, const real *image, const real *pre, struct conv_shape s, real *columns, real *activated, struct products p)
{
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	bool direct = s.k == 1 && s.stride == 1;
	if (conv_weight_gradient_swapped(s, p) && direct) {
		/* X . dY^T: dY, the smaller, transposed; X activated as it is
		 * packed where the products pack it */
		struct products_operand x;
		if (products_packs_image(p))
			x = products_pack_image(p, 0, image, s.c_in, pixels, pre);
		else
			x = (struct products_operand){conv_activate(activated, image, pre, s.c_in, pixels), pixels, false, NULL};
		products_gemm_with(p, x, 1, s.c_in, s.c_out, pixels, dy, pixels, 1, own, s.c_out);
		return;
	}
	if (conv_weight_gradient_swapped(s, p)) {
		/* the columns' rows gathered, or read in place where
		 * conv_weight_gradient_in_place */
		struct conv_padded padded = conv_pad_rounded(image, pre, s);
		products_gemm_rows_along(p, 1, patch, s.c_out, pixels, padded.x, padded.offsets, s.h_out, padded.wp, s.w_out, dy, pixels, 1,
					 own, s.c_out);
		return;
	}
	if (conv_weight_gradient_writes_packed(s, p)) {
		struct products_columns packed = products_columns(p, pixels, patch);
		conv_columns_transposed(packed, image, pre, s);
		struct products_operand a = products_pack(p, 0, false, s.c_out, pixels, dy, pixels);
		products_gemm_columns(p, a, packed, s.c_out, patch, pixels, 1, own, patch);
		return;
	}
	struct products_columns packed = direct ? products_columns(p, pixels, patch) : (struct products_columns){NULL, 0, false};
	if (packed.x) { /* X^T activated as it is written into B */
		products_image_transposed(p, packed, image, s.c_in, pixels, pre);
		struct products_operand a = products_pack(p, 0, false, s.c_out, pixels, dy, pixels);
		products_gemm_columns(p, a, packed, s.c_out, patch, pixels, 1, own, patch);
		return;
	}
	image = conv_activate(activated, image, pre, s.c_in, s.h_in * s.w_in);
	if (!direct)
		conv_im2col(columns, image, s.c_in, s.h_in, s.w_in, s.k, s.stride, s.h_out, s.w_out);
	products_gemm(p, 0, 1, s.c_out, patch, pixels, dy, pixels, direct ? image : columns, pixels, 1, own, patch);
}

/* Several images in one product. Where a bf16 weight gradient makes its
 * columns in f32 (neither swapped nor written packed: 1x1 and strided
 * convolutions, 3x3 ones on odd widths where the path reads B in pairs,
 * every one on the portable path), each
 * image's product sums over its pixels alone, while its C, all C_OUT x
 * C_IN K K sums, is read and written whole: on 7x7 images 49 products a
 * sum for 9.4 MB of C (512 -> 512, 3x3). There a batch of images is
 * staged side by side along K, each one's pixels padded with zeros to
 * what its own product pads them to (a pair, or a block of the tiles
 * order: bf16.h), and summed by one product of about BF16_K_PART: each
 * sum takes the same steps in the same order, C held between images as
 * it was in memory, so the bits do not change, and C is read once for
 * the batch. Not where the padding would add an eighth or more to the
 * products (the tiles order's blocks on 7x7). */
KERNEL_HELPER int conv_weight_gradient_span(struct conv_shape s, struct products p)
{
	int pixels = s.h_out * s.w_out, unit = p.arithmetic == BF16_TILES ? BF16_TILE_K : 2;
	return (pixels + unit - 1) / unit * unit;
}

/* The images one product sums (1: each its own, as it comes) */
KERNEL_HELPER int conv_weight_gradient_batch(struct conv_shape s, struct products p)
{
	if (!products_bf16(p) || conv_weight_gradient_swapped(s, p) || conv_weight_gradient_writes_packed(s, p))
		return 1;
	int span = conv_weight_gradient_span(s, p), pixels = s.h_out * s.w_out;
	int batch = BF16_K_PART / span;
	return (span - pixels) * 8 < span && batch > 1 ? batch : 1;
}

/* The thread's stage for a batch: C_OUT rows of the images' dY, then
 * PATCH rows of their columns, batch spans each. */
KERNEL_HELPER real *conv_weight_gradient_stage_of(struct conv_shape s, struct products p, int batch)
{
	size_t rows = (size_t)s.c_out + CONV_PATCH(s.c_in, s.k);
	return products_scratch(PRODUCTS_STAGED_SLOT, sizeof(real) * rows * batch * conv_weight_gradient_span(s, p));
}

/* Image number staged of the batch into stage: its dY and its columns
 * (activated by pre, if not NULL, into activated first where they are
 * gathered), span reals from the image before it, zero past its pixels. */
KERNEL_HELPER void conv_weight_gradient_stage(real *stage, int batch, int staged, const real *dy, const real *image, const real *pre, struct conv_shape s, real *activated, struct products p)
{
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out, span = conv_weight_gradient_span(s, p);
	size_t ld = (size_t)batch * span;
	real *dys = stage + (size_t)staged * span, *columns = dys + (size_t)s.c_out * ld;
	for (int c = 0; c < s.c_out; c++)
		memcpy(dys + c * ld, dy + (size_t)c * pixels, sizeof(real) * pixels);
	if (s.k == 1 && s.stride == 1)
		for (int c = 0; c < s.c_in; c++)
			conv_read_run(columns + c * ld, image + (size_t)c * pixels, pixels, pre, c, s.c_in);
	else
		conv_im2col_rows(columns, (int)ld, conv_activate(activated, image, pre, s.c_in, s.h_in * s.w_in), s.c_in, s.h_in, s.w_in,
				 s.k, s.stride, s.h_out, s.w_out);
	if (span > pixels) {
		for (int c = 0; c < s.c_out; c++)
			memset(dys + c * ld + pixels, 0, sizeof(real) * (span - pixels));
		for (int r = 0; r < patch; r++)
			memset(columns + r * ld + pixels, 0, sizeof(real) * (span - pixels));
	}
}

/* own += the staged images' dY . columns^T, in one product */
KERNEL_HELPER void conv_weight_gradient_sum_staged(real *own, const real *stage, int batch, int staged, struct conv_shape s, struct products p)
{
	int patch = CONV_PATCH(s.c_in, s.k), span = conv_weight_gradient_span(s, p), ld = batch * span;
	products_gemm(p, 0, 1, s.c_out, patch, staged * span, stage, ld, stage + (size_t)s.c_out * ld, ld, 1, own, patch);
}

/* dweight += sum over images of dY(i) . columns(X(i))^T */
KERNEL_HELPER void conv_weight_gradient_reference(real *dweight, const real *dout, const real *in, const real *pre, int n, struct conv_shape s, real *scratch, size_t scratch_per_thread, struct products p)
{
	int patch = CONV_PATCH(s.c_in, s.k);
	real *dweight_own = scratch + (size_t)omp_get_thread_num() * scratch_per_thread;
	real *columns = dweight_own + CONV_PARTS_AT(s);
	memset(dweight_own, 0, sizeof(real) * s.c_out * patch);
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++)
		conv_weight_gradient_reference_image(dweight_own, dout + (size_t)i * s.c_out * s.h_out * s.w_out, in + (size_t)i * s.c_in * s.h_in * s.w_in, pre, s,
						     columns, columns + CONV_ALIGN(patch * s.h_out * s.w_out), p);
	conv_sum_weight_gradients(dweight, scratch, scratch_per_thread, s, conv_reference_strides(s, p));
}

/* Whether a bf16 network's data gradient runs as a convolution itself,
 * dX = conv(dY, W flipped and transposed) (conv_transposed): one product
 * an image of K = C_OUT K K, with no columns folded back; for stride 1,
 * an odd window and the image's size kept. Elsewhere it is W^T . dY(i),
 * whose columns col2im adds back onto their pixels. The two sum in
 * different orders: which one runs follows from the shape alone. */
KERNEL_HELPER bool conv_data_gradient_convolves(struct conv_shape s, struct products p)
{
	return products_bf16(p) && s.k > 1 && s.k % 2 == 1 && s.stride == 1 && s.h_in == s.h_out && s.w_in == s.w_out;
}

/* The weights as the data gradient's products take them, packed once a
 * call where p multiplies in bf16 (products_pack): W flipped and
 * transposed, (C_IN, C_OUT K K), where it convolves; W^T otherwise. The
 * flipped matrix lies in the thread's buffer slot 0, which the f64
 * builds' operand points to: nothing else takes that slot there. */
KERNEL_HELPER struct products_operand conv_data_gradient_weights(const real *weight, struct conv_shape s, struct products p)
{
	int patch = CONV_PATCH(s.c_in, s.k);
	if (!conv_data_gradient_convolves(s, p))
		return products_pack(p, 1, true, patch, s.c_out, weight, patch);
	int kk = s.k * s.k, flipped_patch = CONV_PATCH(s.c_out, s.k);
	real *flipped = products_scratch(0, sizeof(real) * s.c_in * flipped_patch);
	for (int c = 0; c < s.c_in; c++)
		for (int co = 0; co < s.c_out; co++)
			for (int t = 0; t < kk; t++)
				flipped[(size_t)c * flipped_patch + co * kk + t] = weight[((size_t)co * s.c_in + c) * kk + kk - 1 - t];
	return products_pack(p, 1, false, s.c_in, flipped_patch, flipped, flipped_patch);
}

/* dimage (+)= W^T . dy for one image, folded back onto the pixels the
 * columns came from, or where conv_data_gradient_convolves, conv(dy, W
 * flipped); dcolumns: this thread's scratch for the columns W^T . dy;
 * w: conv_data_gradient_weights. */
KERNEL_HELPER void conv_data_gradient_reference_image(real *dimage, const real *dy, struct products_operand w, struct conv_shape s, real *dcolumns, enum gradient_write write, struct products p)
{
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	if (conv_data_gradient_convolves(s, p)) {
		struct conv_shape t = conv_transposed(s);
		struct products_columns packed = products_columns(p, CONV_PATCH(t.c_in, t.k), t.h_out * t.w_out);
		/* room for dY's columns where the product packs them, or for dY
		 * rounded where they are written widened; none where they are
		 * gathered in pairs or read in place */
		size_t spare = packed.x ? (size_t)t.c_in * t.h_in * t.w_in : (size_t)CONV_PATCH(t.c_in, t.k) * t.h_out * t.w_out;
		bool room_needed = !(packed.x && packed.pairs) && !products_read_image(p, t.c_out, CONV_PATCH(t.c_in, t.k), t.k);
		real *room = room_needed ? products_scratch(PRODUCTS_PADDED_SLOT, sizeof(real) * spare) : NULL;
		conv_products_image(dimage, dy, NULL, w, t, room, room, write == GRADIENT_ADD, p);
		return;
	}
	if (s.k == 1 && s.stride == 1) { /* the image is its own columns */
		products_gemm_with(p, w, 0, patch, pixels, s.c_out, dy, pixels, write == GRADIENT_ADD, dimage, pixels);
		return;
	}
	if (write == GRADIENT_SET)
		memset(dimage, 0, sizeof(real) * s.c_in * s.h_in * s.w_in);
	products_gemm_with(p, w, 0, patch, pixels, s.c_out, dy, pixels, 0, dcolumns, pixels);
	conv_col2im_add(dimage, dcolumns, s.c_in, s.h_in, s.w_in, s.k, s.stride, s.h_out, s.w_out);
}

/* din (+)= W^T . dY(i) for every image */
KERNEL_HELPER void conv_data_gradient_reference(real *din, const real *dout, const real *weight, int n, struct conv_shape s, real *scratch, size_t scratch_per_thread, enum gradient_write write, struct products p)
{
	real *dcolumns = scratch + (size_t)omp_get_thread_num() * scratch_per_thread + CONV_ALIGN(s.c_out * CONV_PATCH(s.c_in, s.k));
	struct products_operand w = conv_data_gradient_weights(weight, s, p);
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++)
		conv_data_gradient_reference_image(din + (size_t)i * s.c_in * s.h_in * s.w_in, dout + (size_t)i * s.c_out * s.h_out * s.w_out, w, s, dcolumns, write, p);
}

#endif
