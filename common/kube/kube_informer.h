/*
 * kube_informer.h - a local, current view of one kind of object: list,
 * then watch from the list's resourceVersion, keep every object in an
 * in-memory store keyed "namespace/name" ("name" when cluster-scoped), and
 * tell the caller what was added, updated and deleted.
 *
 * What the caller stores is its own: a transform callback turns each
 * object into whatever compact struct the caller wants (a claim's pool
 * reference and address, not the whole JSON), and the informer keeps only
 * that, the key and the resourceVersion. Without a transform it keeps the
 * json_t itself (a reference). Lists are read page by page (page_size) and
 * each page is applied as it arrives, so only one page of JSON is in memory
 * at a time: with a 48-byte transform, an informer over 100,000 ConfigMaps
 * peaks at 35 MiB of RSS (bench/kube_bench.c), against 612 MiB storing
 * json_t.
 *
 * Freshness: pk_kube_informer_state says whether the store can be trusted.
 *   PK_KUBE_INFORMER_STARTING  nothing listed yet: the store is empty, not "no objects";
 *   PK_KUBE_INFORMER_SYNCED    a full list was applied and a watch is connected;
 *   PK_KUBE_INFORMER_STALE     the watch broke (or a relist after 410 Gone is
 *                              running): the store holds the last known state, which
 *                              may be out of date, until the watch is back.
 * pk_kube_informer_synced is true only in PK_KUBE_INFORMER_SYNCED, so a
 * caller that acts only when synced never acts on stale data as if it
 * were fresh. A relist replaces the store and reports the differences
 * (objects gone while the watch was down are reported deleted).
 *
 * Events are reported once per change of resourceVersion: an ADDED for an
 * object already stored at the same version (a watch restarted from "now",
 * a relist) is not reported again.
 *
 * Hostile objects: one object never stops the informer. An object that
 * cannot be decoded (kube_client.h: over the cap on one object, too deep, a
 * key holding "\u0000") is logged and left out of its page or passed over in
 * the watch; the store keeps the last state it knew of it (a relist does
 * not report it deleted), so the first list still completes and the
 * informer syncs. An object whose name or namespace holds a NUL is left
 * out the same way. Other string fields holding a NUL are kept as they are
 * (jansson keeps their length) and logged naming the object and the field;
 * readers that use a field as a C string read it with pk_json_cstr (json.h),
 * which treats it as invalid.
 *
 * Threading: pk_kube_informer_start runs the list/watch loop on a thread of
 * its own; every callback (transform, release, handlers) runs on that
 * thread, one at a time, in the order the server sent the changes, and
 * without the store lock held, so handlers may call the read functions.
 * The read functions (get, foreach, count, state) may be called from any
 * thread at any time; they hold a read lock while their visitor runs, so a
 * visitor must not block for long and must not keep the item pointer after
 * it returns. Items passed to handlers stay valid until the handler
 * returns. pk_kube_informer_stop and _free must not be called from a
 * callback (pk_kube_informer_stop_begin may be).
 *
 * Ownership: the informer borrows the client (which must outlive it) and
 * owns the stored items, which it hands to opts.release when they leave
 * the store.
 */
#ifndef PK_KUBE_INFORMER_H
#define PK_KUBE_INFORMER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "json.h"
#include "kube_client.h"
#include "pk.h"

struct pk_kube_informer;

enum pk_kube_informer_state {
	PK_KUBE_INFORMER_STARTING,
	PK_KUBE_INFORMER_SYNCED,
	PK_KUBE_INFORMER_STALE,
};

/* Makes the caller's item from an object (borrowed). NULL skips the object
 * (it is not stored; a stored item under its key is removed). */
typedef void *pk_kube_transform_fn(void *ud, const json_t *obj);
/* Releases an item the transform made. */
typedef void pk_kube_release_fn(void *ud, void *item);

struct pk_kube_informer_handlers {
	void (*on_add)(void *ud, const char *key, const void *item);
	void (*on_update)(void *ud, const char *key, const void *old_item, const void *new_item);
	/* item: the last state known */
	void (*on_delete)(void *ud, const char *key, const void *item);
	/* the first full list has been applied (called once per start) */
	void (*on_synced)(void *ud);
	void *ud;
};

struct pk_kube_informer_opts {
	struct pk_kube_ref ref; /* the collection: group, version, resource, namespace (NULL:
	                           all namespaces) */
	const char *label_selector;
	const char *field_selector;
	long page_size;                  /* list paging; 0: PK_KUBE_DEFAULT_PAGE */
	pk_kube_transform_fn *transform; /* NULL: store the json_t */
	pk_kube_release_fn *release;     /* NULL with a transform: free() */
	void *transform_ud;
	struct pk_kube_informer_handlers handlers;
	bool no_bookmarks;    /* do not ask for BOOKMARK events */
	long watch_timeout_s; /* 0: 300..600 s at random */
	long backoff_base_ms; /* 0: 200 */
	long backoff_max_ms;  /* 0: 30000 */
};

/* Copies opts (the strings too). */
PK_MUST_CHECK int pk_kube_informer_new(struct pk_kube_client *c,
                                       const struct pk_kube_informer_opts *opts,
                                       struct pk_kube_informer **out, struct pk_err *err);

/* Starts the list/watch thread. */
PK_MUST_CHECK int pk_kube_informer_start(struct pk_kube_informer *inf, struct pk_err *err);

/* Asks the thread to stop and returns at once; pk_kube_informer_stop then
 * waits for it. To stop several informers, begin every stop first, then
 * wait for each: the waits overlap, so the whole takes about as long as the
 * slowest one rather than their sum. The thread stops before the next
 * watch event or listed item it would apply, at once in a backoff pause,
 * within 0.1 s in the watch's reconnect pause, and within about a second
 * in a request waiting on the server (libcurl's curl_easy_perform runs the
 * abort check about once a second on an idle transfer). Until
 * pk_kube_informer_stop returns, callbacks may still run. NULL, a second
 * call, an informer never started or already stopped are all fine
 * (pk_kube_informer_start clears the request). May be called from any
 * thread, a callback included; not from a signal handler (it takes a
 * mutex). */
void pk_kube_informer_stop_begin(struct pk_kube_informer *inf);

/* Stops the thread (pk_kube_informer_stop_begin, if not done already) and
 * waits for it to end; no callback runs after it returns. The store keeps
 * its content; state becomes STALE (STARTING if it never synced). NULL or
 * an informer not running is fine. */
void pk_kube_informer_stop(struct pk_kube_informer *inf);

/* Stops if running, releases every item. NULL is fine. */
void pk_kube_informer_free(struct pk_kube_informer *inf);

enum pk_kube_informer_state pk_kube_informer_state(struct pk_kube_informer *inf);
bool pk_kube_informer_synced(struct pk_kube_informer *inf);

/* Waits until synced or timeout_ms pass (< 0: forever). Returns synced. */
bool pk_kube_informer_wait_synced(struct pk_kube_informer *inf, long timeout_ms);

/* Visits the item stored under namespace/name (namespace NULL for
 * cluster-scoped objects) under the read lock. Returns whether it exists. */
typedef void pk_kube_visit_fn(void *ud, const char *key, const void *item);
bool pk_kube_informer_get(struct pk_kube_informer *inf, const char *ns, const char *name,
                          pk_kube_visit_fn *fn, void *ud);

/* Visits every item under the read lock; returns how many. */
size_t pk_kube_informer_foreach(struct pk_kube_informer *inf, pk_kube_visit_fn *fn, void *ud);

size_t pk_kube_informer_count(struct pk_kube_informer *inf);

/* The resourceVersion the store is current to ("" before the first list). */
void pk_kube_informer_resource_version(struct pk_kube_informer *inf, char *buf, size_t len);

/* How many full lists were made (1 after start; more after 410 Gone or
 * failures). */
unsigned long pk_kube_informer_lists(struct pk_kube_informer *inf);

/*
 * How many objects (list items and watch events) were left out because
 * they could not be decoded (over the cap on one object, nested too deep,
 * a key holding "\u0000", a name or namespace that is not a plain string).
 * Each is also logged as a warning naming it. For metrics.
 */
unsigned long pk_kube_informer_skipped(struct pk_kube_informer *inf);

/* How many object versions were stored with a string field holding a NUL
 * (logged naming the object and the field; the field reads as invalid
 * through pk_json_cstr). For metrics. */
unsigned long pk_kube_informer_nul_fields(struct pk_kube_informer *inf);

#endif
