#include "threads.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gemm.h"

void threads_wait_briefly(char **argv)
{
	if (getenv("GOMP_SPINCOUNT") || getenv("OMP_WAIT_POLICY"))
		return;
	if (setenv("GOMP_SPINCOUNT", THREADS_SPIN_COUNT, 1) != 0)
		return;
	execv("/proc/self/exe", argv);
	unsetenv("GOMP_SPINCOUNT");
}

const char *threads_wait(void)
{
	static char text[96];
	const char *spin = getenv("GOMP_SPINCOUNT"), *policy = getenv("OMP_WAIT_POLICY");
	if (spin && strcmp(spin, THREADS_SPIN_COUNT) == 0 && !policy)
		return "spin " THREADS_SPIN_COUNT ", then sleep";
	if (spin)
		snprintf(text, sizeof text, "GOMP_SPINCOUNT=%.40s", spin);
	else if (policy)
		snprintf(text, sizeof text, "OMP_WAIT_POLICY=%.40s", policy);
	else
		return "libgomp's own (spin about 300000, then sleep)";
	return text;
}

int threads_setup(int threads)
{
	if (threads <= 0)
		threads = omp_get_max_threads();
	omp_set_num_threads(threads);
	omp_set_max_active_levels(1);
	omp_set_dynamic(0);
	gemm_set_threads(1);
	return threads;
}

/* procs_running of /proc/stat: the tasks running or ready to, this one
 * included; -1 if unreadable. */
static int running_now(void)
{
	FILE *stat = fopen("/proc/stat", "r");
	if (!stat)
		return -1;
	char line[256];
	int running = -1;
	while (fgets(line, sizeof line, stat))
		if (sscanf(line, "procs_running %d", &running) == 1)
			break;
	fclose(stat);
	return running;
}

static int by_value(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

int threads_busy_elsewhere(void)
{
	enum { LOOKS = 5 };
	int seen[LOOKS];
	for (int i = 0; i < LOOKS; i++) {
		if ((seen[i] = running_now()) < 0)
			return -1;
		nanosleep(&(struct timespec){0, 4000000}, NULL);
	}
	qsort(seen, LOOKS, sizeof seen[0], by_value);
	return seen[LOOKS / 2] > 1 ? seen[LOOKS / 2] - 1 : 0;
}
