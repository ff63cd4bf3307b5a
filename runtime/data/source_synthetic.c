/* The synthetic source: data for benchmarks and tests, which needs no
 * files. */
#include <stdlib.h>

#include "rng.h"
#include "sources.h"

static int synthesise(struct dataset *d, const uint8_t *prototypes, long count, struct rng *rng,
		      struct data_error *error)
{
	long pixels = (long)d->channels * d->height * d->width;
	d->images = malloc((size_t)(count * pixels));
	d->labels = malloc((size_t)count * sizeof *d->labels);
	if (!d->images || !d->labels)
		return data_fail(error, "synthetic data: out of memory for %ld images", count);
	for (long i = 0; i < count; i++) {
		int label = (int)rng_below(rng, (uint32_t)d->classes);
		d->labels[i] = (uint16_t)label;
		const uint8_t *prototype = prototypes + (size_t)label * pixels;
		for (long p = 0; p < pixels; p++) {
			double value = 0.6 * prototype[p] + 0.4 * 255.0 * rng_uniform(rng);
			d->images[i * pixels + p] = (uint8_t)value;
		}
	}
	d->count = count;
	return 0;
}

/* want's counts of images of its shape, one random prototype a class plus
 * noise, drawn from its seed: learnable, and the same on every machine. */
static int synthetic_open(const struct data_request *want, struct dataset *train, struct dataset *test,
			  struct data_error *error)
{
	long pixels = (long)want->channels * want->height * want->width;
	uint8_t *prototypes = malloc((size_t)(want->classes * pixels));
	if (!prototypes)
		return data_fail(error, "synthetic data: out of memory");
	struct rng rng;
	rng_seed(&rng, want->seed, 0x5eed);
	for (long p = 0; p < want->classes * pixels; p++)
		prototypes[p] = (uint8_t)rng_below(&rng, 256);
	for (struct dataset *d = train; d; d = d == train ? test : NULL) {
		d->channels = want->channels;
		d->height = want->height;
		d->width = want->width;
		d->classes = want->classes;
	}
	int status = synthesise(train, prototypes, want->train_images, &rng, error);
	if (status == 0)
		status = synthesise(test, prototypes, want->test_images, &rng, error);
	free(prototypes);
	return status;
}

const struct data_source synthetic_source = ARRAYS_SOURCE(synthetic_open, NULL);
