/* Who owns the cores and how their threads wait (threads.h): the
 * thread count and the kernels' shares, the team of each pass beside
 * other work (/proc/stat), the checks of OMP_NUM_THREADS and
 * RESGEN_TEAM, and libgomp's short spin, set before libgomp loads. */
#include "threads.h"

#include <dirent.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gemm.h"
#include "machine.h" /* MACHINE_BASELINE: the preinit function runs before the instructions are checked */
#include "printable.h"
#include "profile.h"

/* libgomp reads its wait (GOMP_SPINCOUNT, OMP_WAIT_POLICY) once, in its
 * constructor, before any of the binary's own code runs but one: the
 * executable's preinit array, which glibc calls before every library's
 * constructor. glibc's own constructor then points the environment back
 * at the array the kernel laid out, so a setenv there is lost; what
 * reaches libgomp is that array's entries. So the preinit function lends
 * one entry's slot to GOMP_SPINCOUNT, and the binary's first constructor,
 * after every library's, gives it back and sets GOMP_SPINCOUNT as usual.
 * The entry lent is one no library of the binary reads as it loads. Both
 * functions run before the processor's instructions are checked
 * (machine.c), so they are compiled for the baseline. */

static const char *user_wait_name, *user_wait_value; /* the user's, or NULL */
static char **lent_slot, *lent_entry;                 /* the slot lent and its entry */
static char spin_entry[] = "GOMP_SPINCOUNT=" THREADS_SPIN_COUNT;

/* Whether entry (NAME=VALUE) names a variable the binary's libraries may
 * read in their constructors: OpenMP's, BLIS's, Open MPI's, the C
 * library's and the loader's. */
MACHINE_BASELINE static int read_while_loading(const char *entry)
{
	static const char *const prefixes[] = {"OMP_", "GOMP_", "KMP_",	 "BLIS_", "OMPI_", "OPAL_", "PMIX_",
					       "HWLOC_", "LD_", "GLIBC_", "MALLOC_", "LANG", "LC_", "TZ"};
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (strncmp(entry, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

MACHINE_BASELINE static void wait_briefly_before_libgomp(int argc, char **argv, char **envp)
{
	(void)argc;
	(void)argv;
	static const char *const names[] = {"GOMP_SPINCOUNT=", "OMP_WAIT_POLICY="};
	for (char **entry = envp; *entry; entry++) {
		for (int i = 0; i < 2; i++)
			if (!user_wait_name && strncmp(*entry, names[i], strlen(names[i])) == 0) {
				user_wait_name = names[i];
				user_wait_value = *entry + strlen(names[i]);
			}
		if (!read_while_loading(*entry))
			lent_slot = entry; /* the last such */
	}
	if (user_wait_name || !lent_slot) {
		lent_slot = NULL;
		return;
	}
	lent_entry = *lent_slot;
	*lent_slot = spin_entry;
}

__attribute__((section(".preinit_array"), used)) static void (*const wait_briefly)(int, char **, char **) =
	wait_briefly_before_libgomp;

/* The first of the binary's constructors: every library's have run. */
__attribute__((constructor(101))) static void give_back_the_slot(void)
{
	if (!lent_slot)
		return;
	*lent_slot = lent_entry;
	setenv("GOMP_SPINCOUNT", THREADS_SPIN_COUNT, 1);
}

const char *threads_wait(void)
{
	static char text[200];
	if (!user_wait_name)
		return lent_entry ? "spin " THREADS_SPIN_COUNT ", then sleep"
				  : "libgomp's own (spin about 300000, then sleep): no variable of the environment could lend its place";
	char shown[4 * 40 + 1];
	printable_text(shown, sizeof shown, user_wait_value);
	snprintf(text, sizeof text, "%s%s", user_wait_name, shown);
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
