/* Resizing 8-bit RGB images with an antialiased bilinear (triangle)
 * filter, computed as Pillow computes Image.resize(..., BILINEAR), which
 * torchvision's Resize calls: separable weights normalised per output
 * pixel, scaled to 22-bit integers, the rows resized first and rounded to
 * 8 bits, then the columns. So a crop here equals torchvision's Resize +
 * CenterCrop of the same decoded image, pixel for pixel (tests/images/).
 * Our own rather than stb_image_resize's: Debian's stb (2022-09) aborts
 * on an assertion for some ratios with its triangle filter (399 to 256
 * pixels, say), and its other filters are not Pillow's. */
#ifndef RESGEN_RESIZE_H
#define RESGEN_RESIZE_H

#include <stddef.h>

/* in (width x height, rows stride bytes apart, 3 bytes a pixel) into out
 * (out_width x out_height, packed). 0, or -1 when out of memory. */
int resize_rgb(const unsigned char *in, int width, int height, size_t stride, unsigned char *out, int out_width,
	       int out_height);

/* The part (x0, y0, w, h) of that resize alone, into out (w x h, packed),
 * the same bytes as the whole resize's there: the memory a crop takes is
 * the crop's, whatever the resized image's size. 0, or -1 when out of
 * memory or the part is not inside out_width x out_height. */
int resize_rgb_window(const unsigned char *in, int width, int height, size_t stride, int out_width, int out_height,
		      int x0, int y0, int w, int h, unsigned char *out);

#endif
