/* A folder of JPEG (or PNG) images as a data set: image_folder.h. */
#include "image_folder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stb/stb_image.h>
#include <turbojpeg.h>

#include "checksum.h"
#include "file_replace.h"
#include "printable.h"
#include "resize.h"
#include "rng.h"

/* ILSVRC 2012's largest images are below 40 million pixels; a header
 * that claims more than 2^27 is taken for damage, not decoded. */
enum { CLASS_MAX = 65535, SIDE_MAX = 32768 };
#define PIXELS_MAX (1L << 27)
/* The largest image file read whole: ILSVRC 2012's largest is 15 MB. */
#define FILE_MAX (256L << 20)

struct image_file {
	char *path; /* CLASS/FILE, under the split's folder */
	long bytes;
	uint64_t hash; /* of its bytes when the folder opened */
	int label;
};

struct image_folder {
	char root[4096]; /* DIR/SPLIT */
	char split[8];
	int classes, crop;
	char **class_names;
	struct image_file *files;
	long count, capacity;
	long skipped;
	char first_skipped[512];
};

const double image_folder_mean[3] = {0.485, 0.456, 0.406}, image_folder_std[3] = {0.229, 0.224, 0.225};

long image_folder_count(const struct image_folder *f) { return f->count; }
int image_folder_label(const struct image_folder *f, long index) { return f->files[index].label; }
const char *image_folder_class(const struct image_folder *f, int label) { return f->class_names[label]; }
const char *image_folder_path(const struct image_folder *f, long index) { return f->files[index].path; }
const char *image_folder_split(const struct image_folder *f) { return f->split; }

long image_folder_skipped(const struct image_folder *f, const char **first)
{
	*first = f->first_skipped;
	return f->skipped;
}

uint64_t image_folder_identity(const struct image_folder *f, uint64_t hash)
{
	for (long i = 0; i < f->count; i++) {
		const struct image_file *file = &f->files[i];
		hash = checksum_add(hash, &file->label, sizeof file->label);
		hash = checksum_add(hash, file->path, strlen(file->path) + 1);
		hash = checksum_add(hash, &file->bytes, sizeof file->bytes);
		hash = checksum_add(hash, &file->hash, sizeof file->hash);
	}
	return hash;
}

void image_folder_close(struct image_folder *f)
{
	if (!f)
		return;
	for (int c = 0; c < f->classes && f->class_names; c++)
		free(f->class_names[c]);
	for (long i = 0; i < f->count; i++)
		free(f->files[i].path);
	free(f->class_names);
	free(f->files);
	free(f);
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The folder's images in an order of their names' hashes, the same on
 * every machine, so that the first N (--train-limit) and the last N
 * (--validation) are of every class, not of the first or last ones. */
static uint64_t name_key(const struct image_file *file)
{
	return checksum_add(CHECKSUM_BASIS, file->path, strlen(file->path));
}

static int compare_files(const void *a, const void *b)
{
	const struct image_file *x = a, *y = b;
	uint64_t kx = name_key(x), ky = name_key(y);
	return kx < ky ? -1 : kx > ky ? 1 : strcmp(x->path, y->path);
}

/* The entries of folder that are folders (want_folders) or regular files,
 * sorted by name, as torchvision's ImageFolder orders them; hidden ones
 * (a leading '.') left out. -1 when folder cannot be read. */
static int list(const char *folder, bool want_folders, char ***names, long *count)
{
	*names = NULL;
	*count = 0;
	DIR *dir = opendir(folder);
	if (!dir)
		return -1;
	long capacity = 0;
	struct dirent *entry;
	int status = 0;
	while ((entry = readdir(dir))) {
		if (entry->d_name[0] == '.')
			continue;
		char path[8192];
		struct stat st;
		if (snprintf(path, sizeof path, "%s/%s", folder, entry->d_name) >= (int)sizeof path || stat(path, &st) != 0 || (want_folders ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)))
			continue;
		if (*count == capacity) {
			capacity = capacity ? 2 * capacity : 64;
			char **bigger = realloc(*names, (size_t)capacity * sizeof *bigger);
			if (!bigger) {
				status = -1;
				break;
			}
			*names = bigger;
		}
		if (!((*names)[*count] = strdup(entry->d_name))) {
			status = -1;
			break;
		}
		(*count)++;
	}
	closedir(dir);
	if (*count)
		qsort(*names, (size_t)*count, sizeof **names, compare_names);
	return status;
}

static void free_names(char **names, long count)
{
	for (long i = 0; i < count; i++)
		free(names[i]);
	free(names);
}

/* Whether name ends in an image's extension (ImageFolder's JPEG and PNG
 * ones, any case). */
static bool image_name(const char *name)
{
	const char *dot = strrchr(name, '.');
	return dot && (strcasecmp(dot, ".jpeg") == 0 || strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".png") == 0);
}

/* ---- reading and checking one file -------------------------------------- */

enum image_kind { KIND_JPEG, KIND_PNG };

static const unsigned char png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

/* The whole of path, at most FILE_MAX bytes, in a new buffer of *length
 * bytes; NULL with why in error. */
static unsigned char *read_whole(const char *path, long *length, char *error, size_t size)
{
	char message[1024];
	long total = 0;
	FILE *file = file_open_regular(path, &total, message, sizeof message);
	if (!file) { /* its line names the path, which the caller names */
		size_t named = strlen(path);
		snprintf(error, size, "%.180s", strncmp(message, path, named) == 0 ? message + named + 2 : message);
		return NULL;
	}
	if (total <= 0 || total > FILE_MAX) {
		if (total <= 0)
			snprintf(error, size, "empty: 0 bytes");
		else
			snprintf(error, size, "%ld bytes, more than an image file of this reader (%ld)", total, FILE_MAX);
		fclose(file);
		return NULL;
	}
	*length = total;
	unsigned char *data = malloc((size_t)total);
	bool read = data && fread(data, 1, (size_t)total, file) == (size_t)total;
	if (!data)
		snprintf(error, size, "out of memory for %ld bytes", total);
	else if (!read)
		snprintf(error, size, "cannot read: %s", ferror(file) ? strerror(errno) : "it ended early");
	if (!read) {
		free(data);
		data = NULL;
	}
	fclose(file);
	return data;
}

/* What a file holds and how big its image is, from its bytes: its
 * signature, its header, and a PNG's end (its IEND chunk; a truncated
 * JPEG is found by decoding it, as Pillow finds it). 0, or -1 with why in
 * error. */
static int probe(const unsigned char *data, long bytes, enum image_kind *kind, int *width, int *height, char *error,
		 size_t size)
{
	if (bytes >= 8 && memcmp(data, png_signature, 8) == 0) {
		*kind = KIND_PNG;
		int w, h, channels;
		if (!stbi_info_from_memory(data, (int)bytes, &w, &h, &channels)) {
			snprintf(error, size, "a PNG whose header cannot be read (%s)", stbi_failure_reason());
			return -1;
		}
		/* Pillow opens a 16-bit grey PNG as 32-bit integers and clips
		 * them to 255 in RGB, where stb_image scales them: no crop
		 * would be torchvision's (16-bit colour is read alike by both) */
		if (bytes >= 26 && memcmp(data + 12, "IHDR", 4) == 0 && data[24] == 16 && data[25] == 0) {
			snprintf(error, size, "a 16-bit greyscale PNG, which torchvision's loader (Pillow) clips to white "
					      "where this reader would scale it (convert it to 8 bits)");
			return -1;
		}
		if (bytes < 20 || memcmp(data + bytes - 8, "IEND", 4) != 0) {
			snprintf(error, size, "a PNG without its end (IEND): truncated");
			return -1;
		}
		*width = w;
		*height = h;
	} else if (bytes >= 4 && data[0] == 0xff && data[1] == 0xd8) {
		*kind = KIND_JPEG;
		tjhandle tj = tjInitDecompress();
		/* a stream of tables alone passes without an image's sizes:
		 * they stay 0, which the check below refuses */
		int w = 0, h = 0, subsampling = -1, colourspace = -1;
		int failed = !tj || tjDecompressHeader3(tj, data, (unsigned long)bytes, &w, &h, &subsampling, &colourspace);
		if (failed)
			snprintf(error, size, "a JPEG whose header cannot be read (%s)", tj ? tjGetErrorStr2(tj) : "no memory");
		if (tj)
			tjDestroy(tj);
		if (failed)
			return -1;
		*width = w;
		*height = h;
	} else {
		snprintf(error, size, "neither a JPEG nor a PNG (it starts with bytes %02x %02x)", bytes > 0 ? data[0] : 0,
			 bytes > 1 ? data[1] : 0);
		return -1;
	}
	if (*width < 1 || *height < 1 || *width > SIDE_MAX || *height > SIDE_MAX ||
	    (long)*width * *height > PIXELS_MAX) {
		snprintf(error, size, "an image of %d x %d pixels; this reader decodes 1 to %d a side, %ld in all",
			 *width, *height, SIDE_MAX, PIXELS_MAX);
		return -1;
	}
	return 0;
}

/* The whole file's image (its kind as probe found it) as 8-bit RGB,
 * width x height, decoded at the smallest of libjpeg-turbo's scales that
 * keeps at least need_width x need_height pixels (the full size where
 * need is 0). A new buffer, or NULL with why in error. */
static unsigned char *decode(const unsigned char *data, long bytes, enum image_kind kind, int need_width,
			     int need_height, int *width, int *height, char *error, size_t size)
{
	if (kind == KIND_PNG) {
		int w = 0, h = 0, channels;
		unsigned char *pixels = stbi_load_from_memory(data, (int)bytes, &w, &h, &channels, 3);
		if (!pixels)
			snprintf(error, size, "a PNG that cannot be decoded (%s)", stbi_failure_reason());
		*width = w;
		*height = h;
		return pixels;
	}
	tjhandle tj = tjInitDecompress();
	if (!tj) {
		snprintf(error, size, "cannot start libjpeg-turbo");
		return NULL;
	}
	int w = 0, h = 0, subsampling = -1, colourspace = -1;
	if (tjDecompressHeader3(tj, data, (unsigned long)bytes, &w, &h, &subsampling, &colourspace) != 0 || w < 1 ||
	    h < 1) { /* probe passed these bytes: a safeguard */
		snprintf(error, size, "a JPEG whose header cannot be read (%s)", tjGetErrorStr2(tj));
		tjDestroy(tj);
		return NULL;
	}
	/* the smallest scale that keeps what the crop needs */
	int factors_count;
	tjscalingfactor *factors = tjGetScalingFactors(&factors_count), best = {1, 1};
	for (int i = 0; need_width > 0 && i < factors_count; i++) {
		tjscalingfactor f = factors[i];
		if (f.num > f.denom)
			continue;
		int sw = TJSCALED(w, f), sh = TJSCALED(h, f);
		if (sw >= need_width && sh >= need_height && (double)f.num / f.denom < (double)best.num / best.denom)
			best = f;
	}
	*width = TJSCALED(w, best);
	*height = TJSCALED(h, best);
	bool cmyk = colourspace == TJCS_CMYK || colourspace == TJCS_YCCK;
	int channels = cmyk ? 4 : 3;
	unsigned char *pixels = malloc((size_t)*width * *height * channels);
	if (!pixels) {
		snprintf(error, size, "out of memory for a %d x %d image", *width, *height);
		tjDestroy(tj);
		return NULL;
	}
	/* libjpeg-turbo's defaults, as PIL decodes: the accurate integer DCT
	 * and fancy upsampling; and as PIL, past libjpeg's warnings (data
	 * after a scan, corrupt entropy data), which decode on */
	int failed = tjDecompress2(tj, data, (unsigned long)bytes, pixels, *width, 0, *height,
				   cmyk ? TJPF_CMYK : TJPF_RGB, 0) != 0;
	/* but data that ends before the image does, which Pillow refuses
	 * ("image file is truncated") */
	bool truncated = failed && strstr(tjGetErrorStr2(tj), "Premature end of JPEG file");
	if (failed && (truncated || tjGetErrorCode(tj) != TJERR_WARNING)) {
		if (truncated)
			snprintf(error, size, "a JPEG whose data ends before its image does: truncated");
		else
			snprintf(error, size, "a JPEG that cannot be decoded (%s)", tjGetErrorStr2(tj));
		free(pixels);
		tjDestroy(tj);
		return NULL;
	}
	tjDestroy(tj);
	if (cmyk) {
		/* Adobe's inverted CMYK (as Photoshop writes it, and ILSVRC
		 * 2012's CMYK files are) to RGB as Pillow converts it, to the
		 * rounding: each colour (255 - c) taken from the black's
		 * complement, both stored inverted */
		long n = (long)*width * *height;
		for (long i = 0; i < n; i++) {
			int black = pixels[4 * i + 3];
			for (int c = 0; c < 3; c++) {
				int t = (255 - pixels[4 * i + c]) * black + 128;
				int v = black - (((t >> 8) + t) >> 8);
				pixels[3 * i + c] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
			}
		}
	}
	return pixels;
}

/* Whether path holds an image this reader decodes as Pillow does: the
 * whole file read (its content hashed into *hash, for the folder's
 * identity), its signature, header and end checked, and its image decoded
 * (a JPEG at its smallest scale, which reads every marker and all the
 * entropy-coded data as the full one does). 0, or -1 with why in
 * reason. */
static int check_file(const char *path, uint64_t *hash, char *reason, size_t size)
{
	long length = 0;
	unsigned char *data = read_whole(path, &length, reason, size);
	enum image_kind kind;
	int width, height;
	int status = data ? probe(data, length, &kind, &width, &height, reason, size) : -1;
	if (status == 0) {
		*hash = checksum_add_words(CHECKSUM_BASIS, data, (size_t)length);
		int dw, dh;
		unsigned char *pixels = decode(data, length, kind, 1, 1, &dw, &dh, reason, size);
		status = pixels ? 0 : -1;
		if (kind == KIND_PNG)
			stbi_image_free(pixels);
		else
			free(pixels);
	}
	free(data);
	return status;
}

/* ---- opening ------------------------------------------------------------ */

static int refuse(char *error, size_t size, const char *path, const char *why)
{
	char shown[1024];
	printable_text(shown, sizeof shown, path);
	snprintf(error, size, "%s: %s", shown, why);
	return -1;
}

static int add_file(struct image_folder *f, const char *path, long bytes, int label)
{
	if (f->count == f->capacity) {
		long capacity = f->capacity ? 2 * f->capacity : 1024;
		struct image_file *bigger = realloc(f->files, (size_t)capacity * sizeof *bigger);
		if (!bigger)
			return -1;
		f->files = bigger;
		f->capacity = capacity;
	}
	char *copy = strdup(path);
	if (!copy)
		return -1;
	f->files[f->count++] = (struct image_file){copy, bytes, 0, label};
	return 0;
}

/* Every file of the folder checked (probe), in parallel; the first that
 * fails, in the folder's order, refuses it, or all that fail are left
 * out with skip_bad. */
static int check_files(struct image_folder *f, bool skip_bad, char *error, size_t size)
{
	char *failures = calloc((size_t)f->count, 1);
	char (*why)[200] = calloc(skip_bad ? 1 : (size_t)f->count, sizeof *why);
	if (!failures || !why) {
		free(failures);
		free(why);
		return refuse(error, size, f->root, "out of memory for the list of images");
	}
	#pragma omp parallel for schedule(dynamic, 64)
	for (long i = 0; i < f->count; i++) {
		char path[8192], reason[200] = "";
		snprintf(path, sizeof path, "%s/%s", f->root, f->files[i].path);
		failures[i] = check_file(path, &f->files[i].hash, reason, sizeof reason) != 0;
		if (failures[i] && !skip_bad)
			snprintf(why[i], sizeof why[i], "%s", reason);
	}
	long kept = 0;
	int status = 0;
	for (long i = 0; i < f->count; i++) {
		if (!failures[i]) {
			f->files[kept++] = f->files[i];
			continue;
		}
		char path[8192], message[512];
		snprintf(path, sizeof path, "%s/%s", f->root, f->files[i].path);
		if (!skip_bad) {
			snprintf(message, sizeof message,
				 "%s; it cannot be decoded (remove or replace it, or pass --skip-bad-images to leave it "
				 "out)",
				 why[i]);
			status = refuse(error, size, path, message);
			for (long j = i; j < f->count; j++)
				f->files[kept++] = f->files[j];
			break;
		}
		if (f->skipped++ == 0)
			printable_text(f->first_skipped, sizeof f->first_skipped, path);
		free(f->files[i].path);
	}
	f->count = kept;
	free(failures);
	free(why);
	return status;
}

int image_folder_open(struct image_folder **out, const char *dir, const char *split, int classes, int crop,
		      const struct image_folder *names, bool skip_bad, char *error, size_t size)
{
	*out = NULL;
	struct image_folder *f = calloc(1, sizeof *f);
	if (!f)
		return refuse(error, size, dir, "out of memory");
	snprintf(f->root, sizeof f->root, "%s/%s", dir, split);
	snprintf(f->split, sizeof f->split, "%s", split);
	f->crop = crop;
	char **class_names;
	long class_count;
	char message[512];
	if (list(f->root, true, &class_names, &class_count) != 0) {
		snprintf(message, sizeof message,
			 "cannot read the folder: %s; a folder of images holds train/CLASS/*.JPEG and "
			 "val/CLASS/*.JPEG (pass --data DIR)",
			 strerror(errno ? errno : ENOMEM));
		image_folder_close(f);
		return refuse(error, size, f->root, message);
	}
	f->class_names = class_names;
	f->classes = (int)(class_count < CLASS_MAX ? class_count : CLASS_MAX);
	int status = 0;
	if (names) {
		for (long c = 0; c < class_count && status == 0; c++) {
			bool known = false;
			for (int k = 0; k < names->classes && !known; k++)
				known = strcmp(names->class_names[k], class_names[c]) == 0;
			if (!known) {
				snprintf(message, sizeof message, "class folder '%.200s' is not one of the %d of %s/train",
					 class_names[c], names->classes, dir);
				status = refuse(error, size, f->root, message);
			}
		}
	} else if (class_count != classes) {
		snprintf(message, sizeof message, "%ld class folders, but this network has %d classes; %s", class_count,
			 classes, class_count == 0 ? "each class's images go in a folder of their own: train/CLASS/*.JPEG"
						   : "give the spec's data.classes the folder's count");
		status = refuse(error, size, f->root, message);
	}
	for (long c = 0; c < class_count && status == 0; c++) {
		char folder[8192];
		snprintf(folder, sizeof folder, "%s/%s", f->root, class_names[c]);
		char **files;
		long file_count;
		if (list(folder, false, &files, &file_count) != 0) {
			status = refuse(error, size, folder, "cannot read the folder");
			break;
		}
		/* a class's label: its place among the training classes */
		int label = (int)c;
		for (int k = 0; names && k < names->classes; k++)
			if (strcmp(names->class_names[k], class_names[c]) == 0)
				label = k;
		for (long i = 0; i < file_count && status == 0; i++) {
			if (!image_name(files[i]))
				continue;
			char path[8192], full[8192];
			struct stat st;
			bool fits = snprintf(path, sizeof path, "%s/%s", class_names[c], files[i]) < (int)sizeof path &&
				    snprintf(full, sizeof full, "%s/%s", f->root, path) < (int)sizeof full;
			if (!fits || stat(full, &st) != 0 || add_file(f, path, (long)st.st_size, label) != 0)
				status = refuse(error, size, fits ? full : files[i], "cannot add it to the list of images");
		}
		free_names(files, file_count);
	}
	if (status == 0 && f->count == 0)
		status = refuse(error, size, f->root,
				"no images (files named *.JPEG, *.jpg or *.png) in its class folders");
	if (status == 0)
		status = check_files(f, skip_bad, error, size);
	if (status == 0 && f->count == 0)
		status = refuse(error, size, f->root, "every image was left out as undecodable");
	if (status == 0)
		qsort(f->files, (size_t)f->count, sizeof *f->files, compare_files);
	if (status != 0) {
		image_folder_close(f);
		return -1;
	}
	*out = f;
	return 0;
}

/* ---- the crops ------------------------------------------------------------ */

/* A side scaled as torchvision's Resize(size) scales the longer side:
 * truncated. */
static int scaled_side(int side, int short_side, int new_short) { return (int)((long)new_short * side / short_side); }

/* Python's round(): halves to the even neighbour. */
static int round_half_even(double v)
{
	double r = nearbyint(v); /* the default rounding mode rounds halves to even */
	return (int)r;
}

void image_folder_draw(int width, int height, int crop, const struct folder_augment *augment, uint64_t key,
		       struct folder_crop *out)
{
	memset(out, 0, sizeof *out);
	struct rng rng;
	rng_seed(&rng, key, 0xa11ce);
	int short_side = width < height ? width : height;
	if (!augment || !augment->aspect) {
		/* the shorter side to a size, then a crop x crop square */
		int target = (int)lround(256.0 * crop / 224);
		if (augment) {
			int low = augment->shorter_min, high = augment->shorter_max;
			target = low + (int)rng_below(&rng, (uint32_t)(high - low + 1));
		}
		if (target < crop)
			target = crop;
		out->resized_width = width == short_side ? target : scaled_side(width, short_side, target);
		out->resized_height = height == short_side ? target : scaled_side(height, short_side, target);
		int room_x = out->resized_width - crop, room_y = out->resized_height - crop;
		int x, y;
		if (augment) {
			x = (int)rng_below(&rng, (uint32_t)room_x + 1);
			y = (int)rng_below(&rng, (uint32_t)room_y + 1);
		} else { /* torchvision's CenterCrop: round((side - crop) / 2) */
			x = round_half_even(room_x / 2.0);
			y = round_half_even(room_y / 2.0);
		}
		/* the square, in the resized image's pixels */
		out->x = x;
		out->y = y;
		out->width = out->height = crop;
	} else {
		/* torchvision's RandomResizedCrop(crop, scale (0.08, 1), ratio
		 * (3/4, 4/3)): ten tries at a part of that area and ratio, then
		 * the center at the nearest ratio */
		double area = (double)width * height, low = log(3.0 / 4), high = log(4.0 / 3);
		bool found = false;
		for (int attempt = 0; attempt < 10 && !found; attempt++) {
			double target = area * (0.08 + 0.92 * rng_uniform(&rng));
			double ratio = exp(low + (high - low) * rng_uniform(&rng));
			int w = (int)lround(sqrt(target * ratio)), h = (int)lround(sqrt(target / ratio));
			if (w > 0 && h > 0 && w <= width && h <= height) {
				out->x = (int)rng_below(&rng, (uint32_t)(width - w + 1));
				out->y = (int)rng_below(&rng, (uint32_t)(height - h + 1));
				out->width = w;
				out->height = h;
				found = true;
			}
		}
		if (!found) {
			double in_ratio = (double)width / height;
			int w = width, h = height;
			if (in_ratio < 3.0 / 4)
				h = (int)lround(w / (3.0 / 4));
			else if (in_ratio > 4.0 / 3)
				w = (int)lround(h * (4.0 / 3));
			out->width = w;
			out->height = h;
			out->x = (width - w) / 2;
			out->y = (height - h) / 2;
		}
	}
	out->flip = augment && augment->flip && rng_below(&rng, 2);
}

int image_bytes_fill(const unsigned char *data, long bytes, int crop, const struct folder_augment *augment,
		     uint64_t key, const double *mean, const double *std, real *out, char *reason, size_t size)
{
	enum image_kind kind;
	int width = 0, height = 0;
	int status = probe(data, bytes, &kind, &width, &height, reason, size);
	unsigned char *pixels = NULL, *resized = NULL;
	size_t origin = 0, stride = 0;
	struct folder_crop c = {0};
	if (status == 0) {
		image_folder_draw(width, height, crop, augment, key, &c);
		/* what the crop needs of the source: the scale of the resize */
		int need_w = 0, need_h = 0;
		if (augment) { /* training alone decodes at a reduced scale */
			if (c.resized_width) {
				need_w = c.resized_width;
				need_h = c.resized_height;
			} else {
				need_w = (int)ceil((double)width * crop / c.width);
				need_h = (int)ceil((double)height * crop / c.height);
			}
		}
		int dw, dh;
		pixels = decode(data, bytes, kind, need_w, need_h, &dw, &dh, reason, size);
		status = pixels ? 0 : -1;
		if (status == 0) {
			/* as torchvision: the whole image resized, then cropped
			 * (scale augmentation, evaluation); or the part cropped,
			 * then resized (aspect augmentation) */
			int part_x = 0, part_y = 0, part_w = dw, part_h = dh;
			if (!c.resized_width) {
				part_x = (int)((long)c.x * dw / width);
				part_y = (int)((long)c.y * dh / height);
				part_w = (int)((long)c.width * dw / width);
				part_h = (int)((long)c.height * dh / height);
				part_w = part_w < 1 ? 1 : part_w;
				part_h = part_h < 1 ? 1 : part_h;
			}
			/* of the resized image, the crop alone is computed: the
			 * same bytes, in the crop's memory however thin the image */
			int out_w = c.resized_width ? c.resized_width : crop, out_h = c.resized_width ? c.resized_height : crop;
			int x0 = c.resized_width ? c.x : 0, y0 = c.resized_width ? c.y : 0;
			resized = malloc((size_t)3 * crop * crop);
			if (!resized || resize_rgb_window(pixels + ((size_t)part_y * dw + part_x) * 3, part_w, part_h,
							  (size_t)dw * 3, out_w, out_h, x0, y0, crop, crop, resized) != 0) {
				snprintf(reason, size, resized ? "cannot resize it" : "out of memory");
				status = -1;
			}
			origin = 0;
			stride = (size_t)crop * 3;
		}
	}
	size_t plane = (size_t)crop * crop;
	for (int ch = 0; ch < 3; ch++) {
		double scale = 1.0 / (255.0 * std[ch]), shift = -mean[ch] / std[ch];
		for (int y = 0; y < crop; y++)
			for (int x = 0; x < crop; x++) {
				int sx = status == 0 && c.flip ? crop - 1 - x : x;
				double value = status == 0 ? resized[origin + y * stride + (size_t)sx * 3 + ch] * scale + shift : 0;
				out[ch * plane + (size_t)y * crop + x] = (real)(float)value;
			}
	}
	if (pixels) {
		if (kind == KIND_PNG)
			stbi_image_free(pixels);
		else
			free(pixels);
	}
	free(resized);
	return status;
}

int image_folder_fill(const struct image_folder *f, long index, const struct folder_augment *augment, uint64_t key,
		      const double *mean, const double *std, real *out, char *error, size_t size)
{
	char path[8192], reason[256] = "";
	snprintf(path, sizeof path, "%s/%s", f->root, f->files[index].path);
	long bytes = 0;
	unsigned char *data = read_whole(path, &bytes, reason, sizeof reason);
	int status = data ? image_bytes_fill(data, bytes, f->crop, augment, key, mean, std, out, reason, sizeof reason)
			  : -1;
	if (!data) /* the mean colour, as for an image that cannot be decoded */
		memset(out, 0, (size_t)3 * f->crop * f->crop * sizeof *out);
	if (status != 0) {
		char shown[1024];
		printable_text(shown, sizeof shown, path);
		snprintf(error, size, "%s: %s", shown, reason);
	}
	free(data);
	return status;
}
