/* test_addr_spec.c - pool address entries: single, range, CIDR. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "addr_spec.h"

struct good {
	const char *in;
	enum pk_addr_spec_kind kind;
	enum pk_family family;
	const char *first;
	const char *last;
};

static const struct good goods[] = {
    {"10.0.0.5", PK_SPEC_SINGLE, PK_FAMILY_V4, "10.0.0.5", "10.0.0.5"},
    {"10.0.0.10-10.0.0.20", PK_SPEC_RANGE, PK_FAMILY_V4, "10.0.0.10", "10.0.0.20"},
    {"10.0.0.10-10.0.0.10", PK_SPEC_RANGE, PK_FAMILY_V4, "10.0.0.10", "10.0.0.10"},
    {"10.0.0.0/24", PK_SPEC_CIDR, PK_FAMILY_V4, "10.0.0.0", "10.0.0.255"},
    {"10.0.0.0/31", PK_SPEC_CIDR, PK_FAMILY_V4, "10.0.0.0", "10.0.0.1"},
    {"10.0.0.7/32", PK_SPEC_CIDR, PK_FAMILY_V4, "10.0.0.7", "10.0.0.7"},
    {"0.0.0.0/0", PK_SPEC_CIDR, PK_FAMILY_V4, "0.0.0.0", "255.255.255.255"},
    {"10.0.0.0/8", PK_SPEC_CIDR, PK_FAMILY_V4, "10.0.0.0", "10.255.255.255"},
    {"::/0", PK_SPEC_CIDR, PK_FAMILY_V6, "::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
    {"2001:db8::/64", PK_SPEC_CIDR, PK_FAMILY_V6, "2001:db8::", "2001:db8::ffff:ffff:ffff:ffff"},
    {"2001:db8::/127", PK_SPEC_CIDR, PK_FAMILY_V6, "2001:db8::", "2001:db8::1"},
    {"2001:db8::1/128", PK_SPEC_CIDR, PK_FAMILY_V6, "2001:db8::1", "2001:db8::1"},
    {"::1", PK_SPEC_SINGLE, PK_FAMILY_V6, "::1", "::1"},
    {"::", PK_SPEC_SINGLE, PK_FAMILY_V6, "::", "::"},
    {"2001:db8::1-2001:db8::ff", PK_SPEC_RANGE, PK_FAMILY_V6, "2001:db8::1", "2001:db8::ff"},
    /* ranges across the 2^32 and 2^64 boundaries of the 128-bit value */
    {"::ffff:ffff-::1:0:0", PK_SPEC_RANGE, PK_FAMILY_V6, "::ffff:ffff", "::1:0:0"},
    {"::ffff:ffff:ffff:ffff-::1:0:0:0:0", PK_SPEC_RANGE, PK_FAMILY_V6, "::ffff:ffff:ffff:ffff",
     "0:0:0:1::"},
    {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
     PK_SPEC_RANGE, PK_FAMILY_V6, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0",
     "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
    {"255.255.255.0-255.255.255.255", PK_SPEC_RANGE, PK_FAMILY_V4, "255.255.255.0",
     "255.255.255.255"},
};

struct bad {
	const char *in;
	const char *must_say;
};

static const struct bad bads[] = {
    {"", "empty"},
    {"10.0.0.1/24", "did you mean 10.0.0.0/24?"},
    {"10.0.0.255/23", "did you mean 10.0.0.0/23?"},
    {"2001:db8::1/64", "did you mean 2001:db8::/64?"},
    {"192.168.1.130/25", "did you mean 192.168.1.128/25?"},
    {"10.0.0.0/33", "0..32"},
    {"2001:db8::/129", "0..128"},
    {"10.0.0.0/", "prefix length"},
    {"10.0.0.0/-1", "prefix length"},
    {"10.0.0.0/024", "prefix length"},
    {"10.0.0.0/2a", "prefix length"},
    {"10.0.0.0/ 24", "prefix length"},
    {"10.0.0.20-10.0.0.10", "starts after it ends"},
    {"2001:db8::ff-2001:db8::1", "starts after it ends"},
    {"10.0.0.1-2001:db8::1", "mixes an IPv4 start and an IPv6 end"},
    {"2001:db8::1-10.0.0.1", "mixes an IPv6 start and an IPv4 end"},
    {"10.0.0.1-", "end"},
    {"-10.0.0.1", "start"},
    {"10.0.0.1-10.0.0.2-10.0.0.3", "more than one '-'"},
    {"10.0.0.0/24-10.0.1.0", "prefix length \"24-10.0.1.0\""},
    {"10.0.0.1-10.0.0.0/24", "mixes a range and a CIDR"},
    {"10.0.0.300", "not an IPv4 or IPv6 address"},
    {"10.0.0.1 - 10.0.0.5", "whitespace"},
    {"fe80::1%eth0/64", "zone"},
    {"010.0.0.0/8", "leading zero"},
};

static void test_good(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		struct pk_addr_spec sp;
		struct pk_err err;
		char f[PK_ADDR_STRLEN], l[PK_ADDR_STRLEN];
		if (pk_addr_spec_parse(goods[i].in, &sp, "spec.addresses[0]", &err) != PK_OK)
			fail_msg("%s: %s", goods[i].in, err.msg);
		assert_int_equal(sp.kind, goods[i].kind);
		assert_int_equal(sp.family, goods[i].family);
		assert_string_equal(pk_address_format_v(sp.first, sp.family, f), goods[i].first);
		assert_string_equal(pk_address_format_v(sp.last, sp.family, l), goods[i].last);
	}
}

static void test_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct pk_addr_spec sp;
		struct pk_err err;
		if (pk_addr_spec_parse(bads[i].in, &sp, "spec.addresses[3]", &err) !=
		    PK_ERR_INVALID)
			fail_msg("accepted \"%s\"", bads[i].in);
		if (strstr(err.msg, bads[i].must_say) == NULL)
			fail_msg("\"%s\": message \"%s\" lacks \"%s\"", bads[i].in, err.msg,
			         bads[i].must_say);
		assert_non_null(strstr(err.msg, "spec.addresses[3]"));
	}
}

static void test_sizes(void **state)
{
	(void)state;
	struct pk_addr_spec sp;
	struct pk_err err;
	assert_int_equal(pk_addr_spec_parse("::/0", &sp, NULL, &err), PK_OK);
	assert_true(sp.first == 0 && sp.last == PK_U128_MAX && sp.prefix_len == 0);
	assert_int_equal(pk_addr_spec_parse("0.0.0.0/0", &sp, NULL, &err), PK_OK);
	assert_true(sp.first == 0 && sp.last == 0xffffffffu);
	char big[4096];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(pk_addr_spec_parse(big, &sp, "x", &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "too long"));
	assert_int_equal(pk_addr_spec_parse(NULL, &sp, "x", &err), PK_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good),
	    cmocka_unit_test(test_bad),
	    cmocka_unit_test(test_sizes),
	};
	return cmocka_run_group_tests_name("addr_spec", tests, NULL, NULL);
}
