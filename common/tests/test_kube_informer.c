/*
 * test_kube_informer.c - list then watch into the store, with a transform:
 * callbacks in order, duplicates suppressed, relist after 410 Gone reports
 * what changed while the watch was down, synced/stale state, reads from
 * another thread. Against a scripted server on 127.0.0.1.
 */
#define _GNU_SOURCE /* strcasestr */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json.h"
#include "kube_fakeserver.h"
#include "kube_informer.h"
#include "parse.h"

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

#define OBJ(name, rv)                                                                              \
	"{\"metadata\":{\"namespace\":\"ns\",\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"" \
	"}}"
#define EV(t, name, rv) "{\"type\":\"" t "\",\"object\":" OBJ(name, rv) "}\n"

static char slow_body[4096];

/* list; watch with changes then 410; relist; a quiet watch until stopped */
static void r_script(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	bool watch = strstr(q->path, "watch=true") != NULL;
	if (!watch && i == 0) {
		o->body = "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"10\"},"
		          "\"items\":[" OBJ("a", "1") "," OBJ("b", "2") "]}";
		return;
	}
	if (watch && i == 1) {
		assert_non_null(strstr(q->path, "resourceVersion=10"));
		o->chunked = true;
		o->chunk_size = 50;
		o->body = EV("ADDED", "c", "11") EV("MODIFIED", "a", "12") EV("DELETED", "b", "13")
		    EV("MODIFIED", "a", "12") /* the same version again: no event */
		    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"reason\":\"Expired\","
		    "\"code\":410,\"message\":\"too old resource version\"}}\n";
		return;
	}
	if (!watch) {
		/* while the watch was down, c was deleted and d created */
		o->body = "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"20\"},"
		          "\"items\":[" OBJ("a", "12") "," OBJ("d", "14") "]}";
		return;
	}
	assert_non_null(strstr(q->path, "resourceVersion=20"));
	size_t at = 0;
	static const char bm[] =
	    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"21\"}}}\n";
	for (int k = 0; k < 40; k++, at += sizeof(bm) - 1)
		memcpy(slow_body + at, bm, sizeof(bm) - 1);
	slow_body[at] = '\0';
	o->body = slow_body;
	o->chunked = true;
	o->chunk_size = sizeof(bm) - 1;
	o->chunk_delay_ms = 100;
}

/* the caller's compact item */
struct item {
	char name[32];
	long rv;
};

static int live_items;

static void *transform(void *ud, const json_t *obj)
{
	(void)ud;
	struct item *it = calloc(1, sizeof(*it));
	snprintf(it->name, sizeof(it->name), "%s", pk_json_meta_cstr(obj, "name"));
	/* the informer's thread: no cmocka assertion here; -1 shows in the checks */
	int64_t rv;
	struct pk_err err;
	if (pk_parse_i64(pk_json_meta_cstr(obj, "resourceVersion"), 0, INT64_MAX, &rv, &err) !=
	    PK_OK)
		rv = -1;
	it->rv = (long)rv;
	__atomic_add_fetch(&live_items, 1, __ATOMIC_SEQ_CST);
	return it;
}

static void release(void *ud, void *item)
{
	(void)ud;
	__atomic_sub_fetch(&live_items, 1, __ATOMIC_SEQ_CST);
	free(item);
}

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char hlog[1024];

static void logf_(const char *fmt, ...) PK_PRINTF(1, 2);
static void logf_(const char *fmt, ...)
{
	pthread_mutex_lock(&log_mu);
	size_t l = strlen(hlog);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(hlog + l, sizeof(hlog) - l, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&log_mu);
}

static struct pk_kube_informer *the_inf;

static void on_add(void *ud, const char *key, const void *item)
{
	(void)ud;
	const struct item *it = item;
	logf_("add:%s@%ld ", key, it->rv);
	/* reads from a handler do not deadlock */
	assert_true(pk_kube_informer_get(the_inf, "ns", it->name, NULL, NULL));
}

static void on_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)ud;
	logf_("update:%s@%ld>%ld ", key, ((const struct item *)old)->rv,
	      ((const struct item *)item)->rv);
}

static void on_delete(void *ud, const char *key, const void *item)
{
	(void)ud;
	logf_("delete:%s@%ld ", key, ((const struct item *)item)->rv);
}

static void on_synced(void *ud)
{
	(void)ud;
	logf_("synced ");
}

static void visit(void *ud, const char *key, const void *item)
{
	(void)key;
	*(long *)ud = ((const struct item *)item)->rv;
}

static bool log_has(const char *s)
{
	pthread_mutex_lock(&log_mu);
	bool ok = strstr(hlog, s) != NULL;
	pthread_mutex_unlock(&log_mu);
	return ok;
}

/* the_inf over ns's ConfigMaps with the logging handlers and the compact transform; not
 * started. */
static void new_logged_informer(fs_responder *script)
{
	cur = script;
	hlog[0] = '\0';
	struct pk_kube_informer_opts o = {
	    .ref = {.version = "v1", .resource = "configmaps", .namespace = "ns"},
	    .transform = transform,
	    .release = release,
	    .handlers = {.on_add = on_add,
	                 .on_update = on_update,
	                 .on_delete = on_delete,
	                 .on_synced = on_synced},
	    .watch_timeout_s = 30,
	    .backoff_base_ms = 10,
	};
	struct pk_err err;
	assert_int_equal(pk_kube_informer_new(cli, &o, &the_inf, &err), PK_OK);
}

static void test_informer_list_watch_relist(void **state)
{
	(void)state;
	new_logged_informer(r_script);
	struct pk_err err;
	assert_int_equal(pk_kube_informer_state(the_inf), PK_KUBE_INFORMER_STARTING);
	assert_false(pk_kube_informer_synced(the_inf));
	assert_int_equal(pk_kube_informer_start(the_inf, &err), PK_OK);
	assert_true(pk_kube_informer_wait_synced(the_inf, 5000));
	for (int t = 0; t < 500 && !log_has("delete:ns/c"); t++)
		fs_sleep_ms(10);
	assert_true(pk_kube_informer_wait_synced(the_inf, 5000));
	assert_string_equal(hlog, "add:ns/a@1 add:ns/b@2 synced add:ns/c@11 update:ns/a@1>12 "
	                          "delete:ns/b@2 add:ns/d@14 delete:ns/c@11 ");
	assert_int_equal(pk_kube_informer_lists(the_inf), 2);
	assert_int_equal(pk_kube_informer_count(the_inf), 2);
	long rv = 0;
	assert_true(pk_kube_informer_get(the_inf, "ns", "a", visit, &rv));
	assert_int_equal(rv, 12);
	assert_false(pk_kube_informer_get(the_inf, "ns", "c", visit, &rv));
	assert_int_equal(live_items, 2);
	/* the bookmark moved the store's version on */
	char v[32];
	for (int t = 0; t < 200; t++) {
		pk_kube_informer_resource_version(the_inf, v, sizeof(v));
		if (strcmp(v, "21") == 0)
			break;
		fs_sleep_ms(10);
	}
	assert_string_equal(v, "21");

	long long t0 = pk_kube_now_ns();
	pk_kube_informer_stop(the_inf);
	assert_true(pk_kube_now_ns() - t0 < 2500000000LL);
	/* stopped: the data is kept but no longer reported fresh */
	assert_int_equal(pk_kube_informer_state(the_inf), PK_KUBE_INFORMER_STALE);
	assert_false(pk_kube_informer_synced(the_inf));
	assert_int_equal(pk_kube_informer_count(the_inf), 2);
	pk_kube_informer_free(the_inf);
	assert_int_equal(live_items, 0);
}

/* ---- hostile objects never stop the informer ---- */

#define NULV(name, rv)                                                                        \
	"{\"metadata\":{\"namespace\":\"ns\",\"name\":\"" name "\",\"resourceVersion\":\"" rv \
	"\","                                                                                 \
	"\"annotations\":{\"x\":\"a\\u0000b\"}}}"
#define NULK(name, rv)                                                                        \
	"{\"metadata\":{\"namespace\":\"ns\",\"name\":\"" name "\",\"resourceVersion\":\"" rv \
	"\"},\"spec\":{\"k\\u0000\":1}}"

/* list: a, b, one with a NUL in a value, one with a NUL in a key; watch: c, then b turns
 * undecodable, 410; relist: b still undecodable; a quiet watch. */
static void r_hostile(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	bool watch = strstr(q->path, "watch=true") != NULL;
	if (!watch && i == 0) {
		o->body = "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"10\"},"
		          "\"items\":[" OBJ("a", "1") "," OBJ("b", "2") "," NULV(
		              "nul", "3") "," NULK("badkey", "4") "]}";
		return;
	}
	if (watch && i == 1) {
		o->chunked = true;
		o->chunk_size = 50;
		o->body = EV("ADDED", "c", "11") "{\"type\":\"MODIFIED\",\"object\":" NULK(
		    "b", "12") "}\n"
		               "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"reason\":"
		               "\"Expired\",\"code\":410}}\n";
		return;
	}
	if (!watch) {
		o->body = "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"20\"},"
		          "\"items\":[" OBJ("a", "1") "," NULK("b", "12") "," NULV(
		              "nul", "3") "," OBJ("c", "11") "]}";
		return;
	}
	o->delay_ms = 300;
	o->body = "";
}

static void test_informer_hostile_objects(void **state)
{
	(void)state;
	new_logged_informer(r_hostile);
	struct pk_err err;
	assert_int_equal(pk_kube_informer_start(the_inf, &err), PK_OK);
	/* the first list completes although one object in it cannot be decoded */
	assert_true(pk_kube_informer_wait_synced(the_inf, 5000));
	for (int t = 0; t < 500 && pk_kube_informer_lists(the_inf) < 2; t++)
		fs_sleep_ms(10);
	assert_true(pk_kube_informer_wait_synced(the_inf, 5000));
	assert_int_equal(pk_kube_informer_lists(the_inf), 2);
	/* b keeps its last decodable state: not reported deleted, not updated */
	assert_string_equal(hlog, "add:ns/a@1 add:ns/b@2 add:ns/nul@3 synced add:ns/c@11 ");
	assert_int_equal(pk_kube_informer_count(the_inf), 4);
	long rv = 0;
	assert_true(pk_kube_informer_get(the_inf, "ns", "b", visit, &rv));
	assert_int_equal(rv, 2);
	assert_false(pk_kube_informer_get(the_inf, "ns", "badkey", NULL, NULL));
	/* badkey in the list, b in the watch, b in the relist */
	assert_int_equal(pk_kube_informer_skipped(the_inf), 3);
	/* the NUL in a value is stored and reported once for that version */
	assert_int_equal(pk_kube_informer_nul_fields(the_inf), 1);
	pk_kube_informer_free(the_inf);
	assert_int_equal(live_items, 0);
}

#define NULN(name, rv)                                         \
	"{\"metadata\":{\"namespace\":\"ns\",\"name\":\"" name \
	"\\u0000x\",\"resourceVersion\":\"" rv "\"},\"data\":{\"v\":\"a\\u0000b\"}}"
#define NULLIST(rv, items)                                                    \
	"{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"" rv \
	"\"},\"items\":[" items "]}"
#define GONE                                                                                       \
	"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410}" \
	"}\n"

/*
 * One object whose name holds a NUL, at version 5 through a list, the same
 * event again, two relists; then at version 6 through a watch and a relist.
 */
static void r_nul_versions(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)q;
	switch (i) {
	case 0:
	case 2:
		o->body = NULLIST("10", NULN("bad", "5") "," OBJ("a", "1"));
		return;
	case 1:
		o->body = "{\"type\":\"MODIFIED\",\"object\":" NULN("bad", "5") "}\n" GONE;
		return;
	case 3:
		o->body = "{\"type\":\"MODIFIED\",\"object\":" NULN("bad", "6") "}\n" GONE;
		return;
	case 4:
		o->body = NULLIST("20", NULN("bad", "6") "," OBJ("a", "1"));
		return;
	default:
		o->delay_ms = 300;
		o->body = "";
	}
}

static atomic_int nul_warnings, other_warnings;

static void count_warnings(void *ud, enum pk_kube_level level, const char *msg)
{
	(void)ud;
	if (level < PK_KUBE_LOG_WARN)
		return;
	if (strstr(msg, "metadata.name is missing or not a plain string") != NULL)
		atomic_fetch_add(&nul_warnings, 1);
	else
		atomic_fetch_add(&other_warnings, 1);
}

/* A NUL-bearing object is warned of once per resourceVersion, not once per event or relist. */
static void test_informer_nul_warned_once_per_version(void **state)
{
	(void)state;
	struct pk_kube_log log = {.fn = count_warnings, .min_level = PK_KUBE_LOG_WARN};
	struct pk_kube_client_opts co = {.qps = -1, .log = &log};
	struct pk_kube_config *cfg2;
	struct pk_kube_client *cli2;
	atomic_store(&nul_warnings, 0);
	atomic_store(&other_warnings, 0);
	cur = r_nul_versions;
	assert_int_equal(fs_client_new(&srv, &co, &cfg2, &cli2), 0);
	struct pk_kube_informer_opts o = {
	    .ref = {.version = "v1", .resource = "configmaps", .namespace = "ns"},
	    .watch_timeout_s = 30,
	    .backoff_base_ms = 10,
	};
	struct pk_kube_informer *inf;
	struct pk_err err;
	assert_int_equal(pk_kube_informer_new(cli2, &o, &inf, &err), PK_OK);
	assert_int_equal(pk_kube_informer_start(inf, &err), PK_OK);
	for (int t = 0; t < 500 && pk_kube_informer_lists(inf) < 3; t++)
		fs_sleep_ms(10);
	assert_true(pk_kube_informer_wait_synced(inf, 5000));
	assert_int_equal(pk_kube_informer_lists(inf), 3);
	/* every event is counted: three lists and two watch events */
	assert_int_equal(pk_kube_informer_skipped(inf), 5);
	/* but said once for version 5 and once for version 6 */
	assert_int_equal(atomic_load(&nul_warnings), 2);
	assert_int_equal(pk_kube_informer_count(inf), 1);
	pk_kube_informer_free(inf);
	pk_kube_client_free(cli2);
	pk_kube_config_free(cfg2);
}

static void r_down(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	(void)q;
	o->status = 503;
}

static void test_informer_never_synced_when_down(void **state)
{
	(void)state;
	cur = r_down;
	struct pk_kube_informer_opts o = {
	    .ref = {.group = "ipam.cluster.x-k8s.io",
	            .version = "v1beta2",
	            .resource = "ipaddressclaims"},
	    .backoff_base_ms = 10,
	    .backoff_max_ms = 50,
	};
	struct pk_kube_informer *inf;
	struct pk_err err;
	assert_int_equal(pk_kube_informer_new(cli, &o, &inf, &err), PK_OK);
	assert_int_equal(pk_kube_informer_start(inf, &err), PK_OK);
	assert_false(pk_kube_informer_wait_synced(inf, 300));
	assert_int_equal(pk_kube_informer_state(inf), PK_KUBE_INFORMER_STARTING);
	assert_int_equal(pk_kube_informer_count(inf), 0);
	pk_kube_informer_free(inf);

	/* a collection without a version is refused up front */
	o.ref.version = NULL;
	assert_int_equal(pk_kube_informer_new(cli, &o, &inf, &err), PK_ERR_INVALID);
}

static void r_json_store(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	if (strstr(q->path, "watch=true") == NULL) {
		o->body =
		    "{\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":["
		    "{\"metadata\":{\"name\":\"cluster-scoped\",\"resourceVersion\":\"5\"}}]}";
		return;
	}
	o->delay_ms = 200;
	o->body = "";
}

static void visit_json(void *ud, const char *key, const void *item)
{
	(void)key;
	*(const char **)ud = pk_json_meta_cstr(item, "resourceVersion");
}

static void test_informer_json_store(void **state)
{
	(void)state;
	cur = r_json_store;
	struct pk_kube_informer_opts o = {.ref = {.version = "v1", .resource = "namespaces"},
	                                  .backoff_base_ms = 10};
	struct pk_kube_informer *inf;
	struct pk_err err;
	assert_int_equal(pk_kube_informer_new(cli, &o, &inf, &err), PK_OK);
	assert_int_equal(pk_kube_informer_start(inf, &err), PK_OK);
	for (int t = 0; t < 300 && pk_kube_informer_lists(inf) == 0; t++)
		fs_sleep_ms(10);
	const char *rv = NULL;
	assert_true(pk_kube_informer_get(inf, NULL, "cluster-scoped", visit_json, &rv));
	assert_string_equal(rv, "5");
	pk_kube_informer_free(inf);
}

/* ---- stopping several informers ---- */

#define NSTOP 5

/* Each informer has a server of its own: the fake server answers one
 * connection at a time, and an idle watch holds its connection. */
struct stop_case {
	struct fake_server srv;
	struct pk_kube_config *cfg;
	struct pk_kube_client *cli;
	struct pk_kube_informer *inf;
	bool busy;          /* the watch streams changes; else it gets no answer */
	atomic_int watches; /* watch requests received */
	atomic_int calls;   /* callbacks run */
	atomic_int stopped; /* pk_kube_informer_stop has returned */
	atomic_int late;    /* callbacks run after that */
};

static struct stop_case cases[NSTOP];

/* Idle watches are held until released (or 30 s pass), then closed. */
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static bool hold_release;

static void hold_set(bool release)
{
	pthread_mutex_lock(&hold_mu);
	hold_release = release;
	pthread_cond_broadcast(&hold_cv);
	pthread_mutex_unlock(&hold_mu);
}

static void r_stop(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)i;
	struct stop_case *sc = ud;
	if (strstr(q->path, "watch=true") == NULL) {
		o->body = "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"1\"},"
		          "\"items\":[" OBJ("x", "1") "]}";
		return;
	}
	atomic_fetch_add(&sc->watches, 1);
	if (sc->busy) {
		/* a change every few milliseconds, so that callbacks are running
		 * when the stop comes */
		enum { N = 2000, EVLEN = 128 };
		char *b = malloc((size_t)N * EVLEN);
		if (b == NULL) { /* not assert: this is the server's thread */
			o->status = 500;
			return;
		}
		size_t at = 0;
		for (int k = 0; k < N; k++)
			at += (size_t)snprintf(b + at, EVLEN,
			                       "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{"
			                       "\"namespace\":\"ns\",\"name\":\"x\","
			                       "\"resourceVersion\":\"%d\"}}}\n",
			                       k + 2);
		o->owned = b;
		o->body = b;
		o->body_len = at;
		o->chunked = true;
		o->chunk_size = 200;
		o->chunk_delay_ms = 5;
		return;
	}
	/* a quiet long poll: the client waits for an answer that does not come */
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 30;
	pthread_mutex_lock(&hold_mu);
	while (!hold_release)
		if (pthread_cond_timedwait(&hold_cv, &hold_mu, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&hold_mu);
	o->status = 0;
}

static void sc_count(struct stop_case *sc)
{
	atomic_fetch_add(&sc->calls, 1);
	if (atomic_load(&sc->stopped))
		atomic_fetch_add(&sc->late, 1);
}

static void sc_add(void *ud, const char *key, const void *item)
{
	(void)key;
	(void)item;
	sc_count(ud);
}

static void sc_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)key;
	(void)old;
	(void)item;
	sc_count(ud);
}

static void sc_synced(void *ud)
{
	sc_count(ud);
}

/* Starts NSTOP informers (two on a busy watch, the others on a quiet one),
 * waits until each is synced and inside its watch, stops them all in index
 * order, checks the outcome and returns how long stopping took.
 *
 * How long a quiet one takes to stop depends on where its request is in
 * libcurl's one-second poll, which starts over when the request is sent.
 * They are started in reverse order, 200 ms apart, so that when one
 * stopped in turn has finished waiting, the next has just passed its own
 * check: the case that makes stopping in turn slow (and the figures
 * comparable from run to run). Nothing here fails on time. */
static long long stop_many(bool begin_first)
{
	hold_set(false);
	for (int k = NSTOP - 1; k >= 0; k--) {
		struct stop_case *sc = &cases[k];
		memset(sc, 0, sizeof(*sc));
		sc->busy = k % 3 == 0;
		assert_int_equal(fs_start(&sc->srv, r_stop, sc), 0);
		assert_int_equal(fs_client_new(&sc->srv, NULL, &sc->cfg, &sc->cli), 0);
		struct pk_kube_informer_opts o = {
		    .ref = {.version = "v1", .resource = "configmaps", .namespace = "ns"},
		    .handlers = {.on_add = sc_add,
		                 .on_update = sc_update,
		                 .on_delete = sc_add,
		                 .on_synced = sc_synced,
		                 .ud = sc},
		    .watch_timeout_s = 60,
		    .backoff_base_ms = 10,
		};
		struct pk_err err;
		assert_int_equal(pk_kube_informer_new(sc->cli, &o, &sc->inf, &err), PK_OK);
		assert_int_equal(pk_kube_informer_start(sc->inf, &err), PK_OK);
		assert_true(pk_kube_informer_wait_synced(sc->inf, 10000));
		/* inside the watch: asked for it, and (busy) applying its changes */
		for (int t = 0; t < 1000 && (atomic_load(&sc->watches) == 0 ||
		                             (sc->busy && atomic_load(&sc->calls) < 5));
		     t++)
			fs_sleep_ms(10);
		assert_true(atomic_load(&sc->watches) > 0);
		if (sc->busy)
			assert_true(atomic_load(&sc->calls) >= 5);
		else
			fs_sleep_ms(200);
	}

	long long t0 = pk_kube_now_ns();
	if (begin_first)
		for (int k = 0; k < NSTOP; k++)
			pk_kube_informer_stop_begin(cases[k].inf);
	long long t1 = pk_kube_now_ns();
	long long each[NSTOP];
	for (int k = 0; k < NSTOP; k++) {
		long long s = pk_kube_now_ns();
		pk_kube_informer_stop(cases[k].inf);
		atomic_store(&cases[k].stopped, 1);
		each[k] = pk_kube_now_ns() - s;
	}
	long long total = pk_kube_now_ns() - t0;
	printf("# %s: %d informers stopped in %lld ms (stop_begin on all: %lld us; stop each:",
	       begin_first ? "stop_begin on all, then stop each" : "stop each in turn", NSTOP,
	       total / 1000000LL, (t1 - t0) / 1000LL);
	for (int k = 0; k < NSTOP; k++)
		printf(" %s %lld ms", cases[k].busy ? "busy" : "quiet", each[k] / 1000000LL);
	printf(")\n");

	for (int k = 0; k < NSTOP; k++) {
		struct stop_case *sc = &cases[k];
		assert_int_equal(pk_kube_informer_state(sc->inf), PK_KUBE_INFORMER_STALE);
		assert_false(pk_kube_informer_synced(sc->inf));
		assert_int_equal(pk_kube_informer_count(sc->inf), 1);
	}
	/* the threads are gone: nothing is called any more */
	int calls[NSTOP];
	for (int k = 0; k < NSTOP; k++)
		calls[k] = atomic_load(&cases[k].calls);
	fs_sleep_ms(50);
	for (int k = 0; k < NSTOP; k++) {
		assert_int_equal(atomic_load(&cases[k].late), 0);
		assert_int_equal(atomic_load(&cases[k].calls), calls[k]);
	}

	hold_set(true);
	for (int k = 0; k < NSTOP; k++) {
		struct stop_case *sc = &cases[k];
		pk_kube_informer_free(sc->inf);
		pk_kube_client_free(sc->cli);
		pk_kube_config_free(sc->cfg);
		fs_stop(&sc->srv);
	}
	return total;
}

/* The old way, for comparison: each stop waits out its own request. */
static void test_informer_stop_in_turn(void **state)
{
	(void)state;
	(void)stop_many(false);
}

static void test_informer_stop_begin_many(void **state)
{
	(void)state;
	(void)stop_many(true);
}

static void on_synced_stop(void *ud)
{
	/* from a callback: only the request, the owner joins */
	pk_kube_informer_stop_begin(*(struct pk_kube_informer **)ud);
}

static void test_informer_stop_begin_harmless(void **state)
{
	(void)state;
	cur = r_json_store;
	pk_kube_informer_stop_begin(NULL);
	pk_kube_informer_stop(NULL);

	struct pk_kube_informer_opts o = {.ref = {.version = "v1", .resource = "namespaces"},
	                                  .backoff_base_ms = 10};
	struct pk_kube_informer *inf;
	struct pk_err err;
	assert_int_equal(pk_kube_informer_new(cli, &o, &inf, &err), PK_OK);
	/* never started: nothing to stop, and the request does not outlive start */
	pk_kube_informer_stop_begin(inf);
	pk_kube_informer_stop_begin(inf);
	pk_kube_informer_stop(inf);
	assert_int_equal(pk_kube_informer_state(inf), PK_KUBE_INFORMER_STARTING);
	assert_int_equal(pk_kube_informer_start(inf, &err), PK_OK);
	assert_true(pk_kube_informer_wait_synced(inf, 10000));
	assert_int_equal(pk_kube_informer_count(inf), 1);

	/* twice, then stop twice, then once more after */
	pk_kube_informer_stop_begin(inf);
	pk_kube_informer_stop_begin(inf);
	pk_kube_informer_stop(inf);
	assert_int_equal(pk_kube_informer_state(inf), PK_KUBE_INFORMER_STALE);
	pk_kube_informer_stop(inf);
	pk_kube_informer_stop_begin(inf);
	assert_int_equal(pk_kube_informer_state(inf), PK_KUBE_INFORMER_STALE);
	assert_int_equal(pk_kube_informer_count(inf), 1);

	/* restarted after all that, it runs */
	assert_int_equal(pk_kube_informer_start(inf, &err), PK_OK);
	assert_true(pk_kube_informer_wait_synced(inf, 10000));
	assert_true(pk_kube_informer_lists(inf) >= 2);
	pk_kube_informer_stop_begin(inf);
	pk_kube_informer_free(inf); /* free after stop_begin joins */

	/* from the informer's own callback: the thread ends by itself */
	o.handlers = (struct pk_kube_informer_handlers){.on_synced = on_synced_stop, .ud = &inf};
	assert_int_equal(pk_kube_informer_new(cli, &o, &inf, &err), PK_OK);
	assert_int_equal(pk_kube_informer_start(inf, &err), PK_OK);
	for (int t = 0; t < 1000 && pk_kube_informer_state(inf) != PK_KUBE_INFORMER_STALE; t++)
		fs_sleep_ms(10);
	assert_int_equal(pk_kube_informer_state(inf), PK_KUBE_INFORMER_STALE);
	pk_kube_informer_stop(inf);
	assert_int_equal(pk_kube_informer_state(inf), PK_KUBE_INFORMER_STALE);
	assert_int_equal(pk_kube_informer_lists(inf), 1);
	pk_kube_informer_free(inf);
}

static int reset(void **state)
{
	(void)state;
	fs_reset(&srv);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_informer_list_watch_relist, reset),
	    cmocka_unit_test_setup(test_informer_hostile_objects, reset),
	    cmocka_unit_test_setup(test_informer_nul_warned_once_per_version, reset),
	    cmocka_unit_test_setup(test_informer_never_synced_when_down, reset),
	    cmocka_unit_test_setup(test_informer_json_store, reset),
	    cmocka_unit_test_setup(test_informer_stop_in_turn, reset),
	    cmocka_unit_test_setup(test_informer_stop_begin_many, reset),
	    cmocka_unit_test_setup(test_informer_stop_begin_harmless, reset),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
