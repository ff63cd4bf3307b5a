/* make bench-bf16: one thread's GFLOP/s of each bf16 path this processor
 * has (runtime/machine/bf16.h), both orders, against the f32 GEMM the
 * networks call (gemm.h: BLIS, with the kernels resgen chooses) on the
 * same shape, in the same run. Each call packs its operands, as the
 * kernels do today, and that is counted. The best of BENCH_ROUNDS
 * rounds of at least 0.4 s counts; the machine may be shared. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bf16.h"
#include "gemm.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3;
	/* a 3x3 convolution of 128 channels to 256, 256 positions at a time */
	const int m = 256, n = 256, k = 1152;
	uint16_t *a = malloc((size_t)m * k * sizeof *a), *b = malloc((size_t)k * n * sizeof *b);
	float *af = malloc((size_t)m * k * sizeof *af), *bf = malloc((size_t)k * n * sizeof *bf);
	float *c = calloc((size_t)m * n, sizeof *c);
	if (!a || !b || !af || !bf || !c || rounds < 1) {
		fprintf(stderr, "bench-bf16: out of memory, or rounds below 1\n");
		return 1;
	}
	srand(1);
	for (int i = 0; i < m * k; i++)
		af[i] = bf16_to_float(a[i] = bf16_from_float((float)(rand() % 200) / 100 - 1));
	for (int i = 0; i < k * n; i++)
		bf[i] = bf16_to_float(b[i] = bf16_from_float((float)(rand() % 200) / 100 - 1));
	gemm_set_threads(1);
	double flops = 2.0 * m * n * k, f32 = 0;
	for (int r = 0; r < rounds; r++) {
		int calls = 0;
		double start = now(), took;
		do {
			gemm(0, 0, m, n, k, 1, af, k, bf, n, 1, c, n);
			calls++;
		} while ((took = now() - start) < 0.4);
		f32 = flops * calls / took / 1e9 > f32 ? flops * calls / took / 1e9 : f32;
	}
	printf("C (%d x %d) += A (%d x %d) B (%d x %d), one thread, best of %d rounds\n", m, n, m, k, k, n, rounds);
	printf("%-24s %-6s %10s %10s\n", "path", "order", "GFLOP/s", "/ f32");
	printf("%-24s %-6s %10.1f %10.2f\n", "f32 gemm (BLIS)", "", f32, 1.0);
	for (int p = 0; p < BF16_PATH_COUNT; p++)
		for (int o = 0; o < BF16_ARITHMETIC_COUNT; o++) {
			char why[200];
			if (!bf16_path_available((enum bf16_path)p, (enum bf16_arithmetic)o, why, sizeof why)) {
				printf("%-24s %-6s %10s (%s)\n", bf16_path_names[p], bf16_arithmetic_names[o], "-", why);
				continue;
			}
			double best = 0;
			for (int r = 0; r < rounds; r++) {
				int calls = 0;
				double start = now(), took;
				do {
					if (bf16_gemm((enum bf16_path)p, (enum bf16_arithmetic)o, m, n, k, a, k, b, n, c, n) != 0) {
						fprintf(stderr, "bench-bf16: %s failed\n", bf16_path_names[p]);
						return 1;
					}
					calls++;
				} while ((took = now() - start) < 0.4);
				best = flops * calls / took / 1e9 > best ? flops * calls / took / 1e9 : best;
			}
			printf("%-24s %-6s %10.1f %10.2f\n", bf16_path_names[p], bf16_arithmetic_names[o], best, best / f32);
		}
	free(a);
	free(b);
	free(af);
	free(bf);
	free(c);
	return 0;
}
