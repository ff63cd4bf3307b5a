/* Open MPI's ranks (see ranks.h): the only file that calls MPI. Every call
 * comes from the thread that called main, outside the parallel regions
 * (MPI_THREAD_FUNNELED). Errors in MPI itself abort the job (the default
 * handler), as does a rank that dies: mpirun then ends the others. */
#include "ranks.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef RESGEN_F64
#define MPI_REAL_TYPE MPI_DOUBLE
#else
#define MPI_REAL_TYPE MPI_FLOAT
#endif

/* Gradient buckets of this many reals (the last one may be smaller): small
 * enough that the first sums start while most of backward is still to run,
 * large enough that each is worth a message. */
enum { BUCKET_REALS = 1 << 18, MAX_BUCKETS = 4096 };

static int rank, count = 1, agreed_failure;

static struct {
	real *grads;
	long reals;
	int buckets, started;
	MPI_Request requests[MAX_BUCKETS];
	double least_waited, most_waited; /* summed over the steps */
	long steps;
} sums;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void ranks_start(int *argc, char ***argv)
{
	int provided;
	MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &count);
	if (rank > 0 && !freopen("/dev/null", "w", stdout))
		fclose(stdout);
}

int ranks_stop(int status)
{
	if (status != 0 && count > 1 && !agreed_failure) {
		fflush(NULL);
		MPI_Abort(MPI_COMM_WORLD, status);
	}
	MPI_Finalize();
	return status;
}

int ranks_count(void) { return count; }
int ranks_rank(void) { return rank; }
const char *ranks_flavour(void) { return "Open MPI"; }

void ranks_add(double *values, int n)
{
	if (count > 1)
		MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

int ranks_max(int value)
{
	if (count > 1)
		MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	return value;
}

int ranks_agree_status(int status)
{
	/* Once a failure is agreed every rank is on its way out: a rank that
	 * failed before train_run met the others' first agreement in train_run
	 * with its agreement in main, and must not be waited for again. */
	if (count == 1 || agreed_failure)
		return status;
	int *all = malloc((size_t)count * sizeof *all);
	if (!all) {
		fprintf(stderr, "out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Allgather(&status, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	status = 0;
	for (int r = 0; r < count && status == 0; r++)
		status = all[r];
	free(all);
	agreed_failure = status != 0;
	return status;
}

int ranks_agree(uint64_t value, int *first_different, uint64_t *its_value)
{
	*first_different = -1;
	*its_value = value;
	if (count == 1)
		return 1;
	uint64_t *all = malloc((size_t)count * sizeof *all);
	if (!all) {
		fprintf(stderr, "out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Allgather(&value, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
	for (int r = 1; r < count && *first_different < 0; r++)
		if (all[r] != all[0]) {
			*first_different = r;
			*its_value = all[r];
		}
	free(all);
	return *first_different < 0;
}

/* Bucket b holds the reals [start, end) counted back from the end of the
 * gradients, the order in which backward finishes them. */
static long bucket_start(int b)
{
	long start = sums.reals - (long)(b + 1) * BUCKET_REALS;
	return start > 0 ? start : 0;
}

void ranks_gradients_begin(real *grads, long reals)
{
	if (count == 1)
		return;
	sums.grads = grads;
	sums.reals = reals;
	sums.buckets = (int)((reals + BUCKET_REALS - 1) / BUCKET_REALS);
	if (sums.buckets > MAX_BUCKETS) {
		fprintf(stderr, "%ld parameters are more than %d gradient buckets hold\n", reals, MAX_BUCKETS);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	sums.started = 0;
}

void ranks_gradients_ready(long from)
{
	if (count == 1)
		return;
	while (sums.started < sums.buckets && bucket_start(sums.started) >= from) {
		long start = bucket_start(sums.started);
		long end = sums.reals - (long)sums.started * BUCKET_REALS;
		MPI_Iallreduce(MPI_IN_PLACE, sums.grads + start, (int)(end - start), MPI_REAL_TYPE, MPI_SUM,
			       MPI_COMM_WORLD, &sums.requests[sums.started]);
		sums.started++;
	}
	/* Open MPI moves non-blocking operations on only inside its calls. */
	int done;
	if (sums.started > 0)
		MPI_Testall(sums.started, sums.requests, &done, MPI_STATUSES_IGNORE);
}

void ranks_gradients_end(void)
{
	if (count == 1)
		return;
	double started = now();
	ranks_gradients_ready(0);
	MPI_Waitall(sums.started, sums.requests, MPI_STATUSES_IGNORE);
	/* the ranks leave together; a few microseconds more to learn how long
	 * the last of them to finish backward waited, and the first */
	double waited[2] = {now() - started}, extremes[2];
	waited[1] = -waited[0];
	MPI_Allreduce(waited, extremes, 2, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
	sums.least_waited += extremes[0];
	sums.most_waited -= extremes[1];
	sums.steps++;
}

struct ranks_timing ranks_timing(void)
{
	return (struct ranks_timing){sums.least_waited, sums.most_waited, sums.steps, count > 1 ? sums.reals : 0};
}

double ranks_gradients_alone(real *grads, long reals, int repeats)
{
	if (count == 1 || repeats < 1)
		return 0;
	double least = sums.least_waited, most = sums.most_waited;
	long steps = sums.steps;
	MPI_Barrier(MPI_COMM_WORLD);
	double started = now();
	for (int i = 0; i < repeats; i++) {
		ranks_gradients_begin(grads, reals);
		ranks_gradients_end();
	}
	double seconds = (now() - started) / repeats;
	sums.least_waited = least;
	sums.most_waited = most;
	sums.steps = steps;
	return seconds;
}
