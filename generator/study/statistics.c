/* Student's t and the tests built on it; see statistics.h. */
#include "statistics.h"

#include <math.h>
#include <stdbool.h>

/* The continued fraction of the regularised incomplete beta function
 * (modified Lentz), which converges fast for x < (a + 1) / (a + b + 2). */
static double beta_fraction(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1, d = 1 - (a + b) * x / (a + 1);
	d = 1 / (fabs(d) < tiny ? tiny : d);
	double h = d;
	for (int m = 1; m <= 300; m++) {
		for (int odd = 0; odd < 2; odd++) {
			double k = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
				       : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
			d = 1 + k * d;
			d = 1 / (fabs(d) < tiny ? tiny : d);
			c = 1 + k / c;
			c = fabs(c) < tiny ? tiny : c;
			h *= d * c;
			if (odd && fabs(d * c - 1) < 1e-15)
				return h;
		}
	}
	return h;
}

/* I_x(a, b), the regularised incomplete beta function. */
static double incomplete_beta(double a, double b, double x)
{
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_fraction(a, b, x) / a;
	return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

double student_cdf(double t, double df)
{
	double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
	return t > 0 ? 1 - tail : tail;
}

double student_quantile_975(double df)
{
	double low = 0, high = 1e3;
	for (int i = 0; i < 200; i++) {
		double middle = (low + high) / 2;
		if (student_cdf(middle, df) < 0.975)
			low = middle;
		else
			high = middle;
	}
	return (low + high) / 2;
}

/* The mean and the sample variance; values that are all equal have no
 * variance at all, not the rounding of their mean (2/3 three times). */
static void moments(const double *x, int n, double *mean, double *variance)
{
	*mean = 0;
	*variance = 0;
	bool equal = true;
	for (int i = 0; i < n; i++) {
		*mean += x[i] / n;
		equal = equal && x[i] == x[0];
	}
	if (equal) {
		*mean = n > 0 ? x[0] : 0;
		return;
	}
	for (int i = 0; n > 1 && i < n; i++)
		*variance += (x[i] - *mean) * (x[i] - *mean) / (n - 1);
}

void mean_and_std(const double *x, int n, double *mean, double *std)
{
	double variance;
	moments(x, n, mean, &variance);
	*std = sqrt(variance);
}

/* The interval and the two-sided test of a difference with its standard
 * error and degrees of freedom. */
static struct comparison from_error(double difference, double error, double df)
{
	struct comparison c = {.difference = difference, .low = difference, .high = difference, .df = df};
	c.no_spread = df > 0 && error == 0;
	if (!(error > 0) || !(df > 0))
		return c;
	double half = student_quantile_975(df) * error;
	c.valid = 1;
	c.low = difference - half;
	c.high = difference + half;
	c.t = difference / error;
	c.p = 2 * student_cdf(-fabs(c.t), df);
	return c;
}

struct comparison mean_interval(const double *x, int n)
{
	double mean, variance;
	moments(x, n, &mean, &variance);
	return from_error(mean, n > 1 ? sqrt(variance / n) : 0, n - 1);
}

struct comparison welch(const double *a, int na, const double *b, int nb)
{
	double ma, va, mb, vb;
	moments(a, na, &ma, &va);
	moments(b, nb, &mb, &vb);
	if (na < 2 || nb < 2)
		return (struct comparison){.difference = ma - mb, .low = ma - mb, .high = ma - mb};
	double sa = va / na, sb = vb / nb;
	double df = (sa + sb) * (sa + sb) / (sa * sa / (na - 1) + sb * sb / (nb - 1));
	return from_error(ma - mb, sqrt(sa + sb), df);
}

struct comparison paired(const long *a, const long *b, int n, long images)
{
	double d[64];
	n = n < 64 ? n : 64;
	for (int i = 0; i < n; i++)
		d[i] = 100.0 * (double)(a[i] - b[i]) / (double)images;
	return mean_interval(d, n);
}

void holm(const double *p, int n, double *adjusted)
{
	int order[64];
	n = n < 64 ? n : 64;
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = 1; i < n; i++) /* ascending p; ties keep their order */
		for (int j = i; j > 0 && p[order[j]] < p[order[j - 1]]; j--) {
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	double most = 0;
	for (int k = 0; k < n; k++) {
		double scaled = fmin(1, (n - k) * p[order[k]]);
		most = fmax(most, scaled);
		adjusted[order[k]] = most;
	}
}
