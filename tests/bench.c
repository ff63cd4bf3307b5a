/* make bench: the speed of training steps of one network, on synthetic data
 * of its input shape, split into forward, backward and SGD, by kind of
 * kernel, and by kernel for the longest (runtime/machine/profile.h). FLOP rates
 * count a training step as 3 forward passes (backward does about twice the
 * work of forward), the usual convention; each of a convolution's three
 * products does a forward pass's convolution work. With BENCH_FMA_LIMIT
 * set (GFLOP/s, as fma-peak measured it), rates are also given as a
 * fraction of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "data.h"
#include "gemm.h"
#include "net_api.h"
#include "profile.h"
#include "state.h"
#include "threads.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The kernels that took longest (runtime/machine/profile.h: most are one op at one
 * shape), each with its time by kind: 10, or BENCH_KERNELS of them. */
enum { LONGEST_KERNELS = 10 };
static int by_time(const void *a, const void *b)
{
	double ta = profile_kernel_seconds(a), tb = profile_kernel_seconds(b);
	return (ta < tb) - (ta > tb);
}

static void print_longest_kernels(int steps, double total)
{
	struct profile_kernel sorted[PROFILE_KERNELS_MAX];
	memcpy(sorted, profile_kernels, sizeof(struct profile_kernel) * profile_kernel_count);
	qsort(sorted, profile_kernel_count, sizeof sorted[0], by_time);
	const char *wanted = getenv("BENCH_KERNELS");
	int longest = wanted && atoi(wanted) > 0 ? atoi(wanted) : LONGEST_KERNELS;
	int shown = profile_kernel_count < longest ? profile_kernel_count : longest;
	printf("  the %d kernels that take longest, of %d (ms/step: forward, data gradient, weight gradient, BN/ReLU/add):\n",
	       shown, profile_kernel_count);
	for (int i = 0; i < shown; i++) {
		double seconds = profile_kernel_seconds(&sorted[i]);
		printf("    %-46s %7.1f ms/step %5.1f%%:", sorted[i].name, 1e3 * seconds / steps, 100 * seconds / total);
		for (int k = 0; k < PROFILE_KIND_COUNT; k++)
			printf(" %6.1f", 1e3 * sorted[i].seconds[k] / steps);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	int batch = argc > 1 ? atoi(argv[1]) : 128;
	int steps = argc > 2 ? atoi(argv[2]) : 8;
	if (batch < 1 || steps < 1) {
		fprintf(stderr, "usage: %s [BATCH [STEPS]]\n", argv[0]);
		return 2;
	}
	int threads = threads_setup(0, 0);
	struct dataset train, test;
	struct data_error error;
	struct data_request want = {.set = SET_SYNTHETIC, .channels = net_info.channels, .height = net_info.height,
				    .width = net_info.width, .classes = net_info.classes, .train_images = batch,
				    .test_images = 1, .seed = 1};
	if (data_open(&want, &train, &test, &error) != 0) {
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
	data_fill_batch(&train, indices, batch, mean, std, NULL, 0, state_input(&s, batch), labels);
	s.labels = labels;

	const char *limit_text = getenv("BENCH_FMA_LIMIT");
	double limit = limit_text ? atof(limit_text) : 0;
	double forward = 0, backward = 0, update = 0;
	for (int step = -2; step < steps; step++) { /* two warm-up steps, not timed */
		if (step == 0)
			profile_reset();
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
	/* a bf16 network keeps f32 tensors; its products are bf16's */
	bool f32 = strcmp(net_info.precision, "f32") == 0;
	printf("%s, %s%s%s, batch %d, %d threads, BLIS %s kernels, %d timed steps\n", net_info.name, net_info.dtype,
	       f32 ? "" : " tensors, products ", f32 ? "" : net_info.precision, batch, threads, gemm_kernels(), steps);
	printf("  forward   %8.1f ms/step\n", 1e3 * forward / steps);
	printf("  backward  %8.1f ms/step\n", 1e3 * backward / steps);
	printf("  sgd       %8.1f ms/step\n", 1e3 * update / steps);
	long fewer, passes;
	threads_team_counts(&fewer, &passes);
	if (fewer > 0)
		printf("  team      %ld of %ld passes ran on fewer than %d threads, while other work kept cores busy\n", fewer, passes,
		       threads);
	double gflops = images_per_second * 3 * net_info.forward_flops / 1e9;
	printf("  training  %8.1f ms/step: %.1f images/s, %.1f GFLOP/s", 1e3 * total / steps,
	       images_per_second, gflops);
	if (limit > 0)
		printf(", %.0f%% of the FMA limit", 100 * gflops / limit);
	printf(" (%.0f MFLOP/image forward, counting every convolution as a direct one: those Winograd runs do fewer)\n",
	       net_info.forward_flops / 1e6);
	printf("  by kind of kernel:\n");
	double kernels = 0;
	for (int k = 0; k < PROFILE_KIND_COUNT; k++) {
		double seconds = profile_kind_seconds(k);
		kernels += seconds;
		printf("    %-22s %8.1f ms/step %5.1f%%", profile_kind_names[k], 1e3 * seconds / steps,
		       100 * seconds / total);
		if (k <= PROFILE_CONV_WEIGHT_GRADIENT) {
			double rate = net_info.conv_flops * batch * steps / seconds / 1e9;
			printf(" %6.1f GFLOP/s", rate);
			if (limit > 0)
				printf(", %.0f%% of the FMA limit", 100 * rate / limit);
		}
		printf("\n");
	}
	double rest = forward + backward - kernels;
	printf("    %-22s %8.1f ms/step %5.1f%% (gradient zeroing, pooling, classifier, loss)\n",
	       "rest", 1e3 * rest / steps, 100 * rest / total);
	printf("    %-22s %8.1f ms/step %5.1f%%\n", "sgd", 1e3 * update / steps, 100 * update / total);
	print_longest_kernels(steps, total);
	struct rusage usage;
	getrusage(RUSAGE_SELF, &usage);
	/* what state_create allocates, in MiB: the arena, the weights with their
	 * gradients and momenta, BN's statistics, each thread's scratch */
	double mib = sizeof(real) / (double)(1 << 20);
	double arena = (double)net_info.arena_per_image * batch * mib, weights = 3.0 * net_info.param_count * mib;
	double stats = (double)(net_info.buffer_count + net_info.stats_count) * mib;
	double scratch = (double)net_info.scratch_per_thread * mib;
	printf("  peak RSS  %8.0f MiB (planned %.0f MiB: arena %.0f, weights with gradients and momenta %.0f, "
	       "BN's statistics %.0f, scratch %d x %.0f)\n",
	       usage.ru_maxrss / 1024.0, arena + weights + stats + threads * scratch, arena, weights, stats, threads,
	       scratch);
	free(indices);
	free(labels);
	state_free(&s);
	dataset_free(&train);
	dataset_free(&test);
	return 0;
}
