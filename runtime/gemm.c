/* GEMM through BLIS's typed API, which takes row and column strides, so
 * row-major storage needs no copies. */
#include "gemm.h"

#include <blis.h>
#include <cpuid.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which kernels BLIS 0.9 runs is chosen here, before it first runs, where
 * its own choice is known to be slow; a choice the user made in
 * BLIS_ARCH_TYPE stands.
 * - AMD: BLIS knows processors by family, up to Zen 3 (family 0x19), and
 *   gives newer ones (Zen 4 and Zen 5 models) its portable C kernels: on a
 *   Zen 5 that made preact-110 train 3.3 times slower. A later family gets
 *   the skx kernels if it has every AVX-512 extension they use (on a Zen 5
 *   they ran the packed convolutions 1.6 times faster than the zen3
 *   kernels), else the zen3 kernels if it has AVX2 and FMA. A Zen 4 (family
 *   0x19 with AVX-512) runs a 512-bit multiply-add as two 256-bit halves,
 *   so skx's 32 x 12 blocks do no more per cycle than zen3's 6 x 16, and
 *   fill worse with 16 channels: on one, with zen3's, preact-110,
 *   original-110 and preact-164 trained 3 to 4% faster, and ResNet-1001 at
 *   batch 16 3% faster in 5 of 7 alternating pairs.
 * - Intel: BLIS gives the skx kernels only to a processor whose name
 *   string it can read as a Xeon or Core model with two 512-bit FMA units,
 *   and the haswell kernels to the rest. A virtual machine's processor is
 *   often named just "Intel(R) Xeon(R) Processor": on one such (a 2-core
 *   Xeon of model 0xcf, two FMA units), haswell's left preact-164 1.22 to
 *   1.27 times slower than skx's. So every Intel processor with the
 *   AVX-512 extensions gets skx's; with one FMA unit, AVX-512 multiplies
 *   and adds as many reals a cycle as AVX2 does with two. */
bool gemm_supports_skx_kernels(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd") &&
	       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

__attribute__((constructor)) static void choose_blis_kernels(void)
{
	unsigned eax, ebx, ecx, edx;
	if (getenv("BLIS_ARCH_TYPE") || !__get_cpuid(0, &eax, &ebx, &ecx, &edx))
		return;
	char vendor[13];
	memcpy(vendor, &ebx, 4);
	memcpy(vendor + 4, &edx, 4);
	memcpy(vendor + 8, &ecx, 4);
	vendor[12] = '\0';
	if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
		return;
	unsigned family = (eax >> 8) & 0xf;
	if (family == 0xf)
		family += (eax >> 20) & 0xff;
	__builtin_cpu_init();
	int kernels = -1;
	if (strcmp(vendor, "GenuineIntel") == 0 && gemm_supports_skx_kernels())
		kernels = BLIS_ARCH_SKX;
	else if (strcmp(vendor, "AuthenticAMD") == 0 && family >= 0x19 && __builtin_cpu_supports("avx2") &&
		 __builtin_cpu_supports("fma"))
		kernels = gemm_supports_skx_kernels() && family > 0x19 ? BLIS_ARCH_SKX : BLIS_ARCH_ZEN3;
	if (kernels < 0)
		return;
	char id[16];
	snprintf(id, sizeof id, "%d", kernels);
	setenv("BLIS_ARCH_TYPE", id, 0);
}

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
