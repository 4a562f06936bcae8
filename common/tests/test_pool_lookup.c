/*
 * test_pool_lookup.c - the contract rules that read other objects, over a
 * fixture lookup: which pools may overlap, an IPAddress inside its pool,
 * delete and shrink protection, the default prefix, and a lookup that
 * fails; each with the case that must pass. Which reads the rules make
 * (kinds and namespaces) follow pool_ref.h's table, and a kind it does not
 * have is read as no other kind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pool.h"
#include "pool_lookup.h"
#include "pool_ref.h"
#include "rules.h"

#include "expect_violations.h"
#include "json.h"

/* The cluster the lookup answers from: an array of pools and IPAddresses. */
struct fixture {
	json_t *objects;
	bool fail;
	char asked[1024]; /* the reads made, "<read>:<kind>/<ns, or * for every one> " each */
};

static void note(struct fixture *f, const char *read, const char *kind, const char *ns)
{
	size_t o = strlen(f->asked);
	snprintf(f->asked + o, sizeof(f->asked) - o, "%s:%s/%s ", read, kind,
	         ns != NULL ? ns : "*");
}

static bool kind_is(const json_t *o, const char *kind)
{
	const char *k = pk_json_cstr_at(o, "kind");
	return k != NULL && strcmp(k, kind) == 0;
}

static bool in_ns(const json_t *o, const char *ns)
{
	const char *ons = pk_json_cstr_at(json_object_get(o, "metadata"), "namespace");
	return ns == NULL || (ons != NULL && strcmp(ons, ns) == 0);
}

static bool named(const json_t *o, const char *name)
{
	const char *n = pk_json_cstr_at(json_object_get(o, "metadata"), "name");
	return n != NULL && name != NULL && strcmp(n, name) == 0;
}

static int list_pools(void *ctx, const char *kind, const char *ns, json_t **items,
                      struct pk_err *err)
{
	struct fixture *f = ctx;
	size_t i;
	json_t *o;
	note(f, "pools", kind, ns);
	if (f->fail)
		return pk_err_set(err, PK_ERR_INVALID, "the cache is not ready");
	*items = json_array();
	json_array_foreach(f->objects, i, o)
	{
		if (kind_is(o, kind) && in_ns(o, ns))
			json_array_append(*items, o);
	}
	return PK_OK;
}

static int list_pool_addresses(void *ctx, const char *kind, const char *ns, const char *name,
                               json_t **items, struct pk_err *err)
{
	struct fixture *f = ctx;
	size_t i;
	json_t *o;
	note(f, "addresses", kind, ns);
	if (f->fail)
		return pk_err_set(err, PK_ERR_INVALID, "the cache is not ready");
	*items = json_array();
	json_array_foreach(f->objects, i, o)
	{
		const json_t *ref = json_object_get(json_object_get(o, "spec"), "poolRef");
		if (kind_is(o, PK_ADDRESS_KIND) && in_ns(o, ns) && kind_is(ref, kind) &&
		    strcmp(pk_json_cstr_at(ref, "name"), name) == 0)
			json_array_append(*items, o);
	}
	return PK_OK;
}

static int get_pool(void *ctx, const char *kind, const char *ns, const char *name, json_t **obj,
                    struct pk_err *err)
{
	struct fixture *f = ctx;
	size_t i;
	json_t *o;
	*obj = NULL;
	note(f, "pool", kind, ns);
	if (f->fail)
		return pk_err_set(err, PK_ERR_INVALID, "the cache is not ready");
	json_array_foreach(f->objects, i, o)
	{
		if (kind_is(o, kind) && in_ns(o, ns) && named(o, name))
			*obj = json_incref(o);
	}
	return PK_OK;
}

static struct pk_pool_lookup lookup_of(struct fixture *f)
{
	struct pk_pool_lookup lk = {.ctx = f,
	                            .list_pools = list_pools,
	                            .list_pool_addresses = list_pool_addresses,
	                            .get_pool = get_pool};
	return lk;
}

#define POOL(kind, ns, name, addrs)                                                           \
	"{'apiVersion':'" PK_POOL_API_VERSION "','kind':'" kind "','metadata':{'name':'" name \
	"'" ns "},'spec':{'addresses':[" addrs "],'prefix':24}}"
#define NS(ns) ",'namespace':'" ns "'"
#define ADDRESS_OF(group, kind, ns, name, pool, addr)                                         \
	"{'apiVersion':'" PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2 "','kind':'" PK_ADDRESS_KIND \
	"','metadata':{'name':'" name "','namespace':'" ns "'},'spec':{'address':'" addr      \
	"','prefix':24,'claimRef':{'name':'" name "'},'poolRef':{'apiGroup':'" group          \
	"','kind':'" kind "','name':'" pool "'}}}"
#define ADDRESS(ns, name, pool, addr) ADDRESS_OF(PK_POOL_GROUP, PK_POOL_KIND, ns, name, pool, addr)

static json_t *load(const char *text)
{
	return load_fixture(text, 0);
}

static void test_overlap(void **state)
{
	(void)state;
	struct fixture f = {
	    .objects = load("[" POOL(PK_POOL_KIND, NS("a"), "one", "'10.0.0.0/25'") "," POOL(
	        PK_POOL_KIND, NS("b"), "two",
	        "'10.0.0.0/25'") "," POOL(PK_POOL_KIND, NS("a"), "far", "'10.0.1.0/25'") "]")};
	struct pk_pool_lookup lk = lookup_of(&f);
	struct pk_violations v;
	struct pk_err err;

	/* Same namespace, shared addresses: denied, and named (the requester's namespace). */
	json_t *mine = load(POOL(PK_POOL_KIND, NS("a"), "new", "'10.0.0.100-10.0.0.110'"));
	struct pk_pool_id id = {PK_POOL_KIND, "a", "new"};
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_overlaps(&lk, &id, mine, &v, &err), PK_OK);
	expect(&v, PK_SEV_DENY, "spec.addresses", "overlaps with IPPool a/one");
	assert_int_equal(v.n, 1); /* not with b/two: another namespace's IPPools may */

	/* Itself is not another pool. */
	struct pk_pool_id self = {PK_POOL_KIND, "a", "one"};
	json_t *one = json_array_get(f.objects, 0);
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_overlaps(&lk, &self, one, &v, &err), PK_OK);
	expect_none(&v, PK_SEV_DENY);

	/* A GlobalIPPool meets every pool, and names none of them. */
	json_t *global = load(POOL(PK_GLOBAL_POOL_KIND, "", "g", "'10.0.0.5'"));
	struct pk_pool_id gid = {PK_GLOBAL_POOL_KIND, NULL, "g"};
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_overlaps(&lk, &gid, global, &v, &err), PK_OK);
	expect(&v, PK_SEV_DENY, "spec.addresses", "an IPPool of a namespace");
	assert_int_equal(v.n, 2); /* one per pool it overlaps: a/one and b/two */

	/* Disjoint: allowed. */
	json_t *apart = load(POOL(PK_POOL_KIND, NS("a"), "apart", "'10.0.2.0/24'"));
	struct pk_pool_id aid = {PK_POOL_KIND, "a", "apart"};
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_overlaps(&lk, &aid, apart, &v, &err), PK_OK);
	assert_int_equal(v.n, 0);

	/* A lookup that fails is an error that says which check could not run. */
	f.fail = true;
	pk_violations_init(&v);
	assert_int_not_equal(pk_pool_lookup_check_overlaps(&lk, &id, mine, &v, &err), PK_OK);
	assert_non_null(strstr(err.msg, "cannot check overlap with other pools: the cache"));
	json_decref(apart);
	json_decref(global);
	json_decref(mine);
	json_decref(f.objects);
}

static void test_ipaddress_in_pool(void **state)
{
	(void)state;
	struct fixture f = {
	    .objects = load("[" POOL(PK_POOL_KIND, NS("a"), "p", "'10.0.0.10-10.0.0.20'") "]")};
	struct pk_pool_lookup lk = lookup_of(&f);
	struct pk_violations v;
	struct pk_err err;

	json_t *out = load(ADDRESS("a", "m1", "p", "10.0.0.30"));
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_ipaddress_pool(&lk, "a", out, &v, &err), PK_OK);
	expect(&v, PK_SEV_DENY, "spec.address",
	       "\"10.0.0.30\" is not a usable address of IPPool a/p");

	json_t *in = load(ADDRESS("a", "m2", "p", "10.0.0.12"));
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_ipaddress_pool(&lk, "a", in, &v, &err), PK_OK);
	assert_int_equal(v.n, 0);

	/* A pool that does not exist: a warning, or nothing from a partial lookup. */
	json_t *lost = load(ADDRESS("a", "m3", "gone", "10.0.0.12"));
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_ipaddress_pool(&lk, "a", lost, &v, &err), PK_OK);
	expect(&v, PK_SEV_WARN, "", "IPPool a/gone does not exist");
	lk.partial = true;
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_ipaddress_pool(&lk, "a", lost, &v, &err), PK_OK);
	assert_int_equal(v.n, 0);

	f.fail = true;
	assert_int_not_equal(pk_pool_lookup_check_ipaddress_pool(&lk, "a", in, &v, &err), PK_OK);
	assert_non_null(strstr(err.msg, "cannot read IPPool a/p: the cache"));
	json_decref(lost);
	json_decref(in);
	json_decref(out);
	json_decref(f.objects);
}

static void test_delete_protection(void **state)
{
	(void)state;
	struct fixture f = {
	    .objects = load("[" POOL(PK_POOL_KIND, NS("a"), "p", "'10.0.0.0/24'") "," ADDRESS(
	        "a", "m1", "p", "10.0.0.3") "," ADDRESS("a", "m2", "p",
	                                                "10.0.0.4") "," POOL(PK_POOL_KIND, NS("a"),
	                                                                     "empty",
	                                                                     "'10.0.1.0/24'") "]")};
	struct pk_pool_lookup lk = lookup_of(&f);
	struct pk_violations v;
	struct pk_err err;
	json_t *p = json_array_get(f.objects, 0);
	struct pk_pool_id id = {PK_POOL_KIND, "a", "p"};

	assert_true(pk_pool_lookup_protects_delete(p));
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_delete(&lk, &id, p, &v, &err), PK_OK);
	expect(&v, PK_SEV_DENY, "",
	       "2 IPAddresses allocated from this pool still exist (first: IPAddress a/m1)");
	expect(&v, PK_SEV_DENY, "", PK_SKIP_DELETE_PROTECTION_ANNOTATION);

	/* No IPAddresses: the delete passes. */
	struct pk_pool_id eid = {PK_POOL_KIND, "a", "empty"};
	pk_violations_init(&v);
	assert_int_equal(
	    pk_pool_lookup_check_delete(&lk, &eid, json_array_get(f.objects, 3), &v, &err), PK_OK);
	assert_int_equal(v.n, 0);

	/* The annotations let it go, addresses or not. */
	json_t *skip = json_deep_copy(p);
	json_object_set_new(json_object_get(skip, "metadata"), "annotations",
	                    json_pack("{s:s}", PK_SKIP_DELETE_PROTECTION_ANNOTATION, "true"));
	assert_false(pk_pool_lookup_protects_delete(skip));
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_delete(&lk, &id, skip, &v, &err), PK_OK);
	assert_int_equal(v.n, 0);

	f.fail = true;
	assert_int_not_equal(pk_pool_lookup_check_delete(&lk, &id, p, &v, &err), PK_OK);
	assert_non_null(strstr(err.msg, "cannot check for IPAddresses allocated from it"));
	json_decref(skip);
	json_decref(f.objects);
}

static void test_shrink_and_unique(void **state)
{
	(void)state;
	struct fixture f = {.objects = load("[" ADDRESS("a", "m1", "p", "10.0.0.3") "]")};
	struct pk_pool_lookup lk = lookup_of(&f);
	struct pk_violations v;
	struct pk_err err;
	struct pk_pool_id id = {PK_POOL_KIND, "a", "p"};

	json_t *smaller = load(POOL(PK_POOL_KIND, NS("a"), "p", "'10.0.0.100-10.0.0.200'"));
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_shrink(&lk, &id, smaller, &v, &err), PK_OK);
	expect(&v, PK_SEV_DENY, "spec.addresses", "drops 1 address still allocated");
	json_t *same = load(POOL(PK_POOL_KIND, NS("a"), "p", "'10.0.0.0/24'"));
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_shrink(&lk, &id, same, &v, &err), PK_OK);
	assert_int_equal(v.n, 0);

	/* Another IPAddress holding the address is refused; itself is not another. */
	json_t *twin = load(ADDRESS("a", "m9", "p", "10.0.0.3"));
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_ipaddress_unique(&lk, "a", "m9", twin, &v, &err),
	                 PK_OK);
	expect(&v, PK_SEV_DENY, "spec.address", "already held by another IPAddress");
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_ipaddress_unique(
	                     &lk, "a", "m1", json_array_get(f.objects, 0), &v, &err),
	                 PK_OK);
	assert_int_equal(v.n, 0);
	json_decref(twin);
	json_decref(same);
	json_decref(smaller);
	json_decref(f.objects);
}

/* A pool of kind pk named "p" (in namespace "a" when pk is namespaced) holding cidr. */
static json_t *pool_of(const struct pk_pool_kind *pk, const char *cidr)
{
	json_t *o = json_pack("{s:s++, s:s, s:{s:s}, s:{s:[s], s:i}}", "apiVersion", pk->group, "/",
	                      pk->version, "kind", pk->kind, "metadata", "name", "p", "spec",
	                      "addresses", cidr, "prefix", 24);
	assert_non_null(o);
	if (pk->namespaced)
		json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string("a"));
	return o;
}

/* An IPAddress of namespace "a" on pool "p" of kind pk. */
static json_t *address_of(const struct pk_pool_kind *pk, const char *addr)
{
	json_t *o = load(ADDRESS("a", "m1", "p", "10.0.0.3"));
	json_t *spec = json_object_get(o, "spec");
	json_object_set_new(json_object_get(spec, "poolRef"), "kind", json_string(pk->kind));
	json_object_set_new(spec, "address", json_string(addr));
	return o;
}

/*
 * Which pools a pool is compared with, and where a pool and its addresses
 * are looked for, come from each kind's scope in the table: two pools of
 * namespaced kinds meet in their namespace only, a cluster-scoped kind's
 * pool meets every pool, and a reference to it from namespace "a" is
 * looked for in every namespace.
 */
static void test_reads_follow_the_table(void **state)
{
	(void)state;
	size_t n;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&n);
	struct fixture f = {.objects = json_array()};
	struct pk_pool_lookup lk = lookup_of(&f);
	struct pk_violations v;
	struct pk_err err;
	char want[sizeof(f.asked)];
	for (size_t m = 0; m < n; m++) {
		const struct pk_pool_kind *mine = &kinds[m];
		const char *ns = mine->namespaced ? "a" : "*";
		json_t *p = pool_of(mine, "10.0.0.0/24");
		struct pk_pool_id id = {mine->kind, mine->namespaced ? "a" : NULL, "p"};
		f.asked[0] = want[0] = '\0';
		pk_violations_init(&v);
		assert_int_equal(pk_pool_lookup_check_overlaps(&lk, &id, p, &v, &err), PK_OK);
		for (size_t k = 0; k < n; k++) {
			size_t o = strlen(want);
			snprintf(want + o, sizeof(want) - o, "pools:%s/%s ", kinds[k].kind,
			         mine->namespaced && kinds[k].namespaced ? "a" : "*");
		}
		assert_string_equal(f.asked, want);

		json_t *addr = address_of(mine, "10.0.0.3");
		f.asked[0] = '\0';
		assert_int_equal(pk_pool_lookup_check_ipaddress_pool(&lk, "a", addr, &v, &err),
		                 PK_OK);
		assert_int_equal(
		    pk_pool_lookup_check_ipaddress_unique(&lk, "a", "m1", addr, &v, &err), PK_OK);
		snprintf(want, sizeof(want), "pool:%s/%s addresses:%s/%s ", mine->kind, ns,
		         mine->kind, ns);
		assert_string_equal(f.asked, want);
		json_decref(addr);
		json_decref(p);
	}
	json_decref(f.objects);
}

/*
 * A kind the table does not have, of poolkeeper's group or another's, is
 * read as no kind at all: no IPPool of the same name stands in for it.
 */
static void test_unknown_kind_reads_nothing(void **state)
{
	(void)state;
	struct fixture f = {
	    .objects = load("[" POOL(PK_POOL_KIND, NS("a"), "p",
	                             "'10.0.0.0/24'") "," ADDRESS("a", "m1", "p", "10.0.0.3") "]")};
	struct pk_pool_lookup lk = lookup_of(&f);
	struct pk_violations v;
	struct pk_err err;

	/* Overlap: an error naming the kind, before any read. */
	json_t *kea = load(POOL("KeaIPPool", NS("a"), "q", "'10.0.0.0/24'"));
	struct pk_pool_id id = {"KeaIPPool", "a", "q"};
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_overlaps(&lk, &id, kea, &v, &err), PK_ERR_INVALID);
	assert_string_equal(err.msg, "cannot check overlap with other pools: \"KeaIPPool\" is not "
	                             "a pool kind of " PK_POOL_GROUP);
	assert_int_equal(v.n, 0);
	assert_string_equal(f.asked, "");

	/* An IPAddress on such a pool is in no pool of poolkeeper's: nothing to read. */
	static const char *const refs[] = {
	    ADDRESS_OF(PK_POOL_GROUP, "KeaIPPool", "a", "m9", "p", "10.0.0.3"),
	    ADDRESS_OF(PK_POOL_GROUP, "GlobalKeaIPPool", "a", "m9", "p", "10.0.0.3"),
	    ADDRESS_OF(PK_CAPI_IPAM_GROUP, "InClusterIPPool", "a", "m9", "p", "10.0.0.3"),
	};
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
		json_t *addr = load(refs[i]);
		pk_violations_init(&v);
		assert_int_equal(pk_pool_lookup_check_ipaddress_pool(&lk, "a", addr, &v, &err),
		                 PK_OK);
		assert_int_equal(
		    pk_pool_lookup_check_ipaddress_unique(&lk, "a", "m9", addr, &v, &err), PK_OK);
		assert_int_equal(v.n, 0); /* not "already held" by the IPPool's m1 */
		assert_string_equal(f.asked, "");
		json_decref(addr);
	}
	json_decref(kea);
	json_decref(f.objects);
}

static void test_default_prefix(void **state)
{
	(void)state;
	static const struct {
		const char *spec;
		bool defaults;
		unsigned prefix;
	} cases[] = {
	    {"{'addresses':['10.0.0.0/22']}", true, 22},
	    {"{'addresses':['fd00::/120'],'prefix':null}", true, 120},
	    {"{'addresses':['10.0.0.0/22'],'prefix':24}", false, 0},
	    {"{'addresses':['10.0.0.0/24','10.0.1.0/24']}", false, 0},
	    {"{'addresses':['10.0.0.1-10.0.0.9']}", false, 0},
	    {"{'addresses':['10.0.0.1']}", false, 0},
	    {"{'addresses':['10.0.0.1/22']}", false, 0}, /* host bits: no CIDR */
	    {"{'addresses':'10.0.0.0/24'}", false, 0},
	    {"[]", false, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *spec = load(cases[i].spec);
		unsigned prefix = 0;
		assert_int_equal(pk_pool_default_prefix(spec, &prefix), cases[i].defaults);
		assert_int_equal(prefix, cases[i].prefix);
		json_decref(spec);
	}
}

static void test_object_name(void **state)
{
	(void)state;
	char buf[PK_OBJECT_NAME_MAX];
	assert_string_equal(pk_pool_lookup_object_name(buf, sizeof(buf), PK_POOL_KIND, "a", "p"),
	                    "IPPool a/p");
	assert_string_equal(
	    pk_pool_lookup_object_name(buf, sizeof(buf), PK_GLOBAL_POOL_KIND, NULL, NULL),
	    "GlobalIPPool (generated name)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_overlap),
	    cmocka_unit_test(test_ipaddress_in_pool),
	    cmocka_unit_test(test_delete_protection),
	    cmocka_unit_test(test_shrink_and_unique),
	    cmocka_unit_test(test_default_prefix),
	    cmocka_unit_test(test_object_name),
	    cmocka_unit_test(test_reads_follow_the_table),
	    cmocka_unit_test(test_unknown_kind_reads_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
