/* test_kube_ratelimit.c - the client-side token bucket, on an injected clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube_ratelimit.h"

#define MS 1000000LL

static long long fake_now(void *ud)
{
	return *(long long *)ud;
}

static void test_burst_then_rate(void **state)
{
	(void)state;
	long long now = 1000 * MS;
	struct pk_kube_ratelimit *rl = pk_kube_ratelimit_new(20, 30, fake_now, &now);
	assert_non_null(rl);
	/* the bucket starts full: 30 requests go at once */
	for (int i = 0; i < 30; i++)
		assert_int_equal(pk_kube_ratelimit_reserve(rl), 0);
	/* then one every 50 ms, reservations queue up behind each other */
	assert_int_equal(pk_kube_ratelimit_reserve(rl), 50 * MS);
	assert_int_equal(pk_kube_ratelimit_reserve(rl), 100 * MS);
	assert_int_equal(pk_kube_ratelimit_reserve(rl), 150 * MS);
	/* 150 ms later the three reserved tokens have been paid for */
	now += 150 * MS;
	assert_int_equal(pk_kube_ratelimit_reserve(rl), 50 * MS);
	/* a long pause refills to the burst, not beyond */
	now += 60000 * MS;
	for (int i = 0; i < 30; i++)
		assert_int_equal(pk_kube_ratelimit_reserve(rl), 0);
	assert_true(pk_kube_ratelimit_reserve(rl) > 0);
	pk_kube_ratelimit_free(rl);
}

static void test_try(void **state)
{
	(void)state;
	long long now = 0;
	struct pk_kube_ratelimit *rl = pk_kube_ratelimit_new(2, 1, fake_now, &now);
	assert_true(pk_kube_ratelimit_try(rl));
	assert_false(pk_kube_ratelimit_try(rl));
	now += 499 * MS;
	assert_false(pk_kube_ratelimit_try(rl));
	now += 1 * MS;
	assert_true(pk_kube_ratelimit_try(rl));
	pk_kube_ratelimit_free(rl);
}

/* A caller with a deadline: a token it would wait past the deadline for is not taken, so
 * the callers behind it do not wait for a request that was never sent. */
static void test_reserve_within(void **state)
{
	(void)state;
	long long now = 0, wait = -1;
	struct pk_kube_ratelimit *rl = pk_kube_ratelimit_new(10, 1, fake_now, &now);
	assert_true(pk_kube_ratelimit_reserve_within(rl, 0, &wait));
	assert_int_equal(wait, 0);
	/* the next token is 100 ms away: refused within 99 ms, and nothing is taken */
	for (int i = 0; i < 5; i++) {
		assert_false(pk_kube_ratelimit_reserve_within(rl, 99 * MS, &wait));
		assert_int_equal(wait, 0);
	}
	assert_true(pk_kube_ratelimit_reserve_within(rl, 100 * MS, &wait));
	assert_int_equal(wait, 100 * MS);
	/* that reservation counts: the one after waits 200 ms */
	assert_false(pk_kube_ratelimit_reserve_within(rl, 199 * MS, &wait));
	assert_int_equal(pk_kube_ratelimit_reserve(rl), 200 * MS);
	pk_kube_ratelimit_free(rl);
	/* unlimited: always at once */
	rl = pk_kube_ratelimit_new(0, 1, fake_now, &now);
	assert_true(pk_kube_ratelimit_reserve_within(rl, 0, &wait));
	assert_int_equal(wait, 0);
	pk_kube_ratelimit_free(rl);
}

static void test_long_run_rate(void **state)
{
	(void)state;
	/* 1000 requests each sent as soon as allowed: the clock must advance
	 * (1000 - burst) / qps seconds, within rounding. */
	long long now = 0;
	struct pk_kube_ratelimit *rl = pk_kube_ratelimit_new(20, 30, fake_now, &now);
	for (int i = 0; i < 1000; i++)
		now += pk_kube_ratelimit_reserve(rl);
	long long want = (1000 - 30) * 50 * MS;
	assert_true(now >= want - MS && now <= want + MS);
	pk_kube_ratelimit_free(rl);
}

static void test_unlimited_and_tiny_burst(void **state)
{
	(void)state;
	long long now = 0;
	struct pk_kube_ratelimit *rl = pk_kube_ratelimit_new(-1, 0, fake_now, &now);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(pk_kube_ratelimit_reserve(rl), 0);
	pk_kube_ratelimit_free(rl);
	rl = pk_kube_ratelimit_new(10, 0, fake_now, &now); /* burst 0 is taken as 1 */
	assert_int_equal(pk_kube_ratelimit_reserve(rl), 0);
	assert_int_equal(pk_kube_ratelimit_reserve(rl), 100 * MS);
	pk_kube_ratelimit_free(rl);
	pk_kube_ratelimit_free(NULL);
	/* a clock that goes backwards does not mint tokens */
	now = 1000 * MS;
	rl = pk_kube_ratelimit_new(10, 1, fake_now, &now);
	assert_int_equal(pk_kube_ratelimit_reserve(rl), 0);
	now -= 500 * MS;
	assert_int_equal(pk_kube_ratelimit_reserve(rl), 100 * MS);
	pk_kube_ratelimit_free(rl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_burst_then_rate),          cmocka_unit_test(test_try),
	    cmocka_unit_test(test_reserve_within),           cmocka_unit_test(test_long_run_rate),
	    cmocka_unit_test(test_unlimited_and_tiny_burst),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
