#include "real_text.h"

#include <stdio.h>
#include <stdlib.h>

char *real_text(char buffer[32], double value)
{
	for (int digits = 1; digits <= 17; digits++) {
		snprintf(buffer, 32, "%.*g", digits, value);
		if (strtod(buffer, NULL) == value)
			break;
	}
	return buffer;
}
