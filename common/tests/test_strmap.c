/* test_strmap.c - the string-keyed map: put, replace, get, remove, resizing, iteration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "parse.h"
#include "strmap.h"

static void test_put_get_replace_remove(void **state)
{
	(void)state;
	struct pk_strmap *m = pk_strmap_new();
	assert_non_null(m);
	int a = 1, b = 2, c = 3;
	void *old = &c;
	assert_int_equal(pk_strmap_put(m, "ns/a", &a, &old), PK_OK);
	assert_null(old);
	assert_int_equal(pk_strmap_put(m, "ns/b", &b, NULL), PK_OK);
	assert_ptr_equal(pk_strmap_get(m, "ns/a"), &a);
	assert_ptr_equal(pk_strmap_get(m, "ns/b"), &b);
	assert_null(pk_strmap_get(m, "ns/c"));
	assert_null(pk_strmap_get(m, ""));
	assert_int_equal(pk_strmap_len(m), 2);
	/* replacing hands the old value back and keeps one entry */
	assert_int_equal(pk_strmap_put(m, "ns/a", &c, &old), PK_OK);
	assert_ptr_equal(old, &a);
	assert_ptr_equal(pk_strmap_get(m, "ns/a"), &c);
	assert_int_equal(pk_strmap_len(m), 2);
	assert_ptr_equal(pk_strmap_remove(m, "ns/a"), &c);
	assert_null(pk_strmap_remove(m, "ns/a"));
	assert_null(pk_strmap_get(m, "ns/a"));
	assert_int_equal(pk_strmap_len(m), 1);
	/* the empty key is a key like any other */
	assert_int_equal(pk_strmap_put(m, "", &a, NULL), PK_OK);
	assert_ptr_equal(pk_strmap_get(m, ""), &a);
	pk_strmap_free(m, NULL);
	pk_strmap_free(NULL, NULL);
}

static void count_visit(void *ud, const char *key, void *value)
{
	size_t *sum = ud;
	uint64_t n;
	assert_int_equal(pk_parse_uint(key + 1, 0, INT32_MAX, &n, NULL), PK_OK);
	assert_int_equal(n, *(int *)value);
	sum[0]++;
	sum[1] += (size_t) * (int *)value;
}

/* Many keys: the map grows and every key still maps to its own value. */
static void test_many_keys(void **state)
{
	(void)state;
	enum { N = 100000 };
	struct pk_strmap *m = pk_strmap_new();
	assert_non_null(m);
	int *vals = malloc(N * sizeof(*vals));
	assert_non_null(vals);
	char key[32];
	for (int i = 0; i < N; i++) {
		vals[i] = i;
		snprintf(key, sizeof(key), "k%d", i);
		assert_int_equal(pk_strmap_put(m, key, &vals[i], NULL), PK_OK);
	}
	assert_int_equal(pk_strmap_len(m), N);
	for (int i = 0; i < N; i += 7) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_ptr_equal(pk_strmap_get(m, key), &vals[i]);
	}
	size_t sum[2] = {0, 0};
	pk_strmap_foreach(m, count_visit, sum);
	assert_int_equal(sum[0], N);
	assert_int_equal(sum[1], (size_t)N * (N - 1) / 2);
	for (int i = 0; i < N; i += 2) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_ptr_equal(pk_strmap_remove(m, key), &vals[i]);
	}
	assert_int_equal(pk_strmap_len(m), N / 2);
	assert_null(pk_strmap_get(m, "k0"));
	assert_ptr_equal(pk_strmap_get(m, "k1"), &vals[1]);
	pk_strmap_free(m, NULL);
	free(vals);
}

/*
 * Removing most keys shrinks the map, step by step, down to its first
 * size: the keys left keep their values through every shrink, and the map
 * grows again as before.
 */
static void test_shrink_and_grow_again(void **state)
{
	(void)state;
	enum { N = 50000, KEEP = 97 };
	struct pk_strmap *m = pk_strmap_new();
	assert_non_null(m);
	int *vals = malloc(N * sizeof(*vals));
	assert_non_null(vals);
	char key[32];
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < N; i++) {
			vals[i] = i;
			snprintf(key, sizeof(key), "ns-%d/claim-%d", i % 13, i);
			assert_int_equal(pk_strmap_put(m, key, &vals[i], NULL), PK_OK);
		}
		assert_int_equal(pk_strmap_len(m), N);
		/* from the end: every KEEPth key stays */
		for (int i = N - 1; i >= 0; i--) {
			if (i % KEEP == 0)
				continue;
			snprintf(key, sizeof(key), "ns-%d/claim-%d", i % 13, i);
			assert_ptr_equal(pk_strmap_remove(m, key), &vals[i]);
			if (i % 4999 != 0)
				continue;
			for (int j = 0; j < N; j += KEEP) {
				snprintf(key, sizeof(key), "ns-%d/claim-%d", j % 13, j);
				assert_ptr_equal(pk_strmap_get(m, key), &vals[j]);
			}
		}
		assert_int_equal(pk_strmap_len(m), (N + KEEP - 1) / KEEP);
		size_t n = 0;
		for (int j = 0; j < N; j++) {
			snprintf(key, sizeof(key), "ns-%d/claim-%d", j % 13, j);
			void *v = pk_strmap_get(m, key);
			if (j % KEEP == 0)
				assert_ptr_equal(v, &vals[j]);
			else
				assert_null(v);
			n += v != NULL;
		}
		assert_int_equal(n, pk_strmap_len(m));
		/* the rest goes too: empty, and the next round starts from there */
		for (int j = 0; j < N; j += KEEP) {
			snprintf(key, sizeof(key), "ns-%d/claim-%d", j % 13, j);
			assert_ptr_equal(pk_strmap_remove(m, key), &vals[j]);
		}
		assert_int_equal(pk_strmap_len(m), 0);
		assert_null(pk_strmap_get(m, "ns-0/claim-0"));
	}
	pk_strmap_free(m, NULL);
	free(vals);
}

/* The _hashed calls, given pk_strmap_hash(key), find what the plain calls stored, and back. */
static void test_hashed_calls(void **state)
{
	(void)state;
	struct pk_strmap *m = pk_strmap_new();
	assert_non_null(m);
	int a = 1, b = 2;
	uint64_t ha = pk_strmap_hash("ns/a"), hb = pk_strmap_hash("ns/b");
	void *old = &b;
	assert_int_equal(pk_strmap_put_hashed(m, "ns/a", ha, &a, &old), PK_OK);
	assert_null(old);
	assert_ptr_equal(pk_strmap_get(m, "ns/a"), &a);
	assert_ptr_equal(pk_strmap_get_hashed(m, "ns/a", ha), &a);
	assert_int_equal(pk_strmap_put(m, "ns/b", &b, NULL), PK_OK);
	assert_ptr_equal(pk_strmap_get_hashed(m, "ns/b", hb), &b);
	assert_null(pk_strmap_get_hashed(m, "ns/c", pk_strmap_hash("ns/c")));
	/* replacing through the hashed call keeps one entry */
	assert_int_equal(pk_strmap_put_hashed(m, "ns/b", hb, &a, &old), PK_OK);
	assert_ptr_equal(old, &b);
	assert_int_equal(pk_strmap_len(m), 2);
	assert_ptr_equal(pk_strmap_remove_hashed(m, "ns/a", ha), &a);
	assert_null(pk_strmap_remove_hashed(m, "ns/a", ha));
	assert_null(pk_strmap_get(m, "ns/a"));
	assert_ptr_equal(pk_strmap_remove(m, "ns/b"), &a);
	assert_int_equal(pk_strmap_len(m), 0);
	pk_strmap_free(m, NULL);
}

/* pk_strmap_free releases the values it is given a function for. */
static void test_free_values(void **state)
{
	(void)state;
	struct pk_strmap *m = pk_strmap_new();
	assert_non_null(m);
	for (int i = 0; i < 100; i++) {
		char key[16];
		snprintf(key, sizeof(key), "%d", i);
		char *v = strdup(key);
		assert_non_null(v);
		assert_int_equal(pk_strmap_put(m, key, v, NULL), PK_OK);
	}
	pk_strmap_free(m, free); /* valgrind and ASan see a leak if not */
}

static void test_hash(void **state)
{
	(void)state;
	/* FNV-1a 64 reference values: "" is the offset basis, 14695981039346656037 */
	assert_true(pk_strmap_hash("") == 14695981039346656037ULL);
	assert_true(pk_strmap_hash("") == 0xcbf29ce484222325ULL);
	assert_true(pk_strmap_hash("a") == 0xaf63dc4c8601ec8cULL);
	assert_true(pk_strmap_hash("foobar") == 0x85944171f73967e8ULL);
	assert_true(pk_strmap_hash("ns/a") != pk_strmap_hash("ns/b"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_put_get_replace_remove),
	    cmocka_unit_test(test_many_keys),
	    cmocka_unit_test(test_shrink_and_grow_again),
	    cmocka_unit_test(test_hashed_calls),
	    cmocka_unit_test(test_free_values),
	    cmocka_unit_test(test_hash),
	};
	return cmocka_run_group_tests_name("strmap", tests, NULL, NULL);
}
