/* Which instruction set a network's hot code runs: its kernels.c is
 * compiled once for each set the build carries (the Makefile's ISAS: the
 * default build's avx2 and avx512, or the one of MARCH), each into a table
 * of its own (kernel_table.h), and a run takes one at start, as BLIS takes
 * its kernels. Every set computes the same bits (docs/cluster.md). */
#ifndef RESGEN_ISA_H
#define RESGEN_ISA_H

/* ISA_MARCH: the one table of a build for MARCH (native, ...). */
enum isa { ISA_MARCH, ISA_AVX2, ISA_AVX512, ISA_COUNT };

/* The index of the table to run, of tables (NULL where the build lacks
 * one): the build's one; else RESGEN_ISA's (avx2 or avx512), if set; else
 * avx512 where the processor has every AVX-512 extension it is compiled
 * for, else avx2. A RESGEN_ISA that is unknown, absent from the build or
 * beyond the processor ends the program: one line, exit 2. */
int isa_choose(const void *const tables[ISA_COUNT]);

/* What was taken and why, for the machine line and explain, such as
 * "avx512 (of avx2, avx512: the best this processor has)"; "" before
 * isa_choose. */
const char *isa_taken(void);

#endif
