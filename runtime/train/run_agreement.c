/* What the ranks of a run compare, phase by phase; see run_agreement.h. */
#include "run_agreement.h"

#include <stdio.h>

#include "agreement.h"
#include "checksum.h"
#include "machine.h"
#include "net_api.h"
#include "printable.h"
#include "ranks.h"
#include "recipe.h"
#include "session.h"

/* RESGEN_CHOICES as one number: each of its choices' -1, 0 or 1 in two bits. */
static uint64_t override_key(void)
{
	const struct choice_override *o = &machine()->override;
	const signed char choices[] = {o->winograd, o->row_split, o->weight_split, o->swap, o->stream};
	uint64_t key = 0;
	for (size_t i = 0; i < sizeof choices; i++)
		key |= (uint64_t)(choices[i] + 1) << (2 * i);
	return key;
}

/* Under mpirun every rank runs the same command: a failure while reading
 * the command line is agreed on first, then the command, the network, the
 * kernels' override and what decides the ranks' course before training
 * meets them (the settings are compared again once a checkpoint has
 * filled them in: agree_on_settings). */
int agree_on_command(int command, const char *const *command_words, const struct run_options *o)
{
	const struct agreed values[] = {
		{"the command", (uint64_t)command, AGREED_WORD, command_words},
		{"the network (this binary's identity)", net_info.identity, AGREED_HASH, NULL},
		{"--checkpoint", o->checkpoint_path != NULL, AGREED_GIVEN, NULL},
		{"--resume", o->resume_path != NULL, AGREED_GIVEN, NULL},
		{"--load-weights", o->load_weights != NULL, AGREED_GIVEN, NULL},
		{"RESGEN_CHOICES (the kernels' choices)", override_key(), AGREED_HASH, NULL},
	};
	return ranks_agree_on(values, (int)(sizeof values / sizeof values[0]));
}

/* Before the first step, the ranks compare the settings (as a checkpoint
 * filled them in) and the data: ranks on other settings would sum the
 * gradients of other batches, or meet at other collectives and wait
 * forever. */
int agree_on_settings(const struct session *s, const struct run_options *o)
{
	double recipe[RECIPE_VALUES];
	recipe_pack(&o->recipe, recipe);
	const struct agreed values[] = {
		{"--set (the recipe)", checksum_add(CHECKSUM_BASIS, recipe, sizeof recipe), AGREED_HASH, NULL},
		{"--batch", (uint64_t)o->batch, AGREED_NUMBER, NULL},
		{"--iterations", (uint64_t)o->iterations, AGREED_NUMBER, NULL},
		{"--eval-every", (uint64_t)o->eval_every, AGREED_NUMBER, NULL},
		{"--checkpoint-every", (uint64_t)o->checkpoint_every, AGREED_NUMBER, NULL},
		{"--seed", (uint64_t)o->seed, AGREED_NUMBER, NULL},
		{"--train-limit", (uint64_t)o->train_limit, AGREED_NUMBER, NULL},
		{"--test-limit", (uint64_t)o->test_limit, AGREED_NUMBER, NULL},
		{"--validation", (uint64_t)o->validation, AGREED_NUMBER, NULL},
		{"--synthetic", o->synthetic, AGREED_GIVEN, NULL},
		{"--steps", (uint64_t)o->steps, AGREED_NUMBER, NULL},
		{"--shares (the shares of each pass, a checkpoint's on --resume)", (uint64_t)s->shares, AGREED_NUMBER, NULL},
		{"train.bn_sync", (uint64_t)net_info.defaults.bn_sync, AGREED_NUMBER, NULL},
		{"the data (a checksum of the images and labels)", s->data_identity, AGREED_HASH, NULL},
	};
	return ranks_agree_on(values, (int)(sizeof values / sizeof values[0]));
}

/* Then the weights they start from (loaded, resumed or seeded), and where
 * in the run they stand. */
int agree_on_start(const struct session *s, long iteration)
{
	const struct agreed values[] = {
		{"the iteration to start from (--resume)", (uint64_t)iteration, AGREED_NUMBER, NULL},
		{"the starting weights (--load-weights, --resume)", weights_checksum(&s->state), AGREED_HASH, NULL},
	};
	return ranks_agree_on(values, (int)(sizeof values / sizeof values[0]));
}

/* During the run (train.c calls it every CHECK_EVERY iterations and at
 * each evaluation), the ranks compare a checksum of their weights, momenta
 * and running statistics: they must be bitwise the same, and a run whose
 * ranks have drifted apart is stopped. */
int agree_during_run(const struct session *s, long iteration)
{
	if (s->ranks == 1)
		return 0;
	int differing;
	uint64_t theirs;
	if (ranks_agree(weights_checksum(&s->state), &differing, &theirs))
		return 0;
	if (s->rank == 0)
		error_line(
			"%s: after iteration %ld the weights of rank %d differ from rank 0's; the ranks must train "
			"in step, so the run stops (its last checkpoint is from before)\n",
			net_info.name, iteration, differing);
	return 1;
}
