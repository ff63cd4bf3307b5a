/* A growable text buffer for emitted code. Allocation failure is sticky:
 * it is checked once, when the text is written out. */
#ifndef RESGEN_STRBUF_H
#define RESGEN_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf {
	char *text;
	size_t length, capacity;
	bool failed;
};

void strbuf_append(struct strbuf *b, const char *text, size_t length);
void strbuf_puts(struct strbuf *b, const char *text);
void strbuf_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_free(struct strbuf *b);
/* The text so far; "" for a buffer nothing was written to. */
const char *strbuf_text(const struct strbuf *b);

#endif
