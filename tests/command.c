/* Commands as users run them, for the system tests; see command.h. */
#include "command.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

char build[256], scratch[300];

int command_setup(const char *name)
{
	snprintf(build, sizeof build, "%s", getenv("BUILD") ? getenv("BUILD") : "build");
	snprintf(scratch, sizeof scratch, "%s/tests/scratch-%s", build, name);
	char command[4096];
	snprintf(command, sizeof command, "rm -rf %s && mkdir -p %s", scratch, scratch);
	return system(command);
}

void command_only_some(void)
{
	if (getenv("RESGEN_TESTS"))
		cmocka_set_test_filter(getenv("RESGEN_TESTS"));
}

int run(const char *command, char *out, size_t out_size, char *err, size_t err_size)
{
	char full[8192], out_path[400], err_path[400];
	snprintf(out_path, sizeof out_path, "%s/stdout", scratch);
	snprintf(err_path, sizeof err_path, "%s/stderr", scratch);
	snprintf(full, sizeof full, "%s >%s 2>%s", command, out_path, err_path);
	int status = system(full);
	const char *paths[] = {out_path, err_path};
	char *texts[] = {out, err};
	size_t sizes[] = {out_size, err_size};
	for (int i = 0; i < 2; i++) {
		if (!texts[i])
			continue;
		FILE *file = fopen(paths[i], "r");
		size_t got = file ? fread(texts[i], 1, sizes[i] - 1, file) : 0;
		texts[i][got] = '\0';
		if (file)
			fclose(file);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void expect_failure(const char *command, int status, const char *message)
{
	char err[4096];
	int got = run(command, NULL, 0, err, sizeof err);
	if (got != status || strcmp(err, message) != 0)
		print_error("command: %s\nexpected %d: %s     got %d: %s", command, status, message, got, err);
	assert_int_equal(got, status);
	assert_string_equal(err, message);
}

void expect_line(const char *err, const char *expected)
{
	if (strcmp(err, expected) != 0)
		fail_msg("expected the line\n%sgot\n%s", expected, err);
}

void expect_printable(const char *text)
{
	for (const unsigned char *at = (const unsigned char *)text; *at; at++)
		if ((*at < 0x20 && *at != '\n') || *at == 0x7f)
			fail_msg("byte 0x%02x at %td of:\n%s", *at, (const char *)at - text, text);
}

bool exists(const char *path) { return access(path, F_OK) == 0; }

void expect_in(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		fail_msg("expected \"%s\" in:\n%s", needle, text);
}

void write_text(const char *path, const char *text)
{
	FILE *file = fopen(path, "w");
	assert_non_null(file);
	fputs(text, file);
	assert_int_equal(fclose(file), 0);
}

bool same_file(const char *a, const char *b)
{
	char command[4096];
	snprintf(command, sizeof command, "cmp -s '%s' '%s'", a, b);
	return system(command) == 0;
}

bool same_rows(const char *a, const char *b)
{
	char command[4096];
	snprintf(command, sizeof command, "cmp -s <(cut -d, -f1-8 %s) <(cut -d, -f1-8 %s)", a, b);
	char quoted[4200];
	snprintf(quoted, sizeof quoted, "bash -c '%s'", command);
	return system(quoted) == 0;
}

int binary(const char *prefix, const char *name, const char *options, char *out, size_t out_size, char *err,
	   size_t err_size)
{
	char command[4096];
	snprintf(command, sizeof command, "%s %s/tests/bin/%s %s", prefix, build, name, options);
	return run(command, out, out_size, err, err_size);
}

/* The bound is the soft one, which resgen lifts (a sanitized resgen maps
 * terabytes of shadow memory). */
int torch_tool(const char *arguments, char *out, size_t out_size, char *err, size_t err_size)
{
	char command[4096], resgen[400];
	snprintf(resgen, sizeof resgen, "%s/resgen-unbounded", scratch);
	if (access(resgen, X_OK) != 0) {
		snprintf(command, sizeof command, "#!/bin/sh\nulimit -S -v unlimited\nexec %s/bin/resgen \"$@\"\n", build);
		write_text(resgen, command);
		assert_int_equal(chmod(resgen, 0755), 0);
	}
	snprintf(command, sizeof command,
		 "(ulimit -S -v 8000000; RESGEN=%s exec timeout 60 /usr/bin/python3 tools/pytorch/resgen_torch.py %s)",
		 resgen, arguments);
	return run(command, out, out_size, err, err_size);
}

