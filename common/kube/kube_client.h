/*
 * kube_client.h - requests to the Kubernetes API: get, list (paged),
 * create, update, patch, delete, the status subresource, discovery, and
 * the raw streaming GET the watch is built on.
 *
 * Behaviour a caller can count on (client-go's, where operators notice):
 *   - Client-side rate limit: a token bucket of opts.qps / opts.burst
 *     (defaults 20 / 30) in front of every request, retries included.
 *   - Retries with exponential backoff and jitter, only where repeating
 *     cannot do harm: a 429 (any verb) waits Retry-After (or the Status's
 *     details.retryAfterSeconds, else 1 s); a 5xx with Retry-After (any
 *     verb: the server says it did not act); a 5xx without it, a reset or
 *     empty answer, or a client timeout only for GET; "connection refused"
 *     for any verb, since nothing was sent. A 401 with a token file or exec
 *     plugin re-reads the credential and tries once more.
 *   - Every response body is capped (opts.max_response_bytes): a larger one
 *     is PK_KUBE_TOO_LARGE, never a crash. JSON is parsed with a nesting cap.
 *   - Lists are decoded object by object, each checked against the caps on
 *     one object (opts.max_object_bytes, opts.max_json_depth; kube.h says
 *     how they follow the API server's own limits): an object that cannot
 *     be decoded (too large, too deep, a key holding "\u0000") is reported
 *     through the log and o->on_skip and left out of the page, and the
 *     others arrive. A page over max_response_bytes is fetched again with
 *     half the limit, down to 1; a single object over its cap is read to
 *     its end without being kept (its name and the page's continue token
 *     are picked out as it streams by), reported and skipped.
 *   - Connections and TLS sessions are reused: finished requests hand their
 *     curl handle (and its open connection) back to a pool; a curl share
 *     handle holds DNS and TLS sessions for all of them. HTTP/2 is used when
 *     the server offers it in ALPN (the API server does).
 *   - Failures come back as enum pk_kube_reason with the server's Status
 *     decoded into struct pk_kube_error (see kube.h).
 *   - Trust, as client-go: a CA the config names (certificate-authority,
 *     certificate-authority-data, the in-cluster ca.crt) is the only root
 *     trusted; libcurl's system paths (CAINFO, CAPATH) and the OS store are
 *     then off. The system roots are used only when no CA is named. A
 *     certificate that does not verify is PK_KUBE_CONNECTION, not retried.
 *     insecure-skip-tls-verify turns verification off (and is logged).
 *   - The first pk_kube_client_new of the process removes SSLKEYLOGFILE
 *     from the environment before curl_global_init, which would otherwise
 *     write every TLS session key to that file (logged once as a warning).
 *     Like curl_global_init, it must run before other threads start.
 *
 * Ownership: the client borrows the config, which must outlive it. JSON
 * values passed in are borrowed; every json_t ** result is a new reference
 * the caller json_decrefs (NULL on failure). struct pk_kube_error is the
 * caller's (usually on the stack) and may be NULL.
 *
 * Threading: every function may be called from any number of threads at
 * once on one client (a mutex guards the handle pool; curl's share handle
 * has its own locks). pk_kube_client_free must not race with requests.
 */
#ifndef PK_KUBE_CLIENT_H
#define PK_KUBE_CLIENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "kube.h"
#include "kube_config.h"
#include "pk.h"

#define PK_KUBE_DEFAULT_TIMEOUT_MS   30000
#define PK_KUBE_DEFAULT_CONNECT_MS   10000
#define PK_KUBE_DEFAULT_MAX_RESPONSE (16u << 20)
#define PK_KUBE_DEFAULT_RETRIES      5
#define PK_KUBE_DEFAULT_PAGE         500

struct pk_kube_client;

struct pk_kube_client_opts {
	double qps;                /* 0: 20; < 0: no client-side limit */
	int burst;                 /* 0: 30 */
	long timeout_ms;           /* whole request; 0: PK_KUBE_DEFAULT_TIMEOUT_MS */
	long connect_timeout_ms;   /* 0: PK_KUBE_DEFAULT_CONNECT_MS */
	size_t max_response_bytes; /* one response (a page: at least max_object_bytes + 64 KiB);
	                              0: PK_KUBE_DEFAULT_MAX_RESPONSE */
	size_t max_object_bytes;   /* one object of a list or watch; 0: PK_KUBE_MAX_OBJECT_BYTES */
	unsigned max_json_depth;   /* one object's nesting; 0: PK_KUBE_JSON_MAX_DEPTH */
	int max_retries;           /* 0: PK_KUBE_DEFAULT_RETRIES; < 0: never retry */
	long backoff_base_ms;      /* first retry delay; 0: 200 */
	long backoff_max_ms;       /* 0: 10000 */
	long retry_after_max_s;    /* longest Retry-After honoured; 0: 60 */
	const char *user_agent;    /* 0: "poolkeeper/<version>" */
	const struct pk_kube_log *log; /* NULL: the config's */
};

/* Which object or collection a request is about. */
struct pk_kube_ref {
	const char *group;       /* NULL or "": the core group (/api/v1) */
	const char *version;     /* "v1", "v1beta2", ... */
	const char *resource;    /* plural, lower case: "configmaps", "ipaddressclaims" */
	const char *namespace;   /* NULL: cluster-scoped, or all namespaces for list/watch */
	const char *name;        /* NULL for collections (list, create, watch) */
	const char *subresource; /* NULL or "status", ... */
	long timeout_ms;         /* this call only; 0: the client's */
};

/* Takes the config (borrowed; must outlive the client). */
PK_MUST_CHECK int pk_kube_client_new(struct pk_kube_config *cfg,
                                     const struct pk_kube_client_opts *opts,
                                     struct pk_kube_client **out, struct pk_err *err);

/* NULL is fine. No request may be running. */
void pk_kube_client_free(struct pk_kube_client *c);

struct pk_kube_config *pk_kube_client_config(const struct pk_kube_client *c);

/* The log callback the client reports through (borrowed). */
const struct pk_kube_log *pk_kube_client_log(const struct pk_kube_client *c);

/*
 * Requests answered so far, by HTTP method and status code (code 0: no
 * answer, a transport failure), each retry counted: for metrics. fn is
 * called once per (method, code) seen, under the client's stats lock, so it
 * must not call the client. At most PK_KUBE_STATS_MAX pairs are kept; later
 * new pairs count under code -1.
 */
#define PK_KUBE_STATS_MAX 64
typedef void pk_kube_stats_fn(void *ud, const char *method, long code, unsigned long long n);
void pk_kube_client_request_stats(struct pk_kube_client *c, pk_kube_stats_fn *fn, void *ud);

/* ---- reads ---- */

PK_MUST_CHECK enum pk_kube_reason pk_kube_client_get(struct pk_kube_client *c,
                                                     const struct pk_kube_ref *r, json_t **out,
                                                     struct pk_kube_error *e);

struct pk_kube_list_opts {
	const char *label_selector;   /* "app=x,tier!=db" */
	const char *field_selector;   /* "metadata.name=x" */
	long limit;                   /* page size; 0: no paging (list_all: PK_KUBE_DEFAULT_PAGE) */
	const char *continue_token;   /* from the previous page's metadata.continue */
	const char *resource_version; /* NULL: most recent; "0": any, from the watch cache */
	const atomic_int *stop;       /* set from another thread: give up (PK_KUBE_CANCELLED)
	                                 between pages, retries, or within a second mid-request */
	pk_kube_skip_fn *on_skip;     /* each object left out (kube.h); may be NULL: the client
	                                 logs every one as a warning either way */
	void *skip_ud;
};

/* One page: the List object as served, less the objects that could not be decoded (see
 * above). A page over max_response_bytes is PK_KUBE_TOO_LARGE, except with limit 1. */
PK_MUST_CHECK enum pk_kube_reason pk_kube_client_list(struct pk_kube_client *c,
                                                      const struct pk_kube_ref *r,
                                                      const struct pk_kube_list_opts *o,
                                                      json_t **out, struct pk_kube_error *e);

/*
 * Every page, o->limit (0: PK_KUBE_DEFAULT_PAGE) objects at a time, as one
 * List: the first page's object with the items of all pages and no
 * metadata.continue. Its metadata.resourceVersion is the snapshot the pages
 * were read at, the one to start a watch from. When a continue token expires
 * mid-way (410), it lists again in one request, as client-go's pager does
 * (and page by page from the start when that one is too large). A page too
 * large is read again in pages of half the limit, down to 1; the smaller
 * limit is kept for the pages after it.
 */
PK_MUST_CHECK enum pk_kube_reason pk_kube_client_list_all(struct pk_kube_client *c,
                                                          const struct pk_kube_ref *r,
                                                          const struct pk_kube_list_opts *o,
                                                          json_t **out, struct pk_kube_error *e);

/* Called with each page (borrowed: json_incref to keep it); returns 0 to go
 * on, anything else to stop (the listing then ends PK_KUBE_CANCELLED). */
typedef int pk_kube_page_fn(void *ud, const json_t *page);

/*
 * Every page, o->limit (0: PK_KUBE_DEFAULT_PAGE) objects at a time, handed
 * to fn one by one so that only one page is in memory: what an informer
 * with a compact store needs for 100,000 objects. rv (may be NULL) gets the
 * first page's resourceVersion. A continue token that expires mid-way is
 * PK_KUBE_GONE: the pages seen so far were of a snapshot that is gone, and
 * the caller starts over. Pages too large are read again smaller, as
 * pk_kube_client_list_all does.
 */
PK_MUST_CHECK enum pk_kube_reason pk_kube_client_list_pages(struct pk_kube_client *c,
                                                            const struct pk_kube_ref *r,
                                                            const struct pk_kube_list_opts *o,
                                                            pk_kube_page_fn *fn, void *ud, char *rv,
                                                            size_t rv_len, struct pk_kube_error *e);

/* ---- writes ---- */

struct pk_kube_write_opts {
	const char *field_manager; /* ?fieldManager= ; required for apply patches */
	bool dry_run;              /* ?dryRun=All */
	bool force;                /* apply patches: take over conflicting fields */
};

/* POST to the collection (r->name is ignored). 409 AlreadyExists is PK_KUBE_ALREADY_EXISTS. */
PK_MUST_CHECK enum pk_kube_reason
pk_kube_client_create(struct pk_kube_client *c, const struct pk_kube_ref *r, const json_t *obj,
                      const struct pk_kube_write_opts *w, json_t **out, struct pk_kube_error *e);

/*
 * PUT of the whole object (r->subresource "status" for the status). The
 * object's metadata.resourceVersion makes it conditional: a stale one is
 * PK_KUBE_CONFLICT. r->name NULL: the object's metadata.name.
 */
PK_MUST_CHECK enum pk_kube_reason
pk_kube_client_update(struct pk_kube_client *c, const struct pk_kube_ref *r, const json_t *obj,
                      const struct pk_kube_write_opts *w, json_t **out, struct pk_kube_error *e);

enum pk_kube_patch_type {
	PK_KUBE_PATCH_MERGE,     /* application/merge-patch+json (RFC 7386) */
	PK_KUBE_PATCH_JSON,      /* application/json-patch+json (RFC 6902); patch is an array */
	PK_KUBE_PATCH_STRATEGIC, /* application/strategic-merge-patch+json (built-in kinds only) */
	PK_KUBE_PATCH_APPLY, /* application/apply-patch+yaml: server-side apply (JSON is YAML) */
};

PK_MUST_CHECK enum pk_kube_reason
pk_kube_client_patch(struct pk_kube_client *c, const struct pk_kube_ref *r,
                     enum pk_kube_patch_type type, const json_t *patch,
                     const struct pk_kube_write_opts *w, json_t **out, struct pk_kube_error *e);

struct pk_kube_delete_opts {
	const char *propagation;      /* NULL, "Foreground", "Background" or "Orphan" */
	const char *uid;              /* precondition: delete only this incarnation */
	const char *resource_version; /* precondition: delete only this version */
	long grace_period_s;          /* used when has_grace_period */
	bool has_grace_period;
	bool dry_run;
};

/* A failed precondition is PK_KUBE_CONFLICT. out (may be NULL) gets what the
 * server returned: the object (still terminating) or a Status. */
PK_MUST_CHECK enum pk_kube_reason pk_kube_client_delete(struct pk_kube_client *c,
                                                        const struct pk_kube_ref *r,
                                                        const struct pk_kube_delete_opts *d,
                                                        json_t **out, struct pk_kube_error *e);

/* ---- discovery ---- */

/*
 * The versions of `group` the server serves ("" or NULL: the core group),
 * as a JSON array of strings with the preferred version first. A group the
 * server does not know is PK_KUBE_NOT_FOUND.
 */
PK_MUST_CHECK enum pk_kube_reason pk_kube_client_group_versions(struct pk_kube_client *c,
                                                                const char *group,
                                                                json_t **versions,
                                                                struct pk_kube_error *e);

/*
 * Which of `versions` (NULL-terminated, the most wanted first) the server
 * serves for `group` ("" or NULL: the core group), copied into out (len
 * bytes): the first one listed that the group's discovery document names
 * anywhere. The server's own preferredVersion does not change the order:
 * {"v1beta2", "v1beta1", NULL} picks v1beta2 whenever it is served.
 *   - PK_KUBE_OK, out = that version.
 *   - PK_KUBE_OK, out = "": the group is served, but in none of `versions`.
 *     Not a failure: the caller picks a fallback or gives up.
 *   - PK_KUBE_NOT_FOUND: the server does not know the group (404); e has
 *     the server's words.
 *   - Any other failure of the discovery request, as
 *     pk_kube_client_group_versions reports it.
 *   - PK_KUBE_BAD_REQUEST, before anything is sent: versions NULL or empty,
 *     an empty version, out NULL, or len too small for the longest of
 *     `versions` (so a short buffer fails on every cluster, not only on one
 *     that serves the long name).
 * out is "" whenever the result is not PK_KUBE_OK (when out and len allow).
 * versions and its strings are borrowed.
 */
PK_MUST_CHECK enum pk_kube_reason pk_kube_client_preferred_version(struct pk_kube_client *c,
                                                                   const char *group,
                                                                   const char *const *versions,
                                                                   char *out, size_t len,
                                                                   struct pk_kube_error *e);

/* ---- lower level ---- */

/*
 * Any request: method ("GET", "POST", ...), a path with query relative to
 * the server ("/api/v1/namespaces"), an optional body. Same limits, rate
 * limit and retry rules as above. out may be NULL.
 */
PK_MUST_CHECK enum pk_kube_reason pk_kube_client_request(struct pk_kube_client *c,
                                                         const char *method, const char *path,
                                                         const char *content_type, const char *body,
                                                         size_t body_len, long timeout_ms,
                                                         json_t **out, struct pk_kube_error *e);

/*
 * pk_kube_client_request with a deadline instead of a timeout: deadline_ns (the clock of
 * pk_kube_now_ns) bounds the whole call: the wait for the client rate limit, each attempt
 * (its timeout is cut to what is left) and the pauses before retries. A call that cannot end
 * by then is PK_KUBE_TIMEOUT, and a rate-limit token it would have waited past the deadline
 * for is not taken. deadline_ns <= 0: no deadline.
 */
PK_MUST_CHECK enum pk_kube_reason
pk_kube_client_request_by(struct pk_kube_client *c, const char *method, const char *path,
                          const char *content_type, const char *body, size_t body_len,
                          long long deadline_ns, json_t **out, struct pk_kube_error *e);

/* Called with each piece of a streamed 200 answer as it arrives; returns 0
 * to go on, anything else to stop (the stream then ends PK_KUBE_CANCELLED).
 * Called once with (NULL, 0) when the 200 answer's headers have arrived, and
 * with ("", 0) about once a second while it stays open (a quiet watch). */
typedef int pk_kube_stream_fn(void *ud, const char *data, size_t len);

/*
 * A GET whose 200 answer is handed to fn piece by piece until the server
 * ends it, with no overall timeout (a watch). Any other answer is decoded
 * as an error. *stop (may be NULL), set from another thread, ends it within
 * about a second (PK_KUBE_CANCELLED). Rate limited like other requests, not
 * retried: the watch decides what to do.
 */
PK_MUST_CHECK enum pk_kube_reason pk_kube_client_stream(struct pk_kube_client *c, const char *path,
                                                        pk_kube_stream_fn *fn, void *ud,
                                                        const atomic_int *stop,
                                                        struct pk_kube_error *e);

/* ---- paths, queries, retry pacing (exposed for tests and the watch) ---- */

/*
 * Writes the path of r ("/apis/<group>/<version>/namespaces/<ns>/<resource>
 * /<name>/<subresource>"), each segment percent-encoded, into buf. Refuses
 * (PK_ERR_INVALID) missing version or resource, empty, "." or ".." segments;
 * PK_ERR_TOO_BIG when buf is too small.
 */
PK_MUST_CHECK int pk_kube_ref_path(const struct pk_kube_ref *r, char *buf, size_t len);

/* Appends "?key=value" or "&key=value" (value percent-encoded) to the
 * NUL-terminated buf. PK_ERR_TOO_BIG when it does not fit. */
PK_MUST_CHECK int pk_kube_query_add(char *buf, size_t len, const char *key, const char *value);

/* "ns/name" of an object that could not be decoded, each part quoted (pk_text_quote), for a
 * message: "name" when ns is NULL, "(name unreadable)" for a NULL name. */
void pk_kube_quote_object(const char *ns, const char *name, char *buf, size_t len);

/* Sleeps ns in steps of at most 100 ms, returning early once *stop (may be NULL) is set: the
 * pause before a retry or a reconnect. */
void pk_kube_nap(const atomic_int *stop, long long ns);

/* Exponential backoff with jitter for retry `attempt` (0-based): a random
 * delay in [d/2, d] where d = min(base << attempt, max). */
long long pk_kube_backoff_ns(unsigned attempt, long base_ms, long max_ms);

#endif
