/* The gradient's flow through the units, the measurement of the paper's
 * sections 2 and 3, recorded by `gradflow` as it trains. */
#ifndef RESGEN_GRADFLOW_H
#define RESGEN_GRADFLOW_H

#include <stdio.h>

#include "session.h"

/* One measurement at iteration into csv, its writing checked: 0, or 1
 * with the error printed. */
int gradflow_record(struct session *s, const struct run_options *o, long iteration, FILE *csv);

#endif
