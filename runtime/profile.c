/* The time split of runtime/profile.h. */
#include "profile.h"

#include <string.h>

double profile_seconds[PROFILE_KIND_COUNT];
struct profile_kernel profile_kernels[PROFILE_KERNELS_MAX];
int profile_kernel_count;

const char *const profile_kind_names[PROFILE_KIND_COUNT] = {
	[PROFILE_CONV_FORWARD] = "conv forward",
	[PROFILE_CONV_DATA_GRADIENT] = "conv data gradient",
	[PROFILE_CONV_WEIGHT_GRADIENT] = "conv weight gradient",
	[PROFILE_ELEMENTWISE] = "BN, ReLU, add",
};

int profile_kernel_slot(const char *name)
{
	for (int i = 0; i < profile_kernel_count; i++)
		if (strcmp(profile_kernels[i].name, name) == 0)
			return i;
	if (profile_kernel_count == PROFILE_KERNELS_MAX)
		return -1;
	profile_kernels[profile_kernel_count].name = name;
	return profile_kernel_count++;
}

void profile_reset(void)
{
	memset(profile_seconds, 0, sizeof profile_seconds);
	for (int i = 0; i < profile_kernel_count; i++)
		memset(profile_kernels[i].seconds, 0, sizeof profile_kernels[i].seconds);
}
