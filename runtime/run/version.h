/* Which resgen built this binary: `git describe` of the tree it was built
 * from (with -dirty for uncommitted changes), or "unknown" outside git.
 * Checkpoints record it, and a resume by another version says so. */
#ifndef RESGEN_VERSION_H
#define RESGEN_VERSION_H

const char *resgen_version(void);

#endif
