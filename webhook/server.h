/*
 * server.h - poolkeeper-webhook's listeners, all pk_httpd listeners
 * (common/runtime/httpd.h) on libmicrohttpd:
 *
 *   webhook  HTTPS (GnuTLS, TLS 1.2 and 1.3), POST /validate and /mutate,
 *            a thread pool, keep-alive, capped connections and memory;
 *   health   plain HTTP, GET /healthz and /readyz;
 *   metrics  plain HTTP, GET /metrics (Prometheus text).
 *
 * Bad input never reaches the admission module unbounded: a body without
 * Content-Length gets 411; bodies over PK_ADMISSION_MAX_BODY get 413 (read
 * and discarded up to PK_SERVER_DISCARD_MAX first, so a client that sends
 * everything before reading still sees the status; beyond that the
 * connection is closed); bodies over PK_SERVER_SMALL_BODY share
 * PK_SERVER_LARGE_BODIES (503 past it); a body whose parse would hold more
 * than PK_SERVER_PARSE_BUDGET gets 413.
 *
 * Deadlines (absolute, kept by the listener module, not reset by bytes):
 * PK_SERVER_HEADER_TIMEOUT (5 s, or `request_timeout` when shorter) from
 * accept to the first request's headers, the TLS handshake included; a
 * body within the listener's body deadline (2 s plus a second per 64 KiB
 * announced, PK_HTTPD_BODY_*); twice `request_timeout` (10 s) from a
 * request's headers to its answer sent (a body still arriving at
 * request_timeout is discarded and answered 408 once its last byte is in:
 * libmicrohttpd cannot answer before it has read the body);
 * `idle_timeout` (120 s) from an answer to the next request's headers on a
 * kept-alive connection, longer than the apiserver's 90 s idle time.
 *
 * The caller (client_auth.h): with `client_auth` set, every TLS session is
 * asked for a client certificate, and a request whose certificate is
 * missing (when required) or not valid is answered 401 (403 for a subject
 * not allowed) with "Connection: close" as soon as its headers are in: its
 * body is never read, no lookup runs, no review is answered.
 *
 * Fairness (the listener module's, httpd.h): at most
 * `max_connections_per_source` connections from one IP address, stalled
 * connections evicted before idle kept-alive ones (then the busiest
 * source's first), and one memory budget for the connections' headers and
 * bodies. The reviews themselves run on `review_threads` threads of their
 * own (fair_pool.h), never on the listener's: each waits in its source's
 * line, the connection suspended, and the source served least recently
 * goes next, so one client's flood of reviews (each perhaps waiting for a
 * permission lookup) keeps neither the listener nor the apiserver's
 * reviews waiting behind it. A review that waited past `request_timeout`
 * is answered 503 unreviewed, and so is the newest review of the source
 * whose waiting reviews hold most once all of them hold more than
 * PK_SERVER_WAITING_BYTES.
 */
#ifndef PK_WEBHOOK_SERVER_H
#define PK_WEBHOOK_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "admission.h"
#include "client_auth.h"
#include "metrics.h"
#include "parse.h"
#include "pk.h"
#include "serving_cert.h"

/* Bodies between PK_ADMISSION_MAX_BODY and this are read and discarded before the 413. */
#define PK_SERVER_DISCARD_MAX (16u * 1024u * 1024u)
/*
 * The memory jansson may hold at once to parse one request body; a body
 * that needs more is answered 413 naming this limit. An UPDATE review of
 * 2.8 MB carrying two 1.4 MB annotations peaks at 4.9 MB; values of a few
 * bytes each take about ten times their text (a million empty objects in
 * 3 MB would take 216 MB).
 */
#define PK_SERVER_PARSE_BUDGET (8u * 1024u * 1024u)
/*
 * Bodies larger than PK_SERVER_SMALL_BODY (an ordinary review is a few KiB)
 * together hold at most PK_SERVER_LARGE_BODIES bytes; one that would go
 * past it is answered 503 before its body is read. Small bodies are never
 * refused for this, so a flood of large ones cannot shut out the rest.
 */
#define PK_SERVER_SMALL_BODY   (64u * 1024u)
#define PK_SERVER_LARGE_BODIES (12u * 1024u * 1024u)
/* Accept to the first request's headers, at most (the apiserver sends them at once). */
#define PK_SERVER_HEADER_TIMEOUT 5
/* Review threads by default: two per core (a review may wait up to the lookup deadline),
 * at most PK_SERVER_REVIEWERS_MAX. */
#define PK_SERVER_REVIEWERS_PER_CORE 2
#define PK_SERVER_REVIEWERS_MAX      32
/* Bytes the reviews waiting for a review thread may hold, their bodies included; past it the
 * newest review of the source holding most is answered 503 at once. */
#define PK_SERVER_WAITING_BYTES (16u * 1024u * 1024u)

struct pk_server_config {
	struct pk_hostport webhook_address; /* port 0: any free port (see pk_server_port) */
	struct pk_hostport health_address;
	struct pk_hostport metrics_address;
	bool metrics_off;                    /* no metrics listener */
	unsigned threads;                    /* webhook thread pool; 0: one per core */
	unsigned review_threads;             /* threads that run reviews; 0: the default */
	unsigned max_connections;            /* webhook connections at once */
	unsigned max_connections_per_source; /* from one IP address; 0: the listener's default */
	size_t connection_memory;            /* per-connection buffer (headers and read chunks) */
	unsigned request_timeout;            /* seconds; headers and body */
	unsigned idle_timeout; /* seconds; between requests on a kept-alive connection */
	const struct pk_admission_config *admission; /* borrowed */
	struct pk_certs *certs;                      /* borrowed; must hold a pair */
	struct pk_metrics *metrics;                  /* borrowed; may be NULL */
	struct pk_client_auth *client_auth; /* borrowed; NULL: no client certificates asked */
	/* /readyz also waits for this (the lookups' caches); NULL: nothing more to wait for */
	bool (*ready)(void *ud);
	void *ready_ud;
};

/* The defaults poolkeeper-webhook starts with (:9443, :8081, :8080). */
void pk_server_default_config(struct pk_server_config *cfg);

enum pk_server_listener {
	PK_SERVER_WEBHOOK,
	PK_SERVER_HEALTH,
	PK_SERVER_METRICS,
};

struct pk_server;

/*
 * Starts the three listeners and makes `cfg->certs` the pair source for
 * TLS handshakes. On failure nothing is left running and err says which
 * listener failed. Stop and free with pk_server_stop.
 */
PK_MUST_CHECK int pk_server_start(const struct pk_server_config *cfg, struct pk_server **out,
                                  struct pk_err *err);

/* The port a listener is bound to (the chosen one when started with port 0); 0 when off. */
uint16_t pk_server_port(const struct pk_server *s, enum pk_server_listener which);

/* True once the TLS listener is up with a certificate loaded (what /readyz answers). */
bool pk_server_ready(const struct pk_server *s);

/*
 * Graceful stop: /readyz turns 503, the webhook stops accepting, answers
 * from then on carry "Connection: close", requests in flight are given up
 * to `grace_seconds` to finish, then every listener is stopped and `s`
 * freed. The certs stay the caller's.
 */
void pk_server_stop(struct pk_server *s, unsigned grace_seconds);

#endif
