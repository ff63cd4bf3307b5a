/* Where a training step's time goes, by kind of kernel. Every kernel of the
 * emitted code that matters for speed adds the time it took to its kind:
 * one clock read per call, about a thousand calls per step of ResNet-110,
 * microseconds against a step of a second. make bench prints the split.
 * The kernels are called from one thread, outside parallel regions, so the
 * sums need no locking. */
#ifndef RESGEN_PROFILE_H
#define RESGEN_PROFILE_H

#include <time.h>

enum profile_kind {
	PROFILE_CONV_FORWARD,
	PROFILE_CONV_DATA_GRADIENT,
	PROFILE_CONV_WEIGHT_GRADIENT,
	PROFILE_ELEMENTWISE, /* BN, ReLU, sums, scaling, gating, dropout, shortcut padding */
	PROFILE_KIND_COUNT
};

/* Seconds per kind since the process started or profile_reset. */
extern double profile_seconds[PROFILE_KIND_COUNT];

/* What make bench calls each kind. */
extern const char *const profile_kind_names[PROFILE_KIND_COUNT];

void profile_reset(void);

static inline double profile_clock(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Adds the time since started to kind; returns the clock, the start of
 * whatever follows. */
static inline double profile_add(enum profile_kind kind, double started)
{
	double now = profile_clock();
	profile_seconds[kind] += now - started;
	return now;
}

/* The same, for a kernel whose time is of two kinds: part_seconds of it
 * (measured within) go to part, the rest to kind. */
static inline double profile_add_split(enum profile_kind kind, enum profile_kind part, double part_seconds, double started)
{
	profile_seconds[part] += part_seconds;
	return profile_add(kind, started + part_seconds);
}

#endif
