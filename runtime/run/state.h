/* A network's memory: allocation from net_info's sizes, initialisation from
 * a seed, and weights in and out through tensor files. */
#ifndef RESGEN_STATE_H
#define RESGEN_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta.h" /* struct weights_meta */
#include "net_api.h"

/* Allocates everything for batches of up to max_batch, cut into shares
 * shares (each thread's scratch is its share's: threads <= shares). */
int state_create(struct net_state *s, int max_batch, int shares, char *error, size_t size);
void state_free(struct net_state *s);

/* He-normal convolutions, uniform classifier, BN gamma 1 and beta 0, as
 * net_info's table says; velocities zero. */
void state_init(struct net_state *s, uint64_t seed);

void state_zero_grads(struct net_state *s);

real *state_input(const struct net_state *s, int n);
real *state_logits(const struct net_state *s, int n);
real *state_input_gradient(const struct net_state *s, int n);

/* The first trained parameter or running statistic that is not a finite
 * number, or NULL. A NaN can hide from the loss (ReLU maps it to 0), so
 * the weights themselves are checked. */
const struct net_param *state_non_finite_param(const struct net_state *s);

/* The input's normalisation a weights file or checkpoint at path was
 * saved with (net_info.channels values each, and the images they were
 * taken over): 1, or 0 for a file that holds none (written before
 * resgen stored it, or by init), or -1 with one line in error for meta/
 * tensors that no run could have stored (a zero or negative standard
 * deviation, a count of values other than the channels', class names
 * other than the classes', unprintable bytes): such a file is refused. */
int state_load_normalisation(const char *path, double *mean, double *std, long *images, char *error, size_t size);

/* Trained parameters and running statistics, by name, with meta (NULL:
 * none, as init's weights, which no data have met); loaded from a
 * weights file or a checkpoint (its weights). */
int state_save_weights(const struct net_state *s, const struct weights_meta *meta, const char *path, char *error,
		       size_t size);
/* What state_load_weights took: the tensors and values loaded, and, with a
 * fresh classifier, those of the spec's classifier it left as initialised
 * and the file's classifier's values it left out. */
struct weights_loaded {
	int tensors, fresh_tensors;
	long values, fresh_values, left_out_values;
};
/* fresh_classifier: the classifier (state_is_classifier) keeps its fresh
 * initialisation, whatever the file holds of it (fine-tuning to another
 * number of classes). */
int state_load_weights(struct net_state *s, const char *path, bool fresh_classifier, struct weights_loaded *loaded,
		       char *error, size_t size);

/* Whether p is the classifier's weight or bias: the head's fully connected
 * layer, which the spec's classes shape. */
bool state_is_classifier(const struct net_param *p);

#endif
