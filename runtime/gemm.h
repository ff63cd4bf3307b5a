/* The one door to BLIS. Row-major matrices, as the kernels store them:
 * C (m x n) = alpha op(A) op(B) + beta C, op(A) m x k, op(B) k x n, where
 * op transposes when asked; lda, ldb, ldc are the row strides of the
 * matrices as stored. beta = 0 overwrites C without reading it. */
#ifndef RESGEN_GEMM_H
#define RESGEN_GEMM_H

#include "real.h"

void gemm(int transpose_a, int transpose_b, int m, int n, int k, real alpha, const real *a, int lda,
	  const real *b, int ldb, real beta, real *c, int ldc);

/* How many threads BLIS may use inside one call; set only by threads.c. */
void gemm_set_threads(int threads);

/* The name of the kernels BLIS runs on this machine (its sub-configuration,
 * such as zen3, skx or generic). */
const char *gemm_kernels(void);

#endif
