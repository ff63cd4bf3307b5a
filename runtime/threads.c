#include "threads.h"

#include <dirent.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gemm.h"
#include "profile.h"

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

int kernel_shares;

/* threads_team's state: the run's threads, the team now, RESGEN_TEAM's
 * (0 unset), the cores, the last looks and the passes counted */
static struct {
	int threads, team, fixed;
	long cores;
	int looks[THREADS_LOOKS], look_count;
	double looked_at;
	long passes, fewer;
} team_state;

int threads_setup(int threads)
{
	if (threads <= 0)
		threads = omp_get_max_threads();
	omp_set_num_threads(threads);
	omp_set_max_active_levels(1);
	omp_set_dynamic(0);
	gemm_set_threads(1);
	kernel_shares = threads;
	const char *fixed = getenv("RESGEN_TEAM");
	char *end = NULL;
	long team = fixed ? strtol(fixed, &end, 10) : 0;
	team_state.threads = team_state.team = threads;
	team_state.fixed = end && end != fixed && *end == 0 && team >= 1 && team <= threads ? (int)team : 0;
	team_state.cores = sysconf(_SC_NPROCESSORS_ONLN);
	team_state.look_count = 0;
	team_state.looked_at = -1;
	return threads;
}

/* procs_running of /proc/stat: the tasks running or ready to, this
 * process's included; -1 if unreadable. */
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

/* This process's threads running or ready to (state R), at least the
 * calling one: its OpenMP threads spin for a while after a parallel
 * region, longer under the user's OMP_WAIT_POLICY=active. */
static int running_here(void)
{
	int running = 0;
	DIR *tasks = opendir("/proc/self/task");
	for (struct dirent *task; tasks && (task = readdir(tasks));) {
		char path[64], state = 0;
		if (task->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%.16s/stat", task->d_name);
		FILE *stat = fopen(path, "r");
		if (stat && fscanf(stat, "%*d (%*[^)]) %c", &state) == 1 && state == 'R')
			running++;
		if (stat)
			fclose(stat);
	}
	if (tasks)
		closedir(tasks);
	return running > 0 ? running : 1;
}

/* Other processes' tasks running or ready to now; -1 if Linux does not say. */
static int others_running(void)
{
	int all = running_now();
	return all < 0 ? -1 : all - running_here();
}

static int by_value(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

/* The median of count looks (at least one), none below 0. */
static int median_of(const int *looks, int count)
{
	int sorted[THREADS_LOOKS];
	memcpy(sorted, looks, sizeof(int) * (size_t)count);
	qsort(sorted, (size_t)count, sizeof sorted[0], by_value);
	return sorted[count / 2] > 0 ? sorted[count / 2] : 0;
}

int threads_busy_elsewhere(void)
{
	int seen[THREADS_LOOKS];
	for (int i = 0; i < THREADS_LOOKS; i++) {
		if ((seen[i] = others_running()) < 0)
			return -1;
		nanosleep(&(struct timespec){0, 4000000}, NULL);
	}
	return median_of(seen, THREADS_LOOKS);
}

int threads_team_beside(int threads, int others)
{
	long free_cores = team_state.cores - others;
	return others > 0 && free_cores > 0 && free_cores < threads ? (int)free_cores : threads;
}

void threads_team(void)
{
	if (team_state.threads <= 1 || omp_in_parallel())
		return;
	int want = team_state.fixed ? team_state.fixed : team_state.team;
	double now = team_state.fixed ? 0 : profile_clock();
	if (!team_state.fixed && (team_state.looked_at < 0 || now - team_state.looked_at >= THREADS_LOOK_SECONDS)) {
		/* a new look, so a new median; between looks the team stays */
		int others = others_running();
		team_state.looked_at = now;
		team_state.looks[team_state.look_count++ % THREADS_LOOKS] = others < 0 ? 0 : others;
		int count = team_state.look_count < THREADS_LOOKS ? team_state.look_count : THREADS_LOOKS;
		want = threads_team_beside(team_state.threads, median_of(team_state.looks, count));
	}
	if (want != team_state.team) {
		omp_set_num_threads(want);
		team_state.team = want;
	}
	team_state.passes++;
	team_state.fewer += want < team_state.threads;
}

void threads_team_counts(long *fewer, long *all)
{
	*fewer = team_state.fewer;
	*all = team_state.passes;
}
