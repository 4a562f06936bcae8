/*
 * test_kea_lease.c - the Kea backend's lease key and user-context, pure:
 * the key is the same for the same claim wherever it is computed (a retry,
 * the claim moved to another cluster) and differs when any of owner,
 * namespace, name or Cluster differs; it has the shapes Kea and DHCP give
 * them; the add arguments carry it with the claim's identity; a lease read
 * back is poolkeeper's only when its user-context names a claim of this
 * owner and its key is that claim's (a DHCP client's lease, another
 * owner's, and a forged user-context are someone else's).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kea_lease.h"

static const struct pk_kea_claim M1 = {.owner = "mgmt-a",
                                       .ns = "team-a",
                                       .name = "m-1",
                                       .cluster = "prod",
                                       .uid = "u-1",
                                       .pool = "KeaIPPool/team-a/nodes"};

static void key(const struct pk_kea_claim *c, struct pk_kea_key *k)
{
	memset(k, 0x5a, sizeof(*k));
	pk_kea_key_of(c, k);
}

static void the_key_is_the_claims_wherever_it_is_computed(void **state)
{
	(void)state;
	struct pk_kea_key a, b;
	key(&M1, &a);
	/* Moved: a new UID, the same namespace, name and Cluster. */
	struct pk_kea_claim moved = M1;
	moved.uid = "u-2";
	key(&moved, &b);
	assert_string_equal(a.client_id, b.client_id);
	assert_string_equal(a.duid, b.duid);
	assert_int_equal(a.iaid, b.iaid);
	assert_string_equal(a.hw_address, b.hw_address);
	/* Any part changed: another key. */
	const struct pk_kea_claim others[] = {
	    {.owner = "mgmt-b", .ns = "team-a", .name = "m-1", .cluster = "prod"},
	    {.owner = "mgmt-a", .ns = "team-b", .name = "m-1", .cluster = "prod"},
	    {.owner = "mgmt-a", .ns = "team-a", .name = "m-2", .cluster = "prod"},
	    {.owner = "mgmt-a", .ns = "team-a", .name = "m-1", .cluster = "dev"},
	    {.owner = "mgmt-a", .ns = "team-a", .name = "m-1", .cluster = NULL},
	    {.owner = NULL, .ns = "team-a", .name = "m-1", .cluster = "prod"},
	    /* the parts are kept apart: "team-a"+"m-1" is not "team-am"+"-1" */
	    {.owner = "mgmt-a", .ns = "team-am", .name = "-1", .cluster = "prod"},
	};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		key(&others[i], &b);
		if (strcmp(a.client_id, b.client_id) == 0 || strcmp(a.duid, b.duid) == 0)
			fail_msg("claim %zu has M1's key", i);
	}
}

static void the_key_has_the_shapes_kea_takes(void **state)
{
	(void)state;
	struct pk_kea_key k;
	key(&M1, &k);
	assert_int_equal(strlen(k.duid), 18 * 3 - 1);
	assert_memory_equal(k.duid, "00:04:", 6); /* DUID-UUID */
	assert_int_equal(strlen(k.client_id), 23 * 3 - 1);
	assert_memory_equal(k.client_id, "ff:", 3); /* RFC 4361: IAID, then the DUID */
	char iaid[12];
	snprintf(iaid, sizeof(iaid), "%02x:%02x:%02x:%02x", (k.iaid >> 24) & 255,
	         (k.iaid >> 16) & 255, (k.iaid >> 8) & 255, k.iaid & 255);
	assert_memory_equal(k.client_id + 3, iaid, 11);
	assert_string_equal(k.client_id + 15, k.duid);
	assert_int_equal(strlen(k.hw_address), 17);
	assert_memory_equal(k.hw_address, "02:", 3); /* locally administered, unicast */
}

static void add_arguments_carry_the_key_and_the_claim(void **state)
{
	(void)state;
	struct pk_kea_key k;
	pk_kea_key_of(&M1, &k);
	struct pk_addr a4 = {.v = 0x0a4d000a, .family = PK_FAMILY_V4};
	json_t *args = pk_kea_lease_add_args(&M1, &a4);
	assert_non_null(args);
	assert_string_equal(json_string_value(json_object_get(args, "ip-address")), "10.77.0.10");
	assert_string_equal(json_string_value(json_object_get(args, "client-id")), k.client_id);
	assert_string_equal(json_string_value(json_object_get(args, "hw-address")), k.hw_address);
	assert_int_equal(json_integer_value(json_object_get(args, "valid-lft")), 4294967295LL);
	json_t *ctx = json_object_get(json_object_get(args, "user-context"), PK_KEA_CONTEXT);
	assert_string_equal(json_string_value(json_object_get(ctx, "claim")), "team-a/m-1");
	assert_string_equal(json_string_value(json_object_get(ctx, "cluster")), "prod");
	assert_string_equal(json_string_value(json_object_get(ctx, "uid")), "u-1");
	assert_string_equal(json_string_value(json_object_get(ctx, "owner")), "mgmt-a");
	assert_string_equal(json_string_value(json_object_get(ctx, "pool")),
	                    "KeaIPPool/team-a/nodes");
	/* Read back, it is the claim's. */
	struct pk_kea_lease l;
	assert_true(pk_kea_lease_read(args, "mgmt-a", &l));
	assert_true(l.ours);
	assert_string_equal(l.ns, "team-a");
	assert_string_equal(l.name, "m-1");
	assert_string_equal(l.cluster, "prod");
	assert_string_equal(l.uid, "u-1");
	json_decref(args);
	struct pk_addr a6 = {.v = ((pk_u128)0xfd77000000000000ULL << 64) | 0x10,
	                     .family = PK_FAMILY_V6};
	args = pk_kea_lease_add_args(&M1, &a6);
	assert_string_equal(json_string_value(json_object_get(args, "ip-address")), "fd77::10");
	assert_string_equal(json_string_value(json_object_get(args, "duid")), k.duid);
	assert_int_equal(json_integer_value(json_object_get(args, "iaid")), k.iaid);
	assert_string_equal(json_string_value(json_object_get(args, "type")), "IA_NA");
	assert_null(json_object_get(args, "client-id"));
	assert_true(pk_kea_lease_read(args, "mgmt-a", &l));
	assert_true(l.ours);
	json_decref(args);
}

static void leases_of_others_are_not_ours(void **state)
{
	(void)state;
	struct pk_kea_lease l;
	struct pk_addr a4 = {.v = 0x0a4d000a, .family = PK_FAMILY_V4};
	json_t *args = pk_kea_lease_add_args(&M1, &a4);
	/* Another owner's (a second management cluster): used, not ours. */
	assert_true(pk_kea_lease_read(args, "mgmt-b", &l));
	assert_false(l.ours);
	assert_true(pk_kea_lease_read(args, NULL, &l));
	assert_false(l.ours);
	/* A user-context that names another claim than the key's (written by hand). */
	json_t *ctx = json_object_get(json_object_get(args, "user-context"), PK_KEA_CONTEXT);
	json_object_set_new(ctx, "claim", json_string("team-a/m-2"));
	assert_true(pk_kea_lease_read(args, "mgmt-a", &l));
	assert_false(l.ours);
	assert_string_equal(l.ns, "");
	static const char *const bad[] = {"m-1", "/m-1", "team-a/", "team-a/m/1", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object_set_new(ctx, "claim", json_string(bad[i]));
		assert_true(pk_kea_lease_read(args, "mgmt-a", &l));
		if (l.ours)
			fail_msg("claim \"%s\" read as ours", bad[i]);
	}
	json_decref(args);
	/* A DHCP client's lease: no user-context; its address still counts. */
	json_t *dhcp = json_loads("{\"ip-address\": \"10.77.0.99\", \"hw-address\": "
	                          "\"52:54:00:12:34:56\", \"client-id\": \"01:52:54:00:12:34:56\"}",
	                          0, NULL);
	assert_true(pk_kea_lease_read(dhcp, "mgmt-a", &l));
	assert_false(l.ours);
	assert_int_equal(l.address.family, PK_FAMILY_V4);
	json_decref(dhcp);
	/* No address poolkeeper can read: not a lease. */
	json_t *junk = json_loads("{\"ip-address\": \"ten\"}", 0, NULL);
	assert_false(pk_kea_lease_read(junk, "mgmt-a", &l));
	json_decref(junk);
	assert_false(pk_kea_lease_read(NULL, "mgmt-a", &l));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(the_key_is_the_claims_wherever_it_is_computed),
	    cmocka_unit_test(the_key_has_the_shapes_kea_takes),
	    cmocka_unit_test(add_arguments_carry_the_key_and_the_claim),
	    cmocka_unit_test(leases_of_others_are_not_ours),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
