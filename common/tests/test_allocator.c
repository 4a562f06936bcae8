/* test_allocator.c - the per-pool allocator against a model, and its edge cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "allocator.h"

static struct pk_range_set *set_of(const pk_u128 *pairs, size_t n)
{
	struct pk_range_set *s = pk_range_set_new();
	for (size_t i = 0; i < n; i += 2)
		assert_int_equal(pk_range_set_add(s, pairs[i], pairs[i + 1]), PK_OK);
	return s;
}

static pk_u128 next_ok(struct pk_allocator *a, int64_t now)
{
	pk_u128 v;
	assert_int_equal(pk_allocator_next(a, now, &v), PK_OK);
	return v;
}

static void test_lowest_first(void **state)
{
	(void)state;
	const pk_u128 p[] = {10, 12, 20, 21};
	struct pk_range_set *u = set_of(p, 4);
	struct pk_allocator *a = pk_allocator_new(u);
	assert_true(next_ok(a, 0) == 10);
	assert_true(next_ok(a, 0) == 11);
	assert_true(next_ok(a, 0) == 12);
	assert_true(next_ok(a, 0) == 20);
	/* releasing a lower one makes it the next again */
	assert_int_equal(pk_allocator_release(a, 11, 0, 0), PK_OK);
	assert_true(next_ok(a, 0) == 11);
	assert_true(next_ok(a, 0) == 21);
	pk_u128 v;
	assert_int_equal(pk_allocator_next(a, 0, &v), PK_ERR_EXHAUSTED);
	struct pk_alloc_counts c;
	pk_allocator_counts(a, &c);
	assert_true(c.total.lo == 5 && c.used.lo == 5 && c.free.lo == 0);
	pk_allocator_free(a);
	pk_range_set_free(u);
}

static void test_requested_and_errors(void **state)
{
	(void)state;
	const pk_u128 p[] = {100, 199};
	struct pk_range_set *u = set_of(p, 2);
	struct pk_allocator *a = pk_allocator_new(u);
	assert_int_equal(pk_allocator_take(a, 150, 0), PK_OK);
	assert_int_equal(pk_allocator_take(a, 150, 0), PK_ERR_IN_USE);
	assert_int_equal(pk_allocator_take(a, 99, 0), PK_ERR_OUT_OF_RANGE);
	assert_int_equal(pk_allocator_take(a, 200, 0), PK_ERR_OUT_OF_RANGE);
	assert_int_equal(pk_allocator_state(a, 150), PK_ADDR_USED);
	assert_int_equal(pk_allocator_state(a, 151), PK_ADDR_FREE);
	assert_int_equal(pk_allocator_state(a, 5), PK_ADDR_NOT_IN_POOL);
	/* a split fragment: 100..149 and 151..199 */
	struct pk_alloc_counts c;
	pk_allocator_counts(a, &c);
	assert_int_equal(c.fragments, 2);
	/* double release and release of what nobody holds are refused */
	assert_int_equal(pk_allocator_release(a, 150, 0, 0), PK_OK);
	assert_int_equal(pk_allocator_release(a, 150, 0, 0), PK_ERR_NOT_HELD);
	assert_int_equal(pk_allocator_release(a, 120, 0, 0), PK_ERR_NOT_HELD);
	assert_int_equal(pk_allocator_release(a, 7, 0, 0), PK_ERR_NOT_HELD);
	pk_allocator_counts(a, &c);
	assert_int_equal(c.fragments, 1);
	assert_true(c.free.lo == 100 && c.used.lo == 0);
	pk_allocator_free(a);
	pk_range_set_free(u);
}

static void test_quarantine(void **state)
{
	(void)state;
	const pk_u128 p[] = {1, 3};
	struct pk_range_set *u = set_of(p, 2);
	struct pk_allocator *a = pk_allocator_new(u);
	assert_true(next_ok(a, 1000) == 1);
	/* released at t=1000 with a 60 s grace period */
	assert_int_equal(pk_allocator_release(a, 1, 1060, 1000), PK_OK);
	assert_int_equal(pk_allocator_state(a, 1), PK_ADDR_QUARANTINED);
	assert_true(next_ok(a, 1001) == 2); /* 1 is skipped */
	assert_int_equal(pk_allocator_take(a, 1, 1059), PK_ERR_QUARANTINED);
	assert_int_equal(pk_allocator_release(a, 1, 2000, 1001), PK_ERR_NOT_HELD);
	struct pk_alloc_counts c;
	pk_allocator_counts(a, &c);
	assert_true(c.quarantined == 1 && c.used.lo == 1 && c.free.lo == 1);
	/* once its time comes it is the lowest again */
	assert_true(next_ok(a, 1060) == 1);
	assert_true(next_ok(a, 1060) == 3);
	pk_u128 v;
	assert_int_equal(pk_allocator_next(a, 1060, &v), PK_ERR_EXHAUSTED);
	/* quarantine everything; exhausted until the earliest ends */
	assert_int_equal(pk_allocator_release(a, 3, 1100, 1060), PK_OK);
	assert_int_equal(pk_allocator_release(a, 2, 1200, 1060), PK_OK);
	assert_int_equal(pk_allocator_release(a, 1, 1300, 1060), PK_OK);
	assert_int_equal(pk_allocator_next(a, 1099, &v), PK_ERR_EXHAUSTED);
	assert_true(next_ok(a, 1100) == 3);
	assert_true(next_ok(a, 5000) == 1);
	assert_true(next_ok(a, 5000) == 2);
	pk_allocator_free(a);
	pk_range_set_free(u);
}

struct seen {
	pk_u128 addr[8];
	int64_t nb[8];
	size_t n;
};

static bool collect(pk_u128 addr, int64_t nb, void *ctx)
{
	struct seen *s = ctx;
	s->addr[s->n] = addr;
	s->nb[s->n] = nb;
	s->n++;
	return s->n < 2; /* stop after two: the caller bounds what it records */
}

static void test_restore(void **state)
{
	(void)state;
	const pk_u128 p[] = {10, 20};
	struct pk_range_set *u = set_of(p, 2);
	struct pk_allocator *a = pk_allocator_new(u);
	/* rebuilt after a restart: three IPAddresses exist, one twice */
	assert_int_equal(pk_allocator_adopt(a, 12), PK_OK);
	assert_int_equal(pk_allocator_adopt(a, 15), PK_OK);
	assert_int_equal(pk_allocator_adopt(a, 12), PK_ERR_IN_USE);
	/* an address the shrunken pool no longer contains */
	assert_int_equal(pk_allocator_adopt(a, 30), PK_OK);
	assert_int_equal(pk_allocator_adopt(a, 30), PK_ERR_IN_USE);
	assert_int_equal(pk_allocator_state(a, 30), PK_ADDR_OUT_OF_RANGE);
	/* the quarantine recorded in the pool's status */
	assert_int_equal(pk_allocator_quarantine(a, 11, 500), PK_OK);
	assert_int_equal(pk_allocator_quarantine(a, 18, 400), PK_OK);
	assert_int_equal(pk_allocator_quarantine(a, 18, 300), PK_OK); /* keeps the later */
	assert_int_equal(pk_allocator_quarantine(a, 12, 400), PK_ERR_IN_USE);
	assert_int_equal(pk_allocator_quarantine(a, 99, 400), PK_ERR_OUT_OF_RANGE);
	struct pk_alloc_counts c;
	pk_allocator_counts(a, &c);
	assert_true(c.total.lo == 11 && c.used.lo == 2 && c.quarantined == 2 &&
	            c.out_of_range == 1 && c.free.lo == 7);
	struct seen s = {0};
	pk_allocator_each_quarantined(a, collect, &s);
	assert_int_equal(s.n, 2);
	assert_true(s.addr[0] == 11 && s.nb[0] == 500 && s.addr[1] == 18 && s.nb[1] == 400);
	/* an IPAddress found for a quarantined address wins */
	assert_int_equal(pk_allocator_adopt(a, 18), PK_OK);
	assert_int_equal(pk_allocator_state(a, 18), PK_ADDR_USED);
	assert_true(next_ok(a, 0) == 10);
	assert_true(next_ok(a, 0) == 13);
	/* releasing the out-of-range address forgets it */
	assert_int_equal(pk_allocator_release(a, 30, 0, 0), PK_OK);
	assert_int_equal(pk_allocator_state(a, 30), PK_ADDR_NOT_IN_POOL);
	assert_int_equal(pk_allocator_release(a, 30, 0, 0), PK_ERR_NOT_HELD);
	pk_allocator_expire(a, 500);
	assert_int_equal(pk_allocator_state(a, 11), PK_ADDR_FREE);
	pk_allocator_free(a);
	pk_range_set_free(u);
}

static void test_top_of_space(void **state)
{
	(void)state;
	char b[PK_COUNT_STRLEN];
	const pk_u128 p[] = {0, PK_U128_MAX};
	struct pk_range_set *u = set_of(p, 2);
	struct pk_allocator *a = pk_allocator_new(u);
	struct pk_alloc_counts c;
	pk_allocator_counts(a, &c);
	assert_string_equal(pk_count_format(c.free, b), "340282366920938463463374607431768211456");
	assert_int_equal(pk_allocator_take(a, PK_U128_MAX, 0), PK_OK);
	assert_int_equal(pk_allocator_take(a, PK_U128_MAX - 1, 0), PK_OK);
	assert_true(next_ok(a, 0) == 0);
	pk_allocator_counts(a, &c);
	assert_string_equal(pk_count_format(c.used, b), "3");
	assert_string_equal(pk_count_format(c.free, b), "340282366920938463463374607431768211453");
	assert_int_equal(pk_allocator_release(a, PK_U128_MAX, 0, 0), PK_OK);
	assert_int_equal(pk_allocator_release(a, PK_U128_MAX - 1, 0, 0), PK_OK);
	assert_int_equal(pk_allocator_release(a, 0, 0, 0), PK_OK);
	pk_allocator_counts(a, &c);
	assert_int_equal(c.fragments, 1);
	assert_int_equal(c.free.carry, 1);
	pk_allocator_free(a);
	pk_range_set_free(u);
}

/* Random operations against a per-address model of a pool with holes. */
#define U 300
enum { M_OUT = 0, M_FREE, M_USED, M_QUAR };

static uint64_t rng = 0x243F6A8885A308D3ULL;
static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static void test_model(void **state)
{
	(void)state;
	unsigned char m[U];
	int64_t nb[U];
	struct pk_range_set *u = pk_range_set_new();
	memset(m, M_OUT, sizeof(m));
	for (unsigned lo = 5; lo < U - 10; lo += 20 + rnd(10)) {
		unsigned hi = lo + rnd(15);
		assert_int_equal(pk_range_set_add(u, lo, hi), PK_OK);
		for (unsigned v = lo; v <= hi; v++)
			m[v] = M_FREE;
	}
	struct pk_allocator *a = pk_allocator_new(u);
	int64_t now = 0;
	for (int step = 0; step < 200000; step++) {
		now += rnd(3);
		for (unsigned v = 0; v < U; v++)
			if (m[v] == M_QUAR && nb[v] <= now)
				m[v] = M_FREE;
		unsigned op = rnd(4), v = rnd(U);
		if (op == 0) {
			pk_u128 got;
			int rc = pk_allocator_next(a, now, &got);
			unsigned want = U;
			for (unsigned x = 0; x < U && want == U; x++)
				if (m[x] == M_FREE)
					want = x;
			if (want == U) {
				assert_int_equal(rc, PK_ERR_EXHAUSTED);
			} else {
				assert_int_equal(rc, PK_OK);
				assert_true(got == want);
				m[want] = M_USED;
			}
		} else if (op == 1) {
			int rc = pk_allocator_take(a, v, now);
			int want = m[v] == M_FREE   ? PK_OK
			           : m[v] == M_USED ? PK_ERR_IN_USE
			           : m[v] == M_QUAR ? PK_ERR_QUARANTINED
			                            : PK_ERR_OUT_OF_RANGE;
			assert_int_equal(rc, want);
			if (rc == PK_OK)
				m[v] = M_USED;
		} else {
			int64_t until = now + (op == 2 ? 0 : (int64_t)rnd(20));
			int rc = pk_allocator_release(a, v, until, now);
			if (m[v] == M_USED) {
				assert_int_equal(rc, PK_OK);
				m[v] = until > now ? M_QUAR : M_FREE;
				nb[v] = until;
			} else {
				assert_int_equal(rc, PK_ERR_NOT_HELD);
			}
		}
		if (step % 97 == 0) {
			pk_allocator_expire(a, now);
			unsigned nf = 0, nu = 0, nq = 0;
			for (unsigned x = 0; x < U; x++) {
				nf += m[x] == M_FREE;
				nu += m[x] == M_USED;
				nq += m[x] == M_QUAR;
				enum pk_addr_state st = pk_allocator_state(a, x);
				enum pk_addr_state want = m[x] == M_FREE   ? PK_ADDR_FREE
				                          : m[x] == M_USED ? PK_ADDR_USED
				                          : m[x] == M_QUAR ? PK_ADDR_QUARANTINED
				                                           : PK_ADDR_NOT_IN_POOL;
				assert_int_equal(st, want);
			}
			struct pk_alloc_counts c;
			pk_allocator_counts(a, &c);
			assert_true(c.free.lo == nf && c.used.lo == nu && c.quarantined == nq);
		}
	}
	pk_allocator_free(a);
	pk_range_set_free(u);
}

static void test_empty_pool(void **state)
{
	(void)state;
	struct pk_range_set *u = pk_range_set_new();
	struct pk_allocator *a = pk_allocator_new(u);
	pk_u128 v;
	assert_int_equal(pk_allocator_next(a, 0, &v), PK_ERR_EXHAUSTED);
	assert_int_equal(pk_allocator_take(a, 1, 0), PK_ERR_OUT_OF_RANGE);
	assert_true(pk_allocator_memory(a) > 0);
	pk_allocator_free(a);
	pk_range_set_free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lowest_first), cmocka_unit_test(test_requested_and_errors),
	    cmocka_unit_test(test_quarantine),   cmocka_unit_test(test_restore),
	    cmocka_unit_test(test_top_of_space), cmocka_unit_test(test_model),
	    cmocka_unit_test(test_empty_pool),
	};
	return cmocka_run_group_tests_name("allocator", tests, NULL, NULL);
}
