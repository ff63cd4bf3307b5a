/* Where a training step's time goes, by kernel and by kind of kernel.
 * Every kernel of the emitted code that matters for speed adds the time it
 * took, split by kind, to its own entry: one clock read per call, about a
 * thousand calls per step of ResNet-110, microseconds against a step of a
 * second. make bench prints the kinds' sums and the longest kernels. The
 * kernels are called from one thread, outside parallel regions (or from
 * its master thread), so the sums need no locking. */
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

/* Each function of the emitted code that times itself, named as C names
 * it (__func__), holds its seconds of each kind since the process started
 * or profile_reset. Most are the kernel of one op and shape, such as
 * bn_relu_conv1x1_s1_64x32x32_to_16_backward; a few are helpers that the
 * kernels of every shape share, such as batch_norm_statistics. The last
 * entry, "other kernels", takes the time of any past the others, so that
 * the kinds' sums are whole. */
enum { PROFILE_KERNELS_MAX = 256 };
struct profile_kernel {
	const char *name;
	double seconds[PROFILE_KIND_COUNT];
};
extern struct profile_kernel profile_kernels[PROFILE_KERNELS_MAX];
extern int profile_kernel_count;

/* The index of the kernel called name in profile_kernels, added if new. */
int profile_kernel_slot(const char *name);

/* A kernel's seconds of every kind; every kernel's seconds of one kind. */
double profile_kernel_seconds(const struct profile_kernel *kernel);
double profile_kind_seconds(enum profile_kind kind);

/* What make bench calls each kind. */
extern const char *const profile_kind_names[PROFILE_KIND_COUNT];

void profile_reset(void);

static inline double profile_clock(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline double profile_add_in(int slot, enum profile_kind kind, double started)
{
	double now = profile_clock();
	profile_kernels[slot].seconds[kind] += now - started;
	return now;
}

static inline double profile_add_split_in(int slot, enum profile_kind kind, enum profile_kind part, double part_seconds, double started)
{
	profile_kernels[slot].seconds[part] += part_seconds;
	return profile_add_in(slot, kind, started + part_seconds);
}

/* The kernel's slot, found at its first call and kept at the call's site. */
#define PROFILE_SLOT()                                                        \
	({                                                                    \
		static int profile_slot_ = -1;                                \
		if (profile_slot_ < 0)                                        \
			profile_slot_ = profile_kernel_slot(__func__);        \
		profile_slot_;                                                \
	})

/* Adds the time since started to the calling kernel's of kind; returns
 * the clock, the start of whatever follows. */
#define profile_add(kind, started) profile_add_in(PROFILE_SLOT(), kind, started)

/* The same, for a kernel whose time is of two kinds: part_seconds of it
 * (measured within) go to part, the rest to kind. */
#define profile_add_split(kind, part, part_seconds, started) \
	profile_add_split_in(PROFILE_SLOT(), kind, part, part_seconds, started)

#endif
