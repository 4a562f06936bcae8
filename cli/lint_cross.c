/*
 * lint_cross.c - what only a set of files shows: objects defined twice,
 * overlapping pools, claims whose pool is not in the set, IPAddresses
 * holding the same address in one pool, and IPAddresses whose owner
 * references or pool disagree with their claim or pool.
 *
 * Every check sorts once and then looks up by binary search or sweeps, so
 * a run over n objects stays O(n log n) plus what it reports.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "lint_internal.h"
#include "pool_ref.h"
#include "range_set.h"
#include "rules.h"

struct identity {
	const char *kind, *ns, *name;
	size_t idx;
};

/* (kind, namespace, name): what bsearch looks for. */
static int cmp_key(const void *pa, const void *pb)
{
	const struct identity *x = pa, *y = pb;
	int c = lint_str_cmp(x->kind, y->kind);
	if (c == 0)
		c = lint_str_cmp(x->ns, y->ns);
	if (c == 0)
		c = lint_str_cmp(x->name, y->name);
	return c;
}

/* The same, then load order. */
static int cmp_identity(const void *pa, const void *pb)
{
	const struct identity *x = pa, *y = pb;
	int c = cmp_key(pa, pb);
	return c != 0 ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

int lint_str_cmp(const char *a, const char *b)
{
	if (a == b)
		return 0; /* the same string, as interned kinds are */
	if (a == NULL || b == NULL)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

bool lint_same_identity(const struct pk_lint_object *x, const struct pk_lint_object *y)
{
	return x->name != NULL && y->name != NULL && !lint_str_cmp(x->kind, y->kind) &&
	       !lint_str_cmp(lint_effective_namespace(x), lint_effective_namespace(y)) &&
	       !strcmp(x->name, y->name);
}

/* The checked, named objects sorted by (kind, namespace, name, load order). */
struct index {
	struct identity *ids;
	size_t n;
};

static int build_index(const struct pk_lint *l, struct index *x)
{
	x->n = 0;
	x->ids = malloc((l->n_objects ? l->n_objects : 1) * sizeof(*x->ids));
	if (x->ids == NULL)
		return PK_ERR_NOMEM;
	for (size_t i = 0; i < l->n_objects; i++) {
		const struct pk_lint_object *o = &l->objects[i];
		if (o->status == PK_LINT_SKIPPED || o->name == NULL || o->kind == NULL)
			continue;
		x->ids[x->n++] =
		    (struct identity){o->kind, lint_effective_namespace(o), o->name, i};
	}
	if (x->n > 1)
		qsort(x->ids, x->n, sizeof(*x->ids), cmp_identity);
	return PK_OK;
}

/* The last definition of kind ns/name in the index, or SIZE_MAX. */
static size_t find(const struct index *x, const char *kind, const char *ns, const char *name)
{
	struct identity key = {kind, ns, name, 0};
	const struct identity *hit = bsearch(&key, x->ids, x->n, sizeof(*x->ids), cmp_key);
	if (hit == NULL)
		return SIZE_MAX;
	while (hit + 1 < x->ids + x->n && cmp_key(hit + 1, &key) == 0)
		hit++;
	return hit->idx;
}

static int check_duplicates(struct pk_lint *l, const struct index *x)
{
	for (size_t k = 1; k < x->n; k++) {
		struct pk_lint_object *prev = &l->objects[x->ids[k - 1].idx];
		struct pk_lint_object *o = &l->objects[x->ids[k].idx];
		if (!lint_same_identity(prev, o))
			continue;
		char what[256];
		pk_lint_describe_object(o, what, sizeof(what));
		pk_violations_add(&l->scratch, PK_SEV_WARN, "metadata.name",
		                  "%s is also defined at %s; applying both keeps only the last",
		                  what, prev->origin);
		if (lint_flush(l, x->ids[k].idx, NULL, "duplicate-object") != PK_OK)
			return PK_ERR_NOMEM;
	}
	return PK_OK;
}

/* ---- overlapping pools: a sweep by start address finds the candidates ---- */

struct span {
	pk_u128 lo, hi;
	size_t idx;
	int family;
};

static int cmp_span(const void *pa, const void *pb)
{
	const struct span *x = pa, *y = pb;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static int collect_spans(const struct pk_lint *l, struct span **out, size_t *n)
{
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < l->n_objects; i++) {
		const struct pk_pool *p = l->internal[i].pool;
		size_t nr;
		if (p == NULL)
			continue;
		const struct pk_range *r = pk_range_set_ranges(p->addresses, &nr);
		if (pk_array_reserve(out, &cap, *n + nr, sizeof(**out)) != PK_OK)
			return PK_ERR_NOMEM;
		for (size_t k = 0; k < nr; k++)
			(*out)[(*n)++] = (struct span){r[k].lo, r[k].hi, i, (int)p->family};
	}
	if (*n > 1)
		qsort(*out, *n, sizeof(**out), cmp_span);
	return PK_OK;
}

/* A pool loaded later (`later`) that shares addresses with one loaded before it. */
struct pair {
	size_t later, earlier;
};

/*
 * A pool is compared with at most this many earlier pools it meets: the
 * rule reports at most PK_VIOLATIONS_MAX of them, and a file of thousands
 * of copies of one pool must not take memory in their square.
 */
#define PK_LINT_OVERLAPS_MAX (4 * PK_VIOLATIONS_MAX)

static int cmp_pair(const void *pa, const void *pb)
{
	const struct pair *x = pa, *y = pb;
	if (x->later != y->later)
		return x->later < y->later ? -1 : 1;
	return (x->earlier > y->earlier) - (x->earlier < y->earlier);
}

/*
 * Whether the webhook's rule compares pools x and y: a pool of a
 * cluster-scoped kind (GlobalIPPool) with every pool, one of a namespaced
 * kind (IPPool) with the pools of its namespace. Both passed their own
 * rules, so both are of a pool kind.
 */
static bool compared(const struct pk_lint *l, size_t x, size_t y)
{
	const struct pk_lint_object *a = &l->objects[x], *b = &l->objects[y];
	return !lint_pool_kind(a)->namespaced || !lint_pool_kind(b)->namespaced ||
	       !lint_str_cmp(lint_effective_namespace(a), lint_effective_namespace(b));
}

/* Records that pools x and y meet, unless the later has PK_LINT_OVERLAPS_MAX already. */
static int add_pair(const struct pk_lint *l, size_t x, size_t y, unsigned *count,
                    struct pair **pairs, size_t *np, size_t *cap)
{
	struct pair p = x > y ? (struct pair){x, y} : (struct pair){y, x};
	if (count[p.later] >= PK_LINT_OVERLAPS_MAX || !compared(l, x, y))
		return PK_OK;
	if (pk_array_reserve(pairs, cap, *np + 1, sizeof(**pairs)) != PK_OK)
		return PK_ERR_NOMEM;
	count[p.later]++;
	(*pairs)[(*np)++] = p;
	return PK_OK;
}

/* Every pair of pools the rule compares whose addresses meet: a sweep by start address. */
static int overlapping_pairs(const struct pk_lint *l, struct pair **pairs, size_t *np)
{
	struct span *s = NULL;
	size_t n = 0, *active = NULL, na = 0, cap = 0, pcap = 0;
	unsigned *count = calloc(l->n_objects ? l->n_objects : 1, sizeof(*count));
	int rc = count != NULL ? collect_spans(l, &s, &n) : PK_ERR_NOMEM;
	*pairs = NULL;
	*np = 0;
	for (size_t k = 0; k < n && rc == PK_OK; k++) {
		size_t keep = 0;
		for (size_t a = 0; a < na && rc == PK_OK; a++) {
			const struct span *t = &s[active[a]];
			if (t->family != s[k].family || t->hi < s[k].lo)
				continue;
			active[keep++] = active[a];
			if (t->idx != s[k].idx)
				rc = add_pair(l, t->idx, s[k].idx, count, pairs, np, &pcap);
		}
		na = keep;
		if (rc == PK_OK)
			rc = pk_array_reserve(&active, &cap, na + 1, sizeof(*active));
		if (rc == PK_OK)
			active[na++] = k;
	}
	free(s);
	free(active);
	free(count);
	if (rc == PK_OK && *np > 1)
		qsort(*pairs, *np, sizeof(**pairs), cmp_pair);
	return rc;
}

/* Pool j by the webhook's rule against the pools before it that the sweep found. */
static int check_overlaps_of(struct pk_lint *l, size_t j, size_t *earlier, size_t n)
{
	const struct pk_lint_object *o = &l->objects[j];
	struct pk_pool_id id = {
	    .kind = o->kind, .ns = lint_effective_namespace(o), .name = o->name};
	struct pk_err err;
	json_t *pool = lint_kept(l, j);
	l->listed = calloc(n, sizeof(*l->listed));
	if (pool == NULL || l->listed == NULL) {
		json_decref(pool);
		free(l->listed);
		return PK_ERR_NOMEM;
	}
	l->current = j;
	l->candidates = earlier;
	l->n_candidates = n;
	int rc = pk_pool_lookup_check_overlaps(&l->lookup, &id, pool, &l->scratch, &err);
	l->candidates = NULL;
	free(l->listed);
	l->listed = NULL;
	json_decref(pool);
	return rc == PK_OK ? lint_flush(l, j, NULL, "pool-overlap") : rc;
}

/*
 * Pools that share addresses with earlier ones are checked by the webhook's
 * rule against those; every overlapping pair is reported once, on the later
 * pool. The others cannot overlap anything.
 */
static int check_overlaps(struct pk_lint *l)
{
	struct pair *p;
	size_t n;
	int rc = overlapping_pairs(l, &p, &n);
	size_t *earlier = malloc((n ? n : 1) * sizeof(*earlier));
	if (earlier == NULL)
		rc = PK_ERR_NOMEM;
	for (size_t k = 0; k < n && rc == PK_OK;) {
		size_t m = 0, j = p[k].later;
		for (; k < n && p[k].later == j; k++)
			if (m == 0 || earlier[m - 1] != p[k].earlier)
				earlier[m++] = p[k].earlier;
		rc = check_overlaps_of(l, j, earlier, m);
	}
	free(earlier);
	free(p);
	return rc;
}

/* ---- claims and IPAddresses against what the files hold ---- */

/* A poolkeeper poolRef's pool: of a namespaced kind in ns, of a cluster-scoped one anywhere. */
static size_t find_pool(const struct index *x, const struct lint_internal *in, const char *ns)
{
	if (in->ref_kind == NULL || in->ref_name == NULL)
		return SIZE_MAX;
	return find(x, in->ref_kind,
	            pk_pool_kind_namespaced(in->ref_group, in->ref_kind) ? ns : NULL, in->ref_name);
}

/* A WARN when the claim's poolkeeper pool is not in the files, or only in another namespace. */
static int check_claim_pool(struct pk_lint *l, const struct index *x, size_t i)
{
	const struct pk_lint_object *o = &l->objects[i];
	const struct lint_internal *in = &l->internal[i];
	const char *ns = lint_effective_namespace(o);
	const char *kind = in->ref_kind, *name = in->ref_name;
	if (!in->pk_ref || kind == NULL || name == NULL || find_pool(x, in, ns) != SIZE_MAX)
		return PK_OK;
	bool namespaced = pk_pool_kind_namespaced(in->ref_group, kind);
	const char *elsewhere = namespaced ? lint_pool_namespace(l, kind, name) : NULL;
	if (elsewhere != NULL)
		pk_violations_add(
		    &l->scratch, PK_SEV_WARN, "spec.poolRef.name",
		    "%s \"%s\" is not in namespace %s, the claim's; the files have it "
		    "in namespace %s",
		    kind, name, ns, elsewhere);
	else
		pk_violations_add(&l->scratch, PK_SEV_WARN, "spec.poolRef.name",
		                  "%s \"%s\" is not in the files linted%s%s", kind, name,
		                  ns && namespaced ? " in namespace " : "",
		                  ns && namespaced ? ns : "");
	return lint_flush(l, i, NULL, "claim-pool-missing");
}

/* The owner reference to object j (the IPAddress's claim or pool), the at-th, names j's uid,
 * when both are known. */
static void check_uid(struct pk_lint *l, const char *ref, unsigned at, size_t j, const char *what)
{
	const struct pk_lint_object *t = &l->objects[j];
	const char *uid = l->internal[j].uid;
	char field[64];
	if (uid == NULL || ref == NULL || !strcmp(uid, ref))
		return;
	snprintf(field, sizeof(field), "metadata.ownerReferences[%u].uid", at);
	pk_violations_add(&l->scratch, PK_SEV_DENY, field,
	                  "the owner reference to %s \"%s\" has uid \"%.64s\", but the %s at "
	                  "%s has uid \"%.64s\"",
	                  t->kind, t->name, ref, what, t->origin, uid);
}

/* Whether two objects' spec.poolRef are the same reference. */
static bool same_pool_ref(const struct lint_internal *a, const struct lint_internal *b)
{
	return !lint_str_cmp(a->ref_group, b->ref_group) &&
	       !lint_str_cmp(a->ref_kind, b->ref_kind) && !lint_str_cmp(a->ref_name, b->ref_name);
}

/* An IPAddress against its claim and pool, when the files hold them. */
static int check_address_owners(struct pk_lint *l, const struct index *x, size_t i)
{
	const struct lint_internal *in = &l->internal[i];
	const char *ns = lint_effective_namespace(&l->objects[i]);
	size_t c = in->claim ? find(x, PK_CLAIM_KIND, ns, in->claim) : SIZE_MAX;
	size_t p = in->pk_ref ? find_pool(x, in, ns) : SIZE_MAX;
	if (c != SIZE_MAX) {
		if (!same_pool_ref(in, &l->internal[c]))
			pk_violations_add(&l->scratch, PK_SEV_DENY, "spec.poolRef",
			                  "differs from the poolRef of its claim at %s",
			                  l->objects[c].origin);
		check_uid(l, in->claim_uid, in->claim_ref, c, "claim");
	}
	if (p != SIZE_MAX)
		check_uid(l, in->pool_uid, in->pool_ref, p, "pool");
	return lint_flush(l, i, NULL, "owner-reference");
}

/*
 * IPAddresses that passed their own rules against their pools when the
 * files hold them (the webhook's check on CREATE), in their pools' order,
 * so that each pool is read once (lint_lookup.c keeps the last).
 */
static int check_addresses_in_pools(struct pk_lint *l)
{
	int rc = PK_OK;
	for (size_t k = 0; k < l->n_addr_refs && rc == PK_OK; k++) {
		size_t i = l->addr_refs[k].idx;
		struct pk_err err;
		if (!l->internal[i].in_pool)
			continue;
		json_t *v = lint_kept(l, i);
		if (v == NULL)
			return PK_ERR_NOMEM;
		rc = pk_pool_lookup_check_ipaddress_pool(
		    &l->lookup, lint_effective_namespace(&l->objects[i]), v, &l->scratch, &err);
		json_decref(v);
		if (rc == PK_OK)
			rc = lint_flush(l, i, "ipaddress", NULL);
	}
	lint_uncache_pool(l);
	return rc;
}

/* An IPAddress's pool (group, kind, namespace, name) and address, for sorting. */
struct held {
	const char *group, *kind, *ns, *name, *address;
	size_t idx;
};

static int cmp_held(const void *pa, const void *pb)
{
	const struct held *x = pa, *y = pb;
	const char *a[] = {x->group, x->kind, x->ns, x->name, x->address};
	const char *b[] = {y->group, y->kind, y->ns, y->name, y->address};
	for (size_t k = 0; k < 5; k++) {
		int c = lint_str_cmp(a[k], b[k]);
		if (c != 0)
			return c;
	}
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Two IPAddresses with one address in one pool: a DENY on the later. */
static int check_same_address(struct pk_lint *l, const struct index *x)
{
	size_t n = 0;
	struct held *h = malloc((x->n ? x->n : 1) * sizeof(*h));
	if (h == NULL)
		return PK_ERR_NOMEM;
	for (size_t k = 0; k < x->n; k++) {
		size_t i = x->ids[k].idx;
		const struct lint_internal *in = &l->internal[i];
		if (strcmp(x->ids[k].kind, PK_ADDRESS_KIND) || in->ref_kind == NULL ||
		    in->address == NULL)
			continue;
		bool namespaced = pk_pool_kind_namespaced(in->ref_group, in->ref_kind);
		h[n++] =
		    (struct held){in->ref_group, in->ref_kind, namespaced ? x->ids[k].ns : NULL,
		                  in->ref_name,  in->address,  i};
	}
	if (n > 1)
		qsort(h, n, sizeof(*h), cmp_held);
	int rc = PK_OK;
	for (size_t k = 1; k < n && rc == PK_OK; k++) {
		struct held a = h[k - 1], b = h[k];
		a.idx = b.idx = 0;
		if (cmp_held(&a, &b) != 0)
			continue;
		const struct pk_lint_object *prev = &l->objects[h[k - 1].idx];
		pk_violations_add(&l->scratch, PK_SEV_DENY, "spec.address",
		                  "%.64s is also held by IPAddress %s at %s, in the same pool",
		                  h[k].address, prev->name, prev->origin);
		rc = lint_flush(l, h[k].idx, NULL, "duplicate-address");
	}
	free(h);
	return rc;
}

/* Whether the files hold any pool: only then is a claim's missing pool worth a word. */
static bool any_pool(const struct pk_lint *l, const struct index *x)
{
	for (size_t k = 0; k < x->n; k++)
		if (lint_pool_kind(&l->objects[x->ids[k].idx]) != NULL)
			return true;
	return false;
}

int lint_check_across(struct pk_lint *l)
{
	struct index x;
	if (build_index(l, &x) != PK_OK)
		return PK_ERR_NOMEM;
	bool pools = any_pool(l, &x);
	int rc = check_duplicates(l, &x);
	if (rc == PK_OK)
		rc = check_overlaps(l);
	if (rc == PK_OK)
		rc = check_addresses_in_pools(l);
	for (size_t k = 0; k < x.n && rc == PK_OK; k++) {
		size_t i = x.ids[k].idx;
		if (pools && !strcmp(x.ids[k].kind, PK_CLAIM_KIND))
			rc = check_claim_pool(l, &x, i);
		else if (!strcmp(x.ids[k].kind, PK_ADDRESS_KIND))
			rc = check_address_owners(l, &x, i);
	}
	if (rc == PK_OK)
		rc = check_same_address(l, &x);
	free(x.ids);
	return rc;
}
