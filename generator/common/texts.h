/* Writing the generator's output files: emitted code, a study's specs and
 * its report. */
#ifndef RESGEN_TEXTS_H
#define RESGEN_TEXTS_H

#include <stdbool.h>

#include "diag.h"
#include "strbuf.h"

/* Creates dir and the folders above it as needed. */
int make_dirs(const char *dir, struct diag *d);

/* Writes texts[i] to dir/names[i], creating dir. Every file is written in
 * full before any replaces its old version (runtime/shared/file_replace.h), so a
 * failure leaves the folder as it was. keep_same: a file that already holds
 * its text is left untouched, its time too, so that make rebuilds only what
 * changed. */
int write_texts(const char *dir, const char *const *names, struct strbuf *texts, int count,
		bool keep_same, struct diag *d);

/* Whether every dir/names[i] already holds texts[i]: written before. */
bool texts_written(const char *dir, const char *const *names, const struct strbuf *texts, int count);

#endif
