/*
 * test_json.c - the typed getters answer NULL (false) for a missing member,
 * a level that is not an object and a value of another type; JSON strings
 * read as C strings: a string holding a NUL is invalid rather than shorter,
 * and the path of the first such string is found for reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "json.h"

static json_t *load(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_ALLOW_NUL | JSON_DECODE_ANY, &e);
	assert_non_null(v);
	return v;
}

static void test_cstr(void **state)
{
	(void)state;
	json_t *o = load("{\"ok\":\"pool-a\",\"nul\":\"pool-a\\u0000x\",\"end\":\"a\\u0000\","
	                 "\"empty\":\"\",\"num\":5}");
	assert_string_equal(pk_json_cstr_at(o, "ok"), "pool-a");
	assert_string_equal(pk_json_cstr_at(o, "empty"), "");
	/* never the shorter string */
	assert_null(pk_json_cstr_at(o, "nul"));
	assert_null(pk_json_cstr_at(o, "end"));
	assert_true(pk_json_has_nul(json_object_get(o, "nul")));
	assert_false(pk_json_has_nul(json_object_get(o, "ok")));
	/* not strings, missing members, not objects */
	assert_null(pk_json_cstr_at(o, "num"));
	assert_null(pk_json_cstr_at(o, "missing"));
	assert_null(pk_json_cstr_at(json_object_get(o, "ok"), "x"));
	assert_null(pk_json_cstr(NULL));
	assert_false(pk_json_has_nul(json_object_get(o, "num")));
	json_decref(o);
}

static void test_getters(void **state)
{
	(void)state;
	json_t *o = load("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\\u0000x\","
	                 "\"annotations\":{\"example.com/k\":\"v\",\"n\":null}},"
	                 "\"spec\":{\"items\":[1],\"count\":7,\"real\":1.5,\"big\":"
	                 "9223372036854775807}}");
	assert_string_equal(pk_json_meta_cstr(o, "name"), "a");
	assert_null(pk_json_meta_cstr(o, "namespace")); /* holds a NUL */
	assert_null(pk_json_meta_cstr(o, "uid"));
	assert_null(pk_json_meta_cstr(json_object_get(o, "spec"), "name"));
	assert_null(pk_json_meta_cstr(NULL, "name"));
	/* typed members: the value only when it has the type asked */
	json_t *spec = pk_json_obj_at(o, "spec");
	assert_non_null(spec);
	assert_null(pk_json_obj_at(spec, "items"));
	assert_null(pk_json_obj_at(NULL, "spec"));
	assert_ptr_equal(pk_json_arr_at(spec, "items"), json_object_get(spec, "items"));
	assert_null(pk_json_arr_at(spec, "count"));
	assert_null(pk_json_arr_at(o, "missing"));
	json_int_t n = -1;
	assert_true(pk_json_int_at(spec, "count", &n));
	assert_int_equal(n, 7);
	assert_true(pk_json_int_at(spec, "big", &n));
	assert_true(n == INT64_MAX);
	n = -1;
	assert_false(pk_json_int_at(spec, "real", &n));
	assert_false(pk_json_int_at(spec, "items", &n));
	assert_false(pk_json_int_at(spec, "missing", &n));
	assert_false(pk_json_int_at(NULL, "count", &n));
	assert_int_equal(n, -1); /* untouched when false */
	/* paths: any type at the end, NULL when a level is missing or not an object */
	assert_string_equal(pk_json_cstr_path(o, "metadata", "annotations", "example.com/k"), "v");
	assert_true(json_is_null(pk_json_path(o, "metadata", "annotations", "n")));
	assert_null(pk_json_path(o, "metadata", "annotations", "other"));
	assert_null(pk_json_path(o, "metadata", "name", "x")); /* a string on the way */
	assert_null(pk_json_path(o, "spec", "items", "0"));    /* an array on the way */
	assert_null(pk_json_path(NULL, "metadata"));
	assert_null(pk_json_cstr_path(o, "metadata", "namespace"));
	assert_ptr_equal(pk_json_path(o, "spec"), spec);
	json_decref(o);
}

static void test_nul_path(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		const char *path; /* NULL: none */
	} v[] = {
	    {"{\"metadata\":{\"name\":\"a\"}}", NULL},
	    {"\"x\\u0000\"", ""},
	    {"{\"metadata\":{\"annotations\":{\"example.com/note\":\"a\\u0000\"}}}",
	     "metadata.annotations[\"example.com/note\"]"},
	    {"{\"spec\":{\"addresses\":[\"10.0.0.1\",\"10.0.0.2\\u0000\"]}}", "spec.addresses[1]"},
	    {"{\"a\":[{\"b\":1},{\"c_d\":[\"\\u0000\"]}]}", "a[1].c_d[0]"},
	    {"[1,true,null,\"ok\"]", NULL},
	};
	char buf[128];
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		json_t *j = load(v[i].json);
		bool found = pk_json_nul_path(j, buf, sizeof(buf));
		assert_int_equal(found, v[i].path != NULL);
		assert_string_equal(buf, v[i].path ? v[i].path : "");
		json_decref(j);
	}
	/* a short buffer is cut, still terminated */
	json_t *j = load("{\"metadata\":{\"annotations\":{\"x\":\"\\u0000\"}}}");
	char small[8];
	assert_true(pk_json_nul_path(j, small, sizeof(small)));
	assert_string_equal(small, "metadat");
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cstr),
	    cmocka_unit_test(test_getters),
	    cmocka_unit_test(test_nul_path),
	};
	return cmocka_run_group_tests_name("pk", tests, NULL, NULL);
}
