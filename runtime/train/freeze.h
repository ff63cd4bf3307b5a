/* Freezing parts of a network while it trains (train --freeze), as
 * fine-tuning does: a part is a group of ops (stem, stage2_unit01, head)
 * or a stage (stage1: its units). A frozen part's weights and BN running
 * statistics stay bitwise as they began: the part is put back after each
 * update. Backward stops before the frozen groups that open the network
 * (session.h); a frozen group after a trained one still computes its
 * gradients, which the trained ones below need. */
#ifndef RESGEN_FREEZE_H
#define RESGEN_FREEZE_H

#include <stddef.h>

#include "net_api.h"

/* The parts named in text ("stem,stage1"), as a flag a group of
 * net_info.groups in groups: 0, or -1 with one line in error naming the
 * part that is none of the network's and what the parts are. */
int freeze_parse(const char *text, unsigned char *groups, char *error, size_t size);

/* The frozen groups as parts, a stage whose units are all frozen by its
 * name: "stem, stage1"; "nothing" when none is. */
void freeze_describe(const unsigned char *groups, char *out, size_t size);

struct freeze {
	int tensors;             /* the frozen tensors: trained ones and running statistics */
	long values;             /* their values */
	long trained;            /* of which trained parameters */
	const struct net_param **params;
	real *saved;             /* their values as the run began, in order */
};

/* Keeps the values of the tensors of the frozen groups of s. 0, or -1 when
 * memory runs out. */
int freeze_begin(struct freeze *f, const unsigned char *groups, const struct net_state *s);
/* Puts them back after a step, their momentum zero. */
void freeze_restore(const struct freeze *f, struct net_state *s);
void freeze_free(struct freeze *f);

#endif
