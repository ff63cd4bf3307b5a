/* The direct fast kernels: BLIS's micro-kernel (runtime/machine/gemm.h) on panels
 * packed straight from the activations (implicit im2col), Y = W .
 * columns(X) one micro-kernel block at a time; and the row split, which
 * packs a k x k window as k rows of k x c_in where that packs less. */
#ifndef RESGEN_KERNELS_CONV_DIRECT_H
#define RESGEN_KERNELS_CONV_DIRECT_H

#include "kernels/conv/reference.h"

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

/* A stride-1 1x1 convolution's columns are its image (C, PIXELS): a panel of
 * width pixels from first is every channel's run of them, one after the other
 * (activated by pre, if not NULL). Those runs lie a channel apart, more
 * streams than the hardware prefetches, so the runs CONV_PANELS_AHEAD panels
 * on are fetched as each is packed. An image is packed a panel at a time if
 * it has 16 panels or more; smaller ones, whose rows leave the fetches little
 * to run ahead of, whole (conv_pack_image_panels): each measured the faster
 * for its images (docs/kernel-measurements.md, conv_packs_by_panel). */
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

/* The same image as all its panels at once, a channel's row at a time, each
 * row read in one run: the images of fewer than 16 panels. With a prologue,
 * the row two channels on is fetched as this one is packed, which paid when
 * 32 x 32 images, whose 4 KiB rows end where the hardware's prefetch stops,
 * were packed here too (docs/kernel-measurements.md, CONV_PREFETCH_ROWS). */
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
CONV_ANY_WIDTH(conv_implicit_gemm_of, (real *out, const real *padded, const real *pre, const real *packed, real *panel, real *whole, struct conv_shape s, real beta, const struct gemm_micro *micro, int pixel_width), (out, padded, pre, packed, panel, whole, s, beta, micro, pixel_width))

/* The row split of a stride-1 convolution that keeps the image's size:
 * with Y[(co, ky)] = sum over (ci, kx) of W[co][ci][ky][kx] X(ci, kx),
 * X(ci, kx) taken at every row of the padded image, the output is
 * out[co][y][x] = sum over ky of Y[(co, ky)][y + ky][x]. The GEMM then has
 * K times as many rows of C and K times shorter sums, over a few more
 * pixels (the padded rows). It pays when the channels fill the kernel's
 * block badly: 16 channels take two blocks of 12 on a 32 x 12 kernel,
 * 48 rows take four (conv_method_choose decides where it runs). */

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
CONV_ANY_WIDTH(conv_implicit_gemm_split_of, (real *out, const real *padded, const real *packed, real *panel, real *rows, struct conv_shape s, real beta, const struct gemm_micro *micro, int pixel_width), (out, padded, packed, panel, rows, s, beta, micro, pixel_width))

#endif
