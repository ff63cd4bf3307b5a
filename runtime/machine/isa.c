/* The instruction set a run takes (isa.h). */
#include "isa.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "printable.h"

#define ISA_NAME(name, NAME, flags, runs) [ISA_##NAME] = #name,
static const char *const isa_names[ISA_COUNT] = {[ISA_MARCH] = "march", RESGEN_ISAS(ISA_NAME)};
#define ISA_RUNS(name, NAME, flags, runs) [ISA_##NAME] = runs,
static bool (*const isa_runs[ISA_COUNT])(void) = {RESGEN_ISAS(ISA_RUNS)};
static char taken[160];

/* Whether the processor runs code compiled for isa (isas.h). */
static bool isa_supported(enum isa isa) { return isa_runs[isa] && isa_runs[isa](); }

static void refuse(const char *why)
{
	fprintf(stderr, "%s: RESGEN_ISA: %s\n", program_invocation_short_name, why);
	exit(2);
}

int isa_choose(const void *const tables[ISA_COUNT])
{
	const char *wanted = getenv("RESGEN_ISA");
	char why[512], shown[64];
	if (tables[ISA_MARCH]) {
		if (wanted) {
			printable_text(shown, sizeof shown, wanted);
			snprintf(why, sizeof why,
				 "'%s' cannot be chosen: this binary's kernels were compiled for one instruction set "
				 "(MARCH=%s); the default build (MARCH unset) carries avx2 and avx512 and takes RESGEN_ISA",
				 shown, machine_built_for());
			refuse(why);
		}
		snprintf(taken, sizeof taken, "MARCH=%s (the build's one)", machine_built_for());
		return ISA_MARCH;
	}
	char carried[64] = "";
	for (int i = ISA_MARCH + 1; i < ISA_COUNT; i++)
		if (tables[i])
			snprintf(carried + strlen(carried), sizeof carried - strlen(carried), "%s%s", carried[0] ? ", " : "",
				 isa_names[i]);
	if (wanted) {
		int isa = ISA_MARCH + 1;
		while (isa < ISA_COUNT && strcmp(wanted, isa_names[isa]) != 0)
			isa++;
		printable_text(shown, sizeof shown, wanted);
		if (isa == ISA_COUNT || !tables[isa]) {
			snprintf(why, sizeof why, "'%s' is not an instruction set this binary carries; use one of %s, or unset it",
				 shown, carried);
			refuse(why);
		}
		if (!isa_supported((enum isa)isa)) {
			char processor[128];
			machine_processor(processor, sizeof processor);
			snprintf(why, sizeof why, "this processor (%s) cannot run %s; use %s, or unset it", processor, shown,
				 isa_names[ISA_MARCH + 1]);
			refuse(why);
		}
		snprintf(taken, sizeof taken, "%s (of %s: RESGEN_ISA)", isa_names[isa], carried);
		return isa;
	}
	int isa = ISA_COUNT - 1;
	while (isa > ISA_MARCH + 1 && !(tables[isa] && isa_supported((enum isa)isa)))
		isa--;
	snprintf(taken, sizeof taken, "%s (of %s: the widest this processor runs)", isa_names[isa], carried);
	return isa;
}

const char *isa_taken(void) { return taken; }

const char *isa_words(void)
{
	static char words[128];
	if (!words[0])
		for (int i = ISA_MARCH + 1; i < ISA_COUNT; i++)
			snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s",
				 i == ISA_MARCH + 1 ? "" : i + 1 == ISA_COUNT ? " or " : ", ", isa_names[i]);
	return words;
}
