/* Running the binaries, resgen and make as users do, for the system tests
 * (test_train.c, test_refusals.c, test_process.c, ...): commands through the shell with their
 * output captured, and the checks made of what they printed and wrote. */
#ifndef RESGEN_TESTS_COMMAND_H
#define RESGEN_TESTS_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

/* The build folder (BUILD, else build) and a scratch folder in it, made
 * anew by command_setup(NAME) as BUILD/tests/scratch-NAME. */
extern char build[256], scratch[300];
int command_setup(const char *name);

/* Before the group runs: only the tests whose names match RESGEN_TESTS
 * (cmocka's pattern: * and ? wildcards), where it is set. */
void command_only_some(void);

/* Runs command with stdout and stderr captured (out and err may be NULL);
 * returns the exit status, -1 for a death by signal. */
int run(const char *command, char *out, size_t out_size, char *err, size_t err_size);

/* Asserts the exit status and the exact stderr of command. */
void expect_failure(const char *command, int status, const char *message);

/* Asserts that err is exactly the line expected. */
void expect_line(const char *err, const char *expected);

/* Asserts that every line of text is printable: no control byte but the
 * newlines. */
void expect_printable(const char *text);

/* Whether path exists (as anything). */
bool exists(const char *path);

/* Asserts that needle is in text. */
void expect_in(const char *text, const char *needle);

void write_text(const char *path, const char *text);

/* A test binary (build/tests/bin/NAME: tiny-f32, fashion-tiny-f32...)
 * with options, started by prefix (an environment, a loader; "" for
 * none). */
int binary(const char *prefix, const char *name, const char *options, char *out, size_t out_size, char *err,
	   size_t err_size);

/* tools/pytorch/resgen_torch.py with arguments, checking specs with this
 * build's resgen, bounded in time and memory: a hang or a runaway
 * allocation fails the test, not the machine. */
int torch_tool(const char *arguments, char *out, size_t out_size, char *err, size_t err_size);

/* Whether files a and b hold the same bytes. */
bool same_file(const char *a, const char *b);

/* Whether two logs (--log) have the same rows, the timing columns
 * (seconds and images/s) aside. */
bool same_rows(const char *a, const char *b);

#endif
