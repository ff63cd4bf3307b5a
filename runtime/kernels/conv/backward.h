/* The data gradient, dX = conv(dY, W flipped and transposed), run as the
 * forward pass is for a stride-1 convolution (the reference kernel
 * otherwise), and the backward driver: both gradients in one pass over the
 * images, dY read once while it is in the cache. */
#ifndef RESGEN_KERNELS_CONV_BACKWARD_H
#define RESGEN_KERNELS_CONV_BACKWARD_H

#include "kernels/conv/weight_gradient.h"

/* The data gradient of one image at a time, din (+)= the gradient of the
 * input. That of a stride-1 convolution is itself one: dX = conv(dY, W
 * flipped and transposed), run as the forward pass is. A strided
 * convolution, or a machine without a usable micro-kernel, runs the
 * reference kernel. conv_data_gradient_begin prepares the calling thread's
 * part of its scratch for it (CONV_DATA_PART reals). */
struct conv_data_gradient {
	const struct gemm_micro *micro; /* NULL: the reference kernel */
	struct conv_shape s;            /* the convolution's */
	const real *weight;
	real *padded, *packed, *panel, *rows; /* the fast kernel's; panel: the reference's columns */
	real *staged; /* where an image's gradient is staged (conv_streams_gradient), or NULL: set in place */
	enum conv_method method;
	int group; /* the images conv_data_gradient_images takes at a time */
	struct products products; /* the reference kernel's */
	struct products_operand weights; /* the reference kernel's W^T (conv_data_gradient_weights) */
};

/* stream: whether conv_backward_data_images should stage and stream the
 * images it sets (conv_streams_gradient), where it takes them one at a
 * time. */
KERNEL_HELPER struct conv_data_gradient conv_data_gradient_begin(const real *weight, struct conv_shape s, const struct conv_choices *c, real *part, bool stream)
{
	enum conv_method method = CONV_ALGORITHM_OF(s.data, c->data.method);
	struct conv_data_gradient d = {gemm_micro(), s, weight, NULL, NULL, NULL, NULL, NULL, method,
				       method == CONV_WINOGRAD ? c->data.group : 1, c->products, {NULL, 0, false, NULL}};
	int flipped_patch = CONV_PATCH(s.c_out, s.k);
	if (s.stride != 1 || c->data.method == CONV_REFERENCE) {
		d.micro = NULL;
		d.panel = part;
		if (stream)
			d.staged = conv_reference_staged(part, s);
		d.weights = conv_data_gradient_weights(weight, s, c->products);
		return d;
	}
	d.padded = part;
	d.packed = d.padded + CONV_PADDED(s.c_out, s.h_out, s.w_out, s.k);
	d.panel = d.packed + CONV_PACKED_ANY(s.c_in, s.c_out, s.k);
	d.rows = d.panel + CONV_PANEL(flipped_patch);
	if (stream && d.group == 1)
		d.staged = d.rows + CONV_ROWS_OR_TILES(s.c_out, s.c_in, s.h_out, s.w_in, s.k);
	if (s.k > 1)
		memset(d.padded, 0, sizeof(real) * CONV_PADDED(s.c_out, s.h_out, s.w_out, s.k));
	conv_pack_weights_for(d.packed, weight, d.method, true, d.micro, s);
	return d;
}

/* The data gradient of count consecutive images (d->group at most). */
KERNEL_HELPER void conv_data_gradient_images(const struct conv_data_gradient *d, real *dimage, const real *dy, int count, enum gradient_write write)
{
	struct conv_shape s = d->s;
	if (!d->micro) {
		for (int g = 0; g < count; g++)
			conv_data_gradient_reference_image(dimage + (size_t)g * s.c_in * s.h_in * s.w_in,
							   dy + (size_t)g * s.c_out * s.h_out * s.w_out, d->weights, s, d->panel, write, d->products);
		return;
	}
	conv_group(dimage, dy, NULL, d->padded, d->packed, d->panel, d->rows, d->method, count, conv_transposed(s), write == GRADIENT_ADD, d->micro);
}

/* din (+)= the data gradient, the images shared among the threads. */
KERNEL_HELPER void conv_backward_data(real *din, const real *dout, const real *weight, int n, struct conv_shape s, const struct conv_choices *c, real *scratch, size_t scratch_per_thread, enum gradient_write write)
{
	struct conv_data_gradient d = conv_data_gradient_begin(weight, s, c, scratch + (size_t)omp_get_thread_num() * scratch_per_thread + CONV_PARTS_AT(s), false);
	size_t in_size = (size_t)s.c_in * s.h_in * s.w_in, out_size = (size_t)s.c_out * s.h_out * s.w_out;
	int from, to;
	thread_share(n, &from, &to);
	for (int first = from; first < to; first += d.group)
		conv_data_gradient_images(&d, din + first * in_size, dout + first * out_size, to - first < d.group ? to - first : d.group, write);
	#pragma omp barrier
}

/* The backward pass's epilogue: with saved not NULL, the convolution's
 * input is that of the BN whose saved values these are (the prologue is
 * its scale and shift, then ReLU), and each image's data gradient, the
 * gradient of ReLU's output, puts its part of BN's backward sums at sums,
 * 2 C_IN doubles an image (batch_norm_gradient_sums), while it is fresh.
 * claims: CONV_CLAIMS(n) ints, zero, shared by the threads (conv_backward). */
struct conv_backward_epilogue {
	const real *saved;
	double *sums;
	int *claims;
};

/* The data gradient of count images from first (their dY at dy), and the
 * epilogue's sums of each; an image that sets its gradient is staged and
 * streamed where d says (the sums read it staged, from the cache). */
KERNEL_HELPER void conv_backward_data_images(const struct conv_data_gradient *d, real *din, const real *dy, const real *in, int first, int count, enum gradient_write write, struct conv_backward_epilogue epilogue)
{
	struct conv_shape s = d->s;
	size_t in_size = (size_t)s.c_in * s.h_in * s.w_in;
	bool staging = d->staged && write == GRADIENT_SET; /* staged only where images go one at a time */
	real *result = staging ? d->staged : din + first * in_size;
	conv_data_gradient_images(d, result, dy, count, write);
	if (epilogue.saved)
		for (int i = first; i < first + count; i++) {
			double *sums = epilogue.sums + (size_t)2 * s.c_in * i;
			memset(sums, 0, sizeof(double) * 2 * s.c_in);
			batch_norm_gradient_sums(sums, in + i * in_size, result + (i - first) * in_size, epilogue.saved, s.c_in, s.h_in * s.w_in, true);
		}
	if (staging)
		conv_stream_image(din + first * in_size, result, in_size);
}

/* dY of count images from first: in dout, or, where BN left it deferred
 * (dout NULL), computed into the thread's scratch at computed. */
KERNEL_HELPER const real *conv_group_dy(real *computed, const real *dout, struct batch_norm_deferred deferred, int first, int count, struct conv_shape s)
{
	size_t out_size = (size_t)s.c_out * s.h_out * s.w_out;
	if (dout)
		return dout + first * out_size;
	batch_norm_deferred_images(computed, deferred, first, count, s.c_out, s.h_out * s.w_out);
	return computed;
}

/* Whether count reals at a and at b share memory. */
KERNEL_HELPER bool conv_overlaps(const real *a, size_t a_count, const real *b, size_t b_count)
{
	return a && b && a < b + b_count && b < a + a_count;
}

/* Both gradients, image by image: the weight gradient's part of an image,
 * then its data gradient, while dY(i), which both read, is still in the
 * cache, then the epilogue; each thread's parts of its scratch side by
 * side. With dout NULL, dY is BN's input gradient, which BN's backward
 * left to this pass (deferred): each image's is computed first, into the
 * thread's scratch, and never stored. The calling thread's seconds in the
 * data gradient and the epilogue are added to *data_seconds (the
 * profile's split). This is conv_backward_weights and conv_backward_data
 * in one loop: the same sums in the same order.
 * Each thread takes the weight gradient of its own share (thread_share: its
 * sums add its images) unless another has taken that share whole before
 * it began (share_claim), but the data gradient of a group of images goes
 * to whichever thread claims it first (epilogue.claims): a thread done
 * with its share takes the others' groups from their last, computing
 * their dY again if deferred, so that a thread a neighbour on the machine
 * slowed is helped rather than waited for. What a data gradient computes
 * of an image, its input gradient and BN's sums, is that image's alone,
 * so the results do not depend on who took it. Not where din shares
 * memory with what the images' dY is read from (an identity shortcut's
 * gradient can take the slot of the gradient it adds to, which BN left
 * deferred): there the owner must read an image's dY before its din is
 * written, as it does on its own.
 * In a bf16 network each image's weight gradient fetches the next image
 * of the share into the L2 cache while its product sums
 * (products_fetch_during), where the image is small enough; not during
 * the data gradient, whose epilogue reads this image again and lost it
 * to the fetch. */
KERNEL_ENTRY(void, conv_backward, (real *din, real *dweight, const real *dout, struct batch_norm_deferred deferred, const real *in, const real *weight, const real *pre, int n, struct conv_shape s, const struct conv_choices *c, real *scratch, size_t scratch_per_thread, enum gradient_write write, struct conv_backward_epilogue epilogue, double *data_seconds))
{
	real *mine = scratch + (size_t)omp_get_thread_num() * scratch_per_thread;
	real *computed = mine + CONV_DEFERRED_AT(s);
	size_t in_size = (size_t)s.c_in * s.h_in * s.w_in, out_size = (size_t)s.c_out * s.h_out * s.w_out;
	/* the call's tensors: the input and dY, read; din, written, or NULL
	 * where no one reads it (the images' own gradient, but for a dump) */
	struct conv_data_gradient d = din ? conv_data_gradient_begin(weight, s, c, mine + CONV_DATA_AT(s), conv_streams_gradient(c, n * (2 * in_size + out_size)))
					  : (struct conv_data_gradient){.group = 1};
	int share, looked = 0;
	while ((share = share_claim(epilogue.claims + n, &looked)) >= 0) {
		struct conv_weight_gradient g = conv_weight_gradient_begin(pre, s, c, scratch, scratch_per_thread, mine + CONV_PARTS_AT(s), share);
		int from, to;
		thread_share_of(n, share, &from, &to);
		for (int first = from; first < to; first += d.group) {
			int count = to - first < d.group ? to - first : d.group;
			const real *dy = conv_group_dy(computed, dout, deferred, first, count, s);
			for (int i = 0; i < count; i++) {
				if (first + i + 1 < to)
					products_fetch_during(c->products, in + (first + i + 1) * in_size, in_size);
				conv_weight_gradient_image(&g, dy + i * out_size, in + (first + i) * in_size);
			}
			double started = profile_clock();
			if (din && conv_claim(epilogue.claims, first))
				conv_backward_data_images(&d, din, dy, in, first, count, write, epilogue);
			*data_seconds += profile_clock() - started;
		}
		conv_weight_gradient_finish(&g);
	}
	/* the other threads' groups still unclaimed, from their last */
	double started = profile_clock();
	size_t ins = n * in_size, outs = n * out_size;
	bool shared = conv_overlaps(din, ins, dout, outs) || conv_overlaps(din, ins, deferred.dy, outs) || conv_overlaps(din, ins, deferred.in, outs);
	struct conv_groups others = conv_groups_begin(n, d.group, false);
	int first, count;
	while (din && !shared && conv_next_group(&others, epilogue.claims, &first, &count))
		conv_backward_data_images(&d, din, conv_group_dy(computed, dout, deferred, first, count, s), in, first, count, write, epilogue);
	*data_seconds += profile_clock() - started;
	#pragma omp barrier
	conv_weight_gradient_end(dweight, scratch, scratch_per_thread, s, c);
}

#endif
