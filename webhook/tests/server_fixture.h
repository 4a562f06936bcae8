/*
 * server_fixture.h - what the server suites share: a running server on
 * 127.0.0.1 (port 0) with a test CA and a watched serving pair, an
 * admission review, a small libcurl client, and a raw GnuTLS client for
 * byte-by-byte requests. Include after <cmocka.h>.
 */
#ifndef PK_WEBHOOK_TEST_SERVER_FIXTURE_H
#define PK_WEBHOOK_TEST_SERVER_FIXTURE_H

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "log.h"
#include "server.h"
#include "testcerts.h"

#define PK_TEST_UNUSED __attribute__((unused))

static const char REVIEW[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"7d3c-uid-echo\",\"operation\":\"CREATE\",\"resource\":{\"group\":"
    "\"" PK_POOL_GROUP "\",\"version\":\"" PK_POOL_VERSION "\",\"resource\":\"" PK_POOL_RESOURCE
    "\"},"
    "\"namespace\":\"team-a\",\"name\":\"x\",\"object\":{\"apiVersion\":"
    "\"" PK_POOL_API_VERSION "\",\"kind\":\"" PK_POOL_KIND "\",\"metadata\":{\"name\":\"x\","
    "\"namespace\":\"team-a\"},\"spec\":{\"addresses\":[\"10.0.0.10-10.0.0.20\"],"
    "\"prefix\":24,\"gateway\":\"10.0.0.1\"}}}}";

struct fixture {
	struct testpki pki;
	struct pk_metrics *metrics;
	struct pk_certs *certs;
	struct pk_admission_config admission;
	struct pk_server *server;
	uint16_t port, health, mport;
};

/* The defaults, with every listener on `host` (a loopback literal) and a free port. */
PK_TEST_UNUSED static void on_loopback(struct pk_server_config *cfg, const char *host)
{
	pk_server_default_config(cfg);
	struct pk_hostport *all[] = {&cfg->webhook_address, &cfg->health_address,
	                             &cfg->metrics_address};
	for (size_t i = 0; i < 3; i++) {
		snprintf(all[i]->host, sizeof(all[i]->host), "%s", host);
		all[i]->port = 0;
	}
}

PK_TEST_UNUSED static int setup(void **state)
{
	static struct fixture f;
	memset(&f, 0, sizeof(f));
	pk_log_set_level(PK_LOG_ERROR);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!testpki_init(&f.pki, "serving-one"))
		return -1;
	f.metrics = pk_metrics_new();
	struct pk_err err = {{0}};
	if (pk_certs_open(f.pki.cert, f.pki.key, f.metrics, &f.certs, &err) != PK_OK) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	if (pk_certs_start_watch(f.certs, 1, &err) != PK_OK)
		return -1;
	f.admission.claims = PK_ENFORCE_DENY;
	f.admission.foreign_claims = PK_ENFORCE_WARN;
	f.admission.lookup = NULL;
	struct pk_server_config cfg;
	on_loopback(&cfg, "127.0.0.1");
	cfg.threads = 2;
	cfg.review_threads = 4;
	cfg.admission = &f.admission;
	cfg.certs = f.certs;
	cfg.metrics = f.metrics;
	if (pk_server_start(&cfg, &f.server, &err) != PK_OK) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	f.port = pk_server_port(f.server, PK_SERVER_WEBHOOK);
	f.health = pk_server_port(f.server, PK_SERVER_HEALTH);
	f.mport = pk_server_port(f.server, PK_SERVER_METRICS);
	if (f.port == 0 || f.health == 0 || f.mport == 0)
		return -1;
	*state = &f;
	return 0;
}

PK_TEST_UNUSED static int teardown(void **state)
{
	struct fixture *f = *state;
	pk_certs_stop_watch(f->certs);
	pk_server_stop(f->server, 5);
	/* Every connection closed gave its pair back. */
	size_t held = pk_certs_count_sessions(f->certs);
	pk_certs_free(f->certs);
	pk_metrics_free(f->metrics);
	testpki_cleanup(&f->pki);
	curl_global_cleanup();
	if (held != 0) {
		fprintf(stderr, "%zu TLS sessions still hold a certificate pair\n", held);
		return -1;
	}
	return 0;
}

/* ---- a small libcurl client ---- */

struct reply {
	long status;
	char body[65536];
	size_t len;
	char headers[8192];
	size_t hlen;
	CURLcode rc;
	char subject[512]; /* the server certificate's subject, from CURLINFO_CERTINFO */
	long new_connections;
};

/* Appends what fits of p[0..len) to buf (cap bytes, NUL-terminated); returns len, so that
 * curl reads on. */
PK_TEST_UNUSED static size_t keep_text(char *buf, size_t cap, size_t *used, const char *p,
                                       size_t len)
{
	size_t room = cap - 1 - *used;
	size_t take = len < room ? len : room;
	memcpy(buf + *used, p, take);
	*used += take;
	buf[*used] = '\0';
	return len;
}

PK_TEST_UNUSED static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	struct reply *r = ud;
	return keep_text(r->body, sizeof(r->body), &r->len, p, sz * n);
}

PK_TEST_UNUSED static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	struct reply *r = ud;
	return keep_text(r->headers, sizeof(r->headers), &r->hlen, p, sz * n);
}

PK_TEST_UNUSED static CURL *client(const struct fixture *f)
{
	CURL *c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_CAINFO, f->pki.ca);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(c, CURLOPT_CERTINFO, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	return c;
}

PK_TEST_UNUSED static void perform(CURL *c, const char *url, const char *method, const char *body,
                                   size_t len, struct curl_slist *hdrs, struct reply *r)
{
	memset(r, 0, sizeof(*r));
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	if (body != NULL) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	} else {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	}
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	r->rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &r->new_connections);
	struct curl_certinfo *ci = NULL;
	if (curl_easy_getinfo(c, CURLINFO_CERTINFO, &ci) == CURLE_OK && ci != NULL &&
	    ci->num_of_certs > 0) {
		for (struct curl_slist *s = ci->certinfo[0]; s != NULL; s = s->next)
			if (!strncmp(s->data, "Subject:", 8))
				snprintf(r->subject, sizeof(r->subject), "%s", s->data + 8);
	}
}

PK_TEST_UNUSED static void request(const struct fixture *f, const char *path, const char *method,
                                   const char *body, size_t len, struct reply *r)
{
	char url[256];
	snprintf(url, sizeof(url), "https://127.0.0.1:%u%s", f->port, path);
	CURL *c = client(f);
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	perform(c, url, method, body, len, h, r);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
}

PK_TEST_UNUSED static void plain_get(uint16_t port, const char *path, struct reply *r)
{
	char url[256];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	CURL *c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	perform(c, url, "GET", NULL, 0, NULL, r);
	curl_easy_cleanup(c);
}

/* ---- a second server ---- */

/* A second server's configuration: one thread on host, with the fixture's admission and
 * pair; the caller changes what it tests. */
PK_TEST_UNUSED static void second_config(const struct fixture *f, const char *host,
                                         struct pk_server_config *cfg)
{
	on_loopback(cfg, host);
	cfg->threads = 1;
	cfg->admission = &f->admission;
	cfg->certs = f->certs;
}

PK_TEST_UNUSED static struct pk_server *second_start(const struct pk_server_config *cfg)
{
	struct pk_server *s = NULL;
	struct pk_err err = {{0}};
	if (pk_server_start(cfg, &s, &err) != PK_OK)
		fail_msg("the second server does not start: %s", err.msg);
	return s;
}

/* Stops it, and gives the fixture's server its pair back: one TLS listener per process is
 * served the certificates. */
PK_TEST_UNUSED static void second_stop(const struct fixture *f, struct pk_server *s)
{
	pk_server_stop(s, 1);
	pk_certs_set_active(f->certs);
}

/* ---- a raw TLS client ---- */

struct tls_client {
	int fd;
	gnutls_session_t s;
	gnutls_certificate_credentials_t cred;
};

PK_TEST_UNUSED static void tls_connect(struct tls_client *c, uint16_t port)
{
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	assert_int_equal(connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(gnutls_certificate_allocate_credentials(&c->cred), 0);
	assert_int_equal(gnutls_init(&c->s, GNUTLS_CLIENT), 0);
	assert_int_equal(gnutls_set_default_priority(c->s), 0);
	gnutls_credentials_set(c->s, GNUTLS_CRD_CERTIFICATE, c->cred);
	gnutls_transport_set_int(c->s, c->fd);
	gnutls_handshake_set_timeout(c->s, 10000);
	gnutls_record_set_timeout(c->s, 6000);
	int rc;
	do
		rc = gnutls_handshake(c->s);
	while (rc < 0 && !gnutls_error_is_fatal(rc));
	assert_int_equal(rc, 0);
}

PK_TEST_UNUSED static void tls_send(struct tls_client *c, const char *text)
{
	assert_int_equal(gnutls_record_send(c->s, text, strlen(text)), (ssize_t)strlen(text));
}

/* Reads until the server closes or 6 s pass; returns what came. */
PK_TEST_UNUSED static size_t tls_read_all(struct tls_client *c, char *buf, size_t cap)
{
	size_t len = 0;
	for (;;) {
		ssize_t n = gnutls_record_recv(c->s, buf + len, cap - 1 - len);
		if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (strstr(buf, "\r\n\r\n") != NULL && len > 0 && memchr(buf, '}', len) != NULL)
			break;
		if (len + 1 >= cap)
			break;
	}
	buf[len] = '\0';
	return len;
}

PK_TEST_UNUSED static void tls_close(struct tls_client *c)
{
	gnutls_deinit(c->s);
	gnutls_certificate_free_credentials(c->cred);
	close(c->fd);
}

PK_TEST_UNUSED static double now_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#endif
