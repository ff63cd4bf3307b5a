/* A network measured on a split of its data, BN by its running statistics:
 * the evaluation train runs as it goes, and the evaluate command, which
 * measures saved weights (evaluate.c). */
#ifndef RESGEN_EVALUATE_H
#define RESGEN_EVALUATE_H

#include <stdio.h>

#include "data.h"
#include "session.h"

struct evaluation {
	long images;
	double loss_sum;  /* cross-entropy summed over the images */
	long errors;      /* top-1: the first highest logit is not the label */
	long top5_errors; /* five or more classes score higher than the label */
	long *confusion;  /* NULL, or classes x classes counts: [label][prediction] */
	FILE *predictions; /* NULL, or a CSV row for each image (evaluate --predictions) */
};

/* Every image of split, in batches of the session's, each rank its share
 * (the sums added across ranks); counts into *e, which the caller zeroes
 * (and gives a confusion matrix, if it wants one). */
void evaluate_split(struct session *s, const struct dataset *split, struct evaluation *e);

/* The first highest logit of each of n images: its prediction. */
int predicted_class(const real *logits);

#endif
