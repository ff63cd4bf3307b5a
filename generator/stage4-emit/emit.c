/* Emission: fills the templates from the plan. All C text comes from
 * templates/; this file only decides which section, with which values. */
#include "emit.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "fusions.h"
#include "ops.h"
#include "real_text.h"
#include "schedule.h"
#include "texts.h"
#include "template.h"

struct emitter {
	const struct plan *plan;
	const struct graph *g;
	const struct spec *spec;
	enum dtype dtype;
	struct template net, kernels, kernel_table, kernel_unit, arena;
	struct template ops[OP_KIND_COUNT];
	struct template fused[STEP_KIND_COUNT]; /* a fusion's; a single op's step: unused */
	struct diag *d;
	uint64_t identity; /* net_info.identity: network_identity */
	/* kernels.c's calls that make and explain the choices (emit_net) */
	struct strbuf choose, explain;
};

/* Text from outside (a path) as it may appear inside a comment of emitted
 * code: characters that cannot end, nest or splice a comment stay as they
 * are; everything else, '*', '\\', '?', quotes and every byte outside
 * printable ASCII among them, becomes \xNN. */
static void comment_text(char *out, size_t size, const char *text)
{
	static const char kept[] = " ._-+,=:@~%#()[]/";
	size_t used = 0;
	for (const unsigned char *c = (const unsigned char *)text; *c && used + 5 < size; c++) {
		bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			     (*c >= '0' && *c <= '9') || strchr(kept, *c);
		used += (size_t)snprintf(out + used, size - used, plain ? "%c" : "\\x%02x", *c);
	}
	out[used] = '\0';
}

/* A C string literal for any bytes: printable ASCII as is, the rest octal. */
static void c_string(struct strbuf *out, const char *text)
{
	strbuf_puts(out, "\"");
	for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
		if (*c >= 0x20 && *c < 0x7f && *c != '"' && *c != '\\' && *c != '?')
			strbuf_append(out, (const char *)c, 1);
		else
			strbuf_printf(out, "\\%03o", *c);
	}
	strbuf_puts(out, "\"");
}

static int load_templates(struct emitter *e, const char *dir)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/net.c.tmpl", dir);
	if (template_load(&e->net, path, e->d) != 0)
		return -1;
	snprintf(path, sizeof path, "%s/kernels.h.tmpl", dir);
	if (template_load(&e->kernels, path, e->d) != 0)
		return -1;
	snprintf(path, sizeof path, "%s/kernel_table.h.tmpl", dir);
	if (template_load(&e->kernel_table, path, e->d) != 0)
		return -1;
	snprintf(path, sizeof path, "%s/kernels.c.tmpl", dir);
	if (template_load(&e->kernel_unit, path, e->d) != 0)
		return -1;
	snprintf(path, sizeof path, "%s/arena.h.tmpl", dir);
	if (template_load(&e->arena, path, e->d) != 0)
		return -1;
	for (int k = 0; k < OP_KIND_COUNT; k++) {
		snprintf(path, sizeof path, "%s/ops/%s.c.tmpl", dir, op_kinds[k].template_name);
		if (template_load(&e->ops[k], path, e->d) != 0)
			return -1;
	}
	for (int k = 0; k < STEP_KIND_COUNT; k++) {
		if (!fusions[k].template_name)
			continue;
		snprintf(path, sizeof path, "%s/ops/%s.c.tmpl", dir, fusions[k].template_name);
		if (template_load(&e->fused[k], path, e->d) != 0)
			return -1;
	}
	return 0;
}

static void free_templates(struct emitter *e)
{
	template_free(&e->net);
	template_free(&e->kernels);
	template_free(&e->kernel_table);
	template_free(&e->kernel_unit);
	template_free(&e->arena);
	for (int k = 0; k < OP_KIND_COUNT; k++)
		template_free(&e->ops[k]);
	for (int k = 0; k < STEP_KIND_COUNT; k++)
		template_free(&e->fused[k]);
}

/* The template of a kernel: its fusion's, or its op kind's. */
static const struct template *kernel_template(const struct emitter *e, const struct kernel *k)
{
	return fusions[k->step].template_name ? &e->fused[k->step] : &e->ops[k->kind];
}

static void header_vars(const struct emitter *e, struct template_vars *v)
{
	char path[4 * SPEC_PATH_MAX + 1];
	comment_text(path, sizeof path, e->spec->path);
	template_set(v, "SPEC_NAME", "%s", e->spec->name);
	template_set(v, "SPEC_PATH", "%s", path);
}

/* Values that describe a kernel instance's shapes, where its kind's
 * instances have them. */
static void kernel_vars(const struct emitter *e, const struct kernel *k, struct template_vars *v)
{
	const struct op *op = &e->g->ops[k->op];
	if (!op_kinds[k->kind].kernel_values)
		return; /* one shape-free kernel */
	op_kinds[k->kind].kernel_values(e->g->tensors[op->inputs[0]].shape, e->g->tensors[op->output].shape, op, v);
	template_set(v, "KERNEL", "%s", k->name);
}

/* Values of one op's forward and backward call. */
static void call_vars(const struct emitter *e, int index, struct template_vars *v)
{
	const struct op *op = &e->g->ops[index];
	op_kinds[op->kind].call_values(e->g, op, e->plan->kernels[e->plan->op_kernel[index]].name, v);
}

static int render(const struct emitter *e, const struct template *t, const char *section,
		  struct template_vars *v, struct strbuf *out)
{
	int status = template_render(t, section, v, out, e->d);
	template_vars_free(v);
	return status;
}

/* A section, and a blank line after it if it wrote anything. */
static int render_block(const struct emitter *e, const struct template *t, const char *section,
			struct template_vars *v, struct strbuf *out)
{
	size_t before = out->length;
	int status = render(e, t, section, v, out);
	if (status == 0 && out->length > before)
		strbuf_puts(out, "\n");
	return status;
}

/* The functions an instance's text defines, each a line "static TYPE
 * NAME(PARAMETERS)" with NAME starting with the instance's name: for each,
 * its member of the table (kernel_table.h), the table's entry (kernels.c)
 * and, for net.c, its name as that entry. */
static void table_entries(const char *text, const char *kernel, struct strbuf *members, struct strbuf *redirects,
			  struct strbuf *entries)
{
	size_t prefix = strlen(kernel);
	for (const char *line = text; *line;) {
		const char *end = strchr(line, '\n');
		size_t length = end ? (size_t)(end - line) : strlen(line);
		const char *paren = memchr(line, '(', length);
		if (length > 7 && strncmp(line, "static ", 7) == 0 && paren && line[length - 1] == ')' &&
		    !memchr(line, '=', length) && !memchr(line, ';', length)) {
			const char *name = paren;
			while (name > line && (name[-1] == '_' || isalnum((unsigned char)name[-1])))
				name--;
			int name_length = (int)(paren - name);
			if ((size_t)name_length > prefix && strncmp(name, kernel, prefix) == 0 && name[prefix] == '_') {
				strbuf_printf(members, "%.*s(*%.*s)%.*s;\n", (int)(name - line - 7), line + 7, name_length, name,
					      (int)(line + length - paren), paren);
				strbuf_printf(redirects, "#define %.*s (net_kernels->%.*s)\n", name_length, name, name_length, name);
				strbuf_printf(entries, ".%.*s = %.*s,\n", name_length, name, name_length, name);
			}
		}
		line += length + (end ? 1 : 0);
	}
}

/* kernels.h (the instances), kernel_table.h (their table's type) and
 * kernels.c (the unit compiled for each instruction set) into out[0..3). */
static int emit_kernels(const struct emitter *e, struct strbuf out[3])
{
	const struct plan *p = e->plan;
	struct strbuf includes = {0}, body = {0}, instance = {0}, members = {0}, redirects = {0}, entries = {0};
	struct template_vars v = {0};
	/* Each kind's helpers once, a fusion's and those of the ops it fuses,
	 * and BN's for the kinds that call them: their parts of the kernel
	 * library (runtime/kernels/), an #include each. */
	bool used[OP_KIND_COUNT] = {false}, fused[STEP_KIND_COUNT] = {false};
	for (int k = 0; k < p->kernel_count; k++) {
		enum step_kind step = p->kernels[k].step;
		if (!fusions[step].template_name) {
			used[p->kernels[k].kind] = true;
			continue;
		}
		fused[step] = true;
		for (int h = 0; h < 2; h++)
			used[fusions[step].helpers[h]] = true;
	}
	for (int kind = 0; kind < OP_KIND_COUNT; kind++)
		if (used[kind] && op_kinds[kind].needs_batch_norm)
			used[OP_BATCH_NORM] = true;
	int status = 0;
	if (used[OP_BATCH_NORM]) /* first: others call them */
		status = render(e, &e->ops[OP_BATCH_NORM], "common", &v, &includes);
	for (int kind = 0; kind < OP_KIND_COUNT && status == 0; kind++)
		if (used[kind] && kind != OP_BATCH_NORM)
			status = render(e, &e->ops[kind], "common", &v, &includes);
	for (int step = 0; step < STEP_KIND_COUNT && status == 0; step++)
		if (fused[step])
			status = render(e, &e->fused[step], "common", &v, &includes);
	if (includes.length > 0)
		strbuf_printf(&body, "%s\n", strbuf_text(&includes));
	for (int k = 0; k < p->kernel_count && status == 0; k++) {
		kernel_vars(e, &p->kernels[k], &v);
		strbuf_free(&instance);
		status = render_block(e, kernel_template(e, &p->kernels[k]), "kernel", &v, &instance);
		if (status == 0) {
			strbuf_puts(&body, strbuf_text(&instance));
			table_entries(strbuf_text(&instance), p->kernels[k].name, &members, &redirects, &entries);
		}
	}
	if (status == 0) {
		header_vars(e, &v);
		template_set(&v, "KERNEL_COUNT", "%d", p->kernel_count);
		template_set(&v, "OP_COUNT", "%d", e->g->op_count);
		template_set(&v, "KERNELS", "%s", strbuf_text(&body));
		status = render(e, &e->kernels, "file", &v, &out[0]);
	}
	if (status == 0) {
		header_vars(e, &v);
		template_set(&v, "INCLUDES", "%s", strbuf_text(&includes));
		template_set(&v, "MEMBERS", "%s", strbuf_text(&members));
		template_set(&v, "REDIRECTS", "%s", strbuf_text(&redirects));
		status = render(e, &e->kernel_table, "file", &v, &out[1]);
	}
	if (status == 0) {
		header_vars(e, &v);
		template_set(&v, "CHOOSE_CALLS", "%s", strbuf_text(&e->choose));
		template_set(&v, "EXPLAIN_CALLS", "%s", strbuf_text(&e->explain));
		template_set(&v, "ENTRIES", "%s", strbuf_text(&entries));
		status = render(e, &e->kernel_unit, "file", &v, &out[2]);
	}
	strbuf_free(&includes);
	strbuf_free(&body);
	strbuf_free(&instance);
	strbuf_free(&members);
	strbuf_free(&redirects);
	strbuf_free(&entries);
	return status;
}

static int define(const struct emitter *e, struct strbuf *out, const char *prefix,
		  const char *name, long value)
{
	struct template_vars v = {0};
	template_set(&v, "NAME", "%s%s", prefix, name);
	template_set(&v, "VALUE", "%ld", value);
	return render(e, &e->arena, "define", &v, out);
}

static int emit_arena(const struct emitter *e, struct strbuf *out)
{
	const struct graph *g = e->g;
	const struct plan *p = e->plan;
	struct strbuf activations = {0}, gradients = {0}, params = {0}, buffers = {0}, stats = {0};
	int status = 0;
	for (int t = 0; t < g->tensor_count && status == 0; t++) {
		if (p->activation_offset[t] >= 0)
			status = define(e, &activations, "ACT_", g->tensors[t].name, p->activation_offset[t]);
		if (status == 0 && p->gradient_offset[t] >= 0)
			status = define(e, &gradients, "GRAD_", g->tensors[t].name, p->gradient_offset[t]);
	}
	for (int i = 0; i < g->param_count && status == 0; i++)
		status = define(e, g->params[i].trained ? &params : &buffers,
				g->params[i].trained ? "PARAM_" : "BUFFER_", g->params[i].name,
				p->param_offset[i]);
	for (int i = 0; i < g->op_count && status == 0; i++)
		if (p->stats_offset[i] >= 0)
			status = define(e, &stats, "STATS_", g->ops[i].name, p->stats_offset[i]);
	if (status == 0) {
		struct template_vars v = {0};
		header_vars(e, &v);
		template_set(&v, "ARENA_PER_IMAGE", "%ld", p->arena_per_image);
		template_set(&v, "SCRATCH_PER_THREAD", "%ld", p->scratch_per_thread);
		template_set(&v, "PARAM_COUNT", "%ld", p->param_count);
		template_set(&v, "BUFFER_COUNT", "%ld", p->buffer_count);
		template_set(&v, "STATS_COUNT", "%ld", p->stats_count);
		template_set(&v, "SUMS_OFFSET", "%ld", p->sums_offset);
		template_set(&v, "SUMS_PER_IMAGE", "%ld", p->sums_per_image);
		template_set(&v, "BF16_ARITHMETIC", "%d",
			     e->spec->net.precision == PRECISION_BF16 ? e->spec->net.arithmetic : -1);
		template_set(&v, "ACTIVATIONS", "%s", strbuf_text(&activations));
		template_set(&v, "GRADIENTS", "%s", strbuf_text(&gradients));
		template_set(&v, "PARAMS", "%s", strbuf_text(&params));
		template_set(&v, "BUFFERS", "%s", strbuf_text(&buffers));
		template_set(&v, "STATS", "%s", strbuf_text(&stats));
		status = render(e, &e->arena, "file", &v, out);
	}
	strbuf_free(&activations);
	strbuf_free(&gradients);
	strbuf_free(&params);
	strbuf_free(&buffers);
	strbuf_free(&stats);
	return status;
}

static void shape_text(char *out, size_t size, struct shape s)
{
	snprintf(out, size, "(n, %d, %d, %d)", s.channels, s.height, s.width);
}

/* Before a step's backward: zeroes the stored gradients of its inputs that
 * it writes first but cannot set. */
static int emit_zeroing(const struct emitter *e, const struct step *step, struct strbuf *out)
{
	const struct graph *g = e->g;
	const struct plan *p = e->plan;
	struct template_vars v = {0};
	int status = 0;
	for (int i = step->first_op + step->op_count - 1; i >= step->first_op && status == 0; i--) {
		const struct op *op = &g->ops[i];
		for (int k = 0; k < op->input_count && status == 0; k++) {
			int t = op->inputs[k];
			if (p->gradient_offset[t] < 0 || p->first_gradient_writer[t] != i ||
			    plan_sets_gradient(p, i, k))
				continue;
			template_set(&v, "TENSOR", "%s", g->tensors[t].name);
			template_set(&v, "COUNT", "%ld", graph_tensor_size(g, t));
			status = render(e, &e->net, "zero", &v, out);
		}
	}
	return status;
}

/* A step's template: its fusion's, or its one op's. */
static const struct template *step_template(const struct emitter *e, const struct step *step)
{
	return fusions[step->kind].template_name ? &e->fused[step->kind] : &e->ops[e->g->ops[step->first_op].kind];
}

enum pass { PASS_EXPLAIN, PASS_FORWARD, PASS_BACKWARD };

/* The values of step j's call in pass, and the section of its template
 * that makes it: a fusion's from its table (fusions.h); a single op's from
 * the op table, with where its sums and its output gradient are, how it
 * writes its inputs' gradients, and whether its backward only passes its
 * gradient on. The explanation names the weighted op (LAYER). */
static const char *step_values(const struct emitter *e, int j, enum pass pass, struct template_vars *v)
{
	static const char *const sections[] = {"explain", "forward", "backward"};
	const struct plan *p = e->plan;
	const struct lowering *l = &p->lowering;
	const struct step *step = &l->steps[j];
	if (fusions[step->kind].template_name) {
		fusion_values(p, j, v);
		return sections[pass];
	}
	int i = step->first_op;
	const struct op *op = &e->g->ops[i];
	const struct op_kind_info *kind = &op_kinds[op->kind];
	call_vars(e, i, v);
	if (pass == PASS_EXPLAIN) {
		template_set(v, "LAYER", "%s", op->name);
	} else if (pass == PASS_FORWARD) {
		if (kind->takes_next_sums)
			template_set(v, "NEXT_SUMS", "%s", step_next_sums(l, j));
		if (kind->takes_sums_given)
			template_set(v, "SUMS_GIVEN", "%s", step_sums_given(l, j));
	} else {
		if (kind->takes_gradient_source)
			step_gradient_values(p, j, v);
		for (int k = 0; k < 2 && kind->write[k]; k++)
			template_set(v, kind->write[k], "%s",
				     plan_sets_gradient(p, i, k) ? "GRADIENT_SET" : "GRADIENT_ADD");
		if (l->passes_gradient[i])
			return "backward_passed";
	}
	return sections[pass];
}

/* A group's forward and backward functions into out; explain: the calls
 * that print the choices of its steps that have any (a template's
 * "explain" section), in forward order, LAYER naming the weighted op. */
static int emit_group(const struct emitter *e, const struct group *group, struct strbuf *out, struct strbuf *explain)
{
	const struct graph *g = e->g;
	const struct plan *p = e->plan;
	const struct lowering *l = &p->lowering;
	struct strbuf forward = {0}, backward = {0};
	struct template_vars v = {0};
	int status = 0;
	int first = group->first_op, last = group->first_op + group->op_count - 1;
	int first_step = l->step_of_op[first], last_step = l->step_of_op[last];
	for (int j = first_step; j <= last_step && status == 0; j++) {
		const struct template *t = step_template(e, &l->steps[j]);
		if (template_has_section(t, "explain")) {
			status = render(e, t, step_values(e, j, PASS_EXPLAIN, &v), &v, explain);
			if (status != 0)
				break;
		}
		status = render(e, t, step_values(e, j, PASS_FORWARD, &v), &v, &forward);
	}
	for (int j = last_step; j >= first_step && status == 0; j--) {
		int again = l->steps[j].recompute;
		if (again >= 0) {
			fusion_values(p, again, &v);
			status = render(e, step_template(e, &l->steps[again]), "recompute", &v, &backward);
		}
		if (status == 0)
			status = emit_zeroing(e, &l->steps[j], &backward);
		if (status == 0)
			status = render(e, step_template(e, &l->steps[j]), step_values(e, j, PASS_BACKWARD, &v), &v,
					&backward);
	}
	if (status == 0) {
		char in[64], result[64];
		shape_text(in, sizeof in, g->tensors[g->ops[first].inputs[0]].shape);
		shape_text(result, sizeof result, g->tensors[g->ops[last].output].shape);
		template_set(&v, "GROUP", "%s", group->name);
		template_set(&v, "SHAPE_IN", "%s", in);
		template_set(&v, "SHAPE_OUT", "%s", result);
		template_set(&v, "SUMMARY", "%s", group->summary);
		template_set(&v, "FORWARD", "%s", strbuf_text(&forward));
		template_set(&v, "BACKWARD", "%s", strbuf_text(&backward));
		status = render(e, &e->net, "group", &v, out);
	}
	strbuf_free(&forward);
	strbuf_free(&backward);
	return status;
}

static const char *init_name(enum param_init init)
{
	switch (init) {
	case PARAM_HE_NORMAL:
		return "NET_INIT_HE_NORMAL";
	case PARAM_ONES:
		return "NET_INIT_ONES";
	case PARAM_ZEROS:
		return "NET_INIT_ZEROS";
	case PARAM_CONSTANT:
		return "NET_INIT_CONSTANT";
	default:
		return "NET_INIT_UNIFORM";
	}
}

static void defaults_vars(const struct emitter *e, struct template_vars *v)
{
	const struct spec *s = e->spec;
	char number[32];
	struct strbuf text = {0};
	template_set(v, "DATA_SET", "%s", data_sets[s->data.set].symbol);
	c_string(&text, s->data.dir);
	template_set(v, "DATA_DIR", "%s", text.text ? text.text : "\"\"");
	strbuf_free(&text);
	template_set(v, "TRAIN_IMAGES", "%ld", s->data.train_images);
	template_set(v, "TEST_IMAGES", "%ld", s->data.test_images);
	template_set(v, "BATCH", "%d", s->train.batch);
	template_set(v, "ITERATIONS", "%ld", s->train.iterations);
	template_set(v, "LR_BASE", "%s", real_text(number, s->train.lr_base));
	template_set(v, "WARMUP_LR", "%s", real_text(number, s->train.warmup_lr));
	template_set(v, "WARMUP_ITERATIONS", "%ld", s->train.warmup_iterations);
	template_set(v, "LR_SCHEDULE", "LR_SCHEDULE_%s", s->train.lr_schedule == LR_SCHEDULE_COSINE ? "COSINE" : "STEP");
	template_set(v, "LR_STEP_COUNT", "%d", s->train.lr_step_count);
	for (int i = 0; i < s->train.lr_step_count; i++)
		strbuf_printf(&text, "%s%s", i ? ", " : "", spec_lr_step_text(number, s, i));
	template_set(v, "LR_STEPS", "%s", text.text ? text.text : "0");
	template_set(v, "LR_STEP_FRACTIONS", "%d", s->train.lr_step_fractions ? 1 : 0);
	strbuf_free(&text);
	template_set(v, "LR_GAMMA", "%s", real_text(number, s->train.lr_gamma));
	template_set(v, "MOMENTUM", "%s", real_text(number, s->train.momentum));
	template_set(v, "WEIGHT_DECAY", "%s", real_text(number, s->train.weight_decay));
	template_set(v, "AUGMENT_PAD", "%d", s->train.augment_pad);
	template_set(v, "AUGMENT_FLIP", "%d", s->train.augment_flip ? 1 : 0);
	template_set(v, "AUGMENT_ASPECT", "%d", s->train.augment_aspect ? 1 : 0);
	template_set(v, "AUGMENT_SCALE", "%d, %d", s->train.augment_scale[0], s->train.augment_scale[1]);
	template_set(v, "NORMALISE", "NORMALISE_%s", s->data.normalise == NORMALISE_FOLDER ? "FOLDER"
						   : s->data.normalise == NORMALISE_GIVEN ? "GIVEN" : "IMAGENET");
	char a[32], b[32], c[32];
	template_set(v, "NORMALISE_MEAN", "%s, %s, %s", real_text(a, s->data.normalise_mean[0]),
		     real_text(b, s->data.normalise_mean[1]), real_text(c, s->data.normalise_mean[2]));
	template_set(v, "NORMALISE_STD", "%s, %s, %s", real_text(a, s->data.normalise_std[0]),
		     real_text(b, s->data.normalise_std[1]), real_text(c, s->data.normalise_std[2]));
	template_set(v, "SEED", "%ld", s->train.seed);
	template_set(v, "EVAL_EVERY", "%ld", s->train.eval_every);
	template_set(v, "BN_SYNC", "%d", s->train.bn_sync ? 1 : 0);
}

static const struct graph *sorting_graph;

static int by_name(const void *a, const void *b)
{
	return strcmp(sorting_graph->params[*(const int *)a].name,
		      sorting_graph->params[*(const int *)b].name);
}

/* The order of the parameter table and the SGD calls: group by group, and
 * by name within a group, so that two orderings of the same unit list the
 * same rows and a diff shows only what really changed. */
static int *table_order(const struct graph *g)
{
	int *order = malloc((size_t)(g->param_count ? g->param_count : 1) * sizeof *order);
	if (!order)
		return NULL;
	int count = 0;
	for (int gi = 0; gi < g->group_count; gi++) {
		int first = count;
		const struct group *group = &g->groups[gi];
		for (int i = group->first_op; i < group->first_op + group->op_count; i++)
			for (int k = 0; k < g->ops[i].param_count; k++)
				order[count++] = g->ops[i].params[k];
		sorting_graph = g;
		qsort(order + first, (size_t)(count - first), sizeof *order, by_name);
	}
	return order;
}

/* The trained parameters of a group: where they start in params and how
 * many there are. They lie together, placed in the order ops are made;
 * a group with none starts where the next parameters would. */
static void group_params(const struct emitter *e, const struct group *group, long *offset, long *count)
{
	const struct graph *g = e->g;
	long first = -1;
	*count = 0;
	for (int i = group->first_op; i < group->first_op + group->op_count; i++)
		for (int k = 0; k < g->ops[i].param_count; k++) {
			int param = g->ops[i].params[k];
			if (!g->params[param].trained)
				continue;
			long at = e->plan->param_offset[param];
			if (first < 0 || at < first)
				first = at;
			*count += g->params[param].count;
		}
	if (first < 0) {
		first = 0;
		for (int i = 0; i < group->first_op; i++)
			for (int k = 0; k < g->ops[i].param_count; k++) {
				int param = g->ops[i].params[k];
				if (g->params[param].trained)
					first += g->params[param].count;
			}
	}
	*offset = first;
}

static int emit_net(struct emitter *e, struct strbuf *out)
{
	const struct graph *g = e->g;
	const struct spec *s = e->spec;
	struct strbuf table = {0}, groups = {0}, group_table = {0}, forward = {0}, backward = {0}, sgd = {0};
	struct template_vars v = {0};
	int status = 0;
	int *order = table_order(g);
	if (!order)
		return diag_file(e->d, s->path, "out of memory emitting code");
	for (int k = 0; k < g->param_count && status == 0; k++) {
		const struct param *param = &g->params[order[k]];
		char scale[32];
		template_set(&v, "PARAM", "%s", param->name);
		template_set(&v, "DIMS", "%s", param->dims);
		template_set(&v, "OFFSET", "%s_%s", param->trained ? "PARAM" : "BUFFER", param->name);
		template_set(&v, "COUNT", "%ld", param->count);
		template_set(&v, "TRAINED", "%d", param->trained ? 1 : 0);
		template_set(&v, "INIT", "%s", init_name(param->init));
		template_set(&v, "SCALE", "%s", real_text(scale, param->init_scale));
		status = render(e, &e->net, "param", &v, &table);
		if (status == 0 && param->trained) {
			template_set(&v, "PARAM", "%s", param->name);
			template_set(&v, "COUNT", "%ld", param->count);
			status = render(e, &e->net, "sgd", &v, &sgd);
		}
	}
	for (int i = 0; i < g->group_count && status == 0; i++) {
		const struct group *group = &g->groups[i];
		status = emit_group(e, group, &groups, &e->explain);
		if (status == 0) {
			template_set(&v, "GROUP", "%s", group->name);
			status = render(e, &e->net, "forward_call", &v, &forward);
		}
		if (status == 0) {
			int input = g->ops[group->first_op].inputs[0];
			int output = g->ops[group->first_op + group->op_count - 1].output;
			template_set(&v, "GROUP", "%s", group->name);
			template_set(&v, "OUTPUT", "%s", g->tensors[output].name);
			template_set(&v, "OUTPUT_SIZE", "%ld", graph_tensor_size(g, output));
			template_set(&v, "INPUT", "%s", g->tensors[input].name);
			template_set(&v, "INPUT_SIZE", "%ld", graph_tensor_size(g, input));
			long param_offset, param_count;
			group_params(e, group, &param_offset, &param_count);
			template_set(&v, "PARAM_OFFSET", "%ld", param_offset);
			template_set(&v, "PARAM_COUNT", "%ld", param_count);
			status = render(e, &e->net, "group_entry", &v, &group_table);
		}
	}
	for (int i = g->group_count - 1; i >= 0 && status == 0; i--) {
		template_set(&v, "GROUP", "%s", g->groups[i].name);
		status = render(e, &e->net, "backward_call", &v, &backward);
	}
	/* each instance that makes choices (a template's "choose" section) */
	for (int k = 0; k < e->plan->kernel_count && status == 0; k++) {
		const struct template *t = kernel_template(e, &e->plan->kernels[k]);
		if (!template_has_section(t, "choose"))
			continue;
		kernel_vars(e, &e->plan->kernels[k], &v);
		status = render(e, t, "choose", &v, &e->choose);
	}
	char *values = NULL;
	size_t values_length = 0;
	FILE *memory = status == 0 ? open_memstream(&values, &values_length) : NULL;
	if (status == 0 && !memory)
		status = diag_file(e->d, s->path, "out of memory emitting code");
	if (memory) {
		/* The data folder is the one text of the spec's own that the
		 * description quotes: it too goes in as comment text. */
		struct spec described = *s;
		comment_text(described.data.dir, sizeof described.data.dir, s->data.dir);
		spec_describe(&described, memory, " *   ");
		fclose(memory);
		if (values_length > 0 && values[values_length - 1] == '\n')
			values[values_length - 1] = '\0';
	}
	if (status == 0) {
		char summary[256];
		snprintf(summary, sizeof summary, "%s units, %s ordering, depth %d, %s shortcut, %s projection",
			 spec_unit_name(s->net.unit), spec_ordering_name(s->net.ordering), s->net.depth,
			 spec_shortcut_name(s->net.shortcut), spec_projection_name(s->net.projection));
		if (s->net.precision == PRECISION_BF16) /* an f32 network's summary as it always was */
			snprintf(summary + strlen(summary), sizeof summary - strlen(summary),
				 ", bf16 products summed in f32 (the %s order)", spec_arithmetic_name(s->net.arithmetic));
		header_vars(e, &v);
		template_set(&v, "SPEC_VALUES", "%s", values);
		template_set(&v, "REAL", "%s", e->dtype == DTYPE_F64 ? "double" : "float");
		template_set(&v, "DTYPE", "%s", e->dtype == DTYPE_F64 ? "f64" : "f32");
		template_set(&v, "IDENTITY", "0x%016llxULL", (unsigned long long)e->identity);
		template_set(&v, "NET_SUMMARY", "%s", summary);
		template_set(&v, "PRECISION", "%s", spec_precision_text(s));
		template_set(&v, "CHANNELS", "%d", s->data.channels);
		template_set(&v, "HEIGHT", "%d", s->data.height);
		template_set(&v, "WIDTH", "%d", s->data.width);
		template_set(&v, "CLASSES", "%d", s->data.classes);
		template_set(&v, "INPUT", "%s", g->tensors[g->input].name);
		template_set(&v, "LOGITS", "%s", g->tensors[g->logits].name);
		double flops = 0, conv_flops = 0;
		for (int i = 0; i < g->op_count; i++) {
			flops += op_flops(g, &g->ops[i]);
			if (op_kinds[g->ops[i].kind].convolution)
				conv_flops += op_flops(g, &g->ops[i]);
		}
		template_set(&v, "FORWARD_FLOPS", "%.0f", flops);
		template_set(&v, "CONV_FLOPS", "%.0f", conv_flops);
		defaults_vars(e, &v);
		template_set(&v, "PARAM_TABLE", "%s", strbuf_text(&table));
		template_set(&v, "GROUP_FUNCTIONS", "%s", strbuf_text(&groups));
		template_set(&v, "GROUP_TABLE", "%s", strbuf_text(&group_table));
		template_set(&v, "FORWARD_CALLS", "%s", strbuf_text(&forward));
		template_set(&v, "BACKWARD_CALLS", "%s", strbuf_text(&backward));
		template_set(&v, "SGD_CALLS", "%s", strbuf_text(&sgd));
		status = render(e, &e->net, "file", &v, out);
	}
	free(values);
	free(order);
	strbuf_free(&table);
	strbuf_free(&groups);
	strbuf_free(&group_table);
	strbuf_free(&forward);
	strbuf_free(&backward);
	strbuf_free(&sgd);
	return status;
}

/* The network's identity, which a checkpoint must match: what it computes,
 * as the number format, the canonical spec (its name and data folder
 * aside) and the graph's listing; not the text of its code, so that a
 * change of the kernels or the templates that keeps the network keeps its
 * checkpoints, and a study variant resumes its base spec's. */
static int network_identity(struct emitter *e)
{
	char *text = NULL;
	size_t length = 0;
	FILE *memory = open_memstream(&text, &length);
	if (!memory)
		return diag_file(e->d, e->spec->path, "out of memory emitting code");
	fprintf(memory, "resgen network\ndtype %s\n", e->dtype == DTYPE_F64 ? "f64" : "f32");
	spec_describe_network(e->spec, memory);
	graph_describe(e->g, memory);
	fclose(memory);
	e->identity = checksum_add(CHECKSUM_BASIS, text, length);
	free(text);
	return 0;
}

int emit_network(const struct plan *plan, const char *templates_dir, const char *out_dir,
		 enum dtype dtype, struct diag *d)
{
	struct emitter e = {.plan = plan, .g = plan->graph, .spec = plan->graph->spec,
			    .dtype = dtype, .d = d};
	static const char *const names[] = {"net.c", "kernels.h", "kernel_table.h", "kernels.c", "arena.h"};
	enum { TEXTS = sizeof names / sizeof names[0] };
	struct strbuf texts[TEXTS] = {{0}};
	int status = load_templates(&e, templates_dir);
	if (status == 0)
		status = network_identity(&e);
	if (status == 0)
		status = emit_net(&e, &texts[0]);
	if (status == 0)
		status = emit_kernels(&e, &texts[1]);
	if (status == 0)
		status = emit_arena(&e, &texts[4]);
	if (status == 0)
		status = write_texts(out_dir, names, texts, TEXTS, false, d);
	for (int i = 0; i < TEXTS; i++)
		strbuf_free(&texts[i]);
	strbuf_free(&e.choose);
	strbuf_free(&e.explain);
	free_templates(&e);
	return status;
}
