/* Text made printable; see printable.h. */
#include "printable.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Compiled for the baseline processor: the instruction check calls it
 * before it knows what the processor has (machine.c). */
#if defined(__x86_64__)
#define PRINTABLE_BASELINE __attribute__((target("arch=x86-64")))
#else
#define PRINTABLE_BASELINE
#endif

/* The length of the printable UTF-8 character at text, or 0: a printable
 * ASCII byte, or a well-formed sequence for U+00A0 and above (no C1
 * controls, no overlong forms, no surrogates). */
PRINTABLE_BASELINE static int printable_length(const unsigned char *text)
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

PRINTABLE_BASELINE void printable_text(char *out, size_t size, const char *text)
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

void error_line_v(const char *format, va_list arguments)
{
	char raw[4096], shown[4 * sizeof raw];
	vsnprintf(raw, sizeof raw, format, arguments);
	size_t length = strlen(raw);
	bool newline = length > 0 && raw[length - 1] == '\n';
	if (newline)
		raw[length - 1] = '\0';
	printable_text(shown, sizeof shown, raw);
	fprintf(stderr, "%s%s", shown, newline ? "\n" : "");
}

void error_line(const char *format, ...)
{
	va_list arguments;
	va_start(arguments, format);
	error_line_v(format, arguments);
	va_end(arguments);
}
