/* The random generator of rng.h: xoshiro256** seeded by splitmix64, and
 * the normal and uniform draws built on it. */
#include "rng.h"

#include <math.h>

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed * 0x2545f4914f6cdd1dULL + stream;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&x);
}

static uint64_t rotate(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotate(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotate(s[3], 45);
	return result;
}

double rng_uniform(struct rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

uint32_t rng_below(struct rng *r, uint32_t n)
{
	/* Lemire's multiply-shift; the tiny bias is irrelevant here. */
	return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

uint64_t rng_key(uint64_t seed, uint64_t a, uint64_t b)
{
	uint64_t x = seed;
	uint64_t key = splitmix(&x) ^ a;
	key = splitmix(&key) ^ b;
	return splitmix(&key);
}

double rng_normal(struct rng *r)
{
	/* Box-Muller; one of the pair is dropped to keep the state simple. */
	double u = rng_uniform(r), v = rng_uniform(r);
	return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}
