/*
 * test_kube_informer.c - list then watch into the store, with a transform:
 * callbacks in order, duplicates suppressed, relist after 410 Gone reports
 * what changed while the watch was down, synced/stale state, reads from
 * another thread. Against a scripted server on 127.0.0.1.
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

#include "kube_informer.h"
#include "test_kube_fakeserver.h"

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
	snprintf(it->name, sizeof(it->name), "%s", pk_kube_meta_str(obj, "name"));
	it->rv = strtol(pk_kube_meta_str(obj, "resourceVersion"), NULL, 10);
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

static void test_informer_list_watch_relist(void **state)
{
	(void)state;
	cur = r_script;
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
	*(const char **)ud = pk_kube_meta_str(item, "resourceVersion");
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
	    cmocka_unit_test_setup(test_informer_never_synced_when_down, reset),
	    cmocka_unit_test_setup(test_informer_json_store, reset),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
