/* The last-level cache's size from sysfs, read once; where the threads'
 * cores lie relative to each other's caches, measured. */
#include "cache.h"

#include <omp.h>
#include <stdio.h>

#include "profile.h" /* profile_clock: the monotonic clock in seconds */

/* The size of cache index i of cpu0 at *level and *bytes; 0 if there is no
 * such index or its files do not read as Linux writes them ("3", "32768K"). */
static int cache_index(int i, int *level, size_t *bytes)
{
	char path[96];
	snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int read_level = fscanf(f, "%d", level) == 1;
	fclose(f);
	snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
	f = fopen(path, "r");
	if (!f)
		return 0;
	unsigned long size;
	char unit = 0;
	int fields = fscanf(f, "%lu%c", &size, &unit);
	fclose(f);
	if (!read_level || fields < 1)
		return 0;
	*bytes = unit == 'K' ? size << 10 : unit == 'M' ? size << 20 : unit == 'G' ? size << 30 : size;
	return 1;
}

size_t cache_last_level_bytes(void)
{
	/* read once; every thread that races to it reads the same files */
	static size_t known = (size_t)-1;
	size_t bytes = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (bytes != (size_t)-1)
		return bytes;
	int highest = 0;
	bytes = 0;
	for (int i = 0; i < 16; i++) {
		int level;
		size_t size;
		if (cache_index(i, &level, &size) && level >= highest) {
			if (level > highest || size > bytes)
				bytes = size;
			highest = level;
		}
	}
	__atomic_store_n(&known, bytes, __ATOMIC_RELAXED);
	return bytes;
}

/* Thread 1 says it is there by writing 2; thread 0, once it reads that,
 * starts the clock and writes odd counts from 3, thread 1 answering each
 * with the even one after it, and ends the exchange with -1. Thread 1
 * writes only by compare-and-swap, so that nothing it writes can cover
 * the end. Waiting for thread 1 first keeps its waking out of the time:
 * a thread the pool let sleep took from 3 us to over 1 ms to wake on the
 * Zen 4, even after a barrier (whose last arrival goes on at once while
 * it wakes the others). It is waited for up to CACHE_WAKE_SECONDS. */
#define CACHE_WAKE_SECONDS 0.1
static struct {
	_Alignas(64) int value; /* alone on its line */
	char rest[60];
} cache_line;

double cache_round_trip_ns(int trips, double seconds)
{
	if (omp_in_parallel() || omp_get_max_threads() < 2 || trips < 1)
		return 0;
	double elapsed = 0;
	int done = 0;
	__atomic_store_n(&cache_line.value, 0, __ATOMIC_RELAXED);
	#pragma omp parallel num_threads(2)
	{
		if (omp_get_num_threads() < 2) {
			/* no partner: nothing measured */
		} else if (omp_get_thread_num() == 0) {
			double start = profile_clock();
			while (__atomic_load_n(&cache_line.value, __ATOMIC_ACQUIRE) != 2 && profile_clock() - start <= CACHE_WAKE_SECONDS)
				;
			if (__atomic_load_n(&cache_line.value, __ATOMIC_ACQUIRE) == 2)
				start = profile_clock(); /* else: no partner: the wait counts, over the limit */
			for (int spins = 0; done < trips && elapsed <= seconds;) {
				int sent = 2 * done + 3;
				if (spins == 0)
					__atomic_store_n(&cache_line.value, sent, __ATOMIC_RELEASE);
				if (__atomic_load_n(&cache_line.value, __ATOMIC_ACQUIRE) == sent + 1) {
					done++;
					spins = 0;
				} else if (++spins % 256 == 0) {
					elapsed = profile_clock() - start;
				}
			}
			elapsed = profile_clock() - start;
			__atomic_store_n(&cache_line.value, -1, __ATOMIC_RELEASE);
		} else {
			int seen = 0;
			__atomic_compare_exchange_n(&cache_line.value, &seen, 2, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
			while ((seen = __atomic_load_n(&cache_line.value, __ATOMIC_ACQUIRE)) != -1)
				if (seen % 2)
					__atomic_compare_exchange_n(&cache_line.value, &seen, seen + 1, 0, __ATOMIC_ACQ_REL,
								    __ATOMIC_ACQUIRE);
		}
	}
	return done < trips ? 1e9 * elapsed : 1e9 * elapsed / done;
}

double cache_round_trip_median(int rounds, int trips, double seconds)
{
	double times[CACHE_ROUNDS_MAX];
	rounds = rounds < 1 ? 1 : rounds > CACHE_ROUNDS_MAX ? CACHE_ROUNDS_MAX : rounds;
	for (int round = 0; round < rounds; round++) {
		double time = cache_round_trip_ns(trips, seconds);
		int j = round;
		for (; j > 0 && time < times[j - 1]; j--) /* kept sorted */
			times[j] = times[j - 1];
		times[j] = time;
	}
	return times[rounds / 2];
}

static double cache_checked_at = -1;
static int cache_apart;

void cache_check_placement(void)
{
	double now = profile_clock();
	if (omp_in_parallel() || (cache_checked_at >= 0 && now - cache_checked_at < CACHE_PROBE_SECONDS))
		return;
	cache_checked_at = now;
	cache_apart = cache_round_trip_median(3, CACHE_PROBE_TRIPS, 1e-3) > CACHE_APART_NS;
}

int cache_threads_apart(void) { return cache_apart; }
