/*
 * test_kea_real.c - the Kea client against a real ISC Kea 2.x (Debian's
 * kea-dhcp4, kea-dhcp6 and kea-ctrl-agent with the lease_cmds hook), which
 * e2e/kea starts on loopback in a folder of the test's own: what the Kea
 * backend relies on. A lease is added with the claim's identity in its
 * user-context and found again by its client-id; a second add of a taken
 * address is refused (result 1), so taking an address is atomic; an
 * address in no subnet is refused with Kea's reason; a delete of a lease
 * that is gone is result 3; IPv6 leases take a DUID and an IAID; leases
 * survive a restart of the server; a wrong password and a certificate of
 * another CA are refused; a server that is down is told apart from an
 * agent that is; the lease poolkeeper makes for a claim (kea_lease.h) is
 * accepted and read back as that claim's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kea_fixture.h"
#include "kea_lease.h"

/* Sends command with arguments (JSON text, or NULL); returns Kea's result code. */
static int call(const char *command, const char *service, const char *args, struct pk_kea_answer *a)
{
	struct pk_kea_endpoint ep = endpoint();
	json_t *j = args != NULL ? json_loads(args, 0, NULL) : NULL;
	assert_true(args == NULL || j != NULL);
	enum pk_kea_outcome o = pk_kea_command(&ep, command, service, j, a);
	json_decref(j);
	if (o != PK_KEA_ANSWERED)
		fail_msg("%s: %s: %s", command, pk_kea_outcome_name(o), a->text);
	return a->result;
}

#define CLAIM_V4                                                                             \
	"{\"ip-address\": \"10.77.0.10\", \"hw-address\": \"02:00:00:00:00:0a\", "           \
	"\"client-id\": \"00:70:6b:01\", \"hostname\": \"m-1\", \"valid-lft\": 4294967295, " \
	"\"user-context\": {\"poolkeeper\": {\"claim\": \"team-a/m-1\", \"uid\": \"u1\"}}}"

static void a_lease_is_taken_once_and_found_by_its_client_id(void **state)
{
	(void)state;
	struct pk_kea_answer a;
	assert_int_equal(call("lease4-add", "dhcp4", CLAIM_V4, &a), PK_KEA_SUCCESS);
	pk_kea_answer_clear(&a);
	/* Taken: another client's add of the same address is refused. */
	assert_int_equal(call("lease4-add", "dhcp4",
	                      "{\"ip-address\": \"10.77.0.10\", \"hw-address\": "
	                      "\"02:00:00:00:00:0b\", \"client-id\": \"00:70:6b:02\"}",
	                      &a),
	                 PK_KEA_ERROR);
	assert_non_null(strstr(a.text, "already exists"));
	pk_kea_answer_clear(&a);
	assert_int_equal(
	    call("lease4-get-by-client-id", "dhcp4", "{\"client-id\": \"00:70:6b:01\"}", &a),
	    PK_KEA_SUCCESS);
	json_t *lease = json_array_get(json_object_get(a.arguments, "leases"), 0);
	assert_string_equal(json_string_value(json_object_get(lease, "ip-address")), "10.77.0.10");
	assert_string_equal(
	    json_string_value(json_object_get(
	        json_object_get(json_object_get(lease, "user-context"), "poolkeeper"), "claim")),
	    "team-a/m-1");
	assert_int_equal(json_integer_value(json_object_get(lease, "valid-lft")), 4294967295LL);
	pk_kea_answer_clear(&a);
	/* Leases survive a restart of the server (memfile). */
	assert_int_equal(run_kea("restart dhcp4"), 0);
	assert_int_equal(call("lease4-get", "dhcp4", "{\"ip-address\": \"10.77.0.10\"}", &a),
	                 PK_KEA_SUCCESS);
	pk_kea_answer_clear(&a);
	assert_int_equal(call("lease4-del", "dhcp4", "{\"ip-address\": \"10.77.0.10\"}", &a),
	                 PK_KEA_SUCCESS);
	pk_kea_answer_clear(&a);
	/* Gone already: result 3, which a release takes as done. */
	assert_int_equal(call("lease4-del", "dhcp4", "{\"ip-address\": \"10.77.0.10\"}", &a),
	                 PK_KEA_EMPTY);
	pk_kea_answer_clear(&a);
}

static void outside_every_subnet_is_refused_with_keas_reason(void **state)
{
	(void)state;
	struct pk_kea_answer a;
	assert_int_equal(
	    call("lease4-add", "dhcp4",
	         "{\"ip-address\": \"10.99.0.1\", \"hw-address\": \"02:00:00:00:00:01\"}", &a),
	    PK_KEA_ERROR);
	assert_non_null(strstr(a.text, "10.99.0.1"));
	pk_kea_answer_clear(&a);
}

static void ipv6_leases_take_a_duid_and_an_iaid(void **state)
{
	(void)state;
	struct pk_kea_answer a;
	assert_int_equal(
	    call("lease6-add", "dhcp6",
	         "{\"ip-address\": \"fd77::10\", \"duid\": \"00:70:6b:01\", \"iaid\": 1, "
	         "\"valid-lft\": 4294967295, \"user-context\": {\"poolkeeper\": {}}}",
	         &a),
	    PK_KEA_SUCCESS);
	pk_kea_answer_clear(&a);
	assert_int_equal(
	    call("lease6-get-page", "dhcp6", "{\"from\": \"start\", \"limit\": 10}", &a),
	    PK_KEA_SUCCESS);
	assert_int_equal(json_array_size(json_object_get(a.arguments, "leases")), 1);
	pk_kea_answer_clear(&a);
	assert_int_equal(call("lease6-del", "dhcp6", "{\"ip-address\": \"fd77::10\"}", &a),
	                 PK_KEA_SUCCESS);
	pk_kea_answer_clear(&a);
}

static void wrong_credentials_and_another_ca_are_refused(void **state)
{
	(void)state;
	struct pk_kea_endpoint ep = endpoint();
	struct pk_kea_answer a;
	ep.password = "wrong";
	assert_int_equal(pk_kea_command(&ep, "version-get", "dhcp4", NULL, &a),
	                 PK_KEA_UNAUTHORIZED);
	assert_int_equal(a.http_status, 401);
	ep = endpoint();
	ep.ca_pem = NULL; /* the system's roots do not know the test's CA */
	assert_int_equal(pk_kea_command(&ep, "version-get", "dhcp4", NULL, &a), PK_KEA_UNREACHABLE);
}

/* The agent answers for a server that is down (result 1, "offline"); with the agent down
 * nothing answers. */
static void a_server_down_is_told_apart_from_an_agent_down(void **state)
{
	(void)state;
	struct pk_kea_answer a;
	assert_int_equal(run_kea("stop dhcp4"), 0);
	assert_int_equal(call("version-get", "dhcp4", NULL, &a), PK_KEA_ERROR);
	assert_non_null(strstr(a.text, "unable to forward command to the dhcp4 service"));
	assert_int_equal(run_kea("start dhcp4"), 0);
	assert_int_equal(run_kea("stop agent"), 0);
	struct pk_kea_endpoint ep = endpoint();
	assert_int_equal(pk_kea_command(&ep, "version-get", "dhcp4", NULL, &a), PK_KEA_UNREACHABLE);
	assert_int_equal(run_kea("restart agent"), 0);
	assert_int_equal(call("version-get", "dhcp4", NULL, &a), PK_KEA_SUCCESS);
	pk_kea_answer_clear(&a);
}

/* Sends command with arguments (consumed); returns Kea's result code. */
static int call_json(const char *command, const char *service, json_t *args,
                     struct pk_kea_answer *a)
{
	struct pk_kea_endpoint ep = endpoint();
	enum pk_kea_outcome o = pk_kea_command(&ep, command, service, args, a);
	json_decref(args);
	if (o != PK_KEA_ANSWERED)
		fail_msg("%s: %s: %s", command, pk_kea_outcome_name(o), a->text);
	return a->result;
}

/* The lease poolkeeper makes for a claim is accepted by Kea, found again by the key derived
 * from the claim alone, and read back as that claim's; another claim's add of the address is
 * refused. */
static void a_claims_lease_round_trips_through_kea(void **state)
{
	(void)state;
	struct pk_kea_answer a;
	const struct pk_kea_claim m1 = {.owner = "mgmt-a",
	                                .ns = "team-a",
	                                .name = "m-1",
	                                .cluster = "prod",
	                                .uid = "u-1",
	                                .pool = "KeaIPPool/team-a/nodes"};
	struct pk_kea_claim m2 = m1;
	m2.name = "m-2";
	struct pk_kea_key k;
	pk_kea_key_of(&m1, &k);
	struct pk_addr v4 = {.v = 0x0a4d0014, .family = PK_FAMILY_V4}; /* 10.77.0.20 */
	struct pk_addr v6 = {.v = ((pk_u128)0xfd77000000000000ULL << 64) | 0x20,
	                     .family = PK_FAMILY_V6};
	assert_int_equal(call_json("lease4-add", "dhcp4", pk_kea_lease_add_args(&m1, &v4), &a),
	                 PK_KEA_SUCCESS);
	assert_int_equal(call_json("lease4-add", "dhcp4", pk_kea_lease_add_args(&m2, &v4), &a),
	                 PK_KEA_ERROR);
	assert_int_equal(call_json("lease6-add", "dhcp6", pk_kea_lease_add_args(&m1, &v6), &a),
	                 PK_KEA_SUCCESS);
	assert_int_equal(call_json("lease4-get-by-client-id", "dhcp4",
	                           json_pack("{s:s}", "client-id", k.client_id), &a),
	                 PK_KEA_SUCCESS);
	struct pk_kea_lease l;
	json_t *leases = json_object_get(a.arguments, "leases");
	assert_int_equal(json_array_size(leases), 1);
	assert_true(pk_kea_lease_read(json_array_get(leases, 0), "mgmt-a", &l));
	assert_true(l.ours);
	assert_string_equal(l.ns, "team-a");
	assert_string_equal(l.name, "m-1");
	assert_string_equal(l.uid, "u-1");
	assert_true(pk_kea_lease_read(json_array_get(leases, 0), "mgmt-b", &l));
	assert_false(l.ours);
	pk_kea_answer_clear(&a);
	assert_int_equal(
	    call_json("lease6-get-by-duid", "dhcp6", json_pack("{s:s}", "duid", k.duid), &a),
	    PK_KEA_SUCCESS);
	leases = json_object_get(a.arguments, "leases");
	assert_int_equal(json_array_size(leases), 1);
	assert_true(pk_kea_lease_read(json_array_get(leases, 0), "mgmt-a", &l));
	assert_true(l.ours);
	pk_kea_answer_clear(&a);
	assert_int_equal(call("lease4-del", "dhcp4", "{\"ip-address\": \"10.77.0.20\"}", &a),
	                 PK_KEA_SUCCESS);
	assert_int_equal(call("lease6-del", "dhcp6", "{\"ip-address\": \"fd77::20\"}", &a),
	                 PK_KEA_SUCCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(a_lease_is_taken_once_and_found_by_its_client_id),
	    cmocka_unit_test(outside_every_subnet_is_refused_with_keas_reason),
	    cmocka_unit_test(ipv6_leases_take_a_duid_and_an_iaid),
	    cmocka_unit_test(wrong_credentials_and_another_ca_are_refused),
	    cmocka_unit_test(a_server_down_is_told_apart_from_an_agent_down),
	    cmocka_unit_test(a_claims_lease_round_trips_through_kea),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
