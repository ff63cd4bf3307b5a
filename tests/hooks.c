/* The test builds' hooks into the training loop (runtime/train.h), which
 * replace its empty ones: the environment says when to act.
 *   RESGEN_TEST_RAISE=SIGNAL@K     raise SIGNAL once iteration K and its
 *                                  evaluation and checkpoint are done
 *                                  (SIGNAL@K/R: only in rank R)
 *   RESGEN_TEST_PERTURB=R@K        change one weight of rank R after
 *                                  iteration K's step */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "net_api.h"
#include "ranks.h"
#include "train.h"

void train_hook_checkpointed(long iteration)
{
	const char *text = getenv("RESGEN_TEST_RAISE");
	int signal, rank = -1;
	long at;
	if (text && sscanf(text, "%d@%ld/%d", &signal, &at, &rank) >= 2 && at == iteration &&
	    (rank < 0 || rank == ranks_rank()))
		raise(signal);
}

void train_hook_stepped(struct net_state *state, long iteration)
{
	const char *text = getenv("RESGEN_TEST_PERTURB");
	int rank;
	long at;
	if (text && sscanf(text, "%d@%ld", &rank, &at) == 2 && at == iteration && rank == ranks_rank())
		state->params[0] += 1;
}
