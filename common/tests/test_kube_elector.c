/* test_kube_elector.c - leader election's decision (client-go's rules) and the Lease spec it
 * writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json.h"
#include "kube_elector.h"

#define S 1000000000LL

static void test_decide(void **state)
{
	(void)state;
	static const struct {
		const char *holder;
		long long observed_s; /* when the record last changed */
		long long now_s;
		enum pk_kube_lease_action want;
	} v[] = {
	    {NULL, 0, 0, PK_KUBE_LEASE_ACQUIRE},        /* no Lease yet */
	    {"", 100, 100, PK_KUBE_LEASE_ACQUIRE},      /* released: take it at once */
	    {"me", 100, 100, PK_KUBE_LEASE_RENEW},      /* ours */
	    {"me", 0, 1000, PK_KUBE_LEASE_RENEW},       /* ours even if we were slow */
	    {"other", 100, 100, PK_KUBE_LEASE_WAIT},    /* just renewed */
	    {"other", 100, 114, PK_KUBE_LEASE_WAIT},    /* within 15 s of the last change */
	    {"other", 100, 115, PK_KUBE_LEASE_ACQUIRE}, /* 15 s without a change: expired */
	    {"other", 100, 500, PK_KUBE_LEASE_ACQUIRE},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		assert_int_equal(pk_kube_lease_decide(v[i].holder, "me", v[i].observed_s * S, 15000,
		                                      v[i].now_s * S),
		                 v[i].want);
}

static void test_spec(void **state)
{
	(void)state;
	struct timespec t = {.tv_sec = 1764470400, .tv_nsec = 123456789}; /* 2025-11-30T02:40:00Z */
	json_t *s = pk_kube_lease_spec(NULL, "a", 15, false, &t);
	assert_string_equal(pk_json_cstr_at(s, "holderIdentity"), "a");
	assert_int_equal(json_integer_value(json_object_get(s, "leaseDurationSeconds")), 15);
	assert_string_equal(pk_json_cstr_at(s, "renewTime"), "2025-11-30T02:40:00.123456Z");
	assert_string_equal(pk_json_cstr_at(s, "acquireTime"), "2025-11-30T02:40:00.123456Z");
	assert_int_equal(json_integer_value(json_object_get(s, "leaseTransitions")), 0);

	/* renewing keeps acquireTime and the transitions */
	struct timespec t2 = {.tv_sec = t.tv_sec + 2, .tv_nsec = 0};
	json_t *r = pk_kube_lease_spec(s, "a", 15, false, &t2);
	assert_string_equal(pk_json_cstr_at(r, "acquireTime"), "2025-11-30T02:40:00.123456Z");
	assert_string_equal(pk_json_cstr_at(r, "renewTime"), "2025-11-30T02:40:02.000000Z");
	assert_int_equal(json_integer_value(json_object_get(r, "leaseTransitions")), 0);

	/* another holder taking over counts a transition */
	json_t *b = pk_kube_lease_spec(r, "b", 15, false, &t2);
	assert_string_equal(pk_json_cstr_at(b, "holderIdentity"), "b");
	assert_string_equal(pk_json_cstr_at(b, "acquireTime"), "2025-11-30T02:40:02.000000Z");
	assert_int_equal(json_integer_value(json_object_get(b, "leaseTransitions")), 1);

	/* releasing: no holder, one second, transitions unchanged */
	json_t *rel = pk_kube_lease_spec(b, "b", 15, true, &t2);
	assert_string_equal(pk_json_cstr_at(rel, "holderIdentity"), "");
	assert_int_equal(json_integer_value(json_object_get(rel, "leaseDurationSeconds")), 1);
	assert_int_equal(json_integer_value(json_object_get(rel, "leaseTransitions")), 1);
	/* taking a released lease is not a transition from a holder */
	json_t *c = pk_kube_lease_spec(rel, "c", 15, false, &t2);
	assert_int_equal(json_integer_value(json_object_get(c, "leaseTransitions")), 1);
	json_decref(s);
	json_decref(r);
	json_decref(b);
	json_decref(rel);
	json_decref(c);
}

static void test_identity_and_options(void **state)
{
	(void)state;
	char a[300], b[300];
	pk_kube_lease_default_identity(a, sizeof(a));
	pk_kube_lease_default_identity(b, sizeof(b));
	assert_non_null(strchr(a, '_'));
	assert_string_not_equal(a, b); /* one per process, never shared */

	struct pk_kube_elector *el;
	struct pk_err err;
	struct pk_kube_elector_opts o = {
	    .namespace = "ns", .name = "l", .lease_duration_ms = 10000, .renew_deadline_ms = 10000};
	/* client-go refuses renew deadline >= lease duration; no client is needed to say so */
	assert_int_equal(pk_kube_elector_new(NULL, &o, &el, &err), PK_ERR_INVALID);
	o = (struct pk_kube_elector_opts){.name = "l"};
	assert_int_equal(pk_kube_elector_new(NULL, &o, &el, &err), PK_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decide),
	    cmocka_unit_test(test_spec),
	    cmocka_unit_test(test_identity_and_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
