/* The study file: which variants, which seeds, which budget. A variant is a
 * spec of specs/ (its own, or the study's base) with the study's overrides
 * laid over it: first the study's `set`, then the variant's. The merged
 * tree is checked by the spec's own checker, so a wrong override gets the
 * message a wrong spec would, at its place in the study file. */
#include "study.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "net_api.h"
#include "recipe.h"

/* Every node of a tree remembers the file it was written in, so that a
 * merged tree's messages name the right one. */
static void mark_file(struct ytree *tree, const char *path)
{
	for (size_t i = 0; i < tree->node_count; i++)
		tree->nodes[i].file = path;
}

static struct ynode *make_map(struct study *study, const struct ynode *like, size_t capacity)
{
	struct ynode **made = realloc(study->made, (study->made_count + 1) * sizeof *made);
	if (!made)
		return NULL;
	study->made = made;
	struct ynode *node = calloc(1, sizeof *node);
	struct ynode **keys = calloc(capacity ? capacity : 1, sizeof *keys);
	struct ynode **values = calloc(capacity ? capacity : 1, sizeof *values);
	if (!node || !keys || !values) {
		free(node);
		free(keys);
		free(values);
		return NULL;
	}
	*node = (struct ynode){.kind = YNODE_MAP, .line = like->line, .column = like->column,
			       .file = like->file, .keys = keys, .values = values};
	made[study->made_count++] = node;
	return node;
}

/* over laid on base: mappings merge key by key, anything else is replaced.
 * Nodes are shared, never changed (hence the casts into a map's arrays). */
static const struct ynode *merge(struct study *study, const struct ynode *base,
				 const struct ynode *over)
{
	if (!base || !over)
		return base ? base : over;
	if (base->kind != YNODE_MAP || over->kind != YNODE_MAP)
		return over;
	struct ynode *map = make_map(study, base, base->count + over->count);
	if (!map)
		return NULL;
	for (size_t i = 0; i < base->count; i++) {
		const struct ynode *value =
			merge(study, base->values[i], ynode_get(over, base->keys[i]->text));
		if (!value)
			return NULL;
		map->keys[map->count] = base->keys[i];
		map->values[map->count++] = (struct ynode *)value;
	}
	for (size_t i = 0; i < over->count; i++)
		if (!ynode_get(base, over->keys[i]->text)) {
			map->keys[map->count] = over->keys[i];
			map->values[map->count++] = over->values[i];
		}
	return map;
}

/* A spec name: a path under specs/ without .yaml, of a-z, 0-9, '-' and
 * '/', each part starting with a letter or digit (so never ".."). */
static bool spec_name_valid(const char *name)
{
	size_t length = strlen(name);
	if (length == 0 || length > STUDY_SPEC_NAME_MAX)
		return false;
	for (size_t i = 0; i < length; i++) {
		char ch = name[i];
		bool part_start = i == 0 || name[i - 1] == '/';
		bool word = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
		if (!(word || (!part_start && (ch == '-' || ch == '/'))))
			return false;
	}
	return name[length - 1] != '/';
}

static int get_spec_name(const struct checker *c, const struct ynode *node, const char *specs_dir,
			 char *name, char *path)
{
	if (expect_scalar(c, node, "spec", "a spec name such as paper/t2-a-original-110") != 0)
		return -1;
	if (!spec_name_valid(node->text))
		return error_at(c, node,
				"'spec' must name a spec under %s/ without '.yaml', in a-z, 0-9, '-' "
				"and '/', such as paper/t2-a-original-110",
				specs_dir);
	snprintf(name, STUDY_SPEC_NAME_MAX + 1, "%s", node->text);
	snprintf(path, SPEC_PATH_MAX, "%s/%s.yaml", specs_dir, name);
	if (access(path, R_OK) != 0)
		return error_at(c, node, "no spec '%s' (%s does not exist); name a spec of %s/, such as "
				"paper/t2-a-original-110",
				name, path, specs_dir);
	return 0;
}

/* One line of text for the report: printable, no '|' (a table cell). */
static int get_text(const struct checker *c, const struct ynode *map, const char *key, int max,
		    char *out)
{
	const struct ynode *node = ynode_get(map, key);
	if (!node)
		return 0;
	if (expect_scalar(c, node, key, "one line of text") != 0)
		return -1;
	size_t length = strlen(node->text);
	if (length > (size_t)max)
		return error_at(c, node, "'%s' has %zu characters; give at most %d", key, length, max);
	for (size_t i = 0; i < length; i++)
		if ((unsigned char)node->text[i] < 0x20 || node->text[i] == '|' || node->text[i] == 0x7f)
			return error_at(c, node, "'%s' must be one line of text without control "
					"characters or '|'", key);
	memcpy(out, node->text, length + 1);
	return 0;
}

/* `set`: a mapping of spec keys, never the name (that is the variant's). */
static int get_overrides(const struct checker *c, const struct ynode *map,
			 const struct ynode **out)
{
	*out = ynode_get(map, "set");
	if (!*out)
		return 0;
	if (expect_map(c, *out, "set") != 0)
		return -1;
	const struct ynode *name = ynode_get(*out, "name");
	if (name)
		return error_at(c, name, "'set' cannot change 'name': a variant's spec is named "
				"after the variant; give the variant a 'name' instead");
	return 0;
}

/* A Slurm time limit as sbatch --time takes it: minutes, minutes:seconds,
 * hours:minutes:seconds, days-hours, days-hours:minutes or
 * days-hours:minutes:seconds; its seconds, or 0 when it is none of those. */
static long slurm_seconds(const char *text)
{
	long field[3] = {0}, days = 0;
	int count = 0;
	bool dashed = false;
	const char *p = text;
	for (;;) {
		if (*p < '0' || *p > '9')
			return 0;
		long value = 0;
		for (int digits = 0; *p >= '0' && *p <= '9'; p++, digits++) {
			if (digits == 6)
				return 0;
			value = value * 10 + (*p - '0');
		}
		if (*p == '-' && !dashed && count == 0) {
			dashed = true;
			days = value;
			p++;
			continue;
		}
		field[count++] = value;
		if (*p == '\0')
			break;
		if (*p != ':' || count == 3)
			return 0;
		p++;
	}
	long seconds = dashed ? field[0] * 3600 + field[1] * 60 + field[2]
		       : count == 1 ? field[0] * 60
		       : count == 2 ? field[0] * 60 + field[1]
				    : field[0] * 3600 + field[1] * 60 + field[2];
	return days * 86400 + seconds;
}

/* A variant's own cluster task: threads, ranks and time limit. */
static int get_resources(const struct checker *c, const struct ynode *map, struct study_variant *v)
{
	if (get_int(c, map, "threads", 1, STUDY_THREADS_MAX, 0, &v->threads) != 0 ||
	    get_int(c, map, "ranks", 1, STUDY_RANKS_MAX, 0, &v->ranks) != 0)
		return -1;
	const struct ynode *time = ynode_get(map, "time");
	if (!time)
		return 0;
	if (expect_scalar(c, time, "time", "a Slurm time limit such as 4:00:00") != 0)
		return -1;
	if (strlen(time->text) > STUDY_TIME_MAX || slurm_seconds(time->text) <= 0)
		return error_at(c, time, "'time' is '%.40s'; give a Slurm time limit above zero as sbatch --time "
				"takes it: minutes (90), hours:minutes:seconds (4:00:00) or days-hours (1-12)",
				time->text);
	snprintf(v->time, sizeof v->time, "%s", time->text);
	return 0;
}

static int check_seeds(const struct checker *c, const struct ynode *root, struct study *study)
{
	const struct ynode *seeds;
	if (require(c, root, "seeds", "the study", &seeds) != 0 ||
	    get_integer_list(c, seeds, "seeds", 0, 2147483647, STUDY_MAX_SEEDS, study->seeds,
			     &study->seed_count) != 0)
		return -1;
	for (int i = 0; i < study->seed_count; i++)
		for (int j = 0; j < i; j++)
			if (study->seeds[i] == study->seeds[j])
				return error_at(c, seeds->values[i],
						"seed %ld is listed twice; give each seed once",
						study->seeds[i]);
	return 0;
}

static int check_variant(const struct checker *c, struct study *study, const struct ynode *node,
			 const char *base_name, const char *specs_dir, const struct ynode *study_set)
{
	struct study_variant *v = &study->variants[study->variant_count];
	static const char *const keys[] = {"name", "spec", "set", "paper", "threads", "ranks", "time", "against"};
	const struct ynode *name, *set, *spec = NULL;
	if (expect_map(c, node, "variant") != 0 ||
	    check_keys(c, node, "a variant", keys, COUNT(keys)) != 0 ||
	    require(c, node, "name", "the variant", &name) != 0 ||
	    expect_scalar(c, name, "name", "a word such as a-original") != 0 ||
	    check_word(c, name, "name", SPEC_NAME_MAX, "a-original", v->name) != 0 ||
	    get_text(c, node, "paper", STUDY_PAPER_MAX, v->paper) != 0 ||
	    get_resources(c, node, v) != 0 || get_overrides(c, node, &set) != 0)
		return -1;
	for (int i = 0; i < study->variant_count; i++)
		if (strcmp(study->variants[i].name, v->name) == 0)
			return error_at(c, name, "variant '%s' is listed twice; give each variant its "
					"own name", v->name);
	/* the variant this one is compared with: one listed before it */
	const struct ynode *against = ynode_get(node, "against");
	v->against = -1;
	if (against) {
		if (expect_scalar(c, against, "against", "the name of a variant listed before this one") != 0)
			return -1;
		for (int i = 0; i < study->variant_count; i++)
			if (strcmp(study->variants[i].name, against->text) == 0)
				v->against = i;
		if (v->against < 0)
			return error_at(c, against,
					"'against' names '%s', which is no variant listed before '%s'; name one of "
					"those, which this one is compared with",
					against->text, v->name);
	}
	spec = ynode_get(node, "spec");
	if (spec) {
		if (get_spec_name(c, spec, specs_dir, v->spec_name, v->spec_path) != 0)
			return -1;
	} else if (base_name[0]) {
		snprintf(v->spec_name, sizeof v->spec_name, "%s", base_name);
		snprintf(v->spec_path, sizeof v->spec_path, "%s/%s.yaml", specs_dir, base_name);
	} else {
		return error_at(c, node, "variant '%s' names no 'spec', and the study has no 'base'; "
				"give one of them, such as spec: paper/t2-a-original-110", v->name);
	}
	if (ytree_load(&v->base, v->spec_path, c->d) != 0)
		return -1;
	study->variant_count++; /* its tree is the study's to free from here */
	mark_file(&v->base, v->spec_path);
	/* The spec, then the study's overrides, then the variant's, then its
	 * name: a map of one key, made like the others. */
	const struct ynode *root = merge(study, merge(study, v->base.root, study_set), set);
	struct ynode *named = root ? make_map(study, name, 1) : NULL;
	if (!named)
		return diag_file(c->d, c->path, "out of memory reading the study");
	static struct ynode name_key = {.kind = YNODE_SCALAR, .text = "name", .plain = true};
	named->keys[0] = &name_key;
	named->values[0] = (struct ynode *)name;
	named->count = 1;
	v->root = merge(study, root, named);
	if (!v->root)
		return diag_file(c->d, c->path, "out of memory reading the study");
	return spec_check_tree(&v->spec, study->path, v->root, c->d);
}

static int check_study(const struct checker *c, struct study *study, const char *specs_dir)
{
	static const char *const keys[] = {"name",       "title",      "base",    "set",
					   "seeds",      "train_limit", "test_limit", "variants"};
	const struct ynode *root = study->tree.root, *name, *variants, *set;
	char base_name[STUDY_SPEC_NAME_MAX + 1] = "", base_path[SPEC_PATH_MAX];
	if (expect_map(c, root, "the study") != 0 ||
	    check_keys(c, root, "the study", keys, COUNT(keys)) != 0 ||
	    require(c, root, "name", "the study", &name) != 0 ||
	    expect_scalar(c, name, "name", "a word such as table2-fmnist") != 0 ||
	    check_word(c, name, "name", SPEC_NAME_MAX, "my-study", study->name) != 0 ||
	    get_text(c, root, "title", STUDY_TITLE_MAX, study->title) != 0 ||
	    get_overrides(c, root, &set) != 0 || check_seeds(c, root, study) != 0 ||
	    get_integer(c, root, "train_limit", 1, 1000000000, 0, &study->train_limit) != 0 ||
	    get_integer(c, root, "test_limit", 1, 1000000000, 0, &study->test_limit) != 0)
		return -1;
	const struct ynode *base = ynode_get(root, "base");
	if (base && get_spec_name(c, base, specs_dir, base_name, base_path) != 0)
		return -1;
	if (require(c, root, "variants", "the study", &variants) != 0)
		return -1;
	if (variants->kind != YNODE_SEQ || variants->count == 0)
		return error_at(c, variants, "'variants' must be a list of variants, such as "
				"- {name: a-original, spec: paper/t2-a-original-110}");
	if (variants->count > STUDY_MAX_VARIANTS)
		return error_at(c, variants, "'variants' has %zu items; a study has at most %d",
				variants->count, STUDY_MAX_VARIANTS);
	for (size_t i = 0; i < variants->count; i++)
		if (check_variant(c, study, variants->values[i], base_name, specs_dir, set) != 0)
			return -1;
	return 0;
}

int study_load(struct study *study, const char *path, const char *specs_dir, struct diag *d)
{
	memset(study, 0, sizeof *study);
	if (strlen(path) >= sizeof study->path)
		return diag_file(d, "resgen", "study path is longer than %zu characters",
				 sizeof study->path - 1);
	snprintf(study->path, sizeof study->path, "%s", path);
	if (ytree_load(&study->tree, path, d) != 0)
		return -1;
	mark_file(&study->tree, study->path);
	struct checker c = {.path = study->path, .d = d};
	if (check_study(&c, study, specs_dir) != 0) {
		study_free(study);
		return -1;
	}
	return 0;
}

void study_free(struct study *study)
{
	for (int i = 0; i < study->variant_count; i++)
		ytree_free(&study->variants[i].base);
	for (size_t i = 0; i < study->made_count; i++) {
		free(study->made[i]->keys);
		free(study->made[i]->values);
		free(study->made[i]);
	}
	free(study->made);
	ytree_free(&study->tree);
	study->made = NULL;
	study->made_count = 0;
	study->variant_count = 0;
}

/* ---- writing a variant's spec ------------------------------------------------ */

/* Plain when the text is a word, a number or a path; double-quoted (with
 * escapes) otherwise, and whenever the study quoted it. */
static void write_scalar(struct strbuf *out, const struct ynode *node)
{
	bool plain = node->plain && node->text[0] != '\0';
	for (const char *p = node->text; plain && *p; p++)
		plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			(*p >= '0' && *p <= '9') || strchr("._/+-", *p);
	if (plain) {
		strbuf_puts(out, node->text);
		return;
	}
	strbuf_puts(out, "\"");
	for (const unsigned char *p = (const unsigned char *)node->text; *p; p++) {
		if (*p == '"' || *p == '\\')
			strbuf_printf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			strbuf_printf(out, "\\x%02x", *p);
		else
			strbuf_append(out, (const char *)p, 1);
	}
	strbuf_puts(out, "\"");
}

/* Lists, and anything inside them, in flow style: [16, 32, 64]. */
static void write_flow(struct strbuf *out, const struct ynode *node)
{
	if (node->kind == YNODE_SCALAR) {
		write_scalar(out, node);
		return;
	}
	bool map = node->kind == YNODE_MAP;
	strbuf_puts(out, map ? "{" : "[");
	for (size_t i = 0; i < node->count; i++) {
		strbuf_puts(out, i ? ", " : "");
		if (map) {
			write_scalar(out, node->keys[i]);
			strbuf_puts(out, ": ");
		}
		write_flow(out, node->values[i]);
	}
	strbuf_puts(out, map ? "}" : "]");
}

/* Mappings in block style, one key per line. */
static void write_block(struct strbuf *out, const struct ynode *map, int indent)
{
	for (size_t i = 0; i < map->count; i++) {
		const struct ynode *value = map->values[i];
		strbuf_printf(out, "%*s", indent, "");
		write_scalar(out, map->keys[i]);
		strbuf_puts(out, ":");
		if (value->kind == YNODE_MAP && value->count > 0) {
			strbuf_puts(out, "\n");
			write_block(out, value, indent + 2);
		} else {
			strbuf_puts(out, " ");
			write_flow(out, value);
			strbuf_puts(out, "\n");
		}
	}
}

void study_variant_text(const struct study *study, int v, struct strbuf *out)
{
	const struct study_variant *variant = &study->variants[v];
	char study_path[256], spec_path[256]; /* a comment is one line */
	printable_text(study_path, sizeof study_path, study->path);
	printable_text(spec_path, sizeof spec_path, variant->spec_path);
	strbuf_printf(out,
		      "# Variant '%s' of the study %s (%s): %s with the study's\n"
		      "# overrides. Written by resgen study; do not edit: edit the study.\n",
		      variant->name, study->name, study_path, spec_path);
	write_block(out, variant->root, 0);
}

long study_train_images(const struct study *study, int v)
{
	const struct spec *spec = &study->variants[v].spec;
	long images = spec->data.set == SET_SYNTHETIC ? spec->data.train_images
							: data_sets[spec->data.set].train_images;
	return study->train_limit && study->train_limit < images ? study->train_limit : images;
}

long study_test_images(const struct study *study, int v)
{
	const struct spec *spec = &study->variants[v].spec;
	long images = spec->data.set == SET_SYNTHETIC ? spec->data.test_images
							: data_sets[spec->data.set].test_images;
	return study->test_limit && study->test_limit < images ? study->test_limit : images;
}

/* A spec's network as text, its train section replaced by train's
 * (bn_sync aside, which changes the code): equal for two specs whose
 * binaries would differ in run-time settings alone. */
static char *code_text(const struct spec *spec, const struct spec *train)
{
	struct spec described = *spec;
	bool bn_sync = described.train.bn_sync;
	described.train = train->train;
	described.train.bn_sync = bn_sync;
	char *text = NULL;
	size_t length = 0;
	FILE *memory = open_memstream(&text, &length);
	if (!memory)
		return NULL;
	spec_describe_network(&described, memory);
	fclose(memory);
	return text;
}

/* The first variant whose binary variant v can run, given --set for the
 * train keys that differ: v itself unless an earlier one's spec differs
 * from v's in those keys alone. */
static int binary_of(const struct study *study, int v)
{
	const struct spec *spec = &study->variants[v].spec;
	for (int u = 0; u < v; u++) {
		const struct spec *other = &study->variants[u].spec;
		char *a = code_text(other, other), *b = code_text(spec, other);
		bool same = a && b && strcmp(a, b) == 0;
		free(a);
		free(b);
		if (same)
			return binary_of(study, u);
	}
	return v;
}

/* The spec variant v starts from, as its file holds it: 0, or -1. */
static int base_spec(const struct study_variant *variant, struct spec *base)
{
	struct diag d = {{0}};
	return spec_check_tree(base, variant->spec_path, variant->base.root, &d);
}

/* Whether variant v computes the network of the spec it starts from,
 * unchanged: then the binary make builds of that spec serves it. */
static bool runs_its_spec(const struct study *study, int v)
{
	const struct study_variant *variant = &study->variants[v];
	struct spec *base = calloc(1, sizeof *base);
	bool same = false;
	if (base && base_spec(variant, base) == 0) {
		char *a = code_text(base, &variant->spec), *b = code_text(&variant->spec, &variant->spec);
		same = a && b && strcmp(a, b) == 0;
		free(a);
		free(b);
	}
	free(base);
	return same;
}

/* The recipe the binary that runs variant v starts from: the spec's file
 * it was built from, which is the spec variant v starts from when make
 * links that spec's binary in its place (a reuse line), and the variant's
 * own spec otherwise. What differs from it is given to the run by --set. */
static void linked_recipe(const struct study *study, int binary, struct net_defaults *recipe)
{
	struct spec *base = calloc(1, sizeof *base);
	if (base && runs_its_spec(study, binary) && base_spec(&study->variants[binary], base) == 0)
		spec_recipe(base, recipe);
	else
		spec_recipe(&study->variants[binary].spec, recipe);
	free(base);
}

void study_plan_text(const struct study *study, struct strbuf *out)
{
	strbuf_printf(out, "name %s\nseeds", study->name);
	for (int i = 0; i < study->seed_count; i++)
		strbuf_printf(out, " %ld", study->seeds[i]);
	strbuf_puts(out, "\noptions");
	if (study->train_limit)
		strbuf_printf(out, " --train-limit %ld", study->train_limit);
	if (study->test_limit)
		strbuf_printf(out, " --test-limit %ld", study->test_limit);
	strbuf_puts(out, "\n");
	for (int v = 0; v < study->variant_count; v++) {
		const struct spec *spec = &study->variants[v].spec;
		int binary = binary_of(study, v);
		strbuf_printf(out, "variant %s %ld %ld %d %ld %s", spec->name, spec->train.iterations,
			      spec->train.eval_every, spec->train.batch, study_test_images(study, v),
			      study->variants[binary].name);
		/* what the binary's spec holds otherwise, as --set takes it */
		struct net_defaults own, binary_own;
		spec_recipe(spec, &own);
		linked_recipe(study, binary, &binary_own);
		char settings[1024];
		recipe_set_text(settings, sizeof settings, &own, recipe_differing(&own, &binary_own), true);
		strbuf_printf(out, "%s%s\n", settings[0] ? " " : "", settings);
	}
	for (int v = 0; v < study->variant_count; v++) {
		const struct study_variant *variant = &study->variants[v];
		if (!variant->threads && !variant->ranks && !variant->time[0])
			continue;
		char threads[16] = "-", ranks[16] = "-";
		if (variant->threads)
			snprintf(threads, sizeof threads, "%d", variant->threads);
		if (variant->ranks)
			snprintf(ranks, sizeof ranks, "%d", variant->ranks);
		strbuf_printf(out, "resources %s %s %s %s\n", variant->spec.name, threads, ranks,
			      variant->time[0] ? variant->time : "-");
	}
	for (int v = 0; v < study->variant_count; v++)
		if (binary_of(study, v) == v && runs_its_spec(study, v))
			strbuf_printf(out, "reuse %s %s\n", study->variants[v].name, study->variants[v].spec_name);
}
