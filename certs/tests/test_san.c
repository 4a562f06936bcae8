/*
 * test_san.c - the names of a serving certificate: Service names, DNS
 * names and IP addresses accepted and refused (table-driven), lower-casing,
 * duplicates, set comparison and the texts for logs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "san.h"

static void test_service_names(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		bool ok;
	} v[] = {
	    {"poolkeeper-webhook", true},
	    {"a", true},
	    {"a1", true},
	    {"web-1-x", true},
	    {"", false},
	    {"1web", false}, /* RFC 1035: a letter first */
	    {"-web", false},
	    {"web-", false},
	    {"Web", false},
	    {"we_b", false},
	    {"we.b", false},
	    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", true},   /* 63 */
	    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false}, /* 64 */
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct pk_err err = {{0}};
		int rc = pk_san_check_service(v[i].name, &err);
		if ((rc == PK_OK) != v[i].ok)
			fail_msg("service \"%s\": got %d (%s)", v[i].name, rc, err.msg);
		if (!v[i].ok) {
			assert_non_null(strstr(err.msg, "must be a Service name"));
			assert_non_null(strstr(err.msg, v[i].name));
		}
	}
}

static void test_dns_names(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		const char *stored; /* NULL: refused */
	} v[] = {
	    {"localhost", "localhost"},
	    {"webhook.example.com", "webhook.example.com"},
	    {"WebHook.Example.COM", "webhook.example.com"},
	    {"*.example.com", "*.example.com"},
	    {"x1.y-2.z", "x1.y-2.z"},
	    {"1.2.3", "1.2.3"}, /* digits-only labels are RFC 1123 */
	    {"", NULL},
	    {".", NULL},
	    {"a..b", NULL},
	    {"a.", NULL},
	    {".a", NULL},
	    {"-a.b", NULL},
	    {"a-.b", NULL},
	    {"a_b", NULL},
	    {"a b", NULL},
	    {"*", NULL},
	    {"*.", NULL},
	    {"a.*.b", NULL},
	    {"**.a", NULL},
	    {"a\nb", NULL},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct pk_san s;
		struct pk_err err = {{0}};
		pk_san_init(&s);
		int rc = pk_san_add_dns(&s, v[i].name, &err);
		if ((rc == PK_OK) != (v[i].stored != NULL))
			fail_msg("dns \"%s\": got %d (%s)", v[i].name, rc, err.msg);
		if (v[i].stored != NULL) {
			assert_int_equal(s.ndns, 1);
			assert_string_equal(s.dns[0], v[i].stored);
		} else {
			assert_int_equal(s.ndns, 0);
			assert_non_null(strstr(err.msg, "must be a DNS name"));
		}
		pk_san_free(&s);
	}
	/* 253 characters are fine, 254 are not. */
	char longname[300];
	memset(longname, 'a', sizeof(longname));
	for (size_t i = 63; i < 253; i += 64)
		longname[i] = '.';
	longname[253] = '\0';
	struct pk_san s;
	struct pk_err err = {{0}};
	pk_san_init(&s);
	assert_int_equal(pk_san_add_dns(&s, longname, &err), PK_OK);
	longname[253] = 'a';
	longname[254] = '\0';
	assert_int_equal(pk_san_add_dns(&s, longname, &err), PK_ERR_INVALID);
	/* A label of 64 is refused. */
	memset(longname, 'b', 64);
	memcpy(longname + 64, ".c", 3);
	assert_int_equal(pk_san_add_dns(&s, longname, &err), PK_ERR_INVALID);
	pk_san_free(&s);
}

static void test_ips(void **state)
{
	(void)state;
	static const struct {
		const char *addr;
		int len; /* 0: refused */
	} v[] = {
	    {"127.0.0.1", 4},       {"10.0.0.255", 4}, {"::1", 16},      {"fd00::1:2", 16},
	    {"::ffff:1.2.3.4", 16}, {"1.2.3", 0},      {"256.0.0.1", 0}, {"", 0},
	    {"[::1]", 0},           {"1.2.3.4/32", 0}, {"localhost", 0}, {" 1.2.3.4", 0},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct pk_san s;
		struct pk_err err = {{0}};
		pk_san_init(&s);
		int rc = pk_san_add_ip(&s, v[i].addr, &err);
		if ((rc == PK_OK) != (v[i].len != 0))
			fail_msg("ip \"%s\": got %d (%s)", v[i].addr, rc, err.msg);
		if (v[i].len != 0) {
			assert_int_equal(s.nip, 1);
			assert_int_equal(s.ip[0].len, v[i].len);
		} else {
			assert_non_null(strstr(err.msg, "must be an IPv4 or IPv6 address"));
		}
		pk_san_free(&s);
	}
}

static void test_service_set(void **state)
{
	(void)state;
	struct pk_san s;
	struct pk_err err = {{0}};
	pk_san_init(&s);
	assert_int_equal(pk_san_add_service(&s, "poolkeeper-webhook", "poolkeeper-system",
	                                    "cluster.local", &err),
	                 PK_OK);
	assert_int_equal(s.ndns, 4);
	assert_string_equal(s.dns[0], "poolkeeper-webhook");
	assert_string_equal(s.dns[1], "poolkeeper-webhook.poolkeeper-system");
	assert_string_equal(s.dns[2], "poolkeeper-webhook.poolkeeper-system.svc");
	assert_string_equal(s.dns[3], "poolkeeper-webhook.poolkeeper-system.svc.cluster.local");
	/* Adding a name again does not duplicate it; case does not matter. */
	assert_int_equal(pk_san_add_dns(&s, "POOLKEEPER-WEBHOOK", &err), PK_OK);
	assert_int_equal(s.ndns, 4);
	pk_san_free(&s);

	/* No cluster domain: three names. */
	pk_san_init(&s);
	assert_int_equal(pk_san_add_service(&s, "web", "ns", "", &err), PK_OK);
	assert_int_equal(s.ndns, 3);
	pk_san_free(&s);

	/* Each part is checked. */
	pk_san_init(&s);
	assert_int_equal(pk_san_add_service(&s, "Web", "ns", NULL, &err), PK_ERR_INVALID);
	assert_int_equal(pk_san_add_service(&s, "web", "Ns", NULL, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "Ns"));
	assert_int_equal(pk_san_add_service(&s, "web", "ns", "bad..domain", &err), PK_ERR_INVALID);
	assert_int_equal(s.ndns, 0);
	pk_san_free(&s);
}

static void test_limits(void **state)
{
	(void)state;
	struct pk_san s;
	struct pk_err err = {{0}};
	pk_san_init(&s);
	char name[32];
	for (int i = 0; i < PK_SAN_MAX; i++) {
		snprintf(name, sizeof(name), "n%d.example", i);
		assert_int_equal(pk_san_add_dns(&s, name, &err), PK_OK);
		unsigned char b[4] = {10, 0, (unsigned char)(i >> 8), (unsigned char)i};
		assert_int_equal(pk_san_add_ip_bytes(&s, b, 4, &err), PK_OK);
	}
	assert_int_equal(pk_san_add_dns(&s, "one-more.example", &err), PK_ERR_INVALID);
	assert_int_equal(pk_san_add_ip(&s, "10.9.9.9", &err), PK_ERR_INVALID);
	/* A name already there is still fine at the limit. */
	assert_int_equal(pk_san_add_dns(&s, "n0.example", &err), PK_OK);
	unsigned char odd[5] = {0};
	assert_int_equal(pk_san_add_ip_bytes(&s, odd, 5, &err), PK_ERR_INVALID);
	pk_san_free(&s);
}

static void test_equal_and_diff(void **state)
{
	(void)state;
	struct pk_san a, b;
	struct pk_err err = {{0}};
	pk_san_init(&a);
	pk_san_init(&b);
	assert_int_equal(pk_san_add_dns(&a, "x.example", &err), PK_OK);
	assert_int_equal(pk_san_add_dns(&a, "y.example", &err), PK_OK);
	assert_int_equal(pk_san_add_ip(&a, "127.0.0.1", &err), PK_OK);
	/* Same set, another order. */
	assert_int_equal(pk_san_add_ip(&b, "127.0.0.1", &err), PK_OK);
	assert_int_equal(pk_san_add_dns(&b, "y.example", &err), PK_OK);
	assert_int_equal(pk_san_add_dns(&b, "x.example", &err), PK_OK);
	assert_true(pk_san_equal(&a, &b));
	char buf[256];
	pk_san_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "DNS:x.example, DNS:y.example, IP:127.0.0.1");

	/* b loses one and gains two. */
	pk_san_free(&b);
	pk_san_init(&b);
	assert_int_equal(pk_san_add_dns(&b, "x.example", &err), PK_OK);
	assert_int_equal(pk_san_add_ip(&b, "127.0.0.1", &err), PK_OK);
	assert_int_equal(pk_san_add_ip(&b, "::1", &err), PK_OK);
	assert_int_equal(pk_san_add_dns(&b, "z.example", &err), PK_OK);
	assert_false(pk_san_equal(&a, &b));
	pk_san_diff(&a, &b, buf, sizeof(buf));
	assert_string_equal(buf, "missing DNS:y.example; extra DNS:z.example, IP:::1");
	pk_san_diff(&a, &a, buf, sizeof(buf));
	assert_string_equal(buf, "");
	/* Short buffers are cut, never overrun. */
	char small[12];
	pk_san_diff(&a, &b, small, sizeof(small));
	assert_string_equal(small, "missing ...");
	pk_san_format(&a, small, sizeof(small));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	pk_san_free(&a);
	pk_san_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_service_names), cmocka_unit_test(test_dns_names),
	    cmocka_unit_test(test_ips),           cmocka_unit_test(test_service_set),
	    cmocka_unit_test(test_limits),        cmocka_unit_test(test_equal_and_diff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
