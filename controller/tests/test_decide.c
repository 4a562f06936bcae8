/*
 * test_decide.c - the claim reconciler's next step, per the CAPI IPAM
 * contract: a table over the facts, and the facts read from recorded API
 * objects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "decide.h"
#include "incluster.h"
#include "json.h"
#include "json_fixture.h"
#include "pool.h"

/* The in-process backend's kind that the claim's poolRef names (incluster.h). */
static const struct pk_pool_kind *kind_of(const json_t *claim)
{
	return pk_incluster_kind(pk_json_path(claim, "spec", "poolRef"));
}

/* A claim that is ours, has its finalizer, in an active cluster and pool, with no address yet. */
static struct pk_claim_facts base(void)
{
	struct pk_claim_facts f;
	memset(&f, 0, sizeof(f));
	f.ours = true;
	f.pool_in_scope = true;
	f.has_finalizer = true;
	f.cluster = PK_CLUSTER_ACTIVE;
	f.pool = PK_POOL_ACTIVE;
	f.address = PK_ADDRESS_NONE;
	snprintf(f.pool_text, sizeof(f.pool_text), "IPPool team-a/nodes");
	snprintf(f.cluster_text, sizeof(f.cluster_text), "Cluster team-a/prod");
	snprintf(f.claim_text, sizeof(f.claim_text), "IPAddressClaim team-a/m-1");
	return f;
}

struct row {
	const char *what;
	void (*edit)(struct pk_claim_facts *f);
	enum pk_claim_action want;
	const char *reason;
	const char *says; /* in the message, or NULL */
};

static void none(struct pk_claim_facts *f)
{
	(void)f;
}
static void foreign_pool(struct pk_claim_facts *f)
{
	f->ours = false;
}
static void no_finalizer(struct pk_claim_facts *f)
{
	f->has_finalizer = false;
}
static void cluster_paused(struct pk_claim_facts *f)
{
	f->cluster = PK_CLUSTER_PAUSED;
}
static void pool_paused(struct pk_claim_facts *f)
{
	f->pool = PK_POOL_PAUSED;
}
static void cluster_missing(struct pk_claim_facts *f)
{
	f->cluster = PK_CLUSTER_MISSING;
}
static void cluster_unnamed(struct pk_claim_facts *f)
{
	f->cluster = PK_CLUSTER_UNNAMED;
}
static void pool_missing(struct pk_claim_facts *f)
{
	f->pool = PK_POOL_MISSING;
}
static void pool_deleting(struct pk_claim_facts *f)
{
	f->pool = PK_POOL_DELETING;
}
static void pool_invalid(struct pk_claim_facts *f)
{
	f->pool = PK_POOL_INVALID;
}
static void out_of_scope(struct pk_claim_facts *f)
{
	f->pool_in_scope = false;
}
static void adopt(struct pk_claim_facts *f)
{
	f->address = PK_ADDRESS_OURS;
	f->address_has_finalizer = true;
}
static void bound(struct pk_claim_facts *f)
{
	adopt(f);
	f->bound = true;
}
static void adopt_pool_gone(struct pk_claim_facts *f)
{
	adopt(f);
	f->pool = PK_POOL_MISSING;
	f->address_check = PK_ADDRESS_UNCHECKED;
}
static void adopt_inconsistent(struct pk_claim_facts *f)
{
	adopt(f);
	f->address_check = PK_ADDRESS_INCONSISTENT;
	snprintf(f->address_problem, sizeof(f->address_problem),
	         "spec.address: \"10.0.0.5\" is already held by another IPAddress of the pool");
}
static void bound_inconsistent(struct pk_claim_facts *f)
{
	adopt_inconsistent(f);
	f->bound = true;
}
static void del_inconsistent(struct pk_claim_facts *f)
{
	adopt_inconsistent(f);
	f->deleting = true;
}
static void addr_deleted(struct pk_claim_facts *f)
{
	f->address = PK_ADDRESS_OURS_DELETING;
	f->address_has_finalizer = true;
}
static void addr_deleted_unprotected(struct pk_claim_facts *f)
{
	f->address = PK_ADDRESS_OURS_DELETING;
}
static void addr_foreign(struct pk_claim_facts *f)
{
	f->address = PK_ADDRESS_FOREIGN;
}
static void del(struct pk_claim_facts *f)
{
	f->deleting = true;
	adopt(f);
}
static void del_unprotected(struct pk_claim_facts *f)
{
	del(f);
	f->address_has_finalizer = false;
}
static void del_addr_going(struct pk_claim_facts *f)
{
	del(f);
	f->address = PK_ADDRESS_OURS_DELETING;
	f->address_has_finalizer = false;
}
static void del_addr_gone(struct pk_claim_facts *f)
{
	f->deleting = true;
}
static void del_no_finalizer(struct pk_claim_facts *f)
{
	del(f);
	f->has_finalizer = false;
}
static void del_cluster_missing(struct pk_claim_facts *f)
{
	del_addr_gone(f);
	f->cluster = PK_CLUSTER_MISSING;
}
static void del_pool_missing(struct pk_claim_facts *f)
{
	del(f);
	f->pool = PK_POOL_MISSING;
}
static void del_pool_deleting(struct pk_claim_facts *f)
{
	del_addr_gone(f);
	f->pool = PK_POOL_DELETING;
}
static void del_cluster_paused(struct pk_claim_facts *f)
{
	del(f);
	f->cluster = PK_CLUSTER_PAUSED;
}
static void del_for_move(struct pk_claim_facts *f)
{
	del(f);
	f->delete_for_move = true;
}
static void live_for_move(struct pk_claim_facts *f)
{
	none(f);
	f->delete_for_move = true;
}
static void addr_deleted_for_move(struct pk_claim_facts *f)
{
	none(f);
	f->address = PK_ADDRESS_OURS_DELETING;
	f->address_has_finalizer = false;
	f->address_delete_for_move = true;
}
static void bound_addr_deleted(struct pk_claim_facts *f)
{
	bound(f);
	f->address = PK_ADDRESS_OURS_DELETING;
}
static void del_foreign_addr(struct pk_claim_facts *f)
{
	f->deleting = true;
	f->address = PK_ADDRESS_FOREIGN;
}

static const struct row rows[] = {
    {"a fresh claim is allocated", none, PK_ACT_ALLOCATE, "Allocating", "IPPool team-a/nodes"},
    {"another provider's claim is ignored", foreign_pool, PK_ACT_NONE, "NotOurs", NULL},
    {"the finalizer comes before any allocation", no_finalizer, PK_ACT_ADD_FINALIZER, "Allocating",
     "ipam.poolkeeper.io/release-address"},
    {"a paused Cluster is skipped", cluster_paused, PK_ACT_WAIT, "Paused", "Cluster team-a/prod"},
    {"a paused pool is skipped", pool_paused, PK_ACT_WAIT, "Paused", "IPPool team-a/nodes"},
    {"a claim clusterctl is moving gets nothing allocated", live_for_move, PK_ACT_WAIT,
     "MoveInProgress", "moving the claim"},
    {"an IPAddress deleted by clusterctl move is not re-created", addr_deleted_for_move,
     PK_ACT_WAIT, "MoveInProgress", "moving the IPAddress"},
    {"a missing Cluster is skipped while the claim lives", cluster_missing, PK_ACT_WAIT,
     "ClusterNotFound", "does not exist"},
    {"a claim naming no Cluster goes on", cluster_unnamed, PK_ACT_ALLOCATE, "Allocating", NULL},
    {"a missing pool: not ready, naming it", pool_missing, PK_ACT_NOT_READY, "PoolNotReady",
     "IPPool team-a/nodes does not exist"},
    {"a deleting pool: not ready", pool_deleting, PK_ACT_NOT_READY, "PoolNotReady",
     "being deleted"},
    {"an invalid pool: not ready", pool_invalid, PK_ACT_NOT_READY, "PoolNotReady", "invalid"},
    {"an IPPool of another namespace", out_of_scope, PK_ACT_NOT_READY, "PoolNotReady",
     "serves claims of its own namespace only; a pool of a cluster-scoped kind"},
    {"an existing IPAddress owned by the claim is adopted, not reallocated", adopt,
     PK_ACT_SET_READY, "Allocated", NULL},
    {"a bound claim needs nothing", bound, PK_ACT_NONE, "Allocated", NULL},
    {"an IPAddress is not adopted while its pool is gone: nothing to check it against",
     adopt_pool_gone, PK_ACT_NOT_READY, "PoolNotReady",
     "IPPool team-a/nodes does not exist; the existing IPAddress is adopted once"},
    {"an inconsistent IPAddress is never adopted; the claim waits", adopt_inconsistent,
     PK_ACT_NOT_READY, "InconsistentIPAddress",
     "not adopted: spec.address: \"10.0.0.5\" is already held by another IPAddress of the "
     "pool; it is left as it is"},
    {"a claim bound before keeps its address", bound_inconsistent, PK_ACT_NONE, "Allocated", NULL},
    {"an inconsistent IPAddress never blocks its claim's deletion", del_inconsistent,
     PK_ACT_UNPROTECT_ADDRESS, "Releasing", NULL},
    {"an IPAddress deleted under a live claim is let go", addr_deleted, PK_ACT_UNPROTECT_ADDRESS,
     "AddressDeleted", "re-created"},
    {"... and re-created once gone", addr_deleted_unprotected, PK_ACT_WAIT, "AddressDeleted", NULL},
    {"an IPAddress named like the claim but not its own", addr_foreign, PK_ACT_NOT_READY,
     "AllocationFailed", "not owned by it"},
    {"deletion unprotects the IPAddress first", del, PK_ACT_UNPROTECT_ADDRESS, "Releasing", NULL},
    {"then deletes it", del_unprotected, PK_ACT_DELETE_ADDRESS, "Releasing", NULL},
    {"and waits until it is gone", del_addr_going, PK_ACT_WAIT, "Releasing", "gone"},
    {"then releases and lets the claim go", del_addr_gone, PK_ACT_RELEASE, "Released", NULL},
    {"a claim without our finalizer is not held", del_no_finalizer, PK_ACT_NONE, "Released", NULL},
    {"a missing Cluster never blocks deletion", del_cluster_missing, PK_ACT_RELEASE, "Released",
     NULL},
    {"a missing pool never blocks deletion", del_pool_missing, PK_ACT_UNPROTECT_ADDRESS,
     "Releasing", NULL},
    {"a deleting pool never blocks deletion", del_pool_deleting, PK_ACT_RELEASE, "Released", NULL},
    {"a paused Cluster holds deletion", del_cluster_paused, PK_ACT_WAIT, "Paused", NULL},
    {"clusterctl move: only the finalizer comes off", del_for_move, PK_ACT_RELEASE, "Moved", NULL},
    {"someone else's IPAddress is never deleted", del_foreign_addr, PK_ACT_RELEASE, "Released",
     NULL},
};

/* The same facts with the claim's own pause annotation on top. */
static const struct row paused_rows[] = {
    {"a paused claim is not allocated; Ready=False says it is paused, naming it", none,
     PK_ACT_NOT_READY, "Paused", "IPAddressClaim team-a/m-1 is paused"},
    {"a paused claim gets no finalizer either", no_finalizer, PK_ACT_NOT_READY, "Paused",
     "IPAddressClaim team-a/m-1 is paused"},
    {"a paused claim does not adopt its IPAddress", adopt, PK_ACT_NOT_READY, "Paused", NULL},
    {"a paused claim with an address keeps it, Ready=True untouched", bound, PK_ACT_WAIT, "Paused",
     "IPAddressClaim team-a/m-1 is paused"},
    {"a paused claim's deleted IPAddress is neither let go nor re-created", addr_deleted,
     PK_ACT_NOT_READY, "Paused", NULL},
    {"... nor when the claim was bound", bound_addr_deleted, PK_ACT_WAIT, "Paused", NULL},
    {"the pause comes before a missing pool", pool_missing, PK_ACT_NOT_READY, "Paused",
     "IPAddressClaim team-a/m-1"},
    {"a missing Cluster is waited for as before: no status write", cluster_missing, PK_ACT_WAIT,
     "ClusterNotFound", NULL},
    {"a paused Cluster holds a paused claim without a status write", cluster_paused, PK_ACT_WAIT,
     "Paused", "Cluster team-a/prod"},
    {"so does a paused pool", pool_paused, PK_ACT_WAIT, "Paused", "IPPool team-a/nodes"},
    {"clusterctl move comes before the claim's pause", live_for_move, PK_ACT_WAIT, "MoveInProgress",
     NULL},
    {"a paused claim's deletion leaves its IPAddress protected", del, PK_ACT_WAIT, "Paused",
     "IPAddressClaim team-a/m-1 is paused; the address is released once it is not"},
    {"... and does not delete it", del_unprotected, PK_ACT_WAIT, "Paused", NULL},
    {"... nor release the address", del_addr_gone, PK_ACT_WAIT, "Paused", NULL},
    {"a paused claim without our finalizer is not held", del_no_finalizer, PK_ACT_NONE, "Released",
     NULL},
    {"a paused claim's deletion waits for the pause, even with its Cluster gone",
     del_cluster_missing, PK_ACT_WAIT, "Paused", "IPAddressClaim team-a/m-1"},
    {"... or its pool gone", del_pool_missing, PK_ACT_WAIT, "Paused", NULL},
    {"clusterctl move: a paused claim too only loses the finalizer", del_for_move, PK_ACT_RELEASE,
     "Moved", NULL},
    {"a paused Cluster is named first", del_cluster_paused, PK_ACT_WAIT, "Paused",
     "Cluster team-a/prod"},
};

static void check_rows(const struct row *table, size_t n, bool claim_paused)
{
	for (size_t i = 0; i < n; i++) {
		struct pk_claim_facts f = base();
		struct pk_claim_decision d;
		table[i].edit(&f);
		f.paused = claim_paused;
		pk_decide_claim(&f, &d);
		if (d.action != table[i].want || strcmp(d.reason, table[i].reason) != 0 ||
		    (table[i].says != NULL && strstr(d.message, table[i].says) == NULL))
			fail_msg("%s: got %s/%s \"%s\", want %s/%s \"%s\"", table[i].what,
			         pk_claim_action_name(d.action), d.reason, d.message,
			         pk_claim_action_name(table[i].want), table[i].reason,
			         table[i].says ? table[i].says : "");
	}
}

static void test_table(void **state)
{
	(void)state;
	check_rows(rows, sizeof(rows) / sizeof(rows[0]), false);
}

static void test_table_claim_paused(void **state)
{
	(void)state;
	check_rows(paused_rows, sizeof(paused_rows) / sizeof(paused_rows[0]), true);
}

#define CLAIM_MD "'namespace':'team-a','name':'m-1','uid':'u-claim'"
#define POOLREF  "'poolRef':{'apiGroup':'ipam.poolkeeper.io','kind':'IPPool','name':'nodes'}"

/* A bound claim of Cluster prod, with its finalizer, and its pool, Cluster and IPAddress. */
struct facts_objs {
	json_t *claim, *pool, *cluster, *addr;
};

static int facts_objs_setup(void **state)
{
	struct facts_objs *o = calloc(1, sizeof(*o));
	assert_non_null(o);
	o->claim = load("{'metadata':{" CLAIM_MD ",'finalizers':['ipam.poolkeeper.io/"
	                "release-address']},'spec':{'clusterName':'prod'," POOLREF "},"
	                "'status':{'addressRef':{'name':'m-1'},'conditions':[{'type':'Ready',"
	                "'status':'True'}]}}");
	o->pool = load("{'metadata':{'namespace':'team-a','name':'nodes'}}");
	o->cluster = load("{'metadata':{'name':'prod'},'spec':{}}");
	o->addr = load("{'metadata':{'name':'m-1','finalizers':['ipam.poolkeeper.io/"
	               "protect-address'],'ownerReferences':[{'kind':'IPAddressClaim','name':"
	               "'m-1','uid':'u-claim','controller':true}]}}");
	*state = o;
	return 0;
}

static int facts_objs_teardown(void **state)
{
	struct facts_objs *o = *state;
	json_decref(o->claim);
	json_decref(o->pool);
	json_decref(o->cluster);
	json_decref(o->addr);
	free(o);
	return 0;
}

static void test_facts_from_objects(void **state)
{
	const struct facts_objs *o = *state;
	struct pk_claim_facts f;
	pk_claim_facts_from(o->claim, kind_of(o->claim), o->pool, true, o->cluster, o->addr, &f);
	assert_true(f.ours && f.has_finalizer && f.bound && f.pool_in_scope);
	assert_false(f.deleting || f.delete_for_move);
	assert_int_equal(f.cluster, PK_CLUSTER_ACTIVE);
	assert_int_equal(f.pool, PK_POOL_ACTIVE);
	assert_int_equal(f.address, PK_ADDRESS_OURS);
	assert_true(f.address_has_finalizer);
	assert_string_equal(f.pool_text, "IPPool team-a/nodes");
	assert_string_equal(pk_claim_cluster_name(o->claim), "prod");
}

/* A Cluster is paused two ways; spec.paused must be a JSON true. */
static void test_facts_cluster_paused(void **state)
{
	static const struct {
		const char *cluster;
		enum pk_cluster_state want;
	} cases[] = {
	    {"{'metadata':{'name':'prod'},'spec':{'paused':true}}", PK_CLUSTER_PAUSED},
	    {"{'metadata':{'name':'prod','annotations':{'cluster.x-k8s.io/paused':''}}}",
	     PK_CLUSTER_PAUSED},
	    /* a string is not a pause */
	    {"{'metadata':{'name':'prod'},'spec':{'paused':'true'}}", PK_CLUSTER_ACTIVE},
	};
	const struct facts_objs *o = *state;
	struct pk_claim_facts f;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *paused = load(cases[i].cluster);
		pk_claim_facts_from(o->claim, kind_of(o->claim), o->pool, true, paused, o->addr,
		                    &f);
		if (f.cluster != cases[i].want)
			fail_msg("%s: cluster %d, want %d", cases[i].cluster, f.cluster,
			         cases[i].want);
		json_decref(paused);
	}
}

/* Another claim's IPAddress; a missing Cluster and pool, and an IPAddress being deleted. */
static void test_facts_address_owner(void **state)
{
	const struct facts_objs *o = *state;
	struct pk_claim_facts f;
	/* owned by another claim (moved objects get new UIDs, so the claim's must match) */
	json_t *other =
	    load("{'metadata':{'name':'m-1','ownerReferences':[{'kind':'IPAddressClaim',"
	         "'name':'m-1','uid':'u-other','controller':true}]}}");
	pk_claim_facts_from(o->claim, kind_of(o->claim), o->pool, true, o->cluster, other, &f);
	assert_int_equal(f.address, PK_ADDRESS_FOREIGN);
	json_decref(other);
	json_t *going = load("{'metadata':{'name':'m-1','deletionTimestamp':'2026-11-30T00:00:00Z',"
	                     "'ownerReferences':[{'kind':'IPAddressClaim','uid':'u-claim',"
	                     "'controller':true}]}}");
	pk_claim_facts_from(o->claim, kind_of(o->claim), NULL, true, NULL, going, &f);
	assert_int_equal(f.cluster, PK_CLUSTER_MISSING);
	assert_int_equal(f.pool, PK_POOL_MISSING);
	assert_int_equal(f.address, PK_ADDRESS_OURS_DELETING);
	assert_false(f.address_has_finalizer);
	json_decref(going);
}

/* The deprecated label; delete-for-move; another provider's pool; a GlobalIPPool. */
static void test_facts_claim_variants(void **state)
{
	const struct facts_objs *o = *state;
	struct pk_claim_facts f;
	/* the deprecated label names the cluster; delete-for-move; no status */
	json_t *claim =
	    load("{'metadata':{" CLAIM_MD ",'labels':{'cluster.x-k8s.io/cluster-name':'old'},"
	         "'annotations':{'clusterctl.cluster.x-k8s.io/delete-for-move':''},"
	         "'deletionTimestamp':'2026-11-30T00:00:00Z'},'spec':{" POOLREF "}}");
	pk_claim_facts_from(claim, kind_of(claim), o->pool, true, o->cluster, NULL, &f);
	assert_string_equal(pk_claim_cluster_name(claim), "old");
	assert_true(f.deleting && f.delete_for_move);
	assert_false(f.bound || f.has_finalizer);
	assert_int_equal(f.address, PK_ADDRESS_NONE);
	json_decref(claim);

	/* another provider's pool */
	claim = load("{'metadata':{" CLAIM_MD "},'spec':{'poolRef':{'apiGroup':"
	             "'ipam.cluster.x-k8s.io','kind':'InClusterIPPool','name':'x'}}}");
	pk_claim_facts_from(claim, kind_of(claim), NULL, false, NULL, NULL, &f);
	assert_false(f.ours);
	assert_null(pk_claim_cluster_name(claim));
	json_decref(claim);
	/* a GlobalIPPool serves every namespace */
	claim = load("{'metadata':{" CLAIM_MD "},'spec':{'poolRef':{'apiGroup':"
	             "'ipam.poolkeeper.io','kind':'GlobalIPPool','name':'shared'}}}");
	json_t *global = load("{'metadata':{'name':'shared'}}");
	pk_claim_facts_from(claim, kind_of(claim), global, false, NULL, NULL, &f);
	assert_true(f.ours && f.pool_in_scope);
	assert_string_equal(f.pool_text, "GlobalIPPool shared");
	json_decref(global);
	json_decref(claim);
}

/*
 * Every pool-specific fact comes from the kind the backend declares, not
 * from poolkeeper's own kinds: another backend's cluster-scoped kind serves
 * every namespace and is named without one; its namespaced kind serves its
 * own namespace only, whatever it is called; an IPAddress the collector left
 * is the claim's when its poolRef names the claim's kind of that backend.
 */
static void test_facts_from_the_declared_kind(void **state)
{
	(void)state;
	static const struct pk_pool_kind global = {
	    "SharedKeaPool", "kea.ipam.example.org", "v1", "sharedkeapools", false,
	    "kea",           PK_POOL_SPEC_RANGES};
	static const struct pk_pool_kind local = {
	    "GlobalIPPool", "kea.ipam.example.org", "v1", "globalippools", true,
	    "kea",          PK_POOL_SPEC_RANGES};
	json_t *claim =
	    load("{'metadata':{" CLAIM_MD ",'finalizers':["
	         "'ipam.poolkeeper.io/release-address'],"
	         "'deletionTimestamp':'2026-11-30T00:00:00Z'},'spec':{'poolRef':{"
	         "'apiGroup':'kea.ipam.example.org','kind':'SharedKeaPool','name':'s'}}}");
	json_t *pool = load("{'metadata':{'name':'s'}}");
	json_t *other_ns = load("{'metadata':{'name':'s','namespace':'elsewhere'}}");
	struct pk_claim_facts f;
	pk_claim_facts_from(claim, &global, pool, false, NULL, NULL, &f);
	assert_true(f.ours && f.pool_in_scope);
	assert_string_equal(f.pool_text, "SharedKeaPool s");
	pk_claim_facts_from(claim, &local, other_ns, false, NULL, NULL, &f);
	assert_true(f.ours);
	assert_false(f.pool_in_scope);
	pk_claim_facts_from(claim, NULL, pool, false, NULL, NULL, &f);
	assert_false(f.ours);

	/* The IPAddress as the collector leaves it: the pool's reference alone. */
	json_t *left = load(
	    "{'metadata':{'name':'m-1','namespace':'team-a','ownerReferences':[{'apiVersion':"
	    "'kea.ipam.example.org/v1','kind':'SharedKeaPool','name':'s','uid':'p',"
	    "'controller':false,'blockOwnerDeletion':true}]},'spec':{'address':'10.0.0.5',"
	    "'prefix':24,'claimRef':{'name':'m-1'},'poolRef':{'apiGroup':'kea.ipam.example.org',"
	    "'kind':'SharedKeaPool','name':'s'}}}");
	pk_claim_facts_from(claim, &global, pool, false, NULL, left, &f);
	assert_int_equal(f.address, PK_ADDRESS_OURS);
	/* ... but not when its poolRef names poolkeeper's group rather than the backend's. */
	json_object_set_new(pk_json_path(left, "spec", "poolRef"), "apiGroup",
	                    json_string("ipam.poolkeeper.io"));
	pk_claim_facts_from(claim, &global, pool, false, NULL, left, &f);
	assert_int_equal(f.address, PK_ADDRESS_FOREIGN);
	json_decref(left);
	json_decref(other_ns);
	json_decref(pool);
	json_decref(claim);
}

/*
 * The claim's own pause, read as CAPI's annotations.HasPaused reads it: the
 * key cluster.x-k8s.io/paused among the annotations, whatever its value
 * ("" and "false" hold the claim too); nothing else pauses it.
 */
static void test_claim_pause_from_objects(void **state)
{
	(void)state;
	static const struct {
		const char *metadata; /* more members of the claim's metadata */
		bool paused;
	} cases[] = {
	    {"", false},
	    {",'annotations':{'cluster.x-k8s.io/paused':''}", true},
	    {",'annotations':{'cluster.x-k8s.io/paused':'false'}", true},
	    {",'annotations':{'cluster.x-k8s.io/paused':'true'}", true},
	    {",'annotations':{'example.com/x':'y','cluster.x-k8s.io/paused':'no'}", true},
	    {",'annotations':{}", false},
	    {",'annotations':{'cluster.x-k8s.io/pause':'','example.com/paused':''}", false},
	    {",'annotations':{'Cluster.x-k8s.io/paused':''}", false},
	    {",'annotations':['cluster.x-k8s.io/paused']", false},
	    {",'annotations':'cluster.x-k8s.io/paused'", false},
	    {",'labels':{'cluster.x-k8s.io/paused':''}", false},
	};
	json_t *pool = load("{'metadata':{'namespace':'team-a','name':'nodes'}}");
	json_t *cluster = load("{'metadata':{'name':'prod'},'spec':{}}");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text),
		         "{'metadata':{" CLAIM_MD ",'finalizers':['ipam.poolkeeper.io/"
		         "release-address']%s},'spec':{'clusterName':'prod'," POOLREF "}}",
		         cases[i].metadata);
		json_t *claim = load(text);
		struct pk_claim_facts f;
		struct pk_claim_decision d;
		pk_claim_facts_from(claim, kind_of(claim), pool, true, cluster, NULL, &f);
		pk_decide_claim(&f, &d);
		if (f.paused != cases[i].paused)
			fail_msg("%s: paused=%d, want %d", cases[i].metadata, f.paused,
			         cases[i].paused);
		/* the claim's pause is its own: the Cluster and the pool are active */
		assert_int_equal(f.cluster, PK_CLUSTER_ACTIVE);
		assert_int_equal(f.pool, PK_POOL_ACTIVE);
		assert_string_equal(f.claim_text, "IPAddressClaim team-a/m-1");
		if (cases[i].paused) {
			assert_int_equal(d.action, PK_ACT_NOT_READY);
			assert_string_equal(d.reason, "Paused");
			assert_string_equal(d.message, "IPAddressClaim team-a/m-1 is paused");
			/* the annotation taken off: the claim goes on */
			json_object_del(
			    json_object_get(json_object_get(claim, "metadata"), "annotations"),
			    "cluster.x-k8s.io/paused");
			pk_claim_facts_from(claim, kind_of(claim), pool, true, cluster, NULL, &f);
			pk_decide_claim(&f, &d);
			assert_false(f.paused);
		}
		if (d.action != PK_ACT_ALLOCATE)
			fail_msg("%s: got %s/%s, want allocate", cases[i].metadata,
			         pk_claim_action_name(d.action), d.reason);
		json_decref(claim);
	}
	/* a paused Cluster is the Cluster's pause, not the claim's */
	json_t *claim =
	    load("{'metadata':{" CLAIM_MD "},'spec':{'clusterName':'prod'," POOLREF "}}");
	json_t *paused =
	    load("{'metadata':{'name':'prod','annotations':{'cluster.x-k8s.io/paused':''}}}");
	struct pk_claim_facts f;
	pk_claim_facts_from(claim, kind_of(claim), pool, true, paused, NULL, &f);
	assert_false(f.paused);
	assert_int_equal(f.cluster, PK_CLUSTER_PAUSED);
	json_decref(paused);
	json_decref(claim);
	json_decref(pool);
	json_decref(cluster);
}

/*
 * The checks before adoption, from objects: the claim the IPAddress names,
 * its pool, the address inside the pool, and not held elsewhere.
 */
struct check_case {
	const char *what, *address, *claim_ref, *kind, *pool;
	bool taken, no_pool;
	enum pk_address_check want;
	const char *says;
};

static const struct check_case check_cases[] = {
    {"consistent", "10.0.0.5", "m-1", "IPPool", "nodes", false, false, PK_ADDRESS_CONSISTENT, NULL},
    {"drained since it was handed out", "10.0.0.100", "m-1", "IPPool", "nodes", false, false,
     PK_ADDRESS_CONSISTENT, NULL},
    {"held by another IPAddress too", "10.0.0.5", "m-1", "IPPool", "nodes", true, false,
     PK_ADDRESS_INCONSISTENT, "already held by another IPAddress of the pool"},
    {"outside the pool", "10.9.0.5", "m-1", "IPPool", "nodes", false, false,
     PK_ADDRESS_INCONSISTENT, "not a usable address of IPPool team-a/nodes"},
    {"the gateway", "10.0.0.1", "m-1", "IPPool", "nodes", false, false, PK_ADDRESS_INCONSISTENT,
     "(it is the gateway)"},
    {"another claim's", "10.0.0.5", "m-2", "IPPool", "nodes", false, false, PK_ADDRESS_INCONSISTENT,
     "\"m-2\" is not IPAddressClaim \"m-1\""},
    {"another pool's", "10.0.0.5", "m-1", "GlobalIPPool", "nodes", false, false,
     PK_ADDRESS_INCONSISTENT, "there is no such claim"},
    {"not an address", "10.0.0.500", "m-1", "IPPool", "nodes", false, false,
     PK_ADDRESS_INCONSISTENT, "not an IP address"},
    {"no pool to check against", "10.0.0.5", "m-1", "IPPool", "nodes", false, true,
     PK_ADDRESS_UNCHECKED, NULL},
    {"another claim's, pool or not", "10.0.0.5", "m-2", "IPPool", "nodes", false, true,
     PK_ADDRESS_INCONSISTENT, "is not IPAddressClaim"},
};

/* One case: the check, the decision it leads to, and nothing checked once bound. */
static void check_address_case(const struct check_case *c, const json_t *claim, const json_t *pool,
                               const struct pk_pool *p)
{
	static const char addr_fmt[] =
	    "{'metadata':{'namespace':'team-a','name':'m-1','ownerReferences':[{'kind':"
	    "'IPAddressClaim','uid':'u-claim','controller':true}]},'spec':{'address':'%s',"
	    "'prefix':24,'claimRef':{'name':'%s'},'poolRef':{'apiGroup':'ipam.poolkeeper.io',"
	    "'kind':'%s','name':'%s'}}}";
	char text[1024];
	struct pk_claim_facts f;
	snprintf(text, sizeof(text), addr_fmt, c->address, c->claim_ref, c->kind, c->pool);
	json_t *addr = load(text);
	pk_claim_facts_from(claim, kind_of(claim), pool, false, NULL, addr, &f);
	assert_int_equal(f.address, PK_ADDRESS_OURS);
	pk_claim_facts_check_address(&f, claim, addr, c->no_pool ? NULL : p, c->taken);
	if (f.address_check != c->want ||
	    (c->says != NULL && strstr(f.address_problem, c->says) == NULL))
		fail_msg("%s: got %d \"%s\", want %d \"%s\"", c->what, f.address_check,
		         f.address_problem, c->want, c->says ? c->says : "");
	struct pk_claim_decision d;
	pk_decide_claim(&f, &d);
	if (c->want == PK_ADDRESS_CONSISTENT)
		assert_int_equal(d.action, PK_ACT_SET_READY);
	else
		assert_int_equal(d.action, PK_ACT_NOT_READY);
	/* bound: checked when it was adopted; nothing is checked again */
	json_t *bound = json_deep_copy(claim);
	json_object_set_new(bound, "status",
	                    json_pack("{s:{s:s}, s:[{s:s, s:s}]}", "addressRef", "name", "m-1",
	                              "conditions", "type", "Ready", "status", "True"));
	pk_claim_facts_from(bound, kind_of(bound), pool, false, NULL, addr, &f);
	pk_claim_facts_check_address(&f, bound, addr, NULL, true);
	assert_int_equal(f.address_check, PK_ADDRESS_CONSISTENT);
	json_decref(bound);
	json_decref(addr);
}

static void test_check_address(void **state)
{
	(void)state;
	struct pk_claim_facts f;
	struct pk_pool p;
	struct pk_violations v;
	json_t *spec = load("{'addresses':['10.0.0.0/24'],'prefix':24,'gateway':'10.0.0.1',"
	                    "'excludedAddresses':['10.0.0.100']}");
	memset(&p, 0, sizeof(p));
	pk_violations_init(&v);
	assert_int_equal(pk_pool_decode(spec, &p, &v), PK_OK);
	json_decref(spec);
	json_t *claim = load("{'metadata':{" CLAIM_MD ",'finalizers':['ipam.poolkeeper.io/"
	                     "release-address']},'spec':{" POOLREF "}}");
	json_t *pool = load("{'metadata':{'namespace':'team-a','name':'nodes'}}");
	for (size_t i = 0; i < sizeof(check_cases) / sizeof(check_cases[0]); i++)
		check_address_case(&check_cases[i], claim, pool, &p);
	/* no IPAddress: nothing to check */
	pk_claim_facts_from(claim, kind_of(claim), pool, false, NULL, NULL, &f);
	pk_claim_facts_check_address(&f, claim, NULL, &p, true);
	assert_int_equal(f.address_check, PK_ADDRESS_CONSISTENT);
	json_decref(claim);
	json_decref(pool);
	pk_pool_release(&p);
}

/* Ready means a Ready condition whose status is exactly "True"; anything else is not Ready. */
static void test_claim_ready(void **state)
{
	(void)state;
	static const struct {
		const char *claim;
		bool ready;
	} cases[] = {
	    {"{'status':{'conditions':[{'type':'Ready','status':'True'}]}}", true},
	    {"{'status':{'conditions':[{'type':'Other','status':'False'},"
	     "{'type':'Ready','status':'True'}]}}",
	     true},
	    {"{'status':{'conditions':[{'type':'Ready','status':'False'}]}}", false},
	    {"{'status':{'conditions':[{'type':'Ready','status':'Unknown'}]}}", false},
	    {"{'status':{'conditions':[{'type':'Ready','status':'true'}]}}", false},
	    {"{'status':{'conditions':[{'type':'ready','status':'True'}]}}", false},
	    {"{'status':{'conditions':[{'type':'Ready','status':true}]}}", false},
	    {"{'status':{'conditions':[{'type':'Ready'}]}}", false},
	    {"{'status':{'conditions':{'type':'Ready','status':'True'}}}", false},
	    {"{'status':{'conditions':['Ready']}}", false},
	    {"{'status':{'conditions':[]}}", false},
	    {"{'status':{}}", false},
	    {"{'status':'Ready'}", false},
	    {"{}", false},
	    {"[]", false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *claim = load(cases[i].claim);
		if (pk_claim_ready(claim) != cases[i].ready)
			fail_msg("%s: want ready=%d", cases[i].claim, cases[i].ready);
		json_decref(claim);
	}
	assert_false(pk_claim_ready(NULL));
}

/* The pool's facts come from a backend's view: what it serves, and INVALID when it cannot use
 * the pool; the claim's facts take them as they are. */
static void test_facts_with_a_backend_view(void **state)
{
	(void)state;
	json_t *claim = load("{'metadata': {'name': 'c', 'namespace': 'ns', 'uid': 'u', "
	                     "'finalizers': ['ipam.poolkeeper.io/release-address']}, 'spec': "
	                     "{'poolRef': {'apiGroup': 'ipam.poolkeeper.io', 'kind': 'IPPool', "
	                     "'name': 'p'}}}");
	json_t *pool = load("{'metadata': {'name': 'p', 'namespace': 'other'}}");
	struct pk_pool_facts p;
	pk_pool_facts_from(claim, kind_of(claim), pool, &p);
	assert_true(p.served);
	assert_int_equal(p.state, PK_POOL_ACTIVE);
	assert_false(p.in_scope); /* an IPPool of another namespace */
	pk_pool_facts_from(claim, kind_of(claim), NULL, &p);
	assert_int_equal(p.state, PK_POOL_MISSING);

	struct pk_claim_facts f;
	struct pk_claim_decision d;
	struct pk_pool_facts invalid = {.served = true, .state = PK_POOL_INVALID, .in_scope = true};
	pk_claim_facts_build(claim, &invalid, false, NULL, NULL, &f);
	pk_decide_claim(&f, &d);
	assert_int_equal(d.action, PK_ACT_NOT_READY);
	assert_string_equal(d.reason, "PoolNotReady");
	struct pk_pool_facts not_served = {.served = false, .state = PK_POOL_ACTIVE};
	pk_claim_facts_build(claim, &not_served, false, NULL, NULL, &f);
	pk_decide_claim(&f, &d);
	assert_int_equal(d.action, PK_ACT_NONE);
	struct pk_pool_facts active = {.served = true, .state = PK_POOL_ACTIVE, .in_scope = true};
	pk_claim_facts_build(claim, &active, false, NULL, NULL, &f);
	pk_decide_claim(&f, &d);
	assert_int_equal(d.action, PK_ACT_ALLOCATE);
	json_decref(claim);
	json_decref(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_table_claim_paused),
	    cmocka_unit_test_setup_teardown(test_facts_from_objects, facts_objs_setup,
	                                    facts_objs_teardown),
	    cmocka_unit_test_setup_teardown(test_facts_cluster_paused, facts_objs_setup,
	                                    facts_objs_teardown),
	    cmocka_unit_test_setup_teardown(test_facts_address_owner, facts_objs_setup,
	                                    facts_objs_teardown),
	    cmocka_unit_test_setup_teardown(test_facts_claim_variants, facts_objs_setup,
	                                    facts_objs_teardown),
	    cmocka_unit_test(test_claim_pause_from_objects),
	    cmocka_unit_test(test_check_address),
	    cmocka_unit_test(test_claim_ready),
	    cmocka_unit_test(test_facts_with_a_backend_view),
	    cmocka_unit_test(test_facts_from_the_declared_kind),
	};
	return cmocka_run_group_tests_name("decide", tests, NULL, NULL);
}
