/* One binary, the same bits on every kind of node (docs/cluster.md): the
 * demo trained on real Fashion-MNIST by the default build with each
 * instruction set and each BLIS kernel set this processor runs, and by a
 * build for this machine alone (MARCH=native), ends on the same weights
 * and log rows; a run stopped on one path and resumed on another ends as
 * the unbroken run. An AVX2 node runs RESGEN_ISA=avx2 with BLIS's haswell
 * kernels (BLIS_ARCH_TYPE=3), so a processor with AVX-512 runs both. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "command.h"

enum { ITERATIONS = 30 };

/* One way to run the demo: an environment and a build. */
struct path {
	const char *name;
	const char *environment;
	const char *build; /* the default build's bin/, or the native one's */
};

static bool has_avx512(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
	       __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512vl");
}

/* The demo on path with options, in the scratch folder; its first line of
 * output (the machine line) into machine. */
static int demo(const struct path *p, const char *options, char *machine, size_t size)
{
	char command[4096], out[16384], err[4096];
	snprintf(command, sizeof command, "{ cd %s && %s %s/demo train --threads 2 --test-limit 500 %s; }", scratch,
		 p->environment, p->build, options);
	int status = run(command, out, sizeof out, err, sizeof err);
	if (status != 0)
		print_error("%s: %s", p->name, err);
	const char *line = strstr(out, "machine: ");
	snprintf(machine, size, "%.*s", line ? (int)strcspn(line, "\n") : 0, line ? line : "");
	return status;
}

/* A file of the scratch folder: its path, in path. */
static const char *in_scratch(char path[600], const char *name)
{
	snprintf(path, 600, "%s/%s", scratch, name);
	return path;
}

static char default_bin[400], native_bin[400];

static int setup(void **state)
{
	(void)state;
	int status = command_setup("isa");
	char *absolute = realpath(build, NULL); /* the runs start in the scratch folder */
	if (!absolute)
		return -1;
	snprintf(default_bin, sizeof default_bin, "%s/bin", absolute);
	snprintf(native_bin, sizeof native_bin, "%s/march-native/bin", absolute);
	free(absolute);
	return status;
}

static void test_every_path_gives_the_same_weights(void **unused)
{
	(void)unused;
	const struct path paths[] = {
		{"the default build", "", default_bin},
		{"the default build on BLIS's haswell kernels", "BLIS_ARCH_TYPE=3", default_bin},
		{"the default build as an AVX2 node runs it", "RESGEN_ISA=avx2 BLIS_ARCH_TYPE=3", default_bin},
		{"the native build", "", native_bin},
		/* avx2's kernels under skx's (32 pixels wide): their copy of any width */
		{"the default build's avx2 kernels on BLIS's own choice", "RESGEN_ISA=avx2", default_bin},
	};
	enum { PATHS = sizeof paths / sizeof paths[0] };
	char machine[PATHS][1024];
	for (int i = 0; i < PATHS; i++) {
		char options[256];
		snprintf(options, sizeof options, "--iterations %d --save-weights w%d --log l%d.csv", ITERATIONS, i, i);
		assert_int_equal(demo(&paths[i], options, machine[i], sizeof machine[i]), 0);
		const char *taken = strstr(machine[i], "kernels for");
		print_message("%s: %.*s\n", paths[i].name, taken ? (int)strcspn(taken, ";") : 1, taken ? taken : "?");
	}
	/* the paths differ where this processor lets them */
	expect_in(machine[2], "kernels for avx2 (of avx2, avx512: RESGEN_ISA)");
	expect_in(machine[3], "kernels for MARCH=native");
	if (has_avx512())
		expect_in(machine[0], "kernels for avx512");
	else
		print_message("this processor has no AVX-512: the default build runs avx2 here, so only the kernels of "
			      "BLIS and the builds differ\n");
	for (int i = 1; i < PATHS; i++) {
		char weights[16], log[16], a[600], b[600], la[600], lb[600];
		snprintf(weights, sizeof weights, "w%d", i);
		snprintf(log, sizeof log, "l%d.csv", i);
		if (!same_file(in_scratch(a, "w0"), in_scratch(b, weights)) ||
		    !same_rows(in_scratch(la, "l0.csv"), in_scratch(lb, log)))
			fail_msg("%s ends on other weights or log rows than %s", paths[i].name, paths[0].name);
	}
	/* the comparison can fail: another seed ends elsewhere */
	char options[256], ignored[1024];
	snprintf(options, sizeof options, "--iterations %d --seed 2 --save-weights seeded", ITERATIONS);
	assert_int_equal(demo(&paths[0], options, ignored, sizeof ignored), 0);
	char a[600], b[600];
	assert_false(same_file(in_scratch(a, "w0"), in_scratch(b, "seeded")));
}

/* Half the run on one path, the rest resumed on the other: the weights of
 * the unbroken run, each way round. */
static void test_a_run_resumes_on_another_path(void **unused)
{
	(void)unused;
	const struct path fast = {"the default build", "", default_bin},
			  avx2 = {"the default build as an AVX2 node runs it", "RESGEN_ISA=avx2 BLIS_ARCH_TYPE=3", default_bin};
	char ignored[1024], options[256];
	snprintf(options, sizeof options, "--iterations %d --save-weights whole", ITERATIONS);
	assert_int_equal(demo(&fast, options, ignored, sizeof ignored), 0);
	const struct path *order[2][2] = {{&fast, &avx2}, {&avx2, &fast}};
	for (int k = 0; k < 2; k++) {
		snprintf(options, sizeof options, "--iterations %d --checkpoint c%d.ckpt", ITERATIONS / 2, k);
		assert_int_equal(demo(order[k][0], options, ignored, sizeof ignored), 0);
		snprintf(options, sizeof options, "--resume c%d.ckpt --iterations %d --save-weights resumed%d", k, ITERATIONS, k);
		assert_int_equal(demo(order[k][1], options, ignored, sizeof ignored), 0);
		char resumed[32];
		snprintf(resumed, sizeof resumed, "resumed%d", k);
		char a[600], b[600];
		if (!same_file(in_scratch(a, "whole"), in_scratch(b, resumed)))
			fail_msg("started on %s and resumed on %s, the run ends elsewhere", order[k][0]->name, order[k][1]->name);
	}
}

/* The default build compiles each convolution's own algorithms alone: a
 * RESGEN_CHOICES that would force another is refused in one line, before
 * any work; one that changes no algorithm (streaming) runs. */
static void test_a_forced_algorithm_is_refused(void **unused)
{
	(void)unused;
	char command[1024], out[4096];
	snprintf(command, sizeof command, "RESGEN_CHOICES=winograd=off %s/demo train --iterations 1", default_bin);
	expect_failure(command, 2,
		       "demo: RESGEN_CHOICES=winograd=off would change the algorithm of conv3x3_s1_1x28x28_to_16, whose "
		       "code this build compiles for its rule alone; force algorithms in a build of every one (make "
		       "EVERY_ALGORITHM=1, build/every-algorithm/), or unset it\n");
	snprintf(command, sizeof command, "RESGEN_CHOICES=stream=on %s/demo explain", default_bin);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, "(forced by RESGEN_CHOICES)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_path_gives_the_same_weights),
		cmocka_unit_test(test_a_run_resumes_on_another_path),
		cmocka_unit_test(test_a_forced_algorithm_is_refused),
	};
	command_only_some();
	return cmocka_run_group_tests_name("isa", tests, setup, NULL);
}
