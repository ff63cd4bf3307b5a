/* The learning-rate schedules, and where a step falls: given as an
 * iteration, or as a fraction of a run of iterations (rounded to the
 * nearest). Header-only, so that the binary's schedule (session.c) and
 * resgen's spec reader and warnings (spec.c) agree. */
#ifndef RESGEN_SCHEDULE_H
#define RESGEN_SCHEDULE_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

/* The learning-rate schedules after the warm-up: the paper's steps (base,
 * times gamma at each step), or a cosine from base down to 0 at the end of
 * the run. */
enum lr_schedule { LR_SCHEDULE_STEP, LR_SCHEDULE_COSINE, LR_SCHEDULE_COUNT };
static const char *const lr_schedule_names[LR_SCHEDULE_COUNT] = {"step", "cosine"};

static inline long schedule_step_at(double step, bool fraction, long iterations)
{
	return fraction ? (long)llround(step * (double)iterations) : (long)step;
}

/* What a valid schedule does that cannot be meant, for a run of
 * iterations: a warm-up as long as the run, a step at or past its end, a
 * step inside the warm-up (felt only when the warm-up ends). Found here
 * and worded here, for resgen's spec warnings and the binaries' alike. */
struct schedule_facts {
	long warmup_iterations;
	double warmup_lr, lr_base, lr_gamma;
	int step_count;
	const double *steps;
	bool fractions;
};

/* Up to max warnings ("warning: ..."), each into its own row of out
 * (size bytes each); *at_steps[i] says whether row i is about the steps
 * (else the warm-up), for where a spec's message points. The count. */
static inline int schedule_warnings(const struct schedule_facts *f, long iterations, char (*out)[320], bool *at_steps,
				    int max)
{
	int count = 0;
	if (count < max && f->warmup_iterations >= iterations) {
		at_steps[count] = false;
		snprintf(out[count++], sizeof out[0],
			 "warning: the warm-up lasts %ld iterations, the whole run of %ld, so the rate stays %g "
			 "throughout; give lr.warmup.iterations below %ld (0 for none)",
			 f->warmup_iterations, iterations, f->warmup_lr, iterations);
	}
	double after_warmup = f->lr_base;
	for (int i = 0; i < f->step_count; i++)
		if (schedule_step_at(f->steps[i], f->fractions, iterations) <= f->warmup_iterations)
			after_warmup *= f->lr_gamma;
	for (int i = 0; i < f->step_count && count < max; i++) {
		long at = schedule_step_at(f->steps[i], f->fractions, iterations);
		at_steps[count] = true;
		if (at >= iterations)
			snprintf(out[count++], sizeof out[0],
				 "warning: the rate step at iteration %ld lies at or past the end of the run (%ld "
				 "iterations) and never takes effect; give it below %ld, or as a fraction of the run "
				 "such as 0.5",
				 at, iterations, iterations);
		else if (at < f->warmup_iterations && f->warmup_iterations < iterations)
			snprintf(out[count++], sizeof out[0],
				 "warning: the rate step at iteration %ld falls inside the warm-up (its first %ld "
				 "iterations), so the rate after the warm-up is %g, not lr.base %g; give the step "
				 "after the warm-up, or a shorter warm-up",
				 at, f->warmup_iterations, after_warmup, f->lr_base);
	}
	return count;
}

#endif
