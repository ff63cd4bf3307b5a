/* explain: what each convolution of this network runs on this machine,
 * and why. The choices are made once, from the shapes and the machine
 * (runtime/kernels/conv/choices.h, runtime/machine/machine.h), exactly as train
 * makes them; this prints them at the batch and thread count given. */
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "isa.h"
#include "machine.h"
#include "net_api.h"
#include "threads.h"
#include "train.h"

int explain_run(const struct run_options *o)
{
	int threads = threads_setup(o->threads, 0);
	const struct machine *m = machine();
	printf("%s: %s, %s, batch %d, %d thread%s\n", net_info.name, net_info.summary, net_info.dtype, o->batch, threads,
	       threads == 1 ? "" : "s");
	if (m->micro)
		printf("machine: BLIS's %s kernels, micro-kernel %d x %d (%s-stored blocks preferred)", m->kernels,
		       m->micro->mr, m->micro->nr, m->micro->prefers_rows ? "row" : "column");
	else
		printf("machine: BLIS's %s kernels, whose micro-kernel the fast kernels cannot use (panels over %d)",
		       m->kernels, GEMM_PANEL_MAX);
	if (m->last_level_bytes)
		printf(", last-level cache %.0f MiB\n", (double)m->last_level_bytes / (1 << 20));
	else
		printf(", last-level cache unknown (Linux does not say)\n");
	printf("instructions: resgen's kernels for %s; RESGEN_ISA=%s forces one\n", isa_taken(), isa_words());
	if (threads > 1) {
		/* the topology as Linux says it; the round trip only confirms it,
		 * and a busy machine slows one */
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		int sharing = machine_last_level_sharing();
		if (sharing > 0)
			printf("cores: cpu0's last-level cache is shared by %d of the %ld CPUs online (Linux's sysfs): %s\n",
			       sharing, online, sharing >= online ? "every core shares it" : "the cores have last-level "
			       "caches of their own, one to a group");
		else
			printf("cores: Linux does not say which CPUs share the last-level cache\n");
		machine_round_trip_ns(1, 0.1); /* wakes the threads: the pool's first start is not a round trip */
		double trip = machine_round_trip_median(3, MACHINE_PROBE_TRIPS, 1e-3);
		bool apart = trip > MACHINE_APART_NS;
		const char *verdict = apart ? ", as from cores with a last-level cache each"
					    : ", as from cores that share a cache";
		if (sharing > 0 && apart == (sharing < online))
			verdict = ", as Linux says";
		else if (sharing > 0 && apart)
			verdict = ", slower than cores that share a cache: the machine may be busy, or the threads "
				  "were on cores apart";
		else if (sharing > 0)
			verdict = ", as fast as cores that share a cache, though Linux says some do not: the threads "
				  "were on cores that share one";
		printf("threads: a cache line's round trip between threads 0 and 1 took %.0f ns%s (a run measures it "
		       "again before each pass, at most every %.1f s, and streams where it is slow)\n",
		       trip, verdict, MACHINE_PROBE_SECONDS);
	}
	printf("RESGEN_CHOICES: %s\n", m->override_text && m->override_text[0] ? m->override_text
										 : "unset (every choice by its rule)");
	printf("Every pass shares the images among the threads. A convolution's pass takes them in groups\n"
	       "(one image, or Winograd's group): each thread its own contiguous share first, then the\n"
	       "others' unclaimed groups, from their last; each thread sums the weight gradient of its own\n"
	       "share, and the shares are added in thread order. BN, ReLU, the additions and pooling split\n"
	       "the images (or channels) evenly; BN's sums are added in image order. The algorithms follow\n"
	       "the shapes alone, so that every kind of node adds the same products in the same order: their\n"
	       "steps count blocks of %d x %d outputs (BLIS's skx kernel's, whatever kernel runs), each a sum\n"
	       "of that many products.\n\n",
	       CONV_RULE_MR, CONV_RULE_NR);
	net_explain(stdout, o->batch);
	return fflush(stdout) == 0 ? 0 : 1;
}
