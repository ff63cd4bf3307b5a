/* How a binary starts: run through the loader or under another name, the
 * environment it reads (threads, waits, choices, BLIS_ARCH_TYPE, the
 * instruction sets) and the numbers its options take, each refused in one
 * printable line where it cannot be used. Each case failed on the code
 * before its fix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "command.h"

static int setup(void **unused)
{
	(void)unused;
	return command_setup("startup");
}

static const char loader[] = "/lib64/ld-linux-x86-64.so.2";

/* Through the dynamic loader the binary trains, and its first argument is
 * never taken for a program; the short spin is in force (the machine line
 * reads it back from the libgomp the binary runs on), and libgomp, which
 * prints what it read of the environment (OMP_DISPLAY_ENV), read the
 * user's: no GOMP_SPINCOUNT. */
static void test_binary_runs_as_itself_through_the_loader(void **unused)
{
	(void)unused;
	if (!exists(loader))
		skip();
	char prefix[600], out[16384], err[16384], pwned[400], options[1024];
	snprintf(prefix, sizeof prefix, "env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY OMP_DISPLAY_ENV=verbose %s", loader);
	assert_int_equal(binary(prefix, "tiny-f32", "train --synthetic --iterations 2 --batch 8 --threads 2", out,
				sizeof out, err, sizeof err),
			 0);
	expect_in(out, "; threads wait: spin 1000, then sleep; ");
	expect_in(err, "OPENMP DISPLAY ENVIRONMENT BEGIN");
	assert_null(strstr(err, "GOMP_SPINCOUNT = '1000'"));
	/* the program's first argument is a command to it, not a program */
	snprintf(pwned, sizeof pwned, "%s/PWNED", scratch);
	snprintf(options, sizeof options, "/usr/bin/touch %s", pwned);
	assert_int_equal(binary(loader, "tiny-f32", options, NULL, 0, err, sizeof err), 2);
	assert_false(exists(pwned));
	expect_in(err, "tiny: /usr/bin/touch is not a command (");
}

/* The process keeps its name (pgrep -x NAME finds it) and runs under
 * valgrind, which a restart would leave. */
static void test_binary_keeps_its_name_and_its_tool(void **unused)
{
	(void)unused;
	char command[4096], out[16384], err[16384];
	snprintf(command, sizeof command,
		 "{ env -u GOMP_SPINCOUNT %s/tests/bin/tiny-f32 train --synthetic --iterations 1000000 --batch 8 "
		 "> /dev/null & pid=$!; sleep 1; cat /proc/$pid/comm; kill -KILL $pid; wait $pid; true; }",
		 build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	assert_string_equal(out, "tiny-f32\n");
	/* valgrind runs no sanitized binary */
	const char *sanitize = getenv("SANITIZE");
	if (system("valgrind --version > /dev/null 2>&1") != 0 || (sanitize && strcmp(sanitize, "1") == 0))
		skip();
	/* a command refused before any kernel runs. valgrind 3.19's processor
	 * has no AVX-512: where -march=native gave the build some, the binary
	 * refuses that processor, in its own name, from inside the tool */
	char expected[1024];
	snprintf(expected, sizeof expected,
		 "tiny: nosuch is not a command (train, evaluate, step, init, gradflow, explain, info); see "
		 "%s/tests/bin/tiny-f32 --help\n",
		 build);
	assert_int_equal(binary("env -u GOMP_SPINCOUNT valgrind -q --tool=none", "tiny-f32", "nosuch", out, sizeof out,
				err, sizeof err),
			 2);
	if (strncmp(err, "tiny-f32: this processor lacks avx512", 37) != 0)
		expect_line(err, expected);
}

/* The user's wait is shown printable: an escape or a newline in it can
 * neither drive the terminal nor forge a line. */
static void test_binary_shows_the_wait_printable(void **unused)
{
	(void)unused;
	char out[16384];
	assert_int_equal(binary("env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=\"$(printf '5\\033[2J\\ntest error: 0.00 (forged)')\"",
				"tiny-f64", "train --iterations 2", out, sizeof out, NULL, 0),
			 0);
	expect_in(out, "; threads wait: GOMP_SPINCOUNT=5\\x1b[2J\\x0atest error: 0.00 (forged); ");
	assert_null(strstr(out, "\ntest error: 0.00 (forged)"));
	expect_printable(out);
}

static void test_binary_refuses_thread_variables_it_cannot_use(void **unused)
{
	(void)unused;
	static const char *const cases[][3] = {
		{"RESGEN_TEAM=abc", "--threads 2",
		 "tiny: RESGEN_TEAM is 'abc'; it must be a whole number from 1 to the run's 2 threads, or unset (each "
		 "pass then runs on the free cores)\n"},
		{"RESGEN_TEAM=0", "--threads 2",
		 "tiny: RESGEN_TEAM is '0'; it must be a whole number from 1 to the run's 2 threads, or unset (each "
		 "pass then runs on the free cores)\n"},
		{"RESGEN_TEAM=-1", "--threads 2",
		 "tiny: RESGEN_TEAM is '-1'; it must be a whole number from 1 to the run's 2 threads, or unset (each "
		 "pass then runs on the free cores)\n"},
		{"RESGEN_TEAM=3", "--threads 2",
		 "tiny: RESGEN_TEAM is '3'; it must be a whole number from 1 to the run's 2 threads, or unset (each "
		 "pass then runs on the free cores)\n"},
		{"RESGEN_TEAM=73786976294838206464", "--threads 1",
		 "tiny: RESGEN_TEAM is '73786976294838206464'; it must be a whole number from 1 to the run's 1 thread, "
		 "or unset (each pass then runs on the free cores)\n"},
		{"OMP_NUM_THREADS=100000", "",
		 "tiny: OMP_NUM_THREADS is '100000'; it must be a whole number from 1 to 1024, or unset for every core "
		 "(--threads T sets the count too)\n"},
		{"OMP_NUM_THREADS=2000", "",
		 "tiny: OMP_NUM_THREADS is '2000'; it must be a whole number from 1 to 1024, or unset for every core "
		 "(--threads T sets the count too)\n"},
		{"OMP_NUM_THREADS=2,1", "",
		 "tiny: OMP_NUM_THREADS is '2,1'; it must be a whole number from 1 to 1024, or unset for every core "
		 "(--threads T sets the count too)\n"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char prefix[256], options[256], err[2048];
		snprintf(prefix, sizeof prefix, "env %s", cases[i][0]);
		snprintf(options, sizeof options, "train --iterations 2 %s", cases[i][1]);
		assert_int_equal(binary(prefix, "tiny-f64", options, NULL, 0, err, sizeof err), 2);
		expect_line(err, cases[i][2]);
	}
	/* --threads sets the count where OMP_NUM_THREADS cannot */
	assert_int_equal(binary("env OMP_NUM_THREADS=100000", "tiny-f64", "train --iterations 2 --threads 1", NULL, 0,
				NULL, 0),
			 0);
	/* a team fixed by RESGEN_TEAM is said to be, not blamed on others */
	char out[16384];
	assert_int_equal(binary("env RESGEN_TEAM=1", "tiny-f64", "train --iterations 2 --threads 2", out, sizeof out,
				NULL, 0),
			 0);
	expect_in(out, " passes ran on 1 of the 2 threads, as RESGEN_TEAM=1 fixed\n");
	assert_null(strstr(out, "other work"));
}

static void test_binary_refuses_a_choice_given_twice(void **unused)
{
	(void)unused;
	char err[2048];
	assert_int_equal(binary("env RESGEN_CHOICES=winograd=on,winograd=off", "tiny-f64", "train --iterations 2", NULL,
				0, err, sizeof err),
			 2);
	expect_line(err, "tiny: RESGEN_CHOICES, character 13: 'winograd' is given twice; give each choice once\n");
}

static void test_set_reads_numbers_as_the_spec_does(void **unused)
{
	(void)unused;
	char out[16384], err[2048];
	assert_int_equal(binary("", "tiny-f64", "train --set iterations=010", NULL, 0, err, sizeof err), 2);
	expect_in(err, "tiny: --set iterations=010, column 18: 'iterations' must be an integer, not '010'; write it in "
		       "plain decimal, such as 110 (no quotes, leading zeros or hex)");
	/* a value in plain decimal past double's range is out of range, not
	 * misspelt; one within it is taken */
	assert_int_equal(binary("", "tiny-f64", "train --iterations 2 --set lr.base=1e999", NULL, 0, err, sizeof err), 2);
	expect_in(err, "tiny: --set lr.base=1e999, column 15: 'lr.base' is 1e999, out of range; it must be above 0 and "
		       "at most 10");
	assert_int_equal(binary("", "tiny-f64", "train --iterations 2 --set lr.base=1e-320", out, sizeof out, NULL, 0), 0);
	expect_in(out, "; --set lr.base=1e-320");
	/* and echoed as written in the spec's notation */
	assert_int_equal(binary("", "tiny-f64", "train --iterations 2 --set lr.base=10", out, sizeof out, NULL, 0), 0);
	expect_in(out, "; --set lr.base=10\n");
}

/* Issue 84, item 11: a BLIS_ARCH_TYPE that BLIS has no kernels for
 * aborted the binary (134), and one this processor lacks the instructions
 * for ended it on an illegal instruction (132). It is checked before BLIS
 * reads it: one line naming it and the numbers that work here, exit 2;
 * a number that works here runs. */
static void test_blis_arch_type_is_checked_first(void **unused)
{
	(void)unused;
	const char *values[] = {"99", "13", "24", "3x", "zen3", "", "-1"};
	char command[1024], out[4096], err[4096], expected[256];
	for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
		snprintf(command, sizeof command, "BLIS_ARCH_TYPE='%s' %s/tests/bin/tiny-f32 train --synthetic --iterations 1",
			 values[i], build);
		assert_int_equal(run(command, out, sizeof out, err, sizeof err), 2);
		snprintf(expected, sizeof expected,
			 "tiny-f32: BLIS_ARCH_TYPE is '%s', not the number of a kernel set of BLIS that this processor "
			 "runs; give one of ",
			 values[i]);
		assert_int_equal(strncmp(err, expected, strlen(expected)), 0);
		expect_in(err, " (haswell), ");
		assert_string_equal(strstr(err, ", or unset it"), ", or unset it for resgen's choice\n");
		assert_string_equal(out, "");
	}
	/* knl's kernels need AVX-512 ER, which no processor since Knights Mill has */
	if (run("grep -qw avx512er /proc/cpuinfo", NULL, 0, NULL, 0) != 0) {
		snprintf(command, sizeof command, "BLIS_ARCH_TYPE=1 %s/tests/bin/tiny-f32 train --synthetic --iterations 1",
			 build);
		assert_int_equal(run(command, out, sizeof out, err, sizeof err), 2);
		expect_in(err, "tiny-f32: BLIS_ARCH_TYPE is '1', not the number");
		assert_null(strstr(err, "1 (knl)"));
	}
	snprintf(command, sizeof command, "BLIS_ARCH_TYPE=3 %s/tests/bin/tiny-f32 train --synthetic --iterations 1", build);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "BLIS haswell kernels");
}

/* 13. The instruction check shows the program's name printable, as every
 * other message does: an escape sequence or a newline in it reaches the
 * terminal as \xNN, and the line stays one line. */
static void test_instruction_check_shows_the_name_printable(void **unused)
{
	(void)unused;
	const char *sanitize = getenv("SANITIZE"); /* no sanitizer under qemu-user */
	if (sanitize && strcmp(sanitize, "1") == 0)
		skip();
	char command[1024], out[4096], err[4096];
	snprintf(command, sizeof command, "qemu-x86_64 -cpu Nehalem -0 \"$(printf 'de\\033[31mmo\\nx')\" %s/bin/demo info",
		 build);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 2);
	expect_in(err, "de\\x1b[31mmo\\x0ax: this processor lacks avx, ");
	assert_string_equal(strchr(err, '\n'), "\n");
}

/* 12. Every library's constructor, and every later reader, sees the
 * user's environment as the user gave it: a preloaded library looks at
 * it as it loads and as the process ends. */
static void test_constructors_see_the_users_environment(void **unused)
{
	(void)unused;
	const char *sanitize = getenv("SANITIZE"); /* ASan's runtime must load first */
	if (sanitize && strcmp(sanitize, "1") == 0)
		skip();
	char source[400], shim[400], command[4096], out[8192], err[8192];
	snprintf(source, sizeof source, "%s/shim.c", scratch);
	snprintf(shim, sizeof shim, "%s/shim.so", scratch);
	write_text(source,
		   "#include <stdio.h>\n#include <stdlib.h>\nextern char **environ;\n"
		   "static void look(const char *when)\n{\n\tint n = 0;\n\tfor (char **e = environ; *e; e++)\n\t\tn++;\n"
		   "\tconst char *names[] = {\"PATH\", \"PROBE\", \"GOMP_SPINCOUNT\"};\n\tfprintf(stderr, \"shim %s:\", when);\n"
		   "\tfor (int i = 0; i < 3; i++)\n\t\tfprintf(stderr, \" %s=%s\", names[i], getenv(names[i]) ? "
		   "getenv(names[i]) : \"(unset)\");\n\tfprintf(stderr, \", %d variables\\n\", n);\n}\n"
		   "__attribute__((constructor)) static void loading(void) { look(\"loading\"); }\n"
		   "__attribute__((destructor)) static void ending(void) { look(\"ending\"); }\n");
	snprintf(command, sizeof command, "cc -shared -fPIC -o %s %s", shim, source);
	assert_int_equal(run(command, NULL, 0, err, sizeof err), 0);
	snprintf(command, sizeof command, "env -i PROBE=1 PATH=/usr/bin LD_PRELOAD=%s %s/tests/bin/tiny-f32 info", shim,
		 build);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	expect_in(err, "shim loading: PATH=/usr/bin PROBE=1 GOMP_SPINCOUNT=(unset), 3 variables\n");
	expect_in(err, "shim ending: PATH=/usr/bin PROBE=1 GOMP_SPINCOUNT=(unset), 3 variables\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binary_runs_as_itself_through_the_loader),
		cmocka_unit_test(test_binary_keeps_its_name_and_its_tool),
		cmocka_unit_test(test_binary_shows_the_wait_printable),
		cmocka_unit_test(test_binary_refuses_thread_variables_it_cannot_use),
		cmocka_unit_test(test_binary_refuses_a_choice_given_twice),
		cmocka_unit_test(test_set_reads_numbers_as_the_spec_does),
		cmocka_unit_test(test_blis_arch_type_is_checked_first),
		cmocka_unit_test(test_instruction_check_shows_the_name_printable),
		cmocka_unit_test(test_constructors_see_the_users_environment),
	};
	command_only_some();
	return cmocka_run_group_tests_name("how a binary starts", tests, setup, NULL);
}
