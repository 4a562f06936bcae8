/* server.c - the webhook's libmicrohttpd daemons: HTTPS admission, health, metrics. */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <malloc.h>
#include <microhttpd.h>
#include <pthread.h>

#include "buf.h"
#include "fair_pool.h"
#include "httpd.h"
#include "log.h"

/*
 * TLS 1.3 and 1.2 only. In TLS 1.2, forward-secret ECDHE key exchange with
 * AEAD ciphers only: no static RSA or DHE key exchange, no CBC, no SHA-1
 * MACs. The KX list does not apply to TLS 1.3, whose
 * suites are all ECDHE/DHE and AEAD; the cipher list also drops its CCM.
 */
#define TLS_PRIORITIES                                                                \
	"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:" \
	"-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305:-MAC-ALL:+AEAD"

struct pk_server {
	struct pk_server_config cfg;
	struct pk_httpd *webhook;
	struct pk_fair_pool *reviews; /* the reviews' threads, fair between sources */
	struct pk_httpd_probes *probes;
	uint16_t ports[3];
	atomic_bool ready;
	atomic_bool stopping;
	atomic_uint in_flight;
	atomic_size_t large_bodies; /* bytes reserved by bodies over PK_SERVER_SMALL_BODY */
	char too_big_json[96];      /* the 413 body, naming the limit */
	char too_deep_json[200];    /* the 413 body of a parse over its memory budget */
	char busy_json[200];        /* the 503 body when large bodies use their allowance */
	char late_json[160];        /* the 503 body of a review that waited past request_timeout */
	/* Refusals for want of a client certificate: logged at most once a second. */
	atomic_llong auth_log_second;
	atomic_ullong auth_log_suppressed;
};

/* One admission request, from its headers to its answer (MHD's con_cls). */
struct request {
	struct pk_fair_job job; /* first: the review's turn on s->reviews */
	struct pk_server *s;
	struct MHD_Connection *conn; /* suspended while the review waits or runs */
	struct timespec start;
	enum pk_admission_endpoint endpoint;
	struct pk_buf body; /* capped at PK_ADMISSION_MAX_BODY */
	size_t received;    /* bytes seen, kept or not */
	size_t announced;   /* Content-Length, when within the cap */
	size_t reserved;    /* bytes of s->large_bodies this request holds */
	bool too_big;
	bool late;   /* body still arriving after request_timeout */
	bool costly; /* used enough memory to be worth handing back afterwards */
	bool queued; /* handed to s->reviews; the connection is suspended */
	/* The review's answer, once `answered` (a review thread sets them, then resumes the
	 * connection; the listener sends them). */
	bool answered;
	unsigned status;
	char *answer;      /* owned JSON text; NULL: it could not be encoded */
	const char *fixed; /* a constant answer instead */
	enum pk_metrics_result result;
};

/* The body kept, as text ("" when none was). */
static const char *body_text(const struct request *rq)
{
	return rq->body.p != NULL ? rq->body.p : "";
}

static double seconds_since(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

void pk_server_default_config(struct pk_server_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->webhook_address.port = 9443;
	cfg->health_address.port = 8081;
	cfg->metrics_address.port = 8080;
	cfg->max_connections = 1000;
	cfg->connection_memory = 128 * 1024;
	cfg->request_timeout = 10;
	cfg->idle_timeout = 120;
}

/* ---- the parse budget ---- */

/*
 * jansson's allocator is process-wide (json_set_alloc_funcs); the budget
 * is per thread and armed only while a request body is test-parsed, so
 * every other use of jansson (the lookups, the admission module) is
 * unaffected. It counts the bytes the parse holds at once: the usable size
 * of each block, added when jansson allocates it and taken off when jansson
 * frees it, so a string buffer grown by doubling counts once.
 */
static _Thread_local struct {
	size_t used, peak, limit; /* limit 0: not armed */
	bool over;
} budget;

static void *budget_malloc(size_t n)
{
	if (budget.limit == 0)
		return malloc(n);
	if (budget.over || n > budget.limit - budget.used) {
		budget.over = true;
		return NULL;
	}
	void *p = malloc(n);
	if (p != NULL) {
		size_t got = malloc_usable_size(p);
		budget.used += got < budget.limit - budget.used ? got : budget.limit - budget.used;
		if (budget.used > budget.peak)
			budget.peak = budget.used;
	}
	return p;
}

static void budget_free(void *p)
{
	if (budget.limit != 0 && p != NULL) {
		size_t got = malloc_usable_size(p);
		budget.used = got < budget.used ? budget.used - got : 0;
	}
	free(p);
}

static void install_budget(void)
{
	json_set_alloc_funcs(budget_malloc, budget_free);
}

/*
 * True when the body parses within PK_SERVER_PARSE_BUDGET bytes, or fails
 * to parse for another reason (the admission module then names it). A
 * million empty objects in 3 MB would otherwise take 250 MB.
 */
static bool parse_fits(const char *body, size_t len, size_t *peak)
{
	budget.used = 0;
	budget.peak = 0;
	budget.over = false;
	budget.limit = PK_SERVER_PARSE_BUDGET;
	/* the flags pk_admission_review parses with, so that it is the same parse */
	json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
	bool over = budget.over;
	*peak = budget.peak;
	json_decref(doc); /* still armed: its frees are counted against this parse */
	budget.limit = 0;
	return !over;
}

/* ---- responses ---- */

static enum MHD_Result send_buffer(struct pk_server *s, struct MHD_Connection *conn,
                                   unsigned status, char *body, size_t len, bool owned,
                                   const char *content_type, const char *allow)
{
	return pk_httpd_respond(conn, status, content_type, body, len, owned, allow,
	                        atomic_load(&s->stopping));
}

/* A constant {"error": ...} body. */
static enum MHD_Result send_error(struct pk_server *s, struct MHD_Connection *conn, unsigned status,
                                  const char *json, const char *allow)
{
	return send_buffer(s, conn, status, (char *)(uintptr_t)json, strlen(json), false,
	                   "application/json", allow);
}

/* ---- the admission listener ---- */

/* The Content-Length the client announced (libmicrohttpd has checked its syntax), or -1. */
static long long content_length(struct MHD_Connection *conn)
{
	const char *v =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	uint64_t n;
	struct pk_err e;
	if (v == NULL || pk_parse_uint(v, 0, INT64_MAX, &n, &e) != PK_OK)
		return -1;
	return (long long)n;
}

/* True when the client sent "Expect: 100-continue" and holds the body back until told. */
static bool expects_continue(struct MHD_Connection *conn)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
	return v != NULL && strcasecmp(v, "100-continue") == 0;
}

static enum pk_metrics_result result_of(int status, const json_t *resp)
{
	if (status != 200)
		return PK_METRICS_ERROR;
	const json_t *allowed = json_object_get(json_object_get(resp, "response"), "allowed");
	return json_is_true(allowed) ? PK_METRICS_ALLOWED : PK_METRICS_DENIED;
}

/*
 * The review itself, on one of s->reviews' threads: the parse's memory
 * check, the admission module's answer, encoded. Then the connection is
 * resumed, and libmicrohttpd calls webhook_access again to send it; rq is
 * not touched after that.
 */
static void review_run(struct pk_fair_job *job, enum pk_fair_turn turn)
{
	struct request *rq = (struct request *)(void *)job;
	struct pk_server *s = rq->s;
	rq->result = PK_METRICS_ERROR;
	if (turn == PK_FAIR_STOPPING) {
		rq->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		rq->fixed = "{\"error\":\"poolkeeper-webhook is stopping; retry\"}";
	} else if (turn == PK_FAIR_SHED) {
		/* Its source holds most of what waits: its newest review makes room. */
		rq->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		rq->fixed = "{\"error\":\"too many reviews from this client are waiting; retry\"}";
	} else if (seconds_since(&rq->start) > (double)s->cfg.request_timeout) {
		/* Waited its turn past the apiserver's patience: not worth reviewing. */
		rq->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		rq->fixed = s->late_json;
	} else {
		/* A body of PK_SERVER_SMALL_BODY bytes cannot need the budget (72 bytes of
		 * parse per byte of text at worst): only larger ones are parsed twice. */
		size_t peak = 0;
		bool fits = rq->body.len <= PK_SERVER_SMALL_BODY ||
		            parse_fits(body_text(rq), rq->body.len, &peak);
		rq->costly = peak > PK_SERVER_PARSE_BUDGET / 8;
		if (!fits) {
			pk_log_debug("admission request refused: parsing it takes too much memory",
			             PK_LOG_UINT("bytes", rq->body.len));
			rq->status = MHD_HTTP_CONTENT_TOO_LARGE;
			rq->fixed = s->too_deep_json;
		} else {
			int status = 500;
			json_t *resp = NULL;
			pk_admission_review(s->cfg.admission, rq->endpoint, body_text(rq),
			                    rq->body.len, &status, &resp);
			rq->status = (unsigned)status;
			rq->result = result_of(status, resp);
			/* jansson allocates with malloc (budget_malloc ends in malloc). */
			rq->answer = resp != NULL ? json_dumps(resp, JSON_COMPACT) : NULL;
			if (rq->answer == NULL) {
				rq->status = MHD_HTTP_INTERNAL_SERVER_ERROR;
				rq->result = PK_METRICS_ERROR;
				rq->fixed = "{\"error\":\"cannot encode the response\"}";
			}
			if (status != 200)
				pk_log_debug(
				    "admission request refused", PK_LOG_INT("status", status),
				    PK_LOG_STR("endpoint", rq->endpoint == PK_ADMISSION_MUTATE
				                               ? "mutate"
				                               : "validate"));
			json_decref(resp);
		}
	}
	rq->answered = true;
	MHD_resume_connection(rq->conn);
}

/*
 * The body is in. What needs no review is answered here; the review waits
 * its source's turn for one of s->reviews' threads, the connection
 * suspended, so a client with many requests never holds the listener's
 * threads, nor the apiserver's requests behind its own.
 */
static enum MHD_Result finish_request(struct pk_server *s, struct MHD_Connection *conn,
                                      struct request *rq)
{
	if (rq->answered) {
		enum MHD_Result ret =
		    rq->answer != NULL
		        ? send_buffer(s, conn, rq->status, rq->answer, strlen(rq->answer), true,
		                      "application/json", NULL)
		        : send_error(s, conn, rq->status, rq->fixed, NULL);
		rq->answer = NULL; /* the response owns it now */
		pk_metrics_observe_request(s->cfg.metrics, rq->endpoint, rq->result,
		                           seconds_since(&rq->start));
		return ret;
	}
	if (rq->queued)
		return MHD_YES; /* still waiting for its turn */
	if (rq->too_big) {
		pk_metrics_observe_request(s->cfg.metrics, rq->endpoint, PK_METRICS_ERROR,
		                           seconds_since(&rq->start));
		return send_error(s, conn, MHD_HTTP_CONTENT_TOO_LARGE, s->too_big_json, NULL);
	}
	if (rq->late || seconds_since(&rq->start) > (double)s->cfg.request_timeout) {
		pk_metrics_observe_request(s->cfg.metrics, rq->endpoint, PK_METRICS_ERROR,
		                           seconds_since(&rq->start));
		return send_error(s, conn, MHD_HTTP_REQUEST_TIMEOUT,
		                  "{\"error\":\"request body took longer than the read timeout\"}",
		                  NULL);
	}
	rq->s = s;
	rq->conn = conn;
	rq->job.run = review_run;
	rq->job.bytes = sizeof(*rq) + rq->body.cap;
	rq->queued = true;
	struct pk_httpd_source src = pk_httpd_source_of(conn);
	/* Suspended first: the review may finish, and resume it, before push returns. */
	MHD_suspend_connection(conn);
	pk_fair_pool_push(s->reviews, &src, &rq->job);
	return MHD_YES;
}

/* Keeps the body in memory up to the admission cap; counts and drops the rest. */
static enum MHD_Result take_body(struct pk_server *s, struct request *rq, const char *data,
                                 size_t n)
{
	double elapsed = seconds_since(&rq->start);
	if (elapsed > 2.0 * s->cfg.request_timeout) {
		pk_log_debug("request body too slow; closing the connection",
		             PK_LOG_UINT("received", rq->received));
		return MHD_NO;
	}
	rq->received += n;
	if (rq->received > PK_SERVER_DISCARD_MAX)
		return MHD_NO; /* not worth reading on just to say 413 */
	if (elapsed > (double)s->cfg.request_timeout) {
		/* Late: the answer is 408 whatever the body says; stop keeping it. */
		rq->late = true;
		pk_buf_free(&rq->body);
	}
	if (rq->too_big || rq->late)
		return MHD_YES;
	/* The announced length, at once: no doubling, no copies, no 2 MiB + 3 MiB peak. */
	int rc = rq->body.cap == 0 && rq->announced > n ? pk_buf_reserve(&rq->body, rq->announced)
	                                                : PK_OK;
	if (rc == PK_OK)
		rc = pk_buf_append(&rq->body, data, n);
	if (rc == PK_ERR_TOO_BIG) {
		rq->too_big = true;
		pk_buf_free(&rq->body);
		return MHD_YES;
	}
	return rc == PK_OK ? MHD_YES : MHD_NO;
}

/* ---- the caller ---- */

static gnutls_session_t session_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	return ci != NULL ? (gnutls_session_t)ci->tls_session : NULL;
}

/* The peer's address as text, for the log. */
static void source_text(struct MHD_Connection *conn, char *buf, size_t len)
{
	snprintf(buf, len, "unknown");
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci != NULL ? ci->client_addr : NULL;
	if (sa != NULL && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf,
		          (socklen_t)len);
	else if (sa != NULL && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
		          buf, (socklen_t)len);
}

/* One line a second at most, however many clients are refused; the rest are counted. */
static void log_refused(struct pk_server *s, struct MHD_Connection *conn, enum pk_client_verdict v,
                        const char *why)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long long sec = (long long)now.tv_sec + 1; /* never 0, the initial value */
	long long last = atomic_load(&s->auth_log_second);
	if (last == sec || !atomic_compare_exchange_strong(&s->auth_log_second, &last, sec)) {
		atomic_fetch_add(&s->auth_log_suppressed, 1);
		return;
	}
	char from[INET6_ADDRSTRLEN];
	source_text(conn, from, sizeof(from));
	pk_log_warn(
	    "request refused: the client is not authenticated",
	    PK_LOG_STR("reason", pk_client_verdict_name(v)), PK_LOG_STR("detail", why),
	    PK_LOG_STR("source", from),
	    PK_LOG_UINT("suppressedSinceLast", atomic_exchange(&s->auth_log_suppressed, 0)));
}

/*
 * PK_CLIENT_OK, or the request has been answered 401/403 (no review, the
 * connection closed after it) and counted.
 */
static enum pk_client_verdict authenticate(struct pk_server *s, struct MHD_Connection *conn,
                                           enum MHD_Result *answered)
{
	char why[256] = "";
	enum pk_client_verdict v =
	    pk_client_auth_check(s->cfg.client_auth, session_of(conn), why, sizeof(why));
	if (v == PK_CLIENT_OK)
		return v;
	pk_metrics_count_unauthenticated(s->cfg.metrics, (int)v);
	log_refused(s, conn, v, why);
	static const char unauthorized[] = "{\"error\":\"a valid client certificate is required\"}";
	static const char forbidden[] =
	    "{\"error\":\"the client certificate's subject is not allowed\"}";
	bool deny = v == PK_CLIENT_NAME_NOT_ALLOWED;
	*answered = pk_httpd_respond(conn, deny ? MHD_HTTP_FORBIDDEN : MHD_HTTP_UNAUTHORIZED,
	                             "application/json", deny ? forbidden : unauthorized,
	                             deny ? sizeof(forbidden) - 1 : sizeof(unauthorized) - 1, false,
	                             NULL, true);
	return v;
}

/* A new TLS connection: ask its client for a certificate before the handshake. */
static void webhook_started(void *cls, struct MHD_Connection *conn)
{
	struct pk_server *s = cls;
	pk_client_auth_request(s->cfg.client_auth, session_of(conn));
}

static enum MHD_Result webhook_access(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *upload_data,
                                      size_t *upload_data_size, void **con_cls)
{
	struct pk_server *s = cls;
	struct request *rq = *con_cls;
	if (rq != NULL) {
		if (*upload_data_size > 0) {
			size_t n = *upload_data_size;
			*upload_data_size = 0;
			return take_body(s, rq, upload_data, n);
		}
		return finish_request(s, conn, rq);
	}

	/* The headers are in: the caller first, then the route, then whether the body
	 * is worth reading. */
	enum MHD_Result answered = MHD_NO;
	if (s->cfg.client_auth != NULL && authenticate(s, conn, &answered) != PK_CLIENT_OK)
		return answered;
	enum pk_admission_endpoint ep;
	if (!strcmp(url, "/validate"))
		ep = PK_ADMISSION_VALIDATE;
	else if (!strcmp(url, "/mutate"))
		ep = PK_ADMISSION_MUTATE;
	else
		return send_error(s, conn, MHD_HTTP_NOT_FOUND,
		                  "{\"error\":\"not found: the webhook serves POST /validate and "
		                  "POST /mutate\"}",
		                  NULL);
	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
		return send_error(s, conn, MHD_HTTP_METHOD_NOT_ALLOWED,
		                  "{\"error\":\"method not allowed: use POST\"}", "POST");
	long long clen = content_length(conn);
	/*
	 * The apiserver always sends Content-Length. Answering a chunked upload
	 * here, before its body, also keeps libmicrohttpd's own (HTML) answers
	 * to broken chunk framing from being reached.
	 */
	if (clen < 0) {
		pk_metrics_observe_request(s->cfg.metrics, ep, PK_METRICS_ERROR, 0);
		return send_error(s, conn, MHD_HTTP_LENGTH_REQUIRED,
		                  "{\"error\":\"Content-Length is required\"}", NULL);
	}
	/*
	 * Too big and announced: answer before the body when the client waits for
	 * 100 Continue or the body is not worth reading; otherwise the body is
	 * read and dropped first, so a client that writes it all before reading
	 * sees the 413 rather than a reset.
	 */
	if (clen > (long long)PK_SERVER_DISCARD_MAX ||
	    (clen > (long long)PK_ADMISSION_MAX_BODY && expects_continue(conn))) {
		pk_metrics_observe_request(s->cfg.metrics, ep, PK_METRICS_ERROR, 0);
		return send_error(s, conn, MHD_HTTP_CONTENT_TOO_LARGE, s->too_big_json, NULL);
	}

	bool too_big = clen > (long long)PK_ADMISSION_MAX_BODY;
	size_t reserve = !too_big && clen > (long long)PK_SERVER_SMALL_BODY ? (size_t)clen : 0;
	/* Large bodies share one allowance; small ones (every ordinary review) never wait. */
	if (reserve > 0 &&
	    atomic_fetch_add(&s->large_bodies, reserve) + reserve > PK_SERVER_LARGE_BODIES) {
		atomic_fetch_sub(&s->large_bodies, reserve);
		pk_metrics_observe_request(s->cfg.metrics, ep, PK_METRICS_ERROR, 0);
		return send_error(s, conn, MHD_HTTP_SERVICE_UNAVAILABLE, s->busy_json, NULL);
	}
	rq = calloc(1, sizeof(*rq));
	if (rq == NULL) {
		atomic_fetch_sub(&s->large_bodies, reserve);
		return MHD_NO;
	}
	clock_gettime(CLOCK_MONOTONIC, &rq->start);
	rq->endpoint = ep;
	rq->too_big = too_big;
	rq->announced = too_big ? 0 : (size_t)clen;
	rq->reserved = reserve;
	pk_buf_init(&rq->body, PK_ADMISSION_MAX_BODY);
	*con_cls = rq;
	atomic_fetch_add(&s->in_flight, 1);
	return MHD_YES;
}

static void webhook_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                              enum MHD_RequestTerminationCode toe)
{
	(void)conn;
	(void)toe;
	struct pk_server *s = cls;
	struct request *rq = *con_cls;
	if (rq == NULL)
		return;
	*con_cls = NULL;
	bool costly = rq->costly || rq->body.cap > PK_ADMISSION_MAX_BODY / 4;
	atomic_fetch_sub(&s->large_bodies, rq->reserved);
	pk_buf_free(&rq->body);
	free(rq->answer);
	free(rq);
	atomic_fetch_sub(&s->in_flight, 1);
	/* glibc keeps what a thread freed in that thread's arena; a large
	 * request's memory goes back to the system rather than staying with
	 * each worker thread for ever. */
	if (costly)
		malloc_trim(0);
}

/* Gives a closing TLS connection's certificate pair reference back. */
static void webhook_closed(void *cls, struct MHD_Connection *conn)
{
	struct pk_server *s = cls;
	gnutls_session_t session = session_of(conn);
	if (session != NULL)
		pk_certs_session_closed(s->cfg.certs, session);
}

/* ---- start and stop ---- */

static bool server_ready(void *ud, char *why, size_t len)
{
	const struct pk_server *s = ud;
	if (!pk_server_ready(s)) {
		snprintf(why, len, "not ready");
		return false;
	}
	if (s->cfg.ready != NULL && !s->cfg.ready(s->cfg.ready_ud)) {
		snprintf(why, len, "lookup caches not loaded");
		return false;
	}
	return true;
}

static char *server_metrics(void *ud, size_t *len)
{
	const struct pk_server *s = ud;
	return s->cfg.metrics != NULL ? pk_metrics_render(s->cfg.metrics, len) : NULL;
}

static unsigned default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
}

static int start_webhook(struct pk_server *s, struct pk_err *err)
{
	const struct pk_server_config *c = &s->cfg;
	const struct MHD_OptionItem tls[] = {
	    {MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)(uintptr_t)pk_certs_retrieve},
	    {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)(uintptr_t)TLS_PRIORITIES},
	    {MHD_OPTION_END, 0, NULL},
	};
	struct pk_httpd_config hc = {
	    .name = "webhook",
	    .address = c->webhook_address,
	    .threads = c->threads ? c->threads : default_threads(),
	    /* A large body may trickle on to twice the request timeout (then 408), see
	     * server.h; the body deadline and the memory budget are the listener's. */
	    .limits = {.max_connections = c->max_connections,
	               .per_source = c->max_connections_per_source,
	               .header_timeout = c->request_timeout < PK_SERVER_HEADER_TIMEOUT
	                                     ? c->request_timeout
	                                     : PK_SERVER_HEADER_TIMEOUT,
	               .request_timeout = 2 * c->request_timeout,
	               .idle_timeout = c->idle_timeout,
	               .connection_memory = c->connection_memory},
	    .mhd_flags = MHD_USE_TLS | MHD_ALLOW_SUSPEND_RESUME,
	    .options = tls,
	    .handler = webhook_access,
	    .completed = webhook_completed,
	    .started = c->client_auth != NULL ? webhook_started : NULL,
	    .closed = webhook_closed,
	    .ud = s,
	};
	return pk_httpd_start(&hc, &s->webhook, err);
}

static void stop_all(struct pk_server *s)
{
	/* Every suspended connection is resumed (answered) before its daemon stops. */
	pk_fair_pool_stop(s->reviews);
	pk_httpd_stop(s->webhook);
	pk_httpd_probes_stop(s->probes);
	pk_certs_set_active(NULL);
	free(s);
}

int pk_server_start(const struct pk_server_config *cfg, struct pk_server **out, struct pk_err *err)
{
	if (cfg->certs == NULL || cfg->admission == NULL)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "server: certificates and admission "
		                  "configuration are required");
	if (cfg->request_timeout == 0 || cfg->idle_timeout == 0 || cfg->max_connections == 0)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "server: timeouts and the connection "
		                  "limit must be positive");
	struct pk_server *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	s->cfg = *cfg;
	snprintf(s->too_big_json, sizeof(s->too_big_json),
	         "{\"error\":\"request body is larger than %u bytes\"}", PK_ADMISSION_MAX_BODY);
	atomic_init(&s->ready, false);
	atomic_init(&s->stopping, false);
	atomic_init(&s->in_flight, 0);
	atomic_init(&s->large_bodies, 0);
	atomic_init(&s->auth_log_second, 0);
	atomic_init(&s->auth_log_suppressed, 0);
	pk_certs_set_active(cfg->certs);

	snprintf(s->too_deep_json, sizeof(s->too_deep_json),
	         "{\"error\":\"request body takes more than %u bytes of memory to parse (too "
	         "many JSON values); at most %u are allowed\"}",
	         PK_SERVER_PARSE_BUDGET, PK_SERVER_PARSE_BUDGET);
	snprintf(s->busy_json, sizeof(s->busy_json),
	         "{\"error\":\"requests larger than %u bytes may together hold at most %u "
	         "bytes, which those in progress use; retry\"}",
	         PK_SERVER_SMALL_BODY, PK_SERVER_LARGE_BODIES);
	static pthread_once_t budget_once = PTHREAD_ONCE_INIT;
	pthread_once(&budget_once, install_budget);

	snprintf(s->late_json, sizeof(s->late_json),
	         "{\"error\":\"the review waited its turn longer than %u s; retry\"}",
	         cfg->request_timeout);
	unsigned reviewers = cfg->review_threads ? cfg->review_threads
	                                         : PK_SERVER_REVIEWERS_PER_CORE * default_threads();
	if (reviewers > PK_SERVER_REVIEWERS_MAX)
		reviewers = PK_SERVER_REVIEWERS_MAX;
	int rc = pk_fair_pool_start("webhook reviews", reviewers, PK_SERVER_WAITING_BYTES,
	                            &s->reviews, err);
	if (rc == PK_OK)
		rc = start_webhook(s, err);
	struct pk_httpd_probes_config pc = {.health_address = cfg->health_address,
	                                    .metrics_address = cfg->metrics_address,
	                                    .metrics_off = cfg->metrics_off,
	                                    .ready = server_ready,
	                                    .metrics = server_metrics,
	                                    .ud = s};
	if (rc == PK_OK)
		rc = pk_httpd_probes_start(&pc, &s->probes, err);
	if (rc != PK_OK) {
		stop_all(s);
		return rc;
	}
	s->ports[PK_SERVER_WEBHOOK] = pk_httpd_port(s->webhook);
	s->ports[PK_SERVER_HEALTH] = pk_httpd_probes_port(s->probes, false);
	s->ports[PK_SERVER_METRICS] = pk_httpd_probes_port(s->probes, true);
	/* Ready: the TLS listener is up and pk_certs_open guaranteed a pair. */
	atomic_store(&s->ready, true);
	*out = s;
	return PK_OK;
}

uint16_t pk_server_port(const struct pk_server *s, enum pk_server_listener which)
{
	return (size_t)which < 3 ? s->ports[which] : 0;
}

bool pk_server_ready(const struct pk_server *s)
{
	return atomic_load(&s->ready);
}

void pk_server_stop(struct pk_server *s, unsigned grace_seconds)
{
	if (s == NULL)
		return;
	atomic_store(&s->ready, false);
	atomic_store(&s->stopping, true);
	pk_httpd_quiesce(s->webhook);
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (atomic_load(&s->in_flight) > 0 && seconds_since(&start) < (double)grace_seconds) {
		struct timespec pause = {0, 20 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	unsigned left = atomic_load(&s->in_flight);
	if (left > 0)
		pk_log_warn("stopping with requests still in flight",
		            PK_LOG_UINT("requests", left));
	stop_all(s);
}
