/* libFuzzer harness: any bytes as a study file through the study reader,
 * which merges its overrides into the specs it names under specs/; then,
 * for a study that passes, what make and tools/run-study read of it: the
 * plan (one fact a line, every name a word that reaches a shell only as
 * such) and each variant's spec, which must load back as that variant.
 * Built with AddressSanitizer and UBSan by `make fuzz`. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spec.h"
#include "study.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a-z, 0-9 and '-', not starting with '-': the study reader's words */
static bool is_word(const char *text, size_t length)
{
	if (length == 0 || text[0] == '-')
		return false;
	for (size_t i = 0; i < length; i++)
		if (!((text[i] >= 'a' && text[i] <= 'z') || (text[i] >= '0' && text[i] <= '9') || text[i] == '-'))
			return false;
	return true;
}

/* A run-time setting as the plan gives it: KEY=VALUE of letters, digits,
 * '.', '_', '-', '+', ',' and brackets (run-study splits the line on
 * spaces and never globs). */
static bool is_setting(const char *text, size_t length)
{
	const char *equals = memchr(text, '=', length);
	if (!equals || equals == text)
		return false;
	for (size_t i = 0; i < length; i++)
		if (!((text[i] >= 'a' && text[i] <= 'z') || (text[i] >= '0' && text[i] <= '9') ||
		      strchr("._-+,[]=", text[i])))
			return false;
	return true;
}

/* A spec's name as make takes it: words joined by '/' (paper/t1-original). */
static bool is_spec_name(const char *text, size_t length)
{
	for (size_t start = 0; start <= length;) {
		size_t part = 0;
		while (start + part < length && text[start + part] != '/')
			part++;
		if (!is_word(text + start, part))
			return false;
		start += part + 1;
	}
	return true;
}

/* The plan's lines: "name WORD", "seeds N...", "options [FLAG N]...",
 * "variant WORD N N N N WORD [KEY=VALUE]...", "reuse WORD SPEC". */
static void check_plan(const char *plan)
{
	for (const char *line = plan; *line;) {
		const char *end = strchr(line, '\n');
		if (!end)
			__builtin_trap(); /* every line ends */
		size_t length = (size_t)(end - line);
		if (strncmp(line, "name ", 5) == 0) {
			if (!is_word(line + 5, length - 5))
				__builtin_trap();
		} else if (strncmp(line, "variant ", 8) == 0) {
			/* its name, four numbers, its binary's variant, settings */
			const char *at = line + 8;
			for (int field = 0; at < end; field++) {
				size_t field_length = strcspn(at, " \n");
				bool ok = field == 0 || field == 5 ? is_word(at, field_length)
					  : field < 5		   ? field_length > 0 && strspn(at, "0123456789") == field_length
								   : is_setting(at, field_length);
				if (!ok || (field < 5 && at + field_length == end))
					__builtin_trap();
				at += field_length + (at + field_length < end);
			}
		} else if (strncmp(line, "reuse ", 6) == 0) {
			/* a variant's binary, and the spec whose binary make links for it */
			const char *at = line + 6, *space = memchr(at, ' ', (size_t)(end - at));
			if (!space || !is_word(at, (size_t)(space - at)) || !is_spec_name(space + 1, (size_t)(end - space - 1)))
				__builtin_trap();
		} else if (strncmp(line, "seeds", 5) == 0) {
			for (const char *c = line + 5; c < end; c++)
				if (!((*c >= '0' && *c <= '9') || *c == ' '))
					__builtin_trap();
		} else if (strncmp(line, "options", 7) == 0) {
			char options[256];
			snprintf(options, sizeof options, "%.*s", (int)length, line);
			for (char *token = strtok(options + 7, " "); token; token = strtok(NULL, " "))
				if (strcmp(token, "--train-limit") != 0 && strcmp(token, "--test-limit") != 0 &&
				    strspn(token, "0123456789") != strlen(token))
					__builtin_trap();
		} else {
			__builtin_trap(); /* a line run-study does not know */
		}
		line = end + 1;
	}
}

/* Where each input is written for the reader, removed at the end. */
static char path[64];

static void remove_input(void) { remove(path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!path[0]) {
		snprintf(path, sizeof path, "/tmp/resgen-fuzz-study-%d.yaml", (int)getpid());
		atexit(remove_input);
	}
	FILE *file = fopen(path, "wb");
	if (!file || fwrite(data, 1, size, file) != size || fclose(file) != 0)
		__builtin_trap();
	struct study *study = malloc(sizeof *study);
	struct diag d = {{0}};
	if (!study)
		__builtin_trap();
	if (study_load(study, path, "specs", &d) != 0) {
		/* located at the study, or at a spec it names */
		if (strncmp(d.text, path, strlen(path)) != 0 && strncmp(d.text, "specs/", 6) != 0)
			__builtin_trap();
		free(study);
		return 0;
	}
	struct strbuf plan = {0};
	study_plan_text(study, &plan);
	check_plan(strbuf_text(&plan));
	strbuf_free(&plan);
	for (int v = 0; v < study->variant_count; v++) {
		struct strbuf text = {0};
		study_variant_text(study, v, &text);
		struct spec spec;
		if (spec_parse(&spec, "variant.yaml", strbuf_text(&text), text.length, &d) != 0 ||
		    strcmp(spec.name, study->variants[v].name) != 0)
			__builtin_trap(); /* a variant's spec loads back as the variant */
		strbuf_free(&text);
	}
	study_free(study);
	free(study);
	return 0;
}
