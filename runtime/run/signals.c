/* The stop signals of a run that keeps checkpoints (signals.h). */
#include "signals.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t stop_signal;

static void note_signal(int signal) { stop_signal = signal; }

void signals_catch_stop(void)
{
	struct sigaction action;
	memset(&action, 0, sizeof action);
	action.sa_handler = note_signal;
	action.sa_flags = SA_RESETHAND;
	sigemptyset(&action.sa_mask);
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGTERM, &action, NULL);
}

int signals_stop_noted(void) { return stop_signal; }
