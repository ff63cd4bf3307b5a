/* Text from outside (a path, an option, a spec's words) made printable
 * before it is shown: control bytes, bytes that are not well-formed UTF-8
 * and C1 controls become \xNN, so that a message can neither drive the
 * terminal nor break into two lines. Shared by the generator and the
 * runtime. */
#ifndef RESGEN_PRINTABLE_H
#define RESGEN_PRINTABLE_H

#include <stdarg.h>
#include <stddef.h>

/* text made printable, into out; truncated to fit. */
void printable_text(char *out, size_t size, const char *text);

/* One line to stderr: the message as printf formats it (its '\n' at the
 * end, as given), every byte before that made printable. */
void error_line(const char *format, ...) __attribute__((format(printf, 1, 2)));
void error_line_v(const char *format, va_list arguments) __attribute__((format(printf, 1, 0)));

#endif
