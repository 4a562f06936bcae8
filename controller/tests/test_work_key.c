/*
 * test_work_key.c - the controller's work keys: one format, one parse,
 * round trips for every kind, and the texts that are not keys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "work_key.h"

static void round_trip(const struct pk_work_key *k, const char *want)
{
	char text[PK_WORK_KEY_MAX];
	struct pk_work_key back;
	assert_true(pk_work_key_format(k, text, sizeof(text)));
	assert_string_equal(text, want);
	assert_true(pk_work_key_parse(text, &back));
	assert_int_equal(back.kind, k->kind);
	assert_string_equal(back.pool_kind, k->pool_kind);
	assert_string_equal(back.namespace, k->namespace);
	assert_string_equal(back.name, k->name);
}

static void formats_and_parses_each_kind(void **state)
{
	(void)state;
	struct pk_work_key k;
	pk_work_key_claim(&k, "team-a", "m-1");
	round_trip(&k, "c/team-a/m-1");
	pk_work_key_pool(&k, PK_WORK_POOL, "IPPool", "team-a", "nodes");
	round_trip(&k, "p/IPPool/team-a/nodes");
	pk_work_key_pool(&k, PK_WORK_POOL_GRACE, "GlobalIPPool", "", "shared");
	round_trip(&k, "g/GlobalIPPool//shared");
	pk_work_key_pool(&k, PK_WORK_POOL, "GlobalIPPool", NULL, "shared");
	round_trip(&k, "p/GlobalIPPool//shared");
	pk_work_key_resync(&k);
	round_trip(&k, "r/");
}

static void longest_names_fit(void **state)
{
	(void)state;
	char ns[64], name[254];
	memset(ns, 'n', sizeof(ns) - 1);
	ns[sizeof(ns) - 1] = '\0';
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	struct pk_work_key k;
	pk_work_key_pool(&k, PK_WORK_POOL, "GlobalIPPool", ns, name);
	char text[PK_WORK_KEY_MAX], want[PK_WORK_KEY_MAX];
	snprintf(want, sizeof(want), "p/GlobalIPPool/%s/%s", ns, name);
	round_trip(&k, want);
	assert_false(pk_work_key_format(&k, text, 20)); /* too small a buffer says so */
}

static void refuses_what_is_not_a_key(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "",                      /* empty */
	    "c",                     /* no parts */
	    "c/",                    /* no name */
	    "c/ns",                  /* no name */
	    "c/ns/",                 /* empty name */
	    "c/ns/a/b",              /* a claim has two parts */
	    "x/ns/name",             /* unknown prefix */
	    "cc/ns/name",            /* prefix of two letters */
	    "p/IPPool/ns",           /* a pool has three parts */
	    "p//ns/name",            /* no kind */
	    "p/IPPool/ns/",          /* no name */
	    "g/IPPool/ns/name/more", /* four parts */
	    "r",                     /* no slash */
	    "r/x",                   /* the resync key has no parts */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pk_work_key k;
		if (pk_work_key_parse(bad[i], &k))
			fail_msg("parsed \"%s\"", bad[i]);
	}
	struct pk_work_key k;
	assert_false(pk_work_key_parse(NULL, &k));
	char too_long[600];
	memset(too_long, 'a', sizeof(too_long) - 1);
	too_long[sizeof(too_long) - 1] = '\0';
	too_long[0] = 'c';
	too_long[1] = '/';
	too_long[5] = '/';
	assert_false(pk_work_key_parse(too_long, &k)); /* a name longer than any */
}

static void object_and_pool_keys(void **state)
{
	(void)state;
	char buf[PK_OBJECT_KEY_MAX];
	struct pk_work_key k;
	pk_object_key("ns", "c1", buf, sizeof(buf));
	assert_string_equal(buf, "ns/c1");
	pk_object_key_parse(buf, &k);
	assert_int_equal(k.kind, PK_WORK_CLAIM);
	assert_string_equal(k.namespace, "ns");
	assert_string_equal(k.name, "c1");
	pk_object_key_parse("cluster-scoped", &k);
	assert_string_equal(k.namespace, "");
	assert_string_equal(k.name, "cluster-scoped");

	pk_pool_key("IPPool", "ns", "p", buf, sizeof(buf));
	assert_string_equal(buf, "IPPool/ns/p");
	assert_true(pk_pool_key_parse(buf, &k));
	assert_int_equal(k.kind, PK_WORK_POOL);
	assert_string_equal(k.pool_kind, "IPPool");
	assert_string_equal(k.namespace, "ns");
	assert_string_equal(k.name, "p");
	assert_true(pk_pool_key_parse("GlobalIPPool//g", &k));
	assert_string_equal(k.namespace, "");
	assert_false(pk_pool_key_parse("IPPool/p", &k));
	assert_false(pk_pool_key_parse("/ns/p", &k));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(formats_and_parses_each_kind),
	    cmocka_unit_test(longest_names_fit),
	    cmocka_unit_test(refuses_what_is_not_a_key),
	    cmocka_unit_test(object_and_pool_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
