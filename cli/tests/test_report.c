/* test_report.c - the text and JSON forms of a lint run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report.h"

static const char pools[] = "apiVersion: " PK_POOL_API_VERSION "\n"
                            "kind: " PK_POOL_KIND "\n"
                            "metadata: {name: good, namespace: ns1}\n"
                            "spec: {addresses: [10.0.0.0/30], prefix: 30}\n"
                            "---\n"
                            "apiVersion: " PK_POOL_API_VERSION "\n"
                            "kind: " PK_POOL_KIND "\n"
                            "metadata: {name: bad, namespace: ns1}\n"
                            "spec: {addresses: [10.0.1.1/24], prefix: 24}\n"
                            "---\n"
                            "apiVersion: v1\n"
                            "kind: ConfigMap\n"
                            "metadata: {name: cm}\n";

static struct pk_lint *make_lint(void)
{
	struct pk_lint *l = pk_lint_new();
	assert_non_null(l);
	assert_int_equal(pk_lint_add_buffer(l, pools, strlen(pools), "p.yaml"), PK_OK);
	assert_int_equal(pk_lint_add_buffer(l, "a: [", 4, "broken.yaml"), PK_OK);
	assert_int_equal(pk_lint_run(l), PK_OK);
	return l;
}

static char *text_of(const struct pk_lint *l, bool verbose)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	pk_report_write_text(f, l, verbose, false);
	fclose(f);
	return text;
}

static void test_text(void **state)
{
	(void)state;
	struct pk_lint *l = make_lint();
	char *t = text_of(l, false);
	assert_non_null(strstr(t, "p.yaml:1 (document 1): IPPool ns1/good: ok: IPv4 10.0.0.0/30, "
	                          "2 usable, 10.0.0.1 to 10.0.0.2\n"));
	assert_non_null(strstr(t, "p.yaml:6 (document 2): IPPool ns1/bad: denied\n"
	                          "    deny spec.addresses[0]: "));
	assert_null(strstr(t, "ConfigMap"));
	assert_non_null(strstr(t, "broken.yaml:"));
	assert_non_null(strstr(t, "summary: 3 objects in 2 files: 1 passed, 0 with warnings, "
	                          "1 denied, 1 skipped (-v lists them); 1 file did not load\n"));
	free(t);

	t = text_of(l, true);
	assert_non_null(strstr(t, "p.yaml:11 (document 3): ConfigMap cm: skipped (not an IPAM "
	                          "kind)\n"));
	assert_null(strstr(t, "-v lists them"));
	free(t);
	pk_lint_free(l);
}

static void test_json(void **state)
{
	(void)state;
	struct pk_lint *l = make_lint();
	json_t *j = pk_report_to_json(l, false);
	assert_non_null(j);
	json_t *objects = json_object_get(j, "objects");
	assert_int_equal(json_array_size(objects), 3);
	json_t *good = json_array_get(objects, 0);
	assert_string_equal(json_string_value(json_object_get(good, "status")), "pass");
	assert_string_equal(json_string_value(json_object_get(good, "namespace")), "ns1");
	json_t *pool = json_object_get(good, "pool");
	assert_string_equal(json_string_value(json_object_get(pool, "usable")), "2");
	assert_string_equal(json_string_value(json_object_get(pool, "family")), "IPv4");
	json_t *bad = json_array_get(objects, 1);
	assert_string_equal(json_string_value(json_object_get(bad, "status")), "deny");
	json_t *v0 = json_array_get(json_object_get(bad, "violations"), 0);
	assert_string_equal(json_string_value(json_object_get(v0, "severity")), "deny");
	assert_string_equal(json_string_value(json_object_get(v0, "field")), "spec.addresses[0]");
	assert_null(json_object_get(bad, "pool"));
	json_t *cm = json_array_get(objects, 2);
	assert_string_equal(json_string_value(json_object_get(cm, "status")), "skipped");
	assert_null(json_object_get(cm, "violations"));
	json_t *problems = json_object_get(j, "problems");
	assert_int_equal(json_array_size(problems), 1);
	assert_false(json_is_true(json_object_get(json_array_get(problems, 0), "unreadable")));
	json_t *totals = json_object_get(j, "totals");
	assert_int_equal(json_integer_value(json_object_get(totals, "denied")), 1);
	assert_int_equal(json_integer_value(json_object_get(totals, "unloadable")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "exitCode")), 1);
	json_decref(j);

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(pk_report_write_json(f, l, true), PK_OK);
	fclose(f);
	json_error_t je;
	json_t *back = json_loads(text, 0, &je);
	assert_non_null(back);
	assert_true(json_is_true(json_object_get(back, "strict")));
	json_decref(back);
	free(text);
	pk_lint_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text),
	    cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
