/* libyaml's event stream, folded into a bounded tree with positions.
 * Anchors and aliases are refused: a spec has no use for them, and they
 * are how small documents grow into large ones. */
#include "yaml_tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "file_replace.h"

struct builder {
	struct ytree *tree;
	struct ynode *stack[YAML_MAX_DEPTH + 1];
	int depth;
	const char *path;
	struct diag *d;
};

/* The spec file's bytes, at most YAML_MAX_BYTES + 1 of them. */
static char *read_file(const char *path, size_t *length, struct diag *d)
{
	char error[sizeof d->text];
	FILE *file = file_open_regular(path, NULL, error, sizeof error);
	if (!file) {
		diag_line(d, "%s", error);
		return NULL;
	}
	char *text = malloc(YAML_MAX_BYTES + 1);
	size_t got = text ? fread(text, 1, YAML_MAX_BYTES + 1, file) : 0;
	int failed = ferror(file);
	fclose(file);
	if (!text) {
		diag_file(d, path, "out of memory reading spec");
		return NULL;
	}
	if (failed) {
		free(text);
		diag_file(d, path, "cannot read spec");
		return NULL;
	}
	*length = got; /* one byte past the limit if the file is larger: ytree_parse says so */
	return text;
}

static struct ynode *new_node(struct builder *b, enum ynode_kind kind, const yaml_mark_t *mark)
{
	struct ytree *tree = b->tree;
	if (tree->node_count == YAML_MAX_NODES) {
		diag_at(b->d, b->path, (int)mark->line + 1, (int)mark->column + 1,
			"spec has more than %d YAML nodes; a spec should be a short YAML file",
			YAML_MAX_NODES);
		return NULL;
	}
	struct ynode *node = &tree->nodes[tree->node_count++];
	memset(node, 0, sizeof *node);
	node->kind = kind;
	node->line = (int)mark->line + 1;
	node->column = (int)mark->column + 1;
	return node;
}

static int append(struct builder *b, struct ynode *child)
{
	if (b->depth == 0) {
		b->tree->root = child;
		return 0;
	}
	struct ynode *parent = b->stack[b->depth - 1];
	if (parent->kind == YNODE_MAP) {
		/* Keys and values arrive alternately; a pending key has no value yet. */
		bool want_key = parent->values == NULL || parent->count == 0 ||
				parent->values[parent->count - 1] != NULL;
		if (want_key) {
			if (child->kind != YNODE_SCALAR)
				return diag_at(b->d, b->path, child->line, child->column,
					       "mapping keys must be plain words, not %s",
					       child->kind == YNODE_MAP ? "mappings" : "sequences");
			struct ynode **keys = realloc(parent->keys, (parent->count + 1) * sizeof *keys);
			struct ynode **values = keys ? realloc(parent->values,
							       (parent->count + 1) * sizeof *values)
						     : NULL;
			if (keys)
				parent->keys = keys;
			if (!values)
				return diag_file(b->d, b->path, "out of memory parsing spec");
			parent->values = values;
			for (size_t i = 0; i < parent->count; i++)
				if (strcmp(parent->keys[i]->text, child->text) == 0)
					return diag_at(b->d, b->path, child->line, child->column,
						       "duplicate key '%s' (first given at line %d); give each key once",
						       child->text, parent->keys[i]->line);
			parent->keys[parent->count] = child;
			parent->values[parent->count] = NULL;
			parent->count++;
		} else {
			parent->values[parent->count - 1] = child;
		}
		return 0;
	}
	struct ynode **items = realloc(parent->values, (parent->count + 1) * sizeof *items);
	if (!items)
		return diag_file(b->d, b->path, "out of memory parsing spec");
	parent->values = items;
	parent->values[parent->count++] = child;
	return 0;
}

/* Tags change how a value is read (!!str 8, !!float), and YAML readers
 * differ in which they honour: a spec has none. */
static int refuse_tag(struct builder *b, const yaml_mark_t *mark, const yaml_char_t *tag)
{
	if (!tag)
		return 0;
	static const char core[] = "tag:yaml.org,2002:"; /* what !! stands for */
	const char *text = (const char *)tag;
	bool short_form = strncmp(text, core, sizeof core - 1) == 0;
	return diag_at(b->d, b->path, (int)mark->line + 1, (int)mark->column + 1,
		       "YAML tags such as '%s%.40s' are not supported in specs; write the plain value",
		       short_form ? "!!" : "", short_form ? text + sizeof core - 1 : text);
}

static int on_event(struct builder *b, const yaml_event_t *event)
{
	const yaml_mark_t *mark = &event->start_mark;
	struct ynode *node;
	switch (event->type) {
	case YAML_ALIAS_EVENT:
		return diag_at(b->d, b->path, (int)mark->line + 1, (int)mark->column + 1,
			       "YAML aliases are not supported in specs; write the value out");
	case YAML_SCALAR_EVENT:
		if (event->data.scalar.anchor)
			return diag_at(b->d, b->path, (int)mark->line + 1, (int)mark->column + 1,
				       "YAML anchors are not supported in specs; write the value out");
		if (refuse_tag(b, mark, event->data.scalar.tag) != 0)
			return -1;
		node = new_node(b, YNODE_SCALAR, mark);
		if (!node)
			return -1;
		node->text = strndup((const char *)event->data.scalar.value, event->data.scalar.length);
		if (!node->text)
			return diag_file(b->d, b->path, "out of memory parsing spec");
		if (strlen(node->text) != event->data.scalar.length)
			return diag_at(b->d, b->path, node->line, node->column,
				       "scalar contains a NUL character; remove it");
		node->plain = event->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		return append(b, node);
	case YAML_MAPPING_START_EVENT:
	case YAML_SEQUENCE_START_EVENT:
		if (event->type == YAML_MAPPING_START_EVENT ? event->data.mapping_start.anchor != NULL
							     : event->data.sequence_start.anchor != NULL)
			return diag_at(b->d, b->path, (int)mark->line + 1, (int)mark->column + 1,
				       "YAML anchors are not supported in specs; write the value out");
		if (refuse_tag(b, mark, event->type == YAML_MAPPING_START_EVENT
						? event->data.mapping_start.tag
						: event->data.sequence_start.tag) != 0)
			return -1;
		if (b->depth == YAML_MAX_DEPTH)
			return diag_at(b->d, b->path, (int)mark->line + 1, (int)mark->column + 1,
				       "spec nests deeper than %d levels; the schema needs at most 4",
				       YAML_MAX_DEPTH);
		node = new_node(b, event->type == YAML_MAPPING_START_EVENT ? YNODE_MAP : YNODE_SEQ,
				mark);
		if (!node || append(b, node) != 0)
			return -1;
		b->stack[b->depth++] = node;
		return 0;
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		b->depth--;
		return 0;
	case YAML_DOCUMENT_START_EVENT:
		if (event->data.document_start.version_directive ||
		    event->data.document_start.tag_directives.start !=
			    event->data.document_start.tag_directives.end)
			return diag_at(b->d, b->path, (int)mark->line + 1, (int)mark->column + 1,
				       "YAML directives (%%YAML, %%TAG) are not supported in specs; "
				       "remove the line");
		if (b->tree->root)
			return diag_at(b->d, b->path, (int)mark->line + 1, (int)mark->column + 1,
				       "a spec file holds one YAML document; remove the second '---'");
		return 0;
	default:
		return 0;
	}
}

int ytree_load(struct ytree *tree, const char *path, struct diag *d)
{
	memset(tree, 0, sizeof *tree);
	size_t length;
	char *text = read_file(path, &length, d);
	if (!text)
		return -1;
	int status = ytree_parse(tree, path, text, length, d);
	free(text);
	return status;
}

int ytree_parse(struct ytree *tree, const char *path, const char *text, size_t length,
		struct diag *d)
{
	memset(tree, 0, sizeof *tree);
	if (length > YAML_MAX_BYTES)
		return diag_file(d, path, "spec is larger than %d bytes; a spec should be a short YAML file",
				 YAML_MAX_BYTES);
	tree->nodes = calloc(YAML_MAX_NODES, sizeof *tree->nodes);
	if (!tree->nodes)
		return diag_file(d, path, "out of memory parsing spec");

	yaml_parser_t parser;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, length);
	struct builder b = {.tree = tree, .path = path, .d = d};
	int status = 0;
	for (;;) {
		yaml_event_t event;
		if (!yaml_parser_parse(&parser, &event)) {
			status = diag_at(d, path, (int)parser.problem_mark.line + 1,
					 (int)parser.problem_mark.column + 1,
					 "YAML syntax error: %s%s%s; check indentation and quoting",
					 parser.problem ? parser.problem : "unreadable input",
					 parser.context ? " " : "", parser.context ? parser.context : "");
			break;
		}
		bool done = event.type == YAML_STREAM_END_EVENT;
		status = on_event(&b, &event);
		yaml_event_delete(&event);
		if (status != 0 || done)
			break;
	}
	yaml_parser_delete(&parser);
	if (status == 0 && !tree->root)
		status = diag_at(d, path, 1, 1, "spec is empty; it needs at least 'name', 'data' and 'net'");
	if (status != 0)
		ytree_free(tree);
	return status;
}

void ytree_free(struct ytree *tree)
{
	for (size_t i = 0; i < tree->node_count; i++) {
		free(tree->nodes[i].text);
		free(tree->nodes[i].keys);
		free(tree->nodes[i].values);
	}
	free(tree->nodes);
	memset(tree, 0, sizeof *tree);
}

const struct ynode *ynode_get(const struct ynode *map, const char *key)
{
	if (!map || map->kind != YNODE_MAP)
		return NULL;
	for (size_t i = 0; i < map->count; i++)
		if (strcmp(map->keys[i]->text, key) == 0)
			return map->values[i];
	return NULL;
}
