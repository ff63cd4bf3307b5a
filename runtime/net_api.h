/* The contract between the runtime and every emitted network. The runtime
 * knows nothing of a network beyond this header; net.c defines net_info and
 * the four functions. */
#ifndef RESGEN_NET_API_H
#define RESGEN_NET_API_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "real.h"
#include "schedule.h"

/* The processes one batch is split across in data-parallel training
 * (runtime/parallel/ranks.h): each runs the network on its part of the batch.
 * Alone: count 1, first_image 0, and add is never called. */
struct net_ranks {
	int count;        /* processes sharing each batch; the loss is the mean over all of it */
	int bn_sync;      /* BN's batch statistics over the whole batch: its sums added across ranks */
	long first_image; /* this process's first image in the whole batch (dropout's masks) */
	void (*add)(double *values, int count); /* sums values across the ranks, in place */
};

/* The memory one network works in; sizes come from net_info. */
struct net_state {
	real *arena;    /* activations and their gradients: arena_per_image * max batch */
	real *params;   /* trained parameters: param_count */
	real *grads;    /* their gradients: param_count */
	real *velocity; /* SGD momentum: param_count */
	real *buffers;  /* BN running statistics: buffer_count */
	real *stats;    /* BN batch statistics saved for backward: stats_count */
	real *scratch;  /* scratch_per_thread per thread */
	const int *labels; /* n labels of the current batch */
	unsigned long seed; /* dropout masks: a function of seed, step, op and element */
	long step;          /* the training step, set by the caller */
	int training;      /* BN: batch statistics (1) or running statistics (0) */
	int input_gradient; /* whether backward computes the images' gradient (a dump's; 0: a convolution's skipped) */
	double loss;       /* mean cross-entropy of the last forward, over this process's images */
	struct net_ranks ranks;
};

enum net_param_init {
	NET_INIT_HE_NORMAL,
	NET_INIT_ONES,
	NET_INIT_ZEROS,
	NET_INIT_UNIFORM,
	NET_INIT_CONSTANT
};

struct net_param {
	const char *name;
	const char *dims;
	long offset; /* into params (trained) or buffers (not trained) */
	long count;
	int trained;
	enum net_param_init init;
	double init_scale; /* std for He-normal, bound for uniform, the value for constant */
};

/* The spec's values, as the binary's defaults. */
struct net_defaults {
	int data_set;         /* enum data_set (shared/data_sets.h): the set the network was specified on */
	const char *data_dir;
	long train_images, test_images; /* synthetic only */
	int batch;
	long iterations;
	double lr_base, warmup_lr;
	long warmup_iterations;
	int lr_schedule;       /* enum lr_schedule (schedule.h) */
	int lr_step_count;
	double lr_steps[16];   /* iterations, or fractions of the run */
	int lr_step_fractions; /* whether they are fractions */
	double lr_gamma, momentum, weight_decay;
	int augment_pad, augment_flip;
	int augment_aspect; /* folders of images: RandomResizedCrop's crops rather than the scale augmentation */
	/* folders of images: the scale augmentation's range of the shorter
	 * side in pixels at the crop ({0, 0}: the paper's [256, 480] for a 224
	 * crop, scaled to the crop), and the inputs' normalisation (enum
	 * normalisation, shared/data_sets.h) with NORMALISE_GIVEN's values */
	int augment_scale[2];
	int normalise;
	double normalise_mean[3], normalise_std[3];
	long seed;
	long eval_every;
	int bn_sync; /* under mpirun: BN's statistics over the whole batch */
};

/* One group of ops (stem, a unit, head): its two functions, where its output
 * and its input's gradient sit (reals per image) and their sizes. Lets a
 * caller run the network group by group to look inside (step --dump). */
struct net_group {
	const char *name;
	void (*forward)(struct net_state *s, int n);
	void (*backward)(struct net_state *s, int n);
	long output_offset, output_size;
	long input_gradient_offset, input_size;
	long param_offset, param_count; /* its trained parameters: params + param_offset onwards */
};

struct net_info {
	const char *name;   /* the spec's name */
	const char *dtype;  /* "f32" or "f64" */
	uint64_t identity;  /* what the network computes (its canonical spec and graph, the number format): checkpoints of another network are refused */
	const char *summary; /* unit, ordering, depth, widths, shortcut, projection */
	const char *precision; /* net.precision: "f32", or "bf16 (tiles)" or "bf16 (pairs)" with its arithmetic */
	int channels, height, width, classes;
	long param_count, buffer_count, stats_count;
	long arena_per_image;    /* reals */
	long scratch_per_thread; /* reals */
	long input_offset, logits_offset, input_gradient_offset; /* reals per image */
	double forward_flops; /* per image: 2 x multiply-adds of convs and classifier, plus BN, ReLU, sums */
	double conv_flops;    /* per image: 2 x multiply-adds of the convolutions alone */
	int param_tensor_count;
	const struct net_param *params;
	int group_count;
	const struct net_group *groups; /* in forward order */
	struct net_defaults defaults;
};

extern const struct net_info net_info;

/* Training step: put n images at arena + n * input_offset and n labels in
 * s->labels; net_forward leaves the mean loss in s->loss and the logits at
 * arena + n * logits_offset. net_backward adds parameter gradients into
 * s->grads, which the caller zeroes first; net_sgd applies one step. */
void net_forward(struct net_state *s, int n);
void net_backward(struct net_state *s, int n);
void net_sgd(struct net_state *s, real lr, real momentum, real weight_decay);

/* The kernels' choices, made once from the shapes and the machine
 * (runtime/machine/machine.h); net_forward and net_backward make them first if
 * nothing has. net_explain prints every convolution's, in forward order,
 * at batch n. */
void net_choose(void);
void net_explain(FILE *out, int n);

#endif
