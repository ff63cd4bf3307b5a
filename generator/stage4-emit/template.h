/* Templates: readable C with {{NAME}} placeholders, split into sections by
 * lines of the form "//@@ section-name". Rendering fails on a placeholder
 * that has no value and on a value that no section of the file uses. A
 * placeholder alone on its line takes that line's indentation for every
 * line of its value, so multi-line values stay formatted. */
#ifndef RESGEN_TEMPLATE_H
#define RESGEN_TEMPLATE_H

#include "diag.h"
#include "strbuf.h"

#define TEMPLATE_MAX_VARS 64
#define TEMPLATE_MAX_SECTIONS 8

struct template {
	char path[512];
	char *text;
	int section_count;
	struct {
		char name[32];
		size_t start, end; /* byte range of the section's body */
	} sections[TEMPLATE_MAX_SECTIONS];
};

struct template_vars {
	int count;
	struct {
		char name[32];
		char *value;
	} vars[TEMPLATE_MAX_VARS];
};

int template_load(struct template *t, const char *path, struct diag *d);
void template_free(struct template *t);

/* Sets name to the printf-formatted value (replacing an earlier value). */
void template_set(struct template_vars *vars, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void template_vars_free(struct template_vars *vars);

/* Whether t has the named section. */
bool template_has_section(const struct template *t, const char *section);

/* Appends the named section, rendered with vars, to out. */
int template_render(const struct template *t, const char *section, const struct template_vars *vars,
		    struct strbuf *out, struct diag *d);

#endif
