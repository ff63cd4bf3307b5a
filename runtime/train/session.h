/* A run's session: its data, threads, network state and ranks, opened
 * before the first step; and what train (train.c), gradflow
 * (gradflow.c) and step (step.c) share on it: the schedule, the
 * backward pass that sums gradients across the ranks, and errors every
 * rank meets alike (the ranks' agreements: agreement.h). */
#ifndef RESGEN_SESSION_H
#define RESGEN_SESSION_H

#include <stdint.h>
#include <stdio.h>

#include "data.h"
#include "net_api.h"
#include "state.h"
#include "train.h"

struct session {
	struct dataset train, test;
	/* --validation N: the last N training images, held out of training
	 * (a view into train's arrays, which own them); count 0 without */
	struct dataset validation;
	double mean[16], std[16]; /* of the images trained on */
	struct net_state state;
	int threads, shares; /* threads_setup's */
	/* Data parallel: rank of ranks, each running batch images of every
	 * step (the whole batch over ranks); alone, rank 0 of 1. */
	int rank, ranks, batch;
	double *running_sums; /* averaging the ranks' BN running statistics */
	uint64_t data_identity; /* the data as loaded, before any limit */
	struct weights_loaded loaded; /* --load-weights: what it took */
	/* backward stops at this group: those before it are frozen (train
	 * --freeze), and no gradient of theirs is needed */
	int first_trained_group;
};

/* Data, threads, memory and weights: everything before the first step.
 * 0, or the exit status with the error printed. */
int session_open(struct session *s, const struct run_options *o);
void session_free(struct session *s);

/* What the weights this session trains or measures are saved with: its
 * input normalisation and the classes' names (state.h). */
struct weights_meta session_meta(const struct session *s);

/* An error every rank meets alike, printed by rank 0 alone, once. */
void shared_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Backward, summing the parameter gradients across the ranks as it goes;
 * then the ranks' BN running statistics averaged, where BN is per rank. */
void backward_summing_gradients(struct session *s);
void average_running_statistics(struct session *s);

/* A checksum of the weights, momenta and running statistics. */
uint64_t weights_checksum(const struct net_state *state);


/* Whether a log or CSV written so far reached the file: 0, or 1 with the
 * error printed. */
int log_check(FILE *log, const char *path);

#endif
