/*
 * suggest.h - "did you mean ...?": the edit distance of two short names
 * (Levenshtein: insertions, deletions and substitutions of bytes) and the
 * nearest of a list of known names, for messages about misspelt fields,
 * kinds and API versions.
 */
#ifndef PK_SUGGEST_H
#define PK_SUGGEST_H

#include <stddef.h>

/* The longest name compared; a longer one is at distance PK_SUGGEST_FAR from everything. */
#define PK_SUGGEST_MAX_LEN 64
#define PK_SUGGEST_FAR     ((size_t)1 << 20)

/* The edit distance of the na bytes at a and the nb bytes at b. */
size_t pk_edit_distance(const char *a, size_t na, const char *b, size_t nb);

/*
 * The entry of known[0..n) nearest to the len bytes at word, when it is
 * within max_distance edits (the first one on a tie); NULL when none is.
 * An exact match is at distance 0.
 */
const char *pk_suggest(const char *word, size_t len, const char *const *known, size_t n,
                       size_t max_distance);

/*
 * The name a user most likely meant: the candidate equal to `word` ignoring
 * case, else the nearest (the first on a tie) within `max` edits and fewer
 * edits than the word has bytes (so "ab" suggests nothing); NULL when none is.
 */
const char *pk_suggest_name(const char *word, const char *const *candidates, size_t n, size_t max);

#endif
