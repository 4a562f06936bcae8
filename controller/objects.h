/*
 * objects.h - the API objects and patches the controller writes, built as
 * a pure function of what it read (no I/O, no clock: the time is a
 * parameter), so that unit tests can check every byte:
 *   - finalizer edits as JSON patches (RFC 6902) that first test
 *     metadata.resourceVersion, so a list changed by someone else since it
 *     was read is never overwritten (a merge patch would replace the list);
 *   - the Ready condition, keeping lastTransitionTime while its status is
 *     unchanged;
 *   - the claim's status (v1beta2: metav1.Condition with
 *     observedGeneration; v1beta1: CAPI's condition with severity);
 *   - the IPAddress for a claim, and the pool's status.
 * Every function returns a new reference (NULL when there is nothing to
 * write, or memory ran out, as documented per function).
 */
#ifndef PK_OBJECTS_H
#define PK_OBJECTS_H

#include <stdbool.h>

#include <jansson.h>

#include "allocator.h"
#include "meta.h"
#include "pk.h"
#include "pool_ref.h"

/* [test uid, add finalizer] (with the list absent, [test uid, test the list is absent,
 * add the list]); NULL when obj already has it (or has no uid). No resourceVersion test:
 * see objects.c. */
json_t *pk_objects_finalizer_add_patch(const json_t *obj, const char *finalizer);

/* [test uid, test the entry at its index, remove it]; NULL when obj does not have it (or
 * has no uid). */
json_t *pk_objects_finalizer_remove_patch(const json_t *obj, const char *finalizer);

bool pk_objects_has_finalizer(const json_t *obj, const char *finalizer);

struct pk_condition {
	const char *type;   /* "Ready" */
	bool status;        /* True / False */
	const char *reason; /* CamelCase */
	const char *message;
	long long generation; /* observedGeneration; < 0: not written */
	bool v1beta1;         /* CAPI v1beta1 shape: severity instead of observedGeneration */
};

/*
 * Whether the condition in `conditions` already says c (type, status,
 * reason, message, and the generation when c has one): then nothing needs
 * writing.
 */
bool pk_objects_condition_same(const json_t *conditions, const struct pk_condition *c);

/* The condition as an object; lastTransitionTime is the old one's when the status is
 * unchanged, else now. */
json_t *pk_objects_condition_build(const json_t *old_conditions, const struct pk_condition *c,
                                   long long now);

/*
 * A merge patch for the claim's status subresource: {"status": {"addressRef": {"name":
 * address}, "conditions": [...]}} with c replacing the condition of its type and the others
 * kept. address NULL leaves addressRef as it is.
 */
json_t *pk_objects_claim_status_patch(const json_t *claim, const char *address,
                                      const struct pk_condition *c, long long now);

struct pk_ipaddress_spec {
	const char *api_version; /* "ipam.cluster.x-k8s.io/v1beta2" */
	const char *address;     /* text */
	unsigned prefix;
	const char *gateway;                  /* NULL: none */
	const struct pk_pool_kind *pool_kind; /* spec.poolRef and the pool's owner reference */
	const char *pool_name;
	const char *pool_uid;
	const char *external_id; /* NULL: none (else PK_EXTERNAL_ID_ANNOTATION) */
};

/*
 * The IPAddress for a claim: named like it in its namespace, spec from s,
 * owner references to the claim (controller) and the pool, the protect
 * finalizer, the cluster-name label copied. NULL when the claim lacks name,
 * namespace or uid.
 */
json_t *pk_objects_ipaddress(const json_t *claim, const struct pk_ipaddress_spec *s);

/*
 * A merge patch for a pool's status subresource: ipAddresses {total, used,
 * free, outOfRange} as exact decimal strings, c as its Ready condition, and
 * quarantine (when not NULL) as quarantinedAddresses. NULL when the status
 * already says all of it.
 */
json_t *pk_objects_pool_status_patch(const json_t *pool, const struct pk_alloc_counts *counts,
                                     const struct pk_condition *c, const json_t *quarantine,
                                     long long now);

/*
 * status.quarantinedAddresses: the addresses released within their reuse
 * grace period, [{"address": text, "until": RFC 3339}], so that the
 * quarantine survives a restart. At most PK_QUARANTINE_MAX entries are
 * recorded (the lowest addresses); the rest are free at once after a
 * restart.
 */
#define PK_QUARANTINE_MAX 1024

/* Appends one entry to a quarantine array; false when the array is full or memory ran out. */
bool pk_objects_quarantine_add(json_t *quarantine, const char *address, long long until);

/*
 * Calls fn for each well-formed entry of the pool's status.quarantinedAddresses
 * whose time is later than now (malformed entries are skipped).
 */
void pk_objects_pool_quarantine(const json_t *pool, long long now,
                                void (*fn)(void *ud, const char *address, long long until),
                                void *ud);

#endif
