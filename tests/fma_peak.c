/* make bench: the machine's fused multiply-add limit in float32, measured
 * for the widest instruction set this machine runs, as the default build's
 * kernels take it (compiled -march=native: AVX-512 where the machine has
 * it, else AVX2), on every thread at once. Twelve
 * independent accumulators per thread keep the FMA units busy whatever
 * their latency. Then the memory's bandwidth on every thread, as STREAM's
 * triad measures it (a = b + 3 c over arrays far larger than the caches),
 * which bounds the passes over a network's large tensors. Then a cache
 * line's round trip between two threads, which tells whether their cores
 * share a last-level cache: a virtual machine cannot see it (on the Zen 4
 * of docs/performance.md, the hypervisor moves the two cores
 * between one chiplet and two every few minutes, and the round trip goes
 * from 55 to 80 ns to 350 to 410). `fma-peak --round-trip` prints only
 * that, in ns, and the placement it means (shared: one last-level cache;
 * apart: one each, over MACHINE_APART_NS, as the kernels decide), or
 * nothing on one thread, for make bench to take around each run. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "machine.h"

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

/* The best of three rounds of a = b + 3 c, in bytes a second: 12 bytes an
 * element, as STREAM counts them (not the read of a's lines before they
 * are written); 0 if the arrays cannot be had. Each thread first touches
 * the part it then runs, so its pages sit near it. */
static double triad_bandwidth(void)
{
	const size_t count = (size_t)64 << 20; /* 256 MiB an array */
	float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b), *c = malloc(count * sizeof *c);
	double best = 0;
	if (a && b && c) {
		#pragma omp parallel for schedule(static)
		for (size_t i = 0; i < count; i++) {
			a[i] = 0;
			b[i] = 1;
			c[i] = 2;
		}
		for (int round = 0; round < 3; round++) {
			double start = now();
			#pragma omp parallel for schedule(static)
			for (size_t i = 0; i < count; i++)
				a[i] = b[i] + 3 * c[i];
			double rate = 12.0 * count / (now() - start);
			if (rate > best)
				best = rate;
		}
		if (a[count / 2] != 7)
			best = 0;
	}
	free(a);
	free(b);
	free(c);
	return best;
}

/* The median of five rounds of a cache line passed between threads 0
 * and 1 and back (machine_round_trip_median), in ns a round trip; 0 with
 * fewer than two threads. A round stops after half a second (two threads
 * sharing one core would pass the line once a time slice). */
static double round_trip_ns(void) { return machine_round_trip_median(5, 20000, 0.5); }

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--round-trip") == 0) {
		double trip = round_trip_ns();
		if (trip > 0) /* nothing on one thread */
			printf("%.0f %s\n", trip, trip > MACHINE_APART_NS ? "apart" : "shared");
		return 0;
	}
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
	double bandwidth = triad_bandwidth();
	if (bandwidth > 0)
		printf("memory: %.1f GB/s on %d threads (STREAM's triad over three arrays of 256 MiB)\n", bandwidth / 1e9, threads);
	double trip = round_trip_ns();
	if (trip > 0)
		printf("cores: a cache line's round trip between two threads %.0f ns\n", trip);
	return 0;
}
