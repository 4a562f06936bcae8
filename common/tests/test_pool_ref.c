/* test_pool_ref.c - poolkeeper's pool kinds and the pool a poolRef names, as every part reads them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"
#include "pool_ref.h"

#include "expect_violations.h"

static json_t *load(const char *text)
{
	return load_fixture(text, JSON_ALLOW_NUL);
}

static void test_poolkeeper_kinds(void **state)
{
	(void)state;
	/* want: a known pool of ours (the controller's test); group: ours by group (the
	 * webhook's and lint's: an unknown kind is then our violation) */
	static const struct {
		const char *ref;
		bool want, group;
	} cases[] = {
	    {"{'apiGroup':'" PK_POOL_GROUP "','kind':'" PK_POOL_KIND "','name':'p'}", true, true},
	    {"{'apiGroup':'" PK_POOL_GROUP "','kind':'" PK_GLOBAL_POOL_KIND "','name':'p'}", true,
	     true},
	    {"{'apiGroup':'" PK_CAPI_IPAM_GROUP "','kind':'InClusterIPPool','name':'p'}", false,
	     false},
	    {"{'apiGroup':'" PK_POOL_GROUP "','kind':'InClusterIPPool','name':'p'}", false, true},
	    {"{'apiGroup':'" PK_POOL_GROUP ".evil','kind':'" PK_POOL_KIND "','name':'p'}", false,
	     false},
	    {"{'kind':'" PK_POOL_KIND "','name':'p'}", false, false},
	    {"{'apiGroup':7,'kind':'" PK_POOL_KIND "'}", false, false},
	    {"{'apiGroup':'" PK_POOL_GROUP "','kind':'ippool'}", false, true},
	    {"{'apiGroup':'" PK_POOL_GROUP "','name':'p'}", false, true},
	    {"'" PK_POOL_GROUP "/IPPool'", false, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *r = load(cases[i].ref);
		assert_int_equal(pk_pool_kind_of_ref(r) != NULL, cases[i].want);
		assert_int_equal(pk_pool_ref_is_poolkeeper_group(r), cases[i].group);
		json_decref(r);
	}
	assert_null(pk_pool_kind_of_ref(NULL));
	assert_false(pk_pool_ref_is_poolkeeper_group(NULL));
}

/* Each backend's kinds are one slice of the table, and every kind names its backend. */
static void test_kinds_of_backend(void **state)
{
	(void)state;
	size_t all = 0, n = 0;
	const struct pk_pool_kind *k = pk_pool_kinds(&all);
	assert_true(all >= 2);
	const struct pk_pool_kind *in = pk_pool_kinds_of_backend(PK_INCLUSTER_BACKEND, &n);
	assert_non_null(in);
	assert_int_equal(n, 2);
	assert_ptr_equal(pk_pool_kind_find(PK_POOL_GROUP, PK_POOL_KIND)->backend, in[0].backend);
	assert_true(pk_pool_kind_find(PK_POOL_GROUP, PK_POOL_KIND)->namespaced);
	assert_false(pk_pool_kind_find(PK_POOL_GROUP, PK_GLOBAL_POOL_KIND)->namespaced);
	assert_string_equal(pk_pool_kind_find(PK_POOL_GROUP, PK_GLOBAL_POOL_KIND)->resource,
	                    PK_GLOBAL_POOL_RESOURCE);
	for (size_t i = 0; i < all; i++)
		assert_non_null(k[i].backend);
	assert_null(pk_pool_kinds_of_backend("infoblox", &n));
	assert_int_equal(n, 0);
	assert_null(pk_pool_kinds_of_backend(NULL, &n));
	assert_null(pk_pool_kind_find(PK_CAPI_IPAM_GROUP, PK_POOL_KIND));
	assert_null(pk_pool_kind_find(PK_POOL_GROUP, NULL));
}

/* The pool a reference names, from an object of namespace "team-a". */
static void test_read(void **state)
{
	(void)state;
	static const struct {
		const char *ref;
		bool ok, ours;
		const char *ns; /* the pool's namespace, NULL for a cluster-scoped kind */
		const char *key;
	} cases[] = {
	    {"{'apiGroup':'" PK_POOL_GROUP "','kind':'IPPool','name':'p'}", true, true, "team-a",
	     PK_POOL_GROUP "/IPPool/team-a/p"},
	    {"{'apiGroup':'" PK_POOL_GROUP "','kind':'GlobalIPPool','name':'p'}", true, true, NULL,
	     PK_POOL_GROUP "/GlobalIPPool//p"},
	    /* another provider's: Global* is cluster-scoped, the rest namespaced */
	    {"{'apiGroup':'" PK_CAPI_IPAM_GROUP "','kind':'GlobalInClusterIPPool','name':'g'}",
	     true, false, NULL, PK_CAPI_IPAM_GROUP "/GlobalInClusterIPPool//g"},
	    {"{'apiGroup':'" PK_CAPI_IPAM_GROUP "','kind':'InClusterIPPool','name':'g'}", true,
	     false, "team-a", PK_CAPI_IPAM_GROUP "/InClusterIPPool/team-a/g"},
	    /* a poolkeeper kind under another group is another provider's */
	    {"{'apiGroup':'" PK_POOL_GROUP ".evil','kind':'GlobalIPPool','name':'p'}", true, false,
	     NULL, PK_POOL_GROUP ".evil/GlobalIPPool//p"},
	    {"{'kind':'IPPool','name':'p'}", true, false, "team-a", "/IPPool/team-a/p"},
	    /* no pool named */
	    {"{'apiGroup':'" PK_POOL_GROUP "','kind':'IPPool','name':''}", false, true, NULL, NULL},
	    {"{'apiGroup':'" PK_POOL_GROUP "','kind':'IPPool'}", false, true, NULL, NULL},
	    {"{'apiGroup':'" PK_POOL_GROUP "','kind':'','name':'p'}", false, false, NULL, NULL},
	    {"{'apiGroup':'" PK_POOL_GROUP "','name':'p'}", false, false, NULL, NULL},
	    {"{'apiGroup':'" PK_POOL_GROUP "','kind':'IPPool','name':'p\\u0000q'}", false, true,
	     NULL, NULL},
	    {"{'apiGroup':'" PK_POOL_GROUP "','kind':7,'name':'p'}", false, false, NULL, NULL},
	    {"'IPPool/p'", false, false, NULL, NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = load(cases[i].ref);
		struct pk_pool_ref r;
		char key[PK_POOL_REF_KEY_MAX];
		bool ok = pk_pool_ref_read(j, "team-a", &r);
		if (ok != cases[i].ok)
			fail_msg("%s: read %d, want %d", cases[i].ref, ok, cases[i].ok);
		if (ok) {
			assert_int_equal(r.pk != NULL, cases[i].ours);
			if (cases[i].ns == NULL)
				assert_null(r.ns);
			else
				assert_string_equal(r.ns, cases[i].ns);
			assert_true(pk_pool_ref_key(&r, key, sizeof(key)));
			assert_string_equal(key, cases[i].key);
		}
		json_decref(j);
	}
	assert_false(pk_pool_ref_read(NULL, "team-a", &(struct pk_pool_ref){0}));
}

/* A namespaced kind named from no namespace names no pool; a cluster-scoped one still does. */
static void test_read_without_namespace(void **state)
{
	(void)state;
	json_t *local = load("{'apiGroup':'" PK_POOL_GROUP "','kind':'IPPool','name':'p'}");
	json_t *global = load("{'apiGroup':'" PK_POOL_GROUP "','kind':'GlobalIPPool','name':'p'}");
	struct pk_pool_ref r;
	assert_false(pk_pool_ref_read(local, NULL, &r));
	assert_false(pk_pool_ref_read(local, "", &r));
	assert_true(pk_pool_ref_read(global, NULL, &r));
	assert_null(r.ns);
	json_decref(local);
	json_decref(global);
}

/* The same pool from any namespace for a cluster-scoped kind, from its own namespace only
 * otherwise. */
static void test_is(void **state)
{
	(void)state;
	json_t *local = load("{'apiGroup':'" PK_POOL_GROUP "','kind':'IPPool','name':'p'}");
	json_t *global = load("{'apiGroup':'" PK_POOL_GROUP "','kind':'GlobalIPPool','name':'p'}");
	struct pk_pool_ref r;
	assert_true(pk_pool_ref_read(local, "team-a", &r));
	assert_true(pk_pool_ref_is(&r, "IPPool", "team-a", "p"));
	assert_false(pk_pool_ref_is(&r, "IPPool", "team-b", "p"));
	assert_false(pk_pool_ref_is(&r, "IPPool", NULL, "p"));
	assert_false(pk_pool_ref_is(&r, "GlobalIPPool", "team-a", "p"));
	assert_false(pk_pool_ref_is(&r, "IPPool", "team-a", "q"));
	assert_false(pk_pool_ref_is(&r, "IPPool", "team-a", NULL));
	assert_true(pk_pool_ref_read(global, "team-b", &r));
	assert_true(pk_pool_ref_is(&r, "GlobalIPPool", "team-a", "p"));
	assert_true(pk_pool_ref_is(&r, "GlobalIPPool", NULL, "p"));
	assert_false(pk_pool_ref_is(&r, "IPPool", NULL, "p"));
	json_decref(local);
	json_decref(global);
}

/* The keys; a pool reference's key that does not fit is refused, never cut short. */
static void test_keys(void **state)
{
	(void)state;
	char buf[PK_OBJECT_KEY_MAX];
	pk_object_key("ns", "claim", buf, sizeof(buf));
	assert_string_equal(buf, "ns/claim");
	pk_object_key(NULL, "claim", buf, sizeof(buf));
	assert_string_equal(buf, "/claim");
	pk_pool_key("GlobalIPPool", NULL, "g", buf, sizeof(buf));
	assert_string_equal(buf, "GlobalIPPool//g");
	pk_pool_key("IPPool", "ns", "p", buf, sizeof(buf));
	assert_string_equal(buf, "IPPool/ns/p");
	json_t *j = load("{'apiGroup':'" PK_POOL_GROUP "','kind':'IPPool','name':'p'}");
	struct pk_pool_ref r;
	assert_true(pk_pool_ref_read(j, "ns", &r));
	char small[8];
	assert_false(pk_pool_ref_key(&r, small, sizeof(small)));
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_poolkeeper_kinds),
	    cmocka_unit_test(test_kinds_of_backend),
	    cmocka_unit_test(test_read),
	    cmocka_unit_test(test_read_without_namespace),
	    cmocka_unit_test(test_is),
	    cmocka_unit_test(test_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
