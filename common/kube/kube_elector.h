/*
 * kube_elector.h - leader election on a coordination.k8s.io/v1 Lease, with
 * client-go's semantics (k8s.io/client-go/tools/leaderelection), so that
 * poolkeeper-controller replicas and client-go based tools agree on who
 * leads:
 *   - a candidate tries every retry period (default 2 s, jittered by up to
 *     20 %) to take the Lease; it may when the Lease does not exist, has no
 *     holder, or its record has not changed for lease duration (default
 *     15 s) as observed on this process's own monotonic clock (not the
 *     renewTime written by another machine, whose clock may be off);
 *   - writes are conditional on the Lease's resourceVersion, so two
 *     candidates cannot both win; a Conflict means another one won;
 *   - the leader renews every retry period; when it has not renewed
 *     successfully for the renew deadline (default 10 s) it stops leading,
 *     before its Lease can expire for the others;
 *   - on pk_kube_elector_stop while leading it gives the Lease up (holder
 *     "", lease duration 1 s) so that another candidate takes over at once
 *     (client-go's ReleaseOnCancel);
 *   - one term per start: after leadership is lost the elector stops, as
 *     client-go's Run returns and controller-runtime exits; the process
 *     should stop its leader-only work and exit or start a new elector.
 *
 * Threading: pk_kube_elector_start runs the election on a thread of its
 * own; on_started and on_stopped run on it (on_started must return soon:
 * start the leader's work elsewhere; the Lease is renewed only after it
 * returns). pk_kube_elector_leading may be called from any thread.
 *
 * Ownership: the elector borrows the client and copies the strings of its
 * options. pk_kube_elector_free stops it first.
 */
#ifndef PK_KUBE_ELECTOR_H
#define PK_KUBE_ELECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "kube_client.h"
#include "pk.h"

#define PK_KUBE_LEASE_DURATION_MS 15000
#define PK_KUBE_RENEW_DEADLINE_MS 10000
#define PK_KUBE_RETRY_PERIOD_MS   2000

struct pk_kube_elector;

struct pk_kube_elector_opts {
	const char *namespace;        /* of the Lease */
	const char *name;             /* "poolkeeper-controller" */
	const char *identity;         /* unique per process; NULL: pk_kube_lease_default_identity */
	long lease_duration_ms;       /* 0: 15 s (written to the Lease in whole seconds) */
	long renew_deadline_ms;       /* 0: 10 s; must be below lease_duration */
	long retry_period_ms;         /* 0: 2 s */
	void (*on_started)(void *ud); /* became leader */
	void (*on_stopped)(void *ud); /* no longer leader (lost, or stopped while leading) */
	void (*on_new_leader)(void *ud,
	                      const char *identity); /* someone else holds it; may be NULL */
	void *ud;
};

/* "<hostname>_<random hex>": what client-go uses (hostname and a UUID). */
void pk_kube_lease_default_identity(char *buf, size_t len);

PK_MUST_CHECK int pk_kube_elector_new(struct pk_kube_client *c,
                                      const struct pk_kube_elector_opts *opts,
                                      struct pk_kube_elector **out, struct pk_err *err);

PK_MUST_CHECK int pk_kube_elector_start(struct pk_kube_elector *el, struct pk_err *err);

/* Stops trying; a leader releases the Lease first. Waits for the thread. */
void pk_kube_elector_stop(struct pk_kube_elector *el);

/* NULL is fine. */
void pk_kube_elector_free(struct pk_kube_elector *el);

bool pk_kube_elector_leading(struct pk_kube_elector *el);

/* The identity in use (borrowed). */
const char *pk_kube_elector_identity(const struct pk_kube_elector *el);

/* ---- the decision, pure (exposed for tests) ---- */

enum pk_kube_lease_action {
	PK_KUBE_LEASE_WAIT,    /* someone else holds a live lease */
	PK_KUBE_LEASE_ACQUIRE, /* free, expired, or never created: take it */
	PK_KUBE_LEASE_RENEW,   /* ours: renew */
};

/*
 * holder: spec.holderIdentity of the Lease ("" or NULL when none or no
 * Lease); observed_ns: when this process last saw the record change
 * (monotonic); duration_ms: the Lease's leaseDurationSeconds in ms (the
 * elector's own when the Lease has none); now_ns: monotonic now.
 */
enum pk_kube_lease_action pk_kube_lease_decide(const char *holder, const char *me,
                                               long long observed_ns, long duration_ms,
                                               long long now_ns);

/*
 * Builds the Lease spec for a write at wall-clock time now (RFC 3339 with
 * microseconds): holder me, acquireTime kept when renewing, leaseTransitions
 * increased when the holder changes. old_spec may be NULL. New reference.
 */
json_t *pk_kube_lease_spec(const json_t *old_spec, const char *me, long duration_s, bool release,
                           const struct timespec *now);

#endif
