/* Everything the generator knows about an op kind, in one entry per kind:
 * its template, what its backward reads, how it counts as a layer, its
 * FLOPs, how its kernel instances are keyed and how much scratch they
 * take, and the template values of an instance and of a call. No other
 * file dispatches on op kinds: adding an op is one entry here, one
 * template (templates/ops/), its kernels (runtime/kernels/) and its
 * tests. */
#ifndef RESGEN_OPS_H
#define RESGEN_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include "graph.h"
#include "template.h"

struct op_kind_info {
	const char *template_name; /* templates/ops/NAME.c.tmpl */
	/* For each input whose gradient its backward can set instead of
	 * adding to it (zeroed first), the template value that says which:
	 * GRADIENT_SET or GRADIENT_ADD; NULL where it cannot. */
	const char *write[2];
	bool needs_batch_norm;      /* its kernels call BN's, which then come first */
	bool backward_reads_inputs; /* besides the output gradient */
	bool backward_reads_output;
	bool convolution; /* its FLOPs count as the convolutions' */
	/* BN's state per channel, which the plan lays out: the statistics
	 * saved for backward (reals), and the sums per image (reals) */
	int saved_per_channel, image_sums_per_channel;
	/* its forward call takes where the next BN's sums go (NEXT_SUMS), or
	 * whether its own sums were taken (SUMS_GIVEN); its backward call
	 * where its output gradient comes from (DOUT, DEFERRED) */
	bool takes_next_sums, takes_sums_given, takes_gradient_source;
	/* its backward hands its output's gradient to its inputs unchanged
	 * (the addition), which lowering may do without a copy (lower.h) */
	bool hands_gradient_on;
	/* Whether op counts as a weighted layer of the paper's depth; NULL:
	 * never. */
	bool (*weighted)(const struct op *op);
	/* Multiply-adds for one image, times two. */
	double (*flops)(struct shape in, struct shape out, const struct op *op);
	/* The instance's name: ops of one name share a kernel; NULL: one
	 * shape-free kernel, named after the template. */
	void (*kernel_name)(struct shape in, struct shape out, const struct op *op, char *name, size_t size);
	/* Its per-thread scratch in reals; NULL: none. */
	long (*scratch)(struct shape in, struct shape out, const struct op *op);
	/* The instance's template values; NULL: one shape-free kernel. */
	void (*kernel_values)(struct shape in, struct shape out, const struct op *op, struct template_vars *v);
	/* A call's template values; kernel: the instance's name. */
	void (*call_values)(const struct graph *g, const struct op *op, const char *kernel, struct template_vars *v);
};

extern const struct op_kind_info op_kinds[OP_KIND_COUNT];

#endif
