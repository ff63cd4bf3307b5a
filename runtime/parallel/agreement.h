/* Values every rank of a run must hold alike, compared across the ranks:
 * numbers, flags, hashes and words, each named as the user would write
 * it. What a run compares, and when, is run_agreement.h's. */
#ifndef RESGEN_AGREEMENT_H
#define RESGEN_AGREEMENT_H

#include <stdint.h>

/* One value, named as the user would write it, and how to show it. */
struct agreed {
	const char *what; /* "--batch", "the command", "the data" */
	uint64_t value;
	enum { AGREED_NUMBER, AGREED_GIVEN, AGREED_HASH, AGREED_WORD } kind;
	const char *const *words; /* AGREED_WORD: the value's names, by value */
};

/* 0 if every rank holds each value alike. Else rank 0 names the first value
 * that differs, as it is on rank 0 and on the lowest rank that differs, and
 * every rank returns 2 (agreed, so that the job ends quietly). Every rank
 * calls it at the same point with a list of the same length. */
int ranks_agree_on(const struct agreed *values, int count);

#endif
