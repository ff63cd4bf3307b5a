/* The data sets, one row a set: what the spec reader, the studies and
 * reports (generator) and the binaries (runtime) know of each. Its
 * name as a spec spells it is the one the binaries carry. */
#ifndef RESGEN_DATA_SETS_H
#define RESGEN_DATA_SETS_H

#include <stdbool.h>

enum data_set { SET_CIFAR10, SET_CIFAR100, SET_FASHION_MNIST, SET_MNIST, SET_SYNTHETIC, SET_IMAGENET, SET_FOLDER,
		SET_COUNT };

/* Sizes of 0 are the spec's to give (synthetic, folder). */
struct data_set_info {
	const char *name;        /* as a spec spells it */
	const char *title;       /* as a report names it */
	const char *default_dir; /* "" where there are no files, or the spec gives them */
	int channels, size, classes; /* square inputs of size x size */
	long train_images, test_images;
	bool images_of_any_size; /* a folder of JPEG or PNG files, cropped to the input */
};

extern const struct data_set_info data_sets[SET_COUNT];
/* The names alone, in the table's order (a spec's choices). */
extern const char *const data_set_names[SET_COUNT];

/* The set called name; NULL: none. */
const struct data_set_info *data_set_named(const char *name);

#endif
