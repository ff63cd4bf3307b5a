/* Who owns the cores and how their threads wait (threads.h): the
 * thread count and the kernels' shares, the team of each pass beside
 * other work (/proc/stat), the checks of OMP_NUM_THREADS and
 * RESGEN_TEAM, and libgomp's short spin. */
#include "threads.h"

#include <dirent.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gemm.h"
#include "printable.h"
#include "profile.h"

/* libgomp reads its wait (GOMP_SPINCOUNT, OMP_WAIT_POLICY) once, in its
 * constructor, and keeps the spin in gomp_spin_count_var, which every
 * wait reads. The binaries link libgomp in (the Makefile's OPENMP_LINK),
 * so that variable is theirs to set after every constructor has run and
 * before any thread waits, and the environment stays the user's. A
 * program linked with libgomp.so has no such variable (the weak
 * reference is NULL): it waits as libgomp's own. */
extern unsigned long long gomp_spin_count_var __attribute__((weak));

static const char *user_wait_name, *user_wait_value; /* the user's, or NULL */

/* The user's wait (GOMP_SPINCOUNT or OMP_WAIT_POLICY), if any. */
static void read_user_wait(void)
{
	static const char *const names[] = {"GOMP_SPINCOUNT", "OMP_WAIT_POLICY"};
	for (int i = 0; i < 2 && !user_wait_name; i++)
		if ((user_wait_value = getenv(names[i])))
			user_wait_name = names[i];
}

/* The wait in force from now on: the user's, or a brief spin. */
static void wait_briefly(void)
{
	read_user_wait();
	if (!user_wait_name && &gomp_spin_count_var)
		gomp_spin_count_var = THREADS_SPIN_COUNT;
}

const char *threads_wait(void)
{
	static char text[200];
	read_user_wait();
	if (!user_wait_name && !&gomp_spin_count_var)
		return "libgomp's own (spin about 300000, then sleep): this program links libgomp.so";
	if (!user_wait_name) { /* the spin libgomp holds, read back */
		snprintf(text, sizeof text, "spin %llu, then sleep", gomp_spin_count_var);
		return text;
	}
	char shown[4 * 40 + 1];
	printable_text(shown, sizeof shown, user_wait_value);
	snprintf(text, sizeof text, "%s=%s", user_wait_name, shown);
	return text;
}

int kernel_shares; /* declared where the kernels read it: kernels/common.h */

int threads_shares(void) { return kernel_shares; }

/* threads_team's state: the run's threads, the team now, RESGEN_TEAM's
 * (0 unset), the cores, the last looks and the passes counted */
static struct {
	int threads, team, fixed;
	long cores;
	int looks[THREADS_LOOKS], look_count;
	double looked_at;
	long passes, fewer;
} team_state;

enum { THREADS_MAX = 1024 }; /* as --threads: runtime/command/main.c */

/* text as a whole number from 1 to max, in plain decimal; 0 if it is not. */
static long whole_from_one(const char *text, long max)
{
	long value = 0;
	for (const char *at = text; *at; at++) {
		if (*at < '0' || *at > '9' || (at == text && *at == '0') || value > max)
			return 0;
		value = 10 * value + (*at - '0');
	}
	return value <= max ? value : 0;
}

/* The thread count a run of --threads threads (0: not given) gets. */
static int thread_count(int threads)
{
	return threads > 0 ? threads : omp_get_max_threads();
}

int threads_environment_error(int threads, char *why, size_t size)
{
	char shown[4 * 64 + 1];
	const char *count = getenv("OMP_NUM_THREADS"), *team = getenv("RESGEN_TEAM");
	if (threads <= 0 && count && !whole_from_one(count, THREADS_MAX)) {
		printable_text(shown, sizeof shown, count);
		snprintf(why, size,
			 "OMP_NUM_THREADS is '%.64s'; it must be a whole number from 1 to %d, or unset for every core "
			 "(--threads T sets the count too)",
			 shown, THREADS_MAX);
		return -1;
	}
	if (team && !whole_from_one(team, thread_count(threads))) {
		printable_text(shown, sizeof shown, team);
		snprintf(why, size,
			 "RESGEN_TEAM is '%.64s'; it must be a whole number from 1 to the run's %d thread%s, or unset "
			 "(each pass then runs on the free cores)",
			 shown, thread_count(threads), thread_count(threads) == 1 ? "" : "s");
		return -1;
	}
	return 0;
}

int threads_setup(int threads, int shares)
{
	threads = thread_count(threads);
	shares = shares > 0 ? shares : threads;
	threads = threads < shares ? threads : shares;
	wait_briefly();
	omp_set_num_threads(threads);
	omp_set_max_active_levels(1);
	omp_set_dynamic(0);
	gemm_set_threads(1);
	kernel_shares = shares;
	const char *fixed = getenv("RESGEN_TEAM");
	team_state.threads = team_state.team = threads;
	team_state.fixed = fixed ? (int)whole_from_one(fixed, threads) : 0;
	team_state.cores = sysconf(_SC_NPROCESSORS_ONLN);
	team_state.look_count = 0;
	team_state.looked_at = -1;
	return threads;
}

int threads_team_fixed(void) { return team_state.fixed; }

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
