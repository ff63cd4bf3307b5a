/* The data sets, one row a set: what the spec reader, the studies and
 * reports (generator), the binaries (runtime) and the PyTorch tool (by
 * resgen summary --json) know of each. A network carries its set as the
 * enumeration (net_info.defaults.data_set); the name is how a spec and
 * the outputs spell it. Each set is read by the data source of its
 * format (runtime/data/sources.h). Adding a set: README, "Adding a data
 * set". */
#ifndef RESGEN_DATA_SETS_H
#define RESGEN_DATA_SETS_H

#include <stdbool.h>
#include <stddef.h>

enum data_set { SET_CIFAR10, SET_CIFAR100, SET_FASHION_MNIST, SET_MNIST, SET_SYNTHETIC, SET_IMAGENET, SET_FOLDER,
		SET_COUNT };

/* How a set's files are laid out, each read by one data source. */
enum data_format { FORMAT_IDX, FORMAT_CIFAR, FORMAT_FOLDER, FORMAT_SYNTHETIC, FORMAT_COUNT };

/* How a folder of images' inputs are normalised (the spec's
 * data.normalise): by ImageNet's channel mean and deviation
 * (torchvision's), by the training images' own channel statistics,
 * computed when a run starts, or by values the spec gives. The other sets
 * take their training images' statistics. */
enum normalisation { NORMALISE_IMAGENET, NORMALISE_FOLDER, NORMALISE_GIVEN, NORMALISE_COUNT };
extern const char *const normalisation_names[NORMALISE_COUNT]; /* "imagenet", "folder", "given" */
extern const char *const data_format_names[FORMAT_COUNT]; /* "idx", "cifar", "folder", "synthetic" */

/* Sizes of 0 are the spec's to give (synthetic, folder). */
struct data_set_info {
	const char *name;        /* as a spec spells it */
	const char *symbol;      /* its enumerator, as emitted code names it */
	const char *title;       /* as a report names it */
	const char *default_dir; /* "" where there are no files, or the spec gives them */
	int channels, size, classes; /* square inputs of size x size */
	long train_images, test_images;
	enum data_format format; /* FORMAT_FOLDER: JPEG or PNG files of any size, cropped to the input */
	const char *const *class_names; /* classes of them, as the set's documents name them; NULL: none */
};

extern const struct data_set_info data_sets[SET_COUNT];
/* The names alone, in the table's order (a spec's choices). */
extern const char *const data_set_names[SET_COUNT];

/* Whether set is a folder of images of any size (its format's). */
static inline bool data_set_is_folder(enum data_set set) { return data_sets[set].format == FORMAT_FOLDER; }

/* The set called name; NULL: none. */
const struct data_set_info *data_set_named(const char *name);

/* The name of class index of set, as its documents name it, when classes
 * is the set's own count; else (synthetic data, MNIST's digits, another
 * count, a folder: its folders' names are the folder's) its index as
 * text. out holds at least 16 bytes. */
const char *data_set_class_name(enum data_set set, int classes, int index, char *out, size_t size);

#endif
