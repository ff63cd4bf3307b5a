/* GEMM through BLIS's typed API, which takes row and column strides, so
 * row-major storage needs no copies. */
#include "gemm.h"

#include <blis.h>

void gemm(int transpose_a, int transpose_b, int m, int n, int k, real alpha, const real *a, int lda,
	  const real *b, int ldb, real beta, real *c, int ldc)
{
	trans_t ta = transpose_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE;
	trans_t tb = transpose_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE;
#ifdef RESGEN_F64
	bli_dgemm(ta, tb, m, n, k, &alpha, (double *)a, lda, 1, (double *)b, ldb, 1, &beta, c, ldc, 1);
#else
	bli_sgemm(ta, tb, m, n, k, &alpha, (float *)a, lda, 1, (float *)b, ldb, 1, &beta, c, ldc, 1);
#endif
}

void gemm_set_threads(int threads) { bli_thread_set_num_threads(threads); }
