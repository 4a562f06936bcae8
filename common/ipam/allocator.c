/*
 * allocator.c - free fragments and quarantine as treaps.
 *
 * Both trees are keyed by the interval's first value; the intervals of one
 * tree are disjoint. Nodes carry a not-before time and the smallest
 * not-before time of their subtree, so the quarantine finds what has
 * expired without scanning. Nodes come from slabs and are recycled
 * through a free list: allocation in the hot path never calls malloc once
 * the slabs cover the pool's fragment count.
 */
#include <stdlib.h>

#include "allocator.h"

struct node {
	pk_u128 lo, hi;
	int64_t nb;     /* not before (quarantine only) */
	int64_t min_nb; /* smallest nb in this subtree */
	struct node *l, *r;
	uint32_t prio;
};

#define SLAB_NODES 1024

struct slab {
	struct slab *next;
	struct node nodes[SLAB_NODES];
};

struct pk_allocator {
	struct node *free_root; /* free fragments */
	struct node *quar_root; /* quarantined addresses, one per node */
	struct pk_range_set *usable;
	struct pk_range_set *oor; /* held outside the usable set */
	struct pk_count total;
	struct pk_count n_free;
	pk_u128 n_quar;
	pk_u128 n_oor;
	size_t fragments;
	uint64_t rng;
	struct slab *slabs;
	size_t n_slabs;
	struct node *spare; /* recycled nodes, linked through l */
	size_t slab_used;   /* nodes handed out of the newest slab */
};

static uint32_t next_prio(struct pk_allocator *a)
{
	/* xorshift64*: cheap, deterministic per allocator, no global state */
	uint64_t x = a->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	a->rng = x;
	return (uint32_t)((x * 0x2545F4914F6CDD1DULL) >> 32);
}

static struct node *node_new(struct pk_allocator *a, pk_u128 lo, pk_u128 hi, int64_t nb)
{
	struct node *n;
	if (a->spare != NULL) {
		n = a->spare;
		a->spare = n->l;
	} else {
		if (a->slabs == NULL || a->slab_used == SLAB_NODES) {
			struct slab *s = malloc(sizeof(*s));
			if (s == NULL)
				return NULL;
			s->next = a->slabs;
			a->slabs = s;
			a->n_slabs++;
			a->slab_used = 0;
		}
		n = &a->slabs->nodes[a->slab_used++];
	}
	n->lo = lo;
	n->hi = hi;
	n->nb = nb;
	n->min_nb = nb;
	n->l = n->r = NULL;
	n->prio = next_prio(a);
	return n;
}

static void node_put(struct pk_allocator *a, struct node *n)
{
	n->l = a->spare;
	a->spare = n;
}

static void upd(struct node *n)
{
	int64_t m = n->nb;
	if (n->l != NULL && n->l->min_nb < m)
		m = n->l->min_nb;
	if (n->r != NULL && n->r->min_nb < m)
		m = n->r->min_nb;
	n->min_nb = m;
}

/* l gets the nodes with lo < key, r those with lo >= key. */
static void split(struct node *t, pk_u128 key, struct node **l, struct node **r)
{
	if (t == NULL) {
		*l = *r = NULL;
	} else if (t->lo < key) {
		split(t->r, key, &t->r, r);
		upd(t);
		*l = t;
	} else {
		split(t->l, key, l, &t->l);
		upd(t);
		*r = t;
	}
}

/* Every key of l is below every key of r. */
static struct node *merge(struct node *l, struct node *r)
{
	if (l == NULL)
		return r;
	if (r == NULL)
		return l;
	if (l->prio > r->prio) {
		l->r = merge(l->r, r);
		upd(l);
		return l;
	}
	r->l = merge(l, r->l);
	upd(r);
	return r;
}

/* Descends to where n's priority places it and splits only that subtree. */
static struct node *insert(struct node *t, struct node *n)
{
	if (t == NULL)
		return n;
	if (n->prio > t->prio) {
		split(t, n->lo, &n->l, &n->r);
		upd(n);
		return n;
	}
	if (n->lo < t->lo)
		t->l = insert(t->l, n);
	else
		t->r = insert(t->r, n);
	upd(t);
	return t;
}

/* The fragments just below and just above v (v itself is in none). */
static void neighbours(struct node *t, pk_u128 v, struct node **p, struct node **s)
{
	*p = *s = NULL;
	while (t != NULL) {
		if (t->lo <= v) {
			*p = t;
			t = t->r;
		} else {
			*s = t;
			t = t->l;
		}
	}
}

/* Removes the node whose key is `key` (it must exist) and returns it in *out. */
static struct node *erase(struct node *t, pk_u128 key, struct node **out)
{
	if (t->lo == key) {
		*out = t;
		return merge(t->l, t->r);
	}
	if (key < t->lo)
		t->l = erase(t->l, key, out);
	else
		t->r = erase(t->r, key, out);
	upd(t);
	return t;
}

static struct node *find(struct node *t, pk_u128 v)
{
	while (t != NULL) {
		if (v < t->lo)
			t = t->l;
		else if (v > t->hi)
			t = t->r;
		else
			return t;
	}
	return NULL;
}

static struct node *leftmost(struct node *t)
{
	while (t != NULL && t->l != NULL)
		t = t->l;
	return t;
}

static void count_inc(struct pk_count *c)
{
	*c = pk_count_add(*c, pk_count_of(1));
}

static void count_dec(struct pk_count *c)
{
	*c = pk_count_sub(*c, pk_count_of(1));
}

/* Removes v, which lies in fragment x, from the free tree. */
static int free_take(struct pk_allocator *a, struct node *x, pk_u128 v)
{
	if (x->lo == x->hi) {
		struct node *gone;
		a->free_root = erase(a->free_root, x->lo, &gone);
		node_put(a, gone);
		a->fragments--;
	} else if (v == x->lo) {
		x->lo++; /* still above its left neighbours: keys stay ordered */
	} else if (v == x->hi) {
		x->hi--;
	} else {
		struct node *n = node_new(a, v + 1, x->hi, 0);
		if (n == NULL)
			return PK_ERR_NOMEM;
		x->hi = v - 1;
		a->free_root = insert(a->free_root, n);
		a->fragments++;
	}
	count_dec(&a->n_free);
	return PK_OK;
}

/*
 * Adds v (not in the free tree) to it, joining its neighbours. Growing a
 * neighbour in place keeps the keys ordered, so the common cases change
 * no links at all.
 */
static int free_give(struct pk_allocator *a, pk_u128 v)
{
	struct node *p, *s;
	neighbours(a->free_root, v, &p, &s);
	bool join_p = p != NULL && p->hi + 1 == v;
	bool join_s = s != NULL && v != PK_U128_MAX && s->lo == v + 1;

	if (join_p && join_s) {
		struct node *gone;
		pk_u128 hi = s->hi;
		a->free_root = erase(a->free_root, s->lo, &gone);
		node_put(a, gone);
		p->hi = hi;
		a->fragments--;
	} else if (join_p) {
		p->hi = v;
	} else if (join_s) {
		s->lo = v; /* still above its left neighbours */
	} else {
		struct node *n = node_new(a, v, v, 0);
		if (n == NULL)
			return PK_ERR_NOMEM;
		a->free_root = insert(a->free_root, n);
		a->fragments++;
	}
	count_inc(&a->n_free);
	return PK_OK;
}

struct pk_allocator *pk_allocator_new(const struct pk_range_set *usable)
{
	struct pk_allocator *a = calloc(1, sizeof(*a));
	if (a == NULL)
		return NULL;
	a->rng = 0x9E3779B97F4A7C15ULL;
	a->usable = pk_range_set_dup(usable);
	a->oor = pk_range_set_new();
	if (a->usable == NULL || a->oor == NULL)
		goto fail;
	size_t n;
	const struct pk_range *r = pk_range_set_ranges(usable, &n);
	for (size_t i = 0; i < n; i++) {
		/* Ascending keys: each new node goes to the far right. */
		struct node *x = node_new(a, r[i].lo, r[i].hi, 0);
		if (x == NULL)
			goto fail;
		a->free_root = merge(a->free_root, x);
	}
	a->fragments = n;
	a->total = pk_range_set_size(usable);
	a->n_free = a->total;
	return a;
fail:
	pk_allocator_free(a);
	return NULL;
}

void pk_allocator_free(struct pk_allocator *a)
{
	if (a == NULL)
		return;
	struct slab *s = a->slabs;
	while (s != NULL) {
		struct slab *next = s->next;
		free(s);
		s = next;
	}
	pk_range_set_free(a->usable);
	pk_range_set_free(a->oor);
	free(a);
}

void pk_allocator_expire(struct pk_allocator *a, int64_t now)
{
	while (a->quar_root != NULL && a->quar_root->min_nb <= now) {
		struct node *t = a->quar_root;
		for (;;) {
			if (t->l != NULL && t->l->min_nb <= now)
				t = t->l;
			else if (t->nb <= now)
				break;
			else
				t = t->r;
		}
		pk_u128 v = t->lo;
		struct node *gone;
		a->quar_root = erase(a->quar_root, v, &gone);
		node_put(a, gone);
		a->n_quar--;
		if (free_give(a, v) != PK_OK) {
			/* Out of memory: keep it quarantined rather than lose it. */
			struct node *back = node_new(a, v, v, now + 1);
			if (back != NULL) {
				a->quar_root = insert(a->quar_root, back);
				a->n_quar++;
			}
			return;
		}
	}
}

int pk_allocator_next(struct pk_allocator *a, int64_t now, pk_u128 *out)
{
	pk_allocator_expire(a, now);
	struct node *x = leftmost(a->free_root);
	if (x == NULL)
		return PK_ERR_EXHAUSTED;
	pk_u128 v = x->lo;
	int rc = free_take(a, x, v);
	if (rc != PK_OK)
		return rc;
	*out = v;
	return PK_OK;
}

int pk_allocator_take(struct pk_allocator *a, pk_u128 addr, int64_t now)
{
	pk_allocator_expire(a, now);
	struct node *x = find(a->free_root, addr);
	if (x != NULL)
		return free_take(a, x, addr);
	if (find(a->quar_root, addr) != NULL)
		return PK_ERR_QUARANTINED;
	if (pk_range_set_contains(a->usable, addr) || pk_range_set_contains(a->oor, addr))
		return PK_ERR_IN_USE;
	return PK_ERR_OUT_OF_RANGE;
}

int pk_allocator_adopt(struct pk_allocator *a, pk_u128 addr)
{
	struct node *x = find(a->free_root, addr);
	if (x != NULL)
		return free_take(a, x, addr);
	if (find(a->quar_root, addr) != NULL) {
		struct node *gone;
		a->quar_root = erase(a->quar_root, addr, &gone);
		node_put(a, gone);
		a->n_quar--;
		return PK_OK;
	}
	if (pk_range_set_contains(a->usable, addr) || pk_range_set_contains(a->oor, addr))
		return PK_ERR_IN_USE;
	int rc = pk_range_set_add(a->oor, addr, addr);
	if (rc != PK_OK)
		return rc;
	a->n_oor++;
	return PK_OK;
}

int pk_allocator_release(struct pk_allocator *a, pk_u128 addr, int64_t not_before, int64_t now)
{
	if (pk_range_set_contains(a->oor, addr)) {
		int rc = pk_range_set_remove(a->oor, addr, addr);
		if (rc != PK_OK)
			return rc;
		a->n_oor--;
		return PK_OK;
	}
	if (!pk_range_set_contains(a->usable, addr) || find(a->free_root, addr) != NULL ||
	    find(a->quar_root, addr) != NULL)
		return PK_ERR_NOT_HELD;
	if (not_before <= now)
		return free_give(a, addr);
	struct node *n = node_new(a, addr, addr, not_before);
	if (n == NULL)
		return PK_ERR_NOMEM;
	a->quar_root = insert(a->quar_root, n);
	a->n_quar++;
	return PK_OK;
}

/* Sets the not-before time of the quarantined node keyed `key` on the path down. */
static void requarantine(struct node *t, pk_u128 key, int64_t nb)
{
	if (t->lo == key) {
		if (nb > t->nb)
			t->nb = nb;
	} else if (key < t->lo) {
		requarantine(t->l, key, nb);
	} else {
		requarantine(t->r, key, nb);
	}
	upd(t);
}

int pk_allocator_quarantine(struct pk_allocator *a, pk_u128 addr, int64_t not_before)
{
	if (find(a->quar_root, addr) != NULL) {
		requarantine(a->quar_root, addr, not_before);
		return PK_OK;
	}
	struct node *x = find(a->free_root, addr);
	if (x == NULL)
		return pk_range_set_contains(a->usable, addr) ? PK_ERR_IN_USE : PK_ERR_OUT_OF_RANGE;
	struct node *n = node_new(a, addr, addr, not_before);
	if (n == NULL)
		return PK_ERR_NOMEM;
	int rc = free_take(a, x, addr);
	if (rc != PK_OK) {
		node_put(a, n);
		return rc;
	}
	a->quar_root = insert(a->quar_root, n);
	a->n_quar++;
	return PK_OK;
}

enum pk_addr_state pk_allocator_state(const struct pk_allocator *a, pk_u128 addr)
{
	if (find(a->free_root, addr) != NULL)
		return PK_ADDR_FREE;
	if (find(a->quar_root, addr) != NULL)
		return PK_ADDR_QUARANTINED;
	if (pk_range_set_contains(a->usable, addr))
		return PK_ADDR_USED;
	if (pk_range_set_contains(a->oor, addr))
		return PK_ADDR_OUT_OF_RANGE;
	return PK_ADDR_NOT_IN_POOL;
}

void pk_allocator_counts(const struct pk_allocator *a, struct pk_alloc_counts *out)
{
	out->total = a->total;
	out->free = a->n_free;
	out->quarantined = a->n_quar;
	out->used = pk_count_sub(pk_count_sub(a->total, a->n_free), pk_count_of(a->n_quar));
	out->out_of_range = a->n_oor;
	out->fragments = a->fragments;
}

static bool walk(const struct node *t, bool (*fn)(pk_u128, int64_t, void *), void *ctx)
{
	if (t == NULL)
		return true;
	return walk(t->l, fn, ctx) && fn(t->lo, t->nb, ctx) && walk(t->r, fn, ctx);
}

void pk_allocator_each_quarantined(const struct pk_allocator *a,
                                   bool (*fn)(pk_u128 addr, int64_t not_before, void *ctx),
                                   void *ctx)
{
	(void)walk(a->quar_root, fn, ctx);
}

size_t pk_allocator_memory(const struct pk_allocator *a)
{
	size_t n_usable, n_oor;
	(void)pk_range_set_ranges(a->usable, &n_usable);
	(void)pk_range_set_ranges(a->oor, &n_oor);
	return sizeof(*a) + a->n_slabs * sizeof(struct slab) +
	       (n_usable + n_oor) * sizeof(struct pk_range);
}
