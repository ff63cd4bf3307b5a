/* bf16 products summed in f32, in a fixed order: the arithmetic of a
 * bf16 network's convolutions (issue 85). A product of two bf16 numbers is
 * exact in f32, so what a sum gives is fixed by its order alone; each
 * arithmetic below is one order, and every path of it, native or
 * emulated, gives the same bits (tests/test_bf16.c):
 *
 *   BF16_TILES  AMX's tdpbf16ps: along K in blocks of 32 (BF16_TILE_K,
 *               same_bits.h), two chains from +0, te = fma(a[2k], b[2k],
 *               te) and to = fma(a[2k+1], b[2k+1], to) for k ascending,
 *               then c = c + (te + to)
 *   BF16_PAIRS  AVX512-BF16's vdpbf16ps: one chain along K, a pair at a
 *               time, c = fma(a[2k+1], b[2k+1], c) then c = fma(a[2k],
 *               b[2k], c)
 *
 * every step rounded to nearest even in f32, subnormal inputs read as
 * zero and subnormal results flushed to zero (MXCSR's DAZ and FTZ, which
 * the emulations set around their work and restore). K is padded with
 * zeros to a whole block (32) or pair. */
#ifndef RESGEN_BF16_H
#define RESGEN_BF16_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum bf16_arithmetic { BF16_TILES, BF16_PAIRS, BF16_ARITHMETIC_COUNT };

/* How a product is computed: the plain definition (C, one fmaf at a
 * time), AVX2's or AVX-512's f32 multiply-adds on widened operands (the
 * emulations: every x86-64-v3 processor has AVX2), AVX512-BF16's
 * vdpbf16ps (BF16_PAIRS alone), AMX's tiles (BF16_TILES alone). */
enum bf16_path { BF16_PORTABLE, BF16_AVX2, BF16_AVX512, BF16_AVX512_BF16, BF16_AMX, BF16_PATH_COUNT };

extern const char *const bf16_arithmetic_names[BF16_ARITHMETIC_COUNT];
extern const char *const bf16_path_names[BF16_PATH_COUNT];

/* x rounded to the nearest bf16, ties to even; a NaN stays a NaN. */
uint16_t bf16_from_float(float x);
float bf16_to_float(uint16_t b);

/* Whether path computes arithmetic on this processor (and, for AMX, this
 * kernel grants the tiles); if not, why, in why. */
bool bf16_path_available(enum bf16_path path, enum bf16_arithmetic arithmetic, char *why, size_t size);

/* The fastest path of arithmetic on this processor: AMX for tiles and
 * vdpbf16ps for pairs where they are, else AVX-512's emulation, else
 * AVX2's, else the portable one. */
enum bf16_path bf16_best_path(enum bf16_arithmetic arithmetic);

/* Where the processor has AVX512-BF16, the avx512 path computes the
 * tiles order's chains by vdpbf16ps (two of a chain's FMAs an instruction,
 * the same bits); fma true makes it run its f32 FMAs instead, in every
 * thread from the next product on: for tests, which check both. */
void bf16_emulate_tiles_by_fma(bool fma);

/* What path's kernel for arithmetic multiplies and adds by on this
 * processor, for explain: "fmaf", "f32 FMAs", "vdpbf16ps, two of a
 * chain's FMAs an instruction", "vdpbf16ps" or "tdpbf16ps". */
const char *bf16_path_instructions(enum bf16_path path, enum bf16_arithmetic arithmetic);

/* The path named name (bf16_path_names), or -1. */
int bf16_path_named(const char *name);

/* A product in three steps, for a caller that packs an operand once and
 * multiplies it by many (a convolution's weights, by each image's
 * columns): op(A) (m x k) and op(B) (k x n) packed as path reads them,
 * their f32 values rounded to bf16 (bf16_from_float) as they are; op(X)
 * is X, or X transposed where transpose (stored the other way, rows ld
 * apart). The packed sizes in bytes come first; a packed operand starts
 * at a multiple of 64 bytes (bf16_buffer's), which the kernels load
 * whole. */
size_t bf16_packed_a_bytes(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int k);
size_t bf16_packed_b_bytes(enum bf16_path path, enum bf16_arithmetic arithmetic, int k, int n);
void bf16_pack_a(enum bf16_path path, enum bf16_arithmetic arithmetic, bool transpose, int m, int k, const float *a,
		 int lda, void *packed);
void bf16_pack_b(enum bf16_path path, enum bf16_arithmetic arithmetic, bool transpose, int k, int n, const float *b,
		 int ldb, void *packed);

/* bf16_pack_a's A (not transposed) from a convolution's image (channels
 * x pixels), each channel c activated first where pre is not NULL
 * (max(fmaf(x, pre[c], pre[channels + c]), 0), as bf16_round_rows): a 1x1
 * weight gradient's X, never written activated in f32. */
void bf16_pack_image_a(enum bf16_path path, enum bf16_arithmetic arithmetic, int channels, int pixels, const float *image,
		       const float *pre, void *packed);

/* A caller that makes op(B) anyway (a convolution's columns) may write it
 * packed itself, where path reads it in one of two layouts, rows
 * bf16_packed_b_width(n) apart:
 *   BF16_B_WIDENED (the emulations): row e of K, f32 values already
 *                  rounded to bf16;
 *   BF16_B_PAIRS (vdpbf16ps, AMX): row p pairs K's rows 2p and 2p + 1,
 *                  a 32-bit word of two bf16 a column, row 2p's low;
 * then bf16_pad_b zeroes what lies past n and K. BF16_B_OWN: the
 * portable path's, packed by bf16_pack_b alone. */
enum bf16_b_layout { BF16_B_OWN, BF16_B_WIDENED, BF16_B_PAIRS };
enum bf16_b_layout bf16_b_layout(enum bf16_path path);
int bf16_packed_b_width(int n);
void bf16_pad_b(enum bf16_path path, enum bf16_arithmetic arithmetic, int k, int n, void *packed);

/* Likewise A, where path reads it in the layout bf16_b_layout names:
 * rows bf16_packed_a_width floats (widened) or words (in pairs: a word
 * the pair of a row's elements 2q and 2q + 1, 2q's low) apart; then
 * bf16_pad_a zeroes what lies past k (and AMX's rows past m). */
int bf16_packed_a_width(enum bf16_path path, enum bf16_arithmetic arithmetic, int k);
void bf16_pad_a(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int k, void *packed);

/* out[i] = x[i] rounded to bf16 (as bf16_from_float, kept as an f32), for
 * i below count; out may be x. */
void bf16_round(float *out, const float *x, size_t count);

/* out[i] = x[i] as bf16 (bf16_from_float), for i below count: an image
 * a convolution gathers its columns from (below). */
void bf16_convert(uint16_t *out, const float *x, size_t count);

/* rows rows of columns values, ld apart in x and ld_out in out, rounded:
 * kept as floats where widened (bf16_round), else as bf16 (bf16_convert);
 * each value first activated where prologue (scale, shift) is not NULL:
 * max(fmaf(x, scale, shift), 0), as a convolution's BN and ReLU make it.
 * A convolution's image rows into its padded plane, one call a plane. */
void bf16_round_rows(void *out, int ld_out, const float *x, int ld, int rows, int columns, bool widened, const float *prologue);

/* A 1x1 convolution's columns, its image (channels x pixels), written as
 * B in path's layout (bf16_b_layout: widened or in pairs, not the
 * portable path's own), rows ld_out floats or words apart, each channel c
 * activated first where pre is not NULL (max(fmaf(x, pre[c],
 * pre[channels + c]), 0), as bf16_round_rows): the activated image is
 * then never written in f32. bf16_pad_b finishes it. */
void bf16_image_columns(enum bf16_path path, void *out, int ld_out, const float *image, int channels, int pixels, const float *pre);

/* Likewise the image transposed, B = X^T (pixels x channels: a 1x1 weight
 * gradient's columns), each channel activated first where pre is not
 * NULL; bf16_pad_b finishes it. */
void bf16_image_transposed(enum bf16_path path, void *out, int ld_out, const float *image, int channels, int pixels,
			   const float *pre);

/* B's rows or columns gathered from x, bf16 already (bf16_convert), its
 * rows (of the columns: count of them, length long) found at offsets;
 * eight by eight:
 *   bf16_gather_transposed  widened, out[e][j] = x[offsets[j] + e]
 *   bf16_gather_pairs       in pairs, out[p][e] = the pair of
 *                           x[offsets[2p] + e] and x[offsets[2p + 1] + e]
 *                           (0 past count)
 *   bf16_gather_pairs_transposed  in pairs, out[p][j] = the pair of
 *                           x[offsets[j] + 2p] and x[offsets[j] + 2p + 1],
 *                           length even
 * rows of out ld_out floats or words apart. */
void bf16_gather_transposed(float *out, int ld_out, const uint16_t *x, const ptrdiff_t *offsets, int count, int length);
void bf16_gather_pairs(uint32_t *out, int ld_out, const uint16_t *x, const ptrdiff_t *offsets, int count, int length);
void bf16_gather_pairs_transposed(uint32_t *out, int ld_out, const uint16_t *x, const ptrdiff_t *offsets, int count,
				  int length);

/* A's rows gathered from x (bf16): row j the rows of x at offsets[j] + r
 * * stride (r below rows), width elements each, one after the other
 * along K; rows of out ld_out floats or words apart:
 *   bf16_gather_along        widened
 *   bf16_gather_pairs_along  in pairs, width even */
void bf16_gather_along(float *out, int ld_out, const uint16_t *x, const ptrdiff_t *offsets, int count, int rows,
		       int stride, int width);
void bf16_gather_pairs_along(uint32_t *out, int ld_out, const uint16_t *x, const ptrdiff_t *offsets, int count, int rows,
			     int stride, int width);

/* How much of K the kernels sum into C before they read and write C
 * again: a product whose K is shorter passes over C for less work. */
enum { BF16_K_PART = 256 };

/* The bytes from from fetched into the L2 cache during the calling
 * thread's next product (bf16_multiply and its kin below), a few lines
 * each block of C: what the caller reads next from memory (the next
 * image, the shortcut its epilogue adds) arrives while the product sums.
 * Two regions at most a product, of BF16_FETCH_MOST bytes in all (a
 * region that would pass it is not fetched: half an L2 cache of 1 MiB,
 * beside the product's own operands); a fetch changes no value. */
enum { BF16_FETCH_MOST = 512 * 1024 };
void bf16_fetch_during(const void *from, size_t bytes);

/* C (m x n, rows ldc floats apart) = C (add) or 0 (not), + A B, A and B
 * packed for path, summed in arithmetic's order. 0, or -1 where the path
 * is not available here or memory runs out (C untouched). A packed A is
 * one bf16_pack_a made, or a caller wrote and bf16_pad_a finished, since
 * its last change in this thread: a thread keeps A copied into panels
 * between products of the same A (a convolution's weights, by each
 * image), and those two calls tell it A changed. */
int bf16_multiply(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int n, int k, const void *a,
		  const void *b, bool add, float *c, int ldc);

/* A 3x3 convolution of stride 1 whose B, its columns, need not be
 * written: bf16_multiply_image reads them in place from the image, rounded
 * to bf16 and kept as f32 values, B[e][j] = image[offsets[e] + (j /
 * width) * wp + j % width] (width: the output's, which n is rows of; e
 * counts K's rows as channel, kernel row, kernel column). The image has
 * zero rows above and below; beside its rows it has the zeros too where
 * wp is width + 2 or more (width a multiple of 16), or none where wp is
 * width: there B[e][j] is 0 where column j % width, moved by e % 3 - 1,
 * leaves its row, and the kernels mask those lanes. bf16_image_rows_apart
 * says which a convolution lays out: the border where each 16 of a row's
 * columns are whole, so that its loads need no masks. The same sums in
 * the same order as bf16_multiply of those columns packed, so the same
 * bits, by AVX2's and AVX-512's emulations and AVX512-BF16's vdpbf16ps
 * where K is even (else -1). bf16_reads_image says whether path reads
 * them so and where that is the faster: what a convolution follows. */
bool bf16_reads_image(enum bf16_path path, int m, int k, int kernel);
int bf16_image_rows_apart(int width);
int bf16_multiply_image(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int n, int k, const void *a,
			const float *image, const ptrdiff_t *offsets, int width, int wp, bool add, float *c, int ldc);

/* C = C (add) or 0, + A B, A's rows gathered from x (bf16) as
 * bf16_gather_along defines them (row j the rows of x at offsets[j] + r
 * stride, r below rows, width each: K = rows width), B packed as
 * bf16_pack_b packs it: a convolution's columns as A (its weight
 * gradient, columns(X) . dY^T), by a path that reads a layout a caller
 * may write (bf16_b_layout; width even in pairs). The same sums in the
 * same order as bf16_multiply of those rows packed, so the same bits.
 * Where the avx512 path computes the tiles order by vdpbf16ps, the rows
 * go straight into the pairs it reads. Where vdpbf16ps computes the
 * pairs order and the rows are a 3x3 convolution's windows over an image
 * with its whole zero border (each nine from a multiple of 9 one
 * channel's window: row (ky, kx) its first moved ky rows and kx values;
 * stride >= width + 2; bf16_reads_image_a), they are not gathered at
 * all: the kernel reads them in place. 0, or -1 as bf16_multiply. */
int bf16_multiply_rows(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int n, int k, const uint16_t *x,
		       const ptrdiff_t *offsets, int rows, int stride, int width, const void *b, bool add, float *c, int ldc);

/* Whether path reads a 3x3 convolution's columns in place as A, m rows
 * (C_IN K K) of k (the output's pixels, rows of width: even), where
 * bf16_multiply_rows is given them as windows: vdpbf16ps, in the pairs
 * order. */
bool bf16_reads_image_a(enum bf16_path path, int m, int k, int width, int kernel);

/* How many of this thread's bf16_multiply_rows calls read A in place:
 * for the tests, which see the same bits either way. */
unsigned long bf16_rows_read_in_place(void);

/* Whether bf16_multiply_rows gathers A's rows straight into the pairs
 * the kernel of path reads for arithmetic (the tiles order on the avx512
 * path, where it runs by vdpbf16ps), rather than widened for a copy. */
bool bf16_gathers_into_pairs(enum bf16_path path, enum bf16_arithmetic arithmetic);

/* The three in one: C = C (add) or 0, + op(A) op(B), of f32 operands. */
int bf16_matmul(enum bf16_path path, enum bf16_arithmetic arithmetic, bool transpose_a, bool transpose_b, int m,
		int n, int k, const float *a, int lda, const float *b, int ldb, bool add, float *c, int ldc);

/* C (m x n, rows ldc apart) += A (m x k, rows lda apart) B (k x n, rows
 * ldb apart), of operands already bf16, in arithmetic's order, by path:
 * what the tests hold each path to. 0, or -1 as bf16_multiply. */
int bf16_gemm(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int n, int k, const uint16_t *a,
	      int lda, const uint16_t *b, int ldb, float *c, int ldc);

/* The calling thread's buffer number slot (below BF16_BUFFERS) of at least
 * bytes, 64-byte aligned, kept between calls and grown as needed; NULL
 * where memory runs out. For a caller's packed operands. */
enum { BF16_BUFFERS = 5 };
void *bf16_buffer(int slot, size_t bytes);

/* The same product for the f64 builds that check a bf16 network against
 * PyTorch: each operand rounded to f32 and then to bf16, as PyTorch's
 * x.float().bfloat16() does, the exact products summed in f64 (in no
 * order that matters at f64's rounding). */
int bf16_matmul_f64(bool transpose_a, bool transpose_b, int m, int n, int k, const double *a, int lda,
		    const double *b, int ldb, bool add, double *c, int ldc);

#endif
