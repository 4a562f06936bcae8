/* test_report.c - the text, JSON, GitHub, JUnit and SARIF forms of a lint run. */
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

enum form { TEXT, TEXT_VERBOSE, GITHUB, JUNIT, SARIF };

static char *text_of(const struct pk_lint *l, enum form form)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	if (form == GITHUB)
		pk_report_write_github(f, l, false);
	else if (form == JUNIT)
		pk_report_write_junit(f, l, false);
	else if (form == SARIF)
		assert_int_equal(pk_report_write_sarif(f, l), PK_OK);
	else
		pk_report_write_text(f, l, form == TEXT_VERBOSE, false);
	fclose(f);
	return text;
}

static void test_text(void **state)
{
	(void)state;
	struct pk_lint *l = make_lint();
	char *t = text_of(l, TEXT);
	assert_null(strstr(t, "IPPool ns1/good"));
	assert_non_null(strstr(t, "p.yaml:9:20: error: IPPool ns1/bad: spec.addresses[0]: "));
	assert_non_null(strstr(t, "[pool/spec.addresses]\n"));
	assert_null(strstr(t, "ConfigMap"));
	assert_non_null(strstr(t, "broken.yaml:2:1: error: did not find"));
	assert_non_null(strstr(t, "summary: 3 objects in 2 files: 1 passed, 0 with warnings, "
	                          "1 denied, 1 skipped (not kinds lint checks) (-v lists them); 1 "
	                          "file did not load\n"));
	free(t);

	t = text_of(l, TEXT_VERBOSE);
	assert_non_null(strstr(t, "p.yaml:1:1: ok: IPPool ns1/good: IPv4 10.0.0.0/30, 2 usable, "
	                          "10.0.0.1 to 10.0.0.2\n"));
	assert_non_null(strstr(t, "p.yaml:11:1: skipped: ConfigMap cm: not an IPAM kind\n"));
	assert_null(strstr(t, "IPPool ns1/bad: IPv4"));
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
	assert_string_equal(json_string_value(json_object_get(v0, "severity")), "error");
	assert_string_equal(json_string_value(json_object_get(v0, "field")), "spec.addresses[0]");
	assert_string_equal(json_string_value(json_object_get(v0, "rule")), "pool/spec.addresses");
	/* the field's own line and column, not the object's */
	assert_int_equal(json_integer_value(json_object_get(v0, "line")), 9);
	assert_int_equal(json_integer_value(json_object_get(v0, "column")), 20);
	assert_null(json_object_get(bad, "pool"));
	json_t *cm = json_array_get(objects, 2);
	assert_string_equal(json_string_value(json_object_get(cm, "status")), "skipped");
	assert_null(json_object_get(cm, "violations"));
	json_t *problems = json_object_get(j, "problems");
	assert_int_equal(json_array_size(problems), 1);
	assert_false(json_is_true(json_object_get(json_array_get(problems, 0), "unreadable")));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(problems, 0), "line")),
	                 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(problems, 0), "column")),
	                 1);
	json_t *totals = json_object_get(j, "totals");
	assert_int_equal(json_integer_value(json_object_get(totals, "denied")), 1);
	assert_int_equal(json_integer_value(json_object_get(totals, "unloadable")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "exitCode")), 2);
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
	assert_true(json_is_true(json_object_get(back, "failOnWarning")));
	json_decref(back);
	free(text);
	pk_lint_free(l);
}

static void test_github(void **state)
{
	(void)state;
	struct pk_lint *l = make_lint();
	char *t = text_of(l, GITHUB);
	assert_non_null(
	    strstr(t, "::error file=p.yaml,line=9,col=20,title=pool/spec.addresses::IPPool "
	              "ns1/bad: spec.addresses[0]: "));
	assert_non_null(
	    strstr(t, "::error file=broken.yaml,line=2,col=1,title=load::did not find"));
	assert_null(strstr(t, "good"));
	free(t);
	pk_lint_free(l);
}

static void test_junit(void **state)
{
	(void)state;
	struct pk_lint *l = make_lint();
	char *t = text_of(l, JUNIT);
	assert_non_null(strstr(t, "<testsuites name=\"poolkeeper lint\" tests=\"4\" failures=\"1\" "
	                          "errors=\"1\">"));
	assert_non_null(strstr(t, "<testcase classname=\"p.yaml\" name=\"IPPool ns1/good\">\n    "
	                          "</testcase>"));
	assert_non_null(
	    strstr(t, "<failure type=\"pool/spec.addresses\" message=\"spec.addresses[0]: "));
	assert_non_null(strstr(t, "<skipped message=\"not an IPAM kind\"/>"));
	assert_non_null(strstr(t, "<error type=\"load\""));
	free(t);
	pk_lint_free(l);
}

static void test_sarif(void **state)
{
	(void)state;
	struct pk_lint *l = make_lint();
	char *t = text_of(l, SARIF);
	json_error_t je;
	json_t *j = json_loads(t, 0, &je);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "version")), "2.1.0");
	json_t *run = json_array_get(json_object_get(j, "runs"), 0);
	json_t *rules =
	    json_object_get(json_object_get(json_object_get(run, "tool"), "driver"), "rules");
	assert_int_equal(json_array_size(rules), 2); /* pool/spec.addresses, load */
	json_t *r0 = json_array_get(json_object_get(run, "results"), 0);
	assert_string_equal(json_string_value(json_object_get(r0, "ruleId")),
	                    "pool/spec.addresses");
	assert_string_equal(json_string_value(json_object_get(r0, "level")), "error");
	json_t *loc = json_object_get(json_array_get(json_object_get(r0, "locations"), 0),
	                              "physicalLocation");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(loc, "artifactLocation"), "uri")),
	    "p.yaml");
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(loc, "region"), "startLine")), 9);
	json_decref(j);
	free(t);
	pk_lint_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text),   cmocka_unit_test(test_json),
	    cmocka_unit_test(test_github), cmocka_unit_test(test_junit),
	    cmocka_unit_test(test_sarif),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
