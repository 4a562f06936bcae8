/*
 * event_poster.h - the controller's Kubernetes Events, posted off the work
 * path: reconcilers post an event and go on; one thread writes them
 * through an aggregating recorder (kube_events.h) on a client of its own
 * with a low rate limit, so that Events never slow allocation down or take
 * the API requests the claims need. As in client-go, the queue is bounded:
 * when it is full, the newest event is dropped and counted.
 *
 * Threading: pk_event_poster_post may be called from any thread.
 */
#ifndef PK_EVENT_POSTER_H
#define PK_EVENT_POSTER_H

#include <stdbool.h>

#include "kube_config.h"
#include "kube_events.h"
#include "pk.h"

#define PK_EVENT_POSTER_QUEUE 1000
#define PK_EVENT_POSTER_QPS   10
#define PK_EVENT_POSTER_BURST 25

struct pk_event_poster;

/* Starts the writer thread; cfg is borrowed and must outlive the result. */
PK_MUST_CHECK int pk_event_poster_new(struct pk_kube_config *cfg, struct pk_event_poster **out,
                                      struct pk_err *err);

/* Queues one event (strings copied); false when the queue was full and it was dropped. */
bool pk_event_poster_post(struct pk_event_poster *ev, const struct pk_kube_object_ref *regarding,
                          bool warning, const char *reason, const char *action, const char *fmt,
                          ...) PK_PRINTF(6, 7);

/* Writes what is queued (for at most drain_ms), flushes series counts, stops. NULL is fine. */
void pk_event_poster_free(struct pk_event_poster *ev, long drain_ms);

/* Events written (created or counted in a series) and dropped so far. */
void pk_event_poster_stats(struct pk_event_poster *ev, unsigned long long *written,
                           unsigned long long *dropped);

#endif
