/* A folder of images as a data set, in the layout torchvision's
 * ImageFolder reads: DIR/train/CLASS/NAME.JPEG and DIR/val/CLASS/NAME.JPEG, a
 * folder a class, classes in the order of their names. JPEG files are
 * decoded with libjpeg-turbo (grey and CMYK ones as colour; a PNG under
 * any name by its signature, with stb_image), resized as Pillow's bilinear
 * filter resizes (resize.h) and cropped as the paper's code did:
 *
 *   training    the shorter side resized to a size drawn from [256, 480]
 *               (times crop / 224), a crop x crop square at a drawn place,
 *               a drawn horizontal flip; or, with aspect, torchvision's
 *               RandomResizedCrop (8% to 100% of the area, aspect ratio
 *               3/4 to 4/3), as Table 5's last row
 *   evaluation  the shorter side resized to 256 (times crop / 224), the
 *               center crop x crop square: torchvision's Resize(256) +
 *               CenterCrop(224)
 *
 * Every file is read and decoded when the folder opens (a JPEG at its
 * smallest scale), as Pillow decodes it (past libjpeg's warnings), so
 * that a file that cannot be decoded stops the run before training with
 * one line naming it, or, when the caller asks, is left out and counted;
 * a 16-bit greyscale PNG, which Pillow clips, is refused so. The crop
 * alone of a resized image is computed, so an image's memory is bounded
 * by its decoded size and the crop's, however thin it is. A training image's draws come from its key alone
 * (one number of the run's generator an image), so any thread decodes any
 * image. */
#ifndef RESGEN_IMAGE_FOLDER_H
#define RESGEN_IMAGE_FOLDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "real.h"

struct image_folder;

/* ImageNet's per-channel mean and standard deviation of pixels in 0..1
 * units, by which the paper's code and torchvision normalise its images,
 * and resgen a folder's (its images are not all read to measure their
 * own). */
extern const double image_folder_mean[3], image_folder_std[3];

/* How a training image is cropped: the scale augmentation's range of the
 * shorter side, in pixels at the crop (the paper's [256, 480] at 224), or
 * the aspect augmentation; and the flip. */
struct folder_augment {
	int shorter_min, shorter_max;
	bool aspect;
	bool flip;
};

/* Opens DIR/SPLIT ("train" or "val"): its class folders (exactly classes of
 * them, or, given names, the same names), every image checked. skip_bad:
 * leave out files that cannot be decoded, counting them, rather than
 * refusing the folder. 0, or -1 with one line in error (size bytes). */
int image_folder_open(struct image_folder **folder, const char *dir, const char *split, int classes, int crop,
		      const struct image_folder *names, bool skip_bad, char *error, size_t size);
void image_folder_close(struct image_folder *folder);

long image_folder_count(const struct image_folder *folder);
int image_folder_label(const struct image_folder *folder, long index);
const char *image_folder_class(const struct image_folder *folder, int label);
/* Image index's file, CLASS/FILE under the split's folder. */
const char *image_folder_path(const struct image_folder *folder, long index);
/* The split's folder's name: "train" or "val". */
const char *image_folder_split(const struct image_folder *folder);
/* The files left out as undecodable, and the first of them ("" for none). */
long image_folder_skipped(const struct image_folder *folder, const char **first);
/* The folder's identity: each file's class, name, size and content (its
 * bytes as read when the folder opened). */
uint64_t image_folder_identity(const struct image_folder *folder, uint64_t hash);

/* Image index decoded and cropped into out (3, crop, crop), each channel
 * pixel / 255 less mean, over std, rounded through float. augment NULL:
 * evaluation's center crop; else the draws of key. 0, or -1 with one line
 * in error (the image then holds zeros: the mean colour, which the
 * caller must not train on). Thread-safe. */
int image_folder_fill(const struct image_folder *folder, long index, const struct folder_augment *augment,
		      uint64_t key, const double *mean, const double *std, real *out, char *error, size_t size);

/* The same for the bytes of one image file, cropped to crop x crop; why
 * it failed in reason. For image_folder_fill and the fuzzer. */
int image_bytes_fill(const unsigned char *data, long bytes, int crop, const struct folder_augment *augment,
		     uint64_t key, const double *mean, const double *std, real *out, char *reason, size_t size);

/* The crop a key draws for an image of width x height (augment NULL:
 * evaluation's): with the scale augmentation and in evaluation, the size
 * the whole image is resized to and the crop x crop square (x, y) of that;
 * with the aspect augmentation (resized 0 x 0), the part (x, y, width,
 * height) of the source resized to the crop. And the flip. Exposed for
 * the tests of the augmentation. */
struct folder_crop {
	int resized_width, resized_height;
	int x, y, width, height;
	bool flip;
};
void image_folder_draw(int width, int height, int crop, const struct folder_augment *augment, uint64_t key,
		       struct folder_crop *out);

#endif
