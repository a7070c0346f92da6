/* util/suggest.c - see suggest.h. */
#include <string.h>

#include "util/suggest.h"

#define MAXLEN 255

size_t tt_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > MAXLEN)
		la = MAXLEN;
	if (lb > MAXLEN)
		lb = MAXLEN;
	/* Three rows of the optimal-string-alignment table. */
	size_t r0[MAXLEN + 1], r1[MAXLEN + 1], r2[MAXLEN + 1];
	size_t *prev2 = r0, *prev = r1, *cur = r2;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
			size_t best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (prev[j - 1] + cost < best)
				best = prev[j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    prev2[j - 2] + 1 < best)
				best = prev2[j - 2] + 1;
			cur[j] = best;
		}
		size_t *t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[lb];
}

const char *tt_suggest(const char *word, const char *const *cands, size_t n)
{
	size_t len = strlen(word), limit = len / 3 ? len / 3 : 1;
	const char *best = NULL;
	size_t best_d = (size_t)-1;
	if (!len)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (!cands[i] || strcmp(cands[i], word) == 0)
			continue;
		size_t d = tt_edit_distance(word, cands[i]);
		if (len >= 3 && strncmp(cands[i], word, len) == 0 && d > 1)
			d = limit; /* a prefix of it: as good as the worst typo */
		if (d <= limit && d < len && d < best_d) {
			best = cands[i];
			best_d = d;
		}
	}
	return best;
}
