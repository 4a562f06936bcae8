/*
 * test_jpack.c - the packed JSON form: every value comes back equal and
 * printed the same; the strings it shortens are exactly the canonical ones;
 * bytes that are not a packed value are refused.
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

#include "jpack.h"

static json_t *parse(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
	if (v == NULL)
		fail_msg("does not parse: %s: %s", e.text, text);
	return v;
}

/* Packs v, checks it comes back printing exactly the same, returns the packed size. */
static size_t round_trip(const json_t *v)
{
	unsigned char *p;
	size_t n;
	assert_int_equal(pk_jpack_encode(v, &p, &n), PK_OK);
	assert_non_null(p);
	json_t *back = pk_jpack_decode(p, n);
	free(p);
	assert_non_null(back);
	assert_true(json_equal(v, back));
	char *a = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY),
	     *b = json_dumps(back, JSON_COMPACT | JSON_ENCODE_ANY);
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a, b);
	free(a);
	free(b);
	json_decref(back);
	return n;
}

static size_t round_trip_text(const char *text)
{
	json_t *v = parse(text);
	size_t n = round_trip(v);
	json_decref(v);
	return n;
}

/* The packed size of one JSON string. */
static size_t string_size(const char *s)
{
	json_t *v = json_string(s);
	assert_non_null(v);
	size_t n = round_trip(v);
	json_decref(v);
	return n;
}

static void test_scalars(void **state)
{
	(void)state;
	const char *values[] = {
	    "null",
	    "true",
	    "false",
	    "0",
	    "1",
	    "-1",
	    "63",
	    "-64",
	    "9223372036854775807",
	    "-9223372036854775808",
	    "0.5",
	    "-0.0",
	    "1e300",
	    "3.141592653589793",
	    "\"\"",
	    "\"plain text\"",
	    "\"caf\\u00e9 \\u65e5\\u672c \\ud83d\\ude00\"",
	    "\"tab\\tnew\\nline\\\"quote\\\\\"",
	    "[]",
	    "{}",
	    "[[], {}, [[]], {\"a\": {}}]",
	};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		(void)round_trip_text(values[i]);
	/* a string with a NUL inside (jansson allows it in values) */
	const struct {
		const char *s;
		size_t n;
	} nuls[] = {{"a\0b", 3}, {"10.0.0.1\0005", 10}, {"fe80::1\0:", 9}, {"48213\0", 6}};
	for (size_t i = 0; i < sizeof(nuls) / sizeof(nuls[0]); i++) {
		json_t *nul = json_stringn(nuls[i].s, nuls[i].n);
		assert_non_null(nul);
		(void)round_trip(nul);
		json_decref(nul);
	}
}

/* Members stay in their order; keys take every form strings do. */
static void test_objects_keep_order_and_keys(void **state)
{
	(void)state;
	(void)round_trip_text("{\"z\":1,\"a\":2,\"metadata\":3,\"m\":[1,\"x\",null]}");
	(void)round_trip_text(
	    "{\"5b0c7a1e-0000-4000-8000-000000000001\":1,\"48213\":2,"
	    "\"2026-01-02T03:04:05Z\":3,\"10.0.0.1\":4,\"fe80::1\":5,\"\":6,\"name\":7}");
	/* a key longer than the decoder's stack buffer */
	char key[300];
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	json_t *o = json_object();
	assert_int_equal(json_object_set_new(o, key, json_integer(1)), 0);
	(void)round_trip(o);
	json_decref(o);
}

/* Canonical forms are shortened; anything that would not print back the same stays text. */
static void test_canonical_forms_only(void **state)
{
	(void)state;
	/* dictionary words: one byte */
	assert_int_equal(string_size("ipam.poolkeeper.io"), 1);
	assert_int_equal(string_size("IPAddressClaim"), 1);
	assert_int_equal(string_size(""), 1);
	/* UUIDs: tag and 16 bytes; upper case or misplaced dashes stay text */
	assert_int_equal(string_size("5b0c7a1e-0000-4000-8000-00000000000f"), 17);
	assert_int_equal(string_size("5B0C7A1E-0000-4000-8000-00000000000F"), 2 + 36);
	assert_int_equal(string_size("5b0c7a1e0-000-4000-8000-00000000000f"), 2 + 36);
	assert_int_equal(string_size("5b0c7a1e-0000-4000-8000-00000000000g"), 2 + 36);
	/* decimal strings: no leading zero, at most 19 digits */
	assert_int_equal(string_size("0"), 2);
	assert_int_equal(string_size("48213"), 4);
	assert_true(string_size("9999999999999999999") <= 11);
	assert_int_equal(string_size("007"), 2 + 3);
	assert_int_equal(string_size("18446744073709551615"), 2 + 20);
	assert_int_equal(string_size("-1"), 2 + 2);
	assert_int_equal(string_size("+1"), 2 + 2);
	/* times: exactly YYYY-MM-DDTHH:MM:SSZ, a real date, from 1970 */
	assert_true(string_size("2026-01-02T03:04:05Z") <= 6);
	assert_true(string_size("1970-01-01T00:00:00Z") <= 2);
	assert_true(string_size("9999-12-31T23:59:59Z") <= 7);
	assert_true(string_size("2028-02-29T12:00:00Z") <= 6);
	assert_int_equal(string_size("2026-02-29T12:00:00Z"), 2 + 20);
	assert_int_equal(string_size("2026-02-30T00:00:00Z"), 2 + 20);
	assert_int_equal(string_size("2026-13-01T00:00:00Z"), 2 + 20);
	assert_int_equal(string_size("2026-01-01T24:00:00Z"), 2 + 20);
	assert_int_equal(string_size("2026-01-01T00:00:60Z"), 2 + 20);
	assert_int_equal(string_size("1969-12-31T23:59:59Z"), 2 + 20);
	assert_int_equal(string_size("2026-01-01t00:00:00Z"), 2 + 20);
	assert_int_equal(string_size("2026-01-01T00:00:00+00:00"), 2 + 25);
	assert_int_equal(string_size("2026-01-01T00:00:00.5Z"), 2 + 22);
	/* addresses as inet_ntop prints them */
	assert_int_equal(string_size("10.0.0.1"), 5);
	assert_int_equal(string_size("255.255.255.255"), 5);
	assert_int_equal(string_size("fe80::1"), 17);
	assert_int_equal(string_size("2001:db8::a:0:1"), 17);
	assert_int_equal(string_size("::"), 17);
	assert_int_equal(string_size("010.0.0.1"), 2 + 9);
	assert_int_equal(string_size("10.0.0.256"), 2 + 10);
	assert_int_equal(string_size("10.0.1"), 2 + 6);
	assert_int_equal(string_size("2001:DB8::1"), 2 + 11);
	assert_int_equal(string_size("2001:0db8::1"), 2 + 12);
	assert_int_equal(string_size("10.0.0.0/24"), 2 + 11);
	assert_int_equal(string_size("fe80::1%eth0"), 2 + 12);
}

static void test_api_object_is_smaller(void **state)
{
	(void)state;
	const char *address =
	    "{\"metadata\":{\"name\":\"prod-md-0-x7k2p-ip-0\",\"namespace\":\"team-a\","
	    "\"uid\":\"0b6e1c2a-3f4d-4e5f-8a9b-0c1d2e3f4a5b\",\"resourceVersion\":\"48214\","
	    "\"finalizers\":[\"ipam.poolkeeper.io/protect-address\"],"
	    "\"ownerReferences\":[{\"kind\":\"IPAddressClaim\","
	    "\"uid\":\"5b0c7a1e-0000-4000-8000-000000000001\",\"controller\":true}]},"
	    "\"spec\":{\"address\":\"10.0.0.5\",\"prefix\":24,\"gateway\":\"10.0.0.1\","
	    "\"claimRef\":{\"name\":\"prod-md-0-x7k2p-ip-0\"},"
	    "\"poolRef\":{\"apiGroup\":\"ipam.poolkeeper.io\",\"kind\":\"IPPool\",\"name\":"
	    "\"nodes\"}}}";
	size_t packed = round_trip_text(address);
	size_t text = strlen(address);
	printf("trimmed IPAddress: %zu bytes as compact JSON, %zu packed\n", text, packed);
	assert_true(packed * 3 < text);
}

static void test_depth_limit(void **state)
{
	(void)state;
	/* at the limit: packs; one deeper: refused, nothing allocated */
	json_t *v = json_integer(1);
	for (int i = 0; i < PK_JPACK_MAX_DEPTH; i++) {
		json_t *a = json_array();
		assert_non_null(a);
		assert_int_equal(json_array_append_new(a, v), 0);
		v = a;
	}
	(void)round_trip(v);
	json_t *deeper = json_array();
	assert_int_equal(json_array_append_new(deeper, v), 0);
	unsigned char *p = (unsigned char *)"x";
	size_t n = 7;
	assert_int_equal(pk_jpack_encode(deeper, &p, &n), PK_ERR_INVALID);
	assert_null(p);
	assert_int_equal(n, 0);
	json_decref(deeper);
	assert_int_equal(pk_jpack_encode(NULL, &p, &n), PK_ERR_INVALID);
}

/* Every cut of a packed value, trailing bytes, unknown tags and lengths past the end are
 * refused. */
static void test_malformed_bytes(void **state)
{
	(void)state;
	json_t *v = parse("{\"metadata\":{\"name\":\"a-name\",\"uid\":"
	                  "\"5b0c7a1e-0000-4000-8000-000000000001\",\"resourceVersion\":\"7\"},"
	                  "\"spec\":{\"address\":\"fe80::1\",\"prefix\":64,\"n\":-5,\"r\":0.25,"
	                  "\"t\":\"2026-01-02T03:04:05Z\",\"l\":[true,false,null]}}");
	unsigned char *p;
	size_t n;
	assert_int_equal(pk_jpack_encode(v, &p, &n), PK_OK);
	for (size_t cut = 0; cut < n; cut++)
		assert_null(pk_jpack_decode(p, cut));
	unsigned char *longer = malloc(n + 1);
	assert_non_null(longer);
	memcpy(longer, p, n);
	longer[n] = 0;
	assert_null(pk_jpack_decode(longer, n + 1));
	free(longer);
	free(p);
	json_decref(v);
	assert_null(pk_jpack_decode(NULL, 0));

	static const struct {
		const char *why;
		unsigned char bytes[16];
		size_t n;
	} bad[] = {
	    {"unknown tag", {0x20}, 1},
	    {"dictionary index past its end", {0xff}, 1},
	    {"string length past the end", {0x05, 0x09, 'a', 'b'}, 4},
	    {"varint past 64 bits",
	     {0x03, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},
	     11},
	    {"varint never ends", {0x03, 0x80, 0x80}, 3},
	    {"invalid UTF-8", {0x05, 0x02, 0xc3, 0x28}, 4},
	    {"key with a NUL", {0x0b, 0x01, 0x05, 0x03, 'a', 0, 'b', 0x00}, 8},
	    {"key that is not a string", {0x0b, 0x01, 0x01, 0x00}, 4},
	    {"key with invalid UTF-8", {0x0b, 0x01, 0x05, 0x01, 0xff, 0x00}, 6},
	    {"object shorter than its count", {0x0b, 0x02, 0x43, 0x00}, 4},
	    {"array shorter than its count", {0x0c, 0x03, 0x00, 0x00}, 4},
	    {"decimal past 19 digits",
	     {0x07, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	     11},
	    {"time past year 9999", {0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 8},
	    {"IPv6 cut short", {0x0a, 1, 2, 3}, 4},
	    {"two values", {0x00, 0x00}, 2},
	    {"nothing", {0}, 0},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *got = pk_jpack_decode(bad[i].bytes, bad[i].n);
		if (got != NULL) {
			json_decref(got);
			fail_msg("decoded: %s", bad[i].why);
		}
	}
	/* nesting past the limit: refused without running out of stack */
	size_t deep = 3 * PK_JPACK_MAX_DEPTH;
	unsigned char *nest = malloc(2 * deep + 1);
	assert_non_null(nest);
	for (size_t i = 0; i < deep; i++) {
		nest[2 * i] = 0x0c; /* array */
		nest[2 * i + 1] = 0x01;
	}
	nest[2 * deep] = 0x00;
	assert_null(pk_jpack_decode(nest, 2 * deep + 1));
	free(nest);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scalars),
	    cmocka_unit_test(test_objects_keep_order_and_keys),
	    cmocka_unit_test(test_canonical_forms_only),
	    cmocka_unit_test(test_api_object_is_smaller),
	    cmocka_unit_test(test_depth_limit),
	    cmocka_unit_test(test_malformed_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
