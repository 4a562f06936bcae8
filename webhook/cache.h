/*
 * cache.h - the webhook's copy of what its admission checks read from the
 * cluster: the pools of each of poolkeeper's pool kinds (pool_ref.h's
 * table), IPAddresses and IPAddressClaims, kept current by informers
 * (kube_informer.h) and read by the admission lookups (lookup.h) without a
 * request to the API server.
 *
 * What is kept of each object is the controller's trimmed copy (trim.h),
 * packed (jpack.h), as the controller's own informers keep it: about 150
 * bytes for an IPAddress. A claim also loses status.conditions, which no
 * admission check reads; a claim on another provider's pool keeps only its
 * name, namespace, uid and resourceVersion. An object whose packed copy is
 * over PK_TRIM_MAX_BYTES is logged (kind, namespace, name, size), counted
 * (pk_cache_oversized) and kept as its name alone. Reads unpack into new jansson values the caller
 * owns, so nothing the cache holds is shared with a request.
 *
 * IPAddresses are indexed by the pool their spec.poolRef names (apiGroup
 * ipam.poolkeeper.io and a kind of the table; a reference to a namespaced
 * kind is to the pool of the address's own namespace):
 * pk_cache_list_pool_addresses visits only that pool's addresses, never
 * every IPAddress. An IPAddress of another provider or of a kind the table
 * does not have, or whose poolRef holds a string with a NUL, names no pool
 * of poolkeeper and is not kept at all.
 *
 * The pool reads take poolkeeper's kind by name. A kind the table does not
 * have is an error (PK_ERR_INVALID) that names it: never another kind's
 * pools, nor an empty answer.
 *
 * Feeding: pk_cache_feed fills an informer's transform, release and
 * handlers for one kind; the informer then calls them on its thread as
 * kube_informer.h describes (the item a handler is given stays valid until
 * it returns; the informer releases replaced and deleted items after the
 * handler). The informer owns the items; the cache only indexes them, so
 * it must be freed after its informers are stopped, and no read may run
 * once they are freed. Anyone calling the feed's functions directly (unit
 * tests) takes on the informer's part: release an item only after the
 * handler that drops it has returned.
 *
 * Freshness: a kind is synced once its informer completed its first list
 * (the on_synced handler); until then its reads must not be trusted, and
 * pk_cache_synced says so. Afterwards the cache answers from what the
 * informer last saw, which may lag the API server by the time a watch
 * event takes to arrive (docs/webhook.md, "Lookups").
 *
 * Threading: one read-write lock, preferring writers, guards the indexes.
 * Reads take it shared and unpack under it, so every admission thread reads
 * at once; the informer threads take it exclusively for the few pointer
 * changes an event makes.
 */
#ifndef PK_WEBHOOK_CACHE_H
#define PK_WEBHOOK_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "kube_informer.h"
#include "pk.h"
#include "pool_ref.h"

/*
 * What the cache holds, one slot (and one informer) each: IPAddresses,
 * claims, and each of poolkeeper's pool kinds, the kind at index i of
 * pk_pool_kinds() in slot PK_CACHE_POOLS + i. pk_cache_kinds() slots are
 * in use; arrays with an entry per slot take PK_CACHE_KINDS_MAX.
 */
enum pk_cache_kind {
	PK_CACHE_ADDRESSES,
	PK_CACHE_CLAIMS,
	PK_CACHE_POOLS, /* the first pool kind's */
	PK_CACHE_KINDS_MAX = PK_CACHE_POOLS + PK_POOL_KINDS_MAX,
};

/* The slots in use: addresses, claims and one per pool kind. */
size_t pk_cache_kinds(void);

/* poolkeeper's pool kind that slot k holds, or NULL when k holds no pools. */
const struct pk_pool_kind *pk_cache_slot_pool_kind(enum pk_cache_kind k);

/* The slot of poolkeeper's pool kind `kind` (of group ipam.poolkeeper.io); PK_ERR_INVALID
 * with err naming it, and *slot PK_CACHE_KINDS_MAX (none), when the table has no such kind. */
PK_MUST_CHECK int pk_cache_pool_slot(const char *kind, enum pk_cache_kind *slot,
                                     struct pk_err *err);

struct pk_cache;

/* NULL when memory runs out. Free with pk_cache_free (after the informers stop). */
struct pk_cache *pk_cache_new(void);
void pk_cache_free(struct pk_cache *c);

/* Sets io's transform, release, transform_ud and handlers so that the informer feeds kind k
 * of c; the collection (io->ref) and the rest stay the caller's. */
void pk_cache_feed(struct pk_cache *c, enum pk_cache_kind k, struct pk_kube_informer_opts *io);

/* Whether kind k's informer has completed its first list. */
bool pk_cache_synced(struct pk_cache *c, enum pk_cache_kind k);

/* Whether every kind is synced. */
bool pk_cache_ready(struct pk_cache *c);

/* Object versions over PK_TRIM_MAX_BYTES since the cache was made (kept as their name). */
unsigned long long pk_cache_oversized(struct pk_cache *c);

/* Objects of kind k held (IPAddresses: those of poolkeeper pools). */
size_t pk_cache_count(struct pk_cache *c, enum pk_cache_kind k);

/*
 * The reads, with the meaning of struct pk_admission_lookup's callbacks
 * (admission.h): new references the caller releases, and PK_ERR_NOMEM with
 * err set when memory runs out while unpacking. They answer from what is
 * held, synced or not.
 */
PK_MUST_CHECK int pk_cache_list_pools(struct pk_cache *c, const char *kind, const char *ns,
                                      json_t **items, struct pk_err *err);
PK_MUST_CHECK int pk_cache_list_pool_addresses(struct pk_cache *c, const char *kind, const char *ns,
                                               const char *name, json_t **items,
                                               struct pk_err *err);
PK_MUST_CHECK int pk_cache_get_pool(struct pk_cache *c, const char *kind, const char *ns,
                                    const char *name, json_t **obj, struct pk_err *err);
PK_MUST_CHECK int pk_cache_get_claim(struct pk_cache *c, const char *ns, const char *name,
                                     json_t **obj, struct pk_err *err);

#endif
