/*
 * test_kube_events.c - Event aggregation against a scripted server on
 * 127.0.0.1: the first occurrence creates, the second writes the series at
 * once, later ones are counted and flushed; a new series after the window;
 * a failed create is tried again; the cache stays bounded.
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
#include "kube_events.h"
#include "kube_fakeserver.h"

static struct fake_server srv;
static struct pk_kube_config *cfg;
static struct pk_kube_client *cli;
static int fail_creates; /* how many creates to refuse */

static void respond(void *ud, int i, const struct fs_request *q, struct fs_response *o)
{
	(void)ud;
	(void)i;
	if (strcmp(q->method, "POST") == 0 && fail_creates > 0) {
		fail_creates--;
		o->status = 403;
		o->body =
		    "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"message\":\"no events\"}";
		return;
	}
	o->status = strcmp(q->method, "POST") == 0 ? 201 : 200;
	o->body = "{}";
}

static int setup(void **state)
{
	(void)state;
	if (fs_start(&srv, respond, NULL) != 0)
		return -1;
	struct pk_kube_client_opts o = {.qps = -1, .max_retries = -1};
	return fs_client_new(&srv, &o, &cfg, &cli);
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
	fail_creates = 0;
	return 0;
}

static const struct pk_kube_object_ref pool = {.api_version = "ipam.poolkeeper.io/v1alpha1",
                                               .kind = "IPPool",
                                               .namespace = "ns",
                                               .name = "pool-a",
                                               .uid = "u1"};

static json_t *body(int i)
{
	json_t *b = json_loads(srv.reqs[i].body, 0, NULL);
	assert_non_null(b);
	return b;
}

static void test_series(void **state)
{
	(void)state;
	struct pk_kube_recorder_opts o = {.controller = "ipam.poolkeeper.io/poolkeeper-controller",
	                                  .instance = "pod-1",
	                                  .flush_ms = 60000};
	struct pk_kube_recorder *r;
	struct pk_err err;
	assert_int_equal(pk_kube_recorder_new(cli, &o, &r, &err), PK_OK);
	for (int i = 0; i < 5; i++)
		assert_int_equal(pk_kube_recorder_emit(r, &pool, true, "PoolExhausted", "Allocate",
		                                       "pool %s has no free address", "pool-a"),
		                 PK_KUBE_OK);
	/* create, then the series at the second occurrence; 3 more only counted */
	assert_int_equal(srv.nreq, 2);
	assert_string_equal(srv.reqs[0].method, "POST");
	assert_string_equal(srv.reqs[0].path, "/apis/events.k8s.io/v1/namespaces/ns/events");
	json_t *ev = body(0);
	assert_string_equal(pk_json_cstr_at(ev, "reason"), "PoolExhausted");
	assert_string_equal(pk_json_cstr_at(ev, "type"), "Warning");
	assert_string_equal(pk_json_cstr_at(ev, "note"), "pool pool-a has no free address");
	assert_string_equal(pk_json_cstr_at(ev, "reportingInstance"), "pod-1");
	assert_string_equal(pk_json_cstr_at(json_object_get(ev, "regarding"), "uid"), "u1");
	assert_non_null(pk_json_cstr_at(ev, "eventTime"));
	const char *name = pk_json_meta_cstr(ev, "name");
	assert_true(strncmp(name, "pool-a.", 7) == 0);
	char patch_path[256];
	snprintf(patch_path, sizeof(patch_path), "/apis/events.k8s.io/v1/namespaces/ns/events/%s",
	         name);
	json_decref(ev);
	assert_string_equal(srv.reqs[1].method, "PATCH");
	assert_string_equal(srv.reqs[1].path, patch_path);
	ev = body(1);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(ev, "series"), "count")), 2);
	json_decref(ev);

	assert_int_equal(pk_kube_recorder_flush(r), PK_KUBE_OK);
	assert_int_equal(srv.nreq, 3);
	ev = body(2);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(ev, "series"), "count")), 5);
	json_decref(ev);
	/* nothing pending: flush writes nothing */
	assert_int_equal(pk_kube_recorder_flush(r), PK_KUBE_OK);
	assert_int_equal(srv.nreq, 3);

	/* another note is another Event */
	assert_int_equal(
	    pk_kube_recorder_emit(r, &pool, false, "Allocated", "Allocate", "10.0.0.1"),
	    PK_KUBE_OK);
	assert_int_equal(srv.nreq, 4);
	assert_string_equal(srv.reqs[3].method, "POST");
	unsigned long created, updated;
	pk_kube_recorder_stats(r, &created, &updated);
	assert_int_equal(created, 2);
	assert_int_equal(updated, 2);
	pk_kube_recorder_free(r);
}

static void test_window_failure_and_bound(void **state)
{
	(void)state;
	struct pk_kube_recorder_opts o = {.controller = "c", .series_window_s = 1, .max_cached = 2};
	struct pk_kube_recorder *r;
	struct pk_err err;
	assert_int_equal(pk_kube_recorder_new(cli, &o, &r, &err), PK_OK);

	/* a refused create is reported, and the next occurrence tries again */
	fail_creates = 1;
	assert_int_equal(pk_kube_recorder_emit(r, &pool, false, "R", "A", "x"), PK_KUBE_FORBIDDEN);
	assert_int_equal(pk_kube_recorder_emit(r, &pool, false, "R", "A", "x"), PK_KUBE_OK);
	assert_int_equal(srv.nreq, 2);
	assert_string_equal(srv.reqs[1].method, "POST");

	/* after the series window a new Event starts */
	fs_sleep_ms(1100);
	assert_int_equal(pk_kube_recorder_emit(r, &pool, false, "R", "A", "x"), PK_KUBE_OK);
	assert_int_equal(srv.nreq, 3);
	assert_string_equal(srv.reqs[2].method, "POST");

	/* a bounded cache: a third distinct event evicts the oldest, whose
	 * pending count is written first */
	assert_int_equal(pk_kube_recorder_emit(r, &pool, false, "R2", "A", "y"), PK_KUBE_OK);
	assert_int_equal(pk_kube_recorder_emit(r, &pool, false, "R2", "A", "y"), PK_KUBE_OK);
	assert_int_equal(pk_kube_recorder_emit(r, &pool, false, "R2", "A", "y"), PK_KUBE_OK);
	int before = srv.nreq;
	assert_int_equal(pk_kube_recorder_emit(r, &pool, false, "R3", "A", "z"), PK_KUBE_OK);
	assert_int_equal(srv.nreq, before + 1); /* only the create: "R" had nothing pending */
	assert_int_equal(pk_kube_recorder_emit(r, &pool, false, "R4", "A", "w"), PK_KUBE_OK);
	/* evicting R2 (3 seen, 2 written) writes its count, then R4 is created */
	assert_int_equal(srv.nreq, before + 3);
	assert_string_equal(srv.reqs[before + 1].method, "PATCH");
	pk_kube_recorder_free(r);

	assert_int_equal(pk_kube_recorder_new(cli, &(struct pk_kube_recorder_opts){0}, &r, &err),
	                 PK_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_series, reset),
	    cmocka_unit_test_setup(test_window_failure_and_bound, reset),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
