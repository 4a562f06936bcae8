/* test_suggest.c - edit distance and "did you mean". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "suggest.h"

static size_t dist(const char *a, const char *b)
{
	return pk_edit_distance(a, strlen(a), b, strlen(b));
}

static void test_distance(void **state)
{
	(void)state;
	assert_int_equal(dist("", ""), 0);
	assert_int_equal(dist("IPPool", "IPPool"), 0);
	assert_int_equal(dist("IPpool", "IPPool"), 1);                      /* substitution */
	assert_int_equal(dist("excludeAddresses", "excludedAddresses"), 1); /* insertion */
	assert_int_equal(dist("kitten", "sitting"), 3);
	assert_int_equal(dist("", "abc"), 3);
	assert_int_equal(dist("abc", ""), 3);
	char longer[PK_SUGGEST_MAX_LEN + 2];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	assert_int_equal(dist(longer, "a"), PK_SUGGEST_FAR);
}

static void test_suggest(void **state)
{
	(void)state;
	static const char *const fields[] = {"addresses", "excludedAddresses", "prefix", "gateway"};
	const char *w = "excludeAddresses";
	assert_string_equal(pk_suggest(w, strlen(w), fields, 4, 3), "excludedAddresses");
	w = "prefix";
	assert_string_equal(pk_suggest(w, strlen(w), fields, 4, 3), "prefix");
	w = "nameservers"; /* nothing near: no suggestion */
	assert_null(pk_suggest(w, strlen(w), fields, 4, 3));
	w = "gatway";
	assert_null(pk_suggest(w, strlen(w), fields, 4, 0)); /* only exact matches */
	assert_null(pk_suggest(w, strlen(w), fields, 0, 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_distance),
	    cmocka_unit_test(test_suggest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
