/* Safe replacement of files; see file_replace.h. Linux: O_TMPFILE where the
 * file system has it (nothing named exists until the last instant), else a
 * name created with O_EXCL by mkstemp. */
#include "file_replace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void folder_of(const char *path, char *out, size_t size)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(out, size, ".");
	else if (slash == path)
		snprintf(out, size, "/");
	else
		snprintf(out, size, "%.*s", (int)(slash - path), path);
}

static const char *base_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* What identifies the file a path names: its device and inode where it
 * exists (links followed), else its path with the folder resolved, after
 * following a dangling link to the name it would create. */
struct file_key {
	bool exists;
	dev_t device;
	ino_t inode;
	char path[2 * PATH_MAX];
};

static void file_key(const char *path, struct file_key *key)
{
	char current[PATH_MAX], target[PATH_MAX], folder[PATH_MAX], resolved[PATH_MAX];
	struct stat st;
	snprintf(current, sizeof current, "%s", path);
	for (int links = 0; links < 40; links++) {
		if (stat(current, &st) == 0) {
			*key = (struct file_key){.exists = true, .device = st.st_dev, .inode = st.st_ino};
			return;
		}
		ssize_t length = readlink(current, target, sizeof target - 1);
		if (length < 0)
			break; /* no such file, and no link to one */
		target[length] = '\0';
		folder_of(current, folder, sizeof folder);
		int length_used = target[0] == '/' ? snprintf(current, sizeof current, "%s", target)
						   : snprintf(current, sizeof current, "%s/%s", folder, target);
		if (length_used >= (int)sizeof current)
			break; /* too long to follow: compared as named */
	}
	key->exists = false;
	folder_of(current, folder, sizeof folder);
	if (!realpath(folder, resolved))
		snprintf(resolved, sizeof resolved, "%s", folder);
	snprintf(key->path, sizeof key->path, "%s/%s", resolved, base_of(current));
}

bool file_same(const char *a, const char *b)
{
	struct file_key x, y;
	file_key(a, &x);
	file_key(b, &y);
	if (x.exists != y.exists)
		return false;
	return x.exists ? x.device == y.device && x.inode == y.inode : strcmp(x.path, y.path) == 0;
}

/* Why an existing path is no target, or NULL for a regular file. */
static const char *not_regular(const struct stat *st)
{
	if (S_ISREG(st->st_mode))
		return NULL;
	if (S_ISDIR(st->st_mode))
		return "it is a folder; name a file inside it";
	if (S_ISLNK(st->st_mode))
		return "it is a symbolic link; name the file itself";
	return "it exists and is not a regular file (a device, FIFO or socket); name a regular file";
}

/* replaced: the file will be replaced, so it must be absent or regular;
 * else it is written in place (a log), and only a folder is refused. */
static int check_output(const char *path, bool replaced, char *error, size_t size)
{
	char folder[PATH_MAX];
	struct stat st;
	if (path[0] == '\0' || strlen(path) >= PATH_MAX) {
		snprintf(error, size, "%s: cannot write: the path is empty or too long", path);
		return -1;
	}
	if ((replaced ? lstat(path, &st) : stat(path, &st)) == 0) {
		const char *why = replaced || S_ISDIR(st.st_mode) ? not_regular(&st) : NULL;
		if (why) {
			snprintf(error, size, "%s: cannot write: %s", path, why);
			return -1;
		}
		if (!replaced) { /* written in place: the file itself must be writable */
			if (access(path, W_OK) == 0)
				return 0;
			snprintf(error, size, "%s: cannot write: %s", path, strerror(errno));
			return -1;
		}
	} else if (errno != ENOENT) {
		snprintf(error, size, "%s: cannot write: %s", path, strerror(errno));
		return -1;
	}
	folder_of(path, folder, sizeof folder);
	if (stat(folder, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(error, size, "%s: cannot write: the folder %s does not exist", path, folder);
		return -1;
	}
	if (access(folder, W_OK | X_OK) != 0) {
		snprintf(error, size, "%s: cannot write: the folder %s is not writable (%s)", path,
			 folder, strerror(errno));
		return -1;
	}
	return 0;
}

int file_replace_check(const char *path, char *error, size_t size)
{
	return check_output(path, true, error, size);
}

int file_output_check(const char *path, char *error, size_t size)
{
	return check_output(path, false, error, size);
}

int file_replace_begin(struct file_replace *r, const char *path, char *error, size_t size)
{
	memset(r, 0, sizeof *r);
	if (file_replace_check(path, error, size) != 0)
		return -1;
	snprintf(r->path, sizeof r->path, "%s", path);
	char folder[PATH_MAX];
	folder_of(path, folder, sizeof folder);
	int fd = open(folder, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
	if (fd >= 0) {
		r->unnamed = true;
	} else {
		int written = snprintf(r->temporary, sizeof r->temporary, "%s/.%s.XXXXXX", folder,
				       base_of(path));
		if (written < 0 || (size_t)written >= sizeof r->temporary) {
			snprintf(error, size, "%s: cannot write: the path is too long", path);
			return -1;
		}
		fd = mkostemp(r->temporary, O_CLOEXEC);
		if (fd < 0) {
			snprintf(error, size, "%s: cannot write: %s", path, strerror(errno));
			return -1;
		}
		fchmod(fd, 0644);
	}
	r->file = fdopen(fd, "wb");
	if (!r->file) {
		int saved = errno;
		close(fd);
		if (!r->unnamed)
			unlink(r->temporary);
		snprintf(error, size, "%s: cannot write: %s", path, strerror(saved));
		return -1;
	}
	return 0;
}

void file_replace_abort(struct file_replace *r)
{
	if (r->file)
		fclose(r->file);
	if (r->temporary[0])
		unlink(r->temporary);
	r->file = NULL;
	r->temporary[0] = '\0';
}

/* Gives the unnamed file a fresh name beside the target, for the rename. */
static int name_unnamed(struct file_replace *r)
{
	char folder[PATH_MAX], self[64];
	folder_of(r->path, folder, sizeof folder);
	snprintf(self, sizeof self, "/proc/self/fd/%d", fileno(r->file));
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	uint64_t salt = (uint64_t)t.tv_nsec ^ ((uint64_t)getpid() << 32);
	for (int attempt = 0; attempt < 100; attempt++) {
		salt = salt * 6364136223846793005u + 1442695040888963407u;
		int written = snprintf(r->temporary, sizeof r->temporary, "%s/.%s.%06llx", folder,
				       base_of(r->path), (unsigned long long)(salt >> 40));
		if (written < 0 || (size_t)written >= sizeof r->temporary)
			return -1;
		if (linkat(AT_FDCWD, self, AT_FDCWD, r->temporary, AT_SYMLINK_FOLLOW) == 0 ||
		    linkat(fileno(r->file), "", AT_FDCWD, r->temporary, AT_EMPTY_PATH) == 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	r->temporary[0] = '\0';
	return -1;
}

int file_replace_commit(struct file_replace *r, char *error, size_t size)
{
	int failed = fflush(r->file) != 0 || ferror(r->file) || fsync(fileno(r->file)) != 0;
	int saved = errno;
	if (!failed && r->unnamed && name_unnamed(r) != 0) {
		failed = 1;
		saved = errno;
	}
	/* The target may have become something else since begin: look again. */
	struct stat st;
	if (!failed && lstat(r->path, &st) == 0 && not_regular(&st)) {
		snprintf(error, size, "%s: cannot write: %s", r->path, not_regular(&st));
		file_replace_abort(r);
		return -1;
	}
	if (!failed && rename(r->temporary, r->path) != 0) {
		failed = 1;
		saved = errno;
	}
	if (failed) {
		snprintf(error, size, "%s: cannot write: %s", r->path, strerror(saved ? saved : EIO));
		file_replace_abort(r);
		return -1;
	}
	r->temporary[0] = '\0';
	int closed = fclose(r->file);
	r->file = NULL;
	char folder[PATH_MAX];
	folder_of(r->path, folder, sizeof folder);
	int dir = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int synced = dir >= 0 && fsync(dir) == 0;
	if (dir >= 0)
		close(dir);
	if (closed != 0 || !synced) {
		snprintf(error, size, "%s: written, but flushing it to disk failed: %s", r->path,
			 strerror(errno));
		return -1;
	}
	return 0;
}

FILE *file_open_regular(const char *path, long *bytes, char *error, size_t size)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(error, size, "%s: cannot open: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(error, size, "%s: cannot open: %s", path,
			 S_ISDIR(st.st_mode) ? "it is a folder, not a file"
					     : "it is not a regular file (a FIFO, device or socket)");
		close(fd);
		return NULL;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (bytes)
		*bytes = (long)st.st_size;
	FILE *file = fdopen(fd, "rb");
	if (!file) {
		snprintf(error, size, "%s: cannot open: %s", path, strerror(errno));
		close(fd);
	}
	return file;
}
