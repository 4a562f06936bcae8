/*
 * kube_client.c - the client's life: process-wide curl set-up, whom a
 * handle trusts, the pool of easy handles sharing DNS and TLS sessions,
 * and the request counts. One call is kube_transport.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "kube_client_int.h"

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
CURLcode pk_kube_client_set_trust(const struct pk_kube_client *c, CURL *h)
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
	CURLcode pc = probe ? pk_kube_client_set_trust(c, probe) : CURLE_OUT_OF_MEMORY;
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

CURL *pk_kube_client_handle_get(struct pk_kube_client *c)
{
	CURL *h = NULL;
	pthread_mutex_lock(&c->pool_mu);
	if (c->npool > 0)
		h = c->pool[--c->npool];
	pthread_mutex_unlock(&c->pool_mu);
	return h ? h : curl_easy_init();
}

void pk_kube_client_handle_put(struct pk_kube_client *c, CURL *h, bool reusable)
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

void pk_kube_client_count(struct pk_kube_client *c, const char *method, long code)
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
