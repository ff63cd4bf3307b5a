/* Non-inverted dropout, as the paper's dropout shortcut: in training each
 * element is kept with probability 1 - rate and not rescaled, so the output's
 * expectation is (1 - rate) x; at test time the output is that expectation,
 * (1 - rate) x. The mask is a hash of (seed, step, salt, element), so it needs
 * no storage, backward recomputes it, and it does not depend on the threads;
 * elements are counted from the whole batch's first image (first is this
 * process's first element), so nor does it depend on the ranks. */
#ifndef RESGEN_KERNELS_DROPOUT_H
#define RESGEN_KERNELS_DROPOUT_H

#include "kernels/common.h"

static inline uint64_t dropout_mix(uint64_t z)
{
	/* splitmix64's finaliser */
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Element j is kept when its uniform draw in [0, 1) is at least rate. */
static inline int dropout_keep(uint64_t base, long j, double rate)
{
	return (double)(dropout_mix(base + (uint64_t)j) >> 11) * 0x1.0p-53 >= rate;
}

static inline uint64_t dropout_base(uint64_t seed, long step, int salt)
{
	return dropout_mix(dropout_mix(seed ^ ((uint64_t)step << 20)) + (uint64_t)salt);
}

static void dropout_forward(real *out, const real *in, double rate, int salt, uint64_t seed, long step, int training, long first, long count)
{
	uint64_t base = dropout_base(seed, step, salt) + (uint64_t)first;
	double started = profile_clock();
	#pragma omp parallel for schedule(static)
	for (long j = 0; j < count; j++)
		out[j] = training ? (dropout_keep(base, j, rate) ? in[j] : 0) : (real)(1 - rate) * in[j];
	profile_add(PROFILE_ELEMENTWISE, started);
}

static void dropout_backward(real *din, const real *dout, double rate, int salt, uint64_t seed, long step, long first, long count)
{
	uint64_t base = dropout_base(seed, step, salt) + (uint64_t)first;
	double started = profile_clock();
	#pragma omp parallel for schedule(static)
	for (long j = 0; j < count; j++)
		din[j] += dropout_keep(base, j, rate) ? dout[j] : 0;
	profile_add(PROFILE_ELEMENTWISE, started);
}

#endif
