/* A study's report, from its runs' logs: report.md, one row per variant
 * (the final test error's median and mean +- std over the seeds, beside the
 * paper's figure), and the tables tools/plot-study.gp draws. */
#ifndef RESGEN_REPORT_H
#define RESGEN_REPORT_H

#include "diag.h"
#include "study.h"

/* Reads results/VARIANT-seedS.csv of every run (a run counts as finished
 * when results/VARIANT-seedS.done exists) and writes results/report.md and
 * results/plot/. On failure fills d and returns -1. */
int study_report(const struct study *study, const char *results, struct diag *d);

#endif
