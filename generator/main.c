/* resgen: from a YAML spec of one residual network to specialised C.
 * The stages run in order: spec -> graph -> plan -> emitted C. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diag.h"
#include "emit.h"
#include "graph.h"
#include "ops.h"
#include "plan.h"
#include "recipe.h"
#include "report.h"
#include "spec.h"
#include "study.h"
#include "texts.h"

static const char usage[] =
	"usage: resgen check SPEC [--dtype f32|f64] [--max-memory GIB]\n"
	"       resgen summary SPEC [--dtype f32|f64] [--max-memory GIB] [--json]\n"
	"       resgen generate SPEC -o DIR [--dtype f32|f64] [--max-memory GIB]\n"
	"                              [--templates DIR]\n"
	"       resgen units SPEC [SPEC2]\n"
	"       resgen study check|plan|report STUDY [-o DIR] [--specs DIR]\n"
	"                              [--max-memory GIB]\n"
	"\n"
	"  check     parse and check SPEC, and that its network fits in memory at\n"
	"            its batch size; print nothing and exit 0 if it is valid\n"
	"  summary   per stage and in total: weighted layers, parameters, forward\n"
	"            FLOPs per image, activation memory at the spec's batch size;\n"
	"            then the memory a run allocates: the planned arena, the weights\n"
	"            with their gradients and momenta, BN's statistics, the scratch;\n"
	"            --json: the spec's data as tools read it (its set, format, folder,\n"
	"            input shape, classes and their names), from the one table of sets\n"
	"  generate  write DIR/net.c, DIR/kernels.h and DIR/arena.h: the network of\n"
	"            SPEC, fully unrolled, in float (f32, default) or double (f64)\n"
	"  units     one line per unit: its ops in order; with SPEC2, only the\n"
	"            units whose ops differ, SPEC's -> SPEC2's, consecutive units\n"
	"            that change alike on one line (make diff starts with it)\n"
	"  study     a study file (specs/studies/, run by make study S=NAME):\n"
	"            check   check it and every variant's spec, as check does\n"
	"            plan    write DIR/VARIANT.yaml, each variant's spec (rewritten\n"
	"                    only when it changes), and DIR/plan, the runs\n"
	"            report  from the runs' logs in DIR, write DIR/report.md and\n"
	"                    DIR/plot/ (the tables tools/plot-study.gp draws)\n"
	"\n"
	"  --specs DIR      where a study's spec names are looked up (default specs)\n"
	"  --max-memory GIB the most memory the network's binary may need at the\n"
	"                   spec's batch size (activations, gradients, parameters);\n"
	"                   default: this machine's physical memory\n"
	"  --templates DIR  where the templates are; default: $RESGEN_TEMPLATES, or\n"
	"                   the nearest templates/ above the folder that holds resgen\n"
	"\n"
	"Specs are described in specs/README.md. Errors are one line,\n"
	"FILE:LINE:COL: message; exit status 2 for a bad spec or usage, 1 for an\n"
	"input/output failure.\n";

static int fail_usage(const char *message)
{
	char printable[1024];
	printable_text(printable, sizeof printable, message);
	fprintf(stderr, "resgen: %s\n%s", printable, usage);
	return 2;
}

/* A number of GiB in plain decimal (digits, then maybe '.' and digits; no
 * sign, exponent or hex), from 0.01 to a million, into bytes. */
static int parse_gib(const char *text, double *bytes)
{
	size_t digits = strspn(text, "0123456789"), fraction = 0;
	if (text[digits] == '.')
		fraction = 1 + strspn(text + digits + 1, "0123456789");
	if (digits == 0 || fraction == 1 || text[digits + fraction] != '\0')
		return -1;
	double gib = strtod(text, NULL);
	if (!(gib >= 0.01 && gib <= 1e6))
		return -1;
	*bytes = gib * (double)(1 << 30);
	return 0;
}

/* The nearest templates/ above the executable (build/bin/resgen, or
 * build/sanitize/bin/resgen), so that resgen runs from any directory. */
static void default_templates(char *out, size_t size)
{
	const char *env = getenv("RESGEN_TEMPLATES");
	if (env && env[0]) {
		snprintf(out, size, "%s", env);
		return;
	}
	snprintf(out, size, "templates");
	char self[PATH_MAX - 32];
	ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
	if (length <= 0)
		return;
	self[length] = '\0';
	for (int up = 0; up < 5; up++) {
		char *slash = strrchr(self, '/');
		if (!slash)
			return;
		*slash = '\0';
		char probe[PATH_MAX];
		snprintf(probe, sizeof probe, "%s/templates/net.c.tmpl", self);
		if (access(probe, R_OK) == 0) {
			snprintf(out, size, "%s/templates", self);
			return;
		}
	}
}

static double physical_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
	return pages > 0 && page > 0 ? (double)pages * (double)page : 64.0 * (1 << 30);
}

static void format_bytes(char *out, size_t size, double bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	int unit = 0;
	while (bytes >= 1024 && unit < 5) {
		bytes /= 1024;
		unit++;
	}
	snprintf(out, size, "%.1f %s", bytes, units[unit]);
}

/* The threads a binary runs on by default: this machine's cores. */
static int default_threads(void)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	return cores > 0 ? (int)cores : 1;
}

/* A network whose binary could not allocate its memory for one image is
 * refused here, with the figure, rather than by the binary later (-1, d
 * the error). One that fits one image but not the spec's batch is
 * warned of (1, d the warning): the code is the same at every batch, and
 * a run takes a smaller --batch or spreads the batch over ranks, as the
 * ImageNet networks of the paper were trained. */
static int check_memory(const struct spec *spec, const struct plan *plan, enum dtype dtype,
			double limit, struct diag *d)
{
	int threads = default_threads(), real_size = dtype == DTYPE_F64 ? 8 : 4;
	double need = plan_memory(plan, spec->train.batch, threads, real_size).total;
	if (need <= limit)
		return 0;
	char need_text[32], limit_text[32];
	format_bytes(need_text, sizeof need_text, need);
	format_bytes(limit_text, sizeof limit_text, limit);
	double fixed = plan_memory(plan, 0, threads, real_size).total;
	double per_image = (need - fixed) / spec->train.batch;
	long fitting = limit > fixed ? (long)((limit - fixed) / per_image) : 0;
	const char *file = spec_position_file(spec, spec->train.batch_at);
	int line = spec->train.batch_at.line, column = spec->train.batch_at.column;
	const char *dtype_name = dtype == DTYPE_F64 ? "f64" : "f32";
	if (fitting < 1)
		return diag_at(d, file, line, column,
			       "at batch %d this network needs %s of memory in %s, more than the %s "
			       "allowed (this machine's memory, or --max-memory), and even one image does not "
			       "fit: use fewer or narrower layers, or pass --max-memory GIB",
			       spec->train.batch, need_text, dtype_name, limit_text);
	long ranks = (spec->train.batch + fitting - 1) / fitting;
	diag_at(d, file, line, column,
		"warning: at batch %d this network needs %s of memory in %s, more than the %s allowed "
		"(this machine's memory, or --max-memory); run it with --batch %ld at most, or spread the "
		"batch over %ld or more ranks (mpirun), each holding its part",
		spec->train.batch, need_text, dtype_name, limit_text, fitting, ranks);
	return 1;
}

/* text as a JSON string: quotes, backslashes and control characters
 * escaped, other bytes as they are (paths are bytes; a tool reading the
 * JSON decodes them as it decodes file names). */
static void json_string(FILE *out, const char *text)
{
	fputc('"', out);
	for (const unsigned char *c = (const unsigned char *)text; *c; c++)
		if (*c == '"' || *c == '\\')
			fprintf(out, "\\%c", *c);
		else if (*c < 0x20)
			fprintf(out, "\\u%04x", *c);
		else
			fputc(*c, out);
	fputc('"', out);
}

/* resgen summary --json: the spec's data, from data_sets.h's table, so
 * that tools (tools/pytorch/resgen_torch.py) keep no copy of it. */
static void print_summary_json(const struct spec *spec)
{
	const struct data_set_info *set = &data_sets[spec->data.set];
	printf("{\"name\": ");
	json_string(stdout, spec->name);
	printf(", \"data\": {\"set\": ");
	json_string(stdout, set->name);
	printf(", \"title\": ");
	json_string(stdout, set->title);
	printf(", \"format\": \"%s\", \"dir\": ", data_format_names[set->format]);
	json_string(stdout, spec->data.dir);
	printf(", \"channels\": %d, \"height\": %d, \"width\": %d, \"classes\": %d, \"class_names\": [",
	       spec->data.channels, spec->data.height, spec->data.width, spec->data.classes);
	for (int i = 0; i < spec->data.classes; i++) {
		char name[64];
		printf("%s", i ? ", " : "");
		json_string(stdout, data_set_class_name(spec->data.set, spec->data.classes, i, name, sizeof name));
	}
	/* a folder's normalisation: data.normalise, with the spec's values */
	printf("], \"normalise\": \"%s\"", set->format != FORMAT_FOLDER ? "images"
					 : normalisation_names[spec->data.normalise]);
	if (set->format == FORMAT_FOLDER && spec->data.normalise == NORMALISE_GIVEN)
		printf(", \"normalise_mean\": [%.17g, %.17g, %.17g], \"normalise_std\": [%.17g, %.17g, %.17g]",
		       spec->data.normalise_mean[0], spec->data.normalise_mean[1], spec->data.normalise_mean[2],
		       spec->data.normalise_std[0], spec->data.normalise_std[1], spec->data.normalise_std[2]);
	printf("}}\n");
}

static void print_summary(const struct spec *spec, const struct graph *g, const struct plan *p)
{
	printf("%s: %s units, %s ordering, depth %d, %s shortcut", spec->name, spec_unit_name(spec->net.unit),
	       spec_ordering_name(spec->net.ordering), spec->net.depth, spec_shortcut_name(spec->net.shortcut));
	if (spec->net.shortcut == SHORTCUT_SCALING)
		printf(" (%g times the shortcut, %g times the branch)", spec->net.scale_shortcut, spec->net.scale_branch);
	else if (spec->net.shortcut == SHORTCUT_EXCLUSIVE_GATING || spec->net.shortcut == SHORTCUT_SHORTCUT_GATING)
		printf(" (the gate's bias b_g starts at %g)", spec->net.gate_bias);
	else if (spec->net.shortcut == SHORTCUT_DROPOUT)
		printf(" (dropping %g of its elements)", spec->net.dropout_rate);
	printf(", %s projection%s\n", spec_projection_name(spec->net.projection),
	       spec->net.shortcut_bn ? ", BN after each 1x1 shortcut convolution" : "");
	printf("input %dx%dx%d (%s), %d classes\n", spec->data.channels, spec->data.height, spec->data.width,
	       spec_set_name(spec->data.set), spec->data.classes);
	if (spec->net.precision == PRECISION_BF16)
		printf("precision: bf16 products in the convolutions and the classifier, their operands rounded to bf16 "
		       "and summed in f32 in the %s order; BN, ReLU, the additions, the loss, the optimiser and the "
		       "weights in f32\n",
		       spec_arithmetic_name(spec->net.arithmetic));
	struct net_defaults recipe;
	spec_recipe(spec, &recipe);
	printf("training: batch %d, %ld iterations; ", spec->train.batch, spec->train.iterations);
	recipe_describe(stdout, &recipe, spec->train.iterations, spec->data.height);
	printf("\n\nactivations: each op's output at batch %d in float, counted once, as if all were kept\n",
	       spec->train.batch);
	printf("%-10s %7s %12s %14s %16s\n", "part", "layers", "parameters", "MFLOPs/image",
	       "activations MiB");
	int parts = spec->net.stage_count + 2;
	long total_layers = 0, total_params = 0;
	double total_flops = 0, total_bytes = 0;
	for (int part = 0; part < parts; part++) {
		long layers = 0, params = 0;
		double flops = 0, bytes = 0;
		for (int gi = 0; gi < g->group_count; gi++) {
			const struct group *group = &g->groups[gi];
			int which = gi == 0 ? 0 : gi == g->group_count - 1 ? parts - 1 : group->stage;
			if (which != part)
				continue;
			for (int i = group->first_op; i < group->first_op + group->op_count; i++) {
				const struct op *op = &g->ops[i];
				layers += op_kinds[op->kind].weighted && op_kinds[op->kind].weighted(op);
				for (int k = 0; k < op->param_count; k++)
					if (g->params[op->params[k]].trained)
						params += g->params[op->params[k]].count;
				flops += op_flops(g, op);
				struct shape s = g->tensors[op->output].shape;
				bytes += 4.0 * spec->train.batch * s.channels * s.height * s.width;
			}
		}
		char name[24];
		if (part == 0)
			snprintf(name, sizeof name, "stem");
		else if (part == parts - 1)
			snprintf(name, sizeof name, "head");
		else
			snprintf(name, sizeof name, "stage %d", part);
		printf("%-10s %7ld %12ld %14.2f %16.1f\n", name, layers, params, flops / 1e6,
		       bytes / (1 << 20));
		total_layers += layers;
		total_params += params;
		total_flops += flops;
		total_bytes += bytes;
	}
	printf("%-10s %7ld %12ld %14.2f %16.1f\n\n", "total", total_layers, total_params,
	       total_flops / 1e6, total_bytes / (1 << 20));
	/* the arena, then the rest of what the binary allocates, so that the
	 * figures add up to the memory a run takes, its data and code aside */
	int threads = default_threads();
	struct plan_memory m = plan_memory(p, spec->train.batch, threads, 4);
	double mib = 1 << 20;
	printf("planned arena: %.1f MiB at batch %d, what a run allocates for the activations backward needs "
	       "and their gradients, a slot reused once its tensor is dead (so less than the activations above, "
	       "which count every output once and no gradient)\n",
	       m.arena / mib, spec->train.batch);
	printf("beside it: the weights, their gradients and momenta %.1f MiB, BN's statistics %.1f MiB, "
	       "scratch %.1f MiB a thread; in all %.1f MiB on %d thread%s\n",
	       m.weights / mib, m.statistics / mib, m.scratch_per_thread / mib, m.total / mib, threads,
	       threads == 1 ? "" : "s");
	printf("%d ops, %d kernel instances; %ld trained parameters, %ld running statistics\n",
	       g->op_count, p->kernel_count, p->param_count, p->buffer_count);
}

/* resgen units: the ops of each unit of one spec, or what changed between
 * two. */
static int print_units(const char *path, const char *second_path)
{
	const char *paths[2] = {path, second_path};
	struct spec specs[2];
	struct graph graphs[2];
	struct diag d = {{0}};
	int loaded = 0, status = 0;
	for (; loaded < 2 && paths[loaded] && status == 0; loaded++) {
		if (spec_load(&specs[loaded], paths[loaded], &d) != 0)
			status = 2;
		else if (graph_build(&graphs[loaded], &specs[loaded], &d) != 0)
			status = 1;
		if (status != 0)
			fprintf(stderr, "%s\n", d.text);
	}
	if (status == 0)
		graph_print_units(&graphs[0], second_path ? &graphs[1] : NULL, stdout);
	for (int i = 0; i < loaded - (status != 0); i++)
		graph_free(&graphs[i]);
	return status;
}

/* resgen study: check a study and its variants' networks, write their
 * specs and the list of runs, or write the report of its runs. */
static int run_study(const char *action, const char *path, const char *out_dir,
		     const char *specs_dir, double max_memory)
{
	bool plan_it = strcmp(action, "plan") == 0, report = strcmp(action, "report") == 0;
	if (!plan_it && !report && strcmp(action, "check") != 0)
		return fail_usage("study needs check, plan or report, then the study file");
	if ((plan_it || report) && !out_dir)
		return fail_usage("study plan and study report need -o DIR");
	struct diag d = {{0}};
	struct study *study = calloc(1, sizeof *study);
	if (!study) {
		fprintf(stderr, "resgen: out of memory reading %s\n", path);
		return 1;
	}
	if (study_load(study, path, specs_dir, &d) != 0) {
		fprintf(stderr, "%s\n", d.text);
		free(study);
		return 2;
	}
	int status = 0;
	if (report) {
		if (study_report(study, out_dir, &d) != 0) {
			fprintf(stderr, "%s\n", d.text);
			status = 1;
		}
		study_free(study);
		free(study);
		return status;
	}
	/* The plan's files: the variants' specs and the list of runs. */
	int count = study->variant_count + 1;
	struct strbuf *texts = NULL;
	char (*names)[SPEC_NAME_MAX + 8] = NULL;
	const char **name_list = NULL;
	bool known = false; /* planned so before: its warnings were said then */
	if (plan_it) {
		texts = calloc((size_t)count, sizeof *texts);
		names = calloc((size_t)count, sizeof *names);
		name_list = calloc((size_t)count, sizeof *name_list);
		if (!texts || !names || !name_list) {
			fprintf(stderr, "resgen: out of memory planning %s\n", path);
			status = 1;
		}
		for (int v = 0; status == 0 && v < study->variant_count; v++) {
			study_variant_text(study, v, &texts[v]);
			snprintf(names[v], sizeof names[v], "%s.yaml", study->variants[v].name);
			name_list[v] = names[v];
		}
		if (status == 0) {
			study_plan_text(study, &texts[count - 1]);
			name_list[count - 1] = "plan";
			known = texts_written(out_dir, name_list, texts, count);
		}
	}
	/* Each network as check would see it: warnings said (once a plan),
	 * memory checked. */
	for (int v = 0; v < study->variant_count && status == 0; v++) {
		struct spec *spec = &study->variants[v].spec;
		struct diag warnings[1 + SPEC_MAX_LR_STEPS];
		int warning_count = spec_warnings(spec, warnings, (int)(sizeof warnings / sizeof warnings[0]));
		for (int i = 0; i < warning_count && !known; i++)
			fprintf(stderr, "%s (variant %s)\n", warnings[i].text, spec->name);
		struct graph graph;
		struct plan plan;
		if (graph_build(&graph, spec, &d) != 0) {
			status = 1;
		} else {
			if (plan_build(&plan, &graph, &d) != 0)
				status = 1;
			else {
				int fits = check_memory(spec, &plan, DTYPE_F32, max_memory, &d);
				if (fits < 0)
					status = 2;
				else if (fits > 0 && !known)
					fprintf(stderr, "%s (variant %s)\n", d.text, spec->name);
			}
			if (status != 1)
				plan_free(&plan);
			graph_free(&graph);
		}
		if (status != 0)
			fprintf(stderr, "%s\n", d.text);
	}
	if (status == 0 && plan_it && write_texts(out_dir, name_list, texts, count, true, &d) != 0) {
		fprintf(stderr, "%s\n", d.text);
		status = 1;
	}
	for (int i = 0; texts && i < count; i++)
		strbuf_free(&texts[i]);
	free(texts);
	free(names);
	free(name_list);
	study_free(study);
	free(study);
	return status;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
			  strcmp(argv[1], "help") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc < 3)
		return fail_usage("expected a command and a spec");
	const char *command = argv[1], *spec_path = argv[2], *second_path = NULL;
	const char *out_dir = NULL, *specs_dir = "specs", *study_action = NULL;
	int first_option = 3;
	if (strcmp(command, "study") == 0) {
		if (argc < 4)
			return fail_usage("study needs check, plan or report, then the study file");
		study_action = argv[2];
		spec_path = argv[3];
		first_option = 4;
	}
	if (strcmp(command, "units") == 0 && argc > 3 && argv[3][0] != '-')
		second_path = argv[first_option++];
	enum dtype dtype = DTYPE_F32;
	bool json = false;
	double max_memory = physical_memory();
	char templates[PATH_MAX];
	default_templates(templates, sizeof templates);
	for (int i = first_option; i < argc; i++) {
		bool has_value = i + 1 < argc;
		if (strcmp(argv[i], "-o") == 0 && has_value) {
			out_dir = argv[++i];
		} else if (strcmp(argv[i], "--dtype") == 0 && has_value) {
			i++;
			if (strcmp(argv[i], "f32") == 0)
				dtype = DTYPE_F32;
			else if (strcmp(argv[i], "f64") == 0)
				dtype = DTYPE_F64;
			else
				return fail_usage("--dtype must be f32 or f64");
		} else if (strcmp(argv[i], "--max-memory") == 0 && has_value) {
			if (parse_gib(argv[++i], &max_memory) != 0)
				return fail_usage("--max-memory needs a number of GiB in plain decimal from 0.01 to "
						  "1000000, such as 64 or 0.5");
		} else if (strcmp(argv[i], "--specs") == 0 && has_value) {
			specs_dir = argv[++i];
		} else if (strcmp(argv[i], "--json") == 0 && strcmp(command, "summary") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--templates") == 0 && has_value) {
			snprintf(templates, sizeof templates, "%s", argv[++i]);
		} else {
			char message[300];
			snprintf(message, sizeof message, "unexpected argument '%.200s'", argv[i]);
			return fail_usage(message);
		}
	}
	bool check = strcmp(command, "check") == 0, summary = strcmp(command, "summary") == 0,
	     generate = strcmp(command, "generate") == 0;
	if (strcmp(command, "units") == 0)
		return print_units(spec_path, second_path);
	if (study_action)
		return run_study(study_action, spec_path, out_dir, specs_dir, max_memory);
	if (!check && !summary && !generate)
		return fail_usage("the command must be check, summary, generate, units or study");
	if (generate && !out_dir)
		return fail_usage("generate needs -o DIR");

	struct diag d = {{0}};
	struct spec spec;
	if (spec_load(&spec, spec_path, &d) != 0) {
		fprintf(stderr, "%s\n", d.text);
		return 2;
	}
	/* Valid but probably not meant: said, and the command goes on. */
	struct diag warnings[1 + SPEC_MAX_LR_STEPS];
	int warning_count = spec_warnings(&spec, warnings, (int)(sizeof warnings / sizeof warnings[0]));
	for (int i = 0; i < warning_count; i++)
		fprintf(stderr, "%s\n", warnings[i].text);
	if (json) {
		print_summary_json(&spec);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	struct graph graph;
	struct plan plan;
	if (graph_build(&graph, &spec, &d) != 0) {
		fprintf(stderr, "%s\n", d.text);
		return 1;
	}
	if (plan_build(&plan, &graph, &d) != 0) {
		fprintf(stderr, "%s\n", d.text);
		graph_free(&graph);
		return 1;
	}
	int status = 0, fits = check_memory(&spec, &plan, dtype, max_memory, &d);
	if (fits != 0)
		fprintf(stderr, "%s\n", d.text);
	if (fits < 0)
		status = 2;
	else if (check)
		status = 0;
	else if (summary)
		print_summary(&spec, &graph, &plan);
	else if (emit_network(&plan, templates, out_dir, dtype, &d) != 0) {
		fprintf(stderr, "%s\n", d.text);
		status = 1;
	}
	plan_free(&plan);
	graph_free(&graph);
	return status;
}
