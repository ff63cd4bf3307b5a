/* The one door to BLIS. Row-major matrices, as the kernels store them:
 * C (m x n) = alpha op(A) op(B) + beta C, op(A) m x k, op(B) k x n, where
 * op transposes when asked; lda, ldb, ldc are the row strides of the
 * matrices as stored. beta = 0 overwrites C without reading it. Each
 * output's products are added in the order of k, in chunks of a length
 * fixed here, on every kind of node (gemm.c). */
#ifndef RESGEN_GEMM_H
#define RESGEN_GEMM_H

#include <stdbool.h>

#include "same_bits.h" /* GEMM_PANEL_MAX */
#include "real.h"

void gemm(int transpose_a, int transpose_b, int m, int n, int k, real alpha, const real *a, int lda,
	  const real *b, int ldb, real beta, real *c, int ldc);

/* BLIS's micro-kernel for the machine the binary runs on, for kernels that
 * pack their own operands. One call computes an m x n block of C (m <= mr,
 * n <= nr; C at rs_c, cs_c strides) = A B + beta C, where A is a panel of k
 * groups of mr reals (group p holds column p of A) and B a panel of k
 * groups of nr reals (row p of B); both 64-byte aligned. prefers_rows: the
 * kernel writes row-stored C fastest, so m should run along C's rows.
 * GEMM_PANEL_MAX (same_bits.h): the widest mr or nr a kernel may have.
 * The kernels of haswell, zen3 and skx add each output's k products in
 * order, one multiply-add at a time: whichever runs, a block's sums have
 * the same bits (tests/test_isa.c). */
struct gemm_micro {
	int mr, nr;
	int prefers_rows;
};

/* The machine's micro-kernel, or NULL when its panels are wider than
 * GEMM_PANEL_MAX (then callers use gemm). */
const struct gemm_micro *gemm_micro(void);
void gemm_micro_tile(int m, int n, int k, const real *a, const real *b, real beta, real *c, long rs_c, long cs_c);

/* How many threads BLIS may use inside one call; set only by threads.c. */
void gemm_set_threads(int threads);

/* The name of the kernels BLIS runs on this machine (its sub-configuration,
 * such as zen3, skx or generic). */
const char *gemm_kernels(void);

/* BLIS's number for the kernels called name, as BLIS_ARCH_TYPE takes it;
 * -1 if this BLIS has none of that name. */
int gemm_kernels_id(const char *name);

#endif
