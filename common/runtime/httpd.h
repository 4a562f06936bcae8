/*
 * httpd.h - poolkeeper's HTTP listeners: libmicrohttpd daemons that a
 * hostile client cannot hold, and the health and metrics listeners both
 * daemons serve through them.
 *
 * libmicrohttpd's own timeout is an idle timeout, reset by every byte, and
 * at its connection limit it stops accepting, so connections wait in the
 * kernel's queue. A pk_httpd adds, per connection:
 *
 *   - absolute deadlines, checked ten times a second: a connection's first
 *     request headers (the TLS handshake included) must be in within
 *     header_timeout of accept; a request must be answered, its answer
 *     sent, within request_timeout of its headers; a kept-alive connection
 *     must have the next request's headers in within idle_timeout of the
 *     previous answer. A request's body must be in within body_timeout
 *     plus its Content-Length at body_rate bytes a second of its headers
 *     (never later than request_timeout), so a client that announces 100
 *     bytes and sends one is cut in about body_timeout, while a large body
 *     sent at any sane speed is not; a body whose bytes wait unread in the
 *     kernel is the listener's delay and only request_timeout cuts it.
 *     Past its deadline a connection is shut down;
 *   - a connection limit that never queues: at max_connections, a new
 *     connection takes the place of another, which is shut down: first a
 *     stalled one (its body, or a new connection's headers, not in
 *     PK_HTTPD_STALL_GRACE after they began), then one without a request
 *     in progress (idle, or new) of the new connection's own source or of
 *     one that holds more connections than it: of the source that holds
 *     most, the one that has waited longest; among the eight first, one
 *     without bytes waiting unread goes first (unread bytes mean the
 *     listener is behind, not the client). When no connection may go (each
 *     has a request in progress, none is stalled, or the idle ones are
 *     another source's that holds fewer), the new one is closed at once;
 *   - one memory budget for all connections: each holds the bytes received
 *     for its request's headers (a new connection's TLS handshake
 *     included) and, once they are in, its announced body up to
 *     connection_memory. Counted ten times a second; past the budget,
 *     stalled connections are cut first, the one stalled longest first,
 *     then the largest whose request is not complete. While the
 *     connections hold the budget a new connection is closed at accept
 *     unless a stalled one makes room. A request whose body is in is never
 *     cut for memory;
 *   - a limit per source (the peer's IP address): a source that already
 *     holds per_source connections makes room among its own by the same
 *     rule, and its new connection is closed at once when each of its own
 *     has a request in progress. One client, however many connections it
 *     opens, leaves the others (the apiserver, the kubelet) their room.
 *
 * Shutting a socket down (shutdown(2), never close(2)) is safe from another
 * thread: libmicrohttpd sees the end of the stream and closes the
 * connection itself, telling us before it closes the descriptor.
 */
#ifndef PK_HTTPD_H
#define PK_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "httpd_source.h"

#include "parse.h"
#include "pk.h"

/*
 * A listener's limits. A field left 0 where a default is named takes it
 * (pk_httpd_start resolves them; pk_httpd_limits_resolve says to what).
 */
struct pk_httpd_limits {
	unsigned max_connections;
	unsigned per_source;      /* connections from one IP address; 0: PK_HTTPD_PER_SOURCE_* */
	unsigned header_timeout;  /* seconds: accept to the first request's headers */
	unsigned request_timeout; /* seconds: a request's headers to its answer sent */
	unsigned body_timeout;    /* seconds: headers to body in, plus its length at body_rate;
	                             0: PK_HTTPD_BODY_TIMEOUT */
	unsigned body_rate;       /* bytes a second a body must keep; 0: PK_HTTPD_BODY_RATE */
	unsigned idle_timeout;    /* seconds: an answer to the next request's headers */
	size_t connection_memory; /* per connection: request line, headers, read buffer */
	size_t memory_budget;     /* what all connections may hold at once (see above);
	                             0: PK_HTTPD_MEMORY_* */
};

/*
 * The default per-source limit: a quarter of max_connections, but never
 * fewer than 16 (nor more than max_connections), so a small listener is not
 * split into slivers.
 */
#define PK_HTTPD_PER_SOURCE_SHARE 4
#define PK_HTTPD_PER_SOURCE_MIN   16
/*
 * The default body deadline: 2 s plus a second per 64 KiB announced. The
 * apiserver writes a review's headers and body at once; 3 MiB (the largest
 * review the webhook reads) at 64 KiB/s is 48 s, so the request deadline
 * bounds the largest ones first.
 */
#define PK_HTTPD_BODY_TIMEOUT 2
#define PK_HTTPD_BODY_RATE    (64u * 1024u)
/*
 * The default memory budget: 16 KiB a connection (an ordinary review's
 * headers and body are a few KiB), and never less than eight connections'
 * connection_memory.
 */
#define PK_HTTPD_MEMORY_PER_CONNECTION (16u * 1024u)
#define PK_HTTPD_MEMORY_LEAST          8u
/* Seconds after which a body or a new connection's headers not in count as stalled. */
#define PK_HTTPD_STALL_GRACE 1

/* l with every default filled in, as pk_httpd_start uses it. */
struct pk_httpd_limits pk_httpd_limits_resolve(const struct pk_httpd_limits *l);

/*
 * One request, as libmicrohttpd's access handler: `*req` is the handler's
 * per-request state (NULL on the first call, when the headers are in).
 */
typedef enum MHD_Result (*pk_httpd_handler_fn)(void *ud, struct MHD_Connection *conn,
                                               const char *url, const char *method,
                                               const char *upload_data, size_t *upload_data_size,
                                               void **req);
/* A request ended (answered, or its connection went); frees `*req`. */
typedef void (*pk_httpd_completed_fn)(void *ud, struct MHD_Connection *conn, void **req,
                                      enum MHD_RequestTerminationCode how);
/* A connection was accepted; nothing has been read from it yet (its TLS session, if any, is
 * set up and its handshake not begun). */
typedef void (*pk_httpd_started_fn)(void *ud, struct MHD_Connection *conn);
/* A connection is about to be closed. */
typedef void (*pk_httpd_closed_fn)(void *ud, struct MHD_Connection *conn);

struct pk_httpd_config {
	const char *name; /* "webhook", "health", "metrics": in logs and errors */
	struct pk_hostport address;
	unsigned threads; /* 0 or 1: one thread; more: a pool of that many */
	struct pk_httpd_limits limits;
	unsigned mhd_flags; /* extra MHD_USE_* flags (MHD_USE_TLS) */
	const struct MHD_OptionItem
	    *options; /* extra options ending with MHD_OPTION_END; or NULL */
	pk_httpd_handler_fn handler;
	pk_httpd_completed_fn completed; /* may be NULL */
	pk_httpd_started_fn started;     /* may be NULL */
	pk_httpd_closed_fn closed;       /* may be NULL */
	void *ud;
};

struct pk_httpd;

/* Starts listening. On failure nothing runs and err names the listener and the address. */
PK_MUST_CHECK int pk_httpd_start(const struct pk_httpd_config *cfg, struct pk_httpd **out,
                                 struct pk_err *err);
/* The bound port (the chosen one for port 0). */
uint16_t pk_httpd_port(const struct pk_httpd *h);
/* Stops accepting new connections; connections open keep being served. */
void pk_httpd_quiesce(struct pk_httpd *h);
/* Closes every connection, stops, frees. NULL is ignored. */
void pk_httpd_stop(struct pk_httpd *h);

struct pk_httpd_stats {
	unsigned open;                /* connections now */
	unsigned long long accepted;  /* since start */
	unsigned long long refused;   /* closed at accept: all busy, or its source at its limit */
	unsigned long long evicted;   /* shut down to make room for a new one */
	unsigned long long timed_out; /* shut down past a deadline */
	unsigned long long
	    over_memory; /* shut down, or one stalled for a new one, past the budget */
	size_t memory;   /* bytes the connections held at the last count */
};
void pk_httpd_get_stats(struct pk_httpd *h, struct pk_httpd_stats *out);

/*
 * Queues an answer. `body` is copied unless `owned`, in which case
 * libmicrohttpd frees it with free(). `allow` (may be NULL) is sent as the
 * Allow header; `close` adds "Connection: close".
 */
enum MHD_Result pk_httpd_respond(struct MHD_Connection *conn, unsigned status,
                                 const char *content_type, const char *body, size_t len, bool owned,
                                 const char *allow, bool close);

/* ---- the health and metrics listeners ---- */

/*
 * /readyz: true when ready; otherwise a short reason ("informers not
 * synced") into why, which the 503 answer carries.
 */
typedef bool (*pk_httpd_ready_fn)(void *ud, char *why, size_t len);
/* /metrics: the Prometheus text, malloc'd (the caller frees it), or NULL. */
typedef char *(*pk_httpd_metrics_fn)(void *ud, size_t *len);

struct pk_httpd_probes_config {
	struct pk_hostport health_address;  /* GET /healthz, /readyz */
	struct pk_hostport metrics_address; /* GET /metrics */
	bool metrics_off;
	pk_httpd_ready_fn ready;
	pk_httpd_metrics_fn metrics;
	void *ud;
};

/* What the probes listeners allow each client (PK_HTTPD_PROBE_* below). */
#define PK_HTTPD_PROBE_MAX_CONNECTIONS 64
#define PK_HTTPD_PROBE_TIMEOUT         5 /* seconds: headers, and the answer */
#define PK_HTTPD_PROBE_IDLE_TIMEOUT    30

struct pk_httpd_probes;

struct pk_flag;
struct pk_flag_value;
/*
 * The listen addresses of the probes from a program's flags (health at
 * `health`, PK_FLAG_DEF_HEALTH_ADDR; metrics at `metrics`,
 * PK_FLAG_DEF_METRICS_ADDR, where "0" turns the listener off) into cfg. The
 * error names the flag and the value.
 */
PK_MUST_CHECK int pk_httpd_probes_flags(const struct pk_flag *table,
                                        const struct pk_flag_value *vals, size_t health,
                                        size_t metrics, struct pk_httpd_probes_config *cfg,
                                        struct pk_err *err);

PK_MUST_CHECK int pk_httpd_probes_start(const struct pk_httpd_probes_config *cfg,
                                        struct pk_httpd_probes **out, struct pk_err *err);
/* The health (false) or metrics (true) listener's port; 0 when off. */
uint16_t pk_httpd_probes_port(const struct pk_httpd_probes *p, bool metrics);
void pk_httpd_probes_stop(struct pk_httpd_probes *p);

/*
 * Logs "listening" with the listener's name, its bound port and its address
 * ("all" for every address), as both daemons announce their listeners.
 */
void pk_httpd_log_listening(const char *name, uint16_t port, const struct pk_hostport *at);
/* The health and metrics listeners of cfg, bound to these ports, or "metrics off". */
void pk_httpd_log_probes(const struct pk_httpd_probes_config *cfg, uint16_t health_port,
                         uint16_t metrics_port);

#endif
