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
#include <stdio.h>
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
	size_t over = 0;
	struct item *it =
	    pk_trim_pack(pk_trim_claim(whole), offsetof(struct item, data), sizeof(key), &n, &over);
	assert_non_null(it);
	assert_true(n > 0);
	assert_int_equal(over, 0);
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
	size_t over = 0;
	unsigned char *p = pk_trim_pack(pk_trim_claim(whole), 0, 0, &n, &over);
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
	size_t over = 0;
	assert_null(pk_trim_pack(NULL, 16, 8, &n, &over));
	assert_int_equal(n, 7);
	/* A trim of something that is not an object is NULL, so no item either. */
	json_t *s = json_string("not an object");
	assert_null(pk_trim_pack(pk_trim_pool(s), 16, 8, &n, &over));
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
	size_t over = 0;
	assert_null(pk_trim_pack(deep, 0, 0, &n, &over));
}

static void sizes_that_overflow(void **state)
{
	(void)state;
	json_t *whole = claim();
	size_t n = 0;
	size_t over = 0;
	assert_null(pk_trim_pack(pk_trim_claim(whole), SIZE_MAX - 4, 8, &n, &over));
	assert_null(pk_trim_pack(pk_trim_claim(whole), 8, SIZE_MAX - 4, &n, &over));
	assert_null(pk_trim_pack(pk_trim_claim(whole), SIZE_MAX / 2, SIZE_MAX / 2, &n, &over));
	json_decref(whole);
}

/* n distinct strings of 91 characters (the CRD's maxLength for an address entry): an IPv6
 * range "a-b" of full-length addresses, with a CIDR-like tail. */
static json_t *entries(size_t n, unsigned salt)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		char e[92];
		int w = snprintf(e, sizeof(e),
		                 "fd%02x:%04zx:0000:0000:0000:0000:0000:0000-"
		                 "fd%02x:%04zx:ffff:ffff:ffff:ffff:ffff:ffff/128",
		                 salt, i, salt, i);
		assert_true(w > 0 && (size_t)w < sizeof(e));
		while (w < 91)
			e[w++] = '0';
		e[91] = '\0';
		assert_int_equal(json_array_append_new(a, json_string(e)), 0);
	}
	return a;
}

/* A pool at its CRD's maxima (charts/poolkeeper/crds): the biggest legitimate cached object. */
static json_t *biggest_pool(void)
{
	json_t *q = json_array();
	for (size_t i = 0; i < 1024; i++) {
		char a[46];
		snprintf(a, sizeof(a), "fd00:0000:0000:0000:0000:0000:%04zx:%04zx", i, i);
		assert_int_equal(
		    json_array_append_new(
		        q, json_pack("{s:s, s:s}", "address", a, "until", "2026-01-02T03:04:05Z")),
		    0);
	}
	char msg[1025];
	memset(msg, 'm', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	json_t *p = json_pack(
	    "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:I, s:[s]}, s:{s:o, s:o, s:i, s:s, s:I}, "
	    "s:{s:{s:s, s:s, s:s, s:s}, s:o, s:[{s:s, s:s, s:s, s:s, s:s, s:I}]}}",
	    "apiVersion", PK_POOL_GROUP "/" PK_POOL_VERSION, "kind", PK_POOL_KIND, "metadata",
	    "name", "nodes", "namespace", "team-a", "uid", "0f8fad5b-d9cb-469f-a165-70867728950e",
	    "resourceVersion", "123456789", "generation", (json_int_t)7, "finalizers",
	    PK_POOL_FINALIZER, "spec", "addresses", entries(1024, 1), "excludedAddresses",
	    entries(1024, 2), "prefix", 64, "gateway", "fd00::1", "addressReuseGracePeriodSeconds",
	    (json_int_t)86400, "status", "ipAddresses", "total",
	    "340282366920938463463374607431768211456", "used", "1024", "free",
	    "340282366920938463463374607431768210432", "outOfRange", "0", "quarantinedAddresses", q,
	    "conditions", "type", "Ready", "status", "True", "reason", "Ready", "message", msg,
	    "lastTransitionTime", "2026-01-02T03:04:05Z", "observedGeneration", (json_int_t)7);
	assert_non_null(p);
	return p;
}

/* The biggest legitimate object is kept whole, with margin under the cap. */
static void biggest_pool_under_the_cap(void **state)
{
	(void)state;
	json_t *whole = biggest_pool();
	size_t n = 0, over = 1;
	unsigned char *p = pk_trim_pack(pk_trim_pool(whole), 0, 0, &n, &over);
	assert_non_null(p);
	assert_int_equal(over, 0);
	print_message("biggest pool: %zu bytes packed, cap %u\n", n, PK_TRIM_MAX_BYTES);
	assert_true(n < PK_TRIM_MAX_BYTES / 4 * 3); /* a quarter of margin at least */
	json_t *back = pk_jpack_decode(p, n);
	json_t *want = pk_trim_pool(whole);
	assert_true(json_equal(back, want));
	json_decref(want);
	json_decref(back);
	json_decref(whole);
	free(p);
}

/* Over the cap: the item holds the object's identity only, and *over its packed size. */
static void over_the_cap_keeps_identity(void **state)
{
	(void)state;
	json_t *whole = biggest_pool();
	/* 4,096 more entries of 91 characters: about 370 KB more */
	json_t *more = entries(4096, 3);
	assert_int_equal(
	    json_array_extend(json_object_get(json_object_get(whole, "spec"), "addresses"), more),
	    0);
	json_decref(more);
	size_t n = 0, over = 0;
	struct item *it =
	    pk_trim_pack(pk_trim_pool(whole), offsetof(struct item, data), 4, &n, &over);
	assert_non_null(it);
	assert_true(over > PK_TRIM_MAX_BYTES);
	assert_true(n < 256);
	json_t *back = pk_jpack_decode(it->data, n);
	assert_non_null(back);
	char *text = json_dumps(back, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(text, "{\"metadata\":{\"name\":\"nodes\",\"namespace\":\"team-a\","
	                          "\"resourceVersion\":\"123456789\","
	                          "\"uid\":\"0f8fad5b-d9cb-469f-a165-70867728950e\"}}");
	free(text);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(it->data[n + i], 0);
	json_decref(back);
	json_decref(whole);
	free(it);
}

/* Just at the cap is kept whole; one byte over is not. */
static void at_the_cap(void **state)
{
	(void)state;
	/* a pool whose one member grows until the packed object is exactly at the cap */
	json_t *o = json_pack("{s:{s:s}, s:{s:s}}", "metadata", "name", "p", "spec", "gateway", "");
	unsigned char *p;
	size_t n;
	assert_int_equal(pk_jpack_encode(o, &p, &n), PK_OK);
	free(p);
	size_t len = PK_TRIM_MAX_BYTES - n;
	char *big = malloc(len + 2);
	assert_non_null(big);
	for (int extra = 0; extra < 8; extra++) {
		memset(big, 'a', len);
		big[len] = '\0';
		json_object_set_new(json_object_get(o, "spec"), "gateway", json_string(big));
		assert_int_equal(pk_jpack_encode(o, &p, &n), PK_OK);
		free(p);
		if (n == PK_TRIM_MAX_BYTES)
			break;
		len -= n - PK_TRIM_MAX_BYTES; /* the length's own encoding may have grown */
	}
	assert_int_equal(n, PK_TRIM_MAX_BYTES);
	size_t got = 0, over = 1;
	p = pk_trim_pack(pk_trim_pool(o), 0, 0, &got, &over);
	assert_int_equal(over, 0);
	assert_int_equal(got, PK_TRIM_MAX_BYTES);
	free(p);
	memset(big, 'a', len + 1);
	big[len + 1] = '\0';
	json_object_set_new(json_object_get(o, "spec"), "gateway", json_string(big));
	p = pk_trim_pack(pk_trim_pool(o), 0, 0, &got, &over);
	assert_int_equal(over, PK_TRIM_MAX_BYTES + 1);
	assert_true(got < 64);
	free(p);
	free(big);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(packs_between_header_and_tail),
	    cmocka_unit_test(no_header_no_tail),
	    cmocka_unit_test(nothing_to_pack),
	    cmocka_unit_test(unpackable_is_released),
	    cmocka_unit_test(sizes_that_overflow),
	    cmocka_unit_test(biggest_pool_under_the_cap),
	    cmocka_unit_test(over_the_cap_keeps_identity),
	    cmocka_unit_test(at_the_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
