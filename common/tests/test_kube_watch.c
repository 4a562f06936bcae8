/*
 * test_kube_watch.c - the watch stream splitter (table-driven: events split
 * across reads, several in one read, garbage, caps), event decoding (an
 * ERROR event carrying a 410), and the watch loop against a scripted
 * server on 127.0.0.1: resume from the last resourceVersion, 410 Gone,
 * garbage, refusal, stop.
 */
#define _GNU_SOURCE /* strcasestr */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json.h"
#include "kube_fakeserver.h"
#include "kube_watch.h"

/* ---- splitter ---- */

struct got {
	char text[8][512];
	int n;
	int stop_after; /* 0: never */
};

static int collect(void *ud, const char *text, size_t len)
{
	struct got *g = ud;
	assert_true(g->n < 8);
	assert_true(len < sizeof(g->text[0]));
	assert_int_equal(strlen(text), len); /* NUL-terminated */
	memcpy(g->text[g->n], text, len + 1);
	g->n++;
	return g->stop_after && g->n >= g->stop_after ? 7 : 0;
}

/* Feeds `stream` in pieces cut at the given offsets (ascending, 0-terminated). */
static int feed_cut(struct pk_kube_splitter *s, const char *stream, const size_t *cuts,
                    struct got *g, struct pk_err *err)
{
	size_t len = strlen(stream), at = 0;
	for (size_t k = 0;; k++) {
		size_t to = cuts[k] && cuts[k] < len ? cuts[k] : len;
		int rc = pk_kube_splitter_feed(s, stream + at, to - at, collect, g, err);
		if (rc != PK_OK)
			return rc;
		at = to;
		if (at == len)
			return PK_OK;
	}
}

#define E1                                                                                         \
	"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}" \
	"}"
#define E2                                                                                      \
	"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b\"},\"data\":{\"k\":\"}{" \
	"\\\"\\\\\"}}}"
#define E3 "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}"

static void test_splitter_table(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		const char *stream;
		size_t cuts[8];
		int rc; /* PK_OK, PK_ERR_INVALID, PK_ERR_TOO_BIG */
		int nevents;
		const char *first;
	} v[] = {
	    {"one event, one read", E1 "\n", {0}, PK_OK, 1, E1},
	    {"several events in one read", E1 "\n" E2 "\n" E3 "\n", {0}, PK_OK, 3, E1},
	    {"no newlines between events", E1 E2 E3, {0}, PK_OK, 3, E1},
	    {"split inside a key", E1 "\n" E2 "\n", {5, 0}, PK_OK, 2, E1},
	    {"split after a backslash", E2 "\n", {sizeof(E2) - 8, 0}, PK_OK, 1, E2},
	    {"split in many places",
	     E1 "\n" E2 "\n" E3 "\n",
	     {1, 2, 30, 77, 78, 150, 151, 0},
	     PK_OK,
	     3,
	     E1},
	    {"braces inside strings", E2, {0}, PK_OK, 1, E2},
	    {"leading and trailing blanks", " \r\n\t" E1 " \n\n", {0}, PK_OK, 1, E1},
	    {"unfinished event waits", E1 "\n{\"type\":\"ADD", {0}, PK_OK, 1, E1},
	    {"garbage before", "xyz" E1, {0}, PK_ERR_INVALID, 0, NULL},
	    {"garbage after an event", E1 "\nHTTP/1.1 500", {0}, PK_ERR_INVALID, 1, E1},
	    {"an array is not an event", "[1,2]", {0}, PK_ERR_INVALID, 0, NULL},
	    {"a stray closing brace", "}", {0}, PK_ERR_INVALID, 0, NULL},
	    {"an HTML error page", "<html>", {0}, PK_ERR_INVALID, 0, NULL},
	    {"a bracket closing a brace", "{\"a\":[1}]", {0}, PK_ERR_INVALID, 0, NULL},
	    {"brackets in strings do not count", "{\"a\":\"]}\"}", {0}, PK_OK, 1, "{\"a\":\"]}\"}"},
	    {"a brace closing a bracket", "{\"a\":1]", {0}, PK_ERR_INVALID, 0, NULL},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct pk_kube_splitter *s = pk_kube_splitter_new(0);
		struct got g = {.n = 0};
		struct pk_err err = {{0}};
		int rc = feed_cut(s, v[i].stream, v[i].cuts, &g, &err);
		if (rc != v[i].rc || g.n != v[i].nevents)
			print_error("%s: rc %d, %d events, err %s\n", v[i].name, rc, g.n, err.msg);
		assert_int_equal(rc, v[i].rc);
		assert_int_equal(g.n, v[i].nevents);
		if (v[i].first)
			assert_string_equal(g.text[0], v[i].first);
		if (rc == PK_ERR_INVALID)
			assert_non_null(strstr(err.msg, "garbage"));
		pk_kube_splitter_free(s);
	}
}

static void test_splitter_every_cut(void **state)
{
	(void)state;
	const char *stream = E1 "\n" E2 "\n" E3 "\n";
	size_t len = strlen(stream);
	/* every single cut point, and one byte at a time */
	for (size_t cut = 1; cut < len; cut++) {
		struct pk_kube_splitter *s = pk_kube_splitter_new(0);
		struct got g = {.n = 0};
		struct pk_err err;
		size_t cuts[2] = {cut, 0};
		assert_int_equal(feed_cut(s, stream, cuts, &g, &err), PK_OK);
		assert_int_equal(g.n, 3);
		assert_string_equal(g.text[0], E1);
		assert_string_equal(g.text[1], E2);
		assert_string_equal(g.text[2], E3);
		pk_kube_splitter_free(s);
	}
	struct pk_kube_splitter *s = pk_kube_splitter_new(0);
	struct got g = {.n = 0};
	struct pk_err err;
	for (size_t i = 0; i < len; i++)
		assert_int_equal(pk_kube_splitter_feed(s, stream + i, 1, collect, &g, &err), PK_OK);
	assert_int_equal(g.n, 3);
	assert_string_equal(g.text[1], E2);
	assert_int_equal(pk_kube_splitter_pending(s), 0);
	pk_kube_splitter_free(s);
}

static void test_splitter_cap_stop_reset(void **state)
{
	(void)state;
	struct pk_kube_splitter *s = pk_kube_splitter_new(40);
	struct got g = {.n = 0};
	struct pk_err err;
	assert_int_equal(pk_kube_splitter_feed(s, E1, strlen(E1), collect, &g, &err),
	                 PK_ERR_TOO_BIG);
	assert_non_null(strstr(err.msg, "larger than 40 bytes"));
	/* after a reset it is usable again */
	pk_kube_splitter_reset(s);
	assert_int_equal(pk_kube_splitter_feed(s, "{\"a\":1}", 7, collect, &g, &err), PK_OK);
	assert_int_equal(g.n, 1);
	pk_kube_splitter_free(s);

	/* nesting past the splitter's depth cap */
	s = pk_kube_splitter_new(0);
	static char deep[2 * PK_KUBE_JSON_MAX_DEPTH + 100];
	deep[0] = '{';
	memset(deep + 1, '[', sizeof(deep) - 2);
	assert_int_equal(pk_kube_splitter_feed(s, deep, sizeof(deep) - 1, collect, &g, &err),
	                 PK_ERR_TOO_BIG);
	assert_non_null(strstr(err.msg, "nested deeper"));
	pk_kube_splitter_free(s);

	/* the callback's stop value comes back, the rest is not consumed */
	s = pk_kube_splitter_new(0);
	g = (struct got){.stop_after = 1};
	const char *two = E1 E3;
	assert_int_equal(pk_kube_splitter_feed(s, two, strlen(two), collect, &g, &err), 7);
	assert_int_equal(g.n, 1);
	/* a partial event is dropped by reset (a new connection starts clean) */
	pk_kube_splitter_reset(s);
	assert_int_equal(pk_kube_splitter_feed(s, "{\"x\":", 5, collect, &g, &err), PK_OK);
	assert_int_equal(pk_kube_splitter_pending(s), 5);
	pk_kube_splitter_reset(s);
	assert_int_equal(pk_kube_splitter_pending(s), 0);
	pk_kube_splitter_free(s);
}

/* ---- event decoding ---- */

static void test_event_decode(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int rc;
		enum pk_kube_event_type type;
		const char *rv;
	} v[] = {
	    {E1, PK_OK, PK_KUBE_EVENT_ADDED, "1"},
	    {E2, PK_OK, PK_KUBE_EVENT_MODIFIED, NULL},
	    {E3, PK_OK, PK_KUBE_EVENT_BOOKMARK, "9"},
	    {"{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"resourceVersion\":\"3\"}}}", PK_OK,
	     PK_KUBE_EVENT_DELETED, "3"},
	    {"{\"type\":\"REMOVED\",\"object\":{}}", PK_ERR_INVALID, 0, NULL},
	    {"{\"type\":\"ADDED\"}", PK_ERR_INVALID, 0, NULL},
	    {"{\"type\":\"ADDED\",\"object\":[]}", PK_ERR_INVALID, 0, NULL},
	    {"{\"object\":{}}", PK_ERR_INVALID, 0, NULL},
	    {"{\"type\":\"ADDED\",\"object\":{}", PK_ERR_INVALID, 0, NULL},
	    {"{\"type\":\"ADDED\",\"object\":{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]"
	     "]]"
	     "]]]]]]]]]]]]]]]]]]]]]]]}}",
	     PK_ERR_TOO_BIG, 0, NULL},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct pk_kube_event ev;
		json_t *root;
		struct pk_err err;
		int rc = pk_kube_event_decode(v[i].text, strlen(v[i].text), 16, &ev, &root, &err);
		if (rc != v[i].rc)
			print_error("vector %zu: rc %d (%s)\n", i, rc, err.msg);
		assert_int_equal(rc, v[i].rc);
		if (rc == PK_OK) {
			assert_int_equal(ev.type, v[i].type);
			if (v[i].rv)
				assert_string_equal(ev.resource_version, v[i].rv);
			else
				assert_null(ev.resource_version);
		}
		json_decref(root); /* the event borrows from root */
	}

	/* the ERROR event the API server sends when a watch's version was compacted */
	const char *gone =
	    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
	    "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource "
	    "version: 5 (10)\",\"reason\":\"Expired\",\"code\":410}}";
	struct pk_kube_event ev;
	json_t *root;
	struct pk_err err;
	assert_int_equal(pk_kube_event_decode(gone, strlen(gone), 0, &ev, &root, &err), PK_OK);
	assert_int_equal(ev.type, PK_KUBE_EVENT_ERROR);
	assert_int_equal(ev.error.reason, PK_KUBE_GONE);
	assert_int_equal(ev.error.code, 410);
	assert_string_equal(ev.error.message, "too old resource version: 5 (10)");
	json_decref(root);
	assert_string_equal(pk_kube_event_type_name(PK_KUBE_EVENT_BOOKMARK), "BOOKMARK");
}

/* ---- the watch loop against the scripted server ---- */

static struct fake_server srv;
static struct pk_kube_config *cfg;
static struct pk_kube_client *cli;
static fs_responder *cur;
static void dispatch(void *ud, int index, const struct fs_request *req, struct fs_response *out)
{
	(void)ud;
	cur(NULL, index, req, out);
}

static int setup(void **state)
{
	(void)state;
	if (fs_start(&srv, dispatch, NULL) != 0)
		return -1;
	return fs_client_new(&srv, NULL, &cfg, &cli);
}

static int teardown(void **state)
{
	(void)state;
	pk_kube_client_free(cli);
	pk_kube_config_free(cfg);
	fs_stop(&srv);
	return 0;
}

static int reset(void **state)
{
	(void)state;
	fs_reset(&srv);
	return 0;
}

struct seen {
	char log[2048];
	int n;
	int connects, disconnects;
	int stop_at;
};

static int on_event(void *ud, const struct pk_kube_event *ev)
{
	struct seen *s = ud;
	size_t l = strlen(s->log);
	snprintf(s->log + l, sizeof(s->log) - l, "%s:%s ", pk_kube_event_type_name(ev->type),
	         ev->resource_version ? ev->resource_version : "-");
	s->n++;
	return s->stop_at && s->n >= s->stop_at;
}

static void on_state(void *ud, bool connected)
{
	struct seen *s = ud;
	if (connected)
		s->connects++;
	else
		s->disconnects++;
}

#define EV(t, rv)                                                                                \
	"{\"type\":\"" t "\",\"object\":{\"metadata\":{\"name\":\"o\",\"resourceVersion\":\"" rv \
	"\"}}}\n"

/* Connection 0: two events then the server ends it; 1: a bookmark, then the
 * connection breaks mid-event; 2: garbage after an event; 3: ERROR 410. */
static void r_resume(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)q;
	o->chunked = true;
	o->chunk_size = 13;
	switch (i) {
	case 0:
		o->body = EV("ADDED", "11") EV("MODIFIED", "12");
		break;
	case 1:
		o->body = EV("BOOKMARK", "15") "{\"type\":\"MODIFIED\",\"obj";
		break;
	case 2:
		o->body = EV("DELETED", "16") "not json at all\n";
		break;
	default:
		o->body =
		    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"reason\":\"Expired\","
		    "\"code\":410,\"message\":\"too old resource version\"}}\n";
		break;
	}
}

static void test_watch_resumes_then_gone(void **state)
{
	(void)state;
	cur = r_resume;
	struct pk_kube_ref r = {.version = "v1", .resource = "configmaps", .namespace = "ns"};
	struct seen s = {.log = ""};
	struct pk_kube_watch_opts o = {.resource_version = "10",
	                               .bookmarks = true,
	                               .timeout_s = 60,
	                               .label_selector = "app=pk",
	                               .backoff_base_ms = 10,
	                               .on_state = on_state};
	char rv[64];
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_watch_run(cli, &r, &o, on_event, &s, rv, sizeof(rv), &e);
	assert_int_equal(rc, PK_KUBE_GONE);
	assert_int_equal(e.code, 410);
	assert_string_equal(s.log, "ADDED:11 MODIFIED:12 BOOKMARK:15 DELETED:16 ");
	assert_string_equal(rv, "16");
	assert_int_equal(srv.nreq, 4);
	/* good: the three connections that carried events; the ERROR one is not;
	 * failed: all but the first, which the server ended cleanly */
	assert_int_equal(s.connects, 3);
	assert_int_equal(s.disconnects, 3);
	assert_string_equal(srv.reqs[0].path,
	                    "/api/v1/namespaces/ns/configmaps?watch=true&allowWatchBookmarks=true&"
	                    "labelSelector=app%3Dpk&resourceVersion=10&timeoutSeconds=60");
	/* each reconnect resumes from the last version seen */
	assert_non_null(strstr(srv.reqs[1].path, "&resourceVersion=12&"));
	assert_non_null(strstr(srv.reqs[2].path, "&resourceVersion=15&"));
	assert_non_null(strstr(srv.reqs[3].path, "&resourceVersion=16&"));
}

static void r_http_gone(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	(void)q;
	o->status = 410;
	o->body = "{\"kind\":\"Status\",\"reason\":\"Gone\",\"code\":410}";
}

static void r_forbidden(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	(void)q;
	o->status = 403;
	o->body = "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"message\":\"cannot watch\"}";
}

static void r_flaky(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)q;
	if (i < 2) {
		o->status = i == 0 ? 0 : 503; /* a hang-up, then a 503 */
		return;
	}
	o->body = EV("ADDED", "5");
}

static void test_watch_http_errors(void **state)
{
	(void)state;
	struct pk_kube_ref r = {.version = "v1", .resource = "configmaps"};
	struct seen s = {.log = ""};
	struct pk_kube_watch_opts o = {.backoff_base_ms = 10, .timeout_s = 5};
	struct pk_kube_error e;
	cur = r_http_gone;
	assert_int_equal(pk_kube_watch_run(cli, &r, &o, on_event, &s, NULL, 0, &e), PK_KUBE_GONE);
	assert_int_equal(srv.nreq, 1);
	/* no resourceVersion: watch from now */
	assert_null(strstr(srv.reqs[0].path, "resourceVersion"));
	cur = r_forbidden;
	assert_int_equal(pk_kube_watch_run(cli, &r, &o, on_event, &s, NULL, 0, &e),
	                 PK_KUBE_FORBIDDEN);
	assert_string_equal(e.message, "cannot watch");
	/* transient failures are retried; the callback stops the watch */
	reset(NULL);
	cur = r_flaky;
	s.stop_at = 1;
	assert_int_equal(pk_kube_watch_run(cli, &r, &o, on_event, &s, NULL, 0, &e),
	                 PK_KUBE_CANCELLED);
	assert_int_equal(srv.nreq, 3);
	assert_string_equal(s.log, "ADDED:5 ");
}

static atomic_int stop_flag;

static void r_slow_stream(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	(void)q;
	static char body[128 * 40];
	static const char one[] = EV("ADDED", "7");
	size_t at = 0;
	for (int k = 0; k < 40; k++, at += sizeof(one) - 1)
		memcpy(body + at, one, sizeof(one) - 1);
	body[at] = '\0';
	o->body = body;
	o->chunked = true;
	o->chunk_size = 64;
	o->chunk_delay_ms = 100; /* 4 s in all */
}

static void *stopper(void *arg)
{
	(void)arg;
	fs_sleep_ms(300);
	atomic_store(&stop_flag, 1);
	return NULL;
}

static void test_watch_stop(void **state)
{
	(void)state;
	cur = r_slow_stream;
	atomic_store(&stop_flag, 0);
	struct pk_kube_ref r = {.version = "v1", .resource = "configmaps"};
	struct seen s = {.log = ""};
	struct pk_kube_watch_opts o = {.stop = &stop_flag, .timeout_s = 5};
	struct pk_kube_error e;
	pthread_t t;
	pthread_create(&t, NULL, stopper, NULL);
	long long t0 = pk_kube_now_ns();
	assert_int_equal(pk_kube_watch_run(cli, &r, &o, on_event, &s, NULL, 0, &e),
	                 PK_KUBE_CANCELLED);
	assert_true(pk_kube_now_ns() - t0 < 2500000000LL);
	pthread_join(t, NULL);
}

static void r_quiet(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	(void)q;
	o->body = "\n\n\n";
	o->chunked = true;
	o->chunk_size = 1;
	o->chunk_delay_ms = 1000;
}

static void *stop_later(void *arg)
{
	fs_sleep_ms((int)(intptr_t)arg);
	atomic_store(&stop_flag, 1);
	return NULL;
}

static void test_watch_quiet_connection_becomes_good(void **state)
{
	(void)state;
	cur = r_quiet;
	atomic_store(&stop_flag, 0);
	struct pk_kube_ref r = {.version = "v1", .resource = "configmaps"};
	struct seen s = {.log = ""};
	struct pk_kube_watch_opts o = {.stop = &stop_flag, .timeout_s = 5, .on_state = on_state};
	struct pk_kube_error e;
	pthread_t t;
	pthread_create(&t, NULL, stop_later, (void *)(intptr_t)2200);
	assert_int_equal(pk_kube_watch_run(cli, &r, &o, on_event, &s, NULL, 0, &e),
	                 PK_KUBE_CANCELLED);
	pthread_join(t, NULL);
	/* no event, but a second without an ERROR: good */
	assert_int_equal(s.n, 0);
	assert_int_equal(s.connects, 1);
}

/* ---- hostile objects: one object never stops the watch ---- */

struct skips {
	char names[512];
	int n;
};

static void on_skip(void *ud, const char *ns, const char *name, const char *why)
{
	struct skips *k = ud;
	size_t l = strlen(k->names);
	assert_non_null(why);
	snprintf(k->names + l, sizeof(k->names) - l, "%s/%s ", ns ? ns : "-", name ? name : "-");
	k->n++;
}

#define HOSTILE_MAX_EVENT 4000

/* Connection 0: a good event; one with "\u0000" in an annotation value (decodes); one with
 * "\u0000" in a key, one nested past the cap, one over the event cap (all three passed over);
 * a good one. Connection 1: ERROR 410. */
static void r_hostile(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)q;
	static char body[16384];
	o->chunked = true;
	o->chunk_size = 97;
	if (i > 0) {
		o->body =
		    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"reason\":\"Expired\","
		    "\"code\":410}}\n";
		return;
	}
	size_t n = 0;
	n += (size_t)snprintf(body + n, sizeof(body) - n, "%s", EV("ADDED", "21"));
	n += (size_t)snprintf(body + n, sizeof(body) - n,
	                      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"nul\","
	                      "\"namespace\":\"t\",\"resourceVersion\":\"22\",\"annotations\":"
	                      "{\"x\":\"a\\u0000b\"}}}}\n");
	n += (size_t)snprintf(
	    body + n, sizeof(body) - n,
	    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"badkey\","
	    "\"namespace\":\"t\",\"resourceVersion\":\"23\"},\"spec\":{\"k\\u0000\":"
	    "1}}}\n");
	n += (size_t)snprintf(body + n, sizeof(body) - n,
	                      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"deep\","
	                      "\"namespace\":\"t\",\"resourceVersion\":\"24\"},\"spec\":");
	for (int d = 0; d < PK_KUBE_JSON_MAX_DEPTH; d++)
		body[n++] = '[';
	for (int d = 0; d < PK_KUBE_JSON_MAX_DEPTH; d++)
		body[n++] = ']';
	n += (size_t)snprintf(body + n, sizeof(body) - n, "}}\n");
	n += (size_t)snprintf(body + n, sizeof(body) - n,
	                      "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"annotations\":{"
	                      "\"big\":\"");
	memset(body + n, 'x', HOSTILE_MAX_EVENT);
	n += HOSTILE_MAX_EVENT;
	n +=
	    (size_t)snprintf(body + n, sizeof(body) - n,
	                     "\"},\"name\":\"huge\",\"namespace\":\"t\",\"resourceVersion\":\"25\"}"
	                     "}}\n");
	n += (size_t)snprintf(body + n, sizeof(body) - n, "%s", EV("MODIFIED", "26"));
	assert_true(n < sizeof(body) - 1);
	o->body = body;
}

static int on_event_nul(void *ud, const struct pk_kube_event *ev)
{
	const json_t *x = json_object_get(
	    json_object_get(json_object_get(ev->object, "metadata"), "annotations"), "x");
	if (x != NULL) {
		/* the whole value, NUL included; as a C string it is invalid */
		assert_int_equal(json_string_length(x), 3);
		assert_true(pk_json_has_nul(x));
		assert_null(pk_json_cstr(x));
		assert_null(pk_json_meta_cstr(ev->object, "annotations"));
	}
	return on_event(ud, ev);
}

static void test_watch_passes_over_undecodable_objects(void **state)
{
	(void)state;
	cur = r_hostile;
	struct pk_kube_ref r = {.version = "v1", .resource = "configmaps"};
	struct seen s = {.log = ""};
	struct skips k = {.names = ""};
	struct pk_kube_watch_opts o = {.resource_version = "20",
	                               .timeout_s = 60,
	                               .backoff_base_ms = 10,
	                               .max_event_bytes = HOSTILE_MAX_EVENT,
	                               .on_skip = on_skip,
	                               .skip_ud = &k};
	char rv[64];
	struct pk_kube_error e;
	assert_int_equal(pk_kube_watch_run(cli, &r, &o, on_event_nul, &s, rv, sizeof(rv), &e),
	                 PK_KUBE_GONE);
	/* the good ones and the one with a NUL in a value arrive, in order */
	assert_string_equal(s.log, "ADDED:21 ADDED:22 MODIFIED:26 ");
	/* the others are reported by name, and the stream went on past them */
	assert_string_equal(k.names, "t/badkey t/deep t/huge ");
	assert_int_equal(srv.nreq, 2);
	assert_non_null(strstr(srv.reqs[1].path, "&resourceVersion=26&"));
	assert_string_equal(rv, "26");
}

/* The splitter alone: an event over the cap is named at its end, and the next one is whole. */
struct oversized {
	size_t len;
	char what[256];
};

static int on_over(void *ud, size_t len, const char *type, const char *ns, const char *name,
                   const char *rv)
{
	struct oversized *v = ud;
	v->len = len;
	snprintf(v->what, sizeof(v->what), "%s %s/%s %s", type ? type : "-", ns ? ns : "-",
	         name ? name : "-", rv ? rv : "-");
	return 0;
}

static void test_splitter_oversize_named(void **state)
{
	(void)state;
	struct pk_kube_splitter *s = pk_kube_splitter_new(100); /* E1 fits, big does not */
	struct oversized v = {0};
	struct got g = {.n = 0};
	struct pk_err err;
	pk_kube_splitter_on_oversize(s, on_over, &v);
	const char *big = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"annotations\":{\"a\":"
	                  "\"0123456789012345678901234567890123456789\"},\"name\":\"n\\\"q\","
	                  "\"namespace\":\"ns\",\"resourceVersion\":\"77\"}}}";
	static const size_t cuts[] = {5, 40, 99, 101, 120, 0};
	char stream[512];
	snprintf(stream, sizeof(stream), "%s\n%s", big, E1);
	assert_int_equal(feed_cut(s, stream, cuts, &g, &err), PK_OK);
	assert_int_equal(v.len, strlen(big));
	assert_string_equal(v.what, "ADDED ns/n\"q 77");
	assert_int_equal(g.n, 1);
	assert_string_equal(g.text[0], E1);
	assert_int_equal(pk_kube_splitter_pending(s), 0);
	pk_kube_splitter_free(s);
}

#define T(f) cmocka_unit_test_setup(f, reset)

int main(void)
{
	const struct CMUnitTest pure[] = {
	    cmocka_unit_test(test_splitter_table),
	    cmocka_unit_test(test_splitter_every_cut),
	    cmocka_unit_test(test_splitter_cap_stop_reset),
	    cmocka_unit_test(test_event_decode),
	    cmocka_unit_test(test_splitter_oversize_named),
	};
	const struct CMUnitTest net[] = {
	    T(test_watch_resumes_then_gone),
	    T(test_watch_http_errors),
	    T(test_watch_stop),
	    T(test_watch_quiet_connection_becomes_good),
	    T(test_watch_passes_over_undecodable_objects),
	};
	int fails = cmocka_run_group_tests_name("splitter", pure, NULL, NULL);
	fails += cmocka_run_group_tests_name("watch", net, setup, teardown);
	return fails;
}
