/*
 * kube_transport.c - one call to the API server: rate limit, credentials,
 * the exchange over a pooled handle, the retry rules, bounded answers
 * (or an oversized page scanned unkept), streams.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "buf.h"
#include "kube_client_int.h"
#include "parse.h"

/* A single object over its cap is read to its end without being kept; past this many bytes
 * the server is not sending an API object at all. */
#define SCAN_MAX_BYTES (256u << 20)

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
	struct pk_buf body; /* what a non-streamed answer holds, capped at the call's max */
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
	if (r->scan != NULL && (r->scanning || n > r->body.max - r->body.len)) {
		long code = 0;
		curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
		if (code == 200) {
			if (!r->scanning) {
				/* what was kept so far goes through the scan too */
				pk_kube_scan_feed(r->scan, r->body.p ? r->body.p : "", r->body.len);
				pk_buf_free(&r->body);
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
	/* over the cap, or out of memory: the transfer ends as too large */
	if (pk_buf_append(&r->body, data, n) != PK_OK) {
		r->too_big = true;
		return 0;
	}
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
		const char *v = data + sizeof(ra) - 1;
		size_t vl = n - (sizeof(ra) - 1);
		while (vl > 0 && (*v == ' ' || *v == '\t')) {
			v++;
			vl--;
		}
		while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\r' || v[vl - 1] == '\n'))
			vl--;
		char text[32];
		uint64_t s;
		/* only the delta-seconds form; an HTTP date falls back to the default */
		if (vl < sizeof(text)) {
			memcpy(text, v, vl);
			text[vl] = '\0';
			if (pk_parse_uint(text, 0, 86399, &s, NULL) == PK_OK)
				r->retry_after_s = (long)s;
		}
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
		curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)r->body.max);
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
	CURLcode cc = pk_kube_client_set_trust(c, h);
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
		                         k->path, r->body.max);
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

/* The request's headers: Accept, Content-Type, and the bearer token the config has now. */
static enum pk_kube_reason request_headers(struct pk_kube_client *c, const struct call *k,
                                           struct curl_slist **out, struct pk_kube_error *e)
{
	struct curl_slist *hdrs = NULL, *t;
	char *token = NULL;
	struct pk_err terr;
	*out = NULL;
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
	if (!ok) {
		curl_slist_free_all(hdrs);
		return pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
	}
	*out = hdrs;
	return PK_KUBE_OK;
}

/* One exchange over a pooled handle; takes hdrs. *cc and *code say how it went (code 0: no
 * answer). Fails only when nothing could be sent. */
static enum pk_kube_reason exchange(struct pk_kube_client *c, const struct call *k, const char *url,
                                    struct curl_slist *hdrs, struct resp *r, CURLcode *cc,
                                    long *code, char *errbuf, struct pk_kube_error *e)
{
	CURL *h = pk_kube_client_handle_get(c);
	if (h == NULL) {
		curl_slist_free_all(hdrs);
		return pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
	}
	*r = (struct resp){.scan = k->overflow,
	                   .fn = k->fn,
	                   .ud = k->ud,
	                   .h = h,
	                   .stop = k->stop,
	                   .last_tick_ns = pk_kube_now_ns()};
	pk_buf_init(&r->body, k->max_bytes ? k->max_bytes : c->max_bytes);
	CURLcode sc = setup_handle(c, h, k, url, hdrs, r);
	if (sc != CURLE_OK) {
		curl_slist_free_all(hdrs);
		pk_kube_client_handle_put(c, h, false);
		return pk_kube_error_set(e, PK_KUBE_CONFIG, 0,
		                         "%s %s: cannot trust only the configured CA: %s",
		                         k->method, k->path, curl_easy_strerror(sc));
	}
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	*cc = curl_easy_perform(h);
	*code = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
	pk_kube_client_count(c, k->method, *code);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(hdrs);
	pk_kube_client_handle_put(c, h, *cc == CURLE_OK);
	return PK_KUBE_OK;
}

/* What one attempt came to, and whether to try again. */
struct outcome {
	enum pk_kube_reason rc;
	bool ok;     /* a 2xx answer */
	bool retry;  /* after wait_ns, or a backoff when 0 */
	bool reauth; /* a 401 a fresh credential may cure */
	long long wait_ns;
};

static struct outcome judge(struct pk_kube_client *c, const struct call *k, struct resp *r,
                            CURLcode cc, long code, const char *errbuf, bool reauthed,
                            struct pk_kube_error *e)
{
	const bool is_get = strcmp(k->method, "GET") == 0;
	struct outcome o = {.rc = PK_KUBE_UNKNOWN};
	/* The API server answers some failures (401 to a POST over HTTP/2) and then resets the
	 * stream: curl reports a partial transfer, but the status line and usually the Status
	 * body did arrive. */
	bool answered = code >= 300 && !r->too_big && !r->fn_stopped &&
	                (cc == CURLE_PARTIAL_FILE || cc == CURLE_HTTP2_STREAM ||
	                 cc == CURLE_HTTP2 || cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR);
	if (cc != CURLE_OK && !answered &&
	    !(r->fn != NULL && code == 200 && cc == CURLE_PARTIAL_FILE)) {
		o.rc = transport_error(cc, r, k, errbuf, e);
		/* Refused: nothing was sent, any verb may try again. Other transport failures
		 * may have reached the server: GET only. A certificate that does not verify will
		 * not verify on the next try either (client-go does not retry it). */
		if ((o.rc == PK_KUBE_CONNECTION || o.rc == PK_KUBE_TIMEOUT) &&
		    cc != CURLE_PEER_FAILED_VERIFICATION && cc != CURLE_SSL_CACERT_BADFILE)
			o.retry = k->fn == NULL && (is_get || cc == CURLE_COULDNT_CONNECT);
		return o;
	}
	if (code >= 200 && code < 300) {
		o.rc = PK_KUBE_OK;
		o.ok = true;
		return o;
	}
	o.rc = pk_kube_status_decode(code, r->body.p, r->body.len, e);
	if (e != NULL && r->retry_after_s > 0)
		e->retry_after_s = r->retry_after_s;
	long ra = r->retry_after_s > 0 ? r->retry_after_s : e ? e->retry_after_s : 0;
	enum pk_kube_auth auth = pk_kube_config_auth(c->cfg);
	if (code == 429) {
		o.retry = true;
		o.wait_ns = (long long)(ra > 0 ? ra : 1) * 1000000000LL;
	} else if (code >= 500 && code <= 504 && ra > 0) {
		o.retry = true;
		o.wait_ns = (long long)ra * 1000000000LL;
	} else if (code >= 500 && is_get && k->fn == NULL) {
		o.retry = true;
	} else if (code == 401 && !reauthed &&
	           (auth == PK_KUBE_AUTH_TOKEN_FILE || auth == PK_KUBE_AUTH_EXEC)) {
		o.reauth = true;
	}
	return o;
}

/* How long to wait before retry `attempt`: the server's wait, capped, or a backoff. */
static long long retry_wait_ns(const struct pk_kube_client *c, unsigned attempt,
                               const struct outcome *o)
{
	long long wait = o->wait_ns;
	if (wait > c->retry_after_max_s * 1000000000LL)
		wait = c->retry_after_max_s * 1000000000LL;
	if (wait == 0)
		wait = pk_kube_backoff_ns(attempt, c->backoff_base_ms, c->backoff_max_ms);
	return wait;
}

/* Logs the retry and sleeps before it. */
static void retry_pause(struct pk_kube_client *c, const struct call *k, unsigned attempt,
                        const struct outcome *o, long code, long long wait)
{
	pk_kube_logf(&c->log, PK_KUBE_LOG_INFO,
	             "kube %s %s: %s (HTTP %ld), retry %u of %d in %lld ms", k->method, k->path,
	             pk_kube_reason_name(o->rc), code, attempt + 1, c->retries, wait / 1000000LL);
	pk_kube_nap(k->stop, wait);
}

/*
 * The wait for a rate-limit token, bounded by k's deadline: PK_KUBE_OK and the call's own
 * timeout cut to what is left of the deadline in *timeout_ms, or PK_KUBE_TIMEOUT (nothing
 * taken from the limiter) when the token or the answer could not come in time.
 */
static enum pk_kube_reason wait_for_token(struct pk_kube_client *c, const struct call *k,
                                          long *timeout_ms, struct pk_kube_error *e)
{
	*timeout_ms = k->timeout_ms;
	if (k->deadline_ns <= 0 || k->timeout_ms < 0) {
		pk_kube_sleep_ns(pk_kube_ratelimit_reserve(c->rl));
		return PK_KUBE_OK;
	}
	/* at least a millisecond must be left for the request itself */
	long long left = k->deadline_ns - pk_kube_now_ns() - 1000000LL, wait = 0;
	if (left < 0)
		return pk_kube_error_set(e, PK_KUBE_TIMEOUT, 0, "%s %s: its deadline passed",
		                         k->method, k->path);
	if (!pk_kube_ratelimit_reserve_within(c->rl, left, &wait))
		return pk_kube_error_set(e, PK_KUBE_TIMEOUT, 0,
		                         "%s %s: the client rate limit would hold it past its "
		                         "deadline",
		                         k->method, k->path);
	pk_kube_sleep_ns(wait);
	long left_ms = (long)((k->deadline_ns - pk_kube_now_ns()) / 1000000LL);
	long own = k->timeout_ms > 0 ? k->timeout_ms : c->timeout_ms;
	*timeout_ms = left_ms < 1 ? 1 : (left_ms < own ? left_ms : own);
	return PK_KUBE_OK;
}

enum pk_kube_reason pk_kube_client_perform(struct pk_kube_client *c, const struct call *k,
                                           char **body, size_t *body_len, struct pk_kube_error *e)
{
	char url[PATH_MAX_LEN + 512];
	bool reauthed = false;
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
		struct call kk = *k; /* this attempt's timeout, cut to the deadline */
		enum pk_kube_reason rc = wait_for_token(c, k, &kk.timeout_ms, e);
		if (rc != PK_KUBE_OK)
			return rc;
		struct curl_slist *hdrs;
		struct resp r;
		CURLcode cc = CURLE_OK;
		long code = 0;
		char errbuf[CURL_ERROR_SIZE] = "";
		rc = request_headers(c, &kk, &hdrs, e);
		if (rc == PK_KUBE_OK)
			rc = exchange(c, &kk, url, hdrs, &r, &cc, &code, errbuf, e);
		if (rc != PK_KUBE_OK)
			return rc;
		struct outcome o = judge(c, &kk, &r, cc, code, errbuf, reauthed, e);
		if (o.ok) {
			if (k->overflowed != NULL)
				*k->overflowed = r.scanning;
			/* an empty answer stays NULL */
			if (body != NULL && r.body.p != NULL)
				*body = pk_buf_take(&r.body, body_len);
			pk_buf_free(&r.body);
			return PK_KUBE_OK;
		}
		pk_buf_free(&r.body);
		if (o.reauth) {
			pk_kube_config_token_invalidate(c->cfg);
			reauthed = true;
			attempt--; /* a fresh credential is not a retry */
			continue;
		}
		if (!o.retry || attempt >= (unsigned)c->retries)
			return o.rc;
		long long wait = retry_wait_ns(c, attempt, &o);
		/* a retry that could not end by the deadline is not made */
		if (k->deadline_ns > 0 && pk_kube_now_ns() + wait >= k->deadline_ns)
			return o.rc;
		retry_pause(c, k, attempt, &o, code, wait);
	}
}

void pk_kube_nap(const atomic_int *stop, long long ns)
{
	while (ns > 0 && !(stop != NULL && atomic_load(stop))) {
		long long step = ns > 100000000LL ? 100000000LL : ns;
		pk_kube_sleep_ns(step);
		ns -= step;
	}
}

enum pk_kube_reason pk_kube_client_call_json(struct pk_kube_client *c, const struct call *k,
                                             json_t **out, struct pk_kube_error *e)
{
	char *buf;
	size_t len;
	if (out != NULL)
		*out = NULL;
	enum pk_kube_reason rc = pk_kube_client_perform(c, k, &buf, &len, e);
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
	return pk_kube_client_call_json(c, &k, out, e);
}

enum pk_kube_reason pk_kube_client_request_by(struct pk_kube_client *c, const char *method,
                                              const char *path, const char *content_type,
                                              const char *body, size_t body_len,
                                              long long deadline_ns, json_t **out,
                                              struct pk_kube_error *e)
{
	struct call k = {.method = method,
	                 .path = path,
	                 .content_type = content_type,
	                 .body = body,
	                 .body_len = body_len,
	                 .deadline_ns = deadline_ns};
	return pk_kube_client_call_json(c, &k, out, e);
}

enum pk_kube_reason pk_kube_client_stream(struct pk_kube_client *c, const char *path,
                                          pk_kube_stream_fn *fn, void *ud, const atomic_int *stop,
                                          struct pk_kube_error *e)
{
	struct call k = {
	    .method = "GET", .path = path, .timeout_ms = -1, .fn = fn, .ud = ud, .stop = stop};
	return pk_kube_client_perform(c, &k, NULL, NULL, e);
}
