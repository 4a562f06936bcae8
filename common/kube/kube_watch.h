/*
 * kube_watch.h - streaming watches: the splitter that cuts the API
 * server's stream into one JSON event at a time, the event decoder, and a
 * watch loop that resumes from the last resourceVersion after a dropped
 * connection and reports 410 Gone so that the caller relists.
 *
 * The stream (k8s.io/apimachinery watch over JSON) is a sequence of JSON
 * objects {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}},
 * each usually followed by a newline; one network read may hold part of
 * an event or several. The splitter does not rely on the newlines: it
 * tracks braces outside strings, so an object split anywhere (inside a
 * string, after a backslash) is reassembled. Anything between objects that
 * is not whitespace is garbage and ends the stream with an error; an event
 * over the size cap likewise, unless an oversize callback is set: the event
 * is then read to its end without being kept, and the callback names it.
 *
 * One object, one event: an event whose object cannot be decoded (over the
 * cap on one object, nested too deep, a key holding "\u0000") is reported
 * and passed over, and the watch goes on from the next one; the caller keeps
 * the last state it knew of that object.
 *
 * Ownership: the splitter is the caller's (pk_kube_splitter_free). Event
 * fields are borrowed for the duration of the callback; json_incref the
 * object to keep it.
 *
 * Threading: a splitter belongs to one thread. pk_kube_watch_run blocks the
 * calling thread and calls fn on it; several watches may run on one client
 * from different threads. opts->stop may be set from any thread.
 */
#ifndef PK_KUBE_WATCH_H
#define PK_KUBE_WATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "kube.h"
#include "kube_client.h"
#include "pk.h"

/* One object (PK_KUBE_MAX_OBJECT_BYTES) and the event around it. */
#define PK_KUBE_EVENT_MAX_BYTES (PK_KUBE_MAX_OBJECT_BYTES + (64u << 10))

/* ---- splitting ---- */

struct pk_kube_splitter;

/* max_event_bytes 0: PK_KUBE_EVENT_MAX_BYTES. NULL when out of memory. */
struct pk_kube_splitter *pk_kube_splitter_new(size_t max_event_bytes);
void pk_kube_splitter_free(struct pk_kube_splitter *s);

/*
 * Called at the end of an event that passed the size cap, when set: len is
 * its size; ns, name and rv its object's metadata namespace, name and
 * resourceVersion, type the event's type, each NULL when it could not be
 * read (borrowed for the call). Returns 0 to go on, anything else to stop
 * (the feed then returns it).
 */
typedef int pk_kube_oversize_fn(void *ud, size_t len, const char *type, const char *ns,
                                const char *name, const char *rv);

/* Sets the oversize callback (NULL: an event over the cap is an error, PK_ERR_TOO_BIG). */
void pk_kube_splitter_on_oversize(struct pk_kube_splitter *s, pk_kube_oversize_fn *fn, void *ud);

/* Forgets any partial event (a new connection starts clean). */
void pk_kube_splitter_reset(struct pk_kube_splitter *s);

/* Called with the text of one whole top-level JSON object (len bytes, NUL
 * after them); returns 0 to go on, anything else to stop. */
typedef int pk_kube_text_fn(void *ud, const char *text, size_t len);

/*
 * Feeds len bytes. Returns PK_OK when all were consumed; the callback's
 * non-zero value when it asked to stop; PK_ERR_INVALID on garbage between
 * objects; PK_ERR_TOO_BIG when an event passes the cap (or, without an
 * oversize callback, its nesting the depth cap; with one, past 256 MiB);
 * PK_ERR_NOMEM when memory runs out.
 * After an error, reset before feeding again.
 */
PK_MUST_CHECK int pk_kube_splitter_feed(struct pk_kube_splitter *s, const char *data, size_t len,
                                        pk_kube_text_fn *fn, void *ud, struct pk_err *err);

/* Bytes of an unfinished event held. */
size_t pk_kube_splitter_pending(const struct pk_kube_splitter *s);

/* ---- events ---- */

enum pk_kube_event_type {
	PK_KUBE_EVENT_ADDED,
	PK_KUBE_EVENT_MODIFIED,
	PK_KUBE_EVENT_DELETED,
	PK_KUBE_EVENT_BOOKMARK,
	PK_KUBE_EVENT_ERROR,
};

struct pk_kube_event {
	enum pk_kube_event_type type;
	const json_t *object;         /* the object (a Status for ERROR); borrowed */
	const char *resource_version; /* object.metadata.resourceVersion or NULL; borrowed */
	struct pk_kube_error error;   /* ERROR only: the Status decoded (410 is PK_KUBE_GONE) */
};

/* "ADDED", ... */
const char *pk_kube_event_type_name(enum pk_kube_event_type t);

/*
 * Decodes one event's text. *root gets the parsed value the event borrows
 * from (the caller json_decrefs it, also on failure). PK_ERR_INVALID when
 * it is not an event (no known type, object not an object); PK_ERR_TOO_BIG
 * when the object is nested deeper than max_depth (0: PK_KUBE_JSON_MAX_DEPTH;
 * the event around it is one level more). When the text is not JSON at
 * all, *root is NULL; when it is JSON but not an event, it is not.
 */
PK_MUST_CHECK int pk_kube_event_decode(const char *text, size_t len, unsigned max_depth,
                                       struct pk_kube_event *ev, json_t **root, struct pk_err *err);

/* ---- the watch loop ---- */

/* Called with each event; returns 0 to go on, anything else to stop. */
typedef int pk_kube_watch_fn(void *ud, const struct pk_kube_event *ev);

/*
 * Called with true once a watch connection is known good: its first event
 * (BOOKMARK included) arrived, or it has been open a second without an
 * ERROR (a 410 for a stale resourceVersion comes at once, inside the 200
 * answer). Called with false when a connection fails; a clean end (the
 * server's timeoutSeconds) is not reported, as the watch resumes at once
 * from a current resourceVersion.
 */
typedef void pk_kube_watch_state_fn(void *ud, bool connected);

struct pk_kube_watch_opts {
	const char *label_selector;
	const char *field_selector;
	const char *resource_version; /* start after this version; NULL: now, with synthetic ADDED
	                                 events for what exists */
	bool bookmarks;               /* allowWatchBookmarks=true */
	long timeout_s;               /* server ends each connection after it; 0: 300..600 s at
	                                 random, as client-go's reflector */
	size_t max_event_bytes;       /* 0: PK_KUBE_EVENT_MAX_BYTES */
	long backoff_base_ms;         /* reconnect delay after a failure; 0: 200 */
	long backoff_max_ms;          /* 0: 30000 */
	const atomic_int *stop;       /* set (non-zero) to end the watch; may be NULL */
	pk_kube_watch_state_fn *on_state; /* may be NULL */
	pk_kube_skip_fn *on_skip;         /* each event passed over because its object cannot be
	                                     decoded (kube.h); may be NULL: each is logged anyway */
	void *skip_ud;
};

/*
 * Watches the collection r (name and subresource ignored) until stopped or
 * a failure a reconnect cannot fix, calling fn for ADDED, MODIFIED, DELETED
 * and BOOKMARK events (never ERROR: those are handled here). The last
 * resourceVersion seen is kept and used to resume after the stream ends or
 * breaks, so nothing is missed. Returns:
 *   PK_KUBE_GONE       a 410 (HTTP, or an ERROR event): the version is too old, relist;
 *   PK_KUBE_CANCELLED  *opts->stop was set or fn returned non-zero;
 *   any other reason   the server refused the watch (403, 404, ...).
 * Connection failures, 5xx, 429 and garbage in the stream are retried with
 * backoff and logged through the client's log callback. An event whose
 * object cannot be decoded is logged, handed to opts->on_skip and passed
 * over (its resourceVersion, when readable, still counts as seen), so one
 * such object never makes the watch reconnect to it for ever. rv_out (may
 * be NULL) gets the last resourceVersion seen.
 */
PK_MUST_CHECK enum pk_kube_reason pk_kube_watch_run(struct pk_kube_client *c,
                                                    const struct pk_kube_ref *r,
                                                    const struct pk_kube_watch_opts *opts,
                                                    pk_kube_watch_fn *fn, void *ud, char *rv_out,
                                                    size_t rv_len, struct pk_kube_error *e);

#endif
