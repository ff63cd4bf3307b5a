/* One-line diagnostics, formatted once, printed by main. Whatever the
 * message quotes from a spec or a path is made printable here: control
 * bytes, stray bytes that are not UTF-8 and C1 controls become \xNN, so a
 * message can neither drive the terminal nor break into two lines. */
#include "diag.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The length of the printable UTF-8 character at text, or 0: a printable
 * ASCII byte, or a well-formed sequence for U+00A0 and above (no C1
 * controls, no overlong forms, no surrogates). */
static int printable_length(const unsigned char *text)
{
	unsigned char c = text[0];
	if (c >= 0x20 && c < 0x7f)
		return 1;
	int length = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
					     : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	for (int i = 1; i < length; i++)
		if ((text[i] & 0xc0) != 0x80)
			return 0;
	if (length == 2 && c == 0xc2 && text[1] < 0xa0)
		return 0; /* C1 controls, U+0080 to U+009F */
	if (length == 3 && ((c == 0xe0 && text[1] < 0xa0) || (c == 0xed && text[1] >= 0xa0)))
		return 0;
	if (length == 4 && ((c == 0xf0 && text[1] < 0x90) || (c == 0xf4 && text[1] >= 0x90)))
		return 0;
	return length;
}

void diag_printable(char *out, size_t size, const char *text)
{
	size_t used = 0;
	const unsigned char *at = (const unsigned char *)text;
	while (*at && used + 1 < size) {
		int length = printable_length(at);
		if (length > 0) {
			if (used + (size_t)length >= size)
				break;
			memcpy(out + used, at, (size_t)length);
			used += (size_t)length;
			at += length;
		} else {
			if (used + 4 >= size)
				break;
			snprintf(out + used, size - used, "\\x%02x", *at);
			used += 4;
			at++;
		}
	}
	out[used] = '\0';
}

static int record(struct diag *d, const char *prefix, const char *fmt, va_list args)
{
	char raw[sizeof d->text];
	int used = snprintf(raw, sizeof raw, "%s", prefix);
	if (used >= 0 && (size_t)used < sizeof raw)
		vsnprintf(raw + used, sizeof raw - (size_t)used, fmt, args);
	diag_printable(d->text, sizeof d->text, raw);
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
