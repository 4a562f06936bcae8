/*
 * metrics.h - the claim reconciler's counters and the time-to-Ready
 * histogram (Prometheus text). The histogram observes the seconds from a
 * claim first seen unbound (pk_metrics_seen) to its Ready condition
 * written (pk_metrics_ready).
 *
 * Threading: counters are atomics; the seen map has its own mutex. Every
 * function may be called from any thread.
 */
#ifndef PK_METRICS_H
#define PK_METRICS_H

#include <stdatomic.h>
#include <stdio.h>

#define PK_READY_BUCKETS 14

struct pk_metrics {
	atomic_ullong allocations, releases, reconciles;
	atomic_ullong failures_exhausted, failures_other, failures_not_ready;
	atomic_ullong inconsistent;    /* IPAddresses found inconsistent and not adopted */
	atomic_ullong cache_oversized; /* objects over the cache's cap (trim.h), kept as names */
	atomic_ullong ready_count[PK_READY_BUCKETS + 1];
	atomic_ullong ready_sum_us;
	struct pk_metrics_seen *seen; /* claim ns/name -> when it was first seen unbound */
};

/* PK_OK, or PK_ERR_NOMEM. */
int pk_metrics_init(struct pk_metrics *m);
void pk_metrics_release(struct pk_metrics *m);

/* The claim (ns/name) is seen unbound at now_ns (monotonic); an earlier mark is kept. */
void pk_metrics_seen(struct pk_metrics *m, const char *key, long long now_ns);
/* The claim is gone: its mark goes. */
void pk_metrics_forget(struct pk_metrics *m, const char *key);
/* The claim is Ready at now_ns: observes the time since its mark (none: nothing). */
void pk_metrics_ready(struct pk_metrics *m, const char *key, long long now_ns);

/* HELP and TYPE lines. */
void pk_metrics_head(FILE *f, const char *name, const char *type, const char *help);

/* The counters and the histogram, from poolkeeper_reconciles_total to the histogram. */
void pk_metrics_write(const struct pk_metrics *m, FILE *f);

/* Monotonic nanoseconds. */
long long pk_metrics_now_ns(void);

#endif
