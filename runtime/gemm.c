/* GEMM through BLIS's typed API, which takes row and column strides, so
 * row-major storage needs no copies. */
#include "gemm.h"

#include <blis.h>
#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* BLIS 0.9 knows AMD processors by family, up to Zen 3 (family 0x19), and
 * gives newer ones (Zen 4 and Zen 5 models) its portable C kernels: on a
 * Zen 5 that made preact-110 train 3.3 times slower than with the zen3
 * kernels. So before BLIS first runs, an AMD processor of family 0x19 or
 * later that has AVX2 and FMA, checked here at run time, is given the zen3
 * kernels, which need nothing more; on a Zen 3 that is BLIS's own choice.
 * Intel processors are left to BLIS, which knows them by their features,
 * and so is any choice the user made in BLIS_ARCH_TYPE. */
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
	if (strcmp(vendor, "AuthenticAMD") != 0 || !__get_cpuid(1, &eax, &ebx, &ecx, &edx))
		return;
	unsigned family = (eax >> 8) & 0xf;
	if (family == 0xf)
		family += (eax >> 20) & 0xff;
	__builtin_cpu_init();
	if (family < 0x19 || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
		return;
	char id[16];
	snprintf(id, sizeof id, "%d", (int)BLIS_ARCH_ZEN3);
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

void gemm_set_threads(int threads) { bli_thread_set_num_threads(threads); }

const char *gemm_kernels(void) { return bli_arch_string(bli_arch_query_id()); }
