/*
 * claim_reconciler.h - the generic claim reconciler: the CAPI IPAM
 * contract over any pool backend (backend.h). One pass over a claim:
 *
 *   1. facts: the claim, its IPAddress, its Cluster and its pool as the
 *      cache has them (cache.h), waiting while the cache is behind the
 *      controller's own writes (expect.h); the backend completes the pool's
 *      view (pk_backend_view_pool);
 *   2. decide: pk_decide_claim (decide.h), pure;
 *   3. act: the one step decided, through the writer (writer.h).
 *
 * It is the only place that writes claims and creates or deletes
 * IPAddresses, and it knows nothing of how addresses are found: the
 * backend leases an address (ensure_address), takes it back when its
 * create surely failed (abandon_address), and frees it only once a
 * consistent read shows the IPAddress gone (release_address). One pass
 * goes from a new claim to Ready: each write's answer is the next step's
 * input (finalizer, IPAddress, Ready), up to three steps.
 *
 * Threading: pk_claim_reconcile may run on many workers at once, never
 * twice at once for one claim (the queue's promise).
 */
#ifndef PK_CLAIM_RECONCILER_H
#define PK_CLAIM_RECONCILER_H

#include <stdbool.h>

#include "backend.h"
#include "cache.h"
#include "event_poster.h"
#include "expect.h"
#include "metrics.h"
#include "writer.h"

struct pk_claim_reconciler {
	struct pk_backend *backend;
	struct pk_writer *writer;
	struct pk_expect *expect;
	struct pk_metrics *metrics;
	struct pk_event_poster *events; /* NULL: no Events */
	const char *ipam_version;       /* "v1beta2" or "v1beta1" */
	/* Queues the claim ns/name again after delay_ms. */
	void (*queue_claim)(void *ud, const char *ns, const char *name, long delay_ms);
	/* Follows up what a backend's operation changed (never an empty next). */
	void (*follow)(void *ud, const struct pk_pool_next *next);
	void *ud;
};

/* One pass over the claim ns/name; v (the cache's view of it) is consumed. PK_OK, or an
 * error: the key is retried with backoff. */
PK_MUST_CHECK int pk_claim_reconcile(struct pk_claim_reconciler *r, const char *ns,
                                     const char *name, struct pk_claim_view *v);

#endif
