/* make bench: the machine's fused multiply-add limit in float32, measured
 * for the instruction set this build targets (-march=native: AVX-512 where
 * the machine has it, else AVX2), on every thread at once. Twelve
 * independent accumulators per thread keep the FMA units busy whatever
 * their latency. */
#include <omp.h>
#include <stdio.h>
#include <time.h>

#if defined(__AVX512F__)
#define LANES 16
#define ISA "AVX-512"
#elif defined(__AVX2__) && defined(__FMA__)
#define LANES 8
#define ISA "AVX2+FMA"
#else
#define LANES 4
#define ISA "SSE"
#endif

typedef float vector __attribute__((vector_size(4 * LANES)));
enum { ACCUMULATORS = 12 };

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Multiply-adds of one thread: iterations x accumulators x lanes. Written
 * out so that the twelve accumulators stay in registers. */
static float spin(long iterations, float seed)
{
	vector a, b;
	for (int i = 0; i < LANES; i++) {
		a[i] = 0.999999f;
		b[i] = seed * 1e-7f;
	}
	vector c0 = b, c1 = b + 1, c2 = b + 2, c3 = b + 3, c4 = b + 4, c5 = b + 5;
	vector c6 = b + 6, c7 = b + 7, c8 = b + 8, c9 = b + 9, c10 = b + 10, c11 = b + 11;
	for (long it = 0; it < iterations; it++) {
		c0 = c0 * a + b;
		c1 = c1 * a + b;
		c2 = c2 * a + b;
		c3 = c3 * a + b;
		c4 = c4 * a + b;
		c5 = c5 * a + b;
		c6 = c6 * a + b;
		c7 = c7 * a + b;
		c8 = c8 * a + b;
		c9 = c9 * a + b;
		c10 = c10 * a + b;
		c11 = c11 * a + b;
		__asm__ volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5));
	}
	vector sum = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;
	float total = 0;
	for (int i = 0; i < LANES; i++)
		total += sum[i];
	return total;
}

int main(void)
{
	const long iterations = 40000000;
	int threads = omp_get_max_threads();
	double best = 0, sink = 0;
	for (int round = 0; round < 3; round++) {
		double start = now();
		#pragma omp parallel reduction(+ : sink)
		sink += spin(iterations, (float)omp_get_thread_num());
		double seconds = now() - start;
		double flops = 2.0 * iterations * ACCUMULATORS * LANES * threads;
		if (flops / seconds > best)
			best = flops / seconds;
	}
	printf("FMA limit: %.1f GFLOP/s float32 on %d threads (%s, %d lanes)%s\n", best / 1e9, threads,
	       ISA, LANES, sink == 12345 ? " " : "");
	return 0;
}
