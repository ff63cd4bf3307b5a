/* The IDX source: the MNIST family's four files (each split's images and
 * labels, gzip-compressed or not). Sizes are checked against headers and
 * file lengths before anything is allocated, and truncated or oversized
 * files are refused. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "file_replace.h" /* file_open_regular */
#include "sources.h"

static int gz_read_exact(gzFile file, void *buffer, long length, const char *path, const char *what,
			 struct data_error *error)
{
	unsigned char *at = buffer;
	long done = 0;
	while (done < length) {
		unsigned chunk = length - done > (1L << 30) ? 1u << 30 : (unsigned)(length - done);
		int got = gzread(file, at + done, chunk);
		if (got < 0) {
			int code;
			const char *message = gzerror(file, &code);
			return data_fail(error, "%s: cannot read %s: %s", path, what, message);
		}
		if (got == 0)
			return data_fail(error,
				    "%s: truncated: expected %ld bytes of %s, found %ld; re-download "
				    "or reinstall the file",
				    path, length, what, done);
		done += got;
	}
	return 0;
}

/* An open IDX file of unsigned bytes whose header has been read and checked;
 * the payload is read only once both files of a split agree. */
struct idx_file {
	const char *path;
	gzFile file;
	long dims[3];
	long total; /* payload bytes */
};

static int idx_open(struct idx_file *f, const char *path, int want_dims, struct data_error *error)
{
	memset(f, 0, sizeof *f);
	f->path = path;
	char message[sizeof error->text];
	struct stat st;
	FILE *plain = file_open_regular(path, NULL, message, sizeof message);
	if (!plain) {
		if (stat(path, &st) != 0 && errno == ENOENT)
			return data_fail(error,
				    "%s: cannot open: no such file (nor %s.gz); the data folder should hold "
				    "the four IDX files, gzip-compressed or not (pass --data DIR)",
				    path, path);
		return data_fail(error, "%s", message);
	}
	int fd = dup(fileno(plain));
	fclose(plain);
	f->file = fd >= 0 ? gzdopen(fd, "rb") : NULL;
	if (!f->file) {
		if (fd >= 0)
			close(fd);
		return data_fail(error, "%s: cannot open: %s", path, strerror(errno ? errno : EIO));
	}
	unsigned char header[16];
	if (gz_read_exact(f->file, header, 4, path, "IDX magic number", error) != 0)
		return -1;
	if (header[0] != 0 || header[1] != 0 || header[2] != 0x08 || header[3] != want_dims)
		return data_fail(error,
			    "%s: not an IDX file of unsigned bytes with %d dimensions (magic %02x %02x "
			    "%02x %02x); expected 00 00 08 %02x",
			    path, want_dims, header[0], header[1], header[2], header[3], want_dims);
	if (gz_read_exact(f->file, header + 4, 4 * want_dims, path, "IDX header", error) != 0)
		return -1;
	f->total = 1;
	for (int i = 0; i < want_dims; i++) {
		const unsigned char *b = header + 4 + 4 * i;
		f->dims[i] = ((long)b[0] << 24) | ((long)b[1] << 16) | ((long)b[2] << 8) | b[3];
		long limit = i == 0 ? DATA_MAX_IMAGES : 4096;
		if (f->dims[i] < 1 || f->dims[i] > limit)
			return data_fail(error, "%s: dimension %d is %ld in the header; expected 1 to %ld", path,
				    i + 1, f->dims[i], limit);
		f->total *= f->dims[i];
	}
	/* The header is all there is to go on before reading a gzip stream:
	 * refuse what no image set of this kind could be. */
	if (f->total > (4L << 30))
		return data_fail(error,
			    "%s: the header announces %ld bytes of data, more than 4 GiB; the file "
			    "is not an image set this tool reads",
			    path, f->total);
	return 0;
}

static void idx_close(struct idx_file *f)
{
	if (f->file)
		gzclose(f->file);
	f->file = NULL;
}

/* The payload the header announced, and not a byte more. */
static int idx_read(struct idx_file *f, uint8_t **data, struct data_error *error)
{
	*data = malloc((size_t)f->total);
	if (!*data)
		return data_fail(error, "%s: out of memory for %ld bytes", f->path, f->total);
	if (gz_read_exact(f->file, *data, f->total, f->path, "data", error) != 0)
		goto failed;
	unsigned char extra;
	int more = gzread(f->file, &extra, 1);
	if (more != 0) {
		data_fail(error, "%s: %s after the %ld bytes the header announces; the file is not "
			    "the IDX file it claims to be",
		     f->path, more > 0 ? "extra data" : "unreadable data", f->total);
		goto failed;
	}
	return 0;
failed:
	free(*data);
	*data = NULL;
	return -1;
}

/* DIR/NAME.gz, else DIR/NAME. */
static void idx_path(char *out, size_t size, const char *dir, const char *name)
{
	snprintf(out, size, "%s/%s.gz", dir, name);
	if (!data_file_exists(out))
		snprintf(out, size, "%s/%s", dir, name);
}

/* The IDX files, which idx_open_splits reads and idx_files lists: each split's
 * images and labels, gzip-compressed (NAME.gz) or not. */
static const char *const idx_splits[2] = {"train", "t10k"};
static const char *const idx_kinds[2] = {"images-idx3-ubyte", "labels-idx1-ubyte"};

/* Both headers are read and checked against each other and against the
 * network before either payload: a mismatch costs nothing to report. */
static int load_idx_split(const char *dir, const char *prefix, int height, int width, int classes,
			  struct dataset *d, struct data_error *error)
{
	char images_path[1024], labels_path[1024], name[64];
	snprintf(name, sizeof name, "%s-%s", prefix, idx_kinds[0]);
	idx_path(images_path, sizeof images_path, dir, name);
	snprintf(name, sizeof name, "%s-%s", prefix, idx_kinds[1]);
	idx_path(labels_path, sizeof labels_path, dir, name);
	struct idx_file image_file, label_file = {0};
	uint8_t *images = NULL, *labels = NULL;
	int status = idx_open(&image_file, images_path, 3, error);
	if (status == 0 && (image_file.dims[1] != height || image_file.dims[2] != width))
		status = data_fail(error, "%s: images are %ldx%ld; this network expects %dx%d", images_path,
			      image_file.dims[1], image_file.dims[2], height, width);
	if (status == 0)
		status = idx_open(&label_file, labels_path, 1, error);
	if (status == 0 && label_file.dims[0] != image_file.dims[0])
		status = data_fail(error, "%s: %ld labels for the %ld images of %s; the two files must match",
			      labels_path, label_file.dims[0], image_file.dims[0], images_path);
	if (status == 0)
		status = idx_read(&label_file, &labels, error);
	if (status == 0)
		status = idx_read(&image_file, &images, error);
	idx_close(&image_file);
	idx_close(&label_file);
	long count = image_file.dims[0];
	if (status == 0) {
		d->labels = malloc((size_t)count * sizeof *d->labels);
		if (!d->labels)
			status = data_fail(error, "%s: out of memory", labels_path);
	}
	for (long i = 0; status == 0 && i < count; i++) {
		if (labels[i] >= classes)
			status = data_fail(error, "%s: label %d of image %ld is not below %d classes",
				      labels_path, labels[i], i, classes);
		else
			d->labels[i] = labels[i];
	}
	free(labels);
	if (status != 0) {
		free(images);
		return -1; /* data.c frees d's labels */
	}
	d->images = images;
	d->count = count;
	d->channels = 1;
	d->height = height;
	d->width = width;
	d->classes = classes;
	return 0;
}

static int idx_open_splits(const struct data_request *want, struct dataset *train, struct dataset *test,
			   struct data_error *error)
{
	if (want->channels != 1)
		return data_fail(error, "%s: images have 1 channel, but this network expects %d", data_sets[want->set].name,
				 want->channels);
	int status = load_idx_split(want->dir, idx_splits[0], want->height, want->width, want->classes, train, error);
	if (status == 0)
		status = load_idx_split(want->dir, idx_splits[1], want->height, want->width, want->classes, test, error);
	return status;
}

static int idx_files(const struct data_request *want, char *paths, size_t size, int max)
{
	int count = 0;
	for (int split = 0; split < 2; split++)
		for (int kind = 0; kind < 2; kind++)
			for (int gz = 0; gz < 2 && count < max; gz++)
				snprintf(paths + (size_t)count++ * size, size, "%s/%s-%s%s", want->dir, idx_splits[split],
					 idx_kinds[kind], gz ? ".gz" : "");
	return count;
}

const struct data_source idx_source = ARRAYS_SOURCE(idx_open_splits, idx_files);
