/* The checked spec: every field typed, ranged and defaulted, and where the
 * fields that later checks refer to came from. Stage 1 of the generator. */
#ifndef RESGEN_SPEC_H
#define RESGEN_SPEC_H

#include <stdbool.h>
#include <stdio.h>

#include "data_sets.h"
#include "diag.h"
#include "schedule.h"
#include "yaml_tree.h"

#define SPEC_NAME_MAX 48
#define SPEC_PATH_MAX 1024 /* the spec file's path */
#define SPEC_DIR_MAX 256   /* data.dir */
#define SPEC_MAX_STAGES 6
#define SPEC_MAX_LR_STEPS 16
/* The deepest network resgen builds: ResNet-1202, the deepest of He et al.
 * 2015, just past the paper's 1001. Emitted code grows with depth (1001
 * layers: 4 MB of C, about a minute to compile); far deeper specs are
 * typing mistakes, and depth 100000 would take hours to compile. */
#define SPEC_MAX_DEPTH 1202

enum unit_kind { UNIT_BASIC, UNIT_BOTTLENECK, UNIT_ONE_LAYER };
enum ordering {
	ORDER_ORIGINAL,         /* (a) conv-BN-ReLU-conv-BN, +, ReLU */
	ORDER_BN_AFTER_ADD,     /* (b) conv-BN-ReLU-conv, +, BN-ReLU */
	ORDER_RELU_BEFORE_ADD,  /* (c) conv-BN-ReLU-conv-BN-ReLU, + */
	ORDER_RELU_ONLY_PREACT, /* (d) ReLU-conv-BN-ReLU-conv-BN, + */
	ORDER_FULL_PREACT,      /* (e) BN-ReLU-conv-BN-ReLU-conv, + */
};
/* The shortcut h(x) of the paper's Fig. 2 / Table 1. */
enum shortcut_kind {
	SHORTCUT_IDENTITY,         /* x */
	SHORTCUT_SCALING,          /* a x, and the branch times b */
	SHORTCUT_EXCLUSIVE_GATING, /* (1 - g) x + g F, g = sigmoid(W_g x + b_g) */
	SHORTCUT_SHORTCUT_GATING,  /* (1 - g) x + F */
	SHORTCUT_CONV1X1,          /* a 1x1 convolution on every unit */
	SHORTCUT_DROPOUT,          /* non-inverted dropout of x */
};
enum projection_kind { PROJECTION_CONV1X1, PROJECTION_ZERO_PAD };
/* The layers before the first unit: a 3x3 convolution, BN and ReLU (the
 * CIFAR networks), or a 7x7 stride-2 convolution, BN, ReLU and a 3x3
 * stride-2 max pooling (the ImageNet networks of He et al. 2015). */
enum stem_kind { STEM_CIFAR, STEM_IMAGENET };
/* What the convolutions and the classifier multiply: the build's reals, or
 * bf16 operands whose exact products are summed in the build's reals, in
 * the order of an arithmetic (runtime/machine/bf16.h's enum bf16_arithmetic:
 * tiles, AMX's order, or pairs, vdpbf16ps's). */
enum precision { PRECISION_F32, PRECISION_BF16 };

struct spec_position {
	const char *file; /* NULL: the spec's own path; else a study file,
			   * which outlives the spec */
	int line, column;
};

struct spec {
	char path[SPEC_PATH_MAX];
	char name[SPEC_NAME_MAX + 1];
	struct {
		enum data_set set;
		char dir[SPEC_DIR_MAX]; /* the set's default when not given */
		int channels, height, width, classes;
		long train_images, test_images; /* synthetic only */
		int crop; /* folders of images: the side of the square crop the network takes */
		enum normalisation normalise; /* folders of images: data.normalise */
		double normalise_mean[3], normalise_std[3]; /* NORMALISE_GIVEN's, in pixels' 0..1 units */
	} data;
	struct {
		enum unit_kind unit;
		enum ordering ordering;
		int depth;
		int stage_count;
		int widths[SPEC_MAX_STAGES];
		int units[SPEC_MAX_STAGES]; /* per stage: from depth's formula, or 'stages' */
		bool units_given;           /* 'stages' written, not 'depth' */
		enum stem_kind stem;
		enum shortcut_kind shortcut;
		double scale_shortcut, scale_branch; /* scaling */
		double gate_bias;                    /* gating: b_g's initial value */
		double dropout_rate;                 /* dropout */
		bool shortcut_bn;                    /* a BN after every 1x1 shortcut conv */
		enum projection_kind projection;
		enum precision precision;
		int arithmetic; /* bf16: enum bf16_arithmetic */
		struct spec_position widths_at; /* for the zero-pad check, made after parsing */
	} net;
	struct {
		int batch;
		struct spec_position batch_at; /* the batch, or the train section, or the spec */
		long iterations;
		double lr_base;
		int lr_schedule; /* enum lr_schedule (schedule.h): step or cosine */
		bool steps_set_aside; /* a cosine, and steps or gamma given: warned of */
		double warmup_lr;
		long warmup_iterations;
		int lr_step_count;
		double lr_steps[SPEC_MAX_LR_STEPS]; /* iterations, or fractions of the run */
		bool lr_step_fractions;
		/* where the warm-up and the steps are set: the key, else the lr
		 * section, else the train section, else the spec (for warnings) */
		struct spec_position warmup_at, steps_at;
		double lr_gamma;
		double momentum;
		double weight_decay;
		int augment_pad;
		bool augment_flip;
		bool augment_aspect; /* folders of images: RandomResizedCrop's crops */
		int augment_scale[2]; /* folders of images: the shorter side's range at the crop; 0 0: the paper's */
		long seed;
		long eval_every;
		/* under mpirun: BN's statistics over the whole batch (true) or
		 * over each rank's part of it */
		bool bn_sync;
	} train;
};

/* The file a position lies in. */
const char *spec_position_file(const struct spec *spec, struct spec_position at);

/* Parses and checks the spec at path; on failure fills d and returns -1. */
int spec_load(struct spec *spec, const char *path, struct diag *d);

/* Checks a tree already parsed (a study's variant: its nodes name their
 * files); path becomes the spec's path. The tree stays the caller's. */
int spec_check_tree(struct spec *spec, const char *path, const struct ynode *root, struct diag *d);

/* The same for length bytes of text; path names them in messages. */
int spec_parse(struct spec *spec, const char *path, const char *text, size_t length,
	       struct diag *d);

/* Settings that are valid but probably not meant, as "FILE:LINE:COL:
 * warning: ..." lines in warnings (at most max); returns their count. A
 * warm-up that lasts the whole run, a rate step at or past its end. */
int spec_warnings(const struct spec *spec, struct diag *warnings, int max);

/* The spec's train section as a binary's defaults hold it (net_api.h),
 * for the recipe's words (runtime/shared/recipe.h). */
struct net_defaults;
void spec_recipe(const struct spec *spec, struct net_defaults *recipe);

/* Rate step i as the spec wrote it: an iteration (32000) or a fraction
 * (0.5), into out. */
const char *spec_lr_step_text(char out[32], const struct spec *spec, int i);

/* The iteration at which rate step i takes effect, in a run of iterations. */
long spec_lr_step_at(const struct spec *spec, int i, long iterations);

/* Weighted layers of one unit (3 in a bottleneck); depth = layers a unit
 * times the units + 2. */
int spec_layers_per_unit(enum unit_kind unit);

/* The spelling of each enum value in a spec. */
const char *spec_set_name(enum data_set set);
const char *spec_unit_name(enum unit_kind unit);
const char *spec_ordering_name(enum ordering ordering);
const char *spec_shortcut_name(enum shortcut_kind shortcut);
const char *spec_projection_name(enum projection_kind projection);
const char *spec_stem_name(enum stem_kind stem);
const char *spec_arithmetic_name(int arithmetic);
/* "f32", or "bf16 (tiles)": the precision and its arithmetic, in words. */
const char *spec_precision_text(const struct spec *spec);

/* Writes every resolved value, one "key: value" per line, each line
 * starting with prefix; used for the comment atop emitted files. */
void spec_describe(const struct spec *spec, FILE *out, const char *prefix);
/* The same, its name and data folder aside: what the network computes
 * and trains with, wherever its spec and data live. */
void spec_describe_network(const struct spec *spec, FILE *out);

#endif
