/* The CIFAR source: the binary version of CIFAR-10 (five training files
 * and a test file) and of CIFAR-100 (one of each), in the folder given or
 * in the one its archive unpacks to. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_replace.h" /* file_open_regular */
#include "sources.h"

/* Appends the records of one CIFAR binary file to d. label_bytes: 1 for
 * CIFAR-10; 2 for CIFAR-100 (coarse, then fine: the fine label is used). */
static int load_cifar_file(const char *path, int label_bytes, int classes, struct dataset *d,
			   struct data_error *error)
{
	const long pixels = 3L * 32 * 32, record = label_bytes + pixels;
	long bytes;
	FILE *file = file_open_regular(path, &bytes, error->text, sizeof error->text);
	if (!file)
		return -1;
	if (bytes <= 0 || bytes % record != 0 || bytes / record > DATA_MAX_IMAGES) {
		fclose(file);
		return data_fail(error,
			    "%s: %ld bytes is not a whole number of %ld-byte records; the file is "
			    "truncated or not in the CIFAR binary format",
			    path, bytes, record);
	}
	long records = bytes / record;
	uint8_t *images = realloc(d->images, (size_t)(d->count + records) * pixels);
	if (images)
		d->images = images;
	uint16_t *labels = images ? realloc(d->labels, (size_t)(d->count + records) * sizeof *labels)
				  : NULL;
	if (labels)
		d->labels = labels;
	unsigned char *buffer = malloc((size_t)record);
	if (!images || !labels || !buffer) {
		free(buffer);
		fclose(file);
		return data_fail(error, "%s: out of memory", path);
	}
	for (long i = 0; i < records; i++) {
		if (fread(buffer, 1, (size_t)record, file) != (size_t)record) {
			free(buffer);
			fclose(file);
			return data_fail(error, "%s: truncated at record %ld", path, i);
		}
		int label = buffer[label_bytes - 1];
		if (label >= classes) {
			free(buffer);
			fclose(file);
			return data_fail(error, "%s: record %ld has label %d, not below %d classes", path, i,
				    label, classes);
		}
		d->labels[d->count + i] = (uint16_t)label;
		memcpy(d->images + (size_t)(d->count + i) * pixels, buffer + label_bytes, (size_t)pixels);
	}
	free(buffer);
	fclose(file);
	d->count += records;
	return 0;
}

/* CIFAR's binary files, which load_cifar reads and cifar_files_of lists: the
 * last is the test split, the others the training split, in order; in
 * the folder given or in the one the archive unpacks to. */
static const char *const cifar_files[2][7] = {
	{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin",
	 "test_batch.bin", NULL},
	{"train.bin", "test.bin", NULL},
};
static const char *const cifar_folders[2] = {"cifar-10-batches-bin", "cifar-100-binary"};

static int load_cifar(const char *dir, bool hundred, struct dataset *train, struct dataset *test,
		      struct data_error *error)
{
	/* Accept the folder the archive unpacks to, or its contents. */
	char base[1024];
	const char *const *files = cifar_files[hundred];
	const char *inner = cifar_folders[hundred], *probe = files[0];
	char path[1100];
	snprintf(base, sizeof base, "%s", dir);
	snprintf(path, sizeof path, "%s/%s", dir, probe);
	if (!data_file_exists(path)) {
		snprintf(base, sizeof base, "%s/%s", dir, inner);
		snprintf(path, sizeof path, "%s/%s", base, probe);
		if (!data_file_exists(path))
			return data_fail(error,
				    "%s/%s: cannot open: no such file; put the %s binary version "
				    "(%s/) in %s, or pass --data DIR",
				    dir, probe, hundred ? "CIFAR-100" : "CIFAR-10", inner, dir);
	}
	int classes = hundred ? 100 : 10, label_bytes = hundred ? 2 : 1;
	for (struct dataset *d = train; d; d = d == train ? test : NULL) {
		d->channels = 3;
		d->height = d->width = 32;
		d->classes = classes;
	}
	for (int i = 0; files[i]; i++) {
		snprintf(path, sizeof path, "%s/%s", base, files[i]);
		if (load_cifar_file(path, label_bytes, classes, files[i + 1] ? train : test, error) != 0)
			return -1;
	}
	return 0;
}

static int cifar_open(const struct data_request *want, struct dataset *train, struct dataset *test,
		      struct data_error *error)
{
	if (want->channels != 3 || want->height != 32 || want->width != 32)
		return data_fail(error, "%s: images are 3x32x32, but this network expects %dx%dx%d",
				 data_sets[want->set].name, want->channels, want->height, want->width);
	return load_cifar(want->dir, want->set == SET_CIFAR100, train, test, error);
}

static int cifar_files_of(const struct data_request *want, char *paths, size_t size, int max)
{
	bool hundred = want->set == SET_CIFAR100;
	int count = 0;
	for (int i = 0; cifar_files[hundred][i]; i++)
		for (int inner = 0; inner < 2 && count < max; inner++)
			snprintf(paths + (size_t)count++ * size, size, "%s/%s%s%s", want->dir,
				 inner ? cifar_folders[hundred] : "", inner ? "/" : "", cifar_files[hundred][i]);
	return count;
}

const struct data_source cifar_source = ARRAYS_SOURCE(cifar_open, cifar_files_of);
