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

#include <microhttpd.h>

#include "log.h"

/*
 * TLS 1.3 and 1.2 only. In TLS 1.2, forward-secret ECDHE key exchange with
 * AEAD ciphers only: no static RSA or DHE key exchange, no CBC, no SHA-1
 * MACs (issue 12, finding 8). The KX list does not apply to TLS 1.3, whose
 * suites are all ECDHE/DHE and AEAD; the cipher list also drops its CCM.
 */
#define TLS_PRIORITIES                                                                \
	"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:" \
	"-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305:-MAC-ALL:+AEAD"

struct pk_server {
	struct pk_server_config cfg;
	struct MHD_Daemon *webhook;
	struct MHD_Daemon *health;
	struct MHD_Daemon *metrics;
	uint16_t ports[3];
	atomic_bool ready;
	atomic_bool stopping;
	atomic_uint in_flight;
	char too_big_json[96]; /* the 413 body, naming the limit */
};

/* One admission request, from its headers to its answer (MHD's con_cls). */
struct request {
	struct timespec start;
	enum pk_admission_endpoint endpoint;
	char *body;
	size_t len;      /* bytes kept in body */
	size_t cap;      /* bytes allocated */
	size_t received; /* bytes seen, kept or not */
	bool too_big;
	bool late; /* body still arriving after request_timeout */
};

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

/* ---- responses ---- */

static enum MHD_Result send_buffer(struct pk_server *s, struct MHD_Connection *conn,
                                   unsigned status, char *body, size_t len, bool owned,
                                   const char *content_type, const char *allow)
{
	struct MHD_Response *r =
	    owned ? MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE)
	          : MHD_create_response_from_buffer(len, body, MHD_RESPMEM_PERSISTENT);
	if (r == NULL) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	if (allow != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	if (s != NULL && atomic_load(&s->stopping))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* A constant {"error": ...} body. */
static enum MHD_Result send_error(struct pk_server *s, struct MHD_Connection *conn, unsigned status,
                                  const char *json, const char *allow)
{
	return send_buffer(s, conn, status, (char *)(uintptr_t)json, strlen(json), false,
	                   "application/json", allow);
}

static enum MHD_Result send_json(struct pk_server *s, struct MHD_Connection *conn, unsigned status,
                                 json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	if (text == NULL)
		return send_error(s, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
		                  "{\"error\":\"cannot encode the response\"}", NULL);
	/* jansson allocates with malloc (no custom allocator is installed). */
	return send_buffer(s, conn, status, text, strlen(text), true, "application/json", NULL);
}

/* ---- the admission listener ---- */

/* The Content-Length the client announced, or -1 when absent or unreadable. */
static long long content_length(struct MHD_Connection *conn)
{
	const char *v =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (v == NULL || *v < '0' || *v > '9')
		return -1;
	errno = 0;
	char *end;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno != 0 || *end != '\0' || n > (unsigned long long)INT64_MAX)
		return -1;
	return (long long)n;
}

/* True when the client sent "Expect: 100-continue" and holds the body back until told. */
static bool expects_continue(struct MHD_Connection *conn)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
	return v != NULL && strcasecmp(v, "100-continue") == 0;
}

static void set_timeout(struct MHD_Connection *conn, unsigned seconds)
{
	MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, seconds);
}

static enum pk_metrics_result result_of(int status, const json_t *resp)
{
	if (status != 200)
		return PK_METRICS_ERROR;
	const json_t *allowed = json_object_get(json_object_get(resp, "response"), "allowed");
	return json_is_true(allowed) ? PK_METRICS_ALLOWED : PK_METRICS_DENIED;
}

static enum MHD_Result finish_request(struct pk_server *s, struct MHD_Connection *conn,
                                      struct request *rq)
{
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
	int status = 500;
	json_t *resp = NULL;
	pk_admission_review(s->cfg.admission, rq->endpoint, rq->body ? rq->body : "", rq->len,
	                    &status, &resp);
	enum MHD_Result ret = send_json(s, conn, (unsigned)status, resp);
	pk_metrics_observe_request(s->cfg.metrics, rq->endpoint, result_of(status, resp),
	                           seconds_since(&rq->start));
	if (status != 200)
		pk_log_debug("admission request refused", PK_LOG_INT("status", status),
		             PK_LOG_STR("endpoint", rq->endpoint == PK_ADMISSION_MUTATE
		                                        ? "mutate"
		                                        : "validate"));
	json_decref(resp);
	return ret;
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
		free(rq->body);
		rq->body = NULL;
		rq->len = rq->cap = 0;
	}
	if (rq->too_big || rq->late)
		return MHD_YES;
	if (rq->received > PK_ADMISSION_MAX_BODY) {
		rq->too_big = true;
		free(rq->body);
		rq->body = NULL;
		rq->len = rq->cap = 0;
		return MHD_YES;
	}
	if (rq->len + n + 1 > rq->cap) {
		size_t ncap = rq->cap ? rq->cap : 16384;
		while (ncap < rq->len + n + 1)
			ncap *= 2;
		if (ncap > PK_ADMISSION_MAX_BODY + 1)
			ncap = PK_ADMISSION_MAX_BODY + 1;
		char *nb = realloc(rq->body, ncap);
		if (nb == NULL)
			return MHD_NO;
		rq->body = nb;
		rq->cap = ncap;
	}
	memcpy(rq->body + rq->len, data, n);
	rq->len += n;
	rq->body[rq->len] = '\0';
	return MHD_YES;
}

static enum MHD_Result webhook_access(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
	(void)version;
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

	/* The headers are in: route, then decide whether the body is worth reading. */
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

	rq = calloc(1, sizeof(*rq));
	if (rq == NULL)
		return MHD_NO;
	clock_gettime(CLOCK_MONOTONIC, &rq->start);
	rq->endpoint = ep;
	rq->too_big = clen > (long long)PK_ADMISSION_MAX_BODY;
	*con_cls = rq;
	atomic_fetch_add(&s->in_flight, 1);
	set_timeout(conn, s->cfg.request_timeout);
	return MHD_YES;
}

static void webhook_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                              enum MHD_RequestTerminationCode toe)
{
	struct pk_server *s = cls;
	struct request *rq = *con_cls;
	if (rq == NULL)
		return;
	*con_cls = NULL;
	free(rq->body);
	free(rq);
	atomic_fetch_sub(&s->in_flight, 1);
	/* The connection lives on for the next request only after a clean answer. */
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		set_timeout(conn, s->cfg.idle_timeout);
}

/* Gives a closing TLS connection's certificate pair reference back. */
static void webhook_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                           enum MHD_ConnectionNotificationCode toe)
{
	(void)socket_context;
	struct pk_server *s = cls;
	if (toe != MHD_CONNECTION_NOTIFY_CLOSED)
		return;
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (ci != NULL && ci->tls_session != NULL)
		pk_certs_session_closed(s->cfg.certs, (gnutls_session_t)ci->tls_session);
}

/* ---- health and metrics listeners ---- */

static enum MHD_Result health_access(void *cls, struct MHD_Connection *conn, const char *url,
                                     const char *method, const char *version,
                                     const char *upload_data, size_t *upload_data_size,
                                     void **con_cls)
{
	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	struct pk_server *s = cls;
	bool head = !strcmp(method, MHD_HTTP_METHOD_HEAD);
	if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz")) {
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && !head)
			return send_buffer(NULL, conn, MHD_HTTP_METHOD_NOT_ALLOWED,
			                   (char *)(uintptr_t) "method not allowed\n", 19, false,
			                   "text/plain", "GET, HEAD");
		if (!strcmp(url, "/readyz") &&
		    (!pk_server_ready(s) ||
		     (s->cfg.ready != NULL && !s->cfg.ready(s->cfg.ready_ud))))
			return send_buffer(NULL, conn, MHD_HTTP_SERVICE_UNAVAILABLE,
			                   (char *)(uintptr_t) "not ready\n", 10, false,
			                   "text/plain", NULL);
		return send_buffer(NULL, conn, MHD_HTTP_OK, (char *)(uintptr_t) "ok\n", 3, false,
		                   "text/plain", NULL);
	}
	return send_buffer(NULL, conn, MHD_HTTP_NOT_FOUND, (char *)(uintptr_t) "not found\n", 10,
	                   false, "text/plain", NULL);
}

static enum MHD_Result metrics_access(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	struct pk_server *s = cls;
	if (strcmp(url, "/metrics") != 0)
		return send_buffer(NULL, conn, MHD_HTTP_NOT_FOUND,
		                   (char *)(uintptr_t) "not found\n", 10, false, "text/plain",
		                   NULL);
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return send_buffer(NULL, conn, MHD_HTTP_METHOD_NOT_ALLOWED,
		                   (char *)(uintptr_t) "method not allowed\n", 19, false,
		                   "text/plain", "GET, HEAD");
	size_t len = 0;
	char *text = s->cfg.metrics ? pk_metrics_render(s->cfg.metrics, &len) : NULL;
	if (text == NULL)
		return send_buffer(NULL, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
		                   (char *)(uintptr_t) "metrics unavailable\n", 20, false,
		                   "text/plain", NULL);
	return send_buffer(NULL, conn, MHD_HTTP_OK, text, len, true,
	                   "text/plain; version=0.0.4; charset=utf-8", NULL);
}

/* ---- start and stop ---- */

static void mhd_log(void *cls, const char *fmt, va_list ap) PK_PRINTF(2, 0);
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	const struct pk_server *s = cls;
	/* Before start-up finishes these explain a failure; afterwards they are
	 * mostly clients misbehaving (failed handshakes), which are not ours to
	 * shout about. */
	enum pk_log_level level = pk_server_ready(s) ? PK_LOG_DEBUG : PK_LOG_WARN;
	if (!pk_log_enabled(level))
		return;
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	size_t n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	pk_log_write(level, 0, "libmicrohttpd", PK_LOG_STR("detail", buf), PK_LOG_END);
}

static unsigned default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
}

static unsigned family_flags(const struct sockaddr_storage *ss, bool any, bool dual)
{
	if (any)
		return dual ? MHD_USE_DUAL_STACK : 0;
	return ss->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0;
}

static struct MHD_Daemon *start_plain(struct pk_server *s, const struct pk_hostport *at,
                                      MHD_AccessHandlerCallback handler)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	bool any;
	pk_hostport_sockaddr(at, &ss, &sl, &any);
	const struct sockaddr *sa = any ? NULL : (const struct sockaddr *)&ss;
	struct MHD_Daemon *d = NULL;
	for (int dual = 1; dual >= 0 && d == NULL; dual--) {
		unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
		                 MHD_USE_ERROR_LOG | family_flags(&ss, any, dual);
		d = MHD_start_daemon(
		    flags, at->port, NULL, NULL, handler, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
		    MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_CONNECTION_TIMEOUT,
		    (unsigned)30, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
		    sa ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END, sa, MHD_OPTION_END);
		if (!any)
			break; /* a given address has one family: no dual-stack fallback */
	}
	return d;
}

static struct MHD_Daemon *start_webhook(struct pk_server *s)
{
	const struct pk_server_config *c = &s->cfg;
	struct sockaddr_storage ss;
	socklen_t sl;
	bool any;
	pk_hostport_sockaddr(&c->webhook_address, &ss, &sl, &any);
	const struct sockaddr *sa = any ? NULL : (const struct sockaddr *)&ss;
	struct MHD_Daemon *d = NULL;
	unsigned threads = c->threads ? c->threads : default_threads();
	for (int dual = 1; dual >= 0 && d == NULL; dual--) {
		unsigned flags = MHD_USE_TLS | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
		                 MHD_USE_ITC | MHD_USE_ERROR_LOG | family_flags(&ss, any, dual);
		d = MHD_start_daemon(
		    flags, c->webhook_address.port, NULL, NULL, webhook_access, s,
		    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s, MHD_OPTION_HTTPS_CERT_CALLBACK,
		    pk_certs_retrieve, MHD_OPTION_HTTPS_PRIORITIES, TLS_PRIORITIES,
		    MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT,
		    c->max_connections, MHD_OPTION_CONNECTION_MEMORY_LIMIT, c->connection_memory,
		    MHD_OPTION_CONNECTION_TIMEOUT, c->request_timeout, MHD_OPTION_NOTIFY_COMPLETED,
		    webhook_completed, s, MHD_OPTION_NOTIFY_CONNECTION, webhook_notify, s,
		    sa ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END, sa, MHD_OPTION_END);
		if (!any)
			break;
	}
	return d;
}

static uint16_t bound_port(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	return i ? i->port : 0;
}

static void stop_all(struct pk_server *s)
{
	if (s->webhook != NULL)
		MHD_stop_daemon(s->webhook);
	if (s->health != NULL)
		MHD_stop_daemon(s->health);
	if (s->metrics != NULL)
		MHD_stop_daemon(s->metrics);
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
	pk_certs_set_active(cfg->certs);

	char at[INET6_ADDRSTRLEN + 16];
	s->webhook = start_webhook(s);
	if (s->webhook == NULL) {
		stop_all(s);
		pk_hostport_format(&cfg->webhook_address, at, sizeof(at));
		return pk_err_set(err, PK_ERR_INVALID, "cannot listen on %s (webhook, TLS)", at);
	}
	s->health = start_plain(s, &cfg->health_address, health_access);
	if (s->health == NULL) {
		stop_all(s);
		pk_hostport_format(&cfg->health_address, at, sizeof(at));
		return pk_err_set(err, PK_ERR_INVALID, "cannot listen on %s (health)", at);
	}
	if (!cfg->metrics_off) {
		s->metrics = start_plain(s, &cfg->metrics_address, metrics_access);
		if (s->metrics == NULL) {
			stop_all(s);
			pk_hostport_format(&cfg->metrics_address, at, sizeof(at));
			return pk_err_set(err, PK_ERR_INVALID, "cannot listen on %s (metrics)", at);
		}
		s->ports[PK_SERVER_METRICS] = bound_port(s->metrics);
	}
	s->ports[PK_SERVER_WEBHOOK] = bound_port(s->webhook);
	s->ports[PK_SERVER_HEALTH] = bound_port(s->health);
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
	/* Stop accepting; quiesce hands the listening socket back for us to close. */
	MHD_socket fd = MHD_quiesce_daemon(s->webhook);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
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
