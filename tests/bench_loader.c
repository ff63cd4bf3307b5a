/* make bench's data loader: how many images a second a folder of JPEGs
 * gives, decoded and augmented as training draws them (image_folder.h),
 * on every core (the run's threads fill a batch) and on one.
 *
 *   bench-loader DIR CROP IMAGES
 *
 * DIR holds train/CLASS/NAME.JPEG (tests/images/make_folder.py writes one
 * of ImageNet's sizes with --imagenet-sizes). */
#include <dirent.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "image_folder.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The class folders of DIR/train. */
static int class_count(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/train", dir);
	DIR *d = opendir(path);
	int count = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		count += e->d_name[0] != '.' && e->d_type == DT_DIR;
	if (d)
		closedir(d);
	return count;
}

/* images decoded and augmented by threads, a second */
static double rate(const struct image_folder *folder, int crop, long images, int threads, real *out)
{
	const double *mean = image_folder_mean, *std = image_folder_std;
	struct folder_augment augment = {256, 480, false, true};
	long count = image_folder_count(folder), failures = 0;
	double start = now();
	#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) reduction(+ : failures)
	for (long i = 0; i < images; i++) {
		char error[512];
		real *image = out + (size_t)omp_get_thread_num() * 3 * crop * crop;
		failures += image_folder_fill(folder, i % count, &augment, (uint64_t)i * 0x9E3779B97F4A7C15ULL + 1, mean,
					      std, image, error, sizeof error) != 0;
	}
	double seconds = now() - start;
	if (failures)
		fprintf(stderr, "bench-loader: %ld images could not be decoded\n", failures);
	return images / seconds;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: bench-loader DIR CROP IMAGES\n");
		return 2;
	}
	int crop = atoi(argv[2]);
	long images = atol(argv[3]);
	char error[1024];
	struct image_folder *folder;
	if (image_folder_open(&folder, argv[1], "train", class_count(argv[1]), crop, NULL, false, error, sizeof error) != 0) {
		fprintf(stderr, "bench-loader: %s\n", error);
		return 2;
	}
	int cores = omp_get_max_threads();
	real *out = malloc((size_t)cores * 3 * crop * crop * sizeof *out);
	if (!out)
		return 1;
	rate(folder, crop, cores, cores, out); /* the files into the page cache */
	double all = rate(folder, crop, images, cores, out), one = rate(folder, crop, images / cores, 1, out);
	printf("data loader: %.0f images/s on %d threads, %.0f on one (%ld images drawn from the %ld JPEGs of %s, "
	       "decoded, scaled to a shorter side in [256, 480], cropped to %d and flipped)\n",
	       all, cores, one, images, image_folder_count(folder), argv[1], crop);
	free(out);
	image_folder_close(folder);
	return 0;
}
