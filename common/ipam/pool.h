/*
 * pool.h - a poolkeeper pool's spec (IPPool and GlobalIPPool share it),
 * decoded from its JSON object, and the pool's usable set.
 *
 * The spec is field-compatible with the in-cluster provider's
 * InClusterIPPool v1alpha2: addresses, prefix, gateway, excludedAddresses,
 * allocateReservedIPAddresses, addressReuseGracePeriodSeconds.
 *
 * The usable set is
 *   addresses - excludedAddresses - gateway
 *     - the IPv4 network and broadcast addresses of the pool's subnet
 *       (the subnet is <first address>/<prefix>; not for /31 and /32)
 *     - the first address of an IPv6 subnet (Subnet-Router anycast;
 *       not for /127 and /128)
 * and the subnet reservations are kept when allocateReservedIPAddresses is
 * true. The gateway is never handed out, whatever that flag says, as in the
 * in-cluster provider.
 */
#ifndef PK_POOL_H
#define PK_POOL_H

#include <jansson.h>

#include "address.h"
#include "range_set.h"
#include "violation.h"

/* Bounds on what a pool may hold (also enforced by the CRD schema). */
#define PK_POOL_MAX_ENTRIES 1024 /* per addresses / excludedAddresses list */

struct pk_pool {
	enum pk_family family;          /* NONE when no entry parsed */
	struct pk_range_set *addresses; /* union of spec.addresses */
	struct pk_range_set *excluded;  /* union of spec.excludedAddresses */
	bool has_prefix;
	unsigned prefix;
	bool has_gateway;
	pk_u128 gateway;
	bool allocate_reserved;
	int64_t grace_seconds;       /* 0 when unset */
	struct pk_range_set *usable; /* NULL unless the spec decoded cleanly */
};

/*
 * Decodes `spec` (the object under .spec; NULL or not an object is itself a
 * violation) into `out` and records every violation found, each naming its
 * field under "spec." and the offending value. JSON types are checked here:
 * `prefix: "24"` is a violation, never a crash. out->usable is computed only
 * when no DENY violation was recorded. Returns PK_OK, or PK_ERR_NOMEM (or
 * PK_ERR_TOO_BIG, a range set over its cap, which PK_POOL_MAX_ENTRIES keeps
 * out of reach).
 * Free with pk_pool_release even on failure.
 */
PK_MUST_CHECK int pk_pool_decode(const json_t *spec, struct pk_pool *out, struct pk_violations *v);

void pk_pool_release(struct pk_pool *p);

/*
 * The prefix a pool's spec implies when it sets none (spec.prefix absent or
 * null): that of its only entry in spec.addresses when that entry is a
 * CIDR. pk_pool_decode uses it; the mutating webhook writes it into the
 * spec. False when the spec sets a prefix or implies none.
 */
bool pk_pool_default_prefix(const json_t *spec, unsigned *prefix);

#endif
