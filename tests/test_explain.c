/* explain and RESGEN_CHOICES as a user meets them: every convolution's
 * choices printed, one block a layer; the override shown and followed by
 * the kernels; an unreadable override refused before any work. (The rules
 * themselves, for known shapes and micro-kernels: test_kernels.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "command.h"

static int setup(void **unused)
{
	(void)unused;
	return command_setup("explain");
}

enum { OUTPUT_MAX = 1 << 16 };
static char out[OUTPUT_MAX], err[4096];

/* The count of lines of text that start with prefix. */
static int lines_starting(const char *text, const char *prefix)
{
	int count = 0;
	size_t length = strlen(prefix);
	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		count += strncmp(line, prefix, length) == 0;
	return count;
}

/* The count of lines of text that hold needle. */
static int lines_holding(const char *text, const char *needle)
{
	int count = 0;
	for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle))
		count++;
	return count;
}

/* tiny-f64 explain: a block for each convolution, as many as the network
 * has convolution weights (info), each with its three passes and its
 * streaming; the machine and the override said first. */
static void test_explain_prints_every_convolution(void **unused)
{
	(void)unused;
	char command[1024], info[OUTPUT_MAX];
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 info", build);
	assert_int_equal(run(command, info, sizeof info, NULL, 0), 0);
	/* the convolutions' weights: (C_OUT, C_IN, K, K) */
	int convolutions = lines_holding(info, ", 3, 3) ") + lines_holding(info, ", 1, 1) ");
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 explain --batch 8 --threads 2", build);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	assert_string_equal(err, "");
	expect_in(out, "f64, batch 8, 2 threads\n");
	expect_in(out, "machine: BLIS's ");
	expect_in(out, "RESGEN_CHOICES: unset (every choice by its rule)\n");
	assert_true(convolutions > 0);
	assert_int_equal(lines_holding(out, " convolution, stride "), convolutions);
	assert_int_equal(lines_starting(out, "    forward  "), convolutions);
	assert_int_equal(lines_starting(out, "    data     "), convolutions);
	assert_int_equal(lines_starting(out, "    weight   "), convolutions);
	assert_int_equal(lines_starting(out, "    streams  "), 2 * convolutions);
	expect_in(out, "stem_conv: 3x3 convolution, stride 1, 3 -> ");
	/* the convolution that reads the images says training skips their gradient */
	assert_int_equal(lines_starting(out, "    images   "), 1);
	expect_in(out, "    images   their gradient, this convolution's data gradient: only for a step that reads it "
		       "(step --dump), not in training\n");
	assert_int_equal(lines_holding(out, "forced by RESGEN_CHOICES"), 0);
	/* the cores' cache as Linux says it (the highest level's sharers), and
	 * the round trip read against it (issue 77, item 8) */
	char expected[512], sysfs[256];
	if (access("/sys/devices/system/cpu/cpu0/cache", F_OK) != 0) {
		/* some virtual machines' kernels say nothing of caches */
		expect_in(out, "cores: Linux does not say which CPUs share the last-level cache\n");
		expect_in(out, "threads: a cache line's round trip between threads 0 and 1 took ");
		return;
	}
	assert_int_equal(run("for d in /sys/devices/system/cpu/cpu0/cache/index*; do echo \"$(cat $d/level) "
			     "$(cat $d/shared_cpu_list)\"; done | sort -n | tail -n 1 | cut -d' ' -f2 | tr ',' '\\n' | "
			     "awk -F- '{ n += ($2 == \"\" ? 1 : $2 - $1 + 1) } END { printf \"%d of the \", n }'; nproc",
			     sysfs, sizeof sysfs, NULL, 0),
			 0);
	snprintf(expected, sizeof expected, "cores: cpu0's last-level cache is shared by %s", sysfs);
	*strchr(expected, '\n') = '\0';
	expect_in(out, expected);
	assert_int_equal(lines_holding(out, ", as Linux says (a run measures") +
				 lines_holding(out, ", slower than cores that share a cache: the machine may be busy") +
				 lines_holding(out, ", as fast as cores that share a cache, though Linux says"),
			 1);
}

/* The override forces what it names, and explain says so; what the kernels
 * then compute follows it: with Winograd off where the rules chose it,
 * the step's numbers round differently, and streaming changes no bit. */
static void test_override_is_shown_and_followed(void **unused)
{
	(void)unused;
	char command[2048], by_rule[400], off[400], streamed[400];
	snprintf(command, sizeof command, "RESGEN_CHOICES=winograd=off,stream=on %s/tests/bin/tiny-f64 explain", build);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "RESGEN_CHOICES: winograd=off,stream=on\n");
	assert_int_equal(lines_holding(out, "    forward  Winograd"), 0);
	assert_true(lines_holding(out, "output: yes (forced by RESGEN_CHOICES)") > 0);

	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 explain", build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	bool winograd = lines_holding(out, "    forward  Winograd") > 0;
	snprintf(by_rule, sizeof by_rule, "%s/by-rule.tensors", scratch);
	snprintf(off, sizeof off, "%s/winograd-off.tensors", scratch);
	snprintf(streamed, sizeof streamed, "%s/streamed.tensors", scratch);
	const char *step = "step --synthetic --batch 6 --threads 2 --dump";
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 %s %s", build, step, by_rule);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	snprintf(command, sizeof command, "RESGEN_CHOICES=winograd=off %s/tests/bin/tiny-f64 %s %s", build, step, off);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	snprintf(command, sizeof command, "RESGEN_CHOICES=stream=on %s/tests/bin/tiny-f64 %s %s", build, step, streamed);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	assert_true(same_file(by_rule, streamed));
	if (winograd) /* else this machine's rules ran no Winograd to turn off */
		assert_false(same_file(by_rule, off));
	else
		print_message("no convolution ran Winograd by the rules here: the override's effect is not compared\n");
}

/* An unreadable override is refused before any work, naming where. */
static void test_unreadable_override_is_refused(void **unused)
{
	(void)unused;
	char command[1024];
	snprintf(command, sizeof command, "RESGEN_CHOICES='stream=on,winograd=maybe' %s/tests/bin/tiny-f64 train --synthetic",
		 build);
	expect_failure(command, 2,
		       "tiny: RESGEN_CHOICES, character 11: 'winograd=maybe' is not a choice; expected NAME=on, off or rule, "
		       "NAME one of winograd, row_split, weight_split, swap, stream, separated by commas\n");
	char message[1024];
	snprintf(command, sizeof command, "%s/tests/bin/tiny-f64 explain --dump x", build);
	snprintf(message, sizeof message, "tiny: --dump is for step, not for explain; see %s/tests/bin/tiny-f64 --help\n", build);
	expect_failure(command, 2, message);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_explain_prints_every_convolution),
		cmocka_unit_test(test_override_is_shown_and_followed),
		cmocka_unit_test(test_unreadable_override_is_refused),
	};
	command_only_some();
	return cmocka_run_group_tests_name("explain", tests, setup, NULL);
}
