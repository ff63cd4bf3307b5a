/* Data sets: loaders for the formats the paper's sets ship in, a synthetic
 * set for benchmarks and tests, and batch assembly (normalise, pad-and-crop,
 * flip). Every failure is one line naming the file and the problem. */
#ifndef RESGEN_DATA_H
#define RESGEN_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "real.h"

struct image_folder;

struct dataset {
	int channels, height, width, classes;
	long count;
	uint8_t *images;  /* (count, C, H, W), 0..255; NULL for a folder of images */
	uint16_t *labels; /* count, each below classes */
	/* A folder of images (image_folder.h), decoded as batches are filled,
	 * and where this set's images start in it (a held-out part's); NULL
	 * for the sets held in memory. */
	struct image_folder *folder;
	long first;
};

struct data_error {
	char text[512];
};

/* Loads the train and test splits of set ("cifar10", "cifar100",
 * "fashion-mnist" or "mnist") from dir, and checks that the images are
 * channels x height x width with labels below classes; or opens the
 * train/ and val/ folders of a folder of images ("imagenet", "folder"),
 * every file checked (skip_bad: files that cannot be decoded are left out
 * and counted, rather than refused). */
int data_load(const char *set, const char *dir, int channels, int height, int width, int classes, bool skip_bad,
	      struct dataset *train, struct dataset *test, struct data_error *error);

/* Whether set is read from a folder of images. */
bool data_set_is_folder(const char *set);

/* A learnable synthetic set: one random prototype per class plus noise. */
int data_synthetic(int channels, int height, int width, int classes, long train_count,
		   long test_count, uint64_t seed, struct dataset *train, struct dataset *test,
		   struct data_error *error);

void dataset_free(struct dataset *d);

/* The files data_load reads (or looks for) of set in dir, up to max paths
 * of size bytes each into paths; their count. For the check that no
 * output of a run names one of them. */
int data_files(const char *set, const char *dir, char *paths, size_t size, int max);

/* A fingerprint of a loaded set: its shape, images and labels. A resumed
 * run compares it with the run's, and ranks compare theirs. */
uint64_t dataset_identity(const struct dataset *d, uint64_t hash);

/* The name of class index of set ("T-shirt/top" for Fashion-MNIST's 0),
 * as the set's own documents name it; its index as text for a set
 * without names (synthetic data, MNIST's digits) or another class count.
 * out holds at least 16 bytes. */
const char *data_class_name(const char *set, int classes, int index, char *out, size_t size);

/* Keeps only the first count images (count <= d->count). */
void dataset_truncate(struct dataset *d, long count);

/* Per-channel mean and standard deviation of the pixels, in 0..1 units. */
void dataset_channel_stats(const struct dataset *d, double *mean, double *std);

/* A training image's augmentation. Its draws come from one key of (seed,
 * iteration, the image's index in its set) (data_augment_key), so they
 * are the same whichever rank, thread or place in the batch fills it, and
 * no stream of draws has to be kept or passed over. */
struct augment {
	uint64_t seed; /* the run's --seed */
	int pad;  /* sets held in memory: random crop from the image zero-padded by pad pixels */
	int flip; /* random horizontal flip */
	/* a folder of images: the scale augmentation's range of the shorter
	 * side (image_folder.h), and the aspect augmentation */
	int shorter_min, shorter_max;
	bool aspect;
};

/* The key image index's draws come from at iteration. */
uint64_t data_augment_key(const struct augment *augment, long iteration, long index);

/* Writes n images (the given indices) into out as (n, C, H, W) normalised
 * reals, and their labels. With augment (NULL: none), each image's crop
 * and flip are drawn from its key at iteration; padding is zero after
 * normalisation, i.e. the mean colour. */
void data_fill_batch(const struct dataset *d, const long *indices, int n, const double *mean,
		     const double *std, const struct augment *augment, long iteration, real *out, int *labels);

#endif
