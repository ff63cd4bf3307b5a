/* The one way files are replaced (runtime/shared/file_replace.c): a kill at any
 * instant leaves the old file or the new one and no temporary; concurrent
 * saves leave one whole file; special files and links are never replaced. */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "file_replace.h"

static char folder[300], target[400];

static int setup(void **unused)
{
	(void)unused;
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	snprintf(folder, sizeof folder, "%s/tests/scratch-replace", build);
	snprintf(target, sizeof target, "%s/target", folder);
	char command[700];
	snprintf(command, sizeof command, "rm -rf %s && mkdir -p %s", folder, folder);
	return system(command);
}

static void write_whole(const char *path, char fill, size_t size)
{
	char error[600];
	struct file_replace r;
	assert_int_equal(file_replace_begin(&r, path, error, sizeof error), 0);
	for (size_t i = 0; i < size; i++)
		fputc(fill, r.file);
	assert_int_equal(file_replace_commit(&r, error, sizeof error), 0);
}

/* The file is size bytes, all of them fill. */
static void expect_whole(const char *path, char fill, size_t size)
{
	FILE *file = fopen(path, "rb");
	assert_non_null(file);
	size_t count = 0;
	for (int c; (c = fgetc(file)) != EOF; count++)
		assert_int_equal(c, fill);
	fclose(file);
	assert_int_equal(count, size);
}

static int entries(const char *path)
{
	DIR *dir = opendir(path);
	assert_non_null(dir);
	int count = 0;
	for (struct dirent *e; (e = readdir(dir));)
		count += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(dir);
	return count;
}

/* A child writes the new contents and is killed at a point: after begin,
 * midway through the writing, or before commit; the old file stays, and
 * the folder holds nothing else. */
static void test_replace_kill_leaves_old_file_and_no_temporary(void **unused)
{
	(void)unused;
	const size_t size = 1 << 20;
	write_whole(target, 'o', size);
	for (int point = 0; point < 3; point++) {
		int ready[2];
		assert_int_equal(pipe(ready), 0);
		pid_t child = fork();
		if (child == 0) {
			char error[600];
			struct file_replace r;
			if (file_replace_begin(&r, target, error, sizeof error) != 0)
				_exit(1);
			for (size_t i = 0; i < (point == 0 ? 0 : point == 1 ? size / 2 : size); i++)
				fputc('n', r.file);
			fflush(r.file);
			if (write(ready[1], "x", 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
		char byte;
		assert_int_equal(read(ready[0], &byte, 1), 1);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		close(ready[0]);
		close(ready[1]);
		expect_whole(target, 'o', size);
		assert_int_equal(entries(folder), 1);
	}
	write_whole(target, 'n', size);
	expect_whole(target, 'n', size);
	assert_int_equal(entries(folder), 1);
}

/* Two processes saving to one path 40 times each: the file is always one
 * save's bytes, never a mix. */
static void test_replace_concurrent_saves_leave_one_whole_file(void **unused)
{
	(void)unused;
	const size_t size = 256 << 10;
	pid_t children[2];
	for (int c = 0; c < 2; c++) {
		children[c] = fork();
		if (children[c] == 0) {
			for (int round = 0; round < 40; round++) {
				char error[600];
				struct file_replace r;
				if (file_replace_begin(&r, target, error, sizeof error) != 0)
					_exit(1);
				for (size_t i = 0; i < size; i++)
					fputc(c ? 'b' : 'a', r.file);
				if (file_replace_commit(&r, error, sizeof error) != 0)
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int c = 0; c < 2; c++) {
		int status;
		waitpid(children[c], &status, 0);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	FILE *file = fopen(target, "rb");
	assert_non_null(file);
	int first = fgetc(file);
	fclose(file);
	assert_true(first == 'a' || first == 'b');
	expect_whole(target, (char)first, size);
	assert_int_equal(entries(folder), 1);
}

static void test_replace_refuses_what_is_not_a_regular_file(void **unused)
{
	(void)unused;
	char error[600], path[500], expected[900];
	struct file_replace r;
	snprintf(path, sizeof path, "%s/link", folder);
	assert_int_equal(symlink("target", path), 0);
	assert_int_equal(file_replace_begin(&r, path, error, sizeof error), -1);
	snprintf(expected, sizeof expected,
		 "%s: cannot write: it is a symbolic link; name the file itself", path);
	assert_string_equal(error, expected);
	snprintf(path, sizeof path, "%s/fifo", folder);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(file_replace_begin(&r, path, error, sizeof error), -1);
	snprintf(expected, sizeof expected,
		 "%s: cannot write: it exists and is not a regular file (a device, FIFO or socket); "
		 "name a regular file",
		 path);
	assert_string_equal(error, expected);
	assert_int_equal(file_replace_check("/dev/null", error, sizeof error), -1);
	/* The target turned into a FIFO between begin and commit: refused. */
	snprintf(path, sizeof path, "%s/swapped", folder);
	assert_int_equal(file_replace_begin(&r, path, error, sizeof error), 0);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(file_replace_commit(&r, error, sizeof error), -1);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(entries(folder), 4); /* target, link, fifo, swapped */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replace_kill_leaves_old_file_and_no_temporary),
		cmocka_unit_test(test_replace_concurrent_saves_leave_one_whole_file),
		cmocka_unit_test(test_replace_refuses_what_is_not_a_regular_file),
	};
	return cmocka_run_group_tests_name("file_replace", tests, setup, NULL);
}
