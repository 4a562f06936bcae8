/*
 * test_incluster.c - the in-process allocator backend without a cluster:
 * the test hands it the cached pool, as the reconciler does, and a fake
 * writer, and follows what each operation says changed. Pool views
 * (missing, paused, invalid, active), leases in order and never twice,
 * exhaustion as a result, abandon and release giving addresses back (and
 * the reuse grace period), adoption of IPAddresses seen and duplicates,
 * stale records, the consistent reload at leadership, and the pool
 * reconciler's finalizer and status.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "incluster.h"
#include "json_fixture.h"
#include "fake_writer.h"

/* A claim of namespace "ns", by name, as the reconciler names it to the backend. */
#define ID(n) (&(const struct pk_claim_id){.ns = "ns", .name = n, .key = "ns/" n})

struct host_fixture {
	struct fake_writer fw;
	struct pk_writer writer;
	struct pk_backend_host host;
	struct pk_backend b;
	json_t *pool; /* the cached IPPool ns/pool, or NULL */
	unsigned pool_syncs, grace_syncs, claims_queued, pools_woken, events;
	char last_claim[PK_OBJECT_KEY_MAX];
};

static void queue_claim(void *ud, const char *key, long delay_ms)
{
	struct host_fixture *h = ud;
	(void)delay_ms;
	h->claims_queued++;
	snprintf(h->last_claim, sizeof(h->last_claim), "%s", key);
}

/* What the controller would queue after an operation (ctl_follow). */
static void follow(struct host_fixture *h, const struct pk_pool_next *next)
{
	if (next->claim_key[0] != '\0')
		queue_claim(h, next->claim_key, 0);
	if (next->pool_key[0] == '\0')
		return;
	assert_string_equal(next->pool_key, "IPPool/ns/pool");
	h->pool_syncs += next->sync;
	h->grace_syncs += next->grace_ms > 0;
	h->pools_woken += next->wake;
}

static void seen(struct host_fixture *h, const json_t *address)
{
	struct pk_pool_next next;
	memset(&next, 0, sizeof(next));
	h->b.ops->address_seen(h->b.self, address, &next);
	follow(h, &next);
}

static void release(struct host_fixture *h, const struct pk_claim_id *id, struct pk_release_note *n,
                    struct pk_backend_result *r)
{
	h->b.ops->release_address(h->b.self, id, n, r);
	follow(h, &r->next);
}

/* The pool's work, on the pool as cached. */
static int pool_work(struct host_fixture *h, const struct pk_work_key *k)
{
	struct pk_pool_next next;
	memset(&next, 0, sizeof(next));
	int rc = h->b.ops->reconcile_pool(h->b.self, k, h->pool, &next);
	follow(h, &next);
	return rc;
}

static void post_event(void *ud, const struct pk_kube_object_ref *r, bool warning,
                       const char *reason, const char *action, const char *message)
{
	(void)r;
	(void)warning;
	(void)reason;
	(void)action;
	(void)message;
	((struct host_fixture *)ud)->events++;
}

#define POOL_29 "{'addresses': ['10.0.0.0/29'], 'prefix': 29, 'gateway': '10.0.0.1'}"

static json_t *pool_with(const char *spec, const char *meta_extra)
{
	return loadf("{'apiVersion': 'ipam.poolkeeper.io/v1alpha1', 'kind': 'IPPool', 'metadata': "
	             "{'name': 'pool', 'namespace': 'ns', 'uid': 'pu', 'generation': 1, "
	             "'resourceVersion': '3'%s}, 'spec': %s}",
	             meta_extra, spec);
}

static int setup(void **state)
{
	struct host_fixture *h = calloc(1, sizeof(*h));
	assert_non_null(h);
	h->writer = fake_writer_init(&h->fw);
	h->host = (struct pk_backend_host){.ud = h,
	                                   .writer = &h->writer,
	                                   .queue_claim = queue_claim,
	                                   .post_event = post_event,
	                                   .ipam_version = "v1beta2"};
	assert_int_equal(pk_incluster_new(&h->host, &h->b), PK_OK);
	h->pool = pool_with(POOL_29, "");
	*state = h;
	return 0;
}

static int teardown(void **state)
{
	struct host_fixture *h = *state;
	h->b.ops->free(h->b.self);
	fake_writer_release(&h->fw);
	json_decref(h->pool);
	free(h);
	return 0;
}

static json_t *claim_named(const char *name)
{
	return loadf("{'metadata': {'name': '%s', 'namespace': 'ns', 'uid': 'u-%s'}, 'spec': "
	             "{'poolRef': {'apiGroup': 'ipam.poolkeeper.io', 'kind': 'IPPool', 'name': "
	             "'pool'}}}",
	             name, name);
}

static json_t *ipaddress(const char *name, const char *address)
{
	return loadf(
	    "{'metadata': {'name': '%s', 'namespace': 'ns'}, 'spec': {'address': '%s', "
	    "'prefix': 29, 'poolRef': {'apiGroup': 'ipam.poolkeeper.io', 'kind': 'IPPool', "
	    "'name': 'pool'}}}",
	    name, address);
}

/* The claim's pool view (the test releases it). */
static void fetch(struct host_fixture *h, const char *claim, struct pk_pool_view *v)
{
	json_t *c = claim_named(claim);
	assert_int_equal(pk_backend_view_pool(&h->b, c, h->pool ? json_incref(h->pool) : NULL, v),
	                 PK_OK);
	json_decref(c);
}

/* Leases an address for claim ns/<name>; returns the result (the lease in *l). */
static enum pk_backend_status lease(struct host_fixture *h, const char *name,
                                    struct pk_address_lease *l, char *msg, size_t len)
{
	struct pk_pool_view v;
	char key[64];
	struct pk_backend_result res;
	fetch(h, name, &v);
	assert_int_equal(v.facts.state, PK_POOL_ACTIVE);
	snprintf(key, sizeof(key), "ns/%s", name);
	struct pk_claim_id id = {.ns = "ns", .name = name, .key = key};
	h->b.ops->ensure_address(h->b.self, &v, &id, l, &res);
	follow(h, &res.next);
	snprintf(msg, len, "%s", res.message);
	pk_pool_view_clear(&v);
	return res.status;
}

static void pool_views(void **state)
{
	struct host_fixture *h = *state;
	struct pk_pool_view v;
	fetch(h, "c1", &v);
	assert_int_equal(v.facts.state, PK_POOL_ACTIVE);
	assert_true(v.facts.served);
	assert_string_equal(v.key, "IPPool/ns/pool");
	pk_pool_view_clear(&v);

	json_decref(h->pool);
	h->pool = pool_with(POOL_29, ", 'annotations': {'cluster.x-k8s.io/paused': 'true'}");
	fetch(h, "c1", &v);
	assert_int_equal(v.facts.state, PK_POOL_PAUSED);
	pk_pool_view_clear(&v);

	json_decref(h->pool);
	h->pool = pool_with("{'addresses': ['not an address']}", ", 'generation': 2");
	fetch(h, "c1", &v);
	assert_int_equal(v.facts.state, PK_POOL_INVALID);
	assert_non_null(strstr(v.text, "is not usable"));
	pk_pool_view_clear(&v);

	json_decref(h->pool);
	h->pool = NULL;
	fetch(h, "c1", &v);
	assert_int_equal(v.facts.state, PK_POOL_MISSING);
	pk_pool_view_clear(&v);
	assert_int_equal(h->fw.ncalls, 0);
}

static void leases_in_order_never_twice_then_exhausted(void **state)
{
	struct host_fixture *h = *state;
	struct pk_address_lease l;
	char msg[PK_ERR_MSG_MAX];
	const char *want[] = {"10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"};
	for (size_t i = 0; i < 5; i++) {
		char name[8];
		snprintf(name, sizeof(name), "c%zu", i);
		assert_int_equal(lease(h, name, &l, msg, sizeof(msg)), PK_BACKEND_OK);
		assert_string_equal(l.address, want[i]);
		assert_string_equal(l.gateway, "10.0.0.1");
		assert_int_equal(l.prefix, 29);
		assert_true(l.fresh);
	}
	/* The same claim again: the address it holds, not a new one. */
	assert_int_equal(lease(h, "c0", &l, msg, sizeof(msg)), PK_BACKEND_OK);
	assert_string_equal(l.address, "10.0.0.2");
	assert_false(l.fresh);
	assert_int_equal(lease(h, "c9", &l, msg, sizeof(msg)), PK_BACKEND_EXHAUSTED);
	assert_non_null(strstr(msg, "IPPool ns/pool has no free address (5 usable"));
	assert_false(h->b.ops->holds(h->b.self, ID("c9")));
	assert_true(h->b.ops->holds(h->b.self, ID("c4")));
	assert_int_equal(h->fw.ncalls, 0); /* exhaustion writes nothing */
}

static void abandon_frees_a_fresh_lease_only(void **state)
{
	struct host_fixture *h = *state;
	struct pk_address_lease l, again;
	char msg[PK_ERR_MSG_MAX];
	assert_int_equal(lease(h, "c1", &l, msg, sizeof(msg)), PK_BACKEND_OK);
	h->b.ops->abandon_address(h->b.self, ID("c1"), &l);
	assert_false(h->b.ops->holds(h->b.self, ID("c1")));
	assert_int_equal(lease(h, "c2", &again, msg, sizeof(msg)), PK_BACKEND_OK);
	assert_string_equal(again.address, l.address);
	/* A lease of the address already held is not the backend's to drop. */
	assert_int_equal(lease(h, "c2", &again, msg, sizeof(msg)), PK_BACKEND_OK);
	assert_false(again.fresh);
	h->b.ops->abandon_address(h->b.self, ID("c2"), &again);
	assert_true(h->b.ops->holds(h->b.self, ID("c2")));
}

static void release_gives_back_and_wakes_waiters(void **state)
{
	struct host_fixture *h = *state;
	struct pk_address_lease l;
	struct pk_release_note n;
	struct pk_backend_result rel;
	char msg[PK_ERR_MSG_MAX];
	for (int i = 0; i < 5; i++) {
		char name[8];
		snprintf(name, sizeof(name), "c%d", i);
		assert_int_equal(lease(h, name, &l, msg, sizeof(msg)), PK_BACKEND_OK);
	}
	assert_int_equal(lease(h, "late", &l, msg, sizeof(msg)), PK_BACKEND_EXHAUSTED);
	release(h, ID("c3"), &n, &rel);
	assert_int_equal(rel.status, PK_BACKEND_OK);
	assert_true(n.released);
	assert_string_equal(n.address, "10.0.0.5");
	assert_string_equal(rel.next.pool_key, "IPPool/ns/pool");
	assert_int_equal(n.grace_seconds, 0);
	assert_int_equal(h->pools_woken, 1);
	assert_int_equal(lease(h, "late", &l, msg, sizeof(msg)), PK_BACKEND_OK);
	assert_string_equal(l.address, "10.0.0.5");
	/* Nothing held: nothing released. */
	release(h, ID("none"), &n, &rel);
	assert_int_equal(rel.status, PK_BACKEND_OK);
	assert_false(n.released);
}

static void grace_period_holds_a_released_address(void **state)
{
	struct host_fixture *h = *state;
	struct pk_address_lease l;
	struct pk_release_note n;
	struct pk_backend_result rel;
	char msg[PK_ERR_MSG_MAX];
	json_decref(h->pool);
	h->pool = pool_with("{'addresses': ['10.0.0.2-10.0.0.3'], 'prefix': 24, "
	                    "'addressReuseGracePeriodSeconds': 600}",
	                    "");
	assert_int_equal(lease(h, "c1", &l, msg, sizeof(msg)), PK_BACKEND_OK);
	assert_string_equal(l.address, "10.0.0.2");
	release(h, ID("c1"), &n, &rel);
	assert_int_equal(rel.status, PK_BACKEND_OK);
	assert_int_equal(n.grace_seconds, 600);
	assert_int_equal(h->grace_syncs, 1);
	assert_int_equal(lease(h, "c2", &l, msg, sizeof(msg)), PK_BACKEND_OK);
	assert_string_equal(l.address, "10.0.0.3"); /* not the one in its grace period */
	assert_int_equal(lease(h, "c3", &l, msg, sizeof(msg)), PK_BACKEND_EXHAUSTED);
}

static void adopts_what_it_sees_and_counts_duplicates(void **state)
{
	struct host_fixture *h = *state;
	struct pk_address_lease l;
	char msg[PK_ERR_MSG_MAX];
	json_t *a = ipaddress("made-by-hand", "10.0.0.2");
	seen(h, a);
	assert_int_equal(h->pool_syncs, 1);
	seen(h, a); /* nothing new: no sync */
	assert_int_equal(h->pool_syncs, 1);
	json_decref(a);
	assert_true(h->b.ops->holds(h->b.self, ID("made-by-hand")));
	assert_int_equal(lease(h, "c1", &l, msg, sizeof(msg)), PK_BACKEND_OK);
	assert_string_equal(l.address, "10.0.0.3");
	/* A second IPAddress with the address c1 holds: a duplicate, left as it is. */
	json_t *dup = ipaddress("dup", "10.0.0.3");
	seen(h, dup);
	json_decref(dup);
	assert_int_equal(h->fw.ncalls, 0);
	struct pk_work_key k;
	pk_work_key_pool(&k, PK_WORK_POOL, "IPPool", "ns", "pool");
	assert_int_equal(pool_work(h, &k), PK_OK);
	int st = fake_find(&h->fw, "patch", "ippools/status pool");
	assert_true(st >= 0);
	assert_true(fake_body_has(&h->fw, st, "DuplicateAddresses"));
	assert_int_equal(h->events, 1);
	/* Released by one holder: the other still holds it, and its claim looks again. */
	struct pk_release_note n;
	struct pk_backend_result rel;
	release(h, ID("dup"), &n, &rel);
	assert_int_equal(rel.status, PK_BACKEND_OK);
	assert_true(n.released);
	assert_string_equal(h->last_claim, "ns/c1");
	assert_int_equal(lease(h, "c2", &l, msg, sizeof(msg)), PK_BACKEND_OK);
	assert_string_equal(l.address, "10.0.0.4");
}

static void a_record_outside_the_pool_is_stale(void **state)
{
	struct host_fixture *h = *state;
	struct pk_address_lease l;
	char msg[PK_ERR_MSG_MAX];
	json_t *a = ipaddress("c1", "192.168.1.1");
	seen(h, a);
	json_decref(a);
	assert_int_equal(lease(h, "c1", &l, msg, sizeof(msg)), PK_BACKEND_STALE);
	struct pk_release_note n;
	struct pk_backend_result rel;
	release(h, ID("c1"), &n, &rel);
	assert_int_equal(rel.status, PK_BACKEND_OK);
	assert_int_equal(lease(h, "c1", &l, msg, sizeof(msg)), PK_BACKEND_OK);
	assert_string_equal(l.address, "10.0.0.2");
}

static void leading_reloads_from_a_consistent_read(void **state)
{
	struct host_fixture *h = *state;
	struct pk_address_lease l;
	char msg[PK_ERR_MSG_MAX];
	assert_int_equal(lease(h, "old", &l, msg, sizeof(msg)), PK_BACKEND_OK);
	json_t *a = ipaddress("x", "10.0.0.2"), *b = ipaddress("y", "10.0.0.4");
	json_t *pages = json_pack("[{s:[o,o]}]", "items", a, b);
	h->fw.pages = pages;
	assert_int_equal(h->b.ops->on_leading(h->b.self), PK_OK);
	assert_int_equal(fake_find(&h->fw, "list", "ipaddresses "), 0);
	assert_false(h->b.ops->holds(h->b.self, ID("old"))); /* the record is the API's now */
	assert_true(h->b.ops->holds(h->b.self, ID("x")));
	assert_true(h->b.ops->holds(h->b.self, ID("y")));
	assert_int_equal(lease(h, "c1", &l, msg, sizeof(msg)), PK_BACKEND_OK);
	assert_string_equal(l.address, "10.0.0.3");
	assert_int_equal(lease(h, "c2", &l, msg, sizeof(msg)), PK_BACKEND_OK);
	assert_string_equal(l.address, "10.0.0.5");
	json_decref(pages);
}

/* A reload the API refuses is PK_ERR_API (tried again), not an invalid input. */
static void a_refused_reload_is_an_api_error(void **state)
{
	struct host_fixture *h = *state;
	h->fw.list_reason = PK_KUBE_SERVER_ERROR;
	assert_int_equal(h->b.ops->on_leading(h->b.self), PK_ERR_API);
	h->fw.list_reason = PK_KUBE_NOMEM;
	assert_int_equal(h->b.ops->on_leading(h->b.self), PK_ERR_NOMEM);
	h->fw.list_reason = PK_KUBE_OK;
	assert_int_equal(h->b.ops->on_leading(h->b.self), PK_OK);
}

static void pool_finalizer_follows_what_is_held(void **state)
{
	struct host_fixture *h = *state;
	struct pk_address_lease l;
	struct pk_release_note n;
	struct pk_backend_result rel;
	char msg[PK_ERR_MSG_MAX];
	struct pk_work_key k;
	pk_work_key_pool(&k, PK_WORK_POOL, "IPPool", "ns", "pool");
	assert_int_equal(pool_work(h, &k), PK_OK);
	assert_int_equal(fake_find(&h->fw, "patch", "ippools pool"), -1); /* nothing held */
	int st = fake_find(&h->fw, "patch", "ippools/status pool");
	assert_true(fake_body_has(&h->fw, st, "\"free\":\"5\""));
	fake_writer_release(&h->fw);

	assert_int_equal(lease(h, "c1", &l, msg, sizeof(msg)), PK_BACKEND_OK);
	assert_int_equal(pool_work(h, &k), PK_OK);
	int fin = fake_find(&h->fw, "patch", "ippools pool");
	assert_true(fake_body_has(&h->fw, fin, "protect-pool"));
	assert_true(fake_body_has(&h->fw, fin, "\"op\":\"add\""));
	fake_writer_release(&h->fw);

	json_decref(h->pool);
	h->pool = pool_with(POOL_29, ", 'finalizers': ['ipam.poolkeeper.io/protect-pool']");
	release(h, ID("c1"), &n, &rel);
	assert_int_equal(rel.status, PK_BACKEND_OK);
	assert_int_equal(pool_work(h, &k), PK_OK);
	fin = fake_find(&h->fw, "patch", "ippools pool");
	assert_true(fake_body_has(&h->fw, fin, "\"op\":\"remove\""));
}

static void kinds_and_keys(void **state)
{
	struct host_fixture *h = *state;
	char key[PK_OBJECT_KEY_MAX];
	json_t *global = load("{'apiGroup': 'ipam.poolkeeper.io', 'kind': 'GlobalIPPool', "
	                      "'name': 'g'}");
	json_t *other = load("{'apiGroup': 'ipam.example.com', 'kind': 'IPPool', 'name': 'g'}");
	assert_true(pk_backend_pool_key(&h->b, global, "ns", key, sizeof(key)));
	assert_string_equal(key, "GlobalIPPool//g");
	assert_false(pk_backend_pool_key(&h->b, other, "ns", key, sizeof(key)));
	assert_non_null(pk_backend_kind(&h->b, "IPPool"));
	assert_null(pk_backend_kind(&h->b, "Pool"));
	json_decref(global);
	json_decref(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(pool_views, setup, teardown),
	    cmocka_unit_test_setup_teardown(leases_in_order_never_twice_then_exhausted, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(abandon_frees_a_fresh_lease_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(release_gives_back_and_wakes_waiters, setup, teardown),
	    cmocka_unit_test_setup_teardown(grace_period_holds_a_released_address, setup, teardown),
	    cmocka_unit_test_setup_teardown(adopts_what_it_sees_and_counts_duplicates, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(a_record_outside_the_pool_is_stale, setup, teardown),
	    cmocka_unit_test_setup_teardown(leading_reloads_from_a_consistent_read, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(pool_finalizer_follows_what_is_held, setup, teardown),
	    cmocka_unit_test_setup_teardown(kinds_and_keys, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_refused_reload_is_an_api_error, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
