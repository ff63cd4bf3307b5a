/* The fast convolution kernels (packed panels on BLIS's micro-kernel)
 * against the reference kernels (im2col, then BLIS's gemm), on random
 * shapes: forward, data gradient and weight gradient, built once in f32
 * and once in f64. The kernels are the shape-generic helpers of
 * templates/ops/conv.c.tmpl, taken from a generated kernels.h.
 *
 * The two compute the same sums in different orders, so they agree to
 * rounding: the largest difference, over the largest magnitude of the
 * result, stays below 64 epsilon of the precision (sums of at most a few
 * hundred products, each term rounded once either way).
 *
 * BLIS's kernels prefer row-stored or column-stored blocks; the fast
 * kernels lay their panels out either way. The program runs its tests on
 * the kernels BLIS picks, then once more, in a child process, on kernels
 * of the other preference that this processor can run. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernels.h"

#ifdef RESGEN_F64
static const double epsilon = DBL_EPSILON;
static const char *const dtype = "f64";
#else
static const double epsilon = FLT_EPSILON;
static const char *const dtype = "f32";
#endif

enum { SHAPES = 60 };

static unsigned long long random_state = 0x9e3779b97f4a7c15ull;

static unsigned next_random(void)
{
	random_state = random_state * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(random_state >> 33);
}

/* In [lo, hi]. */
static int random_int(int lo, int hi) { return lo + (int)(next_random() % (unsigned)(hi - lo + 1)); }

static real *random_tensor(size_t count)
{
	real *t = aligned_alloc(64, (count * sizeof(real) + 63) / 64 * 64);
	assert_non_null(t);
	for (size_t i = 0; i < count; i++)
		t[i] = (real)((double)next_random() / 2147483648.0 - 1.0);
	return t;
}

static real *copy_of(const real *t, size_t count)
{
	real *c = aligned_alloc(64, (count * sizeof(real) + 63) / 64 * 64);
	assert_non_null(c);
	memcpy(c, t, count * sizeof(real));
	return c;
}

/* max |a - b| / max |b|, which must stay within rounding */
static double difference(const real *a, const real *b, size_t count)
{
	double worst = 0, scale = 1e-30;
	for (size_t i = 0; i < count; i++) {
		worst = fmax(worst, fabs((double)a[i] - (double)b[i]));
		scale = fmax(scale, fabs((double)b[i]));
	}
	return worst / scale;
}

static struct conv_shape random_shape(void)
{
	struct conv_shape s;
	s.k = random_int(0, 2) ? 3 : 1;
	s.stride = random_int(0, 2) ? 1 : 2;
	s.c_in = random_int(1, 24);
	s.c_out = random_int(1, 40);
	s.h_in = random_int(1, 13);
	s.w_in = random_int(1, 13);
	s.h_out = (s.h_in - 1) / s.stride + 1; /* padding k / 2 */
	s.w_out = (s.w_in - 1) / s.stride + 1;
	return s;
}

static void check_shape(struct conv_shape s, int n)
{
	size_t in_count = (size_t)n * s.c_in * s.h_in * s.w_in, out_count = (size_t)n * s.c_out * s.h_out * s.w_out;
	size_t weight_count = (size_t)s.c_out * CONV_PATCH(s.c_in, s.k);
	size_t per_thread = CONV_SCRATCH(s.c_in, s.h_in, s.w_in, s.c_out, s.h_out, s.w_out, s.k);
	real *scratch = random_tensor(per_thread * (size_t)omp_get_max_threads());
	real *in = random_tensor(in_count), *weight = random_tensor(weight_count), *dout = random_tensor(out_count);
	real *out = random_tensor(out_count), *out_reference = random_tensor(out_count);
	/* Gradients accumulate: start both from the same non-zero values. */
	real *din = random_tensor(in_count), *din_reference = copy_of(din, in_count);
	real *dweight = random_tensor(weight_count), *dweight_reference = copy_of(dweight, weight_count);

	#pragma omp parallel
	conv_forward(out, in, weight, n, s, scratch, per_thread);
	#pragma omp parallel
	conv_forward_reference(out_reference, in, weight, n, s, scratch, per_thread);
	#pragma omp parallel
	conv_backward_weights(dweight, dout, in, n, s, scratch, per_thread);
	#pragma omp parallel
	conv_weight_gradient_reference(dweight_reference, dout, in, n, s, scratch, per_thread);
	#pragma omp parallel
	conv_backward_data(din, dout, weight, n, s, scratch, per_thread, GRADIENT_ADD);
	#pragma omp parallel
	conv_data_gradient_reference(din_reference, dout, weight, n, s, scratch, per_thread, GRADIENT_ADD);

	double forward = difference(out, out_reference, out_count);
	double data = difference(din, din_reference, in_count);
	double weights = difference(dweight, dweight_reference, weight_count);
	double bound = 64 * epsilon;
	if (forward > bound || data > bound || weights > bound)
		print_error("conv%dx%d stride %d, n %d, (%d, %d, %d) -> (%d, %d, %d): relative differences "
			    "forward %.3g, data gradient %.3g, weight gradient %.3g; bound %.3g\n",
			    s.k, s.k, s.stride, n, s.c_in, s.h_in, s.w_in, s.c_out, s.h_out, s.w_out, forward, data,
			    weights, bound);
	assert_true(forward <= bound);
	assert_true(data <= bound);
	assert_true(weights <= bound);

	free(scratch);
	free(in);
	free(weight);
	free(dout);
	free(out);
	free(out_reference);
	free(din);
	free(din_reference);
	free(dweight);
	free(dweight_reference);
}

static void test_conv_fast_matches_reference_on_random_shapes(void **unused)
{
	(void)unused;
	const struct gemm_micro *micro = gemm_micro();
	assert_non_null(micro); /* else the fast kernels fall back and nothing is tested */
	print_message("%s, BLIS %s kernels: micro-kernel %d x %d, %s-stored blocks preferred\n", dtype,
		      gemm_kernels(), micro->mr, micro->nr, micro->prefers_rows ? "row" : "column");
	for (int i = 0; i < SHAPES; i++)
		check_shape(random_shape(), random_int(1, 5));
}

/* The paper's shapes, which the emitted networks run, at a batch that
 * splits unevenly among threads. */
static void test_conv_fast_matches_reference_on_network_shapes(void **unused)
{
	(void)unused;
	static const struct conv_shape shapes[] = {
		{3, 32, 32, 16, 32, 32, 3, 1},   {16, 32, 32, 16, 32, 32, 3, 1}, {16, 32, 32, 32, 16, 16, 3, 2},
		{32, 16, 16, 32, 16, 16, 3, 1}, {64, 8, 8, 64, 8, 8, 3, 1},    {64, 32, 32, 16, 32, 32, 1, 1},
		{16, 32, 32, 64, 32, 32, 1, 1}, {64, 32, 32, 128, 16, 16, 1, 2}, {1, 28, 28, 16, 28, 28, 3, 1},
	};
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		check_shape(shapes[i], 3);
}

/* Kernels of the other preference, that this processor runs: the portable
 * sandybridge kernels (AVX, column-stored) or haswell's (AVX2 and FMA,
 * row-stored). */
static const char *other_kernels(void)
{
	const struct gemm_micro *micro = gemm_micro();
	__builtin_cpu_init();
	if (micro && micro->prefers_rows && __builtin_cpu_supports("avx"))
		return "sandybridge";
	if (micro && !micro->prefers_rows && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return "haswell";
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv_fast_matches_reference_on_random_shapes),
		cmocka_unit_test(test_conv_fast_matches_reference_on_network_shapes),
	};
	int failed = cmocka_run_group_tests_name(dtype, tests, NULL, NULL);
	const char *other = other_kernels();
	if (getenv("RESGEN_TEST_OTHER_KERNELS") || !other || gemm_kernels_id(other) < 0)
		return failed;
	char id[16];
	snprintf(id, sizeof id, "%d", gemm_kernels_id(other));
	pid_t child = fork();
	if (child == 0) {
		setenv("BLIS_ARCH_TYPE", id, 1);
		setenv("RESGEN_TEST_OTHER_KERNELS", "1", 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	int status = 0;
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		failed++;
	return failed;
}
