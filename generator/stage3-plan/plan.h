/* The plan: where every activation, gradient and parameter lives, and which
 * distinct kernels the graph needs. Stage 3 of the generator; reads only
 * the graph.
 *
 * Activations and their gradients share one arena. Offsets are in reals per
 * image: a tensor of a batch of n images sits at arena + n * offset, so one
 * plan serves every batch size. A tensor's slot is reused once nothing in
 * the forward or backward pass reads it any more. Lifetimes count in the
 * lowering's steps; a tensor a fused step computes inside has no slot. */
#ifndef RESGEN_PLAN_H
#define RESGEN_PLAN_H

#include "graph.h"
#include "lower.h"

enum { PLAN_ALIGN = 16 }; /* reals; keeps every tensor 64-byte aligned */

struct kernel {
	enum op_kind kind;
	enum step_kind step;       /* STEP_OP, or the fusion whose last op it runs */
	char name[GRAPH_NAME_MAX]; /* encodes the shapes, e.g. conv3x3_s1_16x32x32_to_16 */
	int op;                    /* the first op that uses it, for its shapes */
	long scratch_per_thread;   /* reals */
};

struct plan {
	const struct graph *graph;
	struct lowering lowering; /* the steps that run */
	long *activation_offset; /* per tensor; -1: not stored (computed inside a fused step) */
	long *gradient_offset;   /* per tensor; -1: no gradient, or not stored */
	int *first_gradient_writer; /* per tensor: the op whose backward writes its gradient first
				       (sets it, or adds to it zeroed just before, as the op kind
				       can); -1: none */
	long sums_offset, sums_per_image; /* BN's sums of each image (batch_norm_image_sums in
					     templates/ops/batch_norm.c.tmpl) in the arena; -1, 0: no BN */
	long arena_per_image;
	long *param_offset; /* per param: into params (trained) or buffers */
	long param_count, buffer_count;
	long *stats_offset; /* per op: BN's statistics, saved for backward and for a fused
			       convolution's prologue; -1: none */
	long stats_count;
	int *op_kernel;     /* per op: index into kernels; -1: runs inside a fused step's kernel */
	struct kernel *kernels;
	int kernel_count;
	long scratch_per_thread;
};

int plan_build(struct plan *p, const struct graph *g, struct diag *d);

/* Bytes the binary allocates for a batch of n on threads threads, with
 * reals of real_size bytes: the arena, the parameters with their gradients
 * and velocities, the BN statistics and each thread's scratch; total: all
 * of them, the scratch once for every thread. */
struct plan_memory {
	double arena, weights, statistics, scratch_per_thread, total;
};

struct plan_memory plan_memory(const struct plan *p, int n, int threads, int real_size);

/* Whether op index's backward sets the gradient of its input k: it writes
 * it first, its kind can, and no earlier input of the op is the same
 * tensor (whose gradient it must then add to). */
bool plan_sets_gradient(const struct plan *p, int index, int k);
void plan_free(struct plan *p);

#endif
