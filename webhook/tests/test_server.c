/*
 * test_server.c - the real listeners on 127.0.0.1, port 0, driven with
 * libcurl over TLS with a test CA: admission answers, bad input, TLS
 * versions, health, metrics, and certificate rotation under a kept-alive
 * connection. Slow clients and large bodies are test_server_slow.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdatomic.h>

#include "server_fixture.h"

/* ---- tests ---- */

static void test_valid_review(void **state)
{
	struct fixture *f = *state;
	struct reply r;
	request(f, "/validate", "POST", REVIEW, strlen(REVIEW), &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.headers, "application/json"));
	json_error_t je;
	json_t *doc = json_loads(r.body, 0, &je);
	assert_non_null(doc);
	const json_t *resp = json_object_get(doc, "response");
	assert_string_equal(json_string_value(json_object_get(resp, "uid")), "7d3c-uid-echo");
	assert_true(json_is_true(json_object_get(resp, "allowed")));
	/* Without API access the skipped checks are announced. */
	assert_true(json_array_size(json_object_get(resp, "warnings")) > 0);
	json_decref(doc);

	request(f, "/mutate", "POST", REVIEW, strlen(REVIEW), &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "7d3c-uid-echo"));
}

static void test_bad_requests(void **state)
{
	struct fixture *f = *state;
	struct reply r;
	request(f, "/validate", "POST", "this is not json", 16, &r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "\"error\""));
	assert_non_null(strstr(r.headers, "application/json"));

	request(f, "/validate", "POST", "", 0, &r);
	assert_int_equal(r.status, 400);

	request(f, "/validate", "POST", "{\"kind\":\"AdmissionReview\"}", 26, &r);
	assert_int_equal(r.status, 400);

	request(f, "/validate", "GET", NULL, 0, &r);
	assert_int_equal(r.status, 405);
	assert_non_null(strstr(r.headers, "Allow: POST"));

	request(f, "/mutate", "PUT", "{}", 2, &r);
	assert_int_equal(r.status, 405);

	request(f, "/nope", "POST", REVIEW, strlen(REVIEW), &r);
	assert_int_equal(r.status, 404);
	request(f, "/", "GET", NULL, 0, &r);
	assert_int_equal(r.status, 404);
	request(f, "/validate/extra", "POST", "{}", 2, &r);
	assert_int_equal(r.status, 404);
}

static void test_oversize(void **state)
{
	struct fixture *f = *state;
	size_t n = 4u * 1024 * 1024;
	char *big = malloc(n);
	assert_non_null(big);
	memset(big, ' ', n);
	big[0] = '{';
	char url[256];
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/validate", f->port);

	/* The whole body goes out before the client reads (no Expect: 100-continue). */
	CURL *c = client(f);
	struct curl_slist *h = curl_slist_append(NULL, "Expect:");
	struct reply *r = malloc(sizeof(*r));
	perform(c, url, "POST", big, n, h, r);
	assert_int_equal(r->rc, CURLE_OK);
	assert_int_equal(r->status, 413);
	assert_non_null(strstr(r->body, "larger than"));

	/* With Expect: 100-continue the answer comes before the body. */
	curl_slist_free_all(h);
	h = curl_slist_append(NULL, "Expect: 100-continue");
	perform(c, url, "POST", big, n, h, r);
	assert_int_equal(r->rc, CURLE_OK);
	assert_int_equal(r->status, 413);

	/* Just over the cap is 413 too; exactly at it is parsed. */
	perform(c, url, "POST", big, PK_ADMISSION_MAX_BODY + 1, NULL, r);
	assert_int_equal(r->status, 413);
	perform(c, url, "POST", big, PK_ADMISSION_MAX_BODY, NULL, r);
	assert_int_equal(r->status, 400);

	/* A body announced beyond what is worth discarding is refused at the headers. */
	curl_slist_free_all(h);
	h = curl_slist_append(NULL, "Content-Length: 104857600");
	struct curl_slist *h2 = curl_slist_append(h, "Expect: 100-continue");
	perform(c, url, "POST", big, 16, h2, r);
	assert_int_equal(r->status, 413);
	curl_slist_free_all(h2);
	curl_easy_cleanup(c);
	free(r);
	free(big);
}

/*
 * The memory budget is measured with the flags the review is parsed with: a
 * "\u0000" first must not end the measuring parse early and let 400,000
 * empty objects (tens of MB once parsed) through to the real one.
 */
static void test_budget_past_nul(void **state)
{
	struct fixture *f = *state;
	const char head[] = "{\"apiVersion\":\"a\\u0000b\",\"items\":[";
	size_t n = 400000, len = strlen(head) + 3 * n + 1;
	char *body = malloc(len + 1);
	assert_non_null(body);
	memcpy(body, head, strlen(head));
	char *p = body + strlen(head);
	for (size_t i = 0; i < n; i++, p += 3)
		memcpy(p, i + 1 < n ? "{}," : "{}]", 3);
	*p++ = '}';
	*p = '\0';
	struct reply r;
	request(f, "/validate", "POST", body, len, &r);
	assert_int_equal(r.status, 413);
	assert_non_null(strstr(r.body, "memory to parse"));
	free(body);
}

/* A GnuTLS client handshake with the given priorities; 0 or the GnuTLS error. */
static int handshake(uint16_t port, const char *prio, int *alert)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	gnutls_certificate_credentials_t cred;
	gnutls_session_t s;
	assert_int_equal(gnutls_certificate_allocate_credentials(&cred), 0);
	assert_int_equal(gnutls_init(&s, GNUTLS_CLIENT), 0);
	assert_int_equal(gnutls_priority_set_direct(s, prio, NULL), 0);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred);
	gnutls_transport_set_int(s, fd);
	gnutls_handshake_set_timeout(s, 10000);
	int rc;
	do
		rc = gnutls_handshake(s);
	while (rc < 0 && !gnutls_error_is_fatal(rc));
	*alert = rc == GNUTLS_E_FATAL_ALERT_RECEIVED ? (int)gnutls_alert_get(s) : -1;
	if (rc == 0)
		gnutls_bye(s, GNUTLS_SHUT_RDWR);
	gnutls_deinit(s);
	gnutls_certificate_free_credentials(cred);
	close(fd);
	return rc;
}

static void test_tls_versions(void **state)
{
	struct fixture *f = *state;
	int alert;
	assert_int_equal(handshake(f->port, "NORMAL:-VERS-ALL:+VERS-TLS1.2", &alert), 0);
	assert_int_equal(handshake(f->port, "NORMAL:-VERS-ALL:+VERS-TLS1.3", &alert), 0);
	/*
	 * The server, not the client, refuses TLS 1.1 and 1.0: the client sends
	 * its hello and the server hangs up (libmicrohttpd closes a failed
	 * handshake without an alert) or answers protocol_version.
	 */
	const char *old_versions[] = {"NORMAL:-VERS-ALL:+VERS-TLS1.1",
	                              "NORMAL:-VERS-ALL:+VERS-TLS1.0"};
	for (size_t i = 0; i < 2; i++) {
		int rc = handshake(f->port, old_versions[i], &alert);
		if (rc == GNUTLS_E_FATAL_ALERT_RECEIVED)
			assert_int_equal(alert, GNUTLS_A_PROTOCOL_VERSION);
		else
			assert_int_equal(rc, GNUTLS_E_PREMATURE_TERMINATION);
	}

	/* libcurl capped at TLS 1.1 cannot talk to it either. */
	char url[256];
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/validate", f->port);
	CURL *c = client(f);
	curl_easy_setopt(c, CURLOPT_SSLVERSION,
	                 (long)(CURL_SSLVERSION_TLSv1_1 | CURL_SSLVERSION_MAX_TLSv1_1));
	struct reply r;
	perform(c, url, "POST", "{}", 2, NULL, &r);
	assert_int_not_equal(r.rc, CURLE_OK);
	curl_easy_cleanup(c);

	/* Plain HTTP on the TLS port is no request either. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/validate", f->port);
	c = client(f);
	perform(c, url, "POST", "{}", 2, NULL, &r);
	assert_int_not_equal(r.status, 200);
	curl_easy_cleanup(c);
}

/* The server refused the handshake: an alert from it, or a hang-up (no local error). */
static void assert_refused(uint16_t port, const char *prio)
{
	int alert;
	int rc = handshake(port, prio, &alert);
	if (rc == GNUTLS_E_FATAL_ALERT_RECEIVED)
		assert_true(alert == GNUTLS_A_HANDSHAKE_FAILURE ||
		            alert == GNUTLS_A_INSUFFICIENT_SECURITY);
	else
		assert_int_equal(rc, GNUTLS_E_PREMATURE_TERMINATION);
}

#define TLS12 "NORMAL:-VERS-ALL:+VERS-TLS1.2"
/* Everything GnuTLS has in CBC mode with SHA-1/SHA-2 MACs, any key exchange. */
#define CBC_ONLY                                                                             \
	":-CIPHER-ALL:+AES-128-CBC:+AES-256-CBC:+CAMELLIA-128-CBC:+3DES-CBC:-MAC-ALL:+SHA1:" \
	"+SHA256:+SHA384"

/* Issue 12, finding 8: ECDHE with AEAD in TLS 1.2, and TLS 1.3; nothing else. */
static void test_tls_suites(void **state)
{
	struct fixture *f = *state;
	int alert;
	/* The fixture's key is ECDSA P-256. */
	const char *good[] = {
	    TLS12 ":-KX-ALL:+ECDHE-ECDSA:-CIPHER-ALL:+AES-128-GCM:-MAC-ALL:+AEAD",
	    TLS12 ":-KX-ALL:+ECDHE-ECDSA:-CIPHER-ALL:+AES-256-GCM:-MAC-ALL:+AEAD",
	    TLS12 ":-KX-ALL:+ECDHE-ECDSA:-CIPHER-ALL:+CHACHA20-POLY1305:-MAC-ALL:+AEAD",
	    "NORMAL:-VERS-ALL:+VERS-TLS1.3",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(handshake(f->port, good[i], &alert), 0);
	assert_refused(f->port, TLS12 ":-KX-ALL:+RSA");
	assert_refused(f->port, TLS12 CBC_ONLY);
	assert_refused(f->port, TLS12 ":-KX-ALL:+ECDHE-ECDSA" CBC_ONLY);

	/*
	 * With an ECDSA key, static RSA and ECDHE-RSA fail whatever the
	 * priorities say; an RSA pair shows the server itself refuses them.
	 */
	char cmd[2048], crt[320], key[320];
	snprintf(crt, sizeof(crt), "%s/rsa.crt", f->pki.dir);
	snprintf(key, sizeof(key), "%s/rsa.key", f->pki.dir);
	snprintf(cmd, sizeof(cmd),
	         "cd '%s' && openssl req -newkey rsa:2048 -nodes -keyout rsa.key -out rsa.csr "
	         "-subj '/CN=serving-rsa' 2>/dev/null && openssl x509 -req -in rsa.csr -CA ca.crt "
	         "-CAkey ca.key -CAcreateserial -days 2 -out rsa.crt 2>/dev/null",
	         f->pki.dir);
	assert_true(testpki_run(cmd));
	struct pk_certs *rsa = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_certs_open(crt, key, NULL, &rsa, &err), PK_OK);
	struct pk_server_config cfg;
	second_config(f, "127.0.0.1", &cfg);
	cfg.metrics_off = true;
	cfg.certs = rsa;
	struct pk_server *s = second_start(&cfg);
	uint16_t port = pk_server_port(s, PK_SERVER_WEBHOOK);
	assert_int_equal(
	    handshake(port, TLS12 ":-KX-ALL:+ECDHE-RSA:-CIPHER-ALL:+AES-128-GCM:-MAC-ALL:+AEAD",
	              &alert),
	    0);
	assert_int_equal(handshake(port, "NORMAL:-VERS-ALL:+VERS-TLS1.3", &alert), 0);
	assert_refused(port, TLS12 ":-KX-ALL:+RSA");
	assert_refused(port, TLS12 ":-KX-ALL:+DHE-RSA");
	assert_refused(port, TLS12 ":-KX-ALL:+ECDHE-RSA" CBC_ONLY);
	second_stop(f, s);
	pk_certs_free(rsa);
}

static void test_health(void **state)
{
	struct fixture *f = *state;
	struct reply r;
	assert_true(pk_server_ready(f->server));
	plain_get(f->health, "/healthz", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "ok\n");
	plain_get(f->health, "/readyz", &r);
	assert_int_equal(r.status, 200);
	plain_get(f->health, "/metrics", &r);
	assert_int_equal(r.status, 404);
	plain_get(f->mport, "/healthz", &r);
	assert_int_equal(r.status, 404);
}

static void test_metrics(void **state)
{
	struct fixture *f = *state;
	struct reply r;
	request(f, "/validate", "POST", REVIEW, strlen(REVIEW), &r);
	request(f, "/validate", "POST", "[", 1, &r);
	plain_get(f->mport, "/metrics", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.headers, "text/plain; version=0.0.4"));
	assert_non_null(strstr(r.body, "poolkeeper_webhook_requests_total{endpoint=\"validate\","
	                               "result=\"allowed\"} "));
	assert_null(strstr(r.body, "poolkeeper_webhook_requests_total{endpoint=\"validate\","
	                           "result=\"allowed\"} 0\n"));
	assert_null(strstr(r.body, "poolkeeper_webhook_requests_total{endpoint=\"validate\","
	                           "result=\"error\"} 0\n"));
	assert_non_null(strstr(r.body, "poolkeeper_webhook_request_duration_seconds_bucket"));
	assert_non_null(strstr(r.body, "poolkeeper_webhook_certificate_reloads_total{result="));
	assert_non_null(strstr(r.body, "poolkeeper_webhook_certificate_expiry_timestamp_seconds "));
	assert_null(strstr(r.body, "poolkeeper_webhook_certificate_expiry_timestamp_seconds 0\n"));
}

/* Polls new connections until the served subject contains `cn` (up to ~10 s). */
static bool wait_for_subject(const struct fixture *f, const char *cn, struct reply *r)
{
	for (int i = 0; i < 100; i++) {
		request(f, "/validate", "POST", REVIEW, strlen(REVIEW), r);
		if (r->status == 200 && strstr(r->subject, cn) != NULL)
			return true;
		usleep(100 * 1000);
	}
	return false;
}

static void test_rotation(void **state)
{
	struct fixture *f = *state;
	struct reply *r = malloc(sizeof(*r));
	char url[256];
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/validate", f->port);

	/* A kept-alive connection opened on the first pair. */
	CURL *kept = client(f);
	perform(kept, url, "POST", REVIEW, strlen(REVIEW), NULL, r);
	assert_int_equal(r->status, 200);
	assert_non_null(strstr(r->subject, "serving-one"));
	assert_int_equal(r->new_connections, 1);

	uint64_t ok_before = pk_metrics_get_reloads(f->metrics, true);
	assert_true(testpki_issue(&f->pki, "serving-two", f->pki.cert, f->pki.key));
	assert_true(wait_for_subject(f, "serving-two", r));
	assert_true(pk_metrics_get_reloads(f->metrics, true) > ok_before);

	/* The old connection goes on working, on the same connection. */
	for (int i = 0; i < 3; i++) {
		perform(kept, url, "POST", REVIEW, strlen(REVIEW), NULL, r);
		assert_int_equal(r->rc, CURLE_OK);
		assert_int_equal(r->status, 200);
		assert_int_equal(r->new_connections, 0);
	}

	/* A key that does not match the certificate: the current pair stays. */
	uint64_t bad_before = pk_metrics_get_reloads(f->metrics, false);
	char other_crt[400], other_key[400], cmd[2048];
	snprintf(other_crt, sizeof(other_crt), "%s/other.crt", f->pki.dir);
	snprintf(other_key, sizeof(other_key), "%s/other.key", f->pki.dir);
	assert_true(testpki_issue(&f->pki, "serving-other", other_crt, other_key));
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s.tmp' && mv '%s.tmp' '%s'", other_key, f->pki.key,
	         f->pki.key, f->pki.key);
	assert_true(testpki_run(cmd));
	for (int i = 0; i < 50 && pk_metrics_get_reloads(f->metrics, false) == bad_before; i++)
		usleep(100 * 1000);
	assert_true(pk_metrics_get_reloads(f->metrics, false) > bad_before);
	request(f, "/validate", "POST", REVIEW, strlen(REVIEW), r);
	assert_int_equal(r->status, 200);
	assert_non_null(strstr(r->subject, "serving-two"));
	perform(kept, url, "POST", REVIEW, strlen(REVIEW), NULL, r);
	assert_int_equal(r->status, 200);

	plain_get(f->mport, "/metrics", r);
	assert_null(strstr(r->body, "poolkeeper_webhook_certificate_reloads_total{result="
	                            "\"failure\"} 0\n"));
	curl_easy_cleanup(kept);
	free(r);
	/* Closed connections give their pairs back (the server notices the close promptly). */
	for (int i = 0; i < 50 && pk_certs_count_sessions(f->certs) > 0; i++)
		usleep(100 * 1000);
	assert_int_equal(pk_certs_count_sessions(f->certs), 0);
}

/* --metrics-bind-address=0: no metrics listener, port 0 reported for it. */
static void test_metrics_off(void **state)
{
	struct fixture *f = *state;
	struct pk_server_config cfg;
	second_config(f, "127.0.0.1", &cfg);
	cfg.metrics_off = true;
	cfg.metrics = f->metrics;
	struct pk_server *s = second_start(&cfg);
	assert_int_not_equal(pk_server_port(s, PK_SERVER_WEBHOOK), 0);
	assert_int_not_equal(pk_server_port(s, PK_SERVER_HEALTH), 0);
	assert_int_equal(pk_server_port(s, PK_SERVER_METRICS), 0);
	second_stop(f, s);
}

/* A second server on IPv6 loopback, when the machine has it. */
static void test_ipv6_listener(void **state)
{
	struct fixture *f = *state;
	int probe = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	bool have_v6 = probe >= 0 && bind(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	if (probe >= 0)
		close(probe);
	if (!have_v6)
		skip();
	struct pk_server_config cfg;
	second_config(f, "::1", &cfg);
	struct pk_server *s = second_start(&cfg);
	char url[256];
	snprintf(url, sizeof(url), "http://[::1]:%u/healthz", pk_server_port(s, PK_SERVER_HEALTH));
	CURL *c = curl_easy_init();
	struct reply *r = malloc(sizeof(*r));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	perform(c, url, "GET", NULL, 0, NULL, r);
	assert_int_equal(r->status, 200);
	curl_easy_cleanup(c);
	free(r);
	second_stop(f, s);
}

static void test_start_errors(void **state)
{
	struct fixture *f = *state;
	struct pk_server_config cfg;
	on_loopback(&cfg, "127.0.0.1");
	cfg.admission = &f->admission;
	cfg.certs = f->certs;
	cfg.webhook_address.port = f->port; /* taken */
	struct pk_server *s = NULL;
	struct pk_err err = {{0}};
	assert_int_not_equal(pk_server_start(&cfg, &s, &err), PK_OK);
	assert_non_null(strstr(err.msg, "webhook"));
	char want[64];
	snprintf(want, sizeof(want), "127.0.0.1:%u", f->port);
	assert_non_null(strstr(err.msg, want));
	cfg.webhook_address.port = 0;
	cfg.health_address.port = f->health;
	assert_int_not_equal(pk_server_start(&cfg, &s, &err), PK_OK);
	assert_non_null(strstr(err.msg, "health"));
	cfg.health_address.port = 0;
	cfg.metrics_address.port = f->mport;
	assert_int_not_equal(pk_server_start(&cfg, &s, &err), PK_OK);
	assert_non_null(strstr(err.msg, "metrics"));
	cfg.metrics_address.port = 0;
	cfg.certs = NULL;
	assert_int_not_equal(pk_server_start(&cfg, &s, &err), PK_OK);
	pk_certs_set_active(f->certs);
	/* The fixture's server still answers. */
	struct reply r;
	request(f, "/validate", "POST", REVIEW, strlen(REVIEW), &r);
	assert_int_equal(r.status, 200);
}

/* ---- reviews take turns between sources ---- */

/* A pool list that takes 150 ms (a pool CREATE's review lists twice): a review that waits,
 * like one waiting for its lookup. */
static atomic_uint slow_lists;
static int slow_list_pools(void *ctx, const char *kind, const char *ns, json_t **items,
                           struct pk_err *err)
{
	(void)ctx;
	(void)kind;
	(void)ns;
	(void)err;
	atomic_fetch_add(&slow_lists, 1);
	usleep(150 * 1000);
	*items = json_array();
	return PK_OK;
}

struct flood {
	const struct fixture *f;
	int ok;
};

/* Two reviews in a row from 127.0.0.2, on one kept-alive connection. */
static void *flood_main(void *arg)
{
	struct flood *fl = arg;
	char url[256];
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/validate", fl->f->port);
	CURL *c = client(fl->f);
	curl_easy_setopt(c, CURLOPT_INTERFACE, "host!127.0.0.2");
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	static __thread struct reply r;
	for (int i = 0; i < 2; i++) {
		perform(c, url, "POST", REVIEW, strlen(REVIEW), h, &r);
		if (r.rc == CURLE_OK && r.status == 200)
			fl->ok++;
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return NULL;
}

/*
 * One client floods the webhook with reviews that each take 300 ms (32 of
 * them, 16 at a time, on the fixture's four review threads); a review from
 * another address, sent while they wait, is answered within about two of
 * them (0.5 s here): it waits for the first thread free, not behind the
 * flood's line (reviewed on the listener's two threads, 4.9 s). The bound
 * leaves room for valgrind.
 */
static void test_reviews_fair_between_sources(void **state)
{
	struct fixture *f = *state;
	struct pk_admission_lookup slow = {.list_pools = slow_list_pools};
	f->admission.lookup = &slow;
	atomic_store(&slow_lists, 0);
	pthread_t t[16];
	struct flood fl[16];
	for (int i = 0; i < 16; i++) {
		fl[i] = (struct flood){.f = f};
		assert_int_equal(pthread_create(&t[i], NULL, flood_main, &fl[i]), 0);
	}
	/* The flood's reviews are in line. */
	for (int i = 0; i < 100 && atomic_load(&slow_lists) < 4; i++)
		usleep(10 * 1000);
	assert_true(atomic_load(&slow_lists) >= 4);
	usleep(100 * 1000);
	double t0 = now_seconds();
	struct reply r;
	request(f, "/validate", "POST", REVIEW, strlen(REVIEW), &r);
	double took = now_seconds() - t0;
	int ok = 0;
	for (int i = 0; i < 16; i++) {
		pthread_join(t[i], NULL);
		ok += fl[i].ok;
	}
	f->admission.lookup = NULL;
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_int_equal(ok, 32);
	if (took > 1.5)
		fail_msg("the other source's review took %.2f s behind the flood (%u lists)", took,
		         atomic_load(&slow_lists));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_metrics_off),
	    cmocka_unit_test(test_valid_review),
	    cmocka_unit_test(test_reviews_fair_between_sources),
	    cmocka_unit_test(test_bad_requests),
	    cmocka_unit_test(test_oversize),
	    cmocka_unit_test(test_budget_past_nul),
	    cmocka_unit_test(test_tls_versions),
	    cmocka_unit_test(test_tls_suites),
	    cmocka_unit_test(test_health),
	    cmocka_unit_test(test_metrics),
	    cmocka_unit_test(test_rotation),
	    cmocka_unit_test(test_start_errors),
	    cmocka_unit_test(test_ipv6_listener),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
