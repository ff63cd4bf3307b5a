/* make bench-bf16: one thread's GFLOP/s of each bf16 path this processor
 * has (runtime/machine/bf16.h), both orders, against the f32 GEMM the
 * networks call (gemm.h: BLIS, with the kernels resgen chooses) on the
 * same shape, in the same run. Each call packs its operands, as the
 * kernels do today, and that is counted. Then, for each path that reads
 * a convolution's columns in place (the emulations, vdpbf16ps), a
 * 3x3 convolution's product an image at several shapes, its columns
 * packed first or read in place from the image (bf16_multiply_image),
 * which is what bf16_reads_image's rule follows.
 * The best of BENCH_ROUNDS rounds of at least 0.4 s counts; the machine
 * may be shared. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bf16.h"
#include "gemm.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *aligned(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

/* One image's product of a 3x3 convolution (c_in to c_out channels,
 * width x width, stride 1) by path in its arithmetic: GFLOP/s with its
 * columns packed (copied from the rounded, bordered image as the
 * convolutions' packing does: widened, or gathered in pairs from the image
 * as bf16) and read in place (from the image with its border beside the
 * rows or without, as bf16_image_rows_apart says), the best of rounds
 * rounds each. */
static int image_product(enum bf16_path path, enum bf16_arithmetic arithmetic, int c_in, int c_out, int width, int rounds)
{
	int wp = width + 2, plane = wp * wp, k = 9 * c_in, n = width * width, np = bf16_packed_b_width(n);
	bool pairs = bf16_b_layout(path) == BF16_B_PAIRS;
	/* aligned as the networks' tensors and buffers are (B's rows must be) */
	int flat_plane = (width + 2) * width + 2;
	float *image = aligned(sizeof(float) * (size_t)c_in * plane), *a = aligned(sizeof(float) * (size_t)c_out * k);
	float *flat = aligned(sizeof(float) * (size_t)c_in * flat_plane);
	uint16_t *halves = aligned(sizeof(uint16_t) * (size_t)c_in * plane);
	float *c = aligned(sizeof(float) * (size_t)c_out * n), *columns = aligned(bf16_packed_b_bytes(path, arithmetic, k, n));
	void *packed = aligned(bf16_packed_a_bytes(path, arithmetic, c_out, k));
	ptrdiff_t *offsets = malloc(sizeof(ptrdiff_t) * (size_t)k), *flat_offsets = malloc(sizeof(ptrdiff_t) * (size_t)k);
	if (!image || !flat || !halves || !a || !c || !columns || !packed || !offsets || !flat_offsets) {
		fprintf(stderr, "bench-bf16: out of memory\n");
		return 1;
	}
	memset(image, 0, sizeof(float) * (size_t)c_in * plane);
	memset(flat, 0, sizeof(float) * (size_t)c_in * flat_plane);
	for (int ch = 0; ch < c_in; ch++)
		for (int y = 1; y <= width; y++)
			for (int x = 1; x <= width; x++)
				flat[(size_t)ch * flat_plane + y * width + x] = image[(size_t)ch * plane + y * wp + x] =
					bf16_to_float(bf16_from_float((float)(rand() % 200) / 100 - 1));
	bf16_convert(halves, image, (size_t)c_in * plane);
	for (int i = 0; i < c_out * k; i++)
		a[i] = (float)(rand() % 200) / 100 - 1;
	for (int e = 0; e < k; e++) {
		offsets[e] = (ptrdiff_t)(e / 9) * plane + e % 9 / 3 * wp + e % 3;
		flat_offsets[e] = (ptrdiff_t)(e / 9) * flat_plane + e % 9 / 3 * width + e % 3;
	}
	bf16_pack_a(path, arithmetic, false, c_out, k, a, k, packed);
	double flops = 2.0 * c_out * n * k, rate[2] = {0, 0};
	for (int r = 0; r < rounds; r++)
		for (int way = 0; way < 2; way++) { /* in turns: the machine may be shared */
			int calls = 0;
			double start = now(), took;
			do {
				if (way == 0) {
					for (int y = 0; y < width; y++)
						if (pairs)
							bf16_gather_pairs((uint32_t *)columns + (size_t)y * width, np, halves + (size_t)y * wp,
									  offsets, k, width);
						else
							for (int e = 0; e < k; e++)
								memcpy(columns + (size_t)e * np + (size_t)y * width,
								       image + offsets[e] + (size_t)y * wp, sizeof(float) * (size_t)width);
					bf16_pad_b(path, arithmetic, k, n, columns);
					bf16_multiply(path, arithmetic, c_out, n, k, packed, columns, false, c, n);
				} else if (bf16_image_rows_apart(width) == wp)
					bf16_multiply_image(path, arithmetic, c_out, n, k, packed, image, offsets, width, wp, false, c, n);
				else
					bf16_multiply_image(path, arithmetic, c_out, n, k, packed, flat, flat_offsets, width, width, false, c,
							    n);
				calls++;
			} while ((took = now() - start) < 0.4);
			rate[way] = flops * calls / took / 1e9 > rate[way] ? flops * calls / took / 1e9 : rate[way];
		}
	printf("%-12s %4d -> %-4d %3dx%-3d %12.1f %12.1f %8.2f %s\n", bf16_path_names[path], c_in, c_out, width, width, rate[0],
	       rate[1], rate[1] / rate[0], bf16_reads_image(path, c_out, k, 3) ? "in place" : "packed");
	free(image);
	free(flat);
	free(flat_offsets);
	free(halves);
	free(a);
	free(c);
	free(columns);
	free(packed);
	free(offsets);
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3;
	/* a 3x3 convolution of 128 channels to 256, 256 positions at a time */
	const int m = 256, n = 256, k = 1152;
	uint16_t *a = malloc((size_t)m * k * sizeof *a), *b = malloc((size_t)k * n * sizeof *b);
	float *af = malloc((size_t)m * k * sizeof *af), *bf = malloc((size_t)k * n * sizeof *bf);
	float *c = calloc((size_t)m * n, sizeof *c);
	if (!a || !b || !af || !bf || !c || rounds < 1) {
		fprintf(stderr, "bench-bf16: out of memory, or rounds below 1\n");
		return 1;
	}
	srand(1);
	for (int i = 0; i < m * k; i++)
		af[i] = bf16_to_float(a[i] = bf16_from_float((float)(rand() % 200) / 100 - 1));
	for (int i = 0; i < k * n; i++)
		bf[i] = bf16_to_float(b[i] = bf16_from_float((float)(rand() % 200) / 100 - 1));
	gemm_set_threads(1);
	double flops = 2.0 * m * n * k, f32 = 0;
	for (int r = 0; r < rounds; r++) {
		int calls = 0;
		double start = now(), took;
		do {
			gemm(0, 0, m, n, k, 1, af, k, bf, n, 1, c, n);
			calls++;
		} while ((took = now() - start) < 0.4);
		f32 = flops * calls / took / 1e9 > f32 ? flops * calls / took / 1e9 : f32;
	}
	printf("C (%d x %d) += A (%d x %d) B (%d x %d), one thread, best of %d rounds\n", m, n, m, k, k, n, rounds);
	printf("%-24s %-6s %10s %10s\n", "path", "order", "GFLOP/s", "/ f32");
	printf("%-24s %-6s %10.1f %10.2f\n", "f32 gemm (BLIS)", "", f32, 1.0);
	for (int p = 0; p < BF16_PATH_COUNT; p++)
		for (int o = 0; o < BF16_ARITHMETIC_COUNT; o++) {
			char why[200];
			if (!bf16_path_available((enum bf16_path)p, (enum bf16_arithmetic)o, why, sizeof why)) {
				printf("%-24s %-6s %10s (%s)\n", bf16_path_names[p], bf16_arithmetic_names[o], "-", why);
				continue;
			}
			double best = 0;
			for (int r = 0; r < rounds; r++) {
				int calls = 0;
				double start = now(), took;
				do {
					if (bf16_gemm((enum bf16_path)p, (enum bf16_arithmetic)o, m, n, k, a, k, b, n, c, n) != 0) {
						fprintf(stderr, "bench-bf16: %s failed\n", bf16_path_names[p]);
						return 1;
					}
					calls++;
				} while ((took = now() - start) < 0.4);
				best = flops * calls / took / 1e9 > best ? flops * calls / took / 1e9 : best;
			}
			printf("%-24s %-6s %10.1f %10.2f\n", bf16_path_names[p], bf16_arithmetic_names[o], best, best / f32);
		}
	free(a);
	free(b);
	free(af);
	free(bf);
	free(c);
	/* the paths that read a convolution's columns in place, each in its
	 * first arithmetic: the emulations (tiles), vdpbf16ps (pairs) */
	const struct {
		enum bf16_path path;
		enum bf16_arithmetic arithmetic;
	} ways[] = {{BF16_AVX2, BF16_TILES}, {BF16_AVX512, BF16_TILES}, {BF16_AVX512_BF16, BF16_PAIRS}};
	const int shapes[][3] = {{16, 16, 32}, {32, 32, 16}, {64, 64, 8},    {64, 64, 32},   {64, 64, 56},  {128, 128, 28},
				 {256, 256, 14}, {512, 512, 7}, {16, 16, 28}, {32, 32, 28}, {32, 32, 20}};
	for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
		if (!bf16_path_available(ways[w].path, ways[w].arithmetic, NULL, 0))
			continue;
		printf("\nA 3x3 convolution's product an image, %s (%s), one thread, best of %d rounds:\n"
		       "its columns packed first, or read in place from the image (GFLOP/s); the last column what\n"
		       "bf16_reads_image chooses\n",
		       bf16_path_names[ways[w].path], bf16_arithmetic_names[ways[w].arithmetic], rounds);
		printf("%-12s %-12s %7s %12s %12s %8s %s\n", "path", "channels", "size", "packed", "in place", "ratio", "chosen");
		for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
			if (image_product(ways[w].path, ways[w].arithmetic, shapes[i][0], shapes[i][1], shapes[i][2], rounds) != 0)
				return 1;
	}
	return 0;
}
