/* test_conformance.c - the parts of `poolkeeper conformance` that need no
 * cluster: --pool-ref, the check table, the judgement of objects, the lines
 * printed and the exit code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conformance.h"

static const struct pk_conf_pool_ref pool = {"ipam.poolkeeper.io", "IPPool", "nodes"};

static json_t *js(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);
	if (v == NULL)
		fail_msg("bad fixture: %s", e.text);
	return v;
}

static void test_pool_ref(void **state)
{
	(void)state;
	struct pk_conf_pool_ref r;
	struct pk_err err = {{0}};
	assert_int_equal(
	    pk_conf_parse_pool_ref("ipam.cluster.x-k8s.io/InClusterIPPool/pool-1", &r, &err),
	    PK_OK);
	assert_string_equal(r.group, "ipam.cluster.x-k8s.io");
	assert_string_equal(r.kind, "InClusterIPPool");
	assert_string_equal(r.name, "pool-1");
	assert_int_equal(pk_conf_parse_pool_ref("ipam.poolkeeper.io/GlobalIPPool/a.b", &r, &err),
	                 PK_OK);
	assert_string_equal(r.name, "a.b");
}

static void test_pool_ref_refused(void **state)
{
	(void)state;
	static const struct {
		const char *in, *says;
	} bad[] = {
	    {"", "is not GROUP/KIND/NAME"},
	    {"ipam.poolkeeper.io/IPPool", "is not GROUP/KIND/NAME"},
	    {"ipam.poolkeeper.io/IPPool/a/b", "is not GROUP/KIND/NAME"},
	    {"ipam/IPPool/a", "GROUP \"ipam\""},
	    {"/IPPool/a", "GROUP \"\""},
	    {"Ipam.Poolkeeper.io/IPPool/a", "GROUP"},
	    {"ipam.poolkeeper.io/ippool/a", "upper-case"},
	    {"ipam.poolkeeper.io/IP-Pool/a", "letters and digits"},
	    {"ipam.poolkeeper.io//a", "upper-case"},
	    {"ipam.poolkeeper.io/IPPool/", "NAME"},
	    {"ipam.poolkeeper.io/IPPool/Nodes", "NAME"},
	    {"ipam.poolkeeper.io/IPPool/no_underscore", "NAME"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pk_conf_pool_ref r;
		struct pk_err err = {{0}};
		assert_int_equal(pk_conf_parse_pool_ref(bad[i].in, &r, &err), PK_ERR_INVALID);
		if (strstr(err.msg, bad[i].says) == NULL)
			fail_msg("\"%s\": %s (want %s)", bad[i].in, err.msg, bad[i].says);
	}
	char longkind[200];
	memset(longkind, 'A', sizeof(longkind));
	memcpy(longkind, "a.b/", 4);
	memcpy(longkind + sizeof(longkind) - 3, "/n", 3);
	struct pk_conf_pool_ref r;
	struct pk_err err = {{0}};
	assert_int_equal(pk_conf_parse_pool_ref(longkind, &r, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "too long"));
}

static void test_table(void **state)
{
	(void)state;
	for (int i = 0; i < PK_CONF_COUNT; i++) {
		const struct pk_conf_check_def *d = &pk_conf_checks[i];
		assert_non_null(d->id);
		assert_non_null(d->what);
		assert_non_null(d->cites);
		/* every check quotes the sentence it tests */
		assert_non_null(strchr(d->cites, '"'));
		for (int j = 0; j < i; j++)
			assert_string_not_equal(d->id, pk_conf_checks[j].id);
	}
	assert_string_equal(pk_conf_checks[PK_CONF_CLAIM_OWNER].id, "owner-claim");
	assert_non_null(strstr(pk_conf_checks[PK_CONF_CLAIM_OWNER].cites, "`controller: true`"));
}

static char *printed(enum pk_conf_check c, const struct pk_conf_result *r)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	pk_conf_print(f, c, r);
	fclose(f);
	return text;
}

static void test_print_and_exit(void **state)
{
	(void)state;
	struct pk_conf_result r[PK_CONF_COUNT];
	memset(r, 0, sizeof(r));
	char *t = printed(PK_CONF_READY, &r[PK_CONF_READY]);
	assert_non_null(strstr(t, "skip ready: "));
	assert_non_null(strstr(t, ": not run ["));
	/* one line */
	assert_ptr_equal(strchr(t, '\n'), t + strlen(t) - 1);
	free(t);
	assert_int_equal(pk_conf_exit_code(r, PK_CONF_COUNT), 0);
	for (int i = 0; i < PK_CONF_COUNT; i++)
		pk_conf_set(&r[i], PK_CONF_PASS, "%s", "");
	pk_conf_set(&r[PK_CONF_PAUSED], PK_CONF_SKIP, "no %s", "Cluster");
	assert_int_equal(pk_conf_exit_code(r, PK_CONF_COUNT), 0);
	pk_conf_set(&r[PK_CONF_NO_DUPLICATES], PK_CONF_FAIL, "10.0.0.%d twice", 5);
	assert_int_equal(pk_conf_exit_code(r, PK_CONF_COUNT), PK_CONF_EXIT_FAIL);
	t = printed(PK_CONF_NO_DUPLICATES, &r[PK_CONF_NO_DUPLICATES]);
	assert_non_null(strstr(t, "fail no-duplicates: "));
	assert_non_null(strstr(t, ": 10.0.0.5 twice ["));
	free(t);
	t = printed(PK_CONF_RELEASE, &r[PK_CONF_RELEASE]);
	assert_true(strncmp(t, "pass release: ", 14) == 0);
	assert_null(strstr(t, ":  ["));
	free(t);
}

static const char addr_ok[] =
    "{\"metadata\":{\"name\":\"c1\",\"finalizers\":[\"x/protect\"],\"ownerReferences\":["
    "{\"kind\":\"IPAddressClaim\",\"name\":\"c1\",\"uid\":\"u-claim\",\"controller\":true,"
    "\"blockOwnerDeletion\":true},"
    "{\"kind\":\"IPPool\",\"name\":\"nodes\",\"uid\":\"u-pool\",\"controller\":false,"
    "\"blockOwnerDeletion\":true}]},"
    "\"spec\":{\"address\":\"10.0.0.2\",\"prefix\":24,\"claimRef\":{\"name\":\"c1\"},"
    "\"poolRef\":{\"apiGroup\":\"ipam.poolkeeper.io\",\"kind\":\"IPPool\",\"name\":\"nodes\"}}}";

static void test_judge_address(void **state)
{
	(void)state;
	struct pk_conf_result r = {0};
	json_t *a = js(addr_ok);
	assert_int_equal(pk_conf_judge_address(a, "c1", &pool, &r), PK_CONF_PASS);
	assert_non_null(strstr(r.detail, "10.0.0.2"));
	assert_int_equal(pk_conf_judge_address(a, "c2", &pool, &r), PK_CONF_FAIL);
	struct pk_conf_pool_ref other = pool;
	snprintf(other.kind, sizeof(other.kind), "GlobalIPPool");
	assert_int_equal(pk_conf_judge_address(a, "c1", &other, &r), PK_CONF_FAIL);
	json_object_set_new(json_object_get(json_object_get(a, "spec"), "claimRef"), "name",
	                    json_string("c9"));
	assert_int_equal(pk_conf_judge_address(a, "c1", &pool, &r), PK_CONF_FAIL);
	assert_non_null(strstr(r.detail, "claimRef c9"));
	json_decref(a);
	json_t *empty = js("{}");
	assert_int_equal(pk_conf_judge_address(empty, "c1", &pool, &r), PK_CONF_FAIL);
	assert_non_null(strstr(r.detail, "(none)"));
	json_decref(empty);
}

static void test_judge_owner(void **state)
{
	(void)state;
	struct pk_conf_result r = {0};
	json_t *a = js(addr_ok);
	assert_int_equal(pk_conf_judge_owner(a, "u-claim", true, &r), PK_CONF_PASS);
	assert_int_equal(pk_conf_judge_owner(a, "u-pool", false, &r), PK_CONF_PASS);
	/* the claim's reference must be the controller, the pool's must not */
	assert_int_equal(pk_conf_judge_owner(a, "u-claim", false, &r), PK_CONF_FAIL);
	assert_int_equal(pk_conf_judge_owner(a, "u-pool", true, &r), PK_CONF_FAIL);
	assert_int_equal(pk_conf_judge_owner(a, "u-other", true, &r), PK_CONF_FAIL);
	assert_non_null(strstr(r.detail, "no owner reference with uid u-other (2 references)"));
	json_t *refs = json_object_get(json_object_get(a, "metadata"), "ownerReferences");
	json_object_del(json_array_get(refs, 1), "blockOwnerDeletion");
	assert_int_equal(pk_conf_judge_owner(a, "u-pool", false, &r), PK_CONF_FAIL);
	assert_non_null(strstr(r.detail, "blockOwnerDeletion not true"));
	json_object_set_new(json_array_get(refs, 0), "blockOwnerDeletion", json_false());
	assert_int_equal(pk_conf_judge_owner(a, "u-claim", true, &r), PK_CONF_FAIL);
	json_decref(a);
	json_t *none = js("{\"metadata\":{\"name\":\"c1\"}}");
	assert_int_equal(pk_conf_judge_owner(none, "u-claim", true, &r), PK_CONF_FAIL);
	assert_int_equal(pk_conf_judge_owner(none, NULL, true, &r), PK_CONF_FAIL);
	json_decref(none);
}

static void test_judge_finalizer_and_ref(void **state)
{
	(void)state;
	struct pk_conf_result r = {0};
	json_t *a = js(addr_ok);
	assert_int_equal(pk_conf_judge_finalizer(a, &r), PK_CONF_PASS);
	assert_string_equal(r.detail, "x/protect");
	json_t *bare = js("{\"metadata\":{\"finalizers\":[]}}");
	assert_int_equal(pk_conf_judge_finalizer(bare, &r), PK_CONF_FAIL);
	json_decref(bare);
	json_t *claim = js("{\"status\":{\"addressRef\":{\"name\":\"c1\"}}}");
	assert_int_equal(pk_conf_judge_address_ref(claim, "c1", &r), PK_CONF_PASS);
	assert_int_equal(pk_conf_judge_address_ref(claim, "c2", &r), PK_CONF_FAIL);
	assert_int_equal(pk_conf_judge_address_ref(a, "c1", &r), PK_CONF_FAIL);
	assert_string_equal(r.detail, "status.addressRef.name (none)");
	json_decref(claim);
	json_decref(a);
}

static void test_judge_ready(void **state)
{
	(void)state;
	struct pk_conf_result r = {0};
	json_t *c = js("{\"status\":{\"conditions\":[{\"type\":\"Other\",\"status\":\"False\"},"
	               "{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"PoolNotReady\","
	               "\"message\":\"pool x does not exist\"}]}}");
	assert_int_equal(pk_conf_judge_ready(c, "False", "PoolNotReady", &r), PK_CONF_PASS);
	assert_non_null(strstr(r.detail, "pool x does not exist"));
	assert_int_equal(pk_conf_judge_ready(c, "False", "PoolExhausted", &r), PK_CONF_FAIL);
	assert_int_equal(pk_conf_judge_ready(c, "True", NULL, &r), PK_CONF_FAIL);
	assert_non_null(pk_conf_ready_condition(c));
	json_decref(c);
	json_t *none = js("{\"status\":{\"addressRef\":{\"name\":\"c1\"}}}");
	assert_int_equal(pk_conf_judge_ready(none, "True", NULL, &r), PK_CONF_FAIL);
	assert_string_equal(r.detail, "no Ready condition");
	assert_null(pk_conf_ready_condition(none));
	json_decref(none);
}

static void test_judge_unique(void **state)
{
	(void)state;
	struct pk_conf_result r = {0};
	/* the same address in another pool is no duplicate */
	json_t *items = js(
	    "[{\"metadata\":{\"namespace\":\"a\",\"name\":\"x\"},\"spec\":{\"address\":\"10.0.0."
	    "1\","
	    "\"poolRef\":{\"apiGroup\":\"ipam.poolkeeper.io\",\"kind\":\"IPPool\",\"name\":"
	    "\"nodes\"}}},"
	    "{\"metadata\":{\"namespace\":\"a\",\"name\":\"y\"},\"spec\":{\"address\":\"10.0.0.1\","
	    "\"poolRef\":{\"apiGroup\":\"ipam.poolkeeper.io\",\"kind\":\"IPPool\",\"name\":"
	    "\"other\"}}},"
	    "{\"metadata\":{\"namespace\":\"a\",\"name\":\"z\"},\"spec\":{\"address\":\"10.0.0.2\","
	    "\"poolRef\":{\"apiGroup\":\"ipam.poolkeeper.io\",\"kind\":\"IPPool\",\"name\":"
	    "\"nodes\"}}}"
	    "]");
	assert_int_equal(pk_conf_judge_unique(items, &pool, &r), PK_CONF_PASS);
	assert_string_equal(r.detail, "2 IPAddresses of the pool, each address once");
	json_t *dup = json_deep_copy(json_array_get(items, 0));
	json_object_set_new(json_object_get(dup, "metadata"), "namespace", json_string("b"));
	json_array_append_new(items, dup);
	assert_int_equal(pk_conf_judge_unique(items, &pool, &r), PK_CONF_FAIL);
	assert_string_equal(r.detail, "10.0.0.1 is held by IPAddress a/x and b/x");
	json_decref(items);
	json_t *empty = js("[]");
	assert_int_equal(pk_conf_judge_unique(empty, &pool, &r), PK_CONF_PASS);
	json_decref(empty);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pool_ref),
	    cmocka_unit_test(test_pool_ref_refused),
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_print_and_exit),
	    cmocka_unit_test(test_judge_address),
	    cmocka_unit_test(test_judge_owner),
	    cmocka_unit_test(test_judge_finalizer_and_ref),
	    cmocka_unit_test(test_judge_ready),
	    cmocka_unit_test(test_judge_unique),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
