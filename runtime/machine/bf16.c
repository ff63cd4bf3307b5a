/* bf16 products summed in f32 in a fixed order, natively or emulated:
 * bf16.h. */
#include "bf16.h"

#include <cpuid.h>
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "same_bits.h" /* BF16_TILE_K */

const char *const bf16_arithmetic_names[BF16_ARITHMETIC_COUNT] = {"tiles", "pairs"};
const char *const bf16_path_names[BF16_PATH_COUNT] = {"portable", "avx2", "avx512", "avx512-bf16", "amx"};

uint16_t bf16_from_float(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)(u >> 16 | 0x40); /* a NaN, quiet */
	u += 0x7fffu + (u >> 16 & 1);
	return (uint16_t)(u >> 16);
}

float bf16_to_float(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float x;
	memcpy(&x, &u, sizeof x);
	return x;
}

/* The length K is padded to in the operands path reads: AMX's block, or
 * a pair. The emulations stop a block's chains at the last pair and add
 * +0 for the rest of it (struct operands), so they need no more. */
static int padded_k(enum bf16_path path, int k)
{
	int unit = path == BF16_AMX ? BF16_TILE_K : 2;
	return (k + unit - 1) / unit * unit;
}

/* ---- the processor ------------------------------------------------------ */

static bool has_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static bool has_avx512(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f");
}

static bool has_avx512_bf16(void)
{
	unsigned eax, ebx, ecx, edx;
	return has_avx512() && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax >> 5 & 1);
}

static bool has_amx(void)
{
	unsigned eax, ebx, ecx, edx;
	return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx >> 22 & 1) && (edx >> 24 & 1) && has_avx512();
}

/* Linux gives a process AMX's tile data (XFEATURE_XTILEDATA, 18) only when
 * asked (ARCH_REQ_XCOMP_PERM, 0x1023), before the first tile instruction;
 * asked once. */
static int amx_granted = -1;

static bool amx_grant(void)
{
	if (amx_granted < 0)
		amx_granted = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
	return amx_granted;
}

/* Whether each path computes each arithmetic here, found once (CPUID is
 * slow under some hypervisors, and asked at every product): -1 until then. */
static signed char available[BF16_PATH_COUNT][BF16_ARITHMETIC_COUNT];
static bool available_found;

static bool path_available(enum bf16_path path, enum bf16_arithmetic arithmetic, char *why, size_t size);

bool bf16_path_available(enum bf16_path path, enum bf16_arithmetic arithmetic, char *why, size_t size)
{
	if (why || (unsigned)path >= BF16_PATH_COUNT || (unsigned)arithmetic >= BF16_ARITHMETIC_COUNT)
		return path_available(path, arithmetic, why, size);
	if (!__atomic_load_n(&available_found, __ATOMIC_ACQUIRE)) {
		for (int p = 0; p < BF16_PATH_COUNT; p++)
			for (int a = 0; a < BF16_ARITHMETIC_COUNT; a++)
				available[p][a] = path_available((enum bf16_path)p, (enum bf16_arithmetic)a, NULL, 0);
		__atomic_store_n(&available_found, true, __ATOMIC_RELEASE);
	}
	return available[path][arithmetic];
}

static bool path_available(enum bf16_path path, enum bf16_arithmetic arithmetic, char *why, size_t size)
{
	const char *no = NULL;
	switch (path) {
	case BF16_PORTABLE:
		break;
	case BF16_AVX2:
		if (!has_avx2())
			no = "this processor lacks AVX2 and FMA";
		break;
	case BF16_AVX512:
		if (!has_avx512())
			no = "this processor lacks AVX-512";
		break;
	case BF16_AVX512_BF16:
		if (arithmetic != BF16_PAIRS)
			no = "vdpbf16ps sums in the pairs order alone";
		else if (!has_avx512_bf16())
			no = "this processor lacks AVX512-BF16";
		break;
	case BF16_AMX:
		if (arithmetic != BF16_TILES)
			no = "AMX sums in the tiles order alone";
		else if (!has_amx())
			no = "this processor lacks AMX (AMX-TILE and AMX-BF16)";
		else if (!amx_grant())
			no = "Linux refused this process AMX's tile data (arch_prctl ARCH_REQ_XCOMP_PERM)";
		break;
	default:
		no = "no such path";
	}
	if (no && why)
		snprintf(why, size, "%s", no);
	return !no;
}

/* ---- scratch ------------------------------------------------------------- */

/* Each thread's packed operands, kept between calls and grown as needed:
 * a new buffer each call would cost more in page faults than the products
 * (scratch slot 0 and 1: bf16_matmul's packed operands, 2: AMX's C,
 * padded; 3 and 4: bf16_gemm's operands widened, bf16_matmul_f64's
 * rounded; 5: A's rows in panels, rows_in_panels; 6: where A's pairs
 * lie in an image, bf16_multiply_rows; 7 and 8: A's pairs in panels
 * and B's pairs for the tiles order, tiles_pairs_in_panels and
 * tiles_pairs_of_b; 9: A's rows gathered into those panels,
 * tiles_pairs_gathered, beside 7's kept copy; 10: a strip of B's
 * columns, avx2). */
static __thread struct {
	void *memory;
	size_t bytes;
} scratch[11];

static void *scratch_of(int slot, size_t bytes)
{
	bytes = bytes ? (bytes + 63) / 64 * 64 : 64;
	if (scratch[slot].bytes < bytes) {
		void *bigger = aligned_alloc(64, bytes);
		if (!bigger)
			return NULL;
		free(scratch[slot].memory);
		scratch[slot].memory = bigger;
		scratch[slot].bytes = bytes;
	}
	return scratch[slot].memory;
}

/* ---- DAZ and FTZ -------------------------------------------------------- */

/* MXCSR's DAZ (bit 6) and FTZ (bit 15) set for the emulations, and the
 * caller's MXCSR back after. The work between is a call the compiler
 * cannot see into (noinline), so no arithmetic moves across the switch. */
static unsigned flush_begin(void)
{
	unsigned old = _mm_getcsr();
	_mm_setcsr(old | 0x8040u);
	return old;
}

static void flush_end(unsigned old) { _mm_setcsr(old); }

/* ---- the plain definition ---------------------------------------------- */

/* Element e of row r of a matrix stored rows stride apart, 0 past its
 * length (the padding). */
static inline float at(const uint16_t *x, int stride, int r, int e, int length)
{
	return e < length ? bf16_to_float(x[(size_t)r * stride + e]) : 0.0f;
}

static inline float down(const uint16_t *x, int stride, int e, int c, int length)
{
	return e < length ? bf16_to_float(x[(size_t)e * stride + c]) : 0.0f;
}

__attribute__((noinline)) static void portable(enum bf16_arithmetic arithmetic, int m, int n, int k,
					      const uint16_t *a, int lda, const uint16_t *b, int ldb, float *c,
					      int ldc)
{
	int kp = arithmetic == BF16_TILES ? (k + BF16_TILE_K - 1) / BF16_TILE_K * BF16_TILE_K : (k + 1) / 2 * 2;
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			float sum = c[(size_t)i * ldc + j];
			if (arithmetic == BF16_TILES) {
				for (int block = 0; block < kp; block += BF16_TILE_K) {
					float te = 0.0f, to = 0.0f;
					for (int p = 0; p < BF16_TILE_K; p += 2) {
						int e = block + p, o = e + 1;
						te = fmaf(at(a, lda, i, e, k), down(b, ldb, e, j, k), te);
						to = fmaf(at(a, lda, i, o, k), down(b, ldb, o, j, k), to);
					}
					sum = sum + (te + to);
				}
			} else {
				for (int e = 0; e < kp; e += 2) {
					int o = e + 1;
					sum = fmaf(at(a, lda, i, o, k), down(b, ldb, o, j, k), sum);
					sum = fmaf(at(a, lda, i, e, k), down(b, ldb, e, j, k), sum);
				}
			}
			c[(size_t)i * ldc + j] = sum;
		}
}

/* ---- AVX-512: f32 multiply-adds on widened operands --------------------- */

/* The operands of a product as a path packs them (bf16_pack_a,
 * bf16_pack_b), both zero-padded: for the emulations A widened to f32, m
 * x kp, and B widened, kp x np; for avx512-bf16 both in pairs, m x kp / 2
 * and kp / 2 x np (kp: K to a whole pair; np: n to 32); add: whether C's
 * values start the sums (else +0 does).
 *
 * A block of the tiles order stops its chains at kp, short of the block's
 * 32 where K is: a product of two padding zeros is +0, and te + +0 is te
 * except where te is -0 (a product flushed to zero), which it makes +0;
 * so one addition of +0 to each chain gives what the rest of the block's
 * padding would have, and that padding is neither stored nor read. */
struct operands {
	const void *a, *b;
	int kp, np;
	bool add;
	int start, stop; /* the part of K the kernels take now (products_by_parts) */
	/* B read in place from an image (bf16_multiply_image) where image:
	 * B[e][j] = image[offsets[e] + (j / width) * wp + j % width]; where
	 * wp is width (no border beside the rows), 0 where column j % width
	 * moved by e % 3 - 1 (a 3x3 kernel's column) leaves its row */
	const float *image;
	const ptrdiff_t *offsets;
	int width, wp;
	bool panels; /* A in panels (rows_in_panels), else its rows kp or kp / 2 apart */
	/* A read in place from an image in bf16 (bf16_multiply_rows) where
	 * a_image (a NULL): A[r][q] = a_image[offsets[r] + (q / width) * wp +
	 * q % width], each nine rows from a multiple of 9 one channel's 3x3
	 * window */
	const uint16_t *a_image;
	const size_t *pair_at; /* where K's pair q lies in the image, in bytes from a row's start */
	bool b_paired;         /* B packed as the tiles order's pairs (tiles_pairs_of_b) */
	bool a_paired;         /* A already the tiles order's pair panels (tiles_pairs_gathered) */
	bool avx2_paired;      /* AVX2's tiles order from AVX2_STRIP_FROM rows: avx2_tiles_paired, the strip and A's panels in pairs */
};

/* rows rows of C (from row i) by 16 halves columns (from j; masks for
 * the columns within n), in arithmetic's order: halves vectors of 16
 * outputs a row, rows up to 6 by two vectors or 12 by one for the
 * emulation, 8 by two or 16 by one for vdpbf16ps (n of 16 or fewer: a
 * convolution's 16 output channels as the columns). The tiles
 * order keeps its two chains a block in registers and adds their sum to
 * C, in memory, once a block; the pairs order keeps C in registers. */
enum { BLOCK_ROWS = 16 };

static __mmask16 columns_mask(int left) { return (__mmask16)(left >= 16 ? 0xffff : left <= 0 ? 0 : (1u << left) - 1); }

/* Where B's row e holds the 16 columns of each half (from j): half + e *
 * np packed (of B's floats or words), or half + offsets[e] in the image
 * (a half in one of the output's rows where the image has its border,
 * B_BORDERED), read under within[h][e % 3] where it has none (B_MASKED):
 * the lanes whose column, moved by e % 3 - 1 (a 3x3 kernel's column),
 * stays in its row of the output, and in n. */
struct halves {
	const float *half[2];
	__mmask16 within[2][3];
};

/* How a block reads B: packed, or from the image with its border beside
 * the rows (widths a multiple of 16: each half in one row) or without it,
 * under masks. */
enum b_reading { B_PACKED, B_BORDERED, B_MASKED, B_PAIRED /* the tiles order's pairs (tiles_pairs_of_b) */ };

/* at's halves from column j (filled in place: a copy of the masks, stored
 * 16 bits at a time and loaded wider, stalls the loads). */
__attribute__((target("avx512f"), always_inline)) static inline void halves_at(struct halves *at, const struct operands *w, int j,
									       const __mmask16 masks[2], int halves,
									       enum b_reading reading)
{
	for (int h = 0; h < halves; h++) {
		int column = j + 16 * h;
		if (reading == B_PACKED || reading == B_PAIRED) {
			at->half[h] = (const float *)w->b + column;
			continue;
		}
		at->half[h] = w->image + (size_t)(column / w->width) * w->wp + column % w->width;
		if (reading == B_BORDERED)
			continue;
		/* each lane's place in its row of the output */
		__m512i width = _mm512_set1_epi32(w->width), x = _mm512_add_epi32(
			_mm512_set1_epi32(column % w->width), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
		for (__mmask16 past; (past = _mm512_cmpge_epi32_mask(x, width)) != 0;)
			x = _mm512_mask_sub_epi32(x, past, x, width);
		for (int kx = 0; kx < 3; kx++) {
			__m512i moved = _mm512_add_epi32(x, _mm512_set1_epi32(kx - 1));
			at->within[h][kx] = _mm512_mask_cmpge_epi32_mask(masks[h], moved, _mm512_setzero_si512()) &
					    _mm512_cmplt_epi32_mask(moved, width);
		}
	}
}

/* 16 columns of B's row read in place from the image (offset: the row's),
 * under lanes (halves.within) where masked. */
__attribute__((target("avx512f"), always_inline)) static inline __m512 image_b(const struct halves *at, int h, ptrdiff_t offset,
									       __mmask16 lanes, const bool masked)
{
	if (!masked)
		return _mm512_loadu_ps(at->half[h] + offset);
	return _mm512_maskz_loadu_ps(lanes, at->half[h] + offset);
}

/* The lanes a step reads its two rows of B under from the image: K's
 * rows run channel, kernel row, kernel column, so step t (from K's first
 * row, mod 3) reads rows 2t and 2t + 1 of a 3x3 kernel, mod 3. */
#define EVEN_LANES(at, h, t) ((at).within[h][2 * (t) % 3])
#define ODD_LANES(at, h, t) ((at).within[h][(2 * (t) + 1) % 3])

/* step(t) steps times, t the step's index from K's first row, mod 3
 * (first: the first step's): from the image three a round, so that t is
 * a constant in each (EVEN_LANES); else t 0. For vdpbf16ps's blocks. */
#define EACH_STEP(image, first, steps, step)           \
	do {                                           \
		int left_ = (steps), first_ = (first); \
		if (!(image)) {                        \
			for (; left_ > 0; left_--)     \
				step(0);               \
			break;                         \
		}                                      \
		if (first_ == 1 && left_ > 0) {        \
			step(1);                       \
			left_--;                       \
		}                                      \
		if (first_ > 0 && left_ > 0) {         \
			step(2);                       \
			left_--;                       \
		}                                      \
		for (; left_ >= 3; left_ -= 3) {       \
			step(0);                       \
			step(1);                       \
			step(2);                       \
		}                                      \
		if (left_ > 0)                         \
			step(0);                       \
		if (left_ > 1)                         \
			step(1);                       \
	} while (0)

/* step() steps times, where from the image the lanes of its two rows of
 * B are even_lanes[h] and odd_lanes[h] (of the block's at, halves of
 * them), turned each step: (even, odd, third) -> (third, even, odd). For
 * the emulation's blocks, whose 24 sums a round of three steps would
 * spill (EACH_STEP). */
#define EACH_STEP_TURNING(image, first, steps, step)                                              \
	do {                                                                                      \
		__mmask16 even_lanes[2] = {0, 0}, odd_lanes[2] = {0, 0}, third_lanes[2] = {0, 0}; \
		for (int h = 0; (image) && h < halves; h++) {                                     \
			even_lanes[h] = EVEN_LANES(at, h, first);                                 \
			odd_lanes[h] = ODD_LANES(at, h, first);                                   \
			third_lanes[h] = EVEN_LANES(at, h, (first) + 1);                          \
		}                                                                                 \
		for (int left_ = (steps); left_ > 0; left_--) {                                   \
			step();                                                                   \
			for (int h = 0; (image) && h < halves; h++) {                             \
				__mmask16 third = third_lanes[h];                                 \
				third_lanes[h] = odd_lanes[h];                                    \
				odd_lanes[h] = even_lanes[h];                                     \
				even_lanes[h] = third;                                            \
			}                                                                         \
		}                                                                                 \
	} while (0)

/* r[0..7] transposed in place, as eight rows of eight lanes. */
static inline void transpose8(__m256 r[8])
{
	__m256 t[8], u[8];
	for (int q = 0; q < 8; q += 2) {
		t[q] = _mm256_unpacklo_ps(r[q], r[q + 1]);
		t[q + 1] = _mm256_unpackhi_ps(r[q], r[q + 1]);
	}
	for (int q = 0; q < 8; q += 4) {
		u[q] = _mm256_shuffle_ps(t[q], t[q + 2], 0x44);
		u[q + 1] = _mm256_shuffle_ps(t[q], t[q + 2], 0xee);
		u[q + 2] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0x44);
		u[q + 3] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0xee);
	}
	for (int q = 0; q < 4; q++) {
		r[q] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x20);
		r[q + 4] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x31);
	}
}

/* A's rows, of 4-byte values (widened floats, or pairs of bf16 as
 * pair_of makes them), length a row, in panels of panel rows for the
 * vector kernels: row panel p + r's value q at q panel + r of panel p,
 * length panel values a panel, rows past m 0. A block then reads its
 * rows from one pointer (two for vdpbf16ps's 16 rows) at fixed
 * distances, not from a register each, which the kernels' accumulators
 * leave too few of, and its rows do not share sets of the L1 cache
 * where they lie 4 KiB apart. Every block lies in one panel: AVX-512's
 * emulation takes 6 or 12 rows from a multiple of their size, then 4, 2
 * and 1; vdpbf16ps 8, or 16 in two panels; AVX2 6 (3 and 3 in the tiles
 * order), then 4, 2 and 1. The copy moves eight rows by eight values
 * through registers, bits as they are (panel 6, 8 or 12, so its last
 * eight rows may be four or six). Where wide, the values are pairs of
 * floats (length pairs a row: AVX2's tiles order with its chains side by
 * side, avx2_tiles_paired), copied a pair at a time. NULL where memory
 * runs out. */
enum { PANEL_WIDENED = 12, PANEL_PAIRS = 8, PANEL_AVX2 = 6, PANELS_FROM = 128 };

static __thread unsigned long a_packings; /* bf16_pack_a's and bf16_pad_a's calls in this thread */

static const void *rows_in_panels(const void *a, int m, int length, int panel, bool wide)
{
	/* the last copy, where A is the same (a convolution's weights, by
	 * each of its images): the same place, shape and packing */
	static __thread struct {
		const void *a;
		int m, length, panel;
		bool wide;
		unsigned long packing;
	} kept;
	const float *from = a; /* 4-byte values, moved as floats */
	int panels = (m + panel - 1) / panel;
	float *out = scratch_of(5, (size_t)panels * panel * length * (wide ? 2 : 1) * sizeof *out);
	if (!out)
		return NULL;
	if (kept.a == a && kept.m == m && kept.length == length && kept.panel == panel && kept.wide == wide &&
	    kept.packing == a_packings)
		return out;
	kept.a = a;
	kept.m = m;
	kept.length = length;
	kept.panel = panel;
	kept.wide = wide;
	kept.packing = a_packings;
	if (wide) {
		const uint64_t *pairs = a;
		uint64_t *to = (uint64_t *)out;
		for (int p = 0; p < panels; p++)
			for (int q = 0; q < length; q++)
				for (int r = 0; r < panel; r++)
					to[((size_t)p * length + q) * panel + r] =
						p * panel + r < m ? pairs[(size_t)(p * panel + r) * length + q] : 0;
		return out;
	}
	for (int p = 0; p < panels; p++)
		for (int r0 = 0; r0 < panel; r0 += 8) {
			/* eight rows of the panel at a time (four at its end where
			 * it has 12), those past m 0 */
			int rows = panel - r0 < 8 ? panel - r0 : 8, first = p * panel + r0;
			float *to = out + (size_t)p * length * panel + r0;
			int q = 0;
			for (; q + 8 <= length; q += 8) {
				__m256 block[8];
				for (int r = 0; r < 8; r++)
					block[r] = r < rows && first + r < m ? _mm256_loadu_ps(from + (size_t)(first + r) * length + q)
									       : _mm256_setzero_ps();
				transpose8(block);
				for (int v = 0; v < 8; v++)
					if (rows == 8)
						_mm256_storeu_ps(to + (size_t)(q + v) * panel, block[v]);
					else
						_mm_storeu_ps(to + (size_t)(q + v) * panel, _mm256_castps256_ps128(block[v]));
				if (rows == 6)
					for (int v = 0; v < 8; v++)
						_mm_storel_pi((__m64 *)(to + (size_t)(q + v) * panel + 4),
							      _mm256_extractf128_ps(block[v], 1));
			}
			for (; q < length; q++)
				for (int r = 0; r < rows; r++)
					((uint32_t *)to)[(size_t)q * panel + r] =
						first + r < m ? ((const uint32_t *)from)[(size_t)(first + r) * length + q] : 0;
		}
	return out;
}

/* Whether this thread's product multiplies the same packed A as its last
 * one (the same place, shape and packing: a convolution's weights, by
 * each of its images), which rows_in_panels would then not copy again;
 * this product becomes the last. */
static bool a_again(const void *a, int m, int kp)
{
	static __thread struct {
		const void *a;
		int m, kp;
		unsigned long packing;
	} last;
	bool again = last.a == a && last.m == m && last.kp == kp && last.packing == a_packings;
	last.a = a;
	last.m = m;
	last.kp = kp;
	last.packing = a_packings;
	return again;
}

/* What a caller fetches into the L2 cache during the calling thread's
 * next product (bf16_fetch_during): regions of lines, fetched a few
 * lines a block of C (each), so that they arrive while the product
 * sums rather than stall the pass that reads them after. */
enum { FETCH_REGIONS = 2, FETCH_LINE = 64 };
static __thread struct {
	const char *at[FETCH_REGIONS];
	size_t lines[FETCH_REGIONS];
	int regions, next;
	size_t each;
} fetching;

/* The lines asked for and not yet fetched. */
static size_t fetch_pending(void)
{
	size_t lines = 0;
	for (int r = 0; r < fetching.regions; r++)
		lines += fetching.lines[r];
	return lines;
}

void bf16_fetch_during(const void *from, size_t bytes)
{
	if (fetching.regions == FETCH_REGIONS) { /* asked before a product that took none (AMX's, the portable path's) */
		memmove(fetching.at, fetching.at + 1, sizeof fetching.at[0] * (FETCH_REGIONS - 1));
		memmove(fetching.lines, fetching.lines + 1, sizeof fetching.lines[0] * (FETCH_REGIONS - 1));
		fetching.regions--;
	}
	if (bytes == 0 || (fetch_pending() + 1) * FETCH_LINE + bytes > BF16_FETCH_MOST)
		return;
	uintptr_t first = (uintptr_t)from / FETCH_LINE, last = ((uintptr_t)from + bytes - 1) / FETCH_LINE;
	fetching.at[fetching.regions] = (const char *)(first * FETCH_LINE);
	fetching.lines[fetching.regions++] = last - first + 1;
}

/* A product of about blocks blocks of C, of products multiply-adds,
 * begins: each block fetches its share of the lines asked for, but no
 * more than a line each FETCH_PACE of its multiply-adds (vdpbf16ps's 32
 * a cycle against 16 bytes a cycle from memory, twice what one core of
 * this project's Zen 5 drew): a fetch that outran the product would
 * stall it rather than overlap it. */
enum { FETCH_PACE = 128 };
static void fetch_begin(size_t blocks, double products)
{
	size_t lines = fetch_pending(), each = blocks ? (lines + blocks - 1) / blocks : lines;
	size_t affordable = blocks ? (size_t)(products / FETCH_PACE / (double)blocks) : 0;
	fetching.next = 0;
	fetching.each = each < affordable ? each : affordable > 0 ? affordable : 1;
}

/* The product ended: what it did not fetch is left to the hardware. */
static void fetch_end(void) { fetching.regions = 0; }

__attribute__((always_inline)) static inline void fetch_some(void)
{
	size_t count = fetching.each;
	while (count > 0 && fetching.next < fetching.regions) {
		int r = fetching.next;
		size_t now = fetching.lines[r] < count ? fetching.lines[r] : count;
		for (size_t l = 0; l < now; l++)
			_mm_prefetch(fetching.at[r] + l * FETCH_LINE, _MM_HINT_T1);
		fetching.at[r] += now * FETCH_LINE;
		fetching.lines[r] -= now;
		count -= now;
		if (fetching.lines[r] == 0)
			fetching.next++;
	}
}

/* The next block's rows of C (rows rows from i, 16 halves columns from
 * j, a cache line each 16) fetched into the cache while this block sums:
 * its rows lie ldc apart, each its own lines, and a block that loaded or
 * stored them cold stalled on them (a weight gradient's sums of a few MB,
 * a data gradient added to). A fetch never faults, so the one past C's
 * last block is harmless. */
__attribute__((always_inline)) static inline void fetch_next_c(const float *c, int ldc, int i, int j, const int rows,
								const int halves)
{
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++)
			_mm_prefetch((const char *)(c + (size_t)(i + r) * ldc + j + 16 * h), _MM_HINT_T0);
	fetch_some();
}

/* A block of the tiles order short of 32 (struct operands): +0 to each
 * of its rows rows by halves vectors' chains. */
__attribute__((target("avx512f"), always_inline)) static inline void tiles_pad_chains(__m512 te[BLOCK_ROWS][2],
										     __m512 to[BLOCK_ROWS][2], const int rows,
										     const int halves)
{
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++) {
			te[r][h] = _mm512_add_ps(te[r][h], _mm512_setzero_ps());
			to[r][h] = _mm512_add_ps(to[r][h], _mm512_setzero_ps());
		}
}

/* A block of the tiles order added to rows rows of C (from i) by 16
 * halves columns (from j): C + (te + to), from +0 where first. */
__attribute__((target("avx512f"), always_inline)) static inline void tiles_add_chains(
	__m512 te[BLOCK_ROWS][2], __m512 to[BLOCK_ROWS][2], bool first, const __mmask16 masks[2], float *c, int ldc, int i,
	int j, const int rows, const int halves)
{
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++) {
			float *row = c + (size_t)(i + r) * ldc + j + 16 * h;
			__m512 sum = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(masks[h], row);
			_mm512_mask_storeu_ps(row, masks[h], _mm512_add_ps(sum, _mm512_add_ps(te[r][h], to[r][h])));
		}
}

__attribute__((target("avx512f"), always_inline)) static inline void avx512_block(
	enum bf16_arithmetic arithmetic, const struct operands *w, int i, int j, __mmask16 mask0, __mmask16 mask1,
	float *c, int ldc, const int rows, const int halves, const enum b_reading reading, const bool panels)
{
	__mmask16 masks[2] = {mask0, mask1};
	struct halves at;
	halves_at(&at, w, j, masks, halves, reading);
	/* A's rows from start on, in their panel (rows_in_panels: rows 1
	 * apart, K's steps PANEL_WIDENED) or not; B's row start packed or its
	 * offset in the image: pointers stepped along K, so that with panels
	 * a step's addresses are fixed distances from a few registers */
	size_t np = (size_t)w->np, rs = panels ? 1 : (size_t)w->kp, qs = panels ? PANEL_WIDENED : 1;
	const float *a = (const float *)w->a + (size_t)w->start * qs +
			 (panels ? (size_t)(i / PANEL_WIDENED) * w->kp * PANEL_WIDENED + i % PANEL_WIDENED : (size_t)i * w->kp);
	const float *b = at.half[0] + (size_t)w->start * np;
	const ptrdiff_t *offset = reading != B_PACKED ? w->offsets + w->start : NULL;
	fetch_next_c(c, ldc, i + rows, j, rows, halves);
#define B_ROWS(h, even, odd)                                                                   \
	do {                                                                                   \
		if (reading == B_PACKED) {                                                     \
			even = _mm512_load_ps(b + 16 * (h));                                   \
			odd = _mm512_load_ps(b + np + 16 * (h));                               \
		} else {                                                                       \
			even = image_b(&at, h, offset[0], even_lanes[h], reading == B_MASKED); \
			odd = image_b(&at, h, offset[1], odd_lanes[h], reading == B_MASKED);   \
		}                                                                              \
	} while (0)
#define NEXT_PAIR()                                  \
	do {                                         \
		a += 2 * qs;                         \
		b += 2 * np;                         \
		offset = offset ? offset + 2 : NULL; \
	} while (0)
	/* a step: a pair of K's rows into each output, by add(r, ae, ao, be,
	 * bo): the tiles order's a product into each chain (CHAINS), the
	 * pairs order's the odd product into each sum, then the even (SUMS) */
#define STEP(add)                                                   \
	do {                                                        \
		__m512 be[2], bo[2];                                \
		for (int h = 0; h < halves; h++)                    \
			B_ROWS(h, be[h], bo[h]);                    \
		for (int r = 0; r < rows; r++) {                    \
			__m512 ae = _mm512_set1_ps(a[r * rs]);      \
			__m512 ao = _mm512_set1_ps(a[r * rs + qs]); \
			add(r, ae, ao, be, bo);                     \
		}                                                   \
		NEXT_PAIR();                                        \
	} while (0)
#define CHAINS(r, ae, ao, be, bo)                                        \
	do {                                                             \
		for (int h = 0; h < halves; h++) {                       \
			te[r][h] = _mm512_fmadd_ps(ae, be[h], te[r][h]); \
			to[r][h] = _mm512_fmadd_ps(ao, bo[h], to[r][h]); \
		}                                                        \
	} while (0)
#define SUMS(r, ae, ao, be, bo)                                            \
	do {                                                               \
		for (int h = 0; h < halves; h++)                           \
			sum[r][h] = _mm512_fmadd_ps(ao, bo[h], sum[r][h]); \
		for (int h = 0; h < halves; h++)                           \
			sum[r][h] = _mm512_fmadd_ps(ae, be[h], sum[r][h]); \
	} while (0)
#define TILES_STEP() STEP(CHAINS)
#define PAIRS_STEP() STEP(SUMS)
	if (arithmetic == BF16_TILES) {
		for (int block = w->start; block < w->stop; block += BF16_TILE_K) {
			__m512 te[BLOCK_ROWS][2], to[BLOCK_ROWS][2];
			for (int r = 0; r < rows; r++)
				for (int h = 0; h < halves; h++)
					te[r][h] = to[r][h] = _mm512_setzero_ps();
			int end = block + BF16_TILE_K < w->kp ? block + BF16_TILE_K : w->kp;
			EACH_STEP_TURNING(reading == B_MASKED, block / 2 % 3, (end - block) / 2, TILES_STEP);
			if (end < block + BF16_TILE_K)
				tiles_pad_chains(te, to, rows, halves);
			tiles_add_chains(te, to, block == 0 && !w->add, masks, c, ldc, i, j, rows, halves);
		}
		return;
	}
	__m512 sum[BLOCK_ROWS][2];
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++)
			sum[r][h] = w->add || w->start ? _mm512_maskz_loadu_ps(masks[h], c + (size_t)(i + r) * ldc + j + 16 * h)
						       : _mm512_setzero_ps();
	EACH_STEP_TURNING(reading == B_MASKED, w->start / 2 % 3, (w->stop - w->start) / 2, PAIRS_STEP);
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++)
			_mm512_mask_storeu_ps(c + (size_t)(i + r) * ldc + j + 16 * h, masks[h], sum[r][h]);
#undef B_ROWS
#undef NEXT_PAIR
#undef STEP
#undef CHAINS
#undef SUMS
#undef TILES_STEP
#undef PAIRS_STEP
}

/* block(..., rows, halves) over every row of C from 0 to m, for the
 * columns from j: wide rows by two vectors a step, or narrow rows by one
 * where 16 columns or fewer are left (a convolution's 16 output channels
 * as the columns); then blocks of 4, 2 and 1. */
#define EACH_ROW_BLOCK(block, wide, narrow, m, n, j, ...)                   \
	do {                                                                \
		int i = 0;                                                  \
		if ((narrow) && (n) - (j) <= 16) {                         \
			for (; i + (narrow) <= (m); i += (narrow))          \
				block(__VA_ARGS__, i, narrow, 1);           \
			for (; i + 4 <= (m); i += 4)                        \
				block(__VA_ARGS__, i, 4, 1);                \
			for (; i < (m); i++)                                \
				block(__VA_ARGS__, i, 1, 1);                \
			break;                                              \
		}                                                           \
		for (; i + (wide) <= (m); i += (wide))                      \
			block(__VA_ARGS__, i, wide, 2);                     \
		for (; i + 4 <= (m); i += 4)                                \
			block(__VA_ARGS__, i, 4, 2);                        \
		for (; i + 2 <= (m); i += 2)                                \
			block(__VA_ARGS__, i, 2, 2);                        \
		for (; i < (m); i++)                                        \
			block(__VA_ARGS__, i, 1, 2);                        \
	} while (0)

/* EACH_ROW_BLOCK in the instantiation w's operands take: B packed, with
 * A's rows or A in panels, or read from the image, each half in one row
 * or not (A in panels); the block's last arguments before i, rows and
 * halves are its b_reading and whether A is in panels. */
#define EACH_READING(block, wide, narrow, m, n, j, w, ...)                                                     \
	do {                                                                                                  \
		if (!(w)->image && !(w)->panels)                                                              \
			EACH_ROW_BLOCK(block, wide, narrow, m, n, j, __VA_ARGS__, B_PACKED, false);           \
		else if (!(w)->image)                                                                         \
			EACH_ROW_BLOCK(block, wide, narrow, m, n, j, __VA_ARGS__, B_PACKED, true);            \
		else if ((w)->wp > (w)->width)                                                                \
			EACH_ROW_BLOCK(block, wide, narrow, m, n, j, __VA_ARGS__, B_BORDERED, true);          \
		else                                                                                          \
			EACH_ROW_BLOCK(block, wide, narrow, m, n, j, __VA_ARGS__, B_MASKED, true);            \
	} while (0)

#define AVX512_BLOCK(arithmetic, w, j, mask0, mask1, c, ldc, reading, panels, i, rows, halves) \
	avx512_block(arithmetic, w, i, j, mask0, mask1, c, ldc, rows, halves, reading, panels)

__attribute__((target("avx512f"), noinline)) static void avx512(enum bf16_arithmetic arithmetic,
								const struct operands *w, int m, int n, float *c, int ldc)
{
	for (int j = 0; j < n; j += 32) {
		__mmask16 mask0 = columns_mask(n - j), mask1 = columns_mask(n - j - 16);
		EACH_READING(AVX512_BLOCK, 6, 12, m, n, j, w, arithmetic, w, j, mask0, mask1, c, ldc);
	}
}

/* ---- AVX512-BF16: vdpbf16ps, the pairs order ---------------------------- */

/* 16 columns of B in pairs read in place from an image of rounded f32
 * values, whose low 16 bits are 0 (image_b: even and odd the rows'
 * offsets, under their lanes where masked): the even row's bf16 low in
 * each word, the odd row's high. */
__attribute__((target("avx512f"), always_inline)) static inline __m512i image_pair(const struct halves *at, int h, ptrdiff_t even,
										   ptrdiff_t odd, __mmask16 even_lanes, __mmask16 odd_lanes,
										   const bool masked)
{
	__m512i low = _mm512_castps_si512(image_b(at, h, even, even_lanes, masked));
	__m512i high = _mm512_castps_si512(image_b(at, h, odd, odd_lanes, masked));
	return _mm512_or_si512(_mm512_srli_epi32(low, 16), high);
}

/* rows rows of C (from i) by 16 halves columns (from j), a pair of K a
 * step, as avx512_block; A's pairs in panels (rows_in_panels) or not; B
 * as reading says. Every pointer steps along K, so that with panels a
 * step's addresses are fixed distances from a few registers. */
__attribute__((target("avx512f,avx512bf16"), always_inline)) static inline void avx512_bf16_block(
	const struct operands *w, int j, __mmask16 mask0, __mmask16 mask1, const enum b_reading reading, const bool panels,
	float *c, int ldc, int i, const int rows, const int halves)
{
	__mmask16 masks[2] = {mask0, mask1};
	struct halves at;
	halves_at(&at, w, j, masks, halves, reading);
	__m512 sum[BLOCK_ROWS][2];
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++)
			sum[r][h] = w->add || w->start ? _mm512_maskz_loadu_ps(masks[h], c + (size_t)(i + r) * ldc + j + 16 * h)
						       : _mm512_setzero_ps();
	fetch_next_c(c, ldc, i + rows, j, rows, halves);
	/* the rows' pairs from start on; a 16-row block's last 8 from
	 * a_next (the next panel) */
	size_t panel = (size_t)w->kp / 2 * PANEL_PAIRS, np = (size_t)w->np;
	size_t rs = panels ? 1 : (size_t)w->kp / 2, qs = panels ? PANEL_PAIRS : 1;
	const uint32_t *a = (const uint32_t *)w->a + (size_t)w->start / 2 * qs +
			    (panels ? (size_t)(i / PANEL_PAIRS) * panel + i % PANEL_PAIRS : (size_t)i * rs);
	const uint32_t *a_next = rows <= PANEL_PAIRS ? a : panels ? a + panel : a + PANEL_PAIRS * rs;
	const uint32_t *b = (const uint32_t *)at.half[0] + (size_t)w->start / 2 * np;
	const ptrdiff_t *offset = reading != B_PACKED ? w->offsets + w->start : NULL;
#define PAIR_STEP(t)                                                                                         \
	do {                                                                                                 \
		__m512bh pairs[2];                                                                           \
		for (int h = 0; h < halves; h++)                                                             \
			pairs[h] = (__m512bh)(reading == B_PACKED ? _mm512_load_si512(b + 16 * h)            \
								  : image_pair(&at, h, offset[0], offset[1], \
									       EVEN_LANES(at, h, t),         \
									       ODD_LANES(at, h, t),          \
									       reading == B_MASKED));        \
		for (int r = 0; r < rows; r++) {                                                             \
			__m512bh pair = (__m512bh)_mm512_set1_epi32(                                         \
				(int)(r < PANEL_PAIRS ? a[r * rs] : a_next[(r - PANEL_PAIRS) * rs]));        \
			for (int h = 0; h < halves; h++)                                                     \
				sum[r][h] = _mm512_dpbf16_ps(sum[r][h], pair, pairs[h]);                     \
		}                                                                                            \
		a += qs;                                                                                     \
		a_next += qs;                                                                                \
		b += np;                                                                                     \
		offset = offset ? offset + 2 : NULL;                                                         \
	} while (0)
	EACH_STEP(reading == B_MASKED, w->start / 2 % 3, (w->stop - w->start) / 2, PAIR_STEP);
#undef PAIR_STEP
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++)
			_mm512_mask_storeu_ps(c + (size_t)(i + r) * ldc + j + 16 * h, masks[h], sum[r][h]);
}

/* 9 channels rows of C (from i, a multiple of 9) by 16 halves columns
 * (from j), as avx512_bf16_block, A's rows read in place from the image
 * in bf16 (w->a_image), nine a channel: row (ky, kx) of a channel's
 * window is its first row moved ky rows and kx columns of the image, so
 * that a step reads each channel's pairs at fixed distances from one
 * address (w->pair_at: K runs along the output's rows, width even, so
 * that no pair straddles two). Each pair is its own load: kx 1's lies
 * between 4-byte boundaries, but making it of its neighbours' halves
 * (vpshrdd) ran slower than the load. */
enum { A_WINDOW = 9, A_CHANNELS = 2 };

__attribute__((target("avx512f,avx512bf16"), always_inline)) static inline void avx512_bf16_image_a_block(
	const struct operands *w, int j, __mmask16 mask0, __mmask16 mask1, float *c, int ldc, int i, const int channels,
	const int halves)
{
	__mmask16 masks[2] = {mask0, mask1};
	__m512 sum[A_WINDOW * A_CHANNELS][2];
	for (int r = 0; r < A_WINDOW * channels; r++)
		for (int h = 0; h < halves; h++)
			sum[r][h] = w->add || w->start ? _mm512_maskz_loadu_ps(masks[h], c + (size_t)(i + r) * ldc + j + 16 * h)
						       : _mm512_setzero_ps();
	fetch_next_c(c, ldc, i + A_WINDOW * channels, j, A_WINDOW * channels, halves);
	const char *window[A_CHANNELS]; /* each channel's first row, as bytes */
	for (int ch = 0; ch < channels; ch++)
		window[ch] = (const char *)(w->a_image + w->offsets[i + A_WINDOW * ch]);
	size_t np = (size_t)w->np, row_bytes = 2 * (size_t)w->wp;
	const uint32_t *b = (const uint32_t *)w->b + j + (size_t)w->start / 2 * np;
	for (int q = w->start / 2; q < w->stop / 2; q++, b += np) {
		size_t at = w->pair_at[q];
		__m512bh pairs[2];
		for (int h = 0; h < halves; h++)
			pairs[h] = (__m512bh)_mm512_loadu_si512(b + 16 * h);
		for (int ch = 0; ch < channels; ch++)
			for (int ky = 0; ky < 3; ky++) {
				const char *row = window[ch] + at + ky * row_bytes;
				for (int kx = 0; kx < 3; kx++) {
					__m512bh pair = (__m512bh)_mm512_broadcastd_epi32(_mm_loadu_si32(row + 2 * kx));
					for (int h = 0; h < halves; h++) {
						__m512 *s = &sum[A_WINDOW * ch + 3 * ky + kx][h];
						*s = _mm512_dpbf16_ps(*s, pair, pairs[h]);
					}
				}
			}
	}
	for (int r = 0; r < A_WINDOW * channels; r++)
		for (int h = 0; h < halves; h++)
			_mm512_mask_storeu_ps(c + (size_t)(i + r) * ldc + j + 16 * h, masks[h], sum[r][h]);
}

#define AVX512_BF16_BLOCK(w, j, mask0, mask1, c, ldc, reading, panels, i, rows, halves) \
	avx512_bf16_block(w, j, mask0, mask1, reading, panels, c, ldc, i, rows, halves)

__attribute__((target("avx512f,avx512bf16"), noinline)) static void avx512_bf16(const struct operands *w, int m, int n,
										  float *c, int ldc)
{
	for (int j = 0; j < n; j += 32) {
		__mmask16 mask0 = columns_mask(n - j), mask1 = columns_mask(n - j - 16);
		EACH_READING(AVX512_BF16_BLOCK, 8, 16, m, n, j, w, w, j, mask0, mask1, c, ldc);
	}
}

/* avx512_bf16 where A is read in place from the image (w->a_image): 18
 * sums a block, two channels' rows by 16 columns or one channel's by 32
 * (9 rows left: one channel's by 16). */
__attribute__((target("avx512f,avx512bf16"), noinline)) static void avx512_bf16_image_a(const struct operands *w, int m,
												     int n, float *c, int ldc)
{
	for (int j = 0; j < n; j += 32) {
		__mmask16 mask0 = columns_mask(n - j), mask1 = columns_mask(n - j - 16);
		int i = 0;
		if (n - j > 16)
			for (; i < m; i += A_WINDOW)
				avx512_bf16_image_a_block(w, j, mask0, mask1, c, ldc, i, 1, 2);
		for (; i + A_WINDOW * A_CHANNELS <= m; i += A_WINDOW * A_CHANNELS)
			avx512_bf16_image_a_block(w, j, mask0, mask1, c, ldc, i, A_CHANNELS, 1);
		for (; i < m; i += A_WINDOW)
			avx512_bf16_image_a_block(w, j, mask0, mask1, c, ldc, i, 1, 1);
	}
}

/* ---- AVX512-BF16: vdpbf16ps, the tiles order ----------------------------- */

/* The emulation of the tiles order by vdpbf16ps where the processor has
 * it: a lane's vdpbf16ps is two steps of one chain, its pair's high bf16
 * first (the pairs order's definition, portable()), each an FMA under DAZ
 * and FTZ as tdpbf16ps's. So a block's even chain is eight of them over
 * K's pairs (block + 4t high, block + 4t + 2 low) from +0, and its odd
 * chain eight over (block + 4t + 1, block + 4t + 3): the f32 FMAs' bits at
 * two products an instruction. The operands stay the avx512 path's,
 * widened: A's pairs are made once into panels (tiles_pairs_in_panels),
 * B's once a product (tiles_pairs_of_b) or, read in place or beside few
 * rows of A, in the block from two widened rows. tiles_by_fma makes the
 * avx512 path run its f32 FMAs instead (the tests run both). */
static bool tiles_by_fma;

void bf16_emulate_tiles_by_fma(bool fma) { tiles_by_fma = fma; }

static bool tiles_by_pairs(enum bf16_path path, enum bf16_arithmetic arithmetic)
{
	static int has = -1;
	if (has < 0) /* and AVX512-BW's vpermt2w, which every processor with AVX512-BF16 has */
		has = has_avx512_bf16() && __builtin_cpu_supports("avx512bw");
	return path == BF16_AVX512 && arithmetic == BF16_TILES && has && !tiles_by_fma;
}

const char *bf16_path_instructions(enum bf16_path path, enum bf16_arithmetic arithmetic)
{
	switch (path) {
	case BF16_PORTABLE:
		return "fmaf";
	case BF16_AVX512_BF16:
		return "vdpbf16ps";
	case BF16_AMX:
		return "tdpbf16ps";
	default:
		return tiles_by_pairs(path, arithmetic) ? "vdpbf16ps, two of a chain's FMAs an instruction" : "f32 FMAs";
	}
}

/* A block's pairs of K: 16, t of chain c (0 even, 1 odd) the 8c + t-th,
 * its high bf16 K's block + 4t + c, its low two past it. */
enum { TILES_PAIRS = BF16_TILE_K / 2 };

/* A (m x kp widened, rows kp apart) as the tiles order's pairs in panels
 * of PANEL_WIDENED rows, a panel's blocks of 32 along K one after the
 * other, each its rows' 16 pairs (the even chain's 8, then the odd one's)
 * one row after the other; past kp and m 0. A row's block is one
 * vpermt2w of its 32 values. Kept for the same A as rows_in_panels keeps
 * its copy. */
__attribute__((target("avx512f,avx512bw"))) static const uint32_t *tiles_pairs_in_panels(const float *a, int m, int kp)
{
	static __thread struct {
		const void *a;
		int m, kp;
		unsigned long packing;
	} kept;
	int panels = (m + PANEL_WIDENED - 1) / PANEL_WIDENED, blocks = (kp + BF16_TILE_K - 1) / BF16_TILE_K;
	uint32_t *out = scratch_of(7, (size_t)panels * blocks * PANEL_WIDENED * TILES_PAIRS * sizeof *out);
	if (!out)
		return NULL;
	if (kept.a == a && kept.m == m && kept.kp == kp && kept.packing == a_packings)
		return out;
	kept.a = a;
	kept.m = m;
	kept.kp = kp;
	kept.packing = a_packings;
	/* pair t's low word, then its high: the bf16 (a float's high word)
	 * of K's 4t + 2 and 4t for t < 8, of 4t - 29 and 4t - 31 after */
	static const short words[32] = {5,  1,  13, 9,  21, 17, 29, 25, 37, 33, 45, 41, 53, 49, 61, 57,
					 7,  3,  15, 11, 23, 19, 31, 27, 39, 35, 47, 43, 55, 51, 63, 59};
	__m512i pick = _mm512_loadu_si512(words);
	uint32_t *to = out;
	for (int p = 0; p < panels; p++)
		for (int block = 0; block < kp; block += BF16_TILE_K)
			for (int r = 0; r < PANEL_WIDENED; r++, to += TILES_PAIRS) {
				int row = p * PANEL_WIDENED + r, left = kp - block;
				if (row >= m) {
					_mm512_storeu_si512(to, _mm512_setzero_si512());
					continue;
				}
				const float *x = a + (size_t)row * kp + block;
				__m512i first = _mm512_castps_si512(_mm512_maskz_loadu_ps(columns_mask(left), x));
				__m512i second = _mm512_castps_si512(_mm512_maskz_loadu_ps(columns_mask(left - 16), x + 16));
				_mm512_storeu_si512(to, _mm512_permutex2var_epi16(first, pick, second));
			}
	return out;
}

/* B (kp x np widened, packed) as the tiles order's pairs: each block of
 * 32 along K 16 rows of np pairs, in A's panels' order (TILES_PAIRS),
 * those past kp 0. Made for each product (B is new each time: an image's
 * columns) where A has TILES_PAIRED_B_FROM rows or more: the kernel's
 * blocks would otherwise pair each of B's rows again for each block of
 * A's rows; with fewer, the copy cost more than it spared (one thread of
 * a Zen 5, preact-110's weight gradients of 16 rows). */
enum { TILES_PAIRED_B_FROM = 32 };
__attribute__((target("avx512f"))) static const uint32_t *tiles_pairs_of_b(const float *b, int kp, int np)
{
	int blocks = (kp + BF16_TILE_K - 1) / BF16_TILE_K;
	uint32_t *out = scratch_of(8, (size_t)blocks * TILES_PAIRS * np * sizeof *out);
	if (!out)
		return NULL;
	uint32_t *to = out;
	for (int block = 0; block < kp; block += BF16_TILE_K)
		for (int t = 0; t < TILES_PAIRS; t++, to += np) {
			int high = block + 4 * (t % 8) + t / 8, low = high + 2;
			const float *x = b + (size_t)high * np, *y = b + (size_t)low * np;
			for (int j = 0; j < np; j += 16) {
				__m512i first = high < kp ? _mm512_castps_si512(_mm512_load_ps(x + j)) : _mm512_setzero_si512();
				__m512i second = low < kp ? _mm512_castps_si512(_mm512_load_ps(y + j)) : _mm512_setzero_si512();
				_mm512_store_si512(to + j, _mm512_or_si512(first, _mm512_srli_epi32(second, 16)));
			}
		}
	return out;
}

/* rows rows of width bf16 from x, stride apart, one after the other: of
 * a constant size for the widths of CIFAR's and ImageNet's outputs, which
 * the compiler makes a few moves rather than a call each. */
static inline void line_rows(uint16_t *line, const uint16_t *x, int rows, int stride, int width)
{
	for (int r = 0; r < rows; r++)
		memcpy(line + (size_t)r * width, x + (ptrdiff_t)r * stride, sizeof *line * (size_t)width);
}

static void line_of(uint16_t *line, const uint16_t *x, int rows, int stride, int width)
{
/* a case of the switch below: width a constant */
#define LINE_ROWS_OF(constant)                                   \
	case constant:                                           \
		line_rows(line, x, rows, stride, constant);      \
		break;
	switch (width) {
		LINE_ROWS_OF(8)
		LINE_ROWS_OF(14)
		LINE_ROWS_OF(16)
		LINE_ROWS_OF(28)
		LINE_ROWS_OF(32)
		LINE_ROWS_OF(56)
	default:
		line_rows(line, x, rows, stride, width);
	}
#undef LINE_ROWS_OF
}

/* A's rows gathered from an image in bf16 (bf16_multiply_rows: row j the
 * rows of x at offsets[j] + r stride, width each) straight into
 * tiles_pairs_in_panels' layout, sparing the widened rows it would read:
 * a row's K gathered, then each block of 32 one vpermw of its bf16. In
 * slot 9, so that the panels kept in 7 (a convolution's weights, which
 * its data gradient takes image after image) stay. */
__attribute__((target("avx512f,avx512bw"))) static const uint32_t *tiles_pairs_gathered(const uint16_t *x, const ptrdiff_t *offsets,
											  int m, int rows, int stride, int width)
{
	int k = rows * width, panels = (m + PANEL_WIDENED - 1) / PANEL_WIDENED, blocks = (k + BF16_TILE_K - 1) / BF16_TILE_K;
	size_t panel_bytes = (size_t)panels * blocks * PANEL_WIDENED * TILES_PAIRS * sizeof(uint32_t);
	uint32_t *out = scratch_of(9, panel_bytes + (size_t)blocks * BF16_TILE_K * sizeof(uint16_t));
	if (!out)
		return NULL;
	uint16_t *line = (uint16_t *)(out + panel_bytes / sizeof *out); /* a row's K, zero to its last block's end */
	memset(line + k, 0, sizeof *line * (size_t)(blocks * BF16_TILE_K - k));
	/* pair t's low bf16, then its high: K's 4t + 2 and 4t for t < 8, 4t
	 * - 29 and 4t - 31 after (tiles_pairs_in_panels' pick, of bf16) */
	static const short words[32] = {2, 0, 6, 4, 10, 8, 14, 12, 18, 16, 22, 20, 26, 24, 30, 28,
					 3, 1, 7, 5, 11, 9, 15, 13, 19, 17, 23, 21, 27, 25, 31, 29};
	__m512i pick = _mm512_loadu_si512(words);
	size_t block_words = (size_t)PANEL_WIDENED * TILES_PAIRS; /* a panel's block */
	for (int row = 0; row < panels * PANEL_WIDENED; row++) {
		uint32_t *to = out + (size_t)(row / PANEL_WIDENED) * blocks * block_words + (size_t)(row % PANEL_WIDENED) * TILES_PAIRS;
		if (row >= m) {
			for (int b = 0; b < blocks; b++)
				_mm512_storeu_si512(to + b * block_words, _mm512_setzero_si512());
			continue;
		}
		line_of(line, x + offsets[row], rows, stride, width);
		for (int b = 0; b < blocks; b++)
			_mm512_storeu_si512(to + b * block_words,
					    _mm512_permutexvar_epi16(pick, _mm512_loadu_si512(line + (size_t)b * BF16_TILE_K)));
	}
	return out;
}

/* B's pair for 16 columns of half h: row high's bf16 high, row high + 2's
 * low (0 where low, past the block's end, is not read), from the image
 * under high_lanes and low_lanes where masked; paired, B's pair-th row. */
__attribute__((target("avx512f,avx512bf16"), always_inline)) static inline __m512bh tiles_b_pair(
	const struct halves *at, const struct operands *w, int h, int pair, int high, bool low, __mmask16 high_lanes,
	__mmask16 low_lanes, const enum b_reading reading)
{
	if (reading == B_PAIRED)
		return (__m512bh)_mm512_load_si512((const uint32_t *)at->half[h] + (size_t)pair * w->np);
	__m512i first, second = _mm512_setzero_si512();
	if (reading == B_PACKED) {
		const float *b = at->half[h] + (size_t)high * w->np;
		first = _mm512_castps_si512(_mm512_load_ps(b));
		if (low)
			second = _mm512_castps_si512(_mm512_load_ps(b + 2 * (size_t)w->np));
	} else {
		bool masked = reading == B_MASKED;
		first = _mm512_castps_si512(image_b(at, h, w->offsets[high], high_lanes, masked));
		if (low)
			second = _mm512_castps_si512(image_b(at, h, w->offsets[high + 2], low_lanes, masked));
	}
	return (__m512bh)_mm512_or_si512(first, _mm512_srli_epi32(second, 16));
}

/* rows rows of C (from i) by 16 halves columns (from j), as avx512_block
 * computes the tiles order: per block, each chain's steps (its pairs, the
 * last one's low half past the block's end where K ends there), then
 * +0 to each chain where the block is short, then C + (te + to). */
__attribute__((target("avx512f,avx512bf16"), always_inline)) static inline void avx512_tiles_pairs_block(
	const struct operands *w, int j, __mmask16 mask0, __mmask16 mask1, const enum b_reading reading, float *c, int ldc,
	int i, const int rows, const int halves)
{
	__mmask16 masks[2] = {mask0, mask1};
	struct halves at;
	halves_at(&at, w, j, masks, halves, reading);
	fetch_next_c(c, ldc, i + rows, j, rows, halves);
	size_t block_pairs = PANEL_WIDENED * TILES_PAIRS; /* a panel's block */
	const uint32_t *a = (const uint32_t *)w->a +
			    (size_t)(i / PANEL_WIDENED) * ((w->kp + BF16_TILE_K - 1) / BF16_TILE_K) * block_pairs +
			    (size_t)(i % PANEL_WIDENED) * TILES_PAIRS + (size_t)w->start / BF16_TILE_K * block_pairs;
	/* a step's pairs: from the image under the lanes of a 3x3 kernel's
	 * column K's row % 3, from a block's lanes[h] turned to start at
	 * block % 3 where the steps are unrolled (whole blocks) */
#define TILES_PAIR_STEP(chains, t, chain, whole)                                                                    \
	do {                                                                                                        \
		int high_ = block + 4 * (t) + (chain);                                                              \
		__m512bh pairs_[2];                                                                                 \
		for (int h = 0; h < halves; h++)                                                                    \
			pairs_[h] = tiles_b_pair(                                                                   \
				&at, w, h, block / 2 + 8 * (chain) + (t), high_, (whole) || high_ + 2 < end,        \
				(whole) ? lanes[h][((t) + (chain)) % 3] : at.within[h][high_ % 3],                  \
				(whole) ? lanes[h][((t) + (chain) + 2) % 3] : at.within[h][(high_ + 2) % 3], reading); \
		for (int r = 0; r < rows; r++) {                                                                    \
			__m512bh pair_ = (__m512bh)_mm512_set1_epi32((int)a[r * TILES_PAIRS + 8 * (chain) + (t)]); \
			for (int h = 0; h < halves; h++)                                                            \
				chains[r][h] = _mm512_dpbf16_ps(chains[r][h], pair_, pairs_[h]);                    \
		}                                                                                                   \
	} while (0)
	for (int block = w->start; block < w->stop; block += BF16_TILE_K, a += block_pairs) {
		__m512 te[BLOCK_ROWS][2], to[BLOCK_ROWS][2];
		for (int r = 0; r < rows; r++)
			for (int h = 0; h < halves; h++)
				te[r][h] = to[r][h] = _mm512_setzero_ps();
		int end = block + BF16_TILE_K < w->kp ? block + BF16_TILE_K : w->kp;
		/* K's row block + 4t + chain is block % 3 + t + chain, mod 3 */
		__mmask16 lanes[2][3] = {{0}};
		for (int h = 0; reading == B_MASKED && h < halves; h++)
			for (int d = 0; d < 3; d++)
				lanes[h][d] = at.within[h][(block + d) % 3];
		if (end == block + BF16_TILE_K) {
#define TILES_WHOLE_STEP(t)                             \
	do {                                            \
		TILES_PAIR_STEP(te, t, 0, true);        \
		TILES_PAIR_STEP(to, t, 1, true);        \
	} while (0)
			TILES_WHOLE_STEP(0);
			TILES_WHOLE_STEP(1);
			TILES_WHOLE_STEP(2);
			TILES_WHOLE_STEP(3);
			TILES_WHOLE_STEP(4);
			TILES_WHOLE_STEP(5);
			TILES_WHOLE_STEP(6);
			TILES_WHOLE_STEP(7);
#undef TILES_WHOLE_STEP
		} else {
			for (int t = 0, steps = (end - block + 2) / 4; t < steps; t++) {
				TILES_PAIR_STEP(te, t, 0, false);
				TILES_PAIR_STEP(to, t, 1, false);
			}
			tiles_pad_chains(te, to, rows, halves);
		}
		tiles_add_chains(te, to, block == 0 && !w->add, masks, c, ldc, i, j, rows, halves);
	}
#undef TILES_PAIR_STEP
}

#define AVX512_TILES_PAIRS_BLOCK(w, j, mask0, mask1, c, ldc, reading, panels, i, rows, halves) \
	avx512_tiles_pairs_block(w, j, mask0, mask1, reading, c, ldc, i, rows, halves)

/* The emulation's blocks (6 rows by 32 columns, 12 by 16), A in the
 * tiles order's pair panels. */
__attribute__((target("avx512f,avx512bf16"), noinline)) static void avx512_tiles_pairs(const struct operands *w, int m,
											 int n, float *c, int ldc)
{
	for (int j = 0; j < n; j += 32) {
		__mmask16 mask0 = columns_mask(n - j), mask1 = columns_mask(n - j - 16);
		if (w->b_paired)
			EACH_ROW_BLOCK(AVX512_TILES_PAIRS_BLOCK, 6, 12, m, n, j, w, j, mask0, mask1, c, ldc, B_PAIRED, true);
		else
			EACH_READING(AVX512_TILES_PAIRS_BLOCK, 6, 12, m, n, j, w, w, j, mask0, mask1, c, ldc);
	}
}

/* ---- AMX: tdpbf16ps, the tiles order ----------------------------------- */

struct tile_config {
	uint8_t palette, start_row, reserved[14];
	uint16_t bytes_per_row[16];
	uint8_t rows[16];
} __attribute__((aligned(64)));

/* C (mp x np: N padded to 32 within rows np apart) += A (mp x kp, padded
 * bf16) B (pairs of rows, as pair_rows lays them): 32 x 32 outputs at a
 * time in four C tiles, so that each A and B tile loaded serves two
 * products. Each C tile takes its K blocks in order, as the definition
 * sums them. */
__attribute__((target("amx-tile,amx-bf16,avx512f"), noinline)) static void amx(int mp, int np, int kp,
										 const uint16_t *a, const uint32_t *pairs,
										 float *c)
{
	struct tile_config config;
	memset(&config, 0, sizeof config);
	config.palette = 1;
	for (int t = 0; t < 8; t++) {
		config.bytes_per_row[t] = 64;
		config.rows[t] = 16;
	}
	/* gcc 12 at -O2 can drop the stores above, which it does not see
	 * ldtilecfg read */
	__asm__ volatile("" : : "m"(config) : "memory");
	_tile_loadconfig(&config);
	size_t c_row = (size_t)np * sizeof(float), a_row = (size_t)kp * sizeof(uint16_t), b_row = c_row;
	for (int i = 0; i < mp; i += 32)
		for (int j = 0; j + 32 <= np; j += 32) { /* np: N to 32, or a line past it (b_width) */
			float *c0 = c + (size_t)i * np + j, *c1 = c0 + (size_t)16 * np;
			_tile_loadd(0, c0, c_row);
			_tile_loadd(1, c0 + 16, c_row);
			_tile_loadd(2, c1, c_row);
			_tile_loadd(3, c1 + 16, c_row);
			for (int block = 0; block < kp; block += BF16_TILE_K) {
				const uint16_t *a0 = a + (size_t)i * kp + block;
				const uint32_t *b0 = pairs + (size_t)block / 2 * np + j;
				_tile_loadd(4, a0, a_row);
				_tile_loadd(5, a0 + (size_t)16 * kp, a_row);
				_tile_loadd(6, b0, b_row);
				_tile_loadd(7, b0 + 16, b_row);
				_tile_dpbf16ps(0, 4, 6);
				_tile_dpbf16ps(1, 4, 7);
				_tile_dpbf16ps(2, 5, 6);
				_tile_dpbf16ps(3, 5, 7);
			}
			_tile_stored(0, c0, c_row);
			_tile_stored(1, c0 + 16, c_row);
			_tile_stored(2, c1, c_row);
			_tile_stored(3, c1 + 16, c_row);
		}
	_tile_release();
}

/* ---- AVX2: f32 multiply-adds on widened operands ------------------------ */

/* Eight columns of C: the whole vector where all lie within n, else the
 * lanes mask says. A masked store takes about 16 cycles on AMD's Zen 3
 * (a plain one under 1), and a block with a short K stores C about as
 * often as it multiplies. */
__attribute__((target("avx2"), always_inline)) static inline __m256 c_load8(const float *at, __m256i mask, const bool whole)
{
	return whole ? _mm256_loadu_ps(at) : _mm256_maskload_ps(at, mask);
}

__attribute__((target("avx2"), always_inline)) static inline void c_store8(float *at, __m256i mask, __m256 x, const bool whole)
{
	if (whole)
		_mm256_storeu_ps(at, x);
	else
		_mm256_maskstore_ps(at, mask, x);
}

/* Where an AVX2 block reads its operands: A's rows from a, rs floats
 * apart and K's steps qs (in panels of PANEL_AVX2, rows_in_panels: 1 and
 * PANEL_AVX2; else kp and 1); B's columns from j with its rows np floats
 * apart from K's row first on, in the packed operand (first 0) or in a
 * strip of 16 columns (avx2; its rows interleaved in pairs for
 * avx2_tiles_paired, avx2_strip_rows). */
struct avx2_block {
	const float *a, *b;
	size_t rs, qs, np;
	int first;
};

/* Row r of a block's A (from at.a, a block's first row at the start of
 * a panel where r reaches PANEL_AVX2: the next panel's rows lie
 * PANEL_AVX2 kp floats on in either layout), at K's step p */
#define AVX2_A(at, kp, r, p) \
	((at).a + (size_t)((r) / PANEL_AVX2) * PANEL_AVX2 * (kp) + (size_t)((r) % PANEL_AVX2) * (at).rs + (size_t)(p) * (at).qs)

__attribute__((always_inline)) static inline const float *avx2_a(const struct operands *w, int i)
{
	return (const float *)w->a + (w->panels ? (size_t)(i / PANEL_AVX2) * w->kp * PANEL_AVX2 +
							  (size_t)(i % PANEL_AVX2) * (w->avx2_paired ? 2 : 1)
						: (size_t)i * w->kp);
}

/* The pairs order as avx512_block computes it, eight lanes a vector: rows
 * rows of C (up to 6 by two vectors, 12 by one) by 8 halves columns (from
 * j; mask0 and mask1 the lanes within n, all of them where whole). */
__attribute__((target("avx2,fma"), always_inline)) static inline void avx2_pairs_block(const struct operands *w,
										       struct avx2_block at, int i, int j,
										       __m256i mask0, __m256i mask1, float *c,
										       int ldc, const int rows, const int halves,
										       const bool whole)
{
	const float *b = at.b;
	size_t np = at.np;
	int first = at.first;
	__m256i masks[2] = {mask0, mask1};
	__m256 sum[12][2];
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++)
			sum[r][h] = w->add || w->start ? c_load8(c + (size_t)(i + r) * ldc + j + 8 * h, masks[h], whole)
						       : _mm256_setzero_ps();
	/* the odd element of each pair into every sum, then the even one:
	 * two vectors of B live at a time */
	for (int e = w->start; e < w->stop; e += 2)
		for (int odd = 1; odd >= 0; odd--) {
			__m256 y[2];
			for (int h = 0; h < halves; h++)
				y[h] = _mm256_load_ps(b + (size_t)(e + odd - first) * np + 8 * h);
			for (int r = 0; r < rows; r++) {
				__m256 x = _mm256_broadcast_ss(AVX2_A(at, w->kp, r, e + odd));
				for (int h = 0; h < halves; h++)
					sum[r][h] = _mm256_fmadd_ps(x, y[h], sum[r][h]);
			}
		}
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++)
			c_store8(c + (size_t)(i + r) * ldc + j + 8 * h, masks[h], sum[r][h], whole);
}

/* One chain of a block of the tiles order for rows rows by 8 halves
 * columns: the products of K from start to end, two apart, summed from
 * +0 (then the rest of the block's padding, struct operands). */
__attribute__((target("avx2,fma"), always_inline)) static inline void avx2_chain(struct avx2_block at, int kp, int start,
										 int end, const int rows, const int halves,
										 __m256 chain[12][2])
{
	const float *b = at.b;
	size_t np = at.np;
	int first = at.first;
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++)
			chain[r][h] = _mm256_setzero_ps();
	for (int p = start; p < end; p += 2) {
		__m256 y[2];
		for (int h = 0; h < halves; h++)
			y[h] = _mm256_load_ps(b + (size_t)(p - first) * np + 8 * h);
		for (int r = 0; r < rows; r++) {
			__m256 x = _mm256_broadcast_ss(AVX2_A(at, kp, r, p));
			for (int h = 0; h < halves; h++)
				chain[r][h] = _mm256_fmadd_ps(x, y[h], chain[r][h]);
		}
	}
	if (end < (start & ~31) + 32)
		for (int r = 0; r < rows; r++)
			for (int h = 0; h < halves; h++)
				chain[r][h] = _mm256_add_ps(chain[r][h], _mm256_setzero_ps());
}

/* The tiles order for rows rows of C (up to 6 by two vectors, 12 by
 * one) by 8 halves columns, a block's two chains in turn, twelve sums at
 * a time; the even chain's sums, and C's, wait on the stack while the
 * odd one runs: where B is not in a strip (fewer than AVX2_STRIP_FROM
 * rows of A). There it ran faster than the chains side by side in blocks
 * of 3 rows (16 x 1024 x 144: 70.9 GFLOP/s against 67.8, one thread of a
 * Zen 3), whose last block of 16 rows has one; and no faster than them
 * with the strip's pairs filled from an image at 16 rows (preact-110's
 * 3x3 at 32 x 32). */
__attribute__((target("avx2,fma"), always_inline)) static inline void avx2_tiles_in_turn(const struct operands *w,
											 struct avx2_block at, int i, int j,
											 __m256i mask0, __m256i mask1, float *c,
											 int ldc, const int rows, const int halves,
											 const bool whole)
{
	__m256i masks[2] = {mask0, mask1};
	__m256 sum[12][2];
	bool from_zero = w->start == 0 && !w->add;
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++)
			sum[r][h] = from_zero ? _mm256_setzero_ps() : c_load8(c + (size_t)(i + r) * ldc + j + 8 * h, masks[h], whole);
	for (int block = w->start; block < w->stop; block += BF16_TILE_K) {
		int end = block + BF16_TILE_K < w->kp ? block + BF16_TILE_K : w->kp;
		__m256 even[12][2], odd[12][2];
		avx2_chain(at, w->kp, block, end, rows, halves, even);
		avx2_chain(at, w->kp, block + 1, end, rows, halves, odd);
		for (int r = 0; r < rows; r++)
			for (int h = 0; h < halves; h++)
				sum[r][h] = _mm256_add_ps(sum[r][h], _mm256_add_ps(even[r][h], odd[r][h]));
	}
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++)
			c_store8(c + (size_t)(i + r) * ldc + j + 8 * h, masks[h], sum[r][h], whole);
}

/* The tiles order with a block's two chains side by side in each
 * vector, a column's even chain in one lane and its odd chain in the
 * next: B's columns in pairs along K in the strip (avx2_strip_rows), A's
 * two values of a pair broadcast together (its rows kp apart, or in
 * panels of pairs, rows_in_panels), so that rows rows (up to 3 by four
 * vectors, 6 by two) by 8 halves columns take twelve sums, four vectors
 * of B and three of A a pair of K's steps, where the chains in
 * registers of their own loaded four of B and six of A (2 to 11% faster
 * on ResNet-50's shapes alone, 8% on preact-110's step: one thread of a
 * Zen 3). Once a block, hadd adds each column's chains, te + to, in
 * columns' order, and that is added to C's sums waiting on the stack. */
__attribute__((target("avx2,fma"), always_inline)) static inline void avx2_tiles_paired(const struct operands *w,
											struct avx2_block at, int i, int j,
											__m256i mask0, __m256i mask1, float *c,
											int ldc, const int rows, const int halves,
											const bool whole)
{
	const float *b = at.b;
	int first = at.first;
	__m256i masks[2] = {mask0, mask1};
	float sum[6][16] __attribute__((aligned(32)));
	bool from_zero = w->start == 0 && !w->add;
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++)
			_mm256_store_ps(sum[r] + 8 * h, from_zero ? _mm256_setzero_ps()
								  : c_load8(c + (size_t)(i + r) * ldc + j + 8 * h, masks[h], whole));
	for (int block = w->start; block < w->stop; block += BF16_TILE_K) {
		int end = block + BF16_TILE_K < w->kp ? block + BF16_TILE_K : w->kp;
		__m256 t[6][4];
		for (int r = 0; r < rows; r++)
			for (int v = 0; v < 2 * halves; v++)
				t[r][v] = _mm256_setzero_ps();
		for (int p = block; p < end; p += 2) {
			__m256 y[4];
			for (int v = 0; v < 2 * halves; v++)
				y[v] = _mm256_load_ps(b + (size_t)(p - first) * 16 + 8 * v);
			for (int r = 0; r < rows; r++) {
				__m256 x = _mm256_castpd_ps(_mm256_broadcast_sd((const double *)AVX2_A(at, w->kp, r, p)));
				for (int v = 0; v < 2 * halves; v++)
					t[r][v] = _mm256_fmadd_ps(x, y[v], t[r][v]);
			}
		}
		/* the rest of the block's padding (struct operands) */
		if (end < block + BF16_TILE_K)
			for (int r = 0; r < rows; r++)
				for (int v = 0; v < 2 * halves; v++)
					t[r][v] = _mm256_add_ps(t[r][v], _mm256_setzero_ps());
		for (int r = 0; r < rows; r++)
			for (int h = 0; h < halves; h++)
				_mm256_store_ps(sum[r] + 8 * h, _mm256_add_ps(_mm256_load_ps(sum[r] + 8 * h),
									      _mm256_hadd_ps(t[r][2 * h], t[r][2 * h + 1])));
	}
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < halves; h++)
			c_store8(c + (size_t)(i + r) * ldc + j + 8 * h, masks[h], _mm256_load_ps(sum[r] + 8 * h), whole);
}

/* The lanes of eight below left, as maskload and maskstore take them. */
__attribute__((target("avx2"))) static __m256i lanes_mask(int left)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* One block in either order (avx2_pairs_block; avx2_tiles_paired where B
 * is in a strip, else avx2_tiles_in_turn: 12 sums and the operands of a
 * step in AVX2's 16 registers) of rows rows by 8 halves columns, as avx2
 * calls it: 6 rows by two vectors (avx2_tiles_paired's in two blocks of
 * 3), or 12 by one (its in two of 6), then 4, 2 and 1. */
__attribute__((target("avx2,fma"), always_inline)) static inline void avx2_block(enum bf16_arithmetic arithmetic,
										 const struct operands *w, struct avx2_block at,
										 int i, int j, __m256i mask0, __m256i mask1,
										 float *c, int ldc, const int rows,
										 const int halves, const bool whole)
{
	/* once a block of up to 6 rows (12 in N's last 8 columns), the pace
	 * bf16_fetch_during was set for: at twice that, the next image's
	 * lines came in while a band's columns were read (ResNet-50's 3x3
	 * forward at 56x56: 203 ms a step against 193) */
	fetch_next_c(c, ldc, i + rows, j, rows, 1);
	at.a = avx2_a(w, i);
	int part = 6 / halves; /* avx2_tiles_paired's rows */
	if (arithmetic == BF16_PAIRS)
		avx2_pairs_block(w, at, i, j, mask0, mask1, c, ldc, rows, halves, whole);
	else if (!w->avx2_paired)
		avx2_tiles_in_turn(w, at, i, j, mask0, mask1, c, ldc, rows, halves, whole);
	else if (rows <= part)
		avx2_tiles_paired(w, at, i, j, mask0, mask1, c, ldc, rows, halves, whole);
	else {
		avx2_tiles_paired(w, at, i, j, mask0, mask1, c, ldc, part, halves, whole);
		at.a = avx2_a(w, i + part);
		avx2_tiles_paired(w, at, i + part, j, mask0, mask1, c, ldc, rows - part, halves, whole);
	}
}

/* avx2_block over every row of C for the columns from j: blocks of 6
 * rows by two vectors, or where 8 columns or fewer are left (ResNet's 7 x
 * 7 images, N 49), of 12 rows by one (two of A's panels: a block starts
 * one); then 4, 2 and 1 rows. */
#define AVX2_ROW_BLOCKS(halves, whole)                                                                         \
	do {                                                                                                 \
		int i = 0;                                                                                   \
		for (; i + 12 / (halves) <= m; i += 12 / (halves))                                            \
			avx2_block(arithmetic, w, at, i, j, mask0, mask1, c, ldc, 12 / (halves), halves, whole); \
		for (; i + 6 <= m; i += 6)                                                                   \
			avx2_block(arithmetic, w, at, i, j, mask0, mask1, c, ldc, 6, halves, whole);          \
		for (; i + 4 <= m; i += 4)                                                                   \
			avx2_block(arithmetic, w, at, i, j, mask0, mask1, c, ldc, 4, halves, whole);          \
		for (; i + 2 <= m; i += 2)                                                                   \
			avx2_block(arithmetic, w, at, i, j, mask0, mask1, c, ldc, 2, halves, whole);          \
		for (; i < m; i++)                                                                           \
			avx2_block(arithmetic, w, at, i, j, mask0, mask1, c, ldc, 1, halves, whole);          \
	} while (0)

/* B's columns j to j + 15 of the part of K copied side by side into a
 * strip where enough rows of A read them (AVX2_STRIP_FROM), or read into
 * it from the image at any M (avx2_strip_of_image): a block then
 * reads 64 bytes a step from one stream in the L1 cache, not a line
 * each of kp rows np floats apart, pages apart on wide images (5 to 23%
 * faster on ResNet-50's shapes, one thread of a Zen 3). Where the strip
 * cannot be had (memory), B is read where it lies. */
enum { AVX2_STRIP_FROM = 32, AVX2_STRIP_BYTES = BF16_K_PART * 16 * sizeof(float) };

/* The bytes of A (widened) that the L2 cache holds beside the rest: half
 * of a Zen 3's. Where A is no larger, AVX2's products take every part of
 * K for 16 columns before the next 16 (products_by_parts), so that those
 * columns of C stay in the L1 cache from part to part rather than go
 * out and come back (64 x 3136 x 576 alone, a 3x3 at 56 x 56 unbanded,
 * the tiles order: 68.4 -> 73.6 GFLOP/s, one thread of a Zen 3, best of
 * 16); A then comes from the L2 cache for each 16 columns, as its part
 * did. A sum's order is the same in either. */
enum { AVX2_A_HELD = 256 * 1024 };

/* Rows e and e + 1 of the strip (from the part's start, e even), each
 * two halves of 8 columns: side by side, 16 floats a row; or, for
 * avx2_tiles_paired, as pairs along K, each half's 8 columns in two
 * vectors of four pairs (columns 0, 1, 4, 5, then 2, 3, 6, 7: as
 * unpack leaves them and hadd takes them back). */
__attribute__((target("avx2"), always_inline)) static inline void avx2_strip_rows(float *strip, int e, const __m256 even[2],
										  const __m256 odd[2], bool paired)
{
	float *at = strip + (size_t)e * 16;
	for (int h = 0; h < 2; h++)
		if (paired) {
			_mm256_store_ps(at + 16 * h, _mm256_unpacklo_ps(even[h], odd[h]));
			_mm256_store_ps(at + 16 * h + 8, _mm256_unpackhi_ps(even[h], odd[h]));
		} else {
			_mm256_store_ps(at + 8 * h, even[h]);
			_mm256_store_ps(at + 16 + 8 * h, odd[h]);
		}
}

/* The strip of B's columns j to j + 15 for the part of K, read in
 * place from the image (struct operands): each row one load a half from
 * the row of the output they lie in, where the image has its border
 * beside the rows; else from the columns as they lie, under the lanes
 * whose column, moved by e % 3 - 1 (a 3x3 kernel's column), stays in its
 * row and in n (maskload reads nothing past them: the image ends with one
 * row of zeros, not 16 values). */
__attribute__((target("avx2"))) static void avx2_strip_of_image(const struct operands *w, int n, int j, float *strip,
								 bool paired)
{
	const float *from = w->image + (size_t)(j / w->width) * w->wp + j % w->width;
	const ptrdiff_t *offsets = w->offsets + w->start;
	int rows = w->stop - w->start; /* even: kp and the parts' starts are */
	if (w->wp != w->width) {
		for (int e = 0; e < rows; e += 2) {
			const float *row0 = from + offsets[e], *row1 = from + offsets[e + 1];
			__m256 even[2] = {_mm256_loadu_ps(row0), _mm256_loadu_ps(row0 + 8)};
			__m256 odd[2] = {_mm256_loadu_ps(row1), _mm256_loadu_ps(row1 + 8)};
			avx2_strip_rows(strip, e, even, odd, paired);
		}
		return;
	}
	int32_t lanes[3][16] __attribute__((aligned(32)));
	for (int kx = 0; kx < 3; kx++)
		for (int l = 0; l < 16; l++) {
			int x = (j + l) % w->width + kx - 1;
			lanes[kx][l] = j + l < n && x >= 0 && x < w->width ? -1 : 0;
		}
	__m256i within[3][2];
	for (int kx = 0; kx < 3; kx++)
		for (int h = 0; h < 2; h++)
			within[kx][h] = _mm256_load_si256((const __m256i *)(lanes[kx] + 8 * h));
	for (int e = 0; e < rows; e += 2) {
		const float *row0 = from + offsets[e], *row1 = from + offsets[e + 1];
		int kx0 = (w->start + e) % 3, kx1 = (w->start + e + 1) % 3;
		__m256 even[2] = {_mm256_maskload_ps(row0, within[kx0][0]), _mm256_maskload_ps(row0 + 8, within[kx0][1])};
		__m256 odd[2] = {_mm256_maskload_ps(row1, within[kx1][0]), _mm256_maskload_ps(row1 + 8, within[kx1][1])};
		avx2_strip_rows(strip, e, even, odd, paired);
	}
}

/* The products of the part of K (w->start to w->stop) for C's columns
 * from to to (from a multiple of 16), 16 at a time. */
__attribute__((target("avx2,fma"), noinline)) static void avx2(enum bf16_arithmetic arithmetic, const struct operands *w,
							     int m, int n, int from, int to, float *c, int ldc)
{
	float *strip = m >= AVX2_STRIP_FROM || w->image ? scratch_of(10, AVX2_STRIP_BYTES) : NULL;
	size_t rs = w->panels ? (w->avx2_paired ? 2 : 1) : (size_t)w->kp, qs = w->panels ? PANEL_AVX2 : 1;
	for (int j = from; j < to; j += 16) {
		__m256i mask0 = lanes_mask(n - j), mask1 = lanes_mask(n - j - 8);
		struct avx2_block at = {NULL, (const float *)w->b + j, rs, qs, (size_t)w->np, 0};
		if (w->image) {
			avx2_strip_of_image(w, n, j, strip, w->avx2_paired);
			at = (struct avx2_block){NULL, strip, rs, qs, 16, w->start};
		} else if (strip) {
			for (int e = w->start; e < w->stop; e += 2) {
				const float *row0 = at.b + (size_t)e * at.np, *row1 = row0 + at.np;
				__m256 even[2] = {_mm256_load_ps(row0), _mm256_load_ps(row0 + 8)};
				__m256 odd[2] = {_mm256_load_ps(row1), _mm256_load_ps(row1 + 8)};
				avx2_strip_rows(strip, e - w->start, even, odd, w->avx2_paired);
			}
			at = (struct avx2_block){NULL, strip, rs, qs, 16, w->start};
		}
		if (n - j >= 16)
			AVX2_ROW_BLOCKS(2, true);
		else if (n - j > 8)
			AVX2_ROW_BLOCKS(2, false);
		else if (n - j == 8)
			AVX2_ROW_BLOCKS(1, true);
		else
			AVX2_ROW_BLOCKS(1, false);
	}
}

/* ---- operands packed for a path ----------------------------------------- */

/* What each path reads, zero-padded:
 *   portable      A as bf16, m x k; B as bf16, k x n
 *   avx2, avx512  A widened to f32, m x kp; B widened, kp x np
 *   avx512-bf16   A in pairs (two bf16 along K in 32 bits, the first
 *                 low), m x kp / 2; B in pairs, kp / 2 x np
 *   amx           A as bf16, mp x kp; B in pairs, kp / 2 x np
 * kp: K padded to a pair, or for AMX to its block of 32 (padded_k); np:
 * N to 32, or a line more (b_width); mp: M to 32. */
static int to_32(int x) { return (x + 31) / 32 * 32; }

/* B's rows apart, in floats or words: N to 32, and a cache line more
 * where that would be a multiple of 512 bytes, so that the rows a kernel
 * walks down K (and a gather writes) fall in different sets of the L1
 * cache rather than a few: 1024 columns 4 KiB apart took every row of a
 * K part to one set. */
static int b_width(int n)
{
	int np = to_32(n);
	return np % 128 == 0 ? np + 16 : np;
}

size_t bf16_packed_a_bytes(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int k)
{
	(void)arithmetic; /* the layouts follow from the path alone (padded_k) */
	size_t kp = (size_t)padded_k(path, k);
	switch (path) {
	case BF16_PORTABLE:
		return (size_t)m * k * sizeof(uint16_t);
	case BF16_AMX:
		return (size_t)to_32(m) * kp * sizeof(uint16_t);
	default: /* pairs hold two bf16, widened values one */
		return (size_t)m * kp * (path == BF16_AVX512_BF16 ? sizeof(uint16_t) : sizeof(float));
	}
}

size_t bf16_packed_b_bytes(enum bf16_path path, enum bf16_arithmetic arithmetic, int k, int n)
{
	(void)arithmetic; /* the layouts follow from the path alone (padded_k) */
	size_t kp = (size_t)padded_k(path, k), np = (size_t)b_width(n);
	if (path == BF16_PORTABLE)
		return (size_t)k * n * sizeof(uint16_t);
	return kp * np * (bf16_b_layout(path) == BF16_B_WIDENED ? sizeof(float) : sizeof(uint16_t));
}

/* x's bits rounded to bf16's (bf16_from_float), in the high half: a
 * form without branches, which the compiler vectorises. */
static inline uint32_t rounded_bits(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof u);
	uint32_t nearest = (u + 0x7fffu + (u >> 16 & 1)) & 0xffff0000u;
	uint32_t quiet = (u | 0x400000u) & 0xffff0000u;
	return (u & 0x7fffffffu) > 0x7f800000u ? quiet : nearest;
}

static inline float rounded_float(float x)
{
	uint32_t u = rounded_bits(x);
	float y;
	memcpy(&y, &u, sizeof y);
	return y;
}

static inline uint16_t rounded_half(float x) { return (uint16_t)(rounded_bits(x) >> 16); }

/* Eight floats rounded as rounded_bits does, the bf16 in the high half of
 * each lane. The build's baseline (x86-64-v3) has AVX2 everywhere. */
static inline __m256i rounded_bits8(__m256 x)
{
	__m256i u = _mm256_castps_si256(x);
	__m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
	__m256i nearest = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd);
	__m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x400000));
	__m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
	return _mm256_and_si256(_mm256_blendv_epi8(nearest, quiet, nan), _mm256_set1_epi32((int)0xffff0000u));
}

/* Sixteen floats (x, then y) rounded, their bf16 in order: eight pairs,
 * the first of each pair low. */
static inline __m256i rounded_pairs8(__m256 x, __m256 y)
{
	__m256i low = _mm256_srli_epi32(rounded_bits8(x), 16), high = _mm256_srli_epi32(rounded_bits8(y), 16);
	return _mm256_permute4x64_epi64(_mm256_packus_epi32(low, high), 0xd8);
}

/* Eight pairs as pair_of makes them: even's floats rounded, low, and
 * odd's, high (rows 2p and 2p + 1 at eight elements). */
static inline __m256i pairs_across8(__m256 even, __m256 odd)
{
	return _mm256_or_si256(_mm256_srli_epi32(rounded_bits8(even), 16), rounded_bits8(odd));
}

/* Row j of X, rows ld apart. */
static inline const float *row_of(const float *x, int ld, int j) { return x + (ptrdiff_t)j * ld; }

/* x activated by prologue where it is not NULL: max(x scale + shift, 0),
 * the multiply-add rounded once (a convolution's BN and ReLU,
 * conv_activated); else x. */
static inline float activated(float x, const float *prologue)
{
	if (!prologue)
		return x;
	float y = fmaf(x, prologue[0], prologue[1]);
	return y > 0 ? y : 0;
}

/* Eight of x activated as activated() does (vmaxps gives its second
 * operand, +0, for a NaN or -0), or x where prologue is NULL. */
static inline __m256 activated8(__m256 x, const float *prologue)
{
	if (!prologue)
		return x;
	return _mm256_max_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(prologue[0]), _mm256_set1_ps(prologue[1])), _mm256_setzero_ps());
}

/* The prologue of row j of a convolution's image (scale pre[j], shift
 * pre[channels + j]) into to, or NULL where pre is NULL. */
static inline const float *prologue_of(float to[2], const float *pre, int channels, int j)
{
	if (!pre)
		return NULL;
	to[0] = pre[j], to[1] = pre[channels + j];
	return to;
}

/* out[e][j] = row j's element e, rounded, for j below count and e below
 * length, each row j activated first where pre is not NULL (prologue_of):
 * eight rows by eight elements, through registers. */
static void round_transposed(float *out, int ld_out, const float *x, int ld, int count, int length, const float *pre, int channels)
{
	int j = 0;
	for (; j + 8 <= count; j += 8) {
		float prologues[8][2];
		const float *pro[8];
		for (int q = 0; q < 8; q++)
			pro[q] = prologue_of(prologues[q], pre, channels, j + q);
		int e = 0;
		for (; e + 8 <= length; e += 8) {
			__m256 block[8];
			for (int q = 0; q < 8; q++)
				block[q] = activated8(_mm256_loadu_ps(row_of(x, ld, j + q) + e), pro[q]);
			transpose8(block);
			for (int q = 0; q < 8; q++)
				_mm256_storeu_si256((__m256i *)(out + (size_t)(e + q) * ld_out + j), rounded_bits8(block[q]));
		}
		for (; e < length; e++)
			for (int q = 0; q < 8; q++)
				out[(size_t)e * ld_out + j + q] = rounded_float(activated(row_of(x, ld, j + q)[e], pro[q]));
	}
	for (; j < count; j++) {
		float prologue[2];
		const float *pro = prologue_of(prologue, pre, channels, j);
		for (int e = 0; e < length; e++)
			out[(size_t)e * ld_out + j] = rounded_float(activated(row_of(x, ld, j)[e], pro));
	}
}

/* A pair of bf16 from two floats, the first low. */
static inline uint32_t pair_of(float first, float second) { return rounded_bits(first) >> 16 | (rounded_bits(second) & 0xffff0000u); }

/* ---- rounding by AVX512-BF16's own instruction, where there is one ---- */

/* vcvtneps2bf16 and vcvtne2ps2bf16 round to nearest even and quiet a NaN
 * as bf16_from_float does, MXCSR aside, but take a subnormal float as a
 * zero of its sign: the operands are packed by them where the processor
 * has them, and a run of floats holding a subnormal the portable way, so
 * that the bits are the same on every path. */
static bool converts_natively(void)
{
	static int known = -1; /* cpuid is slow under a hypervisor: asked once */
	int has = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (has < 0) {
		has = has_avx512_bf16();
		__atomic_store_n(&known, has, __ATOMIC_RELAXED);
	}
	return has;
}

#define NATIVE __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* The lanes of x holding a subnormal: 0 < |x| < FLT_MIN, that is 2 <= its
 * bits shifted left once (the sign gone) < 0x01000000. */
NATIVE static inline __mmask16 subnormals16(__m512 x)
{
	__m512i twice = _mm512_slli_epi32(_mm512_castps_si512(x), 1);
	return _mm512_cmplt_epu32_mask(_mm512_sub_epi32(twice, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x00ffffff));
}

/* Sixteen of x activated as activated() does (vmaxps gives its second
 * operand, +0, for a NaN or -0), or x where prologue is NULL. */
NATIVE static inline __m512 native_activated16(__m512 x, const float *prologue)
{
	if (!prologue)
		return x;
	return _mm512_max_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(prologue[0]), _mm512_set1_ps(prologue[1])), _mm512_setzero_ps());
}

/* Sixteen floats, activated first by prologue where it is not NULL (as
 * activated8 does), rounded: their bf16 in order (eight pairs, the first
 * of each low), as rounded_pairs8 makes them. */
NATIVE static inline __m256i native_activated_pairs8(const float *from, const float *prologue)
{
	__m512 x = native_activated16(_mm512_loadu_ps(from), prologue);
	if (subnormals16(x))
		return rounded_pairs8(activated8(_mm256_loadu_ps(from), prologue), activated8(_mm256_loadu_ps(from + 8), prologue));
	return (__m256i)_mm512_cvtneps_pbh(x);
}

/* to[e] = the pair of even[e] and odd[e] (0 where odd is NULL), each
 * activated by its row's prologue where that is not NULL, sixteen at a
 * time while they last: the two rows' bf16 side by side
 * (vcvtne2ps2bf16), then interleaved (vpermw). Returns where it stopped. */
NATIVE static inline int native_pair_run(uint32_t *to, const float *even, const float *odd, int length, const float *even_pre,
					 const float *odd_pre, ptrdiff_t ahead)
{
	static const uint16_t interleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
						8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
	__m512i order = _mm512_loadu_si512(interleave);
	int e = 0;
	for (; e + 16 <= length; e += 16) {
		if (ahead) {
			_mm_prefetch((const char *)(even + e + ahead), _MM_HINT_T0);
			_mm_prefetch((const char *)(odd + e + ahead), _MM_HINT_T0);
		}
		__m512 low = native_activated16(_mm512_loadu_ps(even + e), even_pre);
		__m512 high = odd ? native_activated16(_mm512_loadu_ps(odd + e), odd_pre) : _mm512_setzero_ps();
		if (subnormals16(low) | subnormals16(high)) {
			for (int i = e; i < e + 16; i++)
				to[i] = pair_of(activated(even[i], even_pre), odd ? activated(odd[i], odd_pre) : 0.0f);
			continue;
		}
		__m512i both = (__m512i)_mm512_cvtne2ps_pbh(high, low);
		_mm512_storeu_si512(to + e, _mm512_permutexvar_epi16(order, both));
	}
	return e;
}

/* out[p][e] = the pair of rows 2p and 2p + 1 at element e (the second 0
 * past count), for 2p below count and e below length, each row r
 * activated first where pre is not NULL (scale pre[r], shift
 * pre[channels + r]: a convolution's prologue): sixteen at a time by
 * native_pair_run first where native. */
__attribute__((always_inline)) static inline void pairs_of_rows(uint32_t *out, int ld_out, const float *x, int ld, int count,
								 int length, const bool native, const float *pre, int channels)
{
	for (int p = 0; 2 * p < count; p++) {
		const float *even = row_of(x, ld, 2 * p);
		const float *odd = 2 * p + 1 < count ? row_of(x, ld, 2 * p + 1) : NULL;
		float prologues[2][2];
		const float *even_pre = prologue_of(prologues[0], pre, channels, 2 * p);
		const float *odd_pre = odd ? prologue_of(prologues[1], pre, channels, 2 * p + 1) : NULL;
		uint32_t *to = out + (size_t)p * ld_out;
		/* an image to activate, read from memory: the next pair's rows
		 * fetched as these are read (rows of a few KiB, two at a time,
		 * leave the hardware's prefetch little to run ahead of) */
		ptrdiff_t ahead = pre && 2 * p + 3 < count ? 2 * (ptrdiff_t)ld : 0;
		int e = native ? native_pair_run(to, even, odd, length, even_pre, odd_pre, ahead) : 0;
		for (; e + 8 <= length; e += 8) {
			__m256 second = odd ? activated8(_mm256_loadu_ps(odd + e), odd_pre) : _mm256_setzero_ps(); /* +0 rounds to 0 */
			_mm256_storeu_si256((__m256i *)(to + e), pairs_across8(activated8(_mm256_loadu_ps(even + e), even_pre), second));
		}
		for (; e < length; e++)
			to[e] = pair_of(activated(even[e], even_pre), odd ? activated(odd[e], odd_pre) : 0.0f);
	}
}

static void pair_rows(uint32_t *out, int ld_out, const float *x, int ld, int count, int length, const float *pre, int channels)
{
	pairs_of_rows(out, ld_out, x, ld, count, length, false, pre, channels);
}

NATIVE static void native_pair_rows(uint32_t *out, int ld_out, const float *x, int ld, int count, int length, const float *pre,
				    int channels)
{
	pairs_of_rows(out, ld_out, x, ld, count, length, true, pre, channels);
}

/* out[p][j] = the pair of row j's elements 2p and 2p + 1, for j below
 * count and 2p + 1 below length, each row j activated first where pre is
 * not NULL (prologue_of): eight rows by eight pairs, through registers,
 * each row's rounded by vcvtneps2bf16 where native. */
__attribute__((always_inline)) static inline void pairs_transposed(uint32_t *out, int ld_out, const float *x, int ld, int count,
								    int length, const bool native, const float *pre, int channels)
{
	int pairs = length / 2, j = 0;
	for (; j + 8 <= count; j += 8) {
		float prologues[8][2];
		const float *pro[8];
		for (int q = 0; q < 8; q++)
			pro[q] = prologue_of(prologues[q], pre, channels, j + q);
		int p = 0;
		for (; p + 8 <= pairs; p += 8) {
			__m256 block[8];
			for (int q = 0; q < 8; q++) {
				const float *from = row_of(x, ld, j + q) + 2 * p;
				block[q] = _mm256_castsi256_ps(native ? native_activated_pairs8(from, pro[q])
								      : rounded_pairs8(activated8(_mm256_loadu_ps(from), pro[q]),
										       activated8(_mm256_loadu_ps(from + 8), pro[q])));
			}
			transpose8(block);
			for (int q = 0; q < 8; q++)
				_mm256_storeu_ps((float *)(out + (size_t)(p + q) * ld_out + j), block[q]);
		}
		for (; p < pairs; p++)
			for (int q = 0; q < 8; q++) {
				const float *from = row_of(x, ld, j + q) + 2 * p;
				out[(size_t)p * ld_out + j + q] = pair_of(activated(from[0], pro[q]), activated(from[1], pro[q]));
			}
	}
	for (; j < count; j++) {
		float prologue[2];
		const float *pro = prologue_of(prologue, pre, channels, j);
		for (int p = 0; p < pairs; p++) {
			const float *from = row_of(x, ld, j) + 2 * p;
			out[(size_t)p * ld_out + j] = pair_of(activated(from[0], pro), activated(from[1], pro));
		}
	}
}

/* One pair of pairs_down's, alone. */
static inline uint32_t pair_down(const float *x, int ld, int k, int i, int p)
{
	return pair_of(row_of(x, ld, 2 * p)[i], 2 * p + 1 < k ? row_of(x, ld, 2 * p + 1)[i] : 0.0f);
}

/* out[i][p] = the pair of rows 2p and 2p + 1 at element i (the second 0
 * past k), for i below m and p below (k + 1) / 2: A transposed as
 * vdpbf16ps's rows (a data gradient's W^T), eight elements by eight
 * pairs through registers. Element by element it read down X's columns,
 * a cache line a value: a sixth to a fifth of a 7x7 1x1 data gradient's
 * time. */
static void pairs_down(uint32_t *out, int ld_out, const float *x, int ld, int m, int k)
{
	int pairs = k / 2, i = 0;
	for (; i + 8 <= m; i += 8) {
		int p = 0;
		for (; p + 8 <= pairs; p += 8) {
			__m256 block[8];
			for (int q = 0; q < 8; q++) {
				const float *even = row_of(x, ld, 2 * (p + q)) + i;
				block[q] = _mm256_castsi256_ps(pairs_across8(_mm256_loadu_ps(even), _mm256_loadu_ps(even + ld)));
			}
			transpose8(block);
			for (int q = 0; q < 8; q++)
				_mm256_storeu_ps((float *)(out + (size_t)(i + q) * ld_out + p), block[q]);
		}
		for (; p < (k + 1) / 2; p++)
			for (int q = i; q < i + 8; q++)
				out[(size_t)q * ld_out + p] = pair_down(x, ld, k, q, p);
	}
	for (; i < m; i++)
		for (int p = 0; p < (k + 1) / 2; p++)
			out[(size_t)i * ld_out + p] = pair_down(x, ld, k, i, p);
}

static void pair_transposed(uint32_t *out, int ld_out, const float *x, int ld, int count, int length, const float *pre,
			    int channels)
{
	pairs_transposed(out, ld_out, x, ld, count, length, false, pre, channels);
}

NATIVE static void native_pair_transposed(uint32_t *out, int ld_out, const float *x, int ld, int count, int length,
					  const float *pre, int channels)
{
	pairs_transposed(out, ld_out, x, ld, count, length, true, pre, channels);
}

/* to[0, length / 2) = from's pairs, activated first by prologue where it
 * is not NULL, as bf16_pack_a's rows for vdpbf16ps (length a multiple of
 * 16). */
NATIVE static void native_pairs_along(uint32_t *to, const float *from, int length, const float *prologue)
{
	for (int e = 0; e < length; e += 16) {
		if (prologue) /* an image to activate, read from memory (native_rounding) */
			_mm_prefetch((const char *)(from + e) + 1024, _MM_HINT_T0);
		_mm256_storeu_si256((__m256i *)(to + e / 2), native_activated_pairs8(from + e, prologue));
	}
}

/* out = x (activated by prologue where it is not NULL) as bf16
 * (bf16_convert), or rounded and kept as floats where widened
 * (bf16_round): sixteen at a time, the last fewer under a mask (a
 * convolution's rows of 8 to 32). */
NATIVE __attribute__((always_inline)) static inline void native_rounding(void *out, const float *x, size_t count,
									  const bool widened, const float *prologue)
{
	for (size_t i = 0; i < count; i += 16) {
		__mmask16 lanes = count - i >= 16 ? 0xffff : (__mmask16)((1u << (count - i)) - 1);
		__m512 v = _mm512_maskz_loadu_ps(lanes, x + i);
		if (prologue) {
			/* an image to activate was written long before, so is read
			 * from memory: without the prefetch 16 lines ahead, the loads
			 * stalled the pass to more than the separate passes took */
			_mm_prefetch((const char *)(x + i) + 1024, _MM_HINT_T0);
			v = native_activated16(v, prologue);
		}
		if (subnormals16(_mm512_maskz_mov_ps(lanes, v))) {
			for (size_t e = i; e < count && e < i + 16; e++)
				if (widened)
					((float *)out)[e] = rounded_float(activated(x[e], prologue));
				else
					((uint16_t *)out)[e] = rounded_half(activated(x[e], prologue));
			continue;
		}
		__m256i halves = (__m256i)_mm512_cvtneps_pbh(v);
		if (widened)
			_mm512_mask_storeu_epi32((float *)out + i, lanes, _mm512_slli_epi32(_mm512_cvtepu16_epi32(halves), 16));
		else
			_mm256_mask_storeu_epi16((uint16_t *)out + i, lanes, halves);
	}
}

NATIVE static void native_round(float *out, const float *x, size_t count) { native_rounding(out, x, count, true, NULL); }
NATIVE static void native_convert(uint16_t *out, const float *x, size_t count) { native_rounding(out, x, count, false, NULL); }

/* Each row of rows by native_rounding, widened or not. */
NATIVE static void native_rows(void *out, int ld_out, const float *x, int ld, int rows, int columns, bool widened,
			       const float *prologue)
{
	for (int r = 0; r < rows; r++) {
		const float *from = x + (size_t)r * ld;
		if (widened)
			native_rounding((float *)out + (size_t)r * ld_out, from, (size_t)columns, true, prologue);
		else
			native_rounding((uint16_t *)out + (size_t)r * ld_out, from, (size_t)columns, false, prologue);
	}
}

/* Element (r, e) of X (rows apart by ld), or of X transposed; 0 outside
 * rows x length. */
static inline float element(const float *x, bool transpose, int ld, int r, int e)
{
	return transpose ? x[(size_t)e * ld + r] : x[(size_t)r * ld + e];
}

/* bf16_pack_a's A, each row i activated first where pre is not NULL
 * (prologue_of, with m channels; not transposed). */
static void pack_a(enum bf16_path path, bool transpose, int m, int k, const float *a, int lda, const float *pre, void *packed)
{
	a_packings++;
	int kp = padded_k(path, k);
	if (path == BF16_PORTABLE || path == BF16_AMX) {
		uint16_t *out = packed;
		int rows = path == BF16_AMX ? to_32(m) : m, width = path == BF16_AMX ? kp : k;
		for (int i = 0; i < rows; i++) {
			float prologue[2];
			const float *pro = i < m ? prologue_of(prologue, pre, m, i) : NULL;
			for (int e = 0; e < width; e++)
				out[(size_t)i * width + e] = i < m && e < k ? rounded_half(activated(element(a, transpose, lda, i, e), pro)) : 0;
		}
		return;
	}
	if (path == BF16_AVX512_BF16 && !transpose) {
		uint32_t *out = packed;
		bool native = converts_natively();
		for (int i = 0; i < m; i++) {
			const float *from = a + (size_t)i * lda;
			uint32_t *to = out + (size_t)i * (kp / 2);
			float prologue[2];
			const float *pro = prologue_of(prologue, pre, m, i);
			int e = 0;
			if (native) {
				native_pairs_along(to, from, k / 16 * 16, pro);
				e = k / 16 * 16;
			}
			for (; e + 16 <= k; e += 16)
				_mm256_storeu_si256((__m256i *)(to + e / 2), rounded_pairs8(activated8(_mm256_loadu_ps(from + e), pro),
											   activated8(_mm256_loadu_ps(from + e + 8), pro)));
			for (; e < kp; e += 2)
				to[e / 2] = (e < k ? rounded_half(activated(from[e], pro)) : 0u) |
					    (uint32_t)(e + 1 < k ? rounded_half(activated(from[e + 1], pro)) : 0u) << 16;
		}
		return;
	}
	if (path == BF16_AVX512_BF16) {
		pairs_down(packed, kp / 2, a, lda, m, k);
		return;
	}
	float *out = packed;
	if (transpose)
		round_transposed(out, kp, a, lda, k, m, NULL, 0);
	else
		for (int i = 0; i < m; i++) {
			float prologue[2];
			bf16_round_rows(out + (size_t)i * kp, kp, a + (size_t)i * lda, lda, 1, k, true, prologue_of(prologue, pre, m, i));
		}
	for (int i = 0; i < m && k < kp; i++)
		memset(out + (size_t)i * kp + k, 0, (size_t)(kp - k) * sizeof *out);
}

void bf16_pack_a(enum bf16_path path, enum bf16_arithmetic arithmetic, bool transpose, int m, int k, const float *a,
		 int lda, void *packed)
{
	(void)arithmetic; /* the layouts follow from the path alone (padded_k) */
	pack_a(path, transpose, m, k, a, lda, NULL, packed);
}

void bf16_pack_image_a(enum bf16_path path, enum bf16_arithmetic arithmetic, int channels, int pixels, const float *image,
		       const float *pre, void *packed)
{
	(void)arithmetic;
	pack_a(path, false, channels, pixels, image, pixels, pre, packed);
}

void bf16_pack_b(enum bf16_path path, enum bf16_arithmetic arithmetic, bool transpose, int k, int n, const float *b,
		 int ldb, void *packed)
{
	int kp = padded_k(path, k), np = b_width(n);
	if (path == BF16_PORTABLE) {
		uint16_t *out = packed;
		for (int e = 0; e < k; e++)
			for (int j = 0; j < n; j++)
				out[(size_t)e * n + j] = rounded_half(element(b, transpose, ldb, e, j));
		return;
	}
	if (path == BF16_AVX512_BF16 || path == BF16_AMX) {
		/* whole pairs of rows first, in loops without branches (which the
		 * compiler vectorises), then the odd last row and the padding */
		uint32_t *out = packed;
		int pairs = k / 2;
		if (transpose && converts_natively())
			native_pair_transposed(out, np, b, ldb, n, 2 * pairs, NULL, 0);
		else if (transpose)
			pair_transposed(out, np, b, ldb, n, 2 * pairs, NULL, 0);
		else if (converts_natively())
			native_pair_rows(out, np, b, ldb, 2 * pairs, n, NULL, 0);
		else
			pair_rows(out, np, b, ldb, 2 * pairs, n, NULL, 0);
		for (int e = 0; e < pairs; e++)
			memset(out + (size_t)e * np + n, 0, (size_t)(np - n) * sizeof *out);
		for (int e = pairs; e < kp / 2; e++)
			for (int j = 0; j < np; j++)
				out[(size_t)e * np + j] = 2 * e < k && j < n ? rounded_half(element(b, transpose, ldb, 2 * e, j)) : 0;
		return;
	}
	float *out = packed;
	if (transpose)
		round_transposed(out, np, b, ldb, n, k, NULL, 0);
	else
		bf16_round_rows(out, np, b, ldb, k, n, true, NULL);
	bf16_pad_b(path, arithmetic, k, n, out);
}

/* ---- the doors ---------------------------------------------------------- */

/* The kernels take K a part at a time (BF16_K_PART), each part over all
 * of C before the next, so that a part of B's columns (32 of 256 floats:
 * 32 KiB) stays in the L1 cache while every row of A passes over it. Each
 * output still sums its K ascending, C in memory between parts as between
 * the tiles order's blocks: the bits do not change. */
_Static_assert(BF16_K_PART % BF16_TILE_K == 0, "a part of K is a whole number of the tiles order's blocks");

enum bf16_b_layout bf16_b_layout(enum bf16_path path)
{
	if (path == BF16_AVX2 || path == BF16_AVX512)
		return BF16_B_WIDENED;
	return path == BF16_PORTABLE ? BF16_B_OWN : BF16_B_PAIRS;
}

int bf16_packed_b_width(int n) { return b_width(n); }

void bf16_pad_b(enum bf16_path path, enum bf16_arithmetic arithmetic, int k, int n, void *packed)
{
	(void)arithmetic; /* the layouts follow from the path alone (padded_k) */
	int np = b_width(n), kp = padded_k(path, k);
	if (bf16_b_layout(path) == BF16_B_WIDENED) {
		float *out = packed;
		for (int e = 0; e < kp; e++) {
			int filled = e < k ? n : 0;
			if (filled < np)
				memset(out + (size_t)e * np + filled, 0, sizeof *out * (size_t)(np - filled));
		}
	} else if (bf16_b_layout(path) == BF16_B_PAIRS) {
		uint32_t *out = packed;
		for (int p = 0; p < kp / 2; p++) {
			int filled = 2 * p < k ? n : 0;
			if (filled < np)
				memset(out + (size_t)p * np + filled, 0, sizeof *out * (size_t)(np - filled));
		}
	}
}

/* ---- gathers: a convolution's operands from its image in bf16 ---------- */

/* Eight bf16 widened to f32: the bits of each in the high half. */
static inline __m256 widened8(const uint16_t *x)
{
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)x)), 16));
}

void bf16_gather_transposed(float *out, int ld_out, const uint16_t *x, const ptrdiff_t *offsets, int count, int length)
{
	int j = 0;
	for (; j + 8 <= count; j += 8) {
		int e = 0;
		for (; e + 8 <= length; e += 8) {
			__m256 block[8];
			for (int q = 0; q < 8; q++)
				block[q] = widened8(x + offsets[j + q] + e);
			transpose8(block);
			for (int q = 0; q < 8; q++)
				_mm256_storeu_ps(out + (size_t)(e + q) * ld_out + j, block[q]);
		}
		for (; e < length; e++)
			for (int q = 0; q < 8; q++)
				out[(size_t)e * ld_out + j + q] = bf16_to_float(x[offsets[j + q] + e]);
	}
	for (; j < count; j++)
		for (int e = 0; e < length; e++)
			out[(size_t)e * ld_out + j] = bf16_to_float(x[offsets[j] + e]);
}

/* Sixteen elements of two rows interleaved, the first's low: AVX2's
 * unpacking works within halves, which the permutes put back in order. */
void bf16_gather_pairs(uint32_t *out, int ld_out, const uint16_t *x, const ptrdiff_t *offsets, int count, int length)
{
	static const uint16_t none[16];
	for (int p = 0; 2 * p < count; p++) {
		const uint16_t *even = x + offsets[2 * p];
		const uint16_t *odd = 2 * p + 1 < count ? x + offsets[2 * p + 1] : NULL;
		uint32_t *to = out + (size_t)p * ld_out;
		int e = 0;
		for (; e + 16 <= length; e += 16) {
			__m256i first = _mm256_loadu_si256((const __m256i *)(even + e));
			__m256i second = _mm256_loadu_si256((const __m256i *)(odd ? odd + e : none));
			__m256i low = _mm256_unpacklo_epi16(first, second), high = _mm256_unpackhi_epi16(first, second);
			_mm256_storeu_si256((__m256i *)(to + e), _mm256_permute2x128_si256(low, high, 0x20));
			_mm256_storeu_si256((__m256i *)(to + e + 8), _mm256_permute2x128_si256(low, high, 0x31));
		}
		for (; e < length; e++)
			to[e] = even[e] | (odd ? (uint32_t)odd[e] << 16 : 0u);
	}
}

/* A pair along a row is the 32-bit word where it starts: eight rows by
 * eight words, through registers. */
void bf16_gather_pairs_transposed(uint32_t *out, int ld_out, const uint16_t *x, const ptrdiff_t *offsets, int count,
				  int length)
{
	int pairs = length / 2, j = 0;
	for (; j + 8 <= count; j += 8) {
		int p = 0;
		for (; p + 8 <= pairs; p += 8) {
			__m256 block[8];
			for (int q = 0; q < 8; q++)
				block[q] = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)(x + offsets[j + q] + 2 * p)));
			transpose8(block);
			for (int q = 0; q < 8; q++)
				_mm256_storeu_ps((float *)(out + (size_t)(p + q) * ld_out + j), block[q]);
		}
		for (; p < pairs; p++)
			for (int q = 0; q < 8; q++) {
				const uint16_t *from = x + offsets[j + q] + 2 * p;
				out[(size_t)p * ld_out + j + q] = from[0] | (uint32_t)from[1] << 16;
			}
	}
	for (; j < count; j++)
		for (int p = 0; p < pairs; p++) {
			const uint16_t *from = x + offsets[j] + 2 * p;
			out[(size_t)p * ld_out + j] = from[0] | (uint32_t)from[1] << 16;
		}
}

int bf16_packed_a_width(enum bf16_path path, enum bf16_arithmetic arithmetic, int k)
{
	(void)arithmetic; /* the layouts follow from the path alone (padded_k) */
	int kp = padded_k(path, k);
	return bf16_b_layout(path) == BF16_B_WIDENED ? kp : kp / 2;
}

void bf16_pad_a(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int k, void *packed)
{
	a_packings++;
	int width = bf16_packed_a_width(path, arithmetic, k);
	if (bf16_b_layout(path) == BF16_B_WIDENED) {
		float *out = packed;
		for (int i = 0; i < m && k < width; i++)
			memset(out + (size_t)i * width + k, 0, sizeof *out * (size_t)(width - k));
	} else if (bf16_b_layout(path) == BF16_B_PAIRS) {
		uint16_t *out = packed; /* a pair's halves, the first low */
		for (int i = k < 2 * width ? 0 : m; i < (path == BF16_AMX ? to_32(m) : m); i++)
			memset(out + (size_t)i * 2 * width + (i < m ? k : 0), 0, sizeof *out * (size_t)(2 * width - (i < m ? k : 0)));
	}
}

void bf16_gather_along(float *out, int ld_out, const uint16_t *x, const ptrdiff_t *offsets, int count, int rows,
		       int stride, int width)
{
	for (int j = 0; j < count; j++)
		for (int r = 0; r < rows; r++) {
			const uint16_t *from = x + offsets[j] + (ptrdiff_t)r * stride;
			float *to = out + (size_t)j * ld_out + (size_t)r * width;
			int e = 0;
			for (; e + 8 <= width; e += 8)
				_mm256_storeu_ps(to + e, widened8(from + e));
			for (; e < width; e++)
				to[e] = bf16_to_float(from[e]);
		}
}

/* In pairs, a row's elements are its bf16 as they lie: copies of a
 * constant size for the widths of CIFAR's and ImageNet's outputs, which
 * the compiler makes a few moves rather than a call each. */
static inline void copy_rows(uint32_t *out, int ld_out, const uint16_t *x, const ptrdiff_t *offsets, int count, int rows,
			     int stride, int width)
{
	for (int j = 0; j < count; j++)
		for (int r = 0; r < rows; r++)
			memcpy(out + (size_t)j * ld_out + (size_t)r * (width / 2), x + offsets[j] + (ptrdiff_t)r * stride,
			       sizeof *x * (size_t)width);
}

void bf16_gather_pairs_along(uint32_t *out, int ld_out, const uint16_t *x, const ptrdiff_t *offsets, int count, int rows,
			     int stride, int width)
{
/* a case of the switch below: width a constant */
#define COPY_ROWS_OF(constant)                                                                \
	case constant:                                                                        \
		copy_rows(out, ld_out, x, offsets, count, rows, stride, constant);            \
		break;
	switch (width) {
		COPY_ROWS_OF(8)
		COPY_ROWS_OF(14)
		COPY_ROWS_OF(16)
		COPY_ROWS_OF(28)
		COPY_ROWS_OF(32)
		COPY_ROWS_OF(56)
	default:
		copy_rows(out, ld_out, x, offsets, count, rows, stride, width);
	}
#undef COPY_ROWS_OF
}

void bf16_convert(uint16_t *out, const float *x, size_t count)
{
	if (converts_natively()) {
		native_convert(out, x, count);
		return;
	}
	size_t i = 0;
	for (; i + 16 <= count; i += 16)
		_mm256_storeu_si256((__m256i *)(out + i), rounded_pairs8(_mm256_loadu_ps(x + i), _mm256_loadu_ps(x + i + 8)));
	for (; i < count; i++)
		out[i] = rounded_half(x[i]);
}

void bf16_round(float *out, const float *x, size_t count)
{
	if (converts_natively()) {
		native_round(out, x, count);
		return;
	}
	size_t i = 0;
	for (; i + 8 <= count; i += 8)
		_mm256_storeu_si256((__m256i *)(out + i), rounded_bits8(_mm256_loadu_ps(x + i)));
	for (; i < count; i++)
		out[i] = rounded_float(x[i]);
}

void bf16_round_rows(void *out, int ld_out, const float *x, int ld, int rows, int columns, bool widened, const float *prologue)
{
	if (converts_natively()) {
		native_rows(out, ld_out, x, ld, rows, columns, widened, prologue);
		return;
	}
	/* each vector activated and rounded in one pass (activated8) */
	for (int r = 0; r < rows; r++) {
		const float *from = x + (size_t)r * ld;
		int e = 0;
		if (widened) {
			float *to = (float *)out + (size_t)r * ld_out;
			for (; e + 8 <= columns; e += 8)
				_mm256_storeu_si256((__m256i *)(to + e), rounded_bits8(activated8(_mm256_loadu_ps(from + e), prologue)));
			for (; e < columns; e++)
				to[e] = rounded_float(activated(from[e], prologue));
		} else {
			uint16_t *to = (uint16_t *)out + (size_t)r * ld_out;
			for (; e + 16 <= columns; e += 16)
				_mm256_storeu_si256((__m256i *)(to + e), rounded_pairs8(activated8(_mm256_loadu_ps(from + e), prologue),
										activated8(_mm256_loadu_ps(from + e + 8), prologue)));
			for (; e < columns; e++)
				to[e] = rounded_half(activated(from[e], prologue));
		}
	}
}

void bf16_image_columns(enum bf16_path path, void *out, int ld_out, const float *image, int channels, int pixels, const float *pre)
{
	if (bf16_b_layout(path) == BF16_B_PAIRS) {
		if (converts_natively())
			native_pair_rows(out, ld_out, image, pixels, channels, pixels, pre, channels);
		else
			pair_rows(out, ld_out, image, pixels, channels, pixels, pre, channels);
		return;
	}
	for (int c = 0; c < channels; c++) {
		float prologue[2];
		bf16_round_rows((float *)out + (size_t)c * ld_out, ld_out, image + (size_t)c * pixels, pixels, 1, pixels, true,
				prologue_of(prologue, pre, channels, c));
	}
}

void bf16_image_transposed(enum bf16_path path, void *out, int ld_out, const float *image, int channels, int pixels,
			   const float *pre)
{
	if (bf16_b_layout(path) == BF16_B_WIDENED) {
		round_transposed(out, ld_out, image, pixels, channels, pixels, pre, channels);
		return;
	}
	int pairs = pixels / 2;
	if (converts_natively())
		native_pair_transposed(out, ld_out, image, pixels, channels, 2 * pairs, pre, channels);
	else
		pair_transposed(out, ld_out, image, pixels, channels, 2 * pairs, pre, channels);
	for (int j = 0; j < channels && pixels % 2; j++) { /* the odd last pixel, paired with 0 */
		float prologue[2];
		((uint32_t *)out)[(size_t)pairs * ld_out + j] =
			rounded_half(activated(image[(size_t)j * pixels + pixels - 1], prologue_of(prologue, pre, channels, j)));
	}
}

/* A vector path's product of the operands w names (its start and stop
 * set here): K a part at a time over all of C, under DAZ and FTZ (which
 * vdpbf16ps applies whatever MXCSR says). */
static int products_by_parts(enum bf16_path path, enum bf16_arithmetic arithmetic, struct operands w, int m, int n, float *c,
			     int ldc)
{
	/* A in panels where AVX-512's kernels read the image in place (they
	 * take no other), and for vdpbf16ps where the copy costs little beside
	 * the product (M K values copied, M N K / 16 vectors multiplied) or where
	 * A's rows, kp bf16 values apart, lie a multiple of 4 KiB apart: a
	 * block's rows then share sets of the L1 cache (144 x 16 x 2048 ran at
	 * 40% of the limit, 95% from panels). AVX-512's emulation's blocks of 6
	 * rows keep their pointers in registers. AVX2's read panels where A's
	 * rows lie a multiple of 4 KiB apart or A is the last product's (a
	 * convolution's weights, by each of its images and bands: copied
	 * once, kept by rows_in_panels), not where A is new: a weight
	 * gradient's columns gathered anew for each image into A
	 * (bf16_multiply_rows) are not copied a second time (copying them
	 * took ResNet-50's 3x3 weight gradient at 56x56 from 193 to 247 ms a
	 * step, and 7x7 images' products, N 49, read the weights from
	 * panels: without, its 3x3 on 7x7 took 157 to 203). */
	bool pairs = path == BF16_AVX512_BF16, tiles_pairs = tiles_by_pairs(path, arithmetic);
	bool aliased = (size_t)w.kp * sizeof(uint16_t) % 4096 == 0;
	w.panels = tiles_pairs || (w.image && path != BF16_AVX2) || (pairs && (n >= PANELS_FROM || aliased) && !w.a_image);
	if (tiles_pairs && !w.a_paired && !(w.a = tiles_pairs_in_panels(w.a, m, w.kp)))
		return -1;
	w.b_paired = tiles_pairs && !w.image && m >= TILES_PAIRED_B_FROM;
	if (w.b_paired && !(w.b = tiles_pairs_of_b(w.b, w.kp, w.np)))
		return -1;
	if (!tiles_pairs && w.panels &&
	    !(w.a = rows_in_panels(w.a, m, pairs ? w.kp / 2 : w.kp, pairs ? PANEL_PAIRS : PANEL_WIDENED, false)))
		return -1;
	if (path == BF16_AVX2) {
		bool again = a_again(w.a, m, w.kp);
		w.panels = (size_t)w.kp * sizeof(float) % 4096 == 0 || again;
	}
	w.avx2_paired = path == BF16_AVX2 && arithmetic == BF16_TILES && m >= AVX2_STRIP_FROM;
	if (path == BF16_AVX2 && w.panels &&
	    !(w.a = w.avx2_paired ? rows_in_panels(w.a, m, w.kp / 2, PANEL_AVX2, true)
				  : rows_in_panels(w.a, m, w.kp, PANEL_AVX2, false)))
		return -1;
	if (path == BF16_AVX2 && (w.image || w.avx2_paired) && !scratch_of(10, AVX2_STRIP_BYTES))
		return -1; /* the strip avx2 reads the image or B's pairs into */
	unsigned mxcsr = flush_begin();
	/* blocks of 8 rows by 32 columns (the emulation's 6 or 12 by 32 or
	 * 16: near enough for a share of lines) */
	fetch_begin((size_t)((m + 7) / 8) * (size_t)((n + 31) / 32) * (size_t)((w.kp + BF16_K_PART - 1) / BF16_K_PART),
		    (double)m * n * w.kp);
	/* AVX2 where A fits AVX2_A_HELD: every part of K for 16 columns, then
	 * the next 16; elsewhere every column for a part of K, then the next */
	int columns = path == BF16_AVX2 && (size_t)m * w.kp * sizeof(float) <= AVX2_A_HELD ? 16 : n;
	for (int j = 0; j < n; j += columns)
		for (w.start = 0; w.start < w.kp; w.start += BF16_K_PART) {
			w.stop = w.start + BF16_K_PART < w.kp ? w.start + BF16_K_PART : w.kp;
			if (path == BF16_AVX2)
				avx2(arithmetic, &w, m, n, j, j + columns, c, ldc);
			else if (path == BF16_AVX512_BF16 && w.a_image)
				avx512_bf16_image_a(&w, m, n, c, ldc);
			else if (path == BF16_AVX512_BF16)
				avx512_bf16(&w, m, n, c, ldc);
			else if (tiles_pairs)
				avx512_tiles_pairs(&w, m, n, c, ldc);
			else
				avx512(arithmetic, &w, m, n, c, ldc);
		}
	flush_end(mxcsr);
	fetch_end();
	return 0;
}

int bf16_multiply(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int n, int k, const void *a,
		  const void *b, bool add, float *c, int ldc)
{
	if (!bf16_path_available(path, arithmetic, NULL, 0) || m < 0 || n < 0 || k < 0)
		return -1;
	if (m == 0 || n == 0)
		return 0;
	int kp = padded_k(path, k), np = b_width(n);
	if (path == BF16_AMX) {
		int mp = to_32(m);
		float *cp = scratch_of(2, (size_t)mp * np * sizeof *cp);
		if (!cp)
			return -1;
		for (int i = 0; i < mp; i++)
			for (int j = 0; j < np; j++)
				cp[(size_t)i * np + j] = add && i < m && j < n ? c[(size_t)i * ldc + j] : 0.0f;
		amx(mp, np, kp, a, b, cp);
		for (int i = 0; i < m; i++)
			memcpy(c + (size_t)i * ldc, cp + (size_t)i * np, (size_t)n * sizeof *c);
		return 0;
	}
	/* the kernels start from +0 themselves where !add, but for no K */
	if (!add && (path == BF16_PORTABLE || kp == 0))
		for (int i = 0; i < m; i++)
			memset(c + (size_t)i * ldc, 0, (size_t)n * sizeof *c);
	if (kp == 0)
		return 0;
	if (path == BF16_PORTABLE) {
		unsigned mxcsr = flush_begin();
		portable(arithmetic, m, n, k, a, k, b, n, c, ldc);
		flush_end(mxcsr);
		return 0;
	}
	return products_by_parts(path, arithmetic, (struct operands){a, b, kp, np, add, 0, 0, NULL, NULL, 0, 0, false, NULL, NULL, false, false, false}, m, n, c, ldc);
}

/* What bf16_multiply_image can read in place: by AVX2's kernels (into
 * their strip, avx2_strip_of_image) and AVX-512's, K in whole pairs, of a
 * 3x3 kernel (EVEN_LANES; AVX2's masks, e % 3). */
static bool image_readable(enum bf16_path path, int k, int kernel)
{
	return (path == BF16_AVX2 || path == BF16_AVX512 || path == BF16_AVX512_BF16) && k % 2 == 0 && kernel == 3;
}

bool bf16_reads_image(enum bf16_path path, int m, int k, int kernel)
{
	/* Where it is faster than the columns packed, one thread of a Zen 5
	 * (make bench-bf16, results/speed/bf16-kernels.md): up to 128 rows of
	 * C, whatever the width; from 256 rows (ResNet-50's 14x14 and 7x7
	 * stages) the packing is spread over more outputs, and the packed
	 * columns read faster than the image's masked rows. AVX2 copies
	 * even packed columns into a strip (avx2), so the image, read into
	 * it instead, saves the packing at every M (one thread of a Zen 3:
	 * 3 to 22% faster from 16 to 512 channels). */
	return image_readable(path, k, kernel) && (m <= 128 || path == BF16_AVX2);
}

int bf16_image_rows_apart(int width) { return width % 16 == 0 ? width + 2 : width; }

/* Whether a product of m x n outputs has none; C zeroed first where K is
 * empty and not added to (the kernels start from +0 themselves
 * otherwise). */
static bool no_products(int m, int n, int k, bool add, float *c, int ldc)
{
	if (m == 0 || n == 0)
		return true;
	if (k == 0 && !add)
		for (int i = 0; i < m; i++)
			memset(c + (size_t)i * ldc, 0, (size_t)n * sizeof *c);
	return false;
}

int bf16_multiply_image(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int n, int k, const void *a,
			const float *image, const ptrdiff_t *offsets, int width, int wp, bool add, float *c, int ldc)
{
	if (!image_readable(path, k, 3) || !bf16_path_available(path, arithmetic, NULL, 0) || m < 0 || n < 0 || width < 1 ||
	    n % width != 0 || (wp != width && (wp < width + 2 || width % 16 != 0)))
		return -1;
	if (no_products(m, n, k, add, c, ldc))
		return 0;
	return products_by_parts(path, arithmetic, (struct operands){a, NULL, k, 0, add, 0, 0, image, offsets, width, wp, false, NULL, NULL, false, false, false}, m, n,
				 c, ldc);
}

/* Whether offsets lay out m rows (a multiple of 9) as windows of a 3x3
 * kernel over rows wp apart: row (ky, kx) of each nine its first moved ky
 * rows and kx columns (the order avx512_bf16_image_a_block reads). */
static bool rows_are_windows(const ptrdiff_t *offsets, int m, int wp)
{
	if (m % A_WINDOW != 0)
		return false;
	for (int r = 0; r < m; r++)
		if (offsets[r] != offsets[r - r % A_WINDOW] + (ptrdiff_t)(r % A_WINDOW / 3) * wp + r % 3)
			return false;
	return true;
}

/* Where each pair of K lies in an image whose rows, width values of K
 * each, lie wp apart (bytes from the first row's start): the table of
 * the last call kept, since a convolution asks for the same for each of
 * its images. NULL where memory runs out. */
static const size_t *pairs_lie(int k, int width, int wp)
{
	static __thread struct {
		int k, width, wp;
	} last;
	size_t *at = scratch_of(6, sizeof *at * (size_t)(k / 2));
	if (!at || (last.k == k && last.width == width && last.wp == wp))
		return at;
	for (int row = 0, q = 0; q < k; row++)
		for (int x = 0; x < width; x += 2, q += 2)
			at[q / 2] = sizeof(uint16_t) * ((size_t)row * wp + x);
	last.k = k;
	last.width = width;
	last.wp = wp;
	return at;
}

bool bf16_reads_image_a(enum bf16_path path, int m, int k, int width, int kernel)
{
	return path == BF16_AVX512_BF16 && kernel == 3 && m % A_WINDOW == 0 && width > 0 && width % 2 == 0 && k % width == 0;
}

bool bf16_gathers_into_pairs(enum bf16_path path, enum bf16_arithmetic arithmetic) { return tiles_by_pairs(path, arithmetic); }

static __thread unsigned long rows_read_in_place; /* bf16_multiply_rows's calls that read A in place */

unsigned long bf16_rows_read_in_place(void) { return rows_read_in_place; }

int bf16_multiply_rows(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int n, int k, const uint16_t *x,
		       const ptrdiff_t *offsets, int rows, int stride, int width, const void *b, bool add, float *c, int ldc)
{
	enum bf16_b_layout layout = bf16_b_layout(path);
	if (!bf16_path_available(path, arithmetic, NULL, 0) || layout == BF16_B_OWN || m < 0 || n < 0 || rows < 0 || width < 0 ||
	    k != rows * width || (layout == BF16_B_PAIRS && width % 2 != 0))
		return -1;
	if (no_products(m, n, k, add, c, ldc))
		return 0;
	if (arithmetic == BF16_PAIRS && bf16_reads_image_a(path, m, k, width, 3) && stride >= width + 2 &&
	    rows_are_windows(offsets, m, stride)) { /* A read in place: avx512_bf16_image_a */
		const size_t *pair_at = pairs_lie(k, width, stride);
		if (!pair_at)
			return -1;
		rows_read_in_place++;
		return products_by_parts(path, arithmetic,
					 (struct operands){NULL, b, k, b_width(n), add, 0, 0, NULL, offsets, width, stride, false, x, pair_at, false, false, false},
					 m, n, c, ldc);
	}
	if (bf16_gathers_into_pairs(path, arithmetic)) {
		const uint32_t *a = tiles_pairs_gathered(x, offsets, m, rows, stride, width);
		if (!a)
			return -1;
		return products_by_parts(path, arithmetic,
					 (struct operands){a, b, padded_k(path, k), b_width(n), add, 0, 0, NULL, NULL, 0, 0, false, NULL, NULL, false, true, false},
					 m, n, c, ldc);
	}
	void *a = scratch_of(0, bf16_packed_a_bytes(path, arithmetic, m, k));
	if (!a)
		return -1;
	int ld = bf16_packed_a_width(path, arithmetic, k);
	if (layout == BF16_B_PAIRS)
		bf16_gather_pairs_along(a, ld, x, offsets, m, rows, stride, width);
	else
		bf16_gather_along(a, ld, x, offsets, m, rows, stride, width);
	bf16_pad_a(path, arithmetic, m, k, a);
	return bf16_multiply(path, arithmetic, m, n, k, a, b, add, c, ldc);
}

int bf16_matmul(enum bf16_path path, enum bf16_arithmetic arithmetic, bool transpose_a, bool transpose_b, int m,
		int n, int k, const float *a, int lda, const float *b, int ldb, bool add, float *c, int ldc)
{
	if (m < 0 || n < 0 || k < 0)
		return -1;
	void *packed_a = scratch_of(0, bf16_packed_a_bytes(path, arithmetic, m, k));
	void *packed_b = scratch_of(1, bf16_packed_b_bytes(path, arithmetic, k, n));
	if (!packed_a || !packed_b)
		return -1;
	bf16_pack_a(path, arithmetic, transpose_a, m, k, a, lda, packed_a);
	bf16_pack_b(path, arithmetic, transpose_b, k, n, b, ldb, packed_b);
	return bf16_multiply(path, arithmetic, m, n, k, packed_a, packed_b, add, c, ldc);
}

/* Operands already bf16, widened to f32 (exactly: a bf16 is an f32 whose
 * low 16 bits are zero) and packed as any other. */
int bf16_gemm(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int n, int k, const uint16_t *a,
	      int lda, const uint16_t *b, int ldb, float *c, int ldc)
{
	if (m < 0 || n < 0 || k < 0)
		return -1;
	float *wide_a = scratch_of(3, (size_t)m * k * sizeof *wide_a), *wide_b = scratch_of(4, (size_t)k * n * sizeof *wide_b);
	if (!wide_a || !wide_b)
		return -1;
	for (int i = 0; i < m; i++)
		for (int e = 0; e < k; e++)
			wide_a[(size_t)i * k + e] = bf16_to_float(a[(size_t)i * lda + e]);
	for (int e = 0; e < k; e++)
		for (int j = 0; j < n; j++)
			wide_b[(size_t)e * n + j] = bf16_to_float(b[(size_t)e * ldb + j]);
	return bf16_matmul(path, arithmetic, false, false, m, n, k, wide_a, k, wide_b, n, true, c, ldc);
}

static __thread struct {
	void *memory;
	size_t bytes;
} buffers[BF16_BUFFERS];

void *bf16_buffer(int slot, size_t bytes)
{
	bytes = bytes ? (bytes + 63) / 64 * 64 : 64;
	if (slot < 0 || slot >= BF16_BUFFERS)
		return NULL;
	if (buffers[slot].bytes < bytes) {
		void *bigger = aligned_alloc(64, bytes);
		if (!bigger)
			return NULL;
		free(buffers[slot].memory);
		buffers[slot].memory = bigger;
		buffers[slot].bytes = bytes;
	}
	return buffers[slot].memory;
}

enum bf16_path bf16_best_path(enum bf16_arithmetic arithmetic)
{
	static const enum bf16_path fastest[] = {BF16_AMX, BF16_AVX512_BF16, BF16_AVX512, BF16_AVX2};
	for (size_t i = 0; i < sizeof fastest / sizeof fastest[0]; i++)
		if (bf16_path_available(fastest[i], arithmetic, NULL, 0))
			return fastest[i];
	return BF16_PORTABLE;
}

int bf16_path_named(const char *name)
{
	for (int p = 0; p < BF16_PATH_COUNT; p++)
		if (strcmp(name, bf16_path_names[p]) == 0)
			return p;
	return -1;
}

static double rounded(double x) { return bf16_to_float(bf16_from_float((float)x)); }

int bf16_matmul_f64(bool transpose_a, bool transpose_b, int m, int n, int k, const double *a, int lda,
		    const double *b, int ldb, bool add, double *c, int ldc)
{
	if (m < 0 || n < 0 || k < 0)
		return -1;
	double *ra = scratch_of(3, (size_t)m * k * sizeof *ra), *rb = scratch_of(4, (size_t)k * n * sizeof *rb);
	if (!ra || !rb)
		return -1;
	for (int i = 0; i < m; i++)
		for (int e = 0; e < k; e++)
			ra[(size_t)i * k + e] = rounded(transpose_a ? a[(size_t)e * lda + i] : a[(size_t)i * lda + e]);
	for (int e = 0; e < k; e++)
		for (int j = 0; j < n; j++)
			rb[(size_t)e * n + j] = rounded(transpose_b ? b[(size_t)j * ldb + e] : b[(size_t)e * ldb + j]);
	for (int i = 0; i < m; i++) {
		double *row = c + (size_t)i * ldc;
		if (!add)
			memset(row, 0, (size_t)n * sizeof *row);
		for (int e = 0; e < k; e++) {
			double x = ra[(size_t)i * k + e];
			const double *from = rb + (size_t)e * n;
			for (int j = 0; j < n; j++)
				row[j] += x * from[j];
		}
	}
	return 0;
}
