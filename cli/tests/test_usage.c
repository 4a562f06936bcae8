/* test_usage.c - `poolkeeper usage` on JSON fixtures: exact counts (IPv4 and a /64),
 * addresses of other pools and namespaces left out, top consumers, the outputs and the
 * flags. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "usage.h"
#include "run_main.h"

static json_t *pool(const char *kind, const char *ns, const char *name, const char *cidr)
{
	json_t *p =
	    json_pack("{s:s, s:s, s:{s:s}, s:{s:[s]}}", "apiVersion", "ipam.poolkeeper.io/v1alpha1",
	              "kind", kind, "metadata", "name", name, "spec", "addresses", cidr);
	if (ns)
		json_object_set_new(json_object_get(p, "metadata"), "namespace", json_string(ns));
	return p;
}

static json_t *addr(const char *ns, const char *name, const char *kind, const char *pool_name,
                    const char *ip)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:{s:s}, s:{s:s, s:s, s:s}}}",
	                 "apiVersion", "ipam.cluster.x-k8s.io/v1beta2", "kind", "IPAddress",
	                 "metadata", "name", name, "namespace", ns, "spec", "address", ip,
	                 "claimRef", "name", name, "poolRef", "apiGroup", "ipam.poolkeeper.io",
	                 "kind", kind, "name", pool_name);
}

/* A claim of `cluster` via spec.clusterName, or via the label when `label`. */
static json_t *claim(const char *ns, const char *name, const char *cluster, bool label)
{
	json_t *c = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{}}", "apiVersion",
	                      "ipam.cluster.x-k8s.io/v1beta2", "kind", "IPAddressClaim", "metadata",
	                      "name", name, "namespace", ns, "spec");
	if (cluster && label)
		json_object_set_new(json_object_get(c, "metadata"), "labels",
		                    json_pack("{s:s}", "cluster.x-k8s.io/cluster-name", cluster));
	else if (cluster)
		json_object_set_new(json_object_get(c, "spec"), "clusterName",
		                    json_string(cluster));
	return c;
}

static void fixture(struct pk_live *l)
{
	assert_int_equal(pk_live_init(l), PK_OK);
	json_array_append_new(l->pools, pool("IPPool", "default", "v4", "10.0.0.0/24"));
	json_array_append_new(l->pools, pool("GlobalIPPool", NULL, "v6", "fd00::/64"));
	json_array_append_new(l->pools, pool("IPPool", "default", "broken", "not-a-cidr"));
	/* v4: a (c1), b (c1), c (c2 by label), d (no claim), e held twice with a, f outside */
	const char *v4[][2] = {{"a", "10.0.0.1"}, {"b", "10.0.0.2"}, {"c", "10.0.0.3"},
	                       {"d", "10.0.0.4"}, {"e", "10.0.0.1"}, {"f", "10.1.0.1"}};
	for (size_t i = 0; i < 6; i++)
		json_array_append_new(l->addresses,
		                      addr("default", v4[i][0], "IPPool", "v4", v4[i][1]));
	/* Another namespace's IPPool of the same name: not this pool. */
	json_array_append_new(l->addresses, addr("other", "x", "IPPool", "v4", "10.0.0.9"));
	json_array_append_new(l->addresses, addr("other", "g", "GlobalIPPool", "v6", "fd00::1"));
	json_array_append_new(l->claims, claim("default", "a", "c1", false));
	json_array_append_new(l->claims, claim("default", "b", "c1", false));
	json_array_append_new(l->claims, claim("default", "c", "c2", true));
	json_array_append_new(l->claims, claim("default", "e", "c3", false));
	json_array_append_new(l->claims, claim("other", "g", "c9", false));
	assert_int_equal(pk_live_index(l), PK_OK);
}

static void test_counts(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_usage u;
	fixture(&l);
	assert_int_equal(pk_usage_compute(&l, 5, &u), PK_OK);
	assert_int_equal(u.n, 3);
	const struct pk_usage_pool *p = &u.pools[0];
	assert_true(p->valid);
	assert_string_equal(p->family, "IPv4");
	assert_string_equal(p->total, "254");
	assert_string_equal(p->used, "4");
	assert_string_equal(p->free_, "250");
	assert_string_equal(p->out_of_range, "1");
	/* Two each (a tie, by name), then 1 each, by name. */
	assert_int_equal(p->ntop, 4);
	assert_string_equal(p->top[0].cluster, "(no cluster)");
	assert_int_equal(p->top[0].addresses, 2);
	assert_string_equal(p->top[1].cluster, "c1");
	assert_int_equal(p->top[1].addresses, 2);
	assert_string_equal(p->top[2].cluster, "c2");
	assert_string_equal(p->top[3].cluster, "c3");

	p = &u.pools[1];
	assert_string_equal(p->family, "IPv6");
	assert_string_equal(p->total, "18446744073709551615");
	assert_string_equal(p->used, "1");
	assert_string_equal(p->free_, "18446744073709551614");
	assert_int_equal(p->ntop, 1);
	assert_string_equal(p->top[0].cluster, "c9");

	assert_false(u.pools[2].valid);
	pk_usage_free(&u);

	/* --top keeps the first N. */
	assert_int_equal(pk_usage_compute(&l, 1, &u), PK_OK);
	assert_int_equal(u.pools[0].ntop, 1);
	assert_string_equal(u.pools[0].top[0].cluster, "(no cluster)");
	pk_usage_free(&u);
	pk_live_release(&l);
}

static void test_outputs(void **state)
{
	(void)state;
	struct pk_live l;
	struct pk_usage u;
	fixture(&l);
	assert_int_equal(pk_usage_compute(&l, 2, &u), PK_OK);
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	pk_usage_write_text(mem, &u);
	fclose(mem);
	assert_non_null(strstr(text, "POOL "));
	assert_non_null(strstr(text, "IPPool/default/v4 "));
	assert_non_null(strstr(text, "(no cluster) (2), c1 (2); 1 held outside the pool\n"));
	assert_non_null(strstr(text, "GlobalIPPool/v6 "));
	assert_non_null(strstr(text, "IPPool/default/broken "));
	free(text);

	json_t *j = pk_usage_to_json(&u);
	json_t *p0 = json_array_get(json_object_get(j, "pools"), 0);
	assert_string_equal(json_string_value(json_object_get(p0, "total")), "254");
	assert_string_equal(json_string_value(json_object_get(p0, "free")), "250");
	assert_string_equal(json_string_value(json_object_get(p0, "namespace")), "default");
	json_t *c0 = json_array_get(json_object_get(p0, "consumers"), 1);
	assert_string_equal(json_string_value(json_object_get(c0, "cluster")), "c1");
	assert_int_equal(json_integer_value(json_object_get(c0, "addresses")), 2);
	json_t *p1 = json_array_get(json_object_get(j, "pools"), 1);
	assert_null(json_object_get(p1, "namespace"));
	json_t *p2 = json_array_get(json_object_get(j, "pools"), 2);
	assert_false(json_is_true(json_object_get(p2, "valid")));
	assert_null(json_object_get(p2, "total"));
	json_decref(j);
	pk_usage_free(&u);
	pk_live_release(&l);
}

/* -o/--output text|json, as kubectl spells it; the CI forms are audit's only, and the
 * old --format is gone: usage errors (2) before any cluster is read. */
static void test_flags(void **state)
{
	(void)state;
	static char out[8192], err[8192];
	const char *help[] = {"--help"};
	assert_int_equal(run_main(pk_usage_main, help, 1, out, err, sizeof(out)), 0);
	assert_non_null(strstr(out, "-o, --output text|json "));
	const char *sarif[] = {"-o", "sarif"};
	assert_int_equal(run_main(pk_usage_main, sarif, 2, out, err, sizeof(out)), 2);
	assert_non_null(strstr(err, "--output must be one of text|json, got \"sarif\""));
	const char *format[] = {"--format=json"};
	assert_int_equal(run_main(pk_usage_main, format, 1, out, err, sizeof(out)), 2);
	assert_non_null(strstr(err, "unknown flag --format"));
	const char *ok[] = {"--kubeconfig", "/nonexistent/kubeconfig", "--output", "json"};
	assert_int_equal(run_main(pk_usage_main, ok, 4, out, err, sizeof(out)), 2);
	assert_non_null(strstr(err, "/nonexistent/kubeconfig"));
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counts),
	    cmocka_unit_test(test_outputs),
	    cmocka_unit_test(test_flags),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
