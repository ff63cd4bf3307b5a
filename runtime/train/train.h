/* Training and evaluation: the loop the binary runs, and the one-step dump
 * the tests use to compare builds. */
#ifndef RESGEN_TRAIN_H
#define RESGEN_TRAIN_H

#include <stdbool.h>

#include "checkpoint.h" /* enum run_setting */
#include "net_api.h"

struct run_options {
	const char *data_dir;
	bool synthetic;
	bool skip_bad_images; /* a folder of images: leave out what cannot be decoded */
	long iterations;
	int batch;
	int threads;
	int shares; /* the shares each pass cuts its images into; 0: the thread count */
	long seed;
	const char *log_path;
	long log_every; /* the log's training rows; 0: about 250 in the run */
	long eval_every;
	long train_limit, test_limit; /* 0: all */
	long validation;              /* train: the training images held out to evaluate on; 0: none */
	long epochs;                  /* train: the run's length in epochs; 0: --iterations says it */
	const char *keep_best;        /* train: where the weights of the best evaluation go */
	const char *save_weights, *load_weights;
	bool fresh_classifier; /* --load-weights: the classifier initialised, not loaded (fine-tuning) */
	bool normalisation_stored; /* evaluate: the weights keep their normalisation; the session computes none */
	const char *freeze;    /* train: the parts kept as they began (freeze.h); NULL: none */
	int steps;             /* step: how many SGD steps on the first batch */
	const char *dump_path; /* step: where the dump goes */
	const char *checkpoint_path, *resume_path;
	long checkpoint_every; /* 0: at every evaluation */
	const char *gradflow_path; /* gradflow: the CSV of norms per unit */
	long gradflow_every;       /* gradflow: iterations between measurements */
	const char *split;          /* evaluate: "train" or "test" */
	const char *confusion_path; /* evaluate: where the confusion matrix goes */
	const char *predictions_path; /* evaluate: where each image's prediction goes */
	unsigned given;        /* enum run_setting (checkpoint.h) */
	struct net_defaults recipe; /* the spec's, changed by --set (recipe.h) */
	unsigned recipe_set;        /* the keys --set gave, a bit each (recipe_key_name) */
	long extends;               /* --resume: the iterations of the run extended, else 0 */
	const char *setting_spelling[SETTING_COUNT]; /* the option table's spelling of each setting */
};

/* Where the tests act on a run: after iteration's step (the weights just
 * updated), and once its evaluation and checkpoint are done. They do
 * nothing in the binaries users build; the test builds link tests/hooks.c
 * in their place. */
struct net_state;
void train_hook_stepped(struct net_state *state, long iteration);
void train_hook_checkpointed(long iteration);
/* The seconds between progress lines where stderr is not a terminal. */
double train_hook_progress_seconds(double seconds);

/* Both return the process exit status, having printed any error. */
int train_run(const struct run_options *options);
int step_run(const struct run_options *options);
/* Writes the seeded initial weights to options->save_weights. */
int init_run(const struct run_options *options);
/* Measures the weights options->load_weights on a split (evaluate.c). */
int evaluate_run(const struct run_options *options);
/* Prints the machine and every convolution's choices at options->batch
 * (runtime/train/explain.c). */
int explain_run(const struct run_options *options);

#endif
