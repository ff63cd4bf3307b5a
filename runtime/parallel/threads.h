/* Who owns the cores. OpenMP and BLIS both read OMP_NUM_THREADS; left alone
 * they would nest and oversubscribe. Here the emitted kernels' OpenMP loops
 * own every core (they split the batch, the channels or the elements), and
 * BLIS runs single-threaded inside them. */
#ifndef RESGEN_THREADS_H
#define RESGEN_THREADS_H

#include <stddef.h>

/* How long a thread that waits for the others (at a barrier, or between
 * parallel regions) spins before it sleeps, in libgomp's pauses: tens of
 * microseconds, against libgomp's 300000 (milliseconds). On a shared
 * machine the thread waited for may be the one the operating system set
 * aside; a waiter that spins through its time slice holds the core that
 * thread could run on (docs/shared-machine.md). */
#define THREADS_SPIN_COUNT 1000

/* threads_setup gives libgomp THREADS_SPIN_COUNT, unless the user set
 * GOMP_SPINCOUNT or OMP_WAIT_POLICY, through the copy of libgomp linked
 * into the binary: the environment is never changed, and nothing is
 * executed again (the binary runs the same under ld.so, valgrind or a
 * launcher, and keeps its name). */

/* The wait in force, for a run's first lines: "spin 1000, then sleep"
 * or the user's variable, printable (\xNN for what is not). */
const char *threads_wait(void);

/* Whether OMP_NUM_THREADS (read where --threads is not given: threads <=
 * 0) and RESGEN_TEAM hold what a run can use: a whole number from 1 to
 * 1024, and from 1 to the run's thread count. -1 with why, a line naming
 * the variable, its value and what would be right; 0 if both are fine. */
int threads_environment_error(int threads, char *why, size_t size);

/* threads <= 0: OMP_NUM_THREADS if set, else every core; shares <= 0:
 * that count. shares is the number of shares every pass cuts its images
 * into (kernel_shares, runtime/kernels/common.h), and so what sets the
 * bits of the result: a run keeps its shares wherever it resumes. Returns
 * the thread count, at most shares (a thread more would have no share). */
int threads_setup(int threads, int shares);

/* The shares threads_setup set (kernel_shares, which the kernels read). */
int threads_shares(void);

/* How often threads_team looks at what else runs, in seconds, and how
 * many looks a median is taken of (threads_busy_elsewhere's too). */
#define THREADS_LOOK_SECONDS 0.1
enum { THREADS_LOOKS = 5 };

/* The team of a run of threads beside others busy tasks: as many as the
 * cores left free where others keep some but not all busy, else all. */
int threads_team_beside(int threads, int others);

/* Before a pass, outside any parallel region: how many of the run's
 * threads run it (the team). All of them, unless other processes keep
 * some of the cores busy but not all: then as many as the cores left
 * free, at least one (the median of the last five looks, one at most
 * every THREADS_LOOK_SECONDS). Beside as many busy tasks as cores or more,
 * every thread is one more claim on them, and all run. RESGEN_TEAM=K (1 to
 * the thread count) fixes the team at K, for tests and experiments. The
 * result is the same bits on any team (kernel_shares). */
void threads_team(void);

/* RESGEN_TEAM's team, or 0 where it is unset. */
int threads_team_fixed(void);

/* How many passes threads_team gave fewer threads than the run's, of all. */
void threads_team_counts(long *fewer, long *all);

/* How many other processes' tasks were running or ready to run as the
 * call looked: the median of five looks over about 20 ms at /proc/stat's
 * count, less this process's threads running then (/proc/self/task); -1
 * where Linux does not say. */
int threads_busy_elsewhere(void);

#endif
