/* test_schema.c - the field tables agree with the chart's CRDs; unknown fields and suggestions. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"
#include "manifest.h"
#include "pool_ref.h"
#include "schema.h"
#include "suggest.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The table's paths and the CRD's, each sorted, are the same list. */
static void assert_same_paths(const struct pk_schema *s, const json_t *openapi)
{
	json_t *paths = json_array();
	assert_non_null(paths);
	assert_int_equal(pk_schema_paths_from_openapi(openapi, paths), PK_OK);
	size_t n = json_array_size(paths), m = 0;
	const char **want = calloc(n + 1, sizeof(*want));
	assert_non_null(want);
	for (size_t i = 0; i < n; i++)
		want[i] = json_string_value(json_array_get(paths, i));
	while (s->paths[m] != NULL)
		m++;
	const char **have = calloc(m + 1, sizeof(*have));
	assert_non_null(have);
	memcpy(have, s->paths, m * sizeof(*have));
	qsort(want, n, sizeof(*want), cmp_str);
	qsort(have, m, sizeof(*have), cmp_str);
	for (size_t i = 0; i < n && i < m; i++)
		if (strcmp(want[i], have[i]) != 0)
			fail_msg("%s %s: the CRD has %s where schema.c has %s", s->kind, s->version,
			         want[i], have[i]);
	if (n != m)
		fail_msg("%s: the CRD has %zu fields, schema.c %zu", s->kind, n, m);
	free(want);
	free(have);
	json_decref(paths);
}

#define CRDS_MAX 32

/* qsort's strcmp for an array of names (char[N], each its own string). */
static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The *.yaml files of folder dir, sorted, into names; how many. */
static size_t yaml_files(const char *dir, char names[][256], size_t max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;
	if (d == NULL)
		fail_msg("%s: cannot be read", dir);
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 5, ".yaml") != 0)
			continue;
		if (n == max || len >= sizeof(names[0]))
			fail_msg("%s: more CRDs, or longer names, than the test holds", dir);
		memcpy(names[n++], e->d_name, len + 1);
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_name);
	return n;
}

/* A CRD of a pool kind names the resource and scope of its row in pool_ref.h's table. */
static const struct pk_pool_kind *check_pool_row(const json_t *spec, const char *file)
{
	const json_t *names = json_object_get(spec, "names");
	const char *group = json_string_value(json_object_get(spec, "group"));
	const char *kind = json_string_value(json_object_get(names, "kind"));
	const char *plural = json_string_value(json_object_get(names, "plural"));
	const char *scope = json_string_value(json_object_get(spec, "scope"));
	const struct pk_pool_kind *k = pk_pool_kind_find(group, kind);
	if (k == NULL)
		return NULL;
	assert_non_null(plural);
	assert_non_null(scope);
	if (strcmp(k->resource, plural) != 0)
		fail_msg("%s: plural %s, the table's resource %s", file, plural, k->resource);
	if (k->namespaced != !strcmp(scope, "Namespaced"))
		fail_msg("%s: scope %s, the table's %s", file, scope,
		         k->namespaced ? "namespaced" : "cluster-scoped");
	return k;
}

/*
 * charts/poolkeeper/crds, every CRD there: a drift between the chart and
 * schema.c, or between the chart and pool_ref.h's table of pool kinds, fails
 * here. Every pool kind of the table has its CRD in the chart.
 */
static void test_tables_match_chart(void **state)
{
	(void)state;
	static char files[CRDS_MAX][256];
	char dir[512];
	const char *src = getenv("PK_SOURCE_DIR");
	size_t n_kinds;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&n_kinds);
	bool has_crd[PK_POOL_KINDS_MAX] = {false};
	assert_non_null(src);
	snprintf(dir, sizeof(dir), "%s/charts/poolkeeper/crds", src);
	size_t n = yaml_files(dir, files, CRDS_MAX);
	assert_true(n > 0);
	for (size_t i = 0; i < n; i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		struct pk_manifest m = {0};
		struct pk_err err;
		char *buf;
		size_t len;
		assert_int_equal(
		    pk_manifest_read_file(path, PK_MANIFEST_MAX_BYTES, &buf, &len, &err), PK_OK);
		assert_int_equal(pk_manifest_parse_buffer(buf, len, path, NULL, &m, &err), PK_OK);
		free(buf);
		assert_int_equal(m.n, 1);
		const json_t *spec = json_object_get(m.docs[0].value, "spec");
		const char *group = json_string_value(json_object_get(spec, "group"));
		const char *kind =
		    json_string_value(json_object_get(json_object_get(spec, "names"), "kind"));
		const json_t *versions = json_object_get(spec, "versions");
		const struct pk_pool_kind *row = check_pool_row(spec, files[i]);
		if (row != NULL)
			has_crd[row - kinds] = true;
		assert_non_null(group);
		assert_non_null(kind);
		assert_true(json_array_size(versions) > 0);
		for (size_t v = 0; v < json_array_size(versions); v++) {
			const json_t *ver = json_array_get(versions, v);
			const char *name = json_string_value(json_object_get(ver, "name"));
			const struct pk_schema *s = pk_schema_find(group, name, kind);
			if (s == NULL)
				fail_msg("%s: %s %s has no schema in schema.c", files[i], kind,
				         name);
			assert_same_paths(
			    s, json_object_get(json_object_get(ver, "schema"), "openAPIV3Schema"));
		}
		pk_manifest_free(&m);
	}
	for (size_t k = 0; k < n_kinds; k++)
		if (!has_crd[k])
			fail_msg("%s: no CRD in %s", kinds[k].kind, dir);
}

/* Lint knows every pool kind of the table: its schema, apiVersion and name. */
static void test_every_pool_kind_known(void **state)
{
	(void)state;
	size_t n, nk, nv;
	const struct pk_pool_kind *k = pk_pool_kinds(&n);
	const char *const *kinds = pk_schema_kinds(&nk);
	const char *const *versions = pk_schema_api_versions(&nv);
	for (size_t i = 0; i < n; i++) {
		char api[320];
		bool kind_known = false, version_known = false;
		snprintf(api, sizeof(api), "%s/%s", k[i].group, k[i].version);
		for (size_t j = 0; j < nk; j++)
			kind_known = kind_known || !strcmp(kinds[j], k[i].kind);
		for (size_t j = 0; j < nv; j++)
			version_known = version_known || !strcmp(versions[j], api);
		if (pk_schema_find(k[i].group, k[i].version, k[i].kind) == NULL || !kind_known ||
		    !version_known)
			fail_msg("%s %s: not known to lint's schemas", api, k[i].kind);
	}
	/* and the Cluster API kinds, each once */
	assert_int_equal(nk, n + 2);
	assert_string_equal(kinds[nk - 2], PK_CLAIM_KIND);
	assert_string_equal(kinds[nk - 1], PK_ADDRESS_KIND);
}

/* The derivation itself: a property that appears or goes changes the list. */
static void test_paths_from_openapi(void **state)
{
	(void)state;
	json_t *schema =
	    json_pack("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s, s:{s:{s:s, s:{s:s}}, s:{s:s}}}}}", "type",
	              "object", "properties", "kind", "type", "string", "metadata", "type",
	              "object", "spec", "type", "object", "properties", "addresses", "type",
	              "array", "items", "type", "string", "prefix", "type", "integer");
	json_t *paths = json_array();
	assert_int_equal(pk_schema_paths_from_openapi(schema, paths), PK_OK);
	assert_int_equal(json_array_size(paths), 4);
	assert_string_equal(json_string_value(json_array_get(paths, 0)), "kind");
	assert_string_equal(json_string_value(json_array_get(paths, 1)), "metadata *");
	assert_string_equal(json_string_value(json_array_get(paths, 2)), "spec.addresses[]");
	assert_string_equal(json_string_value(json_array_get(paths, 3)), "spec.prefix");
	json_decref(paths);
	json_decref(schema);
}

static bool has(const struct pk_violations *v, const char *field, const char *text)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->items[i].field, field) && strstr(v->items[i].message, text) != NULL)
			return true;
	return false;
}

static void check(const char *group, const char *version, const char *kind, const char *json,
                  struct pk_violations *v)
{
	json_error_t je;
	json_t *obj = json_loads(json, 0, &je);
	assert_non_null(obj);
	const struct pk_schema *s = pk_schema_find(group, version, kind);
	assert_non_null(s);
	pk_violations_init(v);
	pk_schema_check(s, obj, v);
	json_decref(obj);
}

static void test_unknown_fields(void **state)
{
	(void)state;
	struct pk_violations *v = malloc(sizeof(*v));
	assert_non_null(v);
	/* the in-cluster provider README's spelling */
	check(PK_POOL_GROUP, PK_POOL_VERSION, PK_POOL_KIND,
	      "{\"apiVersion\":\"x\",\"kind\":\"IPPool\",\"metadata\":{\"name\":\"a\",\"x\":1},"
	      "\"spec\":{\"addresses\":[\"10.0.0.0/24\"],\"prefix\":24,\"excludeAddresses\":[]},"
	      "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"stauts\":\"True\"}]},"
	      "\"extra\":{\"deep\":1}}",
	      v);
	assert_int_equal(v->n, 4);
	assert_true(has(v, "metadata.x", "unknown field \"x\""));
	assert_true(has(v, "spec.excludeAddresses", "did you mean \"excludedAddresses\"?"));
	assert_true(has(v, "status.conditions[0].stauts", "did you mean \"status\"?"));
	assert_true(has(v, "extra", "unknown field \"extra\""));
	assert_false(has(v, "extra", "did you mean"));
	/* metadata's own fields, against ObjectMeta's, as the API server does */
	check(PK_POOL_GROUP, PK_POOL_VERSION, PK_GLOBAL_POOL_KIND,
	      "{\"metadata\":{\"name\":\"a\",\"labels\":{\"any\":\"x\"},\"namespce\":\"b\","
	      "\"ownerReferences\":[{\"kind\":\"A\",\"nmae\":\"b\"}]}}",
	      v);
	assert_int_equal(v->n, 2);
	assert_true(has(v, "metadata.namespce", "did you mean \"namespace\"?"));
	assert_true(has(v, "metadata.ownerReferences[0].nmae", "did you mean \"name\"?"));
	/* the CAPI kinds, per version: v1beta2 claims have no status.v1beta2 */
	check(PK_CAPI_IPAM_GROUP, PK_CAPI_V1BETA1, PK_CLAIM_KIND,
	      "{\"spec\":{\"clusterName\":\"c\",\"poolRef\":{\"apiGroup\":\"g\",\"kind\":\"k\","
	      "\"name\":\"n\",\"namespace\":\"x\"}},\"status\":{\"v1beta2\":{}}}",
	      v);
	assert_int_equal(v->n, 1);
	assert_true(has(v, "spec.poolRef.namespace", "unknown field"));
	check(PK_CAPI_IPAM_GROUP, PK_CAPI_V1BETA2, PK_CLAIM_KIND, "{\"status\":{\"v1beta2\":{}}}",
	      v);
	assert_int_equal(v->n, 1);
	check(PK_CAPI_IPAM_GROUP, PK_CAPI_V1BETA2, PK_ADDRESS_KIND,
	      "{\"spec\":{\"adress\":\"10.0.0.1\",\"claimRef\":{\"name\":\"c\"},\"prefix\":24}}",
	      v);
	assert_int_equal(v->n, 1);
	assert_true(has(v, "spec.adress", "did you mean \"address\"?"));
	/* v1alpha1: claims have no spec.clusterName; IPAddresses as later versions */
	check(PK_CAPI_IPAM_GROUP, PK_CAPI_V1ALPHA1, PK_CLAIM_KIND,
	      "{\"spec\":{\"clusterName\":\"c\",\"poolRef\":{\"kind\":\"k\",\"name\":\"n\"}},"
	      "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"severity\":\"Info\"}]}}",
	      v);
	assert_int_equal(v->n, 1);
	assert_true(has(v, "spec.clusterName", "unknown field"));
	check(PK_CAPI_IPAM_GROUP, PK_CAPI_V1ALPHA1, PK_ADDRESS_KIND,
	      "{\"spec\":{\"address\":\"10.0.0.1\",\"gatway\":\"10.0.0.1\",\"prefix\":24}}", v);
	assert_int_equal(v->n, 1);
	assert_true(has(v, "spec.gatway", "did you mean \"gateway\"?"));
	assert_null(pk_schema_find(PK_CAPI_IPAM_GROUP, "v1alpha2", PK_CLAIM_KIND));
	free(v);
}

static void test_closest(void **state)
{
	(void)state;
	static const char *const words[] = {"excludedAddresses", "addresses", "prefix"};
	assert_string_equal(pk_suggest_name("excludeAddresses", words, 3, 3), "excludedAddresses");
	assert_string_equal(pk_suggest_name("PREFIX", words, 3, 3), "prefix");
	assert_null(pk_suggest_name("zzz", words, 3, 3));
	assert_null(pk_suggest_name("ab", words, 3, 3)); /* no suggestion as long as the word */
	assert_int_equal(pk_edit_distance("kitten", 6, "sitting", 7), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tables_match_chart),
	    cmocka_unit_test(test_every_pool_kind_known),
	    cmocka_unit_test(test_paths_from_openapi),
	    cmocka_unit_test(test_unknown_fields),
	    cmocka_unit_test(test_closest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
