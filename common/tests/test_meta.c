/* test_meta.c - metav1 times and status conditions (common/base/meta.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "meta.h"

static void test_time_round_trip(void **state)
{
	(void)state;
	char b[PK_TIME_TEXT_MAX];
	pk_meta_time_text(1767225600, b); /* 2026-01-01 */
	assert_string_equal(b, "2026-01-01T00:00:00Z");
	long long t = 0;
	assert_int_equal(pk_meta_time_parse(b, &t), PK_OK);
	assert_true(t == 1767225600);
	assert_int_equal(pk_meta_time_parse("2026-02-28T23:59:59Z", &t), PK_OK);
	assert_true(t == 1772323199);
}

static void test_time_refused(void **state)
{
	(void)state;
	long long t = 7;
	static const char *const bad[] = {
	    "2026-01-01T00:00:00",      "2026-01-01T00:00:00+01:00", "2026-13-01T00:00:00Z",
	    "2026-01-01T24:00:00Z",     "1969-12-31T23:59:59Z",      "2026-01-01 00:00:00Z",
	    "2026-01-01T00:00:00.123Z", "2026-0a-01T00:00:00Z",      "",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(pk_meta_time_parse(bad[i], &t), PK_ERR_INVALID);
	assert_int_equal(pk_meta_time_parse(NULL, &t), PK_ERR_INVALID);
	assert_true(t == 7);
}

static void test_condition(void **state)
{
	(void)state;
	json_t *c = json_pack("[{s:s, s:s}, {s:s, s:s}, {s:i}]", "type", "Allocated", "status",
	                      "True", "type", "Ready", "status", "False", "type", 3);
	const json_t *r = pk_meta_condition(c, "Ready");
	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(r, "status")), "False");
	assert_null(pk_meta_condition(c, "Paused"));
	assert_null(pk_meta_condition(NULL, "Ready"));
	json_t *notarray = json_pack("{s:s}", "type", "Ready");
	assert_null(pk_meta_condition(notarray, "Ready"));
	json_decref(notarray);
	json_decref(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_time_round_trip),
	    cmocka_unit_test(test_time_refused),
	    cmocka_unit_test(test_condition),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
