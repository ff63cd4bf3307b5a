/* The fully connected classifier, Y = X W^T + b, X (n, IN), W (OUT, IN):
 * two gemms and the bias; backward adds into dW, db and dX. The gemms
 * multiply as p says (a bf16 network's: kernels/products.h); the bias
 * and its gradient stay in the build's reals. */
#ifndef RESGEN_KERNELS_LINEAR_H
#define RESGEN_KERNELS_LINEAR_H

#include "kernels/common.h"

KERNEL_ENTRY(void, linear_forward, (real *out, const real *in, const real *weight, const real *bias, int n, int inputs, int outputs, struct products p))
{
	/* Y = X W^T, then + b on every row */
	products_gemm(p, 0, 1, n, outputs, inputs, in, inputs, weight, inputs, 0, out, outputs);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < outputs; j++)
			out[(size_t)i * outputs + j] += bias[j];
}

KERNEL_ENTRY(void, linear_backward, (real *din, real *dweight, real *dbias, const real *dout, const real *in, const real *weight, int n, int inputs, int outputs, struct products p))
{
	/* dW += dY^T X */
	products_gemm(p, 1, 0, outputs, inputs, n, dout, outputs, in, inputs, 1, dweight, inputs);
	/* db += column sums of dY */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < outputs; j++)
			dbias[j] += dout[(size_t)i * outputs + j];
	/* dX += dY W */
	products_gemm(p, 0, 0, n, inputs, outputs, dout, outputs, weight, inputs, 1, din, inputs);
}

#endif
