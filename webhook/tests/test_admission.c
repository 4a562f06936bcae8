/*
 * test_admission.c - AdmissionReviews in, AdmissionReviews out: every rule
 * the webhook enforces, allowed and denied, both claim API versions, the
 * mutations, and malformed requests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "admission.h"
#include "base64.h"
#include "json_patch.h"
#include "pool_ref.h"
#include "provider_refs.h"

/* ---- fixtures: the objects a cluster holds, served through the lookup seam ---- */

struct world {
	json_t *pools;     /* array of pool objects (with "kind") */
	json_t *addresses; /* array of IPAddress objects */
	json_t *claims;    /* array of IPAddressClaim objects */
	bool fail;         /* every lookup fails */
	bool fail_claims;  /* get_claim fails */
	/* may_block_owner_deletion: its answer, and what it was asked */
	enum { PERM_ALLOW, PERM_REFUSE, PERM_FAIL, PERM_TIMEOUT } perm;
	char asked[512];
	char counted[512]; /* count_repair calls, "Kind:what " each */
};

static bool str_eq(const json_t *o, const char *key, const char *want)
{
	const json_t *s = json_object_get(o, key);
	if (want == NULL)
		return true;
	return json_is_string(s) && strcmp(json_string_value(s), want) == 0;
}

static int list_pools(void *ctx, const char *kind, const char *ns, json_t **items,
                      struct pk_err *err)
{
	struct world *w = ctx;
	if (w->fail)
		return pk_err_set(err, PK_ERR_INVALID, "connection refused");
	*items = json_array();
	size_t i;
	json_t *p;
	json_array_foreach(w->pools, i, p)
	{
		if (str_eq(p, "kind", kind) &&
		    str_eq(json_object_get(p, "metadata"), "namespace", ns))
			json_array_append(*items, p);
	}
	return PK_OK;
}

static int list_pool_addresses(void *ctx, const char *kind, const char *ns, const char *name,
                               json_t **items, struct pk_err *err)
{
	struct world *w = ctx;
	if (w->fail)
		return pk_err_set(err, PK_ERR_INVALID, "connection refused");
	*items = json_array();
	size_t i;
	json_t *a;
	json_array_foreach(w->addresses, i, a)
	{
		const json_t *ref = json_object_get(json_object_get(a, "spec"), "poolRef");
		if (str_eq(ref, "kind", kind) && str_eq(ref, "name", name) &&
		    str_eq(json_object_get(a, "metadata"), "namespace", ns))
			json_array_append(*items, a);
	}
	return PK_OK;
}

static int get_pool(void *ctx, const char *kind, const char *ns, const char *name, json_t **obj,
                    struct pk_err *err)
{
	json_t *items;
	int rc = list_pools(ctx, kind, ns, &items, err);
	if (rc != PK_OK)
		return rc;
	*obj = NULL;
	size_t i;
	json_t *p;
	json_array_foreach(items, i, p)
	{
		if (str_eq(json_object_get(p, "metadata"), "name", name))
			*obj = json_incref(p);
	}
	json_decref(items);
	return PK_OK;
}

static int get_claim(void *ctx, const char *ns, const char *name, json_t **obj, struct pk_err *err)
{
	struct world *w = ctx;
	if (w->fail || w->fail_claims)
		return pk_err_set(err, PK_ERR_INVALID, "connection refused");
	/* the lookups' contract: one claim, named, in a namespace */
	assert_non_null(ns);
	assert_non_null(name);
	*obj = NULL;
	size_t i;
	json_t *c;
	json_array_foreach(w->claims, i, c)
	{
		const json_t *md = json_object_get(c, "metadata");
		if (str_eq(md, "namespace", ns) && str_eq(md, "name", name))
			*obj = json_incref(c);
	}
	return PK_OK;
}

/* The requester as the apiserver names it in request.userInfo. */
#define REQUESTER "system:serviceaccount:capv-system:capv-controller-manager"

static int may_block_owner_deletion(void *ctx, const json_t *user_info, const char *ns,
                                    const char *api_version, const char *kind, const char *name,
                                    bool *allowed, char *rule, size_t rule_len, struct pk_err *err)
{
	struct world *w = ctx;
	snprintf(w->asked, sizeof(w->asked), "%s %s %s %s %s",
	         json_string_value(json_object_get(user_info, "username")), ns, api_version, kind,
	         name);
	if (w->perm == PERM_FAIL)
		return pk_err_set(err, PK_ERR_INVALID, "SubjectAccessReview: connection refused");
	if (w->perm == PERM_TIMEOUT)
		return pk_err_set(err, PK_ERR_TIMEOUT,
		                  "the permission check timed out: no answer within 500 ms");
	*allowed = w->perm == PERM_ALLOW;
	snprintf(rule, rule_len, "update on vspherevms/finalizers in API group %s", "g.example");
	return PK_OK;
}

static void count_repair(void *ctx, const char *owner_kind, const char *what)
{
	struct world *w = ctx;
	size_t n = strlen(w->counted);
	snprintf(w->counted + n, sizeof(w->counted) - n, "%s:%s ", owner_kind, what);
}

static struct world W;
static struct pk_admission_lookup LK = {.ctx = &W,
                                        .list_pools = list_pools,
                                        .list_pool_addresses = list_pool_addresses,
                                        .get_pool = get_pool,
                                        .get_claim = get_claim};

static json_t *load(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	if (j == NULL)
		fail_msg("fixture: %s: %s", e.text, text);
	return j;
}

static json_t *pool(const char *kind, const char *ns, const char *name, const char *spec)
{
	char buf[2048];
	if (ns != NULL)
		snprintf(buf, sizeof(buf),
		         "{\"apiVersion\":\"" PK_POOL_API_VERSION "\",\"kind\":\"%s\","
		         "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":%s}",
		         kind, name, ns, spec);
	else
		snprintf(buf, sizeof(buf),
		         "{\"apiVersion\":\"" PK_POOL_API_VERSION "\",\"kind\":\"%s\","
		         "\"metadata\":{\"name\":\"%s\"},\"spec\":%s}",
		         kind, name, spec);
	return load(buf);
}

static json_t *ipaddress(const char *ns, const char *name, const char *addr, const char *kind,
                         const char *pool_name)
{
	char buf[2048];
	snprintf(buf, sizeof(buf),
	         "{\"apiVersion\":\"" PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2
	         "\",\"kind\":\"" PK_ADDRESS_KIND "\","
	         "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"ownerReferences\":["
	         "{\"apiVersion\":\"" PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2
	         "\",\"kind\":\"" PK_CLAIM_KIND "\","
	         "\"name\":\"%s\",\"uid\":\"u1\",\"controller\":true,\"blockOwnerDeletion\":true},"
	         "{\"apiVersion\":\"" PK_POOL_API_VERSION "\",\"kind\":\"%s\",\"name\":\"%s\","
	         "\"uid\":\"u2\",\"controller\":false,\"blockOwnerDeletion\":true}]},"
	         "\"spec\":{\"address\":\"%s\",\"prefix\":24,\"claimRef\":{\"name\":\"%s\"},"
	         "\"poolRef\":{\"apiGroup\":\"" PK_POOL_GROUP
	         "\",\"kind\":\"%s\",\"name\":\"%s\"}}}",
	         name, ns, name, kind, pool_name, addr, name, kind, pool_name);
	return load(buf);
}

static int setup(void **state)
{
	(void)state;
	W.pools = json_array();
	W.addresses = json_array();
	W.claims = json_array();
	W.fail = false;
	W.fail_claims = false;
	W.perm = PERM_ALLOW;
	W.asked[0] = W.counted[0] = '\0';
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	json_decref(W.pools);
	json_decref(W.addresses);
	json_decref(W.claims);
	return 0;
}

/* ---- driving a review ---- */

struct answer {
	int http;
	json_t *all;
	json_t *resp; /* borrowed from all */
	bool allowed;
	const char *message;
	char warnings[8192];
	char patch[4096];
};

static void review(const struct pk_admission_config *cfg, enum pk_admission_endpoint ep,
                   const char *op, const char *group, const char *version, const char *resource,
                   json_t *obj, json_t *old, struct answer *a)
{
	json_t *req = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:b, s:{s:s, s:s, s:[s]}}", "uid",
	                        "7f2d-1", "operation", op, "resource", "group", group, "version",
	                        version, "resource", resource, "dryRun", 0, "userInfo", "username",
	                        REQUESTER, "uid", "5e1f", "groups", "system:serviceaccounts");
	const json_t *md = json_object_get(obj ? obj : old, "metadata");
	if (json_object_get(md, "name"))
		json_object_set(req, "name", json_object_get(md, "name"));
	if (json_object_get(md, "namespace"))
		json_object_set(req, "namespace", json_object_get(md, "namespace"));
	if (obj)
		json_object_set(req, "object", obj);
	if (old)
		json_object_set(req, "oldObject", old);
	json_t *rv = json_pack("{s:s, s:s, s:o}", "apiVersion", PK_ADMISSION_API_VERSION, "kind",
	                       PK_ADMISSION_REVIEW_KIND, "request", req);
	char *body = json_dumps(rv, JSON_COMPACT);
	memset(a, 0, sizeof(*a));
	pk_admission_review(cfg, ep, body, strlen(body), &a->http, &a->all);
	free(body);
	json_decref(rv);
	assert_int_equal(a->http, 200);
	a->resp = json_object_get(a->all, "response");
	assert_string_equal(json_string_value(json_object_get(a->all, "kind")),
	                    PK_ADMISSION_REVIEW_KIND);
	assert_string_equal(json_string_value(json_object_get(a->resp, "uid")), "7f2d-1");
	a->allowed = json_is_true(json_object_get(a->resp, "allowed"));
	a->message =
	    json_string_value(json_object_get(json_object_get(a->resp, "status"), "message"));
	size_t i;
	json_t *w;
	json_array_foreach(json_object_get(a->resp, "warnings"), i, w)
	{
		size_t n = strlen(a->warnings);
		snprintf(a->warnings + n, sizeof(a->warnings) - n, "%s\n", json_string_value(w));
	}
	const char *p = json_string_value(json_object_get(a->resp, "patch"));
	if (p != NULL) {
		assert_string_equal(json_string_value(json_object_get(a->resp, "patchType")),
		                    "JSONPatch");
		unsigned char *d = NULL;
		size_t n = 0;
		assert_int_equal(pk_base64_decode(p, strlen(p), &d, &n), PK_OK);
		assert_true(n > 0 && n < sizeof(a->patch));
		memcpy(a->patch, d, n + 1);
		free(d);
	}
}

static void done(struct answer *a)
{
	json_decref(a->all);
}

static void assert_denied_with(struct answer *a, const char *text)
{
	if (a->allowed)
		fail_msg("allowed; expected a denial mentioning \"%s\"", text);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(a->resp, "status"), "code")), 403);
	if (strstr(a->message, text) == NULL)
		fail_msg("denial \"%s\" lacks \"%s\"", a->message, text);
}

static void assert_allowed(struct answer *a)
{
	if (!a->allowed)
		fail_msg("denied: %s", a->message);
}

static const struct pk_admission_config CFG_API = {
    .claims = PK_ENFORCE_DENY, .foreign_claims = PK_ENFORCE_WARN, .lookup = &LK};
static const struct pk_admission_config CFG_NOAPI = {.claims = PK_ENFORCE_DENY,
                                                     .foreign_claims = PK_ENFORCE_WARN};

#define POOL_V  PK_POOL_GROUP, PK_POOL_VERSION
#define CAPI_V2 PK_CAPI_IPAM_GROUP, PK_CAPI_V1BETA2
#define CAPI_V1 PK_CAPI_IPAM_GROUP, PK_CAPI_V1BETA1

/* ---- malformed requests ---- */

static void test_bad_requests(void **state)
{
	(void)state;
	static const struct {
		const char *body;
		int http;
		const char *says;
	} cases[] = {
	    {"not json", 400, "not JSON"},
	    {"[]", 400, "not an " PK_ADMISSION_API_VERSION " AdmissionReview"},
	    {"{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"" PK_ADMISSION_REVIEW_KIND
	     "\","
	     "\"request\":{}}",
	     400, "not an " PK_ADMISSION_API_VERSION " AdmissionReview"},
	    {"{\"apiVersion\":\"" PK_ADMISSION_API_VERSION "\",\"kind\":\"" PK_ADMISSION_REVIEW_KIND
	     "\"}",
	     400, "no request"},
	    {"{\"apiVersion\":\"" PK_ADMISSION_API_VERSION "\",\"kind\":\"" PK_ADMISSION_REVIEW_KIND
	     "\","
	     "\"request\":{\"operation\":\"CREATE\"}}",
	     400, "request.uid"},
	    {"{\"apiVersion\":\"" PK_ADMISSION_API_VERSION "\",\"kind\":\"" PK_ADMISSION_REVIEW_KIND
	     "\","
	     "\"request\":{\"uid\":\"1\",\"operation\":\"PATCH\"}}",
	     400, "request.operation"},
	    {"{\"apiVersion\":\"" PK_ADMISSION_API_VERSION "\",\"kind\":\"" PK_ADMISSION_REVIEW_KIND
	     "\","
	     "\"request\":{\"uid\":\"1\",\"operation\":\"CREATE\",\"resource\":{}}}",
	     400, "request.object is missing on CREATE"},
	    {"{\"apiVersion\":\"" PK_ADMISSION_API_VERSION "\",\"kind\":\"" PK_ADMISSION_REVIEW_KIND
	     "\","
	     "\"request\":{\"uid\":\"1\",\"operation\":\"UPDATE\",\"object\":{}}}",
	     400, "request.oldObject is missing on UPDATE"},
	    {"{\"apiVersion\":\"" PK_ADMISSION_API_VERSION "\",\"kind\":\"" PK_ADMISSION_REVIEW_KIND
	     "\","
	     "\"request\":{\"uid\":\"1\",\"operation\":\"CREATE\",\"object\":{}}}",
	     400, "request.resource"},
	    {"{\"a\":1,\"a\":2}", 400, "not JSON"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int http;
		json_t *resp;
		pk_admission_review(&CFG_API, PK_ADMISSION_VALIDATE, cases[i].body,
		                    strlen(cases[i].body), &http, &resp);
		assert_int_equal(http, cases[i].http);
		const char *err = json_string_value(json_object_get(resp, "error"));
		assert_non_null(err);
		if (strstr(err, cases[i].says) == NULL)
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].says);
		json_decref(resp);
	}
	/* deep nesting is refused before parsing */
	size_t n = 100000;
	char *deep = malloc(2 * n + 1);
	memset(deep, '[', n);
	memset(deep + n, ']', n);
	deep[2 * n] = '\0';
	int http;
	json_t *resp;
	pk_admission_review(&CFG_API, PK_ADMISSION_VALIDATE, deep, 2 * n, &http, &resp);
	assert_int_equal(http, 400);
	assert_non_null(strstr(json_string_value(json_object_get(resp, "error")), "nested"));
	json_decref(resp);
	free(deep);
	/* oversized bodies get 413 */
	pk_admission_review(&CFG_API, PK_ADMISSION_VALIDATE, "{}", PK_ADMISSION_MAX_BODY + 1, &http,
	                    &resp);
	assert_int_equal(http, 413);
	json_decref(resp);
}

static void test_unknown_resource(void **state)
{
	(void)state;
	struct answer a;
	json_t *o = load("{\"metadata\":{\"name\":\"x\",\"namespace\":\"d\"}}");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", "", "v1", "configmaps", o, NULL, &a);
	assert_false(a.allowed);
	assert_non_null(strstr(a.message, "/v1/configmaps"));
	done(&a);
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", PK_POOL_GROUP, "v1beta9",
	       PK_POOL_RESOURCE, o, NULL, &a);
	assert_false(a.allowed);
	assert_non_null(strstr(a.message, PK_POOL_GROUP "/v1beta9/ippools"));
	done(&a);
	json_decref(o);
}

/* ---- pools ---- */

/*
 * Each pool kind of the table is reviewed at its own group, version and
 * resource, and named by its kind and scope; a resource of poolkeeper's
 * group the table does not have is not a pool.
 */
static void test_pool_resources_of_the_table(void **state)
{
	(void)state;
	size_t n;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&n);
	struct answer a;
	char says[128];
	for (size_t i = 0; i < n; i++) {
		const struct pk_pool_kind *pk = &kinds[i];
		json_t *p = pool(pk->kind, pk->namespaced ? "team-a" : NULL, "nodes",
		                 "{\"addresses\":[\"10.0.0.0/24\"],\"prefix\":\"24\"}");
		review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", pk->group, pk->version,
		       pk->resource, p, NULL, &a);
		snprintf(says, sizeof(says), "%s %snodes: ", pk->kind,
		         pk->namespaced ? "team-a/" : "");
		assert_denied_with(&a, says);
		assert_denied_with(&a, "spec.prefix");
		done(&a);
		json_decref(p);
	}
	json_t *o = pool("KeaIPPool", "team-a", "nodes", "{\"addresses\":[\"10.0.0.0/24\"]}");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", POOL_V, "keaippools", o, NULL, &a);
	assert_false(a.allowed);
	assert_non_null(strstr(a.message, "does not handle resource \"" PK_POOL_GROUP
	                                  "/" PK_POOL_VERSION "/keaippools\""));
	done(&a);
	json_decref(o);
}

static void test_pool_create(void **state)
{
	(void)state;
	struct answer a;
	json_t *p =
	    pool(PK_POOL_KIND, "team-a", "nodes",
	         "{\"addresses\":[\"10.0.0.0/24\"],\"prefix\":24,\"gateway\":\"10.0.0.1\"}");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", POOL_V, PK_POOL_RESOURCE, p, NULL, &a);
	assert_allowed(&a);
	assert_string_equal(a.warnings, "");
	done(&a);
	/* without API access it still answers, and says what it skipped */
	review(&CFG_NOAPI, PK_ADMISSION_VALIDATE, "CREATE", POOL_V, PK_POOL_RESOURCE, p, NULL, &a);
	assert_allowed(&a);
	assert_non_null(strstr(a.warnings, "overlap and shrink checks were skipped"));
	done(&a);
	json_decref(p);

	static const struct {
		const char *spec;
		const char *says;
	} bad[] = {
	    {"{\"addresses\":[\"10.0.0.1/24\"],\"prefix\":24}", "did you mean 10.0.0.0/24?"},
	    {"{\"addresses\":[\"10.0.0.0/24\"],\"prefix\":24,\"gateway\":\"10.0.1.1\"}",
	     "10.0.1.1"},
	    {"{\"addresses\":[\"10.0.0.0/24\",\"2001:db8::1\"],\"prefix\":24}", "2001:db8::1"},
	    {"{\"addresses\":[\"10.0.0.0/24\"],\"prefix\":\"24\"}", "spec.prefix"},
	    {"{\"addresses\":[]}", "spec.addresses"},
	    {"{\"addresses\":[\"10.0.0.20-10.0.0.10\"],\"prefix\":24}", "starts after it ends"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = pool(PK_POOL_KIND, "team-a", "nodes", bad[i].spec);
		review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", POOL_V, PK_POOL_RESOURCE, p, NULL,
		       &a);
		assert_denied_with(&a, bad[i].says);
		assert_non_null(strstr(a.message, "IPPool team-a/nodes"));
		done(&a);
		json_decref(p);
	}
}

static void test_pool_overlap(void **state)
{
	(void)state;
	struct answer a;
	json_array_append_new(W.pools, pool(PK_GLOBAL_POOL_KIND, NULL, "g-shared",
	                                    "{\"addresses\":[\"10.0.0.0/24\"],\"prefix\":24}"));
	json_array_append_new(W.pools, pool(PK_POOL_KIND, "team-b", "b-nodes",
	                                    "{\"addresses\":[\"10.1.0.0/24\"],\"prefix\":24}"));
	/* an IPPool overlapping a GlobalIPPool */
	json_t *p = pool(PK_POOL_KIND, "team-a", "nodes",
	                 "{\"addresses\":[\"10.0.0.128/25\"],\"prefix\":24}");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", POOL_V, PK_POOL_RESOURCE, p, NULL, &a);
	assert_denied_with(&a, "overlaps with a GlobalIPPool: both could hand out 10.0.0.128");
	/* a tenant may not be allowed to read cluster-scoped pools: not named */
	assert_null(strstr(a.message, "g-shared"));
	done(&a);
	json_decref(p);
	/* IPPools of other namespaces are not compared with each other */
	p = pool(PK_POOL_KIND, "team-a", "nodes",
	         "{\"addresses\":[\"10.1.0.0/25\"],\"prefix\":24}");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", POOL_V, PK_POOL_RESOURCE, p, NULL, &a);
	assert_allowed(&a);
	done(&a);
	json_decref(p);
	/* ... but a GlobalIPPool is compared with every pool */
	p = pool(PK_GLOBAL_POOL_KIND, NULL, "wide",
	         "{\"addresses\":[\"10.1.0.0/16\"],\"prefix\":16}");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", POOL_V, PK_GLOBAL_POOL_RESOURCE, p, NULL,
	       &a);
	assert_denied_with(&a,
	                   "overlaps with an IPPool of a namespace: both could hand out 10.1.0.1");
	/* ... naming neither the namespace nor the pool */
	assert_null(strstr(a.message, "team-b"));
	assert_null(strstr(a.message, "b-nodes"));
	done(&a);
	json_decref(p);
	/* an IPPool of the same namespace is named: the requester works there */
	json_array_append_new(W.pools, pool(PK_POOL_KIND, "team-a", "a-old",
	                                    "{\"addresses\":[\"10.2.0.0/24\"],\"prefix\":24}"));
	p = pool(PK_POOL_KIND, "team-a", "a-new", "{\"addresses\":[\"10.2.0.5\"],\"prefix\":24}");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", POOL_V, PK_POOL_RESOURCE, p, NULL, &a);
	assert_denied_with(&a, "overlaps with IPPool team-a/a-old");
	done(&a);
	json_decref(p);
	/* another GlobalIPPool is not named to a GlobalIPPool's author either */
	p = pool(PK_GLOBAL_POOL_KIND, NULL, "wide2",
	         "{\"addresses\":[\"10.0.0.9\"],\"prefix\":24}");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", POOL_V, PK_GLOBAL_POOL_RESOURCE, p, NULL,
	       &a);
	assert_denied_with(&a, "overlaps with a GlobalIPPool");
	if (strstr(a.message, "g-shared") != NULL)
		fail_msg("names the other GlobalIPPool: %s", a.message);
	done(&a);
	json_decref(p);
	/* an update of a pool is not compared with itself */
	p = pool(PK_GLOBAL_POOL_KIND, NULL, "g-shared",
	         "{\"addresses\":[\"10.0.0.0/25\"],\"prefix\":24}");
	json_t *old = json_incref(json_array_get(W.pools, 0));
	review(&CFG_API, PK_ADMISSION_VALIDATE, "UPDATE", POOL_V, PK_GLOBAL_POOL_RESOURCE, p, old,
	       &a);
	assert_allowed(&a);
	done(&a);
	json_decref(p);
	json_decref(old);
	/* when the lookup fails, the check does not pass silently */
	W.fail = true;
	p = pool(PK_POOL_KIND, "team-a", "x", "{\"addresses\":[\"10.9.0.0/24\"],\"prefix\":24}");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", POOL_V, PK_POOL_RESOURCE, p, NULL, &a);
	assert_false(a.allowed);
	assert_non_null(strstr(a.message, "connection refused"));
	done(&a);
	json_decref(p);
}

static void test_pool_shrink_and_delete(void **state)
{
	(void)state;
	struct answer a;
	json_t *old = pool(PK_POOL_KIND, "team-a", "nodes",
	                   "{\"addresses\":[\"10.0.0.0/24\"],\"prefix\":24}");
	json_array_append(W.pools, old);
	json_array_append_new(W.addresses,
	                      ipaddress("team-a", "m-1", "10.0.0.50", PK_POOL_KIND, "nodes"));
	/* shrinking past an address in use is refused, naming it */
	json_t *p = pool(PK_POOL_KIND, "team-a", "nodes",
	                 "{\"addresses\":[\"10.0.0.100-10.0.0.200\"],\"prefix\":24}");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "UPDATE", POOL_V, PK_POOL_RESOURCE, p, old, &a);
	assert_denied_with(&a, "10.0.0.50");
	done(&a);
	json_decref(p);
	/* growing is fine */
	p = pool(PK_POOL_KIND, "team-a", "nodes",
	         "{\"addresses\":[\"10.0.0.0/23\"],\"prefix\":23}");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "UPDATE", POOL_V, PK_POOL_RESOURCE, p, old, &a);
	assert_allowed(&a);
	done(&a);
	json_decref(p);
	/* delete while an IPAddress exists: refused */
	review(&CFG_API, PK_ADMISSION_VALIDATE, "DELETE", POOL_V, PK_POOL_RESOURCE, NULL, old, &a);
	assert_denied_with(&a, "IPAddress team-a/m-1");
	assert_non_null(strstr(a.message, PK_SKIP_DELETE_PROTECTION_ANNOTATION));
	done(&a);
	/* clusterctl move and the explicit annotation are never refused */
	const char *annotations[] = {PK_DELETE_FOR_MOVE_ANNOTATION,
	                             PK_SKIP_DELETE_PROTECTION_ANNOTATION};
	for (int i = 0; i < 2; i++) {
		json_t *moving = json_deep_copy(old);
		json_object_set_new(json_object_get(moving, "metadata"), "annotations",
		                    json_pack("{s:s}", annotations[i], ""));
		review(&CFG_API, PK_ADMISSION_VALIDATE, "DELETE", POOL_V, PK_POOL_RESOURCE, NULL,
		       moving, &a);
		assert_allowed(&a);
		done(&a);
		json_decref(moving);
	}
	/* a DELETE whose request carries no name: the name comes from oldObject */
	{
		json_t *rv =
		    json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:O}}", "apiVersion",
		              PK_ADMISSION_API_VERSION, "kind", PK_ADMISSION_REVIEW_KIND, "request",
		              "uid", "u-2", "operation", "DELETE", "resource", "group",
		              PK_POOL_GROUP, "version", PK_POOL_VERSION, "resource",
		              PK_POOL_RESOURCE, "namespace", "team-a", "oldObject", old);
		char *body = json_dumps(rv, JSON_COMPACT);
		int http;
		json_t *resp;
		pk_admission_review(&CFG_API, PK_ADMISSION_VALIDATE, body, strlen(body), &http,
		                    &resp);
		assert_int_equal(http, 200);
		const json_t *r = json_object_get(resp, "response");
		assert_false(json_is_true(json_object_get(r, "allowed")));
		assert_non_null(strstr(
		    json_string_value(json_object_get(json_object_get(r, "status"), "message")),
		    "IPPool team-a/nodes"));
		json_decref(resp);
		free(body);
		/* ... and with no name anywhere, deletion is never blocked (and nothing crashes) */
		json_t *nameless = json_deep_copy(old);
		json_object_del(json_object_get(nameless, "metadata"), "name");
		json_object_set_new(json_object_get(rv, "request"), "oldObject", nameless);
		body = json_dumps(rv, JSON_COMPACT);
		pk_admission_review(&CFG_API, PK_ADMISSION_VALIDATE, body, strlen(body), &http,
		                    &resp);
		assert_int_equal(http, 200);
		r = json_object_get(resp, "response");
		assert_true(json_is_true(json_object_get(r, "allowed")));
		json_decref(resp);
		free(body);
		json_decref(rv);
	}
	/* a GlobalIPPool's addresses live in any namespace: counted, never named */
	json_t *g = pool(PK_GLOBAL_POOL_KIND, NULL, "shared",
	                 "{\"addresses\":[\"10.5.0.0/24\"],\"prefix\":24}");
	json_array_append_new(W.addresses, ipaddress("team-b", "b-secret", "10.5.0.9",
	                                             PK_GLOBAL_POOL_KIND, "shared"));
	review(&CFG_API, PK_ADMISSION_VALIDATE, "DELETE", POOL_V, PK_GLOBAL_POOL_RESOURCE, NULL, g,
	       &a);
	assert_denied_with(&a, "1 IPAddress allocated from this pool still exists");
	assert_null(strstr(a.message, "team-b"));
	assert_null(strstr(a.message, "b-secret"));
	done(&a);
	json_decref(g);
	/* once the addresses are gone, deletion passes */
	json_array_clear(W.addresses);
	review(&CFG_API, PK_ADMISSION_VALIDATE, "DELETE", POOL_V, PK_POOL_RESOURCE, NULL, old, &a);
	assert_allowed(&a);
	done(&a);
	json_decref(old);
}

/* ---- claims ---- */

/* An IPAddressClaim of namespace ns on the pool kind/pool_name (just what the checks read). */
static json_t *pool_claim(const char *ns, const char *name, const char *kind, const char *pool_name)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{s:s, s:s, s:s}}}", "apiVersion",
	                 PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2, "kind", PK_CLAIM_KIND, "metadata",
	                 "name", name, "namespace", ns, "spec", "poolRef", "apiGroup",
	                 PK_POOL_GROUP, "kind", kind, "name", pool_name);
}

static json_t *claim(const char *version, const char *cluster, const char *label,
                     const char *owner_flags, const char *pool_group)
{
	char buf[2048], spec_cluster[128] = "", labels[256] = "";
	if (cluster)
		snprintf(spec_cluster, sizeof(spec_cluster), "\"clusterName\":\"%s\",", cluster);
	if (label)
		snprintf(labels, sizeof(labels),
		         "\"labels\":{\"" PK_CLUSTER_NAME_LABEL "\":\"%s\"},", label);
	snprintf(buf, sizeof(buf),
	         "{\"apiVersion\":\"" PK_CAPI_IPAM_GROUP "/%s\",\"kind\":\"" PK_CLAIM_KIND "\","
	         "\"metadata\":{\"name\":\"m-1\",\"namespace\":\"team-a\",%s\"ownerReferences\":["
	         "{\"apiVersion\":\"infrastructure.cluster.x-k8s.io/v1beta1\",\"kind\":"
	         "\"VSphereMachine\",\"name\":\"m-1\",\"uid\":\"9\"%s}]},"
	         "\"spec\":{%s\"poolRef\":{\"apiGroup\":\"%s\",\"kind\":\"" PK_POOL_KIND
	         "\",\"name\":"
	         "\"nodes\"}}}",
	         version, labels, owner_flags, spec_cluster, pool_group);
	return load(buf);
}

#define OWNER_OK ",\"controller\":true,\"blockOwnerDeletion\":true"

static void test_claims(void **state)
{
	(void)state;
	struct answer a;
	static const char *const versions[] = {PK_CAPI_V1BETA1, PK_CAPI_V1BETA2};
	for (int v = 0; v < 2; v++) {
		const char *ver = versions[v];
		json_t *c = claim(ver, "prod", NULL, OWNER_OK, PK_POOL_GROUP);
		review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", PK_CAPI_IPAM_GROUP, ver,
		       PK_CLAIM_RESOURCE, c, NULL, &a);
		assert_allowed(&a);
		done(&a);
		json_decref(c);

		c = claim(ver, NULL, NULL, OWNER_OK, PK_POOL_GROUP);
		review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", PK_CAPI_IPAM_GROUP, ver,
		       PK_CLAIM_RESOURCE, c, NULL, &a);
		assert_denied_with(&a, "spec.clusterName");
		done(&a);
		json_decref(c);

		/* the deprecated label alone passes, with a warning */
		c = claim(ver, NULL, "prod", OWNER_OK, PK_POOL_GROUP);
		review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", PK_CAPI_IPAM_GROUP, ver,
		       PK_CLAIM_RESOURCE, c, NULL, &a);
		assert_allowed(&a);
		assert_non_null(strstr(a.warnings, "deprecated"));
		done(&a);
		json_decref(c);

		c = claim(ver, "prod", NULL, ",\"controller\":true", PK_POOL_GROUP);
		review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", PK_CAPI_IPAM_GROUP, ver,
		       PK_CLAIM_RESOURCE, c, NULL, &a);
		assert_denied_with(&a, "blockOwnerDeletion");
		done(&a);
		json_decref(c);

		c = claim(ver, "prod", NULL, ",\"blockOwnerDeletion\":true", PK_POOL_GROUP);
		review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", PK_CAPI_IPAM_GROUP, ver,
		       PK_CLAIM_RESOURCE, c, NULL, &a);
		assert_denied_with(&a, "controller");
		done(&a);
		json_decref(c);
	}
}

static void test_claim_enforcement_modes(void **state)
{
	(void)state;
	struct answer a;
	json_t *bad = claim(PK_CAPI_V1BETA2, NULL, NULL, "", PK_POOL_GROUP);
	/* --claim-enforcement=warn admits with kubectl "Warning:" lines */
	struct pk_admission_config warn = {
	    .claims = PK_ENFORCE_WARN, .foreign_claims = PK_ENFORCE_WARN, .lookup = &LK};
	review(&warn, PK_ADMISSION_VALIDATE, "CREATE", CAPI_V2, PK_CLAIM_RESOURCE, bad, NULL, &a);
	assert_allowed(&a);
	assert_non_null(strstr(a.warnings, "would be denied"));
	assert_non_null(strstr(a.warnings, "spec.clusterName"));
	done(&a);
	json_decref(bad);

	json_t *foreign = claim(PK_CAPI_V1BETA2, NULL, NULL, "", PK_CAPI_IPAM_GROUP);
	/* other providers' claims: warn by default */
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", CAPI_V2, PK_CLAIM_RESOURCE, foreign, NULL,
	       &a);
	assert_allowed(&a);
	assert_non_null(strstr(a.warnings, "would be denied"));
	done(&a);
	struct pk_admission_config ignore = {
	    .claims = PK_ENFORCE_DENY, .foreign_claims = PK_ENFORCE_IGNORE, .lookup = &LK};
	review(&ignore, PK_ADMISSION_VALIDATE, "CREATE", CAPI_V2, PK_CLAIM_RESOURCE, foreign, NULL,
	       &a);
	assert_allowed(&a);
	assert_string_equal(a.warnings, "");
	done(&a);
	struct pk_admission_config strict = {
	    .claims = PK_ENFORCE_DENY, .foreign_claims = PK_ENFORCE_DENY, .lookup = &LK};
	review(&strict, PK_ADMISSION_VALIDATE, "CREATE", CAPI_V2, PK_CLAIM_RESOURCE, foreign, NULL,
	       &a);
	assert_denied_with(&a, "spec.clusterName");
	done(&a);
	json_decref(foreign);
}

static void test_claim_updates_and_deletes(void **state)
{
	(void)state;
	struct answer a;
	json_t *old = claim(PK_CAPI_V1BETA2, "prod", NULL, OWNER_OK, PK_POOL_GROUP);
	/* metadata changes always pass: finalizers, owner references rewritten, annotations */
	json_t *c = json_deep_copy(old);
	json_t *md = json_object_get(c, "metadata");
	json_object_set_new(md, "finalizers", json_pack("[s]", PK_CLAIM_FINALIZER));
	json_object_set_new(md, "ownerReferences", json_array());
	json_object_set_new(md, "annotations",
	                    json_pack("{s:s}", PK_DELETE_FOR_MOVE_ANNOTATION, ""));
	review(&CFG_API, PK_ADMISSION_VALIDATE, "UPDATE", CAPI_V2, PK_CLAIM_RESOURCE, c, old, &a);
	assert_allowed(&a);
	done(&a);
	json_decref(c);
	/* a spec change is refused */
	c = json_deep_copy(old);
	json_object_set_new(json_object_get(json_object_get(c, "spec"), "poolRef"), "name",
	                    json_string("other"));
	review(&CFG_API, PK_ADMISSION_VALIDATE, "UPDATE", CAPI_V2, PK_CLAIM_RESOURCE, c, old, &a);
	assert_denied_with(&a, "immutable");
	done(&a);
	json_decref(c);
	/* deletion is never blocked, whatever the claim looks like */
	json_t *broken = claim(PK_CAPI_V1BETA2, NULL, NULL, "", PK_POOL_GROUP);
	review(&CFG_API, PK_ADMISSION_VALIDATE, "DELETE", CAPI_V2, PK_CLAIM_RESOURCE, NULL, broken,
	       &a);
	assert_allowed(&a);
	done(&a);
	json_decref(broken);
	json_decref(old);
}

/* ---- mutations ---- */

static void test_mutations(void **state)
{
	(void)state;
	struct answer a;
	json_t *c = claim(PK_CAPI_V1BETA2, NULL, "prod", OWNER_OK, PK_POOL_GROUP);
	review(&CFG_API, PK_ADMISSION_MUTATE, "CREATE", CAPI_V2, PK_CLAIM_RESOURCE, c, NULL, &a);
	assert_allowed(&a);
	assert_string_equal(a.patch,
	                    "[{\"op\":\"add\",\"path\":\"/spec/clusterName\",\"value\":\"prod\"}]");
	assert_non_null(strstr(a.warnings, "deprecated label " PK_CLUSTER_NAME_LABEL));
	done(&a);
	/* not on UPDATE: the spec is immutable afterwards */
	review(&CFG_API, PK_ADMISSION_MUTATE, "UPDATE", CAPI_V2, PK_CLAIM_RESOURCE, c, c, &a);
	assert_string_equal(a.patch, "");
	done(&a);
	json_decref(c);
	/* an empty clusterName is replaced */
	c = claim(PK_CAPI_V1BETA1, "", "prod", OWNER_OK, PK_POOL_GROUP);
	review(&CFG_API, PK_ADMISSION_MUTATE, "CREATE", CAPI_V1, PK_CLAIM_RESOURCE, c, NULL, &a);
	assert_string_equal(
	    a.patch, "[{\"op\":\"replace\",\"path\":\"/spec/clusterName\",\"value\":\"prod\"}]");
	done(&a);
	json_decref(c);
	/* a set clusterName is never rewritten */
	c = claim(PK_CAPI_V1BETA2, "prod", "other", OWNER_OK, PK_POOL_GROUP);
	review(&CFG_API, PK_ADMISSION_MUTATE, "CREATE", CAPI_V2, PK_CLAIM_RESOURCE, c, NULL, &a);
	assert_string_equal(a.patch, "");
	done(&a);
	json_decref(c);
	/* pools: prefix from a lone CIDR */
	json_t *p = pool(PK_POOL_KIND, "team-a", "nodes", "{\"addresses\":[\"10.0.0.0/24\"]}");
	review(&CFG_API, PK_ADMISSION_MUTATE, "CREATE", POOL_V, PK_POOL_RESOURCE, p, NULL, &a);
	assert_string_equal(a.patch, "[{\"op\":\"add\",\"path\":\"/spec/prefix\",\"value\":24}]");
	done(&a);
	json_decref(p);
	p = pool(PK_POOL_KIND, "team-a", "nodes",
	         "{\"addresses\":[\"10.0.0.0/24\"],\"prefix\":16}");
	review(&CFG_API, PK_ADMISSION_MUTATE, "CREATE", POOL_V, PK_POOL_RESOURCE, p, NULL, &a);
	assert_string_equal(a.patch, "");
	done(&a);
	json_decref(p);
	p = pool(PK_POOL_KIND, "team-a", "nodes", "{\"addresses\":[\"10.0.0.0/24\",\"10.0.1.5\"]}");
	review(&CFG_API, PK_ADMISSION_MUTATE, "CREATE", POOL_V, PK_POOL_RESOURCE, p, NULL, &a);
	assert_string_equal(a.patch, "");
	done(&a);
	json_decref(p);
}

/* ---- claim repair (--claim-enforcement=repair) ---- */

static struct pk_admission_lookup LK_REPAIR = {.ctx = &W,
                                               .list_pools = list_pools,
                                               .list_pool_addresses = list_pool_addresses,
                                               .get_pool = get_pool,
                                               .get_claim = get_claim,
                                               .may_block_owner_deletion =
                                                   may_block_owner_deletion};
static const struct pk_admission_config CFG_REPAIR = {.claims = PK_ENFORCE_REPAIR,
                                                      .foreign_claims = PK_ENFORCE_WARN,
                                                      .lookup = &LK_REPAIR,
                                                      .count_repair = count_repair,
                                                      .count_ctx = &W};

/* A fixture written with ' for ". */
static json_t *loadq(const char *text)
{
	char *t = strdup(text);
	assert_non_null(t);
	for (char *c = t; *c; c++)
		if (*c == '\'')
			*c = '"';
	json_t *j = load(t);
	free(t);
	return j;
}

/*
 * Claims as the providers create them, field for field from their code:
 * v1beta1, a poolkeeper pool, the deprecated cluster-name label and no
 * spec.clusterName, and one owner reference to the provider's machine object.
 */
static json_t *provider_claim(const char *refs, const char *pool_ref)
{
	char buf[2048];
	snprintf(buf, sizeof(buf),
	         "{'apiVersion':'" PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA1 "','kind':'" PK_CLAIM_KIND
	         "',"
	         "'metadata':{'name':'vm-1-0-0','namespace':'team-a','labels':"
	         "{'" PK_CLUSTER_NAME_LABEL "':'c1'},'ownerReferences':%s},"
	         "'spec':{'poolRef':%s}}",
	         refs,
	         pool_ref ? pool_ref
	                  : "{'apiGroup':'" PK_POOL_GROUP "','kind':'" PK_POOL_KIND "',"
	                    "'name':'nodes'}");
	return loadq(buf);
}

#define CLUSTER_NAME_PATCH "{\"op\":\"add\",\"path\":\"/spec/clusterName\",\"value\":\"c1\"}"

/* The mutating call, then the validating call on what the mutation made (as the apiserver
 * chains them); `m` and `v` hold the two answers. */
static void admit(const struct pk_admission_config *cfg, json_t *c, struct answer *m,
                  struct answer *v)
{
	review(cfg, PK_ADMISSION_MUTATE, "CREATE", CAPI_V1, PK_CLAIM_RESOURCE, c, NULL, m);
	assert_allowed(m);
	json_t *mutated = json_deep_copy(c);
	if (m->patch[0] != '\0')
		pk_test_apply_json_patch(mutated, m->patch);
	review(cfg, PK_ADMISSION_VALIDATE, "CREATE", CAPI_V1, PK_CLAIM_RESOURCE, mutated, NULL, v);
	json_decref(mutated);
}

static void test_repair_provider_shapes(void **state)
{
	(void)state;
	static const struct {
		const char *name, *ref, *patch, *warning, *counted;
	} cases[] = {
	    {"CAPV", CAPV_REF,
	     "[{\"op\":\"test\",\"path\":\"/metadata/ownerReferences/0/uid\",\"value\":\"6f1c\"},"
	     "{\"op\":\"add\",\"path\":\"/metadata/ownerReferences/0/controller\",\"value\":true},"
	     "{\"op\":\"add\",\"path\":\"/metadata/ownerReferences/0/blockOwnerDeletion\","
	     "\"value\":true}," CLUSTER_NAME_PATCH "]",
	     "IPAddressClaim team-a/vm-1-0-0: metadata.ownerReferences[0]: set controller: true "
	     "and blockOwnerDeletion: true on "
	     "the owner reference to VSphereVM \"vm-1\"; VSphereVM's provider should set them "
	     "itself\n",
	     "VSphereVM:controller VSphereVM:blockOwnerDeletion VSphereVM:clusterName "},
	    {"CAPM3", CAPM3_REF,
	     "[{\"op\":\"test\",\"path\":\"/metadata/ownerReferences/0/uid\",\"value\":\"8a2e\"},"
	     "{\"op\":\"add\",\"path\":\"/metadata/ownerReferences/0/blockOwnerDeletion\","
	     "\"value\":true}," CLUSTER_NAME_PATCH "]",
	     "IPAddressClaim team-a/vm-1-0-0: metadata.ownerReferences[0]: set blockOwnerDeletion: "
	     "true on the owner reference "
	     "to Metal3Data \"data-1\"; Metal3Data's provider should set it itself\n",
	     "Metal3Data:blockOwnerDeletion Metal3Data:clusterName "},
	    {"CAPO", CAPO_REF,
	     "[{\"op\":\"test\",\"path\":\"/metadata/ownerReferences/0/uid\",\"value\":\"3b7d\"},"
	     "{\"op\":\"add\",\"path\":\"/metadata/ownerReferences/0/controller\",\"value\":true},"
	     "{\"op\":\"add\",\"path\":\"/metadata/ownerReferences/0/blockOwnerDeletion\","
	     "\"value\":true}," CLUSTER_NAME_PATCH "]",
	     "IPAddressClaim team-a/vm-1-0-0: metadata.ownerReferences[0]: set controller: true "
	     "and blockOwnerDeletion: true on "
	     "the owner reference to OpenStackServer \"srv-1\"; OpenStackServer's provider should "
	     "set them itself\n",
	     "OpenStackServer:controller OpenStackServer:blockOwnerDeletion "
	     "OpenStackServer:clusterName "},
	    /* Proxmox sets both flags: only the label is copied, silently. */
	    {"Proxmox", PROXMOX_REF, "[" CLUSTER_NAME_PATCH "]", "", "ProxmoxMachine:clusterName "},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("case: %s\n", cases[i].name);
		char refs[512];
		snprintf(refs, sizeof(refs), "[%s]", cases[i].ref);
		json_t *c = provider_claim(refs, NULL);
		struct answer m, v;
		W.counted[0] = W.asked[0] = '\0';
		admit(&CFG_REPAIR, c, &m, &v);
		assert_string_equal(m.patch, cases[i].patch);
		/* one warning per repair; none for the label in repair mode */
		assert_string_equal(m.warnings, cases[i].warning);
		assert_string_equal(W.counted, cases[i].counted);
		/* the requester was asked about exactly this owner, when bOD was to be set */
		if (strstr(cases[i].patch, "blockOwnerDeletion") != NULL)
			assert_non_null(
			    strstr(W.asked, REQUESTER " team-a infrastructure.cluster"));
		else
			assert_string_equal(W.asked, "");
		/* what the mutation made passes, without a further warning */
		assert_allowed(&v);
		assert_string_equal(v.warnings, "");
		done(&m);
		done(&v);
		json_decref(c);
	}
}

static void test_repair_not_repaired(void **state)
{
	(void)state;
	static const struct {
		const char *name, *refs, *denial;
	} cases[] = {
	    {"no owner reference", "[]", "metadata.ownerReferences: is empty"},
	    {"two references, none the controller",
	     "[{'apiVersion':'" PK_CAPI_CORE_GROUP "/" PK_CAPI_V1BETA1
	     "','kind':'Machine','name':'m-1','uid':'77'},"
	     "" CAPV_REF "]",
	     "2 owner references and none is the controller: Machine \"m-1\", VSphereVM \"vm-1\""},
	    {"controller as a string",
	     "[{'apiVersion':'v1','kind':'VSphereVM','name':'vm-1','uid':'6f1c','controller':"
	     "'true'}]",
	     "metadata.ownerReferences[0].controller: must be a boolean"},
	    {"blockOwnerDeletion as a number",
	     "[{'apiVersion':'v1','kind':'VSphereVM','name':'vm-1','uid':'6f1c',"
	     "'blockOwnerDeletion':1}]",
	     "metadata.ownerReferences[0].blockOwnerDeletion: must be a boolean"},
	    {"no uid", "[{'apiVersion':'v1','kind':'VSphereVM','name':'vm-1'}]",
	     "metadata.ownerReferences[0].uid: required"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("case: %s\n", cases[i].name);
		json_t *c = provider_claim(cases[i].refs, NULL);
		struct answer m, v;
		W.counted[0] = '\0';
		admit(&CFG_REPAIR, c, &m, &v);
		/* the label is still copied; the owner references are not touched */
		assert_string_equal(m.patch, "[" CLUSTER_NAME_PATCH "]");
		assert_string_equal(m.warnings, "");
		assert_null(strstr(W.counted, "controller"));
		assert_denied_with(&v, cases[i].denial);
		/* the denial ends with the mode and how to change it */
		assert_denied_with(&v,
		                   "[claim enforcement mode \"repair\"; change it with "
		                   "--claim-enforcement, chart value webhook.claimEnforcement]");
		done(&m);
		done(&v);
		json_decref(c);
	}

	/* two references, the second the controller: that one is repaired, by its index */
	json_t *c = provider_claim("[{'apiVersion':'" PK_CAPI_CORE_GROUP "/" PK_CAPI_V1BETA1
	                           "','kind':'Machine','name':'m-1','uid':'77'},"
	                           "" CAPM3_REF "]",
	                           NULL);
	struct answer m, v;
	admit(&CFG_REPAIR, c, &m, &v);
	assert_string_equal(
	    m.patch,
	    "[{\"op\":\"test\",\"path\":\"/metadata/ownerReferences/1/uid\",\"value\":\"8a2e\"},"
	    "{\"op\":\"add\",\"path\":\"/metadata/ownerReferences/1/blockOwnerDeletion\","
	    "\"value\":true}," CLUSTER_NAME_PATCH "]");
	assert_allowed(&v);
	done(&m);
	done(&v);
	json_decref(c);
}

static void test_repair_permission(void **state)
{
	(void)state;
	static const struct {
		int perm;
		bool no_callback;
		const char *why;
	} cases[] = {
	    {PERM_REFUSE, false, "(update on vspherevms/finalizers in API group g.example)"},
	    {PERM_FAIL, false,
	     "(the permission check failed: SubjectAccessReview: connection refused)"},
	    {PERM_ALLOW, true,
	     "(poolkeeper-webhook cannot ask whether it may update the owner's finalizers)"},
	};
	struct pk_admission_lookup no_ask = LK_REPAIR;
	no_ask.may_block_owner_deletion = NULL;
	struct pk_admission_config cfg_no_ask = CFG_REPAIR;
	cfg_no_ask.lookup = &no_ask;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("case: %s\n", cases[i].why);
		W.perm = cases[i].perm;
		W.counted[0] = '\0';
		json_t *c = provider_claim("[" CAPV_REF "]", NULL);
		struct answer m, v;
		admit(cases[i].no_callback ? &cfg_no_ask : &CFG_REPAIR, c, &m, &v);
		/* controller only */
		assert_string_equal(
		    m.patch,
		    "[{\"op\":\"test\",\"path\":\"/metadata/ownerReferences/0/uid\",\"value\":"
		    "\"6f1c\"},{\"op\":\"add\",\"path\":\"/metadata/ownerReferences/0/controller\","
		    "\"value\":true}," CLUSTER_NAME_PATCH "]");
		/* the warning names the requester, the owner and the rule */
		char want[1024];
		snprintf(
		    want, sizeof(want),
		    "IPAddressClaim team-a/vm-1-0-0: " REQUESTER " may not set "
		    "blockOwnerDeletion on the owner reference to VSphereVM \"vm-1\" %s; grant "
		    "it (docs/compatibility.md) and poolkeeper sets it on the next claim\n"
		    "IPAddressClaim team-a/vm-1-0-0: metadata.ownerReferences[0]: set controller: "
		    "true on the owner reference "
		    "to VSphereVM \"vm-1\"; VSphereVM's provider should set it itself\n",
		    cases[i].why);
		assert_string_equal(m.warnings, want);
		assert_string_equal(W.counted, "VSphereVM:skipped:permission VSphereVM:controller "
		                               "VSphereVM:clusterName ");
		/* admitted: a controller without blockOwnerDeletion is a warning in repair mode */
		assert_allowed(&v);
		assert_non_null(strstr(v.warnings,
		                       "metadata.ownerReferences[0].blockOwnerDeletion: "
		                       "the controller reference VSphereVM \"vm-1\" has "
		                       "no blockOwnerDeletion: true"));
		done(&m);
		done(&v);
		json_decref(c);
	}

	/* CAPM3 refused: nothing to patch on the reference at all */
	W.perm = PERM_REFUSE;
	json_t *c = provider_claim("[" CAPM3_REF "]", NULL);
	struct answer m, v;
	admit(&CFG_REPAIR, c, &m, &v);
	assert_string_equal(m.patch, "[" CLUSTER_NAME_PATCH "]");
	assert_non_null(strstr(m.warnings, "may not set blockOwnerDeletion"));
	assert_allowed(&v);
	done(&m);
	done(&v);
	json_decref(c);
}

/* A permission check with no answer in time: the claim is still admitted at once, with
 * controller only, a warning naming the owner kind and the timeout, and a count. */
static void test_repair_permission_timeout(void **state)
{
	(void)state;
	W.perm = PERM_TIMEOUT;
	W.counted[0] = '\0';
	json_t *c = provider_claim("[" CAPV_REF "]", NULL);
	struct answer m, v;
	admit(&CFG_REPAIR, c, &m, &v);
	assert_string_equal(
	    m.patch,
	    "[{\"op\":\"test\",\"path\":\"/metadata/ownerReferences/0/uid\",\"value\":"
	    "\"6f1c\"},{\"op\":\"add\",\"path\":\"/metadata/ownerReferences/0/controller\","
	    "\"value\":true}," CLUSTER_NAME_PATCH "]");
	assert_non_null(strstr(
	    m.warnings, "IPAddressClaim team-a/vm-1-0-0: blockOwnerDeletion was not set on "
	                "the owner reference to VSphereVM \"vm-1\": the check whether " REQUESTER
	                " may update the finalizers of kind VSphereVM timed out (the "
	                "permission check timed out: no answer within 500 ms)"));
	assert_null(strstr(m.warnings, "may not set"));
	assert_string_equal(
	    W.counted, "VSphereVM:skipped:timeout VSphereVM:controller VSphereVM:clusterName ");
	assert_allowed(&v);
	done(&m);
	done(&v);
	json_decref(c);
	W.perm = PERM_ALLOW;
}

static void test_repair_updates_and_foreign_claims(void **state)
{
	(void)state;
	struct answer a;
	/* UPDATE: never repaired, and metadata never denied */
	json_t *old = provider_claim("[" CAPV_REF "]", NULL);
	json_object_set_new(json_object_get(old, "spec"), "clusterName", json_string("c1"));
	json_t *c = json_deep_copy(old);
	json_object_set_new(json_object_get(c, "metadata"), "ownerReferences", json_array());
	review(&CFG_REPAIR, PK_ADMISSION_MUTATE, "UPDATE", CAPI_V1, PK_CLAIM_RESOURCE, c, old, &a);
	assert_string_equal(a.patch, "");
	assert_string_equal(a.warnings, "");
	done(&a);
	review(&CFG_REPAIR, PK_ADMISSION_VALIDATE, "UPDATE", CAPI_V1, PK_CLAIM_RESOURCE, c, old,
	       &a);
	assert_allowed(&a);
	assert_string_equal(a.warnings, "");
	done(&a);
	json_decref(c);
	json_decref(old);

	/* CAPV's next reconcile: createOrPatchIPAddressClaim re-applies its reference without
	 * flags (EnsureOwnerRef replaces it). The flags the repair set are put back, so the
	 * references do not change and the apiserver needs no `delete` on the claim from CAPV. */
	old = provider_claim("[" CAPV_REF "]", NULL);
	json_object_set_new(json_object_get(old, "spec"), "clusterName", json_string("c1"));
	json_t *oref =
	    json_array_get(json_object_get(json_object_get(old, "metadata"), "ownerReferences"), 0);
	json_object_set_new(oref, "controller", json_true());
	json_object_set_new(oref, "blockOwnerDeletion", json_true());
	c = provider_claim("[" CAPV_REF "]", NULL);
	json_object_set_new(json_object_get(c, "spec"), "clusterName", json_string("c1"));
	review(&CFG_REPAIR, PK_ADMISSION_MUTATE, "UPDATE", CAPI_V1, PK_CLAIM_RESOURCE, c, old, &a);
	assert_allowed(&a);
	assert_string_equal(
	    a.patch, "[{\"op\":\"test\",\"path\":\"/metadata/ownerReferences/0/uid\",\"value\":"
	             "\"6f1c\"},{\"op\":\"add\",\"path\":\"/metadata/ownerReferences/0/"
	             "controller\",\"value\":true},{\"op\":\"add\",\"path\":\"/metadata/"
	             "ownerReferences/0/blockOwnerDeletion\",\"value\":true}]");
	assert_string_equal(a.warnings, "");
	done(&a);
	/* ... the patched claim equals the stored one */
	json_t *patched = json_deep_copy(c);
	review(&CFG_REPAIR, PK_ADMISSION_MUTATE, "UPDATE", CAPI_V1, PK_CLAIM_RESOURCE, c, old, &a);
	pk_test_apply_json_patch(patched, a.patch);
	done(&a);
	assert_true(
	    json_equal(json_object_get(json_object_get(patched, "metadata"), "ownerReferences"),
	               json_object_get(json_object_get(old, "metadata"), "ownerReferences")));
	json_decref(patched);
	/* deny mode: nothing put back (today's behaviour) */
	struct pk_admission_config deny_cfg = CFG_REPAIR;
	deny_cfg.claims = PK_ENFORCE_DENY;
	review(&deny_cfg, PK_ADMISSION_MUTATE, "UPDATE", CAPI_V1, PK_CLAIM_RESOURCE, c, old, &a);
	assert_string_equal(a.patch, "");
	done(&a);
	/* a flag the writer set to false stays false; another uid is another reference */
	json_t *nref =
	    json_array_get(json_object_get(json_object_get(c, "metadata"), "ownerReferences"), 0);
	json_object_set_new(nref, "blockOwnerDeletion", json_false());
	review(&CFG_REPAIR, PK_ADMISSION_MUTATE, "UPDATE", CAPI_V1, PK_CLAIM_RESOURCE, c, old, &a);
	assert_null(strstr(a.patch, "blockOwnerDeletion"));
	assert_non_null(strstr(a.patch, "/metadata/ownerReferences/0/controller"));
	done(&a);
	json_object_del(nref, "blockOwnerDeletion");
	json_object_set_new(nref, "uid", json_string("77aa"));
	review(&CFG_REPAIR, PK_ADMISSION_MUTATE, "UPDATE", CAPI_V1, PK_CLAIM_RESOURCE, c, old, &a);
	assert_string_equal(a.patch, "");
	done(&a);
	/* controller is not put back while another reference is the controller */
	json_object_set_new(nref, "uid", json_string("6f1c"));
	json_array_append_new(json_object_get(json_object_get(c, "metadata"), "ownerReferences"),
	                      loadq("{'apiVersion':'v1','kind':'ConfigMap','name':'m','uid':'9d0e',"
	                            "'controller':true}"));
	review(&CFG_REPAIR, PK_ADMISSION_MUTATE, "UPDATE", CAPI_V1, PK_CLAIM_RESOURCE, c, old, &a);
	assert_null(strstr(a.patch, "/controller"));
	assert_non_null(strstr(a.patch, "/metadata/ownerReferences/0/blockOwnerDeletion"));
	done(&a);
	json_decref(c);
	json_decref(old);

	/* another provider's claim: untouched, admitted with warnings (--foreign-claims=warn) */
	c = provider_claim("[" CAPV_REF "]", "{'apiGroup':'" PK_CAPI_IPAM_GROUP
	                                     "','kind':'InClusterIPPool','name':'p'}");
	W.counted[0] = '\0';
	struct answer m, v;
	admit(&CFG_REPAIR, c, &m, &v);
	assert_string_equal(m.patch, "");
	assert_string_equal(m.warnings, "");
	assert_string_equal(W.counted, "");
	assert_allowed(&v);
	assert_non_null(strstr(v.warnings, "would be denied"));
	done(&m);
	done(&v);
	json_decref(c);
}

static void test_unknown_pool_kind(void **state)
{
	(void)state;
	static const struct {
		const char *pool_ref, *denial;
	} cases[] = {
	    {"{'apiGroup':'" PK_POOL_GROUP "','kind':'IPpool','name':'nodes'}",
	     "spec.poolRef.kind: \"IPpool\" is not a kind of " PK_POOL_GROUP "; did you mean "
	     "IPPool?"},
	    {"{'apiGroup':'" PK_POOL_GROUP "','name':'nodes'}",
	     "spec.poolRef.kind: required: the kind of a pool of " PK_POOL_GROUP " (IPPool or "
	     "GlobalIPPool); did you mean IPPool?"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *c = provider_claim("[" PROXMOX_REF "]", cases[i].pool_ref);
		struct answer m, v;
		/* ours by group: never planned (no pool would serve it), denied in repair and deny
		 */
		admit(&CFG_REPAIR, c, &m, &v);
		assert_string_equal(m.patch, "");
		assert_denied_with(&v, cases[i].denial);
		done(&m);
		done(&v);
		review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", CAPI_V1, PK_CLAIM_RESOURCE, c,
		       NULL, &v);
		assert_denied_with(&v, cases[i].denial);
		done(&v);
		/* warn mode admits, with the words */
		struct pk_admission_config warn = {.claims = PK_ENFORCE_WARN,
		                                   .foreign_claims = PK_ENFORCE_IGNORE};
		review(&warn, PK_ADMISSION_VALIDATE, "CREATE", CAPI_V1, PK_CLAIM_RESOURCE, c, NULL,
		       &v);
		assert_allowed(&v);
		assert_non_null(strstr(v.warnings, "did you mean IPPool?"));
		done(&v);
		json_decref(c);
	}
}

static void test_deny_and_warn_modes(void **state)
{
	(void)state;
	struct pk_admission_config deny = CFG_REPAIR, warn = CFG_REPAIR;
	deny.claims = PK_ENFORCE_DENY;
	warn.claims = PK_ENFORCE_WARN;
	json_t *c = provider_claim("[" CAPV_REF "]", NULL);
	struct answer m, v;
	/* deny: only the label is copied (with the deprecation warning); refused, naming the
	 * mode */
	W.counted[0] = '\0';
	admit(&deny, c, &m, &v);
	assert_string_equal(m.patch, "[" CLUSTER_NAME_PATCH "]");
	assert_non_null(strstr(m.warnings, "deprecated label " PK_CLUSTER_NAME_LABEL));
	assert_string_equal(W.counted, "VSphereVM:clusterName ");
	assert_denied_with(&v, "no owner reference has controller: true and blockOwnerDeletion");
	assert_denied_with(&v, "[claim enforcement mode \"deny\"; change it with "
	                       "--claim-enforcement, chart value webhook.claimEnforcement]");
	done(&m);
	done(&v);
	/* deny: CAPM3's controller without blockOwnerDeletion is refused too */
	json_t *m3 = provider_claim("[" CAPM3_REF "]", NULL);
	admit(&deny, m3, &m, &v);
	assert_denied_with(&v, "metadata.ownerReferences[0].blockOwnerDeletion");
	done(&m);
	done(&v);
	json_decref(m3);
	/* warn: admitted, with warnings */
	admit(&warn, c, &m, &v);
	assert_string_equal(m.patch, "[" CLUSTER_NAME_PATCH "]");
	assert_allowed(&v);
	assert_non_null(strstr(v.warnings, "metadata.ownerReferences: would be denied: no owner "
	                                   "reference has controller: true"));
	done(&m);
	done(&v);
	/* no owner at all: refused in every mode but warn */
	json_t *orphan = provider_claim("[]", NULL);
	const struct pk_admission_config *modes[] = {&CFG_REPAIR, &deny};
	for (size_t i = 0; i < 2; i++) {
		admit(modes[i], orphan, &m, &v);
		assert_denied_with(&v, "metadata.ownerReferences");
		done(&m);
		done(&v);
	}
	admit(&warn, orphan, &m, &v);
	assert_allowed(&v);
	done(&m);
	done(&v);
	json_decref(orphan);
	json_decref(c);
}

/* ---- addresses ---- */

static void test_ipaddresses(void **state)
{
	(void)state;
	struct answer a;
	json_array_append_new(W.pools, pool(PK_POOL_KIND, "team-a", "nodes",
	                                    "{\"addresses\":[\"10.0.0.0/24\"],\"prefix\":24,"
	                                    "\"gateway\":\"10.0.0.1\"}"));
	json_array_append_new(W.claims, pool_claim("team-a", "m-1", PK_POOL_KIND, "nodes"));
	json_t *ip = ipaddress("team-a", "m-1", "10.0.0.5", PK_POOL_KIND, "nodes");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", CAPI_V2, PK_ADDRESS_RESOURCE, ip, NULL,
	       &a);
	assert_allowed(&a);
	done(&a);
	json_decref(ip);
	/* the gateway and the network address are not usable */
	const char *unusable[] = {"10.0.0.1", "10.0.0.0", "10.0.1.5"};
	for (int i = 0; i < 3; i++) {
		ip = ipaddress("team-a", "m-1", unusable[i], PK_POOL_KIND, "nodes");
		review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", CAPI_V2, PK_ADDRESS_RESOURCE, ip,
		       NULL, &a);
		assert_denied_with(&a, unusable[i]);
		assert_non_null(strstr(a.message, "IPPool team-a/nodes"));
		done(&a);
		json_decref(ip);
	}
	/* a missing pool is a warning only (clusterctl move recreates in any order) */
	json_array_append_new(W.claims, pool_claim("team-a", "m-2", PK_POOL_KIND, "gone"));
	ip = ipaddress("team-a", "m-2", "10.0.0.5", PK_POOL_KIND, "gone");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", CAPI_V2, PK_ADDRESS_RESOURCE, ip, NULL,
	       &a);
	assert_allowed(&a);
	assert_non_null(strstr(a.warnings, "does not exist"));
	done(&a);
	json_decref(ip);
	/* the contract's own rules: the owner reference to the claim */
	ip = ipaddress("team-a", "m-1", "10.0.0.5", PK_POOL_KIND, "nodes");
	json_object_set_new(json_object_get(ip, "metadata"), "ownerReferences", json_array());
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", CAPI_V2, PK_ADDRESS_RESOURCE, ip, NULL,
	       &a);
	assert_denied_with(&a, "ownerReferences");
	done(&a);
	json_decref(ip);
}

/* One review of an IPAddress; old NULL: CREATE. */
static void review_ip(const struct pk_admission_config *cfg, json_t *ip, json_t *old,
                      struct answer *a)
{
	review(cfg, PK_ADMISSION_VALIDATE, old ? "UPDATE" : "CREATE", CAPI_V2, PK_ADDRESS_RESOURCE,
	       ip, old, a);
}

/* A CREATE of that IPAddress is denied saying `want`, and the message lacks `absent` (or NULL). */
static void ip_denied(const char *name, const char *addr, const char *kind, const char *pool_name,
                      const char *want, const char *absent)
{
	struct answer a;
	json_t *ip = ipaddress("team-a", name, addr, kind, pool_name);
	review_ip(&CFG_API, ip, NULL, &a);
	assert_denied_with(&a, want);
	if (absent != NULL && strstr(a.message, absent) != NULL)
		fail_msg("\"%s\" tells \"%s\"", a.message, absent);
	done(&a);
	json_decref(ip);
}

/*
 * A tenant who may create IPAddresses takes or duplicates nothing: the
 * address must be free in its pool, and spec.claimRef must name a claim of
 * its own namespace on the same pool. Nothing of another namespace shows.
 */
static void test_ipaddress_claim_and_duplicates(void **state)
{
	(void)state;
	struct answer a;
	json_array_append_new(W.pools, pool(PK_GLOBAL_POOL_KIND, NULL, "shared",
	                                    "{\"addresses\":[\"10.0.0.0/24\"],\"prefix\":24}"));
	json_array_append_new(W.pools, pool(PK_GLOBAL_POOL_KIND, NULL, "six",
	                                    "{\"addresses\":[\"fd00::/64\"],\"prefix\":64}"));
	json_array_append_new(W.pools, pool(PK_POOL_KIND, "team-a", "nodes",
	                                    "{\"addresses\":[\"10.1.0.0/24\"],\"prefix\":24}"));
	json_array_append_new(W.claims, pool_claim("team-a", "m-1", PK_GLOBAL_POOL_KIND, "shared"));
	json_array_append_new(W.claims, pool_claim("team-a", "m-6", PK_GLOBAL_POOL_KIND, "six"));
	json_array_append_new(W.claims, pool_claim("team-a", "c-ip", PK_POOL_KIND, "nodes"));
	json_array_append_new(W.claims, pool_claim("team-b", "b-1", PK_GLOBAL_POOL_KIND, "shared"));
	json_array_append_new(
	    W.addresses, ipaddress("team-b", "b-1", "10.0.0.5", PK_GLOBAL_POOL_KIND, "shared"));
	json_array_append_new(W.addresses,
	                      ipaddress("team-b", "b-6", "fd00::1", PK_GLOBAL_POOL_KIND, "six"));

	/* (a) another namespace's address on a GlobalIPPool: taken, and nothing more is said */
	const char *taken = "spec.address: \"10.0.0.5\" is already held by another IPAddress of "
	                    "the pool";
	ip_denied("m-1", "10.0.0.5", PK_GLOBAL_POOL_KIND, "shared", taken, "team-b");
	ip_denied("m-1", "10.0.0.5", PK_GLOBAL_POOL_KIND, "shared", taken, "b-1");
	/* compared as addresses, not as text */
	ip_denied("m-6", "fd00:0:0::1", PK_GLOBAL_POOL_KIND, "six",
	          "is already held by another IPAddress", "b-6");
	/* a free address of the pool, for the tenant's own claim on it: admitted */
	json_t *ip = ipaddress("team-a", "m-1", "10.0.0.6", PK_GLOBAL_POOL_KIND, "shared");
	review_ip(&CFG_API, ip, NULL, &a);
	assert_allowed(&a);
	done(&a);
	json_decref(ip);
	/* the same address in another pool is no duplicate */
	ip = ipaddress("team-a", "c-ip", "10.1.0.5", PK_POOL_KIND, "nodes");
	review_ip(&CFG_API, ip, NULL, &a);
	assert_allowed(&a);
	done(&a);
	json_decref(ip);

	/* UPDATE: the object itself is not "another" */
	json_t *holder = json_incref(json_array_get(W.addresses, 0));
	json_t *relabeled = json_deep_copy(holder);
	json_object_set_new(json_object_get(relabeled, "metadata"), "labels",
	                    json_pack("{s:s}", "a", "b"));
	review_ip(&CFG_API, relabeled, holder, &a);
	assert_allowed(&a);
	done(&a);
	json_decref(relabeled);
	/* ... nor on CREATE under the same name (the apiserver answers AlreadyExists) */
	review_ip(&CFG_API, holder, NULL, &a);
	assert_allowed(&a);
	done(&a);
	/* a duplicate that got in anyway (the webhook was away): an UPDATE is refused ... */
	json_t *dup = ipaddress("team-a", "m-1", "10.0.0.5", PK_GLOBAL_POOL_KIND, "shared");
	json_object_set_new(json_object_get(dup, "metadata"), "finalizers",
	                    json_pack("[s]", PK_ADDRESS_FINALIZER));
	json_array_append(W.addresses, dup);
	json_t *dup_labeled = json_deep_copy(dup);
	json_object_set_new(json_object_get(dup_labeled, "metadata"), "labels",
	                    json_pack("{s:s}", "a", "b"));
	review_ip(&CFG_API, dup_labeled, dup, &a);
	assert_denied_with(&a, "is already held by another IPAddress");
	done(&a);
	json_decref(dup_labeled);
	/* ... but cleaning it up never is: finalizer off, deletion, clusterctl move */
	json_t *cleanups[3];
	for (int i = 0; i < 3; i++)
		cleanups[i] = json_deep_copy(dup);
	json_object_set_new(json_object_get(cleanups[0], "metadata"), "finalizers", json_array());
	json_object_set_new(json_object_get(cleanups[1], "metadata"), "deletionTimestamp",
	                    json_string("2026-11-30T00:00:00Z"));
	json_object_set_new(json_object_get(cleanups[2], "metadata"), "annotations",
	                    json_pack("{s:s}", PK_DELETE_FOR_MOVE_ANNOTATION, ""));
	for (int i = 0; i < 3; i++) {
		review_ip(&CFG_API, cleanups[i], dup, &a);
		assert_allowed(&a);
		done(&a);
		json_decref(cleanups[i]);
	}
	json_array_remove(W.addresses, json_array_size(W.addresses) - 1);
	json_decref(dup);
	json_decref(holder);

	/* (b) spec.claimRef names no claim of the namespace */
	ip_denied("ghost", "10.0.0.7", PK_GLOBAL_POOL_KIND, "shared",
	          "spec.claimRef.name: \"ghost\" must name an IPAddressClaim of the IPAddress's "
	          "namespace whose spec.poolRef is the IPAddress's pool (GlobalIPPool \"shared\"); "
	          "there is no such claim",
	          NULL);
	/* ... a claim of that name in another namespace does not count */
	ip_denied("b-1", "10.0.0.7", PK_GLOBAL_POOL_KIND, "shared", "there is no such claim", NULL);
	/* ... nor a claim of the namespace on another pool, and the words are the same: the
	 * claim's own pool is not told */
	ip_denied("c-ip", "10.0.0.7", PK_GLOBAL_POOL_KIND, "shared", "there is no such claim",
	          "nodes");
	/* ... and a poolRef of the same name but another kind is another pool */
	json_array_append_new(W.claims, pool_claim("team-a", "k-1", PK_POOL_KIND, "shared"));
	ip_denied("k-1", "10.0.0.7", PK_GLOBAL_POOL_KIND, "shared", "there is no such claim", NULL);

	/* a lookup that fails denies (500): the check did not run */
	W.fail_claims = true;
	ip = ipaddress("team-a", "m-1", "10.0.0.8", PK_GLOBAL_POOL_KIND, "shared");
	review_ip(&CFG_API, ip, NULL, &a);
	assert_false(a.allowed);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(a.resp, "status"), "code")), 500);
	assert_non_null(strstr(a.message, "cannot read the IPAddressClaim"));
	done(&a);
	W.fail_claims = false;
	/* without API access: admitted with a warning saying what was not checked */
	review_ip(&CFG_NOAPI, ip, NULL, &a);
	assert_allowed(&a);
	assert_non_null(strstr(a.warnings, "were not checked"));
	done(&a);
	json_decref(ip);
	/* another provider's IPAddress is none of poolkeeper's business */
	ip = ipaddress("team-a", "ghost", "10.0.0.5", PK_GLOBAL_POOL_KIND, "shared");
	json_object_set_new(json_object_get(json_object_get(ip, "spec"), "poolRef"), "apiGroup",
	                    json_string(PK_CAPI_IPAM_GROUP));
	review_ip(&CFG_API, ip, NULL, &a);
	assert_allowed(&a);
	done(&a);
	json_decref(ip);
}

/* ---- "\u0000" in a review ---- */

/* obj.metadata.annotations["note"] = "a\0b": what the API server stores as given. */
static void set_nul_annotation(json_t *obj)
{
	json_object_set_new(json_object_get(obj, "metadata"), "annotations",
	                    json_pack("{s:s%}", "note", "a\0b", (size_t)3));
}

/*
 * A review whose object holds a NUL is read (not a 400): an object created
 * before the webhook was installed stays updatable, its finalizers
 * removable; the rules read a name holding a NUL as invalid, so a claim so
 * named is denied with a message naming the field.
 */
static void test_nul_in_review(void **state)
{
	(void)state;
	struct answer a;
	/* the controller removes its finalizer from a claim annotated with a NUL */
	json_t *old = claim(PK_CAPI_V1BETA2, "prod", NULL, OWNER_OK, PK_POOL_GROUP);
	set_nul_annotation(old);
	json_object_set_new(json_object_get(old, "metadata"), "finalizers",
	                    json_pack("[s]", PK_CLAIM_FINALIZER));
	json_t *c = json_deep_copy(old);
	json_object_del(json_object_get(c, "metadata"), "finalizers");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "UPDATE", CAPI_V2, PK_CLAIM_RESOURCE, c, old, &a);
	assert_allowed(&a);
	done(&a);
	review(&CFG_API, PK_ADMISSION_MUTATE, "UPDATE", CAPI_V2, PK_CLAIM_RESOURCE, c, old, &a);
	assert_allowed(&a);
	done(&a);
	/* and a change of its spec is still refused */
	json_object_set_new(json_object_get(json_object_get(c, "spec"), "poolRef"), "name",
	                    json_string("other"));
	review(&CFG_API, PK_ADMISSION_VALIDATE, "UPDATE", CAPI_V2, PK_CLAIM_RESOURCE, c, old, &a);
	assert_denied_with(&a, "immutable");
	done(&a);
	json_decref(c);
	json_decref(old);

	/* the same for an IPAddress and its protect finalizer */
	json_array_append_new(W.pools, pool(PK_POOL_KIND, "team-a", "nodes",
	                                    "{\"addresses\":[\"10.0.0.0/24\"],\"prefix\":24}"));
	json_array_append_new(W.claims, pool_claim("team-a", "m-1", PK_POOL_KIND, "nodes"));
	old = ipaddress("team-a", "m-1", "10.0.0.5", PK_POOL_KIND, "nodes");
	set_nul_annotation(old);
	json_object_set_new(json_object_get(old, "metadata"), "finalizers",
	                    json_pack("[s]", PK_ADDRESS_FINALIZER));
	c = json_deep_copy(old);
	json_object_del(json_object_get(c, "metadata"), "finalizers");
	review(&CFG_API, PK_ADMISSION_VALIDATE, "UPDATE", CAPI_V2, PK_ADDRESS_RESOURCE, c, old, &a);
	assert_allowed(&a);
	done(&a);
	json_decref(c);
	json_decref(old);

	/* a claim created with a NUL in its name is denied, naming the field */
	c = claim(PK_CAPI_V1BETA2, "prod", NULL, OWNER_OK, PK_POOL_GROUP);
	json_object_set_new(json_object_get(c, "metadata"), "name", json_stringn("m-1\0x", 5));
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", CAPI_V2, PK_CLAIM_RESOURCE, c, NULL, &a);
	assert_denied_with(&a, "metadata.name");
	done(&a);
	json_decref(c);
	/* and one whose pool's name holds one, naming that */
	c = claim(PK_CAPI_V1BETA2, "prod", NULL, OWNER_OK, PK_POOL_GROUP);
	json_object_set_new(json_object_get(json_object_get(c, "spec"), "poolRef"), "name",
	                    json_stringn("nodes\0x", 7));
	review(&CFG_API, PK_ADMISSION_VALIDATE, "CREATE", CAPI_V2, PK_CLAIM_RESOURCE, c, NULL, &a);
	assert_denied_with(&a, "spec.poolRef.name");
	done(&a);
	json_decref(c);
}

static void test_enforcement_flag(void **state)
{
	(void)state;
	enum pk_enforcement e;
	assert_int_equal(pk_rules_parse_enforcement("deny", &e), PK_OK);
	assert_int_equal(e, PK_ENFORCE_DENY);
	assert_int_equal(pk_rules_parse_enforcement("warn", &e), PK_OK);
	assert_int_equal(e, PK_ENFORCE_WARN);
	assert_int_equal(pk_rules_parse_enforcement("ignore", &e), PK_OK);
	assert_int_equal(pk_rules_parse_enforcement("repair", &e), PK_OK);
	assert_int_equal(e, PK_ENFORCE_REPAIR);
	assert_int_equal(pk_rules_parse_enforcement("Deny", &e), PK_ERR_INVALID);
	assert_int_equal(pk_rules_parse_enforcement("", &e), PK_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_bad_requests, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unknown_resource, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pool_resources_of_the_table, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pool_create, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pool_overlap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pool_shrink_and_delete, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_claims, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_claim_enforcement_modes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_claim_updates_and_deletes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mutations, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_repair_provider_shapes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_repair_not_repaired, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_repair_permission, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_repair_permission_timeout, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_repair_updates_and_foreign_claims, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_unknown_pool_kind, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_deny_and_warn_modes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ipaddresses, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ipaddress_claim_and_duplicates, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nul_in_review, setup, teardown),
	    cmocka_unit_test(test_enforcement_flag),
	};
	return cmocka_run_group_tests_name("admission", tests, NULL, NULL);
}
