/* Vectors of eight and sixteen reals and the transposes built on them: the
 * packing of the weight gradient, whose two operands both run along the
 * pixels in memory, and Winograd's transforms, which run along the
 * channels. */
#ifndef RESGEN_KERNELS_CONV_LANES_H
#define RESGEN_KERNELS_CONV_LANES_H

#include "kernels/conv/direct.h"

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
 * (conv_transpose16): with AVX-512 in f32, where a row is one register, that
 * takes 64 shuffles, against 96 and twice the loads and stores for four 8 x 8
 * blocks, and packed faster except from memory, where either is bound by it
 * (docs/kernel-measurements.md, CONV_TRANSPOSE16). Elsewhere (AVX2, or f64,
 * whose 16 lanes are two registers or more) the 8 x 8 blocks serve. */
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
 * middle of a (H + 2 pad, W + 2 pad, C) buffer, whose border was zeroed once:
 * pixel by pixel, the channels innermost, so that each pixel's channels are
 * one run for the weight gradient's patches. Eight channels of eight pixels
 * are transposed at a time when the rows come in eights, along the row before
 * the next eight channels: the eight rows read lie a channel apart, 4 KiB in
 * a 32 x 32 image, in one set of the L1 cache, and with the next channels
 * read first they were evicted before the next pixels. 16 x 16 blocks
 * (conv_transpose16) measured slower here (docs/kernel-measurements.md
 * (conv_pad_transposed)): their rows are stored a pixel's channels apart,
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

#endif
