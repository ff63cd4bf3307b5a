/* Doubles as the shortest text that reads back to the same value; see
 * real_text.h. */
#include "real_text.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

char *real_text(char buffer[32], double value)
{
	for (int digits = 1; digits <= 17; digits++) {
		snprintf(buffer, 32, "%.*g", digits, value);
		if (strtod(buffer, NULL) == value)
			break;
	}
	/* A whole number reads as one: 10, not %g's 1e+01. */
	if (strchr(buffer, 'e') && value == trunc(value) && fabs(value) < 1e15)
		snprintf(buffer, 32, "%.0f", value);
	return buffer;
}
