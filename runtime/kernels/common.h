/* What every kernel of the library shares: the headers they need, how a
 * backward kernel writes an input's gradient, how helpers are inlined, and
 * how images are shared among the threads. The library (runtime/kernels/)
 * is shape-generic; a network's emitted kernels.h includes the parts its
 * ops use and defines its instances, whose sizes are constants. */
#ifndef RESGEN_KERNELS_COMMON_H
#define RESGEN_KERNELS_COMMON_H

#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <immintrin.h>
#endif

#include "machine.h"
#include "gemm.h"
#include "kernels/sizes.h" /* the scratch each kernel needs, the size rules */
#include "net_api.h"
#include "products.h"
#include "profile.h"
#include "real.h"

/* How a backward kernel writes the gradient of its input: the first of the
 * input's consumers to run backward sets it, so that no pass zeroes it
 * first; the others add to it. */
enum gradient_write { GRADIENT_ADD, GRADIENT_SET };

/* The kernels' helpers are inlined into each instance, where the sizes are
 * constants: what makes an instance fast. Builds that check rather than run
 * define RESGEN_OUT_OF_LINE: their instances call the library's entry points
 * (KERNEL_ENTRY), compiled once for the build in the object of
 * runtime/kernels/library.c (RESGEN_KERNEL_LIBRARY), which they link. The
 * same code, without a copy in every network: compiling a network is then
 * compiling its instances, and the sanitizers instrument one copy
 * (docs/build.md). */
#if defined(RESGEN_KERNEL_LIBRARY) || defined(RESGEN_OUT_OF_LINE)
#define KERNEL_HELPER static inline
#else
#define KERNEL_HELPER static inline __attribute__((always_inline))
#endif
/* An entry point, a helper the instances call: KERNEL_ENTRY(type, name,
 * (parameters)) and its body. Out of line it is declared, and its body,
 * renamed, is left unused (so neither it nor the helpers it calls are
 * compiled); in the library it is defined with external linkage. */
#if defined(RESGEN_KERNEL_LIBRARY)
#define KERNEL_ENTRY(type, name, parameters) type name parameters
#elif defined(RESGEN_OUT_OF_LINE)
#define KERNEL_ENTRY(type, name, parameters) \
	type name parameters;                 \
	static inline type name##_in_the_library parameters
#else
#define KERNEL_ENTRY(type, name, parameters) KERNEL_HELPER type name parameters
#endif
/* A helper called once per image or group of images, whose body is large:
 * compiled once for each set of constant arguments GCC gives it (its clones)
 * rather than inlined into every copy of its callers. Winograd's F(4x4) input
 * transform is one: inlined, it cost compile time and gained nothing; its
 * output transform, shared, ran slower, and stays inline
 * (docs/kernel-measurements.md (KERNEL_SHARED)). */
#define KERNEL_SHARED static __attribute__((noinline))

/* How many shares a pass cuts its images into: the run's thread count
 * (threads_setup sets kernel_shares), however many of its threads run the
 * pass (threads_team: fewer while other work keeps cores busy); where it
 * was never set (the kernel tests), the team's. Each sum over the images
 * is summed per share, in image order, then over the shares in their
 * order, so a thread count gives the same bits on any team. */
extern int kernel_shares;

KERNEL_HELPER int share_count(void)
{
	return kernel_shares > 0 ? kernel_shares : omp_in_parallel() ? omp_get_num_threads() : omp_get_max_threads();
}

/* Share number share of n images, [*first, *last): contiguous, the first
 * n % shares shares one more, as omp for schedule(static) shares a loop
 * out among as many threads. */
KERNEL_HELPER void thread_share_of(int n, int share, int *first, int *last)
{
	int shares = share_count();
	int base = n / shares, extra = n % shares;
	*first = share * base + (share < extra ? share : extra);
	*last = *first + base + (share < extra);
}

/* The calling thread's own share: the one it takes first. */
KERNEL_HELPER void thread_share(int n, int *first, int *last) { thread_share_of(n, omp_get_thread_num(), first, last); }

/* Whether the calling thread is the first to claim the piece of work whose
 * flag is *flag (zero until claimed; shared by the threads). */
KERNEL_HELPER bool claim_first(int *flag) { return __atomic_exchange_n(flag, 1, __ATOMIC_ACQ_REL) == 0; }

/* The next of the shares (thread_share_of) that no thread has claimed,
 * the calling thread's own first, then the others in turn; -1 when none
 * is left. claims: a zeroed int a share (share_count), shared by the
 * threads; *looked: how many the calling thread has looked at, 0 at
 * first. What a share computes must not depend on which thread took it: a
 * sum over its images goes where the share's owner would have put it. So
 * a thread that the operating system set aside before it began its share
 * holds no one up (another takes the share whole), and a team of fewer
 * threads than shares takes them all. */
KERNEL_HELPER int share_claim(int *claims, int *looked)
{
	int shares = share_count();
	while (*looked < shares) {
		int share = (omp_get_thread_num() + (*looked)++) % shares;
		if (claim_first(&claims[share]))
			return share;
	}
	return -1;
}

#endif
