/*
 * pool_lookup.h - the contract rules that need other objects than the one
 * checked: which pools a pool may not overlap, shrink and delete
 * protection, an IPAddress inside its pool and held once. They read those
 * objects through a small lookup the caller implements: the webhook from
 * its informer caches, `poolkeeper lint` from the files it read, tests from
 * fixtures.
 *
 * Each check returns PK_OK after appending what it finds to `out`, or the
 * lookup's error with err->msg saying which check could not run (a check
 * that could not run must not pass silently).
 */
#ifndef PK_POOL_LOOKUP_H
#define PK_POOL_LOOKUP_H

#include <jansson.h>

#include "violation.h"

struct pk_pool;

/*
 * The reads the checks make. Each returns PK_OK and a new reference the
 * caller releases, or an error with err set. `kind` is one of poolkeeper's
 * pool kinds (pk_pool_kinds, group ipam.poolkeeper.io).
 */
/* Pools of `kind`; ns NULL means every namespace (a cluster-scoped kind's are in none). */
typedef int pk_list_pools_fn(void *ctx, const char *kind, const char *ns, json_t **items,
                             struct pk_err *err);
/* IPAddress objects whose spec.poolRef names this pool (ns NULL for a cluster-scoped kind's:
 * all). */
typedef int pk_list_pool_addresses_fn(void *ctx, const char *kind, const char *ns, const char *name,
                                      json_t **items, struct pk_err *err);
/* One pool, or *obj = NULL when it does not exist. */
typedef int pk_get_pool_fn(void *ctx, const char *kind, const char *ns, const char *name,
                           json_t **obj, struct pk_err *err);

struct pk_pool_lookup {
	void *ctx;
	pk_list_pools_fn *list_pools;
	pk_list_pool_addresses_fn *list_pool_addresses;
	pk_get_pool_fn *get_pool;
	/*
	 * How a message names `other`, a pool list_pools returned. NULL: by
	 * name only when it is a pool of a namespaced kind in the checked
	 * object's own namespace, since the requester may not be allowed to
	 * read anything else; otherwise by its kind ("a GlobalIPPool", "an
	 * IPPool of another namespace").
	 */
	void (*name_pool)(void *ctx, const json_t *other, char *buf, size_t len);
	/*
	 * Optional: `pool`, a value get_pool gave, already decoded (pool.h),
	 * or NULL to have the check decode it. Lint, which keeps its pools
	 * decoded, saves a decode per IPAddress.
	 */
	const struct pk_pool *(*decoded_pool)(void *ctx, const json_t *pool);
	/* The lookup sees only some objects (lint's files): a pool it does not find may exist. */
	bool partial;
};

/* A pool as a request names it: ns NULL for a cluster-scoped kind's, name NULL when
 * unknown. */
struct pk_pool_id {
	const char *kind;
	const char *ns;
	const char *name;
};

#define PK_OBJECT_NAME_MAX 640

/* "IPPool ns/name" or "GlobalIPPool name", each part quoted; "(generated name)" for no name. */
char *pk_pool_lookup_object_name(char *buf, size_t len, const char *kind, const char *ns,
                                 const char *name);

/*
 * pk_rules_check_pool_overlap of `pool` (the whole object) against every
 * pool of poolkeeper's it may not overlap, whatever their kinds: a pool of
 * a namespaced kind against the pools of every namespaced kind in its
 * namespace and those of every cluster-scoped kind; a pool of a
 * cluster-scoped kind against every pool. The pool itself (same kind,
 * namespace and name) and pools whose spec does not decode are skipped; so
 * is a `pool` whose own spec does not. A kind the table does not have is
 * PK_ERR_INVALID, before any lookup.
 */
PK_MUST_CHECK int pk_pool_lookup_check_overlaps(const struct pk_pool_lookup *lk,
                                                const struct pk_pool_id *id, const json_t *pool,
                                                struct pk_violations *out, struct pk_err *err);

/* pk_rules_check_pool_shrink of `pool` against the addresses its IPAddresses hold. */
PK_MUST_CHECK int pk_pool_lookup_check_shrink(const struct pk_pool_lookup *lk,
                                              const struct pk_pool_id *id, const json_t *pool,
                                              struct pk_violations *out, struct pk_err *err);

/*
 * Whether deleting the pool `old` (the stored object) is protected: true
 * unless it carries PK_DELETE_FOR_MOVE_ANNOTATION (clusterctl move) or
 * PK_SKIP_DELETE_PROTECTION_ANNOTATION.
 */
bool pk_pool_lookup_protects_delete(const json_t *old);

/*
 * Delete protection: a pool (`old`, the stored object) is not deleted while
 * IPAddresses allocated from it exist, unless it carries
 * PK_DELETE_FOR_MOVE_ANNOTATION or PK_SKIP_DELETE_PROTECTION_ANNOTATION.
 * One DENY (no field) counting them, naming the first when it is in the
 * pool's own namespace, and saying how to delete anyway.
 */
PK_MUST_CHECK int pk_pool_lookup_check_delete(const struct pk_pool_lookup *lk,
                                              const struct pk_pool_id *id, const json_t *old,
                                              struct pk_violations *out, struct pk_err *err);

/*
 * An IPAddress of namespace ns against its pool (spec.poolRef, which must
 * name a poolkeeper pool): pk_rules_check_ipaddress_in_pool as a CREATE.
 * A pool that does not exist is a WARN (no field; clusterctl move may
 * recreate objects in any order), and nothing when the lookup is partial.
 */
PK_MUST_CHECK int pk_pool_lookup_check_ipaddress_pool(const struct pk_pool_lookup *lk,
                                                      const char *ns, const json_t *addr,
                                                      struct pk_violations *out,
                                                      struct pk_err *err);

/*
 * pk_rules_check_ipaddress_unique of IPAddress ns/name against the other
 * IPAddresses of its pool (itself, by namespace and name, is not another).
 */
PK_MUST_CHECK int pk_pool_lookup_check_ipaddress_unique(const struct pk_pool_lookup *lk,
                                                        const char *ns, const char *name,
                                                        const json_t *addr,
                                                        struct pk_violations *out,
                                                        struct pk_err *err);

#endif
