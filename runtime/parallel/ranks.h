/* The processes of a data-parallel run: the one door to MPI. Each binary
 * comes in two flavours that differ only here: ranks.c, a process alone
 * (one rank, nothing to send: build/bin/NAME), and ranks_mpi.c, Open MPI's
 * ranks under mpirun (build/bin/mpi/NAME). The training loop calls the same
 * functions in both. */
#ifndef RESGEN_RANKS_H
#define RESGEN_RANKS_H

#include <stdint.h>

#include "real.h"

/* The first and the last call of main; ranks_start may change argc and
 * argv, and sends the output of ranks other than 0 to /dev/null (their
 * errors still show). ranks_stop(status) returns main's exit status. A
 * failure the ranks have not agreed on (ranks_agree_status) ends the whole
 * job there and then, so that one failing rank never leaves the others
 * waiting. */
void ranks_start(int *argc, char ***argv);
int ranks_stop(int status);

int ranks_count(void);
int ranks_rank(void);
/* Which flavour this is, for --help and the run's first lines. */
const char *ranks_flavour(void);

/* Sums count doubles across the ranks, in place; every rank gets the same
 * sums. Alone it leaves them as they are. */
void ranks_add(double *values, int count);
/* The largest of each rank's value. */
int ranks_max(int value);
/* A status every rank agrees on: the first non-zero of any rank's, in rank
 * order, so that a failure anywhere stops every rank at the same point;
 * ranks_stop then ends the job quietly. Every rank must call it at the same
 * point; once a failure is agreed, it returns at once. */
int ranks_agree_status(int status);
/* Whether every rank holds the same value; *first_different: the lowest
 * rank whose value differs from rank 0's (-1 if none), and *its_value
 * that rank's value. */
int ranks_agree(uint64_t value, int *first_different, uint64_t *its_value);

/* Parameter gradients, summed across the ranks while backward still runs.
 * ranks_gradients_begin(grads, count) before backward; ranks_gradients_ready
 * (from) each time grads[from .. count) are final (backward finishes
 * parameters last to first): the buckets that completes start their sums,
 * and those already started move on. ranks_gradients_end waits for the
 * rest. Buckets are fixed by the parameters' layout, so every step sums the
 * same pieces in the same order. */
void ranks_gradients_begin(real *grads, long count);
void ranks_gradients_ready(long from);
void ranks_gradients_end(void);

/* What the gradient sums cost (printed at the end of a run of several
 * ranks, and by make bench-mpi), over steps steps of reals_per_step reals:
 * the time waited in ranks_gradients_end, summed over the steps, by the
 * rank that waited least in each step (the last to finish backward, which
 * waits only for what backward did not hide) and by the one that waited
 * most (which waits for the slowest rank too). */
struct ranks_timing {
	double least_waited, most_waited;
	long steps, reals_per_step;
};
struct ranks_timing ranks_timing(void);
/* The seconds one step's sums take with nothing else to do: the same
 * buckets, started all at once, repeats times, averaged. */
double ranks_gradients_alone(real *grads, long count, int repeats);

#endif
