/* The folder source: ImageFolder's layout, DIR/train/CLASS/FILE and
 * DIR/val/CLASS/FILE, JPEG or PNG files of any size, decoded as batches
 * are filled (image_folder.h); the classes are the folders, in the order
 * of their names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "image_folder.h"
#include "printable.h"
#include "sources.h"

/* A split of a folder of images: the folder, and its labels. */
static int open_split(struct dataset *d, const struct data_request *want, const char *split,
		      const struct dataset *train, struct data_error *error)
{
	if (image_folder_open(&d->folder, want->dir, split, want->classes, want->height, train ? train->folder : NULL,
			      want->skip_bad, error->text, sizeof error->text) != 0)
		return -1;
	d->channels = 3;
	d->height = d->width = want->height;
	d->classes = want->classes;
	d->count = image_folder_count(d->folder);
	d->labels = malloc((size_t)(d->count > 0 ? d->count : 1) * sizeof *d->labels);
	if (!d->labels)
		return data_fail(error, "%s/%s: out of memory for %ld labels", want->dir, split, d->count);
	for (long i = 0; i < d->count; i++)
		d->labels[i] = (uint16_t)image_folder_label(d->folder, i);
	return 0;
}

static int folder_open(const struct data_request *want, struct dataset *train, struct dataset *test,
		       struct data_error *error)
{
	if (want->channels != 3 || want->height != want->width)
		return data_fail(error, "%s: images are cropped to 3 x N x N, but this network expects %dx%dx%d",
				 data_sets[want->set].name, want->channels, want->height, want->width);
	int status = open_split(train, want, "train", NULL, error);
	if (status == 0)
		status = open_split(test, want, "val", train, error);
	return status;
}

static int folder_fill(const struct dataset *d, long index, const struct augment *augment, uint64_t key,
		       const double *mean, const double *std, real *out, char *error, size_t size)
{
	struct folder_augment drawn = {0};
	if (augment)
		drawn = (struct folder_augment){augment->shorter_min, augment->shorter_max, augment->aspect,
						augment->flip != 0};
	return image_folder_fill(d->folder, index, augment ? &drawn : NULL, key, mean, std, out, error, size);
}

/* A class by its folder's name, made printable: a name holds no
 * newline, so that the names stored with the weights are a line each. */
static const char *folder_class_name(const struct dataset *d, int label, char *out, size_t size)
{
	printable_text(out, size, image_folder_class(d->folder, label));
	return out;
}

static const char *folder_file_name(const struct dataset *d, long index, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", image_folder_split(d->folder), image_folder_path(d->folder, d->first + index));
	return out;
}

static long folder_skipped(const struct dataset *d, const char **first)
{
	return image_folder_skipped(d->folder, first);
}

/* Its files' names and sizes and a hash of their bytes, not every pixel. */
static uint64_t folder_identity(const struct dataset *d, uint64_t hash)
{
	long shape[5] = {d->count, d->channels, d->height, d->width, d->classes};
	return image_folder_identity(d->folder, checksum_add(hash, shape, sizeof shape));
}

/* The channel statistics of the split's images as evaluation crops them
 * (the center crop, data.normalise: folder): each image's sums apart, in
 * parallel, then added in the images' order, so the bits are the same on
 * any number of threads. An image that cannot be decoded now, having been
 * decoded when the folder opened, stops the run, as data_fill_batch does. */
static void folder_channel_stats(const struct dataset *d, double *mean, double *std)
{
	long plane = (long)d->height * d->width, count = d->count;
	double *sums = calloc((size_t)(count > 0 ? count : 1) * 6, sizeof *sums);
	if (!sums) {
		fprintf(stderr, "out of memory for the channel statistics of %ld images\n", count);
		exit(1);
	}
	const double zero[3] = {0, 0, 0}, one[3] = {1, 1, 1};
	char first_error[1024] = "";
	#pragma omp parallel
	{
		real *image = malloc((size_t)3 * plane * sizeof *image);
		#pragma omp for schedule(dynamic, 16)
		for (long i = 0; i < count; i++) {
			char error[1024];
			if (!image || image_folder_fill(d->folder, d->first + i, NULL, 0, zero, one, image, error,
						       sizeof error) != 0) {
				#pragma omp critical(resgen_stats_error)
				if (!first_error[0])
					snprintf(first_error, sizeof first_error, "%s", image ? error : "out of memory");
				continue;
			}
			for (int c = 0; c < 3; c++)
				for (long j = 0; j < plane; j++) {
					double v = (double)lround((double)image[c * plane + j] * 255) / 255.0;
					sums[i * 6 + c] += v;
					sums[i * 6 + 3 + c] += v * v;
				}
		}
		free(image);
	}
	if (first_error[0]) {
		fprintf(stderr, "%s; it was decoded when the folder opened, so it was changed or removed since; the run "
			"stops rather than normalise by other images\n", first_error);
		exit(1);
	}
	for (int c = 0; c < 3; c++) {
		double sum = 0, squares = 0;
		for (long i = 0; i < count; i++) {
			sum += sums[i * 6 + c];
			squares += sums[i * 6 + 3 + c];
		}
		double values = (double)count * plane;
		mean[c] = sum / values;
		double variance = squares / values - mean[c] * mean[c];
		std[c] = variance > 1e-12 ? sqrt(variance) : 1.0;
	}
	free(sums);
}

static void folder_free(struct dataset *d)
{
	image_folder_close(d->folder);
	free(d->labels);
	d->folder = NULL;
	d->labels = NULL;
}

const struct data_source folder_source = {
	.open = folder_open,
	.fill = folder_fill,
	.class_name = folder_class_name,
	.file_name = folder_file_name,
	.skipped = folder_skipped,
	.identity = folder_identity,
	.channel_stats = folder_channel_stats,
	.free = folder_free,
};
