/* Where a learning-rate step falls: given as an iteration, or as a fraction
 * of a run of iterations (rounded to the nearest). Header-only, so that the
 * binary's schedule (train.c) and resgen's warnings (spec.c) agree. */
#ifndef RESGEN_SCHEDULE_H
#define RESGEN_SCHEDULE_H

#include <math.h>
#include <stdbool.h>

static inline long schedule_step_at(double step, bool fraction, long iterations)
{
	return fraction ? (long)llround(step * (double)iterations) : (long)step;
}

#endif
