/*
 * test_base64.c - RFC 4648's vectors both ways, binary bytes, whitespace and
 * optional padding on decode, and the inputs no encoder makes refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base64.h"

/* RFC 4648 section 10 */
static const struct {
	const char *plain, *encoded;
} vectors[] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

static void test_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		char *e = pk_base64_encode(vectors[i].plain, strlen(vectors[i].plain));
		assert_non_null(e);
		assert_string_equal(e, vectors[i].encoded);
		free(e);
		unsigned char *d = NULL;
		size_t n = 99;
		assert_int_equal(
		    pk_base64_decode(vectors[i].encoded, strlen(vectors[i].encoded), &d, &n),
		    PK_OK);
		assert_int_equal(n, strlen(vectors[i].plain));
		assert_string_equal((char *)d, vectors[i].plain);
		free(d);
	}
}

/* Every byte value, and every alphabet character ('+' and '/' included), round-trips. */
static void test_binary_round_trip(void **state)
{
	(void)state;
	unsigned char all[256 + 2];
	for (size_t i = 0; i < sizeof(all); i++)
		all[i] = (unsigned char)(255 - i % 256);
	for (size_t len = 0; len <= sizeof(all); len++) {
		char *e = pk_base64_encode(all, len);
		assert_non_null(e);
		assert_int_equal(strlen(e), 4 * ((len + 2) / 3));
		unsigned char *d = NULL;
		size_t n = 0;
		assert_int_equal(pk_base64_decode(e, strlen(e), &d, &n), PK_OK);
		assert_int_equal(n, len);
		assert_memory_equal(d, all, len);
		free(d);
		if (len == sizeof(all)) {
			assert_non_null(strchr(e, '+'));
			assert_non_null(strchr(e, '/'));
		}
		free(e);
	}
}

static void test_decode_lenient_and_strict(void **state)
{
	(void)state;
	unsigned char *d = NULL;
	size_t n = 0;
	/* whitespace and line breaks are ignored, padding is optional */
	const char *wrapped = "Zm9v\nYmFy\r\n Zg";
	assert_int_equal(pk_base64_decode(wrapped, strlen(wrapped), &d, &n), PK_OK);
	assert_int_equal(n, 7);
	assert_memory_equal(d, "foobarf", 7);
	free(d);
	/* refused: a character outside the alphabet, data after padding, a lone digit,
	 * padding where none belongs, the URL-safe alphabet */
	static const char *const bad[] = {
	    "Zm9v!", "Zg==Zg==", "Zm9vY", "Zm9v=", "Zg=", "Zm-_", "Z", "Zm9vYg==="};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		d = (unsigned char *)"x";
		assert_int_equal(pk_base64_decode(bad[i], strlen(bad[i]), &d, &n), PK_ERR_INVALID);
		assert_null(d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_vectors),
	    cmocka_unit_test(test_binary_round_trip),
	    cmocka_unit_test(test_decode_lenient_and_strict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
