/* The rooms of runtime/ (docs/build.md, "The runtime's rooms"): every
 * #include of a runtime file resolves to a runtime file, and none runs from
 * a lower room to a higher one, and the include graph has no circle. The
 * rooms, lowest first, are the order below; runtime/ itself (net_api.h,
 * real.h, schedule.h, same_bits.h) is the contract every room reads. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

static const char *const rooms[] = {"", "shared", "machine", "parallel", "kernels", "data", "run", "train",
				    "command"};
enum { ROOMS = sizeof rooms / sizeof rooms[0], FILES_MAX = 256 };

/* Includes that run up a room on purpose, each named in docs/build.md with
 * why: "from -> to" as paths under runtime/. None today. */
static const char *const named_upward[] = {NULL};

struct source {
	char path[200]; /* under runtime/ */
	int room;
	int includes[64], include_count; /* indices into files */
	int mark; /* the walk for circles: 0 unseen, 1 on the path, 2 done */
};

static struct source files[FILES_MAX];
static int file_count;

static int room_of(const char *path)
{
	const char *slash = strchr(path, '/');
	size_t length = slash ? (size_t)(slash - path) : 0;
	for (int r = 0; r < ROOMS; r++)
		if (strlen(rooms[r]) == length && strncmp(path, rooms[r], length) == 0)
			return r;
	return -1;
}

static void gather(const char *folder)
{
	char full[300];
	snprintf(full, sizeof full, "runtime%s%s", *folder ? "/" : "", folder);
	DIR *d = opendir(full);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char path[200], on_disk[300];
		assert_true(snprintf(path, sizeof path, "%s%s%s", folder, *folder ? "/" : "", e->d_name) <
			    (int)sizeof path);
		assert_true(snprintf(on_disk, sizeof on_disk, "runtime/%s", path) < (int)sizeof on_disk);
		struct stat st;
		assert_int_equal(stat(on_disk, &st), 0);
		size_t n = strlen(path);
		if (S_ISDIR(st.st_mode))
			gather(path);
		else if (n > 2 && path[n - 2] == '.' && (path[n - 1] == 'c' || path[n - 1] == 'h')) {
			assert_true(file_count < FILES_MAX);
			snprintf(files[file_count].path, sizeof files[file_count].path, "%s", path);
			files[file_count].room = room_of(path);
			if (files[file_count].room < 0)
				fail_msg("runtime/%s: a folder that is not a room; add it to test_rooms.c's rooms and "
					 "docs/build.md",
					 path);
			file_count++;
		}
	}
	closedir(d);
}

static const struct source *find(const char *path)
{
	for (int i = 0; i < file_count; i++)
		if (strcmp(files[i].path, path) == 0)
			return &files[i];
	return NULL;
}

/* What "#include name" in from means, as the compiler finds it: a path
 * with a folder is under runtime/ (kernels/conv.h) or beside from
 * (conv/shape.h in kernels/); a bare name is beside from, else in any
 * room's folder (each is on the include path) or runtime/ itself. */
static const struct source *resolve(const struct source *from, const char *name)
{
	char beside[300];
	const char *slash = strrchr(from->path, '/');
	snprintf(beside, sizeof beside, "%.*s%s", slash ? (int)(slash - from->path + 1) : 0, from->path, name);
	const struct source *found = find(beside);
	if (found || strchr(name, '/'))
		return found ? found : find(name);
	for (int r = 0; r < ROOMS && !found; r++) {
		char in_room[300];
		snprintf(in_room, sizeof in_room, "%s%s%s", rooms[r], *rooms[r] ? "/" : "", name);
		found = find(in_room);
	}
	return found;
}

static bool named(const char *from, const char *to)
{
	for (int i = 0; named_upward[i]; i++) {
		char pair[500];
		snprintf(pair, sizeof pair, "%s -> %s", from, to);
		if (strcmp(named_upward[i], pair) == 0)
			return true;
	}
	return false;
}

/* Each include of each file: the includes it has, and how many of them run
 * up a room without being named. */
static int check_file(const struct source *f, int *includes, char *first_wrong, size_t size)
{
	char on_disk[300], line[1000];
	assert_true(snprintf(on_disk, sizeof on_disk, "runtime/%s", f->path) < (int)sizeof on_disk);
	FILE *in = fopen(on_disk, "r");
	assert_non_null(in);
	int wrong = 0;
	for (int number = 1; fgets(line, sizeof line, in); number++) {
		char name[200];
		if (sscanf(line, " #include \"%199[^\"]\"", name) != 1)
			continue;
		(*includes)++;
		const struct source *to = resolve(f, name);
		if (!to)
			fail_msg("runtime/%s:%d: #include \"%s\" is no runtime file", f->path, number, name);
		assert_true(f->include_count < 64);
		((struct source *)f)->includes[((struct source *)f)->include_count++] = (int)(to - files);
		if (to->room <= f->room || named(f->path, to->path))
			continue;
		if (wrong++ == 0 && snprintf(first_wrong, size, "runtime/%s:%d: includes %s, of a higher room (%s over %s)",
				 f->path, number, to->path, rooms[to->room],
					     *rooms[f->room] ? rooms[f->room] : "runtime/") >= (int)size)
			first_wrong[size - 1] = '\0';
	}
	fclose(in);
	return wrong;
}

static void test_no_include_runs_up_a_room(void **unused)
{
	(void)unused;
	file_count = 0;
	memset(files, 0, sizeof files);
	gather("");
	assert_true(file_count > 50);
	int includes = 0, wrong = 0;
	char first[600] = "";
	for (int i = 0; i < file_count; i++)
		wrong += check_file(&files[i], &includes, first[0] ? (char[1]){0} : first, first[0] ? 1 : sizeof first);
	printf("%d runtime files, %d includes, %d running up a room\n", file_count, includes, wrong);
	if (wrong)
		fail_msg("%s (and %d more); move the file, or name the include in docs/build.md and named_upward",
			 first, wrong - 1);
}

/* A walk of includes from file i: -1 if it never comes back to a file on
 * its path; else the circle's files are appended to circle, backwards, and
 * the index of the file it came back to is returned while the walk unwinds
 * towards it (-2 past it). */
static int circle_from(int i, char *circle, size_t size)
{
	files[i].mark = 1;
	for (int k = 0; k < files[i].include_count; k++) {
		int to = files[i].includes[k];
		int back = files[to].mark == 1 ? to : files[to].mark == 0 ? circle_from(to, circle, size) : -1;
		if (back == -1)
			continue;
		if (back >= 0) {
			size_t used = strlen(circle);
			snprintf(circle + used, size - used, " %s", files[i].path);
		}
		return back == i ? -2 : back;
	}
	files[i].mark = 2;
	return -1;
}

static void test_the_include_graph_has_no_circle(void **unused)
{
	(void)unused;
	file_count = 0;
	memset(files, 0, sizeof files);
	gather("");
	int includes = 0;
	char ignored[8];
	for (int i = 0; i < file_count; i++)
		check_file(&files[i], &includes, ignored, sizeof ignored);
	char circle[2000] = "";
	for (int i = 0; i < file_count; i++)
		if (files[i].mark == 0 && circle_from(i, circle, sizeof circle) != -1)
			fail_msg("the includes run in a circle, backwards:%s", circle);
}

/* The check itself: an include planted from a lower room to a higher one is
 * found. */
static void test_an_upward_include_is_found(void **unused)
{
	(void)unused;
	file_count = 0;
	memset(files, 0, sizeof files);
	gather("");
	const struct source *checkpoint = find("run/checkpoint.h"), *train = find("train/train.h");
	assert_non_null(checkpoint);
	assert_non_null(train);
	const struct source *to = resolve(checkpoint, "train.h");
	assert_ptr_equal(to, train);
	assert_true(to->room > checkpoint->room);
	assert_ptr_equal(resolve(find("kernels/conv.h"), "conv/shape.h"), find("kernels/conv/shape.h"));
	assert_ptr_equal(resolve(find("kernels/conv/shape.h"), "kernels/common.h"), find("kernels/common.h"));
	assert_int_equal(find("same_bits.h")->room, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_include_runs_up_a_room),
		cmocka_unit_test(test_the_include_graph_has_no_circle),
		cmocka_unit_test(test_an_upward_include_is_found),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
