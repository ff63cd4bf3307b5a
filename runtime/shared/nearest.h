/* The word of choices nearest to word (edit distance), for "did you mean".
 * Shared by the generator (spec and study keys) and the runtime (--set). */
#ifndef RESGEN_NEAREST_H
#define RESGEN_NEAREST_H

const char *nearest(const char *word, const char *const *choices, int count);

#endif
