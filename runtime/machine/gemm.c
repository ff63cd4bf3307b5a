/* GEMM through BLIS's typed API, which takes row and column strides, so
 * row-major storage needs no copies. */
#include "gemm.h"

#include <blis.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The products of every output in the same order on every kind of node:
 * k goes to BLIS GEMM_K_CHUNK at a time, each chunk added into C, and its
 * code for small matrices (sup) is never called (same_bits.h, rule 2). */

void gemm(int transpose_a, int transpose_b, int m, int n, int k, real alpha, const real *a, int lda,
	  const real *b, int ldb, real beta, real *c, int ldc)
{
	trans_t ta = transpose_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE;
	trans_t tb = transpose_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE;
	rntm_t rntm = BLIS_RNTM_INITIALIZER;
	bli_rntm_init_from_global(&rntm);
	bli_rntm_disable_l3_sup(&rntm);
	for (int k0 = 0; k0 < k || k0 == 0; k0 += GEMM_K_CHUNK) {
		int chunk = k - k0 < GEMM_K_CHUNK ? k - k0 : GEMM_K_CHUNK;
		/* A's columns k0.., B's rows k0.., as stored */
		const real *a0 = a + (transpose_a ? (size_t)k0 * lda : (size_t)k0);
		const real *b0 = b + (transpose_b ? (size_t)k0 : (size_t)k0 * ldb);
		real chunk_beta = k0 == 0 ? beta : 1;
#ifdef RESGEN_F64
		bli_dgemm_ex(ta, tb, m, n, chunk, &alpha, (double *)a0, lda, 1, (double *)b0, ldb, 1, &chunk_beta, c, ldc, 1,
			     NULL, &rntm);
#else
		bli_sgemm_ex(ta, tb, m, n, chunk, &alpha, (float *)a0, lda, 1, (float *)b0, ldb, 1, &chunk_beta, c, ldc, 1,
			     NULL, &rntm);
#endif
	}
}

/* The micro-kernel, found once. */
#ifdef RESGEN_F64
#define REAL_TYPE BLIS_DOUBLE
typedef dgemm_ukr_ft micro_kernel_fn;
#else
#define REAL_TYPE BLIS_FLOAT
typedef sgemm_ukr_ft micro_kernel_fn;
#endif

static struct gemm_micro micro;
static int micro_usable;
static micro_kernel_fn micro_kernel;
static cntx_t *micro_context;
static pthread_once_t micro_once = PTHREAD_ONCE_INIT;

static void find_micro_kernel(void)
{
	micro_context = bli_gks_query_cntx();
	micro.mr = (int)bli_cntx_get_blksz_def_dt(REAL_TYPE, BLIS_MR, micro_context);
	micro.nr = (int)bli_cntx_get_blksz_def_dt(REAL_TYPE, BLIS_NR, micro_context);
	micro.prefers_rows = bli_cntx_l3_nat_ukr_prefers_rows_dt(REAL_TYPE, BLIS_GEMM_UKR, micro_context);
	micro_kernel = (micro_kernel_fn)bli_cntx_get_l3_nat_ukr_dt(REAL_TYPE, BLIS_GEMM_UKR, micro_context);
	/* The panels are packed with exactly mr and nr reals per group, so the
	 * kernel must not expect padded ones. */
	micro_usable = micro_kernel && micro.mr <= GEMM_PANEL_MAX && micro.nr <= GEMM_PANEL_MAX &&
		       bli_cntx_get_blksz_max_dt(REAL_TYPE, BLIS_MR, micro_context) == micro.mr &&
		       bli_cntx_get_blksz_max_dt(REAL_TYPE, BLIS_NR, micro_context) == micro.nr;
}

const struct gemm_micro *gemm_micro(void)
{
	pthread_once(&micro_once, find_micro_kernel);
	return micro_usable ? &micro : NULL;
}

void gemm_micro_tile(int m, int n, int k, const real *a, const real *b, real beta, real *c, long rs_c, long cs_c)
{
	real one = 1;
	auxinfo_t data;
	memset(&data, 0, sizeof data);
	bli_auxinfo_set_next_a((void *)a, &data); /* prefetch hints: the same panels */
	bli_auxinfo_set_next_b((void *)b, &data);
	micro_kernel(m, n, k, &one, (real *)a, (real *)b, &beta, c, rs_c, cs_c, &data, micro_context);
}

void gemm_set_threads(int threads) { bli_thread_set_num_threads(threads); }

const char *gemm_kernels(void) { return bli_arch_string(bli_arch_query_id()); }

int gemm_kernels_id(const char *name)
{
	for (int id = 0; id < BLIS_NUM_ARCHS; id++)
		if (strcmp(bli_arch_string((arch_t)id), name) == 0)
			return id;
	return -1;
}
