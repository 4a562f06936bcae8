/*
 * reconcile.h - poolkeeper-controller's reconciler: informers on claims,
 * IPAddresses, pools and Clusters; a work queue; one worker that performs
 * the next step decide.c names for each claim; the per-pool allocators.
 *
 * Serialisation: a single worker thread takes keys off the queue, so work
 * on one pool (and on every pool) runs in order and the allocators, the
 * map of held addresses and the pool states are touched by that thread
 * only; informer callbacks only queue keys. Keys:
 *   c/<ns>/<name>         a claim
 *   a/<ns>/<name>         an IPAddress that changed or went away
 *   p/<kind>/<ns>/<name>  a pool's status and finalizer (ns empty for a GlobalIPPool)
 *   g/<kind>/<ns>/<name>  the same, when a reuse grace period ends
 *
 * Leadership: the worker does nothing until pk_controller_set_leading(true);
 * it then lists every IPAddress with resourceVersion unset (a consistent
 * read, not the informer's cache) and records each poolkeeper address as
 * held; a pool's allocator is built from that record when first needed and
 * is kept current from the controller's own writes and IPAddress events.
 * Two IPAddresses holding one address are logged and reported on the
 * pool's Ready condition, never changed.
 */
#ifndef PK_RECONCILE_H
#define PK_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>

#include "kube_client.h"
#include "pk.h"

struct pk_controller;

struct pk_controller_opts {
	struct pk_kube_client *client; /* borrowed; outlives the controller */
	const char *namespace;         /* NULL or "": every namespace */
	const char *claim_version;     /* ipam.cluster.x-k8s.io version: "v1beta2" or "v1beta1" */
	const char *cluster_version;   /* cluster.x-k8s.io version; NULL: Clusters not watched */
};

/* Copies the strings of opts. */
PK_MUST_CHECK int pk_controller_new(const struct pk_controller_opts *opts,
                                    struct pk_controller **out, struct pk_err *err);

/* Starts the informers and the worker; waits up to timeout_ms for the first lists. */
PK_MUST_CHECK int pk_controller_start(struct pk_controller *c, long timeout_ms, struct pk_err *err);

/* The leader alone allocates; false stops writes at once (the key in progress ends early). */
void pk_controller_set_leading(struct pk_controller *c, bool leading);

/* Whether the informers are synced (for /readyz). */
bool pk_controller_ready(struct pk_controller *c);

/* Stops the queue, lets the worker finish the key in progress, stops the informers. */
void pk_controller_stop(struct pk_controller *c);

/* NULL is fine; stops first. */
void pk_controller_free(struct pk_controller *c);

/* Prometheus text of the controller's metrics into buf; returns the length written. */
size_t pk_controller_metrics(struct pk_controller *c, char *buf, size_t len);

#endif
