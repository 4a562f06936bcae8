/*
 * test_objects.c - the objects and patches poolkeeper-controller writes:
 * finalizer patches guarded by the uid and the entry, never the
 * resourceVersion, conditions that keep
 * their transition time, the claim's status, the IPAddress, the pool's
 * status.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api.h"
#include "json.h"
#include "external_id.h"
#include "json_fixture.h"
#include "json_patch.h"
#include "objects.h"

static void test_time_text(void **state)
{
	(void)state;
	char b[PK_TIME_TEXT_MAX];
	pk_meta_time_text(T0, b);
	assert_string_equal(b, "2026-01-01T00:00:00Z");
}

static void test_finalizer_patches(void **state)
{
	(void)state;
	json_t *none = load("{'metadata':{'uid':'u7','resourceVersion':'7'}}");
	json_t *p = pk_objects_finalizer_add_patch(none, "x/y");
	assert_json(p, "[{'op':'test','path':'/metadata/uid','value':'u7'},"
	               "{'op':'test','path':'/metadata/finalizers','value':null},"
	               "{'op':'add','path':'/metadata/finalizers','value':['x/y']}]");
	json_decref(p);
	assert_null(pk_objects_finalizer_remove_patch(none, "x/y"));

	json_t *some =
	    load("{'metadata':{'uid':'u8','resourceVersion':'8','finalizers':['a','x/y']}}");
	assert_null(pk_objects_finalizer_add_patch(some, "x/y")); /* already there */
	p = pk_objects_finalizer_add_patch(some, "b");
	assert_json(p, "[{'op':'test','path':'/metadata/uid','value':'u8'},"
	               "{'op':'add','path':'/metadata/finalizers/-','value':'b'}]");
	json_decref(p);
	p = pk_objects_finalizer_remove_patch(some, "x/y");
	assert_json(p, "[{'op':'test','path':'/metadata/uid','value':'u8'},"
	               "{'op':'test','path':'/metadata/finalizers/1','value':'x/y'},"
	               "{'op':'remove','path':'/metadata/finalizers/1'}]");
	json_decref(p);
	assert_true(pk_objects_has_finalizer(some, "a"));
	assert_false(pk_objects_has_finalizer(some, "b"));

	/* no uid: nothing to keep the edit to this object, no patch */
	json_t *nouid = load("{'metadata':{'resourceVersion':'1','finalizers':['x/y']}}");
	assert_null(pk_objects_finalizer_add_patch(nouid, "a/b"));
	assert_null(pk_objects_finalizer_remove_patch(nouid, "x/y"));
	json_t *bad = load("{'metadata':{'uid':'u1','finalizers':'x/y'}}");
	p = pk_objects_finalizer_add_patch(bad, "x/y"); /* not a list: replaced only if absent */
	assert_json(p, "[{'op':'test','path':'/metadata/uid','value':'u1'},"
	               "{'op':'test','path':'/metadata/finalizers','value':null},"
	               "{'op':'add','path':'/metadata/finalizers','value':['x/y']}]");
	json_decref(p);
	json_decref(bad);
	json_decref(nouid);
	json_decref(none);
	json_decref(some);
}

/* A write by another party between the controller's read and its patch (the garbage
 * collector's owner reference patch, a provider's label) leaves the finalizer patches good:
 * applied to the object as it is now, as the apiserver applies them, each does its one
 * edit; a patch read from another object of the name, or a list changed under the index,
 * fails its test. */
static void test_finalizer_patches_survive_other_writes(void **state)
{
	(void)state;
	char why[300];
	json_t *read = load("{'metadata':{'uid':'u1','resourceVersion':'10','finalizers':"
	                    "['tenant/a','ipam.poolkeeper.io/release-address']}}");
	json_t *rm = pk_objects_finalizer_remove_patch(read, PK_CLAIM_FINALIZER);
	json_t *now = load("{'metadata':{'uid':'u1','resourceVersion':'11','ownerReferences':[],"
	                   "'finalizers':['tenant/a','ipam.poolkeeper.io/release-address']}}");
	assert_true(pk_test_json_patch(now, rm, why, sizeof(why)));
	assert_json(json_object_get(json_object_get(now, "metadata"), "finalizers"),
	            "['tenant/a']");
	/* the list changed under the index: the test of the entry fails, nothing changes */
	json_t *moved = load("{'metadata':{'uid':'u1','finalizers':"
	                     "['ipam.poolkeeper.io/release-address','tenant/a']}}");
	assert_false(pk_test_json_patch(moved, rm, why, sizeof(why)));
	/* another object of the name */
	json_t *other = load("{'metadata':{'uid':'u2','finalizers':"
	                     "['tenant/a','ipam.poolkeeper.io/release-address']}}");
	assert_false(pk_test_json_patch(other, rm, why, sizeof(why)));

	json_t *bare = load("{'metadata':{'uid':'u1','resourceVersion':'10'}}");
	json_t *add = pk_objects_finalizer_add_patch(bare, PK_CLAIM_FINALIZER);
	json_t *bare_now =
	    load("{'metadata':{'uid':'u1','resourceVersion':'12','labels':{'a':'b'}}}");
	assert_true(pk_test_json_patch(bare_now, add, why, sizeof(why)));
	assert_json(json_object_get(json_object_get(bare_now, "metadata"), "finalizers"),
	            "['ipam.poolkeeper.io/release-address']");
	/* someone else's finalizer came meanwhile: never replaced */
	json_t *theirs = load("{'metadata':{'uid':'u1','finalizers':['tenant/a']}}");
	assert_false(pk_test_json_patch(theirs, add, why, sizeof(why)));
	json_decref(read);
	json_decref(rm);
	json_decref(now);
	json_decref(moved);
	json_decref(other);
	json_decref(bare);
	json_decref(add);
	json_decref(bare_now);
	json_decref(theirs);
}

static void test_conditions(void **state)
{
	(void)state;
	json_t *old = load("[{'type':'Ready','status':'False','reason':'PoolExhausted',"
	                   "'message':'m','lastTransitionTime':'2025-01-01T00:00:00Z',"
	                   "'observedGeneration':1}]");
	struct pk_condition c = {"Ready", false, "PoolExhausted", "m", 1, false};
	assert_true(pk_objects_condition_same(old, &c));
	c.generation = 2;
	assert_false(pk_objects_condition_same(old, &c));
	/* same status: the transition time stays */
	json_t *x = pk_objects_condition_build(old, &c, T0);
	assert_string_equal(json_string_value(json_object_get(x, "lastTransitionTime")),
	                    "2025-01-01T00:00:00Z");
	json_decref(x);
	/* a new status: now */
	c.status = true;
	c.reason = "Allocated";
	assert_false(pk_objects_condition_same(old, &c));
	x = pk_objects_condition_build(old, &c, T0);
	assert_json(x, "{'type':'Ready','status':'True','reason':'Allocated','message':'m',"
	               "'lastTransitionTime':'2026-01-01T00:00:00Z','observedGeneration':2}");
	json_decref(x);
	/* v1beta1: severity on False, no observedGeneration */
	struct pk_condition v1 = {"Ready", false, "PoolNotReady", "gone", 3, true};
	x = pk_objects_condition_build(NULL, &v1, T0);
	assert_json(x, "{'type':'Ready','status':'False','reason':'PoolNotReady','message':'gone',"
	               "'lastTransitionTime':'2026-01-01T00:00:00Z','severity':'Warning'}");
	json_decref(x);
	assert_null(pk_meta_condition(NULL, "Ready"));
	assert_false(pk_objects_condition_same(NULL, &v1));
	json_decref(old);
}

static void test_claim_status_patch(void **state)
{
	(void)state;
	json_t *claim = load("{'metadata':{'name':'c'},'status':{'conditions':["
	                     "{'type':'Other','status':'True','reason':'X','message':'',"
	                     "'lastTransitionTime':'2025-01-01T00:00:00Z'}]}}");
	struct pk_condition c = {"Ready", true, "Allocated", "address 10.0.0.5", 1, false};
	json_t *p = pk_objects_claim_status_patch(claim, "c", &c, T0);
	assert_json(p, "{'status':{'addressRef':{'name':'c'},'conditions':["
	               "{'type':'Other','status':'True','reason':'X','message':'',"
	               "'lastTransitionTime':'2025-01-01T00:00:00Z'},"
	               "{'type':'Ready','status':'True','reason':'Allocated',"
	               "'message':'address 10.0.0.5','lastTransitionTime':'2026-01-01T00:00:00Z',"
	               "'observedGeneration':1}]}}");
	json_decref(p);
	/* no address: addressRef is left alone */
	p = pk_objects_claim_status_patch(claim, NULL, &c, T0);
	assert_null(json_object_get(json_object_get(p, "status"), "addressRef"));
	json_decref(p);
	json_decref(claim);
}

static const struct pk_pool_kind ippool = {
    "IPPool", "ipam.poolkeeper.io", "v1alpha1", "ippools", true, "incluster", PK_POOL_SPEC_RANGES};

static void test_ipaddress(void **state)
{
	(void)state;
	json_t *claim = load("{'apiVersion':'ipam.cluster.x-k8s.io/v1beta2','metadata':{"
	                     "'name':'m-0','namespace':'team','uid':'u-1',"
	                     "'labels':{'cluster.x-k8s.io/cluster-name':'prod','other':'x'}}}");
	struct pk_ipaddress_spec s = {"ipam.cluster.x-k8s.io/v1beta2",
	                              "10.0.0.5",
	                              24,
	                              "10.0.0.1",
	                              &ippool,
	                              "nodes",
	                              "p-1",
	                              NULL};
	json_t *a = pk_objects_ipaddress(claim, &s);
	assert_json(
	    a, "{'apiVersion':'ipam.cluster.x-k8s.io/v1beta2','kind':'IPAddress','metadata':{"
	       "'name':'m-0','namespace':'team','labels':{'cluster.x-k8s.io/cluster-name':'prod'},"
	       "'finalizers':['ipam.poolkeeper.io/protect-address'],'ownerReferences':["
	       "{'apiVersion':'ipam.cluster.x-k8s.io/v1beta2','kind':'IPAddressClaim','name':'m-0',"
	       "'uid':'u-1','controller':true,'blockOwnerDeletion':true},"
	       "{'apiVersion':'ipam.poolkeeper.io/v1alpha1','kind':'IPPool','name':'nodes',"
	       "'uid':'p-1','controller':false,'blockOwnerDeletion':true}]},"
	       "'spec':{'address':'10.0.0.5','prefix':24,'gateway':'10.0.0.1',"
	       "'claimRef':{'name':'m-0'},'poolRef':{'apiGroup':'ipam.poolkeeper.io',"
	       "'kind':'IPPool','name':'nodes'}}}");
	json_decref(a);
	/* no gateway, no label, no external ID */
	json_t *bare = load("{'metadata':{'name':'m','namespace':'t','uid':'u'}}");
	s.gateway = NULL;
	a = pk_objects_ipaddress(bare, &s);
	assert_null(json_object_get(json_object_get(a, "spec"), "gateway"));
	assert_null(json_object_get(json_object_get(a, "metadata"), "labels"));
	assert_null(json_object_get(json_object_get(a, "metadata"), "annotations"));
	json_decref(a);
	s.external_id = "";
	a = pk_objects_ipaddress(bare, &s);
	assert_null(json_object_get(json_object_get(a, "metadata"), "annotations"));
	json_decref(a);
	/* a backend's record ID: written as the annotation, read back */
	s.external_id = "lease-10.0.0.5-7f3a";
	a = pk_objects_ipaddress(bare, &s);
	assert_json(json_object_get(json_object_get(a, "metadata"), "annotations"),
	            "{'ipam.poolkeeper.io/external-id':'lease-10.0.0.5-7f3a'}");
	assert_string_equal(pk_external_id(a), "lease-10.0.0.5-7f3a");
	json_decref(a);
	s.external_id = NULL;
	/* no uid: no owner reference can be made */
	json_t *nouid = load("{'metadata':{'name':'m','namespace':'t'}}");
	assert_null(pk_objects_ipaddress(nouid, &s));
	json_decref(nouid);
	/* another backend's kind: its group and version name the pool, never poolkeeper's */
	static const struct pk_pool_kind other = {
	    "GlobalKeaIPPool",  "kea.ipam.example.org", "v1beta1", "globalkeaippools", false, "kea",
	    PK_POOL_SPEC_RANGES};
	s.pool_kind = &other;
	a = pk_objects_ipaddress(bare, &s);
	assert_json(json_object_get(a, "spec"),
	            "{'address':'10.0.0.5','prefix':24,'claimRef':{'name':'m'},"
	            "'poolRef':{'apiGroup':'kea.ipam.example.org','kind':'GlobalKeaIPPool',"
	            "'name':'nodes'}}");
	assert_json(json_array_get(pk_json_path(a, "metadata", "ownerReferences"), 1),
	            "{'apiVersion':'kea.ipam.example.org/v1beta1','kind':'GlobalKeaIPPool',"
	            "'name':'nodes','uid':'p-1','controller':false,'blockOwnerDeletion':true}");
	json_decref(a);
	/* no kind: no poolRef can be written */
	s.pool_kind = NULL;
	assert_null(pk_objects_ipaddress(bare, &s));
	json_decref(bare);
	json_decref(claim);
}

static void test_pool_status_patch(void **state)
{
	(void)state;
	struct pk_alloc_counts n;
	memset(&n, 0, sizeof(n));
	n.total = pk_count_of(11);
	n.used = pk_count_of(1);
	n.free = pk_count_of(10);
	struct pk_condition c = {"Ready", true, "Ready", "10 of 11 addresses free", 4, false};
	json_t *pool = load("{'metadata':{'generation':4}}");
	json_t *p = pk_objects_pool_status_patch(pool, &n, &c, NULL, T0);
	assert_json(p, "{'status':{'ipAddresses':{'total':'11','used':'1','free':'10',"
	               "'outOfRange':'0'},'conditions':[{'type':'Ready','status':'True',"
	               "'reason':'Ready','message':'10 of 11 addresses free',"
	               "'lastTransitionTime':'2026-01-01T00:00:00Z','observedGeneration':4}]}}");
	/* the status already says it: nothing to write */
	json_t *done = json_pack("{s:O}", "status", json_object_get(p, "status"));
	assert_null(pk_objects_pool_status_patch(done, &n, &c, NULL, T0 + 5));
	json_decref(done);
	json_decref(p);
	/* a /64: 2^64 addresses, exact */
	n.total = pk_count_of((pk_u128)1 << 64);
	n.free = pk_count_of(((pk_u128)1 << 64) - 1);
	p = pk_objects_pool_status_patch(pool, &n, &c, NULL, T0);
	json_t *ips = json_object_get(json_object_get(p, "status"), "ipAddresses");
	assert_string_equal(json_string_value(json_object_get(ips, "total")),
	                    "18446744073709551616");
	assert_string_equal(json_string_value(json_object_get(ips, "free")),
	                    "18446744073709551615");
	json_decref(p);
	json_decref(pool);
}

static void collect(void *ud, const char *address, long long until)
{
	json_t *seen = ud;
	json_array_append_new(seen, json_pack("{s:s, s:I}", "a", address, "t", (json_int_t)until));
}

/* The quarantine goes into the pool's status and comes back from it after a restart. */
static void test_pool_quarantine(void **state)
{
	(void)state;
	long long t;
	assert_int_equal(pk_meta_time_parse("2026-01-01T00:00:00Z", &t), PK_OK);
	assert_true(t == T0);
	/* only the exact form the controller writes */
	assert_int_equal(pk_meta_time_parse("2026-01-01T00:00:00", &t), PK_ERR_INVALID);
	assert_int_equal(pk_meta_time_parse("2026-01-01T00:00:00+01:00", &t), PK_ERR_INVALID);
	assert_int_equal(pk_meta_time_parse("2026-13-01T00:00:00Z", &t), PK_ERR_INVALID);
	assert_int_equal(pk_meta_time_parse(NULL, &t), PK_ERR_INVALID);

	struct pk_alloc_counts n;
	memset(&n, 0, sizeof(n));
	n.total = pk_count_of(2);
	n.free = pk_count_of(1);
	struct pk_condition c = {"Ready", true, "Ready", "1 of 2 addresses free", 1, false};
	json_t *q = json_array();
	assert_true(pk_objects_quarantine_add(q, "10.0.0.5", T0 + 30));
	json_t *pool = load("{'metadata':{'generation':1}}");
	json_t *p = pk_objects_pool_status_patch(pool, &n, &c, q, T0);
	json_t *st = json_object_get(p, "status");
	assert_json(json_object_get(st, "quarantinedAddresses"),
	            "[{'address':'10.0.0.5','until':'2026-01-01T00:00:30Z'}]");
	/* the same status again: nothing to write; an expired entry gone: a write */
	json_t *done = json_pack("{s:O}", "status", st);
	assert_null(pk_objects_pool_status_patch(done, &n, &c, q, T0 + 1));
	json_t *empty = json_array();
	json_t *p2 = pk_objects_pool_status_patch(done, &n, &c, empty, T0 + 40);
	assert_non_null(p2);
	assert_json(json_object_get(json_object_get(p2, "status"), "quarantinedAddresses"), "[]");
	/* a pool that never had one needs no empty list written */
	json_t *plain = pk_objects_pool_status_patch(pool, &n, &c, NULL, T0);
	assert_null(json_object_get(json_object_get(plain, "status"), "quarantinedAddresses"));
	assert_null(pk_objects_pool_status_patch(plain, &n, &c, empty, T0));
	json_decref(plain);

	/* reading back: entries still running only, malformed ones skipped */
	json_t *back = load("{'status':{'quarantinedAddresses':["
	                    "{'address':'10.0.0.5','until':'2026-01-01T00:00:30Z'},"
	                    "{'address':'10.0.0.6','until':'2025-12-31T23:59:00Z'},"
	                    "{'address':7,'until':'2026-01-01T00:00:30Z'},"
	                    "{'address':'10.0.0.8','until':'soon'},"
	                    "'junk']}}");
	json_t *seen = json_array();
	pk_objects_pool_quarantine(back, T0, collect, seen);
	assert_json(seen, "[{'a':'10.0.0.5','t':1767225630}]");
	pk_objects_pool_quarantine(NULL, T0, collect, seen);
	assert_int_equal(json_array_size(seen), 1);

	/* bounded */
	json_t *big = json_array();
	for (int i = 0; i < PK_QUARANTINE_MAX; i++)
		assert_true(pk_objects_quarantine_add(big, "10.0.0.1", T0));
	assert_false(pk_objects_quarantine_add(big, "10.0.0.1", T0));
	json_decref(big);
	json_decref(seen);
	json_decref(back);
	json_decref(p2);
	json_decref(empty);
	json_decref(done);
	json_decref(p);
	json_decref(pool);
	json_decref(q);
}

/* A NUL inside a string makes that field invalid: it never reads as the shorter string. */
static void test_nul_fields_invalid(void **state)
{
	(void)state;
	/* a claim whose uid holds a NUL: no owner reference can name it */
	json_t *claim = load("{'metadata':{'name':'m','namespace':'t','uid':'u\\u0000-other'}}");
	struct pk_ipaddress_spec s = {
	    "ipam.cluster.x-k8s.io/v1beta2", "10.0.0.5", 24, NULL, &ippool, "nodes", "p-1", NULL};
	assert_null(pk_objects_ipaddress(claim, &s));
	json_decref(claim);
	/* "ours\u0000" is not our finalizer: nothing to remove, ours still to add */
	json_t *obj = load("{'metadata':{'uid':'u5','finalizers':["
	                   "'ipam.poolkeeper.io/release-address\\u0000x']}}");
	assert_false(pk_objects_has_finalizer(obj, "ipam.poolkeeper.io/release-address"));
	assert_null(pk_objects_finalizer_remove_patch(obj, "ipam.poolkeeper.io/release-address"));
	json_t *p = pk_objects_finalizer_add_patch(obj, "ipam.poolkeeper.io/release-address");
	assert_non_null(p);
	json_decref(p);
	json_decref(obj);
	/* a uid holding a NUL cannot guard a patch */
	obj = load("{'metadata':{'uid':'u5\\u0000','finalizers':[]}}");
	assert_null(pk_objects_finalizer_add_patch(obj, "ipam.poolkeeper.io/release-address"));
	json_decref(obj);
	/* a condition whose message holds a NUL is not "the same": it is written again */
	json_t *conds =
	    load("[{'type':'Ready','status':'True','reason':'Allocated',"
	         "'message':'ok\\u0000x','lastTransitionTime':'2026-01-02T03:04:05Z'}]");
	struct pk_condition c = {"Ready", true, "Allocated", "ok", -1, false};
	assert_false(pk_objects_condition_same(conds, &c));
	json_decref(conds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_time_text),
	    cmocka_unit_test(test_finalizer_patches),
	    cmocka_unit_test(test_finalizer_patches_survive_other_writes),
	    cmocka_unit_test(test_conditions),
	    cmocka_unit_test(test_claim_status_patch),
	    cmocka_unit_test(test_ipaddress),
	    cmocka_unit_test(test_pool_status_patch),
	    cmocka_unit_test(test_pool_quarantine),
	    cmocka_unit_test(test_nul_fields_invalid),
	};
	return cmocka_run_group_tests_name("objects", tests, NULL, NULL);
}
