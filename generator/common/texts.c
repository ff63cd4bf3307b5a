/* Output files, written whole or not at all; see texts.h. */
#include "texts.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file_replace.h"

int make_dirs(const char *dir, struct diag *d)
{
	char path[1024];
	snprintf(path, sizeof path, "%s", dir);
	for (char *at = path + 1; *at; at++) {
		if (*at != '/')
			continue;
		*at = '\0';
		if (mkdir(path, 0777) != 0 && errno != EEXIST)
			return diag_file(d, path, "cannot create folder: %s", strerror(errno));
		*at = '/';
	}
	if (mkdir(path, 0777) != 0 && errno != EEXIST)
		return diag_file(d, path, "cannot create folder: %s", strerror(errno));
	return 0;
}

/* Whether path is a regular file holding exactly text. */
static bool holds(const char *path, const struct strbuf *text)
{
	char error[64];
	long bytes;
	FILE *file = file_open_regular(path, &bytes, error, sizeof error);
	if (!file)
		return false;
	bool same = bytes == (long)text->length;
	char chunk[4096];
	for (size_t at = 0; same && at < text->length;) {
		size_t want = text->length - at < sizeof chunk ? text->length - at : sizeof chunk;
		same = fread(chunk, 1, want, file) == want && memcmp(chunk, text->text + at, want) == 0;
		at += want;
	}
	fclose(file);
	return same;
}

bool texts_written(const char *dir, const char *const *names, const struct strbuf *texts, int count)
{
	for (int i = 0; i < count; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if (!holds(path, &texts[i]))
			return false;
	}
	return true;
}

int write_texts(const char *dir, const char *const *names, struct strbuf *texts, int count,
		bool keep_same, struct diag *d)
{
	if (make_dirs(dir, d) != 0)
		return -1;
	struct file_replace *files = calloc((size_t)count, sizeof *files);
	bool *begun = calloc((size_t)count, sizeof *begun);
	char path[PATH_MAX + 16], error[PATH_MAX + 256];
	int status = files && begun ? 0 : diag_file(d, dir, "out of memory writing files");
	for (int i = 0; i < count && status == 0; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if (texts[i].failed) {
			status = diag_file(d, path, "out of memory writing it");
		} else if (keep_same && holds(path, &texts[i])) {
			continue;
		} else if (file_replace_begin(&files[i], path, error, sizeof error) != 0) {
			status = diag_line(d, "%s", error);
		} else {
			begun[i] = true;
			if (fwrite(texts[i].text, 1, texts[i].length, files[i].file) != texts[i].length)
				status = diag_file(d, path, "cannot write: %s", strerror(errno));
		}
	}
	for (int i = 0; begun && i < count; i++) {
		if (!begun[i])
			continue;
		if (status != 0)
			file_replace_abort(&files[i]);
		else if (file_replace_commit(&files[i], error, sizeof error) != 0)
			status = diag_line(d, "%s", error);
	}
	free(files);
	free(begun);
	return status;
}
