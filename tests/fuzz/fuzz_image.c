/* libFuzzer harness: any bytes as an image file of a folder of images,
 * checked, decoded (libjpeg-turbo, stb_image), resized and cropped as
 * training and evaluation crop them (runtime/data/image_folder.h), at a
 * crop of 32 so that the resize both shrinks and grows. Built with
 * AddressSanitizer and UBSan by `make fuzz` (libjpeg-turbo itself is not
 * instrumented: what is checked is resgen's use of it); a crash, a leak,
 * undefined behaviour or a refusal without a reason stops the run. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "image_folder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum { CROP = 32 };
	static real out[3 * CROP * CROP];
	const double *mean = image_folder_mean, *std = image_folder_std;
	/* the paper's [256, 480] at 224, scaled to this crop */
	struct folder_augment scale = {37, 69, false, true}, aspect = {37, 69, true, true};
	const struct folder_augment *ways[] = {NULL, &scale, &aspect};
	for (int i = 0; i < 3; i++) {
		char reason[256] = "";
		if (image_bytes_fill(data, (long)size, CROP, ways[i], (uint64_t)size * 7 + (uint64_t)i, mean, std, out,
				     reason, sizeof reason) != 0 &&
		    reason[0] == '\0')
			__builtin_trap(); /* every refusal says why */
		for (int k = 0; k < 3 * CROP * CROP; k++)
			if (out[k] != out[k])
				__builtin_trap(); /* no NaN reaches the network */
	}
	return 0;
}
