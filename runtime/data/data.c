/* The door to the data sources (data.h): a set's source is its format's
 * (data_sets.h), and everything past opening goes through it. */
#include "data.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image_folder.h"
#include "rng.h"
#include "sources.h"

static const struct data_source *const sources[FORMAT_COUNT] = {
	[FORMAT_IDX] = &idx_source,
	[FORMAT_CIFAR] = &cifar_source,
	[FORMAT_FOLDER] = &folder_source,
	[FORMAT_SYNTHETIC] = &synthetic_source,
};

static const struct data_source *source_of(enum data_set set) { return sources[data_sets[set].format]; }

int data_fail(struct data_error *error, const char *format, ...)
{
	va_list args;
	va_start(args, format);
	vsnprintf(error->text, sizeof error->text, format, args);
	va_end(args);
	return -1;
}

bool data_file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int data_open(const struct data_request *want, struct dataset *train, struct dataset *test, struct data_error *error)
{
	memset(train, 0, sizeof *train);
	memset(test, 0, sizeof *test);
	if (want->set < 0 || want->set >= SET_COUNT)
		return data_fail(error, "data set %d is none of the %d this binary knows", (int)want->set, SET_COUNT);
	train->set = test->set = want->set;
	int status = source_of(want->set)->open(want, train, test, error);
	if (status == 0 && train->classes != want->classes)
		status = data_fail(error, "%s: %d classes, but this network has %d", data_sets[want->set].name,
				   train->classes, want->classes);
	if (status != 0) {
		dataset_free(train);
		dataset_free(test);
	}
	return status;
}

void dataset_free(struct dataset *d)
{
	if (!d->view)
		source_of(d->set)->free(d);
	d->count = 0;
}

int data_files(const struct data_request *want, char *paths, size_t size, int max)
{
	const struct data_source *source = source_of(want->set);
	return source->files ? source->files(want, paths, size, max) : 0;
}

const char *data_class_name(const struct dataset *d, int label, char *out, size_t size)
{
	return source_of(d->set)->class_name(d, label, out, size);
}

const char *data_file_name(const struct dataset *d, long index, char *out, size_t size)
{
	return source_of(d->set)->file_name(d, index, out, size);
}

long data_skipped(const struct dataset *d, const char **first)
{
	*first = "";
	const struct data_source *source = source_of(d->set);
	return source->skipped ? source->skipped(d, first) : 0;
}

uint64_t dataset_identity(const struct dataset *d, uint64_t hash) { return source_of(d->set)->identity(d, hash); }

void dataset_truncate(struct dataset *d, long count)
{
	if (count < d->count)
		d->count = count;
}

void dataset_hold_out(struct dataset *train, long count, struct dataset *held)
{
	*held = *train;
	held->view = true;
	held->count = count;
	train->count -= count;
	held->first = train->first + train->count;
}

void dataset_channel_stats(const struct dataset *d, double *mean, double *std)
{
	source_of(d->set)->channel_stats(d, mean, std);
}

void data_normalisation(const struct dataset *d, int normalise, const double *given_mean, const double *given_std,
			double *mean, double *std)
{
	if (!data_set_is_folder(d->set) || normalise == NORMALISE_FOLDER) {
		dataset_channel_stats(d, mean, std);
	} else if (normalise == NORMALISE_GIVEN) {
		memcpy(mean, given_mean, 3 * sizeof *mean);
		memcpy(std, given_std, 3 * sizeof *std);
	} else {
		memcpy(mean, image_folder_mean, sizeof image_folder_mean);
		memcpy(std, image_folder_std, sizeof image_folder_std);
	}
}

struct augment data_augment(const struct dataset *d, uint64_t seed, int pad, bool flip, bool aspect,
			    const int scale[2])
{
	if (data_set_is_folder(d->set)) /* the scale augmentation, or the aspect one */
		return (struct augment){.seed = seed, .flip = flip, .shorter_min = scale[0], .shorter_max = scale[1],
					.aspect = aspect};
	return (struct augment){.seed = seed, .pad = pad, .flip = flip};
}

uint64_t data_augment_key(const struct augment *augment, long iteration, long index)
{
	return rng_key(augment->seed, (uint64_t)iteration, (uint64_t)index);
}

void data_fill_batch(const struct dataset *d, const long *indices, int n, const double *mean,
		     const double *std, const struct augment *augment, long iteration, real *out, int *labels)
{
	size_t image = (size_t)d->channels * d->height * d->width;
	char first_error[1024] = "";
	for (int i = 0; i < n; i++)
		labels[i] = data_label(d, indices[i]);
	const struct data_source *source = source_of(d->set);
	#pragma omp parallel for schedule(dynamic, 1)
	for (int i = 0; i < n; i++) {
		char error[1024];
		uint64_t key = augment ? data_augment_key(augment, iteration, indices[i]) : 0;
		if (source->fill(d, d->first + indices[i], augment, key, mean, std, out + (size_t)i * image, error,
				    sizeof error) != 0) {
			#pragma omp critical(resgen_data_error)
			if (!first_error[0])
				snprintf(first_error, sizeof first_error, "%s", error);
		}
	}
	if (first_error[0]) {
		fprintf(stderr,
			"%s; it was decoded when the folder opened, so it was changed or removed during the run; the run "
			"stops rather than train on an image it cannot read (the last checkpoint is kept)\n",
			first_error);
		exit(1);
	}
}
