#include "threads.h"

#include <omp.h>

#include "gemm.h"

int threads_setup(int threads)
{
	if (threads <= 0)
		threads = omp_get_max_threads();
	omp_set_num_threads(threads);
	omp_set_max_active_levels(1);
	omp_set_dynamic(0);
	gemm_set_threads(1);
	return threads;
}
