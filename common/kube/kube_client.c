/*
 * kube_client.c - the Kubernetes API over libcurl: a pool of easy handles
 * sharing DNS and TLS sessions, rate limiting, retries, bounded responses.
 */
#include "kube_client.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "kube_ratelimit.h"

#define POOL_MAX_IDLE 16
#define PATH_MAX_LEN  8192
/* Room for a List's own members beside its one object (limit 1). */
#define PAGE_SLACK (64u << 10)
/* A single object over its cap is read to its end without being kept; past this many bytes
 * the server is not sending an API object at all. */
#define SCAN_MAX_BYTES (256u << 20)

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

/* ---- process-wide curl init: once, thread-safe ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static bool keylog_cleared; /* SSLKEYLOGFILE was set, and removed */
static atomic_flag keylog_warned = ATOMIC_FLAG_INIT;

static void curl_init_once(void)
{
	/* libcurl's OpenSSL backend opens $SSLKEYLOGFILE in curl_global_init and
	 * appends every TLS session key to it: anyone who can read that file and
	 * the traffic reads the bearer tokens. So it goes before libcurl starts. */
	if (getenv("SSLKEYLOGFILE") != NULL) {
		keylog_cleared = true;
		unsetenv("SSLKEYLOGFILE");
	}
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/*
 * Whom the handle trusts. kubeconfig, as client-go reads it: a named CA
 * (certificate-authority(-data), the in-cluster ca.crt) is the whole trust
 * store (Go's tls.Config.RootCAs); the system roots are used only when no CA
 * is named. After curl_easy_reset, CAINFO and CAPATH are libcurl's built-in
 * system paths again, and CAINFO_BLOB overrides CAINFO only: OpenSSL would
 * still look issuers up in CAPATH (/etc/ssl/certs). So both are cleared, and
 * the OS store (CURLSSLOPT_NATIVE_CA) is kept off.
 */
static CURLcode set_trust(const struct pk_kube_client *c, CURL *h)
{
	size_t n;
	const char *pem = pk_kube_config_ca(c->cfg, &n);
	CURLcode cc;
	if (pk_kube_config_insecure(c->cfg)) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
		return CURLE_OK;
	}
	if (pem == NULL)
		return CURLE_OK; /* libcurl's defaults: the system roots */
	struct curl_blob b = {.data = (void *)(uintptr_t)pem, .len = n, .flags = CURL_BLOB_NOCOPY};
	if ((cc = curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b)) != CURLE_OK ||
	    (cc = curl_easy_setopt(h, CURLOPT_CAINFO, NULL)) != CURLE_OK ||
	    (cc = curl_easy_setopt(h, CURLOPT_CAPATH, NULL)) != CURLE_OK ||
	    (cc = curl_easy_setopt(h, CURLOPT_SSL_OPTIONS, 0L)) != CURLE_OK)
		return cc;
	return CURLE_OK;
}

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *ud)
{
	(void)h;
	(void)a;
	struct pk_kube_client *c = ud;
	pthread_mutex_lock(&c->share_mu[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *ud)
{
	(void)h;
	struct pk_kube_client *c = ud;
	pthread_mutex_unlock(&c->share_mu[d]);
}

int pk_kube_client_new(struct pk_kube_config *cfg, const struct pk_kube_client_opts *o,
                       struct pk_kube_client **out, struct pk_err *err)
{
	static const struct pk_kube_client_opts zero;
	*out = NULL;
	if (o == NULL)
		o = &zero;
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_rc != CURLE_OK)
		return pk_err_set(err, PK_ERR_INVALID, "curl_global_init: %s",
		                  curl_easy_strerror(curl_init_rc));
	struct pk_kube_client *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	c->cfg = cfg;
	c->log = o->log ? *o->log : *pk_kube_config_log(cfg);
	c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : PK_KUBE_DEFAULT_TIMEOUT_MS;
	c->connect_ms =
	    o->connect_timeout_ms > 0 ? o->connect_timeout_ms : PK_KUBE_DEFAULT_CONNECT_MS;
	c->max_bytes = o->max_response_bytes ? o->max_response_bytes : PK_KUBE_DEFAULT_MAX_RESPONSE;
	c->max_object = o->max_object_bytes ? o->max_object_bytes : PK_KUBE_MAX_OBJECT_BYTES;
	c->max_depth = o->max_json_depth ? o->max_json_depth : PK_KUBE_JSON_MAX_DEPTH;
	c->retries = o->max_retries == 0  ? PK_KUBE_DEFAULT_RETRIES
	             : o->max_retries < 0 ? 0
	                                  : o->max_retries;
	c->backoff_base_ms = o->backoff_base_ms > 0 ? o->backoff_base_ms : 200;
	c->backoff_max_ms = o->backoff_max_ms > 0 ? o->backoff_max_ms : 10000;
	c->retry_after_max_s = o->retry_after_max_s > 0 ? o->retry_after_max_s : 60;
	snprintf(c->user_agent, sizeof(c->user_agent), "%s",
	         o->user_agent ? o->user_agent : "poolkeeper/0.1");
	double qps = o->qps == 0 ? PK_KUBE_DEFAULT_QPS : o->qps;
	int burst = o->burst > 0 ? o->burst : PK_KUBE_DEFAULT_BURST;
	c->rl = pk_kube_ratelimit_new(qps, burst, NULL, NULL);
	pthread_mutex_init(&c->pool_mu, NULL);
	pthread_mutex_init(&c->stats_mu, NULL);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&c->share_mu[i], NULL);
	c->share = curl_share_init();
	if (c->rl == NULL || c->share == NULL) {
		pk_kube_client_free(c);
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
	curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	if (keylog_cleared && !atomic_flag_test_and_set(&keylog_warned))
		pk_kube_logf(&c->log, PK_KUBE_LOG_WARN,
		             "kube client: SSLKEYLOGFILE was set; it was removed from the "
		             "environment and no TLS keys are written");
	/* Fail now, not at every request, if libcurl cannot limit trust to the CA. */
	CURL *probe = curl_easy_init();
	CURLcode pc = probe ? set_trust(c, probe) : CURLE_OUT_OF_MEMORY;
	curl_easy_cleanup(probe);
	if (pc != CURLE_OK) {
		pk_kube_client_free(c);
		return pk_err_set(err, PK_ERR_INVALID,
		                  "kube client for %s: cannot trust only the configured CA: %s",
		                  pk_kube_config_server(cfg), curl_easy_strerror(pc));
	}
	if (pk_kube_config_insecure(cfg))
		pk_kube_logf(&c->log, PK_KUBE_LOG_WARN,
		             "kube client for %s: insecure-skip-tls-verify is set, the server's "
		             "certificate is not verified",
		             pk_kube_config_server(cfg));
	*out = c;
	return PK_OK;
}

void pk_kube_client_free(struct pk_kube_client *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->npool; i++)
		curl_easy_cleanup(c->pool[i]);
	if (c->share != NULL)
		curl_share_cleanup(c->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&c->share_mu[i]);
	pthread_mutex_destroy(&c->pool_mu);
	pthread_mutex_destroy(&c->stats_mu);
	pk_kube_ratelimit_free(c->rl);
	free(c);
}

struct pk_kube_config *pk_kube_client_config(const struct pk_kube_client *c)
{
	return c->cfg;
}

const struct pk_kube_log *pk_kube_client_log(const struct pk_kube_client *c)
{
	return &c->log;
}

/* ---- the handle pool ---- */

static CURL *handle_get(struct pk_kube_client *c)
{
	CURL *h = NULL;
	pthread_mutex_lock(&c->pool_mu);
	if (c->npool > 0)
		h = c->pool[--c->npool];
	pthread_mutex_unlock(&c->pool_mu);
	return h ? h : curl_easy_init();
}

static void handle_put(struct pk_kube_client *c, CURL *h, bool reusable)
{
	if (h == NULL)
		return;
	if (reusable) {
		pthread_mutex_lock(&c->pool_mu);
		if (c->npool < POOL_MAX_IDLE) {
			c->pool[c->npool++] = h;
			h = NULL;
		}
		pthread_mutex_unlock(&c->pool_mu);
	}
	if (h != NULL)
		curl_easy_cleanup(h);
}

/* ---- URL building ---- */

static bool unreserved(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

/* Appends s percent-encoded at buf[*o]. */
static int put_escaped(char *buf, size_t len, size_t *o, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (unreserved(*p)) {
			if (*o + 1 >= len)
				return PK_ERR_NOMEM;
			buf[(*o)++] = (char)*p;
		} else {
			if (*o + 3 >= len)
				return PK_ERR_NOMEM;
			buf[(*o)++] = '%';
			buf[(*o)++] = hex[*p >> 4];
			buf[(*o)++] = hex[*p & 15];
		}
	}
	buf[*o] = '\0';
	return PK_OK;
}

static int put_raw(char *buf, size_t len, size_t *o, const char *s)
{
	size_t n = strlen(s);
	if (*o + n + 1 > len)
		return PK_ERR_NOMEM;
	memcpy(buf + *o, s, n + 1);
	*o += n;
	return PK_OK;
}

static bool bad_segment(const char *s)
{
	return s == NULL || s[0] == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
}

static int put_segment(char *buf, size_t len, size_t *o, const char *s)
{
	if (bad_segment(s))
		return PK_ERR_INVALID;
	int rc = put_raw(buf, len, o, "/");
	return rc == PK_OK ? put_escaped(buf, len, o, s) : rc;
}

int pk_kube_ref_path(const struct pk_kube_ref *r, char *buf, size_t len)
{
	size_t o = 0;
	int rc;
	if (len == 0)
		return PK_ERR_NOMEM;
	buf[0] = '\0';
	if (bad_segment(r->version) || bad_segment(r->resource))
		return PK_ERR_INVALID;
	if (r->group == NULL || r->group[0] == '\0') {
		rc = put_raw(buf, len, &o, "/api");
	} else {
		rc = put_raw(buf, len, &o, "/apis");
		if (rc == PK_OK)
			rc = put_segment(buf, len, &o, r->group);
	}
	if (rc == PK_OK)
		rc = put_segment(buf, len, &o, r->version);
	if (rc == PK_OK && r->namespace != NULL) {
		rc = put_raw(buf, len, &o, "/namespaces");
		if (rc == PK_OK)
			rc = put_segment(buf, len, &o, r->namespace);
	}
	if (rc == PK_OK)
		rc = put_segment(buf, len, &o, r->resource);
	if (rc == PK_OK && r->name != NULL)
		rc = put_segment(buf, len, &o, r->name);
	if (rc == PK_OK && r->subresource != NULL) {
		if (r->name == NULL)
			return PK_ERR_INVALID;
		rc = put_segment(buf, len, &o, r->subresource);
	}
	if (rc != PK_OK)
		buf[0] = '\0';
	return rc;
}

int pk_kube_query_add(char *buf, size_t len, const char *key, const char *value)
{
	size_t o = strlen(buf);
	size_t keep = o;
	int rc = put_raw(buf, len, &o, strchr(buf, '?') ? "&" : "?");
	if (rc == PK_OK)
		rc = put_escaped(buf, len, &o, key);
	if (rc == PK_OK)
		rc = put_raw(buf, len, &o, "=");
	if (rc == PK_OK)
		rc = put_escaped(buf, len, &o, value);
	if (rc != PK_OK)
		buf[keep] = '\0';
	return rc;
}

long long pk_kube_backoff_ns(unsigned attempt, long base_ms, long max_ms)
{
	long long d = (long long)base_ms * 1000000LL;
	long long max = (long long)max_ms * 1000000LL;
	for (unsigned i = 0; i < attempt && d < max; i++)
		d *= 2;
	if (d > max)
		d = max;
	/* jitter in [d/2, d]: clients that failed together do not retry together */
	unsigned seed = (unsigned)pk_kube_now_ns() ^ (unsigned)(uintptr_t)&d;
	long long half = d / 2;
	return half + (half > 0 ? (long long)(rand_r(&seed) % (half + 1)) : 0);
}

/* ---- one HTTP exchange ---- */

struct resp {
	char *buf;
	size_t len, cap, max;
	bool too_big;
	struct pk_kube_scan *scan; /* a 200 answer over max goes here, unkept */
	bool scanning;
	long retry_after_s;
	/* streaming */
	pk_kube_stream_fn *fn;
	void *ud;
	CURL *h;
	bool fn_stopped;
	const atomic_int *stop;
	long long last_tick_ns;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct resp *r = ud;
	size_t n = size * nmemb;
	if (r->fn != NULL) {
		long code = 0;
		curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
		if (code == 200) {
			if (r->fn(r->ud, data, n) != 0) {
				r->fn_stopped = true;
				return 0;
			}
			return n;
		}
	}
	if (r->scan != NULL && (r->scanning || r->len + n > r->max)) {
		long code = 0;
		curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
		if (code == 200) {
			if (!r->scanning) {
				/* what was kept so far goes through the scan too */
				pk_kube_scan_feed(r->scan, r->buf ? r->buf : "", r->len);
				free(r->buf);
				r->buf = NULL;
				r->len = r->cap = 0;
				r->scanning = true;
			}
			if (pk_kube_scan_bytes(r->scan) + n > SCAN_MAX_BYTES) {
				r->too_big = true;
				return 0;
			}
			pk_kube_scan_feed(r->scan, data, n);
			return n;
		}
	}
	if (r->len + n > r->max) {
		r->too_big = true;
		return 0;
	}
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 16384;
		while (cap < r->len + n + 1)
			cap *= 2;
		if (cap > r->max + 1)
			cap = r->max + 1;
		char *b = realloc(r->buf, cap);
		if (b == NULL) {
			r->too_big = true;
			return 0;
		}
		r->buf = b;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, data, n);
	r->len += n;
	r->buf[r->len] = '\0';
	return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	struct resp *r = ud;
	size_t n = size * nmemb;
	static const char ra[] = "retry-after:";
	if (r->fn != NULL && n == 2 && data[0] == '\r' && data[1] == '\n') {
		/* end of a header block: tell a stream it is connected */
		long code = 0;
		curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
		if (code == 200 && r->fn(r->ud, NULL, 0) != 0) {
			r->fn_stopped = true;
			return 0;
		}
		return n;
	}
	if (n > sizeof(ra) - 1 && strncasecmp(data, ra, sizeof(ra) - 1) == 0) {
		char v[32];
		size_t vl = n - (sizeof(ra) - 1);
		if (vl >= sizeof(v))
			vl = sizeof(v) - 1;
		memcpy(v, data + sizeof(ra) - 1, vl);
		v[vl] = '\0';
		char *end;
		errno = 0;
		long s = strtol(v, &end, 10);
		while (*end == ' ' || *end == '\r' || *end == '\n')
			end++;
		/* only the delta-seconds form; an HTTP date falls back to the default */
		if (errno == 0 && *end == '\0' && s >= 0 && s < 86400)
			r->retry_after_s = s;
	}
	return n;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	struct resp *r = ud;
	if (r->stop != NULL && atomic_load(r->stop))
		return 1;
	if (r->fn != NULL) {
		/* a tick for a stream that is open but quiet */
		long long now = pk_kube_now_ns();
		long code = 0;
		curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
		if (code == 200 && now - r->last_tick_ns >= 1000000000LL) {
			r->last_tick_ns = now;
			if (r->fn(r->ud, "", 0) != 0) {
				r->fn_stopped = true;
				return 1;
			}
		}
	}
	return 0;
}

struct call {
	const char *method;
	const char *path; /* with query */
	const char *content_type;
	const char *body;
	size_t body_len;
	long timeout_ms; /* 0: client default; < 0: none (streams) */
	pk_kube_stream_fn *fn;
	void *ud;
	const atomic_int *stop;
	size_t max_bytes;              /* 0: the client's max_response_bytes */
	struct pk_kube_scan *overflow; /* a 200 answer over max_bytes is scanned, not kept */
	bool *overflowed;              /* set when it was */
};

/* Fails only when the trust settings cannot be applied (then nothing may be sent). */
static CURLcode setup_handle(struct pk_kube_client *c, CURL *h, const struct call *k,
                             const char *url, struct curl_slist *hdrs, struct resp *r)
{
	size_t n;
	const char *pem;
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_SHARE, c->share);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_ms);
	if (k->timeout_ms >= 0)
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
		                 k->timeout_ms ? k->timeout_ms : c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	if (k->overflow == NULL)
		curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)r->max);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	if (k->stop != NULL || k->fn != NULL) {
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, r);
	}
	if ((pem = pk_kube_config_client_cert(c->cfg, &n)) != NULL) {
		struct curl_blob b = {
		    .data = (void *)(uintptr_t)pem, .len = n, .flags = CURL_BLOB_NOCOPY};
		curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b);
		curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
	}
	if ((pem = pk_kube_config_client_key(c->cfg, &n)) != NULL) {
		struct curl_blob b = {
		    .data = (void *)(uintptr_t)pem, .len = n, .flags = CURL_BLOB_NOCOPY};
		curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b);
		curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
	}
	CURLcode cc = set_trust(c, h);
	if (cc != CURLE_OK)
		return cc;
	if (strcmp(k->method, "GET") == 0) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, k->method);
		if (k->body != NULL) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)k->body_len);
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, k->body);
		}
	}
	return CURLE_OK;
}

static enum pk_kube_reason transport_error(CURLcode cc, struct resp *r, const struct call *k,
                                           const char *errbuf, struct pk_kube_error *e)
{
	const char *what = errbuf[0] ? errbuf : curl_easy_strerror(cc);
	switch (cc) {
	case CURLE_WRITE_ERROR:
	case CURLE_FILESIZE_EXCEEDED:
		if (r->fn_stopped)
			return pk_kube_error_set(e, PK_KUBE_CANCELLED, 0, "%s %s: stopped",
			                         k->method, k->path);
		return pk_kube_error_set(e, PK_KUBE_TOO_LARGE, 0,
		                         "%s %s: response larger than %zu bytes", k->method,
		                         k->path, r->max);
	case CURLE_OPERATION_TIMEDOUT:
		return pk_kube_error_set(e, PK_KUBE_TIMEOUT, 0, "%s %s: %s", k->method, k->path,
		                         what);
	case CURLE_ABORTED_BY_CALLBACK:
		return pk_kube_error_set(e, PK_KUBE_CANCELLED, 0, "%s %s: stopped", k->method,
		                         k->path);
	case CURLE_OUT_OF_MEMORY:
		return pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "%s %s: out of memory", k->method,
		                         k->path);
	default:
		return pk_kube_error_set(e, PK_KUBE_CONNECTION, 0, "%s %s: %s", k->method, k->path,
		                         what);
	}
}

static void stats_count(struct pk_kube_client *c, const char *method, long code)
{
	pthread_mutex_lock(&c->stats_mu);
	struct request_stat *st = NULL;
	for (size_t i = 0; i < c->nstats && st == NULL; i++)
		if (c->stats[i].code == code && strcmp(c->stats[i].method, method) == 0)
			st = &c->stats[i];
	if (st == NULL && c->nstats < PK_KUBE_STATS_MAX - 1) {
		st = &c->stats[c->nstats++];
		snprintf(st->method, sizeof(st->method), "%s", method);
		st->code = code;
	}
	if (st == NULL) {
		/* The last slot collects whatever no longer fits. */
		st = &c->stats[PK_KUBE_STATS_MAX - 1];
		snprintf(st->method, sizeof(st->method), "%s", method);
		st->code = -1;
		c->nstats = PK_KUBE_STATS_MAX;
	}
	st->n++;
	pthread_mutex_unlock(&c->stats_mu);
}

void pk_kube_client_request_stats(struct pk_kube_client *c, pk_kube_stats_fn *fn, void *ud)
{
	pthread_mutex_lock(&c->stats_mu);
	for (size_t i = 0; i < c->nstats; i++)
		fn(ud, c->stats[i].method, c->stats[i].code, c->stats[i].n);
	pthread_mutex_unlock(&c->stats_mu);
}

/*
 * Runs one call with rate limiting, auth and the retry rules in the header.
 * On 2xx, *body gets the buffer (caller frees) unless streaming.
 */
static enum pk_kube_reason perform(struct pk_kube_client *c, const struct call *k, char **body,
                                   size_t *body_len, struct pk_kube_error *e)
{
	char url[PATH_MAX_LEN + 512];
	const bool is_get = strcmp(k->method, "GET") == 0;
	bool reauthed = false;
	enum pk_kube_reason rc = PK_KUBE_UNKNOWN;
	if (body != NULL) {
		*body = NULL;
		*body_len = 0;
	}
	if (snprintf(url, sizeof(url), "%s%s", pk_kube_config_server(c->cfg), k->path) >=
	    (int)sizeof(url))
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0, "request path too long");

	for (unsigned attempt = 0;; attempt++) {
		if (k->overflow != NULL)
			pk_kube_scan_reset(k->overflow); /* a retry scans from the start */
		if (k->stop != NULL && atomic_load(k->stop))
			return pk_kube_error_set(e, PK_KUBE_CANCELLED, 0, "%s %s: stopped",
			                         k->method, k->path);
		pk_kube_sleep_ns(pk_kube_ratelimit_reserve(c->rl));

		struct curl_slist *hdrs = NULL, *t;
		char *token = NULL;
		struct pk_err terr;
		if (pk_kube_config_token(c->cfg, &token, &terr) != PK_OK)
			return pk_kube_error_set(e, PK_KUBE_CONFIG, 0, "%s", terr.msg);
		char line[256];
		bool ok = (hdrs = curl_slist_append(NULL, "Accept: application/json")) != NULL;
		if (ok && k->content_type != NULL) {
			snprintf(line, sizeof(line), "Content-Type: %s", k->content_type);
			ok = (t = curl_slist_append(hdrs, line)) != NULL && (hdrs = t);
		}
		if (ok && token != NULL) {
			size_t n = strlen(token) + 32;
			char *auth = malloc(n);
			ok = auth != NULL;
			if (ok) {
				snprintf(auth, n, "Authorization: Bearer %s", token);
				ok = (t = curl_slist_append(hdrs, auth)) != NULL && (hdrs = t);
				memset(auth, 0, n);
				free(auth);
			}
		}
		if (token != NULL) {
			memset(token, 0, strlen(token));
			free(token);
		}
		CURL *h = ok ? handle_get(c) : NULL;
		if (h == NULL) {
			curl_slist_free_all(hdrs);
			return pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
		}
		struct resp r = {.max = k->max_bytes ? k->max_bytes : c->max_bytes,
		                 .scan = k->overflow,
		                 .fn = k->fn,
		                 .ud = k->ud,
		                 .h = h,
		                 .stop = k->stop,
		                 .last_tick_ns = pk_kube_now_ns()};
		char errbuf[CURL_ERROR_SIZE] = "";
		CURLcode cc = setup_handle(c, h, k, url, hdrs, &r);
		if (cc != CURLE_OK) {
			curl_slist_free_all(hdrs);
			handle_put(c, h, false);
			return pk_kube_error_set(e, PK_KUBE_CONFIG, 0,
			                         "%s %s: cannot trust only the configured CA: %s",
			                         k->method, k->path, curl_easy_strerror(cc));
		}
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
		cc = curl_easy_perform(h);
		long code = 0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		stats_count(c, k->method, code);
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
		curl_slist_free_all(hdrs);
		handle_put(c, h, cc == CURLE_OK);

		long long wait = 0;
		bool retry = false;
		/* The API server answers some failures (401 to a POST over HTTP/2)
		 * and then resets the stream: curl reports a partial transfer,
		 * but the status line and usually the Status body did arrive. */
		bool answered =
		    code >= 300 && !r.too_big && !r.fn_stopped &&
		    (cc == CURLE_PARTIAL_FILE || cc == CURLE_HTTP2_STREAM || cc == CURLE_HTTP2 ||
		     cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR);
		if (cc != CURLE_OK && !answered &&
		    !(r.fn != NULL && code == 200 && cc == CURLE_PARTIAL_FILE)) {
			rc = transport_error(cc, &r, k, errbuf, e);
			/* Refused: nothing was sent, any verb may try again. Other
			 * transport failures may have reached the server: GET only.
			 * A certificate that does not verify will not verify on the
			 * next try either (client-go does not retry it). */
			if ((rc == PK_KUBE_CONNECTION || rc == PK_KUBE_TIMEOUT) &&
			    cc != CURLE_PEER_FAILED_VERIFICATION && cc != CURLE_SSL_CACERT_BADFILE)
				retry = k->fn == NULL && (is_get || cc == CURLE_COULDNT_CONNECT);
		} else if (code >= 200 && code < 300) {
			if (k->overflowed != NULL)
				*k->overflowed = r.scanning;
			if (body != NULL) {
				*body = r.buf;
				*body_len = r.len;
				r.buf = NULL;
			}
			free(r.buf);
			return PK_KUBE_OK;
		} else {
			rc = pk_kube_status_decode(code, r.buf, r.len, e);
			if (e != NULL && r.retry_after_s > 0)
				e->retry_after_s = r.retry_after_s;
			long ra = r.retry_after_s > 0 ? r.retry_after_s : e ? e->retry_after_s : 0;
			if (code == 429) {
				retry = true;
				wait = (long long)(ra > 0 ? ra : 1) * 1000000000LL;
			} else if (code >= 500 && code <= 504 && ra > 0) {
				retry = true;
				wait = (long long)ra * 1000000000LL;
			} else if (code >= 500 && is_get && k->fn == NULL) {
				retry = true;
			} else if (code == 401 && !reauthed &&
			           (pk_kube_config_auth(c->cfg) == PK_KUBE_AUTH_TOKEN_FILE ||
			            pk_kube_config_auth(c->cfg) == PK_KUBE_AUTH_EXEC)) {
				pk_kube_config_token_invalidate(c->cfg);
				reauthed = true;
				free(r.buf);
				attempt--; /* a fresh credential is not a retry */
				continue;
			}
		}
		free(r.buf);
		if (!retry || attempt >= (unsigned)c->retries)
			return rc;
		if (wait > c->retry_after_max_s * 1000000000LL)
			wait = c->retry_after_max_s * 1000000000LL;
		if (wait == 0)
			wait = pk_kube_backoff_ns(attempt, c->backoff_base_ms, c->backoff_max_ms);
		pk_kube_logf(&c->log, PK_KUBE_LOG_INFO,
		             "kube %s %s: %s (HTTP %ld), retry %u of %d in %lld ms", k->method,
		             k->path, pk_kube_reason_name(rc), code, attempt + 1, c->retries,
		             wait / 1000000LL);
		while (wait > 0 && !(k->stop != NULL && atomic_load(k->stop))) {
			long long step = wait > 100000000LL ? 100000000LL : wait;
			pk_kube_sleep_ns(step);
			wait -= step;
		}
	}
}

/* perform + JSON parse of the answer into *out (when out is not NULL). */
static enum pk_kube_reason call_json(struct pk_kube_client *c, const struct call *k, json_t **out,
                                     struct pk_kube_error *e)
{
	char *buf;
	size_t len;
	if (out != NULL)
		*out = NULL;
	enum pk_kube_reason rc = perform(c, k, &buf, &len, e);
	if (rc != PK_KUBE_OK)
		return rc;
	if (out != NULL && len > 0) {
		struct pk_err perr;
		int prc = pk_kube_json_parse(buf, len, c->max_depth, out, &perr);
		if (prc != PK_OK) {
			free(buf);
			return pk_kube_error_set(
			    e, prc == PK_ERR_TOO_BIG ? PK_KUBE_TOO_LARGE : PK_KUBE_BAD_RESPONSE, 0,
			    "%s %s: %s", k->method, k->path, perr.msg);
		}
	}
	free(buf);
	return PK_KUBE_OK;
}

enum pk_kube_reason pk_kube_client_request(struct pk_kube_client *c, const char *method,
                                           const char *path, const char *content_type,
                                           const char *body, size_t body_len, long timeout_ms,
                                           json_t **out, struct pk_kube_error *e)
{
	struct call k = {.method = method,
	                 .path = path,
	                 .content_type = content_type,
	                 .body = body,
	                 .body_len = body_len,
	                 .timeout_ms = timeout_ms};
	return call_json(c, &k, out, e);
}

enum pk_kube_reason pk_kube_client_stream(struct pk_kube_client *c, const char *path,
                                          pk_kube_stream_fn *fn, void *ud, const atomic_int *stop,
                                          struct pk_kube_error *e)
{
	struct call k = {
	    .method = "GET", .path = path, .timeout_ms = -1, .fn = fn, .ud = ud, .stop = stop};
	return perform(c, &k, NULL, NULL, e);
}

/* ---- typed requests ---- */

static enum pk_kube_reason build_path(const struct pk_kube_ref *r, char *buf, size_t len,
                                      struct pk_kube_error *e)
{
	int rc = pk_kube_ref_path(r, buf, len);
	if (rc != PK_OK)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0,
		                         "cannot build a request path: %s",
		                         rc == PK_ERR_NOMEM ? "too long"
		                                            : "empty, \".\" or \"..\" name, or no "
		                                              "version or resource");
	return PK_KUBE_OK;
}

static enum pk_kube_reason add_query(char *buf, size_t len, const char *k, const char *v,
                                     struct pk_kube_error *e)
{
	if (v == NULL)
		return PK_KUBE_OK;
	if (pk_kube_query_add(buf, len, k, v) != PK_OK)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0, "query too long");
	return PK_KUBE_OK;
}

enum pk_kube_reason pk_kube_client_get(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                       json_t **out, struct pk_kube_error *e)
{
	char path[PATH_MAX_LEN];
	enum pk_kube_reason rc;
	*out = NULL;
	if (r->name == NULL)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0, "get needs a name");
	if ((rc = build_path(r, path, sizeof(path), e)) != PK_KUBE_OK)
		return rc;
	struct call k = {.method = "GET", .path = path, .timeout_ms = r->timeout_ms};
	return call_json(c, &k, out, e);
}

static enum pk_kube_reason list_path(const struct pk_kube_ref *r, const struct pk_kube_list_opts *o,
                                     char *path, size_t len, struct pk_kube_error *e)
{
	struct pk_kube_ref coll = *r;
	coll.name = NULL;
	coll.subresource = NULL;
	enum pk_kube_reason rc = build_path(&coll, path, len, e);
	if (rc != PK_KUBE_OK || o == NULL)
		return rc;
	char lim[32];
	snprintf(lim, sizeof(lim), "%ld", o->limit);
	if ((rc = add_query(path, len, "labelSelector", o->label_selector, e)) ||
	    (rc = add_query(path, len, "fieldSelector", o->field_selector, e)) ||
	    (rc = add_query(path, len, "limit", o->limit > 0 ? lim : NULL, e)) ||
	    (rc = add_query(path, len, "continue", o->continue_token, e)) ||
	    (rc = add_query(path, len, "resourceVersion", o->resource_version, e)))
		return rc;
	return PK_KUBE_OK;
}

/* Reports an object left out of a page: the log, and the caller's on_skip. */
struct skip_report {
	struct pk_kube_client *c;
	const char *path;
	const struct pk_kube_list_opts *o;
};

static void report_skip(void *ud, const char *ns, const char *name, const char *why)
{
	struct skip_report *sr = ud;
	char qn[300] = "", qns[300] = "";
	if (name != NULL)
		pk_text_quote(name, strlen(name), qn, sizeof(qn));
	if (ns != NULL)
		pk_text_quote(ns, strlen(ns), qns, sizeof(qns));
	pk_kube_logf(&sr->c->log, PK_KUBE_LOG_WARN,
	             "kube list %s: object %s%s%s left out, it cannot be decoded: %s", sr->path,
	             qns, ns ? "/" : "", name ? qn : "(name unreadable)", why);
	if (sr->o != NULL && sr->o->on_skip != NULL)
		sr->o->on_skip(sr->o->skip_ud, ns, name, why);
}

/* The List a page of limit 1 stands for when its one object was over the cap: no items,
 * and the members the scan picked out of it. */
static json_t *page_without_object(const struct pk_kube_scan *scan)
{
	const char *cont = pk_kube_scan_value(scan, 0), *rv = pk_kube_scan_value(scan, 1);
	const char *kind = pk_kube_scan_value(scan, 4), *api = pk_kube_scan_value(scan, 5);
	json_t *meta = json_object(), *page = json_object(), *items = json_array();
	if (meta == NULL || page == NULL || items == NULL ||
	    json_object_set_new(page, "items", items) != 0 ||
	    json_object_set_new(page, "metadata", meta) != 0 ||
	    (kind && json_object_set_new(page, "kind", json_string(kind)) != 0) ||
	    (api && json_object_set_new(page, "apiVersion", json_string(api)) != 0) ||
	    (cont && json_object_set_new(meta, "continue", json_string(cont)) != 0) ||
	    (rv && json_object_set_new(meta, "resourceVersion", json_string(rv)) != 0)) {
		json_decref(page);
		return NULL;
	}
	return page;
}

enum pk_kube_reason pk_kube_client_list(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                        const struct pk_kube_list_opts *o, json_t **out,
                                        struct pk_kube_error *e)
{
	static const char *const scan_paths[] = {
	    "metadata.continue",
	    "metadata.resourceVersion",
	    "items.*.metadata.namespace",
	    "items.*.metadata.name",
	    "kind",
	    "apiVersion",
	};
	char path[PATH_MAX_LEN];
	*out = NULL;
	enum pk_kube_reason rc = list_path(r, o, path, sizeof(path), e);
	if (rc != PK_KUBE_OK)
		return rc;
	/* A page always has room for one object at its cap. */
	size_t cap =
	    c->max_bytes > c->max_object + PAGE_SLACK ? c->max_bytes : c->max_object + PAGE_SLACK;
	struct pk_kube_scan *scan = NULL;
	if (o != NULL && o->limit == 1 &&
	    (scan = pk_kube_scan_new(scan_paths, sizeof(scan_paths) / sizeof(scan_paths[0]))) ==
	        NULL)
		return pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
	bool overflowed = false;
	struct call k = {.method = "GET",
	                 .path = path,
	                 .timeout_ms = r->timeout_ms,
	                 .stop = o ? o->stop : NULL,
	                 .max_bytes = cap,
	                 .overflow = scan,
	                 .overflowed = &overflowed};
	char *buf = NULL;
	size_t len = 0;
	struct skip_report sr = {c, path, o};
	rc = perform(c, &k, &buf, &len, e);
	if (rc == PK_KUBE_OK && overflowed) {
		/* The page's one object is over the cap: it streamed by unkept. */
		char why[160];
		snprintf(why, sizeof(why), "%zu bytes or more, over the %zu-byte cap on one object",
		         pk_kube_scan_bytes(scan) > PAGE_SLACK
		             ? pk_kube_scan_bytes(scan) - PAGE_SLACK
		             : pk_kube_scan_bytes(scan),
		         c->max_object);
		report_skip(&sr, pk_kube_scan_value(scan, 2), pk_kube_scan_value(scan, 3), why);
		if ((*out = page_without_object(scan)) == NULL)
			rc = pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
	} else if (rc == PK_KUBE_OK) {
		struct pk_err perr;
		int prc = pk_kube_list_decode(buf ? buf : "", len, c->max_object, c->max_depth,
		                              report_skip, &sr, out, &perr);
		if (prc != PK_OK)
			rc = pk_kube_error_set(
			    e, prc == PK_ERR_TOO_BIG ? PK_KUBE_TOO_LARGE : PK_KUBE_BAD_RESPONSE, 0,
			    "GET %s: %s", path, perr.msg);
	}
	free(buf);
	pk_kube_scan_free(scan);
	if (rc == PK_KUBE_OK && !json_is_array(json_object_get(*out, "items"))) {
		json_decref(*out);
		*out = NULL;
		return pk_kube_error_set(e, PK_KUBE_BAD_RESPONSE, 0, "GET %s: answer has no items",
		                         path);
	}
	return rc;
}

/*
 * One page of a listing: a page over the response cap is read again with
 * half the limit, down to 1, and page->limit keeps the smaller figure for
 * the pages after it (objects of one collection tend to be alike).
 */
static enum pk_kube_reason list_shrinking(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                          struct pk_kube_list_opts *page, json_t **p,
                                          struct pk_kube_error *e)
{
	for (;;) {
		enum pk_kube_reason rc = pk_kube_client_list(c, r, page, p, e);
		if (rc != PK_KUBE_TOO_LARGE || page->limit <= 1)
			return rc;
		long next = page->limit / 2;
		pk_kube_logf(&c->log, PK_KUBE_LOG_INFO,
		             "kube list %s: a page of %ld is too large (%s); reading pages of %ld",
		             r->resource, page->limit, e ? e->message : "", next);
		page->limit = next;
	}
}

enum pk_kube_reason pk_kube_client_list_all(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                            const struct pk_kube_list_opts *o, json_t **out,
                                            struct pk_kube_error *e)
{
	struct pk_kube_list_opts page = {0};
	if (o != NULL)
		page = *o;
	if (page.limit <= 0)
		page.limit = PK_KUBE_DEFAULT_PAGE;
	page.continue_token = NULL;
	*out = NULL;
	json_t *all = NULL;
	char *cont = NULL;
	bool restarted = false;
	enum pk_kube_reason rc;
	for (;;) {
		json_t *p;
		page.continue_token = cont;
		rc = list_shrinking(c, r, &page, &p, e);
		if (rc == PK_KUBE_GONE && cont != NULL && !restarted) {
			/* The snapshot behind the continue token was compacted: list
			 * everything at once instead (client-go's pager does the same). */
			pk_kube_logf(&c->log, PK_KUBE_LOG_INFO,
			             "kube list %s: continue token expired, listing without paging",
			             r->resource);
			json_decref(all);
			all = NULL;
			free(cont);
			cont = NULL;
			restarted = true;
			struct pk_kube_list_opts full = page;
			full.limit = 0;
			full.continue_token = NULL;
			rc = pk_kube_client_list(c, r, &full, out, e);
			if (rc != PK_KUBE_TOO_LARGE)
				return rc;
			/* Too large in one answer: page by page again, from a new snapshot. */
			pk_kube_logf(&c->log, PK_KUBE_LOG_INFO,
			             "kube list %s: too large in one answer, paging again from the "
			             "start",
			             r->resource);
			continue;
		}
		if (rc != PK_KUBE_OK)
			break;
		/* the page's continue token, taken before the page is merged */
		json_t *meta = json_object_get(p, "metadata");
		const char *next = pk_json_cstr_at(meta, "continue");
		free(cont);
		cont = next && next[0] ? strdup(next) : NULL;
		if (next != NULL && next[0] && cont == NULL) {
			json_decref(p);
			rc = pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
			break;
		}
		if (all == NULL) {
			all = p;
			json_object_del(meta, "continue");
			json_object_del(meta, "remainingItemCount");
		} else {
			int x = json_array_extend(json_object_get(all, "items"),
			                          json_object_get(p, "items"));
			json_decref(p);
			if (x != 0) {
				rc = pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
				break;
			}
		}
		if (cont == NULL) {
			*out = all;
			return PK_KUBE_OK;
		}
	}
	free(cont);
	json_decref(all);
	return rc;
}

enum pk_kube_reason pk_kube_client_list_pages(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                              const struct pk_kube_list_opts *o,
                                              pk_kube_page_fn *fn, void *ud, char *rv,
                                              size_t rv_len, struct pk_kube_error *e)
{
	struct pk_kube_list_opts page = {0};
	if (o != NULL)
		page = *o;
	if (page.limit <= 0)
		page.limit = PK_KUBE_DEFAULT_PAGE;
	char *cont = NULL;
	enum pk_kube_reason rc;
	bool first = true;
	if (rv != NULL && rv_len > 0)
		rv[0] = '\0';
	for (;;) {
		json_t *p;
		page.continue_token = cont;
		rc = list_shrinking(c, r, &page, &p, e);
		if (rc != PK_KUBE_OK)
			break;
		json_t *meta = json_object_get(p, "metadata");
		if (first && rv != NULL && rv_len > 0) {
			const char *v = pk_json_cstr_at(meta, "resourceVersion");
			snprintf(rv, rv_len, "%s", v ? v : "");
		}
		first = false;
		const char *next = pk_json_cstr_at(meta, "continue");
		free(cont);
		cont = next && next[0] ? strdup(next) : NULL;
		bool oom = next != NULL && next[0] && cont == NULL;
		int stop = fn(ud, p);
		json_decref(p);
		if (oom) {
			rc = pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
			break;
		}
		if (stop) {
			rc = pk_kube_error_set(e, PK_KUBE_CANCELLED, 0, "listing stopped");
			break;
		}
		if (cont == NULL)
			break;
	}
	free(cont);
	return rc;
}

static enum pk_kube_reason write_query(char *path, size_t len, const struct pk_kube_write_opts *w,
                                       bool apply, struct pk_kube_error *e)
{
	enum pk_kube_reason rc = PK_KUBE_OK;
	if (w == NULL)
		return rc;
	if ((rc = add_query(path, len, "fieldManager", w->field_manager, e)) ||
	    (rc = add_query(path, len, "dryRun", w->dry_run ? "All" : NULL, e)) ||
	    (rc = add_query(path, len, "force", apply && w->force ? "true" : NULL, e)))
		return rc;
	return rc;
}

static enum pk_kube_reason send_json(struct pk_kube_client *c, const char *method, const char *path,
                                     const char *ctype, const json_t *obj, long timeout_ms,
                                     json_t **out, struct pk_kube_error *e)
{
	char *body = json_dumps(obj, JSON_COMPACT);
	if (body == NULL)
		return pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "cannot serialise the request body");
	struct call k = {.method = method,
	                 .path = path,
	                 .content_type = ctype,
	                 .body = body,
	                 .body_len = strlen(body),
	                 .timeout_ms = timeout_ms};
	enum pk_kube_reason rc = call_json(c, &k, out, e);
	free(body);
	return rc;
}

enum pk_kube_reason pk_kube_client_create(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                          const json_t *obj, const struct pk_kube_write_opts *w,
                                          json_t **out, struct pk_kube_error *e)
{
	char path[PATH_MAX_LEN];
	struct pk_kube_ref coll = *r;
	coll.name = NULL;
	coll.subresource = NULL;
	enum pk_kube_reason rc;
	if (out != NULL)
		*out = NULL;
	if ((rc = build_path(&coll, path, sizeof(path), e)) ||
	    (rc = write_query(path, sizeof(path), w, false, e)))
		return rc;
	return send_json(c, "POST", path, "application/json", obj, r->timeout_ms, out, e);
}

enum pk_kube_reason pk_kube_client_update(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                          const json_t *obj, const struct pk_kube_write_opts *w,
                                          json_t **out, struct pk_kube_error *e)
{
	char path[PATH_MAX_LEN];
	struct pk_kube_ref named = *r;
	enum pk_kube_reason rc;
	if (out != NULL)
		*out = NULL;
	if (named.name == NULL)
		named.name = pk_kube_meta_str(obj, "name");
	if (named.name == NULL)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0, "update needs a name");
	if ((rc = build_path(&named, path, sizeof(path), e)) ||
	    (rc = write_query(path, sizeof(path), w, false, e)))
		return rc;
	return send_json(c, "PUT", path, "application/json", obj, r->timeout_ms, out, e);
}

enum pk_kube_reason pk_kube_client_patch(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                         enum pk_kube_patch_type type, const json_t *patch,
                                         const struct pk_kube_write_opts *w, json_t **out,
                                         struct pk_kube_error *e)
{
	static const char *const ctypes[] = {
	    [PK_KUBE_PATCH_MERGE] = "application/merge-patch+json",
	    [PK_KUBE_PATCH_JSON] = "application/json-patch+json",
	    [PK_KUBE_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
	    [PK_KUBE_PATCH_APPLY] = "application/apply-patch+yaml",
	};
	char path[PATH_MAX_LEN];
	enum pk_kube_reason rc;
	if (out != NULL)
		*out = NULL;
	if ((unsigned)type > PK_KUBE_PATCH_APPLY || r->name == NULL)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0,
		                         "patch needs a name and a type");
	if (type == PK_KUBE_PATCH_JSON ? !json_is_array(patch) : !json_is_object(patch))
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0,
		                         "a JSON patch is an array, other patches are objects");
	if (type == PK_KUBE_PATCH_APPLY && (w == NULL || w->field_manager == NULL))
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0,
		                         "server-side apply needs a field manager");
	if ((rc = build_path(r, path, sizeof(path), e)) ||
	    (rc = write_query(path, sizeof(path), w, type == PK_KUBE_PATCH_APPLY, e)))
		return rc;
	return send_json(c, "PATCH", path, ctypes[type], patch, r->timeout_ms, out, e);
}

enum pk_kube_reason pk_kube_client_delete(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                          const struct pk_kube_delete_opts *d, json_t **out,
                                          struct pk_kube_error *e)
{
	char path[PATH_MAX_LEN];
	enum pk_kube_reason rc;
	if (out != NULL)
		*out = NULL;
	if (r->name == NULL)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0, "delete needs a name");
	if ((rc = build_path(r, path, sizeof(path), e)) != PK_KUBE_OK)
		return rc;
	json_t *opts = json_pack("{s:s,s:s}", "apiVersion", "v1", "kind", "DeleteOptions");
	json_t *pre = json_object();
	if (opts == NULL || pre == NULL) {
		json_decref(opts);
		json_decref(pre);
		return pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
	}
	if (d != NULL) {
		if (d->propagation)
			json_object_set_new(opts, "propagationPolicy", json_string(d->propagation));
		if (d->uid)
			json_object_set_new(pre, "uid", json_string(d->uid));
		if (d->resource_version)
			json_object_set_new(pre, "resourceVersion",
			                    json_string(d->resource_version));
		if (d->has_grace_period)
			json_object_set_new(opts, "gracePeriodSeconds",
			                    json_integer(d->grace_period_s));
		if (d->dry_run)
			json_object_set_new(opts, "dryRun", json_pack("[s]", "All"));
	}
	if (json_object_size(pre) > 0)
		json_object_set(opts, "preconditions", pre);
	json_decref(pre);
	rc = send_json(c, "DELETE", path, "application/json", opts, r->timeout_ms, out, e);
	json_decref(opts);
	return rc;
}

enum pk_kube_reason pk_kube_client_group_versions(struct pk_kube_client *c, const char *group,
                                                  json_t **versions, struct pk_kube_error *e)
{
	char path[512] = "/api";
	*versions = NULL;
	json_t *doc = NULL;
	if (group != NULL && group[0] != '\0') {
		size_t o = 0;
		if (put_raw(path, sizeof(path), &o, "/apis") != PK_OK ||
		    put_segment(path, sizeof(path), &o, group) != PK_OK)
			return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0, "bad group name");
	}
	struct call k = {.method = "GET", .path = path};
	enum pk_kube_reason rc = call_json(c, &k, &doc, e);
	if (rc != PK_KUBE_OK)
		return rc;
	json_t *out = json_array();
	json_t *vs = json_object_get(doc, "versions");
	const char *pref =
	    json_string_value(json_object_get(json_object_get(doc, "preferredVersion"), "version"));
	if (out == NULL || !json_is_array(vs)) {
		json_decref(out);
		json_decref(doc);
		return pk_kube_error_set(e, PK_KUBE_BAD_RESPONSE, 0, "GET %s: no versions", path);
	}
	if (pref != NULL)
		json_array_append_new(out, json_string(pref));
	size_t i;
	json_t *v;
	json_array_foreach(vs, i, v)
	{
		/* /apis/<g> lists {groupVersion, version}; /api lists plain strings */
		const char *name =
		    json_is_string(v) ? json_string_value(v) : pk_kube_json_str(v, "version");
		if (name != NULL && (pref == NULL || strcmp(name, pref) != 0))
			json_array_append_new(out, json_string(name));
	}
	json_decref(doc);
	*versions = out;
	return PK_KUBE_OK;
}

/* Whether the array of version names holds v. */
static bool names_version(const json_t *served, const char *v)
{
	size_t i;
	const json_t *s;
	json_array_foreach(served, i, s)
	{
		if (json_is_string(s) && strcmp(json_string_value(s), v) == 0)
			return true;
	}
	return false;
}

enum pk_kube_reason pk_kube_client_preferred_version(struct pk_kube_client *c, const char *group,
                                                     const char *const *versions, char *out,
                                                     size_t len, struct pk_kube_error *e)
{
	if (out != NULL && len > 0)
		out[0] = '\0';
	if (out == NULL || versions == NULL || versions[0] == NULL)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0,
		                         "preferred version: no versions or no output buffer");
	/* Checked up front, so that a short buffer fails on every cluster. */
	for (size_t i = 0; versions[i] != NULL; i++) {
		size_t n = strlen(versions[i]);
		if (n == 0)
			return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0,
			                         "preferred version: empty version");
		if (n >= len)
			return pk_kube_error_set(
			    e, PK_KUBE_BAD_REQUEST, 0,
			    "preferred version: \"%s\" does not fit in %zu bytes", versions[i],
			    len);
	}
	json_t *served = NULL;
	enum pk_kube_reason rc = pk_kube_client_group_versions(c, group, &served, e);
	if (rc != PK_KUBE_OK)
		return rc;
	for (size_t i = 0; versions[i] != NULL; i++) {
		if (names_version(served, versions[i])) {
			snprintf(out, len, "%s", versions[i]);
			break;
		}
	}
	json_decref(served);
	return PK_KUBE_OK;
}
