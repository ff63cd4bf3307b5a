/* Pillow's bilinear resampling of 8-bit images: resize.h. */
#include "resize.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { PRECISION_BITS = 32 - 8 - 2 };

/* The weights of outputs first .. first + count - 1 along one side of
 * in_size pixels resized to out_size: for the window's i-th, those of the
 * input pixels bounds[2i] .. bounds[2i] + bounds[2i + 1] - 1, at
 * weights[i * size ..]. Each output's weights depend on its own index
 * alone, so a window's are the whole side's. The size of a pixel's
 * window of weights, or -1. */
static int coefficients(int in_size, int out_size, int first, int count, int **bounds_out, int32_t **weights_out)
{
	double scale = (double)in_size / out_size, filter_scale = scale < 1 ? 1 : scale;
	double support = 1.0 * filter_scale; /* the triangle's support is 1 */
	int size = (int)ceil(support) * 2 + 1;
	int *bounds = malloc((size_t)count * 2 * sizeof *bounds);
	double *real = malloc((size_t)size * sizeof *real);
	int32_t *weights = calloc((size_t)count * size, sizeof *weights);
	if (!bounds || !real || !weights) {
		free(bounds);
		free(real);
		free(weights);
		return -1;
	}
	for (int i = 0; i < count; i++) {
		double center = (first + i + 0.5) * scale, total = 0, inverse = 1.0 / filter_scale;
		int low = (int)(center - support + 0.5), high = (int)(center + support + 0.5);
		low = low < 0 ? 0 : low;
		high = (high > in_size ? in_size : high) - low;
		for (int x = 0; x < high; x++) {
			double w = fabs((x + low - center + 0.5) * inverse);
			real[x] = w < 1 ? 1 - w : 0;
			total += real[x];
		}
		for (int x = 0; x < high; x++) {
			double w = total != 0 ? real[x] / total : real[x];
			weights[(size_t)i * size + x] = (int32_t)(w < 0 ? -0.5 + w * (1 << PRECISION_BITS)
								       : 0.5 + w * (1 << PRECISION_BITS));
		}
		bounds[2 * i] = low;
		bounds[2 * i + 1] = high;
	}
	free(real);
	*bounds_out = bounds;
	*weights_out = weights;
	return size;
}

static unsigned char clip8(int32_t v)
{
	if (v >= (1 << PRECISION_BITS << 8))
		return 255;
	if (v <= 0)
		return 0;
	return (unsigned char)(v >> PRECISION_BITS);
}

int resize_rgb_window(const unsigned char *in, int width, int height, size_t stride, int out_width, int out_height,
		      int x0, int y0, int w, int h, unsigned char *out)
{
	if (x0 < 0 || y0 < 0 || w < 1 || h < 1 || x0 + w > out_width || y0 + h > out_height)
		return -1;
	int *x_bounds = NULL, *y_bounds = NULL;
	int32_t *x_weights = NULL, *y_weights = NULL;
	int x_size = coefficients(width, out_width, x0, w, &x_bounds, &x_weights);
	int y_size = coefficients(height, out_height, y0, h, &y_bounds, &y_weights);
	/* the rows the columns' pass reads: the first and last used */
	int first = y_size > 0 ? y_bounds[0] : 0;
	int last = y_size > 0 ? y_bounds[2 * h - 2] + y_bounds[2 * h - 1] : 0;
	int rows = last - first;
	unsigned char *temp = x_size > 0 && y_size > 0 ? malloc((size_t)rows * w * 3) : NULL;
	int status = temp ? 0 : -1;
	/* Pillow skips a pass whose side does not change */
	int horizontal = out_width != width, vertical = out_height != height;
	for (int y = 0; status == 0 && y < rows; y++) {
		const unsigned char *row = in + (size_t)(y + first) * stride;
		unsigned char *to = temp + (size_t)y * w * 3;
		if (!horizontal) {
			memcpy(to, row + (size_t)x0 * 3, (size_t)w * 3);
			continue;
		}
		for (int x = 0; x < w; x++) {
			const int32_t *k = x_weights + (size_t)x * x_size;
			int low = x_bounds[2 * x], count = x_bounds[2 * x + 1];
			int32_t sums[3] = {1 << (PRECISION_BITS - 1), 1 << (PRECISION_BITS - 1), 1 << (PRECISION_BITS - 1)};
			for (int j = 0; j < count; j++)
				for (int c = 0; c < 3; c++)
					sums[c] += row[(size_t)(j + low) * 3 + c] * k[j];
			for (int c = 0; c < 3; c++)
				to[(size_t)x * 3 + c] = clip8(sums[c]);
		}
	}
	for (int y = 0; status == 0 && y < h; y++) {
		unsigned char *to = out + (size_t)y * w * 3;
		if (!vertical) {
			memcpy(to, temp + (size_t)(y0 + y - first) * w * 3, (size_t)w * 3);
			continue;
		}
		const int32_t *k = y_weights + (size_t)y * y_size;
		int low = y_bounds[2 * y] - first, count = y_bounds[2 * y + 1];
		for (int x = 0; x < w * 3; x++) {
			int32_t sum = 1 << (PRECISION_BITS - 1);
			for (int j = 0; j < count; j++)
				sum += temp[(size_t)(j + low) * w * 3 + x] * k[j];
			to[x] = clip8(sum);
		}
	}
	free(temp);
	free(x_bounds);
	free(y_bounds);
	free(x_weights);
	free(y_weights);
	return status;
}

int resize_rgb(const unsigned char *in, int width, int height, size_t stride, unsigned char *out, int out_width,
	       int out_height)
{
	return resize_rgb_window(in, width, height, stride, out_width, out_height, 0, 0, out_width, out_height, out);
}
