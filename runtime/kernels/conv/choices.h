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
 * them in the blocks of one fixed kernel (kernels/sizes.h).
 * docs/kernel-measurements.md gives the measurements behind each rule. */
#ifndef RESGEN_KERNELS_CONV_CHOICES_H
#define RESGEN_KERNELS_CONV_CHOICES_H

#include <stdio.h>

#include "kernels/conv/shape.h"

/* The panel widths: channels along one side of the kernel's block, pixels along the other. */
KERNEL_HELPER int conv_channel_width(const struct gemm_micro *micro) { return micro->prefers_rows ? micro->mr : micro->nr; }
KERNEL_HELPER int conv_pixel_width(const struct gemm_micro *micro) { return micro->prefers_rows ? micro->nr : micro->mr; }
KERNEL_HELPER int conv_blocks(int rows, int width) { return (rows + width - 1) / width; }

/* function(arguments..., width) with the micro-kernel's pixel panel width,
 * passed as a constant when it is one the kernels BLIS runs on this
 * instruction set have, so that the packing copies unroll: haswell's and
 * zen3's (16 reals in f32, 8 in f64) everywhere, and skx's (32 and 16)
 * where AVX-512 is compiled for. Each constant is another copy of the
 * packing in every instance, which costs compile time
 * (docs/kernel-measurements.md (CONV_WITH_PIXEL_WIDTH)); any other width
 * (RESGEN_ISA=avx2 under skx's kernels, another BLIS's) runs the copy
 * compiled once a unit with every size a variable, function_any_width
 * (CONV_ANY_WIDTH): the same sums, more slowly. */
#ifdef RESGEN_F64
#define CONV_WIDE_PIXELS 16
#define CONV_NARROW_PIXELS 8
#else
#define CONV_WIDE_PIXELS 32
#define CONV_NARROW_PIXELS 16
#endif
#ifdef __AVX512F__
#define CONV_WITH_WIDE_PIXELS(function, ...)             \
	case CONV_WIDE_PIXELS:                           \
		function(__VA_ARGS__, CONV_WIDE_PIXELS); \
		break;
#else
#define CONV_WITH_WIDE_PIXELS(function, ...)
#endif
#define CONV_WITH_PIXEL_WIDTH(micro, function, ...)                                \
	do {                                                                       \
		switch (conv_pixel_width(micro)) {                                 \
		case CONV_NARROW_PIXELS:                                           \
			function(__VA_ARGS__, CONV_NARROW_PIXELS);                 \
			break;                                                     \
			CONV_WITH_WIDE_PIXELS(function, __VA_ARGS__)               \
		default:                                                           \
			function##_any_width(__VA_ARGS__, conv_pixel_width(micro)); \
		}                                                                  \
	} while (0)
/* function_any_width, taking function's parameters and passing its
 * arguments: not inlined or specialised to the shape (noipa). */
#define CONV_ANY_WIDTH(function, parameters, arguments) \
	static __attribute__((noipa, unused)) void function##_any_width parameters { function arguments; }

KERNEL_HELPER bool conv_winograd_applies(struct conv_shape s)
{
	return CONV_WINOGRAD_APPLIES(s.k, s.stride, s.h_in, s.w_in, s.h_out, s.w_out);
}

/* Where the row splits apply (kernels/sizes.h). */
KERNEL_HELPER bool conv_row_split_applies(struct conv_shape s)
{
	return CONV_ROW_SPLIT_APPLIES(s.k, s.stride, s.h_in, s.w_in, s.h_out, s.w_out);
}

KERNEL_HELPER bool conv_weight_split_applies(struct conv_shape s)
{
	return CONV_WEIGHT_SPLIT_APPLIES(s.k, s.stride, s.h_in, s.w_in, s.h_out, s.w_out);
}

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
	struct products products; /* a bf16 network's (every pass then the reference's), or PRODUCTS_REAL */
};

/* The forward pass's method for shape s (the data gradient's: for the
 * transposed shape). */
static struct conv_method_choice conv_method_choose(const struct gemm_micro *micro, struct conv_shape s, struct choice_override o)
{
	struct conv_method_choice c = {CONV_REFERENCE, 1, 0, 0, 0, 0, 0, false};
	if (!micro)
		return c;
	c.method = CONV_PLAIN;
	c.direct = (double)CONV_DIRECT_STEPS(s.c_in, s.c_out, s.h_out, s.w_out, s.k);
	if (conv_winograd_applies(s)) {
		int tiles = CONV_TILES_OF(s.h_in, s.w_in, s.tile);
		c.width = CONV_RULE_MR;
		c.tiles = CONV_RULE_TILES(s.h_in, s.w_in, s.tile);
		c.panels = conv_blocks(c.tiles, c.width);
		if (o.winograd == 1 || (o.winograd < 0 && CONV_WINOGRAD_FILLS(c.tiles))) {
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
	long long split_steps = CONV_SPLIT_STEPS(s.c_in, s.h_in, s.c_out, s.w_out, s.k);
	c.split = (double)split_steps;
	bool split = o.row_split >= 0 ? o.row_split : 11 * split_steps < 10 * CONV_DIRECT_STEPS(s.c_in, s.c_out, s.h_out, s.w_out, s.k);
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
	/* the algorithm, which sets the bits, by the rule's blocks
	 * (kernels/sizes.h; the sides of a 1x1 one's, above, set only the
	 * speed), compared in twentieths */
	c.method = CONV_WEIGHT_PATCHES;
	long long patches = 20 * CONV_WEIGHT_PATCH_STEPS(s.c_in, s.c_out, s.h_out, s.w_out, s.k);
	c.patches = patches / 20.0;
	if (!conv_weight_split_applies(s))
		return c;
	long long split_steps = 22 * CONV_WEIGHT_SPLIT_STEPS(s.c_in, s.h_in, s.c_out, s.w_out, s.k);
	c.split = split_steps / 20.0;
	bool split = o.weight_split >= 0 ? o.weight_split : split_steps < patches;
	c.forced = o.weight_split >= 0;
	if (conv_winograd_applies(s) && o.winograd != 0) {
		long long winograd = 25 * CONV_WEIGHT_WINOGRAD_STEPS(s.c_in, s.c_out, s.h_out, s.w_out, s.tile);
		c.winograd = winograd / 20.0;
		if (o.winograd == 1 || winograd < (split ? split_steps : patches)) {
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

/* The algorithm an instance runs where its choice is not the reference:
 * compiled for its shape (the default), its rule's, a constant of the
 * shape (struct conv_shape), so that the instance compiles that
 * algorithm's code alone (conv_compiled refuses a RESGEN_CHOICES that
 * would force another); compiled for every algorithm (out of line, or
 * RESGEN_EVERY_ALGORITHM: make EVERY_ALGORITHM=1), the one chosen. */
#if defined(RESGEN_KERNEL_LIBRARY) || defined(RESGEN_OUT_OF_LINE) || defined(RESGEN_EVERY_ALGORITHM)
#define CONV_EVERY_ALGORITHM 1
#else
#define CONV_EVERY_ALGORITHM 0
#endif
#define CONV_ALGORITHM_OF(rule, chosen) (CONV_EVERY_ALGORITHM ? (chosen) : (rule))

/* The data gradient's convolution: dY by W flipped, of the transposed shape. */
KERNEL_HELPER struct conv_shape conv_transposed(struct conv_shape s)
{
	return (struct conv_shape){s.c_out, s.h_out, s.w_out, s.c_in, s.h_in, s.w_in, s.k, 1, s.tile, s.data, CONV_REFERENCE, CONV_WEIGHT_REFERENCE};
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
	c.products = PRODUCTS_REAL;
	return c;
}

/* A bf16 network's convolution (products p, not PRODUCTS_REAL): every pass
 * its columns, packed as the path reads them, then one product of bf16
 * operands an image (the reference kernels, kernels/products.h), whatever
 * the machine. */
static void conv_choose_products(struct conv_choices *c, struct products p)
{
	if (!products_bf16(p))
		return;
	c->forward = c->data = (struct conv_method_choice){CONV_REFERENCE, 1, 0, 0, 0, 0, 0, false};
	c->weight = (struct conv_weight_choice){CONV_WEIGHT_REFERENCE, false, 0, 0, 0, 0, 0, false};
	c->products = p;
}

/* Whether the instance name, of shape s, runs the choices c: compiled for
 * its shape, only its rule's algorithm or the reference in each pass
 * (CONV_ALGORITHM_OF). If not, *refused becomes name where it is NULL, and
 * net_choose refuses the run in one line: a RESGEN_CHOICES that forces
 * another algorithm needs a build with every one (make EVERY_ALGORITHM=1). */
static void conv_compiled(const struct conv_choices *c, struct conv_shape s, const char *name, const char **refused)
{
	bool runs = (c->forward.method == CONV_REFERENCE || c->forward.method == s.forward) &&
		    (c->data.method == CONV_REFERENCE || c->data.method == s.data) &&
		    (c->weight.method == CONV_WEIGHT_REFERENCE || c->weight.method == s.weight);
	if (!CONV_EVERY_ALGORITHM && !runs && !*refused)
		*refused = name;
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

/* The shape rules of the reference kernels (reference.h), which every
 * bf16 convolution runs. */
KERNEL_HELPER bool conv_data_gradient_convolves(struct conv_shape s, struct products p);
KERNEL_HELPER bool conv_weight_gradient_swapped(struct conv_shape s, struct products p);
KERNEL_HELPER bool conv_weight_gradient_in_place(struct conv_shape s, struct products p);
KERNEL_HELPER int conv_weight_gradient_batch(struct conv_shape s, struct products p);
KERNEL_HELPER int conv_band_rows(struct conv_shape s, struct products p);

/* What a product of a convolution of shape s takes as its columns. */
static const char *conv_products_columns(struct conv_shape s, struct products p)
{
	if (s.k == 1 && s.stride == 1)
		return "the image is its own columns";
	if (s.stride == 1 && products_read_image(p, s.c_out, CONV_PATCH(s.c_in, s.k), s.k))
		return products_image_rows_apart(s.w_out) == s.w_out ? "the columns read in place from the image, masked at its rows' ends"
								     : "the columns read in place from the image";
	return "the columns packed";
}

/* What a product of a convolution of shape s takes as its columns, and
 * how many products an image makes (conv_band_rows), into said. */
static void conv_products_made(char *said, size_t size, struct conv_shape s, struct products p)
{
	int band = conv_band_rows(s, p);
	if (band < s.h_out)
		snprintf(said, size, "%s in bands of %d output rows, then one product a band", conv_products_columns(s, p), band);
	else
		snprintf(said, size, "%s, then one product an image", conv_products_columns(s, p));
}

/* One pass of a bf16 convolution: what it multiplies, in which order, by
 * which path, and the product it makes of each image (what). */
static void conv_explain_pass(FILE *out, const char *pass, struct products p, const char *what, const char *detail)
{
	fprintf(out, "    %-8s bf16 operands, their products summed in f32 in the %s order by the %s path (%s): %s%s\n",
		pass, bf16_arithmetic_names[p.arithmetic], bf16_path_names[p.path],
		bf16_path_instructions(p.path, p.arithmetic), what, detail);
}

/* A bf16 convolution's three passes, each by the shape rules its kernel follows. */
static void conv_explain_products(FILE *out, struct conv_shape s, struct products p)
{
	bool direct = s.k == 1 && s.stride == 1;
	char said[160];
	conv_products_made(said, sizeof said, s, p);
	conv_explain_pass(out, "forward", p, said, "");
	if (conv_data_gradient_convolves(s, p)) {
		conv_products_made(said, sizeof said, conv_transposed(s), p);
		conv_explain_pass(out, "data", p, "dY convolved with W flipped, ", said);
	} else
		conv_explain_pass(out, "data", p, "W^T . dY an image", direct ? "" : ", its columns added back onto their pixels (col2im)");
	if (conv_weight_gradient_in_place(s, p))
		conv_explain_pass(out, "weight", p, "its transpose, columns(X) . dY^T an image, the columns read in place from the image", "");
	else if (conv_weight_gradient_swapped(s, p) && direct)
		conv_explain_pass(out, "weight", p, "its transpose, X . dY^T an image, dY (fewer channels) the operand transposed", "");
	else if (conv_weight_gradient_swapped(s, p))
		conv_explain_pass(out, "weight", p, "its transpose, columns(X) . dY^T an image, the columns copied row by row", "");
	else {
		int batch = conv_weight_gradient_batch(s, p);
		if (batch > 1)
			snprintf(said, sizeof said, "%s, one product for %d images side by side along K", direct ? "dY . X^T" : "dY . columns(X)^T", batch);
		else
			snprintf(said, sizeof said, "%s an image", direct ? "dY . X^T" : "dY . columns(X)^T");
		conv_explain_pass(out, "weight", p, said, "");
	}
}

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
/* For the convolution that reads the images: what a training step skips. */
static void conv_explain_images(FILE *out)
{
	fprintf(out, "    %-8s their gradient, this convolution's data gradient: only for a step that reads it (step --dump), "
		"not in training\n", "images");
}

static void conv_explain(FILE *out, const char *layer, struct conv_shape s, const struct conv_choices *c, int n, bool shortcut)
{
	size_t in_size = (size_t)s.c_in * s.h_in * s.w_in, out_size = (size_t)s.c_out * s.h_out * s.w_out;
	fprintf(out, "%s: %dx%d convolution, stride %d, %d -> %d channels, %dx%d -> %dx%d\n", layer, s.k, s.k, s.stride,
		s.c_in, s.c_out, s.h_in, s.w_in, s.h_out, s.w_out);
	if (products_bf16(c->products)) {
		conv_explain_products(out, s, c->products);
	} else {
		conv_explain_method(out, "forward", s, &c->forward);
		conv_explain_method(out, "data", s, &c->data);
		conv_explain_weight(out, s, &c->weight);
	}
	conv_explain_stream(out, "output", c, n * (in_size + (shortcut ? 2 : 1) * out_size), c->forward.group, false);
	conv_explain_stream(out, "input gradient", c, n * (2 * in_size + out_size), c->data.group, true);
}

#endif
