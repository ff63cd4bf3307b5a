/* Which instruction set a network's hot code runs: its kernels.c is
 * compiled once for each set the build carries (the Makefile's ISAS: the
 * default build's avx2 and avx512, or the one of MARCH), each into a table
 * of its own (kernel_table.h), and a run takes one at start, as BLIS takes
 * its kernels. Every set computes the same bits (docs/cluster.md). The
 * sets are isas.h's rows. */
#ifndef RESGEN_ISA_H
#define RESGEN_ISA_H

#include "isas.h"

/* ISA_MARCH: the one table of a build for MARCH (native, ...); then one
 * an instruction set of isas.h, narrowest first. */
#define ISA_ENUMERATOR(name, NAME, flags, runs) ISA_##NAME,
enum isa { ISA_MARCH, RESGEN_ISAS(ISA_ENUMERATOR) ISA_COUNT };
#undef ISA_ENUMERATOR

/* The index of the table to run, of tables (NULL where the build lacks
 * one): the build's one; else RESGEN_ISA's (a name of isas.h), if set; else
 * the widest set the processor runs (isas.h's runs()). A RESGEN_ISA that is unknown, absent from the build or
 * beyond the processor ends the program: one line, exit 2. */
int isa_choose(const void *const tables[ISA_COUNT]);

/* What was taken and why, for the machine line and explain, such as
 * "avx512 (of avx2, avx512: the best this processor has)"; "" before
 * isa_choose. */
const char *isa_taken(void);

/* The sets RESGEN_ISA takes, as words: "avx2 or avx512". */
const char *isa_words(void);

#endif
