/* What the machine is, found once, and the one override of what the
 * kernels would choose from it. The kernels' choices that depend on the
 * machine (runtime/kernels/conv/choices.h) read it from here and only
 * here: BLIS's micro-kernel (which BLIS kernels run is settled in
 * machine.c before BLIS starts), the last-level cache, and where the
 * threads' cores lie. `NAME explain` prints all of it. */
#ifndef RESGEN_MACHINE_H
#define RESGEN_MACHINE_H

#include <stdbool.h>
#include <stddef.h>

#include "gemm.h"

/* The instruction set the binary was compiled for, the Makefile's MARCH
 * (native, x86-64-v3, ...). A processor without one of its instructions
 * is refused with one line, exit 2, before anything else runs. */
const char *machine_built_for(void);

/* A function that runs before that check (the preinit array's): compiled
 * for the x86-64 baseline, whatever MARCH is. */
#if defined(__x86_64__)
#define MACHINE_BASELINE __attribute__((target("arch=x86-64")))
#else
#define MACHINE_BASELINE
#endif

/* RESGEN_CHOICES, the one override, for tests and experiments: a list of
 * NAME=VALUE separated by commas, each VALUE on, off or rule (the
 * default), each NAME one of the convolutions' choices:
 *   winograd      Winograd's algorithm where it applies (all three passes)
 *   row_split     the row split of the forward pass and data gradient
 *   weight_split  the row split of the weight gradient
 *   swap          a 1x1 weight gradient's operands on swapped sides
 *   stream        outputs staged and streamed past the caches
 * Forcing one on applies it only where the shape allows; the results stay
 * within the kernels' tested bound of the reference, but are not bitwise
 * those of the rules. Each choice: -1 by the rule, 0 off, 1 on. */
struct choice_override {
	signed char winograd, row_split, weight_split, swap, stream;
};

enum { MACHINE_OVERRIDE_NAMES = 5 };
extern const char *const machine_override_names[MACHINE_OVERRIDE_NAMES];

/* The override text parsed into *override (all -1 for NULL or empty);
 * 0, or -1 with a one-line reason in why (naming the character where the
 * text went wrong). */
int machine_override_parse(const char *text, struct choice_override *override, char *why, size_t why_size);

/* The machine, found at the first call. micro: BLIS's micro-kernel, NULL
 * where its panels are wider than GEMM_PANEL_MAX (the kernels then run
 * their reference path); last_level_bytes: 0 where Linux does not say;
 * override: RESGEN_CHOICES, all -1 if unset or unreadable (the binaries
 * refuse an unreadable one before they start: machine_override_error). */
struct machine {
	const struct gemm_micro *micro;
	const char *kernels; /* BLIS's name for them: zen3, skx, haswell, generic... */
	size_t last_level_bytes;
	struct choice_override override;
	const char *override_text; /* NULL if RESGEN_CHOICES is unset */
	/* RESGEN_BF16, a bf16 network's path (bf16.h's bf16_path_names),
	 * for tests and experiments: -1 where unset (the fastest there is,
	 * bf16_best_path) */
	int bf16_path;
	const char *bf16_text;
};
const struct machine *machine(void);

/* Where RESGEN_CHOICES or RESGEN_BF16 is set and unreadable: writes why
 * and returns -1. */
int machine_override_error(char *why, size_t why_size);

/* Where RESGEN_CHOICES forces an algorithm the instance named (a
 * convolution of a network compiled for its rules alone: conv_compiled)
 * has no code for: says so in one line and exits 2. */
void machine_refuse_algorithm(const char *instance) __attribute__((noreturn));

/* The path a bf16 network's products take in arithmetic (enum
 * bf16_arithmetic): RESGEN_BF16's, or the fastest there is. Where
 * RESGEN_BF16 names a path that cannot compute arithmetic here, says why
 * in one line and exits 2. */
int machine_bf16_path(int arithmetic);

/* The processor's name as it gives it (CPUID's brand string), such as
 * "AMD EPYC 9R14 96-Core Processor". */
void machine_processor(char *out, size_t size);

/* Whether this processor has every AVX-512 extension (F, DQ, CD, BW, VL)
 * BLIS's skx kernels use. */
bool machine_has_skx_extensions(void);
/* The baseline every binary is compiled for (x86-64-v3): true, since a
 * processor without it was refused before main. */
bool machine_has_baseline(void);

/* The bytes of the largest cache the first processor has (its L3, or the
 * highest level there is), as /sys/devices/system/cpu/cpu0/cache says; 0
 * if Linux does not say. glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) is not
 * used: on a 2-core Zen 4 virtual machine it read 320 MiB for an L3 of
 * 32 MiB. */
size_t machine_last_level_bytes(void);
/* How many CPUs share cpu0's last-level cache, as Linux says
 * (/sys/devices/system/cpu/cpu0/cache/indexN/shared_cpu_list); 0 if it
 * does not say. */
int machine_last_level_sharing(void);

/* A cache line passed from thread 0 to thread 1 and back, trips times,
 * in ns a round trip: where their cores lie relative to each other's
 * caches. Called outside any parallel region; 0 with fewer than two
 * threads. The clock starts once thread 1 is there; the trips stop after
 * seconds, and an unfinished trip counts as taking all the time spent
 * (a partner that does not run is far). */
double machine_round_trip_ns(int trips, double seconds);

/* The median of rounds (at most MACHINE_ROUNDS_MAX) of machine_round_trip_ns. */
enum { MACHINE_ROUNDS_MAX = 9 };
double machine_round_trip_median(int rounds, int trips, double seconds);

/* The one probe kept at run time. Whether the cores of threads 0 and 1
 * have a last-level cache each, as the last check found: a round trip
 * over MACHINE_APART_NS. Some hypervisors move a virtual machine's two
 * cores between one chiplet (one L3) and two every few minutes; the round
 * trip then jumps from under 100 ns to over 300 (docs/performance.md,
 * "Where the cores are"). It pays: with a cache each, a data gradient
 * stored in place fetches each line from the other core's cache first,
 * and streaming it instead made ResNet-1001's step a fifth shorter there.
 * machine_check_placement measures again (the median of three rounds of
 * MACHINE_PROBE_TRIPS, about 20 us) where the last check is more than
 * MACHINE_PROBE_SECONDS old: called outside any parallel region, before a
 * pass whose kernels ask machine_threads_apart. */
enum { MACHINE_APART_NS = 200, MACHINE_PROBE_TRIPS = 16 };
#define MACHINE_PROBE_SECONDS 0.5
void machine_check_placement(void);
bool machine_threads_apart(void);

#endif
