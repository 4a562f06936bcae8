/*
 * controller.h - poolkeeper-controller: informers on claims, IPAddresses,
 * pools and Clusters (cache.h); a work queue of typed keys (queue.h,
 * work_key.h); workers that hand each claim key to the generic claim
 * reconciler (claim_reconciler.h) and each pool key to the pool backend
 * (backend.h; the in-process allocator of backends/incluster/).
 *
 * The queue hands a key to one worker at a time, so the steps of one claim
 * never race; claims of any pool are worked on in parallel.
 *
 * Leadership: the workers do nothing until pk_controller_set_leading(true);
 * then one of them has the backend rebuild its record from a consistent
 * read (on_leading) and queues every claim and pool before any key is
 * processed. Only the leader writes (writer.h).
 */
#ifndef PK_CONTROLLER_H
#define PK_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>

#include "kube_client.h"
#include "kube_config.h"
#include "pk.h"
#include "registry.h"

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
	/* The pool backends (registry.h), side by side; none: PK_REGISTRY_DEFAULT's. */
	const struct pk_registry_entry *const *backends;
	size_t nbackends;
	struct pk_kube_config *events_config; /* Events written with it; NULL: no Events */
	/* Where the backends' namespaced watches (the Secrets their connections name) are read,
	 * and nowhere else; NULL or "": those are not watched. */
	const char *credentials_namespace;
	/* How often, while leading, the backends compare their records with the systems they
	 * keep them in (backend.h, resync); 0: never. */
	long resync_period_ms;
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

/* Whether the informers are synced and every backend is ready (for /readyz); else why. */
bool pk_controller_ready(struct pk_controller *c, char *why, size_t len);

/* Stops the queue, lets the worker finish the key in progress, stops the informers. */
void pk_controller_stop(struct pk_controller *c);

/* NULL is fine; stops first. */
void pk_controller_free(struct pk_controller *c);

/* Prometheus text of the controller's metrics (the caller frees it); NULL when out of memory. */
char *pk_controller_metrics(struct pk_controller *c, size_t *len);

#endif
