/* The time split of runtime/profile.h. */
#include "profile.h"

#include <string.h>

double profile_seconds[PROFILE_KIND_COUNT];

const char *const profile_kind_names[PROFILE_KIND_COUNT] = {
	[PROFILE_CONV_FORWARD] = "conv forward",
	[PROFILE_CONV_DATA_GRADIENT] = "conv data gradient",
	[PROFILE_CONV_WEIGHT_GRADIENT] = "conv weight gradient",
	[PROFILE_ELEMENTWISE] = "BN, ReLU, add",
};

void profile_reset(void) { memset(profile_seconds, 0, sizeof profile_seconds); }
