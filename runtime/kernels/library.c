/* The kernel library's entry points compiled once, with external linkage,
 * for the builds whose networks define RESGEN_OUT_OF_LINE (the sanitizer
 * build, the tests' networks, OUT_OF_LINE=1): their instances call these
 * with their shapes as arguments rather than compiling a copy of the
 * library each (runtime/kernels/common.h, KERNEL_ENTRY). */
#define RESGEN_KERNEL_LIBRARY

/* The library defines helpers that only some networks call (conv_explain,
 * relu_forward, ...); here nothing calls them. GCC cannot see that
 * Winograd's output transform writes every element of its A^T q before
 * reading it (conv_winograd_output) once m is not a constant. */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/add.h"
#include "kernels/batch_norm.h"
#include "kernels/conv.h"
#include "kernels/dropout.h"
#include "kernels/gated_add.h"
#include "kernels/linear.h"
#include "kernels/loss.h"
#include "kernels/pad_shortcut.h"
#include "kernels/pool.h"
#include "kernels/relu.h"
#include "kernels/scale.h"
