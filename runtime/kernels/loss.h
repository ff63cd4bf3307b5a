/* Softmax and cross-entropy: the class probabilities p = softmax(z) of
 * each image's logits z, and the loss -log p[label], averaged. Backward
 * needs only p and the labels: dL/dz = (p - onehot(label)) / batch, batch
 * being the whole batch's images where ranks split it. Serial: the work
 * is tiny, and a fixed summation order keeps the loss repeatable. */
#ifndef RESGEN_KERNELS_LOSS_H
#define RESGEN_KERNELS_LOSS_H

#include "kernels/common.h"

/* The probabilities of n images; returns their mean loss. */
KERNEL_ENTRY(double, softmax_cross_entropy_forward, (real *probabilities, const real *logits, const int *labels, int n, int classes))
{
	double loss = 0;
	for (int i = 0; i < n; i++) {
		const real *z = logits + (size_t)i * classes;
		real *p = probabilities + (size_t)i * classes;
		double largest = z[0], sum = 0;
		for (int j = 1; j < classes; j++)
			if (z[j] > largest)
				largest = z[j];
		for (int j = 0; j < classes; j++)
			sum += exp(z[j] - largest);
		for (int j = 0; j < classes; j++)
			p[j] = (real)(exp(z[j] - largest) / sum);
		/* -log p[label], computed from the logits to stay finite */
		loss += log(sum) - (z[labels[i]] - largest);
	}
	return loss / n;
}

KERNEL_ENTRY(void, softmax_cross_entropy_backward, (real *dlogits, const real *probabilities, const int *labels, int n, int batch, int classes))
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < classes; j++)
			dlogits[(size_t)i * classes + j] += (probabilities[(size_t)i * classes + j] - (j == labels[i])) / batch;
}

#endif
