/* From a YAML tree to a checked spec. Every rule of specs/README.md is
 * enforced here, and every failure is one line naming the place, what is
 * wrong and what would be right. */
#include "spec.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "machine/bf16.h"
#include "net_api.h"
#include "real_text.h"
#include "recipe.h"
#include "schedule.h"
#include "check.h"
#include "yaml_tree.h"

static const char *const unit_names[] = {"basic", "bottleneck", "one-layer"};
static const char *const ordering_names[] = {"original", "bn-after-add", "relu-before-add",
					     "relu-only-preact", "full-preact"};
static const char *const shortcut_names[] = {"identity",        "scaling", "exclusive-gating",
					     "shortcut-gating", "conv1x1", "dropout"};
static const char *const projection_names[] = {"conv1x1", "zero-pad"};
static const char *const stem_names[] = {"cifar", "imagenet"};
static const char *const precision_names[] = {"f32", "bf16"};
/* runtime/machine/bf16.h's bf16_arithmetic_names, in its order */
static const char *const arithmetic_names[] = {"tiles", "pairs"};
_Static_assert(COUNT(arithmetic_names) == BF16_ARITHMETIC_COUNT, "an arithmetic of bf16.h has no name here");

const char *spec_set_name(enum data_set set) { return data_sets[set].name; }
const char *spec_unit_name(enum unit_kind unit) { return unit_names[unit]; }
const char *spec_ordering_name(enum ordering ordering) { return ordering_names[ordering]; }
const char *spec_shortcut_name(enum shortcut_kind shortcut) { return shortcut_names[shortcut]; }
const char *spec_projection_name(enum projection_kind p) { return projection_names[p]; }
const char *spec_stem_name(enum stem_kind stem) { return stem_names[stem]; }
const char *spec_arithmetic_name(int arithmetic) { return arithmetic_names[arithmetic]; }

const char *spec_precision_text(const struct spec *spec)
{
	if (spec->net.precision == PRECISION_F32)
		return "f32";
	return spec->net.arithmetic == BF16_TILES ? "bf16 (tiles)" : "bf16 (pairs)";
}

int spec_layers_per_unit(enum unit_kind unit)
{
	return unit == UNIT_BASIC ? 2 : unit == UNIT_BOTTLENECK ? 3 : 1;
}

static struct spec_position position_of(const struct ynode *node)
{
	return (struct spec_position){node->file, node->line, node->column};
}

const char *spec_position_file(const struct spec *spec, struct spec_position at)
{
	return at.file ? at.file : spec->path;
}

static int check_name(const struct checker *c, const struct ynode *root, struct spec *spec)
{
	const struct ynode *node;
	if (require(c, root, "name", "the spec", &node) != 0 ||
	    expect_scalar(c, node, "name", "a word such as preact-110") != 0)
		return -1;
	return check_word(c, node, "name", SPEC_NAME_MAX, "my-net", spec->name);
}

/* Three numbers of a channel each, [R, G, B], in [min, max] (min excluded
 * when min_open). */
static int get_channels(const struct checker *c, const struct ynode *node, const char *key, double min,
			bool min_open, double max, double *out)
{
	if (node->kind != YNODE_SEQ || node->count != 3)
		return error_at(c, node, "'%s' must be a list of 3 numbers, a channel each (red, green, blue), such as "
				"[0.485, 0.456, 0.406]", key);
	for (size_t i = 0; i < 3; i++)
		if (parse_real(c, node->values[i], key, min, min_open, max, &out[i]) != 0)
			return -1;
	return 0;
}

/* data.normalise, for folders of images: imagenet (the default), folder,
 * or {mean: [...], std: [...]} in pixels' 0..1 units. */
static int check_normalise(const struct checker *c, const struct ynode *data, struct spec *spec)
{
	spec->data.normalise = NORMALISE_IMAGENET;
	const struct ynode *node = ynode_get(data, "normalise");
	if (!node)
		return 0;
	if (!data_set_is_folder(spec->data.set))
		return error_at(c, node,
				"'normalise' is for folders of images (imagenet, folder); %s's inputs are normalised "
				"by its training images' channel statistics",
				data_set_names[spec->data.set]);
	if (node->kind == YNODE_MAP) {
		static const char *const keys[] = {"mean", "std"};
		const struct ynode *mean, *std;
		if (check_keys(c, node, "'normalise'", keys, COUNT(keys)) != 0 ||
		    require(c, node, "mean", "'normalise'", &mean) != 0 ||
		    require(c, node, "std", "'normalise'", &std) != 0 ||
		    get_channels(c, mean, "mean", 0, false, 1, spec->data.normalise_mean) != 0 ||
		    get_channels(c, std, "std", 0, true, 0.5, spec->data.normalise_std) != 0)
			return -1;
		spec->data.normalise = NORMALISE_GIVEN;
		return 0;
	}
	if (node->kind == YNODE_SCALAR && strcmp(node->text, "imagenet") == 0)
		return 0;
	if (node->kind == YNODE_SCALAR && strcmp(node->text, "folder") == 0) {
		spec->data.normalise = NORMALISE_FOLDER;
		return 0;
	}
	return error_at(c, node,
			"'normalise' must be imagenet (ImageNet's channel mean and deviation, torchvision's), folder "
			"(the training images' own channel statistics, computed when a run starts) or {mean: [R, G, B], "
			"std: [R, G, B]} in pixels' 0..1 units");
}

static int check_data(const struct checker *c, const struct ynode *root, struct spec *spec)
{
	static const char *const keys[] = {"set", "dir", "shape", "classes", "train_images",
					   "test_images", "crop", "normalise"};
	const struct ynode *data;
	if (require(c, root, "data", "the spec", &data) != 0 || expect_map(c, data, "data") != 0 ||
	    check_keys(c, data, "'data'", keys, COUNT(keys)) != 0)
		return -1;
	int set;
	if (get_choice(c, data, "'data'", "set", data_set_names, SET_COUNT, 0, &set) != 0)
		return -1;
	spec->data.set = (enum data_set)set;

	const struct data_set_info *info = &data_sets[set];
	bool synthetic = spec->data.set == SET_SYNTHETIC, folder = spec->data.set == SET_FOLDER;
	const struct ynode *dir = ynode_get(data, "dir");
	if (dir) {
		if (expect_scalar(c, dir, "dir", "a path") != 0)
			return -1;
		if (dir->text[0] == '\0' || strlen(dir->text) >= SPEC_DIR_MAX)
			return error_at(c, dir, "'dir' must be a path of 1 to %d characters",
					SPEC_DIR_MAX - 1);
		if (strpbrk(dir->text, "\"\\\n"))
			return error_at(c, dir, "'dir' must not contain quotes, backslashes or newlines");
		snprintf(spec->data.dir, sizeof spec->data.dir, "%s", dir->text);
	} else if (folder) {
		return error_at(c, data,
				"'data' is missing required key 'dir' (the folder that holds train/CLASS/ and "
				"val/CLASS/)");
	} else {
		snprintf(spec->data.dir, sizeof spec->data.dir, "%s", info->default_dir);
	}

	/* which keys a set takes beyond set and dir */
	static const char *const own_keys[] = {"shape", "classes", "train_images", "test_images", "crop"};
	const bool takes[][5] = {{true, true, true, true, false}, {false, true, false, false, true},
				 {false, false, false, false, true}};
	const bool *allowed = synthetic ? takes[0] : folder ? takes[1] : info->format == FORMAT_FOLDER ? takes[2] : NULL;
	for (int i = 0; i < COUNT(own_keys); i++) {
		const struct ynode *node = ynode_get(data, own_keys[i]);
		if (node && !(allowed && allowed[i]))
			return error_at(c, node, "'%s' is only for %s; %s %s", own_keys[i],
					i == 4 ? "folders of images (imagenet, folder)"
					: i == 1 ? "the synthetic and folder sets"
						 : "the synthetic set",
					data_set_names[set],
					folder ? "takes 'classes' and 'crop', its images of any size"
					: info->format == FORMAT_FOLDER ? "fixes its classes; 'crop' sets the input's size"
								   : "fixes its own shape and size");
	}
	if (dir && synthetic)
		return error_at(c, dir, "'dir' does not apply to the synthetic set, which is generated");

	spec->data.channels = info->channels;
	spec->data.height = spec->data.width = info->size;
	spec->data.classes = info->classes;
	if (info->format == FORMAT_FOLDER) {
		if (get_int(c, data, "crop", 16, 1024, info->size, &spec->data.crop) != 0)
			return -1;
		spec->data.height = spec->data.width = spec->data.crop;
		if (folder) {
			const struct ynode *classes;
			if (require(c, data, "classes", "'data'", &classes) != 0 ||
			    get_int(c, data, "classes", 2, 100000, 2, &spec->data.classes) != 0)
				return -1;
		}
	}
	if (check_normalise(c, data, spec) != 0)
		return -1;
	if (synthetic) {
		long shape[3] = {3, 32, 32};
		int count = 3;
		const struct ynode *node = ynode_get(data, "shape");
		if (node) {
			if (get_integer_list(c, node, "shape", 1, 1024, 3, shape, &count) != 0)
				return -1;
			if (count != 3)
				return error_at(c, node,
						"'shape' must be [channels, height, width], "
						"such as [3, 32, 32]");
			if (shape[0] > 16)
				return error_at(c, node->values[0],
						"'shape' has %ld channels; at most 16 are supported",
						shape[0]);
		}
		spec->data.channels = (int)shape[0];
		spec->data.height = (int)shape[1];
		spec->data.width = (int)shape[2];
		if (get_int(c, data, "classes", 2, 1000, 10, &spec->data.classes) != 0 ||
		    get_integer(c, data, "train_images", 1, 10000000, 10000,
				&spec->data.train_images) != 0 ||
		    get_integer(c, data, "test_images", 1, 10000000, 2000, &spec->data.test_images) != 0)
			return -1;
	}
	return 0;
}

/* The parameter blocks of the shortcut kinds; each only with its kind. */
static int check_shortcut_parameters(const struct checker *c, const struct ynode *net,
				     struct spec *spec)
{
	static const struct ynode empty = {.kind = YNODE_MAP};
	static const struct {
		const char *key;
		enum shortcut_kind kind;
		const char *kind_name;
	} blocks[] = {{"scaling", SHORTCUT_SCALING, "scaling"},
		      {"gating", SHORTCUT_EXCLUSIVE_GATING, "exclusive-gating or shortcut-gating"},
		      {"dropout", SHORTCUT_DROPOUT, "dropout"}};
	enum shortcut_kind kind = spec->net.shortcut;
	const struct ynode *found[3];
	for (int i = 0; i < 3; i++) {
		found[i] = ynode_get(net, blocks[i].key);
		bool applies = kind == blocks[i].kind ||
			       (blocks[i].kind == SHORTCUT_EXCLUSIVE_GATING &&
				kind == SHORTCUT_SHORTCUT_GATING);
		if (found[i] && !applies)
			return error_at(c, found[i],
					"'%s' applies only to 'shortcut: %s', and this spec's shortcut "
					"is %s; remove it or change the shortcut",
					blocks[i].key, blocks[i].kind_name, shortcut_names[kind]);
		if (!found[i])
			found[i] = &empty;
		else if (expect_map(c, found[i], blocks[i].key) != 0)
			return -1;
	}
	static const char *const scaling_keys[] = {"shortcut", "branch"};
	static const char *const gating_keys[] = {"bias"};
	static const char *const dropout_keys[] = {"rate"};
	if (check_keys(c, found[0], "'scaling'", scaling_keys, COUNT(scaling_keys)) != 0 ||
	    get_real(c, found[0], "shortcut", 0, false, 10, 0.5, &spec->net.scale_shortcut) != 0 ||
	    get_real(c, found[0], "branch", 0, false, 10, 1, &spec->net.scale_branch) != 0 ||
	    check_keys(c, found[1], "'gating'", gating_keys, COUNT(gating_keys)) != 0 ||
	    get_real(c, found[1], "bias", -100, false, 100, -6, &spec->net.gate_bias) != 0 ||
	    check_keys(c, found[2], "'dropout'", dropout_keys, COUNT(dropout_keys)) != 0 ||
	    get_real(c, found[2], "rate", 0, false, 0.99, 0.5, &spec->net.dropout_rate) != 0 ||
	    get_bool(c, net, "shortcut_bn", false, &spec->net.shortcut_bn) != 0)
		return -1;
	return 0;
}

static void nearest_depths(int per_depth, int depth, int *below, int *above)
{
	int n = (depth - 2) / per_depth;
	*below = n >= 1 ? per_depth * n + 2 : -1;
	*above = per_depth * (n + 1) + 2;
}

/* 'stages': the units of each stage, one a width; depth follows. */
static int check_stages(const struct checker *c, const struct ynode *stages, const struct ynode *widths,
			struct spec *spec)
{
	long units[SPEC_MAX_STAGES];
	int count = 0;
	if (get_integer_list(c, stages, "stages", 1, SPEC_MAX_DEPTH, SPEC_MAX_STAGES, units, &count) != 0)
		return -1;
	if (count != spec->net.stage_count)
		return error_at(c, stages,
				"'stages' gives %d stages but %s %d; give one width a stage "
				"(ResNet-50: stages [3, 4, 6, 3], widths [64, 128, 256, 512])",
				count, widths ? "'widths' has" : "the default widths [16, 32, 64] have",
				spec->net.stage_count);
	long layers = 2;
	for (int i = 0; i < count; i++) {
		spec->net.units[i] = (int)units[i];
		layers += spec_layers_per_unit(spec->net.unit) * units[i];
	}
	if (layers > SPEC_MAX_DEPTH)
		return error_at(c, stages,
				"'stages' makes a network of %ld layers, deeper than resgen builds: "
				"at most %d (the paper's deepest network has 1001)",
				layers, SPEC_MAX_DEPTH);
	spec->net.depth = (int)layers;
	spec->net.units_given = true;
	return 0;
}

/* Everything of 'net' that fixes the network's shape: its kinds, widths,
 * stem and units. */
static int check_net_shape(const struct checker *c, const struct ynode *net, struct spec *spec)
{
	static const char *const keys[] = {"unit",    "ordering", "depth",       "stages",     "widths",
					   "stem",    "shortcut", "scaling",     "gating",     "dropout",
					   "shortcut_bn", "projection", "precision", "arithmetic"};
	if (expect_map(c, net, "net") != 0 || check_keys(c, net, "'net'", keys, COUNT(keys)) != 0)
		return -1;
	int unit, ordering, shortcut, projection, stem, precision, arithmetic;
	const struct ynode *arithmetic_node = ynode_get(net, "arithmetic");
	static const char *const paths[] = {"amx", "avx512-bf16", "vdpbf16ps", "tdpbf16ps", "avx512", "avx2", "portable"};
	for (int i = 0; arithmetic_node && arithmetic_node->text && i < COUNT(paths); i++)
		if (strcmp(arithmetic_node->text, paths[i]) == 0)
			return error_at(c, arithmetic_node,
					"'arithmetic' is '%s', a way of computing, not an order of sums: 'tiles' (AMX's "
					"order, on every processor) or 'pairs' (vdpbf16ps's); RESGEN_BF16 picks a path at "
					"run time",
					paths[i]);
	if (get_choice(c, net, "'net'", "unit", unit_names, COUNT(unit_names), 0, &unit) != 0 ||
	    get_choice(c, net, "'net'", "ordering", ordering_names, COUNT(ordering_names), 0,
		       &ordering) != 0 ||
	    get_choice(c, net, NULL, "shortcut", shortcut_names, COUNT(shortcut_names),
		       SHORTCUT_IDENTITY, &shortcut) != 0 ||
	    get_choice(c, net, NULL, "projection", projection_names, COUNT(projection_names),
		       PROJECTION_CONV1X1, &projection) != 0 ||
	    get_choice(c, net, NULL, "stem", stem_names, COUNT(stem_names), STEM_CIFAR, &stem) != 0 ||
	    get_choice(c, net, NULL, "precision", precision_names, COUNT(precision_names), PRECISION_F32,
		       &precision) != 0 ||
	    get_choice(c, net, NULL, "arithmetic", arithmetic_names, COUNT(arithmetic_names), BF16_TILES,
		       &arithmetic) != 0)
		return -1;
	if (arithmetic_node && precision != PRECISION_BF16)
		return error_at(c, arithmetic_node,
				"'arithmetic' applies only to 'precision: bf16' (the order bf16 products are "
				"summed in), and this spec's precision is f32; remove it or add 'precision: bf16'");
	spec->net.precision = (enum precision)precision;
	spec->net.arithmetic = arithmetic;
	spec->net.stem = (enum stem_kind)stem;
	spec->net.unit = (enum unit_kind)unit;
	spec->net.ordering = (enum ordering)ordering;
	spec->net.shortcut = (enum shortcut_kind)shortcut;
	spec->net.projection = (enum projection_kind)projection;
	if (check_shortcut_parameters(c, net, spec) != 0)
		return -1;
	long widths[SPEC_MAX_STAGES] = {16, 32, 64};
	int stage_count = 3;
	const struct ynode *node = ynode_get(net, "widths");
	spec->net.widths_at = position_of(node ? node : net);
	if (node && get_integer_list(c, node, "widths", 1, 2048, SPEC_MAX_STAGES, widths,
				     &stage_count) != 0)
		return -1;
	spec->net.stage_count = stage_count;
	for (int i = 0; i < stage_count; i++)
		spec->net.widths[i] = (int)widths[i];

	const struct ynode *depth = ynode_get(net, "depth"), *stages = ynode_get(net, "stages");
	if (depth && stages)
		return error_at(c, stages,
				"'net' has both 'depth' and 'stages'; give one: 'depth' for the "
				"formula of equal stages, 'stages' for the units of each");
	if (stages)
		return check_stages(c, stages, node, spec);
	if (!depth)
		return error_at(c, net,
				"'net' is missing required key 'depth' (or 'stages': units per "
				"stage, such as [3, 4, 6, 3])");
	long value;
	if (parse_integer(c, depth, "depth", 1, 1000000000, &value) != 0)
		return -1;
	if (value > SPEC_MAX_DEPTH)
		return error_at(c, depth,
				"'depth' %ld is deeper than resgen builds: at most %d layers (the "
				"paper's deepest network has 1001)",
				value, SPEC_MAX_DEPTH);
	spec->net.depth = (int)value;
	int per_depth = spec_layers_per_unit(spec->net.unit) * stage_count;
	if (value < per_depth + 2 || (value - 2) % per_depth != 0) {
		int below, above;
		nearest_depths(per_depth, (int)value, &below, &above);
		char nearest_text[64];
		if (below > 0)
			snprintf(nearest_text, sizeof nearest_text, "the nearest valid depths are %d and %d",
				 below, above);
		else
			snprintf(nearest_text, sizeof nearest_text, "the smallest valid depth is %d", above);
		return error_at(c, depth,
				"'depth' %ld is not of the form %dn+2 for %s units in %d stages; %s",
				value, per_depth, unit_names[unit], stage_count, nearest_text);
	}
	for (int i = 0; i < stage_count; i++)
		spec->net.units[i] = (int)((value - 2) / per_depth);
	return 0;
}

static int check_net(const struct checker *c, const struct ynode *root, struct spec *spec)
{
	const struct ynode *net;
	if (require(c, root, "net", "the spec", &net) != 0 || check_net_shape(c, net, spec) != 0)
		return -1;
	if (spec->net.projection == PROJECTION_ZERO_PAD) {
		int expand = spec->net.unit == UNIT_BOTTLENECK ? 4 : 1;
		int previous = spec->net.widths[0]; /* the stem's width */
		for (int i = 0; i < spec->net.stage_count; i++) {
			if (spec->net.widths[i] * expand < previous)
				return diag_at(c->d, spec_position_file(spec, spec->net.widths_at),
					       spec->net.widths_at.line,
					       spec->net.widths_at.column,
					       "'projection: zero-pad' needs widths that never shrink, "
					       "but stage %d narrows from %d to %d channels; use "
					       "non-decreasing widths or 'projection: conv1x1'",
					       i + 1, previous, spec->net.widths[i] * expand);
			previous = spec->net.widths[i] * expand;
		}
	}
	return 0;
}

/* A key of the recipe, read from map by the last part of its name, with
 * the range and default of the recipe's table (runtime/shared/recipe.c),
 * which --set reads too. */
static const char *last_part(const char *name)
{
	const char *dot = strrchr(name, '.');
	return dot ? dot + 1 : name;
}

static int recipe_real(const struct checker *c, const struct ynode *map, const char *name, double *out)
{
	const struct recipe_key *k = recipe_key(name);
	return get_real(c, map, last_part(name), k->min, k->min_open, k->max, k->fallback, out);
}

static int recipe_integer(const struct checker *c, const struct ynode *map, const char *name, long *out)
{
	const struct recipe_key *k = recipe_key(name);
	return get_integer(c, map, last_part(name), (long)k->min, (long)k->max, (long)k->fallback, out);
}

static int recipe_int(const struct checker *c, const struct ynode *map, const char *name, int *out)
{
	const struct recipe_key *k = recipe_key(name);
	return get_int(c, map, last_part(name), (int)k->min, (int)k->max, (int)k->fallback, out);
}

static int check_lr(const struct checker *c, const struct ynode *train, struct spec *spec)
{
	spec->train.lr_base = recipe_key("lr.base")->fallback;
	spec->train.warmup_lr = recipe_key("lr.warmup.lr")->fallback;
	spec->train.warmup_iterations = (long)recipe_key("lr.warmup.iterations")->fallback;
	spec->train.lr_step_count = 2;
	spec->train.lr_steps[0] = 32000;
	spec->train.lr_steps[1] = 48000;
	spec->train.lr_step_fractions = false;
	spec->train.lr_gamma = recipe_key("lr.gamma")->fallback;
	const struct ynode *lr = ynode_get(train, "lr");
	const struct ynode *warmup = ynode_get(lr, "warmup"), *steps = ynode_get(lr, "steps");
	const struct ynode *warmup_place = ynode_get(warmup, "iterations");
	warmup_place = warmup_place ? warmup_place : warmup ? warmup : lr ? lr : train;
	const struct ynode *steps_place = steps ? steps : lr ? lr : train;
	spec->train.warmup_at = position_of(warmup_place);
	spec->train.steps_at = position_of(steps_place);
	if (!lr)
		return 0;
	static const char *const keys[] = {"base", "schedule", "warmup", "steps", "gamma"};
	if (expect_map(c, lr, "lr") != 0 || check_keys(c, lr, "'lr'", keys, COUNT(keys)) != 0 ||
	    recipe_real(c, lr, "lr.base", &spec->train.lr_base) != 0 ||
	    get_choice(c, lr, NULL, "schedule", lr_schedule_names, LR_SCHEDULE_COUNT,
		       (int)recipe_key("lr.schedule")->fallback, &spec->train.lr_schedule) != 0 ||
	    recipe_real(c, lr, "lr.gamma", &spec->train.lr_gamma) != 0)
		return -1;
	/* A cosine falls from base to 0 over the run after the warm-up: steps
	 * and their factor have no place in it. They are set aside, with a
	 * warning: a study's override may turn its base spec's steps into a
	 * cosine. */
	spec->train.steps_set_aside = spec->train.lr_schedule == LR_SCHEDULE_COSINE &&
				      (ynode_get(lr, "steps") || ynode_get(lr, "gamma"));
	if (warmup) {
		static const char *const warmup_keys[] = {"lr", "iterations"};
		if (expect_map(c, warmup, "warmup") != 0 ||
		    check_keys(c, warmup, "'warmup'", warmup_keys, COUNT(warmup_keys)) != 0 ||
		    recipe_real(c, warmup, "lr.warmup.lr", &spec->train.warmup_lr) != 0 ||
		    recipe_integer(c, warmup, "lr.warmup.iterations", &spec->train.warmup_iterations) != 0)
			return -1;
	}
	if (!steps) {
		if (spec->train.lr_schedule == LR_SCHEDULE_COSINE)
			spec->train.lr_step_count = 0;
		return 0;
	}
	/* Iterations ([32000, 48000]) or fractions of the run ([0.5, 0.75]),
	 * not both; a number written with a point or an exponent is a
	 * fraction. */
	if (steps->kind != YNODE_SEQ)
		return error_at(c, steps, RECIPE_STEPS_NOT_A_LIST, "steps", "[32000, 48000]", "[0.5, 0.75]");
	if (steps->count > SPEC_MAX_LR_STEPS)
		return error_at(c, steps, "'steps' has %zu items; it must have at most %d", steps->count,
				SPEC_MAX_LR_STEPS);
	spec->train.lr_step_count = (int)steps->count;
	for (size_t i = 0; i < steps->count; i++) {
		const struct ynode *node = steps->values[i];
		if (expect_scalar(c, node, "steps", "a number") != 0)
			return -1;
		bool fraction = strpbrk(node->text, ".eE") != NULL;
		if (i == 0)
			spec->train.lr_step_fractions = fraction;
		else if (fraction != spec->train.lr_step_fractions)
			return error_at(c, node, RECIPE_STEPS_MIXED, "steps", "[32000, 48000]", "[0.5, 0.75]");
		long whole;
		double *value = &spec->train.lr_steps[i];
		if (fraction ? parse_real(c, node, "steps", 0, true, 1, value) != 0
			     : parse_integer(c, node, "steps", 1, RECIPE_ITERATIONS_MAX, &whole) != 0)
			return -1;
		if (fraction && *value == 1)
			return error_at(c, node, RECIPE_STEPS_AT_THE_END, "steps");
		if (!fraction)
			*value = (double)whole;
		if (i > 0 && *value <= spec->train.lr_steps[i - 1])
			return error_at(c, node, RECIPE_STEPS_UNORDERED, "steps", node->text,
					(int)strlen(steps->values[i - 1]->text), steps->values[i - 1]->text);
	}
	if (spec->train.lr_schedule == LR_SCHEDULE_COSINE)
		spec->train.lr_step_count = 0;
	return 0;
}

const char *spec_lr_step_text(char out[32], const struct spec *spec, int i)
{
	if (spec->train.lr_step_fractions)
		return real_text(out, spec->train.lr_steps[i]);
	snprintf(out, 32, "%ld", (long)spec->train.lr_steps[i]);
	return out;
}

long spec_lr_step_at(const struct spec *spec, int i, long iterations)
{
	return schedule_step_at(spec->train.lr_steps[i], spec->train.lr_step_fractions, iterations);
}

void spec_describe_network(const struct spec *spec, FILE *out)
{
	struct spec described = *spec;
	described.name[0] = '\0';
	described.data.dir[0] = '\0';
	spec_describe(&described, out, "");
}

void spec_recipe(const struct spec *spec, struct net_defaults *recipe)
{
	*recipe = (struct net_defaults){
		.batch = spec->train.batch,
		.iterations = spec->train.iterations,
		.lr_base = spec->train.lr_base,
		.warmup_lr = spec->train.warmup_lr,
		.warmup_iterations = spec->train.warmup_iterations,
		.lr_schedule = spec->train.lr_schedule,
		.lr_step_count = spec->train.lr_step_count,
		.lr_step_fractions = spec->train.lr_step_fractions,
		.lr_gamma = spec->train.lr_gamma,
		.momentum = spec->train.momentum,
		.weight_decay = spec->train.weight_decay,
		.augment_pad = spec->train.augment_pad,
		.augment_flip = spec->train.augment_flip,
		.augment_aspect = spec->train.augment_aspect,
		.seed = spec->train.seed,
		.eval_every = spec->train.eval_every,
		.bn_sync = spec->train.bn_sync,
		.data_set = spec->data.set,
		.augment_scale = {spec->train.augment_scale[0], spec->train.augment_scale[1]},
		.normalise = spec->data.normalise,
	};
	memcpy(recipe->lr_steps, spec->train.lr_steps, sizeof recipe->lr_steps);
	memcpy(recipe->normalise_mean, spec->data.normalise_mean, sizeof recipe->normalise_mean);
	memcpy(recipe->normalise_std, spec->data.normalise_std, sizeof recipe->normalise_std);
}

int spec_warnings(const struct spec *spec, struct diag *warnings, int max)
{
	const struct schedule_facts facts = {
		spec->train.warmup_iterations, spec->train.warmup_lr, spec->train.lr_base, spec->train.lr_gamma,
		spec->train.lr_step_count,     spec->train.lr_steps,  spec->train.lr_step_fractions,
	};
	char texts[8][320];
	bool at_steps[8];
	int count = schedule_warnings(&facts, spec->train.iterations, texts, at_steps, max < 8 ? max : 8);
	if (spec->train.steps_set_aside && count < max && count < 8) {
		at_steps[count] = true;
		snprintf(texts[count++], sizeof texts[0],
			 "warning: the schedule is cosine, which falls from lr.base to 0 over the run: lr.steps and "
			 "lr.gamma are set aside");
	}
	for (int i = 0; i < count; i++) {
		struct spec_position at = at_steps[i] ? spec->train.steps_at : spec->train.warmup_at;
		diag_at(&warnings[i], spec_position_file(spec, at), at.line, at.column, "%s", texts[i]);
	}
	return count;
}

static int check_train(const struct checker *c, const struct ynode *root, struct spec *spec)
{
	static const char *const keys[] = {"batch",        "iterations", "lr",   "momentum",
					   "weight_decay", "augment",    "seed", "eval_every",
					   "bn_sync"};
	static const struct ynode empty = {.kind = YNODE_MAP};
	const struct ynode *train = ynode_get(root, "train");
	if (!train)
		train = &empty;
	if (expect_map(c, train, "train") != 0 ||
	    check_keys(c, train, "'train'", keys, COUNT(keys)) != 0 ||
	    recipe_int(c, train, "batch", &spec->train.batch) != 0 ||
	    recipe_integer(c, train, "iterations", &spec->train.iterations) != 0 ||
	    recipe_real(c, train, "momentum", &spec->train.momentum) != 0 ||
	    recipe_real(c, train, "weight_decay", &spec->train.weight_decay) != 0 ||
	    recipe_integer(c, train, "seed", &spec->train.seed) != 0 ||
	    recipe_integer(c, train, "eval_every", &spec->train.eval_every) != 0 ||
	    get_bool(c, train, "bn_sync", false, &spec->train.bn_sync) != 0 ||
	    check_lr(c, train, spec) != 0)
		return -1;
	/* Where a message about the batch points: the batch, else what sets the
	 * size it is compared with, else the train section or the spec. */
	const struct ynode *batch_place = ynode_get(train, "batch");
	if (!batch_place)
		batch_place = ynode_get(ynode_get(root, "data"), "train_images");
	if (!batch_place)
		batch_place = train != &empty ? train : root;
	spec->train.batch_at = position_of(batch_place);
	const struct ynode *augment = ynode_get(train, "augment");
	static const struct ynode no_augment = {.kind = YNODE_MAP};
	if (!augment)
		augment = &no_augment;
	static const char *const augment_keys[] = {"pad", "flip", "aspect", "scale"};
	if (expect_map(c, augment, "augment") != 0 ||
	    check_keys(c, augment, "'augment'", augment_keys, COUNT(augment_keys)) != 0 ||
	    recipe_int(c, augment, "augment.pad", &spec->train.augment_pad) != 0 ||
	    get_bool(c, augment, "flip", recipe_key("augment.flip")->fallback != 0, &spec->train.augment_flip) != 0)
		return -1;
	if (get_bool(c, augment, "aspect", false, &spec->train.augment_aspect) != 0)
		return -1;
	const struct ynode *aspect = ynode_get(augment, "aspect");
	if (aspect && !data_set_is_folder(spec->data.set))
		return error_at(c, aspect,
				"'aspect' is for folders of images (imagenet, folder), whose images come in any "
				"shape; %s's are padded and cropped ('pad')",
				data_set_names[spec->data.set]);
	const struct ynode *scale = ynode_get(augment, "scale");
	if (scale && !data_set_is_folder(spec->data.set))
		return error_at(c, scale,
				"'scale' is for folders of images (imagenet, folder), whose images are scaled; %s's are "
				"padded and cropped ('pad')",
				data_set_names[spec->data.set]);
	if (scale && spec->train.augment_aspect)
		return error_at(c, scale,
				"'scale' is the scale augmentation's range, and 'aspect: true' draws crops by area and "
				"aspect ratio instead; give one of them");
	if (scale) {
		int crop = spec->data.crop, count;
		long range[2];
		if (get_integer_list(c, scale, "scale", crop, 4L * crop, 2, range, &count) != 0)
			return -1;
		if (count != 2 || range[0] > range[1])
			return error_at(c, scale,
					"'scale' must be [shortest, longest]: the range the shorter side is drawn from, "
					"in pixels, from the crop (%d) up, such as [%d, %d]",
					crop, crop, (int)lround(1.5 * crop));
		spec->train.augment_scale[0] = (int)range[0];
		spec->train.augment_scale[1] = (int)range[1];
	}
	const struct ynode *pad = ynode_get(augment, "pad");
	if (pad && data_set_is_folder(spec->data.set))
		return error_at(c, pad,
				"'pad' is for the sets held in memory; %s's images are scaled to a shorter side drawn "
				"from [256, 480] and cropped (docs/imagenet.md), so leave it out",
				data_set_names[spec->data.set]);
	/* The binary draws each batch from the training set without repeats. */
	if (spec->data.set == SET_SYNTHETIC && spec->train.batch > spec->data.train_images)
		return error_at(c, batch_place,
				"'batch' %d is larger than the synthetic set's %ld training "
				"images; use a batch of at most %ld or more 'train_images'",
				spec->train.batch, spec->data.train_images, spec->data.train_images);
	return 0;
}

static int check_root(struct spec *spec, const char *path, const struct ynode *root,
		      struct diag *d)
{
	struct checker c = {.path = path, .d = d};
	static const char *const keys[] = {"name", "data", "net", "train"};
	int status = expect_map(&c, root, "the spec");
	if (status == 0)
		status = check_keys(&c, root, "the spec", keys, COUNT(keys));
	if (status == 0)
		status = check_name(&c, root, spec);
	if (status == 0)
		status = check_data(&c, root, spec);
	if (status == 0)
		status = check_net(&c, root, spec);
	if (status == 0)
		status = check_train(&c, root, spec);
	return status;
}

static int set_path(struct spec *spec, const char *path, struct diag *d)
{
	memset(spec, 0, sizeof *spec);
	if (strlen(path) >= SPEC_PATH_MAX)
		return diag_file(d, "resgen", "spec path is longer than %d characters", SPEC_PATH_MAX - 1);
	snprintf(spec->path, sizeof spec->path, "%s", path);
	return 0;
}

int spec_load(struct spec *spec, const char *path, struct diag *d)
{
	struct ytree tree;
	if (set_path(spec, path, d) != 0 || ytree_load(&tree, path, d) != 0)
		return -1;
	int status = check_root(spec, path, tree.root, d);
	ytree_free(&tree);
	return status;
}

int spec_parse(struct spec *spec, const char *path, const char *text, size_t length,
	       struct diag *d)
{
	struct ytree tree;
	if (set_path(spec, path, d) != 0 || ytree_parse(&tree, path, text, length, d) != 0)
		return -1;
	int status = check_root(spec, path, tree.root, d);
	ytree_free(&tree);
	return status;
}

int spec_check_tree(struct spec *spec, const char *path, const struct ynode *root, struct diag *d)
{
	if (set_path(spec, path, d) != 0)
		return -1;
	return check_root(spec, path, root, d);
}

void spec_describe(const struct spec *spec, FILE *out, const char *prefix)
{
	const char *p = prefix;
	char a[32], b[32], g[32];
	fprintf(out, "%sname: %s\n", p, spec->name);
	fprintf(out, "%sdata: set %s", p, data_set_names[spec->data.set]);
	if (spec->data.set == SET_SYNTHETIC)
		fprintf(out, ", shape [%d, %d, %d], classes %d, train_images %ld, test_images %ld\n",
			spec->data.channels, spec->data.height, spec->data.width, spec->data.classes,
			spec->data.train_images, spec->data.test_images);
	else
		fprintf(out, ", dir %s (input %dx%dx%d, %d classes)", spec->data.dir,
			spec->data.channels, spec->data.height, spec->data.width, spec->data.classes);
	/* ImageNet's normalisation said as it always was: not at all */
	if (spec->data.normalise == NORMALISE_FOLDER)
		fprintf(out, ", normalise folder");
	for (int i = 0; spec->data.normalise == NORMALISE_GIVEN && i < 6; i++)
		fprintf(out, "%s%s%s", i == 0 ? ", normalise mean [" : i == 3 ? "], std [" : ", ",
			real_text(a, i < 3 ? spec->data.normalise_mean[i] : spec->data.normalise_std[i - 3]),
			i == 5 ? "]" : "");
	if (spec->data.set != SET_SYNTHETIC)
		fprintf(out, "\n");
	fprintf(out, "%snet: unit %s, ordering %s, depth %d, widths [", p, unit_names[spec->net.unit],
		ordering_names[spec->net.ordering], spec->net.depth);
	for (int i = 0; i < spec->net.stage_count; i++)
		fprintf(out, "%s%d", i ? ", " : "", spec->net.widths[i]);
	fprintf(out, "]");
	/* the CIFAR networks' lines as they always were */
	for (int i = 0; spec->net.units_given && i < spec->net.stage_count; i++)
		fprintf(out, "%s%d", i ? ", " : ", stages [", spec->net.units[i]);
	if (spec->net.units_given)
		fprintf(out, "]");
	if (spec->net.stem != STEM_CIFAR)
		fprintf(out, ", stem %s", stem_names[spec->net.stem]);
	fprintf(out, ", shortcut %s", shortcut_names[spec->net.shortcut]);
	if (spec->net.shortcut == SHORTCUT_SCALING)
		fprintf(out, " (shortcut %s, branch %s)", real_text(a, spec->net.scale_shortcut),
			real_text(b, spec->net.scale_branch));
	else if (spec->net.shortcut == SHORTCUT_EXCLUSIVE_GATING ||
		 spec->net.shortcut == SHORTCUT_SHORTCUT_GATING)
		fprintf(out, " (bias %s)", real_text(a, spec->net.gate_bias));
	else if (spec->net.shortcut == SHORTCUT_DROPOUT)
		fprintf(out, " (rate %s)", real_text(a, spec->net.dropout_rate));
	fprintf(out, ", shortcut_bn %s, projection %s", spec->net.shortcut_bn ? "true" : "false",
		projection_names[spec->net.projection]);
	/* an f32 network's line as it always was */
	if (spec->net.precision != PRECISION_F32)
		fprintf(out, ", precision %s, arithmetic %s", precision_names[spec->net.precision],
			arithmetic_names[spec->net.arithmetic]);
	fprintf(out, "\n");
	fprintf(out, "%strain: batch %d, iterations %ld, momentum %s, weight_decay %s, seed %ld\n", p,
		spec->train.batch, spec->train.iterations, real_text(a, spec->train.momentum),
		real_text(b, spec->train.weight_decay), spec->train.seed);
	fprintf(out, "%slr: base %s, warmup %s for %ld iterations, gamma %s at [", p,
		real_text(a, spec->train.lr_base), real_text(b, spec->train.warmup_lr),
		spec->train.warmup_iterations, real_text(g, spec->train.lr_gamma));
	for (int i = 0; i < spec->train.lr_step_count; i++)
		fprintf(out, "%s%s", i ? ", " : "", spec_lr_step_text(a, spec, i));
	if (spec->train.lr_step_fractions)
		fprintf(out, "] of the run, at iterations [");
	for (int i = 0; spec->train.lr_step_fractions && i < spec->train.lr_step_count; i++)
		fprintf(out, "%s%ld", i ? ", " : "", spec_lr_step_at(spec, i, spec->train.iterations));
	fprintf(out, "]\n");
	if (spec->train.lr_schedule != LR_SCHEDULE_STEP) /* the step schedule's text as it always was */
		fprintf(out, "%slr: schedule %s\n", p, lr_schedule_names[spec->train.lr_schedule]);
	char scale[64] = "";
	if (spec->train.augment_scale[1])
		snprintf(scale, sizeof scale, ", scale [%d, %d]", spec->train.augment_scale[0], spec->train.augment_scale[1]);
	fprintf(out, "%saugment: pad %d, flip %s%s%s; eval_every %ld; bn_sync %s\n", p, spec->train.augment_pad,
		spec->train.augment_flip ? "true" : "false", spec->train.augment_aspect ? ", aspect true" : "", scale,
		spec->train.eval_every, spec->train.bn_sync ? "true" : "false");
}
