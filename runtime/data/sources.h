/* The data sources, one a format of data_sets.h (enum data_format), each
 * behind the interface data.c calls: the door of data.h, and the only
 * place a set's format decides anything. Private to runtime/data/. */
#ifndef RESGEN_SOURCES_H
#define RESGEN_SOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data.h"

struct data_source {
	/* Opens want's train and test splits (data.c has zeroed them and set
	 * their set): shapes, counts, labels and what fill reads.
	 * 0, or -1 with one line in error; data.c then frees both. */
	int (*open)(const struct data_request *want, struct dataset *train, struct dataset *test,
		    struct data_error *error);
	/* The files open reads or looks for (data_files); NULL: none listed. */
	int (*files)(const struct data_request *want, char *paths, size_t size, int max);
	/* Image index (of the source's, first already added) into out as
	 * (C, H, W) normalised reals, augmented by key's draws (augment NULL:
	 * none). 0, or -1 with one line in error. */
	int (*fill)(const struct dataset *d, long index, const struct augment *augment, uint64_t key,
		    const double *mean, const double *std, real *out, char *error, size_t size);
	const char *(*class_name)(const struct dataset *d, int label, char *out, size_t size);
	const char *(*file_name)(const struct dataset *d, long index, char *out, size_t size);
	long (*skipped)(const struct dataset *d, const char **first); /* NULL: leaves none out */
	uint64_t (*identity)(const struct dataset *d, uint64_t hash);
	void (*channel_stats)(const struct dataset *d, double *mean, double *std);
	void (*free)(struct dataset *d);
};

extern const struct data_source idx_source, cifar_source, folder_source, synthetic_source;

/* What the sources held in memory share (source_arrays.c): images as
 * (C, H, W) bytes at images, labels beside them. */
int arrays_fill(const struct dataset *d, long index, const struct augment *augment, uint64_t key,
		const double *mean, const double *std, real *out, char *error, size_t size);
const char *arrays_class_name(const struct dataset *d, int label, char *out, size_t size);
const char *arrays_file_name(const struct dataset *d, long index, char *out, size_t size);
uint64_t arrays_identity(const struct dataset *d, uint64_t hash);
void arrays_channel_stats(const struct dataset *d, double *mean, double *std);
void arrays_free(struct dataset *d);
/* A source of images held in memory: its own open and files (NULL: none
 * listed), the rest the arrays' own. */
#define ARRAYS_SOURCE(open_, files_)                                                                       \
	{                                                                                                   \
		.open = (open_), .files = (files_), .fill = arrays_fill, .class_name = arrays_class_name,         \
		.file_name = arrays_file_name, .identity = arrays_identity,                                       \
		.channel_stats = arrays_channel_stats, .free = arrays_free,                                        \
	}

/* error's one line, then -1. */
int data_fail(struct data_error *error, const char *format, ...) __attribute__((format(printf, 2, 3)));
bool data_file_exists(const char *path);

/* The most images a file of a set in memory may announce. */
#define DATA_MAX_IMAGES 10000000L

#endif
