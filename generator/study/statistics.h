/* The statistics a study's report gives over its seeds: Student's t for a
 * mean's 95% interval, Welch's t for two variants' difference, and the
 * paired t where the seeds pair the runs; Holm's correction for several. */
#ifndef RESGEN_STATISTICS_H
#define RESGEN_STATISTICS_H

/* The probability that Student's t with df degrees of freedom is at most
 * t, and the t below which 97.5% of it lies (the 95% interval's half
 * width in standard errors). */
double student_cdf(double t, double df);
double student_quantile_975(double df);

/* A difference of means and what the seeds say of it. */
struct comparison {
	int valid;          /* enough seeds and spread for a test */
	int no_spread;      /* seeds enough, but every value the same: no test */
	double difference;  /* the mean of a less the mean of b */
	double low, high;   /* its 95% interval */
	double t, df, p;    /* the test, two-sided */
};

/* A sample's mean and standard deviation (0 for one value, and for
 * values all equal). */
void mean_and_std(const double *x, int n, double *mean, double *std);
/* A sample's mean and its 95% interval (valid with two values or more). */
struct comparison mean_interval(const double *x, int n);
/* Welch's t of a against b (unequal variances). */
struct comparison welch(const double *a, int na, const double *b, int nb);
/* The paired t of a against b, errors as counts of images (of images in
 * all, the same for both): a[i] and b[i] from one seed. The differences,
 * in points of %, are taken of the counts, so that pairs whose counts
 * differ alike give equal differences, not differences equal up to
 * rounding (whose spread of 1e-15 would give t = 1e15). */
struct comparison paired(const long *a, const long *b, int n, long images);

/* Holm's step-down adjustment of n p values for their number: each
 * adjusted p is at least its own (capped at 1), and one below a level
 * rejects at that level with the family's error held to it. */
void holm(const double *p, int n, double *adjusted);

#endif
