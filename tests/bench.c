/* make bench: the speed of training steps of one network, on synthetic data
 * of its input shape, split into forward, backward and SGD. FLOP rates count
 * a training step as 3 forward passes (backward does about twice the work
 * of forward), the usual convention. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "data.h"
#include "gemm.h"
#include "net_api.h"
#include "state.h"
#include "threads.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
	int batch = argc > 1 ? atoi(argv[1]) : 128;
	int steps = argc > 2 ? atoi(argv[2]) : 8;
	if (batch < 1 || steps < 1) {
		fprintf(stderr, "usage: %s [BATCH [STEPS]]\n", argv[0]);
		return 2;
	}
	int threads = threads_setup(0);
	struct dataset train, test;
	struct data_error error;
	if (data_synthetic(net_info.channels, net_info.height, net_info.width, net_info.classes, batch,
			   1, 1, &train, &test, &error) != 0) {
		fprintf(stderr, "%s\n", error.text);
		return 1;
	}
	struct net_state s;
	char message[512];
	if (state_create(&s, batch, threads, message, sizeof message) != 0) {
		fprintf(stderr, "%s\n", message);
		return 1;
	}
	state_init(&s, 1);
	double mean[16], std[16];
	dataset_channel_stats(&train, mean, std);
	long *indices = malloc((size_t)batch * sizeof *indices);
	int *labels = malloc((size_t)batch * sizeof *labels);
	for (int i = 0; i < batch; i++)
		indices[i] = i;
	data_fill_batch(&train, indices, batch, mean, std, NULL, NULL, state_input(&s, batch), labels);
	s.labels = labels;

	double forward = 0, backward = 0, update = 0;
	for (int step = -2; step < steps; step++) { /* two warm-up steps, not timed */
		double t0 = now();
		net_forward(&s, batch);
		double t1 = now();
		state_zero_grads(&s);
		net_backward(&s, batch);
		double t2 = now();
		net_sgd(&s, 0.01f, 0.9f, 0.0001f);
		double t3 = now();
		if (step >= 0) {
			forward += t1 - t0;
			backward += t2 - t1;
			update += t3 - t2;
		}
	}
	double total = forward + backward + update;
	double images_per_second = (double)batch * steps / total;
	printf("%s, %s, batch %d, %d threads, BLIS %s kernels, %d timed steps\n", net_info.name,
	       net_info.dtype, batch, threads, gemm_kernels(), steps);
	printf("  forward   %8.1f ms/step\n", 1e3 * forward / steps);
	printf("  backward  %8.1f ms/step\n", 1e3 * backward / steps);
	printf("  sgd       %8.1f ms/step\n", 1e3 * update / steps);
	printf("  training  %8.1f ms/step: %.1f images/s, %.1f GFLOP/s (%.0f MFLOP/image forward)\n",
	       1e3 * total / steps, images_per_second,
	       images_per_second * 3 * net_info.forward_flops / 1e9, net_info.forward_flops / 1e6);
	struct rusage usage;
	getrusage(RUSAGE_SELF, &usage);
	printf("  peak RSS  %8.0f MiB (planned arena %.0f MiB)\n", usage.ru_maxrss / 1024.0,
	       (double)net_info.arena_per_image * batch * sizeof(real) / (1 << 20));
	free(indices);
	free(labels);
	state_free(&s);
	dataset_free(&train);
	dataset_free(&test);
	return 0;
}
