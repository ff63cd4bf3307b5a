/* IDX (MNIST family, gzip or plain) and CIFAR binary loaders. Sizes are
 * checked against headers and file lengths before anything is allocated,
 * and truncated or oversized files are refused. */
#include "data.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "checksum.h"
#include "data_sets.h"
#include "file_replace.h"
#include "image_folder.h"
#include "rng.h"

#define MAX_IMAGES 10000000L

static int fail(struct data_error *error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct data_error *error, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	vsnprintf(error->text, sizeof error->text, fmt, args);
	va_end(args);
	return -1;
}

void dataset_free(struct dataset *d)
{
	free(d->images);
	free(d->labels);
	image_folder_close(d->folder);
	d->images = NULL;
	d->labels = NULL;
	d->folder = NULL;
	d->count = 0;
}

uint64_t dataset_identity(const struct dataset *d, uint64_t hash)
{
	long shape[5] = {d->count, d->channels, d->height, d->width, d->classes};
	if (d->folder) /* its files' names and sizes, not every pixel */
		return image_folder_identity(d->folder, checksum_add(hash, shape, sizeof shape));
	size_t pixels = (size_t)d->count * (size_t)d->channels * (size_t)d->height * (size_t)d->width;
	hash = checksum_add(hash, shape, sizeof shape);
	hash = checksum_add_words(hash, d->images, pixels);
	return checksum_add_words(hash, d->labels, (size_t)d->count * sizeof *d->labels);
}

static const char *const fashion_mnist_classes[10] = {
	"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
};
static const char *const cifar10_classes[10] = {
	"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
};
static const char *const cifar100_classes[100] = {
	"apple", "aquarium_fish", "baby", "bear", "beaver", "bed", "bee", "beetle", "bicycle", "bottle",
	"bowl", "boy", "bridge", "bus", "butterfly", "camel", "can", "castle", "caterpillar", "cattle",
	"chair", "chimpanzee", "clock", "cloud", "cockroach", "couch", "crab", "crocodile", "cup", "dinosaur",
	"dolphin", "elephant", "flatfish", "forest", "fox", "girl", "hamster", "house", "kangaroo", "keyboard",
	"lamp", "lawn_mower", "leopard", "lion", "lizard", "lobster", "man", "maple_tree", "motorcycle", "mountain",
	"mouse", "mushroom", "oak_tree", "orange", "orchid", "otter", "palm_tree", "pear", "pickup_truck", "pine_tree",
	"plain", "plate", "poppy", "porcupine", "possum", "rabbit", "raccoon", "ray", "road", "rocket",
	"rose", "sea", "seal", "shark", "shrew", "skunk", "skyscraper", "snail", "snake", "spider",
	"squirrel", "streetcar", "sunflower", "sweet_pepper", "table", "tank", "telephone", "television", "tiger", "tractor",
	"train", "trout", "tulip", "turtle", "wardrobe", "whale", "willow_tree", "wolf", "woman", "worm",
};

const char *data_class_name(const char *set, int classes, int index, char *out, size_t size)
{
	const char *const *names = strcmp(set, "fashion-mnist") == 0 && classes == 10 ? fashion_mnist_classes
				   : strcmp(set, "cifar10") == 0 && classes == 10    ? cifar10_classes
				   : strcmp(set, "cifar100") == 0 && classes == 100  ? cifar100_classes
										     : NULL;
	if (names && index >= 0 && index < classes)
		snprintf(out, size, "%s", names[index]);
	else
		snprintf(out, size, "%d", index);
	return out;
}

void dataset_truncate(struct dataset *d, long count)
{
	if (count < d->count)
		d->count = count;
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- IDX ---------------------------------------------------------------- */

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
			return fail(error, "%s: cannot read %s: %s", path, what, message);
		}
		if (got == 0)
			return fail(error,
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
			return fail(error,
				    "%s: cannot open: no such file (nor %s.gz); the data folder should hold "
				    "the four IDX files, gzip-compressed or not (pass --data DIR)",
				    path, path);
		return fail(error, "%s", message);
	}
	int fd = dup(fileno(plain));
	fclose(plain);
	f->file = fd >= 0 ? gzdopen(fd, "rb") : NULL;
	if (!f->file) {
		if (fd >= 0)
			close(fd);
		return fail(error, "%s: cannot open: %s", path, strerror(errno ? errno : EIO));
	}
	unsigned char header[16];
	if (gz_read_exact(f->file, header, 4, path, "IDX magic number", error) != 0)
		return -1;
	if (header[0] != 0 || header[1] != 0 || header[2] != 0x08 || header[3] != want_dims)
		return fail(error,
			    "%s: not an IDX file of unsigned bytes with %d dimensions (magic %02x %02x "
			    "%02x %02x); expected 00 00 08 %02x",
			    path, want_dims, header[0], header[1], header[2], header[3], want_dims);
	if (gz_read_exact(f->file, header + 4, 4 * want_dims, path, "IDX header", error) != 0)
		return -1;
	f->total = 1;
	for (int i = 0; i < want_dims; i++) {
		const unsigned char *b = header + 4 + 4 * i;
		f->dims[i] = ((long)b[0] << 24) | ((long)b[1] << 16) | ((long)b[2] << 8) | b[3];
		long limit = i == 0 ? MAX_IMAGES : 4096;
		if (f->dims[i] < 1 || f->dims[i] > limit)
			return fail(error, "%s: dimension %d is %ld in the header; expected 1 to %ld", path,
				    i + 1, f->dims[i], limit);
		f->total *= f->dims[i];
	}
	/* The header is all there is to go on before reading a gzip stream:
	 * refuse what no image set of this kind could be. */
	if (f->total > (4L << 30))
		return fail(error,
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
		return fail(error, "%s: out of memory for %ld bytes", f->path, f->total);
	if (gz_read_exact(f->file, *data, f->total, f->path, "data", error) != 0)
		goto failed;
	unsigned char extra;
	int more = gzread(f->file, &extra, 1);
	if (more != 0) {
		fail(error, "%s: %s after the %ld bytes the header announces; the file is not "
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
	if (!exists(out))
		snprintf(out, size, "%s/%s", dir, name);
}

/* The IDX files, which data_load reads and data_files lists: each split's
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
		status = fail(error, "%s: images are %ldx%ld; this network expects %dx%d", images_path,
			      image_file.dims[1], image_file.dims[2], height, width);
	if (status == 0)
		status = idx_open(&label_file, labels_path, 1, error);
	if (status == 0 && label_file.dims[0] != image_file.dims[0])
		status = fail(error, "%s: %ld labels for the %ld images of %s; the two files must match",
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
			status = fail(error, "%s: out of memory", labels_path);
	}
	for (long i = 0; status == 0 && i < count; i++) {
		if (labels[i] >= classes)
			status = fail(error, "%s: label %d of image %ld is not below %d classes",
				      labels_path, labels[i], i, classes);
		else
			d->labels[i] = labels[i];
	}
	free(labels);
	if (status != 0) {
		free(images);
		dataset_free(d);
		return -1;
	}
	d->images = images;
	d->count = count;
	d->channels = 1;
	d->height = height;
	d->width = width;
	d->classes = classes;
	return 0;
}

/* ---- CIFAR binary ------------------------------------------------------- */

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
	if (bytes <= 0 || bytes % record != 0 || bytes / record > MAX_IMAGES) {
		fclose(file);
		return fail(error,
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
		return fail(error, "%s: out of memory", path);
	}
	for (long i = 0; i < records; i++) {
		if (fread(buffer, 1, (size_t)record, file) != (size_t)record) {
			free(buffer);
			fclose(file);
			return fail(error, "%s: truncated at record %ld", path, i);
		}
		int label = buffer[label_bytes - 1];
		if (label >= classes) {
			free(buffer);
			fclose(file);
			return fail(error, "%s: record %ld has label %d, not below %d classes", path, i,
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

/* CIFAR's binary files, which load_cifar reads and data_files lists: the
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
	if (!exists(path)) {
		snprintf(base, sizeof base, "%s/%s", dir, inner);
		snprintf(path, sizeof path, "%s/%s", base, probe);
		if (!exists(path))
			return fail(error,
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

int data_files(const char *set, const char *dir, char *paths, size_t size, int max)
{
	if (data_set_is_folder(set))
		return 0; /* its images are too many to list; no output ends in .JPEG */
	bool cifar10 = strcmp(set, "cifar10") == 0, cifar100 = strcmp(set, "cifar100") == 0;
	int count = 0;
	if (cifar10 || cifar100) {
		for (int i = 0; cifar_files[cifar100][i]; i++)
			for (int inner = 0; inner < 2 && count < max; inner++)
				snprintf(paths + (size_t)count++ * size, size, "%s/%s%s%s", dir,
					 inner ? cifar_folders[cifar100] : "", inner ? "/" : "", cifar_files[cifar100][i]);
		return count;
	}
	for (int split = 0; split < 2; split++)
		for (int kind = 0; kind < 2; kind++)
			for (int gz = 0; gz < 2 && count < max; gz++)
				snprintf(paths + (size_t)count++ * size, size, "%s/%s-%s%s", dir, idx_splits[split],
					 idx_kinds[kind], gz ? ".gz" : "");
	return count;
}

bool data_set_is_folder(const char *set)
{
	const struct data_set_info *info = data_set_named(set);
	return info && info->images_of_any_size;
}

/* A split of a folder of images: the folder, and its labels. */
static int open_folder(struct dataset *d, const char *dir, const char *split, int height, int classes,
		       const struct dataset *train, bool skip_bad, struct data_error *error)
{
	if (image_folder_open(&d->folder, dir, split, classes, height, train ? train->folder : NULL, skip_bad,
			      error->text, sizeof error->text) != 0)
		return -1;
	d->channels = 3;
	d->height = d->width = height;
	d->classes = classes;
	d->count = image_folder_count(d->folder);
	d->labels = malloc((size_t)d->count * sizeof *d->labels);
	if (!d->labels)
		return fail(error, "%s/%s: out of memory for %ld labels", dir, split, d->count);
	for (long i = 0; i < d->count; i++)
		d->labels[i] = (uint16_t)image_folder_label(d->folder, i);
	return 0;
}

int data_load(const char *set, const char *dir, int channels, int height, int width, int classes, bool skip_bad,
	      struct dataset *train, struct dataset *test, struct data_error *error)
{
	memset(train, 0, sizeof *train);
	memset(test, 0, sizeof *test);
	int status;
	if (data_set_is_folder(set)) {
		if (channels != 3 || height != width)
			return fail(error, "%s: images are cropped to 3 x N x N, but this network expects %dx%dx%d", set,
				    channels, height, width);
		status = open_folder(train, dir, "train", height, classes, NULL, skip_bad, error);
		if (status == 0)
			status = open_folder(test, dir, "val", height, classes, train, skip_bad, error);
		if (status != 0) {
			dataset_free(train);
			dataset_free(test);
		}
		return status;
	}
	bool cifar10 = strcmp(set, "cifar10") == 0, cifar100 = strcmp(set, "cifar100") == 0;
	if (cifar10 || cifar100) {
		if (channels != 3 || height != 32 || width != 32)
			return fail(error, "%s: images are 3x32x32, but this network expects %dx%dx%d",
				    set, channels, height, width);
		status = load_cifar(dir, cifar100, train, test, error);
	} else if (strcmp(set, "fashion-mnist") == 0 || strcmp(set, "mnist") == 0) {
		if (channels != 1)
			return fail(error, "%s: images have 1 channel, but this network expects %d", set,
				    channels);
		status = load_idx_split(dir, idx_splits[0], height, width, classes, train, error);
		if (status == 0)
			status = load_idx_split(dir, idx_splits[1], height, width, classes, test, error);
	} else {
		return fail(error, "unknown data set '%s'", set);
	}
	if (status == 0 && (train->classes != classes))
		status = fail(error, "%s: %d classes, but this network has %d", set, train->classes,
			      classes);
	if (status != 0) {
		dataset_free(train);
		dataset_free(test);
	}
	return status;
}

/* ---- synthetic ---------------------------------------------------------- */

static int synthesise(struct dataset *d, const uint8_t *prototypes, long count, struct rng *rng,
		      struct data_error *error)
{
	long pixels = (long)d->channels * d->height * d->width;
	d->images = malloc((size_t)(count * pixels));
	d->labels = malloc((size_t)count * sizeof *d->labels);
	if (!d->images || !d->labels) {
		dataset_free(d);
		return fail(error, "synthetic data: out of memory for %ld images", count);
	}
	for (long i = 0; i < count; i++) {
		int label = (int)rng_below(rng, (uint32_t)d->classes);
		d->labels[i] = (uint16_t)label;
		const uint8_t *prototype = prototypes + (size_t)label * pixels;
		for (long p = 0; p < pixels; p++) {
			double value = 0.6 * prototype[p] + 0.4 * 255.0 * rng_uniform(rng);
			d->images[i * pixels + p] = (uint8_t)value;
		}
	}
	d->count = count;
	return 0;
}

int data_synthetic(int channels, int height, int width, int classes, long train_count,
		   long test_count, uint64_t seed, struct dataset *train, struct dataset *test,
		   struct data_error *error)
{
	memset(train, 0, sizeof *train);
	memset(test, 0, sizeof *test);
	long pixels = (long)channels * height * width;
	uint8_t *prototypes = malloc((size_t)(classes * pixels));
	if (!prototypes)
		return fail(error, "synthetic data: out of memory");
	struct rng rng;
	rng_seed(&rng, seed, 0x5eed);
	for (long p = 0; p < classes * pixels; p++)
		prototypes[p] = (uint8_t)rng_below(&rng, 256);
	for (struct dataset *d = train; d; d = d == train ? test : NULL) {
		d->channels = channels;
		d->height = height;
		d->width = width;
		d->classes = classes;
	}
	int status = synthesise(train, prototypes, train_count, &rng, error);
	if (status == 0)
		status = synthesise(test, prototypes, test_count, &rng, error);
	free(prototypes);
	if (status != 0) {
		dataset_free(train);
		dataset_free(test);
	}
	return status;
}

/* ---- batches ------------------------------------------------------------ */

void dataset_channel_stats(const struct dataset *d, double *mean, double *std)
{
	if (d->folder) {
		memcpy(mean, image_folder_mean, sizeof image_folder_mean);
		memcpy(std, image_folder_std, sizeof image_folder_std);
		return;
	}
	long plane = (long)d->height * d->width;
	for (int c = 0; c < d->channels; c++) {
		double sum = 0, squares = 0;
		for (long i = 0; i < d->count; i++) {
			const uint8_t *p = d->images + ((size_t)i * d->channels + c) * plane;
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

uint64_t data_augment_key(const struct augment *augment, long iteration, long index)
{
	return rng_key(augment->seed, (uint64_t)iteration, (uint64_t)index);
}

/* One image's crop offset and flip, from its key. */
static void augment_draw(const struct augment *augment, uint64_t key, int *dy, int *dx, int *flip)
{
	struct rng rng;
	rng_seed(&rng, key, 0xa4);
	if (augment && augment->pad > 0) {
		*dy = (int)rng_below(&rng, 2u * augment->pad + 1) - augment->pad;
		*dx = (int)rng_below(&rng, 2u * augment->pad + 1) - augment->pad;
	}
	if (augment && augment->flip)
		*flip = (int)rng_below(&rng, 2);
}

/* A batch of a folder of images, decoded by the run's threads in any
 * order, each from its own key. An image that cannot be decoded now (the
 * folder's check at opening decoded it: it was changed or removed since)
 * stops the run, which never trains on a blank image. */
static void fill_from_folder(const struct dataset *d, const long *indices, int n, const double *mean, const double *std,
			     const struct augment *augment, long iteration, real *out, int *labels)
{
	uint64_t keys[n > 0 ? n : 1];
	for (int i = 0; i < n; i++) {
		keys[i] = augment ? data_augment_key(augment, iteration, indices[i]) : 0;
		labels[i] = d->labels[indices[i]];
	}
	struct folder_augment drawn = {0};
	if (augment)
		drawn = (struct folder_augment){augment->shorter_min, augment->shorter_max, augment->aspect,
						augment->flip != 0};
	size_t image = (size_t)d->channels * d->height * d->width;
	char first_error[1024] = "";
	#pragma omp parallel for schedule(dynamic, 1)
	for (int i = 0; i < n; i++) {
		char error[1024];
		if (image_folder_fill(d->folder, d->first + indices[i], augment ? &drawn : NULL, keys[i], mean, std,
				      out + (size_t)i * image, error, sizeof error) != 0) {
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

void data_fill_batch(const struct dataset *d, const long *indices, int n, const double *mean,
		     const double *std, const struct augment *augment, long iteration, real *out, int *labels)
{
	if (d->folder) {
		fill_from_folder(d, indices, n, mean, std, augment, iteration, out, labels);
		return;
	}
	int C = d->channels, H = d->height, W = d->width;
	for (int i = 0; i < n; i++) {
		long index = indices[i];
		int dy = 0, dx = 0, flip = 0;
		if (augment)
			augment_draw(augment, data_augment_key(augment, iteration, index), &dy, &dx, &flip);
		labels[i] = d->labels[index];
		const uint8_t *image = d->images + (size_t)index * C * H * W;
		real *target = out + (size_t)i * C * H * W;
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
					target[((size_t)c * H + y) * W + x] = (real)(float)value;
				}
			}
		}
	}
}
