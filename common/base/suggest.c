/* suggest.c - edit distance and the nearest known name; see suggest.h. */
#include <string.h>
#include <strings.h>

#include "suggest.h"

size_t pk_edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
	size_t row[PK_SUGGEST_MAX_LEN + 1];
	if (na > PK_SUGGEST_MAX_LEN || nb > PK_SUGGEST_MAX_LEN)
		return PK_SUGGEST_FAR;
	for (size_t j = 0; j <= nb; j++)
		row[j] = j;
	for (size_t i = 1; i <= na; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= nb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[nb];
}

const char *pk_suggest(const char *word, size_t len, const char *const *known, size_t n,
                       size_t max_distance)
{
	const char *best = NULL;
	size_t bestd = max_distance + 1;
	for (size_t i = 0; i < n; i++) {
		size_t d = pk_edit_distance(word, len, known[i], strlen(known[i]));
		if (d < bestd) {
			bestd = d;
			best = known[i];
		}
	}
	return best;
}

const char *pk_suggest_name(const char *word, const char *const *candidates, size_t n, size_t max)
{
	size_t len = strlen(word);
	for (size_t i = 0; i < n; i++)
		if (strlen(candidates[i]) == len && strcasecmp(word, candidates[i]) == 0)
			return candidates[i];
	const char *at = pk_suggest(word, len, candidates, n, max);
	if (at == NULL || pk_edit_distance(word, len, at, strlen(at)) >= len)
		return NULL;
	return at;
}
