/* Checkpoints: everything the rest of a training run depends on, so that a
 * run stopped at any instant and resumed gives bitwise the weights and the
 * log rows of the run that never stopped, on any number of threads: the
 * run keeps its shares (threads.h).
 *
 * A checkpoint is a sealed tensor file (tensor_file.h) under the magic
 * RESGENK1: the format's version, the version of resgen that wrote it, the
 * network's identity (net_info.identity: what the network computes), the
 * run's settings, the data's fingerprint, its position (iterations done,
 * the data order and its cursor, the random state of shuffling, the open
 * interval's sums, the log's length), then every parameter, its momentum,
 * and the BN running statistics. Augmentation and dropout need no state:
 * an image's crop and flip are a function of the seed, the iteration and
 * the image (data.h), dropout's masks of the seed and the step. */
#ifndef RESGEN_CHECKPOINT_H
#define RESGEN_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net_api.h"
#include "rng.h"
#include "tensor_file.h"

/* The settings a checkpoint keeps, as a run was given them: given marks
 * those the command line gave (a bit each, below). */
enum run_setting {
	SETTING_ITERATIONS = 1 << 0,
	SETTING_BATCH = 1 << 1,
	SETTING_SEED = 1 << 2,
	SETTING_EVAL_EVERY = 1 << 3,
	SETTING_TRAIN_LIMIT = 1 << 4,
	SETTING_TEST_LIMIT = 1 << 5,
	SETTING_SYNTHETIC = 1 << 6,
	SETTING_CHECKPOINT_EVERY = 1 << 7,
};
enum { SETTING_COUNT = 8 };
struct run_settings {
	long iterations;
	int batch;
	long seed, eval_every;
	long train_limit, test_limit; /* 0: all */
	bool synthetic;
	long checkpoint_every; /* 0: at every evaluation */
	int shares;            /* the shares each pass is cut into; 0: not given */
	long validation;       /* the training images held out; 0: none */
	long epochs;           /* 0: iterations says the run's length */
	unsigned given;        /* enum run_setting */
	struct net_defaults recipe; /* the spec's, changed by --set (recipe.h) */
	unsigned recipe_set;        /* the keys --set gave, a bit each */
	long extends; /* checkpoint_open: the iterations of the run extended, else 0 */
	/* train --freeze: a flag a group of net_info.groups, frozen or not
	 * (NULL: none is), which checkpoint_save keeps; checkpoint_open puts
	 * the checkpoint's in frozen_started (net_info.group_count bytes) */
	const unsigned char *frozen;
	unsigned char *frozen_started;
	/* each setting as the command line spells it ("--batch"), by its bit's
	 * place: the option table's (command/main.c), for the messages */
	const char *spelling[SETTING_COUNT];
};

/* --epochs: the iterations that pass over images training images epochs
 * times, the last pass's batch possibly cut short by the end */
static inline long epoch_iterations(long epochs, long images, int batch)
{
	return (epochs * images + batch - 1) / batch;
}

/* Where a run stands between two iterations. */
struct progress {
	long iteration; /* iterations done */
	long position;  /* the next index into the order */
	struct rng rng; /* shuffling */
	double interval_loss;
	long interval_errors, interval_images;
	double seconds;  /* training time so far, for the log */
	long log_bytes;  /* the log's length, -1 without a log */
	/* the log's training rows: every log_every iterations, the mean over
	 * the window since the row before */
	long log_every;
	double window_loss;
	long window_errors, window_images;
	/* --keep-best: the lowest error evaluated so far (validation split, else
	 * test) and its iteration; 0 before any */
	double best_error;
	long best_iteration;
};

struct weights_meta;

/* meta: the input's normalisation and the class names (state.h); shares:
 * the run's (threads_setup); ranks: the processes the run is
 * split across (1 alone); data: the data's fingerprint
 * (dataset_identity), which a resume must match. */
int checkpoint_save(const char *path, const struct run_settings *o, const struct weights_meta *meta, int shares,
		    int ranks, const struct net_state *s,
		    const struct progress *p, const long *order, long train_count, uint64_t data, char *error,
		    size_t size);

/* Reads and checks a checkpoint's header: its version, that it is this
 * network's, and its settings, which fill *o (*o holds the command's on
 * entry; those the user gave must agree), its shares (per rank) among
 * them; *ranks: the run's ranks. 0, or one line in error and -1; f then
 * holds nothing. */
int checkpoint_open(struct tensor_file *f, const char *path, struct run_settings *o, int *ranks,
		    char *error, size_t size);

/* The version of resgen that wrote the opened checkpoint f ("unknown" for
 * one that does not say), into out; whether it is this binary's. A
 * checkpoint of the same network resumes under another version (the
 * identity is the network's, not its code's), and train says so. */
bool checkpoint_written_by(const struct tensor_file *f, char *out, size_t size);

/* Whether the file at path begins as a checkpoint does. */
bool checkpoint_is(const char *path);

/* A checkpoint's tensors, its checksum checked: the network's parameters
 * and running statistics under their names, beside checkpoint/... and
 * velocity/... (state_load_weights takes the first). 0, or -1 and one
 * line in error. */
int checkpoint_load_tensors(struct tensor_file *f, const char *path, char *error, size_t size);

/* Checks the rest of an opened checkpoint against the loaded data (train
 * images, the data's fingerprint), then, only if all of it is sound, puts
 * it into s, *p and order. */
int checkpoint_restore(const struct tensor_file *f, const char *path, long train_count, uint64_t data,
		       struct net_state *s, struct progress *p, long *order, char *error, size_t size);

#endif
