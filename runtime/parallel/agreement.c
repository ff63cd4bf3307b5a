/* Values compared across the ranks; see agreement.h. */
#include "agreement.h"

#include <stdio.h>

#include "net_api.h"
#include "printable.h"
#include "ranks.h"

static void show(const struct agreed *a, uint64_t value, char *out, size_t size)
{
	switch (a->kind) {
	case AGREED_NUMBER:
		snprintf(out, size, "%llu", (unsigned long long)value);
		break;
	case AGREED_GIVEN:
		snprintf(out, size, "%s", value ? "given" : "not given");
		break;
	case AGREED_HASH:
		snprintf(out, size, "%016llx", (unsigned long long)value);
		break;
	case AGREED_WORD:
		snprintf(out, size, "%s", a->words[value]);
		break;
	}
}

int ranks_agree_on(const struct agreed *values, int count)
{
	for (int i = 0; i < count; i++) {
		int rank;
		uint64_t theirs;
		if (ranks_agree(values[i].value, &rank, &theirs))
			continue;
		if (ranks_rank() == 0) {
			char mine[64], other[64];
			show(&values[i], values[i].value, mine, sizeof mine);
			show(&values[i], theirs, other, sizeof other);
			error_line("%s: the ranks disagree on %s: %s on rank 0, %s on rank %d; every rank must run the "
				   "same binary and command with the same settings and data\n",
				   net_info.name, values[i].what, mine, other, rank);
		}
		return ranks_agree_status(2);
	}
	return 0;
}
