/*
 * range_set.h - sets of 128-bit values kept as sorted, disjoint, coalesced
 * closed intervals. Values carry no family: callers keep one family per set
 * (IPv4 addresses are the values 0..2^32-1).
 *
 * Ownership: pk_range_set_new returns a set the caller frees with
 * pk_range_set_free. Operations that combine two sets modify `dst` only.
 * On PK_ERR_NOMEM and PK_ERR_TOO_BIG `dst` is left unchanged.
 *
 * The set is for pool specs and reporting (a few thousand intervals at
 * most); the allocator keeps its own tree for per-allocation work.
 */
#ifndef PK_RANGE_SET_H
#define PK_RANGE_SET_H

#include "count.h"

struct pk_range {
	pk_u128 lo;
	pk_u128 hi; /* inclusive */
};

struct pk_range_set;

/* Default cap on intervals per set; pk_range_set_set_cap changes it. */
#define PK_RANGE_SET_DEFAULT_CAP (1u << 20)

struct pk_range_set *pk_range_set_new(void);
void pk_range_set_free(struct pk_range_set *s);
/* A deep copy, or NULL when memory runs out. */
struct pk_range_set *pk_range_set_dup(const struct pk_range_set *s);
/* Growing past `cap` intervals fails with PK_ERR_TOO_BIG. */
void pk_range_set_set_cap(struct pk_range_set *s, size_t cap);
void pk_range_set_clear(struct pk_range_set *s);

/* s := s ∪ [lo, hi]; lo <= hi. */
PK_MUST_CHECK int pk_range_set_add(struct pk_range_set *s, pk_u128 lo, pk_u128 hi);
/* s := s \ [lo, hi]; lo <= hi. */
PK_MUST_CHECK int pk_range_set_remove(struct pk_range_set *s, pk_u128 lo, pk_u128 hi);

PK_MUST_CHECK int pk_range_set_union(struct pk_range_set *dst, const struct pk_range_set *src);
PK_MUST_CHECK int pk_range_set_subtract(struct pk_range_set *dst, const struct pk_range_set *src);
PK_MUST_CHECK int pk_range_set_intersect(struct pk_range_set *dst, const struct pk_range_set *src);

bool pk_range_set_contains(const struct pk_range_set *s, pk_u128 v);
/* True when some value is in both sets. */
bool pk_range_set_overlaps(const struct pk_range_set *a, const struct pk_range_set *b);
/* True when every value of `sub` is in `s`. */
bool pk_range_set_covers(const struct pk_range_set *s, const struct pk_range_set *sub);
bool pk_range_set_empty(const struct pk_range_set *s);
bool pk_range_set_equal(const struct pk_range_set *a, const struct pk_range_set *b);

/* Exact number of values (up to 2^128). */
struct pk_count pk_range_set_size(const struct pk_range_set *s);

/* The n-th smallest value (0-based); PK_ERR_OUT_OF_RANGE when n >= size. */
PK_MUST_CHECK int pk_range_set_nth(const struct pk_range_set *s, pk_u128 n, pk_u128 *out);

/* Borrowed view of the intervals, valid until the next change of s. */
const struct pk_range *pk_range_set_ranges(const struct pk_range_set *s, size_t *n);

#endif
