/* bf16 products summed in f32, in a fixed order: the arithmetic of a
 * bf16 network's convolutions (issue 85). A product of two bf16 numbers is
 * exact in f32, so what a sum gives is fixed by its order alone; each
 * arithmetic below is one order, and every path of it, native or
 * emulated, gives the same bits (tests/test_bf16.c):
 *
 *   BF16_TILES  AMX's tdpbf16ps: along K in blocks of 32, two chains from
 *               +0, te = fma(a[2k], b[2k], te) and to = fma(a[2k+1],
 *               b[2k+1], to) for k ascending, then c = c + (te + to)
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
 * time), AVX-512's f32 multiply-adds on widened operands, AVX512-BF16's
 * vdpbf16ps (BF16_PAIRS alone), AMX's tiles (BF16_TILES alone). */
enum bf16_path { BF16_PORTABLE, BF16_AVX512, BF16_AVX512_BF16, BF16_AMX, BF16_PATH_COUNT };

extern const char *const bf16_arithmetic_names[BF16_ARITHMETIC_COUNT];
extern const char *const bf16_path_names[BF16_PATH_COUNT];

/* x rounded to the nearest bf16, ties to even; a NaN stays a NaN. */
uint16_t bf16_from_float(float x);
float bf16_to_float(uint16_t b);

/* Whether path computes arithmetic on this processor (and, for AMX, this
 * kernel grants the tiles); if not, why, in why. */
bool bf16_path_available(enum bf16_path path, enum bf16_arithmetic arithmetic, char *why, size_t size);

/* C (m x n, rows ldc floats apart) += A (m x k, rows lda apart) B (k x n,
 * rows ldb apart), in arithmetic's order, by path. 0, or -1 where the path
 * is not available or memory runs out (C untouched). */
int bf16_gemm(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int n, int k, const uint16_t *a,
	      int lda, const uint16_t *b, int ldb, float *c, int ldc);

/* The fastest path of arithmetic on this processor: AMX for tiles and
 * vdpbf16ps for pairs where they are, else AVX-512's emulation, else the
 * portable one. */
enum bf16_path bf16_best_path(enum bf16_arithmetic arithmetic);

/* The path named name (bf16_path_names), or -1. */
int bf16_path_named(const char *name);

/* C (m x n) = C (add) or 0 (not), + op(A) op(B), op(A) m x k and op(B)
 * k x n: A, or A transposed where transpose_a (stored k x m, rows lda
 * apart), likewise B; A's and B's f32 values rounded to bf16 as they are
 * packed (bf16_from_float), their products summed as bf16_gemm sums them.
 * 0, or -1 as bf16_gemm. */
int bf16_matmul(enum bf16_path path, enum bf16_arithmetic arithmetic, bool transpose_a, bool transpose_b, int m,
		int n, int k, const float *a, int lda, const float *b, int ldb, bool add, float *c, int ldc);

/* The same for the f64 builds that check a bf16 network against PyTorch:
 * each operand rounded to f32 and then to bf16, as PyTorch's
 * x.float().bfloat16() does, the exact products summed in f64 (in no
 * order that matters at f64's rounding). */
int bf16_matmul_f64(bool transpose_a, bool transpose_b, int m, int n, int k, const double *a, int lda,
		    const double *b, int ldb, bool add, double *c, int ldc);

#endif
