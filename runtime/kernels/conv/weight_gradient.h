/* The weight gradient, dW = sum over the images of dY . columns(X)^T: by
 * patches, as a 1x1 product, by the row split or by Winograd, as
 * conv_weight_plan decides for the shape and the micro-kernel; each thread
 * sums its images into its own part, and the parts are added in thread
 * order, so that a fixed thread count gives the same bits every run. */
#ifndef RESGEN_KERNELS_CONV_WEIGHT_GRADIENT_H
#define RESGEN_KERNELS_CONV_WEIGHT_GRADIENT_H

#include "kernels/conv/forward.h"

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
CONV_ANY_WIDTH(conv_weight_gradient_of, (real *dweight, const real *gradient, const real *padded, real *panel, struct conv_shape s, const struct gemm_micro *micro, int pixel_width), (dweight, gradient, padded, panel, s, micro, pixel_width))

KERNEL_HELPER void conv_weight_gradient(real *dweight, const real *gradient, const real *padded, real *panel, struct conv_shape s, const struct gemm_micro *micro)
{
	CONV_WITH_PIXEL_WIDTH(micro, conv_weight_gradient_of, dweight, gradient, padded, panel, s, micro);
}

/* A 1x1 convolution's weight gradient is dY . X^T, both operands packed
 * whole by conv_pack_channels, so either may take either side of the
 * micro-kernel's block. Swapped: dY's channels go on the pixels' side
 * (the forward pass's), the input channels on the channels' side. That
 * pays where it fills the blocks better: on a 32 x 12 kernel, 16 -> 64
 * takes 2 x 2 blocks swapped against 1 x 6 (conv_weight_choose). */

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
 * as many reals packed. */

/* How a weight gradient's method (conv_weight_choose) lays out its
 * operands: gradient_width, the width of dY's panels; gradient_first:
 * they are the micro-kernel's A. */
struct conv_weight_plan {
	enum conv_weight_method method;
	int gradient_width, input_width;
	bool gradient_first;
	int pixels; /* the sums' length: the output's pixels, or the padded rows' */
	struct conv_strides own;
	struct conv_strides product; /* Winograd's: of the products of each place */
	int rows;                    /* Winograd's: the products' rows of output channels */
};

KERNEL_HELPER struct conv_weight_plan conv_weight_plan(const struct gemm_micro *micro, struct conv_shape s, const struct conv_weight_choice *c)
{
	int channel_width = conv_channel_width(micro), pixel_width = conv_pixel_width(micro);
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	struct conv_weight_plan w = {CONV_WEIGHT_PATCHES, channel_width, pixel_width, micro->prefers_rows, pixels,
				     {patch, 1, s.k * s.c_in, s.c_in}, {0, 0, 0, 0}, s.c_out};
	if (s.k == 1) { /* the 1x1 packing, whenever not the reference */
		bool swapped = c->swapped;
		w.method = CONV_WEIGHT_1X1;
		w.gradient_width = swapped ? pixel_width : channel_width;
		w.input_width = swapped ? channel_width : pixel_width;
		w.gradient_first = micro->prefers_rows != swapped;
		w.own = swapped ? (struct conv_strides){1, s.c_out, 0, 0} : (struct conv_strides){s.c_in, 1, 0, 0};
		return w;
	}
	enum conv_weight_method method = CONV_ALGORITHM_OF(s.weight, c->method);
	if (conv_winograd_applies(s) && method == CONV_WEIGHT_WINOGRAD) {
		/* the products for each place of its tile, C_OUT on the A side or on the B side */
		int winograd_a = conv_blocks(s.c_out, micro->mr) * conv_blocks(s.c_in, micro->nr);
		int winograd_b = conv_blocks(s.c_out, micro->nr) * conv_blocks(s.c_in, micro->mr);
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
	if (!conv_weight_split_applies(s) || method != CONV_WEIGHT_SPLIT)
		return w;
	/* dY's rows on the kernel's A side (mr wide) or on its B side */
	int rows = s.k * s.c_out, columns = s.k * s.c_in, row_pixels = (s.h_in + s.k - 1) * s.w_out;
	int on_a = conv_blocks(rows, micro->mr) * conv_blocks(columns, micro->nr);
	int on_b = conv_blocks(rows, micro->nr) * conv_blocks(columns, micro->mr);
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
 * pass's (the shape's tile). F(4x4) is what lets 16 channels use
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

/* The transformed tiles of one image stored pixel by pixel with its channels
 * innermost (conv_pad_transposed), for each place as panels of width
 * channels, the tiles being the sum's index; the lanes past the last channel
 * are left as they are (conv_weight_gradient_begin zeroed them once, rather
 * than for every tile of every image: docs/kernel-measurements.md
 * (conv_winograd_pack_both)). gradient: the image is dY, else the input
 * padded by one (conv_winograd_tile_transform). Sixteen channels of a tile at
 * a time, as vectors, whatever the panels' width: a vector's lanes are stored
 * in one run for each panel they fall in (12 and 4 of 16 channels in skx's
 * panels of 12, 6, 6 and 4 in haswell's of 6). */
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
	int m = s.tile, set = CONV_WEIGHT_SET(s.h_out, s.w_out, m);
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

/* The weight gradient of one image at a time, summed per share of the
 * images (thread_share_of) in that share's private sum (at the start of
 * its thread's scratch, whichever thread takes it: share_claim), finished
 * by conv_weight_gradient_finish, then added across the shares in their
 * order by conv_weight_gradient_end. A strided convolution (three of a
 * network), or a machine without a usable micro-kernel, runs the reference
 * kernel's image. part: the calling thread's scratch for it
 * (CONV_WEIGHT_PART reals). */
struct conv_weight_gradient {
	const struct gemm_micro *micro; /* NULL: the reference kernel */
	struct conv_shape s;            /* the convolution's */
	const real *pre;                /* the prologue, or NULL */
	struct products multiplies;     /* how the reference kernel multiplies */
	struct conv_weight_plan w;      /* the fast kernel's */
	real *own;                      /* the share's private sum */
	/* the fast kernel's: packed dY; padded X (or a 1x1's X packed), a
	 * panel, and the row split's padded dY; the reference's: columns in
	 * gradient, the activated input in padded; Winograd's: dY's tiles in
	 * gradient, the input's in panel, dY and the input with their
	 * channels innermost in gradient_padded and padded, the products */
	real *gradient, *padded, *panel, *gradient_padded, *products;
	int filled;  /* Winograd's: the images whose tiles are packed, not yet summed */
	bool summed; /* Winograd's: whether products hold a sum yet (the first group sets them) */
	/* the reference's: the images one product sums
	 * (conv_weight_gradient_batch), those staged for it, and where */
	int batch, staged;
	real *stage;
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

KERNEL_HELPER struct conv_weight_gradient conv_weight_gradient_begin(const real *pre, struct conv_shape s, const struct conv_choices *c, real *scratch, size_t scratch_per_thread, real *part, int share)
{
	struct conv_weight_gradient g = {gemm_micro(), s, pre, c->products, {0}, scratch + (size_t)share * scratch_per_thread, part, NULL, NULL, NULL, NULL, 0, false, 1, 0, NULL};
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	memset(g.own, 0, sizeof(real) * s.c_out * patch);
	if (s.stride != 1 || c->weight.method == CONV_WEIGHT_REFERENCE) {
		g.micro = NULL;
		g.padded = part + CONV_ALIGN(patch * pixels);
		g.batch = conv_weight_gradient_batch(s, c->products);
		g.stage = g.batch > 1 ? conv_weight_gradient_stage_of(s, c->products, g.batch) : NULL;
		return g;
	}
	g.w = conv_weight_plan(g.micro, s, &c->weight);
	if (g.w.method == CONV_WEIGHT_WINOGRAD) {
		int m = s.tile, set = CONV_WEIGHT_SET(s.h_out, s.w_out, m), places = CONV_PLACES(m);
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
					      g->filled * CONV_TILES_OF(g->s.h_out, g->s.w_out, g->s.tile), g->summed ? 1 : 0);
		g->summed = true;
	}
	g->filled = 0;
}

/* own += dY(i) . columns(X(i))^T: dy, image: the image's dY and X */
KERNEL_HELPER void conv_weight_gradient_image(struct conv_weight_gradient *g, const real *dy, const real *image)
{
	struct conv_shape s = g->s;
	struct conv_weight_plan w = g->w;
	if (!g->micro && g->batch > 1) {
		conv_weight_gradient_stage(g->stage, g->batch, g->staged, dy, image, g->pre, s, g->padded, g->multiplies);
		if (++g->staged == g->batch) {
			conv_weight_gradient_sum_staged(g->own, g->stage, g->batch, g->staged, s, g->multiplies);
			g->staged = 0;
		}
		return;
	}
	if (!g->micro) {
		conv_weight_gradient_reference_image(g->own, dy, image, g->pre, s, g->gradient, g->padded, g->multiplies);
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
		if (++g->filled == CONV_WEIGHT_GROUP(CONV_TILES_OF(s.h_out, s.w_out, s.tile)))
			conv_winograd_sum_images(g);
		break;
	case CONV_WEIGHT_PATCHES: /* the patches in the order (ky, kx, c) */
	case CONV_WEIGHT_REFERENCE: /* not here: g->micro is NULL for it */
		conv_pack_channels(g->gradient, dy, NULL, s.c_out, pixels, w.gradient_width);
		conv_pad_transposed(g->padded, image, g->pre, s.c_in, s.h_in, s.w_in, s.k / 2);
		conv_weight_gradient(g->own, g->gradient, g->padded, g->panel, s, g->micro);
	}
}

/* The share's sum complete, after its last image: the images staged
 * last summed; Winograd's products taken back to the weights' place. */
KERNEL_HELPER void conv_weight_gradient_finish(struct conv_weight_gradient *g)
{
	if (g->staged)
		conv_weight_gradient_sum_staged(g->own, g->stage, g->batch, g->staged, g->s, g->multiplies);
	g->staged = 0;
	if (g->micro && g->w.method == CONV_WEIGHT_WINOGRAD) {
		conv_winograd_sum_images(g);
		if (g->summed) /* else a share without images, its own sum zero */
			CONV_WITH_WINOGRAD_TILE(g->s, conv_winograd_weights_back, g->own, g->products, g->s, g->w);
	}
}

/* dweight += the shares' sums, after a barrier that follows every share's
 * conv_weight_gradient_finish; c: the convolution's choices */
KERNEL_HELPER void conv_weight_gradient_end(real *dweight, const real *scratch, size_t scratch_per_thread, struct conv_shape s, const struct conv_choices *c)
{
	struct conv_strides reference = conv_reference_strides(s, c->products);
	const struct gemm_micro *micro = gemm_micro();
	bool fast = micro && s.stride == 1 && c->weight.method != CONV_WEIGHT_REFERENCE;
	conv_sum_weight_gradients(dweight, scratch, scratch_per_thread, s, fast ? conv_weight_plan(micro, s, &c->weight).own : reference);
}

/* dweight += the weight gradient, the images shared among the threads
 * by shares (share_claim: shares, a zeroed int a thread). */
KERNEL_HELPER void conv_backward_weights(real *dweight, const real *dout, const real *in, const real *pre, int n, struct conv_shape s, const struct conv_choices *c, real *scratch, size_t scratch_per_thread, int *shares)
{
	real *part = scratch + (size_t)omp_get_thread_num() * scratch_per_thread + CONV_PARTS_AT(s);
	int share, looked = 0;
	while ((share = share_claim(shares, &looked)) >= 0) {
		struct conv_weight_gradient g = conv_weight_gradient_begin(pre, s, c, scratch, scratch_per_thread, part, share);
		int from, to;
		thread_share_of(n, share, &from, &to);
		for (int i = from; i < to; i++)
			conv_weight_gradient_image(&g, dout + (size_t)i * s.c_out * s.h_out * s.w_out, in + (size_t)i * s.c_in * s.h_in * s.w_in);
		conv_weight_gradient_finish(&g);
	}
	#pragma omp barrier
	conv_weight_gradient_end(dweight, scratch, scratch_per_thread, s, c);
}

#endif
