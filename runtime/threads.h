/* Who owns the cores. OpenMP and BLIS both read OMP_NUM_THREADS; left alone
 * they would nest and oversubscribe. Here the emitted kernels' OpenMP loops
 * own every core (they split the batch, the channels or the elements), and
 * BLIS runs single-threaded inside them. */
#ifndef RESGEN_THREADS_H
#define RESGEN_THREADS_H

/* How long a thread that waits for the others (at a barrier, or between
 * parallel regions) spins before it sleeps, in libgomp's pauses: a few
 * microseconds, against libgomp's 300000 (milliseconds). On a shared
 * machine the thread waited for may be the one the operating system set
 * aside; a waiter that spins through its time slice holds the core that
 * thread could run on (docs/shared-machine.md). */
#define THREADS_SPIN_COUNT "1000"

/* Called first in main, with main's argv. libgomp reads its wait once,
 * as it loads, from GOMP_SPINCOUNT or OMP_WAIT_POLICY: unless the user
 * set either, this sets GOMP_SPINCOUNT to THREADS_SPIN_COUNT and starts
 * the program again (execv of /proc/self/exe, the same arguments); where
 * that fails, the run goes on with libgomp's wait. */
void threads_wait_briefly(char **argv);

/* The wait in force, for a run's first lines: "spin 1000, then sleep"
 * or what the user's variable says. */
const char *threads_wait(void);

/* threads <= 0: OMP_NUM_THREADS if set, else every core. Returns the count. */
int threads_setup(int threads);

/* How many other tasks were running or ready to run as the call looked,
 * the median of a few looks at /proc/stat over about 20 ms (this
 * process's own threads not counted); -1 where Linux does not say. */
int threads_busy_elsewhere(void);

#endif
