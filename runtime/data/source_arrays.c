/* What the sources held in memory share (sources.h): IDX, CIFAR and
 * synthetic data are (C, H, W) bytes an image, labels beside them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "checksum.h"
#include "rng.h"
#include "sources.h"

/* One image's crop offset and flip, from its key. */
static void augment_draw(const struct augment *augment, uint64_t key, int *dy, int *dx, int *flip)
{
	struct rng rng;
	rng_seed(&rng, key, 0xa4);
	if (augment->pad > 0) {
		*dy = (int)rng_below(&rng, 2u * augment->pad + 1) - augment->pad;
		*dx = (int)rng_below(&rng, 2u * augment->pad + 1) - augment->pad;
	}
	if (augment->flip)
		*flip = (int)rng_below(&rng, 2);
}

int arrays_fill(const struct dataset *d, long index, const struct augment *augment, uint64_t key,
		const double *mean, const double *std, real *out, char *error, size_t size)
{
	(void)error;
	(void)size;
	int C = d->channels, H = d->height, W = d->width;
	int dy = 0, dx = 0, flip = 0;
	if (augment)
		augment_draw(augment, key, &dy, &dx, &flip);
	const uint8_t *image = d->images + (size_t)index * C * H * W;
	for (int c = 0; c < C; c++) {
		double scale = 1.0 / (255.0 * std[c]), shift = -mean[c] / std[c];
		for (int y = 0; y < H; y++) {
			int sy = y + dy;
			for (int x = 0; x < W; x++) {
				int sx = (flip ? W - 1 - x : x) + dx;
				double value = 0; /* padding: zero after normalisation */
				if (sy >= 0 && sy < H && sx >= 0 && sx < W)
					value = image[((size_t)c * H + sy) * W + sx] * scale + shift;
				/* Rounded through float in every build, so that f32 and
				 * f64 builds see exactly the same inputs. */
				out[((size_t)c * H + y) * W + x] = (real)(float)value;
			}
		}
	}
	return 0;
}

const char *arrays_class_name(const struct dataset *d, int label, char *out, size_t size)
{
	return data_set_class_name(d->set, d->classes, label, out, size);
}

const char *arrays_file_name(const struct dataset *d, long index, char *out, size_t size)
{
	(void)d;
	snprintf(out, size, "%ld", index);
	return out;
}

uint64_t arrays_identity(const struct dataset *d, uint64_t hash)
{
	long shape[5] = {d->count, d->channels, d->height, d->width, d->classes};
	size_t image = (size_t)d->channels * (size_t)d->height * (size_t)d->width;
	hash = checksum_add(hash, shape, sizeof shape);
	hash = checksum_add_words(hash, d->images + (size_t)d->first * image, (size_t)d->count * image);
	return checksum_add_words(hash, d->labels + d->first, (size_t)d->count * sizeof *d->labels);
}

void arrays_channel_stats(const struct dataset *d, double *mean, double *std)
{
	long plane = (long)d->height * d->width;
	for (int c = 0; c < d->channels; c++) {
		double sum = 0, squares = 0;
		for (long i = 0; i < d->count; i++) {
			const uint8_t *p = d->images + ((size_t)(d->first + i) * d->channels + c) * plane;
			for (long j = 0; j < plane; j++) {
				double v = p[j] / 255.0;
				sum += v;
				squares += v * v;
			}
		}
		double count = (double)d->count * plane;
		mean[c] = sum / count;
		double variance = squares / count - mean[c] * mean[c];
		std[c] = variance > 1e-12 ? sqrt(variance) : 1.0;
	}
}

void arrays_free(struct dataset *d)
{
	free(d->images);
	free(d->labels);
	d->images = NULL;
	d->labels = NULL;
}
