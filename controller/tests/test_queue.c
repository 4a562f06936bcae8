/*
 * test_queue.c - the work queue: one entry per key, never two workers on
 * one key, delayed retries with doubling backoff, FIFO among ready keys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "queue.h"

#define FAR_FUTURE (1LL << 62)

static char *pop_at(struct pk_queue *q, long long now)
{
	char *k = NULL;
	long long wait = 0;
	if (pk_queue_pop(q, now, &k, &wait) != 1)
		return NULL;
	return k;
}

static void test_dedupe_and_order(void **state)
{
	(void)state;
	struct pk_queue *q = pk_queue_new();
	assert_non_null(q);
	assert_int_equal(pk_queue_add(q, "c/ns/a"), PK_OK);
	assert_int_equal(pk_queue_add(q, "c/ns/b"), PK_OK);
	assert_int_equal(pk_queue_add(q, "c/ns/a"), PK_OK); /* already queued: one entry */
	assert_int_equal(pk_queue_len(q), 2);
	char *k = pop_at(q, FAR_FUTURE);
	assert_string_equal(k, "c/ns/a");
	char *k2 = pop_at(q, FAR_FUTURE);
	assert_string_equal(k2, "c/ns/b");
	assert_null(pop_at(q, FAR_FUTURE));
	pk_queue_done(q, k);
	pk_queue_done(q, k2);
	assert_int_equal(pk_queue_len(q), 0);
	free(k);
	free(k2);
	pk_queue_free(q);
}

static void test_in_progress_key_is_not_handed_out_twice(void **state)
{
	(void)state;
	struct pk_queue *q = pk_queue_new();
	assert_int_equal(pk_queue_add(q, "k"), PK_OK);
	char *k = pop_at(q, FAR_FUTURE);
	assert_non_null(k);
	/* added again while a worker holds it: waits until done */
	assert_int_equal(pk_queue_add(q, "k"), PK_OK);
	assert_null(pop_at(q, FAR_FUTURE));
	assert_int_equal(pk_queue_len(q), 0);
	pk_queue_done(q, k);
	free(k);
	assert_int_equal(pk_queue_len(q), 1);
	k = pop_at(q, FAR_FUTURE);
	assert_string_equal(k, "k");
	pk_queue_done(q, k);
	free(k);
	assert_null(pop_at(q, FAR_FUTURE));
	pk_queue_free(q);
}

static void test_retry_backs_off(void **state)
{
	(void)state;
	assert_int_equal(pk_queue_backoff_ms(0), PK_QUEUE_BACKOFF_BASE_MS);
	assert_int_equal(pk_queue_backoff_ms(1), 2 * PK_QUEUE_BACKOFF_BASE_MS);
	assert_int_equal(pk_queue_backoff_ms(3), 8 * PK_QUEUE_BACKOFF_BASE_MS);
	assert_int_equal(pk_queue_backoff_ms(40), PK_QUEUE_BACKOFF_MAX_MS);
	assert_int_equal(pk_queue_backoff_ms(1000), PK_QUEUE_BACKOFF_MAX_MS);

	struct pk_queue *q = pk_queue_new();
	assert_int_equal(pk_queue_add(q, "k"), PK_OK);
	char *k = pop_at(q, FAR_FUTURE);
	assert_int_equal(pk_queue_retry(q, k), PK_QUEUE_BACKOFF_BASE_MS);
	pk_queue_done(q, k);
	free(k);
	/* not ready now; ready later; the wait says how long */
	char *none = NULL;
	long long wait = 0;
	assert_int_equal(pk_queue_pop(q, 0, &none, &wait), 0);
	assert_true(wait > 0);
	k = pop_at(q, FAR_FUTURE);
	assert_string_equal(k, "k");
	assert_int_equal(pk_queue_retry(q, k), 2 * PK_QUEUE_BACKOFF_BASE_MS);
	pk_queue_done(q, k);
	free(k);
	k = pop_at(q, FAR_FUTURE);
	pk_queue_forget(q, k); /* success resets the count */
	pk_queue_done(q, k);
	assert_int_equal(pk_queue_retry(q, k), PK_QUEUE_BACKOFF_BASE_MS);
	free(k);
	pk_queue_free(q);
}

static void test_add_after_keeps_the_earlier_time(void **state)
{
	(void)state;
	struct pk_queue *q = pk_queue_new();
	assert_int_equal(pk_queue_add_after(q, "k", 60000), PK_OK);
	assert_null(pop_at(q, 0));
	assert_int_equal(pk_queue_add(q, "k"), PK_OK); /* now wins over a minute from now */
	char *k = pop_at(q, FAR_FUTURE);
	assert_non_null(k);
	pk_queue_done(q, k);
	free(k);
	pk_queue_free(q);
}

static void test_get_and_shutdown(void **state)
{
	(void)state;
	struct pk_queue *q = pk_queue_new();
	char *k = NULL;
	assert_int_equal(pk_queue_get(q, 10, &k), 0); /* timeout on an empty queue */
	assert_int_equal(pk_queue_add(q, "k"), PK_OK);
	assert_int_equal(pk_queue_get(q, 1000, &k), 1);
	assert_string_equal(k, "k");
	pk_queue_done(q, k);
	free(k);
	pk_queue_shutdown(q);
	assert_int_equal(pk_queue_get(q, 1000, &k), -1);
	pk_queue_free(q);
	pk_queue_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dedupe_and_order),
	    cmocka_unit_test(test_in_progress_key_is_not_handed_out_twice),
	    cmocka_unit_test(test_retry_backs_off),
	    cmocka_unit_test(test_add_after_keeps_the_earlier_time),
	    cmocka_unit_test(test_get_and_shutdown),
	};
	return cmocka_run_group_tests_name("queue", tests, NULL, NULL);
}
