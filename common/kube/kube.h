/*
 * kube.h - what every part of poolkeeper's Kubernetes client shares: the
 * error classes a caller switches on, the decoding of the API's
 * metav1.Status into them, the log callback, and bounded JSON parsing of
 * what the server sends.
 *
 * The client never writes to stderr or a log file itself. Daemons have
 * their own log module; they hand the client a struct pk_kube_log and get
 * every warning (insecure-skip-tls-verify, retries, relists) through it.
 *
 * Threading: everything here is reentrant and keeps no globals.
 */
#ifndef PK_KUBE_H
#define PK_KUBE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "base64.h"
#include "json.h"
#include "pk.h"

/* ---- logging through the caller ---- */

enum pk_kube_level {
	PK_KUBE_LOG_DEBUG = 0,
	PK_KUBE_LOG_INFO = 1,
	PK_KUBE_LOG_WARN = 2,
	PK_KUBE_LOG_ERROR = 3,
};

/* Called with one line of text (no newline); msg is valid during the call. May be called from
 * any thread the client runs on, so it must be thread-safe. */
typedef void pk_kube_log_fn(void *ud, enum pk_kube_level level, const char *msg);

struct pk_kube_log {
	pk_kube_log_fn *fn; /* NULL: messages are dropped */
	void *ud;
	enum pk_kube_level min_level; /* messages below it are not even formatted */
};

/* Formats and passes one message to log->fn. log may be NULL. */
void pk_kube_logf(const struct pk_kube_log *log, enum pk_kube_level level, const char *fmt, ...)
    PK_PRINTF(3, 4);

/* ---- errors ---- */

/*
 * What went wrong with a request, as a caller decides what to do next.
 * PK_KUBE_OK is 0; every other value is a failure. The classes follow
 * k8s.io/apimachinery/pkg/api/errors (IsNotFound, IsConflict, ...).
 */
enum pk_kube_reason {
	PK_KUBE_OK = 0,
	PK_KUBE_NOT_FOUND,      /* 404, reason NotFound */
	PK_KUBE_ALREADY_EXISTS, /* 409, reason AlreadyExists (create of an existing name) */
	PK_KUBE_CONFLICT,    /* 409, reason Conflict (stale resourceVersion, failed precondition) */
	PK_KUBE_INVALID,     /* 422, reason Invalid (validation) */
	PK_KUBE_BAD_REQUEST, /* 400 */
	PK_KUBE_UNAUTHORIZED,       /* 401: no or bad credentials */
	PK_KUBE_FORBIDDEN,          /* 403: RBAC or an admission webhook said no */
	PK_KUBE_METHOD_NOT_ALLOWED, /* 405 */
	PK_KUBE_TOO_MANY_REQUESTS,  /* 429 after the retries ran out */
	PK_KUBE_GONE,    /* 410, reasons Gone or Expired: resourceVersion too old, relist */
	PK_KUBE_TIMEOUT, /* 504/408, reasons Timeout/ServerTimeout, or the client's own timeout */
	PK_KUBE_SERVER_ERROR, /* other 5xx */
	PK_KUBE_CONNECTION,   /* no HTTP answer: refused, reset, DNS, TLS handshake */
	PK_KUBE_TOO_LARGE,    /* the response passed the configured size or depth cap */
	PK_KUBE_BAD_RESPONSE, /* the body was not the JSON it should be */
	PK_KUBE_CONFIG,       /* local problem: credentials could not be obtained */
	PK_KUBE_NOMEM,        /* allocation failed */
	PK_KUBE_CANCELLED,    /* the caller asked to stop */
	PK_KUBE_UNKNOWN,      /* any other HTTP status */
};

#define PK_KUBE_REASON_MAX 64

struct pk_kube_error {
	enum pk_kube_reason reason;
	long code;                              /* HTTP status; 0 when there was no answer */
	char status_reason[PK_KUBE_REASON_MAX]; /* Status.reason as the server sent it, or "" */
	char message[PK_ERR_MSG_MAX];           /* Status.message, or the client's own words */
	long retry_after_s; /* Retry-After or details.retryAfterSeconds; 0 when absent */
};

/* "NotFound", "Conflict", ...: a stable name for logs. */
const char *pk_kube_reason_name(enum pk_kube_reason r);

/* Sets e (when not NULL) to reason/code with a formatted message; returns r. */
enum pk_kube_reason pk_kube_error_set(struct pk_kube_error *e, enum pk_kube_reason r, long code,
                                      const char *fmt, ...) PK_PRINTF(4, 5);

/*
 * Decodes a failed answer: `code` is the HTTP status, `body` (len bytes,
 * need not be NUL-terminated, may be NULL) what came with it. A metav1.Status
 * body gives reason, message and details.retryAfterSeconds; anything else
 * is classified by the status code alone and quoted in the message. Pure.
 * Returns the class (PK_KUBE_OK only for 2xx codes).
 */
enum pk_kube_reason pk_kube_status_decode(long code, const char *body, size_t len,
                                          struct pk_kube_error *e);

/* The same for a Status object already parsed (an ERROR watch event). */
enum pk_kube_reason pk_kube_status_decode_json(long code, const json_t *status,
                                               struct pk_kube_error *e);

/* ---- bounded JSON ---- */

/*
 * Caps on one API object, as the API server bounds it (the figures and
 * their sources are in docs/client.md):
 *   - bytes: the API server refuses request bodies over 3 MiB
 *     (MaxRequestBodyBytes, "2x" etcd's 1.5 MiB request limit), and etcd
 *     refuses to store an object over about 1.5 MiB, so no object is served
 *     larger than PK_KUBE_MAX_OBJECT_BYTES unless etcd's limit was raised;
 *   - nesting: Go's encoding/json stops at 10,000 levels and jansson's parser
 *     at 2,048; schema-validated fields are a few levels deep, only
 *     free-form fields (x-kubernetes-preserve-unknown-fields) nest further.
 * A list page or a watch event is checked object by object against these:
 * one object over a cap is reported and skipped, the others still arrive.
 */
#define PK_KUBE_MAX_OBJECT_BYTES (3u << 20)
#define PK_KUBE_JSON_MAX_DEPTH   1024

/*
 * Parses len bytes of JSON into *out (the caller json_decrefs it). Before
 * jansson sees the text, a scan refuses nesting deeper than max_depth
 * (0: PK_KUBE_JSON_MAX_DEPTH) so hostile input cannot exhaust the stack.
 * Strings may hold "\u0000" (JSON_ALLOW_NUL: the API server accepts it in
 * any string); read fields used as C strings with pk_json_cstr (json.h).
 * Object keys holding "\u0000" are still refused (jansson cannot keep
 * them). Returns PK_OK, PK_ERR_TOO_BIG when the depth cap is hit,
 * PK_ERR_INVALID for bad JSON; err says where.
 */
PK_MUST_CHECK int pk_kube_json_parse(const char *buf, size_t len, unsigned max_depth, json_t **out,
                                     struct pk_err *err);

/*
 * Called for each object of a list page or watch stream that cannot be
 * decoded (larger than the per-object cap, nested deeper than the depth
 * cap, a key holding "\u0000", not JSON): ns and name as far as they could
 * be read from its text (NULL when not), why in words. All borrowed for
 * the call.
 */
typedef void pk_kube_skip_fn(void *ud, const char *ns, const char *name, const char *why);

/*
 * Decodes one List page's text object by object: each member of "items"
 * is checked against max_object_bytes (0: PK_KUBE_MAX_OBJECT_BYTES) and
 * max_depth (0: PK_KUBE_JSON_MAX_DEPTH) and parsed on its own, so one
 * object that cannot be decoded is handed to skip (may be NULL) and left
 * out, and the others arrive. *out gets the List with the decoded items.
 * PK_ERR_INVALID (err says where) when the text is not a JSON object or
 * its other members are not JSON; a List without "items" decodes as it
 * is. Pure.
 */
PK_MUST_CHECK int pk_kube_list_decode(const char *buf, size_t len, size_t max_object_bytes,
                                      unsigned max_depth, pk_kube_skip_fn *skip, void *ud,
                                      json_t **out, struct pk_err *err);

/*
 * A scanner fed a JSON text in pieces that keeps nothing of it but the
 * string values at a few member paths: how an object too large or too
 * deep to decode is still named, and a list page's continue token read
 * past it, in constant memory. A path is dotted member names; "*" matches
 * any item of an array ("items.*.metadata.name"). Values longer than
 * PK_KUBE_SCAN_VALUE_MAX bytes, or holding a NUL, are not kept.
 */
#define PK_KUBE_SCAN_PATHS     6
#define PK_KUBE_SCAN_VALUE_MAX 2048
struct pk_kube_scan;

/* paths: n (at most PK_KUBE_SCAN_PATHS) dotted paths, copied. NULL when out of memory or
 * when a path has more than 4 parts. */
struct pk_kube_scan *pk_kube_scan_new(const char *const *paths, size_t n);
void pk_kube_scan_free(struct pk_kube_scan *s);
void pk_kube_scan_feed(struct pk_kube_scan *s, const char *data, size_t len);
/* Forgets what was fed (the paths stay). */
void pk_kube_scan_reset(struct pk_kube_scan *s);
/* The first string value seen at path i (decoded), or NULL. */
const char *pk_kube_scan_value(const struct pk_kube_scan *s, size_t i);
/* Bytes fed so far. */
size_t pk_kube_scan_bytes(const struct pk_kube_scan *s);

/*
 * Names the object in a text that could not be decoded, for a report:
 * "namespace/name", "name", or "" when neither can be read. prefix is
 * the path to the object ("" for an object, "object" for a watch event).
 * buf of PK_KUBE_IDENT_MAX bytes always suffices.
 */
#define PK_KUBE_IDENT_MAX 600
void pk_kube_object_ident(const char *text, size_t len, const char *prefix, char *buf,
                          size_t buflen);

/* ---- small helpers shared by the modules ---- */

/* Monotonic clock in nanoseconds. */
long long pk_kube_now_ns(void);

/* Sleeps for ns nanoseconds (EINTR resumes). */
void pk_kube_sleep_ns(long long ns);

#endif
