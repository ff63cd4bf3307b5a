/* Named float64 tensors in one file; see tensor_file.h for the layout. */
#include "tensor_file.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "file_replace.h"

static const char magic[8] = {'R', 'E', 'S', 'G', 'E', 'N', 'T', '1'};

static int append(struct tensor_file *f, const char *name, long count, double **values)
{
	struct tensor_file_entry *entries = realloc(f->entries, (size_t)(f->count + 1) * sizeof *entries);
	if (!entries)
		return -1;
	f->entries = entries;
	struct tensor_file_entry *e = &f->entries[f->count];
	e->name = strdup(name);
	e->count = count;
	e->values = malloc((size_t)(count ? count : 1) * sizeof(double));
	if (!e->name || !e->values) {
		free(e->name);
		free(e->values);
		return -1;
	}
	f->count++;
	*values = e->values;
	return 0;
}

int tensor_file_add(struct tensor_file *f, const char *name, const real *values, long count)
{
	double *copy;
	if (append(f, name, count, &copy) != 0)
		return -1;
	for (long i = 0; i < count; i++)
		copy[i] = values[i];
	return 0;
}

int tensor_file_add_double(struct tensor_file *f, const char *name, const double *values, long count)
{
	double *copy;
	if (append(f, name, count, &copy) != 0)
		return -1;
	memcpy(copy, values, (size_t)count * sizeof(double));
	return 0;
}

static void put_u32(unsigned char *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *b, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

/* Writes, keeping the running checksum of what was written. */
struct sink {
	FILE *file;
	uint64_t hash;
	int ok;
};

static void sink_put(struct sink *s, const unsigned char *bytes, size_t count)
{
	s->ok = s->ok && fwrite(bytes, 1, count, s->file) == count;
	s->hash = checksum_add(s->hash, bytes, count);
}

static int save(const struct tensor_file *f, const char *path, const char *magic, int sealed, char *error,
		size_t size)
{
	struct file_replace replace;
	if (file_replace_begin(&replace, path, error, size) != 0)
		return -1;
	struct sink out = {replace.file, CHECKSUM_BASIS, 1};
	unsigned char b[12];
	memcpy(b, magic, 8);
	put_u32(b + 8, (uint32_t)f->count);
	sink_put(&out, b, 12);
	for (int i = 0; out.ok && i < f->count; i++) {
		const struct tensor_file_entry *e = &f->entries[i];
		uint32_t name_length = (uint32_t)strlen(e->name);
		put_u32(b, name_length);
		sink_put(&out, b, 4);
		sink_put(&out, (const unsigned char *)e->name, name_length);
		put_u64(b, (uint64_t)e->count);
		sink_put(&out, b, 8);
		for (long j = 0; out.ok && j < e->count; j++) {
			uint64_t bits;
			memcpy(&bits, &e->values[j], 8);
			put_u64(b, bits);
			sink_put(&out, b, 8);
		}
	}
	if (sealed) {
		put_u64(b, out.hash);
		sink_put(&out, b, 8);
	}
	if (!out.ok) {
		snprintf(error, size, "%s: cannot write: %s", path, strerror(errno ? errno : EIO));
		file_replace_abort(&replace);
		return -1;
	}
	return file_replace_commit(&replace, error, size);
}

int tensor_file_save(const struct tensor_file *f, const char *path, char *error, size_t size)
{
	return save(f, path, magic, 0, error, size);
}

int tensor_file_save_sealed(const struct tensor_file *f, const char *path, const char magic_of_kind[8],
			    char *error, size_t size)
{
	return save(f, path, magic_of_kind, 1, error, size);
}

/* Whether the last 8 bytes of the file (of bytes bytes) are the checksum of
 * the rest; reads it all once, and leaves the file at its start. */
static int checksum_matches(FILE *file, long bytes)
{
	unsigned char buffer[1 << 16];
	uint64_t hash = CHECKSUM_BASIS;
	long left = bytes - 8;
	while (left > 0) {
		size_t want = left < (long)sizeof buffer ? (size_t)left : sizeof buffer;
		if (fread(buffer, 1, want, file) != want)
			return 0;
		hash = checksum_add(hash, buffer, want);
		left -= (long)want;
	}
	int matches = fread(buffer, 1, 8, file) == 8 && get_u64(buffer, 8) == hash;
	rewind(file);
	return matches;
}

static int load(struct tensor_file *f, const char *path, const char *magic_of_kind, const char *kind,
		int sealed, char *error, size_t size)
{
	memset(f, 0, sizeof *f);
	long remaining;
	FILE *file = file_open_regular(path, &remaining, error, size);
	if (!file)
		return -1;
	unsigned char header[12];
	if (remaining < 12 + 8 * sealed || fread(header, 1, 12, file) != 12 ||
	    memcmp(header, magic_of_kind, 8) != 0) {
		snprintf(error, size, "%s: not a resgen %s (it should start with %.8s)", path, kind, magic_of_kind);
		fclose(file);
		return -1;
	}
	if (sealed) {
		rewind(file);
		if (!checksum_matches(file, remaining)) {
			snprintf(error, size, "%s: its checksum does not match its contents; the file is damaged", path);
			fclose(file);
			return -1;
		}
		remaining -= 8;
		if (fread(header, 1, 12, file) != 12)
			goto truncated;
	}
	remaining -= 12;
	long count = (long)get_u64(header + 8, 4);
	for (long i = 0; i < count; i++) {
		unsigned char b[8];
		char name[256];
		double *values;
		if (remaining < 4 || fread(b, 1, 4, file) != 4)
			goto truncated;
		uint32_t name_length = (uint32_t)get_u64(b, 4);
		remaining -= 4;
		if (name_length == 0 || name_length >= sizeof name) {
			snprintf(error, size, "%s: tensor %ld has a name of %u bytes; expected 1 to 255", path,
				 i, name_length);
			goto failed;
		}
		if (remaining < (long)name_length + 8 || fread(name, 1, name_length, file) != name_length ||
		    fread(b, 1, 8, file) != 8)
			goto truncated;
		name[name_length] = '\0';
		remaining -= (long)name_length + 8;
		uint64_t values_count = get_u64(b, 8);
		if (values_count > (uint64_t)remaining / 8)
			goto truncated;
		if (append(f, name, (long)values_count, &values) != 0) {
			snprintf(error, size, "%s: out of memory", path);
			goto failed;
		}
		for (uint64_t j = 0; j < values_count; j++) {
			if (fread(b, 1, 8, file) != 8)
				goto truncated;
			uint64_t bits = get_u64(b, 8);
			memcpy(&values[j], &bits, 8);
		}
		remaining -= (long)values_count * 8;
	}
	if (remaining != 0) {
		snprintf(error, size, "%s: %ld bytes after the last tensor; the file is damaged", path,
			 remaining);
		goto failed;
	}
	fclose(file);
	return 0;
truncated:
	snprintf(error, size, "%s: truncated; the file ends inside a tensor", path);
failed:
	fclose(file);
	tensor_file_free(f);
	return -1;
}

int tensor_file_load(struct tensor_file *f, const char *path, char *error, size_t size)
{
	return load(f, path, magic, "tensor file", 0, error, size);
}

int tensor_file_load_sealed(struct tensor_file *f, const char *path, const char magic_of_kind[8],
			    const char *kind, char *error, size_t size)
{
	return load(f, path, magic_of_kind, kind, 1, error, size);
}

const struct tensor_file_entry *tensor_file_find(const struct tensor_file *f, const char *name)
{
	for (int i = 0; i < f->count; i++)
		if (strcmp(f->entries[i].name, name) == 0)
			return &f->entries[i];
	return NULL;
}

void tensor_file_free(struct tensor_file *f)
{
	for (int i = 0; i < f->count; i++) {
		free(f->entries[i].name);
		free(f->entries[i].values);
	}
	free(f->entries);
	memset(f, 0, sizeof *f);
}
