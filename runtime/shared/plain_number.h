/* The one notation for numbers, read alike by resgen's spec reader, the
 * binaries' --set and YAML readers such as PyYAML: decimal, an optional
 * sign, no leading zeros (YAML 1.1 reads 020 as octal 16), no hex, no '_',
 * no .inf or .nan; reals may add a fraction and an exponent. Shared by the
 * generator and the runtime. */
#ifndef RESGEN_PLAIN_NUMBER_H
#define RESGEN_PLAIN_NUMBER_H

#include <stdbool.h>

static inline bool plain_digits(const char **at)
{
	const char *start = *at;
	while (**at >= '0' && **at <= '9')
		(*at)++;
	return *at > start;
}

static inline bool plain_number(const char *text, bool real)
{
	const char *at = text + (*text == '+' || *text == '-');
	if (*at == '0' && at[1] >= '0' && at[1] <= '9')
		return false;
	if (!plain_digits(&at))
		return false;
	if (real && *at == '.') {
		at++;
		if (!plain_digits(&at))
			return false;
	}
	if (real && (*at == 'e' || *at == 'E')) {
		at++;
		at += *at == '+' || *at == '-';
		if (!plain_digits(&at))
			return false;
	}
	return *at == '\0';
}

#endif
