/* test_kube_worker.c - the stoppable background thread: a stop ends a long nap at once, one
 * thread at a time, a stop asked before start holds, naps last their time, deadlines carry
 * nanoseconds into seconds. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "kube_worker.h"

static long long mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

struct sleeper {
	struct pk_kube_worker *w;
	atomic_int naps;
};

/* Naps 60 s at a time until stopped. */
static void *sleepy(void *arg)
{
	struct sleeper *s = arg;
	while (!pk_kube_worker_stopping(s->w)) {
		atomic_fetch_add(&s->naps, 1);
		pk_kube_worker_nap(s->w, 60000);
	}
	return NULL;
}

static void test_stop_ends_a_long_nap(void **state)
{
	(void)state;
	struct pk_kube_worker w;
	struct sleeper s = {.w = &w};
	pk_kube_worker_init(&w);
	assert_int_equal(pk_kube_worker_start(&w, sleepy, &s), 0);
	assert_int_equal(pk_kube_worker_start(&w, sleepy, &s), EBUSY);
	while (atomic_load(&s.naps) == 0)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	nanosleep(&(struct timespec){0, 20000000}, NULL); /* well into its nap */
	long long t0 = mono_ms();
	pk_kube_worker_stop(&w);
	assert_true(mono_ms() - t0 < 5000);
	assert_false(w.running);
	assert_int_equal(atomic_load(&s.naps), 1);
	pk_kube_worker_stop(&w); /* twice is fine */
	pk_kube_worker_destroy(&w);
}

static void test_stop_before_start_holds(void **state)
{
	(void)state;
	struct pk_kube_worker w;
	struct sleeper s = {.w = &w};
	pk_kube_worker_init(&w);
	pk_kube_worker_stop(&w); /* nothing runs: nothing to do, no stop asked */
	assert_false(pk_kube_worker_stopping(&w));
	pk_kube_worker_stop_begin(&w);
	assert_true(pk_kube_worker_stopping(&w));
	assert_int_equal(pk_kube_worker_start(&w, sleepy, &s), 0);
	pk_kube_worker_destroy(&w); /* stops and joins */
	assert_int_equal(atomic_load(&s.naps), 0);
}

static void test_nap_lasts_its_time(void **state)
{
	(void)state;
	struct pk_kube_worker w;
	pk_kube_worker_init(&w);
	long long t0 = mono_ms();
	pk_kube_worker_nap(&w, 50);
	long long took = mono_ms() - t0;
	assert_true(took >= 49);
	assert_true(took < 5000);
	pk_kube_worker_stop_begin(&w);
	t0 = mono_ms();
	pk_kube_worker_nap(&w, 60000); /* stopped: returns at once */
	assert_true(mono_ms() - t0 < 1000);
	pk_kube_worker_destroy(&w);
}

static void test_deadline_carries(void **state)
{
	(void)state;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	struct timespec dl = pk_kube_worker_deadline(2999);
	assert_true(dl.tv_nsec >= 0 && dl.tv_nsec < 1000000000L);
	long long diff =
	    (long long)(dl.tv_sec - now.tv_sec) * 1000 + (dl.tv_nsec - now.tv_nsec) / 1000000;
	assert_true(diff >= 2998 && diff <= 3100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stop_ends_a_long_nap),
	    cmocka_unit_test(test_stop_before_start_holds),
	    cmocka_unit_test(test_nap_lasts_its_time),
	    cmocka_unit_test(test_deadline_carries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
