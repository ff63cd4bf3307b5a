/* One-line diagnostics, formatted once, printed by main. */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>

int diag_at(struct diag *d, const char *file, int line, int col, const char *fmt, ...)
{
	int used = snprintf(d->text, sizeof d->text, "%s:%d:%d: ", file, line, col);
	va_list args;
	va_start(args, fmt);
	if (used >= 0 && (size_t)used < sizeof d->text)
		vsnprintf(d->text + used, sizeof d->text - (size_t)used, fmt, args);
	va_end(args);
	return -1;
}

int diag_file(struct diag *d, const char *file, const char *fmt, ...)
{
	int used = snprintf(d->text, sizeof d->text, "%s: ", file);
	va_list args;
	va_start(args, fmt);
	if (used >= 0 && (size_t)used < sizeof d->text)
		vsnprintf(d->text + used, sizeof d->text - (size_t)used, fmt, args);
	va_end(args);
	return -1;
}
