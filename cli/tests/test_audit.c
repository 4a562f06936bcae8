/* test_audit.c - the live checks of `poolkeeper audit` on JSON fixtures, each finding and
 * its negative case, lint's checks on listed objects, the outputs and the exit code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "audit.h"
#include "run_main.h"

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

/* The live objects (one POOL, addrs, claims) loaded, linted and audited at `now`: the lint. */
static struct pk_lint *audited(struct pk_live *l, struct pk_audit_findings *f, const char *addrs,
                               const char *claims, long long now)
{
	load(l, "[" POOL "]", addrs, claims);
	struct pk_lint *lint = pk_lint_new();
	assert_non_null(lint);
	assert_int_equal(pk_audit_add_to_lint(l, lint), PK_OK);
	assert_int_equal(pk_lint_run(lint), PK_OK);
	assert_int_equal(pk_audit_check_all(l, now, 300, f), PK_OK);
	return lint;
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
	struct pk_lint *lint = audited(&l, &f, addrs, claims, T0_SECONDS + 1);
	assert_int_equal(f.n, 0);
	assert_int_equal(pk_audit_exit_code(lint, &f, false), 0);
	size_t n;
	const struct pk_lint_object *objs = pk_lint_objects(lint, &n);
	assert_int_equal(n, 3);
	assert_string_equal(objs[0].source, "cluster:IPPool/default/nodes");
	json_t *j = pk_audit_to_json(lint, &f, false);
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
	struct pk_lint *lint = audited(&l, &f, addrs, "[]", T0_SECONDS);
	assert_int_equal(f.n, 1);
	assert_int_equal(pk_audit_exit_code(lint, &f, false), 1);
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	pk_audit_write_text(mem, lint, &f, false);
	fclose(mem);
	assert_non_null(strstr(
	    text, "cluster:IPAddress/default/a: error: IPAddress default/a: spec.claimRef.name: "
	          "IPAddressClaim default/a does not exist: the address is held "
	          "for nobody [address-claim-missing]\n"));
	assert_non_null(strstr(text, "audit: 1 finding on the live cluster\n"));
	free(text);
	json_t *j = pk_audit_to_json(lint, &f, false);
	json_t *x = json_array_get(json_object_get(j, "findings"), 0);
	assert_string_equal(json_string_value(json_object_get(x, "rule")), "address-claim-missing");
	assert_string_equal(json_string_value(json_object_get(x, "severity")), "error");
	assert_string_equal(json_string_value(json_object_get(x, "namespace")), "default");
	assert_int_equal(json_integer_value(json_object_get(j, "exitCode")), 1);
	json_decref(j);
	pk_lint_free(lint);
	pk_audit_findings_free(&f);
	pk_live_release(&l);
}

/* The IPAddress a foreground deletion of its claim leaves when the garbage collector takes the
 * claim's owner reference off it (the pool, a blocking owner, keeps it): the pool's reference
 * alone, the protect finalizer, the claim gone. Audit names it, with exit 1. */
static void test_left_by_collector(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_audit_findings f = {0};
	const char *addrs =
	    "[{\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"kind\":\"IPAddress\","
	    "\"metadata\":{\"name\":\"m1-0\",\"namespace\":\"default\",\"finalizers\":["
	    "\"ipam.poolkeeper.io/protect-address\"],\"ownerReferences\":[{\"apiVersion\":"
	    "\"ipam.poolkeeper.io/v1alpha1\",\"kind\":\"IPPool\",\"name\":\"nodes\",\"uid\":\"p1\","
	    "\"blockOwnerDeletion\":true}]},\"spec\":{\"address\":\"10.0.0.3\",\"prefix\":29,"
	    "\"claimRef\":{\"name\":\"m1-0\"},\"poolRef\":{\"apiGroup\":\"ipam.poolkeeper.io\","
	    "\"kind\":\"IPPool\",\"name\":\"nodes\"}}}]";
	struct pk_lint *lint = audited(&l, &f, addrs, "[]", T0_SECONDS);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.items[0].name, "m1-0");
	assert_string_equal(f.items[0].rule, "address-claim-missing");
	assert_non_null(strstr(f.items[0].message, "IPAddressClaim default/m1-0 does not exist"));
	assert_int_equal(pk_audit_exit_code(lint, &f, false), 1);
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
	struct pk_lint *lint = audited(&l, &f, addrs, claims, T0_SECONDS);
	assert_int_equal(f.n, 0);
	assert_int_equal(pk_audit_exit_code(lint, &f, false), 1);
	pk_lint_free(lint);
	pk_live_release(&l);
}

/* A clean cluster's lint, and a WARN finding of audit's on its IPAddress. */
static struct pk_lint *warn_only(struct pk_live *l, struct pk_audit_findings *f)
{
	char claims[2048], addrs[2048];
	snprintf(claims, sizeof(claims), "[%s]", claim_text("a", "a", T0, NULL));
	snprintf(addrs, sizeof(addrs), "[%s]", addr_text("default", "a", "a", "10.0.0.1"));
	struct pk_lint *lint = audited(l, f, addrs, claims, T0_SECONDS);
	assert_int_equal(f->n, 0);
	f->items = calloc(1, sizeof(*f->items));
	assert_non_null(f->items);
	f->n = f->cap = 1;
	struct pk_audit_finding *x = &f->items[0];
	x->kind = "IPAddress";
	snprintf(x->namespace_, sizeof(x->namespace_), "%s", "default");
	snprintf(x->name, sizeof(x->name), "%s", "a");
	snprintf(x->origin, sizeof(x->origin), "%s", "cluster:IPAddress/default/a");
	snprintf(x->object, sizeof(x->object), "%s", "IPAddress default/a");
	snprintf(x->field, sizeof(x->field), "%s", "spec.poolRef");
	x->rule = "address-outside-pool";
	x->severity = PK_SEV_WARN;
	snprintf(x->message, sizeof(x->message), "%s", "IPPool default/gone does not exist");
	return lint;
}

/* --fail-on=warning: a warning alone makes the exit 1, in the JSON's exitCode too. */
static void test_fail_on_warning(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_audit_findings f = {0};
	struct pk_lint *lint = warn_only(&l, &f);
	assert_int_equal(pk_audit_exit_code(lint, &f, false), 0);
	assert_int_equal(pk_audit_exit_code(lint, &f, true), 1);
	json_t *j = pk_audit_to_json(lint, &f, false);
	assert_int_equal(json_integer_value(json_object_get(j, "exitCode")), 0);
	assert_false(json_is_true(json_object_get(j, "failOnWarning")));
	json_decref(j);
	j = pk_audit_to_json(lint, &f, true);
	assert_int_equal(json_integer_value(json_object_get(j, "exitCode")), 1);
	assert_true(json_is_true(json_object_get(j, "failOnWarning")));
	json_decref(j);

	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	pk_audit_write_text(mem, lint, &f, true);
	fclose(mem);
	assert_non_null(strstr(
	    text, "cluster:IPAddress/default/a: warning: IPAddress default/a: spec.poolRef: IPPool "
	          "default/gone does not exist [address-outside-pool]\n"));
	assert_non_null(strstr(text, "audit: 1 finding on the live cluster; --fail-on=warning: "
	                             "warnings fail\n"));
	free(text);
	pk_lint_free(lint);
	pk_audit_findings_free(&f);
	pk_live_release(&l);
}

static char *report(const char *output, const struct pk_lint *lint,
                    const struct pk_audit_findings *f, bool fail_on_warning)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	assert_non_null(mem);
	assert_int_equal(pk_audit_write_report(mem, output, lint, f, fail_on_warning), PK_OK);
	fclose(mem);
	return text;
}

/* Every form of lint's carries the live findings, with their rule ids, at their origin. */
static void test_report_forms(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_audit_findings f = {0};
	char addrs[2048];
	snprintf(addrs, sizeof(addrs), "[%s]", addr_text("default", "a", "a", "10.0.0.1"));
	struct pk_lint *lint = audited(&l, &f, addrs, "[]", T0_SECONDS);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.items[0].origin, "cluster:IPAddress/default/a");
	assert_string_equal(f.items[0].object, "IPAddress default/a");

	char *t = report("text", lint, &f, false);
	assert_non_null(strstr(
	    t, "\ncluster:IPAddress/default/a: error: IPAddress default/a: spec.claimRef.name: "));
	free(t);

	t = report("json", lint, &f, false);
	json_error_t je;
	json_t *j = json_loads(t, 0, &je);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(
	                        json_array_get(json_object_get(j, "findings"), 0), "rule")),
	                    "address-claim-missing");
	assert_int_equal(json_integer_value(json_object_get(j, "exitCode")), 1);
	json_decref(j);
	free(t);

	t = report("github", lint, &f, false);
	assert_non_null(strstr(t, "::error file=cluster%3AIPAddress/default/a,"
	                          "title=address-claim-missing::IPAddress default/a: "
	                          "spec.claimRef.name: IPAddressClaim default/a does not exist: "
	                          "the address is held for nobody\n"));
	assert_non_null(strstr(t, "poolkeeper audit: 2 objects, 0 denied, 0 with warnings, 0 "
	                          "skipped; 1 live finding\n"));
	free(t);

	t = report("junit", lint, &f, false);
	assert_non_null(strstr(t, "<testsuites name=\"poolkeeper audit\" tests=\"2\" "
	                          "failures=\"1\" errors=\"0\">"));
	assert_non_null(strstr(t, "<testcase classname=\"cluster:IPAddress/default/a\" "
	                          "name=\"IPAddress default/a\">\n      <failure "
	                          "type=\"address-claim-missing\" message=\"spec.claimRef.name: "
	                          "IPAddressClaim default/a does not exist"));
	assert_non_null(strstr(t, ">cluster:IPAddress/default/a: error: spec.claimRef.name: "));
	free(t);

	t = report("sarif", lint, &f, false);
	j = json_loads(t, 0, &je);
	assert_non_null(j);
	json_t *r0 = json_array_get(
	    json_object_get(json_array_get(json_object_get(j, "runs"), 0), "results"), 0);
	assert_string_equal(json_string_value(json_object_get(r0, "ruleId")),
	                    "address-claim-missing");
	json_t *phys = json_object_get(json_array_get(json_object_get(r0, "locations"), 0),
	                               "physicalLocation");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(phys, "artifactLocation"), "uri")),
	    "cluster%3AIPAddress/default/a");
	/* no place but line 1, which GitHub code scanning needs, and no column */
	json_t *region = json_object_get(phys, "region");
	assert_int_equal(json_integer_value(json_object_get(region, "startLine")), 1);
	assert_null(json_object_get(region, "startColumn"));
	json_decref(j);
	free(t);
	pk_lint_free(lint);
	pk_audit_findings_free(&f);
	pk_live_release(&l);
}

/* lint's -o/--output and --fail-on; a value they do not take, and the old --format, are
 * usage errors (2) before any cluster is read. */
static void test_flags(void **state)
{
	(void)state;
	static char out[8192], err[8192];
	const char *help[] = {"--help"};
	assert_int_equal(run_main(pk_audit_main, help, 1, out, err, sizeof(out)), 0);
	assert_non_null(strstr(out, "-o, --output text|json|github|junit|sarif"));
	assert_non_null(strstr(out, "--fail-on warning|error"));

	const char *bad_output[] = {"-o", "yaml"};
	assert_int_equal(run_main(pk_audit_main, bad_output, 2, out, err, sizeof(out)), 2);
	assert_non_null(
	    strstr(err, "--output must be one of text|json|github|junit|sarif, got \"yaml\""));
	const char *bad_fail_on[] = {"--fail-on=never"};
	assert_int_equal(run_main(pk_audit_main, bad_fail_on, 1, out, err, sizeof(out)), 2);
	assert_non_null(strstr(err, "--fail-on must be one of warning|error, got \"never\""));
	const char *format[] = {"--format", "json"};
	assert_int_equal(run_main(pk_audit_main, format, 2, out, err, sizeof(out)), 2);
	assert_non_null(strstr(err, "unknown flag --format"));

	/* Every form is taken: what stops these is the kubeconfig, not the flags. */
	static const char *const forms[] = {"text", "json", "github", "junit", "sarif"};
	for (size_t i = 0; i < 5; i++) {
		const char *ok[] = {"--kubeconfig", "/nonexistent/kubeconfig",
		                    "-o",           forms[i],
		                    "--fail-on",    "warning"};
		assert_int_equal(run_main(pk_audit_main, ok, 6, out, err, sizeof(out)), 2);
		assert_non_null(strstr(err, "/nonexistent/kubeconfig"));
		assert_null(strstr(err, "--help"));
		assert_string_equal(out, "");
	}
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
	    cmocka_unit_test(test_left_by_collector),
	    cmocka_unit_test(test_outside_pool_through_lint),
	    cmocka_unit_test(test_outside_pool_live),
	    cmocka_unit_test(test_fail_on_warning),
	    cmocka_unit_test(test_report_forms),
	    cmocka_unit_test(test_flags),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
