/* Settings every rank of a run must share: compared across the ranks before
 * the first step, so that a run whose ranks were given different settings,
 * data or weights stops at once with a message, instead of summing
 * gradients of different batches or waiting forever at a collective that
 * another rank never reaches (each comparison: agreement.h). */
#ifndef RESGEN_RUN_AGREEMENT_H
#define RESGEN_RUN_AGREEMENT_H

/* Every agreement of a run, one function a phase, each 0 or the exit
 * status (2: a disagreement, named by rank 0; 1 for agree_during_run), the
 * same on every rank:
 *   agree_on_command   the command line read (main.c): the command (its
 *                      index into command_words), the network, the files
 *                      given, RESGEN_CHOICES
 *   agree_on_settings  the session opened (train.c, step.c): the settings
 *                      as a checkpoint filled them in, and the data
 *   agree_on_start     the weights loaded, resumed or seeded, and the
 *                      iteration the run starts from
 *   agree_during_run   after an iteration: the weights, bitwise */
struct run_options;
struct session;
int agree_on_command(int command, const char *const *command_words, const struct run_options *o);
int agree_on_settings(const struct session *s, const struct run_options *o);
int agree_on_start(const struct session *s, long iteration);
int agree_during_run(const struct session *s, long iteration);

/* How often agree_during_run is called, in iterations (and at every
 * evaluation). */
enum { CHECK_EVERY = 100 };

#endif
