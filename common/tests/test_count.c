/* test_count.c - exact counts up to 2^128 and their decimal text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "count.h"

static void test_format(void **state)
{
	(void)state;
	char b[PK_COUNT_STRLEN];
	assert_string_equal(pk_u128_format(0, b), "0");
	assert_string_equal(pk_u128_format(10, b), "10");
	assert_string_equal(pk_u128_format((pk_u128)1 << 64, b), "18446744073709551616");
	assert_string_equal(pk_u128_format(PK_U128_MAX, b),
	                    "340282366920938463463374607431768211455");
	struct pk_count all = pk_count_add(pk_count_of(PK_U128_MAX), pk_count_of(1));
	assert_int_equal(all.carry, 1);
	assert_string_equal(pk_count_format(all, b), "340282366920938463463374607431768211456");
}

static void test_arith(void **state)
{
	(void)state;
	char b[PK_COUNT_STRLEN];
	struct pk_count all = pk_count_add(pk_count_of(PK_U128_MAX), pk_count_of(1));
	/* saturates: no set of addresses is larger than 2^128 */
	struct pk_count more = pk_count_add(all, pk_count_of(5));
	assert_int_equal(pk_count_cmp(more, all), 0);
	struct pk_count less = pk_count_sub(all, pk_count_of(1));
	assert_int_equal(less.carry, 0);
	assert_true(less.lo == PK_U128_MAX);
	assert_string_equal(pk_count_format(pk_count_sub(all, pk_count_of(2)), b),
	                    "340282366920938463463374607431768211454");
	assert_int_equal(pk_count_sub(pk_count_of(3), pk_count_of(5)).lo, 0);
	assert_int_equal(pk_count_cmp(pk_count_of(3), pk_count_of(5)), -1);
	assert_int_equal(pk_count_cmp(all, pk_count_of(PK_U128_MAX)), 1);
	assert_string_equal(pk_count_format(pk_count_sub(all, all), b), "0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_arith),
	};
	return cmocka_run_group_tests_name("count", tests, NULL, NULL);
}
