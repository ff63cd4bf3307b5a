/* Doubles as the shortest text that reads back to the same value, so that
 * emitted code, comments and the recipe's settings are exact and stable.
 * Shared by the generator and the runtime. */
#ifndef RESGEN_REAL_TEXT_H
#define RESGEN_REAL_TEXT_H

/* Writes the shortest round-tripping form of value into buffer (32 bytes)
 * and returns buffer. */
char *real_text(char buffer[32], double value);

#endif
