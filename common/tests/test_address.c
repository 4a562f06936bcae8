/* test_address.c - parsing and formatting of single addresses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "address.h"

struct good {
	const char *in;
	enum pk_family family;
	const char *canonical;
};

static const struct good goods[] = {
    {"0.0.0.0", PK_FAMILY_V4, "0.0.0.0"},
    {"10.0.0.1", PK_FAMILY_V4, "10.0.0.1"},
    {"255.255.255.255", PK_FAMILY_V4, "255.255.255.255"},
    {"192.168.0.0", PK_FAMILY_V4, "192.168.0.0"},
    {"::", PK_FAMILY_V6, "::"},
    {"::1", PK_FAMILY_V6, "::1"},
    {"2001:0db8::1", PK_FAMILY_V6, "2001:db8::1"},
    {"2001:DB8:0:0:0:0:0:1", PK_FAMILY_V6, "2001:db8::1"},
    {"2001:db8:0:0:1:0:0:1", PK_FAMILY_V6, "2001:db8::1:0:0:1"},
    {"fe80::", PK_FAMILY_V6, "fe80::"},
    {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PK_FAMILY_V6,
     "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
    /* IPv4-mapped stays IPv6 */
    {"::ffff:10.0.0.1", PK_FAMILY_V6, "::ffff:10.0.0.1"},
    {"::ffff:a00:1", PK_FAMILY_V6, "::ffff:10.0.0.1"},
    /* deprecated IPv4-compatible ::/96 is printed in hex, as net/netip does */
    {"::10.0.0.1", PK_FAMILY_V6, "::a00:1"},
    {"::0.0.0.2", PK_FAMILY_V6, "::2"},
    {"::ffff:ffff", PK_FAMILY_V6, "::ffff:ffff"},
};

struct bad {
	const char *in;
	const char *must_say;
};

static const struct bad bads[] = {
    {"", "empty"},
    {" 10.0.0.1", "whitespace"},
    {"10.0.0.1 ", "whitespace"},
    {"10.0.0.1\n", "whitespace"},
    {"10.0. 0.1", "whitespace"},
    {"fe80::1%eth0", "zone"},
    {"fe80::1%1", "zone"},
    {"010.0.0.1", "leading zero"},
    {"10.00.0.1", "leading zero"},
    {"10.0.0.01", "leading zero"},
    {"256.0.0.1", "not an IPv4 or IPv6 address"},
    {"10.0.0", "not an IPv4 or IPv6 address"},
    {"10.0.0.1.2", "not an IPv4 or IPv6 address"},
    {"1.2.3.-4", "not an IPv4 or IPv6 address"},
    {"0x0a.0.0.1", "not an IPv4 or IPv6 address"},
    {"hello", "not an IPv4 or IPv6 address"},
    {"2001:db8::1::2", "not a valid IPv6 address"},
    {"2001:db8:::1", "not a valid IPv6 address"},
    {"12345::", "not a valid IPv6 address"},
    {"1:2:3:4:5:6:7:8:9", "not a valid IPv6 address"},
    {"[::1]", "not a valid IPv6 address"},
    {"::ffff:10.0.0.256", "not a valid IPv6 address"},
    {"0000:0000:0000:0000:0000:0000:0000:0000:000000", "too long"},
    {"10.0.0.1/24", "not an IPv4 or IPv6 address"},
    {"caf\xc3\xa9::1", "not an IPv4 or IPv6 address"},
};

static void test_good(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		struct pk_addr a;
		struct pk_err err;
		char buf[PK_ADDR_STRLEN];
		int rc = pk_address_parse(goods[i].in, &a, "spec.gateway", &err);
		if (rc != PK_OK)
			fail_msg("%s: %s", goods[i].in, err.msg);
		assert_int_equal(a.family, goods[i].family);
		assert_string_equal(pk_address_format(&a, buf), goods[i].canonical);
		/* Canonical text parses back to the same value. */
		struct pk_addr b;
		assert_int_equal(pk_address_parse(buf, &b, NULL, &err), PK_OK);
		assert_true(a.v == b.v && a.family == b.family);
	}
}

static void test_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct pk_addr a;
		struct pk_err err;
		int rc = pk_address_parse(bads[i].in, &a, "spec.gateway", &err);
		if (rc != PK_ERR_INVALID)
			fail_msg("accepted %s", bads[i].in);
		if (strstr(err.msg, bads[i].must_say) == NULL)
			fail_msg("%s: message \"%s\" lacks \"%s\"", bads[i].in, err.msg,
			         bads[i].must_say);
		/* The message names the field. */
		assert_non_null(strstr(err.msg, "spec.gateway"));
	}
}

static void test_values(void **state)
{
	(void)state;
	struct pk_addr a;
	struct pk_err err;
	assert_int_equal(pk_address_parse("255.255.255.255", &a, NULL, &err), PK_OK);
	assert_true(a.v == 0xffffffffu);
	assert_int_equal(
	    pk_address_parse("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", &a, NULL, &err), PK_OK);
	assert_true(a.v == PK_U128_MAX);
	assert_int_equal(pk_address_parse("::ffff:10.0.0.1", &a, NULL, &err), PK_OK);
	assert_true(a.v == (((pk_u128)0xffff << 32) | 0x0a000001));
	/* Never equal to the IPv4 address it embeds. */
	struct pk_addr v4;
	assert_int_equal(pk_address_parse("10.0.0.1", &v4, NULL, &err), PK_OK);
	assert_true(v4.v != a.v || v4.family != a.family);
}

static void test_nul_and_long(void **state)
{
	(void)state;
	struct pk_addr a;
	struct pk_err err;
	const char embedded[] = "10.0.0.1\0garbage";
	/* parse_n sees the NUL as part of the input and refuses it. */
	assert_int_equal(pk_address_parse_n(embedded, sizeof(embedded) - 1, &a, "x", &err),
	                 PK_ERR_INVALID);
	char huge[100000];
	memset(huge, '1', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	assert_int_equal(pk_address_parse(huge, &a, "x", &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "too long"));
	assert_true(strlen(err.msg) < 300);
	assert_int_equal(pk_address_parse(NULL, &a, "x", &err), PK_ERR_INVALID);
}

static void test_netmask(void **state)
{
	(void)state;
	pk_u128 f, l;
	assert_true(pk_address_netmask(PK_FAMILY_V4, 0) == 0);
	assert_true(pk_address_netmask(PK_FAMILY_V4, 32) == 0xffffffffu);
	assert_true(pk_address_netmask(PK_FAMILY_V4, 24) == 0xffffff00u);
	assert_true(pk_address_netmask(PK_FAMILY_V6, 128) == PK_U128_MAX);
	assert_true(pk_address_netmask(PK_FAMILY_V6, 0) == 0);
	assert_true(pk_address_netmask(PK_FAMILY_V6, 64) == (PK_U128_MAX << 64));
	pk_address_subnet(0x0a0000ffu, PK_FAMILY_V4, 24, &f, &l);
	assert_true(f == 0x0a000000u && l == 0x0a0000ffu);
	pk_address_subnet(PK_U128_MAX, PK_FAMILY_V6, 0, &f, &l);
	assert_true(f == 0 && l == PK_U128_MAX);
	pk_address_subnet(0x12345678u, PK_FAMILY_V4, 0, &f, &l);
	assert_true(f == 0 && l == 0xffffffffu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good),    cmocka_unit_test(test_bad),
	    cmocka_unit_test(test_values),  cmocka_unit_test(test_nul_and_long),
	    cmocka_unit_test(test_netmask),
	};
	return cmocka_run_group_tests_name("address", tests, NULL, NULL);
}
