/* test_external_id.c - a backend's record ID on an IPAddress, as every part reads it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"
#include "external_id.h"

#include "expect_violations.h"

static json_t *with(const char *value_json)
{
	char text[512];
	snprintf(text, sizeof(text),
	         "{'metadata':{'name':'a','annotations':{'" PK_EXTERNAL_ID_ANNOTATION "':%s}}}",
	         value_json);
	return load_fixture(text, JSON_ALLOW_NUL);
}

static void test_read(void **state)
{
	(void)state;
	json_t *a = with("'rec-1'");
	assert_string_equal(pk_external_id(a), "rec-1");
	json_decref(a);
	/* not one poolkeeper could have written */
	static const char *const bad[] = {"''", "7", "null", "{}", "'rec\\u0000x'"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = with(bad[i]);
		if (pk_external_id(a) != NULL)
			fail_msg("%s read as an ID", bad[i]);
		json_decref(a);
	}
	char long_id[PK_EXTERNAL_ID_MAX + 8];
	memset(long_id, 'x', sizeof(long_id));
	long_id[0] = '\'';
	long_id[PK_EXTERNAL_ID_MAX + 1] = '\'';
	long_id[PK_EXTERNAL_ID_MAX + 2] = '\0';
	a = with(long_id); /* PK_EXTERNAL_ID_MAX characters: one too many */
	assert_null(pk_external_id(a));
	json_decref(a);
	long_id[PK_EXTERNAL_ID_MAX] = '\'';
	long_id[PK_EXTERNAL_ID_MAX + 1] = '\0';
	a = with(long_id);
	assert_non_null(pk_external_id(a));
	assert_int_equal(strlen(pk_external_id(a)), PK_EXTERNAL_ID_MAX - 1);
	json_decref(a);
	assert_null(pk_external_id(NULL));
	json_t *none = load_fixture("{'metadata':{'name':'a'}}", 0);
	assert_null(pk_external_id(none));
	json_decref(none);
}

static void test_same(void **state)
{
	(void)state;
	json_t *a = with("'rec-1'"), *b = with("'rec-1'"), *c = with("'rec-2'"),
	       *d = with("'rec-1\\u0000x'"), *e = with("7");
	json_t *none = load_fixture("{'metadata':{'name':'a'}}", 0);
	json_t *none2 = load_fixture("{'metadata':{'annotations':{'x':'y'}}}", 0);
	assert_true(pk_external_id_same(a, b));
	assert_true(pk_external_id_same(none, none2));
	assert_false(pk_external_id_same(a, c));
	assert_false(pk_external_id_same(a, d));
	assert_false(pk_external_id_same(a, e));
	assert_false(pk_external_id_same(a, none));
	assert_false(pk_external_id_same(none, a));
	json_t *all[] = {a, b, c, d, e, none, none2};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		json_decref(all[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read),
	    cmocka_unit_test(test_same),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
