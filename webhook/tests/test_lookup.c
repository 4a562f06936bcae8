/*
 * test_lookup.c - the lookups before their caches are loaded: with an API
 * server that cannot be reached, the webhook is not ready (pk_lookup_ready,
 * and /readyz of the built binary answers 503 while /healthz answers 200),
 * and a lookup reads the API instead of answering from an empty cache, so
 * it fails naming what it could not read rather than finding nothing; a
 * pool kind the table does not have is an error naming it, read from
 * nowhere (never as an IPPool). The
 * loaded case runs against a real kube-apiserver in e2e/tests/webhook.bats,
 * whose start-up waits for /readyz.
 *
 * Against a fake API server: SubjectAccessReview answers are cached by the review as asked
 * (user, groups, resource, namespace), a cluster-scoped owner's review names no namespace,
 * and a review that cannot be answered in time (slow answers, a full queue) is a timeout by
 * the deadline, never a wait on the caller's thread.
 *
 * The owner-reference permission lookup: what a tenant's reference says
 * (apiVersion, kind, name, the namespace) is refused before any request when
 * it could change the discovery path or the review, and the discovery cache
 * keeps its bound and its expiries.
 */
#define _GNU_SOURCE /* strcasestr, in the fake API server */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "answer_cache.h"
#include "kube_fakeserver.h"
#include "lookup.h"
#include "proc.h"
#include "rules.h"
#include "testcerts.h"

static struct testpki pki;
static char kubeconfig[400];

static int setup(void **state)
{
	(void)state;
	if (!testpki_init(&pki, "lookup-test"))
		return -1;
	snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", pki.dir);
	FILE *f = fopen(kubeconfig, "w");
	if (f == NULL)
		return -1;
	fprintf(f,
	        "apiVersion: v1\nkind: Config\ncurrent-context: dead\n"
	        "clusters:\n- name: dead\n  cluster:\n    server: https://127.0.0.1:%u\n"
	        "    certificate-authority: %s\n"
	        "users:\n- name: u\n  user:\n    token: not-a-real-token\n"
	        "contexts:\n- name: dead\n  context: {cluster: dead, user: u}\n",
	        proc_free_port(), pki.ca);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	testpki_cleanup(&pki);
	return 0;
}

/* Each pool read of a kind the table does not have: the error that names it, not a read of
 * another kind's resource (which, the API being unreachable, would fail otherwise). */
static void assert_unknown_kind(const struct pk_admission_lookup *lk)
{
	static const char says[] = "\"KeaIPPool\" is not a pool kind of " PK_POOL_GROUP;
	struct pk_err err = {{0}};
	json_t *items = NULL, *obj = NULL;
	assert_int_equal(lk->list_pools(lk->ctx, "KeaIPPool", "a", &items, &err), PK_ERR_INVALID);
	assert_null(items);
	assert_string_equal(err.msg, says);
	memset(&err, 0, sizeof(err));
	assert_int_equal(lk->list_pool_addresses(lk->ctx, "KeaIPPool", NULL, "nodes", &items, &err),
	                 PK_ERR_INVALID);
	assert_null(items);
	assert_string_equal(err.msg, says);
	memset(&err, 0, sizeof(err));
	assert_int_equal(lk->get_pool(lk->ctx, "KeaIPPool", "a", "nodes", &obj, &err),
	                 PK_ERR_INVALID);
	assert_null(obj);
	assert_string_equal(err.msg, says);
}

static void test_not_ready_and_live_before_the_first_list(void **state)
{
	(void)state;
	struct pk_lookup *l = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_lookup_open(kubeconfig, &l, &err), PK_OK);
	assert_non_null(l);
	assert_false(pk_lookup_ready(l));
	assert_false(pk_lookup_wait_ready(l, 300));

	/* not an empty answer from an empty cache: a live read, which fails naming the kind */
	const struct pk_admission_lookup *lk = pk_lookup_admission(l);
	json_t *items = NULL, *obj = NULL;
	assert_int_not_equal(lk->list_pools(lk->ctx, PK_GLOBAL_POOL_KIND, NULL, &items, &err),
	                     PK_OK);
	assert_null(items);
	assert_non_null(strstr(err.msg, PK_GLOBAL_POOL_KIND ": "));
	assert_int_not_equal(
	    lk->list_pool_addresses(lk->ctx, PK_GLOBAL_POOL_KIND, NULL, "shared", &items, &err),
	    PK_OK);
	assert_non_null(strstr(err.msg, "IPAddresses: "));
	assert_int_not_equal(lk->get_pool(lk->ctx, PK_POOL_KIND, "a", "nodes", &obj, &err), PK_OK);
	assert_non_null(strstr(err.msg, PK_POOL_KIND ": "));
	assert_int_not_equal(lk->get_claim(lk->ctx, "a", "m-1", &obj, &err), PK_OK);
	assert_non_null(strstr(err.msg, "IPAddressClaim: "));
	assert_null(obj);
	assert_unknown_kind(lk);
	assert_false(pk_lookup_ready(l));
	pk_lookup_close(l);

	/* no API access at all: nothing to load, ready at once */
	assert_true(pk_lookup_ready(NULL));
	/* live mode: no caches to wait for */
	assert_int_equal(pk_lookup_open_mode(kubeconfig, PK_LOOKUP_LIVE, &l, &err), PK_OK);
	assert_true(pk_lookup_ready(l));
	assert_unknown_kind(pk_lookup_admission(l));
	pk_lookup_close(l);
}

static const char user_json[] =
    "{\"username\":\"system:serviceaccount:capv-system:capv-manager\",\"uid\":\"u-1\","
    "\"groups\":[\"system:serviceaccounts\",7],\"extra\":{\"k\":[\"v\"]}}";

/* Asks for one owner; returns the code, *allowed and err as they came back. */
static int ask(struct pk_lookup *l, const char *user, const char *ns, const char *av,
               const char *kind, const char *name, bool *allowed, struct pk_err *err)
{
	json_t *u = json_loads(user, JSON_ALLOW_NUL, NULL);
	char rule[256] = "not touched";
	*allowed = true;
	int rc = pk_lookup_may_block_owner_deletion(l, u, ns, av, kind, name, allowed, rule,
	                                            sizeof(rule), err);
	json_decref(u);
	if (rc != PK_OK)
		assert_string_equal(rule, ""); /* no stale rule text on failure */
	return rc;
}

static void test_owner_input_refused_before_any_request(void **state)
{
	(void)state;
	struct pk_lookup *l = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_lookup_open_mode(kubeconfig, PK_LOOKUP_LIVE, &l, &err), PK_OK);
	static const char av_ok[] = "infrastructure.cluster.x-k8s.io/v1beta1";
	static const struct {
		const char *ns, *av, *kind, *name, *field;
	} bad[] = {
	    /* apiVersion: anything that could leave /apis/<group>/<version> */
	    {"ns", "../../api/v1", "VSphereVM", "vm",
	     "owner reference apiVersion \"../../api/v1\""},
	    {"ns", "a.io/v1/namespaces", "VSphereVM", "vm", "owner reference apiVersion"},
	    {"ns", "a.io/v1?watch=1", "VSphereVM", "vm", "owner reference apiVersion"},
	    {"ns", "a.io/v1%2F..", "VSphereVM", "vm", "owner reference apiVersion"},
	    {"ns", "a.io/", "VSphereVM", "vm", "owner reference apiVersion"},
	    {"ns", "/v1", "VSphereVM", "vm", "owner reference apiVersion"},
	    {"ns", "", "VSphereVM", "vm", "owner reference apiVersion \"\""},
	    {"ns", NULL, "VSphereVM", "vm", "owner reference apiVersion"},
	    {"ns", "A.io/v1", "VSphereVM", "vm", "its group must be a DNS subdomain"},
	    {"ns", "a.io/V1", "VSphereVM", "vm", "its version must be a DNS label"},
	    {"ns", "a.io/v1\n", "VSphereVM", "vm", "\"a.io/v1\\x0a\""},
	    /* kind: compared, never sent, but still a kind */
	    {"ns", av_ok, "VSphereVM/status", "vm", "owner reference kind \"VSphereVM/status\""},
	    {"ns", av_ok, "", "vm", "owner reference kind"},
	    {"ns", av_ok, "1VM", "vm", "owner reference kind"},
	    {"ns", av_ok, "Kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk", "vm",
	     "owner reference kind"},
	    /* name and namespace */
	    {"ns", av_ok, "VSphereVM", "..", "owner reference name \"..\""},
	    {"ns", av_ok, "VSphereVM", "a/b", "owner reference name"},
	    {"ns", av_ok, "VSphereVM", "%2e%2e", "owner reference name"},
	    {"ns", av_ok, "VSphereVM", "a b", "owner reference name"},
	    {"ns", av_ok, "VSphereVM", "", "owner reference name"},
	    {"../kube-system", av_ok, "VSphereVM", "vm", "namespace \"../kube-system\""},
	    {NULL, av_ok, "VSphereVM", "vm", "namespace"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bool allowed;
		memset(&err, 0, sizeof(err));
		int rc = ask(l, user_json, bad[i].ns, bad[i].av, bad[i].kind, bad[i].name, &allowed,
		             &err);
		if (rc != PK_ERR_INVALID || allowed || strstr(err.msg, bad[i].field) == NULL ||
		    strstr(err.msg, "discovery") != NULL)
			fail_msg("case %zu: rc %d allowed %d: %s", i, rc, allowed, err.msg);
	}
	/* a request without a user to ask about */
	bool allowed;
	assert_int_equal(
	    ask(l, "{\"groups\":[\"g\"]}", "ns", av_ok, "VSphereVM", "vm", &allowed, &err),
	    PK_ERR_INVALID);
	assert_false(allowed);
	assert_non_null(strstr(err.msg, "request.userInfo.username"));

	/* what is accepted is asked of exactly one discovery path */
	struct pk_owner_target t;
	assert_int_equal(pk_permission_owner_target("ns", av_ok, "VSphereVM", "vm-1", &t, &err),
	                 PK_OK);
	assert_string_equal(t.path, "/apis/infrastructure.cluster.x-k8s.io/v1beta1");
	assert_string_equal(t.group, "infrastructure.cluster.x-k8s.io");
	assert_string_equal(t.version, "v1beta1");
	assert_int_equal(pk_permission_owner_target("ns", "v1", "ConfigMap", "cm", &t, &err),
	                 PK_OK);
	assert_string_equal(t.path, "/api/v1");
	assert_string_equal(t.group, "");
	assert_int_equal(pk_permission_owner_target("ns", "a.io/v1/x", "K", "n", &t, &err),
	                 PK_ERR_INVALID);
	assert_string_equal(t.path, "");

	/* Well-formed input does reach the API (which is down): the discovery request's own
	 * error, naming what it read, in err, and never allowed. */
	assert_int_not_equal(ask(l, user_json, "ns", av_ok, "VSphereVM", "vm-1", &allowed, &err),
	                     PK_OK);
	assert_false(allowed);
	assert_non_null(strstr(err.msg, "API discovery of "
	                                "infrastructure.cluster.x-k8s.io/v1beta1: "));
	assert_int_not_equal(
	    ask(l, user_json, "ns", "v1", "ConfigMap", "cm.with.dots", &allowed, &err), PK_OK);
	assert_non_null(strstr(err.msg, "API discovery of v1: "));
	pk_lookup_close(l);
}

#define S(n) ((long long)(n)*1000 * 1000 * 1000)

static void test_kindmap_expiry_and_bound(void **state)
{
	(void)state;
	struct pk_kindmap *m = pk_kindmap_new(3, S(600), S(10));
	bool nsd;
	assert_non_null(m);
	char res[64];
	const char *gv = "infrastructure.cluster.x-k8s.io/v1beta1";
	assert_int_equal(pk_kindmap_get(m, gv, "VSphereVM", 0, res, sizeof(res), &nsd),
	                 PK_KINDMAP_NONE);
	assert_int_equal(pk_kindmap_put(m, gv, "VSphereVM", "vspherevms", true, 0), PK_OK);
	assert_int_equal(pk_kindmap_get(m, gv, "VSphereVM", S(599), res, sizeof(res), &nsd),
	                 PK_KINDMAP_FOUND);
	assert_string_equal(res, "vspherevms");
	/* the key is the group/version and the kind: neither alone */
	assert_int_equal(pk_kindmap_get(m, "infrastructure.cluster.x-k8s.io/v1alpha1", "VSphereVM",
	                                0, res, sizeof(res), &nsd),
	                 PK_KINDMAP_NONE);
	assert_int_equal(pk_kindmap_get(m, gv, "VSphereMachine", 0, res, sizeof(res), &nsd),
	                 PK_KINDMAP_NONE);
	/* a resource name that does not fit the caller's buffer is not a hit */
	char tiny[4];
	assert_int_equal(pk_kindmap_get(m, gv, "VSphereVM", 0, tiny, sizeof(tiny), &nsd),
	                 PK_KINDMAP_NONE);
	/* found: asked again after the TTL */
	assert_int_equal(pk_kindmap_get(m, gv, "VSphereVM", S(600), res, sizeof(res), &nsd),
	                 PK_KINDMAP_NONE);

	/* missing: remembered briefly, so a CRD installed later is found */
	assert_int_equal(pk_kindmap_put(m, gv, "Metal3Data", NULL, true, S(100)), PK_OK);
	assert_int_equal(pk_kindmap_get(m, gv, "Metal3Data", S(109), res, sizeof(res), &nsd),
	                 PK_KINDMAP_MISSING);
	assert_int_equal(pk_kindmap_get(m, gv, "Metal3Data", S(110), res, sizeof(res), &nsd),
	                 PK_KINDMAP_NONE);
	assert_int_equal(pk_kindmap_put(m, gv, "Metal3Data", "metal3datas", true, S(111)), PK_OK);
	assert_int_equal(pk_kindmap_get(m, gv, "Metal3Data", S(112), res, sizeof(res), &nsd),
	                 PK_KINDMAP_FOUND);
	assert_string_equal(res, "metal3datas");
	assert_int_equal(pk_kindmap_len(m), 2);

	/* bounded: a fourth kind evicts the entry closest to expiry (VSphereVM, from t=0) */
	assert_int_equal(pk_kindmap_put(m, gv, "OpenStackServer", "openstackservers", true, S(200)),
	                 PK_OK);
	assert_int_equal(pk_kindmap_len(m), 3);
	assert_int_equal(pk_kindmap_put(m, "v1", "ConfigMap", "configmaps", true, S(201)), PK_OK);
	assert_int_equal(pk_kindmap_len(m), 3);
	assert_int_equal(pk_kindmap_get(m, gv, "VSphereVM", S(202), res, sizeof(res), &nsd),
	                 PK_KINDMAP_NONE);
	assert_int_equal(pk_kindmap_get(m, gv, "Metal3Data", S(202), res, sizeof(res), &nsd),
	                 PK_KINDMAP_FOUND);
	assert_int_equal(pk_kindmap_get(m, "v1", "ConfigMap", S(202), res, sizeof(res), &nsd),
	                 PK_KINDMAP_FOUND);
	/* refreshing a kind already held evicts nothing */
	assert_int_equal(pk_kindmap_put(m, "v1", "ConfigMap", "configmaps", true, S(300)), PK_OK);
	assert_int_equal(pk_kindmap_len(m), 3);
	assert_int_equal(pk_kindmap_get(m, gv, "OpenStackServer", S(300), res, sizeof(res), &nsd),
	                 PK_KINDMAP_FOUND);
	/* a key too long to hold is never stored */
	char longkind[600];
	memset(longkind, 'K', sizeof(longkind) - 1);
	longkind[sizeof(longkind) - 1] = '\0';
	assert_int_not_equal(pk_kindmap_put(m, gv, longkind, "x", true, 0), PK_OK);
	assert_int_equal(pk_kindmap_len(m), 3);
	pk_kindmap_free(m);
	pk_kindmap_free(NULL);
}

/* ---- against a fake API server: the caches, the scope, the deadline ---- */

/* What the fake API server answers: discovery of one group, SubjectAccessReviews. */
struct api_fake {
	atomic_int discoveries, reviews;
	atomic_int review_delay_ms;
};

static struct api_fake fake;

static void api_respond(void *ud, int index, const struct fs_request *req, struct fs_response *out)
{
	struct api_fake *f = ud;
	(void)index;
	if (strcmp(req->path, "/apis/infrastructure.cluster.x-k8s.io/v1beta1") == 0) {
		atomic_fetch_add(&f->discoveries, 1);
		out->body =
		    "{\"kind\":\"APIResourceList\",\"groupVersion\":"
		    "\"infrastructure.cluster.x-k8s.io/v1beta1\",\"resources\":["
		    "{\"name\":\"vspherevms/status\",\"kind\":\"VSphereVM\",\"namespaced\":true},"
		    "{\"name\":\"vspherevms\",\"kind\":\"VSphereVM\",\"namespaced\":true},"
		    "{\"name\":\"vcenters\",\"kind\":\"VCenter\",\"namespaced\":false}]}";
	} else if (strcmp(req->method, "POST") == 0 &&
	           strcmp(req->path, "/apis/authorization.k8s.io/v1/subjectaccessreviews") == 0) {
		atomic_fetch_add(&f->reviews, 1);
		out->delay_ms = atomic_load(&f->review_delay_ms);
		/* users named "...-granted" may */
		out->body = strstr(req->body, "-granted\"") != NULL
		                ? "{\"status\":{\"allowed\":true}}"
		                : "{\"status\":{\"allowed\":false}}";
	} else {
		out->status = 404;
		out->body = "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404}";
	}
}

static struct fake_server api;
static char fake_kubeconfig[400];

static int api_setup(void **state)
{
	(void)state;
	memset(&fake, 0, sizeof(fake));
	if (fs_start(&api, api_respond, &fake) != 0)
		return -1;
	snprintf(fake_kubeconfig, sizeof(fake_kubeconfig), "%s/fake-kubeconfig", pki.dir);
	FILE *f = fopen(fake_kubeconfig, "w");
	if (f == NULL)
		return -1;
	fprintf(f,
	        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
	        "clusters:\n- name: c\n  cluster: {server: \"http://127.0.0.1:%d\"}\n"
	        "contexts:\n- name: x\n  context: {cluster: c}\n",
	        api.port);
	fclose(f);
	return 0;
}

static int api_teardown(void **state)
{
	(void)state;
	fs_stop(&api);
	return 0;
}

#define GRANTED                                                             \
	"{\"username\":\"system:serviceaccount:capv-system:capv-granted\"," \
	"\"groups\":[\"system:serviceaccounts\"]}"
#define OTHER_GROUPS                                                        \
	"{\"username\":\"system:serviceaccount:capv-system:capv-granted\"," \
	"\"groups\":[\"system:serviceaccounts\",\"extra\"]}"
#define REFUSED "{\"username\":\"mallory\",\"groups\":[\"system:authenticated\"]}"
#define AV      "infrastructure.cluster.x-k8s.io/v1beta1"

/* The body of the last SubjectAccessReview the fake was sent (of the first 64 requests). */
static const char *last_review(void)
{
	const char *body = NULL;
	for (int i = 0; i < api.nreq && i < 64; i++)
		if (strcmp(api.reqs[i].method, "POST") == 0)
			body = api.reqs[i].body;
	assert_non_null(body);
	return body;
}

static void test_reviews_cached_by_user_resource_and_namespace(void **state)
{
	(void)state;
	struct pk_lookup *l = NULL;
	struct pk_err err = {{0}};
	const struct pk_lookup_opts o = {.mode = PK_LOOKUP_LIVE, .permission = {.sar_ttl_ms = 400}};
	assert_int_equal(pk_lookup_open_opts(fake_kubeconfig, &o, &l, &err), PK_OK);
	bool allowed;
	assert_int_equal(ask(l, GRANTED, "team-a", AV, "VSphereVM", "vm-1", &allowed, &err), PK_OK);
	assert_true(allowed);
	assert_int_equal(atomic_load(&fake.discoveries), 1);
	assert_int_equal(atomic_load(&fake.reviews), 1);
	/* the review as OwnerReferencesPermissionEnforcement asks, for the resource */
	const char *body = last_review();
	assert_non_null(strstr(body, "\"namespace\":\"team-a\""));
	assert_non_null(strstr(body, "\"resource\":\"vspherevms\""));
	assert_non_null(strstr(body, "\"subresource\":\"finalizers\""));
	assert_non_null(strstr(body, "\"verb\":\"update\""));
	assert_null(strstr(body, "vm-1"));

	/* another owner of the kind, same user and namespace: from the cache */
	assert_int_equal(ask(l, GRANTED, "team-a", AV, "VSphereVM", "vm-2", &allowed, &err), PK_OK);
	assert_true(allowed);
	assert_int_equal(atomic_load(&fake.reviews), 1);
	/* another namespace, other groups, another user: each asked */
	assert_int_equal(ask(l, GRANTED, "team-b", AV, "VSphereVM", "vm-1", &allowed, &err), PK_OK);
	assert_int_equal(atomic_load(&fake.reviews), 2);
	assert_int_equal(ask(l, OTHER_GROUPS, "team-a", AV, "VSphereVM", "vm-1", &allowed, &err),
	                 PK_OK);
	assert_int_equal(atomic_load(&fake.reviews), 3);
	assert_int_equal(ask(l, REFUSED, "team-a", AV, "VSphereVM", "vm-1", &allowed, &err), PK_OK);
	assert_false(allowed);
	assert_int_equal(atomic_load(&fake.reviews), 4);
	/* a refusal is cached too */
	assert_int_equal(ask(l, REFUSED, "team-a", AV, "VSphereVM", "vm-9", &allowed, &err), PK_OK);
	assert_false(allowed);
	assert_int_equal(atomic_load(&fake.reviews), 4);
	assert_int_equal(atomic_load(&fake.discoveries), 1);

	/* a cluster-scoped owner kind: the review names no namespace, so one answer serves
	 * claims in every namespace */
	assert_int_equal(ask(l, GRANTED, "team-a", AV, "VCenter", "vc-1", &allowed, &err), PK_OK);
	assert_true(allowed);
	assert_int_equal(atomic_load(&fake.reviews), 5);
	body = last_review();
	assert_null(strstr(body, "\"namespace\""));
	assert_non_null(strstr(body, "\"resource\":\"vcenters\""));
	assert_int_equal(ask(l, GRANTED, "team-b", AV, "VCenter", "vc-1", &allowed, &err), PK_OK);
	assert_int_equal(atomic_load(&fake.reviews), 5);
	/* discovery was read once per kind */
	assert_int_equal(atomic_load(&fake.discoveries), 2);

	/* after the TTL, asked again */
	fs_sleep_ms(450);
	assert_int_equal(ask(l, GRANTED, "team-a", AV, "VSphereVM", "vm-1", &allowed, &err), PK_OK);
	assert_int_equal(atomic_load(&fake.reviews), 6);
	pk_lookup_close(l);
}

struct bg_ask {
	struct pk_lookup *l;
	const char *ns;
	int rc;
	long long took_ns;
	struct pk_err err;
};

static void *bg_ask_main(void *ud)
{
	struct bg_ask *b = ud;
	bool allowed;
	long long t0 = pk_kube_now_ns();
	b->rc = ask(b->l, GRANTED, b->ns, AV, "VSphereVM", "vm-1", &allowed, &b->err);
	b->took_ns = pk_kube_now_ns() - t0;
	return NULL;
}

#define MS(n) ((long long)(n)*1000 * 1000)

static void test_deadline_and_full_queue(void **state)
{
	(void)state;
	struct pk_lookup *l = NULL;
	struct pk_err err = {{0}};
	/* one lookup thread, one place in the queue, a 300 ms deadline */
	const struct pk_lookup_opts o = {
	    .mode = PK_LOOKUP_LIVE, .permission = {.deadline_ms = 300, .threads = 1, .queue = 1}};
	assert_int_equal(pk_lookup_open_opts(fake_kubeconfig, &o, &l, &err), PK_OK);
	atomic_store(&fake.review_delay_ms, 1200);

	/* a review that takes 1.2 s: given up at the deadline, a timeout */
	bool allowed = true;
	long long t0 = pk_kube_now_ns();
	assert_int_equal(ask(l, GRANTED, "ns-1", AV, "VSphereVM", "vm-1", &allowed, &err),
	                 PK_ERR_TIMEOUT);
	long long took = pk_kube_now_ns() - t0;
	assert_false(allowed);
	assert_true(took >= MS(250) && took < MS(1000));
	assert_non_null(strstr(err.msg, "timed out"));
	fs_sleep_ms(1300); /* the fake answers one connection at a time */

	/* the thread busy and the queue full: the third question is a timeout at once */
	struct bg_ask a = {.l = l, .ns = "ns-2"}, b = {.l = l, .ns = "ns-3"};
	pthread_t ta, tb;
	assert_int_equal(pthread_create(&ta, NULL, bg_ask_main, &a), 0);
	fs_sleep_ms(30);
	assert_int_equal(pthread_create(&tb, NULL, bg_ask_main, &b), 0);
	fs_sleep_ms(30);
	t0 = pk_kube_now_ns();
	assert_int_equal(ask(l, GRANTED, "ns-4", AV, "VSphereVM", "vm-1", &allowed, &err),
	                 PK_ERR_TIMEOUT);
	took = pk_kube_now_ns() - t0;
	assert_true(took < MS(250)); /* not the 300 ms deadline */
	assert_non_null(strstr(err.msg, "the lookup queue is full"));
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	assert_int_equal(a.rc, PK_ERR_TIMEOUT);
	assert_int_equal(b.rc, PK_ERR_TIMEOUT);
	assert_true(a.took_ns < MS(1000) && b.took_ns < MS(1000));
	fs_sleep_ms(2600);

	/* a prompt answer is still an answer, and is cached */
	atomic_store(&fake.review_delay_ms, 0);
	int before = atomic_load(&fake.reviews);
	assert_int_equal(ask(l, GRANTED, "ns-5", AV, "VSphereVM", "vm-1", &allowed, &err), PK_OK);
	assert_true(allowed);
	assert_int_equal(ask(l, GRANTED, "ns-5", AV, "VSphereVM", "vm-1", &allowed, &err), PK_OK);
	assert_int_equal(atomic_load(&fake.reviews), before + 1);
	pk_lookup_close(l);
}

/* After a lookup missed its deadline, a new question is a timeout at once for
 * PK_PERMISSION_SHED_MS, not a wait of a deadline; a cached answer is still an answer; then
 * questions are asked again. */
static void test_missed_deadline_sheds_new_questions(void **state)
{
	(void)state;
	struct pk_lookup *l = NULL;
	struct pk_err err = {{0}};
	const struct pk_lookup_opts o = {.mode = PK_LOOKUP_LIVE,
	                                 .permission = {.deadline_ms = 600}};
	assert_int_equal(pk_lookup_open_opts(fake_kubeconfig, &o, &l, &err), PK_OK);
	bool allowed = false;
	/* a prompt answer, cached */
	assert_int_equal(ask(l, GRANTED, "ns-0", AV, "VSphereVM", "vm-1", &allowed, &err), PK_OK);
	assert_true(allowed);

	atomic_store(&fake.review_delay_ms, 1200);
	long long t0 = pk_kube_now_ns();
	assert_int_equal(ask(l, GRANTED, "ns-1", AV, "VSphereVM", "vm-1", &allowed, &err),
	                 PK_ERR_TIMEOUT);
	assert_true(pk_kube_now_ns() - t0 >= MS(550));
	int before = atomic_load(&fake.reviews);
	t0 = pk_kube_now_ns();
	assert_int_equal(ask(l, REFUSED, "ns-2", AV, "VSphereVM", "vm-1", &allowed, &err),
	                 PK_ERR_TIMEOUT);
	long long took = pk_kube_now_ns() - t0;
	print_message("shed answer in %lld ms\n", took / 1000000LL);
	assert_true(took < MS(300)); /* at once, not at the 600 ms deadline */
	assert_non_null(strstr(err.msg, "missed their deadline"));
	assert_int_equal(atomic_load(&fake.reviews), before); /* not asked */
	/* the cached answer needs no lookup */
	assert_int_equal(ask(l, GRANTED, "ns-0", AV, "VSphereVM", "vm-1", &allowed, &err), PK_OK);
	assert_true(allowed);

	fs_sleep_ms(1300); /* the slow review done, the shedding over */
	atomic_store(&fake.review_delay_ms, 0);
	assert_int_equal(ask(l, REFUSED, "ns-2", AV, "VSphereVM", "vm-1", &allowed, &err), PK_OK);
	assert_false(allowed);
	assert_int_equal(atomic_load(&fake.reviews), before + 1);
	pk_lookup_close(l);
}

/* Identical questions asked at once share one SubjectAccessReview. */
static void test_identical_questions_share_one_review(void **state)
{
	(void)state;
	struct pk_lookup *l = NULL;
	struct pk_err err = {{0}};
	const struct pk_lookup_opts o = {.mode = PK_LOOKUP_LIVE,
	                                 .permission = {.deadline_ms = 3000, .threads = 4}};
	assert_int_equal(pk_lookup_open_opts(fake_kubeconfig, &o, &l, &err), PK_OK);
	bool allowed;
	/* discovery first, so that the questions below know their review before they queue */
	assert_int_equal(ask(l, GRANTED, "prime", AV, "VSphereVM", "vm-1", &allowed, &err), PK_OK);
	int before = atomic_load(&fake.reviews);
	atomic_store(&fake.review_delay_ms, 400);
	struct bg_ask b[3];
	pthread_t t[3];
	for (int i = 0; i < 3; i++) {
		b[i] = (struct bg_ask){.l = l, .ns = "shared"};
		assert_int_equal(pthread_create(&t[i], NULL, bg_ask_main, &b[i]), 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(b[i].rc, PK_OK);
	}
	assert_int_equal(atomic_load(&fake.reviews), before + 1);
	atomic_store(&fake.review_delay_ms, 0);
	pk_lookup_close(l);
}

static void test_sarcache_bound_and_expiry(void **state)
{
	(void)state;
	struct pk_sarcache *c = pk_sarcache_new(2, S(10));
	assert_non_null(c);
	assert_int_equal(pk_sarcache_get(c, "a", 0), PK_SARCACHE_NONE);
	assert_int_equal(pk_sarcache_put(c, "a", true, 0), PK_OK);
	assert_int_equal(pk_sarcache_put(c, "b", false, S(1)), PK_OK);
	assert_int_equal(pk_sarcache_get(c, "a", S(9)), PK_SARCACHE_ALLOWED);
	assert_int_equal(pk_sarcache_get(c, "b", S(9)), PK_SARCACHE_DENIED);
	/* kept 10 s, allowed or not */
	assert_int_equal(pk_sarcache_get(c, "a", S(10)), PK_SARCACHE_NONE);
	assert_int_equal(pk_sarcache_get(c, "b", S(10)), PK_SARCACHE_DENIED);
	/* bounded: a third evicts the oldest */
	assert_int_equal(pk_sarcache_put(c, "c", true, S(2)), PK_OK);
	assert_int_equal(pk_sarcache_len(c), 2);
	assert_int_equal(pk_sarcache_get(c, "a", S(3)), PK_SARCACHE_NONE);
	assert_int_equal(pk_sarcache_get(c, "b", S(3)), PK_SARCACHE_DENIED);
	assert_int_equal(pk_sarcache_get(c, "c", S(3)), PK_SARCACHE_ALLOWED);
	/* a new answer replaces the old one, evicting nothing */
	assert_int_equal(pk_sarcache_put(c, "b", true, S(4)), PK_OK);
	assert_int_equal(pk_sarcache_len(c), 2);
	assert_int_equal(pk_sarcache_get(c, "b", S(5)), PK_SARCACHE_ALLOWED);
	/* a key of 2 KiB or more is not kept */
	char big[2100];
	memset(big, 'k', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(pk_sarcache_put(c, big, true, S(5)), PK_ERR_TOO_BIG);
	assert_int_equal(pk_sarcache_get(c, big, S(5)), PK_SARCACHE_NONE);
	assert_int_equal(pk_sarcache_len(c), 2);
	pk_sarcache_free(c);
	pk_sarcache_free(NULL);
}

static void test_binary_not_ready_until_listed(void **state)
{
	(void)state;
	const char *bin = getenv("PK_WEBHOOK_BIN");
	assert_non_null(bin);
	const char *const args[] = {"--tls-cert-file",
	                            pki.cert,
	                            "--tls-private-key-file",
	                            pki.key,
	                            "--webhook-bind-address=127.0.0.1:0",
	                            "--health-probe-bind-address=127.0.0.1:0",
	                            "--metrics-bind-address=0",
	                            "--kubeconfig",
	                            kubeconfig,
	                            NULL};
	struct proc p;
	char buf[16384];
	proc_start(&p, pki.dir, bin, args);
	proc_expect(&p, "listener=health port=", buf, sizeof(buf));
	const char *at = strstr(buf, "listener=health port=") + strlen("listener=health port=");
	uint16_t port = (uint16_t)strtol(at, NULL, 10);
	int healthz = proc_http_get(port, "/healthz");
	int readyz = proc_http_get(port, "/readyz");
	assert_int_equal(proc_stop(&p, SIGTERM), 0);
	assert_int_equal(healthz, 200);
	assert_int_equal(readyz, 503);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_not_ready_and_live_before_the_first_list),
	    cmocka_unit_test(test_binary_not_ready_until_listed),
	    cmocka_unit_test(test_owner_input_refused_before_any_request),
	    cmocka_unit_test(test_kindmap_expiry_and_bound),
	    cmocka_unit_test(test_sarcache_bound_and_expiry),
	    cmocka_unit_test_setup_teardown(test_reviews_cached_by_user_resource_and_namespace,
	                                    api_setup, api_teardown),
	    cmocka_unit_test_setup_teardown(test_deadline_and_full_queue, api_setup, api_teardown),
	    cmocka_unit_test_setup_teardown(test_missed_deadline_sheds_new_questions, api_setup,
	                                    api_teardown),
	    cmocka_unit_test_setup_teardown(test_identical_questions_share_one_review, api_setup,
	                                    api_teardown),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
