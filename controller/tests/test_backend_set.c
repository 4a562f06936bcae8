/*
 * test_backend_set.c - several backends side by side (backend_set.h),
 * driven through the claim reconciler: a remote backend whose calls take
 * their time (fake_remote.h) beside a local one that answers at once.
 * Each question goes to its member; a slow remote system holds no worker,
 * and the local backend's claims bind meanwhile; faults (503, 429 with
 * Retry-After, timeouts, a lost answer, a restart) end in one lease per
 * claim.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "backend_set.h"
#include "claim_reconciler.h"
#include "json_fixture.h"
#include "fake_remote.h"
#include "fake_writer.h"
#include "reconciler_rig.h"

/* ---- the local backend: answers at once ---- */

struct fake_local {
	unsigned ensures, leading, freed, pool_work;
	bool held;
};

static const struct pk_pool_kind local_kinds[] = {
    {"LocalIPPool", "local.ipam.example.org", "v1", "localippools", true, "local",
     PK_POOL_SPEC_RANGES},
    {"GlobalLocalIPPool", "local.ipam.example.org", "v1", "globallocalippools", false, "local",
     PK_POOL_SPEC_RANGES}};

static const struct pk_pool_kind *local_kinds_fn(void *self, size_t *n)
{
	(void)self;
	*n = 2;
	return local_kinds;
}

static bool local_serves(void *self, const json_t *ref)
{
	(void)self;
	const char *g = json_string_value(json_object_get(ref, "apiGroup"));
	return g != NULL && strcmp(g, local_kinds[0].group) == 0;
}

static void local_ensure(void *self, const struct pk_pool_view *pool, const struct pk_claim_id *id,
                         struct pk_address_lease *lease, struct pk_backend_result *out)
{
	struct fake_local *b = self;
	(void)pool, (void)id;
	b->ensures++;
	memset(out, 0, sizeof(*out));
	memset(lease, 0, sizeof(*lease));
	snprintf(lease->address, sizeof(lease->address), "10.1.0.5");
	lease->prefix = 24;
	lease->fresh = !b->held;
	b->held = true;
}

static bool local_holds(void *self, const struct pk_claim_id *id)
{
	(void)id;
	return ((struct fake_local *)self)->held;
}

static void local_release(void *self, const struct pk_claim_id *id, struct pk_release_note *out,
                          struct pk_backend_result *result)
{
	(void)id;
	memset(out, 0, sizeof(*out));
	memset(result, 0, sizeof(*result));
	out->released = ((struct fake_local *)self)->held;
	((struct fake_local *)self)->held = false;
}

static int local_on_leading(void *self)
{
	((struct fake_local *)self)->leading++;
	return PK_OK;
}

static int local_reconcile_pool(void *self, const struct pk_work_key *k, const json_t *pool,
                                struct pk_pool_next *next)
{
	(void)k, (void)pool, (void)next;
	((struct fake_local *)self)->pool_work++;
	return PK_OK;
}

static void local_metrics(void *self, FILE *f)
{
	(void)self;
	fprintf(f, "local_up 1\n");
}

static void local_free(void *self)
{
	((struct fake_local *)self)->freed++;
}

static const struct pk_backend_ops local_ops = {
    .kinds = local_kinds_fn,
    .serves = local_serves,
    .check_address = remote_check,
    .ensure_address = local_ensure,
    .abandon_address = remote_abandon,
    .holds = local_holds,
    .release_address = local_release,
    .address_seen = remote_seen,
    .on_leading = local_on_leading,
    .reconcile_pool = local_reconcile_pool,
    .write_metrics = local_metrics,
    .free = local_free,
};

/* ---- the fixture ---- */

struct fixture {
	struct fake_local local;
	struct fake_remote remote;
	struct pk_backend set;
	struct reconciler_rig g;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	assert_non_null(fx);
	fake_remote_init(&fx->remote);
	struct pk_backend members[2] = {{&local_ops, &fx->local}, {&remote_ops, &fx->remote}};
	struct pk_err err = {{0}};
	assert_int_equal(pk_backend_set_new(members, 2, &fx->set, &err), PK_OK);
	rig_init(&fx->g, &fx->set);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	fx->set.ops->free(fx->set.self);
	assert_int_equal(fx->local.freed, 1);
	fake_remote_destroy(&fx->remote);
	rig_release(&fx->g);
	free(fx);
	return 0;
}

#define FINALIZER "'finalizers': ['ipam.poolkeeper.io/release-address']"
#define REMOTE_POOL \
	"{'apiGroup': 'remote.ipam.example.org', 'kind': 'RemoteIPPool', 'name': 'remote'}"
#define LOCAL_POOL   "{'apiGroup': 'local.ipam.example.org', 'kind': 'LocalIPPool', 'name': 'local'}"
#define NOBODYS_POOL "{'apiGroup': 'other.example.org', 'kind': 'OtherPool', 'name': 'o'}"

static json_t *claim(const char *name, const char *pool_ref)
{
	return loadf("{'apiVersion': 'ipam.cluster.x-k8s.io/v1beta2', 'kind': 'IPAddressClaim', "
	             "'metadata': {'name': '%s', 'namespace': 'ns', 'uid': 'u-%s', "
	             "'resourceVersion': '1', 'generation': 1, " FINALIZER "}, "
	             "'spec': {'clusterName': 'prod', 'poolRef': %s}}",
	             name, name, pool_ref);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The pool a poolRef names, as the cache holds it. */
static json_t *pool_of(const char *pool_ref)
{
	if (strcmp(pool_ref, LOCAL_POOL) == 0)
		return load("{'metadata': {'name': 'local', 'namespace': 'ns', 'uid': 'lu'}}");
	return remote_pool();
}

static int run(struct fixture *fx, const char *name, const char *pool_ref)
{
	json_t *cluster = load("{'metadata': {'name': 'prod', 'namespace': 'ns'}}");
	struct pk_claim_view v = {claim(name, pool_ref), NULL, cluster, pool_of(pool_ref), true};
	return pk_claim_reconcile(&fx->g.r, "ns", name, &v);
}

/* The address the IPAddress created in the last pass holds, or "" when none was created. */
static const char *created_address(struct fixture *fx)
{
	int i = fake_find(&fx->g.fw, "create", "ipaddresses ");
	if (i < 0)
		return "";
	const char *a = json_string_value(
	    json_object_get(json_object_get(fx->g.fw.calls[i].body, "spec"), "address"));
	return a != NULL ? a : "";
}

/* ---- the tests ---- */

/*
 * A remote system that has not answered holds no worker: the claim's pass
 * returns with nothing written while the call is still held, and a claim
 * of the local backend binds at once. When the answer comes in, the
 * backend queues the claim, and its next pass binds it.
 */
static void a_slow_system_holds_no_worker(void **state)
{
	struct fixture *fx = *state;
	fx->remote.queue_claim = NULL;
	double t0 = now_s();
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	assert_int_equal(fx->g.fw.ncalls, 0); /* pending, without a reason: nothing written */
	rig_next_pass(&fx->g);
	assert_int_equal(run(fx, "l1", LOCAL_POOL), PK_OK);
	assert_string_equal(created_address(fx), "10.1.0.5");
	assert_true(fake_find(&fx->g.fw, "patch", "ipaddressclaims/status l1") >= 0);
	/* Both passes ended while the remote call is still held at the gate. */
	assert_int_equal(fx->remote.answers, 0);
	assert_true(now_s() - t0 < 2.0);
	rig_next_pass(&fx->g);
	/* Asked again before the answer: still pending, no second call. */
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	assert_int_equal(fx->g.fw.ncalls, 0);
	assert_int_equal(fx->remote.nthreads, 1);
	fake_remote_open(&fx->remote);
	fake_remote_wait_answers(&fx->remote, 1);
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	assert_string_equal(created_address(fx), "10.9.0.1");
	int owner = fake_find(&fx->g.fw, "create", "ipaddresses ");
	assert_true(fake_body_has(&fx->g.fw, owner, "\"kind\":\"RemoteIPPool\""));
	assert_true(fake_body_has(&fx->g.fw, owner, "\"apiGroup\":\"remote.ipam.example.org\""));
	assert_int_equal(fx->local.ensures, 1);
}

/*
 * The remote system's record ID goes on the IPAddress (an annotation), and
 * comes back to the backend whenever a pass sees that IPAddress.
 */
static void the_record_id_is_kept_on_the_ipaddress(void **state)
{
	struct fixture *fx = *state;
	fake_remote_open(&fx->remote);
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	fake_remote_wait_answers(&fx->remote, 1);
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	int i = fake_find(&fx->g.fw, "create", "ipaddresses ");
	assert_true(i >= 0);
	json_t *address = json_deep_copy(fx->g.fw.calls[i].body);
	assert_string_equal(pk_external_id(address), "rec/10.9.0.1");
	json_object_set_new(json_object_get(address, "metadata"), "resourceVersion",
	                    json_string("9"));
	/* the local backend's IPAddress has none */
	rig_next_pass(&fx->g);
	assert_int_equal(run(fx, "l1", LOCAL_POOL), PK_OK);
	i = fake_find(&fx->g.fw, "create", "ipaddresses ");
	assert_null(pk_external_id(fx->g.fw.calls[i].body));
	rig_next_pass(&fx->g);
	json_t *cluster = load("{'metadata': {'name': 'prod', 'namespace': 'ns'}}");
	struct pk_claim_view v = {claim("r1", REMOTE_POOL), address, cluster, remote_pool(), true};
	assert_int_equal(pk_claim_reconcile(&fx->g.r, "ns", "r1", &v), PK_OK);
	assert_string_equal(fx->remote.checked_id, "rec/10.9.0.1");
}

/* The backend queues the claim itself when the answer arrives. */
static unsigned queued_by_backend;
static void count_queue(void *ud, const char *claim_key, long delay_ms)
{
	(void)ud, (void)delay_ms;
	if (strcmp(claim_key, "ns/r1") == 0)
		queued_by_backend++;
}

static void the_answer_queues_the_claim(void **state)
{
	struct fixture *fx = *state;
	queued_by_backend = 0;
	fx->remote.queue_claim = count_queue;
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	fake_remote_open(&fx->remote);
	fake_remote_wait_answers(&fx->remote, 1);
	assert_int_equal(queued_by_backend, 1);
}

/* 429 with Retry-After: the claim says why, and comes back after that long. */
static void too_many_requests_waits_as_told(void **state)
{
	struct fixture *fx = *state;
	fx->remote.fault = REMOTE_429;
	fx->remote.retry_after_ms = 7000;
	fake_remote_open(&fx->remote);
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	fake_remote_wait_answers(&fx->remote, 1);
	rig_next_pass(&fx->g);
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	int status = fake_find(&fx->g.fw, "patch", "ipaddressclaims/status r1");
	assert_true(status >= 0);
	assert_true(fake_body_has(&fx->g.fw, status, "BackendBusy"));
	assert_true(fake_body_has(&fx->g.fw, status, "\"status\":\"False\""));
	assert_int_equal(fake_find(&fx->g.fw, "create", "ipaddresses "), -1);
	assert_int_equal(fx->g.requeue_delay, 7000);
	/* Asked again: the system answers, and the claim binds. */
	rig_next_pass(&fx->g);
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	fake_remote_wait_answers(&fx->remote, 2);
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	assert_string_equal(created_address(fx), "10.9.0.1");
}

/* 503 and a timeout: written on the claim, retried with backoff (an error for the queue). */
static void unavailable_and_timeout_back_off(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		enum remote_fault fault;
		const char *reason;
	} cases[] = {{REMOTE_5XX, "BackendUnavailable"}, {REMOTE_TIMEOUT, "BackendTimeout"}};
	fake_remote_open(&fx->remote);
	for (unsigned i = 0; i < 2; i++) {
		fx->remote.fault = cases[i].fault;
		rig_next_pass(&fx->g);
		assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
		fake_remote_wait_answers(&fx->remote, i + 1);
		assert_int_not_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
		int status = fake_find(&fx->g.fw, "patch", "ipaddressclaims/status r1");
		assert_true(fake_body_has(&fx->g.fw, status, cases[i].reason));
	}
	assert_int_equal(fx->remote.adds, 0);
}

/*
 * The system made the lease and its answer was lost: the call asked again
 * finds that lease (keyed on namespace, name and cluster), and makes no
 * second one.
 */
static void a_lost_answer_makes_one_lease(void **state)
{
	struct fixture *fx = *state;
	fx->remote.fault = REMOTE_LOST;
	fake_remote_open(&fx->remote);
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	fake_remote_wait_answers(&fx->remote, 1);
	assert_int_not_equal(run(fx, "r1", REMOTE_POOL), PK_OK); /* BackendTimeout, backoff */
	assert_int_equal(fx->remote.adds, 1);
	rig_next_pass(&fx->g);
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	fake_remote_wait_answers(&fx->remote, 2);
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	assert_string_equal(created_address(fx), "10.9.0.1");
	assert_int_equal(fx->remote.adds, 1);
}

/* A restart forgets what the backend knew; leadership reads it back from the system. */
static void a_restart_forgets_nothing(void **state)
{
	struct fixture *fx = *state;
	fake_remote_open(&fx->remote);
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	fake_remote_wait_answers(&fx->remote, 1);
	struct pk_claim_id id = {.ns = "ns", .name = "r1", .cluster = "prod", .key = "ns/r1"};
	assert_true(fx->set.ops->holds(fx->set.self, &id));
	fake_remote_restart(&fx->remote);
	assert_false(fx->set.ops->holds(fx->set.self, &id));
	assert_int_equal(fx->set.ops->on_leading(fx->set.self), PK_OK);
	assert_int_equal(fx->local.leading, 1);
	assert_true(fx->set.ops->holds(fx->set.self, &id));
	/* The same claim on another cluster is another lease. */
	struct pk_claim_id other = id;
	other.cluster = "staging";
	assert_false(fx->set.ops->holds(fx->set.self, &other));
	/* Released by the member that holds it. */
	struct pk_release_note note;
	struct pk_backend_result res;
	fx->set.ops->release_address(fx->set.self, &id, &note, &res);
	assert_int_equal(res.status, PK_BACKEND_OK);
	assert_true(note.released);
	assert_string_equal(note.address, "10.9.0.1");
	assert_false(fx->set.ops->holds(fx->set.self, &id));
	/* Nobody holds it now: released, with nothing given back. */
	fx->set.ops->release_address(fx->set.self, &id, &note, &res);
	assert_int_equal(res.status, PK_BACKEND_OK);
	assert_false(note.released);
}

/* The set's kinds are every member's; a pool's work goes to the member with its kind. */
static void kinds_and_pool_work(void **state)
{
	struct fixture *fx = *state;
	size_t n = 0;
	const struct pk_pool_kind *k = fx->set.ops->kinds(fx->set.self, &n);
	assert_int_equal(n, 3);
	assert_string_equal(k[0].kind, "LocalIPPool");
	assert_string_equal(k[1].kind, "GlobalLocalIPPool");
	assert_string_equal(k[2].kind, "RemoteIPPool");
	assert_non_null(pk_backend_kind(&fx->set, "RemoteIPPool"));
	struct pk_work_key w;
	struct pk_pool_next next;
	json_t *pool = remote_pool();
	pk_work_key_pool(&w, PK_WORK_POOL, "GlobalLocalIPPool", "", "g");
	assert_int_equal(fx->set.ops->reconcile_pool(fx->set.self, &w, pool, &next), PK_OK);
	pk_work_key_pool(&w, PK_WORK_POOL, "RemoteIPPool", "ns", "remote");
	assert_int_equal(fx->set.ops->reconcile_pool(fx->set.self, &w, pool, &next), PK_OK);
	json_decref(pool);
	assert_int_equal(fx->local.pool_work, 1);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	fx->set.ops->write_metrics(fx->set.self, f);
	fclose(f);
	assert_non_null(strstr(text, "local_up 1"));
	assert_non_null(strstr(text, "remote_up 1"));
	free(text);
	json_t *ref = load(NOBODYS_POOL);
	assert_false(fx->set.ops->serves(fx->set.self, ref));
	json_decref(ref);
}

/* A call that outlives its deadline ends as a timeout the claim shows. */
static void a_call_past_its_deadline_times_out(void **state)
{
	struct fixture *fx = *state;
	fx->remote.deadline_ms = 100; /* the gate stays shut */
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	fake_remote_wait_answers(&fx->remote, 1);
	assert_int_not_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	int status = fake_find(&fx->g.fw, "patch", "ipaddressclaims/status r1");
	assert_true(fake_body_has(&fx->g.fw, status, "BackendTimeout"));
	assert_int_equal(fx->remote.adds, 0);
}

/*
 * Leadership lost: the set cancels every member's calls in flight. Their
 * answers are dropped, no claim is queued, and the claim asks again later.
 */
static void losing_leadership_cancels_calls_in_flight(void **state)
{
	struct fixture *fx = *state;
	queued_by_backend = 0;
	fx->remote.queue_claim = count_queue;
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	assert_int_equal(run(fx, "r2", REMOTE_POOL), PK_OK);
	pk_backend_cancel(&fx->set);
	fake_remote_wait(&fx->remote, &fx->remote.dropped, 2);
	assert_int_equal(fake_remote_read(&fx->remote, &fx->remote.answers), 0);
	assert_int_equal(queued_by_backend, 0);
	assert_int_equal(fx->remote.adds, 0);
	/* Leading again: the claim is asked for again, and gets its address. */
	fake_remote_open(&fx->remote);
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	fake_remote_wait_answers(&fx->remote, 1);
	assert_int_equal(run(fx, "r1", REMOTE_POOL), PK_OK);
	assert_string_equal(created_address(fx), "10.9.0.1");
}

/* /readyz: ready while every member is; a member that has no ready op always is. */
static void ready_while_every_member_is(void **state)
{
	struct fixture *fx = *state;
	char why[128] = "";
	assert_true(pk_backend_ready(&fx->set, why, sizeof(why)));
	fx->remote.down = true;
	assert_false(pk_backend_ready(&fx->set, why, sizeof(why)));
	assert_string_equal(why, "remote: https://ipam.example.org unreachable");
	fx->remote.down = false;
	assert_true(pk_backend_ready(&fx->set, why, sizeof(why)));
}

/* A claim on a pool no member serves is not ours: nothing asked, nothing written. */
static void a_pool_of_none_is_not_ours(void **state)
{
	struct fixture *fx = *state;
	assert_int_equal(run(fx, "x1", NOBODYS_POOL), PK_OK);
	assert_int_equal(fx->g.fw.ncalls, 0);
	assert_int_equal(fx->local.ensures, 0);
	assert_int_equal(fx->remote.nthreads, 0);
}

/* The set resyncs when a member does, and asks only those members; a set of members that
 * keep no records elsewhere has no resync, so the controller queues none. */
static void resync_goes_to_the_members_that_resync(void **state)
{
	struct fixture *fx = *state;
	assert_true(pk_backend_resyncs(&fx->set));
	assert_int_equal(fx->set.ops->resync(fx->set.self), PK_OK);
	assert_int_equal(fx->remote.resyncs, 1);
	fx->remote.resync_rc = PK_ERR_API;
	assert_int_equal(fx->set.ops->resync(fx->set.self), PK_ERR_API);
	assert_int_equal(fx->remote.resyncs, 2);
	struct fake_local a = {0};
	struct pk_backend members[1] = {{&local_ops, &a}}, out = {0};
	struct pk_err err = {{0}};
	assert_int_equal(pk_backend_set_new(members, 1, &out, &err), PK_OK);
	assert_false(pk_backend_resyncs(&out));
	out.ops->free(out.self);
	assert_int_equal(a.freed, 1);
}

/* The set watches what its members watch, in order, and tells each change to the member that
 * watches it, by that member's own index. */
static void watched_resources_go_to_the_member_that_watches_them(void **state)
{
	struct fixture *fx = *state;
	size_t n = 0;
	assert_non_null(fx->set.ops->watches);
	const struct pk_backend_watch *w = fx->set.ops->watches(fx->set.self, &n);
	assert_int_equal(n, 2); /* the local member watches nothing */
	assert_string_equal(w[0].resource, "remoteservers");
	assert_false(w[0].namespaced);
	assert_string_equal(w[1].resource, "secrets");
	assert_true(w[1].namespaced);
	json_t *secret = load("{'metadata': {'name': 'creds', 'namespace': 'poolkeeper'}}");
	bool requeue = false;
	fx->set.ops->watched(fx->set.self, 1, "poolkeeper/creds", secret, &requeue);
	assert_true(requeue);
	assert_string_equal(fx->remote.watched_key, "1 poolkeeper/creds");
	fx->set.ops->watched(fx->set.self, 0, "site-a", NULL, &requeue);
	assert_false(requeue);
	assert_string_equal(fx->remote.watched_key, "0 -");
	fx->set.ops->watched(fx->set.self, 7, "nothing", secret, &requeue); /* out of range */
	assert_int_equal(fx->remote.watched, 2);
	json_decref(secret);
	/* A set of members that watch nothing has no watches. */
	struct fake_local a = {0};
	struct pk_backend members[1] = {{&local_ops, &a}}, out = {0};
	struct pk_err err = {{0}};
	assert_int_equal(pk_backend_set_new(members, 1, &out, &err), PK_OK);
	assert_null(out.ops->watches);
	out.ops->free(out.self);
}

/* Two members that declare one kind are refused, and both are freed. */
static void one_kind_two_members_is_refused(void **state)
{
	(void)state;
	struct fake_local a = {0}, b = {0};
	struct pk_backend members[2] = {{&local_ops, &a}, {&local_ops, &b}}, out = {0};
	struct pk_err err = {{0}};
	assert_int_equal(pk_backend_set_new(members, 2, &out, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "LocalIPPool (local.ipam.example.org)"));
	assert_int_equal(a.freed + b.freed, 2);
	assert_null(out.ops);
	assert_int_equal(pk_backend_set_new(members, 0, &out, &err), PK_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(a_slow_system_holds_no_worker, setup, teardown),
	    cmocka_unit_test_setup_teardown(the_answer_queues_the_claim, setup, teardown),
	    cmocka_unit_test_setup_teardown(the_record_id_is_kept_on_the_ipaddress, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(too_many_requests_waits_as_told, setup, teardown),
	    cmocka_unit_test_setup_teardown(unavailable_and_timeout_back_off, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_lost_answer_makes_one_lease, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_restart_forgets_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(kinds_and_pool_work, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_pool_of_none_is_not_ours, setup, teardown),
	    cmocka_unit_test_setup_teardown(ready_while_every_member_is, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_call_past_its_deadline_times_out, setup, teardown),
	    cmocka_unit_test_setup_teardown(losing_leadership_cancels_calls_in_flight, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(resync_goes_to_the_members_that_resync, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(watched_resources_go_to_the_member_that_watches_them,
	                                    setup, teardown),
	    cmocka_unit_test(one_kind_two_members_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
