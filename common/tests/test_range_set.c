/* test_range_set.c - interval sets against a bitmap model and at the edges of 128 bits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "range_set.h"

#define U 256 /* model universe: values 0..255 */

struct model {
	unsigned char bit[U];
};

static uint64_t rng = 88172645463325252ULL;
static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static void check_same(const struct pk_range_set *s, const struct model *m)
{
	size_t n;
	const struct pk_range *r = pk_range_set_ranges(s, &n);
	/* sorted, disjoint, coalesced */
	for (size_t i = 0; i < n; i++) {
		assert_true(r[i].lo <= r[i].hi);
		if (i > 0)
			assert_true(r[i - 1].hi + 1 < r[i].lo);
	}
	unsigned count = 0;
	for (unsigned v = 0; v < U; v++) {
		assert_int_equal(pk_range_set_contains(s, v), m->bit[v]);
		count += m->bit[v];
	}
	struct pk_count c = pk_range_set_size(s);
	assert_true(c.carry == 0 && c.lo == count);
	/* nth walks the values in order */
	unsigned k = 0;
	for (unsigned v = 0; v < U; v++) {
		if (!m->bit[v])
			continue;
		pk_u128 got;
		assert_int_equal(pk_range_set_nth(s, k, &got), PK_OK);
		assert_true(got == v);
		k++;
	}
	pk_u128 got;
	assert_int_equal(pk_range_set_nth(s, count, &got), PK_ERR_OUT_OF_RANGE);
}

static void random_set(struct pk_range_set *s, struct model *m)
{
	pk_range_set_clear(s);
	memset(m, 0, sizeof(*m));
	unsigned k = rnd(6);
	for (unsigned i = 0; i < k; i++) {
		unsigned a = rnd(U), b = rnd(U);
		if (a > b) {
			unsigned t = a;
			a = b;
			b = t;
		}
		assert_int_equal(pk_range_set_add(s, a, b), PK_OK);
		for (unsigned v = a; v <= b; v++)
			m->bit[v] = 1;
	}
}

static void test_model(void **state)
{
	(void)state;
	struct pk_range_set *a = pk_range_set_new(), *b = pk_range_set_new();
	struct model ma, mb;
	for (int round = 0; round < 3000; round++) {
		random_set(a, &ma);
		random_set(b, &mb);
		check_same(a, &ma);
		check_same(b, &mb);
		bool ov = false, cov = true;
		for (unsigned v = 0; v < U; v++) {
			ov |= ma.bit[v] && mb.bit[v];
			cov &= !mb.bit[v] || ma.bit[v];
		}
		assert_int_equal(pk_range_set_overlaps(a, b), ov);
		assert_int_equal(pk_range_set_covers(a, b), cov);
		struct pk_range_set *x = pk_range_set_dup(a);
		struct model mx = ma;
		switch (round % 4) {
		case 0:
			assert_int_equal(pk_range_set_union(x, b), PK_OK);
			for (unsigned v = 0; v < U; v++)
				mx.bit[v] |= mb.bit[v];
			break;
		case 1:
			assert_int_equal(pk_range_set_subtract(x, b), PK_OK);
			for (unsigned v = 0; v < U; v++)
				mx.bit[v] &= (unsigned char)!mb.bit[v];
			break;
		case 2:
			assert_int_equal(pk_range_set_intersect(x, b), PK_OK);
			for (unsigned v = 0; v < U; v++)
				mx.bit[v] &= mb.bit[v];
			break;
		case 3: {
			unsigned lo = rnd(U), hi = lo + rnd(U - lo);
			assert_int_equal(pk_range_set_remove(x, lo, hi), PK_OK);
			for (unsigned v = lo; v <= hi; v++)
				mx.bit[v] = 0;
			break;
		}
		}
		check_same(x, &mx);
		pk_range_set_free(x);
	}
	pk_range_set_free(a);
	pk_range_set_free(b);
}

static void test_coalesce(void **state)
{
	(void)state;
	struct pk_range_set *s = pk_range_set_new();
	size_t n;
	/* adjacent ranges coalesce */
	assert_int_equal(pk_range_set_add(s, 10, 19), PK_OK);
	assert_int_equal(pk_range_set_add(s, 20, 29), PK_OK);
	const struct pk_range *r = pk_range_set_ranges(s, &n);
	assert_int_equal(n, 1);
	assert_true(r[0].lo == 10 && r[0].hi == 29);
	/* overlapping, and one covering two */
	assert_int_equal(pk_range_set_add(s, 40, 50), PK_OK);
	assert_int_equal(pk_range_set_add(s, 25, 45), PK_OK);
	r = pk_range_set_ranges(s, &n);
	assert_int_equal(n, 1);
	assert_true(r[0].lo == 10 && r[0].hi == 50);
	/* a hole splits */
	assert_int_equal(pk_range_set_remove(s, 30, 30), PK_OK);
	r = pk_range_set_ranges(s, &n);
	assert_int_equal(n, 2);
	assert_true(r[0].hi == 29 && r[1].lo == 31);
	/* reversed bounds are refused and change nothing */
	assert_int_equal(pk_range_set_add(s, 5, 4), PK_ERR_INVALID);
	assert_int_equal(pk_range_set_remove(s, 5, 4), PK_ERR_INVALID);
	r = pk_range_set_ranges(s, &n);
	assert_int_equal(n, 2);
	pk_range_set_free(s);
}

static void test_edges(void **state)
{
	(void)state;
	char b[PK_COUNT_STRLEN];
	struct pk_range_set *s = pk_range_set_new();
	size_t n;
	/* all of IPv6: 2^128 values, no overflow anywhere */
	assert_int_equal(pk_range_set_add(s, 0, PK_U128_MAX), PK_OK);
	assert_string_equal(pk_count_format(pk_range_set_size(s), b),
	                    "340282366920938463463374607431768211456");
	pk_u128 v;
	assert_int_equal(pk_range_set_nth(s, PK_U128_MAX, &v), PK_OK);
	assert_true(v == PK_U128_MAX);
	assert_true(pk_range_set_contains(s, PK_U128_MAX));
	/* adding at the very top coalesces without wrapping */
	assert_int_equal(pk_range_set_add(s, PK_U128_MAX, PK_U128_MAX), PK_OK);
	(void)pk_range_set_ranges(s, &n);
	assert_int_equal(n, 1);
	assert_int_equal(pk_range_set_remove(s, PK_U128_MAX, PK_U128_MAX), PK_OK);
	assert_int_equal(pk_range_set_remove(s, 0, 0), PK_OK);
	assert_string_equal(pk_count_format(pk_range_set_size(s), b),
	                    "340282366920938463463374607431768211454");
	assert_false(pk_range_set_contains(s, PK_U128_MAX));
	assert_false(pk_range_set_contains(s, 0));
	/* ranges across 2^32 and 2^64 */
	pk_range_set_clear(s);
	pk_u128 two32 = (pk_u128)1 << 32, two64 = (pk_u128)1 << 64;
	assert_int_equal(pk_range_set_add(s, two32 - 2, two32 + 1), PK_OK);
	assert_int_equal(pk_range_set_add(s, two64 - 1, two64), PK_OK);
	assert_string_equal(pk_count_format(pk_range_set_size(s), b), "6");
	assert_int_equal(pk_range_set_nth(s, 4, &v), PK_OK);
	assert_true(v == two64 - 1);
	assert_int_equal(pk_range_set_remove(s, two32, two64 - 1), PK_OK);
	assert_string_equal(pk_count_format(pk_range_set_size(s), b), "3");
	/* IPv4 all: 0.0.0.0/0 */
	pk_range_set_clear(s);
	assert_int_equal(pk_range_set_add(s, 0, 0xffffffffu), PK_OK);
	assert_string_equal(pk_count_format(pk_range_set_size(s), b), "4294967296");
	assert_true(pk_range_set_empty(s) == false);
	pk_range_set_clear(s);
	assert_true(pk_range_set_empty(s));
	assert_string_equal(pk_count_format(pk_range_set_size(s), b), "0");
	pk_range_set_free(s);
}

static void test_cap(void **state)
{
	(void)state;
	struct pk_range_set *s = pk_range_set_new();
	pk_range_set_set_cap(s, 3);
	assert_int_equal(pk_range_set_add(s, 0, 0), PK_OK);
	assert_int_equal(pk_range_set_add(s, 2, 2), PK_OK);
	assert_int_equal(pk_range_set_add(s, 4, 4), PK_OK);
	/* a fourth interval is over the cap: refused, the set unchanged */
	assert_int_equal(pk_range_set_add(s, 6, 6), PK_ERR_TOO_BIG);
	size_t n;
	(void)pk_range_set_ranges(s, &n);
	assert_int_equal(n, 3);
	/* joining two intervals stays within it */
	assert_int_equal(pk_range_set_add(s, 1, 1), PK_OK);
	(void)pk_range_set_ranges(s, &n);
	assert_int_equal(n, 2);
	struct pk_range_set *d = pk_range_set_dup(s);
	assert_true(pk_range_set_equal(s, d));
	assert_int_equal(pk_range_set_remove(d, 1, 1), PK_OK);
	assert_false(pk_range_set_equal(s, d));
	pk_range_set_free(d);
	pk_range_set_free(s);
	/* a removal that splits an interval past the cap is refused too */
	s = pk_range_set_new();
	pk_range_set_set_cap(s, 2);
	assert_int_equal(pk_range_set_add(s, 0, 10), PK_OK);
	assert_int_equal(pk_range_set_remove(s, 5, 5), PK_OK);
	assert_int_equal(pk_range_set_remove(s, 2, 2), PK_ERR_TOO_BIG);
	assert_true(pk_range_set_contains(s, 2));
	(void)pk_range_set_ranges(s, &n);
	assert_int_equal(n, 2);
	pk_range_set_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_model),
	    cmocka_unit_test(test_coalesce),
	    cmocka_unit_test(test_edges),
	    cmocka_unit_test(test_cap),
	};
	return cmocka_run_group_tests_name("range_set", tests, NULL, NULL);
}
