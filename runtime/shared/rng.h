/* A small, seedable, fully specified random generator (xoshiro256**, seeded
 * through splitmix64), so that a seed means the same numbers everywhere. */
#ifndef RESGEN_RNG_H
#define RESGEN_RNG_H

#include <stdint.h>

struct rng {
	uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed, uint64_t stream);
uint64_t rng_next(struct rng *r);
double rng_uniform(struct rng *r);          /* [0, 1) */
uint32_t rng_below(struct rng *r, uint32_t n); /* [0, n) */
double rng_normal(struct rng *r);           /* mean 0, std 1 */

/* One key of (seed, a, b), each of its 64 bits changed by any of theirs:
 * where draws must not depend on how far a stream has run (an image's
 * augmentation: seed, iteration, image). */
uint64_t rng_key(uint64_t seed, uint64_t a, uint64_t b);

#endif
