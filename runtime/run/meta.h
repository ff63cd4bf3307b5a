/* What a weights file or checkpoint holds beside the weights: the input's
 * normalisation, the set and the classes' names (weights_meta), and the
 * check of every value stored. Below state.c and checkpoint.c, which both
 * write and read them. */
#ifndef RESGEN_META_H
#define RESGEN_META_H

#include <stddef.h>

/* Why a stored value cannot be loaded into this build's real (it is NaN,
 * infinite or too large), or NULL. */
const char *stored_value_unloadable(double value);

/* What a weights file or checkpoint says of the network's input beside
 * its weights, so that it can be used alone: the channel statistics the
 * images are normalised by (each pixel in 0..1 units, less mean, over
 * std), over how many training images of which set, and the classes'
 * names (data_class_name). Stored as meta/... tensors, which loading
 * weights passes over. */
struct tensor_file;
struct dataset;
struct weights_meta {
	const double *mean, *std; /* net_info.channels each */
	long images;
	const struct dataset *data; /* the images trained on: their set's name and the classes' */
};

/* meta's tensors added to f: 0, or -1 out of memory. */
int weights_meta_add(struct tensor_file *f, const struct weights_meta *meta);

/* What is wrong with the meta/ tensors of f, read from path: 1 where
 * they are sound, 0 where there are none, -1 with one line in error for
 * meta/ tensors that no run could have stored. */
int weights_meta_check(const struct tensor_file *f, const char *path, char *error, size_t size);

#endif
