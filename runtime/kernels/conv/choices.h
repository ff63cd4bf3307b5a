/* Which algorithm each pass of a convolution runs, how its images are
 * grouped, and whether it streams its output past the caches: chosen once
 * per instance (conv_choose) into a struct conv_choices the kernels follow
 * and `NAME explain` prints (conv_explain). What changes the result's bits,
 * the algorithm (direct, row split, Winograd and its tile), follows from
 * the shape alone, so that every kind of node computes the same sums; what
 * changes only the speed (Winograd's group of images, the sides of a 1x1
 * weight gradient, streaming) follows the machine (runtime/machine/machine.h).
 * The rules count micro-kernel steps: blocks of mr x nr outputs, each a sum
 * of k products, as BLIS's kernel computes them; the algorithm's rules count
 * them in the blocks of one fixed kernel (conv_rule_micro).
 * docs/kernel-measurements.md gives the measurements behind each rule. */
#ifndef RESGEN_KERNELS_CONV_CHOICES_H
#define RESGEN_KERNELS_CONV_CHOICES_H

#include <stdio.h>

#include "kernels/conv/shape.h"

/* The panel widths: channels along one side of the kernel's block, pixels along the other. */
KERNEL_HELPER int conv_channel_width(const struct gemm_micro *micro) { return micro->prefers_rows ? micro->mr : micro->nr; }
KERNEL_HELPER int conv_pixel_width(const struct gemm_micro *micro) { return micro->prefers_rows ? micro->nr : micro->mr; }
KERNEL_HELPER int conv_blocks(int rows, int width) { return (rows + width - 1) / width; }

/* The blocks the algorithm's rules count in, whatever kernel BLIS runs
 * (kernels/sizes.h), column-stored C preferred. Any BLIS kernel adds each
 * output's k products in order (gemm.h), so the algorithm, not the
 * kernel, sets the bits. */
static const struct gemm_micro conv_rule_micro = {CONV_RULE_MR, CONV_RULE_NR, 0};

KERNEL_HELPER bool conv_winograd_applies(struct conv_shape s)
{
	return CONV_WINOGRAD_APPLIES(s.k, s.stride, s.h_in, s.w_in, s.h_out, s.w_out);
}

/* Where the row splits apply: the forward pass's and data gradient's to a
 * stride-1 convolution wider than 1x1 that keeps the image's size, the
 * weight gradient's to one whose k is odd. The kernels test these beside
 * a choice (conv_method_of; conv_weight_plan): the shape is a constant
 * there, so each instance compiles only the methods its shape allows. */
KERNEL_HELPER bool conv_row_split_applies(struct conv_shape s)
{
	return s.k != 1 && s.stride == 1 && s.h_out == s.h_in && s.w_out == s.w_in;
}

KERNEL_HELPER bool conv_weight_split_applies(struct conv_shape s) { return conv_row_split_applies(s) && s.k % 2 == 1; }

KERNEL_HELPER bool conv_winograd_tile_applies(struct conv_shape s, int m)
{
	return conv_winograd_applies(s) && s.h_out % m == 0 && s.w_out % m == 0;
}

/* How the forward pass, or the data gradient (a convolution itself, of
 * the transposed shape), runs:
 * - reference: im2col, then one BLIS gemm an image (no usable micro-kernel,
 *   or a strided data gradient);
 * - plain: the direct convolution on packed panels (kernels/conv/direct.h);
 * - row split: a k x k window as k rows of 1 x k (kernels/conv/direct.h),
 *   for stride 1 and the image's size kept, where its steps, a tenth
 *   added for summing the rows, are fewer than the direct convolution's;
 * - Winograd (kernels/conv/winograd.h), for a 3x3 convolution of stride 1
 *   and even sides, where a group of up to CONV_WINOGRAD_GROUP images'
 *   tiles fills a panel of pixels at least, and its panels half at least.
 * A group: the images run at once (Winograd's, to fill its panels), else 1. */
enum conv_method { CONV_REFERENCE, CONV_PLAIN, CONV_ROW_SPLIT, CONV_WINOGRAD };

struct conv_method_choice {
	enum conv_method method;
	int group;
	int tiles, width, panels; /* Winograd's: a group's tiles, the panel width, the panels they fill */
	double direct, split;     /* micro-kernel steps an image: direct, row split (0: does not apply) */
	bool forced;              /* by RESGEN_CHOICES */
};

/* How the weight gradient runs: the reference (no micro-kernel, or
 * strided); a 1x1 one's dY . X^T, its operands' sides swapped where that
 * fills the blocks better; for a wider one, by the patches, the row split
 * or Winograd, whichever the step counts estimate fewest. */
enum conv_weight_method { CONV_WEIGHT_REFERENCE, CONV_WEIGHT_PATCHES, CONV_WEIGHT_1X1, CONV_WEIGHT_SPLIT, CONV_WEIGHT_WINOGRAD };

struct conv_weight_choice {
	enum conv_weight_method method;
	bool swapped;                    /* 1x1: dY's channels on the pixels' side */
	int blocks, swapped_blocks;      /* 1x1: blocks of the kernel either way */
	double patches, split, winograd; /* estimated steps an image (0: does not apply) */
	bool forced;
};

struct conv_choices {
	struct conv_method_choice forward, data;
	struct conv_weight_choice weight;
	signed char stream;  /* -1: by the rules of conv_streams, else forced off or on */
	size_t cache_bytes;  /* the last-level cache the rules compare with */
};

/* The forward pass's method for shape s (the data gradient's: for the
 * transposed shape). */
static struct conv_method_choice conv_method_choose(const struct gemm_micro *micro, struct conv_shape s, struct choice_override o)
{
	struct conv_method_choice c = {CONV_REFERENCE, 1, 0, 0, 0, 0, 0, false};
	if (!micro)
		return c;
	c.method = CONV_PLAIN;
	int channel_width = conv_channel_width(&conv_rule_micro), pixel_width = conv_pixel_width(&conv_rule_micro);
	int pixels = s.h_out * s.w_out;
	c.direct = (double)conv_blocks(s.c_out, channel_width) * conv_blocks(pixels, pixel_width) * CONV_PATCH(s.c_in, s.k);
	if (conv_winograd_applies(s)) {
		int tiles = CONV_TILES_OF(s.h_in, s.w_in, s.tile);
		c.width = pixel_width;
		c.tiles = CONV_GROUP(tiles, pixel_width) * tiles;
		c.panels = conv_blocks(c.tiles, pixel_width);
		if (o.winograd == 1 || (o.winograd < 0 && c.tiles >= c.width && 2 * c.tiles >= c.panels * c.width)) {
			/* the group, which changes no sum, fills the machine's panels */
			c.method = CONV_WINOGRAD;
			c.width = conv_pixel_width(micro);
			c.group = CONV_GROUP(tiles, c.width);
			c.tiles = c.group * tiles;
			c.panels = conv_blocks(c.tiles, c.width);
			c.forced = o.winograd == 1;
			return c;
		}
	}
	if (!conv_row_split_applies(s))
		return c;
	int row_pixels = (s.h_in + s.k - 1) * s.w_out;
	c.split = (double)conv_blocks(s.c_out * s.k, channel_width) * conv_blocks(row_pixels, pixel_width) * s.c_in * s.k;
	bool split = o.row_split >= 0 ? o.row_split : c.split * 1.1 < c.direct;
	c.forced = o.row_split >= 0 || (o.winograd == 0 && conv_winograd_applies(s));
	if (split)
		c.method = CONV_ROW_SPLIT;
	return c;
}

/* The weight gradient's method. The row split's rows go on whichever side
 * of the kernel's block takes fewer blocks; Winograd's products for each
 * place of its tile likewise, each block's sum taken as 8 steps longer
 * for its load and store of C and its transforms as a quarter as much
 * again (an estimate, which chose what measured fastest for 16, 32 and
 * 64 channels at 32x32, 16x16 and 8x8 on skx's kernels and haswell's). */
static struct conv_weight_choice conv_weight_choose(const struct gemm_micro *micro, struct conv_shape s, struct choice_override o)
{
	struct conv_weight_choice c = {CONV_WEIGHT_REFERENCE, false, 0, 0, 0, 0, 0, false};
	if (!micro || s.stride != 1)
		return c;
	int channel_width = conv_channel_width(micro), pixel_width = conv_pixel_width(micro);
	if (s.k == 1) {
		c.method = CONV_WEIGHT_1X1;
		c.blocks = conv_blocks(s.c_out, channel_width) * conv_blocks(s.c_in, pixel_width);
		c.swapped_blocks = conv_blocks(s.c_out, pixel_width) * conv_blocks(s.c_in, channel_width);
		c.swapped = o.swap >= 0 ? o.swap : c.swapped_blocks < c.blocks;
		c.forced = o.swap >= 0;
		return c;
	}
	/* the algorithm, which sets the bits, by the rule's blocks (the
	 * sides of a 1x1 one's, above, set only the speed) */
	const struct gemm_micro *rule = &conv_rule_micro;
	channel_width = conv_channel_width(rule);
	pixel_width = conv_pixel_width(rule);
	c.method = CONV_WEIGHT_PATCHES;
	int patch = CONV_PATCH(s.c_in, s.k), pixels = s.h_out * s.w_out;
	c.patches = (double)conv_blocks(s.c_out, channel_width) * conv_blocks(patch, pixel_width) * pixels;
	if (!conv_weight_split_applies(s))
		return c;
	int rows = s.k * s.c_out, columns = s.k * s.c_in, row_pixels = (s.h_in + s.k - 1) * s.w_out;
	int on_a = conv_blocks(rows, rule->mr) * conv_blocks(columns, rule->nr);
	int on_b = conv_blocks(rows, rule->nr) * conv_blocks(columns, rule->mr);
	c.split = 1.1 * (on_a < on_b ? on_a : on_b) * row_pixels;
	bool split = o.weight_split >= 0 ? o.weight_split : c.split < c.patches;
	c.forced = o.weight_split >= 0;
	if (conv_winograd_applies(s) && o.winograd != 0) {
		int winograd_a = conv_blocks(s.c_out, rule->mr) * conv_blocks(s.c_in, rule->nr);
		int winograd_b = conv_blocks(s.c_out, rule->nr) * conv_blocks(s.c_in, rule->mr);
		c.winograd = 1.25 * CONV_PLACES(s.tile) * (winograd_a < winograd_b ? winograd_a : winograd_b) *
			     (CONV_TILES_OF(s.h_out, s.w_out, s.tile) + 8);
		if (o.winograd == 1 || c.winograd < (split ? c.split : c.patches)) {
			c.method = CONV_WEIGHT_WINOGRAD;
			c.forced = o.winograd == 1;
			return c;
		}
	}
	c.forced = c.forced || (o.winograd == 0 && conv_winograd_applies(s));
	if (split)
		c.method = CONV_WEIGHT_SPLIT;
	return c;
}

/* The method an instance of shape s runs: the one chosen, where the shape
 * allows it (always, for a choice of conv_method_choose), written so
 * that the compiler, with s a constant, keeps only the methods the shape
 * allows. */
KERNEL_HELPER enum conv_method conv_method_of(struct conv_shape s, enum conv_method chosen)
{
	if (chosen == CONV_WINOGRAD)
		return conv_winograd_applies(s) ? CONV_WINOGRAD : CONV_PLAIN;
	if (chosen == CONV_ROW_SPLIT)
		return conv_row_split_applies(s) ? CONV_ROW_SPLIT : CONV_PLAIN;
	return chosen;
}

/* The data gradient's convolution: dY by W flipped, of the transposed shape. */
KERNEL_HELPER struct conv_shape conv_transposed(struct conv_shape s)
{
	return (struct conv_shape){s.c_out, s.h_out, s.w_out, s.c_in, s.h_in, s.w_in, s.k, 1, s.tile};
}

/* Every choice of an instance of shape s, on a machine whose micro-kernel
 * is micro (NULL: none usable) and whose last-level cache has cache_bytes. */
static struct conv_choices conv_choose(struct conv_shape s, const struct gemm_micro *micro, size_t cache_bytes, struct choice_override o)
{
	struct conv_choices c;
	c.forward = conv_method_choose(micro, s, o);
	c.data = (struct conv_method_choice){CONV_REFERENCE, 1, 0, 0, 0, 0, 0, false};
	if (s.stride == 1)
		c.data = conv_method_choose(micro, conv_transposed(s), o);
	c.weight = conv_weight_choose(micro, s, o);
	c.stream = o.stream;
	c.cache_bytes = cache_bytes;
	return c;
}

/* Whether a pass whose tensors, read and written over its n images, come
 * to reals reals should stage each output image in the thread's scratch
 * and stream it to memory from there (conv_stream_image), rather than
 * write it in place: where they are larger than the last-level cache,
 * what the pass writes first is out of the cache by the time anything
 * reads it, and a plain store first reads each line it writes from
 * memory. Where they fit, the next pass may find what was written in
 * the cache. Only passes that take one image at a time stage. */
KERNEL_HELPER bool conv_streams(const struct conv_choices *c, size_t reals)
{
	if (c->stream >= 0)
		return c->stream;
	return c->cache_bytes && reals * sizeof(real) > c->cache_bytes;
}

/* The data gradient streams where conv_streams says, and wherever the two
 * threads' cores have a last-level cache each (machine_threads_apart, as
 * last measured before the pass): the plan gives a gradient the slot of
 * others no longer needed, whose lines the other thread mostly wrote,
 * and a plain store would first fetch each from the other's cache. */
KERNEL_HELPER bool conv_streams_gradient(const struct conv_choices *c, size_t reals)
{
	return c->stream >= 0 ? c->stream : machine_threads_apart() || conv_streams(c, reals);
}

/* ---- explain: the choices in words ---- */

static const char *conv_forced_note(bool forced) { return forced ? " (forced by RESGEN_CHOICES)" : ""; }

static void conv_explain_method(FILE *out, const char *pass, struct conv_shape s, const struct conv_method_choice *c)
{
	fprintf(out, "    %-8s ", pass);
	switch (c->method) {
	case CONV_REFERENCE:
		fprintf(out, "reference: im2col, then a BLIS gemm an image (%s)\n",
			s.stride != 1 ? "strided: the fast data gradient needs stride 1" : "no micro-kernel of BLIS fits");
		return;
	case CONV_WINOGRAD:
		fprintf(out, "Winograd F(%dx%d, 3x3), %d image%s a group: %d tiles fill %d panel%s of %d pixels%s\n", s.tile,
			s.tile, c->group, c->group > 1 ? "s" : "", c->tiles, c->panels, c->panels > 1 ? "s" : "", c->width,
			conv_forced_note(c->forced));
		return;
	case CONV_ROW_SPLIT:
		fprintf(out, "row split: %.0f micro-kernel steps an image against the direct convolution's %.0f%s\n", c->split,
			c->direct, conv_forced_note(c->forced));
		return;
	case CONV_PLAIN:
		break;
	}
	fprintf(out, "%s: %.0f micro-kernel steps an image", s.k == 1 ? "pointwise (1x1) GEMM" : "direct (implicit im2col)", c->direct);
	if (c->split > 0)
		fprintf(out, "; the row split's %.0f are not a tenth fewer", c->split);
	if (c->tiles > 0 && !c->forced)
		fprintf(out, "; Winograd's %d tiles would fill %d panel%s of %d too thinly", c->tiles, c->panels, c->panels > 1 ? "s" : "", c->width);
	if (s.stride != 1)
		fprintf(out, "; stride %d: no row split or Winograd", s.stride);
	fprintf(out, "%s\n", conv_forced_note(c->forced));
}

static void conv_explain_weight(FILE *out, struct conv_shape s, const struct conv_weight_choice *c)
{
	fprintf(out, "    %-8s ", "weight");
	switch (c->method) {
	case CONV_WEIGHT_REFERENCE:
		fprintf(out, "reference: im2col, then a BLIS gemm an image (%s)\n",
			s.stride != 1 ? "strided" : "no micro-kernel of BLIS fits");
		return;
	case CONV_WEIGHT_1X1:
		fprintf(out, "pointwise dY . X^T, %s: %d blocks against %d%s\n",
			c->swapped ? "dY's channels on the pixels' side" : "dY's channels on the channels' side",
			c->swapped ? c->swapped_blocks : c->blocks, c->swapped ? c->blocks : c->swapped_blocks, conv_forced_note(c->forced));
		return;
	case CONV_WEIGHT_WINOGRAD:
		fprintf(out, "Winograd F(%dx%d, 3x3)", s.tile, s.tile);
		break;
	case CONV_WEIGHT_SPLIT:
		fprintf(out, "row split");
		break;
	case CONV_WEIGHT_PATCHES:
		fprintf(out, "by the patches (implicit im2col)");
		break;
	}
	fprintf(out, ": estimated steps an image: patches %.0f", c->patches);
	if (c->split > 0)
		fprintf(out, ", row split %.0f", c->split);
	if (c->winograd > 0)
		fprintf(out, ", Winograd %.0f", c->winograd);
	fprintf(out, "%s\n", conv_forced_note(c->forced));
}

/* Whether, and why, a pass of n images whose tensors come to reals reals streams. */
static void conv_explain_stream(FILE *out, const char *what, const struct conv_choices *c, size_t reals, int group, bool gradient)
{
	double mib = (double)reals * sizeof(real) / (1 << 20), cache = (double)c->cache_bytes / (1 << 20);
	fprintf(out, "    %-8s ", "streams");
	if (group > 1)
		fprintf(out, "%s: no, it takes groups of images (staging takes one)\n", what);
	else if (c->stream >= 0)
		fprintf(out, "%s: %s (forced by RESGEN_CHOICES)\n", what, c->stream ? "yes" : "no");
	else if (!c->cache_bytes)
		fprintf(out, "%s: %s (Linux gives no cache size)\n", what, gradient ? "where the cores are apart" : "no");
	else
		fprintf(out, "%s: %s: its tensors, %.1f MiB, %s the %.0f MiB cache%s\n", what,
			conv_streams(c, reals) ? "yes" : gradient ? "where the cores are apart" : "no", mib,
			conv_streams(c, reals) ? "exceed" : "fit", cache, gradient && !conv_streams(c, reals) ? " (probed before each pass)" : "");
}

/* The choices of layer's instance, at batch n; shortcut: its forward
 * epilogue adds a residual sum (another tensor read). */
static void conv_explain(FILE *out, const char *layer, struct conv_shape s, const struct conv_choices *c, int n, bool shortcut)
{
	size_t in_size = (size_t)s.c_in * s.h_in * s.w_in, out_size = (size_t)s.c_out * s.h_out * s.w_out;
	fprintf(out, "%s: %dx%d convolution, stride %d, %d -> %d channels, %dx%d -> %dx%d\n", layer, s.k, s.k, s.stride,
		s.c_in, s.c_out, s.h_in, s.w_in, s.h_out, s.w_out);
	conv_explain_method(out, "forward", s, &c->forward);
	conv_explain_method(out, "data", s, &c->data);
	conv_explain_weight(out, s, &c->weight);
	if (c->forward.method == CONV_REFERENCE)
		fprintf(out, "    %-8s output: no (the reference kernel writes in place)\n", "streams");
	else
		conv_explain_stream(out, "output", c, n * (in_size + (shortcut ? 2 : 1) * out_size), c->forward.group, false);
	if (c->data.method == CONV_REFERENCE)
		fprintf(out, "    %-8s input gradient: no (the reference kernel writes in place)\n", "streams");
	else
		conv_explain_stream(out, "input gradient", c, n * (2 * in_size + out_size), c->data.group, true);
}

#endif
