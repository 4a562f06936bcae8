/*
 * kea_lease.h - what the Kea backend writes into a Kea lease, and reads
 * back: who the lease is for.
 *
 * The key. Kea finds a lease by client-id (IPv4) or by DUID and IAID
 * (IPv6). poolkeeper derives them from what survives clusterctl move, the
 * claim's namespace, name and Cluster, and from the owner its KeaServer
 * names (several management clusters that share one Kea give each its own
 * owner, so that two claims named alike on two clusters never share a
 * lease): SHA-256 of the four, NUL-separated, gives
 *
 *   duid       00:04 + 16 bytes     a DUID-UUID (RFC 6355)
 *   iaid       4 bytes              IPv6's IA_NA identifier
 *   client-id  ff + iaid + duid     a node-specific client identifier (RFC 4361)
 *   hw-address 02:xx:xx:xx:xx:xx    locally administered, unicast: Kea 2.2's lease4-add
 *                                   requires one
 *
 * so a retry after any failure, and the claim moved to another cluster,
 * finds the lease it made and never makes a second.
 *
 * The user-context. Every lease poolkeeper makes carries
 * {"poolkeeper": {"owner", "claim": "<ns>/<name>", "cluster", "uid", "pool"}}
 * (Kea keeps it across restarts). A lease is poolkeeper's only when its
 * user-context names a claim and its key is the one derived from that
 * claim: a DHCP client's lease, another owner's, or a lease whose
 * user-context was written by hand to name a claim is someone else's, and
 * its address counts as used.
 *
 * Pure.
 */
#ifndef PK_KEA_LEASE_H
#define PK_KEA_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "address.h"
#include "pk.h"

/* The user-context member poolkeeper writes. */
#define PK_KEA_CONTEXT "poolkeeper"

/* The longest owner. */
#define PK_KEA_OWNER_MAX 63

/* Who a lease is for: the claim, as the backend knows it. */
struct pk_kea_claim {
	const char *owner; /* the KeaServer's owner; "" or NULL: none */
	const char *ns, *name;
	const char *cluster; /* NULL: none */
	const char *uid;     /* NULL: unknown */
	const char *pool;    /* the pool key, "<kind>/<ns>/<name>" */
};

/* The key Kea finds a claim's lease by (text as Kea writes it: hex pairs joined by ':'). */
struct pk_kea_key {
	char duid[3 * 18]; /* 00:04 and 16 bytes */
	uint32_t iaid;
	char client_id[3 * 23]; /* ff, 4 bytes of IAID, the DUID */
	char hw_address[3 * 6];
};

/* The key of claim c. */
void pk_kea_key_of(const struct pk_kea_claim *c, struct pk_kea_key *out);

/* The arguments of lease4-add or lease6-add (family of a) for claim c at address a, held
 * for ever (valid-lft 4294967295); NULL when memory ran out. */
json_t *pk_kea_lease_add_args(const struct pk_kea_claim *c, const struct pk_addr *a);

/* A lease as Kea reports it (lease4-get-*, lease6-get-*, the pages). */
struct pk_kea_lease {
	struct pk_addr address;
	bool ours; /* made by poolkeeper for the claim its user-context names, under owner */
	/* When ours: the claim (name, cluster, uid and pool point into the lease's JSON, valid
	 * while it lives; cluster, uid and pool may be NULL). */
	char ns[64];
	const char *name, *cluster, *uid, *pool;
};

/* Reads a lease; false (out unspecified) when it has no address poolkeeper can read. owner is
 * this backend's ("" or NULL: none): a lease of another owner is not ours. */
bool pk_kea_lease_read(const json_t *lease, const char *owner, struct pk_kea_lease *out);

#endif
