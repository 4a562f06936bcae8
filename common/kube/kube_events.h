/*
 * kube_events.h - Kubernetes Events (events.k8s.io/v1) from poolkeeper,
 * with the aggregation client-go's events library does, so that an object
 * that flaps does not flood the API:
 *   - the first occurrence of an event creates an Event object;
 *   - an identical one (same regarding object, type, reason, action and
 *     note) within the series window (default 6 minutes after the last
 *     occurrence, client-go's) does not create another: it counts in the
 *     Event's series (series.count, series.lastObservedTime);
 *   - the series is written at once for the second occurrence, then at
 *     most once per flush interval (default 30 s) per Event; counts in
 *     between are written by the next emit after the interval or by
 *     pk_kube_recorder_flush, which the daemon calls every few seconds and
 *     before it exits.
 * The cache of recent events is bounded (opts.max_cached); the oldest is
 * forgotten first, after its pending count is written.
 *
 * Threading: emit and flush may be called from any thread; a mutex guards
 * the cache and is not held while requests are made.
 *
 * Ownership: the recorder borrows the client and copies its options.
 */
#ifndef PK_KUBE_EVENTS_H
#define PK_KUBE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "kube_client.h"
#include "pk.h"

#define PK_KUBE_EVENT_SERIES_WINDOW_S 360
#define PK_KUBE_EVENT_FLUSH_MS        30000
#define PK_KUBE_EVENT_MAX_CACHED      4096
#define PK_KUBE_EVENT_NOTE_MAX        1024 /* the API's limit on note */

struct pk_kube_recorder;

struct pk_kube_recorder_opts {
	const char
	    *controller;      /* reportingController, "ipam.poolkeeper.io/poolkeeper-controller" */
	const char *instance; /* reportingInstance; NULL: the host name */
	long series_window_s; /* 0: PK_KUBE_EVENT_SERIES_WINDOW_S */
	long flush_ms;        /* 0: PK_KUBE_EVENT_FLUSH_MS */
	size_t max_cached;    /* 0: PK_KUBE_EVENT_MAX_CACHED */
};

/* The object an Event is about. namespace NULL: cluster-scoped (the Event
 * goes to "default"). uid may be NULL. */
struct pk_kube_object_ref {
	const char *api_version;
	const char *kind;
	const char *namespace;
	const char *name;
	const char *uid;
};

PK_MUST_CHECK int pk_kube_recorder_new(struct pk_kube_client *c,
                                       const struct pk_kube_recorder_opts *opts,
                                       struct pk_kube_recorder **out, struct pk_err *err);

/* Flushes pending series counts, then releases. NULL is fine. */
void pk_kube_recorder_free(struct pk_kube_recorder *rec);

/*
 * Records one occurrence. warning selects type Warning (else Normal);
 * reason is CamelCase ("AddressAllocated"), action what was done
 * ("Allocate"); the note is formatted and cut at PK_KUBE_EVENT_NOTE_MAX
 * bytes. Returns the outcome of the write it made, PK_KUBE_OK when it only
 * counted.
 */
enum pk_kube_reason pk_kube_recorder_emit(struct pk_kube_recorder *rec,
                                          const struct pk_kube_object_ref *regarding, bool warning,
                                          const char *reason, const char *action, const char *fmt,
                                          ...) PK_PRINTF(6, 7);

/* Writes every pending series count now. Returns the first failure. */
enum pk_kube_reason pk_kube_recorder_flush(struct pk_kube_recorder *rec);

/* A wall-clock time as a MicroTime ("2026-01-02T03:04:05.000006Z"), the form Events and
 * Leases carry (eventTime, series.lastObservedTime, renewTime). */
void pk_kube_micro_time(const struct timespec *t, char *buf, size_t len);

/* How many Event objects were created and how many series updates written. */
void pk_kube_recorder_stats(struct pk_kube_recorder *rec, unsigned long *created,
                            unsigned long *updated);

#endif
