/*
 * test_expect.c - own-write expectations: a pass waits while the cache
 * holds an older version than the controller wrote, goes ahead once the
 * informer stored it (or the cache shows it), and never waits longer than
 * PK_EXPECT_MS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "expect.h"
#include "json_fixture.h"

#define MS  1000000LL
#define NOW (1000 * MS)

static int setup(void **state)
{
	*state = pk_expect_new();
	return *state != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	pk_expect_free(*state);
	return 0;
}

static void nothing_written_nothing_to_wait_for(void **state)
{
	struct pk_expect *x = *state;
	assert_int_equal(pk_expect_wait(x, "ns/c", true, 11, 0, NOW), 0);
	pk_expect_write(x, "ns/c", false, 0, NOW); /* no resourceVersion: no record */
	assert_int_equal(pk_expect_len(x), 0);
}

static void waits_until_the_claim_write_is_seen(void **state)
{
	struct pk_expect *x = *state;
	pk_expect_write(x, "ns/c", false, 22, NOW);
	long w = pk_expect_wait(x, "ns/c", true, 11, 0, NOW + 1000 * MS);
	assert_true(w > 0 && w <= PK_EXPECT_MS);
	assert_int_equal(w, PK_EXPECT_MS - 1000 + 1);
	/* another claim is not held up */
	assert_int_equal(pk_expect_wait(x, "ns/other", true, 11, 0, NOW), 0);
	/* an informer event of an older version changes nothing; of the one written, it does */
	pk_expect_seen(x, "ns/c", false, 11);
	assert_true(pk_expect_wait(x, "ns/c", true, 11, 0, NOW) > 0);
	pk_expect_seen(x, "ns/c", false, 22);
	assert_int_equal(pk_expect_len(x), 0);
	assert_int_equal(pk_expect_wait(x, "ns/c", true, 11, 0, NOW), 0);
}

static void the_cache_showing_the_version_is_enough(void **state)
{
	struct pk_expect *x = *state;
	pk_expect_write(x, "ns/c", false, 22, NOW);
	pk_expect_write(x, "ns/c", true, 33, NOW);
	/* the claim is there, the IPAddress not yet */
	assert_true(pk_expect_wait(x, "ns/c", true, 22, 0, NOW) > 0);
	assert_int_equal(pk_expect_len(x), 1);
	assert_true(pk_expect_wait(x, "ns/c", true, 22, 44, NOW) > 0);
	assert_int_equal(pk_expect_wait(x, "ns/c", true, 22, 33, NOW), 0);
	assert_int_equal(pk_expect_len(x), 0);
}

static void an_expectation_expires(void **state)
{
	struct pk_expect *x = *state;
	pk_expect_write(x, "ns/c", true, 33, NOW);
	assert_true(pk_expect_wait(x, "ns/c", true, 1, 0, NOW + (PK_EXPECT_MS - 1) * MS) > 0);
	assert_int_equal(pk_expect_wait(x, "ns/c", true, 1, 0, NOW + PK_EXPECT_MS * MS), 0);
	assert_int_equal(pk_expect_len(x), 0);
}

static void a_claim_gone_clears_both_halves(void **state)
{
	struct pk_expect *x = *state;
	pk_expect_write(x, "ns/c", false, 22, NOW);
	pk_expect_write(x, "ns/c", true, 33, NOW);
	pk_expect_seen(x, "ns/c", false, 0);
	assert_int_equal(pk_expect_len(x), 0);
	/* an IPAddress gone clears only its half */
	pk_expect_write(x, "ns/c", false, 22, NOW);
	pk_expect_write(x, "ns/c", true, 33, NOW);
	pk_expect_seen(x, "ns/c", true, 0);
	assert_int_equal(pk_expect_len(x), 1);
	assert_true(pk_expect_wait(x, "ns/c", true, 11, 0, NOW) > 0);
	/* no claim in the cache: nothing to wait for */
	assert_int_equal(pk_expect_wait(x, "ns/c", false, 0, 0, NOW), 0);
	assert_int_equal(pk_expect_len(x), 0);
}

static void rv_hash_of_objects(void **state)
{
	(void)state;
	json_t *a = load("{'metadata': {'resourceVersion': '5'}}");
	json_t *b = load("{'metadata': {'resourceVersion': '6'}}");
	json_t *none = load("{'metadata': {}}");
	assert_int_not_equal(pk_expect_rv_hash(a), 0);
	assert_int_not_equal(pk_expect_rv_hash(a), pk_expect_rv_hash(b));
	assert_int_equal(pk_expect_rv_hash(none), 0);
	assert_int_equal(pk_expect_rv_hash(NULL), 0);
	json_decref(a);
	json_decref(b);
	json_decref(none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(nothing_written_nothing_to_wait_for, setup, teardown),
	    cmocka_unit_test_setup_teardown(waits_until_the_claim_write_is_seen, setup, teardown),
	    cmocka_unit_test_setup_teardown(the_cache_showing_the_version_is_enough, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(an_expectation_expires, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_claim_gone_clears_both_halves, setup, teardown),
	    cmocka_unit_test(rv_hash_of_objects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
