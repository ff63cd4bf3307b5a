/* The kernels' size rules: the scratch each kernel needs per thread and
 * the one choice a convolution's shape alone makes (Winograd's tile), as
 * constant expressions of the shape. Dependency-free, so that one
 * definition serves both sides: the kernels size their scratch by it, and
 * the generator plans each network's arena by it
 * (generator/stage2-graph/ops.c), so a network's scratch is exactly the
 * largest its kernels need. Reals of the precision built; BN's sums are
 * doubles. */
#ifndef RESGEN_KERNELS_SIZES_H
#define RESGEN_KERNELS_SIZES_H

#include <stddef.h>

/* GEMM_PANEL_MAX, the widest mr or nr a BLIS micro-kernel may have, and
 * CONV_RULE_MR x CONV_RULE_NR, the blocks a convolution's algorithm is
 * chosen by (kernels/conv/choices.h) whatever kernel BLIS runs */
#include "same_bits.h"

/* ---- batch normalisation -------------------------------------------------- */

/* Per channel of one image: a value of the channel (the shift) and the
 * sums over the image of x - shift and of its square, in doubles. */
enum { BATCH_NORM_IMAGE_SUMS = 3 };
/* BN backward's sums per thread: two doubles a channel, in reals of
 * either precision. */
#define BATCH_NORM_SCRATCH(channels) (4 * (size_t)(channels))

/* ---- convolution ------------------------------------------------------------ */

/* Winograd's applies to a 3x3 convolution of stride 1 that keeps its even
 * sides; its tile is 4 x 4 where they are multiples of 4, else 2 x 2. An
 * 8x8 image has only 4 tiles of 4 x 4: the passes take them in groups of
 * images. */
#define CONV_WINOGRAD_APPLIES(k, stride, h_in, w_in, h_out, w_out) \
	((k) == 3 && (stride) == 1 && (h_out) == (h_in) && (w_out) == (w_in) && (h_in) % 2 == 0 && (w_in) % 2 == 0)
#define CONV_TILE(k, stride, h_in, w_in, h_out, w_out) \
	(!CONV_WINOGRAD_APPLIES(k, stride, h_in, w_in, h_out, w_out) ? 0 : (h_out) % 4 == 0 && (w_out) % 4 == 0 ? 4 : 2)
/* The row split (a k x k window as k rows of 1 x k) applies to a stride-1
 * convolution wider than 1x1 that keeps the image's size; that of the
 * weight gradient to one whose k is odd too. */
#define CONV_ROW_SPLIT_APPLIES(k, stride, h_in, w_in, h_out, w_out) \
	((k) != 1 && (stride) == 1 && (h_out) == (h_in) && (w_out) == (w_in))
#define CONV_WEIGHT_SPLIT_APPLIES(k, stride, h_in, w_in, h_out, w_out) \
	(CONV_ROW_SPLIT_APPLIES(k, stride, h_in, w_in, h_out, w_out) && (k) % 2 == 1)

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
 * CONV_WEIGHT_FAST; the reference kernels', in each part: columns, the
 * input a prologue activates, and an output image staged (the forward's
 * output or the data gradient's input gradient, whichever is larger). */
#define CONV_REFERENCE(c_in, h_in, w_in, c_out, h_out, w_out, k)                                          \
	(CONV_ALIGN(CONV_PATCH(c_in, k) * (h_out) * (w_out)) + CONV_ALIGN((c_in) * (h_in) * (w_in)) + \
	 CONV_ALIGN(CONV_MAX((c_in) * (h_in) * (w_in), (c_out) * (h_out) * (w_out))))
#define CONV_FORWARD_PART(c_in, h_in, w_in, c_out, h_out, w_out, k)                                                                      \
	CONV_MAX(CONV_PADDED(c_in, h_in, w_in, k) + CONV_PACKED_ANY(c_out, c_in, k) + CONV_PANEL(CONV_PATCH(c_in, k)) + CONV_ROWS_OR_TILES(c_in, c_out, h_in, w_out, k) + \
			 CONV_ALIGN((c_out) * (h_out) * (w_out)),                                                                         \
		 CONV_REFERENCE(c_in, h_in, w_in, c_out, h_out, w_out, k))
#define CONV_DATA_PART(c_in, h_in, w_in, c_out, h_out, w_out, k)                                                                             \
	CONV_MAX(CONV_PADDED(c_out, h_out, w_out, k) + CONV_PACKED_ANY(c_in, c_out, k) + CONV_PANEL(CONV_PATCH(c_out, k)) + CONV_ROWS_OR_TILES(c_out, c_in, h_out, w_in, k) + \
			 CONV_ALIGN((c_in) * (h_in) * (w_in)),                                                                             \
		 CONV_REFERENCE(c_in, h_in, w_in, c_out, h_out, w_out, k))
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
/* The weight gradient's products sum over the tiles of as many images as make
 * CONV_WEIGHT_TILES tiles (up to CONV_WINOGRAD_GROUP): an 8x8 image has only
 * 4 of 4 x 4, and sums of 4 on the micro-kernel were mostly its start and
 * end. 64 tiles ran faster than 16, and 128 no faster than 64
 * (docs/kernel-measurements.md (CONV_WEIGHT_TILES)). */
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
	CONV_MAX(CONV_MAX(CONV_WEIGHT_FAST(c_in, h_in, w_in, c_out, h_out, w_out, k), CONV_REFERENCE(c_in, h_in, w_in, c_out, h_out, w_out, k)), \
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

/* ---- the algorithm: what sets a convolution's sums -------------------------- */

/* How the forward pass or the data gradient runs, and how the weight
 * gradient does (kernels/conv/choices.h says each). */
enum conv_method { CONV_REFERENCE, CONV_PLAIN, CONV_ROW_SPLIT, CONV_WINOGRAD };
enum conv_weight_method { CONV_WEIGHT_REFERENCE, CONV_WEIGHT_PATCHES, CONV_WEIGHT_1X1, CONV_WEIGHT_SPLIT, CONV_WEIGHT_WINOGRAD };

/* The rules, in micro-kernel steps (blocks of CONV_RULE_MR x CONV_RULE_NR
 * outputs, each a sum of k products), channels along the NR side and
 * pixels along the MR side (column-stored C). The algorithm follows from
 * the shape alone: the generator compiles each instance for its own
 * (generator/stage2-graph/ops.c), and conv_choose chooses by the same. */
#define CONV_RULE_BLOCKS(rows, width) (((long long)(rows) + (width) - 1) / (width))
#define CONV_RULE_MIN(a, b) ((a) < (b) ? (a) : (b))
/* A product of rows x columns blocks, on whichever side takes fewer. */
#define CONV_RULE_SIDES(rows, columns)                                                        \
	CONV_RULE_MIN(CONV_RULE_BLOCKS(rows, CONV_RULE_MR) * CONV_RULE_BLOCKS(columns, CONV_RULE_NR), \
		      CONV_RULE_BLOCKS(rows, CONV_RULE_NR) * CONV_RULE_BLOCKS(columns, CONV_RULE_MR))
/* An image's steps: the direct convolution's; the row split's, before the
 * tenth added for summing its rows. */
#define CONV_DIRECT_STEPS(c_in, c_out, h_out, w_out, k) \
	(CONV_RULE_BLOCKS(c_out, CONV_RULE_NR) * CONV_RULE_BLOCKS((h_out) * (w_out), CONV_RULE_MR) * CONV_PATCH(c_in, k))
#define CONV_SPLIT_STEPS(c_in, h_in, c_out, w_out, k) \
	(CONV_RULE_BLOCKS((c_out) * (k), CONV_RULE_NR) * CONV_RULE_BLOCKS(((h_in) + (k) - 1) * (w_out), CONV_RULE_MR) * (c_in) * (k))
/* Winograd's tiles of a group of images at the rule's panel width, and
 * whether they fill one panel at least and their panels half at least. */
#define CONV_RULE_TILES(h_in, w_in, m) (CONV_GROUP(CONV_TILES_OF(h_in, w_in, m), CONV_RULE_MR) * CONV_TILES_OF(h_in, w_in, m))
#define CONV_WINOGRAD_FILLS(tiles) \
	((tiles) >= CONV_RULE_MR && 2 * (long long)(tiles) >= CONV_RULE_BLOCKS(tiles, CONV_RULE_MR) * CONV_RULE_MR)
/* The forward pass's algorithm (the data gradient's: of the transposed
 * shape, stride 1): Winograd's where it applies and fills its panels, else
 * the row split where its steps, a tenth added, are fewer than the direct
 * convolution's, else the direct convolution. */
#define CONV_FORWARD_RULE(c_in, h_in, w_in, c_out, h_out, w_out, k, stride)                                                   \
	(CONV_WINOGRAD_APPLIES(k, stride, h_in, w_in, h_out, w_out) &&                                                          \
			 CONV_WINOGRAD_FILLS(CONV_RULE_TILES(h_in, w_in, CONV_TILE(k, stride, h_in, w_in, h_out, w_out)))       \
		 ? CONV_WINOGRAD                                                                                                \
	 : CONV_ROW_SPLIT_APPLIES(k, stride, h_in, w_in, h_out, w_out) &&                                                       \
			 11 * CONV_SPLIT_STEPS(c_in, h_in, c_out, w_out, k) < 10 * CONV_DIRECT_STEPS(c_in, c_out, h_out, w_out, k) \
		 ? CONV_ROW_SPLIT                                                                                               \
		 : CONV_PLAIN)
#define CONV_DATA_RULE(c_in, h_in, w_in, c_out, h_out, w_out, k, stride) \
	((stride) != 1 ? CONV_REFERENCE : CONV_FORWARD_RULE(c_out, h_out, w_out, c_in, h_in, w_in, k, 1))
/* The weight gradient's estimates, an image's steps: by the patches; by
 * the row split, before its tenth more; by Winograd's tiles of m x m,
 * each block's sum 8 steps longer for its load and store, before a
 * quarter more for the transforms. */
#define CONV_WEIGHT_PATCH_STEPS(c_in, c_out, h_out, w_out, k) \
	(CONV_RULE_BLOCKS(c_out, CONV_RULE_NR) * CONV_RULE_BLOCKS(CONV_PATCH(c_in, k), CONV_RULE_MR) * (h_out) * (w_out))
#define CONV_WEIGHT_SPLIT_STEPS(c_in, h_in, c_out, w_out, k) (CONV_RULE_SIDES((k) * (c_out), (k) * (c_in)) * ((h_in) + (k) - 1) * (w_out))
#define CONV_WEIGHT_WINOGRAD_STEPS(c_in, c_out, h_out, w_out, m) \
	(CONV_PLACES(m) * CONV_RULE_SIDES(c_out, c_in) * (CONV_TILES_OF(h_out, w_out, m) + 8))
/* The weight gradient's algorithm: the reference where strided, the 1x1
 * packing for a 1x1; else the fewest steps of the patches, the row split
 * (where it applies) and Winograd's (where it applies), in twentieths. */
#define CONV_WEIGHT_BEST_OF_TWO(c_in, h_in, c_out, w_out, k, h_out)                                      \
	CONV_RULE_MIN(22 * CONV_WEIGHT_SPLIT_STEPS(c_in, h_in, c_out, w_out, k), \
		      20 * CONV_WEIGHT_PATCH_STEPS(c_in, c_out, h_out, w_out, k))
#define CONV_WEIGHT_RULE(c_in, h_in, w_in, c_out, h_out, w_out, k, stride)                                                        \
	((stride) != 1 ? CONV_WEIGHT_REFERENCE                                                                                  \
	 : (k) == 1    ? CONV_WEIGHT_1X1                                                                                        \
	 : !CONV_WEIGHT_SPLIT_APPLIES(k, stride, h_in, w_in, h_out, w_out) ? CONV_WEIGHT_PATCHES                                 \
	 : CONV_WINOGRAD_APPLIES(k, stride, h_in, w_in, h_out, w_out) &&                                                         \
			 25 * CONV_WEIGHT_WINOGRAD_STEPS(c_in, c_out, h_out, w_out, CONV_TILE(k, stride, h_in, w_in, h_out, w_out)) < \
				 CONV_WEIGHT_BEST_OF_TWO(c_in, h_in, c_out, w_out, k, h_out)                                      \
		 ? CONV_WEIGHT_WINOGRAD                                                                                         \
	 : 22 * CONV_WEIGHT_SPLIT_STEPS(c_in, h_in, c_out, w_out, k) < 20 * CONV_WEIGHT_PATCH_STEPS(c_in, c_out, h_out, w_out, k) \
		 ? CONV_WEIGHT_SPLIT                                                                                            \
		 : CONV_WEIGHT_PATCHES)
#endif
