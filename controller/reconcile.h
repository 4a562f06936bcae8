/*
 * reconcile.h - poolkeeper-controller's reconciler: informers on claims,
 * IPAddresses, pools and Clusters; a work queue; workers that perform the
 * next step decide.c names for each claim; the per-pool allocators.
 *
 * Keys:
 *   c/<ns>/<name>         a claim, and the IPAddress named like it
 *   p/<kind>/<ns>/<name>  a pool's status and finalizer (ns empty for a GlobalIPPool)
 *   g/<kind>/<ns>/<name>  the same, when a reuse grace period ends
 * The queue hands a key to one worker at a time, so the steps of one claim
 * never race. The record of held addresses, the pool states and their
 * allocators are shared by the workers under one mutex that is never held
 * across an API call: an allocation takes the lowest free address and
 * records it as held under the lock (so a spec change that rebuilds the
 * allocator keeps it), then creates the IPAddress without it, and gives
 * the address back if the create fails. Allocation within a pool is
 * therefore serialised, and claims of any pool are worked on in parallel.
 *
 * Leadership: the workers do nothing until pk_controller_set_leading(true);
 * then one of them lists every IPAddress with resourceVersion unset (a
 * consistent read, not the informer's cache) and records each poolkeeper
 * address as held before any key is processed; a pool's allocator is built
 * from that record when first needed (with the quarantine recorded in the
 * pool's status) and is kept current from the controller's own writes and
 * IPAddress events. Two IPAddresses holding one address are logged and
 * reported on the pool's Ready condition, as an Event and a metric, never
 * changed.
 */
#ifndef PK_RECONCILE_H
#define PK_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>

#include "kube_client.h"
#include "kube_config.h"
#include "pk.h"

struct pk_controller;

struct pk_controller_opts {
	struct pk_kube_client *client; /* borrowed; outlives the controller */
	const char *namespace;         /* NULL or "": every namespace */
	/* NULL or "": every object; else the label selector of the claims', pools' and
	 * Clusters' informers. IPAddresses are never filtered: every address of a pool served
	 * must be seen to be held, whoever created it. */
	const char *label_selector;
	const char *claim_version;   /* ipam.cluster.x-k8s.io version: "v1beta2" or "v1beta1" */
	const char *cluster_version; /* cluster.x-k8s.io version; NULL: Clusters not watched */
	unsigned workers;            /* 0: 1 */
	struct pk_kube_config *events_config; /* Events written with it; NULL: no Events */
};

/* Copies the strings of opts. */
PK_MUST_CHECK int pk_controller_new(const struct pk_controller_opts *opts,
                                    struct pk_controller **out, struct pk_err *err);

/* Starts the informers; their first lists run in the background. */
PK_MUST_CHECK int pk_controller_start(struct pk_controller *c, struct pk_err *err);

/* Waits up to timeout_ms for every informer's first list; once they are all in, starts
 * the workers (once). 1: running; 0: still listing (call again); < 0: the workers could
 * not start. */
PK_MUST_CHECK int pk_controller_run(struct pk_controller *c, long timeout_ms, struct pk_err *err);

/* The resources whose informers have not listed yet, comma-separated ("" when none). */
void pk_controller_listing(struct pk_controller *c, char *buf, size_t len);

/* The leader alone allocates; false stops writes at once (the key in progress ends early). */
void pk_controller_set_leading(struct pk_controller *c, bool leading);

/* Whether the informers are synced (for /readyz). */
bool pk_controller_ready(struct pk_controller *c);

/* Stops the queue, lets the worker finish the key in progress, stops the informers. */
void pk_controller_stop(struct pk_controller *c);

/* NULL is fine; stops first. */
void pk_controller_free(struct pk_controller *c);

/* Prometheus text of the controller's metrics (the caller frees it); NULL when out of memory. */
char *pk_controller_metrics(struct pk_controller *c, size_t *len);

#endif
