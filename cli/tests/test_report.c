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
	static const char *const names[] = {
	    [GITHUB] = "github", [JUNIT] = "junit", [SARIF] = "sarif"};
	const struct pk_report_ci c = {.command = "lint"};
	if (form == GITHUB || form == JUNIT || form == SARIF)
		assert_int_equal(pk_report_ci_write(f, names[form], l, &c), PK_OK);
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

/* Runs `call` with f writing to memory; `out` gets the text, which the caller frees. */
#define CAPTURE(out, call)                               \
	do {                                             \
		size_t len_ = 0;                         \
		FILE *f = open_memstream(&(out), &len_); \
		assert_non_null(f);                      \
		call;                                    \
		fclose(f);                               \
	} while (0)

static void test_uri(void **state)
{
	(void)state;
	static const char *const vectors[][2] = {
	    {"sp ace#.yaml", "sp%20ace%23.yaml"},
	    {"dir/a-b_c.d~e.yaml", "dir/a-b_c.d~e.yaml"},
	    {"100%.yaml", "100%25.yaml"},
	    {"q?x=1&y", "q%3Fx%3D1%26y"},
	    {"cluster:IPPool/ns/a", "cluster%3AIPPool/ns/a"},
	    {"\xc3\xa9t\xc3\xa9.yaml", "%C3%A9t%C3%A9.yaml"},
	    {"a\\b[1]", "a%5Cb%5B1%5D"},
	    {"", ""},
	};
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		char *u = pk_report_uri(vectors[i][0]);
		assert_non_null(u);
		assert_string_equal(u, vectors[i][1]);
		free(u);
	}
}

/* A file's name is an artifact URI reference: percent-encoded. */
static void test_sarif_uri(void **state)
{
	(void)state;
	struct pk_lint *l = pk_lint_new();
	assert_non_null(l);
	assert_int_equal(pk_lint_add_buffer(l, pools, strlen(pools), "sp ace#.yaml"), PK_OK);
	assert_int_equal(pk_lint_run(l), PK_OK);
	char *t = text_of(l, SARIF);
	assert_non_null(strstr(t, "\"uri\": \"sp%20ace%23.yaml\""));
	assert_null(strstr(t, "sp ace#"));
	free(t);
	pk_lint_free(l);
}

/* The CI forms by name; another name writes nothing and says so. */
static void test_ci_write_names(void **state)
{
	(void)state;
	struct pk_lint *l = make_lint();
	const struct pk_report_ci c = {.command = "lint"};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(pk_report_ci_write(f, "yaml", l, &c), PK_ERR_INVALID);
	assert_int_equal(pk_report_ci_write(f, "text", l, &c), PK_ERR_INVALID);
	fclose(f);
	assert_int_equal(len, 0);
	free(text);
	pk_lint_free(l);
}

/* Live findings, as audit hands them to the CI writers. */
static const struct pk_report_extra live[] = {
    {"cluster:IPAddress/ns/a", "IPAddress ns/a", "spec.address", "address-held-twice",
     "a <b> & \"c\"\n\td\r", PK_SEV_DENY},
    {"cluster:IPAddress/ns/b", "IPAddress ns/b", "f", "r2",
     "bad \x01 byte \xff \xc3\xa9 \xed\xa0\x80", PK_SEV_WARN},
    {"cluster:IPAddress/ns/a", "IPAddress ns/a", "g", "r3", "w", PK_SEV_WARN},
};

/* JUnit from extra findings alone, byte for byte: attributes keep newlines, tabs and
 * carriage returns as references, content keeps newlines and tabs, bytes XML does not
 * take are "?", one <system-out> per testcase, a testcase per origin. */
static void test_junit_bytes(void **state)
{
	(void)state;
	struct pk_lint *l = pk_lint_new();
	assert_non_null(l);
	assert_int_equal(pk_lint_run(l), PK_OK);
	const struct pk_report_ci c = {"audit", false, live, 3, true};
	char *t = NULL;
	int rc = PK_ERR_INVALID;
	CAPTURE(t, rc = pk_report_ci_junit(f, l, &c));
	assert_int_equal(rc, PK_OK);
	assert_string_equal(
	    t, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	       "<testsuites name=\"poolkeeper audit\" tests=\"2\" failures=\"1\" errors=\"0\">\n"
	       "  <testsuite name=\"poolkeeper audit\" tests=\"2\" failures=\"1\" errors=\"0\" "
	       "skipped=\"0\">\n"
	       "    <testcase classname=\"cluster:IPAddress/ns/a\" name=\"IPAddress ns/a\">\n"
	       "      <failure type=\"address-held-twice\" message=\"spec.address: a &lt;b&gt; "
	       "&amp; &quot;c&quot;&#10;&#9;d&#13;\">cluster:IPAddress/ns/a: error: "
	       "spec.address: a &lt;b&gt; &amp; &quot;c&quot;\n\td&#13; "
	       "[address-held-twice]</failure>\n"
	       "      <system-out>cluster:IPAddress/ns/a: warning: g: w [r3]</system-out>\n"
	       "    </testcase>\n"
	       "    <testcase classname=\"cluster:IPAddress/ns/b\" name=\"IPAddress ns/b\">\n"
	       "      <system-out>cluster:IPAddress/ns/b: warning: f: bad ? byte ? \xc3\xa9 ??? "
	       "[r2]</system-out>\n"
	       "    </testcase>\n"
	       "  </testsuite>\n"
	       "</testsuites>\n");
	free(t);

	/* With --fail-on=warning every finding is a failure and nothing is left for
	 * <system-out>. */
	const struct pk_report_ci cw = {"audit", true, live, 3, true};
	CAPTURE(t, rc = pk_report_ci_junit(f, l, &cw));
	assert_int_equal(rc, PK_OK);
	assert_non_null(strstr(t, "tests=\"2\" failures=\"2\" errors=\"0\">"));
	assert_null(strstr(t, "system-out"));
	assert_non_null(strstr(t, "<failure type=\"r3\" message=\"g: w\">"));
	free(t);
	pk_lint_free(l);
}

/* Extra findings join the testcase of the object at their origin, warnings in one
 * <system-out>; the counts cover them. */
static void test_junit_extras_join(void **state)
{
	(void)state;
	struct pk_lint *l = make_lint();
	const struct pk_report_extra x[] = {
	    {"p.yaml", "IPPool ns1/good", "spec.a", "x-deny", "one\ntwo", PK_SEV_DENY},
	    {"p.yaml", "IPPool ns1/good", "spec.b", "x-warn", "tab\there", PK_SEV_WARN},
	    {"p.yaml", "IPPool ns1/good", "spec.c", "x-warn", "cr\r", PK_SEV_WARN},
	};
	const struct pk_report_ci c = {"audit", false, x, 3, true};
	char *t = NULL;
	int rc = PK_ERR_INVALID;
	CAPTURE(t, rc = pk_report_ci_junit(f, l, &c));
	assert_int_equal(rc, PK_OK);
	assert_non_null(strstr(t, "<testsuites name=\"poolkeeper audit\" tests=\"4\" "
	                          "failures=\"2\" errors=\"1\">"));
	assert_non_null(strstr(
	    t, "    <testcase classname=\"p.yaml\" name=\"IPPool ns1/good\">\n"
	       "      <failure type=\"x-deny\" message=\"spec.a: one&#10;two\">p.yaml: error: "
	       "spec.a: one\ntwo [x-deny]</failure>\n"
	       "      <system-out>p.yaml: warning: spec.b: tab\there [x-warn]\n"
	       "p.yaml: warning: spec.c: cr&#13; [x-warn]</system-out>\n"
	       "    </testcase>\n"));
	/* one <system-out> in all: only the good pool has findings that pass */
	const char *first = strstr(t, "<system-out>");
	assert_non_null(first);
	assert_null(strstr(first + 1, "<system-out>"));
	free(t);
	pk_lint_free(l);
}

/* GitHub and SARIF place a live finding at its origin, with no line or column. */
static void test_ci_extras(void **state)
{
	(void)state;
	struct pk_lint *l = pk_lint_new();
	assert_non_null(l);
	assert_int_equal(pk_lint_run(l), PK_OK);
	const struct pk_report_ci c = {"audit", false, live, 3, true};
	char *t = NULL;
	CAPTURE(t, pk_report_ci_github(f, l, &c));
	assert_non_null(strstr(t, "::error file=cluster%3AIPAddress/ns/a,title=address-held-twice::"
	                          "IPAddress ns/a: spec.address: a <b> & \"c\"%0A\td%0D\n"));
	assert_non_null(strstr(t, "::warning file=cluster%3AIPAddress/ns/a,title=r3::IPAddress "
	                          "ns/a: g: w\n"));
	assert_null(strstr(t, "line="));
	assert_non_null(strstr(t, "poolkeeper audit: 0 objects, 0 denied, 0 with warnings, 0 "
	                          "skipped; 3 live findings\n"));
	free(t);
	const struct pk_report_ci cw = {"audit", true, live, 3, true};
	CAPTURE(t, pk_report_ci_github(f, l, &cw));
	assert_non_null(strstr(t, "; 3 live findings (warnings fail)\n"));
	free(t);

	/* the same findings, but for the invalid UTF-8 (which JSON cannot carry) */
	const struct pk_report_ci cs = {"audit", false, live, 1, true};
	int rc = PK_ERR_INVALID;
	CAPTURE(t, rc = pk_report_ci_sarif(f, l, &cs));
	assert_int_equal(rc, PK_OK);
	json_error_t je;
	json_t *j = json_loads(t, 0, &je);
	assert_non_null(j);
	json_t *run = json_array_get(json_object_get(j, "runs"), 0);
	json_t *r0 = json_array_get(json_object_get(run, "results"), 0);
	assert_string_equal(json_string_value(json_object_get(r0, "ruleId")), "address-held-twice");
	json_t *loc = json_array_get(json_object_get(r0, "locations"), 0);
	json_t *phys = json_object_get(loc, "physicalLocation");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(phys, "artifactLocation"), "uri")),
	    "cluster%3AIPAddress/ns/a");
	/* no place but line 1, which GitHub code scanning needs, and no column */
	json_t *region = json_object_get(phys, "region");
	assert_int_equal(json_integer_value(json_object_get(region, "startLine")), 1);
	assert_null(json_object_get(region, "startColumn"));
	assert_string_equal(
	    json_string_value(json_object_get(
	        json_array_get(json_object_get(loc, "logicalLocations"), 0), "fullyQualifiedName")),
	    "IPAddress ns/a: spec.address");
	json_decref(j);
	free(t);
	pk_lint_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text),        cmocka_unit_test(test_json),
	    cmocka_unit_test(test_github),      cmocka_unit_test(test_junit),
	    cmocka_unit_test(test_sarif),       cmocka_unit_test(test_uri),
	    cmocka_unit_test(test_sarif_uri),   cmocka_unit_test(test_ci_write_names),
	    cmocka_unit_test(test_junit_bytes), cmocka_unit_test(test_junit_extras_join),
	    cmocka_unit_test(test_ci_extras),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
