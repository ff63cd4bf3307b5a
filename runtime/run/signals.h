/* SIGINT and SIGTERM, while a run keeps checkpoints: noted, and acted on
 * by the training loop between iterations (a checkpoint, then exit status
 * 4). A second signal ends the process at once; the last checkpoint stays
 * whole. */
#ifndef RESGEN_SIGNALS_H
#define RESGEN_SIGNALS_H

/* From now on, SIGINT and SIGTERM are noted instead of ending the process
 * (once: the next ends it). */
void signals_catch_stop(void);

/* The signal noted, or 0. */
int signals_stop_noted(void);

#endif
