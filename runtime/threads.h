/* Who owns the cores. OpenMP and BLIS both read OMP_NUM_THREADS; left alone
 * they would nest and oversubscribe. Here the emitted kernels' OpenMP loops
 * own every core (they split the batch, the channels or the elements), and
 * BLIS runs single-threaded inside them. */
#ifndef RESGEN_THREADS_H
#define RESGEN_THREADS_H

/* threads <= 0: OMP_NUM_THREADS if set, else every core. Returns the count. */
int threads_setup(int threads);

#endif
