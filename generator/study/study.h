/* A study: variants of a network, each a spec of specs/ with overrides,
 * trained over several seeds (make study S=NAME). The study file is read
 * here with the spec's rules and errors; each variant becomes a checked
 * spec, and a spec file of its own that the usual pipeline builds. */
#ifndef RESGEN_STUDY_H
#define RESGEN_STUDY_H

#include <stdbool.h>

#include "diag.h"
#include "spec.h"
#include "strbuf.h"
#include "yaml_tree.h"

#define STUDY_MAX_VARIANTS 32
#define STUDY_MAX_SEEDS 16
#define STUDY_SPEC_NAME_MAX 96 /* paper/t2-a-original-110: a path under specs/ */
#define STUDY_PAPER_MAX 64
#define STUDY_TITLE_MAX 160
#define STUDY_TIME_MAX 16     /* a Slurm time limit: 7-00:00:00 */
#define STUDY_THREADS_MAX 1024
#define STUDY_RANKS_MAX 1024

struct study_variant {
	char name[SPEC_NAME_MAX + 1];
	char spec_name[STUDY_SPEC_NAME_MAX + 1]; /* the spec it starts from */
	char spec_path[SPEC_PATH_MAX];
	char paper[STUDY_PAPER_MAX + 1]; /* the paper's figure for this row, or "" */
	int against; /* the variant this one is compared with ('against'), or -1: the study's first */
	/* a cluster's task for each of its runs: 0 or "" for the submission's */
	int threads, ranks;
	char time[STUDY_TIME_MAX + 1];
	struct spec spec;                /* with the study's overrides, checked */
	struct ytree base;               /* the spec's tree */
	const struct ynode *root;        /* the spec's tree with the overrides */
};

struct study {
	char path[SPEC_PATH_MAX];
	char name[SPEC_NAME_MAX + 1];
	char title[STUDY_TITLE_MAX + 1];
	long seeds[STUDY_MAX_SEEDS];
	int seed_count;
	long train_limit, test_limit; /* 0: every image */
	int variant_count;
	struct study_variant variants[STUDY_MAX_VARIANTS];
	struct ytree tree;   /* the study file's */
	struct ynode **made; /* the nodes the overrides made, freed with the study */
	size_t made_count;
};

/* Reads and checks the study at path; spec names are looked up under
 * specs_dir. On failure fills d (FILE:LINE:COL of the study, or of the
 * spec a message is about) and returns -1, with nothing left to free. */
int study_load(struct study *study, const char *path, const char *specs_dir, struct diag *d);
void study_free(struct study *study);

/* Variant v's spec as a YAML file: where it came from, then the spec with
 * the study's overrides applied. */
void study_variant_text(const struct study *study, int v, struct strbuf *out);

/* The training images variant v draws from, and the test images each of
 * its evaluations runs on (the sets' sizes, or the study's limits). */
long study_train_images(const struct study *study, int v);
long study_test_images(const struct study *study, int v);

/* The runs, one fact per line, for tools/run-study: "name NAME",
 * "seeds S...", "options FLAGS...", then per variant "variant NAME
 * ITERATIONS EVAL_EVERY BATCH TEST_IMAGES BINARY [KEY=VALUE...]": BINARY
 * is the variant whose binary it runs, its own unless an earlier
 * variant's spec differs from its own in run-time train keys alone. make
 * builds each BINARY once; a last line "reuse BINARY SPEC" says that
 * BINARY's network is that of the spec it starts from (specs/SPEC.yaml),
 * whose binary make links in its place. The KEY=VALUE settings (--set)
 * are every run-time key in which the variant differs from the spec the
 * binary is built from (SPEC's, where it is reused): what the run trains
 * with is the plan's line, whichever binary runs it. A variant that
 * names its own cluster task (threads, ranks, time) has a line "resources
 * NAME THREADS RANKS TIME", '-' for what it leaves to the submission's
 * (tools/slurm-study). */
void study_plan_text(const struct study *study, struct strbuf *out);

#endif
