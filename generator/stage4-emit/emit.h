/* Plan -> C source. Stage 4 of the generator; reads the plan (and, through
 * it, the graph and spec) and the templates, and writes net.c, kernels.h
 * and arena.h into one folder, all or nothing. */
#ifndef RESGEN_EMIT_H
#define RESGEN_EMIT_H

#include <stdbool.h>

#include "diag.h"
#include "plan.h"

enum dtype { DTYPE_F32, DTYPE_F64 };

int emit_network(const struct plan *plan, const char *templates_dir, const char *out_dir,
		 enum dtype dtype, struct diag *d);

#endif
