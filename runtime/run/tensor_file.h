/* Named tensors in one file: weights exported and imported by the binaries,
 * and the dumps of one training step that the tests compare. Values are
 * stored as little-endian float64 whatever the build's dtype, so an f32
 * and an f64 build read each other's files exactly.
 *
 * Layout: "RESGENT1", uint32 tensor count, then per tensor: uint32 name
 * length, the name, uint64 value count, the values. A sealed file (a
 * checkpoint) has the same layout under its own magic, followed by a
 * uint64 FNV-1a checksum of everything before it. */
#ifndef RESGEN_TENSOR_FILE_H
#define RESGEN_TENSOR_FILE_H

#include <stdio.h>

#include "real.h"

struct tensor_file_entry {
	char *name;
	long count;
	double *values;
};

struct tensor_file {
	int count;
	struct tensor_file_entry *entries;
};

/* Writing: entries are appended in memory, then saved in one go (to a
 * temporary name, renamed into place). */
int tensor_file_add(struct tensor_file *f, const char *name, const real *values, long count);
int tensor_file_add_double(struct tensor_file *f, const char *name, const double *values,
			   long count);
int tensor_file_save(const struct tensor_file *f, const char *path, char *error, size_t size);
int tensor_file_load(struct tensor_file *f, const char *path, char *error, size_t size);
/* The same under another magic, sealed by a checksum, which loading checks
 * before it reads anything else; kind names such files in errors. */
int tensor_file_save_sealed(const struct tensor_file *f, const char *path, const char magic[8], char *error,
			    size_t size);
int tensor_file_load_sealed(struct tensor_file *f, const char *path, const char magic[8], const char *kind,
			    char *error, size_t size);
const struct tensor_file_entry *tensor_file_find(const struct tensor_file *f, const char *name);
void tensor_file_free(struct tensor_file *f);

#endif
