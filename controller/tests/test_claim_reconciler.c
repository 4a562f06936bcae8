/*
 * test_claim_reconciler.c - the generic claim reconciler against a fake
 * pool backend and a fake writer: allocation in one pass, exhaustion as a
 * result, a lease abandoned only when its create surely failed, release
 * only once the IPAddress is confirmed gone, pauses (pool, Cluster,
 * claim), deletion never blocked by a missing Cluster or pool, and the
 * wait for the cache to catch up with the controller's own writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "claim_reconciler.h"
#include "json_fixture.h"
#include "fake_writer.h"
#include "reconciler_rig.h"

/* ---- the fake backend ---- */

struct fake_backend {
	enum pk_pool_state state;
	enum pk_backend_status result;    /* what ensure_address answers */
	struct pk_backend_result failure; /* its reason, message and retry, when not OK */
	struct pk_backend_result release; /* what release_address answers (OK when zero) */
	bool held;
	unsigned ensures, abandons, releases, seen, checks;
	struct pk_pool_next seen_next; /* what address_seen says it changed */
	char abandoned[64];
	char
	    ensured_for[256]; /* the identity ensure_address was given: "ns name cluster uid key" */
};

static const struct pk_pool_kind fb_kinds[] = {
    {"IPPool", "ipam.poolkeeper.io", "v1alpha1", "ippools", true, "fake", PK_POOL_SPEC_RANGES}};

static const struct pk_pool_kind *fb_kinds_fn(void *self, size_t *n)
{
	(void)self;
	*n = 1;
	return fb_kinds;
}

static bool fb_serves(void *self, const json_t *ref)
{
	(void)self;
	const char *g = json_string_value(json_object_get(ref, "apiGroup"));
	return g != NULL && strcmp(g, "ipam.poolkeeper.io") == 0;
}

static void fb_check_address(void *self, const struct pk_pool_view *pool,
                             const struct pk_claim_id *key, const json_t *claim,
                             const json_t *address, struct pk_claim_facts *f)
{
	struct fake_backend *b = self;
	(void)pool;
	(void)key;
	(void)claim;
	(void)address;
	b->checks++;
	f->address_check = PK_ADDRESS_CONSISTENT;
}

static void fb_ensure(void *self, const struct pk_pool_view *pool, const struct pk_claim_id *id,
                      struct pk_address_lease *l, struct pk_backend_result *res)
{
	struct fake_backend *b = self;
	(void)pool;
	snprintf(b->ensured_for, sizeof(b->ensured_for), "%s %s %s %s %s", id->ns, id->name,
	         id->cluster ? id->cluster : "-", id->uid ? id->uid : "-", id->key);
	b->ensures++;
	*res = b->failure;
	res->status = b->result;
	if (b->result == PK_BACKEND_EXHAUSTED)
		pk_backend_result_set(res, b->result, "PoolExhausted", "pool is full");
	memset(l, 0, sizeof(*l));
	snprintf(l->address, sizeof(l->address), "10.0.0.5");
	l->prefix = 24;
	l->fresh = !b->held;
	if (b->result == PK_BACKEND_OK)
		b->held = true;
	if (b->result == PK_BACKEND_STALE)
		b->result = PK_BACKEND_OK; /* released by then: a fresh lease next */
}

static void fb_abandon(void *self, const struct pk_claim_id *id, const struct pk_address_lease *l)
{
	struct fake_backend *b = self;
	b->abandons++;
	snprintf(b->abandoned, sizeof(b->abandoned), "%s %s", id->key, l->address);
	b->held = false;
}

static bool fb_holds(void *self, const struct pk_claim_id *key)
{
	(void)key;
	return ((struct fake_backend *)self)->held;
}

static void fb_release(void *self, const struct pk_claim_id *key, struct pk_release_note *out,
                       struct pk_backend_result *result)
{
	struct fake_backend *b = self;
	(void)key;
	memset(out, 0, sizeof(*out));
	b->releases++;
	*result = b->release;
	if (result->status != PK_BACKEND_OK)
		return; /* still held */
	out->released = b->held;
	snprintf(out->address, sizeof(out->address), "10.0.0.5");
	b->held = false;
}

static void fb_seen(void *self, const json_t *address, struct pk_pool_next *next)
{
	(void)address;
	*next = ((struct fake_backend *)self)->seen_next;
	((struct fake_backend *)self)->seen++;
}

static const struct pk_backend_ops fb_ops = {
    .kinds = fb_kinds_fn,
    .serves = fb_serves,
    .check_address = fb_check_address,
    .ensure_address = fb_ensure,
    .abandon_address = fb_abandon,
    .holds = fb_holds,
    .release_address = fb_release,
    .address_seen = fb_seen,
};

/* ---- the fixture ---- */

struct fixture {
	struct fake_backend fb;
	struct pk_backend backend;
	struct reconciler_rig g;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	assert_non_null(fx);
	fx->fb.state = PK_POOL_ACTIVE;
	fx->backend = (struct pk_backend){&fb_ops, &fx->fb};
	rig_init(&fx->g, &fx->backend);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	rig_release(&fx->g);
	free(fx);
	return 0;
}

#define CLAIM_META \
	"'name': 'c1', 'namespace': 'ns', 'uid': 'cu', 'resourceVersion': '1', 'generation': 1"
#define POOL_REF  "'poolRef': {'apiGroup': 'ipam.poolkeeper.io', 'kind': 'IPPool', 'name': 'pool'}"
#define FINALIZER "'finalizers': ['ipam.poolkeeper.io/release-address']"

static json_t *claim_with(const char *meta_extra, const char *spec_extra)
{
	return loadf("{'apiVersion': 'ipam.cluster.x-k8s.io/v1beta2', 'kind': 'IPAddressClaim', "
	             "'metadata': {" CLAIM_META "%s}, 'spec': {" POOL_REF "%s}}",
	             meta_extra, spec_extra);
}

/* The claim's IPAddress, owned by it, with the protect finalizer. */
static json_t *address_of_claim(const char *extra)
{
	return loadf(
	    "{'metadata': {'name': 'c1', 'namespace': 'ns', 'uid': 'au', "
	    "'resourceVersion': '7', 'finalizers': ['ipam.poolkeeper.io/protect-address'], "
	    "'ownerReferences': [{'kind': 'IPAddressClaim', 'uid': 'cu', 'controller': "
	    "true}]%s}, 'spec': {'address': '10.0.0.5', 'prefix': 24, " POOL_REF
	    ", 'claimRef': {'name': 'c1'}}}",
	    extra);
}

/* The claim's pool as the cache holds it: none when missing, annotated when paused. */
static json_t *pool_of(const struct fixture *fx)
{
	if (fx->fb.state == PK_POOL_MISSING)
		return NULL;
	return loadf("{'metadata': {'name': 'pool', 'namespace': 'ns', 'uid': 'pu'%s}}",
	             fx->fb.state == PK_POOL_PAUSED ? ", 'annotations': {'" PK_PAUSED_ANNOTATION
	                                              "': 'true'}"
	                                            : "");
}

static int run(struct fixture *fx, json_t *claim, json_t *address, json_t *cluster,
               bool cluster_named)
{
	struct pk_claim_view v = {claim, address, cluster, pool_of(fx), cluster_named};
	return pk_claim_reconcile(&fx->g.r, "ns", "c1", &v);
}

/* Before another pass as if the cache had caught up: the calls and the expectations of the
 * last pass forgotten. */
static void next_pass(struct fixture *fx)
{
	rig_next_pass(&fx->g);
}

/* ---- the tests ---- */

static void allocates_and_sets_ready_in_one_pass(void **state)
{
	struct fixture *fx = *state;
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_OK);
	assert_int_equal(fx->fb.ensures, 1);
	int create = fake_find(&fx->g.fw, "create", "ipaddresses ");
	int status = fake_find(&fx->g.fw, "patch", "ipaddressclaims/status c1");
	assert_true(create >= 0);
	assert_true(status > create);
	assert_true(fake_body_has(&fx->g.fw, create, "\"address\":\"10.0.0.5\""));
	assert_true(fake_body_has(&fx->g.fw, status, "\"addressRef\":{\"name\":\"c1\"}"));
	assert_true(fake_body_has(&fx->g.fw, status, "\"status\":\"True\""));
	assert_int_equal(fx->g.fw.ncalls, 2);
	assert_int_equal(atomic_load(&fx->g.metrics.allocations), 1);
	assert_int_equal(fx->fb.abandons, 0);
	assert_string_equal(fx->fb.ensured_for, "ns c1 - cu ns/c1");
}

/* The backend is told the claim's identity: namespace, name, cluster and UID. */
static void the_backend_gets_the_claims_identity(void **state)
{
	struct fixture *fx = *state;
	json_t *cluster = load("{'metadata': {'name': 'prod', 'namespace': 'ns'}}");
	assert_int_equal(
	    run(fx, claim_with(", " FINALIZER, ", 'clusterName': 'prod'"), NULL, cluster, true),
	    PK_OK);
	assert_int_equal(fx->fb.ensures, 1);
	assert_string_equal(fx->fb.ensured_for, "ns c1 prod cu ns/c1");
}

static void puts_the_finalizer_on_first(void **state)
{
	struct fixture *fx = *state;
	fx->g.fw.patched = claim_with(", " FINALIZER, "");
	assert_int_equal(run(fx, claim_with("", ""), NULL, NULL, false), PK_OK);
	assert_int_equal(fake_find(&fx->g.fw, "patch", "ipaddressclaims c1"), 0);
	assert_true(fake_body_has(&fx->g.fw, 0, "release-address"));
	assert_int_equal(fake_find(&fx->g.fw, "create", "ipaddresses "), 1);
	assert_int_equal(fake_find(&fx->g.fw, "patch", "ipaddressclaims/status c1"), 2);
}

static void exhaustion_is_a_result_not_a_create(void **state)
{
	struct fixture *fx = *state;
	fx->fb.result = PK_BACKEND_EXHAUSTED;
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_OK);
	assert_int_equal(fake_find(&fx->g.fw, "create", "ipaddresses "), -1);
	int status = fake_find(&fx->g.fw, "patch", "ipaddressclaims/status c1");
	assert_true(status >= 0);
	assert_true(fake_body_has(&fx->g.fw, status, "PoolExhausted"));
	assert_true(fake_body_has(&fx->g.fw, status, "pool is full"));
	assert_int_equal(atomic_load(&fx->g.metrics.failures_exhausted), 1);
	assert_int_equal(atomic_load(&fx->g.metrics.allocations), 0);
}

static void a_refused_create_abandons_the_lease(void **state)
{
	struct fixture *fx = *state;
	fx->g.fw.create_reason = PK_KUBE_INVALID;
	fx->g.fw.create_code = 422;
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_ERR_API);
	assert_int_equal(fx->fb.abandons, 1);
	assert_string_equal(fx->fb.abandoned, "ns/c1 10.0.0.5");
	int status = fake_find(&fx->g.fw, "patch", "ipaddressclaims/status c1");
	assert_true(fake_body_has(&fx->g.fw, status, "AllocationFailed"));
	assert_int_equal(atomic_load(&fx->g.metrics.failures_other), 1);
}

static void a_create_perhaps_done_keeps_the_lease(void **state)
{
	struct fixture *fx = *state;
	fx->g.fw.create_reason = PK_KUBE_SERVER_ERROR;
	fx->g.fw.create_code = 503;
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_ERR_API);
	assert_int_equal(fx->fb.abandons, 0);
	assert_true(fx->fb.held);
}

static void a_create_without_an_answer_keeps_the_lease(void **state)
{
	struct fixture *fx = *state;
	fx->g.fw.create_reason = PK_KUBE_CONNECTION;
	fx->g.fw.create_code = 0;
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_ERR_API);
	assert_int_equal(fx->fb.abandons, 0);
	assert_true(fx->fb.held);
}

static void already_exists_is_adopted_later(void **state)
{
	struct fixture *fx = *state;
	fx->g.fw.create_reason = PK_KUBE_ALREADY_EXISTS;
	fx->g.fw.create_code = 409;
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_OK);
	assert_int_equal(fx->fb.abandons, 1);
	assert_int_equal(fx->g.requeued, 1);
	assert_int_equal(fake_find(&fx->g.fw, "patch", "ipaddressclaims/status c1"), -1);
}

#define DELETING ", 'deletionTimestamp': '2026-01-01T00:00:00Z'"

static void release_waits_for_the_ipaddress_to_be_gone(void **state)
{
	struct fixture *fx = *state;
	fx->fb.held = true;
	fx->g.fw.get_reason = PK_KUBE_OK; /* the API still has it: the cache lags */
	assert_int_equal(run(fx, claim_with(", " FINALIZER DELETING, ""), NULL, NULL, false),
	                 PK_OK);
	assert_int_equal(fx->fb.releases, 0);
	assert_int_equal(fake_find(&fx->g.fw, "patch", "ipaddressclaims c1"), -1);
	assert_int_equal(fx->g.requeued, 1);
	assert_int_equal(fx->g.requeue_delay, 1000);

	fake_writer_release(&fx->g.fw);
	fx->g.fw.get_reason = PK_KUBE_NOT_FOUND;
	assert_int_equal(run(fx, claim_with(", " FINALIZER DELETING, ""), NULL, NULL, false),
	                 PK_OK);
	assert_int_equal(fx->fb.releases, 1);
	assert_int_equal(fake_find(&fx->g.fw, "get", "ipaddresses c1"), 0);
	int fin = fake_find(&fx->g.fw, "patch", "ipaddressclaims c1");
	assert_true(fin > 0);
	assert_true(fake_body_has(&fx->g.fw, fin, "\"op\":\"remove\""));
	assert_int_equal(atomic_load(&fx->g.metrics.releases), 1);
}

/*
 * A release the backend could not confirm keeps the claim's finalizer: the
 * claim says why and comes back when the result says; once the backend
 * confirms, the finalizer comes off.
 */
static void an_unconfirmed_release_keeps_the_finalizer(void **state)
{
	struct fixture *fx = *state;
	fx->fb.held = true;
	fx->g.fw.get_reason = PK_KUBE_NOT_FOUND;
	pk_backend_result_set(&fx->fb.release, PK_BACKEND_TRANSIENT, "ReleaseFailed",
	                      "the external system answered 503");
	fx->fb.release.retry_after_ms = 2500;
	assert_int_equal(run(fx, claim_with(", " FINALIZER DELETING, ""), NULL, NULL, false),
	                 PK_OK);
	assert_int_equal(fx->fb.releases, 1);
	assert_true(fx->fb.held);
	assert_int_equal(fake_find(&fx->g.fw, "patch", "ipaddressclaims c1"), -1);
	int status = fake_find(&fx->g.fw, "patch", "ipaddressclaims/status c1");
	assert_true(status >= 0);
	assert_true(fake_body_has(&fx->g.fw, status, "ReleaseFailed"));
	assert_true(fake_body_has(&fx->g.fw, status, "answered 503"));
	assert_int_equal(fx->g.requeued, 1);
	assert_int_equal(fx->g.requeue_delay, 2500);
	assert_int_equal(atomic_load(&fx->g.metrics.releases), 0);

	/* Pending: nothing written, nothing queued (the backend queues the claim itself). */
	next_pass(fx);
	fx->g.requeued = 0;
	pk_backend_result_set(&fx->fb.release, PK_BACKEND_PENDING, NULL, "%s", "");
	assert_int_equal(run(fx, claim_with(", " FINALIZER DELETING, ""), NULL, NULL, false),
	                 PK_OK);
	assert_int_equal(fx->g.fw.ncalls, 1); /* the consistent read only */
	assert_int_equal(fx->g.requeued, 0);

	/* Confirmed: the finalizer comes off. */
	next_pass(fx);
	memset(&fx->fb.release, 0, sizeof(fx->fb.release));
	assert_int_equal(run(fx, claim_with(", " FINALIZER DELETING, ""), NULL, NULL, false),
	                 PK_OK);
	assert_false(fx->fb.held);
	int fin = fake_find(&fx->g.fw, "patch", "ipaddressclaims c1");
	assert_true(fin > 0);
	assert_true(fake_body_has(&fx->g.fw, fin, "\"op\":\"remove\""));
}

/*
 * What ensure_address came to, on the claim: PENDING frees the worker and
 * writes nothing; TRANSIENT with a reason says it on the claim and comes
 * back after its retry; PERMANENT says it and comes back only after
 * PK_BACKEND_PERMANENT_RETRY_MS. No IPAddress is created for any of them.
 */
static void results_that_are_not_a_lease(void **state)
{
	struct fixture *fx = *state;
	fx->fb.result = PK_BACKEND_PENDING;
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_OK);
	assert_int_equal(fx->g.fw.ncalls, 0);
	assert_int_equal(fx->g.requeued, 0);

	fx->fb.result = PK_BACKEND_TRANSIENT;
	pk_backend_result_set(&fx->fb.failure, PK_BACKEND_TRANSIENT, "BackendUnavailable",
	                      "kea.example.org did not answer in 2 s");
	fx->fb.failure.retry_after_ms = 3000;
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_OK);
	int status = fake_find(&fx->g.fw, "patch", "ipaddressclaims/status c1");
	assert_true(status >= 0);
	assert_true(fake_body_has(&fx->g.fw, status, "\"reason\":\"BackendUnavailable\""));
	assert_true(fake_body_has(&fx->g.fw, status, "did not answer in 2 s"));
	assert_true(fake_body_has(&fx->g.fw, status, "\"status\":\"False\""));
	assert_int_equal(fx->g.requeued, 1);
	assert_int_equal(fx->g.requeue_delay, 3000);
	assert_int_equal(atomic_load(&fx->g.metrics.failures_other), 1);

	next_pass(fx);
	fx->fb.result = PK_BACKEND_PERMANENT;
	pk_backend_result_set(&fx->fb.failure, PK_BACKEND_PERMANENT, "AllocationFailed",
	                      "the subnet is not in the server's configuration");
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_OK);
	assert_true(fake_body_has(&fx->g.fw,
	                          fake_find(&fx->g.fw, "patch", "ipaddressclaims/status c1"),
	                          "not in the server's configuration"));
	assert_int_equal(fx->g.requeued, 2);
	assert_int_equal(fx->g.requeue_delay, PK_BACKEND_PERMANENT_RETRY_MS);
	assert_int_equal(fake_find(&fx->g.fw, "create", "ipaddresses "), -1);
	assert_int_equal(fx->fb.ensures, 3);
}

static void deleting_claim_with_its_ipaddress_deletes_it_first(void **state)
{
	struct fixture *fx = *state;
	fx->fb.held = true;
	json_t *a = address_of_claim("");
	json_object_del(json_object_get(a, "metadata"), "finalizers");
	assert_int_equal(run(fx, claim_with(", " FINALIZER DELETING, ""), a, NULL, false), PK_OK);
	assert_int_equal(fake_find(&fx->g.fw, "delete", "ipaddresses c1"), 0);
	assert_int_equal(fx->fb.releases, 0);
	assert_int_equal(fx->fb.seen, 1);
}

/* The claim's IPAddress as the garbage collector leaves it when the claim is deleted in the
 * foreground: the claim's owner reference patched out, the pool's (blocking, not a controller)
 * kept, the protect finalizer on. `spec_extra` and `owner_extra` vary the signs. */
static json_t *address_left_by_collector(const char *owner_extra, const char *claim_ref)
{
	return loadf(
	    "{'metadata': {'name': 'c1', 'namespace': 'ns', 'uid': 'au', "
	    "'resourceVersion': '9', 'finalizers': ['ipam.poolkeeper.io/protect-address'], "
	    "'ownerReferences': [{'apiVersion': 'ipam.poolkeeper.io/v1alpha1', 'kind': "
	    "'IPPool', 'name': 'pool', 'uid': 'pu', 'blockOwnerDeletion': true}%s]}, "
	    "'spec': {'address': '10.0.0.5', 'prefix': 24, " POOL_REF
	    ", 'claimRef': {'name': '%s'}}}",
	    owner_extra, claim_ref);
}

#define FOREGROUND                                                                       \
	", 'finalizers': ['foregroundDeletion', 'ipam.poolkeeper.io/release-address'], " \
	"'deletionTimestamp': '2026-01-01T00:00:00Z'"

static void foreground_deletion_releases_the_ipaddress_the_collector_left(void **state)
{
	struct fixture *fx = *state;
	fx->fb.held = true;
	/* Its finalizer first, never the claim's: the IPAddress is still the claim's. */
	assert_int_equal(
	    run(fx, claim_with(FOREGROUND, ""), address_left_by_collector("", "c1"), NULL, false),
	    PK_OK);
	int unprotect = fake_find(&fx->g.fw, "patch", "ipaddresses c1");
	assert_true(unprotect >= 0);
	assert_true(fake_body_has(&fx->g.fw, unprotect, "protect-address"));
	assert_int_equal(fake_find(&fx->g.fw, "patch", "ipaddressclaims c1"), -1);
	assert_int_equal(fx->fb.releases, 0);

	/* Unprotected: deleted. */
	fake_writer_release(&fx->g.fw);
	json_t *a = address_left_by_collector("", "c1");
	json_object_del(json_object_get(a, "metadata"), "finalizers");
	assert_int_equal(run(fx, claim_with(FOREGROUND, ""), a, NULL, false), PK_OK);
	assert_int_equal(fake_find(&fx->g.fw, "delete", "ipaddresses c1"), 0);
	assert_int_equal(fake_find(&fx->g.fw, "patch", "ipaddressclaims c1"), -1);
	assert_int_equal(fx->fb.releases, 0);

	/* Gone: the address is released, then the claim's finalizer comes off. */
	fake_writer_release(&fx->g.fw);
	fx->g.fw.get_reason = PK_KUBE_NOT_FOUND;
	assert_int_equal(run(fx, claim_with(FOREGROUND, ""), NULL, NULL, false), PK_OK);
	assert_int_equal(fx->fb.releases, 1);
	assert_int_equal(atomic_load(&fx->g.metrics.releases), 1);
	int fin = fake_find(&fx->g.fw, "patch", "ipaddressclaims c1");
	assert_true(fin >= 0);
	assert_true(fake_body_has(&fx->g.fw, fin, "release-address"));
}

/* Each sign that the IPAddress is another's keeps it foreign: nothing of it is touched and the
 * claim's finalizer alone comes off. */
static void an_ipaddress_another_controls_is_not_released(void **state)
{
	struct fixture *fx = *state;
	json_t *other[] = {
	    /* another controller */
	    address_left_by_collector(", {'kind': 'IPAddressClaim', 'uid': 'other', "
	                              "'controller': true}",
	                              "c1"),
	    /* a claimRef that names another claim */
	    address_left_by_collector("", "c2"),
	    /* a pool that is not the claim's */
	    loadf("{'metadata': {'name': 'c1', 'namespace': 'ns', 'uid': 'au', "
	          "'finalizers': ['ipam.poolkeeper.io/protect-address']}, 'spec': {'address': "
	          "'10.0.0.5', 'prefix': 24, 'poolRef': {'apiGroup': 'ipam.poolkeeper.io', "
	          "'kind': 'IPPool', 'name': 'other'}, 'claimRef': {'name': 'c1'}}}"),
	    /* another provider's pool */
	    loadf("{'metadata': {'name': 'c1', 'namespace': 'ns', 'uid': 'au', "
	          "'finalizers': ['ipam.poolkeeper.io/protect-address']}, 'spec': {'address': "
	          "'10.0.0.5', 'prefix': 24, 'poolRef': {'apiGroup': 'ipam.example.com', 'kind': "
	          "'IPPool', 'name': 'pool'}, 'claimRef': {'name': 'c1'}}}"),
	};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		fake_writer_release(&fx->g.fw);
		fx->fb.held = true;
		fx->fb.releases = 0;
		assert_int_equal(run(fx, claim_with(FOREGROUND, ""), other[i], NULL, false), PK_OK);
		assert_int_equal(fake_find(&fx->g.fw, "patch", "ipaddresses c1"), -1);
		assert_int_equal(fake_find(&fx->g.fw, "delete", "ipaddresses c1"), -1);
		assert_int_equal(fx->fb.releases, 0);
		assert_true(fake_find(&fx->g.fw, "patch", "ipaddressclaims c1") >= 0);
	}
}

/* Only a claim being deleted counts such an IPAddress as its own: a live claim is not made to
 * adopt an IPAddress that has lost its owner reference. */
static void a_live_claim_does_not_adopt_an_unowned_ipaddress(void **state)
{
	struct fixture *fx = *state;
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""),
	                     address_left_by_collector("", "c1"), NULL, false),
	                 PK_OK);
	assert_int_equal(fx->fb.ensures, 0);
	int status = fake_find(&fx->g.fw, "patch", "ipaddressclaims/status c1");
	assert_true(status >= 0);
	assert_true(fake_body_has(&fx->g.fw, status, "AllocationFailed"));
	assert_int_equal(fake_find(&fx->g.fw, "patch", "ipaddresses c1"), -1);
}

/* What a backend's operation changed reaches the controller, which queues what follows (the
 * pool's status, its waiting claims, the end of a grace period, another claim); an operation
 * that changed nothing hands on nothing. */
static void what_the_backend_changed_is_handed_on(void **state)
{
	struct fixture *fx = *state;
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_OK);
	assert_int_equal(fx->g.followed, 0);
	rig_next_pass(&fx->g);
	fx->fb.held = false;
	fx->fb.failure.next = (struct pk_pool_next){.pool_key = "IPPool/ns/pool", .sync = true};
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_OK);
	assert_int_equal(fx->g.followed, 1);
	assert_string_equal(fx->g.next.pool_key, "IPPool/ns/pool");
	assert_true(fx->g.next.sync);
	/* An IPAddress seen for the first time: the pool's counts moved. */
	rig_next_pass(&fx->g);
	fx->fb.seen_next = (struct pk_pool_next){.pool_key = "IPPool/ns/other", .sync = true};
	assert_int_equal(run(fx, NULL, address_of_claim(""), NULL, false), PK_OK);
	assert_int_equal(fx->g.followed, 2);
	assert_string_equal(fx->g.next.pool_key, "IPPool/ns/other");
	/* A release: waiting claims woken, the grace period's end, the other holder. */
	rig_next_pass(&fx->g);
	fx->fb.held = true;
	fx->fb.release.next = (struct pk_pool_next){
	    .pool_key = "IPPool/ns/pool", .wake = true, .grace_ms = 600100, .claim_key = "ns/c2"};
	assert_int_equal(run(fx, NULL, NULL, NULL, false), PK_OK);
	assert_int_equal(fx->fb.releases, 1);
	assert_int_equal(fx->g.followed, 3);
	assert_true(fx->g.next.wake);
	assert_int_equal(fx->g.next.grace_ms, 600100);
	assert_string_equal(fx->g.next.claim_key, "ns/c2");
}

static void a_claim_gone_releases_once_its_ipaddress_is_gone(void **state)
{
	struct fixture *fx = *state;
	fx->fb.held = true;
	assert_int_equal(run(fx, NULL, NULL, NULL, false), PK_OK);
	assert_int_equal(fx->fb.releases, 1);
	/* not held: no read, no release */
	fake_writer_release(&fx->g.fw);
	assert_int_equal(run(fx, NULL, NULL, NULL, false), PK_OK);
	assert_int_equal(fx->g.fw.ncalls, 0);
	assert_int_equal(fx->fb.releases, 1);
}

/* The claim gone, its IPAddress deleted by someone (clusterctl move leaves a cluster-wide
 * pool's IPAddresses behind): the protect finalizer comes off; left alone while not deleted. */
static void an_orphan_ipaddress_deleted_loses_its_finalizer(void **state)
{
	struct fixture *fx = *state;
	fx->fb.held = true;
	assert_int_equal(run(fx, NULL, address_of_claim(""), NULL, false), PK_OK);
	assert_int_equal(fx->g.fw.ncalls, 0);
	assert_int_equal(run(fx, NULL, address_of_claim(DELETING), NULL, false), PK_OK);
	int unprotect = fake_find(&fx->g.fw, "patch", "ipaddresses c1");
	assert_true(unprotect >= 0);
	assert_true(fake_body_has(&fx->g.fw, unprotect, "protect-address"));
	assert_int_equal(fx->fb.releases, 0);
	/* Deleting, without the finalizer: nothing to write; released once it is gone. */
	fake_writer_release(&fx->g.fw);
	json_t *a = address_of_claim(DELETING);
	json_object_del(json_object_get(a, "metadata"), "finalizers");
	assert_int_equal(run(fx, NULL, a, NULL, false), PK_OK);
	assert_int_equal(fx->g.fw.ncalls, 0);
	assert_int_equal(run(fx, NULL, NULL, NULL, false), PK_OK);
	assert_int_equal(fx->fb.releases, 1);
}

static void deletion_not_blocked_by_missing_cluster_or_pool(void **state)
{
	struct fixture *fx = *state;
	fx->fb.state = PK_POOL_MISSING;
	assert_int_equal(run(fx, claim_with(", " FINALIZER DELETING, ", 'clusterName': 'gone'"),
	                     NULL, NULL, true),
	                 PK_OK);
	int fin = fake_find(&fx->g.fw, "patch", "ipaddressclaims c1");
	assert_true(fin >= 0);
	assert_true(fake_body_has(&fx->g.fw, fin, "release-address"));
	assert_int_equal(fx->fb.ensures, 0);
}

/* Nothing is allocated while something is paused; an unbound claim says so (or waits). */
static void assert_paused(struct fixture *fx)
{
	assert_int_equal(fx->fb.ensures, 0);
	assert_int_equal(fake_find(&fx->g.fw, "create", "ipaddresses "), -1);
	int status = fake_find(&fx->g.fw, "patch", "ipaddressclaims/status c1");
	if (status >= 0)
		assert_true(fake_body_has(&fx->g.fw, status, "Paused"));
}

static void paused_pool_allocates_nothing(void **state)
{
	struct fixture *fx = *state;
	fx->fb.state = PK_POOL_PAUSED;
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_OK);
	assert_paused(fx);
}

static void paused_cluster_allocates_nothing(void **state)
{
	struct fixture *fx = *state;
	json_t *cluster = load("{'metadata': {'name': 'prod', 'namespace': 'ns'}, "
	                       "'spec': {'paused': true}}");
	assert_int_equal(
	    run(fx, claim_with(", " FINALIZER, ", 'clusterName': 'prod'"), NULL, cluster, true),
	    PK_OK);
	assert_paused(fx);
}

static void paused_claim_allocates_nothing(void **state)
{
	struct fixture *fx = *state;
	assert_int_equal(
	    run(fx,
	        claim_with(", " FINALIZER ", 'annotations': {'cluster.x-k8s.io/paused': ''}", ""),
	        NULL, NULL, false),
	    PK_OK);
	assert_paused(fx);
	assert_true(fake_find(&fx->g.fw, "patch", "ipaddressclaims/status c1") >= 0);
}

static void paused_deleting_claim_keeps_its_address(void **state)
{
	struct fixture *fx = *state;
	fx->fb.held = true;
	fx->fb.state = PK_POOL_PAUSED;
	assert_int_equal(run(fx, claim_with(", " FINALIZER DELETING, ""), NULL, NULL, false),
	                 PK_OK);
	assert_int_equal(fx->fb.releases, 0);
	assert_int_equal(fx->g.fw.ncalls, 0);
}

static void not_served_is_left_alone(void **state)
{
	struct fixture *fx = *state;
	json_t *claim = load("{'metadata': {" CLAIM_META "}, 'spec': {'poolRef': {'apiGroup': "
	                     "'ipam.example.com', 'kind': 'Pool', 'name': 'x'}}}");
	assert_int_equal(run(fx, claim, NULL, NULL, false), PK_OK);
	assert_int_equal(fx->g.fw.ncalls, 0);
	assert_int_equal(fx->fb.ensures, 0);
}

static void adopts_a_consistent_ipaddress(void **state)
{
	struct fixture *fx = *state;
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), address_of_claim(""), NULL, false),
	                 PK_OK);
	assert_int_equal(fx->fb.seen, 1);
	assert_int_equal(fx->fb.checks, 1);
	assert_int_equal(fx->fb.ensures, 0);
	int status = fake_find(&fx->g.fw, "patch", "ipaddressclaims/status c1");
	assert_int_equal(status, 0);
	assert_true(fake_body_has(&fx->g.fw, status, "\"addressRef\":{\"name\":\"c1\"}"));
}

static void stale_lease_is_released_before_a_fresh_one(void **state)
{
	struct fixture *fx = *state;
	fx->fb.held = true;
	fx->fb.result = PK_BACKEND_STALE;
	fx->g.fw.get_reason = PK_KUBE_OK; /* still there: wait */
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_OK);
	assert_int_equal(fx->fb.releases, 0);
	assert_int_equal(fake_find(&fx->g.fw, "create", "ipaddresses "), -1);
	fx->fb.result = PK_BACKEND_STALE;
	fx->g.fw.get_reason = PK_KUBE_NOT_FOUND;
	fake_writer_release(&fx->g.fw);
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_OK);
	assert_int_equal(fx->fb.releases, 1);
	assert_int_equal(fx->fb.ensures, 3);
	assert_true(fake_find(&fx->g.fw, "create", "ipaddresses ") > 0);
}

static void waits_for_the_cache_to_catch_up(void **state)
{
	struct fixture *fx = *state;
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_OK);
	size_t writes = fx->g.fw.ncalls;
	assert_int_equal(writes, 2);
	/* The watch has not brought the writes back: the same old view waits, writing nothing. */
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false), PK_OK);
	assert_int_equal(fx->g.fw.ncalls, writes);
	assert_int_equal(fx->g.requeued, 1);
	assert_true(fx->g.requeue_delay > 0);
	assert_int_equal(fx->fb.ensures, 1);
}

/* A write the API refuses is PK_ERR_API (the reason is in the log and the pk_kube_error); a
 * pool the backend cannot allocate from stays PK_ERR_INVALID. Both are retried with backoff. */
static void a_refused_write_is_an_api_error(void **state)
{
	struct fixture *fx = *state;
	fx->g.fw.patch_reason = PK_KUBE_CONFLICT;
	assert_int_equal(run(fx, claim_with("", ""), NULL, NULL, false), PK_ERR_API);
	assert_int_equal(fx->g.fw.ncalls, 1);
	assert_int_equal(fx->fb.ensures, 0);
}

static void an_invalid_pool_stays_invalid(void **state)
{
	struct fixture *fx = *state;
	fx->fb.result = PK_BACKEND_TRANSIENT; /* no reason: nothing written, backoff */
	assert_int_equal(run(fx, claim_with(", " FINALIZER, ""), NULL, NULL, false),
	                 PK_ERR_INVALID);
	assert_int_equal(fx->fb.ensures, 1);
	assert_int_equal(fx->g.fw.ncalls, 0);
}

/* The writer's mapping: NotFound is done, any other refusal PK_ERR_API, no memory NOMEM. */
static void writer_maps_failures(void **state)
{
	struct fixture *fx = *state;
	struct pk_kube_ref ref = {.resource = "ipaddresses", .namespace = "ns", .name = "c1"};
	fx->g.fw.patch_reason = PK_KUBE_FORBIDDEN;
	assert_int_equal(
	    pk_writer_patch(&fx->g.writer, &ref, true, json_object(), "test", "ns/c1", NULL),
	    PK_ERR_API);
	fx->g.fw.patch_reason = PK_KUBE_NOT_FOUND;
	assert_int_equal(
	    pk_writer_patch(&fx->g.writer, &ref, true, json_object(), "test", "ns/c1", NULL),
	    PK_OK);
	assert_int_equal(pk_writer_patch(&fx->g.writer, &ref, true, NULL, "test", "ns/c1", NULL),
	                 PK_OK);
	fx->g.fw.get_reason = PK_KUBE_UNAUTHORIZED;
	bool gone = true;
	assert_int_equal(pk_writer_gone(&fx->g.writer, &ref, "ns/c1", &gone), PK_ERR_API);
	assert_false(gone);
	struct pk_kube_error e;
	(void)pk_kube_error_set(&e, PK_KUBE_NOMEM, 0, "out of memory");
	assert_int_equal(pk_writer_failed("test", "ns/c1", &e), PK_ERR_NOMEM);
	(void)pk_kube_error_set(&e, PK_KUBE_CANCELLED, -1, "not leading");
	assert_int_equal(pk_writer_failed("test", "ns/c1", &e), PK_ERR_API);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(allocates_and_sets_ready_in_one_pass, setup, teardown),
	    cmocka_unit_test_setup_teardown(the_backend_gets_the_claims_identity, setup, teardown),
	    cmocka_unit_test_setup_teardown(results_that_are_not_a_lease, setup, teardown),
	    cmocka_unit_test_setup_teardown(what_the_backend_changed_is_handed_on, setup, teardown),
	    cmocka_unit_test_setup_teardown(an_unconfirmed_release_keeps_the_finalizer, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(puts_the_finalizer_on_first, setup, teardown),
	    cmocka_unit_test_setup_teardown(exhaustion_is_a_result_not_a_create, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_refused_create_abandons_the_lease, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_create_perhaps_done_keeps_the_lease, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_create_without_an_answer_keeps_the_lease, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(already_exists_is_adopted_later, setup, teardown),
	    cmocka_unit_test_setup_teardown(release_waits_for_the_ipaddress_to_be_gone, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(deleting_claim_with_its_ipaddress_deletes_it_first,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(a_claim_gone_releases_once_its_ipaddress_is_gone, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(
	        foreground_deletion_releases_the_ipaddress_the_collector_left, setup, teardown),
	    cmocka_unit_test_setup_teardown(an_ipaddress_another_controls_is_not_released, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(a_live_claim_does_not_adopt_an_unowned_ipaddress, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(deletion_not_blocked_by_missing_cluster_or_pool, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(an_orphan_ipaddress_deleted_loses_its_finalizer, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(paused_pool_allocates_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(paused_cluster_allocates_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(paused_claim_allocates_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(paused_deleting_claim_keeps_its_address, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(not_served_is_left_alone, setup, teardown),
	    cmocka_unit_test_setup_teardown(adopts_a_consistent_ipaddress, setup, teardown),
	    cmocka_unit_test_setup_teardown(stale_lease_is_released_before_a_fresh_one, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(waits_for_the_cache_to_catch_up, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_refused_write_is_an_api_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(an_invalid_pool_stays_invalid, setup, teardown),
	    cmocka_unit_test_setup_teardown(writer_maps_failures, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
