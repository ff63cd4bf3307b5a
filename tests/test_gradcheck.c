/* Gradient check of one emitted network, built in double precision: every
 * parameter gradient and the input gradient from net_backward against
 * central finite differences of the loss from net_forward.
 *
 * Tolerance: the relative error of each tensor, |g - fd| / max(|g|, |fd|)
 * in the Euclidean norm, must stay below 1e-6. With h = 1e-5 the truncation
 * error of central differences is O(h^2) ~ 1e-10 relative and the rounding
 * error O(eps / h) ~ 1e-11; a wrong term is off by far more than 1e-6.
 * A gradient that is truly zero (BN's beta where another BN follows and
 * removes any constant) leaves two norms of rounding noise: the scale has a
 * floor of 1e-4, so such tensors must agree to 1e-10 absolute, which is
 * still a thousand times below any real gradient here.
 *
 * ReLU kinks: where a ReLU input lies within reach of the step, a quotient
 * that straddles the kink is wrong by O(1) for every parameter upstream.
 * So each element is measured three ways: central, and second-order
 * one-sided from the right and from the left (all O(h^2)). Where the three
 * agree, the point is smooth. Where they do not, a kink lies within 2h; the
 * one-sided estimate that agrees with itself at a step ten times smaller
 * comes from the clean side and is used; failing that, the step shrinks
 * tenfold and all is tried again. The count of such elements is printed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net_api.h"
#include "rng.h"
#include "state.h"
#include "threads.h"

enum { BATCH = 3 };
static const double step_size = 1e-5;
static const double tolerance = 1e-6;

_Static_assert(sizeof(real) == sizeof(double), "the gradient check needs the f64 build");

static struct net_state state;
static int labels[BATCH];

static double loss(void)
{
	net_forward(&state, BATCH);
	return state.loss;
}

static long one_sided; /* elements next to a kink, measured from one side */

/* Equal within the O(h^2) error of the formulas, or the rounding floor. */
static bool close(double a, double b) { return fabs(a - b) <= 1e-7 * fmax(fabs(a), fabs(b)) + 1e-8; }

static double loss_at(real *value, real saved, double offset)
{
	*value = saved + offset;
	double result = loss();
	*value = saved;
	return result;
}

/* Second-order one-sided derivative, from the right (side 1) or left (-1),
 * given the loss one step h that way (near). */
static double one_sided_quotient(real *value, real saved, double base, double near, double h, int side)
{
	double far = loss_at(value, saved, side * 2 * h);
	return side * (-3 * base + 4 * near - far) / (2 * h);
}

/* dL/d(*value) by finite differences, at a point where the loss is base.
 * The losses one step either side serve the central and the one-sided
 * quotients both. */
static double numeric_derivative(real *value, double base)
{
	real saved = *value;
	double central = 0;
	bool counted = false;
	for (double h = step_size; h > 1e-9; h /= 10) {
		double plus = loss_at(value, saved, h), minus = loss_at(value, saved, -h);
		central = (plus - minus) / (2 * h);
		double right = one_sided_quotient(value, saved, base, plus, h, 1);
		double left = one_sided_quotient(value, saved, base, minus, h, -1);
		if (close(central, right) && close(central, left))
			return central;
		if (!counted) {
			one_sided++;
			counted = true;
		}
		double smaller = h / 10;
		if (close(right, one_sided_quotient(value, saved, base, loss_at(value, saved, smaller), smaller, 1)))
			return right;
		if (close(left, one_sided_quotient(value, saved, base, loss_at(value, saved, -smaller), smaller, -1)))
			return left;
	}
	return central; /* no clean side at any step: let the check judge */
}

/* Relative error between analytic and numeric gradients of values[0..count). */
static double check_values(real *values, const real *analytic, long count, double base)
{
	double difference = 0, analytic_norm = 0, numeric_norm = 0;
	for (long j = 0; j < count; j++) {
		double numeric = numeric_derivative(&values[j], base);
		difference += (analytic[j] - numeric) * (analytic[j] - numeric);
		analytic_norm += analytic[j] * analytic[j];
		numeric_norm += numeric * numeric;
	}
	double scale = fmax(fmax(sqrt(analytic_norm), sqrt(numeric_norm)), 1e-4);
	return sqrt(difference) / scale;
}

static void test_gradients_match_finite_differences(void **unused)
{
	(void)unused;
	char error[512];
	threads_setup(2, 0);
	assert_int_equal(state_create(&state, BATCH, 2, error, sizeof error), 0);
	state_init(&state, 7);
	/* Move every parameter off its initial value (BN gamma 1, beta 0...)
	 * so that no term of the gradient is hidden by a special point. */
	struct rng rng;
	rng_seed(&rng, 11, 0);
	for (long j = 0; j < net_info.param_count; j++)
		state.params[j] += 0.2 * rng_normal(&rng);
	long image = (long)net_info.channels * net_info.height * net_info.width;
	real *input = state_input(&state, BATCH);
	for (long j = 0; j < BATCH * image; j++)
		input[j] = rng_normal(&rng);
	for (int i = 0; i < BATCH; i++)
		labels[i] = i % net_info.classes;
	state.labels = labels;
	state.training = 1;
	state.input_gradient = 1; /* checked below, as a dump asks for it */

	double base = loss();
	state_zero_grads(&state);
	net_backward(&state, BATCH);
	real *grads = malloc((size_t)net_info.param_count * sizeof *grads);
	real *input_gradient = malloc((size_t)(BATCH * image) * sizeof *input_gradient);
	assert_non_null(grads);
	assert_non_null(input_gradient);
	memcpy(grads, state.grads, (size_t)net_info.param_count * sizeof *grads);
	memcpy(input_gradient, state_input_gradient(&state, BATCH),
	       (size_t)(BATCH * image) * sizeof *input_gradient);

	int failures = 0, checked = 0;
	double worst = 0;
	const char *worst_name = "input";
	for (int i = 0; i < net_info.param_tensor_count; i++) {
		const struct net_param *p = &net_info.params[i];
		if (!p->trained)
			continue;
		double e = check_values(state.params + p->offset, grads + p->offset, p->count, base);
		checked++;
		if (e > worst) {
			worst = e;
			worst_name = p->name;
		}
		if (!(e < tolerance)) {
			print_error("%s %s: relative error %.3g, above %.0e\n", net_info.name, p->name, e,
				    tolerance);
			failures++;
		}
	}
	double e = check_values(input, input_gradient, BATCH * image, base);
	if (!(e < tolerance)) {
		print_error("%s input: relative error %.3g, above %.0e\n", net_info.name, e, tolerance);
		failures++;
	}
	print_message("%s: %d parameter tensors and the input checked; worst %.2e (%s), input "
		      "%.2e; %ld elements measured one-sided beside a kink\n",
		      net_info.name, checked, worst, worst_name, e, one_sided);
	free(grads);
	free(input_gradient);
	state_free(&state);
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gradients_match_finite_differences),
	};
	return cmocka_run_group_tests_name(net_info.name, tests, NULL, NULL);
}
