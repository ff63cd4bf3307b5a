/* Freezing parts of a network: freeze.h. */
#include "freeze.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether name is part's or inside it: the part's own name, or one that
 * begins with it and an underscore (stage1 holds stage1_unit01; a group
 * holds its tensors, stem_bn_gamma). */
static bool inside(const char *name, const char *part, size_t length)
{
	return strncmp(name, part, length) == 0 && (name[length] == '\0' || name[length] == '_');
}

/* The stages: the largest K of a group stageK_... */
static int stage_count(void)
{
	int stages = 0;
	for (int g = 0; g < net_info.group_count; g++) {
		int k;
		if (sscanf(net_info.groups[g].name, "stage%d_", &k) == 1 && k > stages)
			stages = k;
	}
	return stages;
}

int freeze_parse(const char *text, unsigned char *groups, char *error, size_t size)
{
	memset(groups, 0, (size_t)net_info.group_count);
	const char *at = text;
	for (;;) {
		size_t length = strcspn(at, ",");
		int matched = 0;
		for (int g = 0; length > 0 && g < net_info.group_count; g++)
			if (inside(net_info.groups[g].name, at, length)) {
				groups[g] = 1;
				matched++;
			}
		if (!matched) {
			snprintf(error, size,
				 "--freeze %s: '%.*s' is no part of %s; its parts are stem, stage1 to stage%d (a stage's "
				 "units; or a unit alone, stage1_unit01) and head, given as a list: --freeze stem,stage1",
				 text, (int)(length < 100 ? length : 100), at, net_info.name, stage_count());
			return -1;
		}
		if (at[length] == '\0')
			return 0;
		at += length + 1;
	}
}

void freeze_describe(const unsigned char *groups, char *out, size_t size)
{
	size_t used = 0;
	out[0] = '\0';
	for (int g = 0; g < net_info.group_count && used < size; g++) {
		if (!groups[g])
			continue;
		const char *name = net_info.groups[g].name;
		char stage[32];
		int k, whole = 0;
		/* a stage whose units are all frozen, once, by its name */
		if (sscanf(name, "stage%d_", &k) == 1) {
			snprintf(stage, sizeof stage, "stage%d", k);
			whole = 1;
			for (int h = 0; h < net_info.group_count; h++)
				if (inside(net_info.groups[h].name, stage, strlen(stage)) && !groups[h])
					whole = 0;
			if (whole && g > 0 && inside(net_info.groups[g - 1].name, stage, strlen(stage)) && groups[g - 1])
				continue;
		}
		used += (size_t)snprintf(out + used, size - used, "%s%s", used ? ", " : "", whole ? stage : name);
	}
	if (!out[0])
		snprintf(out, size, "nothing");
}

int freeze_begin(struct freeze *f, const unsigned char *groups, const struct net_state *s)
{
	*f = (struct freeze){0};
	f->params = malloc((size_t)net_info.param_tensor_count * sizeof *f->params);
	if (!f->params)
		return -1;
	for (int i = 0; i < net_info.param_tensor_count; i++) {
		const struct net_param *p = &net_info.params[i];
		bool frozen = false;
		for (int g = 0; g < net_info.group_count && !frozen; g++)
			frozen = groups[g] && inside(p->name, net_info.groups[g].name, strlen(net_info.groups[g].name));
		if (!frozen)
			continue;
		f->params[f->tensors++] = p;
		f->values += p->count;
		f->trained += p->trained ? p->count : 0;
	}
	f->saved = malloc((size_t)(f->values ? f->values : 1) * sizeof *f->saved);
	if (!f->saved) {
		freeze_free(f);
		return -1;
	}
	real *to = f->saved;
	for (int i = 0; i < f->tensors; i++) {
		const struct net_param *p = f->params[i];
		memcpy(to, (p->trained ? s->params : s->buffers) + p->offset, (size_t)p->count * sizeof *to);
		to += p->count;
	}
	return 0;
}

void freeze_restore(const struct freeze *f, struct net_state *s)
{
	const real *from = f->saved;
	for (int i = 0; i < f->tensors; i++) {
		const struct net_param *p = f->params[i];
		memcpy((p->trained ? s->params : s->buffers) + p->offset, from, (size_t)p->count * sizeof *from);
		if (p->trained)
			memset(s->velocity + p->offset, 0, (size_t)p->count * sizeof *s->velocity);
		from += p->count;
	}
}

void freeze_free(struct freeze *f)
{
	free(f->params);
	free(f->saved);
	*f = (struct freeze){0};
}
