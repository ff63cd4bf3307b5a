/* A process alone: one rank, and every sum across the ranks is the value
 * itself. See ranks.h; ranks_mpi.c is the flavour under mpirun. */
#include "ranks.h"

#include <stddef.h>

void ranks_start(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
}

int ranks_stop(int status) { return status; }
int ranks_count(void) { return 1; }
int ranks_rank(void) { return 0; }
const char *ranks_flavour(void) { return "one process"; }
void ranks_add(double *values, int count)
{
	(void)values;
	(void)count;
}

int ranks_max(int value) { return value; }
int ranks_agree_status(int status) { return status; }

int ranks_agree(uint64_t value, int *first_different, uint64_t *its_value)
{
	*first_different = -1;
	*its_value = value;
	return 1;
}

void ranks_gradients_begin(real *grads, long count)
{
	(void)grads;
	(void)count;
}

void ranks_gradients_ready(long from) { (void)from; }
void ranks_gradients_end(void) {}
struct ranks_timing ranks_timing(void) { return (struct ranks_timing){0}; }

double ranks_gradients_alone(real *grads, long count, int repeats)
{
	(void)grads;
	(void)count;
	(void)repeats;
	return 0;
}
