/* The command line of every network binary. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_api.h"
#include "train.h"

static void print_help(const char *program)
{
	const struct net_defaults *d = &net_info.defaults;
	printf("%s: %s\n", net_info.name, net_info.summary);
	printf("input %dx%dx%d, %d classes, %ld parameters, %s arithmetic\n\n", net_info.channels,
	       net_info.height, net_info.width, net_info.classes, net_info.param_count, net_info.dtype);
	printf("usage: %s train [options]   train, evaluating on the test split as it goes\n"
	       "       %s step [options] --dump FILE\n"
	       "                               run steps on the first batch; write the first\n"
	       "                               step's input, labels, logits, loss, each unit's\n"
	       "                               output and input gradient, the parameter\n"
	       "                               gradients, and the final weights to FILE\n"
	       "       %s init --save-weights FILE [--seed S]\n"
	       "                               export the seeded initial weights\n"
	       "       %s info                 list the parameter tensors\n"
	       "       %s --help\n\n",
	       program, program, program, program, program);
	printf("Options (defaults come from the spec this binary was generated from):\n"
	       "  --data DIR           data folder (default %s)\n"
	       "  --synthetic          generated data of the network's input shape instead\n"
	       "  --iterations N       SGD steps (default %ld)\n"
	       "  --batch B            images per step (default %d)\n"
	       "  --threads T          threads (default: OMP_NUM_THREADS, else every core)\n"
	       "  --seed S             initialisation, shuffling and augmentation (default %ld)\n"
	       "  --log FILE.csv       metrics at every evaluation, as CSV\n"
	       "  --eval-every N       evaluate on the test split every N iterations (default %ld)\n"
	       "  --train-limit N      use only the first N training images\n"
	       "  --test-limit N       evaluate on only the first N test images\n"
	       "  --load-weights FILE  start from exported weights instead of a random start\n"
	       "  --save-weights FILE  export the weights at the end\n"
	       "  --steps K            step: how many steps (default 1)\n"
	       "  --dump FILE          step: where to write the dump\n\n",
	       d->data_dir[0] ? d->data_dir : "(none: synthetic)", d->iterations, d->batch, d->seed,
	       d->eval_every);
	printf("Schedule: lr %g (%g for the first %ld iterations), times %g at iterations",
	       d->lr_base, d->warmup_lr, d->warmup_iterations, d->lr_gamma);
	for (int i = 0; i < d->lr_step_count; i++)
		printf(" %ld", d->lr_steps[i]);
	printf("; momentum %g, weight decay %g;\naugmentation: %d-pixel pad and random crop%s.\n\n",
	       d->momentum, d->weight_decay, d->augment_pad,
	       d->augment_flip ? ", random horizontal flip" : "");
	printf("Data: CIFAR-10/100 in their binary versions (data_batch_1.bin... or train.bin,\n"
	       "test.bin), MNIST and Fashion-MNIST as IDX files, gzip-compressed or not.\n"
	       "Weights files hold named float64 tensors (see runtime/tensor_file.h).\n"
	       "Exit status: 0 done, 1 input/output failure, 2 bad arguments or data, 3 diverged.\n");
}

static int bad(const char *program, const char *option, const char *what)
{
	fprintf(stderr, "%s: %s %s; see %s --help\n", net_info.name, option, what, program);
	return 2;
}

static int parse_long(const char *text, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long value = strtol(text, &end, 10);
	if (text[0] == '\0' || *end != '\0' || errno == ERANGE || value < min || value > max)
		return -1;
	*out = value;
	return 0;
}

int main(int argc, char **argv)
{
	const char *program = argv[0];
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		print_help(program);
		return argc < 2 ? 2 : 0;
	}
	const char *command = argv[1];
	if (strcmp(command, "info") == 0) {
		printf("%s: %s, %s\n", net_info.name, net_info.summary, net_info.dtype);
		for (int i = 0; i < net_info.param_tensor_count; i++) {
			const struct net_param *p = &net_info.params[i];
			printf("%-48s %-18s %9ld%s\n", p->name, p->dims, p->count,
			       p->trained ? "" : "  (running statistic)");
		}
		return 0;
	}
	bool train = strcmp(command, "train") == 0, step = strcmp(command, "step") == 0,
	     init = strcmp(command, "init") == 0;
	if (!train && !step && !init)
		return bad(program, command, "is not a command (train, step, init, info)");

	const struct net_defaults *d = &net_info.defaults;
	struct run_options o = {
		.data_dir = d->data_dir,
		.iterations = d->iterations,
		.batch = d->batch,
		.seed = d->seed,
		.eval_every = d->eval_every,
		.steps = 1,
	};
	for (int i = 2; i < argc; i++) {
		const char *option = argv[i];
		const char *value = i + 1 < argc ? argv[i + 1] : NULL;
		long number;
		if (strcmp(option, "--synthetic") == 0) {
			o.synthetic = true;
			continue;
		}
		if (!value)
			return bad(program, option, "is not an option, or lacks its value");
		i++;
		if (strcmp(option, "--data") == 0) {
			o.data_dir = value;
		} else if (strcmp(option, "--log") == 0) {
			o.log_path = value;
		} else if (strcmp(option, "--save-weights") == 0) {
			o.save_weights = value;
		} else if (strcmp(option, "--load-weights") == 0) {
			o.load_weights = value;
		} else if (strcmp(option, "--dump") == 0) {
			o.dump_path = value;
		} else if (strcmp(option, "--iterations") == 0) {
			if (parse_long(value, 1, 1000000000, &o.iterations) != 0)
				return bad(program, option, "needs a whole number from 1 to 1000000000");
		} else if (strcmp(option, "--batch") == 0) {
			if (parse_long(value, 1, 4096, &number) != 0)
				return bad(program, option, "needs a whole number from 1 to 4096");
			o.batch = (int)number;
		} else if (strcmp(option, "--threads") == 0) {
			if (parse_long(value, 1, 1024, &number) != 0)
				return bad(program, option, "needs a whole number from 1 to 1024");
			o.threads = (int)number;
		} else if (strcmp(option, "--seed") == 0) {
			if (parse_long(value, 0, INT_MAX, &o.seed) != 0)
				return bad(program, option, "needs a whole number from 0 to 2147483647");
		} else if (strcmp(option, "--eval-every") == 0) {
			if (parse_long(value, 1, 1000000000, &o.eval_every) != 0)
				return bad(program, option, "needs a whole number from 1 to 1000000000");
		} else if (strcmp(option, "--train-limit") == 0) {
			if (parse_long(value, 1, 100000000, &o.train_limit) != 0)
				return bad(program, option, "needs a whole number from 1 to 100000000");
		} else if (strcmp(option, "--test-limit") == 0) {
			if (parse_long(value, 1, 100000000, &o.test_limit) != 0)
				return bad(program, option, "needs a whole number from 1 to 100000000");
		} else if (strcmp(option, "--steps") == 0) {
			if (parse_long(value, 1, 1000, &number) != 0)
				return bad(program, option, "needs a whole number from 1 to 1000");
			o.steps = (int)number;
		} else {
			return bad(program, option, "is not an option");
		}
	}
	if (step && !o.dump_path)
		return bad(program, "step", "needs --dump FILE");
	if (init && !o.save_weights)
		return bad(program, "init", "needs --save-weights FILE");
	return train ? train_run(&o) : step ? step_run(&o) : init_run(&o);
}
