/* "Did you mean": the nearest word by edit distance; see nearest.h. */
#include "nearest.h"

#include <limits.h>
#include <string.h>

/* Edit distance, for "did you mean". */
static int distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b);
	if (la > 63 || lb > 63)
		return INT_MAX;
	int row[64];
	for (int j = 0; j <= lb; j++)
		row[j] = j;
	for (int i = 1; i <= la; i++) {
		int diagonal = row[0];
		row[0] = i;
		for (int j = 1; j <= lb; j++) {
			int above = row[j];
			int cost = a[i - 1] == b[j - 1] ? 0 : 1;
			int best = diagonal + cost;
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diagonal = above;
		}
	}
	return row[lb];
}

const char *nearest(const char *word, const char *const *choices, int count)
{
	const char *best = choices[0];
	int best_distance = INT_MAX;
	for (int i = 0; i < count; i++) {
		int dist = distance(word, choices[i]);
		if (dist < best_distance) {
			best_distance = dist;
			best = choices[i];
		}
	}
	return best;
}
