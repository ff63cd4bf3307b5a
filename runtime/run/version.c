/* The version the Makefile passes (RESGEN_VERSION); see version.h. */
#include "version.h"

#ifndef RESGEN_VERSION
#define RESGEN_VERSION "unknown"
#endif

const char *resgen_version(void) { return RESGEN_VERSION; }
