/*
 * test_client_auth.c - client certificates: a webhook that requires one
 * answers a client without one (or with one from another CA, or with a
 * subject not allowed) 401/403 before its body is read, runs no lookup and
 * names no pool; the apiserver's certificate gets the review; the CA
 * bundle reloads; bad bundles and names are refused naming them.
 */
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "client_auth.h"
#include "server_fixture.h"

/* ---- a lookup that counts its calls and knows a pool of another tenant ---- */

static atomic_uint lookups;

static int count_list_pools(void *ctx, const char *kind, const char *ns, json_t **items,
                            struct pk_err *err)
{
	(void)ctx;
	(void)kind;
	(void)ns;
	(void)err;
	atomic_fetch_add(&lookups, 1);
	*items = json_loads("[{\"apiVersion\":\"" PK_POOL_API_VERSION "\",\"kind\":\"" PK_POOL_KIND
	                    "\",\"metadata\":{\"name\":\"secret-pool\",\"namespace\":\"team-a\"},"
	                    "\"spec\":{\"addresses\":[\"10.0.0.0/24\"],\"prefix\":24}}]",
	                    0, NULL);
	return PK_OK;
}

static int count_list_addresses(void *ctx, const char *kind, const char *ns, const char *name,
                                json_t **items, struct pk_err *err)
{
	(void)ctx;
	(void)kind;
	(void)ns;
	(void)name;
	(void)err;
	atomic_fetch_add(&lookups, 1);
	*items = json_array();
	return PK_OK;
}

static int count_get_pool(void *ctx, const char *kind, const char *ns, const char *name,
                          json_t **obj, struct pk_err *err)
{
	(void)ctx;
	(void)kind;
	(void)ns;
	(void)name;
	(void)err;
	atomic_fetch_add(&lookups, 1);
	*obj = NULL;
	return PK_OK;
}

static const struct pk_admission_lookup counting = {
    .list_pools = count_list_pools,
    .list_pool_addresses = count_list_addresses,
    .get_pool = count_get_pool,
};

/* ---- the PKI: the fixture's CA signs the apiserver's client pair; another CA signs a
 * stranger's ---- */

struct clients {
	struct testpki other;   /* another CA */
	char apiserver[2][400]; /* CN=kube-apiserver: crt, key (the fixture's CA) */
	char someone[2][400];   /* CN=someone-else, the fixture's CA */
	char stranger[2][400];  /* CN=kube-apiserver, the other CA */
	char bundle[400];       /* the file the server watches */
};

static struct clients cl;

static void issue(struct testpki *p, const char *cn, char out[2][400], const char *stem)
{
	snprintf(out[0], 400, "%s/%s.crt", p->dir, stem);
	snprintf(out[1], 400, "%s/%s.key", p->dir, stem);
	assert_true(testpki_issue(p, cn, out[0], out[1]));
}

static bool copy_file(const char *from, const char *to)
{
	char cmd[2048];
	int n =
	    snprintf(cmd, sizeof(cmd), "cp '%s' '%s.new' && mv '%s.new' '%s'", from, to, to, to);
	return n > 0 && (size_t)n < sizeof(cmd) && testpki_run(cmd);
}

static int setup_all(void **state)
{
	if (setup(state) != 0)
		return -1;
	struct fixture *f = *state;
	if (!testpki_init(&cl.other, "other-serving"))
		return -1;
	issue(&f->pki, "kube-apiserver", cl.apiserver, "apiserver-client");
	issue(&f->pki, "someone-else", cl.someone, "someone-client");
	issue(&cl.other, "kube-apiserver", cl.stranger, "stranger-client");
	snprintf(cl.bundle, sizeof(cl.bundle), "%s/client-ca.crt", f->pki.dir);
	return copy_file(f->pki.ca, cl.bundle) ? 0 : -1;
}

static int teardown_all(void **state)
{
	testpki_cleanup(&cl.other);
	return teardown(state);
}

/* A server on 127.0.0.1 asking for client certificates, with the counting lookup. */
struct authed {
	struct pk_admission_config admission;
	struct pk_client_auth *auth;
	struct pk_server *server;
	uint16_t port;
};

static void authed_start(const struct fixture *f, struct authed *a, bool required,
                         const char *names)
{
	memset(a, 0, sizeof(*a));
	a->admission = f->admission;
	a->admission.lookup = &counting;
	struct pk_client_auth_config cc = {.ca_file = cl.bundle,
	                                   .required = required,
	                                   .allowed_names = names,
	                                   .metrics = f->metrics};
	struct pk_err err = {{0}};
	if (pk_client_auth_open(&cc, &a->auth, &err) != PK_OK)
		fail_msg("client auth: %s", err.msg);
	struct pk_server_config cfg;
	second_config(f, "127.0.0.1", &cfg);
	cfg.admission = &a->admission;
	cfg.metrics = f->metrics;
	cfg.client_auth = a->auth;
	a->server = second_start(&cfg);
	a->port = pk_server_port(a->server, PK_SERVER_WEBHOOK);
	atomic_store(&lookups, 0);
}

static void authed_stop(const struct fixture *f, struct authed *a)
{
	second_stop(f, a->server);
	pk_client_auth_free(a->auth);
}

/* POST REVIEW to /validate with the client pair `pair` (NULL: none). */
static void post(const struct fixture *f, const struct authed *a, char pair[2][400],
                 struct reply *r)
{
	char url[256];
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/validate", a->port);
	CURL *c = client(f);
	if (pair != NULL) {
		curl_easy_setopt(c, CURLOPT_SSLCERT, pair[0]);
		curl_easy_setopt(c, CURLOPT_SSLKEY, pair[1]);
	}
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	perform(c, url, "POST", REVIEW, strlen(REVIEW), h, r);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
}

/* No review, no pool named, no lookup run. */
static void assert_nothing_told(const struct reply *r)
{
	assert_null(strstr(r->body, "uid"));
	assert_null(strstr(r->body, "secret-pool"));
	assert_null(strstr(r->body, "AdmissionReview"));
	assert_non_null(strstr(r->headers, "Connection: close"));
	assert_int_equal(atomic_load(&lookups), 0);
}

/* ---- tests ---- */

static void test_required_refuses_without_a_certificate(void **state)
{
	struct fixture *f = *state;
	struct authed a;
	authed_start(f, &a, true, NULL);
	uint64_t before = pk_metrics_get_unauthenticated(f->metrics, PK_CLIENT_NO_CERT);
	struct reply r;
	post(f, &a, NULL, &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, 401);
	assert_non_null(strstr(r.body, "client certificate is required"));
	assert_nothing_told(&r);
	assert_int_equal(pk_metrics_get_unauthenticated(f->metrics, PK_CLIENT_NO_CERT), before + 1);
	/* On /mutate, and on a path that does not exist, alike: nothing is routed first. */
	char url[256];
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/nowhere", a.port);
	CURL *c = client(f);
	perform(c, url, "GET", NULL, 0, NULL, &r);
	curl_easy_cleanup(c);
	assert_int_equal(r.status, 401);
	size_t len = 0;
	char *text = pk_metrics_render(f->metrics, &len);
	assert_non_null(strstr(
	    text, "poolkeeper_webhook_unauthenticated_requests_total{reason=\"no_certificate\"}"));
	free(text);
	authed_stop(f, &a);
}

static void test_required_admits_the_apiserver(void **state)
{
	struct fixture *f = *state;
	struct authed a;
	authed_start(f, &a, true, "kube-apiserver, system:kube-apiserver");
	struct reply r;
	post(f, &a, cl.apiserver, &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "7d3c-uid-echo"));
	/* The review ran with its lookups: the overlap names the other pool. */
	assert_true(atomic_load(&lookups) > 0);
	assert_non_null(strstr(r.body, "secret-pool"));
	authed_stop(f, &a);
}

static void test_required_refuses_another_ca(void **state)
{
	struct fixture *f = *state;
	struct authed a;
	authed_start(f, &a, true, NULL);
	uint64_t before = pk_metrics_get_unauthenticated(f->metrics, PK_CLIENT_BAD_CERT);
	struct reply r;
	post(f, &a, cl.stranger, &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, 401);
	assert_nothing_told(&r);
	assert_int_equal(pk_metrics_get_unauthenticated(f->metrics, PK_CLIENT_BAD_CERT),
	                 before + 1);
	authed_stop(f, &a);
}

static void test_names_not_allowed(void **state)
{
	struct fixture *f = *state;
	struct authed a;
	authed_start(f, &a, true, "kube-apiserver");
	struct reply r;
	post(f, &a, cl.someone, &r);
	assert_int_equal(r.status, 403);
	assert_non_null(strstr(r.body, "subject is not allowed"));
	assert_nothing_told(&r);
	post(f, &a, cl.apiserver, &r);
	assert_int_equal(r.status, 200);
	authed_stop(f, &a);
}

/* Not required: no certificate is fine, a bad one is not. */
static void test_optional(void **state)
{
	struct fixture *f = *state;
	struct authed a;
	authed_start(f, &a, false, NULL);
	struct reply r;
	post(f, &a, NULL, &r);
	assert_int_equal(r.status, 200);
	atomic_store(&lookups, 0);
	post(f, &a, cl.stranger, &r);
	assert_int_equal(r.status, 401);
	assert_nothing_told(&r);
	post(f, &a, cl.apiserver, &r);
	assert_int_equal(r.status, 200);
	authed_stop(f, &a);
}

/* The webhook without a client CA asks for nothing: a client certificate is ignored. */
static void test_off_ignores_certificates(void **state)
{
	struct fixture *f = *state;
	struct authed a = {.port = f->port};
	struct reply r;
	post(f, &a, cl.stranger, &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, 200);
}

static void test_bundle_reloads(void **state)
{
	struct fixture *f = *state;
	/* Start trusting the other CA only: the apiserver's pair is refused. */
	assert_true(copy_file(cl.other.ca, cl.bundle));
	struct authed a;
	authed_start(f, &a, true, NULL);
	struct reply r;
	post(f, &a, cl.apiserver, &r);
	assert_int_equal(r.status, 401);
	post(f, &a, cl.stranger, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(pk_client_auth_reload(a.auth), 0); /* unchanged */

	/* A file that is not PEM changes nothing but is counted. */
	assert_true(testpki_write(cl.bundle, "not a certificate\n"));
	assert_int_equal(pk_client_auth_reload(a.auth), PK_ERR_INVALID);
	post(f, &a, cl.stranger, &r);
	assert_int_equal(r.status, 200);

	/* Both CAs: both pass, on new connections and without a restart. */
	char cmd[2100];
	snprintf(cmd, sizeof(cmd), "cat '%s' '%s' > '%s.new' && mv '%s.new' '%s'", f->pki.ca,
	         cl.other.ca, cl.bundle, cl.bundle, cl.bundle);
	assert_true(testpki_run(cmd));
	assert_int_equal(pk_client_auth_reload(a.auth), 1);
	post(f, &a, cl.apiserver, &r);
	assert_int_equal(r.status, 200);
	post(f, &a, cl.stranger, &r);
	assert_int_equal(r.status, 200);

	/* The fixture's CA only. */
	assert_true(copy_file(f->pki.ca, cl.bundle));
	assert_int_equal(pk_client_auth_reload(a.auth), 1);
	post(f, &a, cl.stranger, &r);
	assert_int_equal(r.status, 401);
	authed_stop(f, &a);
}

/* The serving pair's watcher re-reads the bundle too. */
static void test_watcher_reloads_bundle(void **state)
{
	struct fixture *f = *state;
	struct authed a;
	authed_start(f, &a, true, NULL);
	pk_certs_watch_also(f->certs, pk_client_auth_reload, a.auth);
	struct reply r;
	post(f, &a, cl.stranger, &r);
	assert_int_equal(r.status, 401);
	assert_true(copy_file(cl.other.ca, cl.bundle));
	int status = 0;
	for (int i = 0; i < 50 && status != 200; i++) {
		struct timespec pause = {0, 100 * 1000 * 1000};
		nanosleep(&pause, NULL);
		post(f, &a, cl.stranger, &r);
		status = (int)r.status;
	}
	assert_int_equal(status, 200);
	pk_certs_watch_also(f->certs, NULL, NULL);
	assert_true(copy_file(f->pki.ca, cl.bundle));
	authed_stop(f, &a);
}

static void expect_open_error(const char *ca, const char *names, const char *want)
{
	struct pk_client_auth_config cc = {.ca_file = ca, .required = true, .allowed_names = names};
	struct pk_client_auth *a = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_client_auth_open(&cc, &a, &err), PK_ERR_INVALID);
	assert_null(a);
	if (strstr(err.msg, want) == NULL)
		fail_msg("error \"%s\" does not say \"%s\"", err.msg, want);
}

static void test_bad_bundles_and_names(void **state)
{
	struct fixture *f = *state;
	char path[400];
	snprintf(path, sizeof(path), "%s/missing.crt", f->pki.dir);
	expect_open_error(path, NULL, path);
	expect_open_error("", NULL, "--client-ca-file is required");
	snprintf(path, sizeof(path), "%s/garbage.crt", f->pki.dir);
	assert_true(testpki_write(path, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END "
	                                "CERTIFICATE-----\n"));
	expect_open_error(path, NULL, "client CA file");
	assert_true(testpki_write(path, "nothing here\n"));
	expect_open_error(path, NULL, path);
	expect_open_error(f->pki.ca, "a,,b", "--client-cert-allowed-names: empty name");
	expect_open_error(f->pki.ca, " ", "--client-cert-allowed-names: empty name");
	char longname[100];
	memset(longname, 'x', 65);
	longname[65] = '\0';
	expect_open_error(f->pki.ca, longname, "longer than 64");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_required_refuses_without_a_certificate),
	    cmocka_unit_test(test_required_admits_the_apiserver),
	    cmocka_unit_test(test_required_refuses_another_ca),
	    cmocka_unit_test(test_names_not_allowed),
	    cmocka_unit_test(test_optional),
	    cmocka_unit_test(test_off_ignores_certificates),
	    cmocka_unit_test(test_bundle_reloads),
	    cmocka_unit_test(test_watcher_reloads_bundle),
	    cmocka_unit_test(test_bad_bundles_and_names),
	};
	return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
