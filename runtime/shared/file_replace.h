/* The one way resgen replaces a file (weights, dumps, emitted code): the new
 * contents go to a file created exclusively in the target's folder (unnamed
 * where the file system allows), are flushed to disk and renamed over the
 * target, and the folder is flushed. A kill at any instant leaves the old
 * file or the new one; a target that exists and is not a regular file (a
 * device, a FIFO, a folder, a symbolic link) is refused, never replaced.
 * Shared by the generator and the runtime. */
#ifndef RESGEN_FILE_REPLACE_H
#define RESGEN_FILE_REPLACE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct file_replace {
	FILE *file; /* write the new contents here */
	bool unnamed; /* created with O_TMPFILE: it has no name until commit */
	char temporary[PATH_MAX]; /* its name, when it has one */
	char path[PATH_MAX];
};

/* 0 if path could be replaced now: its folder exists and is writable, and
 * path is absent or a regular file. Otherwise one line in error, -1. */
int file_replace_check(const char *path, char *error, size_t size);

/* The same for a file written in place as a run goes (a log, which may be
 * a device such as /dev/stdout): only a folder is refused. */
int file_output_check(const char *path, char *error, size_t size);

/* Whether paths a and b name one file, as files: the same device and inode
 * where both exist, the same resolved path where neither does yet (a
 * dangling symbolic link counts as the file it would create). */
bool file_same(const char *a, const char *b);

/* Creates the new file; on failure fills error ("PATH: cannot write: ...")
 * and returns -1 with nothing left behind. */
int file_replace_begin(struct file_replace *r, const char *path, char *error, size_t size);

/* Flushes, syncs and renames the new file over path, then syncs the folder.
 * On failure the target is untouched, the new file removed, -1. */
int file_replace_commit(struct file_replace *r, char *error, size_t size);

/* Drops the new file; the target is untouched. */
void file_replace_abort(struct file_replace *r);

/* Opens path for reading only if it is a regular file (a FIFO would block,
 * a folder reads as an error later), and puts its size in *bytes unless
 * bytes is NULL; else "PATH: cannot open: ..." in error, NULL. */
FILE *file_open_regular(const char *path, long *bytes, char *error, size_t size);

#endif
