/* The binaries as processes: what --help answers, how threads wait and
 * share the cores, which BLIS kernels run, and what make builds and
 * resgen summary counts. */
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "command.h"
#include "tensor_file.h"

static int setup(void **unused)
{
	(void)unused;
	return command_setup("process");
}

static void test_binary_help_answers_questions(void **unused)
{
	(void)unused;
	char out[8192], command[4096];
	snprintf(command, sizeof command, "%s/bin/demo --help", build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	const char *needles[] = {"--data DIR", "--iterations N", "--batch B", "--threads T",
				 "--seed S", "--log FILE.csv", "--synthetic", "full-preact",
				 "/usr/share/datasets/fashion-mnist"};
	for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
		if (!strstr(out, needles[i]))
			fail_msg("--help does not mention %s", needles[i]);
	/* after a command and its options too, as a user of any tool asks */
	char again[8192];
	snprintf(command, sizeof command, "%s/bin/demo step --steps 2 --help", build);
	assert_int_equal(run(command, again, sizeof again, NULL, 0), 0);
	assert_string_equal(again, out);
	snprintf(command, sizeof command, "%s/bin/demo train -h", build);
	assert_int_equal(run(command, again, sizeof again, NULL, 0), 0);
	assert_string_equal(again, out);
}

/* resgen summary names the shortcut's parameters and the recipe, and says
 * what its activations and the planned arena count. */
static void test_resgen_summary_says_what_it_counts(void **unused)
{
	(void)unused;
	char command[1024], out[8192];
	snprintf(command, sizeof command,
		 "(%1$s/bin/resgen summary specs/paper/t1-scaling-05-05.yaml && "
		 "%1$s/bin/resgen summary specs/paper/t1-exclusive-gating-6.yaml | head -1)",
		 build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, "scaling shortcut (0.5 times the shortcut, 0.5 times the branch), conv1x1 projection\n");
	expect_in(out, "training: batch 128, 64000 iterations; lr 0.1 (0.01 for the first 400 iterations), times 0.1 "
		       "at iterations 32000 48000; momentum 0.9, weight decay 0.0001; augmentation: 4-pixel pad and "
		       "random crop, random horizontal flip\n");
	expect_in(out, "activations: each op's output at batch 128 in float, counted once, as if all were kept\n");
	expect_in(out, "planned arena: ");
	expect_in(out, "(so less than the activations above, which count every output once and no gradient)\n");
	expect_in(out, "exclusive-gating shortcut (the gate's bias b_g starts at -6)");
}

/* On a processor with AVX2 and FMA, BLIS must run real kernels, not its
 * portable C ones: Debian's BLIS 0.9 takes Zen 4 and Zen 5 processors for
 * unknown, and runtime/machine/gemm.c points them at the skx or zen3 kernels (3.3
 * times faster on a Zen 5). An Intel processor with AVX-512 must run the
 * skx kernels, whatever its name string says. */
/* Threads that wait spin briefly, then sleep (runtime/parallel/threads.h): the
 * binary gives the libgomp linked into it the short spin, unless the user
 * set GOMP_SPINCOUNT or OMP_WAIT_POLICY, and its machine line says which
 * wait is in force. The weights are the same bits whichever wait ran. */
static void test_binary_waits_briefly_unless_told(void **unused)
{
	(void)unused;
	static const char *const cases[][2] = {
		{"env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY", "; threads wait: spin 1000, then sleep; "},
		{"env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=5", "; threads wait: GOMP_SPINCOUNT=5; "},
		{"env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive", "; threads wait: OMP_WAIT_POLICY=passive; "},
	};
	char command[4096], out[8192], weights[3][400];
	for (int i = 0; i < 3; i++) {
		snprintf(weights[i], sizeof weights[i], "%s/waits-%d", scratch, i);
		snprintf(command, sizeof command,
			 "%s %s/tests/bin/tiny-f32 train --synthetic --iterations 4 --batch 8 --threads 2 --save-weights %s",
			 cases[i][0], build, weights[i]);
		assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
		expect_in(out, cases[i][1]);
		expect_in(out, " other task");
	}
	assert_true(same_file(weights[0], weights[1]));
	assert_true(same_file(weights[0], weights[2]));
}

/* The thread count, not the team that runs a pass (threads_team), sets the
 * bits: --threads 2 on a team of one (RESGEN_TEAM=1) dumps the same state
 * after two steps as on two, and --threads 1 another; a run on a smaller
 * team says how many passes it was. */
static void test_binary_team_keeps_the_bits(void **unused)
{
	(void)unused;
	char command[4096], out[8192], dumps[3][400];
	static const char *const runs[3][2] = {{"RESGEN_TEAM=1", "2"}, {"RESGEN_TEAM=2", "2"}, {"RESGEN_TEAM=1", "1"}};
	for (int i = 0; i < 3; i++) {
		snprintf(dumps[i], sizeof dumps[i], "%s/team-%d.dump", scratch, i);
		snprintf(command, sizeof command, "env %s %s/tests/bin/tiny-f32 step --synthetic --batch 37 --steps 2 --threads %s --dump %s",
			 runs[i][0], build, runs[i][1], dumps[i]);
		assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	}
	assert_true(same_file(dumps[0], dumps[1]));
	assert_false(same_file(dumps[0], dumps[2]));
	snprintf(command, sizeof command, "env RESGEN_TEAM=1 %s/tests/bin/tiny-f32 train --synthetic --iterations 3 --batch 8 --threads 2",
		 build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	const char *line = strstr(out, "\nthreads: ");
	assert_non_null(line);
	long fewer = 0, passes = -1;
	assert_int_equal(sscanf(line, "\nthreads: %ld of %ld passes ran on fewer than 2 threads, while other work kept cores busy", &fewer, &passes), 2);
	assert_true(passes >= 3);
	assert_int_equal(fewer, passes);
}

/* generated/ is the plain build's emitted code, which users read and diff;
 * a build folder of other settings has its own generator, and emits its
 * own copy, so that building there (the sanitizer build) leaves the plain
 * build's objects up to date. make -n says where each would write. */
static void test_make_build_folders_emit_their_own_code(void **unused)
{
	(void)unused;
	static char out[65536];
	char command[4096], expected[1024];
	snprintf(command, sizeof command,
		 "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n BUILD=%1$s/other %1$s/other/obj/net/demo.o", scratch);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	snprintf(expected, sizeof expected, "/bin/resgen generate specs/demo.yaml -o %s/other/generated/demo\n", scratch);
	expect_in(out, expected);
	assert_null(strstr(out, " -o generated/"));
	assert_int_equal(run("env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n -W specs/demo.yaml BUILD=build build/obj/net/demo.o",
			     out, sizeof out, NULL, 0),
			 0);
	expect_in(out, "build/bin/resgen generate specs/demo.yaml -o generated/demo\n");
}

static void test_binary_runs_vector_blis_kernels(void **unused)
{
	(void)unused;
	char command[4096], out[8192];
	snprintf(command, sizeof command,
		 "env -u BLIS_ARCH_TYPE %s/tests/bin/tiny-f32 train --synthetic --iterations 1 --batch 4",
		 build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	char *at = strstr(out, ", BLIS ");
	assert_non_null(at);
	char kernels[32] = {0};
	assert_int_equal(sscanf(at, ", BLIS %31s kernels", kernels), 1);
	__builtin_cpu_init();
	bool vector = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	print_message("BLIS kernels: %s (this processor %s AVX2 and FMA)\n", kernels,
		      vector ? "has" : "lacks");
	if (vector)
		assert_string_not_equal(kernels, "generic");
	bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
		      __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
		      __builtin_cpu_supports("avx512vl");
	if (__builtin_cpu_is("intel") && avx512)
		assert_string_equal(kernels, "skx");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binary_help_answers_questions),
		cmocka_unit_test(test_binary_waits_briefly_unless_told),
		cmocka_unit_test(test_binary_team_keeps_the_bits),
		cmocka_unit_test(test_resgen_summary_says_what_it_counts),
		cmocka_unit_test(test_binary_runs_vector_blis_kernels),
		cmocka_unit_test(test_make_build_folders_emit_their_own_code),
	};
	command_only_some();
	return cmocka_run_group_tests_name("the process", tests, setup, NULL);
}
