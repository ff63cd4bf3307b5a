/* Batch normalisation over (n, H, W) per channel. Training uses the batch's
 * statistics, saved for backward as (mean, 1/std) per channel with the scale
 * and shift BN applies (a fused convolution's prologue reads those), and moves the
 * running statistics (momentum 0.1, unbiased variance, as PyTorch); evaluation
 * uses the running statistics. The batch's statistics come from sums per image
 * (BATCH_NORM_IMAGE_SUMS doubles a channel), which the convolution that
 * produces BN's input takes as it finishes each image (its epilogue) or BN
 * takes itself; each thread adds those of its share of the images (the
 * ones it took them of) in image order, then the threads' parts are added
 * in thread order, so a fixed thread count adds in the same order every
 * run, as BN's backward pass does. Sums run in BATCH_NORM_LANES independent
 * partial sums over one image's pixels (which the compiler vectorises without
 * reordering any sum), added in a fixed order and then in double, so f32
 * statistics are not hurt by long reductions. With the batch split across
 * ranks and bn_sync set (net_api.h), the channels' sums of each rank are
 * added across the ranks (the sum, then the squares about the mean it gives;
 * in backward, the two sums of dx), so that every rank normalises with the
 * whole batch's statistics; BN's own parameter gradients stay this rank's
 * part, which the sum of the gradients across the ranks completes. */
#ifndef RESGEN_KERNELS_BATCH_NORM_H
#define RESGEN_KERNELS_BATCH_NORM_H

#include "kernels/common.h"

static const double batch_norm_epsilon = 1e-5, batch_norm_momentum = 0.1;

/* BATCH_NORM_LANES reals as one vector: one register or two, as the
 * machine has. */
enum { BATCH_NORM_LANES = 16 };
typedef real batch_norm_vector __attribute__((vector_size(BATCH_NORM_LANES * sizeof(real))));

/* The sums over one image's pixels of a channel: of x - shift and of its
 * square, or (dy given) of dy and of dy (x - shift). With relu, dy counts
 * only where BN's output x * relu_scale + relu_shift is positive: where the
 * ReLU after it passed the gradient. */
KERNEL_HELPER void batch_norm_sums(const real *x, const real *dy, real shift, bool relu, real relu_scale, real relu_shift, int pixels, double *first, double *second)
{
	typedef __typeof__((batch_norm_vector){0} > (batch_norm_vector){0}) mask;
	batch_norm_vector a = {0}, b = {0};
	int p = 0;
	for (; p + BATCH_NORM_LANES <= pixels; p += BATCH_NORM_LANES) {
		batch_norm_vector value, centred, weight;
		memcpy(&value, x + p, sizeof value);
		centred = value - shift;
		weight = centred;
		if (dy)
			memcpy(&weight, dy + p, sizeof weight);
		if (relu)
			weight = (batch_norm_vector)((mask)weight & (value * relu_scale + relu_shift > 0));
		a += weight;
		b += weight * centred;
	}
	/* the last pixels, fewer than a vector's lanes: the bound says so;
	 * counted by p alone, GCC (-O3, helpers out of line) warned of a
	 * lane past the vector's end */
	for (int l = 0; l < pixels - p; l++) {
		real centred = x[p + l] - shift, weight = dy ? dy[p + l] : centred;
		if (relu && !(x[p + l] * relu_scale + relu_shift > 0))
			weight = 0;
		a[l] += weight;
		b[l] += weight * centred;
	}
	real sum_a = 0, sum_b = 0;
	for (int l = 0; l < BATCH_NORM_LANES; l++) {
		sum_a += a[l];
		sum_b += b[l];
	}
	*first += sum_a;
	*second += sum_b;
}

/* Whether BN's sums of each image are there already, taken by the
 * convolution before it as its epilogue, or BN takes them itself; or
 * (SUMS_SAVED, a fused step run again in backward: lower.h) BN's saved
 * values are this step's already, and the step runs its convolution only. */
enum batch_norm_sums { SUMS_TO_TAKE, SUMS_TAKEN, SUMS_SAVED };

/* Per channel of one image, at sums + BATCH_NORM_IMAGE_SUMS * c: a value
 * of the channel (its first, the shift) and the sums over the image of
 * x - shift and of its square. */
KERNEL_HELPER void batch_norm_channel_sums(double *own, const real *x, int pixels)
{
	own[0] = x[0];
	own[1] = own[2] = 0;
	batch_norm_sums(x, NULL, x[0], false, 0, 0, pixels, &own[1], &own[2]);
}

KERNEL_HELPER void batch_norm_image_sums(double *sums, const real *image, int channels, int pixels)
{
	for (int c = 0; c < channels; c++)
		batch_norm_channel_sums(sums + BATCH_NORM_IMAGE_SUMS * c, image + (size_t)c * pixels, pixels);
}

/* Channel c's sum of x over images [first, last), and of (x - mean)^2,
 * from the images' sums (batch_norm_image_sums). Each image's shift
 * keeps digits where the mean lies many standard deviations from zero; a
 * rounding of the mean changes the sum of squares only to second order. */
static inline double batch_norm_sum(const double *sums, int first, int last, int channels, int pixels, int c)
{
	double sum = 0;
	for (int i = first; i < last; i++) {
		const double *own = sums + BATCH_NORM_IMAGE_SUMS * ((size_t)i * channels + c);
		sum += own[0] * pixels + own[1];
	}
	return sum;
}

static inline double batch_norm_squares(const double *sums, int first, int last, int channels, int pixels, int c, double mean)
{
	/* each image's squared deviations about its own mean, plus its
	 * pixels' count times its mean's squared deviation from the batch's */
	double squares = 0;
	for (int i = first; i < last; i++) {
		const double *own = sums + BATCH_NORM_IMAGE_SUMS * ((size_t)i * channels + c);
		double centred_mean = own[1] / pixels, deviation = own[0] - mean + centred_mean;
		double image_squares = own[2] - own[1] * centred_mean;
		squares += (image_squares > 0 ? image_squares : 0) + pixels * deviation * deviation;
	}
	return squares;
}

/* Sums over the images kept in parts, each over some of the images (a
 * share, or one image): count parts, stride doubles apart. */
struct batch_norm_parts {
	const double *first;
	size_t stride;
	int count;
};

/* to[j] = the sum of the parts' values j, added in the parts' order, for
 * j < values; the values shared among the threads (an orphaned omp for). */
KERNEL_HELPER void batch_norm_add_parts(double *to, struct batch_norm_parts parts, int values)
{
	#pragma omp for schedule(static)
	for (int j = 0; j < values; j++) {
		double sum = 0;
		for (int t = 0; t < parts.count; t++)
			sum += parts.first[(size_t)t * parts.stride + j];
		to[j] = sum;
	}
}

/* Whether BN's statistics span the ranks: their sums are added across them. */
static inline bool batch_norm_synced(const struct net_ranks *ranks)
{
	return ranks->bn_sync && ranks->count > 1;
}

/* Inside a parallel region, once the threads have written values (the
 * barrier of an omp for): one thread adds them across the ranks, in
 * place, while the others wait. */
KERNEL_HELPER void batch_norm_add_across(const struct net_ranks *ranks, double *values, int count)
{
	#pragma omp master
	ranks->add(values, count);
	#pragma omp barrier
}

/* saved = (mean, 1/std, scale, shift) per channel, BN's output being
 * x * scale + shift: the batch's statistics in training (the running ones
 * moved towards them), the running statistics in evaluation. In training,
 * BN's statistics come from n images' batch_norm_image_sums at sums, taken
 * here first unless given is SUMS_TAKEN. */
KERNEL_ENTRY(void, batch_norm_statistics, (real *saved, const real *in, const real *gamma, const real *beta, real *running_mean, real *running_var, int n, int training, int channels, int pixels, double *sums, enum batch_norm_sums given, const struct net_ranks *ranks))
{
	double started = profile_clock();
	bool synced = training && batch_norm_synced(ranks);
	double count = (double)n * pixels * (synced ? ranks->count : 1);
	double totals[2 * channels]; /* per channel: the sum, then the squares about the mean */
	/* each share's part of a pass's sums, on cache lines of its own */
	int shares = share_count();
	size_t part_stride = ((size_t)channels + 7) / 8 * 8;
	double parts_room[training ? shares * part_stride + 8 : 1];
	double *parts = (double *)(((uintptr_t)parts_room + 63) / 64 * 64);
	int claims[2 * shares]; /* the shares of the two passes (share_claim) */
	memset(claims, 0, sizeof claims);
	#pragma omp parallel
	{
		if (training && given == SUMS_TO_TAKE) {
			#pragma omp for schedule(static)
			for (int i = 0; i < n; i++)
				batch_norm_image_sums(sums + (size_t)BATCH_NORM_IMAGE_SUMS * i * channels, in + (size_t)i * channels * pixels, channels, pixels);
		}
		if (training) {
			/* two passes over the images' sums, the mean, then
			 * the squares about it: each first per share, the
			 * thread's own first (whose sums it took), then the
			 * shares' parts in share order. Where the two cores
			 * have an L3 each, the sums read by the other thread
			 * cost the convolution that writes the next BN's a
			 * fetch back of each line (ResNet-1001,
			 * docs/performance.md). */
			struct batch_norm_parts shares_parts = {parts, part_stride, shares};
			int share, looked = 0, first, last;
			while ((share = share_claim(claims, &looked)) >= 0) {
				thread_share_of(n, share, &first, &last);
				for (int c = 0; c < channels; c++)
					parts[share * part_stride + c] = batch_norm_sum(sums, first, last, channels, pixels, c);
			}
			#pragma omp barrier
			batch_norm_add_parts(totals, shares_parts, channels);
			if (synced)
				batch_norm_add_across(ranks, totals, channels);
			looked = 0;
			while ((share = share_claim(claims + shares, &looked)) >= 0) {
				thread_share_of(n, share, &first, &last);
				for (int c = 0; c < channels; c++)
					parts[share * part_stride + c] = batch_norm_squares(sums, first, last, channels, pixels, c, totals[c] / count);
			}
			#pragma omp barrier
			batch_norm_add_parts(totals + channels, shares_parts, channels);
			if (synced)
				batch_norm_add_across(ranks, totals + channels, channels);
		}
		#pragma omp for schedule(static)
		for (int c = 0; c < channels; c++) {
			double mean, inverse_std;
			if (training) {
				mean = totals[c] / count;
				double variance = totals[channels + c] / count;
				inverse_std = 1 / sqrt(variance + batch_norm_epsilon);
				double unbiased = count > 1 ? variance * count / (count - 1) : variance;
				running_mean[c] = (real)((1 - batch_norm_momentum) * running_mean[c] + batch_norm_momentum * mean);
				running_var[c] = (real)((1 - batch_norm_momentum) * running_var[c] + batch_norm_momentum * unbiased);
			} else {
				mean = running_mean[c];
				inverse_std = 1 / sqrt((double)running_var[c] + batch_norm_epsilon);
			}
			/* y = gamma (x - mean) / std + beta = x * scale + shift */
			saved[c] = (real)mean;
			saved[channels + c] = (real)inverse_std;
			saved[2 * channels + c] = (real)(gamma[c] * inverse_std);
			saved[3 * channels + c] = (real)(beta[c] - mean * gamma[c] * inverse_std);
		}
	}
	profile_add(PROFILE_ELEMENTWISE, started);
}

/* out = BN(in); with relu, out = relu(BN(in)) (templates/ops/batch_norm_relu.c.tmpl);
 * with shortcut (not NULL) too, out = relu(shortcut + BN(in)), the end of
 * an original unit (templates/ops/batch_norm_add_relu.c.tmpl). */
KERNEL_ENTRY(void, batch_norm_forward, (real *out, const real *in, const real *gamma, const real *beta, real *running_mean, real *running_var, real *saved, int n, int training, int channels, int pixels, double *sums, enum batch_norm_sums given, const struct net_ranks *ranks, bool relu, const real *shortcut))
{
	batch_norm_statistics(saved, in, gamma, beta, running_mean, running_var, n, training, channels, pixels, sums, given, ranks);
	double started = profile_clock();
	#pragma omp parallel for schedule(static)
	for (int i = 0; i < n; i++)
		for (int c = 0; c < channels; c++) {
			real scale = saved[2 * channels + c], shift = saved[3 * channels + c];
			size_t at = ((size_t)i * channels + c) * pixels;
			const real *x = in + at;
			real *y = out + at;
			if (!relu) {
				for (int p = 0; p < pixels; p++)
					y[p] = x[p] * scale + shift;
				continue;
			}
			if (!shortcut) {
				for (int p = 0; p < pixels; p++) {
					real value = x[p] * scale + shift;
					y[p] = value > 0 ? value : 0;
				}
				continue;
			}
			for (int p = 0; p < pixels; p++) {
				real sum = shortcut[at + p] + (x[p] * scale + shift);
				y[p] = sum > 0 ? sum : 0;
			}
		}
	profile_add(PROFILE_ELEMENTWISE, started);
}

/* The sums BN's backward needs, added to sums[c] and sums[channels + c]
 * for one image: of dy and of dy (x - mean), dy counting only where ReLU
 * passed it if relu. */
KERNEL_HELPER void batch_norm_gradient_sums(double *sums, const real *x, const real *dy, const real *saved, int channels, int pixels, bool relu)
{
	for (int c = 0; c < channels; c++)
		batch_norm_sums(x + (size_t)c * pixels, dy + (size_t)c * pixels, saved[c], relu, saved[2 * channels + c],
				saved[3 * channels + c], pixels, &sums[c], &sums[channels + c]);
}

/* The two sums of BN's backward for one channel: of dy and of dy (x - mean). */
struct batch_norm_gradient_sums {
	double dy, dy_centred;
};

/* Channel c of BN's backward, given its sums over this rank's images (own)
 * and over those BN's statistics came from (whole: count values, all the
 * ranks' images if synced, else own): dgamma and dbeta (this rank's part),
 * and the line dx = scale dy + slope (x - mean) + offset, which
 * batch_norm_gradient_apply runs (dy through ReLU's mask if relu). The
 * lines are kept after BN's saved values (BATCH_NORM_SAVED reals a
 * channel in all), where a convolution whose output BN normalised reads
 * them if BN's backward left dx to it (batch_norm_deferred). */
struct batch_norm_gradient_line {
	real scale, slope, offset;
};

enum { BATCH_NORM_SAVED = 7 }; /* mean, 1/std, scale, shift; then the line */

KERNEL_HELPER struct batch_norm_gradient_line *batch_norm_lines(const real *saved, int channels)
{
	return (struct batch_norm_gradient_line *)(saved + 4 * channels);
}

KERNEL_HELPER struct batch_norm_gradient_line batch_norm_gradient_line(real *dgamma, real *dbeta, const real *gamma, const real *saved, int channels, int c, struct batch_norm_gradient_sums own, struct batch_norm_gradient_sums whole, double count)
{
	double inverse_std = saved[channels + c];
	dgamma[c] += (real)(own.dy_centred * inverse_std);
	dbeta[c] += (real)own.dy;
	double sum_dy = whole.dy, sum_dy_xhat = whole.dy_centred * inverse_std;
	/* dx = gamma / std * (dy - mean(dy) - xhat * mean(dy * xhat))
	 *    = k dy + slope (x - mean) + offset */
	double k = gamma[c] * inverse_std;
	return (struct batch_norm_gradient_line){(real)k, (real)(-k * inverse_std * sum_dy_xhat / count), (real)(-k * sum_dy / count)};
}

/* dx (+)= BN's input gradient of count images by the lines, from dy (the
 * gradient of BN's output, or of ReLU's after it if relu) and BN's input
 * x; the images consecutive in each. */
KERNEL_HELPER void batch_norm_gradient_images(real *din, const real *dout, const real *in, const real *saved, int count, int channels, int pixels, bool relu, enum gradient_write write)
{
	const struct batch_norm_gradient_line *lines = batch_norm_lines(saved, channels);
	for (int i = 0; i < count; i++)
		for (int c = 0; c < channels; c++) {
			real mean = saved[c], relu_scale = saved[2 * channels + c], relu_shift = saved[3 * channels + c];
			real scale = lines[c].scale, slope = lines[c].slope, offset = lines[c].offset;
			size_t at = ((size_t)i * channels + c) * pixels;
			const real *x = in + at, *dy = dout + at;
			real *dx = din + at;
			for (int p = 0; p < pixels; p++) {
				/* dy read whatever the mask: read only where the mask
				 * passes, GCC made it a masked load merging into a
				 * register it kept on the stack, a store and a load
				 * every 16 values. */
				real gradient = dy[p];
				if (relu && !(x[p] * relu_scale + relu_shift > 0))
					gradient = 0;
				dx[p] = (write == GRADIENT_ADD ? dx[p] : 0) + scale * gradient + slope * (x[p] - mean) + offset;
			}
		}
}

/* din (+)= dx of every channel by its line, the images shared among the
 * threads (an orphaned omp for): whole images are long runs of memory,
 * where a channel of an 8 x 8 image is 64 reals. */
KERNEL_HELPER void batch_norm_gradient_apply(real *din, const real *dout, const real *in, const real *saved, int n, int channels, int pixels, bool relu, enum gradient_write write)
{
	size_t image = (size_t)channels * pixels;
	#pragma omp for schedule(static)
	for (int i = 0; i < n; i++)
		batch_norm_gradient_images(din + i * image, dout + i * image, in + i * image, saved, 1, channels, pixels, relu, write);
}

/* Where a convolution's backward takes dY from when the BN that
 * normalises its output left its input gradient to it (lower.h):
 * computed image by image as the convolution reads it, from dy, the
 * gradient of BN's output (of the ReLU after it if relu), and in, BN's
 * input (the convolution's output), by BN's saved values and lines. dy
 * NULL: dY is stored. */
struct batch_norm_deferred {
	const real *dy, *in, *saved;
	bool relu;
};

/* dY of count images from first, set in dx (as the convolution's output
 * shape: channels by pixels an image). */
KERNEL_HELPER void batch_norm_deferred_images(real *dx, struct batch_norm_deferred d, int first, int count, int channels, int pixels)
{
	size_t at = (size_t)first * channels * pixels;
	batch_norm_gradient_images(dx, d.dy + at, d.in + at, d.saved, count, channels, pixels, d.relu, GRADIENT_SET);
}

/* BN backward's sums of every channel, 4 channels doubles at totals: this
 * rank's (dy, then dy (x - mean), channels each), then, if BN's
 * statistics span the ranks, the same summed over them (whole); else the
 * whole batch's are this rank's. */
static inline struct batch_norm_gradient_sums batch_norm_gradient_total(const double *totals, int channels, int c, bool whole)
{
	const double *at = totals + (whole ? 2 * channels : 0);
	return (struct batch_norm_gradient_sums){at[c], at[channels + c]};
}

/* The parts of each share's sums, sums_at reals into the scratch of the
 * thread whose share it is. */
static inline struct batch_norm_parts batch_norm_share_parts(const real *scratch, size_t scratch_per_thread, size_t sums_at)
{
	return (struct batch_norm_parts){(const double *)(scratch + sums_at), scratch_per_thread * sizeof(real) / sizeof(double), share_count()};
}

/* The end of BN's backward, called by every thread of a parallel region
 * once the sums over the images are in their parts: the parts added in
 * order (and across the ranks if BN's statistics span them), dgamma,
 * dbeta and the lines (kept in saved), and din (+)= dx from dy (through
 * ReLU's mask if relu), unless din is NULL: then the convolution that
 * produced BN's input computes dx as it reads it (batch_norm_deferred).
 * totals (4 channels doubles): the region's, shared by its threads. */
KERNEL_ENTRY(void, batch_norm_gradient_finish, (real *din, real *dgamma, real *dbeta, const real *dy, const real *in, const real *gamma, real *saved, int n, int channels, int pixels, bool relu, enum gradient_write write, const struct net_ranks *ranks, struct batch_norm_parts parts, double *totals))
{
	bool synced = batch_norm_synced(ranks);
	double count = (double)n * pixels * (synced ? ranks->count : 1);
	batch_norm_add_parts(totals, parts, 2 * channels);
	if (synced) {
		#pragma omp master
		memcpy(totals + 2 * channels, totals, sizeof(double) * 2 * channels);
		batch_norm_add_across(ranks, totals + 2 * channels, 2 * channels);
	}
	struct batch_norm_gradient_line *lines = batch_norm_lines(saved, channels);
	#pragma omp for schedule(static)
	for (int c = 0; c < channels; c++)
		lines[c] = batch_norm_gradient_line(dgamma, dbeta, gamma, saved, channels, c, batch_norm_gradient_total(totals, channels, c, false),
						    batch_norm_gradient_total(totals, channels, c, synced), count);
	if (din)
		batch_norm_gradient_apply(din, dy, in, saved, n, channels, pixels, relu, write);
}

/* Where BN's output gradient comes from when a ReLU after an addition
 * after BN hands it on (templates/ops/batch_norm_add_relu.c.tmpl): gradient (+)= dout
 * where ReLU's output out is positive, set (or added to) as BN's backward
 * first reads it; the gradient of the sum, and so of BN's output. */
struct batch_norm_masked {
	real *gradient;
	const real *out;
	enum gradient_write write;
};

/* With relu, dout is the gradient of ReLU's output, ReLU applied to BN's:
 * the mask is computed again from x, as the forward pass did. With masked,
 * BN's output gradient is masked->gradient, written from dout first. The
 * images are taken by shares (share_claim), each summed in the scratch of
 * the thread whose share it is (BATCH_NORM_SCRATCH reals), added in share
 * order. */
KERNEL_ENTRY(void, batch_norm_backward, (real *din, real *dgamma, real *dbeta, const real *dout, const real *in, const real *gamma, real *saved, int n, int channels, int pixels, bool relu, enum gradient_write write, const struct net_ranks *ranks, const struct batch_norm_masked *masked, real *scratch, size_t scratch_per_thread))
{
	double started = profile_clock();
	double totals[4 * channels];
	int claims[share_count()];
	memset(claims, 0, sizeof claims);
	#pragma omp parallel
	{
		/* the sums, first per share over its images, in image order */
		int share, looked = 0, first, last;
		while ((share = share_claim(claims, &looked)) >= 0) {
			double *part = (double *)(scratch + (size_t)share * scratch_per_thread);
			memset(part, 0, sizeof(double) * 2 * channels);
			thread_share_of(n, share, &first, &last);
			for (int i = first; i < last; i++)
				for (int c = 0; c < channels; c++) {
					size_t at = ((size_t)i * channels + c) * pixels;
					const real *dy = dout + at;
					if (masked) {
						real *g = masked->gradient + at;
						const real *y = masked->out + at;
						for (int p = 0; p < pixels; p++)
							g[p] = (masked->write == GRADIENT_ADD ? g[p] : 0) + (y[p] > 0 ? dy[p] : 0);
						dy = g;
					}
					batch_norm_sums(in + at, dy, saved[c], relu, saved[2 * channels + c], saved[3 * channels + c], pixels, &part[c],
							&part[channels + c]);
				}
		}
		#pragma omp barrier
		batch_norm_gradient_finish(din, dgamma, dbeta, masked ? masked->gradient : dout, in, gamma, saved, n, channels, pixels, relu, write, ranks,
					   batch_norm_share_parts(scratch, scratch_per_thread, 0), totals);
	}
	profile_add(PROFILE_ELEMENTWISE, started);
}

#endif
