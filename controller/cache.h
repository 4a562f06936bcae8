/*
 * cache.h - what the informers keep of each object, and the typed view a
 * pass reads from them.
 *
 * An informer stores the trimmed object (trim.h), packed (jpack.h: a
 * trimmed claim is about 700 bytes as JSON text, 5 KB as a jansson tree),
 * its resourceVersion's hash, and for claims what the scans over every
 * claim filter on (the pool's and the Cluster's key hashes, Ready and
 * deleting flags), so that a scan unpacks only the claims it selects.
 *
 * A claim pass unpacks its claim, the IPAddress named like it, its
 * Cluster and its pool (of a kind the backend serves) once
 * (pk_cache_claim_view).
 *
 * Threading: the informers' stores are theirs to guard; every function may
 * be called from any thread.
 */
#ifndef PK_CACHE_H
#define PK_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "backend.h"
#include "metrics.h"
#include "kube_informer.h"

/* As many pool kinds as poolkeeper has (pool_ref.h). */
#define PK_CACHE_MAX_POOL_KINDS PK_POOL_KINDS_MAX

struct pk_cache {
	const struct pk_backend *backend; /* its pool keys for the claims' pool hash */
	struct pk_metrics *metrics;       /* counts objects over the cap; may be NULL */
	struct pk_kube_informer *claims, *addresses, *clusters; /* clusters may be NULL */
	size_t npools;
	struct {
		const struct pk_pool_kind *kind;
		struct pk_kube_informer *inf; /* NULL: not watched (a kind not namespaced, when
		                                 one namespace is watched) */
	} pools[PK_CACHE_MAX_POOL_KINDS];
};

/* Transforms (kube_informer.h) for each resource: ud is the struct pk_cache. An object over
 * PK_TRIM_MAX_BYTES (trim.h) is logged (kind, namespace, name, size), counted in
 * metrics->cache_oversized and kept as its identity only. */
void *pk_cache_keep_claim(void *ud, const json_t *o);
void *pk_cache_keep_address(void *ud, const json_t *o);
void *pk_cache_keep_pool(void *ud, const json_t *o);
void *pk_cache_keep_cluster(void *ud, const json_t *o);
void *pk_cache_keep_connection(void *ud, const json_t *o); /* a backend's watches */

/* A new reference to the object an informer item holds, or NULL. */
json_t *pk_cache_item_json(const void *item);
/* The item's resourceVersion hash (pk_expect_rv_hash of the object). */
uint64_t pk_cache_item_rv_hash(const void *item);
/* Whether the item is Ready (claims only), and being deleted (claims and IPAddresses). */
bool pk_cache_item_ready(const void *item);
bool pk_cache_item_deleting(const void *item);
/* Whether the item is a claim of a poolkeeper pool kept whole (not another provider's, not
 * over the cap). */
bool pk_cache_item_ours(const void *item);

/* New reference to the stored object (ns NULL or "" for cluster-scoped), or NULL. */
json_t *pk_cache_get(struct pk_kube_informer *inf, const char *ns, const char *name);

/* New reference to a cached pool of a kind the backend serves, or NULL. */
json_t *pk_cache_pool(struct pk_cache *c, const char *kind, const char *ns, const char *name);

/* The informer of a pool kind, or NULL. */
struct pk_kube_informer *pk_cache_pool_informer(struct pk_cache *c, const char *kind);

/* One claim as a pass reads it: new references (NULL when not there). */
struct pk_claim_view {
	json_t *claim, *address, *cluster, *pool;
	bool cluster_named; /* the claim names a Cluster and Clusters are watched */
};
void pk_cache_claim_view(struct pk_cache *c, const char *ns, const char *name,
                         struct pk_claim_view *v);
void pk_claim_view_clear(struct pk_claim_view *v);

/* Calls fn for each claim of the pool (pool key, backend.h): all, or only those not Ready or
 * being deleted. */
void pk_cache_claims_of_pool(struct pk_cache *c, const char *pool_key, bool unbound_only,
                             void (*fn)(void *ud, const char *ns, const char *name), void *ud);

/* Calls fn for each claim that names the Cluster ns/name. */
void pk_cache_claims_of_cluster(struct pk_cache *c, const char *ns, const char *name,
                                void (*fn)(void *ud, const char *ns, const char *name), void *ud);

/* Whether the informer is still in its first list. */
bool pk_cache_first_list(struct pk_kube_informer *inf);

#endif
