/*
 * decide.h - the claim reconciler's decisions, as a pure function of what
 * the controller sees: the claim, its pool, its Cluster and the IPAddress
 * named like the claim. One call answers "what is the next step"; the
 * controller performs it, and the write's watch event brings the claim
 * back for the step after. Knowing nothing of how addresses are found
 * (the pool backend does that), this is where the CAPI IPAM contract
 * lives in the controller:
 *
 *   1. Ignore claims whose poolRef is not a poolkeeper pool.
 *   2. Skip while the Cluster (spec.clusterName, else the deprecated label)
 *      or the pool is paused; a Cluster that does not exist is a skip too,
 *      unless the claim is being deleted: a cluster deleted first must
 *      never deadlock its claims. The claim's own cluster.x-k8s.io/paused
 *      annotation (present, whatever its value, as CAPI's HasPaused) holds
 *      it the same way: nothing is allocated, adopted, re-created or
 *      released; a claim not bound yet is Ready=False (Paused), a bound one
 *      keeps its address and its condition; its deletion waits for the
 *      pause to be lifted, as with a paused Cluster. clusterctl move pauses
 *      Clusters, never claims, and its delete-for-move handling comes first.
 *   3. Put the finalizer on the claim before allocating.
 *   4. Adopt an IPAddress named like the claim and owned by its UID (after
 *      a restart, or after clusterctl move, which recreates objects without
 *      status), but only a consistent one: its claimRef names the claim,
 *      its poolRef the claim's pool, its address is one the pool holds and
 *      no other IPAddress of the pool holds it. An inconsistent one is
 *      never adopted nor changed: the claim is Ready=False
 *      (InconsistentIPAddress) until someone deletes it. Otherwise
 *      allocate and create the IPAddress.
 *   5. Set status.addressRef and the Ready condition.
 *   6. On deletion: take the IPAddress's finalizer off and delete it; the
 *      address is released only once the IPAddress is seen gone; then the
 *      claim's finalizer comes off. While the claim is being deleted, an
 *      IPAddress the garbage collector took the claim's owner reference
 *      off (a foreground deletion, with the pool as a blocking owner) is
 *      still the claim's when it is so by every other sign: its name, its
 *      claimRef, its poolRef to the claim's poolkeeper pool, and no other
 *      controller. A claim deleted by clusterctl move
 *      (annotation delete-for-move) only loses the finalizer: its
 *      IPAddress moves with it.
 *   7. An IPAddress deleted while its claim lives is re-created, with the
 *      same address, once the old one is gone; never while clusterctl move
 *      is moving the claim or the IPAddress (delete-for-move annotation).
 * A missing or deleting pool never blocks a claim's deletion.
 */
#ifndef PK_DECIDE_H
#define PK_DECIDE_H

#include <jansson.h>

#include "api.h"
#include "pk.h"
#include "pool_ref.h"

/* The claim's Ready reason while the IPAddress named like it is not adopted. */
#define PK_REASON_INCONSISTENT "InconsistentIPAddress"
/* The reason while the claim, its Cluster or its pool is paused. */
#define PK_REASON_PAUSED "Paused"
/* The contract's reasons for a claim whose pool has no address for it, or that failed. */
#define PK_REASON_POOL_EXHAUSTED    "PoolExhausted"
#define PK_REASON_ALLOCATION_FAILED "AllocationFailed"

enum pk_cluster_state {
	PK_CLUSTER_UNNAMED = 0, /* neither spec.clusterName nor the label: go on */
	PK_CLUSTER_MISSING,
	PK_CLUSTER_PAUSED,
	PK_CLUSTER_ACTIVE,
};

enum pk_pool_state {
	PK_POOL_MISSING = 0,
	PK_POOL_DELETING,
	PK_POOL_PAUSED,
	PK_POOL_INVALID, /* its spec does not decode: nothing to allocate from */
	PK_POOL_ACTIVE,
};

enum pk_address_state {
	PK_ADDRESS_NONE = 0,      /* no IPAddress named like the claim */
	PK_ADDRESS_OURS,          /* owned (controller) by this claim's UID */
	PK_ADDRESS_OURS_DELETING, /* ours, with a deletionTimestamp */
	PK_ADDRESS_FOREIGN,       /* named like the claim, owned by something else */
};

/* Whether the IPAddress the claim owns may be adopted as its allocation. */
enum pk_address_check {
	PK_ADDRESS_CONSISTENT = 0, /* or nothing to check: no IPAddress of the claim's */
	PK_ADDRESS_UNCHECKED,      /* its pool is missing or invalid: not checkable yet */
	PK_ADDRESS_INCONSISTENT,   /* address_problem says why */
};

/* What the controller knows about one claim. */
struct pk_claim_facts {
	bool ours;            /* poolRef names a pool the backend serves (pk_pool_facts.served) */
	bool pool_in_scope;   /* an IPPool serves only its own namespace */
	bool deleting;        /* metadata.deletionTimestamp is set */
	bool has_finalizer;   /* PK_CLAIM_FINALIZER */
	bool delete_for_move; /* the claim carries clusterctl's delete-for-move annotation */
	bool paused; /* the claim carries PK_PAUSED_ANNOTATION, whatever its value (as CAPI) */
	bool address_delete_for_move; /* the IPAddress does */
	bool bound; /* status.addressRef.name is the claim's name and Ready is True */
	enum pk_cluster_state cluster;
	enum pk_pool_state pool;
	enum pk_address_state address;
	bool address_has_finalizer;          /* PK_ADDRESS_FINALIZER on the IPAddress */
	enum pk_address_check address_check; /* set by pk_claim_facts_check_address */
	char address_problem[PK_ERR_MSG_MAX / 2];
	char pool_text[320];    /* "IPPool ns/name", for messages */
	char cluster_text[320]; /* "Cluster ns/name", for messages */
	char claim_text[340];   /* "IPAddressClaim ns/name", for messages */
};

enum pk_claim_action {
	PK_ACT_NONE = 0, /* nothing to do (done, or not ours) */
	PK_ACT_WAIT,     /* paused or waiting on something; the reason says which */
	PK_ACT_ADD_FINALIZER,
	PK_ACT_NOT_READY, /* set Ready=False with reason and message */
	PK_ACT_ALLOCATE,  /* allocate (or re-create the held address) and create the IPAddress */
	PK_ACT_SET_READY, /* adopt the IPAddress: hold its address, set addressRef and Ready */
	PK_ACT_UNPROTECT_ADDRESS, /* remove PK_ADDRESS_FINALIZER from the IPAddress */
	PK_ACT_DELETE_ADDRESS,
	PK_ACT_RELEASE, /* release the address and remove the claim's finalizer */
};

struct pk_claim_decision {
	enum pk_claim_action action;
	const char *reason; /* a condition reason (CamelCase) or the cause of a wait */
	char message[PK_ERR_MSG_MAX];
};

/* The next step for a claim. Pure. */
void pk_decide_claim(const struct pk_claim_facts *f, struct pk_claim_decision *d);

/* "add finalizer", "allocate", ...: for logs and events. */
const char *pk_claim_action_name(enum pk_claim_action a);

/* What a claim's pool contributes to its facts (a pool backend's view of it). */
struct pk_pool_facts {
	const struct pk_pool_kind *kind; /* the backend's kind the poolRef names; NULL: none */
	bool served;                     /* kind != NULL (f->ours) */
	enum pk_pool_state state;
	bool in_scope; /* an IPPool serves only its own namespace */
};

/*
 * The pool's facts from the pool object (NULL: missing) for the claim,
 * whose poolRef names `kind` of a backend's (NULL: of none): missing,
 * deleting, paused or active (a backend says INVALID when it cannot use an
 * active pool's spec), and in scope (a pool of a kind not namespaced
 * serves every namespace). Pure.
 */
void pk_pool_facts_from(const json_t *claim, const struct pk_pool_kind *kind, const json_t *pool,
                        struct pk_pool_facts *out);

/*
 * The facts from the objects as read from the API (any may be NULL when
 * it does not exist; cluster_named says whether the claim names one) and
 * the pool's facts. The caller finds the objects; this only reads them,
 * checking JSON types.
 */
void pk_claim_facts_build(const json_t *claim, const struct pk_pool_facts *pool, bool cluster_named,
                          const json_t *cluster, const json_t *address, struct pk_claim_facts *f);

/* pk_claim_facts_build with the pool's facts from pk_pool_facts_from. */
void pk_claim_facts_from(const json_t *claim, const struct pk_pool_kind *kind, const json_t *pool,
                         bool cluster_named, const json_t *cluster, const json_t *address,
                         struct pk_claim_facts *f);

struct pk_pool;

/*
 * Checks the IPAddress the claim owns before it is adopted (rules.h): its
 * spec.claimRef names the claim and its spec.poolRef the claim's pool; its
 * address is one `pool` (decoded; NULL when the pool is missing or its spec
 * is invalid) holds, an address excluded since it was handed out included;
 * and `taken` is false (the caller's record of held addresses shows no
 * other IPAddress of the pool with it). Sets f->address_check and, when
 * inconsistent, f->address_problem. Only an IPAddress of the claim's
 * (PK_ADDRESS_OURS) that is not bound yet is checked: a bound claim was
 * checked when it was adopted, and the spec is immutable.
 */
void pk_claim_facts_check_address(struct pk_claim_facts *f, const json_t *claim,
                                  const json_t *address, const struct pk_pool *pool, bool taken);

/* The Cluster a claim names: the contract rule pk_rules_claim_cluster_name (rules.h), for
 * callers that need not know whether it came from the deprecated label. */
const char *pk_claim_cluster_name(const json_t *claim);

/* Whether the claim has a Ready condition with status "True". */
bool pk_claim_ready(const json_t *claim);

#endif
