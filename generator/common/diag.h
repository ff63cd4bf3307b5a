/* Errors as values: a failing stage records one line, FILE:LINE:COL: message,
 * and returns -1; only main prints it. Every recorded line is printable. */
#ifndef RESGEN_DIAG_H
#define RESGEN_DIAG_H

#include <stddef.h>

#include "printable.h" /* every recorded line is made printable */

struct diag {
	char text[768];
};

/* Records "file:line:col: message" in d and returns -1. */
int diag_at(struct diag *d, const char *file, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Records "file: message" (no position) in d and returns -1. */
int diag_file(struct diag *d, const char *file, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records a whole line as given (it names its own file) and returns -1. */
int diag_line(struct diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
