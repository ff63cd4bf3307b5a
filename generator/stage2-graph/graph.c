/* Spec -> graph. The unit orderings (paper Fig. 4) and the pre-activation
 * details (stem activation shared by the first unit, projections fed the
 * pre-activated input, a final activation after the last addition) are
 * all in build_unit and build_head. */
#include "graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

static bool grow(void **array, int *capacity, int count, size_t item)
{
	if (count < *capacity)
		return true;
	int next = *capacity ? *capacity * 2 : 64;
	void *bigger = realloc(*array, (size_t)next * item);
	if (!bigger)
		return false;
	*array = bigger;
	*capacity = next;
	return true;
}

/* Builders record only the first failure (out of memory); the graph is
 * discarded when it is set. */
struct builder {
	struct graph *g;
	bool failed;
	char unit[24]; /* name prefix of the current group */
	int bn_count, relu_count;
};

static int add_tensor(struct builder *b, const char *name, struct shape shape, int producer)
{
	struct graph *g = b->g;
	if (b->failed || !grow((void **)&g->tensors, &g->tensor_capacity, g->tensor_count,
			       sizeof *g->tensors)) {
		b->failed = true;
		return 0;
	}
	struct tensor *t = &g->tensors[g->tensor_count];
	snprintf(t->name, sizeof t->name, "%s", name);
	t->shape = shape;
	t->producer = producer;
	return g->tensor_count++;
}

static int add_param(struct builder *b, const char *op_name, const char *suffix, long count,
		     bool trained, enum param_init init, double scale, const char *dims)
{
	struct graph *g = b->g;
	if (b->failed ||
	    !grow((void **)&g->params, &g->param_capacity, g->param_count, sizeof *g->params)) {
		b->failed = true;
		return 0;
	}
	struct param *p = &g->params[g->param_count];
	snprintf(p->name, sizeof p->name, "%.63s_%.14s", op_name, suffix);
	p->count = count;
	p->trained = trained;
	p->init = init;
	p->init_scale = scale;
	snprintf(p->dims, sizeof p->dims, "%s", dims);
	return g->param_count++;
}

/* Appends an op reading inputs and producing a new tensor of shape out. */
static struct op *add_op3(struct builder *b, enum op_kind kind, const char *name, int input0,
			  int input1, int input2, struct shape out, int *output)
{
	struct graph *g = b->g;
	if (b->failed || !grow((void **)&g->ops, &g->op_capacity, g->op_count, sizeof *g->ops)) {
		b->failed = true;
		*output = 0;
		return NULL;
	}
	char full[GRAPH_NAME_MAX];
	snprintf(full, sizeof full, "%.23s_%.32s", b->unit, name);
	int index = g->op_count;
	*output = add_tensor(b, full, out, index);
	if (b->failed)
		return NULL;
	struct op *op = &g->ops[g->op_count++];
	memset(op, 0, sizeof *op);
	op->kind = kind;
	snprintf(op->name, sizeof op->name, "%s", full);
	op->group = g->group_count - 1;
	op->inputs[0] = input0;
	op->inputs[1] = input1;
	op->inputs[2] = input2;
	op->input_count = input2 >= 0 ? 3 : input1 >= 0 ? 2 : 1;
	op->output = *output;
	g->groups[op->group].op_count++;
	return op;
}

static struct op *add_op(struct builder *b, enum op_kind kind, const char *name, int input0,
			 int input1, struct shape out, int *output)
{
	return add_op3(b, kind, name, input0, input1, -1, out, output);
}

static struct shape shape_of(const struct builder *b, int tensor) { return b->g->tensors[tensor].shape; }

static int conv(struct builder *b, const char *name, int x, int channels, int kernel_size, int stride)
{
	struct shape in = shape_of(b, x);
	int pad = kernel_size / 2;
	struct shape out = {channels, (in.height + 2 * pad - kernel_size) / stride + 1,
			    (in.width + 2 * pad - kernel_size) / stride + 1};
	int y;
	struct op *op = add_op(b, OP_CONV, name, x, -1, out, &y);
	if (!op)
		return 0;
	op->kernel_size = kernel_size;
	op->stride = stride;
	char dims[48];
	snprintf(dims, sizeof dims, "(%d, %d, %d, %d)", channels, in.channels, kernel_size,
		 kernel_size);
	/* He et al. 2015, as the paper's appendix: std = sqrt(2 / (k * k * C_out)). */
	double std = sqrt(2.0 / (kernel_size * kernel_size * channels));
	op->params[op->param_count++] = add_param(b, op->name, "weight",
						  (long)channels * in.channels * kernel_size * kernel_size,
						  true, PARAM_HE_NORMAL, std, dims);
	return y;
}

static int batch_norm_named(struct builder *b, const char *name, int x)
{
	int y;
	struct op *op = add_op(b, OP_BATCH_NORM, name, x, -1, shape_of(b, x), &y);
	if (!op)
		return 0;
	long c = shape_of(b, x).channels;
	char dims[48];
	snprintf(dims, sizeof dims, "(%ld)", c);
	op->params[op->param_count++] = add_param(b, op->name, "gamma", c, true, PARAM_ONES, 0, dims);
	op->params[op->param_count++] = add_param(b, op->name, "beta", c, true, PARAM_ZEROS, 0, dims);
	op->params[op->param_count++] =
		add_param(b, op->name, "running_mean", c, false, PARAM_ZEROS, 0, dims);
	op->params[op->param_count++] =
		add_param(b, op->name, "running_var", c, false, PARAM_ONES, 0, dims);
	return y;
}

static int batch_norm(struct builder *b, int x)
{
	char name[16];
	snprintf(name, sizeof name, "bn%d", ++b->bn_count);
	return batch_norm_named(b, name, x);
}

static int relu_named(struct builder *b, const char *name, int x)
{
	int y;
	add_op(b, OP_RELU, name, x, -1, shape_of(b, x), &y);
	return y;
}

static int relu(struct builder *b, int x)
{
	char name[16];
	snprintf(name, sizeof name, "relu%d", ++b->relu_count);
	return relu_named(b, name, x);
}

static int pad_shortcut(struct builder *b, int x, int channels, int stride)
{
	struct shape in = shape_of(b, x);
	struct shape out = {channels, (in.height + stride - 1) / stride, (in.width + stride - 1) / stride};
	int y;
	struct op *op = add_op(b, OP_PAD_SHORTCUT, "shortcut_pad", x, -1, out, &y);
	if (op)
		op->stride = stride;
	return y;
}

/* kernel_size x kernel_size windows with stride, padded by kernel_size / 2
 * on every side (padding never wins: it counts as minus infinity). */
static int max_pool(struct builder *b, const char *name, int x, int kernel_size, int stride)
{
	struct shape in = shape_of(b, x);
	int pad = kernel_size / 2;
	struct shape out = {in.channels, (in.height + 2 * pad - kernel_size) / stride + 1,
			    (in.width + 2 * pad - kernel_size) / stride + 1};
	int y;
	struct op *op = add_op(b, OP_MAX_POOL, name, x, -1, out, &y);
	if (op) {
		op->kernel_size = kernel_size;
		op->stride = stride;
	}
	return y;
}

static int scale(struct builder *b, const char *name, int x, double factor)
{
	int y;
	struct op *op = add_op(b, OP_SCALE, name, x, -1, shape_of(b, x), &y);
	if (op)
		op->factor = factor;
	return y;
}

static int dropout(struct builder *b, const char *name, int x, double rate)
{
	int y;
	struct op *op = add_op(b, OP_DROPOUT, name, x, -1, shape_of(b, x), &y);
	if (op) {
		op->factor = rate;
		op->salt = b->g->op_count; /* unique and stable: the op's index */
	}
	return y;
}

static int gated_add(struct builder *b, int shortcut, int branch, int gate, bool exclusive,
		     double bias)
{
	int y;
	struct op *op = add_op3(b, OP_GATED_ADD, "gated_add", shortcut, branch, gate,
				shape_of(b, branch), &y);
	if (!op)
		return 0;
	op->exclusive = exclusive;
	long c = shape_of(b, gate).channels;
	char dims[48];
	snprintf(dims, sizeof dims, "(%ld)", c);
	op->params[op->param_count++] =
		add_param(b, op->name, "bias", c, true, PARAM_CONSTANT, bias, dims);
	return y;
}

/* A 1x1 shortcut conv, followed by a BN where the spec asks for one. */
static int shortcut_conv(struct builder *b, int x, int channels, int stride)
{
	int y = conv(b, "shortcut_conv", x, channels, 1, stride);
	if (b->g->op_count > 0)
		b->g->ops[b->g->op_count - 1].projection = true;
	if (b->g->spec->net.shortcut_bn)
		y = batch_norm_named(b, "shortcut_bn", y);
	return y;
}

static void begin_group(struct builder *b, const char *name, int stage)
{
	struct graph *g = b->g;
	if (b->failed ||
	    !grow((void **)&g->groups, &g->group_capacity, g->group_count, sizeof *g->groups)) {
		b->failed = true;
		return;
	}
	struct group *group = &g->groups[g->group_count++];
	memset(group, 0, sizeof *group);
	snprintf(group->name, sizeof group->name, "%s", name);
	group->stage = stage;
	group->first_op = g->op_count;
	snprintf(b->unit, sizeof b->unit, "%.23s", name);
	b->bn_count = b->relu_count = 0;
}

static bool is_preact(enum ordering ordering)
{
	return ordering == ORDER_RELU_ONLY_PREACT || ordering == ORDER_FULL_PREACT;
}

/* The pre-activation of orderings (d) and (e): ReLU, or BN-ReLU. */
static int preactivate(struct builder *b, enum ordering ordering, int x)
{
	if (ordering == ORDER_FULL_PREACT)
		x = batch_norm(b, x);
	return relu(b, x);
}

struct conv_layer {
	int kernel_size, stride, channels;
};

/* One residual unit. first_in_net: the stem's activation already
 * pre-activates this unit's input (pre-activation nets only). */
static int build_unit(struct builder *b, int x, const struct conv_layer *layers, int layer_count,
		      int channels_out, int stride, bool first_in_net)
{
	const struct spec *spec = b->g->spec;
	enum ordering ordering = spec->net.ordering;
	bool shape_changes = stride != 1 || shape_of(b, x).channels != channels_out;

	int branch = x;
	if (is_preact(ordering) && !first_in_net)
		branch = preactivate(b, ordering, x);
	/* Where the shape changes, the projection takes the pre-activated input. */
	int shortcut = shape_changes && is_preact(ordering) ? branch : x;

	for (int i = 0; i < layer_count; i++) {
		bool last = i == layer_count - 1;
		char name[16];
		snprintf(name, sizeof name, "conv%d", i + 1);
		branch = conv(b, name, branch, layers[i].channels, layers[i].kernel_size, layers[i].stride);
		switch (ordering) {
		case ORDER_ORIGINAL:         /* conv-BN-ReLU-conv-BN */
		case ORDER_RELU_ONLY_PREACT: /* ReLU-conv-BN-ReLU-conv-BN */
			branch = batch_norm(b, branch);
			if (!last)
				branch = relu(b, branch);
			break;
		case ORDER_RELU_BEFORE_ADD: /* conv-BN-ReLU-conv-BN-ReLU */
			branch = relu(b, batch_norm(b, branch));
			break;
		case ORDER_BN_AFTER_ADD: /* conv-BN-ReLU-conv */
		case ORDER_FULL_PREACT:  /* BN-ReLU-conv-BN-ReLU-conv */
			if (!last)
				branch = relu(b, batch_norm(b, branch));
			break;
		}
	}

	/* h(x): a projection where the shape changes (or a 1x1 conv on every unit
	 * for the conv1x1 kind), then the kind's scaling or dropout. */
	int source = shortcut;
	enum shortcut_kind kind = spec->net.shortcut;
	if (kind == SHORTCUT_CONV1X1 || (shape_changes && spec->net.projection == PROJECTION_CONV1X1))
		shortcut = shortcut_conv(b, source, channels_out, stride);
	else if (shape_changes)
		shortcut = pad_shortcut(b, source, channels_out, stride);
	int y;
	switch (kind) {
	case SHORTCUT_SCALING:
		shortcut = scale(b, "shortcut_scale", shortcut, spec->net.scale_shortcut);
		if (spec->net.scale_branch != 1)
			branch = scale(b, "branch_scale", branch, spec->net.scale_branch);
		add_op(b, OP_ADD, "add", shortcut, branch, shape_of(b, branch), &y);
		break;
	case SHORTCUT_DROPOUT:
		shortcut = dropout(b, "shortcut_dropout", shortcut, spec->net.dropout_rate);
		add_op(b, OP_ADD, "add", shortcut, branch, shape_of(b, branch), &y);
		break;
	case SHORTCUT_EXCLUSIVE_GATING:
	case SHORTCUT_SHORTCUT_GATING: {
		/* g(x) = sigmoid(W_g x + b_g) reads what the shortcut reads. */
		int gate = conv(b, "gate_conv", source, channels_out, 1, stride);
		y = gated_add(b, shortcut, branch, gate, kind == SHORTCUT_EXCLUSIVE_GATING,
			      spec->net.gate_bias);
		break;
	}
	default:
		add_op(b, OP_ADD, "add", shortcut, branch, shape_of(b, branch), &y);
	}
	if (ordering == ORDER_ORIGINAL)
		y = relu_named(b, "post_relu", y);
	else if (ordering == ORDER_BN_AFTER_ADD)
		y = relu_named(b, "post_relu", batch_norm_named(b, "post_bn", y));
	return y;
}

static void describe_group(struct graph *g, struct group *group)
{
	size_t used = 0;
	for (int i = group->first_op; i < group->first_op + group->op_count; i++) {
		const char *local = g->ops[i].name + strlen(group->name) + 1;
		int written = snprintf(group->summary + used, sizeof group->summary - used, "%s%s",
				       used ? " " : "", local);
		if (written < 0 || (size_t)written >= sizeof group->summary - used)
			break;
		used += (size_t)written;
	}
}

int graph_build(struct graph *g, const struct spec *spec, struct diag *d)
{
	memset(g, 0, sizeof *g);
	g->spec = spec;
	struct builder b = {.g = g};

	struct shape image = {spec->data.channels, spec->data.height, spec->data.width};
	g->input = add_tensor(&b, "input", image, -1);

	/* The stem; the ImageNet one (He et al. 2015, Table 1) quarters the
	 * image's sides before the first unit. */
	begin_group(&b, "stem", 0);
	bool imagenet = spec->net.stem == STEM_IMAGENET;
	int x = conv(&b, "conv", g->input, spec->net.widths[0], imagenet ? 7 : 3, imagenet ? 2 : 1);
	x = relu_named(&b, "relu", batch_norm_named(&b, "bn", x));
	if (imagenet)
		x = max_pool(&b, "pool", x, 3, 2);

	bool bottleneck = spec->net.unit == UNIT_BOTTLENECK;
	int most_units = 0;
	for (int stage = 0; stage < spec->net.stage_count; stage++)
		most_units = spec->net.units[stage] > most_units ? spec->net.units[stage] : most_units;
	int digits = most_units >= 100 ? 3 : 2;
	for (int stage = 1; stage <= spec->net.stage_count; stage++) {
		int width = spec->net.widths[stage - 1];
		for (int unit = 1; unit <= spec->net.units[stage - 1]; unit++) {
			char name[GRAPH_NAME_MAX];
			snprintf(name, sizeof name, "stage%d_unit%0*d", stage, digits, unit);
			begin_group(&b, name, stage);
			int stride = stage > 1 && unit == 1 ? 2 : 1;
			struct conv_layer basic[] = {{3, stride, width}, {3, 1, width}};
			/* Bottleneck: the stride sits on the 3x3 conv; output is 4x the inner width. */
			struct conv_layer neck[] = {{1, 1, width}, {3, stride, width}, {1, 1, 4 * width}};
			int layer_count = spec_layers_per_unit(spec->net.unit);
			x = build_unit(&b, x, bottleneck ? neck : basic, layer_count,
				       bottleneck ? 4 * width : width, stride, stage == 1 && unit == 1);
		}
	}

	begin_group(&b, "head", 0);
	if (spec->net.ordering == ORDER_FULL_PREACT)
		x = relu_named(&b, "relu", batch_norm_named(&b, "bn", x));
	else if (spec->net.ordering == ORDER_RELU_ONLY_PREACT)
		x = relu_named(&b, "relu", x);
	int pooled;
	add_op(&b, OP_AVERAGE_POOL, "pool", x, -1, (struct shape){shape_of(&b, x).channels, 1, 1},
	       &pooled);
	struct op *fc = add_op(&b, OP_LINEAR, "fc", pooled, -1,
			       (struct shape){spec->data.classes, 1, 1}, &g->logits);
	if (fc) {
		long in = shape_of(&b, pooled).channels, out = spec->data.classes;
		char dims[48];
		snprintf(dims, sizeof dims, "(%ld, %ld)", out, in);
		fc->params[fc->param_count++] = add_param(&b, fc->name, "weight", out * in, true,
							  PARAM_UNIFORM, 1.0 / sqrt((double)in), dims);
		snprintf(dims, sizeof dims, "(%ld)", out);
		fc->params[fc->param_count++] =
			add_param(&b, fc->name, "bias", out, true, PARAM_ZEROS, 0, dims);
	}
	int probabilities;
	add_op(&b, OP_SOFTMAX_CROSS_ENTROPY, "loss", g->logits, -1,
	       (struct shape){spec->data.classes, 1, 1}, &probabilities);

	if (b.failed) {
		graph_free(g);
		return diag_file(d, spec->path, "out of memory building the network graph");
	}
	for (int i = 0; i < g->group_count; i++)
		describe_group(g, &g->groups[i]);
	return 0;
}

void graph_free(struct graph *g)
{
	free(g->tensors);
	free(g->ops);
	free(g->params);
	free(g->groups);
	memset(g, 0, sizeof *g);
}

long graph_tensor_size(const struct graph *g, int t)
{
	struct shape s = g->tensors[t].shape;
	return (long)s.channels * s.height * s.width;
}

double op_flops(const struct graph *g, const struct op *op)
{
	double (*flops)(struct shape, struct shape, const struct op *) = op_kinds[op->kind].flops;
	return flops ? flops(g->tensors[op->inputs[0]].shape, g->tensors[op->output].shape, op) : 0;
}

void graph_group_ops(const struct graph *g, int i, char *out, size_t size)
{
	const struct group *group = &g->groups[i];
	size_t prefix = strlen(group->name), used = 0;
	out[0] = '\0';
	for (int k = 0; k < group->op_count && used < size; k++) {
		const char *name = g->ops[group->first_op + k].name;
		if (strncmp(name, group->name, prefix) == 0 && name[prefix] == '_')
			name += prefix + 1;
		used += (size_t)snprintf(out + used, size - used, "%s%s", k ? " " : "", name);
	}
}

/* The index of b's group called name, or -1. */
static int group_named(const struct graph *b, const char *name)
{
	for (int i = 0; i < b->group_count; i++)
		if (strcmp(b->groups[i].name, name) == 0)
			return i;
	return -1;
}

/* A run of groups first..last of a, count of them, changed from ops to. */
static void print_run(FILE *out, const struct graph *a, int first, int last, int count, const char *from,
		      const char *to)
{
	if (count == 0)
		return;
	if (count == 1)
		fprintf(out, "%s: ", a->groups[first].name);
	else
		fprintf(out, "%s .. %s (%d units): ", a->groups[first].name, a->groups[last].name, count);
	if (to)
		fprintf(out, "%s -> %s\n", from, to);
	else
		fprintf(out, "%s\n", from);
}

/* The groups of one graph that the other lacks, as runs. */
static void print_only(FILE *out, const struct graph *a, const struct graph *b, const char *label)
{
	int first = -1, last = -1, count = 0;
	for (int i = 0; i <= a->group_count; i++) {
		bool only = i < a->group_count && group_named(b, a->groups[i].name) < 0;
		if (only && count > 0 && i == last + 1) {
			last = i;
			count++;
			continue;
		}
		if (count > 0) {
			char what[64];
			snprintf(what, sizeof what, "only in %s", label);
			print_run(out, a, first, last, count, what, NULL);
		}
		first = last = i;
		count = only ? 1 : 0;
	}
}

void graph_print_units(const struct graph *a, const struct graph *b, FILE *out)
{
	enum { OPS_TEXT = 2048 };
	char from[OPS_TEXT], to[OPS_TEXT], run_from[OPS_TEXT] = "", run_to[OPS_TEXT] = "";
	if (!b) {
		for (int i = 0; i < a->group_count; i++) {
			graph_group_ops(a, i, from, sizeof from);
			print_run(out, a, i, i, 1, from, NULL);
		}
		return;
	}
	int first = -1, last = -1, count = 0, changed = 0;
	for (int i = 0; i < a->group_count; i++) {
		int j = group_named(b, a->groups[i].name);
		if (j < 0)
			continue;
		graph_group_ops(a, i, from, sizeof from);
		graph_group_ops(b, j, to, sizeof to);
		if (strcmp(from, to) == 0)
			continue;
		changed++;
		if (count > 0 && i == last + 1 && strcmp(from, run_from) == 0 && strcmp(to, run_to) == 0) {
			last = i;
			count++;
			continue;
		}
		print_run(out, a, first, last, count, run_from, run_to);
		first = last = i;
		count = 1;
		snprintf(run_from, sizeof run_from, "%s", from);
		snprintf(run_to, sizeof run_to, "%s", to);
	}
	print_run(out, a, first, last, count, run_from, run_to);
	if (changed == 0)
		fprintf(out, "every unit both have computes the same ops\n");
	print_only(out, a, b, "the first");
	print_only(out, b, a, "the second");
	if (a->spec->net.precision != b->spec->net.precision || a->spec->net.arithmetic != b->spec->net.arithmetic)
		fprintf(out, "the convolutions and the classifier multiply in %s in the first and in %s in the second\n",
			spec_precision_text(a->spec), spec_precision_text(b->spec));
}

void graph_describe(const struct graph *g, FILE *out)
{
	for (int i = 0; i < g->op_count; i++) {
		const struct op *op = &g->ops[i];
		fprintf(out, "op %d kind %d", i, (int)op->kind);
		for (int k = 0; k < op->input_count; k++) {
			const struct tensor *t = &g->tensors[op->inputs[k]];
			fprintf(out, " in t%d %dx%dx%d", op->inputs[k], t->shape.channels, t->shape.height,
				t->shape.width);
		}
		const struct tensor *t = &g->tensors[op->output];
		fprintf(out, " out t%d %dx%dx%d k %d stride %d factor %.17g exclusive %d salt %d", op->output,
			t->shape.channels, t->shape.height, t->shape.width, op->kernel_size, op->stride, op->factor,
			(int)op->exclusive, op->salt);
		for (int k = 0; k < op->param_count; k++) {
			const struct param *p = &g->params[op->params[k]];
			fprintf(out, " param %ld trained %d init %d %.17g", p->count, (int)p->trained, (int)p->init,
				p->init_scale);
		}
		fputc('\n', out);
	}
}
