/*
 * kea_alloc.h - one claim's lease at Kea, found or made, and given back:
 * the blocking steps the Kea backend runs on threads of its own, never on
 * a controller worker.
 *
 * Taking an address. The claim's key (kea_lease.h) finds the lease an
 * earlier try made, whatever became of its answer; only when there is none
 * is a new one made. Candidates come from the pool's allocator, lowest
 * first, minus what is known to be held; lease-add is Kea's atomic take, so
 * an address another holder took meanwhile (a DHCP client, another
 * management cluster) answers "already exists": it stays marked used, and
 * the next candidate is tried. Several owners can therefore share one Kea
 * subnet and never hand out one address twice, whatever each remembers.
 *
 * Giving it back. Every lease the claim's key finds in Kea is deleted; one
 * already gone counts as deleted.
 *
 * Failures are results (backend.h): Kea unreachable, timed out, its server
 * down behind the agent, or a bad answer is transient; credentials refused,
 * the lease commands hook missing, or an address Kea refuses (outside every
 * subnet) is permanent, with Kea's own words in the message.
 *
 * Threading: any thread; the pool's allocator is shared by the claims of
 * the pool, guarded by its mutex, which is never held across a call to Kea.
 */
#ifndef PK_KEA_ALLOC_H
#define PK_KEA_ALLOC_H

#include <pthread.h>
#include <stdbool.h>

#include "allocator.h"
#include "backend.h"
#include "kea_client.h"
#include "kea_lease.h"

/* How many candidates one take tries before it answers transient (others took them all). */
#define PK_KEA_TAKE_TRIES 64

/* Condition reasons the Kea backend writes on claims. */
#define PK_KEA_REASON_UNREACHABLE "KeaUnreachable"
#define PK_KEA_REASON_UNAVAILABLE "KeaServerUnavailable"
#define PK_KEA_REASON_REFUSED     "KeaRefused"
#define PK_KEA_REASON_CREDENTIALS "KeaCredentialsRefused"
#define PK_KEA_REASON_NO_COMMANDS "KeaLeaseCommandsMissing"
#define PK_KEA_REASON_BUSY        "KeaAddressesContended"

/* A pool as the Kea backend hands out from it. */
struct pk_kea_pool {
	const char *key;            /* "<kind>/<ns>/<name>", for the user-context and messages */
	enum pk_family family;      /* of its addresses */
	long subnet_id;             /* Kea's id of the subnet its addresses lie in */
	struct pk_allocator *alloc; /* its usable addresses; used: held, as far as known */
	pthread_mutex_t *mu;        /* guards alloc */
};

/* The address a take came to. */
struct pk_kea_taken {
	struct pk_addr address;
	bool made; /* a lease made by this take (else found: made by an earlier one) */
};

/* The claim's lease in the pool's subnet, found or made: OK with *out, EXHAUSTED, or a
 * failure (res). Never blocks longer than the tries' deadlines. */
void pk_kea_take(const struct pk_kea_endpoint *ep, struct pk_kea_pool *pool,
                 const struct pk_kea_claim *c, struct pk_kea_taken *out,
                 struct pk_backend_result *res);

/* Deletes every lease of the claim's key in the family's service; *released says how many
 * (their addresses are freed in pool->alloc when pool is not NULL). OK, or a failure: the
 * claim keeps its finalizer. */
void pk_kea_give_back(const struct pk_kea_endpoint *ep, struct pk_kea_pool *pool,
                      enum pk_family family, const struct pk_kea_claim *c, unsigned *released,
                      struct pk_backend_result *res);

/* The result of a call that did not come to Kea's answer (or that Kea answered with a failure
 * that is not the command's own): what the claim shows. */
void pk_kea_failure(const struct pk_kea_answer *a, const char *doing,
                    struct pk_backend_result *res);

#endif
