/* lint_lookup.c - the rules' lookup (pool_lookup.h) over what a lint loaded. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "lint_internal.h"
#include "pool_ref.h"
#include "rules.h"

/* ---- the rules' lookup over what was loaded ---- */

bool lint_is_kind(const struct pk_lint_object *o, const char *group, const char *kind)
{
	size_t n = strlen(group);
	return o->api_version != NULL && o->kind != NULL && !strncmp(o->api_version, group, n) &&
	       o->api_version[n] == '/' && !strcmp(o->kind, kind);
}

const struct pk_pool_kind *lint_pool_kind(const struct pk_lint_object *o)
{
	size_t n;
	const struct pk_pool_kind *k = pk_pool_kinds(&n);
	for (size_t i = 0; i < n; i++)
		if (lint_is_kind(o, k[i].group, k[i].kind))
			return &k[i];
	return NULL;
}

/* Whether object i is a pool of `kind` in namespace ns (NULL: any) named `name` (NULL: any). */
static bool pool_matches(const struct pk_lint *l, size_t i, const char *kind, const char *ns,
                         const char *name)
{
	const struct pk_lint_object *o = &l->objects[i];
	const char *ons = lint_effective_namespace(o);
	return lint_is_kind(o, PK_POOL_GROUP, kind) && o->name != NULL &&
	       (name == NULL || !strcmp(o->name, name)) &&
	       (ns == NULL || (ons != NULL && !strcmp(ons, ns)));
}

/* Appends the kept object i to items; NULL in *added when it has none. */
static int append(const struct pk_lint *l, size_t i, json_t *items, const json_t **added,
                  struct pk_err *err)
{
	json_t *v = lint_kept(l, i);
	*added = v;
	if (v == NULL && l->internal[i].kept == NULL)
		return PK_OK;
	if (v == NULL || json_array_append_new(items, v) != 0)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	return PK_OK;
}

/*
 * The pools that passed their own rules: while a pool is checked for
 * overlaps, the candidates the sweep found, but that pool's duplicates;
 * otherwise every one.
 */
static int lookup_list_pools(void *ctx, const char *kind, const char *ns, json_t **items,
                             struct pk_err *err)
{
	struct pk_lint *l = ctx;
	const struct pk_lint_object *cur = l->candidates ? &l->objects[l->current] : NULL;
	size_t n = l->candidates ? l->n_candidates : l->n_objects;
	*items = json_array();
	if (*items == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	for (size_t k = 0; k < n; k++) {
		size_t i = l->candidates ? l->candidates[k] : k;
		const json_t *added = NULL;
		if (l->internal[i].pool != NULL && pool_matches(l, i, kind, ns, NULL) &&
		    (cur == NULL || !lint_same_identity(cur, &l->objects[i])) &&
		    append(l, i, *items, &added, err) != PK_OK) {
			json_decref(*items);
			return PK_ERR_NOMEM;
		}
		if (l->candidates)
			l->listed[k] = added;
	}
	return PK_OK;
}

/* ---- sorted references, so that a lookup is a binary search ---- */

static int cmp_ref_key(const struct lint_ref *x, const struct lint_ref *y)
{
	int c = lint_str_cmp(x->kind, y->kind);
	return c != 0 ? c : lint_str_cmp(x->name, y->name);
}

static int cmp_ref(const void *pa, const void *pb)
{
	const struct lint_ref *x = pa, *y = pb;
	int c = cmp_ref_key(x, y);
	if (c == 0)
		c = lint_str_cmp(x->ns, y->ns);
	return c != 0 ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* The first of refs[0..n) with kind and name, and how many there are. */
static const struct lint_ref *range(const struct lint_ref *refs, size_t n, const char *kind,
                                    const char *name, size_t *count)
{
	struct lint_ref key = {kind, NULL, name, 0};
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cmp_ref_key(&refs[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	while (end < n && cmp_ref_key(&refs[end], &key) == 0)
		end++;
	*count = end - lo;
	return *count > 0 ? refs + lo : NULL; /* refs is NULL when nothing was ever added */
}

static int push_ref(struct lint_ref **refs, size_t *n, size_t *cap, struct lint_ref r)
{
	if (pk_array_reserve(refs, cap, *n + 1, sizeof(**refs)) != PK_OK)
		return PK_ERR_NOMEM;
	(*refs)[(*n)++] = r;
	return PK_OK;
}

int lint_build_lookup(struct pk_lint *l)
{
	size_t pcap = 0, acap = 0;
	for (size_t i = 0; i < l->n_objects; i++) {
		const struct pk_lint_object *o = &l->objects[i];
		const char *ns = lint_effective_namespace(o);
		if (o->name != NULL && lint_pool_kind(o) != NULL) {
			if (push_ref(&l->pool_refs, &l->n_pool_refs, &pcap,
			             (struct lint_ref){o->kind, ns, o->name, i}) != PK_OK)
				return PK_ERR_NOMEM;
			continue;
		}
		const struct lint_internal *in = &l->internal[i];
		if (!lint_is_kind(o, PK_CAPI_IPAM_GROUP, PK_ADDRESS_KIND) || in->ref_kind == NULL ||
		    in->ref_name == NULL || !in->pk_ref)
			continue;
		if (push_ref(&l->addr_refs, &l->n_addr_refs, &acap,
		             (struct lint_ref){in->ref_kind, ns, in->ref_name, i}) != PK_OK)
			return PK_ERR_NOMEM;
	}
	if (l->n_pool_refs > 1)
		qsort(l->pool_refs, l->n_pool_refs, sizeof(*l->pool_refs), cmp_ref);
	if (l->n_addr_refs > 1)
		qsort(l->addr_refs, l->n_addr_refs, sizeof(*l->addr_refs), cmp_ref);
	return PK_OK;
}

const char *lint_pool_namespace(const struct pk_lint *l, const char *kind, const char *name)
{
	size_t n;
	const struct lint_ref *r = range(l->pool_refs, l->n_pool_refs, kind, name, &n);
	return n > 0 ? r[0].ns : NULL;
}

/* The IPAddresses naming the pool: in namespace ns, or in any when ns is NULL. */
static int lookup_list_pool_addresses(void *ctx, const char *kind, const char *ns, const char *name,
                                      json_t **items, struct pk_err *err)
{
	struct pk_lint *l = ctx;
	size_t n = 0;
	*items = json_array();
	if (*items == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	const struct lint_ref *r =
	    name != NULL ? range(l->addr_refs, l->n_addr_refs, kind, name, &n) : NULL;
	for (size_t k = 0; k < n; k++) {
		const json_t *added;
		if (ns != NULL && lint_str_cmp(r[k].ns, ns) != 0)
			continue;
		if (append(l, r[k].idx, *items, &added, err) != PK_OK) {
			json_decref(*items);
			return PK_ERR_NOMEM;
		}
	}
	return PK_OK;
}

/* The last definition of the pool (applying the files keeps the last). */
static int lookup_get_pool(void *ctx, const char *kind, const char *ns, const char *name,
                           json_t **obj, struct pk_err *err)
{
	struct pk_lint *l = ctx;
	size_t n = 0, best = SIZE_MAX;
	*obj = NULL;
	const struct lint_ref *r =
	    name != NULL ? range(l->pool_refs, l->n_pool_refs, kind, name, &n) : NULL;
	bool namespaced = pk_pool_kind_namespaced(PK_POOL_GROUP, kind);
	for (size_t k = 0; k < n; k++)
		if ((!namespaced || ns == NULL || !lint_str_cmp(r[k].ns, ns)) &&
		    (best == SIZE_MAX || r[k].idx > best))
			best = r[k].idx;
	if (best == SIZE_MAX || l->internal[best].kept == NULL)
		return PK_OK;
	if (l->cached_pool == NULL || l->cached != best) {
		lint_uncache_pool(l);
		if ((l->cached_pool = lint_kept(l, best)) == NULL)
			return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		l->cached = best;
	}
	*obj = json_incref(l->cached_pool);
	return PK_OK;
}

/* "IPPool default/a at file.yaml:3 (document 1)": which object, and where it was loaded. */
static void lookup_name_pool(void *ctx, const json_t *other, char *buf, size_t len)
{
	const struct pk_lint *l = ctx;
	char what[256];
	snprintf(buf, len, "another pool");
	for (size_t k = 0; l->candidates != NULL && k < l->n_candidates; k++) {
		size_t i = l->candidates[k];
		if (l->listed[k] == other) {
			snprintf(buf, len, "%s at %s",
			         pk_lint_describe_object(&l->objects[i], what, sizeof(what)),
			         l->objects[i].origin);
			return;
		}
	}
}

void lint_uncache_pool(struct pk_lint *l)
{
	json_decref(l->cached_pool);
	l->cached_pool = NULL;
}

/* The pool get_pool gave last, as it was decoded when it loaded. */
static const struct pk_pool *lookup_decoded_pool(void *ctx, const json_t *pool)
{
	const struct pk_lint *l = ctx;
	return pool != NULL && pool == l->cached_pool ? l->internal[l->cached].pool : NULL;
}

void lint_init_lookup(struct pk_lint *l)
{
	l->lookup.ctx = l;
	l->lookup.list_pools = lookup_list_pools;
	l->lookup.list_pool_addresses = lookup_list_pool_addresses;
	l->lookup.get_pool = lookup_get_pool;
	l->lookup.name_pool = lookup_name_pool;
	l->lookup.decoded_pool = lookup_decoded_pool;
	l->lookup.partial = true;
}

const struct pk_pool_lookup *pk_lint_lookup(const struct pk_lint *l)
{
	return &l->lookup;
}
