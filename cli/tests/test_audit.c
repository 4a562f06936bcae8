/* test_audit.c - the live checks of `poolkeeper audit` on JSON fixtures, each finding and
 * its negative case, lint's checks on listed objects, the outputs and the exit code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "audit.h"

static json_t *js(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);
	if (v == NULL)
		fail_msg("bad fixture: %s", e.text);
	return v;
}

#define POOL                                                                                    \
	"{\"apiVersion\":\"ipam.poolkeeper.io/v1alpha1\",\"kind\":\"IPPool\",\"metadata\":{"    \
	"\"name\":\"nodes\",\"namespace\":\"default\",\"uid\":\"p1\"},\"spec\":{\"addresses\":" \
	"[\"10.0.0.0/29\"],\"prefix\":29}}"

/* An IPAddress of pool `nodes` held for claim `claim`, with the owner references the
 * contract asks for. */
static char *addr_text(const char *ns, const char *name, const char *claim, const char *ip)
{
	static char buf[4][1024];
	static int k;
	char *b = buf[k++ % 4];
	snprintf(b, sizeof(buf[0]),
	         "{\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"kind\":\"IPAddress\","
	         "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"ownerReferences\":["
	         "{\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"kind\":\"IPAddressClaim\","
	         "\"name\":\"%s\",\"uid\":\"c\",\"controller\":true,\"blockOwnerDeletion\":true},"
	         "{\"apiVersion\":\"ipam.poolkeeper.io/v1alpha1\",\"kind\":\"IPPool\",\"name\":"
	         "\"nodes\",\"uid\":\"p1\",\"blockOwnerDeletion\":true}]},"
	         "\"spec\":{\"address\":\"%s\",\"prefix\":29,\"claimRef\":{\"name\":\"%s\"},"
	         "\"poolRef\":{\"apiGroup\":\"ipam.poolkeeper.io\",\"kind\":\"IPPool\",\"name\":"
	         "\"nodes\"}}}",
	         name, ns, claim, ip, claim);
	return b;
}

/* A claim on pool `nodes`; bound to `bound` unless NULL; created at `created`. */
static char *claim_text(const char *name, const char *bound, const char *created,
                        const char *conditions)
{
	static char buf[4][1024];
	static int k;
	char *b = buf[k++ % 4], status[300] = "";
	if (bound)
		snprintf(status, sizeof(status), ",\"status\":{\"addressRef\":{\"name\":\"%s\"}}",
		         bound);
	else if (conditions)
		snprintf(status, sizeof(status), ",\"status\":{\"conditions\":%s}", conditions);
	snprintf(
	    b, sizeof(buf[0]),
	    "{\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"kind\":\"IPAddressClaim\","
	    "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"creationTimestamp\":"
	    "\"%s\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	    "\"name\":\"m\",\"uid\":\"u\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
	    "\"spec\":{\"clusterName\":\"c1\",\"poolRef\":{\"apiGroup\":\"ipam.poolkeeper.io\","
	    "\"kind\":\"IPPool\",\"name\":\"nodes\"}}%s}",
	    name, created, status);
	return b;
}

#define T0         "2026-01-01T00:00:00Z"
#define T0_SECONDS 1767225600LL

static void load(struct pk_live *l, const char *pools, const char *addrs, const char *claims)
{
	l->pools = js(pools);
	l->addresses = js(addrs);
	l->claims = js(claims);
	l->claim_index = l->address_index = NULL;
	assert_int_equal(pk_live_index(l), PK_OK);
}

static void test_held_twice(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_audit_findings f = {0};
	char addrs[4096];
	snprintf(addrs, sizeof(addrs), "[%s,%s,%s]", addr_text("default", "a", "a", "10.0.0.1"),
	         addr_text("default", "b", "b", "10.0.0.2"),
	         addr_text("default", "c", "c", "10.0.0.1"));
	load(&l, "[" POOL "]", addrs, "[]");
	assert_int_equal(pk_audit_check_held_twice(&l, &f), PK_OK);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.items[0].name, "c");
	assert_string_equal(f.items[0].kind, "IPAddress");
	assert_string_equal(f.items[0].rule, "address-held-twice");
	assert_string_equal(f.items[0].field, "spec.address");
	assert_non_null(strstr(f.items[0].message, "IPAddress/default/a"));
	pk_audit_findings_free(&f);
	pk_live_release(&l);

	/* The same address in two namespaces' IPPools of the same name is two pools. */
	snprintf(addrs, sizeof(addrs), "[%s,%s]", addr_text("default", "a", "a", "10.0.0.1"),
	         addr_text("other", "a", "a", "10.0.0.1"));
	load(&l, "[" POOL "]", addrs, "[]");
	assert_int_equal(pk_audit_check_held_twice(&l, &f), PK_OK);
	assert_int_equal(f.n, 0);
	pk_live_release(&l);
}

static void test_held_twice_parsed(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_audit_findings f = {0};
	char addrs[4096];
	snprintf(addrs, sizeof(addrs), "[%s,%s]", addr_text("default", "a", "a", "fd00::1"),
	         addr_text("default", "b", "b", "fd00:0::0:1"));
	load(&l, "[]", addrs, "[]");
	assert_int_equal(pk_audit_check_held_twice(&l, &f), PK_OK);
	assert_int_equal(f.n, 1);
	assert_non_null(strstr(f.items[0].message, "fd00::1 is also held"));
	pk_audit_findings_free(&f);
	pk_live_release(&l);
}

static void test_claim_address_missing(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_audit_findings f = {0};
	char claims[4096], addrs[2048];
	snprintf(claims, sizeof(claims), "[%s,%s]", claim_text("a", "a", T0, NULL),
	         claim_text("gone", "gone", T0, NULL));
	snprintf(addrs, sizeof(addrs), "[%s]", addr_text("default", "a", "a", "10.0.0.1"));
	load(&l, "[" POOL "]", addrs, claims);
	assert_int_equal(pk_audit_check_claim_addresses(&l, &f), PK_OK);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.items[0].kind, "IPAddressClaim");
	assert_string_equal(f.items[0].name, "gone");
	assert_string_equal(f.items[0].field, "status.addressRef.name");
	assert_string_equal(f.items[0].rule, "claim-address-missing");
	assert_non_null(strstr(f.items[0].message, "IPAddress default/gone"));
	pk_audit_findings_free(&f);
	pk_live_release(&l);
}

static void test_address_claim_missing(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_audit_findings f = {0};
	char claims[2048], addrs[4096];
	snprintf(claims, sizeof(claims), "[%s]", claim_text("a", "a", T0, NULL));
	snprintf(addrs, sizeof(addrs), "[%s,%s]", addr_text("default", "a", "a", "10.0.0.1"),
	         addr_text("default", "orphan", "orphan", "10.0.0.2"));
	load(&l, "[" POOL "]", addrs, claims);
	assert_int_equal(pk_audit_check_address_claims(&l, &f), PK_OK);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.items[0].name, "orphan");
	assert_string_equal(f.items[0].rule, "address-claim-missing");
	assert_string_equal(f.items[0].field, "spec.claimRef.name");
	pk_audit_findings_free(&f);
	pk_live_release(&l);

	/* An IPAddress being deleted is left alone. */
	json_t *a = js(addr_text("default", "orphan", "orphan", "10.0.0.2"));
	json_object_set_new(json_object_get(a, "metadata"), "deletionTimestamp", json_string(T0));
	load(&l, "[]", "[]", "[]");
	json_array_append_new(l.addresses, a);
	assert_int_equal(pk_live_index(&l), PK_OK);
	assert_int_equal(pk_audit_check_address_claims(&l, &f), PK_OK);
	assert_int_equal(f.n, 0);
	pk_live_release(&l);
}

static void test_pending(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_audit_findings f = {0};
	char claims[4096];
	snprintf(claims, sizeof(claims), "[%s,%s,%s]",
	         claim_text("stuck", NULL, T0,
	                    "[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":"
	                    "\"PoolExhausted\",\"message\":\"no free address\"}]"),
	         claim_text("bare", NULL, T0, NULL), claim_text("bound", "bound", T0, NULL));
	load(&l, "[]", "[]", claims);
	/* At 5m exactly nothing is late yet. */
	assert_int_equal(pk_audit_check_pending(&l, T0_SECONDS + 300, 300, &f), PK_OK);
	assert_int_equal(f.n, 0);
	assert_int_equal(pk_audit_check_pending(&l, T0_SECONDS + 301, 300, &f), PK_OK);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.items[0].name, "stuck");
	assert_string_equal(f.items[0].rule, "claim-pending");
	assert_string_equal(f.items[0].message,
	                    "no address after 5m1s: Ready is False, reason PoolExhausted: no free "
	                    "address");
	assert_string_equal(f.items[1].name, "bare");
	assert_non_null(strstr(f.items[1].message, "no Ready condition"));
	pk_audit_findings_free(&f);
	pk_live_release(&l);
}

/* A clean set-up: lint passes it, no live finding, exit 0; the JSON says so. */
static void test_clean_and_outputs(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_audit_findings f = {0};
	char claims[2048], addrs[2048];
	snprintf(claims, sizeof(claims), "[%s]", claim_text("a", "a", T0, NULL));
	snprintf(addrs, sizeof(addrs), "[%s]", addr_text("default", "a", "a", "10.0.0.1"));
	load(&l, "[" POOL "]", addrs, claims);
	struct pk_lint *lint = pk_lint_new();
	assert_non_null(lint);
	assert_int_equal(pk_audit_add_to_lint(&l, lint), PK_OK);
	assert_int_equal(pk_lint_run(lint), PK_OK);
	assert_int_equal(pk_audit_check_all(&l, T0_SECONDS + 1, 300, &f), PK_OK);
	assert_int_equal(f.n, 0);
	assert_int_equal(pk_audit_exit_code(lint, &f), 0);
	size_t n;
	const struct pk_lint_object *objs = pk_lint_objects(lint, &n);
	assert_int_equal(n, 3);
	assert_string_equal(objs[0].source, "cluster:IPPool/default/nodes");
	json_t *j = pk_audit_to_json(lint, &f);
	assert_int_equal(json_integer_value(json_object_get(j, "exitCode")), 0);
	assert_int_equal(json_array_size(json_object_get(j, "findings")), 0);
	json_decref(j);
	pk_lint_free(lint);
	pk_live_release(&l);
}

/* An orphan makes the exit 1, in text and JSON, in the documented shape. */
static void test_finding_outputs(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_audit_findings f = {0};
	char addrs[2048];
	snprintf(addrs, sizeof(addrs), "[%s]", addr_text("default", "a", "a", "10.0.0.1"));
	load(&l, "[" POOL "]", addrs, "[]");
	struct pk_lint *lint = pk_lint_new();
	assert_int_equal(pk_audit_add_to_lint(&l, lint), PK_OK);
	assert_int_equal(pk_lint_run(lint), PK_OK);
	assert_int_equal(pk_audit_check_all(&l, T0_SECONDS, 300, &f), PK_OK);
	assert_int_equal(f.n, 1);
	assert_int_equal(pk_audit_exit_code(lint, &f), 1);
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	pk_audit_write_text(mem, lint, &f);
	fclose(mem);
	assert_non_null(strstr(text, "cluster:IPAddress/default/a: deny: spec.claimRef.name: "
	                             "IPAddressClaim default/a does not exist: the address is held "
	                             "for nobody [address-claim-missing]\n"));
	assert_non_null(strstr(text, "audit: 1 finding on the live cluster\n"));
	free(text);
	json_t *j = pk_audit_to_json(lint, &f);
	json_t *x = json_array_get(json_object_get(j, "findings"), 0);
	assert_string_equal(json_string_value(json_object_get(x, "rule")), "address-claim-missing");
	assert_string_equal(json_string_value(json_object_get(x, "severity")), "deny");
	assert_string_equal(json_string_value(json_object_get(x, "namespace")), "default");
	assert_int_equal(json_integer_value(json_object_get(j, "exitCode")), 1);
	json_decref(j);
	pk_lint_free(lint);
	pk_audit_findings_free(&f);
	pk_live_release(&l);
}

/* An IPAddress lint does not check against its pool (its own rules fail): audit does. */
static void test_outside_pool_live(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_audit_findings f = {0};
	json_t *out = js(addr_text("default", "out", "out", "10.9.9.9"));
	json_t *in = js(addr_text("default", "in", "in", "10.0.0.3"));
	json_t *nopool = js(addr_text("default", "nopool", "nopool", "10.0.0.4"));
	json_object_del(json_object_get(out, "metadata"), "ownerReferences");
	json_object_del(json_object_get(in, "metadata"), "ownerReferences");
	json_object_del(json_object_get(nopool, "metadata"), "ownerReferences");
	json_object_set_new(json_object_get(json_object_get(nopool, "spec"), "poolRef"), "name",
	                    json_string("gone"));
	load(&l, "[" POOL "]", "[]", "[]");
	json_array_append_new(l.addresses, out);
	json_array_append_new(l.addresses, in);
	json_array_append_new(l.addresses, nopool);
	assert_int_equal(pk_audit_check_outside_pool(&l, &f), PK_OK);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.items[0].name, "out");
	assert_string_equal(f.items[0].rule, "address-outside-pool");
	assert_string_equal(f.items[0].field, "spec.address");
	assert_int_equal(f.items[0].severity, PK_SEV_DENY);
	assert_non_null(strstr(f.items[0].message, "10.9.9.9"));
	assert_string_equal(f.items[1].name, "nopool");
	assert_int_equal(f.items[1].severity, PK_SEV_WARN);
	assert_non_null(strstr(f.items[1].message, "does not exist"));
	pk_audit_findings_free(&f);
	pk_live_release(&l);
}

/* An address outside its pool is lint's check on the listed pool: exit 1. */
static void test_outside_pool_through_lint(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_audit_findings f = {0};
	char claims[2048], addrs[2048];
	snprintf(claims, sizeof(claims), "[%s]", claim_text("a", "a", T0, NULL));
	snprintf(addrs, sizeof(addrs), "[%s]", addr_text("default", "a", "a", "10.9.9.9"));
	load(&l, "[" POOL "]", addrs, claims);
	struct pk_lint *lint = pk_lint_new();
	assert_int_equal(pk_audit_add_to_lint(&l, lint), PK_OK);
	assert_int_equal(pk_lint_run(lint), PK_OK);
	assert_int_equal(pk_audit_check_all(&l, T0_SECONDS, 300, &f), PK_OK);
	assert_int_equal(f.n, 0);
	assert_int_equal(pk_audit_exit_code(lint, &f), 1);
	pk_lint_free(lint);
	pk_live_release(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_held_twice),
	    cmocka_unit_test(test_held_twice_parsed),
	    cmocka_unit_test(test_claim_address_missing),
	    cmocka_unit_test(test_address_claim_missing),
	    cmocka_unit_test(test_pending),
	    cmocka_unit_test(test_clean_and_outputs),
	    cmocka_unit_test(test_finding_outputs),
	    cmocka_unit_test(test_outside_pool_through_lint),
	    cmocka_unit_test(test_outside_pool_live),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
