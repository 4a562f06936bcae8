/* test_parse.c - numbers, Go durations, names and HOST:PORT from flag text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "parse.h"

#define S  PK_NS_PER_S
#define MS PK_NS_PER_MS

static void expect_msg(const struct pk_err *err, const char *want, const char *input)
{
	if (strstr(err->msg, want) == NULL)
		fail_msg("\"%s\": message \"%s\" lacks \"%s\"", input, err->msg, want);
}

static void test_uint(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		uint64_t v;
	} good[] = {{"0", 0}, {"7", 7}, {"007", 7}, {"65535", 65535}};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint64_t v = 1;
		struct pk_err err;
		assert_int_equal(pk_parse_uint(good[i].s, 0, 65535, &v, &err), PK_OK);
		assert_int_equal(v, good[i].v);
	}
	uint64_t v;
	struct pk_err err;
	assert_int_equal(pk_parse_uint("18446744073709551615", 0, UINT64_MAX, &v, &err), PK_OK);
	assert_true(v == UINT64_MAX);
	const char *bad[] = {"",
	                     "65536",
	                     "-1",
	                     "+1",
	                     " 1",
	                     "1 ",
	                     "0x10",
	                     "1e3",
	                     "1.0",
	                     "abc",
	                     "18446744073709551616",
	                     "99999999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(pk_parse_uint(bad[i], 0, 65535, &v, &err), PK_ERR_INVALID);
		expect_msg(&err, "must be an integer in 0..65535, got \"", bad[i]);
	}
	assert_int_equal(pk_parse_uint(NULL, 0, 1, &v, &err), PK_ERR_INVALID);
	assert_int_equal(pk_parse_uint("0", 1, 64, &v, &err), PK_ERR_INVALID);
	expect_msg(&err, "must be an integer in 1..64, got \"0\"", "0");
}

static void test_i64(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int64_t v;
	} good[] = {
	    {"0", 0},
	    {"-0", 0},
	    {"+7", 7},
	    {"-86400", -86400},
	    {"9223372036854775807", INT64_MAX},
	    {"-9223372036854775808", INT64_MIN},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int64_t v = 1;
		struct pk_err err = {{0}};
		if (pk_parse_i64(good[i].s, INT64_MIN, INT64_MAX, &v, &err) != PK_OK)
			fail_msg("\"%s\": %s", good[i].s, err.msg);
		assert_true(v == good[i].v);
	}
	static const char *const bad[] = {"",
	                                  "-",
	                                  "+",
	                                  " 1",
	                                  "1 ",
	                                  "0x10",
	                                  "1e3",
	                                  "--1",
	                                  "+-1",
	                                  "1.0",
	                                  "9223372036854775808",
	                                  "-9223372036854775809",
	                                  "99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t v = 42;
		struct pk_err err = {{0}};
		assert_int_equal(pk_parse_i64(bad[i], INT64_MIN, INT64_MAX, &v, &err),
		                 PK_ERR_INVALID);
		assert_int_equal(v, 42);
		assert_non_null(strstr(err.msg, "must be an integer in"));
	}
	/* the range, and the text named in the message */
	int64_t v = 0;
	struct pk_err err = {{0}};
	assert_int_equal(pk_parse_i64("-6", -5, 5, &v, &err), PK_ERR_INVALID);
	assert_string_equal(err.msg, "must be an integer in -5..5, got \"-6\"");
	assert_int_equal(pk_parse_i64("6", -5, 5, &v, &err), PK_ERR_INVALID);
	assert_int_equal(pk_parse_i64("-5", -5, 5, &v, &err), PK_OK);
	assert_int_equal(v, -5);
	assert_int_equal(pk_parse_i64(NULL, -5, 5, &v, &err), PK_ERR_INVALID);
}

static void test_real(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		double v;
	} good[] = {
	    {"0", 0},      {"1.5", 1.5},     {"-2", -2},    {"+.5", 0.5}, {"1.", 1},
	    {"1e3", 1000}, {"2.5E-1", 0.25}, {"1e-400", 0}, /* nearer zero than a double holds:
	                                                       about zero */
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		double v = -99;
		struct pk_err err = {{0}};
		if (pk_parse_real(good[i].s, &v, &err) != PK_OK)
			fail_msg("\"%s\": %s", good[i].s, err.msg);
		assert_true(v == good[i].v);
	}
	static const char *const bad[] = {"",    ".",   "-",  "e3", "1e",   "1e+",   "inf",
	                                  "nan", "0x1", " 1", "1 ", "1..2", "1e3.5", "--1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		double v = -99;
		struct pk_err err = {{0}};
		assert_int_equal(pk_parse_real(bad[i], &v, &err), PK_ERR_INVALID);
		assert_true(v == -99);
		assert_non_null(strstr(err.msg, "must be a decimal number"));
	}
	double v = 0;
	struct pk_err err = {{0}};
	assert_int_equal(pk_parse_real("1e999", &v, &err), PK_ERR_TOO_BIG);
	assert_non_null(strstr(err.msg, "\"1e999\""));
	assert_int_equal(pk_parse_real("-1e999", &v, &err), PK_ERR_TOO_BIG);
	assert_int_equal(pk_parse_real(NULL, &v, &err), PK_ERR_INVALID);
}

static void test_duration(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int64_t ns;
	} good[] = {
	    {"0", 0},
	    {"+0", 0},
	    {"-0", 0},
	    {"15s", 15 * S},
	    {"500ms", 500 * MS},
	    {"1m30s", 90 * S},
	    {"1h", 3600 * S},
	    {"2h45m", (2 * 3600 + 45 * 60) * S},
	    {"1.5h", 5400 * S},
	    {".5s", 500 * MS},
	    {"1.s", S},
	    {"100us", 100 * 1000},
	    {"100\xc2\xb5s", 100 * 1000},
	    {"100\xce\xbcs", 100 * 1000},
	    {"3ns", 3},
	    {"1h1m1s1ms1us1ns", 3661 * S + MS + 1000 + 1},
	    {"0.000000001s", 1},
	    {"1.0000000000000000000000000001s", S},
	    {"-1s", -S},
	    {"+2s", 2 * S},
	    {"9223372036854775807ns", INT64_MAX},
	    {"-9223372036854775808ns", INT64_MIN},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int64_t ns = 12345;
		struct pk_err err = {{0}};
		if (pk_parse_duration(good[i].s, INT64_MIN, INT64_MAX, &ns, &err) != PK_OK)
			fail_msg("\"%s\": %s", good[i].s, err.msg);
		if (ns != good[i].ns)
			fail_msg("\"%s\": %lld, want %lld", good[i].s, (long long)ns,
			         (long long)good[i].ns);
	}
	static const struct {
		const char *s;
		const char *why;
	} bad[] = {
	    {"", "empty"},
	    {"-", "empty"},
	    {"15", "the unit is missing"},
	    {"1s5", "the unit is missing"},
	    {"1s0", "the unit is missing"},
	    {"00", "the unit is missing"},
	    {"s", "a number must come before each unit"},
	    {".s", "a number must come before each unit"},
	    {"1d", "unknown unit"},
	    {"1S", "unknown unit"},
	    {"1 s", "unknown unit"},
	    {"1s ", "unknown unit"},
	    {" 1s", "a number must come before each unit"},
	    {"--1s", "a number must come before each unit"},
	    {"9223372036854775808ns", "too large"},
	    {"2562048h", "too large"},
	    {"99999999999999999999s", "too large"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ns;
		struct pk_err err = {{0}};
		assert_int_equal(pk_parse_duration(bad[i].s, INT64_MIN, INT64_MAX, &ns, &err),
		                 PK_ERR_INVALID);
		expect_msg(&err, "must be a duration such as 15s, 500ms or 1m30s, got \"",
		           bad[i].s);
		expect_msg(&err, bad[i].why, bad[i].s);
	}
	/* The range, named in the message in the same units. */
	int64_t ns;
	struct pk_err err;
	assert_int_equal(pk_parse_duration("1h", S, 10 * 60 * S, &ns, &err), PK_ERR_INVALID);
	expect_msg(&err, "must be a duration in 1s..10m, got \"1h\"", "1h");
	assert_int_equal(pk_parse_duration("-1s", 100 * MS, 60 * S, &ns, &err), PK_ERR_INVALID);
	expect_msg(&err, "must be a duration in 100ms..1m, got \"-1s\"", "-1s");
	assert_int_equal(pk_parse_duration("10m", S, 10 * 60 * S, &ns, &err), PK_OK);
	assert_int_equal(pk_parse_duration("1s", S, 10 * 60 * S, &ns, &err), PK_OK);
	assert_int_equal(pk_parse_duration("999ms", S, 10 * 60 * S, &ns, &err), PK_ERR_INVALID);
	assert_int_equal(pk_parse_duration(NULL, 0, S, &ns, &err), PK_ERR_INVALID);
}

static void test_format_duration(void **state)
{
	(void)state;
	static const struct {
		int64_t ns;
		const char *text;
	} cases[] = {
	    {0, "0s"},
	    {15 * S, "15s"},
	    {90 * S, "1m30s"},
	    {500 * MS, "500ms"},
	    {3600 * S, "1h"},
	    {-2 * S, "-2s"},
	    {1, "1ns"},
	    {1500 * MS, "1s500ms"},
	    {INT64_MAX, "2562047h47m16s854ms775us807ns"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[64];
		pk_format_duration(cases[i].ns, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].text);
		int64_t back;
		struct pk_err err;
		assert_int_equal(pk_parse_duration(buf, INT64_MIN, INT64_MAX, &back, &err), PK_OK);
		assert_true(back == cases[i].ns);
	}
	char small[4];
	pk_format_duration(3661 * S, small, sizeof(small));
	assert_true(strlen(small) < sizeof(small));
}

static void test_hostport(void **state)
{
	(void)state;
	static const struct {
		const char *s, *host;
		uint16_t port;
		int family; /* 0: every address */
	} good[] = {
	    {":8080", "", 8080, 0},
	    {":0", "", 0, 0},
	    {"0.0.0.0:8081", "0.0.0.0", 8081, AF_INET},
	    {"127.0.0.1:65535", "127.0.0.1", 65535, AF_INET},
	    {"[::1]:8081", "::1", 8081, AF_INET6},
	    {"[::]:9443", "::", 9443, AF_INET6},
	    {"[fd00::10:1]:1", "fd00::10:1", 1, AF_INET6},
	    {"[::ffff:10.0.0.1]:80", "::ffff:10.0.0.1", 80, AF_INET6},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct pk_hostport hp;
		struct pk_err err = {{0}};
		if (pk_parse_hostport(good[i].s, &hp, &err) != PK_OK)
			fail_msg("\"%s\": %s", good[i].s, err.msg);
		assert_string_equal(hp.host, good[i].host);
		assert_int_equal(hp.port, good[i].port);
		struct sockaddr_storage ss;
		socklen_t len;
		bool any;
		pk_hostport_sockaddr(&hp, &ss, &len, &any);
		assert_int_equal(any, good[i].family == 0);
		if (!any) {
			assert_int_equal(ss.ss_family, good[i].family);
			uint16_t port = ss.ss_family == AF_INET
			                    ? ((struct sockaddr_in *)&ss)->sin_port
			                    : ((struct sockaddr_in6 *)&ss)->sin6_port;
			assert_int_equal(ntohs(port), good[i].port);
			assert_int_equal(len, ss.ss_family == AF_INET
			                          ? sizeof(struct sockaddr_in)
			                          : sizeof(struct sockaddr_in6));
		}
		/* The text form parses back to the same address. */
		char text[64];
		struct pk_hostport back;
		pk_hostport_format(&hp, text, sizeof(text));
		assert_int_equal(pk_parse_hostport(text, &back, &err), PK_OK);
		assert_string_equal(back.host, hp.host);
		assert_int_equal(back.port, hp.port);
	}
	static const struct {
		const char *s, *why;
	} bad[] = {
	    {"", "empty"},
	    {"8080", "the port is missing"},
	    {"127.0.0.1", "the port is missing"},
	    {"127.0.0.1:", "the port is missing"},
	    {":", "the port is missing"},
	    {"[::1]", "the port is missing"},
	    {"[::1]:", "the port is missing"},
	    {"[::1", "\"[\" is not closed by \"]\""},
	    {"[::1:8080", "\"[\" is not closed by \"]\""},
	    {"[::1]8080", "\":PORT\" must follow \"]\""},
	    {"::1:8080", "an IPv6 address goes in brackets"},
	    {"[]:80", "not an IPv6 address in the brackets"},
	    {"[127.0.0.1]:80", "not an IPv6 address in the brackets"},
	    {"[fe80::1%eth0]:80", "not an IPv6 address in the brackets"},
	    {"localhost:8080", "not a name"},
	    {"10.0.0.256:80", "HOST must be empty, an IPv4 address or [an IPv6 address]"},
	    {"0x7f.1:80", "HOST must be"},
	    {":65536", "PORT must be an integer in 0..65535"},
	    {":-1", "PORT must be an integer in 0..65535"},
	    {":80a", "PORT must be an integer in 0..65535"},
	    {":http", "PORT must be an integer in 0..65535"},
	    {"[::1]:99999", "PORT must be an integer in 0..65535"},
	    {"1.2.3.4:80:80", "an IPv6 address goes in brackets"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pk_hostport hp;
		struct pk_err err = {{0}};
		assert_int_equal(pk_parse_hostport(bad[i].s, &hp, &err), PK_ERR_INVALID);
		expect_msg(&err,
		           "must be HOST:PORT such as :8080, 127.0.0.1:8080 or [::1]:8080, got",
		           bad[i].s);
		expect_msg(&err, bad[i].why, bad[i].s);
		char q[300];
		pk_text_quote(bad[i].s, strlen(bad[i].s), q, sizeof(q));
		expect_msg(&err, q, bad[i].s);
	}
	struct pk_hostport hp;
	struct pk_err err;
	assert_int_equal(pk_parse_hostport(NULL, &hp, &err), PK_ERR_INVALID);
}

static void test_names(void **state)
{
	(void)state;
	struct pk_err err;
	const char *labels[] = {
	    "default", "poolkeeper-system",
	    "a",       "0",
	    "a-b-1",   "abcdefghij0123456789abcdefghij0123456789abcdefghij0123456789abc"};
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		assert_int_equal(pk_parse_dns_name(labels[i], false, &err), PK_OK);
		assert_int_equal(pk_parse_dns_name(labels[i], true, &err), PK_OK);
	}
	const char *not_labels[] = {
	    "",    "-a",
	    "a-",  "A",
	    "a_b", "a.b",
	    "a b", "abcdefghij0123456789abcdefghij0123456789abcdefghij0123456789abcd"};
	for (size_t i = 0; i < sizeof(not_labels) / sizeof(not_labels[0]); i++) {
		assert_int_equal(pk_parse_dns_name(not_labels[i], false, &err), PK_ERR_INVALID);
		expect_msg(&err, "must be a DNS label", not_labels[i]);
	}
	assert_int_equal(pk_parse_dns_name("poolkeeper.example.io", true, &err), PK_OK);
	const char *not_subdomains[] = {"", ".a", "a.", "a..b", "a.-b", "a-.b", "A.b", "a_b"};
	for (size_t i = 0; i < sizeof(not_subdomains) / sizeof(not_subdomains[0]); i++) {
		assert_int_equal(pk_parse_dns_name(not_subdomains[i], true, &err), PK_ERR_INVALID);
		expect_msg(&err, "must be a DNS subdomain name", not_subdomains[i]);
	}
	char long_name[300];
	memset(long_name, 'a', 254);
	long_name[254] = '\0';
	assert_int_equal(pk_parse_dns_name(long_name, true, &err), PK_ERR_INVALID);
	long_name[253] = '\0';
	assert_int_equal(pk_parse_dns_name(long_name, true, &err), PK_OK);

	const char *values[] = {"a", "Team-A", "shard_1.eu", "0",
	                        "abcdefghij0123456789abcdefghij0123456789abcdefghij0123456789abc"};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		assert_int_equal(pk_parse_label_value(values[i], &err), PK_OK);
	const char *not_values[] = {
	    "",    "-a",  "a-",
	    "_a",  "a.",  "a b",
	    "a/b", "a=b", "abcdefghij0123456789abcdefghij0123456789abcdefghij0123456789abcd"};
	for (size_t i = 0; i < sizeof(not_values) / sizeof(not_values[0]); i++) {
		assert_int_equal(pk_parse_label_value(not_values[i], &err), PK_ERR_INVALID);
		expect_msg(&err, "must be a label value", not_values[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_uint),
	    cmocka_unit_test(test_i64),
	    cmocka_unit_test(test_real),
	    cmocka_unit_test(test_duration),
	    cmocka_unit_test(test_format_duration),
	    cmocka_unit_test(test_hostport),
	    cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
