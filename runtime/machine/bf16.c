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

const char *const bf16_arithmetic_names[BF16_ARITHMETIC_COUNT] = {"tiles", "pairs"};
const char *const bf16_path_names[BF16_PATH_COUNT] = {"portable", "avx512", "avx512-bf16", "amx"};

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

/* The length K is padded to: a block of AMX's, or a pair. */
static int padded_k(enum bf16_arithmetic arithmetic, int k)
{
	int unit = arithmetic == BF16_TILES ? 32 : 2;
	return (k + unit - 1) / unit * unit;
}

/* ---- the processor ------------------------------------------------------ */

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

bool bf16_path_available(enum bf16_path path, enum bf16_arithmetic arithmetic, char *why, size_t size)
{
	const char *no = NULL;
	switch (path) {
	case BF16_PORTABLE:
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
 * (scratch slot 0 and 1: the operands, 2: C where it is padded; 3 and 4:
 * bf16_matmul's rounded operands). */
static __thread struct {
	void *memory;
	size_t bytes;
} scratch[5];

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
	int kp = padded_k(arithmetic, k);
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			float sum = c[(size_t)i * ldc + j];
			if (arithmetic == BF16_TILES) {
				for (int block = 0; block < kp; block += 32) {
					float te = 0.0f, to = 0.0f;
					for (int p = 0; p < 32; p += 2) {
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

/* A widened to f32, m x kp, and B widened, kp x np (np: n to 32), both
 * zero-padded. */
struct widened {
	float *a, *b;
	int kp, np;
};

static int widen(struct widened *w, int m, int n, int k, int kp, const uint16_t *a, int lda, const uint16_t *b,
		 int ldb)
{
	w->kp = kp;
	w->np = (n + 31) / 32 * 32;
	w->a = scratch_of(0, (size_t)m * kp * sizeof(float));
	w->b = scratch_of(1, (size_t)kp * w->np * sizeof(float));
	if (!w->a || !w->b)
		return -1;
	for (int i = 0; i < m; i++) {
		float *row = w->a + (size_t)i * kp;
		const uint16_t *from = a + (size_t)i * lda;
		for (int e = 0; e < k; e++)
			row[e] = bf16_to_float(from[e]);
		for (int e = k; e < kp; e++)
			row[e] = 0.0f;
	}
	for (int e = 0; e < kp; e++) {
		float *row = w->b + (size_t)e * w->np;
		const uint16_t *from = b + (size_t)e * ldb;
		int filled = e < k ? n : 0;
		for (int j = 0; j < filled; j++)
			row[j] = bf16_to_float(from[j]);
		for (int j = filled; j < w->np; j++)
			row[j] = 0.0f;
	}
	return 0;
}

/* rows rows of C (from row i) by 32 columns (from j; masks for the columns
 * within n), in arithmetic's order: two vectors of 16 outputs a row. The
 * tiles order keeps its two chains a block in registers and adds their
 * sum to C, in memory, once a block; the pairs order keeps C in
 * registers. */
__attribute__((target("avx512f"), always_inline)) static inline void avx512_block(
	enum bf16_arithmetic arithmetic, const struct widened *w, int i, int j, __mmask16 mask0, __mmask16 mask1,
	float *c, int ldc, const int rows)
{
	const float *a = w->a + (size_t)i * w->kp, *b = w->b + j;
	size_t np = (size_t)w->np;
	if (arithmetic == BF16_TILES) {
		for (int block = 0; block < w->kp; block += 32) {
			__m512 te[6][2], to[6][2];
			for (int r = 0; r < rows; r++)
				te[r][0] = te[r][1] = to[r][0] = to[r][1] = _mm512_setzero_ps();
			for (int p = block; p < block + 32; p += 2) {
				__m512 be0 = _mm512_load_ps(b + p * np), be1 = _mm512_load_ps(b + p * np + 16);
				__m512 bo0 = _mm512_load_ps(b + (p + 1) * np), bo1 = _mm512_load_ps(b + (p + 1) * np + 16);
				for (int r = 0; r < rows; r++) {
					__m512 ae = _mm512_set1_ps(a[(size_t)r * w->kp + p]);
					__m512 ao = _mm512_set1_ps(a[(size_t)r * w->kp + p + 1]);
					te[r][0] = _mm512_fmadd_ps(ae, be0, te[r][0]);
					te[r][1] = _mm512_fmadd_ps(ae, be1, te[r][1]);
					to[r][0] = _mm512_fmadd_ps(ao, bo0, to[r][0]);
					to[r][1] = _mm512_fmadd_ps(ao, bo1, to[r][1]);
				}
			}
			for (int r = 0; r < rows; r++) {
				float *row = c + (size_t)(i + r) * ldc + j;
				__m512 sum0 = _mm512_maskz_loadu_ps(mask0, row), sum1 = _mm512_maskz_loadu_ps(mask1, row + 16);
				_mm512_mask_storeu_ps(row, mask0, _mm512_add_ps(sum0, _mm512_add_ps(te[r][0], to[r][0])));
				_mm512_mask_storeu_ps(row + 16, mask1, _mm512_add_ps(sum1, _mm512_add_ps(te[r][1], to[r][1])));
			}
		}
		return;
	}
	__m512 sum[6][2];
	for (int r = 0; r < rows; r++) {
		sum[r][0] = _mm512_maskz_loadu_ps(mask0, c + (size_t)(i + r) * ldc + j);
		sum[r][1] = _mm512_maskz_loadu_ps(mask1, c + (size_t)(i + r) * ldc + j + 16);
	}
	for (int e = 0; e < w->kp; e += 2) {
		__m512 be0 = _mm512_load_ps(b + e * np), be1 = _mm512_load_ps(b + e * np + 16);
		__m512 bo0 = _mm512_load_ps(b + (e + 1) * np), bo1 = _mm512_load_ps(b + (e + 1) * np + 16);
		for (int r = 0; r < rows; r++) {
			__m512 ae = _mm512_set1_ps(a[(size_t)r * w->kp + e]);
			__m512 ao = _mm512_set1_ps(a[(size_t)r * w->kp + e + 1]);
			sum[r][0] = _mm512_fmadd_ps(ao, bo0, sum[r][0]);
			sum[r][1] = _mm512_fmadd_ps(ao, bo1, sum[r][1]);
			sum[r][0] = _mm512_fmadd_ps(ae, be0, sum[r][0]);
			sum[r][1] = _mm512_fmadd_ps(ae, be1, sum[r][1]);
		}
	}
	for (int r = 0; r < rows; r++) {
		_mm512_mask_storeu_ps(c + (size_t)(i + r) * ldc + j, mask0, sum[r][0]);
		_mm512_mask_storeu_ps(c + (size_t)(i + r) * ldc + j + 16, mask1, sum[r][1]);
	}
}

static __mmask16 columns_mask(int left) { return (__mmask16)(left >= 16 ? 0xffff : left <= 0 ? 0 : (1u << left) - 1); }

__attribute__((target("avx512f"), noinline)) static void avx512(enum bf16_arithmetic arithmetic,
								const struct widened *w, int m, int n, float *c, int ldc)
{
	for (int j = 0; j < n; j += 32) {
		__mmask16 mask0 = columns_mask(n - j), mask1 = columns_mask(n - j - 16);
		int i = 0;
		for (; i + 6 <= m; i += 6)
			avx512_block(arithmetic, w, i, j, mask0, mask1, c, ldc, 6);
		for (; i < m; i++)
			avx512_block(arithmetic, w, i, j, mask0, mask1, c, ldc, 1);
	}
}

/* ---- AVX512-BF16: vdpbf16ps, the pairs order ---------------------------- */

/* B as vdpbf16ps reads it: for each pair of rows (e, e + 1), np columns of
 * the two values in one 32-bit word, row e's in the low half; zero-padded
 * to kp rows and np columns. */
static uint32_t *pair_rows(int n, int k, int kp, int np, const uint16_t *b, int ldb)
{
	uint32_t *out = scratch_of(1, (size_t)kp / 2 * np * sizeof *out);
	if (!out)
		return NULL;
	for (int e = 0; e < kp; e += 2)
		for (int j = 0; j < np; j++) {
			uint32_t low = j < n && e < k ? b[(size_t)e * ldb + j] : 0;
			uint32_t high = j < n && e + 1 < k ? b[(size_t)(e + 1) * ldb + j] : 0;
			out[(size_t)e / 2 * np + j] = low | high << 16;
		}
	return out;
}

static inline uint32_t pair_of(const uint16_t *a, int lda, int i, int e, int k)
{
	uint32_t low = e < k ? a[(size_t)i * lda + e] : 0, high = e + 1 < k ? a[(size_t)i * lda + e + 1] : 0;
	return low | high << 16;
}

/* rows rows (from i) by 32 columns (from j) of C, a pair of K a step; A's
 * pairs as pair_of makes them, kp / 2 a row. */
__attribute__((target("avx512f,avx512bf16"), always_inline)) static inline void avx512_bf16_block(
	int i, int j, int kp, const uint32_t *a_pairs, const uint32_t *pairs, int np, __mmask16 mask0, __mmask16 mask1,
	float *c, int ldc, const int rows)
{
	__m512 sum[6][2];
	for (int r = 0; r < rows; r++) {
		sum[r][0] = _mm512_maskz_loadu_ps(mask0, c + (size_t)(i + r) * ldc + j);
		sum[r][1] = _mm512_maskz_loadu_ps(mask1, c + (size_t)(i + r) * ldc + j + 16);
	}
	for (int e = 0; e < kp; e += 2) {
		const uint32_t *column = pairs + (size_t)e / 2 * np + j;
		__m512bh b0 = (__m512bh)_mm512_load_si512(column), b1 = (__m512bh)_mm512_load_si512(column + 16);
		for (int r = 0; r < rows; r++) {
			__m512bh pair = (__m512bh)_mm512_set1_epi32((int)a_pairs[(size_t)(i + r) * (kp / 2) + e / 2]);
			sum[r][0] = _mm512_dpbf16_ps(sum[r][0], pair, b0);
			sum[r][1] = _mm512_dpbf16_ps(sum[r][1], pair, b1);
		}
	}
	for (int r = 0; r < rows; r++) {
		_mm512_mask_storeu_ps(c + (size_t)(i + r) * ldc + j, mask0, sum[r][0]);
		_mm512_mask_storeu_ps(c + (size_t)(i + r) * ldc + j + 16, mask1, sum[r][1]);
	}
}

__attribute__((target("avx512f,avx512bf16"), noinline)) static void avx512_bf16(int m, int n, int kp,
										  const uint32_t *a_pairs,
										  const uint32_t *pairs, int np, float *c,
										  int ldc)
{
	for (int j = 0; j < n; j += 32) {
		__mmask16 mask0 = columns_mask(n - j), mask1 = columns_mask(n - j - 16);
		int i = 0;
		for (; i + 6 <= m; i += 6)
			avx512_bf16_block(i, j, kp, a_pairs, pairs, np, mask0, mask1, c, ldc, 6);
		for (; i < m; i++)
			avx512_bf16_block(i, j, kp, a_pairs, pairs, np, mask0, mask1, c, ldc, 1);
	}
}

/* ---- AMX: tdpbf16ps, the tiles order ----------------------------------- */

struct tile_config {
	uint8_t palette, start_row, reserved[14];
	uint16_t bytes_per_row[16];
	uint8_t rows[16];
} __attribute__((aligned(64)));

/* C (mp x np, padded to 32) += A (mp x kp, padded bf16) B (pairs of rows,
 * as pair_rows lays them): 32 x 32 outputs at a time in four C tiles, so
 * that each A and B tile loaded serves two products. Each C tile takes its
 * K blocks in order, as the definition sums them. */
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
		for (int j = 0; j < np; j += 32) {
			float *c0 = c + (size_t)i * np + j, *c1 = c0 + (size_t)16 * np;
			_tile_loadd(0, c0, c_row);
			_tile_loadd(1, c0 + 16, c_row);
			_tile_loadd(2, c1, c_row);
			_tile_loadd(3, c1 + 16, c_row);
			for (int block = 0; block < kp; block += 32) {
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

static int amx_gemm(int m, int n, int k, const uint16_t *a, int lda, const uint16_t *b, int ldb, float *c, int ldc)
{
	int kp = padded_k(BF16_TILES, k), mp = (m + 31) / 32 * 32, np = (n + 31) / 32 * 32;
	uint16_t *ap = scratch_of(0, (size_t)mp * kp * sizeof *ap);
	float *cp = scratch_of(2, (size_t)mp * np * sizeof *cp);
	uint32_t *pairs = pair_rows(n, k, kp, np, b, ldb);
	int status = ap && cp && pairs ? 0 : -1;
	if (status == 0) {
		for (int i = 0; i < mp; i++)
			for (int e = 0; e < kp; e++)
				ap[(size_t)i * kp + e] = i < m && e < k ? a[(size_t)i * lda + e] : 0;
		for (int i = 0; i < mp; i++)
			for (int j = 0; j < np; j++)
				cp[(size_t)i * np + j] = i < m && j < n ? c[(size_t)i * ldc + j] : 0.0f;
		amx(mp, np, kp, ap, pairs, cp);
		for (int i = 0; i < m; i++)
			memcpy(c + (size_t)i * ldc, cp + (size_t)i * np, (size_t)n * sizeof *c);
	}
	return status;
}

/* ---- the door ----------------------------------------------------------- */

int bf16_gemm(enum bf16_path path, enum bf16_arithmetic arithmetic, int m, int n, int k, const uint16_t *a,
	      int lda, const uint16_t *b, int ldb, float *c, int ldc)
{
	if (!bf16_path_available(path, arithmetic, NULL, 0) || m < 0 || n < 0 || k < 0)
		return -1;
	if (m == 0 || n == 0)
		return 0;
	int kp = padded_k(arithmetic, k), status = 0;
	if (path == BF16_AMX)
		return amx_gemm(m, n, k, a, lda, b, ldb, c, ldc);
	if (path == BF16_AVX512_BF16) {
		int np = (n + 31) / 32 * 32;
		uint32_t *pairs = pair_rows(n, k, kp, np, b, ldb);
		uint32_t *a_pairs = scratch_of(0, (size_t)m * (kp / 2) * sizeof *a_pairs);
		if (!pairs || !a_pairs)
			return -1;
		for (int i = 0; i < m; i++)
			for (int e = 0; e < kp; e += 2)
				a_pairs[(size_t)i * (kp / 2) + e / 2] = pair_of(a, lda, i, e, k);
		avx512_bf16(m, n, kp, a_pairs, pairs, np, c, ldc);
		return 0;
	}
	unsigned mxcsr = flush_begin();
	if (path == BF16_PORTABLE) {
		portable(arithmetic, m, n, k, a, lda, b, ldb, c, ldc);
	} else {
		struct widened w;
		status = widen(&w, m, n, k, kp, a, lda, b, ldb);
		if (status == 0)
			avx512(arithmetic, &w, m, n, c, ldc);
	}
	flush_end(mxcsr);
	return status;
}

enum bf16_path bf16_best_path(enum bf16_arithmetic arithmetic)
{
	static const enum bf16_path fastest[] = {BF16_AMX, BF16_AVX512_BF16, BF16_AVX512};
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

/* op(X) (rows x columns) rounded to bf16, rows x columns apart. */
static void round_operand(uint16_t *out, bool transpose, int rows, int columns, const float *x, int ldx)
{
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < columns; j++)
			out[(size_t)i * columns + j] =
				bf16_from_float(transpose ? x[(size_t)j * ldx + i] : x[(size_t)i * ldx + j]);
}

int bf16_matmul(enum bf16_path path, enum bf16_arithmetic arithmetic, bool transpose_a, bool transpose_b, int m,
		int n, int k, const float *a, int lda, const float *b, int ldb, bool add, float *c, int ldc)
{
	if (m < 0 || n < 0 || k < 0)
		return -1;
	uint16_t *ra = scratch_of(3, (size_t)m * k * sizeof *ra), *rb = scratch_of(4, (size_t)k * n * sizeof *rb);
	if (!ra || !rb)
		return -1;
	round_operand(ra, transpose_a, m, k, a, lda);
	round_operand(rb, transpose_b, k, n, b, ldb);
	if (!add)
		for (int i = 0; i < m; i++)
			memset(c + (size_t)i * ldc, 0, (size_t)n * sizeof *c);
	return bf16_gemm(path, arithmetic, m, n, k, ra, k, rb, n, c, ldc);
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
