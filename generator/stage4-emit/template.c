/* The template engine. Substitution only: no conditionals or loops live in
 * templates; the generator decides, the templates say how it reads. */
#include "template.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECTION_MARK "//@@ "

static void position_of(const char *text, size_t offset, int *line, int *column)
{
	*line = 1;
	*column = 1;
	for (size_t i = 0; i < offset; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*column = 1;
		} else {
			(*column)++;
		}
	}
}

int template_load(struct template *t, const char *path, struct diag *d)
{
	memset(t, 0, sizeof *t);
	snprintf(t->path, sizeof t->path, "%s", path);
	FILE *file = fopen(path, "rb");
	if (!file)
		return diag_file(d, path, "cannot open template: %s", strerror(errno));
	struct strbuf text = {0};
	char chunk[4096];
	size_t got;
	while ((got = fread(chunk, 1, sizeof chunk, file)) > 0)
		strbuf_append(&text, chunk, got);
	int failed = ferror(file);
	fclose(file);
	if (failed || text.failed || !text.text) {
		strbuf_free(&text);
		return diag_file(d, path, "cannot read template");
	}
	t->text = text.text;

	size_t length = text.length;
	for (size_t at = 0; at < length;) {
		const char *line = t->text + at;
		const char *newline = memchr(line, '\n', length - at);
		size_t line_end = newline ? (size_t)(newline - t->text) : length;
		size_t next = newline ? line_end + 1 : length;
		if (strncmp(line, SECTION_MARK, strlen(SECTION_MARK)) == 0) {
			int line_number, column;
			position_of(t->text, at, &line_number, &column);
			size_t name_length = line_end - at - strlen(SECTION_MARK);
			if (t->section_count == TEMPLATE_MAX_SECTIONS || name_length == 0 ||
			    name_length >= sizeof t->sections[0].name) {
				template_free(t);
				return diag_at(d, path, line_number, column,
					       "bad section marker; write '//@@ name' with a short "
					       "name, at most %d sections a file",
					       TEMPLATE_MAX_SECTIONS);
			}
			if (t->section_count > 0)
				t->sections[t->section_count - 1].end = at;
			memcpy(t->sections[t->section_count].name, line + strlen(SECTION_MARK),
			       name_length);
			t->sections[t->section_count].start = next;
			t->sections[t->section_count].end = length;
			t->section_count++;
		}
		at = next;
	}
	return 0;
}

void template_free(struct template *t)
{
	free(t->text);
	t->text = NULL;
}

void template_set(struct template_vars *vars, const char *name, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	char *value = NULL;
	if (vasprintf(&value, fmt, args) < 0)
		value = NULL;
	va_end(args);
	int slot = 0;
	while (slot < vars->count && strcmp(vars->vars[slot].name, name) != 0)
		slot++;
	if (slot == TEMPLATE_MAX_VARS) {
		/* A generator bug, not a user error: fail loudly at once. */
		fprintf(stderr, "resgen: internal error: more than %d template values\n",
			TEMPLATE_MAX_VARS);
		abort();
	}
	if (slot == vars->count) {
		vars->count++;
		snprintf(vars->vars[slot].name, sizeof vars->vars[slot].name, "%s", name);
	} else {
		free(vars->vars[slot].value);
	}
	vars->vars[slot].value = value ? value : strdup("");
}

void template_vars_free(struct template_vars *vars)
{
	for (int i = 0; i < vars->count; i++)
		free(vars->vars[i].value);
	vars->count = 0;
}

static const char *lookup(const struct template_vars *vars, const char *name, size_t length)
{
	for (int i = 0; i < vars->count; i++)
		if (strlen(vars->vars[i].name) == length &&
		    strncmp(vars->vars[i].name, name, length) == 0)
			return vars->vars[i].value;
	return NULL;
}

/* Writes value so that each of its lines starts with indent. */
static void put_indented(struct strbuf *out, const char *value, const char *indent,
			 size_t indent_length)
{
	const char *line = value;
	while (*line) {
		const char *newline = strchr(line, '\n');
		size_t length = newline ? (size_t)(newline - line) : strlen(line);
		if (length > 0)
			strbuf_append(out, indent, indent_length);
		strbuf_append(out, line, length);
		strbuf_puts(out, "\n");
		line += length + (newline ? 1 : 0);
	}
}

bool template_has_section(const struct template *t, const char *section)
{
	for (int i = 0; i < t->section_count; i++)
		if (strcmp(t->sections[i].name, section) == 0)
			return true;
	return false;
}

int template_render(const struct template *t, const char *section, const struct template_vars *vars,
		    struct strbuf *out, struct diag *d)
{
	int index = 0;
	while (index < t->section_count && strcmp(t->sections[index].name, section) != 0)
		index++;
	if (index == t->section_count)
		return diag_file(d, t->path, "template has no section '%s'; add a line '//@@ %s'",
				 section, section);
	for (int i = 0; i < vars->count; i++) {
		char placeholder[48];
		snprintf(placeholder, sizeof placeholder, "{{%s}}", vars->vars[i].name);
		if (!strstr(t->text, placeholder))
			return diag_file(d, t->path,
					 "value %s is given but the template never uses it; use it "
					 "or stop passing it",
					 placeholder);
	}

	const char *text = t->text;
	size_t at = t->sections[index].start, end = t->sections[index].end;
	size_t line_start = at;
	while (at < end) {
		const char *open = strstr(text + at, "{{");
		size_t stop = open && (size_t)(open - text) < end ? (size_t)(open - text) : end;
		for (size_t i = at; i < stop; i++)
			if (text[i] == '\n')
				line_start = i + 1;
		strbuf_append(out, text + at, stop - at);
		if (stop == end)
			break;
		const char *name = open + 2;
		size_t name_length = 0;
		while (name[name_length] == '_' || (name[name_length] >= 'A' && name[name_length] <= 'Z') ||
		       (name[name_length] >= '0' && name[name_length] <= '9'))
			name_length++;
		int line, column;
		position_of(text, stop, &line, &column);
		if (name_length == 0 || strncmp(name + name_length, "}}", 2) != 0)
			return diag_at(d, t->path, line, column,
				       "malformed placeholder; write {{NAME}} with A-Z, 0-9 and _");
		const char *value = lookup(vars, name, name_length);
		if (!value)
			return diag_at(d, t->path, line, column, "placeholder {{%.*s}} has no value",
				       (int)name_length, name);
		size_t after = stop + 2 + name_length + 2;
		bool alone = (after >= end || text[after] == '\n');
		for (size_t i = line_start; alone && i < stop; i++)
			alone = text[i] == ' ' || text[i] == '\t';
		if (alone) {
			/* Take back the indentation already written; re-indent every line. */
			size_t indent_length = stop - line_start;
			out->length -= indent_length;
			if (out->text)
				out->text[out->length] = '\0';
			put_indented(out, value, text + line_start, indent_length);
			at = after < end ? after + 1 : after;
			line_start = at;
		} else {
			strbuf_puts(out, value);
			at = after;
		}
	}
	return 0;
}
