/* The one door to libyaml: a spec file becomes a small tree of scalars,
 * mappings and sequences, each node remembering its line and column.
 * Size and nesting are bounded here, since libyaml bounds neither. */
#ifndef RESGEN_YAML_TREE_H
#define RESGEN_YAML_TREE_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"

enum ynode_kind { YNODE_SCALAR, YNODE_MAP, YNODE_SEQ };

#define YAML_MAX_BYTES (64 * 1024) /* a spec is a page of text, not a data file */
#define YAML_MAX_DEPTH 8           /* the schema nests four deep; the rest is slack */
#define YAML_MAX_NODES 4096

struct ynode {
	enum ynode_kind kind;
	int line, column; /* 1-based, where the node starts */
	char *text;       /* scalars: the value; NULL otherwise */
	bool plain;       /* scalars: written without quotes */
	const char *file; /* where the node was written, when a tree mixes files
			   * (a study's variant: its spec and the study's
			   * overrides); NULL for the tree's own file */
	size_t count;     /* mappings: pairs; sequences: items */
	struct ynode **keys;   /* mappings only: scalar keys */
	struct ynode **values; /* mappings: values; sequences: items */
};

struct ytree {
	struct ynode *root;
	struct ynode *nodes; /* every node, freed together */
	size_t node_count;
};

/* Reads and parses path; on failure fills d and returns -1. */
int ytree_load(struct ytree *tree, const char *path, struct diag *d);

/* Parses length bytes of text; path names them in messages. */
int ytree_parse(struct ytree *tree, const char *path, const char *text, size_t length,
		struct diag *d);
void ytree_free(struct ytree *tree);

/* The value under key in a mapping, or NULL. */
const struct ynode *ynode_get(const struct ynode *map, const char *key);

#endif
