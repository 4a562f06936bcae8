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

/* Marks every pool that shares an address with a pool loaded before it. */
static int mark_overlapping(const struct pk_lint *l, bool *later)
{
	struct span *s;
	size_t n, *active = NULL, na = 0, cap = 0;
	if (collect_spans(l, &s, &n) != PK_OK)
		return PK_ERR_NOMEM;
	for (size_t k = 0; k < n; k++) {
		size_t keep = 0;
		for (size_t a = 0; a < na; a++) {
			const struct span *t = &s[active[a]];
			if (t->family != s[k].family || t->hi < s[k].lo)
				continue;
			active[keep++] = active[a];
			if (t->idx != s[k].idx)
				later[t->idx > s[k].idx ? t->idx : s[k].idx] = true;
		}
		na = keep;
		if (pk_array_reserve(&active, &cap, na + 1, sizeof(*active)) != PK_OK) {
			free(s);
			free(active);
			return PK_ERR_NOMEM;
		}
		active[na++] = k;
	}
	free(s);
	free(active);
	return PK_OK;
}

/*
 * Pools that share addresses with earlier ones are checked by the webhook's
 * rule against the pools loaded before them; every overlapping pair is
 * reported once, on the later pool. The others cannot overlap anything.
 */
static int check_overlaps(struct pk_lint *l)
{
	int rc = PK_OK;
	bool *later = calloc(l->n_objects ? l->n_objects : 1, sizeof(*later));
	if (later == NULL || mark_overlapping(l, later) != PK_OK) {
		free(later);
		return PK_ERR_NOMEM;
	}
	for (size_t j = 0; j < l->n_objects && rc == PK_OK; j++) {
		const struct pk_lint_object *o = &l->objects[j];
		struct pk_pool_id id = {
		    .kind = o->kind, .ns = lint_effective_namespace(o), .name = o->name};
		struct pk_err err;
		if (!later[j] || l->internal[j].pool == NULL)
			continue;
		l->before = j;
		rc = pk_pool_lookup_check_overlaps(&l->lookup, &id, l->internal[j].value,
		                                   &l->scratch, &err);
		if (rc == PK_OK)
			rc = lint_flush(l, j, NULL, "pool-overlap");
	}
	l->before = l->n_objects;
	free(later);
	return rc;
}

/* ---- claims and IPAddresses against what the files hold ---- */

/* A poolkeeper poolRef's pool: namespaced IPPools in ns, GlobalIPPools anywhere. */
static size_t find_pool(const struct index *x, const json_t *ref, const char *ns)
{
	const char *kind = pk_json_cstr_at(ref, "kind"), *name = pk_json_cstr_at(ref, "name");
	if (kind == NULL || name == NULL)
		return SIZE_MAX;
	return find(x, kind, strcmp(kind, PK_POOL_KIND) ? NULL : ns, name);
}

/* A WARN when the claim's poolkeeper pool is not in the files, or only in another namespace. */
static int check_claim_pool(struct pk_lint *l, const struct index *x, size_t i)
{
	const struct pk_lint_object *o = &l->objects[i];
	const json_t *ref = pk_json_path_keys(l->internal[i].value, "spec", "poolRef", NULL);
	const char *ns = lint_effective_namespace(o);
	if (!pk_rules_is_poolkeeper_pool_ref(ref) || find_pool(x, ref, ns) != SIZE_MAX)
		return PK_OK;
	const char *kind = pk_json_cstr_at(ref, "kind"), *name = pk_json_cstr_at(ref, "name");
	if (kind == NULL || name == NULL)
		return PK_OK;
	const char *elsewhere =
	    strcmp(kind, PK_POOL_KIND) ? NULL : lint_pool_namespace(l, kind, name);
	if (elsewhere != NULL)
		pk_violations_add(
		    &l->scratch, PK_SEV_WARN, "spec.poolRef.name",
		    "%s \"%s\" is not in namespace %s, the claim's; the files have it "
		    "in namespace %s",
		    kind, name, ns, elsewhere);
	else
		pk_violations_add(&l->scratch, PK_SEV_WARN, "spec.poolRef.name",
		                  "%s \"%s\" is not in the files linted%s%s", kind, name,
		                  ns && !strcmp(kind, PK_POOL_KIND) ? " in namespace " : "",
		                  ns && !strcmp(kind, PK_POOL_KIND) ? ns : "");
	return lint_flush(l, i, NULL, "claim-pool-missing");
}

/* The uid of the owner reference of `kind` named `name`, or NULL. */
static const char *owner_uid(const json_t *obj, const char *kind, const char *name)
{
	const json_t *refs = pk_json_path_keys(obj, "metadata", "ownerReferences", NULL);
	for (size_t k = 0; k < json_array_size(refs); k++) {
		const json_t *r = json_array_get(refs, k);
		const char *rk = pk_json_cstr_at(r, "kind"), *rn = pk_json_cstr_at(r, "name");
		if (rk != NULL && rn != NULL && !strcmp(rk, kind) && !strcmp(rn, name))
			return pk_json_cstr_at(r, "uid");
	}
	return NULL;
}

/* The owner reference to `other` (object j) names its uid, when both are known. */
static void check_uid(struct pk_lint *l, size_t i, size_t j, const char *what)
{
	const struct pk_lint_object *t = &l->objects[j];
	const char *uid = pk_json_meta_cstr(l->internal[j].value, "uid");
	const char *ref = owner_uid(l->internal[i].value, t->kind, t->name);
	if (uid != NULL && ref != NULL && strcmp(uid, ref))
		pk_violations_add(
		    &l->scratch, PK_SEV_DENY, "metadata.ownerReferences",
		    "the owner reference to %s \"%s\" has uid \"%.64s\", but the %s at "
		    "%s has uid \"%.64s\"",
		    t->kind, t->name, ref, what, t->origin, uid);
}

/* An IPAddress against its claim and pool when the files hold them. */
static int check_address_owners(struct pk_lint *l, const struct index *x, size_t i)
{
	const json_t *v = l->internal[i].value;
	const char *ns = lint_effective_namespace(&l->objects[i]);
	const json_t *ref = pk_json_path_keys(v, "spec", "poolRef", NULL);
	const char *claim = pk_json_cstr(pk_json_path_keys(v, "spec", "claimRef", "name", NULL));
	size_t c = claim ? find(x, PK_CLAIM_KIND, ns, claim) : SIZE_MAX;
	size_t p = pk_rules_is_poolkeeper_pool_ref(ref) ? find_pool(x, ref, ns) : SIZE_MAX;
	if (c != SIZE_MAX) {
		const json_t *cref =
		    pk_json_path_keys(l->internal[c].value, "spec", "poolRef", NULL);
		if (!json_equal((json_t *)(uintptr_t)ref, (json_t *)(uintptr_t)cref))
			pk_violations_add(&l->scratch, PK_SEV_DENY, "spec.poolRef",
			                  "differs from the poolRef of its claim at %s",
			                  l->objects[c].origin);
		check_uid(l, i, c, "claim");
	}
	if (p != SIZE_MAX)
		check_uid(l, i, p, "pool");
	return lint_flush(l, i, NULL, "owner-reference");
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
		const json_t *spec = json_object_get(l->internal[i].value, "spec");
		const json_t *ref = json_object_get(spec, "poolRef");
		const char *kind = pk_json_cstr_at(ref, "kind"),
		           *addr = pk_json_cstr_at(spec, "address");
		if (strcmp(x->ids[k].kind, PK_ADDRESS_KIND) || kind == NULL || addr == NULL)
			continue;
		bool global = !strcmp(kind, PK_GLOBAL_POOL_KIND);
		h[n++] = (struct held){
		    pk_json_cstr_at(ref, "apiGroup"), kind, global ? NULL : x->ids[k].ns,
		    pk_json_cstr_at(ref, "name"),     addr, i};
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
static bool any_pool(const struct index *x)
{
	for (size_t k = 0; k < x->n; k++)
		if (!strcmp(x->ids[k].kind, PK_POOL_KIND) ||
		    !strcmp(x->ids[k].kind, PK_GLOBAL_POOL_KIND))
			return true;
	return false;
}

int lint_check_across(struct pk_lint *l)
{
	struct index x;
	if (build_index(l, &x) != PK_OK)
		return PK_ERR_NOMEM;
	bool pools = any_pool(&x);
	int rc = check_duplicates(l, &x);
	if (rc == PK_OK)
		rc = check_overlaps(l);
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
