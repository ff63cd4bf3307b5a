/* The time split of runtime/machine/profile.h. */
#include "profile.h"

#include <string.h>

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
	if (profile_kernel_count == PROFILE_KERNELS_MAX) /* the last, "other kernels" */
		return PROFILE_KERNELS_MAX - 1;
	if (profile_kernel_count == PROFILE_KERNELS_MAX - 1)
		name = "other kernels";
	profile_kernels[profile_kernel_count].name = name;
	return profile_kernel_count++;
}

double profile_kernel_seconds(const struct profile_kernel *kernel)
{
	double seconds = 0;
	for (int k = 0; k < PROFILE_KIND_COUNT; k++)
		seconds += kernel->seconds[k];
	return seconds;
}

double profile_kind_seconds(enum profile_kind kind)
{
	double seconds = 0;
	for (int i = 0; i < profile_kernel_count; i++)
		seconds += profile_kernels[i].seconds[kind];
	return seconds;
}

void profile_reset(void)
{
	for (int i = 0; i < profile_kernel_count; i++)
		memset(profile_kernels[i].seconds, 0, sizeof profile_kernels[i].seconds);
}
