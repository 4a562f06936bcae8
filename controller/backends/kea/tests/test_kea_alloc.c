/*
 * test_kea_alloc.c - one claim's lease at a real Kea (kea_alloc.h), Kea
 * started on loopback by e2e/kea: a take makes the lowest free lease and a
 * second take finds it (one lease per claim, whatever the tries); an
 * address another holder leased (a DHCP client's) is skipped and stays
 * used; a pool whose addresses Kea all holds is exhausted; a give-back
 * deletes the claim's lease only, and again is a no-op; two management
 * clusters (two owners, each with its own memory of the pool) taking from
 * one Kea subnet at once never get one address twice; an agent that is
 * down, wrong credentials and an address in no Kea subnet come back as
 * the results the claim shows.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "kea_alloc.h"
#include "kea_fixture.h"

/* A pool of [lo, hi] (IPv4, host order) in Kea's subnet 1. */
struct test_pool {
	pthread_mutex_t mu;
	struct pk_kea_pool p;
};

static void pool_init(struct test_pool *t, const char *key, pk_u128 lo, pk_u128 hi,
                      enum pk_family f)
{
	struct pk_range_set *r = pk_range_set_new();
	assert_non_null(r);
	assert_int_equal(pk_range_set_add(r, lo, hi), PK_OK);
	pthread_mutex_init(&t->mu, NULL);
	t->p = (struct pk_kea_pool){
	    .key = key, .family = f, .subnet_id = 1, .alloc = pk_allocator_new(r), .mu = &t->mu};
	assert_non_null(t->p.alloc);
	pk_range_set_free(r);
}

static void pool_release(struct test_pool *t)
{
	pk_allocator_free(t->p.alloc);
	pthread_mutex_destroy(&t->mu);
}

#define V4(a, b, c, d) ((pk_u128)(((a) << 24) | ((b) << 16) | ((c) << 8) | (d)))

static struct pk_kea_claim claim(const char *owner, const char *name)
{
	return (struct pk_kea_claim){.owner = owner,
	                             .ns = "team-a",
	                             .name = name,
	                             .cluster = "prod",
	                             .uid = "u",
	                             .pool = "KeaIPPool/team-a/nodes"};
}

static const char *text_of(const struct pk_addr *a, char buf[PK_ADDR_STRLEN])
{
	return pk_address_format(a, buf);
}

/* How many leases Kea holds for the claim's key. */
static size_t leases_of(const struct pk_kea_claim *c)
{
	struct pk_kea_key k;
	struct pk_kea_answer a;
	pk_kea_key_of(c, &k);
	struct pk_kea_endpoint ep = endpoint();
	json_t *args = json_pack("{s:s}", "client-id", k.client_id);
	assert_int_equal(pk_kea_command(&ep, "lease4-get-by-client-id", "dhcp4", args, &a),
	                 PK_KEA_ANSWERED);
	json_decref(args);
	size_t n = json_array_size(json_object_get(a.arguments, "leases"));
	pk_kea_answer_clear(&a);
	return n;
}

static void take_makes_one_lease_and_finds_it_again(void **state)
{
	(void)state;
	struct test_pool t;
	pool_init(&t, "KeaIPPool/team-a/nodes", V4(10, 77, 1, 10), V4(10, 77, 1, 12), PK_FAMILY_V4);
	struct pk_kea_endpoint ep = endpoint();
	struct pk_kea_claim m1 = claim("a", "m-1");
	struct pk_kea_taken got;
	struct pk_backend_result res;
	char text[PK_ADDR_STRLEN];
	pk_kea_take(&ep, &t.p, &m1, &got, &res);
	assert_int_equal(res.status, PK_BACKEND_OK);
	assert_string_equal(text_of(&got.address, text), "10.77.1.10");
	assert_true(got.made);
	/* Asked again (a retry after a lost answer, a restart with nothing in memory): the same
	 * lease, found, not a second. */
	struct test_pool fresh;
	pool_init(&fresh, "KeaIPPool/team-a/nodes", V4(10, 77, 1, 10), V4(10, 77, 1, 12),
	          PK_FAMILY_V4);
	pk_kea_take(&ep, &fresh.p, &m1, &got, &res);
	assert_int_equal(res.status, PK_BACKEND_OK);
	assert_string_equal(text_of(&got.address, text), "10.77.1.10");
	assert_false(got.made);
	assert_int_equal(leases_of(&m1), 1);
	assert_int_equal(pk_allocator_state(fresh.p.alloc, V4(10, 77, 1, 10)), PK_ADDR_USED);
	/* Given back: gone from Kea; again, nothing to do. */
	unsigned n;
	pk_kea_give_back(&ep, &t.p, PK_FAMILY_V4, &m1, &n, &res);
	assert_int_equal(res.status, PK_BACKEND_OK);
	assert_int_equal(n, 1);
	assert_int_equal(leases_of(&m1), 0);
	assert_int_equal(pk_allocator_state(t.p.alloc, V4(10, 77, 1, 10)), PK_ADDR_FREE);
	pk_kea_give_back(&ep, &t.p, PK_FAMILY_V4, &m1, &n, &res);
	assert_int_equal(res.status, PK_BACKEND_OK);
	assert_int_equal(n, 0);
	pool_release(&t);
	pool_release(&fresh);
}

static void others_leases_are_skipped_then_exhausted(void **state)
{
	(void)state;
	struct test_pool t;
	pool_init(&t, "KeaIPPool/team-a/small", V4(10, 77, 2, 1), V4(10, 77, 2, 2), PK_FAMILY_V4);
	struct pk_kea_endpoint ep = endpoint();
	struct pk_kea_answer a;
	/* A DHCP client holds the lowest address; poolkeeper's memory does not know it. */
	json_t *dhcp =
	    json_pack("{s:s, s:s}", "ip-address", "10.77.2.1", "hw-address", "52:54:00:00:00:01");
	assert_int_equal(pk_kea_command(&ep, "lease4-add", "dhcp4", dhcp, &a), PK_KEA_ANSWERED);
	assert_int_equal(a.result, PK_KEA_SUCCESS);
	json_decref(dhcp);
	struct pk_kea_claim m1 = claim("a", "s-1"), m2 = claim("a", "s-2");
	struct pk_kea_taken got;
	struct pk_backend_result res;
	char text[PK_ADDR_STRLEN];
	pk_kea_take(&ep, &t.p, &m1, &got, &res);
	assert_int_equal(res.status, PK_BACKEND_OK);
	assert_string_equal(text_of(&got.address, text), "10.77.2.2");
	assert_int_equal(pk_allocator_state(t.p.alloc, V4(10, 77, 2, 1)), PK_ADDR_USED);
	pk_kea_take(&ep, &t.p, &m2, &got, &res);
	assert_int_equal(res.status, PK_BACKEND_EXHAUSTED);
	assert_string_equal(res.reason, PK_REASON_POOL_EXHAUSTED);
	assert_non_null(strstr(res.message, "KeaIPPool/team-a/small has no free address"));
	assert_int_equal(leases_of(&m2), 0);
	unsigned n;
	pk_kea_give_back(&ep, &t.p, PK_FAMILY_V4, &m1, &n, &res);
	/* The DHCP client's lease is not poolkeeper's to give back. */
	pk_kea_give_back(&ep, &t.p, PK_FAMILY_V4, &m2, &n, &res);
	assert_int_equal(n, 0);
	json_t *get = json_pack("{s:s}", "ip-address", "10.77.2.1");
	assert_int_equal(pk_kea_command(&ep, "lease4-get", "dhcp4", get, &a), PK_KEA_ANSWERED);
	assert_int_equal(a.result, PK_KEA_SUCCESS);
	pk_kea_answer_clear(&a);
	assert_int_equal(pk_kea_command(&ep, "lease4-del", "dhcp4", get, &a), PK_KEA_ANSWERED);
	json_decref(get);
	pool_release(&t);
}

/* ---- two management clusters, one subnet ---- */

#define PER_PLANE 40

struct plane {
	const char *owner;
	struct test_pool pool; /* this cluster's own memory of the pool */
	pk_u128 got[PER_PLANE];
	int failures;
};

static void *plane_main(void *arg)
{
	struct plane *pl = arg;
	struct pk_kea_endpoint ep = endpoint();
	for (int i = 0; i < PER_PLANE; i++) {
		char name[16];
		snprintf(name, sizeof(name), "m-%d", i); /* the same names on both clusters */
		struct pk_kea_claim c = claim(pl->owner, name);
		struct pk_kea_taken got;
		struct pk_backend_result res;
		pk_kea_take(&ep, &pl->pool.p, &c, &got, &res);
		if (res.status != PK_BACKEND_OK)
			pl->failures++;
		pl->got[i] = got.address.v;
	}
	return NULL;
}

static void two_clusters_sharing_a_subnet_never_share_an_address(void **state)
{
	(void)state;
	struct plane pl[2] = {{.owner = "mgmt-a"}, {.owner = "mgmt-b"}};
	for (int p = 0; p < 2; p++)
		pool_init(&pl[p].pool, "GlobalKeaIPPool//shared", V4(10, 77, 3, 1),
		          V4(10, 77, 3, 2 * PER_PLANE + 10), PK_FAMILY_V4);
	pthread_t th[2];
	for (int p = 0; p < 2; p++)
		assert_int_equal(pthread_create(&th[p], NULL, plane_main, &pl[p]), 0);
	for (int p = 0; p < 2; p++)
		pthread_join(th[p], NULL);
	assert_int_equal(pl[0].failures + pl[1].failures, 0);
	for (int i = 0; i < 2 * PER_PLANE; i++)
		for (int j = i + 1; j < 2 * PER_PLANE; j++)
			if (pl[i / PER_PLANE].got[i % PER_PLANE] ==
			    pl[j / PER_PLANE].got[j % PER_PLANE])
				fail_msg("claims %d and %d got one address", i, j);
	/* Each claim has exactly one lease, under its own owner's key. */
	for (int p = 0; p < 2; p++) {
		struct pk_kea_claim c = claim(pl[p].owner, "m-7");
		assert_int_equal(leases_of(&c), 1);
	}
	for (int p = 0; p < 2; p++) {
		struct pk_kea_endpoint ep = endpoint();
		for (int i = 0; i < PER_PLANE; i++) {
			char name[16];
			snprintf(name, sizeof(name), "m-%d", i);
			struct pk_kea_claim c = claim(pl[p].owner, name);
			struct pk_backend_result res;
			unsigned n;
			pk_kea_give_back(&ep, &pl[p].pool.p, PK_FAMILY_V4, &c, &n, &res);
			assert_int_equal(n, 1);
		}
		pool_release(&pl[p].pool);
	}
}

static void ipv6_takes_and_gives_back(void **state)
{
	(void)state;
	struct test_pool t;
	pk_u128 base = (pk_u128)0xfd77000000000000ULL << 64;
	pool_init(&t, "KeaIPPool/team-a/v6", base | 0x100, base | 0x1ff, PK_FAMILY_V6);
	struct pk_kea_endpoint ep = endpoint();
	struct pk_kea_claim m1 = claim("a", "v6-1");
	struct pk_kea_taken got;
	struct pk_backend_result res;
	char text[PK_ADDR_STRLEN];
	pk_kea_take(&ep, &t.p, &m1, &got, &res);
	assert_int_equal(res.status, PK_BACKEND_OK);
	assert_string_equal(text_of(&got.address, text), "fd77::100");
	pk_kea_take(&ep, &t.p, &m1, &got, &res);
	assert_false(got.made);
	unsigned n;
	pk_kea_give_back(&ep, &t.p, PK_FAMILY_V6, &m1, &n, &res);
	assert_int_equal(res.status, PK_BACKEND_OK);
	assert_int_equal(n, 1);
	pool_release(&t);
}

static void failures_are_the_results_a_claim_shows(void **state)
{
	(void)state;
	struct test_pool t;
	pool_init(&t, "KeaIPPool/team-a/far", V4(10, 99, 0, 1), V4(10, 99, 0, 2), PK_FAMILY_V4);
	struct pk_kea_endpoint ep = endpoint();
	struct pk_kea_claim m1 = claim("a", "f-1");
	struct pk_kea_taken got;
	struct pk_backend_result res;
	/* Outside Kea's subnet 1: Kea's words, permanent; the candidate is free again. */
	pk_kea_take(&ep, &t.p, &m1, &got, &res);
	assert_int_equal(res.status, PK_BACKEND_PERMANENT);
	assert_string_equal(res.reason, PK_KEA_REASON_REFUSED);
	assert_non_null(strstr(res.message, "leasing 10.99.0.1: Kea answered:"));
	assert_int_equal(pk_allocator_state(t.p.alloc, V4(10, 99, 0, 1)), PK_ADDR_FREE);
	/* Wrong password: permanent until the credentials change. */
	ep.password = "wrong";
	pk_kea_take(&ep, &t.p, &m1, &got, &res);
	assert_int_equal(res.status, PK_BACKEND_PERMANENT);
	assert_string_equal(res.reason, PK_KEA_REASON_CREDENTIALS);
	/* The server behind the agent down: transient. */
	ep = endpoint();
	assert_int_equal(run_kea("stop dhcp4"), 0);
	pk_kea_take(&ep, &t.p, &m1, &got, &res);
	assert_int_equal(res.status, PK_BACKEND_TRANSIENT);
	assert_string_equal(res.reason, PK_KEA_REASON_UNAVAILABLE);
	assert_int_equal(run_kea("start dhcp4"), 0);
	/* The agent down: transient, unreachable; a release is not confirmed either. */
	assert_int_equal(run_kea("stop agent"), 0);
	pk_kea_take(&ep, &t.p, &m1, &got, &res);
	assert_int_equal(res.status, PK_BACKEND_TRANSIENT);
	assert_string_equal(res.reason, PK_KEA_REASON_UNREACHABLE);
	unsigned n;
	pk_kea_give_back(&ep, &t.p, PK_FAMILY_V4, &m1, &n, &res);
	assert_int_equal(res.status, PK_BACKEND_TRANSIENT);
	assert_int_equal(run_kea("restart agent"), 0);
	pool_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(take_makes_one_lease_and_finds_it_again),
	    cmocka_unit_test(others_leases_are_skipped_then_exhausted),
	    cmocka_unit_test(two_clusters_sharing_a_subnet_never_share_an_address),
	    cmocka_unit_test(ipv6_takes_and_gives_back),
	    cmocka_unit_test(failures_are_the_results_a_claim_shows),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
