/* The fast convolution kernels (packed panels on BLIS's micro-kernel)
 * against the reference kernels (im2col, then BLIS's gemm), on random
 * shapes: forward, data gradient and weight gradient, built once in f32
 * and once in f64; with a BN + ReLU prologue, against the same kernels
 * run on the activated input; with the forward epilogue (a residual sum
 * and BN's sums), against the sum done after and BN taking its own sums;
 * BN's backward through ReLU's mask against ReLU's backward, then BN's,
 * and through the mask of a ReLU after an addition, the same;
 * BN's statistics against a two-pass computation in long double; BN with
 * statistics across ranks against one rank alone; and max pooling against
 * its definition, bitwise. The kernels are the shape-generic library of
 * runtime/kernels/, given shapes at run time.
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
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernels/batch_norm.h"
#include "kernels/conv.h"
#include "kernels/pool.h"
#include "kernels/relu.h"

/* The choices the conv kernels under test follow: check_shape forces each way in turn. */
static struct conv_choices choices;

#ifdef RESGEN_F64
static const double epsilon = DBL_EPSILON;
static const char *const dtype = "f64";
#else
static const double epsilon = FLT_EPSILON;
static const char *const dtype = "f32";
#endif

enum { SHAPES = 60 };

static const struct conv_epilogue no_epilogue = {NULL, NULL, NULL};
/* A process alone: BN's statistics are its batch's. */
static const struct net_ranks alone = {.count = 1};

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

/* Scratch for batch_norm_backward, channels wide per thread: one buffer,
 * grown as needed and kept (reachable, so not a leak). */
static real *batch_norm_scratch(int channels)
{
	static real *scratch;
	static size_t size;
	size_t needed = BATCH_NORM_SCRATCH(channels) * (size_t)omp_get_max_threads();
	if (needed > size) {
		free(scratch);
		scratch = malloc(sizeof(real) * needed);
		assert_non_null(scratch);
		size = needed;
	}
	return scratch;
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
		double apart = fabs((double)a[i] - (double)b[i]), size = fabs((double)b[i]);
		if (!(apart <= worst)) /* a NaN is as far apart as can be (fmax passed over it) */
			worst = isnan(apart) ? INFINITY : apart;
		if (size > scale)
			scale = size;
	}
	return worst / scale;
}

/* s with its tile and its algorithms, as the generator emits them. */
static struct conv_shape tiled(struct conv_shape s)
{
	s.tile = CONV_TILE(s.k, s.stride, s.h_in, s.w_in, s.h_out, s.w_out);
	s.forward = CONV_FORWARD_RULE(s.c_in, s.h_in, s.w_in, s.c_out, s.h_out, s.w_out, s.k, s.stride);
	s.data = CONV_DATA_RULE(s.c_in, s.h_in, s.w_in, s.c_out, s.h_out, s.w_out, s.k, s.stride);
	s.weight = CONV_WEIGHT_RULE(s.c_in, s.h_in, s.w_in, s.c_out, s.h_out, s.w_out, s.k, s.stride);
	return s;
}

/* The shape of those sizes, tiled. */
static struct conv_shape conv_shape_of(int c_in, int h_in, int w_in, int c_out, int h_out, int w_out, int k, int stride)
{
	return tiled((struct conv_shape){.c_in = c_in, .h_in = h_in, .w_in = w_in, .c_out = c_out, .h_out = h_out,
					 .w_out = w_out, .k = k, .stride = stride});
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

/* Each computed result against its reference (data gradient skipped when
 * din is NULL): the relative difference within rounding. */
static void check_close(const char *what, struct conv_shape s, int n, const real *out, const real *out_reference,
			size_t out_count, const real *din, const real *din_reference, size_t in_count,
			const real *dweight, const real *dweight_reference, size_t weight_count)
{
	double forward = difference(out, out_reference, out_count);
	double data = din ? difference(din, din_reference, in_count) : 0;
	double weights = difference(dweight, dweight_reference, weight_count);
	double bound = 64 * epsilon;
	if (forward > bound || data > bound || weights > bound)
		print_error("%sconv%dx%d stride %d, n %d, (%d, %d, %d) -> (%d, %d, %d): relative differences "
			    "forward %.3g, data gradient %.3g, weight gradient %.3g; bound %.3g\n",
			    what, s.k, s.k, s.stride, n, s.c_in, s.h_in, s.w_in, s.c_out, s.h_out, s.w_out, forward,
			    data, weights, bound);
	assert_true(forward <= bound);
	assert_true(data <= bound);
	assert_true(weights <= bound);
}

/* BN's statistics from the sums of each image as the epilogue takes them,
 * against those BN takes itself of the same tensor. */
static void check_statistics(const char *what, struct conv_shape s, int n, const real *out, double *sums)
{
	int channels = s.c_out, pixels = s.h_out * s.w_out;
	real *gamma = random_tensor(channels), *beta = random_tensor(channels), *saved[2];
	double *own_sums = malloc(sizeof(double) * BATCH_NORM_IMAGE_SUMS * n * channels);
	assert_non_null(own_sums);
	for (int k = 0; k < 2; k++) {
		real *running_mean = random_tensor(channels), *running_var = random_tensor(channels);
		saved[k] = random_tensor(BATCH_NORM_SAVED * (size_t)channels);
		batch_norm_statistics(saved[k], out, gamma, beta, running_mean, running_var, n, 1, channels, pixels,
				      k == 0 ? sums : own_sums, k == 0 ? SUMS_TAKEN : SUMS_TO_TAKE, &alone);
		free(running_mean);
		free(running_var);
	}
	double worst = difference(saved[0], saved[1], 4 * (size_t)channels);
	if (worst > 64 * epsilon)
		print_error("%sconv%dx%d, n %d, (%d, %d, %d) -> (%d, %d, %d): BN statistics from the epilogue's "
			    "sums differ by %.3g\n", what, s.k, s.k, n, s.c_in, s.h_in, s.w_in, s.c_out, s.h_out, s.w_out,
			    worst);
	assert_true(worst <= 64 * epsilon);
	free(gamma);
	free(beta);
	free(saved[0]);
	free(saved[1]);
	free(own_sums);
}

/* The tests below hold every thread but the first back until the first,
 * done with its own work, has claimed the work the held thread would have
 * begun with (flag, in the pass's claims of n images): so the first takes
 * the others' work whole, however fast the machine, and no thread waits
 * longer than that. */
static void hold_back_until_claimed(const int *flag)
{
	if (omp_get_thread_num() > 0)
		while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE))
			sched_yield();
}

/* In a forward pass: the first image of the thread's share (a thief takes
 * a share's groups from its last back, so that one last); none if the
 * share is empty. */
static void hold_back_forward(const int *claims, int n)
{
	int from, to;
	thread_share(n, &from, &to);
	if (from < to)
		hold_back_until_claimed(&claims[from]);
}

/* In a backward pass: the thread's weight-gradient share, which the taker
 * computes whole with its data gradients. */
static void hold_back_backward(const int *claims, int n) { hold_back_until_claimed(&claims[n + omp_get_thread_num()]); }

/* The fast forward pass, on every thread, with the epilogue's shortcut
 * and sums (either NULL for none); with held_back, every thread but the
 * first starts once the first has taken its images. */
static void forward_fast(real *out, const real *in, const real *weight, const real *pre, const real *shortcut, double *sums, int n,
			 struct conv_shape s, real *scratch, size_t per_thread, bool held_back)
{
	int claims[CONV_CLAIMS(n)];
	memset(claims, 0, sizeof claims);
	#pragma omp parallel
	{
		if (held_back)
			hold_back_forward(claims, n);
		conv_forward(out, in, weight, pre, (struct conv_epilogue){shortcut, sums, claims}, n, s, &choices, scratch, per_thread);
	}
}

/* The weight gradient alone (conv_backward_weights), on every thread. */
static void backward_weights(real *dweight, const real *dout, const real *in, const real *pre, int n, struct conv_shape s,
			     const struct conv_choices *c, real *scratch, size_t per_thread)
{
	int shares[omp_get_max_threads()];
	memset(shares, 0, sizeof shares);
	#pragma omp parallel
	conv_backward_weights(dweight, dout, in, pre, n, s, c, scratch, per_thread, shares);
}

/* The forward pass with the epilogue, fast and reference, against the
 * convolution with prologue (out_reference) plus a shortcut added after;
 * and the sums each kernel took, through BN's statistics. The fast pass
 * again with every thread but the first held back, so that the first
 * takes the others' images, and the reference staging and streaming each
 * image: output and sums bitwise the same. */
static void check_epilogue(struct conv_shape s, int n, const real *in, const real *weight, const real *pre,
			   const real *out_reference, real *scratch, size_t per_thread)
{
	size_t out_count = (size_t)n * s.c_out * s.h_out * s.w_out;
	size_t sums_count = (size_t)BATCH_NORM_IMAGE_SUMS * n * s.c_out;
	real *shortcut = random_tensor(out_count), *expected = copy_of(out_reference, out_count);
	real *out[2] = {random_tensor(out_count), random_tensor(out_count)};
	double *sums[2] = {malloc(sizeof(double) * sums_count), malloc(sizeof(double) * sums_count)};
	assert_non_null(sums[0]);
	assert_non_null(sums[1]);
	for (size_t j = 0; j < out_count; j++)
		expected[j] += shortcut[j];
	forward_fast(out[0], in, weight, pre, shortcut, sums[0], n, s, scratch, per_thread, false);
	#pragma omp parallel
	conv_forward_reference(out[1], in, weight, pre, (struct conv_epilogue){shortcut, sums[1], NULL}, n, s, scratch,
			       per_thread, false, PRODUCTS_REAL);
	real *stolen = random_tensor(out_count);
	double *stolen_sums = malloc(sizeof(double) * sums_count);
	assert_non_null(stolen_sums);
	forward_fast(stolen, in, weight, pre, shortcut, stolen_sums, n, s, scratch, per_thread, true);
	assert_memory_equal(stolen, out[0], out_count * sizeof(real));
	assert_memory_equal(stolen_sums, sums[0], sums_count * sizeof(double));
	free(stolen);
	stolen = random_tensor(out_count);
	#pragma omp parallel
	conv_forward_reference(stolen, in, weight, pre, (struct conv_epilogue){shortcut, stolen_sums, NULL}, n, s, scratch,
			       per_thread, true, PRODUCTS_REAL);
	assert_memory_equal(stolen, out[1], out_count * sizeof(real));
	assert_memory_equal(stolen_sums, sums[1], sums_count * sizeof(double));
	free(stolen);
	free(stolen_sums);
	for (int k = 0; k < 2; k++) {
		const char *what = k == 0 ? "fast, with epilogue: " : "reference, with epilogue: ";
		double forward = difference(out[k], expected, out_count);
		if (forward > 64 * epsilon)
			print_error("%sconv%dx%d, n %d, (%d, %d, %d) -> (%d, %d, %d): relative difference %.3g\n", what,
				    s.k, s.k, n, s.c_in, s.h_in, s.w_in, s.c_out, s.h_out, s.w_out, forward);
		assert_true(forward <= 64 * epsilon);
		check_statistics(what, s, n, out[k], sums[k]);
		free(out[k]);
		free(sums[k]);
	}
	free(shortcut);
	free(expected);
}

static const struct batch_norm_deferred DEFERRED_NONE = {NULL, NULL, NULL, false};

/* dY left to the convolution by the BN after it (batch_norm_deferred),
 * computed image by image (or a Winograd group at a time) in its scratch,
 * against the same dY computed whole first and stored: both gradients
 * bitwise equal; with BN's output gradient taken through ReLU's mask and
 * as it is (after BN + addition + ReLU). Where the input and output have
 * one size, a third time with din in the memory BN's output gradient is
 * read from (as an identity shortcut's gradient may be planned), every
 * thread but the first held back (hold_back_backward): no thread may take
 * another's data gradient (conv_backward), which would write an image's
 * din before its owner read its dY. */
static void check_deferred_gradient(struct conv_shape s, int n, const real *in, const real *weight, real *scratch, size_t per_thread)
{
	size_t in_count = (size_t)n * s.c_in * s.h_in * s.w_in, out_count = (size_t)n * s.c_out * s.h_out * s.w_out;
	size_t weight_count = (size_t)s.c_out * CONV_PATCH(s.c_in, s.k);
	real *dactivated = random_tensor(out_count), *bn_in = random_tensor(out_count);
	real *saved = random_tensor(BATCH_NORM_SAVED * (size_t)s.c_out), *dy = random_tensor(out_count);
	for (int relu = 0; relu <= 1; relu++) {
		batch_norm_gradient_images(dy, dactivated, bn_in, saved, n, s.c_out, s.h_out * s.w_out, relu, GRADIENT_SET);
		real *din[3], *dweight[3];
		int runs = in_count == out_count ? 3 : 2;
		for (int k = 0; k < runs; k++) {
			din[k] = k == 2 ? copy_of(dactivated, out_count) : calloc(in_count, sizeof(real));
			dweight[k] = calloc(weight_count, sizeof(real));
			assert_non_null(din[k]);
			assert_non_null(dweight[k]);
			struct batch_norm_deferred deferred = {k == 2 ? din[k] : dactivated, bn_in, saved, relu};
			int claims[CONV_CLAIMS(n)];
			memset(claims, 0, sizeof claims);
			#pragma omp parallel
			{
				double seconds = 0;
				if (k == 2)
					hold_back_backward(claims, n);
				conv_backward(din[k], dweight[k], k ? NULL : dy, k ? deferred : DEFERRED_NONE, in, weight, NULL, n, s, &choices, scratch,
					      per_thread, GRADIENT_SET, (struct conv_backward_epilogue){NULL, NULL, claims}, &seconds);
			}
		}
		for (int k = 1; k < runs; k++) {
			assert_memory_equal(din[0], din[k], in_count * sizeof(real));
			assert_memory_equal(dweight[0], dweight[k], weight_count * sizeof(real));
		}
		for (int k = 0; k < runs; k++) {
			free(din[k]);
			free(dweight[k]);
		}
	}
	real *tensors[] = {dactivated, bn_in, saved, dy};
	for (size_t k = 0; k < sizeof tensors / sizeof tensors[0]; k++)
		free(tensors[k]);
}

/* Both gradients in one loop (conv_backward) against the two loops
 * (conv_backward_weights, conv_backward_data), which compute the same sums
 * in the same order: bitwise equal. Once with nothing before or after,
 * adding to din; once with pre (BN's scale and shift in saved) as the
 * prologue and BN's backward sums of each image as the epilogue, setting
 * din: the sums (each image's, added in image order) against
 * batch_norm_gradient_sums of the whole din, to rounding of doubles. Each
 * twice: as the threads come, and with every thread but the first held
 * back (hold_back_backward), so that the first, done with its own images, takes
 * the others' weight-gradient shares whole and their data gradients (which
 * must then be computed once each, as their owners would have). */
static void check_backward_in_one_loop(struct conv_shape s, int n, const real *in, const real *weight, const real *dout, const real *pre,
				       real *scratch, size_t per_thread)
{
	size_t in_count = (size_t)n * s.c_in * s.h_in * s.w_in, weight_count = (size_t)s.c_out * CONV_PATCH(s.c_in, s.k);
	int pixels = s.h_in * s.w_in;
	real *saved = random_tensor(BATCH_NORM_SAVED * (size_t)s.c_in);
	memcpy(saved + 2 * s.c_in, pre, sizeof(real) * 2 * (size_t)s.c_in);
	double *image_sums = calloc((size_t)n * 2 * s.c_in, sizeof(double)), *expected = calloc(2 * (size_t)s.c_in, sizeof(double));
	assert_non_null(image_sums);
	assert_non_null(expected);
	for (int run = 0; run < 4; run++) {
		int fused = run % 2, held = run / 2;
		const real *prologue = fused ? pre : NULL;
		enum gradient_write write = fused ? GRADIENT_SET : GRADIENT_ADD;
		real *din = random_tensor(in_count), *din_apart = copy_of(din, in_count);
		real *dweight = random_tensor(weight_count), *dweight_apart = copy_of(dweight, weight_count);
		backward_weights(dweight_apart, dout, in, prologue, n, s, &choices, scratch, per_thread);
		#pragma omp parallel
		conv_backward_data(din_apart, dout, weight, n, s, &choices, scratch, per_thread, write);
		int claims[CONV_CLAIMS(n)];
		memset(claims, 0, sizeof claims);
		#pragma omp parallel
		{
			double seconds = 0;
			struct conv_backward_epilogue epilogue = {fused ? saved : NULL, image_sums, claims};
			if (held)
				hold_back_backward(claims, n);
			conv_backward(din, dweight, dout, DEFERRED_NONE, in, weight, prologue, n, s, &choices, scratch, per_thread, write, epilogue, &seconds);
		}
		assert_memory_equal(din, din_apart, in_count * sizeof(real));
		assert_memory_equal(dweight, dweight_apart, weight_count * sizeof(real));
		free(din_apart);
		free(dweight_apart);
		if (fused) {
			memset(expected, 0, sizeof(double) * 2 * s.c_in);
			for (int i = 0; i < n; i++)
				batch_norm_gradient_sums(expected, in + (size_t)i * s.c_in * pixels, din + (size_t)i * s.c_in * pixels, saved, s.c_in, pixels, true);
			for (int j = 0; j < 2 * s.c_in; j++) {
				double sum = 0;
				for (int i = 0; i < n; i++)
					sum += image_sums[(size_t)i * 2 * s.c_in + j];
				assert_true(fabs(sum - expected[j]) <= 1e-12 * (1 + fabs(expected[j])) * (double)n * pixels);
			}
		}
		free(din);
		free(dweight);
	}
	free(saved);
	free(image_sums);
	free(expected);
	check_deferred_gradient(s, n, in, weight, scratch, per_thread);
}

static void check_shape_once(struct conv_shape s, int n)
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

	forward_fast(out, in, weight, NULL, NULL, NULL, n, s, scratch, per_thread, false);
	#pragma omp parallel
	conv_forward_reference(out_reference, in, weight, NULL, no_epilogue, n, s, scratch, per_thread, false, PRODUCTS_REAL);
	backward_weights(dweight, dout, in, NULL, n, s, &choices, scratch, per_thread);
	#pragma omp parallel
	conv_weight_gradient_reference(dweight_reference, dout, in, NULL, n, s, scratch, per_thread, PRODUCTS_REAL);
	#pragma omp parallel
	conv_backward_data(din, dout, weight, n, s, &choices, scratch, per_thread, GRADIENT_ADD);
	#pragma omp parallel
	conv_data_gradient_reference(din_reference, dout, weight, n, s, scratch, per_thread, GRADIENT_ADD, PRODUCTS_REAL);
	check_close("", s, n, out, out_reference, out_count, din, din_reference, in_count, dweight, dweight_reference,
		    weight_count);

	/* With a prologue, both kernels against the reference kernel run on
	 * the input activated beforehand: pre = BN's scale and shift, some
	 * negative so that ReLU clips. */
	real *pre = random_tensor(2 * (size_t)s.c_in), *activated = random_tensor(in_count);
	real *out_fused = random_tensor(out_count), *dweight_fused = copy_of(dweight, weight_count);
	real *dweight_fused_reference = copy_of(dweight, weight_count), *dweight_activated = copy_of(dweight, weight_count);
	for (int i = 0; i < n; i++)
		conv_activate(activated + (size_t)i * s.c_in * s.h_in * s.w_in, in + (size_t)i * s.c_in * s.h_in * s.w_in,
			      pre, s.c_in, s.h_in * s.w_in);
	#pragma omp parallel
	conv_forward_reference(out_reference, activated, weight, NULL, no_epilogue, n, s, scratch, per_thread, false, PRODUCTS_REAL);
	#pragma omp parallel
	conv_weight_gradient_reference(dweight_activated, dout, activated, NULL, n, s, scratch, per_thread, PRODUCTS_REAL);
	forward_fast(out, in, weight, pre, NULL, NULL, n, s, scratch, per_thread, false);
	#pragma omp parallel
	conv_forward_reference(out_fused, in, weight, pre, no_epilogue, n, s, scratch, per_thread, false, PRODUCTS_REAL);
	backward_weights(dweight_fused, dout, in, pre, n, s, &choices, scratch, per_thread);
	#pragma omp parallel
	conv_weight_gradient_reference(dweight_fused_reference, dout, in, pre, n, s, scratch, per_thread, PRODUCTS_REAL);
	check_close("fast, with BN + ReLU prologue: ", s, n, out, out_reference, out_count, NULL, NULL, 0,
		    dweight_fused, dweight_activated, weight_count);
	check_close("reference, with BN + ReLU prologue: ", s, n, out_fused, out_reference, out_count, NULL, NULL, 0,
		    dweight_fused_reference, dweight_activated, weight_count);
	check_epilogue(s, n, in, weight, pre, out_reference, scratch, per_thread);
	check_backward_in_one_loop(s, n, in, weight, dout, pre, scratch, per_thread);

	free(pre);
	free(activated);
	free(out_fused);
	free(dweight_fused);
	free(dweight_fused_reference);
	free(dweight_activated);
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

/* Every way the fast kernels can run a stride-1 convolution, whichever
 * this machine would choose: plain, by the row splits (of the forward pass
 * and data gradient, and of the weight gradient), a 3x3 one of even size
 * by Winograd with either tile, a 1x1 one's weight gradient with the
 * operands on either side; and the output images written in place or
 * staged and streamed: plain both ways, the row split and F(2x2)
 * streamed, F(4x4) in place. Each way forces its choices as
 * RESGEN_CHOICES would (conv_choose). */
static void check_shape(struct conv_shape s, int n)
{
	static const char *const ways[] = {
		"winograd=off,row_split=off,weight_split=off,swap=off,stream=off",
		"winograd=off,row_split=on,weight_split=on,swap=on,stream=on",
		"winograd=on,row_split=off,weight_split=off,swap=off,stream=on",
		"winograd=on,row_split=off,weight_split=off,swap=off,stream=off",
		"winograd=off,row_split=off,weight_split=off,swap=off,stream=on",
	};
	for (int way = 0; way < 5; way++) {
		struct choice_override forced;
		char why[256];
		assert_int_equal(machine_override_parse(ways[way], &forced, why, sizeof why), 0);
		s.tile = CONV_TILE(s.k, s.stride, s.h_in, s.w_in, s.h_out, s.w_out);
		if (way == 2 && s.tile)
			s.tile = 2;
		if ((way == 2 && !conv_winograd_applies(s)) || (way == 3 && !conv_winograd_tile_applies(s, 4)))
			continue;
		choices = conv_choose(s, gemm_micro(), machine_last_level_bytes(), forced);
		check_shape_once(s, n);
	}
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

/* Stride-1 shapes whose pixels come in sixteens, with whole and partial
 * blocks of sixteen channels: where CONV_TRANSPOSE16 holds, the weight
 * gradient's operands are packed 16 x 16 (conv_pack_channels). */
static void test_conv_fast_matches_reference_on_shapes_of_sixteens(void **unused)
{
	(void)unused;
	static const int sides[] = {4, 8, 16, 32};
	for (int i = 0; i < SHAPES / 4; i++) {
		struct conv_shape s;
		s.k = random_int(0, 1) ? 3 : 1;
		s.stride = 1;
		s.c_in = random_int(0, 1) ? 16 * random_int(1, 3) : random_int(1, 48);
		s.c_out = random_int(0, 1) ? 16 * random_int(1, 3) : random_int(1, 48);
		s.h_in = s.h_out = sides[random_int(0, 2)];
		s.w_in = s.w_out = sides[random_int(0, 3)];
		check_shape(s, random_int(1, 3));
	}
}

/* The paper's shapes, which the emitted networks run, at a batch that
 * splits unevenly among threads. */
static void test_conv_fast_matches_reference_on_network_shapes(void **unused)
{
	(void)unused;
	static const int shapes[][8] = {
		{3, 32, 32, 16, 32, 32, 3, 1},   {16, 32, 32, 16, 32, 32, 3, 1}, {16, 32, 32, 32, 16, 16, 3, 2},
		{32, 16, 16, 32, 16, 16, 3, 1}, {64, 8, 8, 64, 8, 8, 3, 1},    {64, 32, 32, 16, 32, 32, 1, 1},
		{16, 32, 32, 64, 32, 32, 1, 1}, {64, 32, 32, 128, 16, 16, 1, 2}, {1, 28, 28, 16, 28, 28, 3, 1},
		{128, 16, 16, 32, 16, 16, 1, 1}, {256, 8, 8, 64, 8, 8, 1, 1}, /* 1x1 packed by panel, and whole */
	};
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		check_shape(conv_shape_of(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], shapes[i][4], shapes[i][5],
					  shapes[i][6], shapes[i][7]),
			    3);
}

/* BN + ReLU as a fused step runs them, against the unfused ops: the
 * forward pass with ReLU (the same values, bitwise), against BN forward
 * then ReLU forward; BN's backward through ReLU's mask, against ReLU
 * backward then BN backward. */
static void test_batch_norm_relu_backward_matches_unfused_ops(void **unused)
{
	(void)unused;
	for (int trial = 0; trial < 20; trial++) {
		int n = random_int(1, 5), channels = random_int(1, 24), pixels = random_int(1, 70);
		size_t count = (size_t)n * channels * pixels;
		real *in = random_tensor(count), *dactivated = random_tensor(count), *gamma = random_tensor(channels);
		real *beta = random_tensor(channels), *running_mean = random_tensor(channels);
		real *running_var = random_tensor(channels), *saved = random_tensor(BATCH_NORM_SAVED * (size_t)channels);
		real *normalised = random_tensor(count), *activated = random_tensor(count), *dnormalised = random_tensor(count);
		for (int c = 0; c < channels; c++)
			running_var[c] = (real)fabs((double)running_var[c]);
		real *din = random_tensor(count), *din_reference = copy_of(din, count);
		real *dgamma = random_tensor(channels), *dgamma_reference = copy_of(dgamma, channels);
		real *dbeta = random_tensor(channels), *dbeta_reference = copy_of(dbeta, channels);

		double *sums = malloc(sizeof(double) * BATCH_NORM_IMAGE_SUMS * count / pixels);
		assert_non_null(sums);
		batch_norm_forward(normalised, in, gamma, beta, running_mean, running_var, saved, n, 1, channels, pixels, sums, SUMS_TO_TAKE, &alone, false, NULL);
		relu_forward(activated, normalised, (long)count);
		real *fused = random_tensor(count);
		batch_norm_forward(fused, in, gamma, beta, running_mean, running_var, saved, n, 1, channels, pixels, sums, SUMS_TO_TAKE, &alone, true, NULL);
		assert_memory_equal(fused, activated, sizeof(real) * count);
		free(fused);
		free(sums);
		relu_backward(dnormalised, dactivated, activated, (long)count, GRADIENT_SET);
		batch_norm_backward(din_reference, dgamma_reference, dbeta_reference, dnormalised, in, gamma, saved, n,
				    channels, pixels, false, GRADIENT_ADD, &alone, NULL, batch_norm_scratch(channels), BATCH_NORM_SCRATCH(channels));
		batch_norm_backward(din, dgamma, dbeta, dactivated, in, gamma, saved, n, channels, pixels, true,
				    GRADIENT_ADD, &alone, NULL, batch_norm_scratch(channels), BATCH_NORM_SCRATCH(channels));
		double data = difference(din, din_reference, count);
		double parameters = fmax(difference(dgamma, dgamma_reference, channels),
					 difference(dbeta, dbeta_reference, channels));
		if (data > 64 * epsilon || parameters > 64 * epsilon)
			print_error("BN + ReLU backward, n %d, %d channels of %d pixels: relative differences "
				    "input gradient %.3g, parameter gradients %.3g\n",
				    n, channels, pixels, data, parameters);
		assert_true(data <= 64 * epsilon);
		assert_true(parameters <= 64 * epsilon);
		real *tensors[] = {in, dactivated, gamma, beta, running_mean, running_var, saved, normalised, activated,
				   dnormalised, din, din_reference, dgamma, dgamma_reference, dbeta, dbeta_reference};
		for (size_t t = 0; t < sizeof tensors / sizeof tensors[0]; t++)
			free(tensors[t]);
	}
}

#ifndef RESGEN_F64
/* A bf16 weight gradient that sums a batch of images in one product
 * (conv_weight_gradient_batch) against one product an image
 * (conv_weight_gradient_reference): bitwise, in both orders, on the
 * fastest path and the portable one, with and without a prologue, 7
 * images so that the last batch is short. Each shape batches in the
 * order(s) named, so the test cannot pass with no batch at all, but a
 * stride-1 3x3 on a path that reads B widened (AVX2's on a processor
 * without AVX-512), which writes its columns packed an image at a time. */
static void test_bf16_weight_gradient_batches_keep_the_bits(void **unused)
{
	(void)unused;
	static const struct {
		int shape[8];
		bool tiles, pairs; /* which orders batch it on every path */
		bool widened;      /* and whether it batches where the path reads B widened */
	} cases[] = {
		{{24, 7, 7, 40, 7, 7, 1, 1}, false, true, true},   /* 1x1 on 7x7: the tiles order's blocks would pad 49 to 64 */
		{{16, 7, 7, 24, 7, 7, 3, 1}, false, true, false},  /* 3x3 on an odd width */
		{{8, 14, 14, 16, 7, 7, 1, 2}, false, true, true},  /* a strided 1x1 */
		{{16, 16, 16, 24, 8, 8, 3, 2}, true, true, true},  /* a strided 3x3 to 8x8 */
		{{32, 8, 8, 16, 8, 8, 1, 1}, true, true, true},    /* 1x1 on 8x8 */
		{{16, 6, 10, 24, 6, 10, 1, 1}, true, true, true},  /* 60 pixels: the tiles order's blocks pad each image to 64 */
	};
	int n = 7, shares_before = kernel_shares;
	kernel_shares = 1; /* one share, one part: each sum's order is the images' alone */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const int *d = cases[i].shape;
		struct conv_shape s = conv_shape_of(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
		size_t in_count = (size_t)n * s.c_in * s.h_in * s.w_in, out_count = (size_t)n * s.c_out * s.h_out * s.w_out;
		size_t weight_count = (size_t)s.c_out * CONV_PATCH(s.c_in, s.k);
		size_t per_thread = CONV_SCRATCH(s.c_in, s.h_in, s.w_in, s.c_out, s.h_out, s.w_out, s.k);
		real *scratch = random_tensor(per_thread), *in = random_tensor(in_count), *dout = random_tensor(out_count);
		real *pre = random_tensor(2 * (size_t)s.c_in);
		for (int arithmetic = 0; arithmetic < BF16_ARITHMETIC_COUNT; arithmetic++) {
			enum bf16_path paths[] = {bf16_best_path((enum bf16_arithmetic)arithmetic), BF16_PORTABLE};
			for (int way = 0; way < 4; way++) {
				struct products p = {(signed char)paths[way / 2], (signed char)arithmetic};
				const real *prologue = way % 2 ? pre : NULL;
				bool batches = (arithmetic == BF16_TILES ? cases[i].tiles : cases[i].pairs) &&
					       (bf16_b_layout((enum bf16_path)p.path) != BF16_B_WIDENED || cases[i].widened);
				if (batches)
					assert_true(conv_weight_gradient_batch(s, p) > 1);
				struct conv_choices c = conv_choose(s, gemm_micro(), machine_last_level_bytes(), (struct choice_override){-1, -1, -1, -1, -1});
				conv_choose_products(&c, p);
				real *dweight = random_tensor(weight_count), *dweight_reference = copy_of(dweight, weight_count);
				int shares[1] = {0};
				#pragma omp parallel num_threads(1)
				conv_backward_weights(dweight, dout, in, prologue, n, s, &c, scratch, per_thread, shares);
				#pragma omp parallel num_threads(1)
				conv_weight_gradient_reference(dweight_reference, dout, in, prologue, n, s, scratch, per_thread, p);
				if (memcmp(dweight, dweight_reference, sizeof(real) * weight_count) != 0)
					fail_msg("%d x %dx%d -> %d, %dx%d stride %d: the %s order on the %s path%s, in batches of %d, differs",
						 s.c_in, s.h_in, s.w_in, s.c_out, s.k, s.k, s.stride, bf16_arithmetic_names[arithmetic],
						 bf16_path_names[p.path], prologue ? " with a prologue" : "", conv_weight_gradient_batch(s, p));
				free(dweight);
				free(dweight_reference);
			}
		}
		free(scratch);
		free(in);
		free(dout);
		free(pre);
	}
	kernel_shares = shares_before;
}

/* A bf16 1x1 weight gradient to fewer channels, swapped to X . dY^T
 * (conv_weight_gradient_swapped) where the path reads operands a caller
 * may write, against dY . X^T written plainly, one product an image, the
 * image activated first where there is a prologue: bitwise, in both
 * orders, on the fastest path and the portable one (which never swaps). */
static void test_bf16_pointwise_weight_gradient_swapped_keeps_the_bits(void **unused)
{
	(void)unused;
	static const int shapes[][8] = {
		{64, 12, 12, 32, 12, 12, 1, 1}, /* 144 pixels: one product an image */
		{96, 10, 14, 40, 10, 14, 1, 1}, /* 140, and 40 channels: blocks with lanes left over */
	};
	int n = 3, shares_before = kernel_shares;
	kernel_shares = 1;
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		const int *d = shapes[i];
		struct conv_shape s = conv_shape_of(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
		int pixels = s.h_out * s.w_out;
		size_t in_size = (size_t)s.c_in * pixels, out_size = (size_t)s.c_out * pixels, weight_count = (size_t)s.c_out * s.c_in;
		size_t per_thread = CONV_SCRATCH(s.c_in, s.h_in, s.w_in, s.c_out, s.h_out, s.w_out, s.k);
		real *scratch = random_tensor(per_thread), *in = random_tensor(n * in_size), *dout = random_tensor(n * out_size);
		real *pre = random_tensor(2 * (size_t)s.c_in), *activated = malloc(sizeof(real) * in_size);
		real *own = malloc(sizeof(real) * weight_count);
		for (int arithmetic = 0; arithmetic < BF16_ARITHMETIC_COUNT; arithmetic++) {
			enum bf16_path paths[] = {bf16_best_path((enum bf16_arithmetic)arithmetic), BF16_PORTABLE};
			for (int way = 0; way < 4; way++) {
				struct products p = {(signed char)paths[way / 2], (signed char)arithmetic};
				const real *prologue = way % 2 ? pre : NULL;
				assert_true(conv_weight_gradient_swapped(s, p) == (bf16_b_layout(paths[way / 2]) != BF16_B_OWN));
				real *dweight = random_tensor(weight_count), *expected = copy_of(dweight, weight_count);
				#pragma omp parallel num_threads(1)
				conv_weight_gradient_reference(dweight, dout, in, prologue, n, s, scratch, per_thread, p);
				memset(own, 0, sizeof(real) * weight_count);
				for (int image = 0; image < n; image++) {
					const real *x = in + image * in_size;
					for (int c = 0; c < s.c_in; c++)
						for (int q = 0; q < pixels; q++)
							activated[(size_t)c * pixels + q] = prologue ? conv_activated(x[(size_t)c * pixels + q], pre[c], pre[s.c_in + c])
												     : x[(size_t)c * pixels + q];
					products_gemm(p, 0, 1, s.c_out, s.c_in, pixels, dout + image * out_size, pixels, activated, pixels, 1, own, s.c_in);
				}
				for (size_t e = 0; e < weight_count; e++)
					expected[e] += (real)0 + own[e];
				if (memcmp(dweight, expected, sizeof(real) * weight_count) != 0)
					fail_msg("1x1 %d -> %d at %dx%d: the %s order on the %s path%s differs from dY . X^T", s.c_in, s.c_out, s.h_in,
						 s.w_in, bf16_arithmetic_names[arithmetic], bf16_path_names[p.path], prologue ? " with a prologue" : "");
				free(dweight);
				free(expected);
			}
		}
		free(scratch);
		free(in);
		free(dout);
		free(pre);
		free(activated);
		free(own);
	}
	kernel_shares = shares_before;
}
#endif

/* Max pooling's kernels against its definition, window by window
 * (max_pool_argmax): the same element forward and the same additions, in
 * the outputs' order, backward, so bitwise equal. Values drawn from a few,
 * so that windows tie, with zeros of both signs and NaNs of different
 * payloads; shapes whose rows take more than one run (MAX_POOL_RUN). */
static void test_max_pool_matches_the_definition(void **unused)
{
	(void)unused;
	static const int shapes[][4] = {/* k, stride, height, width */
					{3, 2, 112, 112}, {3, 2, 9, 9}, {3, 2, 10, 11}, {3, 2, 5, 150}, {3, 1, 6, 5},
					{5, 2, 11, 13}, {2, 2, 6, 7}, {3, 3, 8, 200}, {1, 1, 3, 4}, {3, 2, 1, 1}};
	const real values[] = {0, -(real)0, 1, -1, 2, (real)0.5, NAN, -NAN};
	for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
		int k = shapes[t][0], stride = shapes[t][1], pad = k / 2;
		struct max_pool_shape s = {.c = 3, .h_in = shapes[t][2], .w_in = shapes[t][3], .k = k, .stride = stride};
		s.h_out = (s.h_in + 2 * pad - k) / stride + 1;
		s.w_out = (s.w_in + 2 * pad - k) / stride + 1;
		int n = 2;
		size_t in_count = (size_t)n * s.c * s.h_in * s.w_in, out_count = (size_t)n * s.c * s.h_out * s.w_out;
		real *in = random_tensor(in_count), *dout = random_tensor(out_count), *out = random_tensor(out_count);
		real *expected = random_tensor(out_count), *din = calloc(in_count, sizeof(real));
		real *din_expected = calloc(in_count, sizeof(real));
		assert_non_null(din);
		assert_non_null(din_expected);
		for (size_t i = 0; i < in_count; i++)
			in[i] = values[next_random() % (t == 0 ? 6 : 8)]; /* the stem's shape without NaNs */
		for (size_t plane = 0; plane < (size_t)n * s.c; plane++) {
			const real *x = in + plane * s.h_in * s.w_in;
			for (int oy = 0; oy < s.h_out; oy++)
				for (int ox = 0; ox < s.w_out; ox++) {
					int at = max_pool_argmax(x, s, oy, ox);
					size_t o = (plane * s.h_out + oy) * s.w_out + ox;
					expected[o] = x[at];
					din_expected[plane * s.h_in * s.w_in + at] += dout[o];
				}
		}
		#pragma omp parallel
		max_pool_forward(out, in, n, s);
		#pragma omp parallel
		max_pool_backward(din, dout, in, n, s);
		if (memcmp(out, expected, out_count * sizeof(real)) != 0 || memcmp(din, din_expected, in_count * sizeof(real)) != 0)
			print_error("max pooling %dx%d, stride %d, over %dx%d: forward %s, backward %s\n", k, k, stride,
				    s.h_in, s.w_in, memcmp(out, expected, out_count * sizeof(real)) ? "differs" : "equal",
				    memcmp(din, din_expected, in_count * sizeof(real)) ? "differs" : "equal");
		assert_memory_equal(out, expected, out_count * sizeof(real));
		assert_memory_equal(din, din_expected, in_count * sizeof(real));
		real *tensors[] = {in, dout, out, expected, din, din_expected};
		for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++)
			free(tensors[i]);
	}
}

/* BN's backward with the mask of a ReLU after an addition after it, as
 * the fused end of an original unit runs it, against ReLU's backward, then
 * BN's: the same sums in the same order, so bitwise equal; the masked
 * gradient (the sum's) too. */
static void test_batch_norm_masked_backward_matches_relu_then_batch_norm(void **unused)
{
	(void)unused;
	for (int trial = 0; trial < 20; trial++) {
		int n = random_int(1, 5), channels = random_int(1, 24), pixels = random_int(1, 70);
		size_t count = (size_t)n * channels * pixels;
		enum gradient_write sum_write = trial % 2 ? GRADIENT_ADD : GRADIENT_SET;
		real *in = random_tensor(count), *dout = random_tensor(count), *out = random_tensor(count);
		real *gamma = random_tensor(channels), *saved = random_tensor(BATCH_NORM_SAVED * (size_t)channels);
		for (int c = 0; c < channels; c++)
			saved[channels + c] = (real)fabs((double)saved[channels + c]); /* 1/std */
		real *dsum = random_tensor(count), *dsum_reference = copy_of(dsum, count);
		real *din = random_tensor(count), *din_reference = copy_of(din, count);
		real *dgamma = random_tensor(channels), *dgamma_reference = copy_of(dgamma, channels);
		real *dbeta = random_tensor(channels), *dbeta_reference = copy_of(dbeta, channels);
		relu_backward(dsum_reference, dout, out, (long)count, sum_write);
		batch_norm_backward(din_reference, dgamma_reference, dbeta_reference, dsum_reference, in, gamma, saved, n,
				    channels, pixels, false, GRADIENT_SET, &alone, NULL, batch_norm_scratch(channels), BATCH_NORM_SCRATCH(channels));
		struct batch_norm_masked masked = {dsum, out, sum_write};
		batch_norm_backward(din, dgamma, dbeta, dout, in, gamma, saved, n, channels, pixels, false, GRADIENT_SET,
				    &alone, &masked, batch_norm_scratch(channels), BATCH_NORM_SCRATCH(channels));
		assert_memory_equal(dsum, dsum_reference, count * sizeof(real));
		assert_memory_equal(din, din_reference, count * sizeof(real));
		assert_memory_equal(dgamma, dgamma_reference, channels * sizeof(real));
		assert_memory_equal(dbeta, dbeta_reference, channels * sizeof(real));
		real *tensors[] = {in, dout, out, gamma, saved, dsum, dsum_reference, din, din_reference,
				   dgamma, dgamma_reference, dbeta, dbeta_reference};
		for (size_t t = 0; t < sizeof tensors / sizeof tensors[0]; t++)
			free(tensors[t]);
	}
}

/* BN's statistics, merged from sums per image, against a two-pass
 * computation in long double; on channels whose mean lies far from zero
 * (where one pass over x and x^2 would lose every digit in f32) and images
 * of one pixel. */
static void test_batch_norm_statistics_match_two_pass(void **unused)
{
	(void)unused;
	for (int trial = 0; trial < 20; trial++) {
		int n = random_int(1, 9), channels = random_int(1, 12), pixels = trial % 4 == 0 ? 1 : random_int(1, 300);
		size_t count = (size_t)n * channels * pixels;
		real *in = random_tensor(count), *gamma = random_tensor(channels), *beta = random_tensor(channels);
		real *running_mean = random_tensor(channels), *running_var = random_tensor(channels);
		real *saved = random_tensor(BATCH_NORM_SAVED * (size_t)channels);
		double *sums = malloc(sizeof(double) * BATCH_NORM_IMAGE_SUMS * n * channels);
		assert_non_null(sums);
		for (int c = 0; c < channels; c++) /* offsets up to 1000 standard deviations */
			for (int i = 0; i < n; i++)
				for (int p = 0; p < pixels; p++)
					in[((size_t)i * channels + c) * pixels + p] += (real)(c * 100);
		batch_norm_statistics(saved, in, gamma, beta, running_mean, running_var, n, 1, channels, pixels, sums, SUMS_TO_TAKE, &alone);
		for (int c = 0; c < channels; c++) {
			long double sum = 0, squares = 0, total = (long double)n * pixels;
			for (int i = 0; i < n; i++)
				for (int p = 0; p < pixels; p++)
					sum += in[((size_t)i * channels + c) * pixels + p];
			long double mean = sum / total;
			for (int i = 0; i < n; i++)
				for (int p = 0; p < pixels; p++) {
					long double d = in[((size_t)i * channels + c) * pixels + p] - mean;
					squares += d * d;
				}
			double inverse_std = (double)(1 / sqrtl(squares / total + 1e-5L));
			double mean_error = fabs((double)saved[c] - (double)mean) / fmax(fabs((double)mean), 1);
			double std_error = fabs((double)saved[channels + c] - inverse_std) / inverse_std;
			if (mean_error > 4 * epsilon || std_error > 64 * epsilon)
				print_error("BN statistics, n %d, channel %d of %d pixels: mean %.17g against %.17Lg, 1/std "
					    "%.17g against %.17g\n", n, c, pixels, (double)saved[c], mean,
					    (double)saved[channels + c], inverse_std);
			assert_true(mean_error <= 4 * epsilon);
			assert_true(std_error <= 64 * epsilon);
		}
		real *tensors[] = {in, gamma, beta, running_mean, running_var, saved};
		for (size_t t = 0; t < sizeof tensors / sizeof tensors[0]; t++)
			free(tensors[t]);
		free(sums);
	}
}

/* BN whose statistics span ranks (bn_sync), on ranks that all hold the same
 * images: the sums across them are twice one rank's (exact in binary), over
 * twice the count, so the statistics, running mean and input gradient are
 * bitwise those of one rank alone, and BN's parameter
 * gradients (each rank's part) too, with ReLU's mask or without. The
 * adding is done by a stand-in for MPI that doubles. */
static int additions;

static void add_an_identical_rank(double *values, int count)
{
	additions++;
	for (int i = 0; i < count; i++)
		values[i] *= 2;
}

static void test_batch_norm_synced_across_identical_ranks_matches_one(void **unused)
{
	(void)unused;
	const struct net_ranks two = {.count = 2, .bn_sync = 1, .add = add_an_identical_rank};
	for (int trial = 0; trial < 10; trial++) {
		int n = random_int(1, 5), channels = random_int(1, 24), pixels = random_int(1, 70);
		size_t count = (size_t)n * channels * pixels;
		real *in = random_tensor(count), *dout = random_tensor(count), *gamma = random_tensor(channels);
		real *beta = random_tensor(channels), *out[2], *saved[2], *running[2], *din[2], *dparams[2];
		double *sums = malloc(sizeof(double) * BATCH_NORM_IMAGE_SUMS * n * channels);
		assert_non_null(sums);
		for (int k = 0; k < 2; k++) {
			const struct net_ranks *ranks = k == 0 ? &alone : &two;
			out[k] = random_tensor(count);
			saved[k] = random_tensor(BATCH_NORM_SAVED * (size_t)channels);
			running[k] = calloc(2 * (size_t)channels, sizeof(real));
			din[k] = calloc(count, sizeof(real));
			dparams[k] = calloc(2 * (size_t)channels, sizeof(real));
			assert_true(running[k] && din[k] && dparams[k]);
			additions = 0;
			batch_norm_forward(out[k], in, gamma, beta, running[k], running[k] + channels, saved[k], n, 1, channels,
					   pixels, sums, SUMS_TO_TAKE, ranks, false, NULL);
			batch_norm_backward(din[k], dparams[k], dparams[k] + channels, dout, in, gamma, saved[k], n, channels,
					    pixels, trial % 2 == 1, GRADIENT_SET, ranks, NULL, batch_norm_scratch(channels),
					    BATCH_NORM_SCRATCH(channels));
			assert_int_equal(additions, k == 0 ? 0 : 3);
		}
		assert_memory_equal(out[0], out[1], count * sizeof(real));
		assert_memory_equal(saved[0], saved[1], 4 * (size_t)channels * sizeof(real));
		assert_memory_equal(running[0], running[1], (size_t)channels * sizeof(real)); /* means */
		assert_memory_equal(din[0], din[1], count * sizeof(real));
		assert_memory_equal(dparams[0], dparams[1], 2 * (size_t)channels * sizeof(real));
		real *tensors[] = {in, dout, gamma, beta, out[0], out[1], saved[0], saved[1], running[0], running[1],
				   din[0], din[1], dparams[0], dparams[1]};
		for (size_t t = 0; t < sizeof tensors / sizeof tensors[0]; t++)
			free(tensors[t]);
		free(sums);
	}
}

/* The choices conv_choose makes for known shapes and micro-kernels, each
 * worked out by hand from the rules of kernels/conv/choices.h. The
 * algorithm follows the shape alone, its steps counted in the rule's blocks
 * of 32 x 12 (skx's f32 kernel, column-stored: channels take panels of 12
 * and pixels of 32) whatever the kernel; what changes no bits (Winograd's
 * group, the sides of a 1x1 weight gradient) follows the kernel: zen3's
 * (and haswell's) f32 kernel of 6 x 16, row-stored blocks, so channels take
 * panels of 6 and pixels of 16, or skx's. */
static const struct gemm_micro zen3_f32 = {6, 16, 1}, skx_f32 = {32, 12, 0};
static const struct choice_override by_rule = {-1, -1, -1, -1, -1};

/* The same algorithm for every pass on either kernel. */
static void assert_same_algorithm(struct conv_choices a, struct conv_choices b)
{
	assert_int_equal(a.forward.method, b.forward.method);
	assert_int_equal(a.data.method, b.data.method);
	assert_int_equal(a.weight.method, b.weight.method);
}

static void test_conv_choices_follow_the_rules(void **unused)
{
	(void)unused;
	const size_t cache = (size_t)32 << 20;
	/* preact-110's 16 -> 16 at 32x32: F(4x4), 64 tiles an image fill 2 of
	 * the rule's panels of 32 (and 4 of zen3's 16); its weight gradient by
	 * Winograd, estimated 1.25 x 36 places x 2 blocks x (64 + 8) = 6480
	 * steps against the patches' 2 x 5 x 1024 = 10240 and the row split's
	 * 1.1 x 8 x 1088 */
	struct conv_shape s = conv_shape_of(16, 32, 32, 16, 32, 32, 3, 1);
	assert_int_equal(s.tile, 4);
	struct conv_choices c = conv_choose(s, &zen3_f32, cache, by_rule);
	assert_int_equal(c.forward.method, CONV_WINOGRAD);
	assert_int_equal(c.forward.group, 1);
	assert_int_equal(c.forward.tiles, 64);
	assert_int_equal(c.forward.panels, 4);
	assert_int_equal(c.data.method, CONV_WINOGRAD);
	assert_int_equal(c.weight.method, CONV_WEIGHT_WINOGRAD);
	assert_true(c.weight.winograd == 6480 && c.weight.patches == 10240);
	assert_true(fabs(c.weight.split - 1.1 * 8 * 1088) < 1e-6);
	assert_false(c.forward.forced || c.weight.forced);
	assert_same_algorithm(c, conv_choose(s, &skx_f32, cache, by_rule));
	/* without Winograd, the row split's 4 x 34 x 48 = 6528 steps are a
	 * tenth fewer than the direct convolution's 2 x 32 x 144 = 9216, on
	 * zen3's kernel too (which counts 26112 against 27648) */
	c = conv_choose(s, &zen3_f32, cache, (struct choice_override){0, -1, -1, -1, -1});
	assert_int_equal(c.forward.method, CONV_ROW_SPLIT);
	assert_true(c.forward.direct == 9216 && c.forward.split == 6528);
	assert_true(c.forward.forced);
	assert_int_equal(c.weight.method, CONV_WEIGHT_SPLIT);

	/* 64 channels at 8x8: 4 tiles of 4 x 4 an image, grouped to fill a
	 * panel: 4 images on zen3's 16 pixels, 8 (the most) on skx's 32 */
	s = conv_shape_of(64, 8, 8, 64, 8, 8, 3, 1);
	assert_int_equal(conv_choose(s, &zen3_f32, cache, by_rule).forward.group, 4);
	c = conv_choose(s, &skx_f32, cache, by_rule);
	assert_int_equal(c.forward.method, CONV_WINOGRAD);
	assert_int_equal(c.forward.group, 8);
	assert_int_equal(c.data.group, 8);

	/* a 1x1 16 -> 64 weight gradient: on skx, 2 x 2 blocks swapped
	 * against 6 x 1; on zen3, 11 x 1 against 4 x 3 swapped */
	s = conv_shape_of(16, 32, 32, 64, 32, 32, 1, 1);
	c = conv_choose(s, &skx_f32, cache, by_rule);
	assert_int_equal(c.weight.method, CONV_WEIGHT_1X1);
	assert_true(c.weight.swapped);
	assert_true(c.weight.swapped_blocks == 4 && c.weight.blocks == 6);
	c = conv_choose(s, &zen3_f32, cache, by_rule);
	assert_false(c.weight.swapped);
	assert_true(c.weight.blocks == 11 && c.weight.swapped_blocks == 12);
	assert_int_equal(c.forward.method, CONV_PLAIN);

	/* 16 channels at 7x7 on skx (odd sides: no Winograd): the row split's
	 * 4 x 2 x 48 = 384 steps against 2 x 2 x 144 = 576 */
	c = conv_choose(conv_shape_of(16, 7, 7, 16, 7, 7, 3, 1), &skx_f32, cache, by_rule);
	assert_int_equal(c.forward.method, CONV_ROW_SPLIT);
	assert_true(c.forward.split == 384 && c.forward.direct == 576);
	/* and on zen3's, whatever its own count (8 x 4 x 48 = 1536 against 3 x 4 x 144 = 1728) */
	assert_same_algorithm(c, conv_choose(conv_shape_of(16, 7, 7, 16, 7, 7, 3, 1), &zen3_f32, cache, by_rule));

	/* strided: the direct forward pass, the reference gradients */
	c = conv_choose(conv_shape_of(16, 32, 32, 32, 16, 16, 3, 2), &zen3_f32, cache, by_rule);
	assert_int_equal(c.forward.method, CONV_PLAIN);
	assert_int_equal(c.data.method, CONV_REFERENCE);
	assert_int_equal(c.weight.method, CONV_WEIGHT_REFERENCE);

	/* no usable micro-kernel: the reference kernels throughout */
	c = conv_choose(conv_shape_of(16, 32, 32, 16, 32, 32, 3, 1), NULL, cache, by_rule);
	assert_int_equal(c.forward.method, CONV_REFERENCE);
	assert_int_equal(c.data.method, CONV_REFERENCE);
	assert_int_equal(c.weight.method, CONV_WEIGHT_REFERENCE);

	/* streaming: where a pass's tensors exceed the cache; the gradient
	 * also where the threads are apart; forced either way */
	s = conv_shape_of(16, 32, 32, 64, 32, 32, 1, 1);
	c = conv_choose(s, &zen3_f32, cache, by_rule);
	size_t image = (size_t)(16 + 64) * 32 * 32;
	assert_true(conv_streams(&c, 128 * image));  /* 40 MiB in f32 */
	assert_false(conv_streams(&c, 32 * image));  /* 10 MiB in f32, 20 in f64 */
	struct conv_choices unknown = conv_choose(s, &zen3_f32, 0, by_rule);
	assert_false(conv_streams(&unknown, 128 * image)); /* no cache size known */
	c = conv_choose(s, &zen3_f32, cache, (struct choice_override){-1, -1, -1, -1, 1});
	assert_true(conv_streams(&c, 1) && conv_streams_gradient(&c, 1));
	c = conv_choose(s, &zen3_f32, cache, (struct choice_override){-1, -1, -1, -1, 0});
	assert_false(conv_streams(&c, 128 * image) || conv_streams_gradient(&c, 128 * image));
}

/* The algorithms the generator compiles each instance for (the rules'
 * constant expressions, kernels/sizes.h) are those conv_choose makes by
 * rule, on either kind of kernel, over shapes of every kind the networks
 * have; and an instance refuses a choice forced to another (conv_compiled),
 * except in a build of every algorithm, as this test's is. */
static void test_conv_rules_are_the_choices(void **unused)
{
	(void)unused;
	static const int channels[] = {3, 16, 32, 64, 128, 256, 512};
	static const int sides[] = {4, 7, 8, 14, 16, 28, 32, 56, 112};
	static const int kernels[] = {1, 3, 7};
	int checked = 0, algorithms[4] = {0}, weight_algorithms[5] = {0};
	for (size_t a = 0; a < sizeof channels / sizeof *channels; a++)
		for (size_t b = 0; b < sizeof channels / sizeof *channels; b++)
			for (size_t h = 0; h < sizeof sides / sizeof *sides; h++)
				for (size_t k = 0; k < sizeof kernels / sizeof *kernels; k++)
					for (int stride = 1; stride <= 2; stride++) {
						int side = sides[h], out = (side + stride - 1) / stride;
						struct conv_shape s = conv_shape_of(
							channels[a], side, side, channels[b], out, out, kernels[k], stride);
						struct conv_choices c = conv_choose(s, &skx_f32, 0, by_rule);
						assert_int_equal(c.forward.method, s.forward);
						assert_int_equal(c.data.method, s.data);
						assert_int_equal(c.weight.method, s.weight);
						assert_same_algorithm(c, conv_choose(s, &zen3_f32, 0, by_rule));
						const char *refused = NULL;
						conv_compiled(&c, s, "rule", &refused);
						assert_null(refused);
						algorithms[s.forward]++;
						weight_algorithms[s.weight]++;
						checked++;
					}
	/* every algorithm is some shape's rule */
	assert_true(algorithms[CONV_PLAIN] && algorithms[CONV_ROW_SPLIT] && algorithms[CONV_WINOGRAD]);
	assert_true(weight_algorithms[CONV_WEIGHT_PATCHES] && weight_algorithms[CONV_WEIGHT_SPLIT] &&
		    weight_algorithms[CONV_WEIGHT_WINOGRAD] && weight_algorithms[CONV_WEIGHT_1X1] &&
		    weight_algorithms[CONV_WEIGHT_REFERENCE]);
	assert_int_equal(checked, 7 * 7 * 9 * 3 * 2);
}

/* RESGEN_CHOICES as machine_override_parse reads it: NAME=on|off|rule by
 * commas; anything else refused, naming where. */
static void test_override_is_read_or_refused(void **unused)
{
	(void)unused;
	struct choice_override o;
	char why[256];
	assert_int_equal(machine_override_parse("winograd=off,stream=on,swap=rule", &o, why, sizeof why), 0);
	assert_true(o.winograd == 0 && o.stream == 1 && o.swap == -1 && o.row_split == -1 && o.weight_split == -1);
	assert_int_equal(machine_override_parse("", &o, why, sizeof why), 0);
	assert_true(o.winograd == -1 && o.stream == -1);
	assert_int_equal(machine_override_parse("row_split=on,weight_split=yes", &o, why, sizeof why), -1);
	assert_string_equal(why, "RESGEN_CHOICES, character 14: 'weight_split=yes' is not a choice; expected NAME=on, "
				 "off or rule, NAME one of winograd, row_split, weight_split, swap, stream, separated by commas");
	assert_int_equal(machine_override_parse("winograd", &o, why, sizeof why), -1);
	assert_int_equal(machine_override_parse("tile=on", &o, why, sizeof why), -1);
}

/* The cores' round trip (runtime/machine/machine.c), which decides where data
 * gradients stream: with two threads, every trip made within the limit
 * (an unfinished exchange reads as the whole time spent, 5e9 ns here);
 * nothing measured with one thread, or inside a parallel region, where
 * the partner could never join. */
static void test_machine_round_trip(void **unused)
{
	(void)unused;
	int threads = omp_get_max_threads();
	omp_set_num_threads(2);
	double trip = machine_round_trip_ns(100, 5.0);
	assert_true(trip > 0 && trip < 5e9 / 100);
	double inside = -1;
	#pragma omp parallel num_threads(2)
	{
		#pragma omp master
		inside = machine_round_trip_ns(100, 5.0);
	}
	assert_true(inside == 0);
	omp_set_num_threads(1);
	assert_true(machine_round_trip_ns(100, 5.0) == 0);
	omp_set_num_threads(threads);
}

/* Kernels of the other preference, that this processor runs: skx's
 * (AVX-512, column-stored; a Zen 4 runs zen3's by runtime/machine/gemm.c's rule,
 * and so tests skx's here), else the portable sandybridge kernels (AVX,
 * column-stored), or haswell's (AVX2 and FMA, row-stored). */
static const char *other_kernels(void)
{
	const struct gemm_micro *micro = gemm_micro();
	__builtin_cpu_init();
	if (micro && micro->prefers_rows && machine_has_skx_extensions())
		return "skx";
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
		cmocka_unit_test(test_conv_fast_matches_reference_on_shapes_of_sixteens),
		cmocka_unit_test(test_conv_fast_matches_reference_on_network_shapes),
		cmocka_unit_test(test_batch_norm_relu_backward_matches_unfused_ops),
		cmocka_unit_test(test_batch_norm_masked_backward_matches_relu_then_batch_norm),
		cmocka_unit_test(test_batch_norm_statistics_match_two_pass),
		cmocka_unit_test(test_max_pool_matches_the_definition),
#ifndef RESGEN_F64
		cmocka_unit_test(test_bf16_weight_gradient_batches_keep_the_bits),
		cmocka_unit_test(test_bf16_pointwise_weight_gradient_swapped_keeps_the_bits),
#endif
		cmocka_unit_test(test_batch_norm_synced_across_identical_ranks_matches_one),
		cmocka_unit_test(test_machine_round_trip),
		cmocka_unit_test(test_conv_choices_follow_the_rules),
		cmocka_unit_test(test_conv_rules_are_the_choices),
		cmocka_unit_test(test_override_is_read_or_refused),
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
