/*
 * test_queue.c - the work queue: one entry per key, never two workers on
 * one key, delayed retries with doubling backoff, FIFO among ready keys,
 * at 100,000 keys as at two.
 *
 * Delayed keys are tested with delays of many minutes and pops at chosen
 * times, so the tests never depend on how fast they run.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "queue.h"

#define FAR_FUTURE (1LL << 62)
#define SEC        1000000000LL

/* The queue's clock (CLOCK_MONOTONIC), to pop at times relative to an add. */
static long long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * SEC + ts.tv_nsec;
}

static void key_of(char *buf, size_t len, int i)
{
	snprintf(buf, len, "c/ns-%d/claim-%d", i % 97, i);
}

/* Pops at `now`, checks the key, marks it done. */
static void expect_pop(struct pk_queue *q, long long now, const char *want)
{
	char *k = NULL;
	long long wait = 0;
	if (pk_queue_pop(q, now, &k, &wait) != 1)
		fail_msg("expected %s, nothing was ready (wait %lld ns)", want, wait);
	assert_string_equal(k, want);
	pk_queue_done(q, k);
	free(k);
}

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

static void test_many_keys_fifo_and_dedupe(void **state)
{
	(void)state;
	enum { N = 100000 };
	char key[64];
	struct pk_queue *q = pk_queue_new();
	assert_non_null(q);
	for (int i = 0; i < N; i++) {
		key_of(key, sizeof(key), i);
		assert_int_equal(pk_queue_add(q, key), PK_OK);
	}
	/* every key again: one entry each, places unchanged */
	for (int i = N - 1; i >= 0; i--) {
		key_of(key, sizeof(key), i);
		assert_int_equal(pk_queue_add(q, key), PK_OK);
	}
	assert_int_equal(pk_queue_len(q), N);
	char **held = calloc(N, sizeof(*held));
	assert_non_null(held);
	for (int i = 0; i < N; i++) {
		char *k = NULL;
		long long wait = 0;
		assert_int_equal(pk_queue_pop(q, FAR_FUTURE, &k, &wait), 1);
		key_of(key, sizeof(key), i);
		assert_string_equal(k, key);
		held[i] = k;
	}
	char *none = NULL;
	long long wait = 0;
	assert_int_equal(pk_queue_pop(q, FAR_FUTURE, &none, &wait), 0);
	assert_int_equal(wait, -1);
	assert_int_equal(pk_queue_len(q), 0);

	/* every odd key added while held: dirty, queued in the order of done */
	for (int i = 1; i < N; i += 2)
		assert_int_equal(pk_queue_add(q, held[i]), PK_OK);
	assert_int_equal(pk_queue_len(q), 0);
	for (int i = N - 1; i >= 0; i--) {
		pk_queue_done(q, held[i]);
		free(held[i]);
		held[i] = NULL;
	}
	assert_int_equal(pk_queue_len(q), N / 2);
	for (int i = N - 1; i >= 1; i -= 2) {
		char *k = NULL;
		assert_int_equal(pk_queue_pop(q, FAR_FUTURE, &k, &wait), 1);
		key_of(key, sizeof(key), i);
		assert_string_equal(k, key);
		pk_queue_done(q, k);
		free(k);
	}
	assert_int_equal(pk_queue_pop(q, FAR_FUTURE, &none, &wait), 0);
	assert_int_equal(pk_queue_len(q), 0);

	/* the queue works as new after the keys were dropped */
	assert_int_equal(pk_queue_add(q, "k"), PK_OK);
	expect_pop(q, FAR_FUTURE, "k");
	free(held);
	pk_queue_free(q);
}

static void test_delayed_keys_come_out_when_due(void **state)
{
	(void)state;
	struct pk_queue *q = pk_queue_new();
	long long t0 = mono_ns();
	assert_int_equal(pk_queue_add_after(q, "three", 3000 * 1000L), PK_OK);
	assert_int_equal(pk_queue_add_after(q, "one", 1000 * 1000L), PK_OK);
	assert_int_equal(pk_queue_add_after(q, "two", 2000 * 1000L), PK_OK);
	long long t1 = mono_ns();
	assert_int_equal(pk_queue_len(q), 3);

	char *k = NULL;
	long long wait = 0;
	assert_int_equal(pk_queue_pop(q, t1, &k, &wait), 0);
	assert_true(wait >= 1000 * SEC - (t1 - t0) && wait <= 1000 * SEC);
	expect_pop(q, t1 + 1500 * SEC, "one");
	assert_int_equal(pk_queue_pop(q, t1 + 1500 * SEC, &k, &wait), 0);
	assert_true(wait > 400 * SEC && wait <= 500 * SEC);
	assert_int_equal(pk_queue_len(q), 2);
	expect_pop(q, t1 + 2500 * SEC, "two");
	assert_int_equal(pk_queue_pop(q, t1 + 2500 * SEC, &k, NULL), 0); /* wait_ns may be NULL */
	expect_pop(q, t1 + 3500 * SEC, "three");
	assert_int_equal(pk_queue_pop(q, FAR_FUTURE, &k, &wait), 0);
	assert_int_equal(wait, -1);
	pk_queue_free(q);
}

static void test_ready_keys_come_out_in_queueing_order(void **state)
{
	(void)state;
	struct pk_queue *q = pk_queue_new();
	long long t0 = mono_ns();
	/* queued first with a delay, then two at once: once all are due, first in is first out */
	assert_int_equal(pk_queue_add_after(q, "late", 100 * 1000L), PK_OK);
	assert_int_equal(pk_queue_add(q, "now-1"), PK_OK);
	assert_int_equal(pk_queue_add_after(q, "later", 200 * 1000L), PK_OK);
	assert_int_equal(pk_queue_add(q, "now-2"), PK_OK);
	expect_pop(q, t0, "now-1");
	expect_pop(q, t0 + 300 * SEC, "late");
	expect_pop(q, t0 + 300 * SEC, "later");
	expect_pop(q, t0 + 300 * SEC, "now-2");
	pk_queue_free(q);
}

static void test_earlier_time_wins_among_delays(void **state)
{
	(void)state;
	struct pk_queue *q = pk_queue_new();
	long long t0 = mono_ns();
	assert_int_equal(pk_queue_add_after(q, "a", 3000 * 1000L), PK_OK);
	assert_int_equal(pk_queue_add_after(q, "b", 1000 * 1000L), PK_OK);
	assert_int_equal(pk_queue_add_after(q, "a", 500 * 1000L), PK_OK);  /* earlier: wins */
	assert_int_equal(pk_queue_add_after(q, "b", 4000 * 1000L), PK_OK); /* later: ignored */
	assert_int_equal(pk_queue_len(q), 2);
	long long t1 = mono_ns();
	char *k = NULL;
	long long wait = 0;
	assert_int_equal(pk_queue_pop(q, t1 + 100 * SEC, &k, &wait), 0);
	assert_true(wait > 300 * SEC && wait <= 400 * SEC);
	expect_pop(q, t1 + 600 * SEC, "a");
	expect_pop(q, t1 + 1100 * SEC, "b");
	/* a retry keeps an earlier time too */
	assert_int_equal(pk_queue_add(q, "c"), PK_OK);
	assert_int_equal(pk_queue_retry(q, "c"), PK_QUEUE_BACKOFF_BASE_MS);
	expect_pop(q, t0, "c");
	pk_queue_free(q);
}

static void test_pop_with_an_earlier_now(void **state)
{
	(void)state;
	struct pk_queue *q = pk_queue_new();
	long long t0 = mono_ns();
	assert_int_equal(pk_queue_add_after(q, "a", 100 * 1000L), PK_OK);
	assert_int_equal(pk_queue_add_after(q, "b", 200 * 1000L), PK_OK);
	assert_int_equal(pk_queue_add(q, "c"), PK_OK);
	long long t1 = mono_ns();
	expect_pop(q, t1 + 300 * SEC, "a"); /* all three are due then */
	/* back to before b is due: only c is ready; b waits */
	char *k = NULL;
	long long wait = 0;
	expect_pop(q, t1, "c");
	assert_int_equal(pk_queue_pop(q, t1 + 50 * SEC, &k, &wait), 0);
	assert_true(wait >= 150 * SEC - (t1 - t0) && wait <= 150 * SEC);
	expect_pop(q, t1 + 300 * SEC, "b");
	pk_queue_free(q);
}

static void test_many_delayed_keys(void **state)
{
	(void)state;
	enum { N = 10000, GROUPS = 10 };
	char key[64];
	int *group = calloc(N, sizeof(*group));
	assert_non_null(group);
	struct pk_queue *q = pk_queue_new();
	long long t0 = mono_ns();
	uint32_t r = 12345;
	for (int i = 0; i < N; i++) {
		r = r * 1103515245u + 12345u;
		group[i] = (int)((r >> 16) % GROUPS);
		key_of(key, sizeof(key), i);
		/* group g is due (1000 g + 500) s after it was added */
		assert_int_equal(pk_queue_add_after(q, key, (1000L * group[i] + 500) * 1000L),
		                 PK_OK);
	}
	long long t1 = mono_ns();
	assert_true(t1 - t0 < 400 * SEC);
	assert_int_equal(pk_queue_len(q), N);
	int seen = 0;
	for (int g = 0; g < GROUPS; g++) {
		/* at t1 + 1000 (g + 1) s groups 0..g are due and g + 1 is not */
		long long now = t1 + 1000 * SEC * (g + 1);
		int last = -1;
		char *k = NULL;
		long long wait = 0;
		while (pk_queue_pop(q, now, &k, &wait) == 1) {
			int i = -1;
			for (int j = last + 1; j < N; j++) {
				if (group[j] != g)
					continue;
				key_of(key, sizeof(key), j);
				if (strcmp(key, k) == 0) {
					i = j;
					break;
				}
			}
			if (i < 0)
				fail_msg("group %d: %s out of order or not due", g, k);
			last = i;
			seen++;
			pk_queue_done(q, k);
			free(k);
		}
		if (g + 1 < GROUPS)
			assert_true(wait > 0 && wait <= 500 * SEC);
		else
			assert_int_equal(wait, -1);
	}
	assert_int_equal(seen, N);
	assert_int_equal(pk_queue_len(q), 0);
	free(group);
	pk_queue_free(q);
}

static void test_dirty_key_keeps_the_earliest_time(void **state)
{
	(void)state;
	struct pk_queue *q = pk_queue_new();
	assert_int_equal(pk_queue_add(q, "k"), PK_OK);
	char *k = NULL;
	long long wait = 0;
	assert_int_equal(pk_queue_pop(q, FAR_FUTURE, &k, &wait), 1);
	long long t0 = mono_ns();
	assert_int_equal(pk_queue_add_after(q, "k", 1000 * 1000L), PK_OK);
	assert_int_equal(pk_queue_add_after(q, "k", 2000 * 1000L), PK_OK);
	assert_int_equal(pk_queue_len(q), 0);
	pk_queue_done(q, k);
	free(k);
	long long t1 = mono_ns();
	assert_int_equal(pk_queue_len(q), 1);
	char *none = NULL;
	assert_int_equal(pk_queue_pop(q, t1, &none, &wait), 0);
	assert_true(wait >= 1000 * SEC - (t1 - t0) && wait <= 1000 * SEC);
	expect_pop(q, t1 + 1001 * SEC, "k");

	/* held again; a delayed add, then an immediate one: ready at done */
	assert_int_equal(pk_queue_add(q, "k"), PK_OK);
	assert_int_equal(pk_queue_pop(q, t1 + 1001 * SEC, &k, &wait), 1);
	assert_int_equal(pk_queue_add_after(q, "k", 1000 * 1000L), PK_OK);
	assert_int_equal(pk_queue_add(q, "k"), PK_OK);
	pk_queue_done(q, k);
	free(k);
	expect_pop(q, t1 + 1001 * SEC, "k");
	pk_queue_free(q);
}

static void test_done_forget_retry_edges(void **state)
{
	(void)state;
	struct pk_queue *q = pk_queue_new();
	/* unknown keys: no effect */
	pk_queue_done(q, "nobody");
	pk_queue_forget(q, "nobody");
	assert_int_equal(pk_queue_len(q), 0);
	/* done on a queued key that no worker holds leaves it queued */
	assert_int_equal(pk_queue_add(q, "a"), PK_OK);
	pk_queue_done(q, "a");
	assert_int_equal(pk_queue_len(q), 1);
	expect_pop(q, FAR_FUTURE, "a");
	/* retry of a key never seen queues it with the first backoff */
	long long t0 = mono_ns();
	assert_int_equal(pk_queue_retry(q, "b"), PK_QUEUE_BACKOFF_BASE_MS);
	assert_int_equal(pk_queue_len(q), 1);
	char *k = NULL;
	long long wait = 0;
	assert_int_equal(pk_queue_pop(q, t0 - SEC, &k, &wait), 0);
	assert_true(wait > SEC);
	/* failures count while the key is queued, held or idle, until forget */
	assert_int_equal(pk_queue_retry(q, "b"), 2 * PK_QUEUE_BACKOFF_BASE_MS);
	expect_pop(q, FAR_FUTURE, "b");
	assert_int_equal(pk_queue_retry(q, "b"), 4 * PK_QUEUE_BACKOFF_BASE_MS);
	pk_queue_forget(q, "b"); /* queued: stays queued, count reset */
	assert_int_equal(pk_queue_len(q), 1);
	assert_int_equal(pk_queue_retry(q, "b"), PK_QUEUE_BACKOFF_BASE_MS);
	expect_pop(q, FAR_FUTURE, "b");
	assert_int_equal(pk_queue_len(q), 0);
	/* the backoff is capped */
	for (int i = 0; i < 100; i++)
		(void)pk_queue_retry(q, "c");
	assert_int_equal(pk_queue_retry(q, "c"), PK_QUEUE_BACKOFF_MAX_MS);
	pk_queue_forget(q, "c");
	expect_pop(q, FAR_FUTURE, "c");
	pk_queue_free(q);
}

/* ---- many threads: never two workers on one key, every key handled ---- */

enum { T_KEYS = 2000, T_ROUNDS = 3, T_WORKERS = 4 };

struct shared {
	struct pk_queue *q;
	atomic_int holding[T_KEYS];
	atomic_int handled[T_KEYS];
	atomic_int twice; /* a key handed to a second worker while held */
	atomic_int unknown;
};

static int index_of(const char *key)
{
	const char *p = strrchr(key, '-');
	long v = p != NULL ? strtol(p + 1, NULL, 10) : -1;
	return v >= 0 && v < T_KEYS ? (int)v : -1;
}

static void *worker(void *arg)
{
	struct shared *s = arg;
	for (;;) {
		char *k = NULL;
		int rc = pk_queue_get(s->q, 1000, &k);
		if (rc < 0)
			break;
		if (rc == 0)
			continue;
		int i = index_of(k);
		if (i < 0) {
			atomic_fetch_add(&s->unknown, 1);
		} else {
			if (atomic_fetch_add(&s->holding[i], 1) != 0)
				atomic_fetch_add(&s->twice, 1);
			atomic_fetch_add(&s->handled[i], 1);
			if (i % 7 == 0) /* a failure: retried later */
				(void)pk_queue_retry(s->q, k);
			else
				pk_queue_forget(s->q, k);
			atomic_fetch_sub(&s->holding[i], 1);
		}
		pk_queue_done(s->q, k);
		free(k);
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	struct shared *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->q = pk_queue_new();
	pthread_t t[T_WORKERS];
	for (int i = 0; i < T_WORKERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, s), 0);
	char key[64];
	for (int r = 0; r < T_ROUNDS; r++) {
		for (int i = 0; i < T_KEYS; i++) {
			key_of(key, sizeof(key), i);
			assert_int_equal(pk_queue_add(s->q, key), PK_OK);
		}
	}
	/* wait (without a time limit of its own: ctest has one) until every key was handled */
	for (;;) {
		int done = 0;
		for (int i = 0; i < T_KEYS; i++)
			done += atomic_load(&s->handled[i]) > 0;
		if (done == T_KEYS)
			break;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	pk_queue_shutdown(s->q);
	for (int i = 0; i < T_WORKERS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(atomic_load(&s->twice), 0);
	assert_int_equal(atomic_load(&s->unknown), 0);
	char *k = NULL;
	assert_int_equal(pk_queue_get(s->q, 1000, &k), -1);
	pk_queue_free(s->q);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dedupe_and_order),
	    cmocka_unit_test(test_in_progress_key_is_not_handed_out_twice),
	    cmocka_unit_test(test_retry_backs_off),
	    cmocka_unit_test(test_add_after_keeps_the_earlier_time),
	    cmocka_unit_test(test_get_and_shutdown),
	    cmocka_unit_test(test_many_keys_fifo_and_dedupe),
	    cmocka_unit_test(test_delayed_keys_come_out_when_due),
	    cmocka_unit_test(test_ready_keys_come_out_in_queueing_order),
	    cmocka_unit_test(test_earlier_time_wins_among_delays),
	    cmocka_unit_test(test_pop_with_an_earlier_now),
	    cmocka_unit_test(test_many_delayed_keys),
	    cmocka_unit_test(test_dirty_key_keeps_the_earliest_time),
	    cmocka_unit_test(test_done_forget_retry_edges),
	    cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests_name("queue", tests, NULL, NULL);
}
