/* Convolution without bias (a BN or the sum follows), k x k, zero padding
 * k / 2. Images are shared among the threads. The fast kernels drive BLIS's
 * micro-kernel (runtime/machine/gemm.h) on panels packed straight from the
 * activations (implicit im2col): the forward pass and the data gradient as
 * W . columns(X), the weight gradient as dY . columns(X)^T. The reference
 * kernels (im2col, then one BLIS gemm per image) are what the fast ones are
 * tested against (tests/test_kernels.c) and the fallback where a machine's
 * micro-kernel does not fit. The weight gradient is summed per thread, then
 * across threads in thread order, so a fixed thread count gives
 * bitwise-repeatable results. Every kernel but the data gradient takes an
 * optional prologue, the BN + ReLU that a fused step (generator/stage3-plan/lower.h)
 * applies to the input as it is read: the activated input is never stored.
 * The forward pass takes an optional epilogue, run on each image while it is
 * fresh: a residual sum (the shortcut's image added to it, channel by
 * channel), and the sums per image from which the next BN takes its
 * statistics (kernels/batch_norm.h). */
#ifndef RESGEN_KERNELS_CONV_H
#define RESGEN_KERNELS_CONV_H

/* In the order each builds on the one before; choices.h decides which
 * kernels run, reference.h is the algorithmic reference, the rest the
 * fast path. */
#include "kernels/conv/shape.h"
#include "kernels/conv/choices.h"
#include "kernels/conv/image.h"
#include "kernels/conv/reference.h"
#include "kernels/conv/direct.h"
#include "kernels/conv/lanes.h"
#include "kernels/conv/winograd.h"
#include "kernels/conv/forward.h"
#include "kernels/conv/weight_gradient.h"
#include "kernels/conv/backward.h"

#endif
