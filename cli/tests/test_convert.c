/*
 * test_convert.c - `poolkeeper convert`: the in-cluster provider's pools
 * (fixtures shaped from its config/samples and README, v1.1.0) as
 * poolkeeper pools, each difference the conversion fixes or refuses, claims'
 * poolRef, and the output against poolkeeper's own rules (through lint).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "convert.h"
#include "json.h"
#include "lint.h"
#include "manifest.h"

#define V2_POOL(kind, name, spec)                                                              \
	"apiVersion: ipam.cluster.x-k8s.io/v1alpha2\nkind: " kind "\nmetadata:\n  name: " name \
	"\nspec:\n" spec "---\n"
#define V1_POOL(name, spec)                                                                \
	"apiVersion: ipam.cluster.x-k8s.io/v1alpha1\nkind: InClusterIPPool\nmetadata:\n  " \
	"name: " name "\nspec:\n" spec "---\n"

static struct pk_convert *conv_ns(const char *ns, const char *text)
{
	struct pk_convert *c = pk_convert_new(ns);
	assert_non_null(c);
	assert_int_equal(pk_convert_add_buffer(c, text, strlen(text), "in.yaml"), PK_OK);
	assert_int_equal(pk_convert_run(c), PK_OK);
	return c;
}

static struct pk_convert *conv(const char *text)
{
	return conv_ns(NULL, text);
}

static struct pk_convert *conv_fixture(const char *name)
{
	char path[1024], *buf = NULL;
	size_t len = 0;
	struct pk_err err = {{0}};
	const char *root = getenv("PK_SOURCE_DIR");
	snprintf(path, sizeof(path), "%s/cli/tests/fixtures/convert/%s", root ? root : "..", name);
	assert_int_equal(pk_manifest_read_file(path, PK_MANIFEST_MAX_BYTES, &buf, &len, &err),
	                 PK_OK);
	struct pk_convert *c = pk_convert_new(NULL);
	assert_non_null(c);
	assert_int_equal(pk_convert_add_buffer(c, buf, len, name), PK_OK);
	assert_int_equal(pk_convert_run(c), PK_OK);
	free(buf);
	return c;
}

/* The message of `level` containing every one of the NULL-terminated strings. */
static bool has(const struct pk_convert *c, enum pk_convert_level level, ...)
{
	size_t n;
	const struct pk_convert_msg *m = pk_convert_messages(c, &n);
	for (size_t i = 0; i < n; i++) {
		if (m[i].level != level)
			continue;
		bool all = true;
		va_list ap;
		va_start(ap, level);
		for (const char *s = va_arg(ap, const char *); s != NULL && all;
		     s = va_arg(ap, const char *))
			all = strstr(m[i].text, s) != NULL;
		va_end(ap);
		if (all)
			return true;
	}
	return false;
}

/* The output read back: the objects, in order. */
static struct pk_manifest output(const struct pk_convert *c)
{
	struct pk_manifest m = {0};
	struct pk_err err = {{0}};
	size_t len;
	char *text = pk_convert_output(c, &len);
	assert_non_null(text);
	assert_int_equal(pk_manifest_parse_buffer(text, len, "out.yaml", NULL, &m, &err), PK_OK);
	free(text);
	return m;
}

/* Every pool of the output passes poolkeeper's rules and overlap check (lint). */
static void assert_pools_lint_clean(const struct pk_convert *c, size_t want_pools)
{
	size_t len, n, pools = 0;
	char *text = pk_convert_output(c, &len);
	struct pk_lint *l = pk_lint_new();
	assert_non_null(text);
	assert_non_null(l);
	assert_int_equal(pk_lint_add_buffer(l, text, len, "out.yaml"), PK_OK);
	assert_int_equal(pk_lint_run(l), PK_OK);
	const struct pk_lint_object *o = pk_lint_objects(l, &n);
	for (size_t i = 0; i < n; i++) {
		if (o[i].kind == NULL ||
		    (strcmp(o[i].kind, "IPPool") && strcmp(o[i].kind, "GlobalIPPool")))
			continue;
		pools++;
		assert_int_equal(o[i].status, PK_LINT_PASS);
	}
	assert_int_equal(pools, want_pools);
	pk_lint_free(l);
	free(text);
}

static const json_t *spec_of(const struct pk_manifest *m, size_t i)
{
	assert_true(i < m->n);
	return json_object_get(m->docs[i].value, "spec");
}

static void test_v1alpha2_samples(void **state)
{
	(void)state;
	struct pk_convert *c = conv_fixture("v1alpha2.yaml");
	assert_int_equal(pk_convert_exit_code(c), 0);
	assert_int_equal(pk_convert_get_totals(c).pools, 3);
	/* A CIDR with host bits: its network, said with file:line, object and field. */
	assert_true(has(c, PK_CONVERT_CHANGE, "v1alpha2.yaml:38", "team-a/readme-24",
	                "spec.addresses[0]", "\"10.0.5.7/24\"", "10.0.5.0/24", NULL));
	/* A missing prefix from the lone CIDR. */
	assert_true(has(c, PK_CONVERT_CHANGE, "readme-24", "spec.prefix", "set to 24", NULL));
	/* A gateway off the subnet: dropped, and said. */
	assert_true(has(c, PK_CONVERT_WARNING, "readme-24", "spec.gateway", "\"10.0.9.1\"",
	                "dropped", NULL));

	struct pk_manifest m = output(c);
	assert_int_equal(m.n, 3);
	assert_string_equal(pk_json_cstr_at(m.docs[0].value, "apiVersion"),
	                    "ipam.poolkeeper.io/v1alpha1");
	assert_string_equal(pk_json_cstr_at(m.docs[0].value, "kind"), "IPPool");
	assert_string_equal(pk_json_cstr_at(m.docs[1].value, "kind"), "GlobalIPPool");
	/* The sample converts field for field; its labels stay. */
	assert_string_equal(pk_json_cstr_at(spec_of(&m, 0), "gateway"), "10.0.0.1");
	assert_int_equal(json_array_size(json_object_get(spec_of(&m, 0), "excludedAddresses")), 3);
	assert_non_null(
	    pk_json_path(m.docs[0].value, "metadata", "labels", "app.kubernetes.io/name"));
	const json_t *s = spec_of(&m, 2);
	assert_string_equal(pk_json_cstr(json_array_get(json_object_get(s, "addresses"), 0)),
	                    "10.0.5.0/24");
	assert_int_equal(json_integer_value(json_object_get(s, "prefix")), 24);
	assert_null(json_object_get(s, "gateway"));
	assert_int_equal(json_integer_value(json_object_get(s, "addressReuseGracePeriodSeconds")),
	                 30);
	pk_manifest_free(&m);
	assert_pools_lint_clean(c, 3);
	pk_convert_free(c);
}

static void test_v1alpha1_subnet_start_end(void **state)
{
	(void)state;
	struct pk_convert *c = conv_fixture("v1alpha1.yaml");
	assert_int_equal(pk_convert_exit_code(c), 0);
	struct pk_manifest m = output(c);
	assert_int_equal(m.n, 3);
	/* subnet alone: its second to second-last address, prefix from the subnet. */
	const json_t *s = spec_of(&m, 0);
	assert_string_equal(pk_json_cstr(json_array_get(json_object_get(s, "addresses"), 0)),
	                    "10.1.0.1-10.1.0.254");
	assert_int_equal(json_integer_value(json_object_get(s, "prefix")), 24);
	assert_null(json_object_get(s, "subnet"));
	assert_null(json_object_get(s, "start"));
	/* start and end given: that range; the explicit prefix stays. */
	s = spec_of(&m, 1);
	assert_string_equal(pk_json_cstr(json_array_get(json_object_get(s, "addresses"), 0)),
	                    "10.2.0.100-10.2.0.200");
	assert_null(json_object_get(s, "end"));
	assert_int_equal(json_integer_value(json_object_get(s, "prefix")), 16);
	/* IPv6: from ::1, the provider's conversion leaves out the first address. */
	s = spec_of(&m, 2);
	assert_string_equal(pk_json_cstr(json_array_get(json_object_get(s, "addresses"), 0)),
	                    "fd00:10::1-fd00:10::ffff:ffff:ffff:fffe");
	assert_true(has(c, PK_CONVERT_CHANGE, "v1alpha1.yaml:3", "subnet-only", "spec.addresses",
	                "\"10.1.0.1-10.1.0.254\"", NULL));
	assert_true(has(c, PK_CONVERT_CHANGE, "subnet-only", "spec.prefix", "24", NULL));
	pk_manifest_free(&m);
	assert_pools_lint_clean(c, 3);
	pk_convert_free(c);
}

static void test_v1alpha1_host_bits_and_prefix_zero(void **state)
{
	(void)state;
	struct pk_convert *c = conv(V1_POOL("hb", "  subnet: 10.3.0.9/24\n  prefix: 0\n") V1_POOL(
	    "addr", "  addresses: [10.4.0.0/24]\n  prefix: 0\n"));
	assert_int_equal(pk_convert_exit_code(c), 0);
	assert_true(has(c, PK_CONVERT_CHANGE, "default/hb", "spec.subnet", "host bits",
	                "10.3.0.0/24", NULL));
	/* v1alpha1's prefix 0 is unset: taken from the lone CIDR. */
	assert_true(has(c, PK_CONVERT_CHANGE, "default/addr", "spec.prefix", "set to 24", NULL));
	struct pk_manifest m = output(c);
	assert_string_equal(
	    pk_json_cstr(json_array_get(json_object_get(spec_of(&m, 0), "addresses"), 0)),
	    "10.3.0.1-10.3.0.254");
	pk_manifest_free(&m);
	assert_pools_lint_clean(c, 2);
	pk_convert_free(c);
}

static void test_claims_and_pass_through(void **state)
{
	(void)state;
	struct pk_convert *c = conv_fixture("claims.yaml");
	assert_int_equal(pk_convert_exit_code(c), 0);
	struct pk_convert_totals t = pk_convert_get_totals(c);
	assert_int_equal(t.claims, 2);
	assert_int_equal(t.passed, 3);
	struct pk_manifest m = output(c);
	assert_int_equal(m.n, 5);
	assert_string_equal(pk_json_cstr_path(m.docs[0].value, "spec", "poolRef", "apiGroup"),
	                    "ipam.poolkeeper.io");
	assert_string_equal(pk_json_cstr_path(m.docs[0].value, "spec", "poolRef", "kind"),
	                    "IPPool");
	assert_string_equal(pk_json_cstr_path(m.docs[0].value, "spec", "poolRef", "name"),
	                    "inclusterippool-sample");
	assert_string_equal(pk_json_cstr_path(m.docs[1].value, "spec", "poolRef", "kind"),
	                    "GlobalIPPool");
	/* Another provider's claim, the IPAddress and the ConfigMap: unchanged. */
	assert_string_equal(pk_json_cstr_path(m.docs[2].value, "spec", "poolRef", "apiGroup"),
	                    "ipam.metal3.io");
	assert_string_equal(pk_json_cstr_path(m.docs[3].value, "spec", "poolRef", "kind"),
	                    "InClusterIPPool");
	assert_string_equal(pk_json_cstr_path(m.docs[4].value, "data", "key"), "24");
	assert_true(has(c, PK_CONVERT_CHANGE, "claims.yaml:4", "default/my-claim", "spec.poolRef",
	                "immutable", NULL));
	assert_true(has(c, PK_CONVERT_WARNING, "IPAddress", "spec.poolRef", "not count", NULL));
	pk_manifest_free(&m);
	pk_convert_free(c);
}

/* Cluster API serves v1alpha1 claims too (CAPM3 creates them): rewritten alike. */
static void test_v1alpha1_claim(void **state)
{
	(void)state;
	struct pk_convert *c = conv_ns(
	    "d", "apiVersion: ipam.cluster.x-k8s.io/v1alpha1\nkind: IPAddressClaim\n"
	         "metadata: {name: m3, labels: {cluster.x-k8s.io/cluster-name: w1}}\n"
	         "spec:\n  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, "
	         "name: p}\n---\n"
	         "apiVersion: ipam.cluster.x-k8s.io/v1alpha9\nkind: IPAddressClaim\n"
	         "metadata: {name: x}\n"
	         "spec:\n  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, "
	         "name: p}\n");
	struct pk_convert_totals t = pk_convert_get_totals(c);
	assert_int_equal(t.claims, 1);
	struct pk_manifest m = output(c);
	assert_int_equal(m.n, 2);
	assert_string_equal(pk_json_cstr_path(m.docs[0].value, "spec", "poolRef", "apiGroup"),
	                    "ipam.poolkeeper.io");
	assert_string_equal(pk_json_cstr_path(m.docs[0].value, "spec", "poolRef", "kind"),
	                    "IPPool");
	assert_string_equal(pk_json_cstr_path(m.docs[1].value, "spec", "poolRef", "kind"),
	                    "InClusterIPPool");
	pk_manifest_free(&m);
	pk_convert_free(c);
}

static void test_namespace_and_metadata(void **state)
{
	(void)state;
	struct pk_convert *c = conv_ns(
	    "team-b", "apiVersion: ipam.cluster.x-k8s.io/v1alpha2\nkind: InClusterIPPool\n"
	              "metadata:\n  name: p\n  uid: 1234\n  resourceVersion: \"7\"\n"
	              "  finalizers: [ipam.cluster.x-k8s.io/ProtectPool]\n"
	              "spec:\n  addresses: [10.0.0.0/24]\n  prefix: 24\n"
	              "status:\n  ipAddresses: {total: 254, free: 254, used: 0, outOfRange: 0}\n");
	assert_int_equal(pk_convert_exit_code(c), 0);
	assert_true(has(c, PK_CONVERT_CHANGE, "metadata.uid", "dropped", NULL));
	assert_true(has(c, PK_CONVERT_CHANGE, "metadata.finalizers", "dropped", NULL));
	assert_true(has(c, PK_CONVERT_CHANGE, "status", "dropped", NULL));
	assert_true(has(c, PK_CONVERT_CHANGE, "metadata.namespace", "team-b", NULL));
	struct pk_manifest m = output(c);
	assert_string_equal(pk_json_meta_cstr(m.docs[0].value, "namespace"), "team-b");
	assert_null(pk_json_path(m.docs[0].value, "metadata", "uid"));
	assert_null(json_object_get(m.docs[0].value, "status"));
	pk_manifest_free(&m);
	pk_convert_free(c);
}

static void test_unknown_field(void **state)
{
	(void)state;
	/* The in-cluster provider's README spells it excludeAddresses. */
	struct pk_convert *c = conv(V2_POOL("InClusterIPPool", "readme",
	                                    "  addresses: [10.0.0.0/24]\n  prefix: 22\n"
	                                    "  excludeAddresses: [10.10.0.242]\n"));
	assert_int_equal(pk_convert_exit_code(c), 1);
	assert_true(has(c, PK_CONVERT_ERROR, "spec.excludeAddresses", "unknown field",
	                "did you mean excludedAddresses?", NULL));
	/* v1alpha1 has no excludedAddresses. */
	pk_convert_free(c);
	c = conv(V1_POOL("v1", "  addresses: [10.0.0.0/24]\n  excludedAddresses: [10.0.0.5]\n"));
	assert_int_equal(pk_convert_exit_code(c), 1);
	assert_true(has(c, PK_CONVERT_ERROR, "spec.excludedAddresses", "v1alpha1", NULL));
	assert_int_equal(pk_convert_get_totals(c).pools, 0);
	pk_convert_free(c);
}

static void test_invalid_values(void **state)
{
	(void)state;
	struct pk_convert *c = conv(
	    V2_POOL("InClusterIPPool", "a", "  addresses: [10.0.0.0/33]\n  prefix: 24\n")
	        V2_POOL("InClusterIPPool", "b",
	                "  addresses: [10.0.0.0/24]\n  prefix: 24\n"
	                "  excludedAddresses: [10.0.0.300]\n")
	            V1_POOL("c", "  subnet: 10.1.0.0/40\n")
	                V1_POOL("d", "  start: 10.2.0.5\n  prefix: 24\n")
	                    V2_POOL("InClusterIPPool", "e", "  addresses: [10.0.0.1-10.0.0.9]\n")
	                        V1_POOL("f", "  subnet: 10.5.0.0/24\n  prefix: \"24\"\n")
	                            V1_POOL("g", "  subnet: 255.255.255.255/32\n"));
	assert_int_equal(pk_convert_exit_code(c), 1);
	assert_true(
	    has(c, PK_CONVERT_ERROR, "default/a: spec.addresses[0]", "\"10.0.0.0/33\"", NULL));
	assert_true(has(c, PK_CONVERT_ERROR, "default/b: spec.excludedAddresses[0]",
	                "\"10.0.0.300\"", NULL));
	assert_true(has(c, PK_CONVERT_ERROR, "default/c: spec.subnet", "\"10.1.0.0/40\"", NULL));
	assert_true(has(c, PK_CONVERT_ERROR, "default/d: spec.start", "without spec.end", NULL));
	assert_true(has(c, PK_CONVERT_ERROR, "default/e: spec.prefix", "missing", NULL));
	assert_true(has(c, PK_CONVERT_ERROR, "default/g: spec.subnet", "\"255.255.255.255/32\"",
	                "/32", NULL));
	/* A prefix of the wrong type is not replaced by the subnet's: the pool rules refuse it. */
	assert_true(has(c, PK_CONVERT_ERROR, "default/f: spec.prefix", "refuses", "\"24\"", NULL));
	assert_int_equal(pk_convert_get_totals(c).pools, 0);
	pk_convert_free(c);
}

static void test_poolkeeper_rules_refuse(void **state)
{
	(void)state;
	/* The in-cluster provider allows any grace period; poolkeeper at most a day. */
	struct pk_convert *c = conv(V2_POOL("InClusterIPPool", "g",
	                                    "  addresses: [10.0.0.0/24]\n  prefix: 24\n"
	                                    "  addressReuseGracePeriodSeconds: 90000\n"));
	assert_int_equal(pk_convert_exit_code(c), 1);
	assert_true(has(c, PK_CONVERT_ERROR, "spec.addressReuseGracePeriodSeconds", "refuses",
	                "90000", NULL));
	pk_convert_free(c);
	/* Prefix pools have no poolkeeper kind; an unknown version is not guessed at. */
	c = conv(V2_POOL(
	    "InClusterPrefixPool", "pp",
	    "  prefixes: [fd00::/48]\n  prefixLength: 64\n") "apiVersion: "
	                                                     "ipam.cluster.x-k8s.io/v1beta1\nkind: "
	                                                     "InClusterIPPool\n"
	                                                     "metadata: {name: x}\nspec: "
	                                                     "{addresses: [10.0.0.0/24], prefix: "
	                                                     "24}\n");
	assert_true(
	    has(c, PK_CONVERT_ERROR, "InClusterPrefixPool", "kind", "no prefix pools", NULL));
	assert_true(has(c, PK_CONVERT_ERROR, "apiVersion", "v1beta1", NULL));
	pk_convert_free(c);
}

static void test_point_to_point_warning(void **state)
{
	(void)state;
	struct pk_convert *c =
	    conv(V2_POOL("InClusterIPPool", "p2p", "  addresses: [10.9.0.0/31]\n  prefix: 31\n"));
	assert_int_equal(pk_convert_exit_code(c), 0);
	assert_true(has(c, PK_CONVERT_WARNING, "spec.prefix", "/31", "10.9.0.0", NULL));
	pk_convert_free(c);
}

static void test_overlap(void **state)
{
	(void)state;
	struct pk_convert *c =
	    conv(V2_POOL("InClusterIPPool", "a", "  addresses: [10.0.0.0/24]\n  prefix: 24\n")
	             V2_POOL("InClusterIPPool", "b",
	                     "  addresses: [10.0.0.100-10.0.0.120]\n  prefix: "
	                     "24\n") "apiVersion: "
	                             "ipam.cluster.x-k8s.io/v1alpha2\nkind: "
	                             "InClusterIPPool\n"
	                             "metadata: {name: c, namespace: other}\n"
	                             "spec: {addresses: [10.0.0.0/24], prefix: "
	                             "24}\n");
	assert_int_equal(pk_convert_exit_code(c), 1);
	assert_true(has(c, PK_CONVERT_ERROR, "in.yaml:9", "IPPool default/b", "spec.addresses",
	                "overlaps with IPPool default/a (in.yaml:1", "10.0.0.100", NULL));
	size_t n;
	const struct pk_convert_msg *msgs = pk_convert_messages(c, &n);
	for (size_t i = 0; i < n; i++) /* another namespace: no overlap */
		assert_null(strstr(msgs[i].text, "other/c: spec.addresses: overlaps"));
	pk_convert_free(c);
	/* A GlobalIPPool overlaps pools of every namespace. */
	c = conv(V2_POOL(
	    "GlobalInClusterIPPool", "g",
	    "  addresses: [10.0.0.5]\n  prefix: 24\n") "apiVersion: "
	                                               "ipam.cluster.x-k8s.io/v1alpha2\nkind: "
	                                               "InClusterIPPool\n"
	                                               "metadata: {name: c, namespace: other}\n"
	                                               "spec: {addresses: [10.0.0.0/24], prefix: "
	                                               "24}\n");
	assert_true(has(c, PK_CONVERT_ERROR, "other/c", "overlaps with GlobalIPPool", NULL));
	pk_convert_free(c);
}

static void test_load_errors(void **state)
{
	(void)state;
	struct pk_convert *c = conv("a: [\n");
	assert_int_equal(pk_convert_exit_code(c), 1);
	assert_true(has(c, PK_CONVERT_ERROR, "in.yaml:", NULL));
	assert_int_equal(pk_convert_add_unreadable(c, "x.yaml: No such file or directory"), PK_OK);
	assert_int_equal(pk_convert_exit_code(c), 2);
	pk_convert_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v1alpha2_samples),
	    cmocka_unit_test(test_v1alpha1_subnet_start_end),
	    cmocka_unit_test(test_v1alpha1_host_bits_and_prefix_zero),
	    cmocka_unit_test(test_claims_and_pass_through),
	    cmocka_unit_test(test_v1alpha1_claim),
	    cmocka_unit_test(test_namespace_and_metadata),
	    cmocka_unit_test(test_unknown_field),
	    cmocka_unit_test(test_invalid_values),
	    cmocka_unit_test(test_poolkeeper_rules_refuse),
	    cmocka_unit_test(test_point_to_point_warning),
	    cmocka_unit_test(test_overlap),
	    cmocka_unit_test(test_load_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
