/* How a network's convolutions and classifier multiply (net.precision):
 * in the build's reals, by BLIS; or, in a bf16 network, with operands
 * rounded to bf16 and their exact products summed in f32 in a fixed order,
 * by a path of runtime/machine/bf16.h (in the f64 builds that check such a
 * network against PyTorch: rounded operands, sums in f64). */
#ifndef RESGEN_KERNELS_PRODUCTS_H
#define RESGEN_KERNELS_PRODUCTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "gemm.h"
#include "machine.h"
#include "real.h"

/* path: an enum bf16_path, or -1 for the build's reals; arithmetic: an
 * enum bf16_arithmetic (the order), or -1. */
struct products {
	signed char path, arithmetic;
};
#define PRODUCTS_REAL ((struct products){-1, -1})

/* A network's products for arithmetic (its NET_BF16_ARITHMETIC, -1 for
 * f32): the path is RESGEN_BF16's or the fastest there is
 * (machine_bf16_path, which refuses a path that cannot compute it). */
static inline struct products products_of(int arithmetic)
{
	if (arithmetic < 0)
		return PRODUCTS_REAL;
	return (struct products){(signed char)machine_bf16_path(arithmetic), (signed char)arithmetic};
}

static inline bool products_bf16(struct products p) { return p.arithmetic >= 0; }

/* The bf16 products' own memory (packed operands, grown as needed)
 * failed: a kernel cannot return, so the run stops as on any other
 * allocation it cannot go on without. */
static __attribute__((noreturn, cold, unused)) void products_out_of_memory(int m, int n, int k)
{
	fprintf(stderr, "out of memory for the bf16 operands of a %d x %d x %d product; stopping (the last checkpoint is kept)\n",
		m, n, k);
	exit(1);
}

/* C (m x n) = beta C + op(A) op(B), as gemm() with alpha 1 (beta 0 or 1),
 * in the products p says. */
static inline void products_gemm(struct products p, int transpose_a, int transpose_b, int m, int n, int k, const real *a, int lda,
				 const real *b, int ldb, real beta, real *c, int ldc)
{
	if (!products_bf16(p)) {
		gemm(transpose_a, transpose_b, m, n, k, 1, a, lda, b, ldb, beta, c, ldc);
		return;
	}
#ifdef RESGEN_F64
	int status = bf16_matmul_f64(transpose_a, transpose_b, m, n, k, a, lda, b, ldb, beta != 0, c, ldc);
#else
	int status = bf16_matmul((enum bf16_path)p.path, (enum bf16_arithmetic)p.arithmetic, transpose_a, transpose_b, m, n, k, a, lda,
				 b, ldb, beta != 0, c, ldc);
#endif
	if (status != 0)
		products_out_of_memory(m, n, k);
}

/* An A operand for many products (a convolution's weights, by each
 * image): in a bf16 f32 build, packed once into the calling thread's
 * buffer slot (bf16_buffer) as p's path reads it; else the matrix as it
 * is. */
struct products_operand {
	const real *x;
	int ld;
	bool transpose;
	const void *packed;
};

enum {
	PRODUCTS_STAGED_SLOT = BF16_BUFFERS - 3, /* a weight gradient's images staged for one product */
	PRODUCTS_PADDED_SLOT = BF16_BUFFERS - 2, /* an image rounded, with its zero border (conv_pad_rounded) */
	PRODUCTS_IMAGE_SLOT = BF16_BUFFERS - 1,  /* the other operand, packed for each product */
};

static inline struct products_operand products_pack(struct products p, int slot, bool transpose, int m, int k, const real *a, int lda)
{
	struct products_operand o = {a, lda, transpose, NULL};
#ifndef RESGEN_F64
	if (products_bf16(p)) {
		void *packed = bf16_buffer(slot, bf16_packed_a_bytes((enum bf16_path)p.path, (enum bf16_arithmetic)p.arithmetic, m, k));
		if (!packed)
			products_out_of_memory(m, 0, k);
		bf16_pack_a((enum bf16_path)p.path, (enum bf16_arithmetic)p.arithmetic, transpose, m, k, a, lda, packed);
		o.packed = packed;
	}
#else
	(void)p;
	(void)m;
	(void)k;
#endif
	(void)slot;
	return o;
}

/* Whether products_pack_image packs an image straight from its f32 values:
 * in f32 builds, where p multiplies in bf16. */
static inline bool products_packs_image(struct products p)
{
#ifndef RESGEN_F64
	return products_bf16(p);
#else
	(void)p;
	return false;
#endif
}

/* A = a convolution's image (channels x pixels), activated by the
 * prologue pre where that is not NULL, packed into the calling thread's
 * buffer slot as products_pack packs it, without the activated image
 * written in f32 (bf16_pack_image_a); where products_packs_image. */
static inline struct products_operand products_pack_image(struct products p, int slot, const real *image, int channels, int pixels,
							  const real *pre)
{
	struct products_operand o = {image, pixels, false, NULL};
#ifndef RESGEN_F64
	enum bf16_path path = (enum bf16_path)p.path;
	enum bf16_arithmetic arithmetic = (enum bf16_arithmetic)p.arithmetic;
	void *packed = bf16_buffer(slot, bf16_packed_a_bytes(path, arithmetic, channels, pixels));
	if (!packed)
		products_out_of_memory(channels, 0, pixels);
	bf16_pack_image_a(path, arithmetic, channels, pixels, image, pre, packed);
	o.packed = packed;
#else
	(void)p;
	(void)slot;
	(void)channels;
	(void)pre;
#endif
	return o;
}

#ifndef RESGEN_F64
/* op(B) (k x n) packed as p's path reads it, into the calling thread's
 * buffer for the other operand, for a product of m rows. */
static inline const void *products_pack_b(struct products p, int transpose_b, int m, int n, int k, const real *b, int ldb)
{
	enum bf16_path path = (enum bf16_path)p.path;
	enum bf16_arithmetic arithmetic = (enum bf16_arithmetic)p.arithmetic;
	void *packed = bf16_buffer(PRODUCTS_IMAGE_SLOT, bf16_packed_b_bytes(path, arithmetic, k, n));
	if (!packed)
		products_out_of_memory(m, n, k);
	bf16_pack_b(path, arithmetic, transpose_b, k, n, b, ldb, packed);
	return packed;
}
#endif

/* C (m x n) = beta C + op(A) op(B), A as products_pack made it for the
 * same m and k. */
static inline void products_gemm_with(struct products p, struct products_operand a, int transpose_b, int m, int n, int k, const real *b,
				      int ldb, real beta, real *c, int ldc)
{
	if (!a.packed) {
		products_gemm(p, a.transpose, transpose_b, m, n, k, a.x, a.ld, b, ldb, beta, c, ldc);
		return;
	}
#ifndef RESGEN_F64
	const void *packed = products_pack_b(p, transpose_b, m, n, k, b, ldb);
	if (bf16_multiply((enum bf16_path)p.path, (enum bf16_arithmetic)p.arithmetic, m, n, k, a.packed, packed, beta != 0, c, ldc) != 0)
		products_out_of_memory(m, n, k);
#endif
}

/* A convolution's columns written straight into the packed operand where
 * p's path reads one a caller may write (bf16_b_layout), sparing a copy
 * of them: x the calling thread's buffer for it, rows ld floats or words
 * apart, pairs whether in pairs of rows; x is NULL elsewhere (f32, the
 * f64 builds, the portable path), where the caller makes B and calls
 * products_gemm_with. */
struct products_columns {
	void *x;
	int ld;
	bool pairs;
};

static inline struct products_columns products_columns(struct products p, int k, int n)
{
	struct products_columns b = {NULL, 0, false};
#ifndef RESGEN_F64
	enum bf16_path path = (enum bf16_path)p.path;
	if (products_bf16(p) && bf16_b_layout(path) != BF16_B_OWN) {
		b.x = bf16_buffer(PRODUCTS_IMAGE_SLOT, bf16_packed_b_bytes(path, (enum bf16_arithmetic)p.arithmetic, k, n));
		if (!b.x)
			products_out_of_memory(0, n, k);
		b.ld = bf16_packed_b_width(n);
		b.pairs = bf16_b_layout(path) == BF16_B_PAIRS;
	}
#else
	(void)p;
	(void)k;
	(void)n;
#endif
	return b;
}

/* The output rows (of width pixels, height of them) whose columns a
 * product takes at a time, where p's path reads B widened and a stride-1
 * convolution's columns (k x n, for m output channels) are widened from
 * its padded image. Where A fits PRODUCTS_BAND_BYTES, as many rows as
 * keep the band within it too (but PRODUCTS_BAND_PIXELS pixels at
 * least), so that each band is multiplied from the L2 cache rather than
 * memory while A stays there; elsewhere all of them, since reading A
 * again for each band cost more than it spared. Each output sums the
 * same products in the same order: the bits do not change. */
enum { PRODUCTS_BAND_BYTES = 256 << 10, PRODUCTS_BAND_PIXELS = 64 };
static inline int products_band_rows(struct products p, int m, int k, int width, int height)
{
	int rows = height;
#ifndef RESGEN_F64
	enum bf16_path path = (enum bf16_path)p.path;
	enum bf16_arithmetic arithmetic = (enum bf16_arithmetic)p.arithmetic;
	if (!products_bf16(p) || bf16_b_layout(path) != BF16_B_WIDENED ||
	    bf16_packed_a_bytes(path, arithmetic, m, k) > PRODUCTS_BAND_BYTES)
		return rows;
	while (rows > 1 && (rows - 1) * width >= PRODUCTS_BAND_PIXELS &&
	       bf16_packed_b_bytes(path, arithmetic, k, rows * width) > PRODUCTS_BAND_BYTES)
		rows--;
#else
	(void)p;
	(void)m;
	(void)k;
	(void)width;
#endif
	return rows;
}

/* Whether p's path reads a stride-1 convolution's columns in place from
 * its image for a product of m rows (bf16_reads_image: K and the kernel
 * fit), so that they need not be written; never in the f64 builds. */
static inline bool products_read_image(struct products p, int m, int k, int kernel)
{
#ifndef RESGEN_F64
	return products_bf16(p) && bf16_reads_image((enum bf16_path)p.path, m, k, kernel);
#else
	(void)p;
	(void)m;
	(void)k;
	(void)kernel;
	return false;
#endif
}

/* How far apart an image's rows lie where a 3x3 convolution's columns
 * are read in place from it (bf16_image_rows_apart): width + 2 with the
 * zero border beside them, or width without it. */
static inline int products_image_rows_apart(int width)
{
#ifndef RESGEN_F64
	return bf16_image_rows_apart(width);
#else
	return width + 2;
#endif
}

/* C (m x n) = beta C + A . columns (beta 0 or 1), A as products_pack
 * made it, the columns (K x n) read from image, rounded reals with rows
 * wp apart (products_image_rows_apart), as bf16_multiply_image reads
 * them; where products_read_image. */
static inline void products_gemm_image(struct products p, struct products_operand a, int m, int n, int k, const real *image,
				       const ptrdiff_t *offsets, int width, int wp, real beta, real *c, int ldc)
{
#ifndef RESGEN_F64
	if (bf16_multiply_image((enum bf16_path)p.path, (enum bf16_arithmetic)p.arithmetic, m, n, k, a.packed, image, offsets, width,
				wp, beta != 0, c, ldc) != 0)
		products_out_of_memory(m, n, k);
#else
	(void)p;
	(void)a;
	(void)m;
	(void)n;
	(void)k;
	(void)image;
	(void)offsets;
	(void)width;
	(void)wp;
	(void)beta;
	(void)c;
	(void)ldc;
#endif
}

/* out = x rounded to bf16 (count values; out may be x), kept as reals:
 * an image whose columns a caller writes widened (im2col). */
static inline void products_round(real *out, const real *x, size_t count)
{
#ifndef RESGEN_F64
	bf16_round(out, x, count);
#else
	(void)out;
	(void)x;
	(void)count;
#endif
}

/* An image's rows (rows of columns values, ld apart) into a padded plane
 * (rows ld_out apart): activated by prologue (scale, shift) where it is
 * not NULL, then rounded and kept as reals where widened
 * (bf16_round_rows), else as bf16 (an image a caller gathers columns
 * from, products_gather, products_gemm_rows_along). */
static inline void products_image_rows(void *out, int ld_out, const real *x, int ld, int rows, int columns, bool widened,
				       const real *prologue)
{
#ifndef RESGEN_F64
	bf16_round_rows(out, ld_out, x, ld, rows, columns, widened, prologue);
#else
	(void)out;
	(void)ld_out;
	(void)x;
	(void)ld;
	(void)rows;
	(void)columns;
	(void)widened;
	(void)prologue;
#endif
}

/* The calling thread's buffer slot of bytes (kept until the slot's next
 * use), for a bf16 convolution's operands on their way to a product. */
static inline void *products_scratch(int slot, size_t bytes)
{
	void *x = bf16_buffer(slot, bytes);
	if (!x) {
		fprintf(stderr, "out of memory for %zu bytes of a bf16 convolution's operands; stopping (the last checkpoint is kept)\n",
			bytes);
		exit(1);
	}
	return x;
}

/* b (widened) gathered from x (bf16) as bf16_gather_along does: row j
 * the rows of x at offsets[j] + r * stride (r below rows), width each,
 * one after the other; in f32 builds. */
static inline void products_gather_along(struct products_columns b, const uint16_t *x, const ptrdiff_t *offsets, int count,
					 int rows, int stride, int width)
{
#ifndef RESGEN_F64
	bf16_gather_along((float *)b.x, b.ld, x, offsets, count, rows, stride, width);
#else
	(void)b;
	(void)x;
	(void)offsets;
	(void)count;
	(void)rows;
	(void)stride;
	(void)width;
#endif
}

/* b from its row row and column column on (of its floats or words),
 * gathered from the rows of x (bf16) at offsets as
 * bf16_gather_transposed or bf16_gather_pairs_transposed (transposed) or
 * bf16_gather_pairs do, by b's layout; in f32 builds. */
static inline void products_gather(struct products_columns b, int row, int column, bool transposed, const uint16_t *x,
				   const ptrdiff_t *offsets, int count, int length)
{
#ifndef RESGEN_F64
	size_t at = (size_t)row * b.ld + column;
	if (!b.pairs && transposed)
		bf16_gather_transposed((float *)b.x + at, b.ld, x, offsets, count, length);
	else if (transposed)
		bf16_gather_pairs_transposed((uint32_t *)b.x + at, b.ld, x, offsets, count, length);
	else
		bf16_gather_pairs((uint32_t *)b.x + at, b.ld, x, offsets, count, length);
#else
	(void)b;
	(void)row;
	(void)column;
	(void)transposed;
	(void)x;
	(void)offsets;
	(void)count;
	(void)length;
#endif
}

/* Whether p's path reads a 3x3 convolution's columns in place as A from
 * its image in bf16 (bf16_reads_image_a): the weight gradient's
 * columns(X) . dY^T, m rows (C_IN K K) of k (the output's pixels, rows
 * of width), where products_gemm_rows_along is given them as windows
 * over the image with its whole border; never in the f64 builds. */
static inline bool products_read_image_a(struct products p, int m, int k, int width, int kernel)
{
#ifndef RESGEN_F64
	return products_bf16(p) && bf16_reads_image_a((enum bf16_path)p.path, m, k, width, kernel);
#else
	(void)p;
	(void)m;
	(void)k;
	(void)width;
	(void)kernel;
	return false;
#endif
}

/* C (m x n) = beta C + A op(B) (beta 0 or 1), A's rows gathered from x
 * (bf16) as bf16_multiply_rows gathers them (or reads them in place),
 * op(B) packed here: a convolution's columns as A where p's path reads a
 * layout a caller may write (bf16_b_layout); in f32 builds. */
static inline void products_gemm_rows_along(struct products p, int transpose_b, int m, int n, int k, const uint16_t *x,
					    const ptrdiff_t *offsets, int rows, int stride, int width, const real *b, int ldb, real beta,
					    real *c, int ldc)
{
#ifndef RESGEN_F64
	const void *packed = products_pack_b(p, transpose_b, m, n, k, b, ldb);
	if (bf16_multiply_rows((enum bf16_path)p.path, (enum bf16_arithmetic)p.arithmetic, m, n, k, x, offsets, rows, stride, width,
			       packed, beta != 0, c, ldc) != 0)
		products_out_of_memory(m, n, k);
#else
	(void)p;
	(void)transpose_b;
	(void)m;
	(void)n;
	(void)k;
	(void)x;
	(void)offsets;
	(void)rows;
	(void)stride;
	(void)width;
	(void)b;
	(void)ldb;
	(void)beta;
	(void)c;
	(void)ldc;
#endif
}

/* count reals from from, which the caller reads next from memory,
 * fetched into the L2 cache during its next bf16 product
 * (bf16_fetch_during, which says how much it takes); nothing where p is
 * not bf16's. */
static inline void products_fetch_during(struct products p, const real *from, size_t count)
{
#ifndef RESGEN_F64
	if (products_bf16(p))
		bf16_fetch_during(from, count * sizeof(real));
#else
	(void)p;
	(void)from;
	(void)count;
#endif
}

/* b = a 1x1 convolution's columns, its image (channels x pixels),
 * activated by the prologue pre where that is not NULL, written as b's
 * layout reads them (bf16_image_columns); in f32 builds. */
static inline void products_image_columns(struct products p, struct products_columns b, const real *image, int channels, int pixels,
					  const real *pre)
{
#ifndef RESGEN_F64
	bf16_image_columns((enum bf16_path)p.path, b.x, b.ld, image, channels, pixels, pre);
#else
	(void)p;
	(void)b;
	(void)image;
	(void)channels;
	(void)pixels;
	(void)pre;
#endif
}

/* b = a 1x1 convolution's image transposed (pixels x channels: a weight
 * gradient's columns), activated by pre where that is not NULL, written
 * as b's layout reads them (bf16_image_transposed); in f32 builds. */
static inline void products_image_transposed(struct products p, struct products_columns b, const real *image, int channels,
					     int pixels, const real *pre)
{
#ifndef RESGEN_F64
	bf16_image_transposed((enum bf16_path)p.path, b.x, b.ld, image, channels, pixels, pre);
#else
	(void)p;
	(void)b;
	(void)image;
	(void)channels;
	(void)pixels;
	(void)pre;
#endif
}

/* C (m x n) = beta C + op(A) B (beta 0 or 1), A as products_pack made it,
 * B the k rows of n rounded values the caller wrote into b: their padding
 * zeroed here. */
static inline void products_gemm_columns(struct products p, struct products_operand a, struct products_columns b, int m, int n, int k,
					 real beta, real *c, int ldc)
{
#ifndef RESGEN_F64
	enum bf16_path path = (enum bf16_path)p.path;
	enum bf16_arithmetic arithmetic = (enum bf16_arithmetic)p.arithmetic;
	bf16_pad_b(path, arithmetic, k, n, b.x);
	if (bf16_multiply(path, arithmetic, m, n, k, a.packed, b.x, beta != 0, c, ldc) != 0)
		products_out_of_memory(m, n, k);
#else
	(void)p;
	(void)a;
	(void)b;
	(void)beta;
	(void)m;
	(void)n;
	(void)k;
	(void)c;
	(void)ldc;
#endif
}

#endif
