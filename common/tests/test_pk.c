/*
 * test_pk.c - return codes: every code has its own text (a cap hit reads
 * "too big", not "out of memory"), the codes are distinct, and pk_err_set
 * formats and returns the code it was given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pk.h"

static void test_rc_texts(void **state)
{
	(void)state;
	static const struct {
		int rc;
		const char *text;
	} v[] = {
	    {PK_OK, "ok"},
	    {PK_ERR_INVALID, "invalid"},
	    {PK_ERR_NOMEM, "out of memory"},
	    {PK_ERR_EXHAUSTED, "exhausted"},
	    {PK_ERR_IN_USE, "in use"},
	    {PK_ERR_NOT_HELD, "not held"},
	    {PK_ERR_OUT_OF_RANGE, "out of range"},
	    {PK_ERR_QUARANTINED, "quarantined"},
	    {PK_ERR_TOO_BIG, "too big"},
	    {PK_ERR_API, "API request failed"},
	    {PK_ERR_IO, "I/O error"},
	    {PK_ERR_TIMEOUT, "timed out"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		assert_string_equal(pk_rc_name(v[i].rc), v[i].text);
		for (size_t j = 0; j < i; j++)
			assert_int_not_equal(v[i].rc, v[j].rc);
	}
	assert_string_equal(pk_rc_name(1), "unknown");
	assert_string_equal(pk_rc_name(-100), "unknown");
}

/* The new codes are failures a caller can tell apart from running out of memory. */
static void test_too_big_and_api(void **state)
{
	(void)state;
	assert_true(PK_ERR_TOO_BIG < 0);
	assert_true(PK_ERR_API < 0);
	assert_int_not_equal(PK_ERR_TOO_BIG, PK_ERR_NOMEM);
	assert_int_not_equal(PK_ERR_API, PK_ERR_INVALID);
	struct pk_err err;
	assert_int_equal(pk_err_set(&err, PK_ERR_TOO_BIG, "%d bytes over a cap of %d", 9, 8),
	                 PK_ERR_TOO_BIG);
	assert_string_equal(err.msg, "9 bytes over a cap of 8");
	assert_int_equal(pk_err_set(NULL, PK_ERR_API, "ignored"), PK_ERR_API);
}

static void test_text_quote(void **state)
{
	(void)state;
	char buf[300];
	pk_text_quote("a\"b\\c\n", 6, buf, sizeof(buf));
	assert_string_equal(buf, "a\\x22b\\x5cc\\x0a");
	char long_text[100];
	memset(long_text, 'x', sizeof(long_text));
	pk_text_quote(long_text, sizeof(long_text), buf, sizeof(buf));
	assert_int_equal(strlen(buf), 64 + 3);
	assert_string_equal(buf + 64, "...");
	char small[6];
	pk_text_quote("abcdefgh", 8, small, sizeof(small));
	assert_string_equal(small, "a"); /* room left for a whole escape only */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rc_texts),
	    cmocka_unit_test(test_too_big_and_api),
	    cmocka_unit_test(test_text_quote),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
