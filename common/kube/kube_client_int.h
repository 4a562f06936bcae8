/*
 * kube_client_int.h - what the parts of the client share: the client
 * itself, one call as the transport runs it, and the helpers the verbs and
 * discovery build requests with. Private to libpkkube; everything else
 * goes through kube_client.h.
 *
 *   kube_client.c     the client's life: curl set-up, trust, the handle
 *                     pool, request counts
 *   kube_transport.c  one call: headers, the exchange, retries, bounded
 *                     answers, streams
 *   kube_path.c       request paths and queries
 *   kube_verbs.c      get, list (paged), create, update, patch, delete
 *   kube_discovery.c  the versions a group serves
 */
#ifndef PK_KUBE_CLIENT_INT_H
#define PK_KUBE_CLIENT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

#include "kube_client.h"
#include "kube_ratelimit.h"

#define POOL_MAX_IDLE 16
#define PATH_MAX_LEN  8192
/* Room for a List's own members beside its one object (limit 1). */
#define PAGE_SLACK (64u << 10)

struct pk_kube_client {
	struct pk_kube_config *cfg;
	struct pk_kube_ratelimit *rl;
	CURLSH *share;
	pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
	pthread_mutex_t pool_mu;
	CURL *pool[POOL_MAX_IDLE];
	size_t npool;
	struct pk_kube_log log;
	char user_agent[128];
	long timeout_ms, connect_ms;
	size_t max_bytes, max_object;
	unsigned max_depth;
	int retries;
	long backoff_base_ms, backoff_max_ms, retry_after_max_s;
	pthread_mutex_t stats_mu;
	struct request_stat {
		char method[8];
		long code;
		unsigned long long n;
	} stats[PK_KUBE_STATS_MAX];
	size_t nstats;
};

struct call {
	const char *method;
	const char *path; /* with query */
	const char *content_type;
	const char *body;
	size_t body_len;
	long timeout_ms;       /* 0: client default; < 0: none (streams) */
	long long deadline_ns; /* > 0: the whole call, limiter and retries too, ends by then */
	pk_kube_stream_fn *fn;
	void *ud;
	const atomic_int *stop;
	size_t max_bytes;              /* 0: the client's max_response_bytes */
	struct pk_kube_scan *overflow; /* a 200 answer over max_bytes is scanned, not kept */
	bool *overflowed;              /* set when it was */
};

/* ---- kube_client.c ---- */

/* Whom the handle trusts (see kube_client.c). */
CURLcode pk_kube_client_set_trust(const struct pk_kube_client *c, CURL *h);
/* A handle from the pool, or a new one; NULL when out of memory. */
CURL *pk_kube_client_handle_get(struct pk_kube_client *c);
/* Back to the pool when reusable (and there is room), else cleaned up. NULL is fine. */
void pk_kube_client_handle_put(struct pk_kube_client *c, CURL *h, bool reusable);
/* One answer (code 0: none) counted for pk_kube_client_request_stats. */
void pk_kube_client_count(struct pk_kube_client *c, const char *method, long code);

/* ---- kube_transport.c ---- */

/* Runs one call with rate limiting, auth and the retry rules in kube_client.h. On 2xx,
 * *body gets the buffer (caller frees) unless streaming; body may be NULL. */
enum pk_kube_reason pk_kube_client_perform(struct pk_kube_client *c, const struct call *k,
                                           char **body, size_t *body_len, struct pk_kube_error *e);
/* pk_kube_client_perform and the JSON parse of the answer into *out (when out is not NULL). */
enum pk_kube_reason pk_kube_client_call_json(struct pk_kube_client *c, const struct call *k,
                                             json_t **out, struct pk_kube_error *e);

/* ---- kube_path.c ---- */

/* Appends s at buf[*o] as is, or as "/" and s percent-encoded (refusing empty, "." and
 * ".." segments: PK_ERR_INVALID); PK_ERR_TOO_BIG when it does not fit. */
int pk_kube_path_put_raw(char *buf, size_t len, size_t *o, const char *s);
int pk_kube_path_put_segment(char *buf, size_t len, size_t *o, const char *s);
/* pk_kube_ref_path and pk_kube_query_add (nothing for a NULL value), failures as
 * PK_KUBE_BAD_REQUEST. */
enum pk_kube_reason pk_kube_client_build_path(const struct pk_kube_ref *r, char *buf, size_t len,
                                              struct pk_kube_error *e);
enum pk_kube_reason pk_kube_client_add_query(char *buf, size_t len, const char *k, const char *v,
                                             struct pk_kube_error *e);

#endif
