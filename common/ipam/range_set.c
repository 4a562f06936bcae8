/*
 * range_set.c - sorted, disjoint, coalesced closed intervals.
 *
 * Every combining operation is a linear merge into a fresh array that
 * replaces dst's only once complete, so a failed allocation (or a result
 * over the set's cap) leaves dst as it was.
 */
#include <stdlib.h>
#include <string.h>

#include "range_set.h"

struct pk_range_set {
	struct pk_range *r;
	size_t n;
	size_t cap;   /* allocated */
	size_t limit; /* most intervals allowed */
};

struct pk_range_set *pk_range_set_new(void)
{
	struct pk_range_set *s = calloc(1, sizeof(*s));
	if (s != NULL)
		s->limit = PK_RANGE_SET_DEFAULT_CAP;
	return s;
}

void pk_range_set_free(struct pk_range_set *s)
{
	if (s == NULL)
		return;
	free(s->r);
	free(s);
}

void pk_range_set_set_cap(struct pk_range_set *s, size_t cap)
{
	s->limit = cap;
}

void pk_range_set_clear(struct pk_range_set *s)
{
	s->n = 0;
}

struct pk_range_set *pk_range_set_dup(const struct pk_range_set *s)
{
	struct pk_range_set *d = pk_range_set_new();
	if (d == NULL)
		return NULL;
	d->limit = s->limit;
	if (s->n > 0) {
		d->r = malloc(s->n * sizeof(*d->r));
		if (d->r == NULL) {
			free(d);
			return NULL;
		}
		memcpy(d->r, s->r, s->n * sizeof(*d->r));
		d->n = d->cap = s->n;
	}
	return d;
}

/* True when b starts at most one past a's end (they overlap or touch). */
static bool touches(const struct pk_range *a, const struct pk_range *b)
{
	return a->hi == PK_U128_MAX || b->lo <= a->hi + 1;
}

/* An output buffer for merges, sized for the worst case up front. */
struct out {
	struct pk_range *r;
	size_t n;
};

/* Union, subtraction and intersection of n and m intervals give at most n + m. */
static int out_init(struct out *o, size_t worst)
{
	o->n = 0;
	o->r = NULL;
	if (worst == 0)
		return PK_OK;
	o->r = malloc(worst * sizeof(*o->r));
	return o->r == NULL ? PK_ERR_NOMEM : PK_OK;
}

/* Appends [lo, hi], coalescing with the previous interval. */
static void out_push(struct out *o, pk_u128 lo, pk_u128 hi)
{
	if (o->n > 0) {
		struct pk_range *last = &o->r[o->n - 1];
		struct pk_range next = {lo, hi};
		if (touches(last, &next)) {
			if (hi > last->hi)
				last->hi = hi;
			return;
		}
	}
	o->r[o->n].lo = lo;
	o->r[o->n].hi = hi;
	o->n++;
}

static int commit(struct pk_range_set *dst, struct out *o)
{
	if (o->n > dst->limit) {
		free(o->r);
		return PK_ERR_TOO_BIG;
	}
	free(dst->r);
	dst->r = o->r;
	dst->n = dst->cap = o->n;
	return PK_OK;
}

static int do_union(struct pk_range_set *dst, const struct pk_range *b, size_t nb)
{
	const struct pk_range *a = dst->r;
	size_t na = dst->n, i = 0, j = 0;
	struct out o;
	if (out_init(&o, na + nb) != PK_OK)
		return PK_ERR_NOMEM;
	while (i < na || j < nb) {
		const struct pk_range *x;
		if (j >= nb || (i < na && a[i].lo <= b[j].lo))
			x = &a[i++];
		else
			x = &b[j++];
		out_push(&o, x->lo, x->hi);
	}
	return commit(dst, &o);
}

static int do_subtract(struct pk_range_set *dst, const struct pk_range *b, size_t nb)
{
	const struct pk_range *a = dst->r;
	size_t na = dst->n, j = 0;
	struct out o;
	if (out_init(&o, na + nb) != PK_OK)
		return PK_ERR_NOMEM;
	for (size_t i = 0; i < na; i++) {
		pk_u128 lo = a[i].lo, hi = a[i].hi;
		bool alive = true;
		while (j < nb && b[j].hi < lo)
			j++;
		size_t k = j;
		while (alive && k < nb && b[k].lo <= hi) {
			if (b[k].lo > lo) {
				out_push(&o, lo, b[k].lo - 1);
			}
			if (b[k].hi >= hi)
				alive = false;
			else
				lo = b[k].hi + 1;
			k++;
		}
		if (alive) {
			out_push(&o, lo, hi);
		}
	}
	return commit(dst, &o);
}

static int do_intersect(struct pk_range_set *dst, const struct pk_range *b, size_t nb)
{
	const struct pk_range *a = dst->r;
	size_t na = dst->n, i = 0, j = 0;
	struct out o;
	if (out_init(&o, na + nb) != PK_OK)
		return PK_ERR_NOMEM;
	while (i < na && j < nb) {
		pk_u128 lo = a[i].lo > b[j].lo ? a[i].lo : b[j].lo;
		pk_u128 hi = a[i].hi < b[j].hi ? a[i].hi : b[j].hi;
		if (lo <= hi) {
			out_push(&o, lo, hi);
		}
		if (a[i].hi < b[j].hi)
			i++;
		else
			j++;
	}
	return commit(dst, &o);
}

int pk_range_set_add(struct pk_range_set *s, pk_u128 lo, pk_u128 hi)
{
	if (lo > hi)
		return PK_ERR_INVALID;
	struct pk_range one = {lo, hi};
	return do_union(s, &one, 1);
}

int pk_range_set_remove(struct pk_range_set *s, pk_u128 lo, pk_u128 hi)
{
	if (lo > hi)
		return PK_ERR_INVALID;
	struct pk_range one = {lo, hi};
	return do_subtract(s, &one, 1);
}

int pk_range_set_union(struct pk_range_set *dst, const struct pk_range_set *src)
{
	return do_union(dst, src->r, src->n);
}

int pk_range_set_subtract(struct pk_range_set *dst, const struct pk_range_set *src)
{
	return do_subtract(dst, src->r, src->n);
}

int pk_range_set_intersect(struct pk_range_set *dst, const struct pk_range_set *src)
{
	return do_intersect(dst, src->r, src->n);
}

/* Index of the interval holding v, or -1. */
static ptrdiff_t find(const struct pk_range_set *s, pk_u128 v)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->r[mid].hi < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < s->n && s->r[lo].lo <= v)
		return (ptrdiff_t)lo;
	return -1;
}

bool pk_range_set_contains(const struct pk_range_set *s, pk_u128 v)
{
	return find(s, v) >= 0;
}

bool pk_range_set_overlaps(const struct pk_range_set *a, const struct pk_range_set *b)
{
	size_t i = 0, j = 0;
	while (i < a->n && j < b->n) {
		if (a->r[i].hi < b->r[j].lo)
			i++;
		else if (b->r[j].hi < a->r[i].lo)
			j++;
		else
			return true;
	}
	return false;
}

bool pk_range_set_covers(const struct pk_range_set *s, const struct pk_range_set *sub)
{
	for (size_t k = 0; k < sub->n; k++) {
		ptrdiff_t i = find(s, sub->r[k].lo);
		if (i < 0 || s->r[i].hi < sub->r[k].hi)
			return false;
	}
	return true;
}

bool pk_range_set_empty(const struct pk_range_set *s)
{
	return s->n == 0;
}

bool pk_range_set_equal(const struct pk_range_set *a, const struct pk_range_set *b)
{
	return a->n == b->n && (a->n == 0 || memcmp(a->r, b->r, a->n * sizeof(*a->r)) == 0);
}

/* Size of one interval: hi - lo + 1, which is 2^128 for [0, 2^128-1]. */
static struct pk_count span(const struct pk_range *r)
{
	struct pk_count c = {r->hi - r->lo + 1, 0};
	if (r->lo == 0 && r->hi == PK_U128_MAX)
		c.carry = 1;
	return c;
}

struct pk_count pk_range_set_size(const struct pk_range_set *s)
{
	struct pk_count total = {0, 0};
	for (size_t i = 0; i < s->n; i++)
		total = pk_count_add(total, span(&s->r[i]));
	return total;
}

int pk_range_set_nth(const struct pk_range_set *s, pk_u128 n, pk_u128 *out)
{
	for (size_t i = 0; i < s->n; i++) {
		struct pk_count c = span(&s->r[i]);
		if (c.carry || n < c.lo) {
			*out = s->r[i].lo + n;
			return PK_OK;
		}
		n -= c.lo;
	}
	return PK_ERR_OUT_OF_RANGE;
}

const struct pk_range *pk_range_set_ranges(const struct pk_range_set *s, size_t *n)
{
	*n = s->n;
	return s->r;
}
