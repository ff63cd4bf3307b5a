/* The machine's caches, as Linux describes them: what the kernels read to
 * decide whether what they write would still be cached when it is read. */
#ifndef RESGEN_CACHE_H
#define RESGEN_CACHE_H

#include <stddef.h>

/* The bytes of the largest cache the first processor has (its L3, or the
 * highest level there is), as /sys/devices/system/cpu/cpu0/cache says; 0
 * if Linux does not say. glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) is not
 * used: on a 2-core Zen 4 virtual machine it read 320 MiB for an L3 of
 * 32 MiB. */
size_t cache_last_level_bytes(void);

/* A cache line passed from thread 0 to thread 1 and back, trips times,
 * in ns a round trip: where their cores lie relative to each other's
 * caches. Called outside any parallel region; 0 with fewer than two
 * threads. The clock starts once thread 1 is there; the trips stop after
 * seconds, and an unfinished trip counts as taking all the time spent
 * (a partner that does not run is far). */
double cache_round_trip_ns(int trips, double seconds);

/* The median of rounds (at most CACHE_ROUNDS_MAX) of cache_round_trip_ns. */
enum { CACHE_ROUNDS_MAX = 9 };
double cache_round_trip_median(int rounds, int trips, double seconds);

/* Whether the cores of threads 0 and 1 have a last-level cache each, as
 * the last check found: a round trip over CACHE_APART_NS. On the Zen 4 of
 * docs/performance.md, whose two cores the hypervisor moves between
 * one chiplet (one L3) and two every few minutes, the round trip reads 49
 * to 80 ns in the first placement and 350 to 410 in the second.
 * cache_check_placement measures it again (the median of three rounds of
 * CACHE_PROBE_TRIPS) where the last check is more than
 * CACHE_PROBE_SECONDS old: called outside any parallel region, before a
 * pass whose kernels ask cache_threads_apart. */
enum { CACHE_APART_NS = 200, CACHE_PROBE_TRIPS = 16 };
#define CACHE_PROBE_SECONDS 0.5
void cache_check_placement(void);
int cache_threads_apart(void);

#endif
