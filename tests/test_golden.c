/* Golden emitted code: the generator's output for two small specs must
 * match tests/golden/ byte for byte. 'make golden' refreshes the copies
 * when a change to the output is intended. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char *slurp(const char *path, size_t *length)
{
	FILE *file = fopen(path, "rb");
	if (!file)
		return NULL;
	fseek(file, 0, SEEK_END);
	long size = ftell(file);
	fseek(file, 0, SEEK_SET);
	char *text = malloc((size_t)size + 1);
	if (text && fread(text, 1, (size_t)size, file) != (size_t)size) {
		free(text);
		text = NULL;
	}
	fclose(file);
	if (text)
		text[size] = '\0';
	*length = (size_t)size;
	return text;
}

static void compare_with_golden(const char *name)
{
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	char command[2048], out_dir[512];
	snprintf(out_dir, sizeof out_dir, "%s/tests/golden-%s", build, name);
	snprintf(command, sizeof command, "rm -rf %s && %s/bin/resgen generate tests/golden/%s.yaml -o %s",
		 out_dir, build, name, out_dir);
	assert_int_equal(system(command), 0);
	const char *files[] = {"net.c", "kernels.h", "kernel_table.h", "kernels.c", "arena.h"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char golden_path[600], fresh_path[600];
		snprintf(golden_path, sizeof golden_path, "tests/golden/%s/%s", name, files[i]);
		snprintf(fresh_path, sizeof fresh_path, "%s/%s", out_dir, files[i]);
		size_t golden_length, fresh_length;
		char *golden = slurp(golden_path, &golden_length);
		char *fresh = slurp(fresh_path, &fresh_length);
		assert_non_null(golden);
		assert_non_null(fresh);
		if (golden_length != fresh_length || memcmp(golden, fresh, golden_length) != 0) {
			int line = 1;
			size_t at = 0;
			while (at < golden_length && at < fresh_length && golden[at] == fresh[at])
				line += golden[at++] == '\n';
			print_error("%s differs from %s from line %d; if the change is intended, run "
				    "'make golden' and commit the new copy\n",
				    fresh_path, golden_path, line);
			fail();
		}
		free(golden);
		free(fresh);
	}
}

static void test_golden_original(void **unused)
{
	(void)unused;
	compare_with_golden("tiny-original");
}

static void test_golden_full_preact(void **unused)
{
	(void)unused;
	compare_with_golden("tiny-full-preact");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_original),
		cmocka_unit_test(test_golden_full_preact),
	};
	return cmocka_run_group_tests_name("golden", tests, NULL, NULL);
}
