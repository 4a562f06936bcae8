/*
 * test_trim_pack.c - an informer item made by pk_trim_pack: the trimmed
 * object comes back from the packed bytes, the caller's header and tail
 * come zeroed around them, and a missing or unpackable object gives no
 * item (and no leak).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "api.h"
#include "jpack.h"
#include "trim.h"

/* A header with a flexible array member, as the caches' items have. */
struct item {
	uint64_t hash;
	uint32_t len;
	uint32_t flags;
	unsigned char data[];
};

static json_t *claim(void)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:[{s:s}]}, s:{s:{s:s, s:s, s:s}}}",
	                      "apiVersion", PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2, "kind",
	                      PK_CLAIM_KIND, "metadata", "name", "c-1", "namespace", "team-a",
	                      "uid", "0f8fad5b-d9cb-469f-a165-70867728950e", "managedFields",
	                      "manager", "kubectl", "spec", "poolRef", "apiGroup", PK_POOL_GROUP,
	                      "kind", PK_POOL_KIND, "name", "p");
	assert_non_null(o);
	return o;
}

static void packs_between_header_and_tail(void **state)
{
	(void)state;
	json_t *whole = claim();
	json_t *want = pk_trim_claim(whole);
	assert_non_null(want);
	static const char key[] = "IPPool/team-a/p";
	size_t n = 0;
	struct item *it =
	    pk_trim_pack(pk_trim_claim(whole), offsetof(struct item, data), sizeof(key), &n);
	assert_non_null(it);
	assert_true(n > 0);
	assert_int_equal(it->hash, 0);
	assert_int_equal(it->len, 0);
	assert_int_equal(it->flags, 0);
	for (size_t i = 0; i < sizeof(key); i++)
		assert_int_equal(it->data[n + i], 0);
	memcpy(it->data + n, key, sizeof(key)); /* the tail is the caller's */
	json_t *back = pk_jpack_decode(it->data, n);
	assert_non_null(back);
	assert_true(json_equal(back, want));
	assert_null(json_object_get(json_object_get(back, "metadata"), "managedFields"));
	assert_string_equal((const char *)it->data + n, key);
	json_decref(back);
	json_decref(want);
	json_decref(whole);
	free(it);
}

static void no_header_no_tail(void **state)
{
	(void)state;
	json_t *whole = claim();
	size_t n = 0;
	unsigned char *p = pk_trim_pack(pk_trim_claim(whole), 0, 0, &n);
	assert_non_null(p);
	json_t *back = pk_jpack_decode(p, n);
	json_t *want = pk_trim_claim(whole);
	assert_true(json_equal(back, want));
	json_decref(back);
	json_decref(want);
	json_decref(whole);
	free(p);
}

static void nothing_to_pack(void **state)
{
	(void)state;
	size_t n = 7;
	assert_null(pk_trim_pack(NULL, 16, 8, &n));
	assert_int_equal(n, 7);
	/* A trim of something that is not an object is NULL, so no item either. */
	json_t *s = json_string("not an object");
	assert_null(pk_trim_pack(pk_trim_pool(s), 16, 8, &n));
	json_decref(s);
}

static void unpackable_is_released(void **state)
{
	(void)state;
	/* Nested deeper than the packed form takes: refused, and released (valgrind, ASan). */
	json_t *deep = json_object();
	json_t *cur = deep;
	for (int i = 0; i <= PK_JPACK_MAX_DEPTH; i++) {
		json_t *next = json_object();
		json_object_set_new(cur, "a", next);
		cur = next;
	}
	size_t n = 0;
	assert_null(pk_trim_pack(deep, 0, 0, &n));
}

static void sizes_that_overflow(void **state)
{
	(void)state;
	json_t *whole = claim();
	size_t n = 0;
	assert_null(pk_trim_pack(pk_trim_claim(whole), SIZE_MAX - 4, 8, &n));
	assert_null(pk_trim_pack(pk_trim_claim(whole), 8, SIZE_MAX - 4, &n));
	assert_null(pk_trim_pack(pk_trim_claim(whole), SIZE_MAX / 2, SIZE_MAX / 2, &n));
	json_decref(whole);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(packs_between_header_and_tail),
	    cmocka_unit_test(no_header_no_tail),
	    cmocka_unit_test(nothing_to_pack),
	    cmocka_unit_test(unpackable_is_released),
	    cmocka_unit_test(sizes_that_overflow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
