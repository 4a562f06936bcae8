/* test_violation.c - the violation list and the text every binary prints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "violation.h"

static void test_add_count_text(void **state)
{
	(void)state;
	struct pk_violations v;
	char buf[1024];

	pk_violations_init(&v);
	assert_int_equal(v.n, 0);
	pk_violations_add(&v, PK_SEV_DENY, "spec.prefix", "must be an integer 0..32, got \"%s\"",
	                  "24");
	pk_violations_add(&v, PK_SEV_WARN, "spec.clusterName", "empty; the label is deprecated");
	pk_violations_add(&v, PK_SEV_DENY, "", "no field");
	assert_int_equal(pk_violations_count(&v, PK_SEV_DENY), 2);
	assert_int_equal(pk_violations_count(&v, PK_SEV_WARN), 1);
	assert_string_equal(pk_violation_text(&v.items[0], buf, sizeof(buf)),
	                    "spec.prefix: must be an integer 0..32, got \"24\"");
	/* Without a field the message stands alone, with no leading ": ". */
	assert_string_equal(pk_violation_text(&v.items[2], buf, sizeof(buf)), "no field");
	assert_string_equal(pk_violations_join(&v, PK_SEV_DENY, buf, sizeof(buf)),
	                    "spec.prefix: must be an integer 0..32, got \"24\"; no field");
	assert_string_equal(pk_violations_join(&v, PK_SEV_WARN, buf, sizeof(buf)),
	                    "spec.clusterName: empty; the label is deprecated");
}

static void test_join_empty_and_small_buffers(void **state)
{
	(void)state;
	struct pk_violations v;
	char buf[16];

	pk_violations_init(&v);
	assert_string_equal(pk_violations_join(&v, PK_SEV_DENY, buf, sizeof(buf)), "");
	pk_violations_add(&v, PK_SEV_DENY, "spec.addresses", "a long message that will be cut");
	pk_violations_join(&v, PK_SEV_DENY, buf, sizeof(buf));
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
	assert_memory_equal(buf, "spec.addresses:", 15);
	pk_violation_text(&v.items[0], buf, sizeof(buf));
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
	/* A zero-length buffer is left alone. */
	buf[0] = 'x';
	pk_violations_join(&v, PK_SEV_DENY, buf, 0);
	assert_int_equal(buf[0], 'x');
}

static void test_overflow_is_counted(void **state)
{
	(void)state;
	struct pk_violations v;
	char buf[8192];

	pk_violations_init(&v);
	for (int i = 0; i < PK_VIOLATIONS_MAX + 5; i++)
		pk_violations_add(&v, PK_SEV_DENY, "spec.addresses", "entry %d", i);
	assert_int_equal(v.n, PK_VIOLATIONS_MAX);
	assert_int_equal(v.dropped, 5);
	pk_violations_join(&v, PK_SEV_DENY, buf, sizeof(buf));
	assert_non_null(strstr(buf, "spec.addresses: entry 31; and 5 more"));
	assert_null(strstr(buf, "entry 32"));
}

static void test_truncation_keeps_utf8_valid(void **state)
{
	(void)state;
	struct pk_violations v;
	char field[PK_FIELD_MAX + 8];

	/* A field of 158 ASCII bytes and a 3-byte character: the character does not fit. */
	memset(field, 'a', PK_FIELD_MAX - 2);
	memcpy(field + PK_FIELD_MAX - 2, "\xe2\x82\xac", 4);
	pk_violations_init(&v);
	pk_violations_add(&v, PK_SEV_DENY, field, "%s", "x");
	assert_int_equal(strlen(v.items[0].field), PK_FIELD_MAX - 2);

	/* A character that fits whole is kept. */
	memcpy(field + PK_FIELD_MAX - 5, "\xe2\x82\xac", 4);
	pk_violations_add(&v, PK_SEV_DENY, field, "%s", "x");
	assert_int_equal(strlen(v.items[1].field), PK_FIELD_MAX - 2);
	assert_memory_equal(v.items[1].field + PK_FIELD_MAX - 5, "\xe2\x82\xac", 3);

	/* A long message is cut to the buffer, not past it. */
	char msg[PK_MESSAGE_MAX * 2];
	memset(msg, 'm', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	pk_violations_add(&v, PK_SEV_WARN, NULL, "%s", msg);
	assert_int_equal(strlen(v.items[2].message), PK_MESSAGE_MAX - 1);
	assert_string_equal(v.items[2].field, "");
}

static void test_describe_value(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		bool with_type;
		const char *want;
	} cases[] = {
	    {"\"24\"", true, "\"24\" (a string)"},
	    {"\"24\"", false, "\"24\""},
	    {"24", true, "24 (a number)"},
	    {"-5", false, "-5"},
	    {"24.0", true, "24.0 (a number)"},
	    {"24.5", false, "24.5"},
	    {"true", true, "true (a boolean)"},
	    {"false", false, "false"},
	    {"null", true, "null"},
	    {"{\"a\":1}", true, "an object"},
	    {"[1,2]", true, "an array"},
	    /* Quotes, backslashes and control bytes are escaped, never passed on raw. */
	    {"\"a\\\"b\\\\c\\n\"", false, "\"a\\x22b\\x5cc\\x0a\""},
	    /* Non-ASCII is escaped too, so a message is always plain ASCII. */
	    {"\"\\u00e9\"", false, "\"\\xc3\\xa9\""},
	};
	char buf[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_error_t e;
		json_t *j = json_loads(cases[i].json, JSON_DECODE_ANY, &e);
		assert_non_null(j);
		assert_string_equal(
		    pk_violation_describe_value(j, cases[i].with_type, buf, sizeof(buf)),
		    cases[i].want);
		json_decref(j);
	}
	assert_string_equal(pk_violation_describe_value(NULL, true, buf, sizeof(buf)), "nothing");

	/* Long strings are cut at 64 bytes with "...". */
	char longtext[300] = "\"";
	memset(longtext + 1, 'x', 200);
	memcpy(longtext + 201, "\"", 2);
	json_t *j = json_loads(longtext, JSON_DECODE_ANY, NULL);
	assert_non_null(j);
	pk_violation_describe_value(j, false, buf, sizeof(buf));
	assert_int_equal(strlen(buf), 1 + 64 + 3 + 1);
	assert_non_null(strstr(buf, "...\""));
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_add_count_text),
	    cmocka_unit_test(test_join_empty_and_small_buffers),
	    cmocka_unit_test(test_overflow_is_counted),
	    cmocka_unit_test(test_truncation_keeps_utf8_valid),
	    cmocka_unit_test(test_describe_value),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
