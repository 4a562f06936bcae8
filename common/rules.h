/*
 * rules.h - the CAPI IPAM contract and poolkeeper's pool rules as pure
 * functions over decoded Kubernetes objects (jansson values of whole
 * objects: apiVersion, kind, metadata, spec). They check JSON types
 * themselves and never assume a CRD schema ran. Each appends what it finds
 * to `out`; none allocates anything the caller must free.
 *
 * `old` is NULL on CREATE and the stored object on UPDATE.
 */
#ifndef PK_RULES_H
#define PK_RULES_H

#include <jansson.h>

#include "pool.h"
#include "violation.h"

#define PK_POOL_GROUP                        "ipam.poolkeeper.io"
#define PK_POOL_KIND                         "IPPool"
#define PK_GLOBAL_POOL_KIND                  "GlobalIPPool"
#define PK_CAPI_IPAM_GROUP                   "ipam.cluster.x-k8s.io"
#define PK_CLUSTER_NAME_LABEL                "cluster.x-k8s.io/cluster-name"
#define PK_DELETE_FOR_MOVE_ANNOTATION        "clusterctl.cluster.x-k8s.io/delete-for-move"
#define PK_SKIP_DELETE_PROTECTION_ANNOTATION "ipam.poolkeeper.io/skip-delete-protection"

/*
 * Pool, CREATE and UPDATE, on what the object alone shows: addresses
 * present, every entry parses, one family across addresses, excluded
 * addresses and gateway, prefix within the family, every address inside
 * <first address>/<prefix>, the gateway inside it, at least one usable
 * address, grace period not negative, bounded sizes.
 */
void pk_rules_check_pool(const json_t *pool, const json_t *old, struct pk_violations *out);

/*
 * Overlap of `pool` (named `name` in messages, e.g. "IPPool ns/a") with
 * another decoded pool `other` named `other_name`; one DENY naming the
 * first shared address when they overlap. The caller picks which pools to
 * compare (an IPPool against its namespace's IPPools and every
 * GlobalIPPool; a GlobalIPPool against every pool).
 */
void pk_rules_check_pool_overlap(const struct pk_pool *pool, const struct pk_pool *other,
                                 const char *other_name, struct pk_violations *out);

/*
 * Shrink protection on UPDATE: `in_use` holds the addresses currently
 * allocated from the pool (as text, from their IPAddress objects). One DENY
 * listing (bounded) the addresses that the new spec no longer contains.
 */
void pk_rules_check_pool_shrink(const struct pk_pool *pool, const char *const *in_use,
                                size_t n_in_use, struct pk_violations *out);

/*
 * IPAddressClaim. On CREATE (old == NULL): spec.clusterName set, or empty
 * with the deprecated cluster.x-k8s.io/cluster-name label (a WARN about
 * the deprecation); an owner reference with controller: true and
 * blockOwnerDeletion: true; spec.poolRef with apiGroup, kind and name
 * (v1beta2 requires apiGroup; v1beta1 made it optional, so its absence
 * there is a WARN: such a claim names no poolkeeper pool and is left to
 * whichever provider owns the core group). On UPDATE only spec
 * immutability: metadata (finalizers, owner references, annotations) may
 * always change, so deletion and clusterctl move are never blocked.
 */
void pk_rules_check_claim(const json_t *claim, const json_t *old, struct pk_violations *out);

/*
 * IPAddress. On CREATE: spec.address parses, spec.prefix within the
 * family, spec.gateway (optional) parses and is of the same family,
 * claimRef.name and poolRef present, owner references to the claim
 * (controller: true, blockOwnerDeletion: true) and to the pool
 * (blockOwnerDeletion: true). On UPDATE: spec immutable.
 */
void pk_rules_check_ipaddress(const json_t *addr, const json_t *old, struct pk_violations *out);

/*
 * An IPAddress against the claim its spec.claimRef.name names (claim NULL
 * when no IPAddressClaim of that name exists in the IPAddress's
 * namespace). One DENY on spec.claimRef.name unless the claim is that
 * one and its spec.poolRef names the IPAddress's pool (apiGroup, kind and
 * name). A missing claim and a claim on another pool get the same words:
 * the message says nothing of the claim beyond what the IPAddress's own
 * spec says.
 */
void pk_rules_check_ipaddress_claim(const json_t *addr, const json_t *claim,
                                    struct pk_violations *out);

/*
 * An IPAddress against its decoded pool (named `pool_name` in messages):
 * one DENY on spec.address unless the address is of the pool's family and
 * one the pool hands out. With `allocated` (the address was handed out
 * before: the controller adopting an IPAddress), an address excluded
 * since is fine too, as pk_rules_check_pool_shrink lets it stay with its
 * IPAddress. A pool without a usable set, or an address that does not
 * parse, is reported elsewhere.
 */
void pk_rules_check_ipaddress_in_pool(const json_t *addr, const struct pk_pool *pool,
                                      const char *pool_name, bool allocated,
                                      struct pk_violations *out);

/*
 * "No address is held by two IPAddresses of the same pool": `others` are
 * the spec.address texts of the pool's other IPAddresses. One DENY on
 * spec.address when one of them is the same address, compared parsed
 * ("::1" is "0:0::1"). It says the address is taken, never where or by
 * whom.
 */
void pk_rules_check_ipaddress_unique(const json_t *addr, const char *const *others, size_t n,
                                     struct pk_violations *out);

/* True when the poolRef object names an IPPool or GlobalIPPool of ipam.poolkeeper.io. */
bool pk_rules_is_poolkeeper_pool_ref(const json_t *pool_ref);

#endif
