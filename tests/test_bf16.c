/* bf16 products summed in f32 (runtime/machine/bf16.h): rounding to bf16
 * (by AVX512-BF16's own instruction where the processor has it, else by
 * AVX2's integers: each machine checks the one it runs), each
 * arithmetic's order on inputs worked by hand, and every path this
 * processor has against the plain definition (the portable path), element
 * by element and bit for bit, on inputs of varied exponents, subnormal
 * inputs and results, ties and cancellation. A path the processor lacks is
 * named and passed over (the AMX and AVX512-BF16 paths are checked where
 * they exist). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bf16.h"

static uint64_t state = 0x9e3779b97f4a7c15ULL;

static uint32_t next(void)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return (uint32_t)(state >> 16);
}

/* Room for a packed operand, aligned as bf16.h asks (64 bytes). */
static void *packed_alloc(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

/* A bf16 of either sign: mostly normal numbers of exponents 2^-40 to 2^40
 * (products and sums that cancel, round and tie), some near 2^-63 (their
 * products below f32's normal range: flushed), some subnormal (read as
 * zero), some zero. */
static uint16_t value(void)
{
	uint32_t kind = next() % 16, sign = next() & 1, fraction = next() & 0x7f;
	uint32_t exponent;
	if (kind == 0)
		return (uint16_t)(sign << 15); /* zero */
	if (kind == 1)
		exponent = 0; /* subnormal */
	else if (kind == 2)
		exponent = 127 - 63 + next() % 4;
	else if (kind == 3)
		fraction &= 0x70; /* few bits: exact sums and ties */
	if (kind == 0 || kind == 1)
		exponent = 0;
	else if (kind != 2)
		exponent = 127 - 40 + next() % 81;
	if (kind == 1 && fraction == 0)
		fraction = 1;
	return (uint16_t)(sign << 15 | exponent << 7 | fraction);
}

static void test_rounding_to_bf16(void **unused)
{
	(void)unused;
	const struct {
		uint32_t in;
		uint16_t out;
	} cases[] = {
		{0x3f800000, 0x3f80}, /* 1 */
		{0x3f808000, 0x3f80}, /* 1 + 2^-8, a tie: to the even 1 */
		{0x3f818000, 0x3f82}, /* 1 + 3 * 2^-8, a tie: to the even above */
		{0x3f808001, 0x3f81}, /* above the tie */
		{0x80000000, 0x8000}, /* -0 */
		{0x00008000, 0x0000}, /* a subnormal's tie, to even */
		{0x00018000, 0x0002},
		{0x7f7fffff, 0x7f80}, /* the largest float: beyond bf16's, infinity */
		{0xff800000, 0xff80}, /* -infinity */
		{0x7fc00000, 0x7fc0}, /* a quiet NaN */
		{0xff800001, 0xffc0}, /* a signalling NaN, quieted */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		float x;
		memcpy(&x, &cases[i].in, sizeof x);
		assert_int_equal(bf16_from_float(x), cases[i].out);
	}
	/* a signalling NaN stays a NaN */
	uint32_t signalling = 0x7f800001;
	float x;
	memcpy(&x, &signalling, sizeof x);
	assert_true(isnan(bf16_to_float(bf16_from_float(x))));
	/* every bf16 comes back as itself */
	for (uint32_t b = 0; b < 0x10000; b++)
		if (!isnan(bf16_to_float((uint16_t)b)))
			assert_int_equal(bf16_from_float(bf16_to_float((uint16_t)b)), b);
	/* the vector forms round as bf16_from_float does, a tail past 8 and
	 * 16 included; the cases once more from 32, their subnormals left out
	 * (a run of 16 holding one is rounded apart where the processor
	 * rounds: AVX512-BF16's instruction takes them as zeros) */
	enum { CASES = sizeof cases / sizeof *cases, COUNT = CASES + 37 };
	float in[COUNT], rounded[COUNT];
	uint16_t converted[COUNT];
	for (size_t i = 0; i < COUNT; i++) {
		uint32_t bits = i < CASES ? cases[i].in : 0x3f800000u + (uint32_t)i * 0x9e37u;
		bool subnormal = i >= 32 && i < 32 + CASES && !(cases[i - 32].in & 0x7f800000u) && (cases[i - 32].in & 0x7fffffu);
		if (i >= 32 && i < 32 + CASES && !subnormal)
			bits = cases[i - 32].in;
		memcpy(&in[i], &bits, sizeof bits);
	}
	/* every count from the run of 32 on (a last run of each length), and
	 * nothing written past it */
	for (size_t count = 32; count <= COUNT; count++) {
		memset(rounded, 0xa5, sizeof rounded);
		memset(converted, 0xa5, sizeof converted);
		bf16_round(rounded, in, count);
		bf16_convert(converted, in, count);
		for (size_t i = 0; i < count; i++) {
			assert_int_equal(converted[i], bf16_from_float(in[i]));
			assert_int_equal(bf16_from_float(rounded[i]), bf16_from_float(in[i]));
			assert_true(bf16_to_float(bf16_from_float(in[i])) == rounded[i] || isnan(rounded[i]));
		}
		for (size_t i = count; i < COUNT; i++) {
			assert_int_equal(converted[i], 0xa5a5);
			uint32_t bits;
			memcpy(&bits, &rounded[i], sizeof bits);
			assert_int_equal(bits, 0xa5a5a5a5u);
		}
	}
	/* the rows forms: rows of 37 values 40 apart (the last 3 skipped; two
	 * vectors of 16 and a tail, four of 8 and a tail), the cases in turn,
	 * into rows 43 apart, the 6 between untouched */
	enum { ROWS = 4, LD = 40, COLUMNS = 37, LD_OUT = 43 };
	float grid[ROWS * LD];
	for (int i = 0; i < ROWS * LD; i++)
		grid[i] = in[i % COUNT];
	float rows_rounded[ROWS * LD_OUT];
	uint16_t rows_converted[ROWS * LD_OUT];
	memset(rows_rounded, 0xa5, sizeof rows_rounded);
	memset(rows_converted, 0xa5, sizeof rows_converted);
	/* then activated first (a convolution's BN and ReLU): a scale and
	 * shift that leave some values subnormal, make some -0 and NaN, and
	 * cut the negative ones to +0; and plain (no prologue) */
	const float prologues[][2] = {{0, 0}, {-0.75f, 0x1p-127f}, {1.5f, -0.5f}, {0x1p-100f, 0}};
	for (size_t t = 0; t < sizeof prologues / sizeof prologues[0]; t++) {
		const float *prologue = t == 0 ? NULL : prologues[t];
		memset(rows_rounded, 0xa5, sizeof rows_rounded);
		memset(rows_converted, 0xa5, sizeof rows_converted);
		bf16_round_rows(rows_rounded, LD_OUT, grid, LD, ROWS, COLUMNS, true, prologue);
		bf16_round_rows(rows_converted, LD_OUT, grid, LD, ROWS, COLUMNS, false, prologue);
		for (int r = 0; r < ROWS; r++)
			for (int e = 0; e < LD_OUT; e++) {
				uint32_t bits;
				memcpy(&bits, &rows_rounded[r * LD_OUT + e], sizeof bits);
				if (e >= COLUMNS) {
					assert_int_equal(rows_converted[r * LD_OUT + e], 0xa5a5);
					assert_int_equal(bits, 0xa5a5a5a5u);
					continue;
				}
				float x = grid[r * LD + e];
				if (prologue) { /* conv_activated's definition, written plainly */
					x = fmaf(x, prologue[0], prologue[1]);
					x = x > 0 ? x : 0;
				}
				uint16_t want = bf16_from_float(x);
				assert_int_equal(rows_converted[r * LD_OUT + e], want);
				assert_int_equal(bits >> 16, want);
				assert_int_equal(bits & 0xffff, 0);
			}
	}
}

/* The orders by hand: c = 1 and two products of 2^-24. The tiles order
 * sums the products in chains of their own, then adds their sum
 * (2^-23, exact) to c: 1 + 2^-23. The pairs order adds each to c in turn,
 * and 1 + 2^-24 is a tie that rounds to the even 1, twice: 1. */
static void test_the_orders_by_hand(void **unused)
{
	(void)unused;
	uint16_t a[2] = {bf16_from_float(0x1p-12f), bf16_from_float(0x1p-12f)};
	uint16_t b[2] = {bf16_from_float(0x1p-12f), bf16_from_float(0x1p-12f)};
	for (int path = 0; path < BF16_PATH_COUNT; path++)
		for (int arithmetic = 0; arithmetic < BF16_ARITHMETIC_COUNT; arithmetic++) {
			if (!bf16_path_available((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, NULL, 0))
				continue;
			float c = 1.0f;
			assert_int_equal(bf16_gemm((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, 1, 1, 2, a, 2, b, 1,
						   &c, 1),
					 0);
			assert_true(c == (arithmetic == BF16_TILES ? 1.0f + 0x1p-23f : 1.0f));
		}
	/* a subnormal input is read as zero; a subnormal product is flushed */
	uint16_t tiny[2] = {0x0001, bf16_from_float(0x1p-70f)};
	uint16_t one[2] = {bf16_from_float(1.0f), bf16_from_float(0x1p-70f)};
	for (int path = 0; path < BF16_PATH_COUNT; path++)
		for (int arithmetic = 0; arithmetic < BF16_ARITHMETIC_COUNT; arithmetic++) {
			if (!bf16_path_available((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, NULL, 0))
				continue;
			float c = 0.0f;
			assert_int_equal(bf16_gemm((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, 1, 1, 2, tiny, 2, one,
						   1, &c, 1),
					 0);
			uint32_t bits;
			memcpy(&bits, &c, sizeof bits);
			assert_int_equal(bits, 0);
		}
	/* the signs of zeros, where K is short of a block: in the tiles
	 * order each chain's products, -2^-140, are flushed to -0, and the
	 * block's padding (products +0) makes each chain +0, so c = -0 ends
	 * -0 + (+0 + +0) = +0; in the pairs order c stays -0. K of 2 and 4:
	 * vdpbf16ps's emulation of the tiles order ends a chain of one
	 * product with half a pair of padding, and a chain of two with none */
	uint16_t small[4], minus[4];
	for (int e = 0; e < 4; e++) {
		small[e] = bf16_from_float(0x1p-70f);
		minus[e] = bf16_from_float(-0x1p-70f);
	}
	for (int path = 0; path < BF16_PATH_COUNT; path++)
		for (int arithmetic = 0; arithmetic < BF16_ARITHMETIC_COUNT; arithmetic++)
			for (int k = 2; k <= 4 && bf16_path_available((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, NULL, 0);
			     k += 2) {
				float c = -0.0f;
				assert_int_equal(bf16_gemm((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, 1, 1, k, small,
							   k, minus, 1, &c, 1),
						 0);
				uint32_t bits;
				memcpy(&bits, &c, sizeof bits);
				assert_int_equal(bits, arithmetic == BF16_TILES ? 0 : 0x80000000u);
			}
}

/* Every path of each arithmetic against the portable one, on shapes with
 * edges in every direction (K not a whole block or pair, M and N not whole
 * tiles: N's last 8 columns or fewer, AVX2's blocks of one vector), C
 * starting from values of its own; N of 128 or more, or K of 2048 (A's
 * rows 4 KiB apart), where vdpbf16ps reads A in panels (M not a whole
 * panel); A larger than AVX2_A_HELD (120 x 600), whose parts of K AVX2
 * takes for all of N in turn. */
static void test_every_path_gives_the_definitions_bits(void **unused)
{
	(void)unused;
	const int shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {16, 16, 32}, {17, 33, 65}, {40, 20, 100}, {5, 64, 288}, {29, 16, 96},
				 {64, 48, 576}, {13, 130, 70}, {29, 144, 600}, {21, 16, 2048}, {120, 49, 600}};
	long compared[BF16_PATH_COUNT][BF16_ARITHMETIC_COUNT] = {{0}}, differing_orders = 0, outputs = 0;
	for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
		int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
		int lda = k + 3, ldb = n + 1, ldc = n + 2;
		uint16_t *a = malloc((size_t)m * lda * sizeof *a), *b = malloc((size_t)k * ldb * sizeof *b);
		float *start = malloc((size_t)m * ldc * sizeof *start), *want[BF16_ARITHMETIC_COUNT], *got;
		for (int i = 0; i < m * lda; i++)
			a[i] = value();
		for (int i = 0; i < k * ldb; i++)
			b[i] = value();
		for (int i = 0; i < m * ldc; i++)
			start[i] = (next() % 4 == 0) ? 0.0f : bf16_to_float(value()) * 3.0f;
		got = malloc((size_t)m * ldc * sizeof *got);
		for (int arithmetic = 0; arithmetic < BF16_ARITHMETIC_COUNT; arithmetic++) {
			want[arithmetic] = malloc((size_t)m * ldc * sizeof *want[arithmetic]);
			memcpy(want[arithmetic], start, (size_t)m * ldc * sizeof *start);
			assert_int_equal(bf16_gemm(BF16_PORTABLE, (enum bf16_arithmetic)arithmetic, m, n, k, a, lda, b, ldb,
						   want[arithmetic], ldc),
					 0);
			for (int path = 1; path < BF16_PATH_COUNT; path++) {
				if (!bf16_path_available((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, NULL, 0))
					continue;
				memcpy(got, start, (size_t)m * ldc * sizeof *start);
				assert_int_equal(bf16_gemm((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, m, n, k, a, lda,
							   b, ldb, got, ldc),
						 0);
				for (int i = 0; i < m; i++)
					for (int j = 0; j < ldc; j++) {
						uint32_t x, y;
						memcpy(&x, &got[i * ldc + j], 4);
						memcpy(&y, &want[arithmetic][i * ldc + j], 4);
						if (x != y)
							fail_msg("%s, %s order, %dx%dx%d: C[%d][%d] is %a (0x%08x); the definition "
								 "gives %a (0x%08x)",
								 bf16_path_names[path], bf16_arithmetic_names[arithmetic], m, n, k, i,
								 j, (double)got[i * ldc + j], x,
								 (double)want[arithmetic][i * ldc + j], y);
					}
				compared[path][arithmetic] += (long)m * n;
			}
		}
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++) {
				differing_orders += memcmp(&want[0][i * ldc + j], &want[1][i * ldc + j], 4) != 0;
				outputs++;
			}
		free(a);
		free(b);
		free(start);
		free(got);
		for (int arithmetic = 0; arithmetic < BF16_ARITHMETIC_COUNT; arithmetic++)
			free(want[arithmetic]);
	}
	for (int path = 1; path < BF16_PATH_COUNT; path++)
		for (int arithmetic = 0; arithmetic < BF16_ARITHMETIC_COUNT; arithmetic++) {
			char why[200];
			if (bf16_path_available((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, why, sizeof why))
				print_message("%s, %s order: %ld outputs, every one the definition's bits\n",
					      bf16_path_names[path], bf16_arithmetic_names[arithmetic], compared[path][arithmetic]);
			else
				print_message("%s, %s order: not checked here (%s)\n", bf16_path_names[path],
					      bf16_arithmetic_names[arithmetic], why);
		}
	print_message("the two orders differ on %ld of %ld outputs\n", differing_orders, outputs);
	/* the orders are two arithmetics: they part on many outputs */
	assert_true(differing_orders > outputs / 10);
}

/* An f32 operand for bf16_matmul to round: a small whole number over
 * scale, or (where awkward) one that rounding to bf16 tests: a tie (even
 * or odd below it), just either side of a tie, one that carries into the
 * exponent, an f32 subnormal. */
static float operand(float scale, bool awkward)
{
	if (!awkward || next() % 2)
		return (float)((int)(next() % 2001) - 1000) / scale;
	static const uint32_t tails[] = {0x8000, 0x7fff, 0x8001, 0xffff};
	uint32_t bits = (next() & 1) << 31 | (127 + next() % 8) << 23 | (next() & 0x7f) << 16 | tails[next() % 4];
	if (next() % 8 == 0)
		bits = (next() & 1) << 31 | (next() & 0x7fffff); /* subnormal */
	float x;
	memcpy(&x, &bits, sizeof x);
	return x;
}

/* bf16_matmul: op(A) op(B) of f32 operands, each rounded to bf16 as it is
 * packed, is bf16_gemm of the operands rounded and laid out beforehand,
 * bit for bit on every path, transposed or not, added to C or not (C's
 * own values then ignored, NaN included), in shapes whose packing runs
 * eight by eight with rows and columns left over; and the f64 builds'
 * version sums the same rounded operands (exact in f64 for the first
 * shape's: few products, of few bits). */
static void test_matmul_rounds_its_operands(void **unused)
{
	(void)unused;
	const int shapes[][3] = {{7, 9, 37}, {19, 40, 70}, {16, 33, 24}};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
		bool awkward = s > 0;
		float *a = malloc(sizeof(float) * K * M), *b = malloc(sizeof(float) * K * N);
		float *c = malloc(sizeof(float) * M * N), *want = malloc(sizeof(float) * M * N);
		uint16_t *ra = malloc(sizeof(uint16_t) * M * K), *rb = malloc(sizeof(uint16_t) * K * N);
		assert_non_null(a);
		assert_non_null(b);
		assert_non_null(c);
		assert_non_null(want);
		assert_non_null(ra);
		assert_non_null(rb);
		for (int i = 0; i < K * M; i++)
			a[i] = operand(7.0f, awkward);
		for (int i = 0; i < K * N; i++)
			b[i] = operand(3.0f, awkward);
		for (int ta = 0; ta < 2; ta++)
			for (int tb = 0; tb < 2; tb++) {
				int lda = ta ? M : K, ldb = tb ? K : N;
				for (int i = 0; i < M; i++)
					for (int e = 0; e < K; e++)
						ra[i * K + e] = bf16_from_float(ta ? a[e * lda + i] : a[i * lda + e]);
				for (int e = 0; e < K; e++)
					for (int j = 0; j < N; j++)
						rb[e * N + j] = bf16_from_float(tb ? b[j * ldb + e] : b[e * ldb + j]);
				for (int arithmetic = 0; arithmetic < BF16_ARITHMETIC_COUNT; arithmetic++)
					for (int path = 0; path < BF16_PATH_COUNT; path++) {
						if (!bf16_path_available((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, NULL, 0))
							continue;
						for (int add = 0; add < 2; add++) {
							for (int i = 0; i < M * N; i++) {
								c[i] = add ? (float)i : NAN;
								want[i] = add ? (float)i : 0.0f;
							}
							assert_int_equal(bf16_gemm(BF16_PORTABLE, (enum bf16_arithmetic)arithmetic, M, N, K, ra,
										   K, rb, N, want, N),
									 0);
							assert_int_equal(bf16_matmul((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, ta,
										     tb, M, N, K, a, lda, b, ldb, add, c, N),
									 0);
							assert_memory_equal(c, want, sizeof(float) * M * N);
						}
					}
				if (awkward)
					continue;
				double *a64 = malloc(sizeof(double) * K * M), *b64 = malloc(sizeof(double) * K * N);
				double *c64 = malloc(sizeof(double) * M * N);
				assert_non_null(a64);
				assert_non_null(b64);
				assert_non_null(c64);
				for (int i = 0; i < K * M; i++)
					a64[i] = a[i];
				for (int i = 0; i < K * N; i++)
					b64[i] = b[i];
				assert_int_equal(bf16_matmul_f64(ta, tb, M, N, K, a64, lda, b64, ldb, false, c64, N), 0);
				for (int i = 0; i < M; i++)
					for (int j = 0; j < N; j++) {
						double sum = 0;
						for (int e = 0; e < K; e++)
							sum += (double)bf16_to_float(ra[i * K + e]) * bf16_to_float(rb[e * N + j]);
						assert_true(c64[i * N + j] == sum);
					}
				free(a64);
				free(b64);
				free(c64);
			}
		free(a);
		free(b);
		free(c);
		free(want);
		free(ra);
		free(rb);
	}
}

/* An image a convolution gathers from: count operands of varied
 * exponents, and the same as bf16 at *bf16 (bf16_convert). */
static float *image_of(size_t count, uint16_t **bf16)
{
	float *x = malloc(sizeof(float) * count);
	*bf16 = malloc(sizeof(uint16_t) * count);
	assert_non_null(x);
	assert_non_null(*bf16);
	for (size_t i = 0; i < count; i++)
		x[i] = operand(5.0f, true);
	bf16_convert(*bf16, x, count);
	return x;
}

/* Each layout a convolution writes its operands in, by a path of each. */
static const struct {
	enum bf16_path path;
	enum bf16_arithmetic arithmetic;
} layouts[] = {{BF16_AVX512, BF16_TILES}, {BF16_AVX2, BF16_PAIRS}, {BF16_AVX512_BF16, BF16_PAIRS}, {BF16_AMX, BF16_TILES}};

/* A convolution writes B itself (bf16_gather_*, bf16_pad_b) where a path
 * reads it widened or in pairs: the same bytes as bf16_pack_b makes of
 * the matrix, transposed or not, for every layout and padding (K odd or
 * even, short of a tiles block or not). */
static void test_gathered_operands_are_packed_ones(void **unused)
{
	(void)unused;
	const int shapes[][2] = {{37, 19}, {40, 24}, {7, 9}, {64, 33}};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int k = shapes[s][0], n = shapes[s][1], ld = k + n + 3;
		/* rows of ld floats, as many as either way round needs */
		uint16_t *x16;
		float *x = image_of((size_t)ld * ld, &x16);
		ptrdiff_t *offsets = malloc(sizeof(ptrdiff_t) * ld);
		assert_non_null(offsets);
		for (int r = 0; r < ld; r++)
			offsets[r] = (ptrdiff_t)r * ld;
		for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
			enum bf16_path path = layouts[l].path;
			enum bf16_arithmetic arithmetic = layouts[l].arithmetic;
			size_t bytes = bf16_packed_b_bytes(path, arithmetic, k, n);
			unsigned char *want = malloc(bytes), *got = malloc(bytes);
			assert_non_null(want);
			assert_non_null(got);
			int width = bf16_packed_b_width(n);
			for (int transpose = 0; transpose < 2; transpose++) {
				if (!transpose && bf16_b_layout(path) == BF16_B_WIDENED)
					continue; /* a convolution writes those rows itself (im2col) */
				bf16_pack_b(path, arithmetic, transpose, k, n, x, ld, want);
				memset(got, 0xa5, bytes);
				if (transpose && bf16_b_layout(path) == BF16_B_WIDENED)
					bf16_gather_transposed((float *)got, width, x16, offsets, n, k);
				else if (transpose) {
					if (k % 2)
						continue; /* gathered in pairs along a row: K even */
					bf16_gather_pairs_transposed((uint32_t *)got, width, x16, offsets, n, k);
				} else
					bf16_gather_pairs((uint32_t *)got, width, x16, offsets, k, n);
				bf16_pad_b(path, arithmetic, k, n, got);
				assert_memory_equal(got, want, bytes);
			}
			free(want);
			free(got);
		}
		free(x);
		free(x16);
		free(offsets);
	}
}

/* A 1x1 convolution writes its image as B itself, each channel activated
 * by its prologue on the way (bf16_image_columns, bf16_pad_b), and its
 * weight gradient writes the image transposed as B (bf16_image_transposed)
 * or packs it as A (bf16_pack_image_a, the portable path's layout too):
 * the same bytes as bf16_pack_b or bf16_pack_a make of the image
 * activated first, for every layout, odd numbers of channels and pixels,
 * runs of sixteen and fewer, and activations that give a NaN, -0 or a
 * subnormal (rounded the portable way). */
static void test_image_columns_are_packed_ones(void **unused)
{
	(void)unused;
	const int shapes[][2] = {{16, 1024}, {7, 49}, {33, 20}, {2, 16}, {9, 35}};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int channels = shapes[s][0], pixels = shapes[s][1];
		size_t count = (size_t)channels * pixels;
		uint16_t *x16;
		float *x = image_of(count, &x16), *activated = malloc(sizeof(float) * count);
		float *pre = malloc(sizeof(float) * 2 * channels);
		assert_non_null(activated);
		assert_non_null(pre);
		x[3] = NAN;
		x[5] = -0.0f;
		for (int c = 0; c < channels; c++) {
			pre[c] = c % 3 == 1 ? 1e-36f : operand(1.0f, false); /* 1e-36: subnormal activations */
			pre[channels + c] = c % 3 == 1 ? 0.0f : operand(1.0f, false);
		}
		for (int with = 0; with < 2; with++) {
			for (size_t i = 0; i < count; i++) {
				float scale = pre[i / pixels], shift = pre[channels + i / pixels];
				float y = with ? fmaf(x[i], scale, shift) : x[i];
				activated[i] = with ? (y > 0 ? y : 0) : y;
			}
			/* each door (the columns as B, X^T as B, X as A) on every
			 * layout, and A on the portable path's too */
			enum { COLUMNS, TRANSPOSED, A, DOORS };
			size_t layout_count = sizeof layouts / sizeof layouts[0];
			for (int door = COLUMNS; door < DOORS; door++)
				for (size_t l = 0; l < layout_count + (door == A); l++) {
					enum bf16_path path = l < layout_count ? layouts[l].path : BF16_PORTABLE;
					enum bf16_arithmetic arithmetic = l < layout_count ? layouts[l].arithmetic : BF16_TILES;
					int k = door == COLUMNS ? channels : pixels, n = door == COLUMNS ? pixels : channels;
					size_t bytes = door == A ? bf16_packed_a_bytes(path, arithmetic, channels, pixels)
								 : bf16_packed_b_bytes(path, arithmetic, k, n);
					unsigned char *want = malloc(bytes), *got = malloc(bytes);
					assert_non_null(want);
					assert_non_null(got);
					memset(got, 0xa5, bytes);
					if (door == A) {
						bf16_pack_a(path, arithmetic, false, channels, pixels, activated, pixels, want);
						bf16_pack_image_a(path, arithmetic, channels, pixels, x, with ? pre : NULL, got);
					} else {
						bf16_pack_b(path, arithmetic, door == TRANSPOSED, k, n, activated, pixels, want);
						if (door == COLUMNS)
							bf16_image_columns(path, got, bf16_packed_b_width(n), x, channels, pixels, with ? pre : NULL);
						else
							bf16_image_transposed(path, got, bf16_packed_b_width(n), x, channels, pixels, with ? pre : NULL);
						bf16_pad_b(path, arithmetic, k, n, got);
					}
					assert_memory_equal(got, want, bytes);
					free(want);
					free(got);
				}
		}
		free(x);
		free(x16);
		free(activated);
		free(pre);
	}
}

/* Likewise A, where a convolution writes its columns as A (the weight
 * gradient, bf16_gather_along and bf16_gather_pairs_along, bf16_pad_a):
 * the bytes bf16_pack_a makes of the matrix, for rows gathered from
 * several rows of x one after the other, and any width of them. */
static void test_gathered_rows_are_packed_ones(void **unused)
{
	(void)unused;
	const int shapes[][3] = {{5, 3, 32}, {19, 2, 16}, {7, 4, 8}, {3, 5, 2}, {33, 1, 40}}; /* m, rows, width */
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int m = shapes[s][0], rows = shapes[s][1], width = shapes[s][2], k = rows * width, stride = width + 3;
		size_t size = (size_t)(m + rows) * stride;
		uint16_t *x16;
		float *x = image_of(size, &x16), *matrix = malloc(sizeof(float) * (size_t)m * k);
		ptrdiff_t *offsets = malloc(sizeof(ptrdiff_t) * m);
		assert_non_null(matrix);
		assert_non_null(offsets);
		for (int j = 0; j < m; j++) {
			offsets[j] = (ptrdiff_t)j * stride + j % 3;
			for (int r = 0; r < rows; r++)
				memcpy(matrix + (size_t)j * k + (size_t)r * width, x + offsets[j] + (ptrdiff_t)r * stride, sizeof(float) * width);
		}
		for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
			enum bf16_path path = layouts[l].path;
			enum bf16_arithmetic arithmetic = layouts[l].arithmetic;
			size_t bytes = bf16_packed_a_bytes(path, arithmetic, m, k);
			unsigned char *want = malloc(bytes), *got = malloc(bytes);
			assert_non_null(want);
			assert_non_null(got);
			bf16_pack_a(path, arithmetic, false, m, k, matrix, k, want);
			memset(got, 0xa5, bytes);
			int ld = bf16_packed_a_width(path, arithmetic, k);
			if (bf16_b_layout(path) == BF16_B_WIDENED)
				bf16_gather_along((float *)got, ld, x16, offsets, m, rows, stride, width);
			else
				bf16_gather_pairs_along((uint32_t *)got, ld, x16, offsets, m, rows, stride, width);
			bf16_pad_a(path, arithmetic, m, k, got);
			assert_memory_equal(got, want, bytes);
			free(want);
			free(got);
		}
		free(x);
		free(x16);
		free(matrix);
		free(offsets);
	}
}

/* A's rows gathered by the product itself (bf16_multiply_rows, the
 * weight gradient's columns): the bits of the portable definition of
 * those rows, for each path a convolution writes its operands for and
 * the tiles order on the avx512 path by both its instructions (where it
 * gathers straight into vdpbf16ps's pairs); widths of CIFAR's and
 * ImageNet's rows and ragged ones (odd where widened: K padded to a
 * pair), K short of a block of 32, over a part (256) and across rows
 * mid-block, m past a panel of 12, C from its own
 * values or +0. What lies between the rows holds values: only the rows
 * may be read. */
static void test_gathered_rows_multiply_as_the_definition(void **unused)
{
	(void)unused;
	const int shapes[][4] = {{5, 3, 32, 16}, {19, 2, 16, 40}, {7, 4, 8, 32}, {13, 5, 2, 7},
				 {30, 19, 14, 20}, {12, 6, 56, 33}, {9, 3, 7, 20}, {25, 1, 40, 64}}; /* m, rows, width, n */
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int m = shapes[s][0], rows = shapes[s][1], width = shapes[s][2], n = shapes[s][3], k = rows * width, stride = width + 3;
		size_t size = (size_t)(m + rows) * stride;
		uint16_t *x16;
		float *x = image_of(size, &x16), *matrix = malloc(sizeof(float) * (size_t)m * k), *b = malloc(sizeof(float) * (size_t)k * n);
		float *want = malloc(sizeof(float) * (size_t)m * n), *got = malloc(sizeof(float) * (size_t)m * n);
		ptrdiff_t *offsets = malloc(sizeof(ptrdiff_t) * m);
		assert_true(matrix && b && want && got && offsets);
		for (int i = 0; i < k * n; i++)
			b[i] = bf16_to_float(value());
		for (int j = 0; j < m; j++) {
			offsets[j] = (ptrdiff_t)j * stride + j % 3;
			for (int r = 0; r < rows; r++)
				for (int e = 0; e < width; e++)
					matrix[(size_t)j * k + (size_t)r * width + e] = bf16_to_float(x16[offsets[j] + (ptrdiff_t)r * stride + e]);
		}
		for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++)
			for (int by_fma = 0; by_fma < (layouts[l].path == BF16_AVX512 ? 2 : 1); by_fma++) {
				enum bf16_path path = layouts[l].path;
				enum bf16_arithmetic arithmetic = layouts[l].arithmetic;
				if (!bf16_path_available(path, arithmetic, NULL, 0) || (width % 2 != 0 && bf16_b_layout(path) == BF16_B_PAIRS))
					continue; /* in pairs, a row's pairs are its own */
				bf16_emulate_tiles_by_fma(by_fma);
				void *packed = packed_alloc(bf16_packed_b_bytes(path, arithmetic, k, n));
				assert_non_null(packed);
				bf16_pack_b(path, arithmetic, false, k, n, b, n, packed);
				for (int add = 0; add < 2; add++) {
					for (int i = 0; i < m * n; i++)
						want[i] = got[i] = bf16_to_float(value());
					assert_int_equal(bf16_matmul(BF16_PORTABLE, arithmetic, false, false, m, n, k, matrix, k, b, n, add, want, n), 0);
					assert_int_equal(bf16_multiply_rows(path, arithmetic, m, n, k, x16, offsets, rows, stride, width, packed, add, got, n),
							 0);
					if (memcmp(got, want, sizeof(float) * (size_t)m * n) != 0)
						fail_msg("%d rows of %d x %d by %d columns: the %s path (%s) differs from the definition", m, rows, width, n,
							 bf16_path_names[path], by_fma ? "f32 FMAs" : bf16_path_instructions(path, arithmetic));
				}
				free(packed);
			}
		bf16_emulate_tiles_by_fma(false);
		free(x);
		free(x16);
		free(matrix);
		free(b);
		free(want);
		free(got);
		free(offsets);
	}
	/* the portable path's own layout, a K other than rows x width, an odd width in pairs: refused */
	assert_int_equal(bf16_multiply_rows(BF16_PORTABLE, BF16_TILES, 1, 1, 8, NULL, NULL, 1, 8, 8, NULL, false, NULL, 1), -1);
	assert_int_equal(bf16_multiply_rows(BF16_AVX2, BF16_TILES, 1, 1, 9, NULL, NULL, 1, 8, 8, NULL, false, NULL, 1), -1);
	assert_int_equal(bf16_multiply_rows(BF16_AVX512_BF16, BF16_PAIRS, 1, 1, 7, NULL, NULL, 1, 7, 7, NULL, false, NULL, 1), -1);
}

/* Where a path reads a convolution's columns in place from its image
 * (bf16_multiply_image): the bits bf16_multiply gives of those columns
 * packed, for 3x3 windows over images of 16 and 32 columns (with their
 * border beside the rows and without), of widths whose rows split the
 * kernels' 16 columns (28, 20, 17) and of rows that a half holds several
 * of (14, 8, 7, 3, 1), K short of a block and over a part (K_PART), C
 * starting from its own values or +0. The image holds values everywhere,
 * the zeros' places too: without the border, what lies beside a row
 * must be masked, not read. */
static void test_columns_read_in_place_are_packed_ones(void **unused)
{
	(void)unused;
	const int shapes[][4] = {{16, 2, 3, 16}, {29, 16, 2, 32}, {7, 32, 4, 16}, {64, 4, 1, 32}, {13, 4, 3, 28},
				 {6, 2, 5, 20},  {30, 6, 2, 17},  {30, 2, 1, 48}, {17, 4, 3, 14}, {40, 8, 8, 8},
				 {9, 6, 7, 7},   {5, 2, 6, 3},    {3, 2, 5, 1}}; /* m, channels, height, width */
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int bordered = 0; bordered < 2; bordered++) {
			int m = shapes[s][0], channels = shapes[s][1], height = shapes[s][2], width = shapes[s][3];
			if (bordered && width % 16 != 0)
				continue;
			int wp = bordered ? width + 2 : width, plane = (height + 2) * wp + (bordered ? 0 : 2);
			int k = channels * 9, n = height * width;
			float *image = malloc(sizeof(float) * (size_t)channels * plane), *b = malloc(sizeof(float) * (size_t)k * n);
			float *a = malloc(sizeof(float) * (size_t)m * k), *want = malloc(sizeof(float) * (size_t)m * n);
			float *got = malloc(sizeof(float) * (size_t)m * n);
			ptrdiff_t *offsets = malloc(sizeof(ptrdiff_t) * k);
			assert_true(image && b && a && want && got && offsets);
			for (int i = 0; i < channels * plane; i++)
				image[i] = bf16_to_float(value());
			for (int i = 0; i < m * k; i++)
				a[i] = bf16_to_float(value());
			for (int e = 0; e < k; e++) {
				int kx = e % 3, ky = e / 3 % 3;
				offsets[e] = (ptrdiff_t)(e / 9) * plane + ky * wp + kx;
				for (int j = 0; j < n; j++) {
					int x = j % width + kx - 1;
					bool inside = bordered || (x >= 0 && x < width);
					b[(size_t)e * n + j] = inside ? image[offsets[e] + j / width * wp + j % width] : 0.0f;
				}
			}
			/* every arithmetic of the paths that read in place, where
			 * this processor has them */
			const enum bf16_path paths[] = {BF16_AVX2, BF16_AVX512, BF16_AVX512_BF16};
			for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++)
				for (int order = 0; order < BF16_ARITHMETIC_COUNT; order++) {
					enum bf16_arithmetic arithmetic = (enum bf16_arithmetic)order;
					if (!bf16_path_available(paths[p], arithmetic, NULL, 0))
						continue;
					void *packed = packed_alloc(bf16_packed_a_bytes(paths[p], arithmetic, m, k));
					assert_non_null(packed);
					bf16_pack_a(paths[p], arithmetic, false, m, k, a, k, packed);
					for (int add = 0; add < 2; add++) {
						for (int i = 0; i < m * n; i++)
							want[i] = got[i] = bf16_to_float(value());
						assert_int_equal(bf16_matmul(paths[p], arithmetic, false, false, m, n, k, a, k, b, n, add, want, n), 0);
						assert_int_equal(bf16_multiply_image(paths[p], arithmetic, m, n, k, packed, image, offsets, width,
										     wp, add, got, n),
								 0);
						assert_memory_equal(got, want, sizeof(float) * (size_t)m * n);
					}
					free(packed);
				}
			free(image);
			free(b);
			free(a);
			free(want);
			free(got);
			free(offsets);
		}
	/* which a convolution lays out: the border where a row's halves are
	 * whole */
	assert_int_equal(bf16_image_rows_apart(32), 34);
	assert_int_equal(bf16_image_rows_apart(16), 18);
	assert_int_equal(bf16_image_rows_apart(28), 28);
	assert_int_equal(bf16_image_rows_apart(8), 8);
	/* where a convolution reads in place: AVX-512's two paths, K even, a
	 * 3x3 kernel, up to 128 rows of C, where that is the faster; AVX2's
	 * at any number of rows */
	assert_true(bf16_reads_image(BF16_AVX512, 64, 576, 3));
	assert_true(bf16_reads_image(BF16_AVX512_BF16, 64, 576, 3));
	assert_true(bf16_reads_image(BF16_AVX512_BF16, 16, 144, 3));
	assert_true(bf16_reads_image(BF16_AVX512, 128, 1152, 3));
	assert_false(bf16_reads_image(BF16_AVX512_BF16, 256, 2304, 3));
	assert_true(bf16_reads_image(BF16_AVX2, 16, 144, 3));
	assert_true(bf16_reads_image(BF16_AVX2, 512, 4608, 3));
	assert_false(bf16_reads_image(BF16_AVX2, 16, 27, 3));
	assert_false(bf16_reads_image(BF16_AVX2, 16, 98, 7));
	assert_false(bf16_reads_image(BF16_AVX512, 16, 98, 7));
	assert_false(bf16_reads_image(BF16_AVX512, 16, 50, 5));
	assert_false(bf16_reads_image(BF16_AVX512, 16, 27, 3));
	assert_false(bf16_reads_image(BF16_PORTABLE, 16, 18, 3));
	assert_false(bf16_reads_image(BF16_AMX, 16, 18, 3));
	assert_false(bf16_reads_image(BF16_AVX512, 16, 162, 9));
	assert_false(bf16_reads_image(BF16_AVX512, 16, 32, 4));
	assert_int_equal(bf16_multiply_image(BF16_AVX512, BF16_TILES, 1, 8, 27, NULL, NULL, NULL, 8, 8, false, NULL, 8), -1);
	assert_int_equal(bf16_multiply_image(BF16_PORTABLE, BF16_TILES, 1, 16, 18, NULL, NULL, NULL, 16, 18, false, NULL, 16), -1);
	assert_int_equal(bf16_multiply_image(BF16_AVX512, BF16_TILES, 1, 16, 18, NULL, NULL, NULL, 0, 0, false, NULL, 16), -1);
	/* the border beside rows whose halves split: not read so */
	assert_int_equal(bf16_multiply_image(BF16_AVX512, BF16_TILES, 1, 28, 18, NULL, NULL, NULL, 28, 30, false, NULL, 28), -1);
}

/* Where vdpbf16ps reads a 3x3 convolution's columns in place as A (the
 * weight gradient's rows given to bf16_multiply_rows as windows): the
 * bits of the portable definition of those rows, for one channel's nine
 * rows and more (the kernel takes 18 at a time where C has 16 columns or
 * fewer, 9 where more), C of 16, 32, 64 and ragged numbers of columns,
 * output widths of 32, 14, 8 and 2, K over a part (K_PART: 256, 19 rows
 * of 14 cross it mid-row), C from its own values or +0. The border holds
 * values too: what the definition reads is all the kernel may read.
 * Rows that are not whole windows, or with no border beside them, are
 * gathered instead: the same bits. */
static void test_rows_read_in_place_are_packed_ones(void **unused)
{
	(void)unused;
	const int shapes[][5] = {{2, 3, 32, 16, 2},  {1, 4, 8, 16, 2}, {3, 19, 14, 16, 2}, {2, 5, 8, 32, 2},
				 {3, 4, 14, 64, 5}, {1, 2, 2, 20, 2}, {4, 3, 8, 5, 3},    {2, 10, 32, 40, 2}}; /* channels, height, width, n, wp - width */
	bool vdpbf16ps = bf16_path_available(BF16_AVX512_BF16, BF16_PAIRS, NULL, 0);
	if (!vdpbf16ps)
		print_message("vdpbf16ps is not on this processor: A read in place is not checked here\n");
	for (size_t s = 0; vdpbf16ps && s < sizeof shapes / sizeof shapes[0]; s++) {
		int channels = shapes[s][0], height = shapes[s][1], width = shapes[s][2], n = shapes[s][3];
		int wp = width + shapes[s][4], plane = (height + 2) * wp + 2, m = 9 * channels, k = height * width;
		uint16_t *image = malloc(sizeof(uint16_t) * (size_t)channels * plane);
		float *a = malloc(sizeof(float) * (size_t)m * k), *b = malloc(sizeof(float) * (size_t)k * n);
		float *want = malloc(sizeof(float) * (size_t)m * n), *got = malloc(sizeof(float) * (size_t)m * n);
		ptrdiff_t *offsets = malloc(sizeof(ptrdiff_t) * m);
		assert_true(image && a && b && want && got && offsets);
		for (int i = 0; i < channels * plane; i++)
			image[i] = value();
		for (int i = 0; i < k * n; i++)
			b[i] = bf16_to_float(value());
		for (int r = 0; r < m; r++)
			offsets[r] = (ptrdiff_t)(r / 9) * plane + r / 3 % 3 * wp + r % 3;
		void *packed = packed_alloc(bf16_packed_b_bytes(BF16_AVX512_BF16, BF16_PAIRS, k, n));
		assert_non_null(packed);
		bf16_pack_b(BF16_AVX512_BF16, BF16_PAIRS, false, k, n, b, n, packed);
		assert_true(bf16_reads_image_a(BF16_AVX512_BF16, m, k, width, 3));
		/* windows (read in place), then the last row moved a value on
		 * (not a window: gathered), then rows width apart (no border) */
		for (int layout = 0; layout < 3; layout++) {
			int stride = layout == 2 ? width : wp;
			if (layout == 1)
				offsets[m - 1]++;
			for (int r = 0; r < m; r++)
				for (int q = 0; q < k; q++)
					a[(size_t)r * k + q] = bf16_to_float(image[offsets[r] + q / width * stride + q % width]);
			for (int add = 0; add < 2; add++) {
				for (int i = 0; i < m * n; i++)
					want[i] = got[i] = bf16_to_float(value());
				assert_int_equal(bf16_matmul(BF16_PORTABLE, BF16_PAIRS, false, false, m, n, k, a, k, b, n, add, want, n), 0);
				unsigned long in_place = bf16_rows_read_in_place();
				assert_int_equal(bf16_multiply_rows(BF16_AVX512_BF16, BF16_PAIRS, m, n, k, image, offsets, height, stride, width,
								    packed, add, got, n),
						 0);
				assert_int_equal(bf16_rows_read_in_place() - in_place, layout == 0);
				assert_memory_equal(got, want, sizeof(float) * (size_t)m * n);
			}
		}
		free(packed);
		free(image);
		free(a);
		free(b);
		free(want);
		free(got);
		free(offsets);
	}
	/* where: vdpbf16ps, a 3x3 kernel, whole windows, an even width whose
	 * rows K is */
	assert_true(bf16_reads_image_a(BF16_AVX512_BF16, 144, 1024, 32, 3));
	assert_false(bf16_reads_image_a(BF16_AVX512, 144, 1024, 32, 3));
	assert_false(bf16_reads_image_a(BF16_AMX, 144, 1024, 32, 3));
	assert_false(bf16_reads_image_a(BF16_PORTABLE, 144, 1024, 32, 3));
	assert_false(bf16_reads_image_a(BF16_AVX512_BF16, 144, 49, 7, 3));
	assert_false(bf16_reads_image_a(BF16_AVX512_BF16, 143, 1024, 32, 3));
	assert_false(bf16_reads_image_a(BF16_AVX512_BF16, 144, 1000, 32, 3));
	assert_false(bf16_reads_image_a(BF16_AVX512_BF16, 400, 1024, 32, 5));
}

/* A kernel that reads A in panels keeps its copy of them between
 * products of the same A (a convolution's weights, by each image): A
 * packed again into the same place, by bf16_pack_a or written by the
 * caller and finished by bf16_pad_a, must be copied again. Each product
 * against bf16_matmul's of fresh buffers: vdpbf16ps's panels (128
 * columns of C), and the emulation's where it reads the columns from an
 * image. */
static void test_panels_follow_a_packed_again(void **unused)
{
	(void)unused;
	enum { M = 20, K = 18, N = 128, WIDTH = 16 };
	static float a[2][M * K], b[K * N], want[2][M * N], got[M * N], image[2 * (10 * (WIDTH + 2))];
	for (int i = 0; i < 2 * M * K; i++)
		a[i / (M * K)][i % (M * K)] = operand(5.0f, true);
	for (int i = 0; i < K * N; i++)
		b[i] = bf16_to_float(value());
	/* the same columns as an image: 2 channels of 8 rows of 16, bordered */
	ptrdiff_t offsets[K];
	int wp = WIDTH + 2, plane = 10 * wp;
	for (int i = 0; i < 2 * plane; i++)
		image[i] = bf16_to_float(value());
	for (int e = 0; e < K; e++)
		offsets[e] = (ptrdiff_t)(e / 9) * plane + e / 3 % 3 * wp + e % 3;
	float columns[K * N];
	for (int e = 0; e < K; e++)
		for (int j = 0; j < N; j++)
			columns[e * N + j] = image[offsets[e] + j / WIDTH * wp + j % WIDTH];
	const struct {
		enum bf16_path path;
		enum bf16_arithmetic arithmetic;
		bool from_image;
	} cases[] = {{BF16_AVX512_BF16, BF16_PAIRS, false}, {BF16_AVX512_BF16, BF16_PAIRS, true}, {BF16_AVX512, BF16_TILES, false},
		      {BF16_AVX512, BF16_TILES, true}};
	for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
		enum bf16_path path = cases[t].path;
		enum bf16_arithmetic arithmetic = cases[t].arithmetic;
		if (!bf16_path_available(path, arithmetic, NULL, 0))
			continue;
		void *packed_a = packed_alloc(bf16_packed_a_bytes(path, arithmetic, M, K));
		void *packed_b = packed_alloc(bf16_packed_b_bytes(path, arithmetic, K, N));
		assert_true(packed_a && packed_b);
		/* what each A gives, first: bf16_matmul packs A itself */
		const float *operand_b = cases[t].from_image ? columns : b;
		for (int x = 0; x < 2; x++)
			assert_int_equal(bf16_matmul(path, arithmetic, false, false, M, N, K, a[x], K, operand_b, N, false, want[x], N), 0);
		bf16_pack_b(path, arithmetic, false, K, N, b, N, packed_b);
		/* A, then the other A in the same place, then the first again
		 * written row by row as a caller writes it, finished by
		 * bf16_pad_a */
		for (int turn = 0; turn < 3; turn++) {
			const float *matrix = a[turn % 2];
			if (turn < 2)
				bf16_pack_a(path, arithmetic, false, M, K, matrix, K, packed_a);
			else {
				int ld = bf16_packed_a_width(path, arithmetic, K);
				for (int i = 0; i < M; i++)
					for (int e = 0; e < K; e++) {
						uint16_t h = bf16_from_float(matrix[i * K + e]);
						if (bf16_b_layout(path) == BF16_B_WIDENED)
							((float *)packed_a)[i * ld + e] = bf16_to_float(h);
						else
							((uint16_t *)packed_a)[2 * (i * ld + e / 2) + e % 2] = h;
					}
				bf16_pad_a(path, arithmetic, M, K, packed_a);
			}
			if (cases[t].from_image)
				assert_int_equal(bf16_multiply_image(path, arithmetic, M, N, K, packed_a, image, offsets, WIDTH, wp, false, got, N),
						 0);
			else
				assert_int_equal(bf16_multiply(path, arithmetic, M, N, K, packed_a, packed_b, false, got, N), 0);
			assert_memory_equal(got, want[turn % 2], sizeof got);
		}
		free(packed_a);
		free(packed_b);
	}
}

/* bf16_multiply on every path, from the same packed A twice (the second
 * product reads A in panels, rows_in_panels: AVX2's tiles order from 32
 * rows in panels of pairs) and adding to C, is the definition's; with
 * rows of A and columns of B whose products flush to -0 (FTZ), so that
 * both chains of a block end at -0 and only the block's padding, +0
 * products, makes their sum +0: C's -0 there stays -0 where a kernel
 * leaves that padding out. Shapes: 32 rows and more by 16 columns and
 * fewer (AVX2's blocks of two vectors and of one), K short of a block,
 * over one, and over a part (BF16_K_PART). */
static void test_a_packed_again_adds_as_the_definition(void **unused)
{
	(void)unused;
	const int shapes[][3] = {{32, 16, 2}, {45, 9, 30}, {40, 8, 66}, {33, 5, 300}, {36, 23, 40}, {128, 20, 34}, {150, 17, 600}};
	const float tiny = 0x1p-64f; /* tiny * -tiny flushes to -0 */
	for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
		int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
		float *a = malloc((size_t)m * k * sizeof *a), *b = malloc((size_t)k * n * sizeof *b);
		uint16_t *a16 = malloc((size_t)m * k * sizeof *a16), *b16 = malloc((size_t)k * n * sizeof *b16);
		float *start = malloc((size_t)m * n * sizeof *start), *want = malloc((size_t)m * n * sizeof *want);
		float *got = malloc((size_t)m * n * sizeof *got);
		assert_true(a && b && a16 && b16 && start && want && got);
		for (int i = 0; i < m; i++)
			for (int e = 0; e < k; e++)
				a[i * k + e] = i % 7 == 3 ? -tiny : bf16_to_float(value());
		for (int e = 0; e < k; e++)
			for (int j = 0; j < n; j++)
				b[e * n + j] = j % 5 == 1 ? tiny : bf16_to_float(value());
		for (int i = 0; i < m * k; i++)
			a16[i] = bf16_from_float(a[i]);
		for (int i = 0; i < k * n; i++)
			b16[i] = bf16_from_float(b[i]);
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++)
				start[i * n + j] = i % 7 == 3 && j % 5 == 1 ? -0.0f : bf16_to_float(value()) * 3.0f;
		for (int arithmetic = 0; arithmetic < BF16_ARITHMETIC_COUNT; arithmetic++) {
			memcpy(want, start, (size_t)m * n * sizeof *want);
			assert_int_equal(bf16_gemm(BF16_PORTABLE, (enum bf16_arithmetic)arithmetic, m, n, k, a16, k, b16, n, want, n), 0);
			/* the tiles order's padding decides: -0 + (-0 + -0) would
			 * stay -0, as the pairs order's sum, C's -0 flushed
			 * products added to it, does */
			assert_true(want[3 * n + 1] == 0.0f && !signbit(want[3 * n + 1]) == (arithmetic == BF16_TILES));
			for (int path = 1; path < BF16_PATH_COUNT; path++) {
				if (!bf16_path_available((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, NULL, 0))
					continue;
				void *packed_a = packed_alloc(bf16_packed_a_bytes((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, m, k));
				void *packed_b = packed_alloc(bf16_packed_b_bytes((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, k, n));
				assert_true(packed_a && packed_b);
				bf16_pack_a((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, false, m, k, a, k, packed_a);
				bf16_pack_b((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, false, k, n, b, n, packed_b);
				for (int turn = 0; turn < 2; turn++) {
					memcpy(got, start, (size_t)m * n * sizeof *got);
					assert_int_equal(bf16_multiply((enum bf16_path)path, (enum bf16_arithmetic)arithmetic, m, n, k, packed_a,
								       packed_b, true, got, n),
							 0);
					for (int i = 0; i < m * n; i++)
						if (memcmp(&got[i], &want[i], sizeof *got) != 0)
							fail_msg("%s, %s order, %dx%dx%d, A packed %s: C[%d][%d] is %a; the definition gives %a",
								 bf16_path_names[path], bf16_arithmetic_names[arithmetic], m, n, k,
								 turn ? "again" : "anew", i / n, i % n, (double)got[i], (double)want[i]);
				}
				free(packed_a);
				free(packed_b);
			}
		}
		free(a);
		free(b);
		free(a16);
		free(b16);
		free(start);
		free(want);
		free(got);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rounding_to_bf16),
		cmocka_unit_test(test_the_orders_by_hand),
		cmocka_unit_test(test_every_path_gives_the_definitions_bits),
		cmocka_unit_test(test_matmul_rounds_its_operands),
		cmocka_unit_test(test_gathered_operands_are_packed_ones),
		cmocka_unit_test(test_image_columns_are_packed_ones),
		cmocka_unit_test(test_gathered_rows_are_packed_ones),
		cmocka_unit_test(test_gathered_rows_multiply_as_the_definition),
		cmocka_unit_test(test_columns_read_in_place_are_packed_ones),
		cmocka_unit_test(test_rows_read_in_place_are_packed_ones),
		cmocka_unit_test(test_panels_follow_a_packed_again),
		cmocka_unit_test(test_a_packed_again_adds_as_the_definition),
	};
	/* twice: where the processor has AVX512-BF16, the avx512 path's
	 * tiles order runs by vdpbf16ps, then by its f32 FMAs */
	int failed = cmocka_run_group_tests_name("bf16 products summed in f32", tests, NULL, NULL);
	bf16_emulate_tiles_by_fma(true);
	return failed + cmocka_run_group_tests_name("bf16 products, the avx512 tiles order by f32 FMAs", tests, NULL, NULL);
}
