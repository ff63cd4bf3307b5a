/* Data sets, each read by the data source of its format behind one
 * interface (sources.h): IDX files (the MNIST family), CIFAR's binary
 * files, folders of images, and synthetic data for benchmarks and tests.
 * A set is opened, counted, labelled, named (its classes, its images'
 * files) and filled an image at a time, normalised and augmented. Every
 * failure is one line naming the file and the problem. */
#ifndef RESGEN_DATA_H
#define RESGEN_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data_sets.h"
#include "real.h"

/* One split of a set: its images' shape, how many and their labels; the
 * source that fills them is its set's format's. A split may be a view of
 * part of another (dataset_hold_out): its images are the owner's from
 * first on. */
struct dataset {
	enum data_set set;
	int channels, height, width, classes;
	long count;
	long first;       /* where this split's images start in what its source holds */
	uint16_t *labels; /* every image the source holds, each below classes; index first + i */
	uint8_t *images;  /* sets held in memory: (C, H, W) 0..255 each; NULL for a folder */
	struct image_folder *folder; /* a folder of images (image_folder.h); NULL for the others */
	bool view;                   /* a view of another split: owns nothing */
};

struct data_error {
	char text[512];
};

/* What a run asks of its data: the set, where its files are, the shape
 * the network takes. */
struct data_request {
	enum data_set set;
	const char *dir;
	int channels, height, width, classes;
	bool skip_bad;                   /* a folder of images: leave out what cannot be decoded, counted */
	long train_images, test_images; /* synthetic data: how many */
	uint64_t seed;                   /* synthetic data: what draws them */
};

/* Opens the train and test splits of want->set from want->dir, checked
 * against the shape the network takes: 0, or -1 with one line in error
 * (both splits then hold nothing). */
int data_open(const struct data_request *want, struct dataset *train, struct dataset *test, struct data_error *error);
void dataset_free(struct dataset *d);

/* The files data_open reads (or looks for), up to max paths of size bytes
 * each into paths; their count. For the check that no output of a run
 * names one of them. */
int data_files(const struct data_request *want, char *paths, size_t size, int max);

/* Image index's label. */
static inline int data_label(const struct dataset *d, long index) { return d->labels[d->first + index]; }

/* The most bytes of a class's name or an image's file name, with its end. */
#define DATA_NAME_MAX 1024

/* The name of class label: the set's documents' name, a folder's class
 * folder's name made printable (printable.h), or its index as text where
 * the set names none. The name of image index: a folder's file, its path
 * under the data folder (SPLIT/CLASS/FILE, its bytes as they are); an
 * image of a set in memory, its index in the split. out holds
 * DATA_NAME_MAX bytes. */
const char *data_class_name(const struct dataset *d, int label, char *out, size_t size);
const char *data_file_name(const struct dataset *d, long index, char *out, size_t size);

/* The files a source left out as it opened (--skip-bad-images), and the
 * first of them; 0 for sets that leave none out. */
long data_skipped(const struct dataset *d, const char **first);

/* A fingerprint of an opened split: its shape, images and labels (a
 * folder's: each file's class, name, size and bytes). A resumed run
 * compares it with the run's, and ranks compare theirs. */
uint64_t dataset_identity(const struct dataset *d, uint64_t hash);

/* Keeps only the first count images (count <= d->count). */
void dataset_truncate(struct dataset *d, long count);

/* The last count images of train, held out: *held becomes a view of
 * them, and train keeps the rest. */
void dataset_hold_out(struct dataset *train, long count, struct dataset *held);

/* The images' own channel mean and standard deviation, in 0..1 units
 * (a folder's: of its evaluation crops, one decoding pass). A folder of
 * images is normalised so only where its spec says data.normalise:
 * folder (data_normalisation). */
void dataset_channel_stats(const struct dataset *d, double *mean, double *std);

/* What a split's inputs are normalised by under the recipe's
 * data.normalise (enum normalisation): a set in memory, its images'
 * statistics; a folder of images, ImageNet's fixed values (torchvision's),
 * its images' statistics or the spec's values. */
void data_normalisation(const struct dataset *d, int normalise, const double *given_mean, const double *given_std,
			double *mean, double *std);

/* A training image's augmentation. Its draws come from one key of (seed,
 * iteration, the image's index in its set) (data_augment_key), so they
 * are the same whichever rank, thread or place in the batch fills it, and
 * no stream of draws has to be kept or passed over. */
struct augment {
	uint64_t seed; /* the run's --seed */
	int pad;  /* sets held in memory: random crop from the image zero-padded by pad pixels */
	int flip; /* random horizontal flip */
	/* a folder of images: the scale augmentation's range of the shorter
	 * side in pixels at the crop (image_folder.h), and the aspect
	 * augmentation */
	int shorter_min, shorter_max;
	bool aspect;
};

/* The augmentation a split trains with under the recipe's pad, flip and
 * aspect: a set in memory pads and crops; a folder of images takes the
 * scale augmentation, the shorter side drawn from scale's range (pixels at
 * the crop: recipe_scale_range), or the aspect one. */
struct augment data_augment(const struct dataset *d, uint64_t seed, int pad, bool flip, bool aspect,
			    const int scale[2]);

/* The key image index's draws come from at iteration. */
uint64_t data_augment_key(const struct augment *augment, long iteration, long index);

/* Writes n images (the given indices) into out as (n, C, H, W) normalised
 * reals, and their labels, the images filled by the threads in any order.
 * With augment (NULL: none), each image's crop and flip are drawn from its
 * key at iteration; padding is zero after normalisation, i.e. the mean
 * colour. An image that cannot be filled now (a folder's file changed or
 * removed since it opened) stops the run, which never trains on a blank
 * image. */
void data_fill_batch(const struct dataset *d, const long *indices, int n, const double *mean,
		     const double *std, const struct augment *augment, long iteration, real *out, int *labels);

#endif
