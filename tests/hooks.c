/* The test builds' hooks into the training loop (runtime/train/train.h), which
 * replace its empty ones: the environment says when to act.
 *   RESGEN_TEST_RAISE=SIGNAL@K     raise SIGNAL once iteration K and its
 *                                  evaluation and checkpoint are done
 *                                  (SIGNAL@K/R: only in rank R)
 *   RESGEN_TEST_PERTURB=R@K        change one weight of rank R after
 *                                  iteration K's step
 *   RESGEN_TEST_PAUSE=K@FILE ...   once iteration K and its evaluation
 *                                  and checkpoint are done, if FILE does
 *                                  not exist yet, create it and wait (at
 *                                  most 150 s) for a signal, or for the
 *                                  test to write into FILE: the one run
 *                                  of many to get there first pauses;
 *                                  several K@FILE, by spaces
 *   RESGEN_TEST_PROGRESS=SECONDS   the seconds between the progress lines
 *                                  of a run whose stderr is no terminal */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "net_api.h"
#include "ranks.h"
#include "signals.h"
#include "train.h"

void train_hook_checkpointed(long iteration)
{
	const char *text = getenv("RESGEN_TEST_RAISE");
	int signal, rank = -1, path_at = 0;
	long at;
	if (text && sscanf(text, "%d@%ld/%d", &signal, &at, &rank) >= 2 && at == iteration &&
	    (rank < 0 || rank == ranks_rank()))
		raise(signal);
	for (text = getenv("RESGEN_TEST_PAUSE"); text && sscanf(text, "%ld@%n", &at, &path_at) == 1 && path_at > 0;) {
		char path[512];
		int length = (int)strcspn(text + path_at, " ");
		snprintf(path, sizeof path, "%.*s", length, text + path_at);
		text += path_at + length + (text[path_at + length] == ' ');
		int fd = at == iteration ? open(path, O_WRONLY | O_CREAT | O_EXCL, 0644) : -1;
		if (fd < 0)
			continue;
		close(fd);
		struct stat written = {0};
		for (int i = 0; i < 1500 && !signals_stop_noted() && (stat(path, &written) != 0 || written.st_size == 0); i++)
			nanosleep(&(struct timespec){0, 100000000}, NULL);
	}
}

void train_hook_stepped(struct net_state *state, long iteration)
{
	const char *text = getenv("RESGEN_TEST_PERTURB");
	int rank;
	long at;
	if (text && sscanf(text, "%d@%ld", &rank, &at) == 2 && at == iteration && rank == ranks_rank())
		state->params[0] += 1;
}

double train_hook_progress_seconds(double seconds)
{
	const char *text = getenv("RESGEN_TEST_PROGRESS");
	return text ? atof(text) : seconds;
}
