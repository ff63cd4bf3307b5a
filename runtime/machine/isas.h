/* The instruction sets a default build compiles each network's hot code
 * (kernels.c) for, one row each, narrowest first: its name (RESGEN_ISA's
 * word, the table net_kernels_NAME), its enumerator, the compiler flags
 * its unit is compiled with, and the test that the processor runs it.
 * The Makefile reads the rows (ISAS, ISA_FLAGS_name), isa.h and isa.c
 * make the enumeration, names and choice of them, and the templates
 * (kernel_table.h, net.c) their tables: adding a row adds an instruction
 * set everywhere (README, "Adding an instruction set"). Each row is one
 * line, as the Makefile reads it. */
#ifndef RESGEN_ISAS_H
#define RESGEN_ISAS_H

/* X(name, NAME, "flags", runs): runs() is whether the processor runs code
 * compiled with the flags (machine.h). The first row is the baseline
 * every binary is compiled for, which a processor that lacks it refuses
 * before main. */
#define RESGEN_ISAS(X)                                                                         \
	X(avx2, AVX2, "-march=x86-64-v3", machine_has_baseline)                                 \
	X(avx512, AVX512, "-march=x86-64-v4 -mprefer-vector-width=512", machine_has_skx_extensions)

#endif
