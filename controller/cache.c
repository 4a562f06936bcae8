/* cache.c - what the informers keep, and the view a pass reads; see cache.h. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cache.h"
#include "expect.h"
#include "jpack.h"
#include "json.h"
#include "kube.h"
#include "log.h"
#include "strmap.h"
#include "trim.h"

#define KEPT_READY    1u
#define KEPT_DELETING 2u
#define KEPT_OURS     4u /* a claim of a poolkeeper pool, kept as trim.h keeps one */

struct kept {
	uint64_t pool_hash;    /* claims: pk_strmap_hash of the pool key */
	uint64_t cluster_hash; /* claims: of "<ns>/<cluster name>", 0 when none */
	uint64_t rv_hash;      /* pk_expect_rv_hash of the object */
	unsigned flags;
	size_t len;
	unsigned char packed[]; /* the trimmed object (trim.h), packed (jpack.h) */
};

json_t *pk_cache_item_json(const void *item)
{
	const struct kept *k = item;
	return k != NULL ? pk_jpack_decode(k->packed, k->len) : NULL;
}

uint64_t pk_cache_item_rv_hash(const void *item)
{
	return ((const struct kept *)item)->rv_hash;
}

bool pk_cache_item_ready(const void *item)
{
	return (((const struct kept *)item)->flags & KEPT_READY) != 0;
}

bool pk_cache_item_ours(const void *item)
{
	return (((const struct kept *)item)->flags & KEPT_OURS) != 0;
}

bool pk_cache_item_deleting(const void *item)
{
	return (((const struct kept *)item)->flags & KEPT_DELETING) != 0;
}

/* An object over the cap is kept as its identity only (trim.h): said for each version of it
 * that arrives, and counted. */
static void report_oversized(struct pk_cache *c, const char *kind, const json_t *o, size_t bytes)
{
	if (c != NULL && c->metrics != NULL)
		atomic_fetch_add(&c->metrics->cache_oversized, 1);
	pk_log_warn("object over the cache's cap: only its name is kept", PK_LOG_STR("kind", kind),
	            PK_LOG_STR("namespace", pk_json_meta_cstr(o, "namespace")),
	            PK_LOG_STR("name", pk_json_meta_cstr(o, "name")), PK_LOG_UINT("bytes", bytes),
	            PK_LOG_UINT("cap", PK_TRIM_MAX_BYTES));
}

/* The informers keep only what the controller reads of each object (trim.h), packed
 * (jpack.h): a quarter of its JSON text. Takes trimmed. An object over the cap keeps no
 * hashes or flags either: a scan has nothing to find in it. */
static void *keep(struct pk_cache *c, const char *kind, const json_t *o, json_t *trimmed,
                  uint64_t pool_hash, uint64_t cluster_hash, unsigned flags)
{
	uint64_t rv_hash = pk_expect_rv_hash(trimmed);
	size_t n = 0, over = 0;
	struct kept *k = pk_trim_pack(trimmed, offsetof(struct kept, packed), 0, &n, &over);
	if (k == NULL)
		return NULL;
	if (over > 0) {
		report_oversized(c, kind, o, over);
		pool_hash = cluster_hash = 0;
		flags = 0;
	}
	k->pool_hash = pool_hash;
	k->cluster_hash = cluster_hash;
	k->rv_hash = rv_hash;
	k->flags = flags;
	k->len = n;
	return k;
}

/* A claim on a pool no backend of ours serves keeps its identity only (trim.h), no hashes or
 * flags: the scans never select it, and its pass decides "not ours". */
void *pk_cache_keep_claim(void *ud, const json_t *o)
{
	struct pk_cache *c = ud;
	const json_t *ref = json_object_get(json_object_get(o, "spec"), "poolRef");
	if (!c->backend->ops->serves(c->backend->self, ref))
		return keep(c, PK_CLAIM_KIND, o, pk_trim_foreign_claim(o), 0, 0, 0);
	const char *ns = pk_json_meta_cstr(o, "namespace");
	char pk[PK_OBJECT_KEY_MAX], ck[PK_OBJECT_KEY_MAX];
	uint64_t ph = 0, ch = 0;
	if (pk_backend_pool_key(c->backend, ref, ns, pk, sizeof(pk)))
		ph = pk_strmap_hash(pk);
	const char *cn = pk_claim_cluster_name(o);
	if (cn != NULL) {
		pk_object_key(ns, cn, ck, sizeof(ck));
		ch = pk_strmap_hash(ck);
	}
	unsigned flags = KEPT_OURS | (pk_claim_ready(o) ? KEPT_READY : 0) |
	                 (pk_json_meta_cstr(o, "deletionTimestamp") != NULL ? KEPT_DELETING : 0);
	return keep(c, PK_CLAIM_KIND, o, pk_trim_claim(o), ph, ch, flags);
}

void *pk_cache_keep_address(void *ud, const json_t *o)
{
	return keep(ud, PK_ADDRESS_KIND, o, pk_trim_address(o), 0, 0,
	            pk_json_meta_cstr(o, "deletionTimestamp") != NULL ? KEPT_DELETING : 0);
}

void *pk_cache_keep_pool(void *ud, const json_t *o)
{
	const char *kind = pk_json_cstr_at(o, "kind");
	return keep(ud, kind != NULL ? kind : PK_POOL_KIND, o, pk_trim_pool(o), 0, 0, 0);
}

void *pk_cache_keep_cluster(void *ud, const json_t *o)
{
	return keep(ud, PK_CLUSTER_KIND, o, pk_trim_cluster(o), 0, 0, 0);
}

void *pk_cache_keep_connection(void *ud, const json_t *o)
{
	const char *kind = pk_json_cstr_at(o, "kind");
	return keep(ud, kind != NULL ? kind : "connection", o, pk_trim_connection(o), 0, 0, 0);
}

static void visit_ref(void *ud, const char *key, const void *item)
{
	(void)key;
	*(json_t **)ud = pk_cache_item_json(item);
}

json_t *pk_cache_get(struct pk_kube_informer *inf, const char *ns, const char *name)
{
	json_t *o = NULL;
	if (inf != NULL && name != NULL)
		(void)pk_kube_informer_get(inf, ns != NULL && ns[0] != '\0' ? ns : NULL, name,
		                           visit_ref, &o);
	return o;
}

struct pk_kube_informer *pk_cache_pool_informer(struct pk_cache *c, const char *kind)
{
	for (size_t i = 0; kind != NULL && i < c->npools; i++)
		if (strcmp(c->pools[i].kind->kind, kind) == 0)
			return c->pools[i].inf;
	return NULL;
}

json_t *pk_cache_pool(struct pk_cache *c, const char *kind, const char *ns, const char *name)
{
	return pk_cache_get(pk_cache_pool_informer(c, kind), ns, name);
}

void pk_cache_claim_view(struct pk_cache *c, const char *ns, const char *name,
                         struct pk_claim_view *v)
{
	memset(v, 0, sizeof(*v));
	v->claim = pk_cache_get(c->claims, ns, name);
	v->address = pk_cache_get(c->addresses, ns, name);
	const char *cname = v->claim != NULL ? pk_claim_cluster_name(v->claim) : NULL;
	v->cluster_named = cname != NULL && c->clusters != NULL;
	if (v->cluster_named)
		v->cluster = pk_cache_get(c->clusters, ns, cname);
	char pk[PK_OBJECT_KEY_MAX];
	struct pk_work_key k;
	if (v->claim != NULL &&
	    pk_backend_pool_key(c->backend, pk_json_path(v->claim, "spec", "poolRef"), ns, pk,
	                        sizeof(pk)) &&
	    pk_pool_key_parse(pk, &k))
		v->pool = pk_cache_pool(c, k.pool_kind, k.namespace, k.name);
}

void pk_claim_view_clear(struct pk_claim_view *v)
{
	json_decref(v->claim);
	json_decref(v->address);
	json_decref(v->cluster);
	json_decref(v->pool);
	memset(v, 0, sizeof(*v));
}

struct claim_scan {
	struct pk_cache *c;
	const char *pool_key; /* claims of this pool, or NULL */
	uint64_t pool_hash;
	const char *cluster_ns, *cluster_name;
	uint64_t cluster_hash;
	bool unbound_only;
	void (*fn)(void *ud, const char *ns, const char *name);
	void *ud;
};

/* Whether the claim (unpacked) is one the scan selects: a hash says "maybe", the object
 * says for sure. */
static bool scan_match(const struct claim_scan *s, const json_t *claim, const char *ns)
{
	if (s->pool_key != NULL) {
		char pk[PK_OBJECT_KEY_MAX];
		if (!pk_backend_pool_key(s->c->backend,
		                         json_object_get(json_object_get(claim, "spec"), "poolRef"),
		                         ns, pk, sizeof(pk)) ||
		    strcmp(pk, s->pool_key) != 0)
			return false;
	}
	if (s->cluster_name != NULL) {
		const char *cn = pk_claim_cluster_name(claim);
		if (cn == NULL || strcmp(ns, s->cluster_ns) != 0 ||
		    strcmp(cn, s->cluster_name) != 0)
			return false;
	}
	return true;
}

static void scan_claim(void *ud, const char *key, const void *item)
{
	struct claim_scan *s = ud;
	const struct kept *k = item;
	if (s->pool_key != NULL && k->pool_hash != s->pool_hash)
		return;
	if (s->cluster_name != NULL && k->cluster_hash != s->cluster_hash)
		return;
	if (s->unbound_only && (k->flags & KEPT_READY) && !(k->flags & KEPT_DELETING))
		return;
	struct pk_work_key wk;
	pk_object_key_parse(key, &wk);
	json_t *claim = pk_cache_item_json(item);
	bool match = claim != NULL && scan_match(s, claim, wk.namespace);
	json_decref(claim);
	if (match)
		s->fn(s->ud, wk.namespace, wk.name);
}

void pk_cache_claims_of_pool(struct pk_cache *c, const char *pool_key, bool unbound_only,
                             void (*fn)(void *ud, const char *ns, const char *name), void *ud)
{
	struct claim_scan s = {.c = c,
	                       .pool_key = pool_key,
	                       .pool_hash = pk_strmap_hash(pool_key),
	                       .unbound_only = unbound_only,
	                       .fn = fn,
	                       .ud = ud};
	pk_kube_informer_foreach(c->claims, scan_claim, &s);
}

void pk_cache_claims_of_cluster(struct pk_cache *c, const char *ns, const char *name,
                                void (*fn)(void *ud, const char *ns, const char *name), void *ud)
{
	char hk[PK_OBJECT_KEY_MAX];
	pk_object_key(ns, name, hk, sizeof(hk));
	struct claim_scan s = {.c = c,
	                       .cluster_ns = ns,
	                       .cluster_name = name,
	                       .cluster_hash = pk_strmap_hash(hk),
	                       .fn = fn,
	                       .ud = ud};
	pk_kube_informer_foreach(c->claims, scan_claim, &s);
}

bool pk_cache_first_list(struct pk_kube_informer *inf)
{
	return pk_kube_informer_state(inf) == PK_KUBE_INFORMER_STARTING;
}
