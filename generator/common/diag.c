/* One-line diagnostics, formatted once, printed by main. Whatever the
 * message quotes from a spec or a path is made printable here
 * (printable.h). */
#include "diag.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "printable.h"

static int record(struct diag *d, const char *prefix, const char *fmt, va_list args)
{
	char raw[sizeof d->text];
	int used = snprintf(raw, sizeof raw, "%s", prefix);
	if (used >= 0 && (size_t)used < sizeof raw)
		vsnprintf(raw + used, sizeof raw - (size_t)used, fmt, args);
	printable_text(d->text, sizeof d->text, raw);
	return -1;
}

int diag_at(struct diag *d, const char *file, int line, int col, const char *fmt, ...)
{
	char prefix[sizeof d->text];
	snprintf(prefix, sizeof prefix, "%s:%d:%d: ", file, line, col);
	va_list args;
	va_start(args, fmt);
	record(d, prefix, fmt, args);
	va_end(args);
	return -1;
}

int diag_file(struct diag *d, const char *file, const char *fmt, ...)
{
	char prefix[sizeof d->text];
	snprintf(prefix, sizeof prefix, "%s: ", file);
	va_list args;
	va_start(args, fmt);
	record(d, prefix, fmt, args);
	va_end(args);
	return -1;
}

int diag_line(struct diag *d, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	record(d, "", fmt, args);
	va_end(args);
	return -1;
}
