/*
 * test_pool.c - decoding pool specs: every wrong type, family and bound is
 * a violation that names the field and quotes the value, and the usable set
 * follows the in-cluster provider's rules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pool.h"

#include "expect_violations.h"

static json_t *load(const char *text)
{
	return load_fixture(text, JSON_ALLOW_NUL);
}

struct bad_case {
	const char *name;
	const char *spec;
	const char *field;
	const char *needle;
};

static const struct bad_case bad_cases[] = {
    {"spec is an array", "[]", "spec", "must be an object"},
    {"spec is null", "null", "spec", "required"},
    {"addresses missing", "{'prefix':24}", "spec.addresses", "required"},
    {"addresses is a string", "{'addresses':'10.0.0.0/24','prefix':24}", "spec.addresses",
     "got \"10.0.0.0/24\" (a string)"},
    {"addresses empty", "{'addresses':[],'prefix':24}", "spec.addresses", "must not be empty"},
    {"entry is a number", "{'addresses':[5],'prefix':24}", "spec.addresses[0]",
     "must be a string (an IP, a range a-b or a CIDR), got 5 (a number)"},
    {"entry is an object", "{'addresses':['10.0.0.1',{}],'prefix':24}", "spec.addresses[1]",
     "got an object"},
    {"entry is null", "{'addresses':[null],'prefix':24}", "spec.addresses[0]", "got null"},
    {"entry does not parse", "{'addresses':['10.0.0.300'],'prefix':24}", "spec.addresses[0]",
     "\"10.0.0.300\""},
    {"empty entry", "{'addresses':[''],'prefix':24}", "spec.addresses[0]", "empty"},
    {"host bits set", "{'addresses':['10.0.0.1/24']}", "spec.addresses[0]",
     "did you mean 10.0.0.0/24?"},
    {"reversed range", "{'addresses':['10.0.0.20-10.0.0.10'],'prefix':24}", "spec.addresses[0]",
     "\"10.0.0.20-10.0.0.10\" starts after it ends"},
    {"range across families", "{'addresses':['10.0.0.1-2001:db8::1'],'prefix':24}",
     "spec.addresses[0]", "mixes an IPv4 start and an IPv6 end"},
    {"IPv6 entry in an IPv4 pool", "{'addresses':['10.0.0.0/24','2001:db8::1'],'prefix':24}",
     "spec.addresses[1]",
     "\"2001:db8::1\" is IPv6 but the pool is IPv4 (spec.addresses[0] \"10.0.0.0/24\")"},
    {"IPv4-mapped IPv6 in an IPv4 pool",
     "{'addresses':['10.0.0.0/24','::ffff:10.0.0.1'],'prefix':24}", "spec.addresses[1]",
     "write 10.0.0.1 for the IPv4 address"},
    {"IPv4 entry in an IPv6 pool", "{'addresses':['2001:db8::/64','10.0.0.1'],'prefix':64}",
     "spec.addresses[1]", "\"10.0.0.1\" is IPv4 but the pool is IPv6"},
    {"excluded of the other family",
     "{'addresses':['10.0.0.0/24'],'excludedAddresses':['2001:db8::/64'],'prefix':24}",
     "spec.excludedAddresses[0]", "\"2001:db8::/64\" is IPv6 but the pool is IPv4"},
    {"gateway of the other family",
     "{'addresses':['10.0.0.0/24'],'gateway':'2001:db8::1','prefix':24}", "spec.gateway",
     "\"2001:db8::1\" is IPv6 but the pool is IPv4"},
    {"prefix is a string", "{'addresses':['10.0.0.0/24'],'prefix':'24'}", "spec.prefix",
     "must be an integer 0..32 for IPv4, got \"24\" (a string)"},
    {"prefix is a real", "{'addresses':['10.0.0.0/24'],'prefix':24.0}", "spec.prefix",
     "got 24.0 (a number)"},
    {"prefix too long for IPv4", "{'addresses':['10.0.0.0/24'],'prefix':33}", "spec.prefix",
     "0..32 for IPv4, got 33"},
    {"prefix too long for IPv6", "{'addresses':['2001:db8::/64'],'prefix':129}", "spec.prefix",
     "0..128 for IPv6, got 129"},
    {"prefix negative", "{'addresses':['10.0.0.0/24'],'prefix':-1}", "spec.prefix", "got -1"},
    {"prefix missing, two entries", "{'addresses':['10.0.0.0/25','10.0.0.128/25']}", "spec.prefix",
     "required"},
    {"prefix missing, a range", "{'addresses':['10.0.0.1-10.0.0.9']}", "spec.prefix",
     "only when spec.addresses is a single CIDR"},
    {"prefix missing, a single IP", "{'addresses':['10.0.0.1']}", "spec.prefix", "required"},
    {"gateway is a number", "{'addresses':['10.0.0.0/24'],'gateway':5}", "spec.gateway",
     "got 5 (a number)"},
    {"gateway does not parse", "{'addresses':['10.0.0.0/24'],'gateway':'10.0.0.256'}",
     "spec.gateway", "\"10.0.0.256\""},
    {"gateway with a zone", "{'addresses':['fe80::/64'],'gateway':'fe80::1%eth0'}", "spec.gateway",
     "zone"},
    {"gateway too long",
     "{'addresses':['10.0.0.0/24'],'gateway':'1111111111111111111111111111111111111111111111'}",
     "spec.gateway", "at most 45"},
    {"excludedAddresses is an object", "{'addresses':['10.0.0.0/24'],'excludedAddresses':{}}",
     "spec.excludedAddresses", "got an object"},
    {"excluded entry does not parse",
     "{'addresses':['10.0.0.0/24'],'excludedAddresses':['10.0.0.5','x']}",
     "spec.excludedAddresses[1]", "\"x\""},
    {"allocateReservedIPAddresses is a string",
     "{'addresses':['10.0.0.0/24'],'allocateReservedIPAddresses':'true'}",
     "spec.allocateReservedIPAddresses", "must be true or false, got \"true\" (a string)"},
    {"grace period negative", "{'addresses':['10.0.0.0/24'],'addressReuseGracePeriodSeconds':-5}",
     "spec.addressReuseGracePeriodSeconds", "must not be negative, got -5"},
    {"grace period a string", "{'addresses':['10.0.0.0/24'],'addressReuseGracePeriodSeconds':'30'}",
     "spec.addressReuseGracePeriodSeconds", "got \"30\" (a string)"},
    {"grace period just over a day",
     "{'addresses':['10.0.0.0/24'],'addressReuseGracePeriodSeconds':86401}",
     "spec.addressReuseGracePeriodSeconds", "must be at most 86400 (one day), got 86401"},
    {"grace period INT64_MAX",
     "{'addresses':['10.0.0.0/24'],'addressReuseGracePeriodSeconds':9223372036854775807}",
     "spec.addressReuseGracePeriodSeconds",
     "must be at most 86400 (one day), got 9223372036854775807"},
    {"entry with a NUL", "{'addresses':['10.0.0.1\\u0000/8'],'prefix':24}", "spec.addresses[0]",
     "\"10.0.0.1\\x00/8\" contains a NUL"},
    {"entry too long",
     "{'addresses':['2001:0db8:0000:0000:0000:0000:0000:0001-2001:0db8:0000:0000:0000:0000:0000:"
     "0002/64/64/64/64/6'],'prefix':24}",
     "spec.addresses[0]", "is 93 characters long; an entry has at most 91"},
};

static void test_decode_denials(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		print_message("case: %s\n", c->name);
		json_t *spec = load(c->spec);
		struct pk_pool p;
		struct pk_violations v;
		pk_violations_init(&v);
		assert_int_equal(pk_pool_decode(spec, &p, &v), PK_OK);
		expect(&v, PK_SEV_DENY, c->field, c->needle);
		/* A denied spec has no usable set: nothing may allocate from it. */
		assert_null(p.usable);
		pk_pool_release(&p);
		json_decref(spec);
	}
}

/* Only the first entry of the other family is named; the pool is not buried in messages. */
static void test_mixed_family_reported_once(void **state)
{
	(void)state;
	json_t *spec = load("{'addresses':['10.0.0.0/24','2001:db8::1','2001:db8::2'],'prefix':24,"
	                    "'gateway':'2001:db8::ff'}");
	struct pk_pool p;
	struct pk_violations v;
	pk_violations_init(&v);
	assert_int_equal(pk_pool_decode(spec, &p, &v), PK_OK);
	assert_int_equal(pk_violations_count(&v, PK_SEV_DENY), 1);
	expect(&v, PK_SEV_DENY, "spec.addresses[1]", "2001:db8::1");
	assert_int_equal(p.family, PK_FAMILY_V4);
	pk_pool_release(&p);
	json_decref(spec);
}

static void test_too_many_entries(void **state)
{
	(void)state;
	json_t *spec = load("{'prefix':16}");
	json_t *arr = json_array();
	json_t *exc = json_array();
	for (int i = 0; i < PK_POOL_MAX_ENTRIES + 1; i++) {
		char a[32];
		snprintf(a, sizeof(a), "10.0.%d.%d", i / 256, i % 256);
		assert_int_equal(json_array_append_new(arr, json_string(a)), 0);
		if (i < PK_POOL_MAX_ENTRIES)
			assert_int_equal(json_array_append_new(exc, json_string(a)), 0);
	}
	json_object_set_new(spec, "addresses", arr);
	struct pk_pool p;
	struct pk_violations v;
	pk_violations_init(&v);
	assert_int_equal(pk_pool_decode(spec, &p, &v), PK_OK);
	expect(&v, PK_SEV_DENY, "spec.addresses", "has 1025 entries; at most 1024");
	pk_pool_release(&p);

	/* Exactly the cap is fine. */
	json_object_set_new(spec, "addresses", exc);
	pk_violations_init(&v);
	assert_int_equal(pk_pool_decode(spec, &p, &v), PK_OK);
	assert_int_equal(v.n, 0);
	assert_non_null(p.usable);
	pk_pool_release(&p);
	json_decref(spec);
}

struct good_case {
	const char *name;
	const char *spec;
	enum pk_family family;
	unsigned prefix;
	const char *usable; /* exact size, decimal */
	const char *first;  /* lowest usable address */
};

static const struct good_case good_cases[] = {
    {"IPv4 /24: network and broadcast kept back", "{'addresses':['10.0.0.0/24'],'prefix':24}",
     PK_FAMILY_V4, 24, "254", "10.0.0.1"},
    {"prefix defaults from a lone CIDR", "{'addresses':['10.0.0.0/24']}", PK_FAMILY_V4, 24, "254",
     "10.0.0.1"},
    {"gateway never handed out", "{'addresses':['10.0.0.0/24'],'prefix':24,'gateway':'10.0.0.1'}",
     PK_FAMILY_V4, 24, "253", "10.0.0.2"},
    {"allocateReservedIPAddresses keeps network/broadcast, not the gateway",
     "{'addresses':['10.0.0.0/24'],'prefix':24,'gateway':'10.0.0.1',"
     "'allocateReservedIPAddresses':true}",
     PK_FAMILY_V4, 24, "255", "10.0.0.0"},
    {"empty gateway is no gateway", "{'addresses':['10.0.0.0/24'],'gateway':''}", PK_FAMILY_V4, 24,
     "254", "10.0.0.1"},
    {"reservations apply to ranges in the subnet too",
     "{'addresses':['10.0.0.0-10.0.0.255'],'prefix':24}", PK_FAMILY_V4, 24, "254", "10.0.0.1"},
    {"single IPs with a wider prefix", "{'addresses':['10.0.0.10','10.0.0.11'],'prefix':24}",
     PK_FAMILY_V4, 24, "2", "10.0.0.10"},
    {"range minus an excluded address",
     "{'addresses':['10.0.0.10-10.0.0.20'],'prefix':24,'excludedAddresses':['10.0.0.15']}",
     PK_FAMILY_V4, 24, "10", "10.0.0.10"},
    {"excluded CIDR and range",
     "{'addresses':['10.0.0.0/24'],'excludedAddresses':['10.0.0.0/25','10.0.0.200-10.0.0.255']}",
     PK_FAMILY_V4, 24, "72", "10.0.0.128"},
    {"IPv4 /31 keeps both", "{'addresses':['10.0.0.0/31']}", PK_FAMILY_V4, 31, "2", "10.0.0.0"},
    {"IPv4 /32", "{'addresses':['10.0.0.5/32']}", PK_FAMILY_V4, 32, "1", "10.0.0.5"},
    {"single IP /32", "{'addresses':['10.0.0.5'],'prefix':32}", PK_FAMILY_V4, 32, "1", "10.0.0.5"},
    {"IPv4 0.0.0.0/0", "{'addresses':['0.0.0.0/0']}", PK_FAMILY_V4, 0, "4294967294", "0.0.0.1"},
    {"IPv6 /64: Subnet-Router anycast kept back", "{'addresses':['2001:db8::/64']}", PK_FAMILY_V6,
     64, "18446744073709551615", "2001:db8::1"},
    {"IPv6 /127 keeps both", "{'addresses':['2001:db8::/127']}", PK_FAMILY_V6, 127, "2",
     "2001:db8::"},
    {"IPv6 /128", "{'addresses':['2001:db8::1'],'prefix':128}", PK_FAMILY_V6, 128, "1",
     "2001:db8::1"},
    {"IPv6 ::/0", "{'addresses':['::/0']}", PK_FAMILY_V6, 0,
     "340282366920938463463374607431768211455", "::1"},
    {"IPv6 ::/0 with allocateReservedIPAddresses",
     "{'addresses':['::/0'],'allocateReservedIPAddresses':true}", PK_FAMILY_V6, 0,
     "340282366920938463463374607431768211456", "::"},
    {"leading zeros in IPv6 groups are fine",
     "{'addresses':['2001:0db8::1-2001:0db8::3'],"
     "'prefix':64}",
     PK_FAMILY_V6, 64, "3", "2001:db8::1"},
    {"IPv4-mapped IPv6 is an IPv6 pool", "{'addresses':['::ffff:10.0.0.0/120']}", PK_FAMILY_V6, 120,
     "255", "::ffff:10.0.0.1"},
    {"null optional fields are unset",
     "{'addresses':['10.0.0.0/24'],'prefix':null,'gateway':null,'excludedAddresses':null,"
     "'allocateReservedIPAddresses':null,'addressReuseGracePeriodSeconds':null}",
     PK_FAMILY_V4, 24, "254", "10.0.0.1"},
};

static void test_decode_usable(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(good_cases) / sizeof(good_cases[0]); i++) {
		const struct good_case *c = &good_cases[i];
		print_message("case: %s\n", c->name);
		json_t *spec = load(c->spec);
		struct pk_pool p;
		struct pk_violations v;
		pk_violations_init(&v);
		assert_int_equal(pk_pool_decode(spec, &p, &v), PK_OK);
		if (v.n != 0)
			dump(&v);
		assert_int_equal(v.n, 0);
		assert_int_equal(p.family, c->family);
		assert_true(p.has_prefix);
		assert_int_equal(p.prefix, c->prefix);
		assert_non_null(p.usable);
		char n[PK_COUNT_STRLEN], a[PK_ADDR_STRLEN];
		assert_string_equal(pk_count_format(pk_range_set_size(p.usable), n), c->usable);
		pk_u128 first;
		assert_int_equal(pk_range_set_nth(p.usable, 0, &first), PK_OK);
		assert_string_equal(pk_address_format_v(first, c->family, a), c->first);
		pk_pool_release(&p);
		json_decref(spec);
	}
}

static void test_decode_fields(void **state)
{
	(void)state;
	json_t *spec =
	    load("{'addresses':['10.0.0.0/24'],'prefix':24,'gateway':'10.0.0.1',"
	         "'allocateReservedIPAddresses':true,'addressReuseGracePeriodSeconds':300,"
	         "'excludedAddresses':['10.0.0.7']}");
	struct pk_pool p;
	struct pk_violations v;
	pk_violations_init(&v);
	assert_int_equal(pk_pool_decode(spec, &p, &v), PK_OK);
	assert_int_equal(v.n, 0);
	assert_true(p.has_gateway);
	assert_true(p.gateway == 0x0a000001);
	assert_true(p.allocate_reserved);
	assert_int_equal(p.grace_seconds, 300);
	assert_true(pk_range_set_contains(p.excluded, 0x0a000007));
	assert_false(pk_range_set_contains(p.usable, 0x0a000007));
	assert_false(pk_range_set_contains(p.usable, 0x0a000001));
	assert_true(pk_range_set_contains(p.usable, 0x0a000000));
	pk_pool_release(&p);
	/* Releasing twice is harmless. */
	pk_pool_release(&p);
	json_decref(spec);
}

/* The grace period's bound itself is allowed, and kept as given. */
static void test_decode_grace_at_bound(void **state)
{
	(void)state;
	json_t *spec = load("{'addresses':['10.0.0.0/24'],'addressReuseGracePeriodSeconds':86400}");
	struct pk_pool p;
	struct pk_violations v;
	pk_violations_init(&v);
	assert_int_equal(pk_pool_decode(spec, &p, &v), PK_OK);
	assert_int_equal(v.n, 0);
	assert_int_equal(p.grace_seconds, 86400);
	pk_pool_release(&p);
	json_decref(spec);
}

/* Violations already in the list (from other rules) do not stop the usable set. */
static void test_decode_appends(void **state)
{
	(void)state;
	json_t *spec = load("{'addresses':['10.0.0.0/30']}");
	struct pk_pool p;
	struct pk_violations v;
	pk_violations_init(&v);
	pk_violations_add(&v, PK_SEV_DENY, "kind", "earlier");
	assert_int_equal(pk_pool_decode(spec, &p, &v), PK_OK);
	assert_int_equal(v.n, 1);
	assert_non_null(p.usable);
	char n[PK_COUNT_STRLEN];
	assert_string_equal(pk_count_format(pk_range_set_size(p.usable), n), "2");
	pk_pool_release(&p);
	json_decref(spec);
}

/* Fixture files under common/tests/fixtures: every good pool decodes cleanly. */
static void test_fixture_pools(void **state)
{
	(void)state;
	const char *root = getenv("PK_SOURCE_DIR");
	if (root == NULL)
		skip();
	static const char *const files[] = {"pool-v4.json", "pool-v6.json"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/common/tests/fixtures/%s", root, files[i]);
		json_error_t e;
		json_t *pool = json_load_file(path, 0, &e);
		if (pool == NULL)
			fail_msg("%s: %s", path, e.text);
		struct pk_pool p;
		struct pk_violations v;
		pk_violations_init(&v);
		assert_int_equal(pk_pool_decode(json_object_get(pool, "spec"), &p, &v), PK_OK);
		if (v.n != 0)
			dump(&v);
		assert_int_equal(v.n, 0);
		assert_non_null(p.usable);
		pk_pool_release(&p);
		json_decref(pool);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_denials),
	    cmocka_unit_test(test_mixed_family_reported_once),
	    cmocka_unit_test(test_too_many_entries),
	    cmocka_unit_test(test_decode_usable),
	    cmocka_unit_test(test_decode_fields),
	    cmocka_unit_test(test_decode_grace_at_bound),
	    cmocka_unit_test(test_decode_appends),
	    cmocka_unit_test(test_fixture_pools),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
