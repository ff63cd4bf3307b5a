/* Every rule the same bits rest on: what fixes the order of each sum,
 * whatever node, instruction set or thread count a run has. A rule that is
 * a number is defined here, checked at compile time where it can be; a
 * rule that is a flag or a choice made elsewhere is named here with where
 * it lives. At runtime/'s root, so that the generator, the kernels and the
 * machine's doors read the same numbers (docs/build.md, "The same bits").
 *
 *   1. Every compilation, for every instruction set, fuses a multiply and
 *      an add alike: -ffp-contract=fast (the Makefile's RUNTIME_CFLAGS).
 *   2. BLIS adds each output's products in the order of k, one
 *      multiply-add at a time, in the kernels of haswell, zen3 and skx;
 *      its code for small matrices (sup), whose orders differ between its
 *      configurations, is never called (machine/gemm.c). BLIS cuts k where
 *      its kernel's KC falls, so k goes to it GEMM_K_CHUNK at a time.
 *   3. A convolution's algorithm (direct, im2col, Winograd, how a pass is
 *      split) is chosen from its shape by the blocks of skx's f32 kernel,
 *      CONV_RULE_MR x CONV_RULE_NR, whatever kernel runs
 *      (kernels/conv/choices.h, kernels/sizes.h).
 *   4. Each pass cuts its images into shares, and sums over the shares in
 *      share order: the shares, not the threads, set the bits (kernel_shares,
 *      parallel/threads.c); a checkpoint keeps them.
 *   5. bf16 products are exact in f32 and summed in one of two orders
 *      (machine/bf16.h): the tiles order along K in blocks of BF16_TILE_K,
 *      or the pairs order; each path of an order gives its bits.
 *   6. Random numbers come from one fully specified generator
 *      (shared/rng.h); dropout's masks are a function of the seed and the
 *      step. */
#ifndef RESGEN_SAME_BITS_H
#define RESGEN_SAME_BITS_H

/* 2: the smallest KC of the BLIS kernels a run may take (256 for haswell's
 * and zen3's, 384 for skx's f32): a chunk of k no longer than it is summed
 * by BLIS in one pass, added into C. */
enum { GEMM_K_CHUNK = 256, BLIS_SMALLEST_KC = 256 };
_Static_assert(GEMM_K_CHUNK <= BLIS_SMALLEST_KC, "a chunk of k must fit in one of BLIS's passes");

/* 3, and the widest mr or nr a BLIS micro-kernel may have (machine/gemm.h):
 * packed operands leave room for it. */
enum { CONV_RULE_MR = 32, CONV_RULE_NR = 12, GEMM_PANEL_MAX = 32 };
_Static_assert(CONV_RULE_MR <= GEMM_PANEL_MAX && CONV_RULE_NR <= GEMM_PANEL_MAX,
	       "the rule's blocks are those of a kernel the panels have room for");

/* 5: AMX's tdpbf16ps takes 16 pairs along K an instruction. */
enum { BF16_TILE_K = 32 };
_Static_assert(BF16_TILE_K % 2 == 0, "a block of the tiles order is whole pairs");

#endif
