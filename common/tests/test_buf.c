/*
 * test_buf.c - the capped buffer: appends stay NUL-terminated, the cap is
 * exact (max bytes fit, one more is PK_ERR_TOO_BIG and changes nothing),
 * memory never passes max + 1; array growth doubles and refuses overflow.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"

static void test_append_and_take(void **state)
{
	(void)state;
	struct pk_buf b;
	pk_buf_init(&b, 1 << 20);
	assert_null(b.p);
	assert_int_equal(pk_buf_append(&b, "abc", 3), PK_OK);
	assert_int_equal(pk_buf_append(&b, "", 0), PK_OK);
	assert_int_equal(pk_buf_append(&b, "de", 2), PK_OK);
	assert_int_equal(b.len, 5);
	assert_string_equal(b.p, "abcde");
	assert_true(b.cap >= PK_BUF_FIRST);
	size_t len = 0;
	char *p = pk_buf_take(&b, &len);
	assert_string_equal(p, "abcde");
	assert_int_equal(len, 5);
	free(p);
	/* empty again, same cap */
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.max, 1 << 20);
	/* an empty buffer hands over "" */
	p = pk_buf_take(&b, NULL);
	assert_string_equal(p, "");
	free(p);
	pk_buf_free(&b);
}

static void test_cap_is_exact(void **state)
{
	(void)state;
	struct pk_buf b;
	pk_buf_init(&b, 1000);
	char chunk[300];
	memset(chunk, 'x', sizeof(chunk));
	for (int i = 0; i < 3; i++)
		assert_int_equal(pk_buf_append(&b, chunk, sizeof(chunk)), PK_OK);
	/* 900 held: 100 more fit, 101 do not, and a refused append changes nothing */
	assert_int_equal(pk_buf_append(&b, chunk, 101), PK_ERR_TOO_BIG);
	assert_int_equal(b.len, 900);
	assert_int_equal(b.p[900], '\0');
	assert_int_equal(pk_buf_append(&b, chunk, 100), PK_OK);
	assert_int_equal(b.len, 1000);
	assert_true(b.cap <= 1001); /* never more than the cap allows */
	assert_int_equal(pk_buf_append(&b, "y", 1), PK_ERR_TOO_BIG);
	assert_int_equal(pk_buf_reserve(&b, 1), PK_ERR_TOO_BIG);
	assert_int_equal(pk_buf_reserve(&b, 0), PK_OK);
	/* a huge n cannot wrap around the check */
	assert_int_equal(pk_buf_append(&b, chunk, SIZE_MAX), PK_ERR_TOO_BIG);
	pk_buf_clear(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.p, "");
	assert_int_equal(pk_buf_append(&b, "z", 1), PK_OK);
	assert_string_equal(b.p, "z");
	pk_buf_free(&b);
	assert_null(b.p);
	pk_buf_free(&b); /* twice is fine */

	/* a cap of zero holds nothing */
	pk_buf_init(&b, 0);
	assert_int_equal(pk_buf_append(&b, "a", 1), PK_ERR_TOO_BIG);
	char *p = pk_buf_take(&b, NULL);
	assert_string_equal(p, "");
	free(p);
}

/* A known size is allocated at once; small appends start at PK_BUF_FIRST and double. */
static void test_reserve(void **state)
{
	(void)state;
	struct pk_buf b;
	pk_buf_init(&b, 1 << 20);
	assert_int_equal(pk_buf_reserve(&b, 5000), PK_OK);
	assert_int_equal(b.cap, 5001);
	char *p = b.p;
	char chunk[5000];
	memset(chunk, 'x', sizeof(chunk));
	assert_int_equal(pk_buf_append(&b, chunk, sizeof(chunk)), PK_OK);
	assert_ptr_equal(b.p, p); /* no second allocation */
	assert_int_equal(pk_buf_append(&b, "y", 1), PK_OK);
	assert_int_equal(b.cap, 10002);
	pk_buf_free(&b);

	pk_buf_init(&b, 1 << 20);
	assert_int_equal(pk_buf_append(&b, "a", 1), PK_OK);
	assert_int_equal(b.cap, PK_BUF_FIRST);
	assert_int_equal(pk_buf_append(&b, chunk, PK_BUF_FIRST), PK_OK);
	assert_int_equal(b.cap, 2 * PK_BUF_FIRST);
	pk_buf_free(&b);
}

struct span {
	size_t a, b;
};

/* printf-style appends: past the first allocation, exactly at the cap, and refused past it
 * with the buffer unchanged. */
static void test_printf(void **state)
{
	(void)state;
	struct pk_buf b;
	pk_buf_init(&b, 300);
	assert_int_equal(pk_buf_printf(&b, "%s=%d;", "a", 1), PK_OK);
	assert_string_equal(b.p, "a=1;");
	for (int i = 0; i < 59; i++)
		assert_int_equal(pk_buf_printf(&b, "%05d", i), PK_OK);
	assert_int_equal(b.len, 4 + 59 * 5);
	assert_string_equal(b.p + b.len - 5, "00058");
	assert_int_equal(pk_buf_printf(&b, "%c", 'z'), PK_OK); /* 300: at the cap */
	assert_int_equal(b.len, 300);
	assert_int_equal(pk_buf_printf(&b, "%c", 'y'), PK_ERR_TOO_BIG);
	assert_int_equal(b.len, 300);
	assert_int_equal(b.p[300], '\0');
	assert_int_equal(b.p[299], 'z');
	assert_int_equal(pk_buf_printf(&b, "%s", ""), PK_OK); /* nothing to add fits */
	pk_buf_free(&b);
}

static void test_array_reserve(void **state)
{
	(void)state;
	struct span *items = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < 1000; i++) {
		assert_int_equal(pk_array_reserve(&items, &cap, n + 1, sizeof(*items)), PK_OK);
		items[n++] = (struct span){i, 2 * i};
	}
	assert_int_equal(cap, 1024); /* 16 doubled */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(items[i].b, 2 * i);
	/* enough already: nothing moves */
	struct span *before = items;
	assert_int_equal(pk_array_reserve(&items, &cap, 10, sizeof(*items)), PK_OK);
	assert_ptr_equal(items, before);
	/* sizes that would overflow are refused, the array kept */
	assert_int_equal(pk_array_reserve(&items, &cap, SIZE_MAX / 4, sizeof(*items)),
	                 PK_ERR_NOMEM);
	assert_int_equal(pk_array_reserve(&items, &cap, SIZE_MAX, 1), PK_ERR_NOMEM);
	assert_ptr_equal(items, before);
	assert_int_equal(cap, 1024);
	free(items);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_append_and_take), cmocka_unit_test(test_cap_is_exact),
	    cmocka_unit_test(test_reserve),         cmocka_unit_test(test_printf),
	    cmocka_unit_test(test_array_reserve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
