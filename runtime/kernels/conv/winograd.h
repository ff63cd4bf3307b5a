/* Winograd's F(m x m, 3 x 3), m 2 or 4, for 3x3 stride-1 convolutions that
 * keep their size: per tile, Y = A^T [(G g G^T) . (B^T d B)] A, the
 * elementwise products summed over the channels as (m + 2)^2 products on
 * the micro-kernel, one per place of the tile. The same transforms serve
 * the data gradient (W flipped) and the weight gradient. */
#ifndef RESGEN_KERNELS_CONV_WINOGRAD_H
#define RESGEN_KERNELS_CONV_WINOGRAD_H

#include "kernels/conv/lanes.h"

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

/* Where the tile m is a run-time value (test_kernels, the out-of-line
 * builds), GCC cannot match the transforms' rows written for m with those
 * read back (conv_winograd_tile_transform) and warns that one may be unset. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
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
#pragma GCC diagnostic pop

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
 * has fewer than a panel's width, so that its lanes do not run half
 * empty (conv_method_choose decides where Winograd runs; the shape's tile,
 * CONV_TILE, which tile). */

/* function(..., m) with shape s's tile m, 2 or 4, as a constant, for the
 * transforms to fold (as CONV_WITH_PIXEL_WIDTH passes a panel's width). */
#define CONV_WITH_WINOGRAD_TILE(s, function, ...)              \
	do {                                                   \
		if ((s).tile == 4)                             \
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
 * consecutive reals of a panel (width channels of an input, then the next
 * input's), so that each place's are stored as one vector; a kernel at a
 * time, the divisions by 6, 12 and 24 made packing as long as a weight
 * gradient (docs/kernel-measurements.md, conv_pack_weights_winograd). Each
 * lane computes what that code did, in the same order; the rows past the last
 * channel come out zero, if -0. */
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

/* V[e] = B^T d B of every tile of one padded image, packed for each place e
 * as panels of width tiles (the pixels of the other kernels), place after
 * place, as tiles first, first + 1, ... of a set of total tiles (its group's,
 * conv_winograd_of): F(2x2)'s, from the image padded by conv_pad.
 * CONV_WINOGRAD_ROWS rows of tiles at a time: B^T d of each, whole rows, then
 * (B^T d) B of each in vectors along it. The second pass reads what the first
 * stored at other offsets; a row at a time, each read came straight after the
 * stores it overlaps, waited for them to reach the cache (store forwarding
 * fails) (docs/kernel-measurements.md, conv_winograd_input). */
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

/* v = the reals from[l], l < lanes (up to 8), zero past them: read as a
 * vector where they make one or half of one. Copied lane by lane to memory,
 * the vector read from there would wait for those writes to reach the cache. */
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

/* Each place's channels of count transformed tiles (batch: tile i's place e
 * at tile_stride i + e lanes) into their panel rows at to, eight channels of
 * the tiles at a time transposed. One call for each count that comes as a
 * constant, and the places' loop in it, so that GCC keeps one pointer for the
 * rows: with the cases inside the loop, it kept one for each row of each
 * case, 32 of them, on the stack, and the adds to them were a large part of
 * the transform's time. */
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
 * (conv_winograd_tile_transform), then each place's eight channels of those
 * tiles transposed into their panel (conv_transpose8). Where a panel is
 * sixteen tiles wide and sixteen reals are one register (CONV_TRANSPOSE16:
 * zen3's kernels in f32 with AVX-512), sixteen tiles at a time, each place's
 * 16 x 16 block transposed in one piece and its panel rows stored as whole
 * cache lines, which ran a little faster (docs/kernel-measurements.md
 * (conv_winograd_input_tiles)). */
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

/* The rows of Winograd's products, in all three passes: the output channels,
 * rounded up to whole blocks of width (the micro-kernel's side they lie on)
 * where that adds at most an eighth of them (the room CONV_PRODUCT_ROWS
 * keeps). The packed operand's rows past the channels are zeros, and the
 * products' rows past them are never read. BLIS computes a block of fewer
 * rows into a temporary and copies it out, which cost more than the rows
 * rounding up adds (docs/kernel-measurements.md, conv_block_rows). */
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
CONV_ANY_WIDTH(conv_winograd_tiled, (real *out, const real *in, const real *pre, real *padded, const real *packed, real *tiles_of, int count, struct conv_shape s, real beta, const struct gemm_micro *micro, int pixel_width), (out, in, pre, padded, packed, tiles_of, count, s, beta, micro, pixel_width))

#endif
