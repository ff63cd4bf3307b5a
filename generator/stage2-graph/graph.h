/* The network graph: every op of every unit in execution order, with every
 * shape resolved. Stage 2 of the generator; reads only the checked spec.
 * The five orderings of the paper's Fig. 4 are decided here and nowhere
 * else. */
#ifndef RESGEN_GRAPH_H
#define RESGEN_GRAPH_H

#include <stdbool.h>
#include <stdio.h>

#include "diag.h"
#include "spec.h"

#define GRAPH_NAME_MAX 64

/* Per image: (C, H, W). */
struct shape {
	int channels, height, width;
};

enum op_kind {
	OP_CONV,
	OP_BATCH_NORM,
	OP_RELU,
	OP_ADD,
	OP_PAD_SHORTCUT, /* subsample, then zero channels: the paper's option A */
	OP_AVERAGE_POOL, /* global */
	OP_LINEAR,
	OP_SOFTMAX_CROSS_ENTROPY,
	OP_SCALE,      /* constant scaling of a shortcut or branch */
	OP_GATED_ADD,  /* (1 - g) shortcut + (g or 1) branch, g = sigmoid(gate + bias) */
	OP_DROPOUT,    /* non-inverted dropout */
	OP_MAX_POOL,   /* the ImageNet stem's: 3x3, stride 2, padding 1; last, as the
			  kinds' numbers are part of a network's identity */
	OP_KIND_COUNT
};

enum param_init { PARAM_HE_NORMAL, PARAM_ONES, PARAM_ZEROS, PARAM_UNIFORM, PARAM_CONSTANT };

struct param {
	char name[GRAPH_NAME_MAX + 16]; /* op name + _weight, _running_mean... */
	long count;
	bool trained;        /* false: BN running statistics, updated by forward */
	enum param_init init;
	double init_scale;   /* std for He-normal, bound for uniform, the value for constant */
	char dims[48];       /* "(16, 3, 3, 3)", for comments */
};

struct tensor {
	char name[GRAPH_NAME_MAX];
	struct shape shape;
	int producer; /* op index; -1 for the input */
};

struct op {
	enum op_kind kind;
	char name[GRAPH_NAME_MAX]; /* stage1_unit01_conv1 */
	int group;                 /* index into graph.groups: stem, units, head */
	int inputs[3]; /* add: shortcut, branch; gated add: shortcut, branch, gate */
	int input_count;
	int output;
	int params[4]; /* conv: weight; BN: gamma, beta, running mean, running var;
			  linear: weight, bias; gated add: bias */
	int param_count;
	int kernel_size, stride; /* conv and pad shortcut */
	double factor;           /* scale: the factor; dropout: the rate */
	bool exclusive;          /* gated add: g on the branch (exclusive) or 1 */
	int salt;                /* dropout: distinguishes the masks of two ops */
	bool projection;         /* conv: the shortcut's projection, no layer of the depth */
};

/* Ops are grouped into stem, one group per unit, and head; each group
 * becomes one function of the emitted code. */
struct group {
	char name[GRAPH_NAME_MAX];
	char summary[160]; /* what the group computes, for its comment */
	int stage;         /* 0 for stem and head */
	int first_op, op_count;
};

struct graph {
	const struct spec *spec;
	struct tensor *tensors;
	int tensor_count, tensor_capacity;
	struct op *ops;
	int op_count, op_capacity;
	struct param *params;
	int param_count, param_capacity;
	struct group *groups;
	int group_count, group_capacity;
	int input;  /* tensor index of the images */
	int logits; /* tensor index of the class scores */
};

int graph_build(struct graph *g, const struct spec *spec, struct diag *d);
void graph_free(struct graph *g);

/* Elements of tensor t for one image. */
long graph_tensor_size(const struct graph *g, int t);

/* The ops of group i in order, named without the group's name: "conv1 bn1
 * relu1 conv2 bn2 add post_relu". */
void graph_group_ops(const struct graph *g, int i, char *out, size_t size);

/* The story of a diff, one line per group ("stage1_unit01: conv1 bn1 ...");
 * or, given b, one line per run of consecutive groups that both graphs
 * have and whose ops changed alike ("stage1_unit02 .. stage1_unit18 (17
 * units): A -> B"), then the groups only one of them has. */
void graph_print_units(const struct graph *a, const struct graph *b, FILE *out);

/* What the network computes, one line per op in order: its kind, its
 * inputs' and output's shapes, its sizes and factors, and each parameter's
 * size and initialisation. Names of tensors and ops stay out (a listing
 * for the network's identity, which a rename must not change). */
void graph_describe(const struct graph *g, FILE *out);

/* Multiply-adds of one op for one image, times two. */
double op_flops(const struct graph *g, const struct op *op);

#endif
