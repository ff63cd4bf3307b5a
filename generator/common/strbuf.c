/* The growable text buffer (strbuf.h): appends, formatted appends, and the
 * sticky allocation failure checked when the text is written out. */
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(struct strbuf *b, size_t extra)
{
	if (b->failed)
		return false;
	if (b->length + extra + 1 <= b->capacity)
		return true;
	size_t capacity = b->capacity ? b->capacity : 4096;
	while (capacity < b->length + extra + 1)
		capacity *= 2;
	char *text = realloc(b->text, capacity);
	if (!text) {
		b->failed = true;
		return false;
	}
	b->text = text;
	b->capacity = capacity;
	return true;
}

void strbuf_append(struct strbuf *b, const char *text, size_t length)
{
	if (!reserve(b, length))
		return;
	memcpy(b->text + b->length, text, length);
	b->length += length;
	b->text[b->length] = '\0';
}

void strbuf_puts(struct strbuf *b, const char *text) { strbuf_append(b, text, strlen(text)); }

void strbuf_printf(struct strbuf *b, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	char small[256];
	int needed = vsnprintf(small, sizeof small, fmt, args);
	va_end(args);
	if (needed < 0) {
		b->failed = true;
		return;
	}
	if ((size_t)needed < sizeof small) {
		strbuf_append(b, small, (size_t)needed);
		return;
	}
	if (!reserve(b, (size_t)needed))
		return;
	va_start(args, fmt);
	vsnprintf(b->text + b->length, (size_t)needed + 1, fmt, args);
	va_end(args);
	b->length += (size_t)needed;
}

const char *strbuf_text(const struct strbuf *b)
{
	return b->text ? b->text : "";
}

void strbuf_free(struct strbuf *b)
{
	free(b->text);
	memset(b, 0, sizeof *b);
}
