/*
 * rules.h - the CAPI IPAM contract and poolkeeper's pool rules as pure
 * functions over decoded Kubernetes objects (jansson values of whole
 * objects: apiVersion, kind, metadata, spec). They check JSON types
 * themselves and never assume a CRD schema ran. Each appends what it finds
 * to `out`; none allocates anything the caller must free.
 *
 * `old` is NULL on CREATE and the stored object on UPDATE.
 *
 * By subject: pool_rules.c (pools), claim_rules.c (claims, their modes and
 * repair), address_rules.c (IPAddresses), rules_util.c (what they share).
 * The rules that read other objects (overlap, shrink and delete
 * protection, an IPAddress in its pool) are in pool_lookup.h.
 */
#ifndef PK_RULES_H
#define PK_RULES_H

#include <jansson.h>

#include "api.h"
#include "json.h"
#include "pool.h"
#include "violation.h"

/*
 * What the webhook and `poolkeeper lint` do with a claim's contract
 * violations (--claim-enforcement for claims on poolkeeper pools,
 * --foreign-claims for the others).
 */
enum pk_enforcement {
	PK_ENFORCE_IGNORE = 0, /* no checks, no warnings */
	PK_ENFORCE_WARN,       /* violations become warnings; admitted */
	PK_ENFORCE_DENY,       /* violations deny */
	PK_ENFORCE_REPAIR, /* complete what is unambiguous (pk_rules_plan_claim_repair), deny the
	                      rest */
};

/* Parses "repair|deny|warn|ignore"; PK_ERR_INVALID (and *out untouched) otherwise. */
PK_MUST_CHECK int pk_rules_parse_enforcement(const char *s, enum pk_enforcement *out);

/*
 * Pool, CREATE and UPDATE, on what the object alone shows: a kind of
 * poolkeeper's (pool_ref.h's table) at that kind's apiVersion, addresses
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
 * compare (pk_pool_lookup_check_overlaps: a pool of a namespaced kind
 * against its namespace's pools of namespaced kinds and every pool of a
 * cluster-scoped kind; a pool of a cluster-scoped kind against every pool).
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
 * the deprecation); well-formed owner references (apiVersion, kind, name
 * and uid non-empty strings, boolean flags), one with controller: true and
 * blockOwnerDeletion: true; spec.poolRef with apiGroup, kind and name
 * (v1beta2 requires apiGroup; v1beta1 made it optional, so its absence
 * there is a WARN: such a claim names no poolkeeper pool and is left to
 * whichever provider owns the core group). With apiGroup
 * ipam.poolkeeper.io, a kind that is none of poolkeeper's pool kinds
 * (pool_ref.h's table), or none, is a DENY naming the kind it most likely
 * meant ("did you mean IPPool?"). On UPDATE only spec
 * immutability: metadata (finalizers, owner references, annotations) may
 * always change, so deletion and clusterctl move are never blocked.
 */
void pk_rules_check_claim(const json_t *claim, const json_t *old, struct pk_violations *out);

/*
 * pk_rules_check_claim as the webhook's validating endpoint and lint apply
 * it under `mode` (the mode for this claim: --claim-enforcement when its
 * poolRef is ours by group, --foreign-claims otherwise):
 *   ignore  nothing is added;
 *   warn    every DENY is added as a WARN starting "would be denied: ";
 *   deny    as pk_rules_check_claim;
 *   repair  as deny, except that a controller reference without
 *           blockOwnerDeletion: true is a WARN (the mutating webhook sets it
 *           whenever the requester may; when it was not set, it could not be).
 * In deny and repair mode the last DENY ends with the mode and how to change
 * it (the flag and the chart value), so a denial always says both.
 */
void pk_rules_check_claim_mode(const json_t *claim, const json_t *old, enum pk_enforcement mode,
                               struct pk_violations *out);

/*
 * The mode `claim` is checked and repaired under: `claims` (the webhook's
 * --claim-enforcement) when its spec.poolRef.apiGroup is ipam.poolkeeper.io
 * (pk_pool_ref_is_poolkeeper_group: "ours", whatever the kind),
 * `foreign_claims` (--foreign-claims) otherwise. *ours (may be NULL) says which.
 */
enum pk_enforcement pk_rules_claim_enforcement(const json_t *claim, enum pk_enforcement claims,
                                               enum pk_enforcement foreign_claims, bool *ours);

/*
 * The Cluster a claim belongs to: spec.clusterName when it is a non-empty
 * string, else the deprecated cluster.x-k8s.io/cluster-name label when it
 * is (*from_label is then true), else NULL. Strings holding a NUL count as
 * absent (pk_json_cstr). Borrowed from the claim.
 */
const char *pk_rules_claim_cluster_name(const json_t *claim, bool *from_label);

/*
 * How a claim on a poolkeeper pool is completed on CREATE.
 *
 * The candidate ("exactly one candidate", docs/webhook.md): when every owner
 * reference is well formed (an object with non-empty string apiVersion,
 * kind, name and uid; controller and blockOwnerDeletion booleans when
 * present), the reference with controller: true, else the only reference
 * when there is exactly one. No reference, two or more without a
 * controller, or any malformed one: no candidate, nothing is repaired.
 */
struct pk_claim_repair {
	long candidate;                /* index in metadata.ownerReferences; -1: none */
	bool set_controller;           /* add controller: true to the candidate */
	bool set_block_owner_deletion; /* add blockOwnerDeletion: true to the candidate */
	const char *cluster_name;      /* copy into spec.clusterName; borrowed from the label */
	bool cluster_name_replace;     /* spec.clusterName is present (empty): replace, not add */
};

/*
 * Plans the repair of `claim` under `mode`. Only claims whose poolRef names
 * an IPPool or GlobalIPPool of ipam.poolkeeper.io get a plan. spec.clusterName
 * is copied from the cluster.x-k8s.io/cluster-name label in every mode but
 * ignore, when it is empty and the label is not; the owner reference is
 * repaired in repair mode only. The candidate is set whenever there is one,
 * repaired or not.
 */
void pk_rules_plan_claim_repair(const json_t *claim, enum pk_enforcement mode,
                                struct pk_claim_repair *plan);

/* True when the plan changes anything. */
bool pk_rules_claim_repair_any(const struct pk_claim_repair *plan);

/*
 * Applies a plan made from `claim` (or from an equal object, e.g. lint's
 * original before json_deep_copy) to `claim`. PK_ERR_NOMEM, or
 * PK_ERR_INVALID when the claim does not have the shape the plan expects.
 */
PK_MUST_CHECK int pk_rules_apply_claim_repair(json_t *claim, const struct pk_claim_repair *plan);

/*
 * One WARN per repair the plan makes, in the words a user sees as an
 * admission warning: the owner reference repaired, naming the owner's kind
 * and what its provider should set itself; and, outside repair mode, the
 * deprecated label copied into spec.clusterName (in repair mode that copy is
 * silent: every provider relies on the label, and a warning on every claim
 * is noise nobody can act on).
 */
void pk_rules_note_claim_repair(const json_t *claim, const struct pk_claim_repair *plan,
                                enum pk_enforcement mode, struct pk_violations *out);

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

/* True for the versions of ipam.cluster.x-k8s.io the rules know: v1beta1 and v1beta2. */
bool pk_rules_is_capi_ipam_version(const char *version);

/*
 * True for the versions Cluster API serves its IPAM kinds in: those and
 * v1alpha1, whose objects reach the webhook converted to one of those
 * (the same fields; a v1alpha1 claim has no spec.clusterName).
 */
bool pk_rules_is_capi_served_version(const char *version);

#endif
