/*
 * test_kube_client.c - Status decoding, URL building, backoff, and the
 * client's error handling against a scripted server on 127.0.0.1: retries,
 * Retry-After, caps, timeouts, paging, request bodies, discovery and the
 * preferred version of a group, thread safety; and whom it trusts over TLS.
 */
#define _GNU_SOURCE /* strcasestr, unshare */
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "json.h"
#include "kube_client.h"
#include "kube_fakeserver.h"

/* ---- Status decoding (table-driven) ---- */

static void test_status_decode(void **state)
{
	(void)state;
	static const struct {
		long code;
		const char *body;
		enum pk_kube_reason want;
		const char *msg;
		long retry_after;
	} v[] = {
	    {404,
	     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"
	     "\"configmaps \\\"x\\\" not found\",\"reason\":\"NotFound\",\"code\":404}",
	     PK_KUBE_NOT_FOUND, "configmaps \"x\" not found", 0},
	    {409, "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\",\"message\":\"exists\"}",
	     PK_KUBE_ALREADY_EXISTS, "exists", 0},
	    {409, "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"message\":\"modified\"}",
	     PK_KUBE_CONFLICT, "modified", 0},
	    {409, "not json", PK_KUBE_CONFLICT, "HTTP 409 Conflict: not json", 0},
	    {422, "{\"kind\":\"Status\",\"reason\":\"Invalid\",\"message\":\"bad\"}",
	     PK_KUBE_INVALID, "bad", 0},
	    {403, "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"message\":\"no\"}",
	     PK_KUBE_FORBIDDEN, "no", 0},
	    {401, "{\"kind\":\"Status\",\"reason\":\"Unauthorized\"}", PK_KUBE_UNAUTHORIZED,
	     "HTTP 401 Unauthorized", 0},
	    {429,
	     "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"message\":\"slow down\","
	     "\"details\":{\"retryAfterSeconds\":3}}",
	     PK_KUBE_TOO_MANY_REQUESTS, "slow down", 3},
	    {410, "{\"kind\":\"Status\",\"reason\":\"Expired\",\"message\":\"too old\"}",
	     PK_KUBE_GONE, "too old", 0},
	    {410, "{\"kind\":\"Status\",\"reason\":\"Gone\"}", PK_KUBE_GONE, NULL, 0},
	    {504, "{\"kind\":\"Status\",\"reason\":\"Timeout\"}", PK_KUBE_TIMEOUT, NULL, 0},
	    {500, "{\"kind\":\"Status\",\"reason\":\"ServerTimeout\"}", PK_KUBE_TIMEOUT, NULL, 0},
	    {500, "{\"kind\":\"Status\",\"reason\":\"InternalError\"}", PK_KUBE_SERVER_ERROR, NULL,
	     0},
	    {503, "", PK_KUBE_SERVER_ERROR, "HTTP 503 ServerError", 0},
	    {400, NULL, PK_KUBE_BAD_REQUEST, NULL, 0},
	    {405, "{}", PK_KUBE_METHOD_NOT_ALLOWED, NULL, 0},
	    {418, "{\"kind\":\"Status\"}", PK_KUBE_UNKNOWN, NULL, 0},
	    {404, "{\"kind\":\"ConfigMap\"}", PK_KUBE_NOT_FOUND, "HTTP 404 NotFound: {", 0},
	    {200, "{}", PK_KUBE_OK, NULL, 0},
	    /* the reason wins over the code */
	    {400, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}", PK_KUBE_NOT_FOUND, NULL, 0},
	    /* a huge retry hint is ignored */
	    {429, "{\"kind\":\"Status\",\"details\":{\"retryAfterSeconds\":99999999}}",
	     PK_KUBE_TOO_MANY_REQUESTS, NULL, 0},
	    /* deep garbage is not parsed at all */
	    {500, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", PK_KUBE_SERVER_ERROR,
	     NULL, 0},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct pk_kube_error e;
		enum pk_kube_reason r = pk_kube_status_decode(
		    v[i].code, v[i].body, v[i].body ? strlen(v[i].body) : 0, &e);
		if (r != v[i].want)
			print_error("vector %zu: got %s\n", i, pk_kube_reason_name(r));
		assert_int_equal(r, v[i].want);
		assert_int_equal(e.code, v[i].code);
		if (v[i].msg != NULL && strncmp(e.message, v[i].msg, strlen(v[i].msg)) != 0) {
			print_error("vector %zu: message \"%s\"\n", i, e.message);
			fail();
		}
		assert_int_equal(e.retry_after_s, v[i].retry_after);
	}
	/* ERROR watch events carry the code inside the Status */
	json_t *st = json_pack("{s:s,s:s,s:i,s:s}", "kind", "Status", "reason", "Expired", "code",
	                       410, "message", "too old resource version");
	struct pk_kube_error e;
	assert_int_equal(pk_kube_status_decode_json(0, st, &e), PK_KUBE_GONE);
	assert_int_equal(e.code, 410);
	assert_string_equal(e.status_reason, "Expired");
	json_decref(st);
	/* an empty message still leaves words to show (an ERROR event with "message": "") */
	st = json_pack("{s:s,s:s,s:s}", "kind", "Status", "status", "Failure", "message", "");
	assert_int_equal(pk_kube_status_decode_json(0, st, &e), PK_KUBE_UNKNOWN);
	assert_true(e.message[0] != '\0');
	json_decref(st);
	/* a code from the body is success only with status Success */
	static const struct {
		const char *body;
		enum pk_kube_reason want;
	} b[] = {
	    {"{\"code\":261}", PK_KUBE_UNKNOWN},
	    {"{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":200}", PK_KUBE_UNKNOWN},
	    {"{\"kind\":\"Status\",\"status\":\"Success\",\"code\":200}", PK_KUBE_OK},
	    {"{\"kind\":\"Status\",\"code\":99}", PK_KUBE_UNKNOWN},
	};
	for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++)
		assert_int_equal(pk_kube_status_decode(0, b[i].body, strlen(b[i].body), &e),
		                 b[i].want);
	assert_string_equal(pk_kube_reason_name(PK_KUBE_CONFLICT), "Conflict");
	assert_string_equal(pk_kube_reason_name((enum pk_kube_reason)999), "Unknown");
}

/* ---- URL building ---- */

static void test_paths(void **state)
{
	(void)state;
	static const struct {
		struct pk_kube_ref r;
		const char *want; /* NULL: refused */
	} v[] = {
	    {{.version = "v1", .resource = "configmaps", .namespace = "ns", .name = "a"},
	     "/api/v1/namespaces/ns/configmaps/a"},
	    {{.group = "", .version = "v1", .resource = "namespaces"}, "/api/v1/namespaces"},
	    {{.group = "ipam.cluster.x-k8s.io",
	      .version = "v1beta2",
	      .resource = "ipaddressclaims",
	      .namespace = "d",
	      .name = "c",
	      .subresource = "status"},
	     "/apis/ipam.cluster.x-k8s.io/v1beta2/namespaces/d/ipaddressclaims/c/status"},
	    {{.group = "ipam.poolkeeper.io",
	      .version = "v1alpha1",
	      .resource = "globalippools",
	      .name = "g"},
	     "/apis/ipam.poolkeeper.io/v1alpha1/globalippools/g"},
	    {{.version = "v1", .resource = "configmaps", .namespace = "ns", .name = "a b/c?d%"},
	     "/api/v1/namespaces/ns/configmaps/a%20b%2Fc%3Fd%25"},
	    {{.version = "v1", .resource = "configmaps", .namespace = "ns", .name = ".."}, NULL},
	    {{.version = "v1", .resource = "configmaps", .namespace = "ns", .name = "."}, NULL},
	    {{.version = "v1", .resource = "configmaps", .namespace = "", .name = "x"}, NULL},
	    {{.version = "v1", .resource = "configmaps", .name = ""}, NULL},
	    {{.resource = "configmaps"}, NULL},
	    {{.version = "v1"}, NULL},
	    {{.version = "v1", .resource = "pods", .subresource = "status"}, NULL},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char buf[512];
		int rc = pk_kube_ref_path(&v[i].r, buf, sizeof(buf));
		if (v[i].want == NULL) {
			assert_int_equal(rc, PK_ERR_INVALID);
			continue;
		}
		assert_int_equal(rc, PK_OK);
		assert_string_equal(buf, v[i].want);
	}
	char small[10];
	struct pk_kube_ref r = {.version = "v1", .resource = "configmaps"};
	assert_int_equal(pk_kube_ref_path(&r, small, sizeof(small)), PK_ERR_TOO_BIG);

	char q[128] = "/api/v1/pods";
	assert_int_equal(pk_kube_query_add(q, sizeof(q), "labelSelector", "app=x,tier!=db"), PK_OK);
	assert_int_equal(pk_kube_query_add(q, sizeof(q), "limit", "5"), PK_OK);
	assert_string_equal(q, "/api/v1/pods?labelSelector=app%3Dx%2Ctier%21%3Ddb&limit=5");
	char tiny[20] = "/x";
	assert_int_equal(pk_kube_query_add(tiny, sizeof(tiny), "k", "a very long value"),
	                 PK_ERR_TOO_BIG);
	assert_string_equal(tiny, "/x"); /* unchanged on failure */
}

static void test_backoff(void **state)
{
	(void)state;
	for (unsigned a = 0; a < 40; a++) {
		long long d = pk_kube_backoff_ns(a, 100, 5000);
		long long full = 100LL * 1000000LL << (a < 6 ? a : 6);
		if (full > 5000LL * 1000000LL)
			full = 5000LL * 1000000LL;
		assert_true(d >= full / 2);
		assert_true(d <= full);
	}
}

static void test_quote_object(void **state)
{
	(void)state;
	char buf[700];
	pk_kube_quote_object("ns-a", "cm-1", buf, sizeof(buf));
	assert_string_equal(buf, "ns-a/cm-1");
	pk_kube_quote_object(NULL, "node-1", buf, sizeof(buf));
	assert_string_equal(buf, "node-1");
	pk_kube_quote_object("ns-a", NULL, buf, sizeof(buf));
	assert_string_equal(buf, "ns-a/(name unreadable)");
	/* control characters are quoted, not written raw into a log line */
	pk_kube_quote_object("ns", "a\nb", buf, sizeof(buf));
	assert_null(strchr(buf, '\n'));
	assert_non_null(strstr(buf, "ns/a"));
	char small[6];
	pk_kube_quote_object("ns-a", "cm-1", small, sizeof(small));
	assert_string_equal(small, "ns-a/");
}

/* ---- against the scripted server ---- */

static struct fake_server srv;
static int reset(void **state);
static struct pk_kube_config *cfg;
static struct pk_kube_client *cli;

/* The responder of the running test. */
static fs_responder *cur;
static void *cur_ud;
static void dispatch(void *ud, int index, const struct fs_request *req, struct fs_response *out)
{
	(void)ud;
	cur(cur_ud, index, req, out);
}

static struct pk_kube_config *config_for(int port, const char *user)
{
	char text[1024];
	snprintf(text, sizeof(text),
	         "clusters:\n- name: c\n  cluster: {server: \"http://127.0.0.1:%d\"}\n"
	         "users:\n- name: u\n  user: {%s}\n"
	         "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
	         port, user);
	struct pk_kube_config *c;
	struct pk_err err;
	int rc = pk_kube_config_parse(text, strlen(text), "test", "/tmp", NULL, &c, &err);
	if (rc != PK_OK)
		print_error("%s\n", err.msg);
	assert_int_equal(rc, PK_OK);
	return c;
}

static struct pk_kube_client *client_for(struct pk_kube_config *c, size_t max_bytes)
{
	struct pk_kube_client_opts o = {.qps = -1,
	                                .backoff_base_ms = 10,
	                                .backoff_max_ms = 50,
	                                .max_retries = 3,
	                                .timeout_ms = 5000,
	                                .max_response_bytes = max_bytes};
	struct pk_kube_client *k;
	struct pk_err err;
	assert_int_equal(pk_kube_client_new(c, &o, &k, &err), PK_OK);
	return k;
}

/* ---- a List page, object by object (pure) ---- */

static void collect_skip(void *ud, const char *ns, const char *name, const char *why)
{
	char *out = ud;
	size_t l = strlen(out);
	snprintf(out + l, 256 - l, "%s/%s:%s;", ns ? ns : "-", name ? name : "-",
	         strstr(why, "deeper") ? "deep"
	         : strstr(why, "cap")  ? "big"
	                               : "bad");
}

static void test_list_decode(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int rc;
		int items;        /* decoded */
		const char *skip; /* reported */
	} v[] = {
	    {"{\"items\":[]}", PK_OK, 0, ""},
	    {" {\"kind\":\"L\",\"items\":[{\"metadata\":{\"name\":\"a\"}} , {}],\"metadata\":{}} ",
	     PK_OK, 2, ""},
	    /* one bad object among good ones: the good ones arrive */
	    {"{\"items\":[{\"a\":1},{\"metadata\":{\"name\":\"k\",\"namespace\":\"n\"},"
	     "\"x\":{\"\\u0000\":1}},{\"b\":\"\\u0000\"}]}",
	     PK_OK, 2, "n/k:bad;"},
	    {"{\"items\":[1,\"s\",null,{\"metadata\":{\"name\":\"ok\"}}]}", PK_OK, 1,
	     "-/-:bad;-/-:bad;-/-:bad;"},
	    {"{\"items\":[{\"metadata\":{\"name\":\"d\"},\"s\":[[[[[[[[[[1]]]]]]]]]]}]}", PK_OK, 0,
	     "-/d:deep;"},
	    {"{\"items\":[{\"metadata\":{\"name\":\"big\"},\"v\":"
	     "\"0123456789012345678901234567890123"
	     "4567890123456789\"}]}",
	     PK_OK, 0, "-/big:big;"},
	    /* a List without items decodes as it is (the caller says what is missing) */
	    {"{\"kind\":\"Status\"}", PK_OK, -1, ""},
	    /* the page itself broken */
	    {"[]", PK_ERR_INVALID, 0, ""},
	    {"", PK_ERR_INVALID, 0, ""},
	    {"{\"items\":[{}", PK_ERR_INVALID, 0, ""},
	    {"{\"items\":[{} {}]}", PK_ERR_INVALID, 0, ""},
	    {"{\"items\":[]} x", PK_ERR_INVALID, 0, ""},
	    {"{\"items\":[],\"metadata\":{\"a\":tru}}", PK_ERR_INVALID, 0, ""},
	    {"{\"items\" []}", PK_ERR_INVALID, 0, ""},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char skipped[256] = "";
		json_t *page;
		struct pk_err err;
		int rc = pk_kube_list_decode(v[i].text, strlen(v[i].text), 64, 8, collect_skip,
		                             skipped, &page, &err);
		if (rc != v[i].rc)
			print_error("case %zu: %s\n", i, err.msg);
		assert_int_equal(rc, v[i].rc);
		assert_string_equal(skipped, v[i].skip);
		if (rc != PK_OK) {
			assert_null(page);
			assert_true(err.msg[0] != '\0');
			continue;
		}
		json_t *items = json_object_get(page, "items");
		if (v[i].items < 0)
			assert_null(items);
		else
			assert_int_equal(json_array_size(items), (size_t)v[i].items);
		json_decref(page);
	}
}

static void test_object_ident(void **state)
{
	(void)state;
	char buf[PK_KUBE_IDENT_MAX];
	const char *ev =
	    "{\"type\":\"ADDED\",\"object\":{\"spec\":{\"metadata\":{\"name\":\"no\"}},"
	    "\"metadata\":{\"namespace\":\"t\",\"name\":\"a\\\"b\\u0041\"}}}";
	pk_kube_object_ident(ev, strlen(ev), "object", buf, sizeof(buf));
	assert_string_equal(buf, "t/a\\x22bA");
	pk_kube_object_ident(ev, strlen(ev), "", buf, sizeof(buf));
	assert_string_equal(buf, "");
	const char *nul = "{\"metadata\":{\"name\":\"a\\u0000b\",\"namespace\":\"n\"}}";
	pk_kube_object_ident(nul, strlen(nul), NULL, buf, sizeof(buf));
	assert_string_equal(buf, ""); /* a name holding a NUL is no name */
}

static int setup(void **state)
{
	(void)state;
	if (fs_start(&srv, dispatch, NULL) != 0)
		return -1;
	cfg = config_for(srv.port, "token: t0k3n");
	cli = client_for(cfg, 1 << 20);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pk_kube_client_free(cli);
	pk_kube_config_free(cfg);
	fs_stop(&srv);
	return 0;
}

static const struct pk_kube_ref cm = {
    .version = "v1", .resource = "configmaps", .namespace = "ns", .name = "a"};

static void r_ok(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	(void)q;
	o->body = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}";
}

static void test_get_ok(void **state)
{
	(void)state;
	cur = r_ok;
	json_t *obj;
	struct pk_kube_error e;
	assert_int_equal(pk_kube_client_get(cli, &cm, &obj, &e), PK_KUBE_OK);
	assert_string_equal(pk_json_meta_cstr(obj, "name"), "a");
	json_decref(obj);
	assert_int_equal(srv.nreq, 1);
	assert_string_equal(srv.reqs[0].method, "GET");
	assert_string_equal(srv.reqs[0].path, "/api/v1/namespaces/ns/configmaps/a");
	assert_non_null(strcasestr(srv.reqs[0].headers, "authorization: bearer t0k3n"));
	assert_non_null(strcasestr(srv.reqs[0].headers, "accept: application/json"));
	assert_non_null(strcasestr(srv.reqs[0].headers, "user-agent: poolkeeper/"));
}

static void r_404(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	(void)q;
	o->status = 404;
	o->body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"NotFound\","
	          "\"message\":\"configmaps \\\"a\\\" not found\",\"code\":404}";
}

static void test_not_found_not_retried(void **state)
{
	(void)state;
	cur = r_404;
	json_t *obj;
	struct pk_kube_error e;
	assert_int_equal(pk_kube_client_get(cli, &cm, &obj, &e), PK_KUBE_NOT_FOUND);
	assert_null(obj);
	assert_int_equal(e.code, 404);
	assert_string_equal(e.message, "configmaps \"a\" not found");
	assert_int_equal(srv.nreq, 1);
}

static void r_429_then_ok(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)q;
	if (i == 0) {
		o->status = 429;
		o->headers = "Retry-After: 1\r\n";
		o->body = "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\"}";
	} else {
		o->status = 201;
		o->body = "{\"kind\":\"ConfigMap\"}";
	}
}

static void test_429_honours_retry_after_for_any_verb(void **state)
{
	(void)state;
	cur = r_429_then_ok;
	json_t *obj = json_pack("{s:{s:s}}", "metadata", "name", "a");
	json_t *out;
	struct pk_kube_error e;
	long long t0 = pk_kube_now_ns();
	assert_int_equal(pk_kube_client_create(cli, &cm, obj, NULL, &out, &e), PK_KUBE_OK);
	long long took = pk_kube_now_ns() - t0;
	assert_true(took >= 950000000LL); /* waited the Retry-After second */
	assert_int_equal(srv.nreq, 2);
	assert_string_equal(srv.reqs[1].method, "POST");
	assert_string_equal(srv.reqs[1].path, "/api/v1/namespaces/ns/configmaps");
	assert_string_equal(srv.reqs[1].body, "{\"metadata\":{\"name\":\"a\"}}");
	json_decref(out);
	json_decref(obj);
}

static void r_500(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	(void)q;
	o->status = 500;
	o->body = "{\"kind\":\"Status\",\"reason\":\"InternalError\",\"message\":\"etcd down\"}";
}

static void test_5xx_retried_for_get_only(void **state)
{
	(void)state;
	cur = r_500;
	json_t *obj;
	struct pk_kube_error e;
	assert_int_equal(pk_kube_client_get(cli, &cm, &obj, &e), PK_KUBE_SERVER_ERROR);
	assert_int_equal(srv.nreq, 4); /* 1 + 3 retries */
	assert_string_equal(e.message, "etcd down");
	reset(NULL);
	json_t *body = json_object();
	assert_int_equal(pk_kube_client_create(cli, &cm, body, NULL, &obj, &e),
	                 PK_KUBE_SERVER_ERROR);
	assert_int_equal(srv.nreq, 1); /* a POST may have been acted on */
	json_decref(body);
}

static void r_503_retry_after(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)q;
	if (i < 1) {
		o->status = 503;
		o->headers = "Retry-After: 1\r\n";
	} else {
		o->body = "{}";
	}
}

static void test_5xx_with_retry_after_retried_for_any_verb(void **state)
{
	(void)state;
	cur = r_503_retry_after;
	json_t *body = json_object(), *out;
	struct pk_kube_error e;
	struct pk_kube_ref named = cm;
	assert_int_equal(pk_kube_client_update(cli, &named, body, NULL, &out, &e), PK_KUBE_OK);
	assert_int_equal(srv.nreq, 2);
	assert_string_equal(srv.reqs[0].method, "PUT");
	json_decref(out);
	json_decref(body);
}

static const char *ra_header; /* the Retry-After line r_503_ra answers first */

static void r_503_ra(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)q;
	if (i < 1) {
		o->status = 503;
		o->headers = ra_header;
	} else {
		o->body = "{}";
	}
}

/* Only delta-seconds under a day count: a PUT is retried on a 503 only with one. */
static void test_retry_after_forms(void **state)
{
	(void)state;
	static const struct {
		const char *header;
		bool retried;
	} v[] = {
	    {"Retry-After: 1\r\n", true},
	    {"retry-after:\t 1  \r\n", true},
	    {"Retry-After: 0\r\n", false},
	    {"Retry-After: -1\r\n", false},
	    {"Retry-After: 1x\r\n", false},
	    {"Retry-After: 86400\r\n", false},
	    {"Retry-After: 99999999999999999999999\r\n", false},
	    {"Retry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n", false},
	    {"Retry-After: \r\n", false},
	};
	cur = r_503_ra;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		reset(NULL);
		ra_header = v[i].header;
		json_t *body = json_object(), *out = NULL;
		struct pk_kube_error e;
		enum pk_kube_reason rc = pk_kube_client_update(cli, &cm, body, NULL, &out, &e);
		if (srv.nreq != (v[i].retried ? 2 : 1))
			print_error("%s: %d requests\n", v[i].header, srv.nreq);
		assert_int_equal(rc, v[i].retried ? PK_KUBE_OK : PK_KUBE_SERVER_ERROR);
		assert_int_equal(srv.nreq, v[i].retried ? 2 : 1);
		json_decref(out);
		json_decref(body);
	}
}

static void r_hangup(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)q;
	if (i < 2)
		o->status = 0; /* close without answering */
	else
		o->body = "{}";
}

static void test_hangup_retried_for_get_not_post(void **state)
{
	(void)state;
	cur = r_hangup;
	json_t *obj;
	struct pk_kube_error e;
	assert_int_equal(pk_kube_client_get(cli, &cm, &obj, &e), PK_KUBE_OK);
	json_decref(obj);
	assert_int_equal(srv.nreq, 3);
	reset(NULL);
	json_t *body = json_object();
	assert_int_equal(pk_kube_client_create(cli, &cm, body, NULL, &obj, &e), PK_KUBE_CONNECTION);
	assert_int_equal(srv.nreq, 1);
	json_decref(body);
}

static void test_connection_refused(void **state)
{
	(void)state;
	struct pk_kube_config *c = config_for(fs_closed_port(), "");
	struct pk_kube_client *k = client_for(c, 1024);
	json_t *obj;
	struct pk_kube_error e;
	assert_int_equal(pk_kube_client_get(k, &cm, &obj, &e), PK_KUBE_CONNECTION);
	assert_int_equal(e.code, 0);
	assert_non_null(strstr(e.message, "GET /api/v1/namespaces/ns/configmaps/a"));
	pk_kube_client_free(k);
	pk_kube_config_free(c);
}

static char big[300000];
static void r_big(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)i;
	(void)q;
	memset(big, ' ', sizeof(big) - 3);
	big[0] = '{';
	big[sizeof(big) - 3] = '}';
	big[sizeof(big) - 2] = '\0';
	o->body = big;
	o->chunked = ud != NULL;
	o->chunk_size = 16384;
}

static void test_response_cap(void **state)
{
	(void)state;
	struct pk_kube_client *k = client_for(cfg, 100000);
	json_t *obj;
	struct pk_kube_error e;
	cur = r_big;
	cur_ud = NULL; /* Content-Length known up front */
	assert_int_equal(pk_kube_client_get(k, &cm, &obj, &e), PK_KUBE_TOO_LARGE);
	assert_null(obj);
	cur_ud = (void *)1; /* chunked: discovered while reading */
	assert_int_equal(pk_kube_client_get(k, &cm, &obj, &e), PK_KUBE_TOO_LARGE);
	assert_non_null(strstr(e.message, "larger than 100000 bytes"));
	cur_ud = NULL;
	pk_kube_client_free(k);
}

static void r_deep(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	(void)q;
	/* one level deeper than the cap on one object */
	static char deep[2 * (PK_KUBE_JSON_MAX_DEPTH + 1) + 1];
	for (size_t k = 0; k <= PK_KUBE_JSON_MAX_DEPTH; k++) {
		deep[k] = '[';
		deep[sizeof(deep) - 2 - k] = ']';
	}
	deep[sizeof(deep) - 1] = '\0';
	o->body = deep;
}

static void r_garbage(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	(void)q;
	o->body = "<html>proxy error</html>";
}

static void test_bad_bodies(void **state)
{
	(void)state;
	json_t *obj;
	struct pk_kube_error e;
	cur = r_deep;
	assert_int_equal(pk_kube_client_get(cli, &cm, &obj, &e), PK_KUBE_TOO_LARGE);
	assert_non_null(strstr(e.message, "nested deeper"));
	cur = r_garbage;
	assert_int_equal(pk_kube_client_get(cli, &cm, &obj, &e), PK_KUBE_BAD_RESPONSE);
	assert_null(obj);
}

static void r_slow(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)q;
	o->delay_ms = i == 0 ? 1500 : 0;
	o->body = "{}";
}

static void test_timeout(void **state)
{
	(void)state;
	cur = r_slow;
	json_t *obj, *body = json_object();
	struct pk_kube_error e;
	struct pk_kube_ref r = cm;
	r.timeout_ms = 300;
	/* POST: not retried after a timeout, it may have been acted on */
	assert_int_equal(pk_kube_client_create(cli, &r, body, NULL, &obj, &e), PK_KUBE_TIMEOUT);
	assert_int_equal(srv.nreq, 1);
	json_decref(body);
}

static void r_pages(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	bool expired = ud != NULL;
	if (strstr(q->path, "continue=p2") != NULL) {
		if (expired) {
			o->status = 410;
			o->body = "{\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410}";
			return;
		}
		o->body = "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"7\"},"
		          "\"items\":[{\"metadata\":{\"name\":\"c\"}}]}";
	} else if (strstr(q->path, "limit=2") != NULL) {
		o->body =
		    "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"5\","
		    "\"continue\":\"p2\",\"remainingItemCount\":1},"
		    "\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"}}]}";
	} else {
		o->body = "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"9\"},"
		          "\"items\":[{\"metadata\":{\"name\":\"x\"}}]}";
	}
}

static int count_page(void *ud, const json_t *page)
{
	int *n = ud;
	assert_true(json_is_array(json_object_get(page, "items")));
	if (*n < 0)
		return 1;
	(*n)++;
	return 0;
}

static void test_list_all_paging(void **state)
{
	(void)state;
	cur = r_pages;
	cur_ud = NULL;
	struct pk_kube_ref coll = {.version = "v1", .resource = "configmaps", .namespace = "ns"};
	struct pk_kube_list_opts o = {.limit = 2, .label_selector = "app=pk"};
	json_t *list;
	struct pk_kube_error e;
	assert_int_equal(pk_kube_client_list_all(cli, &coll, &o, &list, &e), PK_KUBE_OK);
	assert_int_equal(json_array_size(json_object_get(list, "items")), 3);
	json_t *meta = json_object_get(list, "metadata");
	assert_string_equal(json_string_value(json_object_get(meta, "resourceVersion")), "5");
	assert_null(json_object_get(meta, "continue"));
	json_decref(list);
	assert_int_equal(srv.nreq, 2);
	assert_string_equal(srv.reqs[0].path,
	                    "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dpk&limit=2");
	assert_string_equal(
	    srv.reqs[1].path,
	    "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dpk&limit=2&continue=p2");

	/* an expired continue token: one list without paging */
	reset(NULL);
	cur_ud = (void *)1;
	assert_int_equal(pk_kube_client_list_all(cli, &coll, &o, &list, &e), PK_KUBE_OK);
	assert_int_equal(json_array_size(json_object_get(list, "items")), 1);
	assert_int_equal(srv.nreq, 3);
	assert_string_equal(srv.reqs[2].path,
	                    "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dpk");
	json_decref(list);

	/* page by page: one page in memory at a time; an expired token is Gone */
	reset(NULL);
	cur_ud = (void *)1;
	int pages = 0;
	char rv[32];
	assert_int_equal(
	    pk_kube_client_list_pages(cli, &coll, &o, count_page, &pages, rv, sizeof(rv), &e),
	    PK_KUBE_GONE);
	assert_int_equal(pages, 1);
	assert_string_equal(rv, "5");
	cur_ud = NULL;
	pages = 0;
	assert_int_equal(
	    pk_kube_client_list_pages(cli, &coll, &o, count_page, &pages, rv, sizeof(rv), &e),
	    PK_KUBE_OK);
	assert_int_equal(pages, 2);
	/* the callback can stop it */
	pages = -1;
	assert_int_equal(pk_kube_client_list_pages(cli, &coll, &o, count_page, &pages, NULL, 0, &e),
	                 PK_KUBE_CANCELLED);
}

/* ---- caps per object, not per page ---- */

#define HP_OBJECTS 8
#define HP_GOOD    (30 * 1024) /* annotation bytes of a good object */
#define HP_HUGE    (200 * 1024)
#define HP_OBJECT  (100 * 1024) /* the client's cap on one object */

/* One object of the hostile collection: o3 has "\u0000" in a key (cannot be decoded), o5 is
 * over the cap on one object, o2 has "\u0000" in a value (decodes). */
static size_t hp_object(char *buf, size_t len, int k)
{
	size_t ann = k == 5 ? HP_HUGE : HP_GOOD;
	size_t n = (size_t)snprintf(buf, len, "{\"metadata\":{\"annotations\":{\"a\":\"");
	memset(buf + n, 'a' + k, ann);
	n += ann;
	n += (size_t)snprintf(buf + n, len - n,
	                      "\",\"b\":\"%s\"},\"name\":\"o%d\",\"namespace\":\"t\"},"
	                      "\"spec\":{\"%s\":1}}",
	                      k == 2 ? "x\\u0000y" : "xy", k, k == 3 ? "k\\u0000" : "k");
	return n;
}

/* Pages as a custom resource's List is served: metadata after the items. */
static void r_hostile_pages(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	const char *l = strstr(q->path, "limit="), *c = strstr(q->path, "continue=");
	int limit = l ? (int)strtol(l + 6, NULL, 10) : HP_OBJECTS;
	int from = c ? (int)strtol(c + 9, NULL, 10) : 0;
	size_t cap = 16 + (size_t)HP_OBJECTS * (HP_HUGE + 256) + 256;
	char *b = malloc(cap);
	assert_non_null(b);
	size_t n = (size_t)snprintf(b, cap, "{\"apiVersion\":\"v1\",\"items\":[");
	int k = from;
	for (; k < HP_OBJECTS && k < from + limit; k++) {
		if (k > from)
			b[n++] = ',';
		n += hp_object(b + n, cap - n, k);
	}
	n += (size_t)snprintf(b + n, cap - n, "],\"kind\":\"ConfigMapList\",\"metadata\":{");
	if (k < HP_OBJECTS)
		n += (size_t)snprintf(b + n, cap - n, "\"continue\":\"%d\",", k);
	n += (size_t)snprintf(b + n, cap - n, "\"resourceVersion\":\"50\"}}");
	o->body = o->owned = b;
	o->body_len = n;
	o->chunked = true;
	o->chunk_size = 16384;
}

struct skipped {
	char names[256];
};

static void on_skip(void *ud, const char *ns, const char *name, const char *why)
{
	struct skipped *k = ud;
	size_t l = strlen(k->names);
	assert_non_null(why);
	snprintf(k->names + l, sizeof(k->names) - l, "%s/%s ", ns ? ns : "-", name ? name : "-");
}

struct names {
	char text[256];
	int pages;
};

static int page_names(void *ud, const json_t *page)
{
	struct names *nm = ud;
	size_t i;
	const json_t *it;
	json_array_foreach(json_object_get(page, "items"), i, it)
	{
		size_t l = strlen(nm->text);
		snprintf(nm->text + l, sizeof(nm->text) - l, "%s ", pk_json_meta_cstr(it, "name"));
		/* o2's NUL survives whole: as a C string the field is invalid */
		const json_t *b = json_object_get(
		    json_object_get(json_object_get(it, "metadata"), "annotations"), "b");
		if (strcmp(pk_json_meta_cstr(it, "name"), "o2") == 0) {
			assert_int_equal(json_string_length(b), 3);
			assert_null(pk_json_cstr(b));
		} else {
			assert_string_equal(pk_json_cstr(b), "xy");
		}
	}
	nm->pages++;
	return 0;
}

static void test_list_caps_per_object(void **state)
{
	(void)state;
	struct pk_kube_client_opts co = {.qps = -1,
	                                 .max_retries = -1,
	                                 .max_response_bytes = 50 * 1024,
	                                 .max_object_bytes = HP_OBJECT};
	struct pk_kube_client *k;
	struct pk_err err;
	assert_int_equal(pk_kube_client_new(cfg, &co, &k, &err), PK_OK);
	cur = r_hostile_pages;
	struct pk_kube_ref coll = {.version = "v1", .resource = "configmaps"};
	struct skipped sk = {.names = ""};
	struct pk_kube_list_opts o = {.limit = HP_OBJECTS, .on_skip = on_skip, .skip_ud = &sk};
	struct names nm = {.text = ""};
	struct pk_kube_error e;
	char rv[32];
	assert_int_equal(
	    pk_kube_client_list_pages(k, &coll, &o, page_names, &nm, rv, sizeof(rv), &e),
	    PK_KUBE_OK);
	/* every object that can be decoded arrives; the two that cannot are named */
	assert_string_equal(nm.text, "o0 o1 o2 o4 o6 o7 ");
	assert_string_equal(sk.names, "t/o3 t/o5 ");
	assert_string_equal(rv, "50");
	/* a page too large is read again with half the limit, down to 1; the smaller limit
	 * stays; o5 alone is over its cap and streams by, its continue token read past it */
	static const char *const want[] = {
	    "limit=8",
	    "limit=4",
	    "limit=4&continue=4",
	    "limit=2&continue=4",
	    "limit=1&continue=4",
	    "limit=1&continue=5",
	    "limit=1&continue=6",
	    "limit=1&continue=7",
	};
	assert_int_equal(srv.nreq, 8);
	for (int i = 0; i < 8; i++)
		assert_non_null(strstr(srv.reqs[i].path, want[i]));
	assert_int_equal(nm.pages, 5); /* 0-3, 4, 5 (empty: o5 left out), 6, 7 */

	/* the same through list_all, in one List */
	fs_reset(&srv);
	sk.names[0] = '\0';
	json_t *list;
	assert_int_equal(pk_kube_client_list_all(k, &coll, &o, &list, &e), PK_KUBE_OK);
	assert_int_equal(json_array_size(json_object_get(list, "items")), 6);
	assert_string_equal(sk.names, "t/o3 t/o5 ");
	json_decref(list);

	/* one page of its own: over the response cap is TooLarge (no halving here) */
	fs_reset(&srv);
	assert_int_equal(pk_kube_client_list(k, &coll, &o, &list, &e), PK_KUBE_TOO_LARGE);
	assert_null(list);
	pk_kube_client_free(k);
}

static void r_echo(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	(void)q;
	o->body = "{\"kind\":\"Status\",\"status\":\"Success\"}";
}

static void test_write_requests(void **state)
{
	(void)state;
	cur = r_echo;
	struct pk_kube_error e;
	json_t *out;
	struct pk_kube_delete_opts d = {.propagation = "Foreground",
	                                .uid = "u-1",
	                                .resource_version = "42",
	                                .has_grace_period = true,
	                                .grace_period_s = 0};
	assert_int_equal(pk_kube_client_delete(cli, &cm, &d, &out, &e), PK_KUBE_OK);
	json_decref(out);
	assert_string_equal(srv.reqs[0].method, "DELETE");
	json_t *body = json_loads(srv.reqs[0].body, 0, NULL);
	assert_non_null(body);
	assert_string_equal(pk_json_cstr_at(body, "propagationPolicy"), "Foreground");
	json_t *pre = json_object_get(body, "preconditions");
	assert_string_equal(pk_json_cstr_at(pre, "uid"), "u-1");
	assert_string_equal(pk_json_cstr_at(pre, "resourceVersion"), "42");
	assert_int_equal(json_integer_value(json_object_get(body, "gracePeriodSeconds")), 0);
	json_decref(body);

	json_t *merge = json_pack("{s:{s:s}}", "data", "k", "v");
	json_t *jp = json_pack("[{s:s,s:s,s:s}]", "op", "replace", "path", "/data/k", "value", "w");
	struct pk_kube_write_opts w = {.field_manager = "poolkeeper", .force = true};
	struct pk_kube_ref st = cm;
	st.subresource = "status";
	assert_int_equal(pk_kube_client_patch(cli, &cm, PK_KUBE_PATCH_MERGE, merge, NULL, NULL, &e),
	                 PK_KUBE_OK);
	assert_int_equal(pk_kube_client_patch(cli, &cm, PK_KUBE_PATCH_JSON, jp, NULL, NULL, &e),
	                 PK_KUBE_OK);
	assert_int_equal(pk_kube_client_patch(cli, &st, PK_KUBE_PATCH_APPLY, merge, &w, NULL, &e),
	                 PK_KUBE_OK);
	assert_non_null(
	    strcasestr(srv.reqs[1].headers, "content-type: application/merge-patch+json"));
	assert_non_null(
	    strcasestr(srv.reqs[2].headers, "content-type: application/json-patch+json"));
	assert_non_null(
	    strcasestr(srv.reqs[3].headers, "content-type: application/apply-patch+yaml"));
	assert_string_equal(
	    srv.reqs[3].path,
	    "/api/v1/namespaces/ns/configmaps/a/status?fieldManager=poolkeeper&force=true");
	assert_string_equal(srv.reqs[2].method, "PATCH");
	/* mistakes caught before anything is sent */
	assert_int_equal(pk_kube_client_patch(cli, &cm, PK_KUBE_PATCH_JSON, merge, NULL, NULL, &e),
	                 PK_KUBE_BAD_REQUEST);
	assert_int_equal(pk_kube_client_patch(cli, &cm, PK_KUBE_PATCH_APPLY, merge, NULL, NULL, &e),
	                 PK_KUBE_BAD_REQUEST);
	struct pk_kube_ref bad = cm;
	bad.name = "..";
	assert_int_equal(pk_kube_client_get(cli, &bad, &out, &e), PK_KUBE_BAD_REQUEST);
	assert_int_equal(srv.nreq, 4);
	json_decref(merge);
	json_decref(jp);
}

static void r_discovery(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	if (strcmp(q->path, "/apis/ipam.cluster.x-k8s.io") == 0) {
		o->body =
		    "{\"kind\":\"APIGroup\",\"name\":\"ipam.cluster.x-k8s.io\",\"versions\":["
		    "{\"groupVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"version\":\"v1beta2\"},"
		    "{\"groupVersion\":\"ipam.cluster.x-k8s.io/v1beta1\",\"version\":\"v1beta1\"}],"
		    "\"preferredVersion\":{\"groupVersion\":\"ipam.cluster.x-k8s.io/v1beta2\","
		    "\"version\":\"v1beta2\"}}";
	} else if (strcmp(q->path, "/api") == 0) {
		o->body = "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}";
	} else {
		o->status = 404;
		o->body = "404 page not found";
	}
}

static void test_discovery(void **state)
{
	(void)state;
	cur = r_discovery;
	json_t *v;
	struct pk_kube_error e;
	assert_int_equal(pk_kube_client_group_versions(cli, "ipam.cluster.x-k8s.io", &v, &e),
	                 PK_KUBE_OK);
	assert_int_equal(json_array_size(v), 2);
	assert_string_equal(json_string_value(json_array_get(v, 0)), "v1beta2");
	assert_string_equal(json_string_value(json_array_get(v, 1)), "v1beta1");
	json_decref(v);
	assert_int_equal(pk_kube_client_group_versions(cli, NULL, &v, &e), PK_KUBE_OK);
	assert_string_equal(json_string_value(json_array_get(v, 0)), "v1");
	json_decref(v);
	assert_int_equal(pk_kube_client_group_versions(cli, "nope.io", &v, &e), PK_KUBE_NOT_FOUND);
	assert_null(v);
}

/* Discovery documents for pk_kube_client_preferred_version, by group. */
static void r_groups(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	if (strcmp(q->path, "/apis/both.example.com") == 0) {
		/* the server prefers v1beta1: the caller's order still wins */
		o->body =
		    "{\"kind\":\"APIGroup\",\"name\":\"both.example.com\",\"versions\":["
		    "{\"groupVersion\":\"both.example.com/v1beta1\",\"version\":\"v1beta1\"},"
		    "{\"groupVersion\":\"both.example.com/v1beta2\",\"version\":\"v1beta2\"}],"
		    "\"preferredVersion\":{\"groupVersion\":\"both.example.com/v1beta1\","
		    "\"version\":\"v1beta1\"}}";
	} else if (strcmp(q->path, "/apis/old.example.com") == 0) {
		o->body =
		    "{\"kind\":\"APIGroup\",\"name\":\"old.example.com\",\"versions\":["
		    "{\"groupVersion\":\"old.example.com/v1alpha1\",\"version\":\"v1alpha1\"},"
		    "{\"groupVersion\":\"old.example.com/v1beta1\",\"version\":\"v1beta1\"}],"
		    "\"preferredVersion\":{\"groupVersion\":\"old.example.com/v1alpha1\","
		    "\"version\":\"v1alpha1\"}}";
	} else if (strcmp(q->path, "/apis/alpha.example.com") == 0) {
		o->body =
		    "{\"kind\":\"APIGroup\",\"name\":\"alpha.example.com\",\"versions\":["
		    "{\"groupVersion\":\"alpha.example.com/v1alpha1\",\"version\":\"v1alpha1\"}],"
		    "\"preferredVersion\":{\"groupVersion\":\"alpha.example.com/v1alpha1\","
		    "\"version\":\"v1alpha1\"}}";
	} else if (strcmp(q->path, "/apis/broken.example.com") == 0) {
		o->status = 500;
		o->body =
		    "{\"kind\":\"Status\",\"reason\":\"InternalError\",\"message\":\"etcd down\"}";
	} else if (strcmp(q->path, "/apis/odd.example.com") == 0) {
		o->body = "{\"kind\":\"APIGroup\",\"name\":\"odd.example.com\"}";
	} else if (strcmp(q->path, "/api") == 0) {
		o->body = "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}";
	} else {
		o->status = 404;
		o->body = "404 page not found";
	}
}

static const char *const beta_order[] = {"v1beta2", "v1beta1", NULL};

static void test_preferred_version_first(void **state)
{
	(void)state;
	cur = r_groups;
	char v[16] = "junk";
	struct pk_kube_error e;
	assert_int_equal(
	    pk_kube_client_preferred_version(cli, "both.example.com", beta_order, v, sizeof(v), &e),
	    PK_KUBE_OK);
	assert_string_equal(v, "v1beta2");
	assert_int_equal(srv.nreq, 1);
	assert_string_equal(srv.reqs[0].method, "GET");
	assert_string_equal(srv.reqs[0].path, "/apis/both.example.com");
	/* the order is the caller's: asking for v1beta1 first gets v1beta1 */
	static const char *const v1_first[] = {"v1beta1", "v1beta2", NULL};
	assert_int_equal(
	    pk_kube_client_preferred_version(cli, "both.example.com", v1_first, v, sizeof(v), &e),
	    PK_KUBE_OK);
	assert_string_equal(v, "v1beta1");
	/* the core group (NULL or ""), and a buffer that is exactly big enough */
	static const char *const core[] = {"v1", NULL};
	char exact[3];
	assert_int_equal(
	    pk_kube_client_preferred_version(cli, NULL, core, exact, sizeof(exact), &e),
	    PK_KUBE_OK);
	assert_string_equal(exact, "v1");
	assert_int_equal(pk_kube_client_preferred_version(cli, "", core, exact, sizeof(exact), &e),
	                 PK_KUBE_OK);
	assert_string_equal(exact, "v1");
	assert_string_equal(srv.reqs[3].path, "/api");
	/* e may be NULL */
	assert_int_equal(pk_kube_client_preferred_version(cli, "both.example.com", beta_order, v,
	                                                  sizeof(v), NULL),
	                 PK_KUBE_OK);
	assert_string_equal(v, "v1beta2");
}

static void test_preferred_version_second(void **state)
{
	(void)state;
	cur = r_groups;
	char v[16] = "junk";
	struct pk_kube_error e;
	assert_int_equal(
	    pk_kube_client_preferred_version(cli, "old.example.com", beta_order, v, sizeof(v), &e),
	    PK_KUBE_OK);
	assert_string_equal(v, "v1beta1");
	assert_int_equal(srv.nreq, 1);
}

static void test_preferred_version_neither(void **state)
{
	(void)state;
	cur = r_groups;
	char v[16] = "junk";
	struct pk_kube_error e;
	/* the group is not served at all: NotFound with the server's words, not retried */
	assert_int_equal(
	    pk_kube_client_preferred_version(cli, "nope.example.com", beta_order, v, sizeof(v), &e),
	    PK_KUBE_NOT_FOUND);
	assert_string_equal(v, "");
	assert_int_equal(e.code, 404);
	assert_non_null(strstr(e.message, "404 page not found"));
	assert_int_equal(srv.nreq, 1);
	assert_string_equal(srv.reqs[0].path, "/apis/nope.example.com");
	/* the group is served, in none of the versions asked for: OK and "" */
	snprintf(v, sizeof(v), "junk");
	assert_int_equal(pk_kube_client_preferred_version(cli, "alpha.example.com", beta_order, v,
	                                                  sizeof(v), &e),
	                 PK_KUBE_OK);
	assert_string_equal(v, "");
	assert_int_equal(srv.nreq, 2);
}

static void test_preferred_version_errors(void **state)
{
	(void)state;
	cur = r_groups;
	char v[16] = "junk";
	struct pk_kube_error e;
	/* a server error keeps its class, code, Status reason and message */
	assert_int_equal(pk_kube_client_preferred_version(cli, "broken.example.com", beta_order, v,
	                                                  sizeof(v), &e),
	                 PK_KUBE_SERVER_ERROR);
	assert_string_equal(v, "");
	assert_int_equal(e.code, 500);
	assert_string_equal(e.status_reason, "InternalError");
	assert_string_equal(e.message, "etcd down");
	assert_int_equal(srv.nreq, 4); /* a GET: 1 + 3 retries */
	/* a discovery document without versions */
	snprintf(v, sizeof(v), "junk");
	assert_int_equal(
	    pk_kube_client_preferred_version(cli, "odd.example.com", beta_order, v, sizeof(v), &e),
	    PK_KUBE_BAD_RESPONSE);
	assert_string_equal(v, "");
	assert_non_null(strstr(e.message, "no versions"));
	/* a group name that is no path segment is refused before anything is sent */
	reset(NULL);
	assert_int_equal(pk_kube_client_preferred_version(cli, "..", beta_order, v, sizeof(v), &e),
	                 PK_KUBE_BAD_REQUEST);
	assert_int_equal(srv.nreq, 0);
}

static void test_preferred_version_bad_arguments(void **state)
{
	(void)state;
	cur = r_groups;
	struct pk_kube_error e;
	/* too short for "v1beta2" (8 bytes with the NUL): refused before any request, even
	 * though the server would have answered v1beta1, which fits */
	char v[16] = "junk";
	assert_int_equal(
	    pk_kube_client_preferred_version(cli, "old.example.com", beta_order, v, 7, &e),
	    PK_KUBE_BAD_REQUEST);
	assert_string_equal(v, "");
	assert_int_equal(e.code, 0);
	assert_non_null(strstr(e.message, "v1beta2"));
	/* len 0: nothing is written */
	snprintf(v, sizeof(v), "junk");
	assert_int_equal(
	    pk_kube_client_preferred_version(cli, "old.example.com", beta_order, v, 0, &e),
	    PK_KUBE_BAD_REQUEST);
	assert_string_equal(v, "junk");
	/* no buffer, no list, an empty list, an empty version */
	assert_int_equal(
	    pk_kube_client_preferred_version(cli, "old.example.com", beta_order, NULL, 16, &e),
	    PK_KUBE_BAD_REQUEST);
	assert_int_equal(
	    pk_kube_client_preferred_version(cli, "old.example.com", NULL, v, sizeof(v), &e),
	    PK_KUBE_BAD_REQUEST);
	assert_string_equal(v, "");
	static const char *const none[] = {NULL};
	assert_int_equal(
	    pk_kube_client_preferred_version(cli, "old.example.com", none, v, sizeof(v), &e),
	    PK_KUBE_BAD_REQUEST);
	static const char *const empty[] = {"v1beta2", "", NULL};
	assert_int_equal(
	    pk_kube_client_preferred_version(cli, "old.example.com", empty, v, sizeof(v), &e),
	    PK_KUBE_BAD_REQUEST);
	assert_int_equal(srv.nreq, 0);
	/* the exact size works */
	char exact[8];
	assert_int_equal(pk_kube_client_preferred_version(cli, "old.example.com", beta_order, exact,
	                                                  sizeof(exact), &e),
	                 PK_KUBE_OK);
	assert_string_equal(exact, "v1beta1");
	assert_int_equal(srv.nreq, 1);
}

static void r_401_once(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)q;
	if (i == 0) {
		/* the token rotates while the first request is on its way */
		FILE *f = fopen((const char *)ud, "w");
		fputs("new-token\n", f);
		fclose(f);
		o->status = 401;
		o->body = "{\"kind\":\"Status\",\"reason\":\"Unauthorized\",\"code\":401}";
	} else {
		o->body = "{}";
	}
}

static void test_401_rereads_token_file(void **state)
{
	(void)state;
	char path[64] = "/tmp/pk-kube-tok-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "old-token\n", 10), 10);
	close(fd);
	char user[128];
	snprintf(user, sizeof(user), "tokenFile: \"%s\"", path);
	struct pk_kube_config *c = config_for(srv.port, user);
	struct pk_kube_client *k = client_for(c, 1 << 20);
	cur = r_401_once;
	cur_ud = path;
	json_t *obj;
	struct pk_kube_error e;
	assert_int_equal(pk_kube_client_get(k, &cm, &obj, &e), PK_KUBE_OK);
	json_decref(obj);
	assert_int_equal(srv.nreq, 2);
	assert_non_null(strcasestr(srv.reqs[0].headers, "bearer old-token"));
	assert_non_null(strcasestr(srv.reqs[1].headers, "bearer new-token"));
	cur_ud = NULL;
	pk_kube_client_free(k);
	pk_kube_config_free(c);
	unlink(path);
}

static void r_stream(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	(void)q;
	o->body = "{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"DELETED\",\"object\":{}}\n";
	o->chunked = true;
	o->chunk_size = 7;
}

struct sink {
	char buf[256];
	size_t len;
	int calls;
	int connected;
};

static int on_piece(void *ud, const char *d, size_t n)
{
	struct sink *s = ud;
	if (d == NULL) { /* the 200 headers arrived */
		s->connected++;
		return 0;
	}
	assert_true(s->len + n < sizeof(s->buf));
	memcpy(s->buf + s->len, d, n);
	s->len += n;
	s->calls++;
	return 0;
}

static void test_stream(void **state)
{
	(void)state;
	cur = r_stream;
	struct sink s = {.len = 0};
	struct pk_kube_error e;
	assert_int_equal(
	    pk_kube_client_stream(cli, "/api/v1/configmaps?watch=1", on_piece, &s, NULL, &e),
	    PK_KUBE_OK);
	assert_int_equal(
	    s.len,
	    strlen("{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"DELETED\",\"object\":{}}\n"));
	assert_int_equal(s.connected, 1);
	/* a non-200 answer is an error, not a stream */
	cur = r_404;
	memset(&s, 0, sizeof(s));
	assert_int_equal(
	    pk_kube_client_stream(cli, "/api/v1/configmaps?watch=1", on_piece, &s, NULL, &e),
	    PK_KUBE_NOT_FOUND);
	assert_int_equal(s.calls, 0);
	assert_int_equal(s.connected, 0);
}

struct worker {
	int ok;
};

static void *hammer(void *arg)
{
	struct worker *w = arg;
	for (int i = 0; i < 25; i++) {
		json_t *obj;
		struct pk_kube_error e;
		if (pk_kube_client_get(cli, &cm, &obj, &e) == PK_KUBE_OK)
			w->ok++;
		json_decref(obj);
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	cur = r_ok;
	pthread_t t[8];
	struct worker w[8];
	memset(w, 0, sizeof(w));
	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, hammer, &w[i]);
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].ok, 25);
	}
	assert_int_equal(srv.nreq, 200);
}

/* A call with a deadline ends by it: a slow answer, a retry that would pass it, and a rate
 * limit that would hold it past it (that one sends nothing and takes no token). */
static void test_deadline(void **state)
{
	(void)state;
	json_t *obj = NULL;
	struct pk_kube_error e;
	cur = r_slow; /* the first answer takes 1.5 s */
	long long t0 = pk_kube_now_ns();
	assert_int_equal(pk_kube_client_request_by(cli, "GET", "/api/v1", NULL, NULL, 0,
	                                           t0 + 300000000LL, &obj, &e),
	                 PK_KUBE_TIMEOUT);
	assert_true(pk_kube_now_ns() - t0 < 1000000000LL);
	assert_null(obj);
	fs_sleep_ms(1300); /* the server answers one connection at a time */
	fs_reset(&srv);
	/* a 503 asking for 1 s before the retry: not retried past a 500 ms deadline */
	cur = r_503_retry_after;
	t0 = pk_kube_now_ns();
	assert_int_equal(pk_kube_client_request_by(cli, "GET", "/api/v1", NULL, NULL, 0,
	                                           t0 + 500000000LL, &obj, &e),
	                 PK_KUBE_SERVER_ERROR);
	assert_true(pk_kube_now_ns() - t0 < 500000000LL);
	assert_int_equal(srv.nreq, 1);
	fs_reset(&srv);
	/* a deadline that has passed sends nothing */
	cur = r_ok;
	assert_int_equal(pk_kube_client_request_by(cli, "GET", "/api/v1", NULL, NULL, 0,
	                                           pk_kube_now_ns() - 1, &obj, &e),
	                 PK_KUBE_TIMEOUT);
	assert_non_null(strstr(e.message, "deadline"));
	assert_int_equal(srv.nreq, 0);

	/* the rate limit: 2/s, burst 1; the first goes, the second would wait 500 ms */
	struct pk_kube_client_opts o = {.qps = 2, .burst = 1};
	struct pk_kube_client *k;
	struct pk_err err;
	assert_int_equal(pk_kube_client_new(cfg, &o, &k, &err), PK_OK);
	t0 = pk_kube_now_ns();
	assert_int_equal(pk_kube_client_request_by(k, "GET", "/api/v1", NULL, NULL, 0,
	                                           t0 + 200000000LL, &obj, &e),
	                 PK_KUBE_OK);
	json_decref(obj);
	assert_int_equal(pk_kube_client_request_by(k, "GET", "/api/v1", NULL, NULL, 0,
	                                           pk_kube_now_ns() + 200000000LL, &obj, &e),
	                 PK_KUBE_TIMEOUT);
	assert_non_null(strstr(e.message, "rate limit"));
	assert_true(pk_kube_now_ns() - t0 < 150000000LL); /* refused at once, not after a wait */
	assert_int_equal(srv.nreq, 1);
	/* the refused call took no token: the next one waits only the first's 500 ms */
	assert_int_equal(pk_kube_client_request_by(k, "GET", "/api/v1", NULL, NULL, 0,
	                                           pk_kube_now_ns() + 2000000000LL, &obj, &e),
	                 PK_KUBE_OK);
	json_decref(obj);
	assert_true(pk_kube_now_ns() - t0 < 900000000LL);
	pk_kube_client_free(k);
}

static void test_rate_limit_applies(void **state)
{
	(void)state;
	cur = r_ok;
	struct pk_kube_client_opts o = {.qps = 50, .burst = 5};
	struct pk_kube_client *k;
	struct pk_err err;
	assert_int_equal(pk_kube_client_new(cfg, &o, &k, &err), PK_OK);
	long long t0 = pk_kube_now_ns();
	for (int i = 0; i < 15; i++) {
		json_t *obj;
		struct pk_kube_error e;
		assert_int_equal(pk_kube_client_get(k, &cm, &obj, &e), PK_KUBE_OK);
		json_decref(obj);
	}
	/* 5 from the burst, 10 more at 50/s: at least 200 ms */
	assert_true(pk_kube_now_ns() - t0 >= 190000000LL);
	pk_kube_client_free(k);
}

static int reset(void **state)
{
	(void)state;
	fs_reset(&srv);
	cur_ud = NULL;
	return 0;
}

/* Requests are counted by method and code, every retry included (the controller's metrics). */
struct stat_seen {
	char text[512];
};

static void stat_line(void *ud, const char *method, long code, unsigned long long n)
{
	struct stat_seen *s = ud;
	size_t l = strlen(s->text);
	snprintf(s->text + l, sizeof(s->text) - l, "%s %ld %llu;", method, code, n);
}

static void test_request_stats(void **state)
{
	(void)state;
	struct pk_kube_client *k = client_for(cfg, 1 << 20);
	json_t *obj;
	struct pk_kube_error e;
	struct stat_seen seen = {""};
	pk_kube_client_request_stats(k, stat_line, &seen);
	assert_string_equal(seen.text, "");
	cur = r_ok;
	assert_int_equal(pk_kube_client_get(k, &cm, &obj, &e), PK_KUBE_OK);
	json_decref(obj);
	assert_int_equal(pk_kube_client_get(k, &cm, &obj, &e), PK_KUBE_OK);
	json_decref(obj);
	cur = r_404;
	assert_int_equal(pk_kube_client_get(k, &cm, &obj, &e), PK_KUBE_NOT_FOUND);
	cur = r_500;
	assert_int_equal(pk_kube_client_get(k, &cm, &obj, &e), PK_KUBE_SERVER_ERROR);
	json_t *body = json_object();
	assert_int_equal(pk_kube_client_create(k, &cm, body, NULL, &obj, &e), PK_KUBE_SERVER_ERROR);
	json_decref(body);
	pk_kube_client_request_stats(k, stat_line, &seen);
	/* 1 + 3 retries of the GET that met 500; the POST is not retried */
	assert_string_equal(seen.text, "GET 200 2;GET 404 1;GET 500 4;POST 500 1;");
	pk_kube_client_free(k);
}

/* ---- TLS: a named CA is the only root trusted ---- */

/*
 * kubeconfig (client-go): a cluster's certificate-authority(-data), or the
 * in-cluster ca.crt, is the whole trust store; system roots are used only
 * when no CA is named. libcurl's defaults (CURLINFO_CAPATH, CURLINFO_CAINFO:
 * /etc/ssl/certs and its bundle on Debian) would add every system root. To
 * test that, a child process makes a CA "X" the only system root, in a
 * private mount namespace of its own (bind mounts over libcurl's default
 * paths; the host's files are not touched), and checks that a client told
 * to trust only CA "Y" refuses a server whose certificate comes from X and
 * never sends it the token. SSL_CERT_FILE, SSL_CERT_DIR and CURL_CA_BUNDLE
 * point at X as well, for a libcurl built to fall back on OpenSSL's
 * defaults (which read them). The child reports through its exit status:
 * 0 passed, 77 no namespace could be made (the test is skipped), anything
 * else failed, with the reason on stderr.
 */

#define TLS_SKIP  77
#define TLS_TOKEN "secret-token-never-leaks"

static char keylog_path[64] = "/tmp/pk-kube-keylog-XXXXXX";

#define CK(cond)                                                                              \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, "tls child: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			return 1;                                                             \
		}                                                                             \
	} while (0)

static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return -1;
	int rc = fputs(text, f) < 0 ? -1 : 0;
	return fclose(f) != 0 ? -1 : rc;
}

static int write_id_map(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/*
 * Makes ca_pem (the certificate ca, PEM) the only root in libcurl's default
 * trust paths, for this process only. dir is the test's own folder.
 */
static int private_system_roots(X509 *ca, const char *ca_pem, const char *dir)
{
	char capath[512] = "", cainfo[512] = "";
	CURL *h = curl_easy_init();
	char *v = NULL;
	if (h == NULL)
		return 2;
	if (curl_easy_getinfo(h, CURLINFO_CAPATH, &v) == CURLE_OK && v != NULL)
		snprintf(capath, sizeof(capath), "%s", v);
	v = NULL;
	if (curl_easy_getinfo(h, CURLINFO_CAINFO, &v) == CURLE_OK && v != NULL)
		snprintf(cainfo, sizeof(cainfo), "%s", v);
	curl_easy_cleanup(h);

	/* Root can make a mount namespace; anyone else needs a user namespace too. */
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (unshare(CLONE_NEWNS) != 0) {
		char map[64];
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
			fprintf(stderr, "tls child: no mount namespace: %s\n", strerror(errno));
			return TLS_SKIP;
		}
		snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
		if (write_id_map("/proc/self/setgroups", "deny") != 0 ||
		    write_id_map("/proc/self/uid_map", map) != 0)
			return TLS_SKIP;
		snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
		if (write_id_map("/proc/self/gid_map", map) != 0)
			return TLS_SKIP;
	}
	/* Nothing mounted below may reach the host's namespace. ("none": the
	 * type is ignored for propagation changes and bind mounts.) */
	if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0) {
		fprintf(stderr, "tls child: cannot make / private: %s\n", strerror(errno));
		return TLS_SKIP;
	}

	char path[1024];
	snprintf(path, sizeof(path), "%s/roots/ca-x.pem", dir);
	CK(write_text(path, ca_pem) == 0);
	setenv("SSL_CERT_FILE", path, 1);
	setenv("CURL_CA_BUNDLE", path, 1);
	/* c_rehash's name, so that a CAPATH lookup finds it */
	snprintf(path, sizeof(path), "%s/roots/%08lx.0", dir, X509_subject_name_hash(ca));
	CK(write_text(path, ca_pem) == 0);
	snprintf(path, sizeof(path), "%s/roots", dir);
	setenv("SSL_CERT_DIR", path, 1);

	size_t pl = strlen(capath);
	bool bundle_inside = pl > 0 && strncmp(cainfo, capath, pl) == 0 && cainfo[pl] == '/' &&
	                     strchr(cainfo + pl + 1, '/') == NULL;
	if (bundle_inside) {
		snprintf(path, sizeof(path), "%s/roots/%s", dir, cainfo + pl + 1);
		CK(write_text(path, ca_pem) == 0);
	}
	if (capath[0] != '\0') {
		snprintf(path, sizeof(path), "%s/roots", dir);
		if (mount(path, capath, "none", MS_BIND, NULL) != 0) {
			fprintf(stderr, "tls child: bind mount over %s: %s\n", capath,
			        strerror(errno));
			return TLS_SKIP;
		}
	}
	struct stat st;
	if (cainfo[0] != '\0' && !bundle_inside && stat(cainfo, &st) == 0) {
		snprintf(path, sizeof(path), "%s/bundle.pem", dir);
		CK(write_text(path, ca_pem) == 0);
		if (mount(path, cainfo, "none", MS_BIND, NULL) != 0) {
			fprintf(stderr, "tls child: bind mount over %s: %s\n", cainfo,
			        strerror(errno));
			return TLS_SKIP;
		}
	}
	return 0;
}

static char *b64(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(n / 3 * 4 + 8);
	if (out != NULL)
		EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
	return out;
}

/* A kubeconfig for https://127.0.0.1:port with `cluster_extra` in the cluster entry. */
static struct pk_kube_config *tls_config(int port, const char *cluster_extra)
{
	char text[8192];
	int len = snprintf(
	    text, sizeof(text),
	    "clusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:%d\"%s%s}\n"
	    "users:\n- name: u\n  user: {token: %s}\n"
	    "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
	    port, cluster_extra ? ", " : "", cluster_extra ? cluster_extra : "", TLS_TOKEN);
	if (len < 0 || (size_t)len >= sizeof(text)) {
		fprintf(stderr, "tls child: kubeconfig longer than %zu bytes\n", sizeof(text));
		return NULL;
	}
	struct pk_kube_config *c = NULL;
	struct pk_err err;
	if (pk_kube_config_parse(text, strlen(text), "tls-test", "/tmp", NULL, &c, &err) != PK_OK)
		fprintf(stderr, "tls child: kubeconfig: %s\n", err.msg);
	return c;
}

/*
 * One GET to s with config c (freed here): it must succeed, with the token
 * received, when want_ok; otherwise it must fail for the server's
 * certificate, with no request (and so no token) received, after one
 * handshake (a certificate that does not verify is not retried).
 */
static int tls_expect(struct fake_server *s, struct pk_kube_config *c, bool want_ok,
                      const char *what)
{
	if (c == NULL)
		return 1;
	struct pk_kube_client_opts o = {.qps = -1, .max_retries = 2, .timeout_ms = 10000};
	struct pk_kube_client *k = NULL;
	struct pk_err err;
	if (pk_kube_client_new(c, &o, &k, &err) != PK_OK) {
		fprintf(stderr, "tls child: %s: client: %s\n", what, err.msg);
		pk_kube_config_free(c);
		return 1;
	}
	fs_reset(s);
	json_t *obj = NULL;
	struct pk_kube_error e;
	memset(&e, 0, sizeof(e));
	enum pk_kube_reason r = pk_kube_client_get(k, &cm, &obj, &e);
	json_decref(obj);
	pk_kube_client_free(k);
	pk_kube_config_free(c);
	/* the server counts a failed handshake after the client has gone */
	for (int i = 0; i < 200 && !want_ok; i++) {
		pthread_mutex_lock(&s->mu);
		int f = s->tls_failures;
		pthread_mutex_unlock(&s->mu);
		if (f > 0)
			break;
		fs_sleep_ms(10);
	}
	if (!want_ok)
		fs_sleep_ms(100); /* time for a retry to arrive, if there were one */
	pthread_mutex_lock(&s->mu);
	int nreq = s->nreq, failures = s->tls_failures;
	bool token = false;
	for (int i = 0; i < nreq && i < 64; i++)
		token = token || strstr(s->reqs[i].headers, TLS_TOKEN) != NULL;
	pthread_mutex_unlock(&s->mu);
	if (want_ok && (r != PK_KUBE_OK || nreq != 1 || !token)) {
		fprintf(stderr, "tls child: %s: want success, got %s (%s), %d requests\n", what,
		        pk_kube_reason_name(r), e.message, nreq);
		return 1;
	}
	if (!want_ok && (r != PK_KUBE_CONNECTION || strstr(e.message, "certificate") == NULL ||
	                 nreq != 0 || token || failures != 1)) {
		fprintf(stderr,
		        "tls child: %s: want a refused certificate, got %s (%s), %d requests "
		        "received%s, %d failed handshakes\n",
		        what, pk_kube_reason_name(r), e.message, nreq,
		        token ? " WITH THE TOKEN" : "", failures);
		return 1;
	}
	return 0;
}

static void r_tls(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	(void)q;
	o->body = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}";
}

static int tls_cases(struct fake_server *sx, struct fake_server *sy, const struct fs_pki *y,
                     const char *dir)
{
	int bad = 0;
	char *yb64 = b64(y->ca_pem);
	char extra[8192], path[1024];
	CK(yb64 != NULL);

	/* No CA named: the system roots, which hold X now. This also proves that
	 * X really is where libcurl looks by default, so the refusals below mean
	 * something. */
	bad |= tls_expect(sx, tls_config(sx->port, NULL), true, "no CA, server from system CA X");

	/* CA Y named three ways, server from X: refused, token never sent. */
	snprintf(extra, sizeof(extra), "certificate-authority-data: %s", yb64);
	bad |= tls_expect(sx, tls_config(sx->port, extra), false, "certificate-authority-data Y");
	snprintf(path, sizeof(path), "%s/ca-y.pem", dir);
	CK(write_text(path, y->ca_pem) == 0);
	snprintf(extra, sizeof(extra), "certificate-authority: \"%s\"", path);
	bad |= tls_expect(sx, tls_config(sx->port, extra), false, "certificate-authority Y");

	snprintf(path, sizeof(path), "%s/sa", dir);
	CK(mkdir(path, 0700) == 0);
	snprintf(path, sizeof(path), "%s/sa/ca.crt", dir);
	CK(write_text(path, y->ca_pem) == 0);
	snprintf(path, sizeof(path), "%s/sa/token", dir);
	CK(write_text(path, TLS_TOKEN "\n") == 0);
	char port[16];
	snprintf(port, sizeof(port), "%d", sx->port);
	setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", port, 1);
	snprintf(path, sizeof(path), "%s/sa", dir);
	struct pk_kube_config *c = NULL;
	struct pk_err err;
	if (pk_kube_config_load_incluster(path, NULL, &c, &err) != PK_OK)
		fprintf(stderr, "tls child: in-cluster: %s\n", err.msg);
	bad |= tls_expect(sx, c, false, "in-cluster ca.crt Y");

	/* CA Y named, server from Y: trusted. */
	snprintf(extra, sizeof(extra), "certificate-authority-data: %s", yb64);
	bad |= tls_expect(sy, tls_config(sy->port, extra), true,
	                  "certificate-authority-data Y, "
	                  "server from Y");
	snprintf(port, sizeof(port), "%d", sy->port);
	setenv("KUBERNETES_SERVICE_PORT", port, 1);
	c = NULL;
	if (pk_kube_config_load_incluster(path, NULL, &c, &err) != PK_OK)
		fprintf(stderr, "tls child: in-cluster: %s\n", err.msg);
	bad |= tls_expect(sy, c, true, "in-cluster ca.crt Y, server from Y");
	free(yb64);

	/* Handshakes happened above: no session key may have been written. */
	struct stat st;
	if (stat(keylog_path, &st) == 0 && st.st_size > 0) {
		fprintf(stderr, "tls child: TLS keys were written to SSLKEYLOGFILE %s\n",
		        keylog_path);
		bad = 1;
	}
	return bad;
}

static int tls_child(const char *dir)
{
	alarm(120);
	struct fs_pki x, y;
	struct fake_server sx, sy;
	if (fs_pki_new(&x, "pk-test CA X") != 0 || fs_pki_new(&y, "pk-test CA Y") != 0)
		return 2;
	int rc = private_system_roots(x.ca, x.ca_pem, dir);
	if (rc != 0) {
		fs_pki_free(&x);
		fs_pki_free(&y);
		return rc;
	}
	SSL_CTX *cx = fs_pki_server_ctx(&x), *cy = fs_pki_server_ctx(&y);
	CK(cx != NULL && cy != NULL);
	CK(fs_start_tls(&sx, r_tls, NULL, cx) == 0);
	CK(fs_start_tls(&sy, r_tls, NULL, cy) == 0);
	SSL_CTX_free(cx);
	SSL_CTX_free(cy);
	rc = tls_cases(&sx, &sy, &y, dir);
	fs_stop(&sx);
	fs_stop(&sy);
	fs_pki_free(&x);
	fs_pki_free(&y);
	return rc;
}

static void test_tls_trusts_only_the_named_ca(void **state)
{
	(void)state;
	char dir[64] = "/tmp/pk-kube-roots-XXXXXX", cmd[128];
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "%s/roots", dir);
	assert_int_equal(mkdir(cmd, 0755), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(tls_child(dir));
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == TLS_SKIP)
		skip();
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		print_error("tls child: %s %d\n", WIFEXITED(st) ? "exit" : "signal",
		            WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* The first client of the process takes SSLKEYLOGFILE out of the environment,
 * so libcurl never writes session keys (main() set it). */
static void test_sslkeylogfile_cleared(void **state)
{
	(void)state;
	assert_null(getenv("SSLKEYLOGFILE"));
}

#define T(f) cmocka_unit_test_setup(f, reset)

int main(void)
{
	const struct CMUnitTest pure[] = {
	    cmocka_unit_test(test_status_decode), cmocka_unit_test(test_paths),
	    cmocka_unit_test(test_backoff),       cmocka_unit_test(test_quote_object),
	    cmocka_unit_test(test_list_decode),   cmocka_unit_test(test_object_ident),
	};
	const struct CMUnitTest net[] = {
	    T(test_get_ok),
	    T(test_not_found_not_retried),
	    T(test_429_honours_retry_after_for_any_verb),
	    T(test_5xx_retried_for_get_only),
	    T(test_5xx_with_retry_after_retried_for_any_verb),
	    T(test_retry_after_forms),
	    T(test_hangup_retried_for_get_not_post),
	    T(test_connection_refused),
	    T(test_response_cap),
	    T(test_bad_bodies),
	    T(test_timeout),
	    T(test_list_all_paging),
	    T(test_list_caps_per_object),
	    T(test_write_requests),
	    T(test_discovery),
	    T(test_preferred_version_first),
	    T(test_preferred_version_second),
	    T(test_preferred_version_neither),
	    T(test_preferred_version_errors),
	    T(test_preferred_version_bad_arguments),
	    T(test_401_rereads_token_file),
	    T(test_stream),
	    T(test_threads),
	    T(test_rate_limit_applies),
	    T(test_deadline),
	    T(test_request_stats),
	    T(test_sslkeylogfile_cleared),
	    T(test_tls_trusts_only_the_named_ca),
	};
	/* libcurl would write every TLS session key here; the client must stop it. */
	int kfd = mkstemp(keylog_path);
	if (kfd < 0)
		return 1;
	close(kfd);
	setenv("SSLKEYLOGFILE", keylog_path, 1);
	int fails = cmocka_run_group_tests_name("pure", pure, NULL, NULL);
	fails += cmocka_run_group_tests_name("client", net, setup, teardown);
	unlink(keylog_path);
	return fails;
}
