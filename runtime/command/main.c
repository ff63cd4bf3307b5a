/* The command line of every network binary. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_agreement.h"
#include "data.h"
#include "file_replace.h"
#include "machine.h"
#include "net_api.h"
#include "printable.h"
#include "ranks.h"
#include "recipe.h"
#include "threads.h"
#include "train.h"
#include "version.h"

/* --set's entry of --help: the keys of the recipe's table (recipe.h), the
 * options among them last, wrapped as the other entries are. */
static void print_set_help(void)
{
	char text[2048];
	size_t used = (size_t)snprintf(text, sizeof text, "train, step and gradflow: change the recipe without a "
					"rebuild, with the spec's keys below train: and its notation:");
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < RECIPE_KEY_COUNT; i++) {
			const struct recipe_key *k = &recipe_keys[i];
			if ((k->kind == RECIPE_OPTION) != (pass == 1))
				continue;
			bool first_option = pass == 1 && recipe_keys[i - 1].kind != RECIPE_OPTION;
			used += (size_t)snprintf(text + used, sizeof text - used, "%s %s%s", i ? "," : "",
						 first_option ? "and " : "", k->name);
			if (k->note)
				used += (size_t)snprintf(text + used, sizeof text - used, " (%s)", k->note);
			if (i == RECIPE_KEY_COUNT - 1)
				used += (size_t)snprintf(text + used, sizeof text - used, " (as their options)");
		}
	snprintf(text + used, sizeof text - used, ". A run prints what was set and its checkpoints keep it; --resume "
			"takes it from the checkpoint");
	/* 23 columns of indent, lines of at most 79 */
	printf("  --set KEY=VALUE      ");
	int column = 23;
	for (const char *word = text; *word;) {
		int length = (int)strcspn(word, " ");
		if (column > 23 && column + 1 + length > 79) {
			printf("\n%23s", "");
			column = 23;
		} else if (column > 23) {
			putchar(' ');
			column++;
		}
		printf("%.*s", length, word);
		column += length;
		word += length;
		word += strspn(word, " ");
	}
	printf("\n");
}

static void print_help(const char *program)
{
	const struct net_defaults *d = &net_info.defaults;
	printf("%s: %s\n", net_info.name, net_info.summary);
	printf("input %dx%dx%d, %d classes, %ld parameters, %s arithmetic; built by resgen %s\n\n",
	       net_info.channels, net_info.height, net_info.width, net_info.classes, net_info.param_count,
	       net_info.dtype, resgen_version());
	printf("usage: %s train [options]   train, evaluating as it goes\n"
	       "       %s step [options] --dump FILE\n"
	       "                               run steps on the first batch; write the first\n"
	       "                               step's input, labels, logits, loss, each unit's\n"
	       "                               output and input gradient, the parameter\n"
	       "                               gradients, the final weights, and the first\n"
	       "                               batch's loss and logits in evaluation with\n"
	       "                               them (eval/loss, eval/logits) to FILE\n"
	       "       %s init --save-weights FILE [--seed S]\n"
	       "                               export the seeded initial weights\n"
	       "       %s gradflow --csv FILE [--iterations K] [--every N] [options]\n"
	       "                               the gradient's flow through the units: at\n"
	       "                               initialisation and every N of K training\n"
	       "                               iterations, per unit l on the first batch:\n"
	       "                               ||x_l||, ||x_l+1 - x_l|| (= ||F(x_l)|| for\n"
	       "                               identity shortcut and after-addition),\n"
	       "                               ||dL/dx_l|| and its ratio to ||dL/dx_L||\n"
	       "       %s evaluate --load-weights FILE [--split train|test|validation] [--confusion FILE.csv]\n"
	       "                     [--predictions FILE.csv] [--validation N]\n"
	       "                               measure saved weights (a weights file, or a\n"
	       "                               checkpoint's; BN by their running statistics):\n"
	       "                               error, top-5 error where there are more than 5\n"
	       "                               classes, loss, each class's error and the\n"
	       "                               confusion matrix (CSV; make plot-confusion\n"
	       "                               CONFUSION=FILE.csv draws it); --predictions:\n"
	       "                               a row for each image (index, label, predicted\n"
	       "                               class, each class's probability, a column a\n"
	       "                               class headed by its name). --split validation\n"
	       "                               --validation N: the last N training images, as\n"
	       "                               train --validation N held them out (with its\n"
	       "                               --train-limit, if it had one).\n"
	       "                               Inputs are normalised as the weights were\n"
	       "                               trained, by the statistics they keep (older\n"
	       "                               files: the training images', with the run's\n"
	       "                               --train-limit, if it had one)\n"
	       "       %s explain [--batch B] [--threads T]\n"
	       "                               what each convolution runs on this machine:\n"
	       "                               its algorithm for each pass, tiles, groups of\n"
	       "                               images, streaming, and why\n"
	       "       %s info                 list the parameter tensors\n"
	       "       %s --help\n\n",
	       program, program, program, program, program, program, program, program);
	printf("Options (defaults come from the spec this binary was generated from):\n"
	       "  --data DIR           data folder (default %s)\n"
	       "  --synthetic          generated data of the network's input shape instead\n"
	       "  --skip-bad-images    a folder of images: leave out and count the files that\n"
	       "                       cannot be decoded, rather than stop before training\n"
	       "  --iterations N       SGD steps (default %ld)\n"
	       "  --batch B            images per step (default %d)\n"
	       "  --threads T          threads (default: OMP_NUM_THREADS, else every core this\n"
	       "                       process may run on; under mpirun, per rank); while\n"
	       "                       other work keeps some cores busy, each pass runs on\n"
	       "                       as many of the T as are free\n"
	       "  --shares S           how many shares each pass cuts the images into, which\n"
	       "                       sets the result's bits (default: T). A checkpoint keeps\n"
	       "                       them: a resumed run gives the same bits on any --threads\n"
	       "                       (at most S run it)\n"
	       "  --seed S             initialisation, shuffling and augmentation (default %ld)\n"
	       "  --epochs N           the iterations of N passes over the training images\n"
	       "                       (or --set epochs=N), printed as both\n"
	       "  --log FILE.csv       the run as CSV, a row every --log-every iterations and at\n"
	       "                       every evaluation, each column of one meaning on every row:\n"
	       "                         iteration, lr          after the row's last step\n"
	       "                         train_loss, train_error  the mean over the row's\n"
	       "                                                iterations (since the row before)\n"
	       "                         val_loss, val_error    evaluation rows, with --validation\n"
	       "                         test_loss, test_error  evaluation rows (with --validation,\n"
	       "                                                the last row only)\n"
	       "                         seconds                the run's time so far\n"
	       "                         images_per_second      over the row's iterations\n"
	       "                       An empty field: not measured on that row\n"
	       "  --log-every N        (default: about 250 rows in the run; a resumed run\n"
	       "                       keeps its run's unless given)\n"
	       "  --eval-every N       evaluate every N iterations (default %ld), on the test\n"
	       "                       split (as the paper's curves) or with --validation on\n"
	       "                       the images held out, with BN's running averages, which\n"
	       "                       lag the weights early in a run: a deep network's test\n"
	       "                       loss may then be huge (ResNet-1001's after 2 steps:\n"
	       "                       about 1e27, PyTorch's too)\n"
	       "  --validation N       hold the last N training images out of training and\n"
	       "                       evaluate on them as the run goes; the test split is\n"
	       "                       evaluated once, at the end\n"
	       "  --keep-best FILE     keep the weights of the evaluation with the lowest error\n"
	       "                       so far in FILE (on the validation images with\n"
	       "                       --validation, else the test split's error)\n"
	       "  --train-limit N      use only the first N training images\n"
	       "  --test-limit N       evaluate on only the first N test images\n"
	       "  --load-weights FILE  start from exported weights (or a checkpoint's) instead of\n"
	       "                       a random start; train says how many tensors it loaded\n"
	       "  --fresh-classifier   with --load-weights: fine-tune to this spec's classes:\n"
	       "                       the classifier (head_fc_weight, head_fc_bias) keeps its\n"
	       "                       fresh initialisation, and the file's, for any number\n"
	       "                       of classes, is left out\n"
	       "  --freeze PARTS       train: keep these parts' weights and BN running\n"
	       "                       statistics bitwise as they began, a list of stem,\n"
	       "                       stageK (its units), stageK_unitNN and head:\n"
	       "                       --freeze stem,stage1 (backward stops before the frozen\n"
	       "                       parts that open the network; BN in them still\n"
	       "                       normalises by the batch's statistics). A checkpoint\n"
	       "                       keeps the list\n"
	       "  --save-weights FILE  export the weights at the end\n"
	       "  --checkpoint FILE    keep a checkpoint of the whole run in FILE, replaced\n"
	       "                       atomically; SIGINT or SIGTERM then writes one and exits 4\n"
	       "  --checkpoint-every N every N iterations (default: at every evaluation),\n"
	       "                       and at the end\n"
	       "  --resume FILE        continue the run FILE was written by, with its settings\n"
	       "                       (iterations, batch, seed, limits...; an option given\n"
	       "                       must agree), checkpointing to FILE unless --checkpoint;\n"
	       "                       the log given by --log is cut back to the checkpoint's\n"
	       "                       rows and continued. On any thread count (the run\n"
	       "                       keeps its --shares) the result is bitwise that of a\n"
	       "                       run never stopped\n"
	       "  --steps K            step: how many steps (default 1)\n"
	       "  --dump FILE          step: where to write the dump\n\n",
	       d->data_dir[0] ? d->data_dir : "(none: synthetic)", d->iterations, d->batch, d->seed,
	       d->eval_every);
	printf("Recipe: ");
	recipe_describe(stdout, d, d->iterations, net_info.height);
	printf(".\n");
	print_set_help();
	printf("  --resume C --iterations N\n"
	       "                       with N above the run's iterations extends the run: the\n"
	       "                       iterations done keep the rates they had, and the rest\n"
	       "                       follow the schedule of an N-iteration run (steps given as\n"
	       "                       fractions, and a cosine, are laid over N; steps given as\n"
	       "                       iterations stay where they are), as the run prints\n\n");
	printf("Across processes and machines: build/bin/mpi/NAME, the Open MPI flavour, run as\n"
	       "  mpirun -np P --bind-to core build/bin/mpi/NAME train [options]\n"
	       "trains on P ranks, each taking batch/P images of every batch (the images of\n"
	       "the one-process run) and summing gradients with MPI_Allreduce while backward\n"
	       "runs. BN's statistics are per rank, or over the whole batch with the spec's\n"
	       "train.bn_sync: true (this binary: %s). Rank 0 prints and writes the log,\n"
	       "checkpoints and weights; --resume needs the same P. This flavour: %s.\n\n",
	       d->bn_sync ? "true" : "false", ranks_flavour());
	printf("Data: CIFAR-10/100 in their binary versions (data_batch_1.bin... or train.bin,\n"
	       "test.bin), MNIST and Fashion-MNIST as IDX files, gzip-compressed or not;\n"
	       "ImageNet and any folder of images as DIR/train/CLASS/*.JPEG and\n"
	       "DIR/val/CLASS/*.JPEG (JPEG or PNG, colour, grey or CMYK), each training image\n"
	       "scaled to a shorter side drawn from [256, 480], cropped and flipped at random,\n"
	       "each evaluation image scaled to 256 and center-cropped (sizes for a 224 crop).\n"
	       "Weights files hold named float64 tensors (see runtime/run/tensor_file.h).\n"
	       "RESGEN_CHOICES overrides the kernels' choices for experiments, as\n"
	       "NAME=on|off|rule,... with NAME winograd, row_split, weight_split, swap or\n"
	       "stream (runtime/machine/machine.h); explain shows what it forced. RESGEN_TEAM=K runs\n"
	       "every pass on K of the threads (runtime/parallel/threads.h), for experiments.\n"
	       "RESGEN_ISA=avx2|avx512 forces the instruction set of resgen's kernels, which a\n"
	       "binary of the default build otherwise takes at start (the widest the processor\n"
	       "runs); every choice, with any BLIS kernels (BLIS_ARCH_TYPE), computes the same\n"
	       "bits (docs/cluster.md). The machine line of train, and explain, say which.\n"
	       "Exit status: 0 done, 1 input/output failure, 2 bad arguments, data or\n"
	       "checkpoint, 3 diverged, 4 stopped by a signal after writing a checkpoint.\n");
}

/* Every rank meets a bad argument alike; rank 0 says so, with what it
 * echoes made printable. */
static int bad(const char *program, const char *option, const char *what)
{
	if (ranks_rank() == 0)
		error_line("%s: %s %s; see %s --help\n", net_info.name, option, what, program);
	return 2;
}

/* A whole number in plain decimal: digits only, no sign, spaces or hex. */
static int parse_long(const char *text, long min, long max, long *out)
{
	char *end;
	errno = 0;
	if (!(text[0] >= '0' && text[0] <= '9'))
		return -1;
	long value = strtol(text, &end, 10);
	if (*end != '\0' || errno == ERANGE || value < min || value > max)
		return -1;
	*out = value;
	return 0;
}

/* The commands; INFO and HELP take no options. */
enum command { TRAIN = 1, STEP = 2, INIT = 4, GRADFLOW = 8, INFO = 16, HELP = 32, EXPLAIN = 64, EVALUATE = 128 };
static const char *const command_words[] = {"train", "step", "init", "gradflow", "info", "--help", "explain",
					    "evaluate"};
enum { COMMAND_COUNT = sizeof command_words / sizeof command_words[0] };

/* Every option, the commands that take it, and where its value goes. */
struct option {
	const char *name;
	int commands; /* TRAIN | STEP | INIT | GRADFLOW | EXPLAIN | EVALUATE */
	enum { FLAG, TEXT, NUMBER } kind;
	long min, max; /* NUMBER */
	size_t offset; /* into struct run_options */
	int size;      /* NUMBER: sizeof the field */
	unsigned setting; /* its enum run_setting bit: a checkpoint keeps it */
};

#define FIELD(name, kind_size) offsetof(struct run_options, name), kind_size
static const struct option options[] = {
	{"--data", TRAIN | GRADFLOW | STEP | EVALUATE, TEXT, 0, 0, FIELD(data_dir, 0), 0},
	{"--synthetic", TRAIN | GRADFLOW | STEP | EVALUATE, FLAG, 0, 0, FIELD(synthetic, 0), SETTING_SYNTHETIC},
	{"--skip-bad-images", TRAIN | GRADFLOW | STEP | EVALUATE, FLAG, 0, 0, FIELD(skip_bad_images, 0), 0},
	{"--iterations", TRAIN | GRADFLOW, NUMBER, 1, RECIPE_ITERATIONS_MAX, FIELD(iterations, sizeof(long)),
	 SETTING_ITERATIONS},
	{"--batch", TRAIN | GRADFLOW | STEP | EXPLAIN | EVALUATE, NUMBER, 1, RECIPE_BATCH_MAX,
	 FIELD(batch, sizeof(int)), SETTING_BATCH},
	{"--threads", TRAIN | GRADFLOW | STEP | EXPLAIN | EVALUATE, NUMBER, 1, 1024, FIELD(threads, sizeof(int)), 0},
	{"--shares", TRAIN | GRADFLOW | STEP, NUMBER, 1, 1024, FIELD(shares, sizeof(int)), 0},
	{"--seed", TRAIN | STEP | INIT | GRADFLOW | EVALUATE, NUMBER, 0, RECIPE_SEED_MAX, FIELD(seed, sizeof(long)),
	 SETTING_SEED},
	{"--log", TRAIN, TEXT, 0, 0, FIELD(log_path, 0), 0},
	{"--log-every", TRAIN, NUMBER, 1, 1000000000, FIELD(log_every, sizeof(long)), 0},
	{"--eval-every", TRAIN, NUMBER, 1, RECIPE_ITERATIONS_MAX, FIELD(eval_every, sizeof(long)), SETTING_EVAL_EVERY},
	{"--train-limit", TRAIN | GRADFLOW | EVALUATE, NUMBER, 1, 100000000, FIELD(train_limit, sizeof(long)),
	 SETTING_TRAIN_LIMIT},
	{"--test-limit", TRAIN | GRADFLOW | EVALUATE, NUMBER, 1, 100000000, FIELD(test_limit, sizeof(long)), SETTING_TEST_LIMIT},
	{"--validation", TRAIN | EVALUATE, NUMBER, 1, 100000000, FIELD(validation, sizeof(long)), 0},
	{"--epochs", TRAIN, NUMBER, 1, RECIPE_EPOCHS_MAX, FIELD(epochs, sizeof(long)), 0},
	{"--keep-best", TRAIN, TEXT, 0, 0, FIELD(keep_best, 0), 0},
	{"--checkpoint", TRAIN, TEXT, 0, 0, FIELD(checkpoint_path, 0), 0},
	{"--checkpoint-every", TRAIN, NUMBER, 1, 1000000000, FIELD(checkpoint_every, sizeof(long)),
	 SETTING_CHECKPOINT_EVERY},
	{"--resume", TRAIN, TEXT, 0, 0, FIELD(resume_path, 0), 0},
	{"--load-weights", TRAIN | STEP | GRADFLOW | EVALUATE, TEXT, 0, 0, FIELD(load_weights, 0), 0},
	{"--fresh-classifier", TRAIN | STEP | GRADFLOW, FLAG, 0, 0, FIELD(fresh_classifier, 0), 0},
	{"--freeze", TRAIN, TEXT, 0, 0, FIELD(freeze, 0), 0},
	{"--save-weights", TRAIN | STEP | INIT | GRADFLOW, TEXT, 0, 0, FIELD(save_weights, 0), 0},
	{"--steps", STEP, NUMBER, 1, 1000, FIELD(steps, sizeof(int)), 0},
	{"--dump", STEP, TEXT, 0, 0, FIELD(dump_path, 0), 0},
	{"--csv", GRADFLOW, TEXT, 0, 0, FIELD(gradflow_path, 0), 0},
	{"--every", GRADFLOW, NUMBER, 1, 1000000000, FIELD(gradflow_every, sizeof(long)), 0},
	{"--split", EVALUATE, TEXT, 0, 0, FIELD(split, 0), 0},
	{"--confusion", EVALUATE, TEXT, 0, 0, FIELD(confusion_path, 0), 0},
	{"--predictions", EVALUATE, TEXT, 0, 0, FIELD(predictions_path, 0), 0},
	{"--set", TRAIN | STEP | GRADFLOW, TEXT, 0, 0, 0, 0, 0}, /* parse_options reads it: recipe.h */
};

/* The index of the option called name in options[]. */
static size_t option_index(const char *name)
{
	size_t k = 0;
	while (strcmp(options[k].name, name) != 0)
		k++;
	return k;
}

/* "train, step and init": the commands that take an option. */
static const char *command_names(int commands, char *out, size_t size)
{
	int count = __builtin_popcount((unsigned)commands), listed = 0;
	out[0] = '\0';
	for (int i = 0; i < COMMAND_COUNT; i++)
		if (commands & (1 << i)) {
			size_t used = strlen(out);
			snprintf(out + used, size - used, "%s%s", listed == 0 ? "" : listed + 1 == count ? " and " : ", ",
				 command_words[i]);
			listed++;
		}
	return out;
}

/* argv[at] as the user wrote it, with its value: "--iterations 6" or
 * "--set iterations=4" (a flag alone). */
static const char *as_written(char **argv, int at, char *out, size_t size)
{
	size_t k = option_index(argv[at]);
	snprintf(out, size, "%.100s%s%.200s", argv[at], options[k].kind == FLAG ? "" : " ",
		 options[k].kind == FLAG ? "" : argv[at + 1]);
	return out;
}

/* Option k with its value (NULL for a flag), once, valid for the
 * command; written names how the user wrote it (the option, or --set
 * KEY=VALUE), argv[at] is where. seen: for each option, the argv index
 * where it was first given, 0 if not yet. 0 or the exit status. */
static int take_option(const char *program, enum command command, size_t k, const char *written, const char *value,
		       char **argv, int at, int *seen, struct run_options *o)
{
	const struct option *option = &options[k];
	char *field = (char *)o + option->offset;
	if (!(option->commands & (int)command)) {
		char what[160], names[96];
		snprintf(what, sizeof what, "is for %s, not for %s",
			 command_names(option->commands, names, sizeof names), command_words[__builtin_ctz((unsigned)command)]);
		return bad(program, written, what);
	}
	if (seen[k] && option->name == written && strcmp(argv[seen[k]], written) == 0)
		return bad(program, written, "is given twice; give it once");
	if (seen[k]) { /* once as the option, once by --set, named as written */
		char first[320], then[320], what[400];
		snprintf(what, sizeof what, "and %s both set %s; give one of them", as_written(argv, at, then, sizeof then),
			 option->name);
		return bad(program, as_written(argv, seen[k], first, sizeof first), what);
	}
	seen[k] = at;
	o->given |= option->setting;
	if (option->kind == FLAG) {
		*(bool *)field = true;
		return 0;
	}
	if (option->kind == TEXT) {
		if (value[0] == '\0')
			return bad(program, option->name, "needs a non-empty value");
		*(const char **)field = value;
		return 0;
	}
	long number;
	if (parse_long(value, option->min, option->max, &number) != 0) {
		char what[96];
		snprintf(what, sizeof what, "needs a whole number from %ld to %ld", option->min, option->max);
		return bad(program, written, what);
	}
	if (option->size == sizeof(int))
		*(int *)field = (int)number;
	else
		*(long *)field = number;
	return 0;
}

/* Options of PyTorch's and timm's training scripts, and what says the
 * same here. */
static const struct {
	const char *option, *here;
} habits[] = {
	{"--lr", "the learning rate is --set lr.base=RATE"},
	{"--learning-rate", "the learning rate is --set lr.base=RATE"},
	{"--sched", "the schedule is --set lr.schedule=steps or cosine"},
	{"--wd", "weight decay is --set weight_decay=VALUE"},
	{"--weight-decay", "weight decay is --set weight_decay=VALUE"},
	{"--momentum", "momentum is --set momentum=VALUE"},
	{"--batch-size", "the batch is --batch B"},
	{"-b", "the batch is --batch B"},
	{"--warmup-epochs", "the warm-up is --set lr.warmup.iterations=N"},
	{"--workers", "the data are read in the training threads; there are no workers to set"},
	{"-j", "the threads are --threads T"},
	{"--resume-from", "a run resumes with --resume FILE"},
};

enum { HELP_ASKED = -2 }; /* parse_options met --help or -h */

/* Each option once, valid for the command, and each --set; 0, HELP_ASKED,
 * or the exit status. */
static int parse_options(const char *program, enum command command, int argc, char **argv,
			 struct run_options *o)
{
	int seen[sizeof options / sizeof options[0]] = {0};
	for (size_t k = 0; k < sizeof options / sizeof options[0]; k++) /* how a checkpoint's messages spell them */
		if (options[k].setting)
			o->setting_spelling[__builtin_ctz(options[k].setting)] = options[k].name;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return HELP_ASKED;
		size_t k = 0;
		while (k < sizeof options / sizeof options[0] && strcmp(argv[i], options[k].name) != 0)
			k++;
		for (size_t h = 0; k == sizeof options / sizeof options[0] && h < sizeof habits / sizeof habits[0]; h++)
			if (strcmp(argv[i], habits[h].option) == 0) {
				if (ranks_rank() == 0)
					error_line("%s: %s is not an option; %s (see %s --help)\n", net_info.name, argv[i],
						   habits[h].here, program);
				return 2;
			}
		if (k == sizeof options / sizeof options[0])
			return bad(program, argv[i], "is not an option");
		if (options[k].kind != FLAG && i + 1 >= argc)
			return bad(program, argv[i], "lacks its value");
		const char *value = options[k].kind == FLAG ? NULL : argv[++i];
		if (strcmp(options[k].name, "--set") != 0) {
			int status = take_option(program, command, k, options[k].name, value, argv, i - (value != NULL), seen, o);
			if (status != 0)
				return status;
			continue;
		}
		if (!(options[k].commands & (int)command)) /* said as for any option */
			return take_option(program, command, k, options[k].name, value, argv, i - 1, seen, o);
		const char *option_name = NULL, *option_value = NULL;
		char error[512];
		int set = recipe_set(&o->recipe, value, &o->recipe_set, &option_name, &option_value, error, sizeof error);
		if (set < 0) {
			if (ranks_rank() == 0)
				error_line("%s: %s; see %s --help\n", net_info.name, error, program);
			return 2;
		}
		if (set == 1) { /* a key that is an option too: --set iterations=N is --iterations N */
			char written[320];
			snprintf(written, sizeof written, "--set %s", value);
			int status = take_option(program, command, option_index(option_name), written, option_value, argv,
						 i - 1, seen, o);
			if (status != 0)
				return status;
		}
	}
	size_t epochs = option_index("--epochs"), iterations = option_index("--iterations");
	if (seen[epochs] && seen[iterations]) {
		int at_first = seen[epochs] < seen[iterations] ? seen[epochs] : seen[iterations];
		int at_then = seen[epochs] < seen[iterations] ? seen[iterations] : seen[epochs];
		char first[320], then[320], what[400];
		snprintf(what, sizeof what, "and %s both set the run's length; give one of them",
			 as_written(argv, at_then, then, sizeof then));
		return bad(program, as_written(argv, at_first, first, sizeof first), what);
	}
	char error[512];
	if (recipe_check(&o->recipe, o->recipe_set, error, sizeof error) != 0) {
		if (ranks_rank() == 0)
			error_line("%s: %s; see %s --help\n", net_info.name, error, program);
		return 2;
	}
	return 0;
}

/* No two files of a run may be one: an output written over another, or
 * over an input (the weights loaded, the checkpoint resumed, the data),
 * would lose it. A checkpoint resumed is written again to the same file
 * unless --checkpoint names another, and that is the one pair allowed. */
static int check_files_apart(const char *program, const struct run_options *o)
{
	enum { DATA_FILES = 16 };
	struct named_file {
		const char *option, *path;
		bool output;
	} files[11 + DATA_FILES] = {
		{"--save-weights", o->save_weights, true}, {"--dump", o->dump_path, true},
		{"--checkpoint", o->checkpoint_path, true}, {"--log", o->log_path, true},
		{"--csv", o->gradflow_path, true},          {"--confusion", o->confusion_path, true},
		{"--predictions", o->predictions_path, true}, {"--keep-best", o->keep_best, true},
		{"--load-weights", o->load_weights, false}, {"--resume", o->resume_path, false},
	};
	int count = 10;
	char data[DATA_FILES][PATH_MAX];
	if (!o->synthetic && net_info.defaults.data_set != SET_SYNTHETIC) {
		struct data_request want = {.set = (enum data_set)net_info.defaults.data_set, .dir = o->data_dir};
		int found = data_files(&want, data[0], sizeof data[0], DATA_FILES);
		for (int i = 0; i < found; i++)
			files[count++] = (struct named_file){"the data file", data[i], false};
	}
	for (int i = 0; i < count; i++)
		for (int j = i + 1; j < count && files[i].path; j++) {
			if (!files[j].path || !(files[i].output || files[j].output) ||
			    (strcmp(files[i].option, "--checkpoint") == 0 && strcmp(files[j].option, "--resume") == 0) ||
			    !file_same(files[i].path, files[j].path))
				continue;
			char what[PATH_MAX + 128];
			snprintf(what, sizeof what, "%s names the same file as %s %s; give each its own file", files[i].path,
				 files[j].option, files[j].path);
			return bad(program, files[i].option, what);
		}
	return 0;
}

/* Reads the command line into *command and *o: -1 to go on and run the
 * command, else the exit status (0 once --help or info has printed). */
static int prepare(int argc, char **argv, enum command *command, struct run_options *o)
{
	const char *program = argv[0];
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		*command = HELP;
		print_help(program);
		return argc < 2 ? 2 : 0;
	}
	const char *name = argv[1];
	if (strcmp(name, "info") == 0) {
		*command = INFO;
		if (argc > 2)
			return bad(program, argv[2], "is not an option of info, which takes none");
		printf("%s: %s, %s\n", net_info.name, net_info.summary, net_info.dtype);
		for (int i = 0; i < net_info.param_tensor_count; i++) {
			const struct net_param *p = &net_info.params[i];
			printf("%-48s %-18s %9ld%s\n", p->name, p->dims, p->count,
			       p->trained ? "" : "  (running statistic)");
		}
		return 0;
	}
	enum command chosen = strcmp(name, "train") == 0      ? TRAIN
			      : strcmp(name, "step") == 0     ? STEP
			      : strcmp(name, "init") == 0     ? INIT
			      : strcmp(name, "gradflow") == 0 ? GRADFLOW
			      : strcmp(name, "explain") == 0  ? EXPLAIN
			      : strcmp(name, "evaluate") == 0 ? EVALUATE
							      : 0;
	if (!chosen)
		return bad(program, name, "is not a command (train, evaluate, step, init, gradflow, explain, info)");
	*command = chosen;
	if ((*command & (INIT | GRADFLOW | EXPLAIN | EVALUATE)) && ranks_count() > 1)
		return bad(program, name, "runs in one process; run it without mpirun (train and step split across ranks)");
	char why[512];
	if (*command != INIT && machine_override_error(why, sizeof why) != 0) {
		if (ranks_rank() == 0)
			error_line("%s: %s\n", net_info.name, why);
		return 2;
	}
	net_choose(); /* the instruction set (RESGEN_ISA refused here, exit 2) and the kernels' choices */

	const struct net_defaults *d = &net_info.defaults;
	*o = (struct run_options){
		.data_dir = d->data_dir,
		.iterations = d->iterations,
		.batch = d->batch,
		.seed = d->seed,
		.eval_every = d->eval_every,
		.steps = 1,
		.recipe = *d,
	};
	if (*command == GRADFLOW) /* at initialisation only, unless told to train */
		o->iterations = 0;
	int status = parse_options(program, *command, argc, argv, o);
	if (status == HELP_ASKED) {
		*command = HELP;
		print_help(program);
		return 0;
	}
	if (status != 0)
		return status;
	if (*command != INIT && threads_environment_error(o->threads, why, sizeof why) != 0) {
		if (ranks_rank() == 0)
			error_line("%s: %s\n", net_info.name, why);
		return 2;
	}
	if (*command == STEP && !o->dump_path)
		return bad(program, "step", "needs --dump FILE");
	if (*command == INIT && !o->save_weights)
		return bad(program, "init", "needs --save-weights FILE");
	if (*command == GRADFLOW && !o->gradflow_path)
		return bad(program, "gradflow", "needs --csv FILE");
	if (*command == EVALUATE && !o->load_weights)
		return bad(program, "evaluate", "needs --load-weights FILE, the weights to measure");
	if (o->split && strcmp(o->split, "train") != 0 && strcmp(o->split, "test") != 0 &&
	    strcmp(o->split, "validation") != 0)
		return bad(program, "--split", "needs train, test or validation");
	bool validation_split = o->split && strcmp(o->split, "validation") == 0;
	if (*command == EVALUATE && validation_split && !o->validation)
		return bad(program, "--split validation", "measures the training images a run held out with "
							 "--validation N; give the run's --validation N (and its "
							 "--train-limit, if it had one)");
	if (*command == EVALUATE && o->validation && !validation_split)
		return bad(program, "--validation", "locates the images a run held out, which only --split validation "
						    "measures; give --split validation, or leave --validation out");
	if (o->split && strcmp(o->split, "train") == 0 && (o->given & SETTING_TEST_LIMIT))
		return bad(program, "--test-limit", "limits the test split, which --split train does not measure; "
						    "give --train-limit N for the first N training images");
	/* options the command would pass over, refused rather than ignored */
	if (o->log_every && !o->log_path)
		return bad(program, "--log-every", "sets the rows of the log, and there is none; give --log FILE.csv too");
	if (*command == GRADFLOW && o->gradflow_every && o->iterations == 0)
		return bad(program, "--every", "measures every N training iterations, and gradflow trains none without "
					       "--iterations K");
	if (*command == EVALUATE && (o->given & SETTING_SEED) && !o->synthetic &&
	    net_info.defaults.data_set != SET_SYNTHETIC)
		return bad(program, "--seed", "draws synthetic data, and evaluate draws nothing at random on real data; "
					      "leave it out");
	if (*command == GRADFLOW && !o->gradflow_every)
		o->gradflow_every = o->iterations > 0 ? o->eval_every : 1;
	if (o->fresh_classifier && !o->load_weights)
		return bad(program, "--fresh-classifier", "initialises the classifier of weights loaded by --load-weights "
							  "FILE; give that too, or leave it out");
	if (o->resume_path && o->load_weights)
		return bad(program, "--load-weights", "cannot start a resumed run; give --resume or --load-weights");
	if (o->checkpoint_every && !o->checkpoint_path && !o->resume_path)
		return bad(program, "--checkpoint-every", "needs --checkpoint FILE");
	if (o->data_dir != d->data_dir && d->data_set == SET_SYNTHETIC)
		return bad(program, "--data", "is for a network trained on a data set; this one's data are synthetic "
					      "(its spec's data.set), so leave --data out");
	if (o->data_dir != d->data_dir && o->synthetic)
		return bad(program, "--data", "and --synthetic contradict each other; give one of them");
	/* Outputs that could not be written are found now, not after the run. */
	const char *outputs[] = {o->save_weights, o->dump_path, o->checkpoint_path ? o->checkpoint_path : o->resume_path,
				 o->confusion_path, o->predictions_path, o->keep_best, o->log_path, o->gradflow_path};
	for (int i = 0; i < 8; i++) {
		char error[PATH_MAX + 256];
		if (outputs[i] && (i >= 6 ? file_output_check : file_replace_check)(
					  outputs[i], error, sizeof error) != 0) {
			if (ranks_rank() == 0) /* every rank checks the same paths */
				error_line("%s: %s\n", net_info.name, error);
			return 1;
		}
	}
	status = check_files_apart(program, o);
	return status != 0 ? status : -1;
}

int main(int argc, char **argv)
{
	ranks_start(&argc, &argv);
	enum command command = HELP;
	struct run_options o = {0};
	int prepared = prepare(argc, argv, &command, &o);
	int status = ranks_agree_status(prepared > 0 ? prepared : 0);
	if (status == 0)
		status = agree_on_command(__builtin_ctz((unsigned)command), command_words, &o);
	if (status == 0 && prepared < 0)
		status = command == TRAIN || command == GRADFLOW ? train_run(&o)
			 : command == STEP			  ? step_run(&o)
			 : command == EXPLAIN			  ? explain_run(&o)
			 : command == EVALUATE			  ? evaluate_run(&o)
								  : init_run(&o);
	return ranks_stop(ranks_agree_status(status));
}
