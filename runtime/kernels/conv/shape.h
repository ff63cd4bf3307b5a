/* A convolution's shape (struct conv_shape), and where each of its
 * kernels' parts starts in a thread's scratch; the sizes themselves are
 * kernels/sizes.h's, which the generator plans the arena by. */
#ifndef RESGEN_KERNELS_CONV_SHAPE_H
#define RESGEN_KERNELS_CONV_SHAPE_H

#include "kernels/common.h"
#include "kernels/batch_norm.h"

/* A convolution's sizes, and the choices its shape alone makes: tile,
 * the m x m output tiles of Winograd's F(m x m, 3 x 3) where it applies
 * (CONV_TILE), else 0; and each pass's algorithm by the rules
 * (CONV_FORWARD_RULE, CONV_DATA_RULE, CONV_WEIGHT_RULE), which set the
 * sums' order. Every instance passes constants, which the always-inlined
 * helpers fold: each instance compiles one tile's transforms and its own
 * algorithms only (CONV_ALGORITHM_OF). */
struct conv_shape {
	int c_in, h_in, w_in, c_out, h_out, w_out, k, stride, tile;
	enum conv_method forward, data;
	enum conv_weight_method weight;
};

/* Where in a thread's scratch each part starts. */
#define CONV_PARTS_AT(s) CONV_ALIGN((s).c_out * CONV_PATCH((s).c_in, (s).k))
#define CONV_DATA_AT(s) (CONV_PARTS_AT(s) + CONV_WEIGHT_PART((s).c_in, (s).h_in, (s).w_in, (s).c_out, (s).h_out, (s).w_out, (s).k))
#define CONV_DEFERRED_AT(s) (CONV_DATA_AT(s) + CONV_DATA_PART((s).c_in, (s).h_in, (s).w_in, (s).c_out, (s).h_out, (s).w_out, (s).k))

#endif
