/*
 * test_live.c - what `poolkeeper audit` and `usage` list of a live cluster
 * (live.c), against a scripted API server on 127.0.0.1: every pool kind of
 * pool_ref.h's table, in its scope; a pool kind the server does not serve
 * (its CRD not installed) has no pools; a server that serves no pool kind,
 * or a listing that fails otherwise, is a failure.
 */
#define _GNU_SOURCE /* strcasestr, for kube_fakeserver.h */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"
#include "kube_fakeserver.h"
#include "live.h"
#include "pool_ref.h"
#include "tempdir.h"

/* How the server answers the pool resources; the Cluster API kinds are served, empty. */
struct script {
	const char *unserved; /* this pool resource is a 404; "*": every one */
	int status;           /* what the other pool resources answer (0: 200, one pool) */
};

static const char ipam_group_doc[] =
    "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",\"name\":\"" PK_CAPI_IPAM_GROUP "\","
    "\"versions\":[{\"groupVersion\":\"" PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2 "\","
    "\"version\":\"" PK_CAPI_V1BETA2 "\"}],\"preferredVersion\":{\"groupVersion\":"
    "\"" PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2 "\",\"version\":\"" PK_CAPI_V1BETA2 "\"}}";

static const char not_found[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"
    "\"the server could not find the requested resource\",\"reason\":\"NotFound\","
    "\"code\":404}";

static const char forbidden[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"
    "\"forbidden\",\"reason\":\"Forbidden\",\"code\":403}";

/* The resource a list request names: its path's last segment, without the query. */
static void resource_of(const char *path, char *buf, size_t len)
{
	const char *end = path + strcspn(path, "?"), *start = end;
	while (start > path && start[-1] != '/')
		start--;
	snprintf(buf, len, "%.*s", (int)(end - start), start);
}

static void respond(void *ud, int index, const struct fs_request *req, struct fs_response *out)
{
	const struct script *sc = ud;
	char resource[128];
	(void)index;
	resource_of(req->path, resource, sizeof(resource));
	const struct pk_pool_kind *k = pk_pool_kind_by_resource(resource);
	if (!strcmp(req->path, "/apis/" PK_CAPI_IPAM_GROUP)) {
		out->body = ipam_group_doc;
	} else if (k == NULL) {
		out->body =
		    "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[]}";
	} else if (sc->unserved != NULL &&
	           (!strcmp(sc->unserved, "*") || !strcmp(sc->unserved, resource))) {
		out->status = 404;
		out->body = not_found;
	} else if (sc->status == 403) {
		out->status = 403;
		out->body = forbidden;
	} else {
		char body[512];
		snprintf(body, sizeof(body),
		         "{\"kind\":\"%sList\",\"apiVersion\":\"%s/%s\",\"metadata\":{},\"items\":"
		         "[{\"metadata\":{\"name\":\"%s-1\"%s}}]}",
		         k->kind, k->group, k->version, k->resource,
		         k->namespaced ? ",\"namespace\":\"team\"" : "");
		out->owned = strdup(body);
		out->body = out->owned;
	}
}

/* A server answering by sc, and a kubeconfig file naming it. */
struct cluster {
	struct fake_server s;
	char dir[256], kubeconfig[512];
};

static void cluster_start(struct cluster *c, struct script *sc)
{
	assert_int_equal(fs_start(&c->s, respond, sc), 0);
	assert_int_equal(pk_test_tempdir_make(c->dir, sizeof(c->dir), "pk-live"), 0);
	snprintf(c->kubeconfig, sizeof(c->kubeconfig), "%s/kubeconfig", c->dir);
	FILE *f = fopen(c->kubeconfig, "w");
	assert_non_null(f);
	fprintf(f,
	        "clusters:\n- name: c\n  cluster: {server: \"http://127.0.0.1:%d\"}\n"
	        "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n",
	        c->s.port);
	assert_int_equal(fclose(f), 0);
}

static void cluster_stop(struct cluster *c)
{
	fs_stop(&c->s);
	assert_int_equal(pk_test_tempdir_remove(c->dir), 0);
}

/* Whether the server was asked for that path (its query aside). */
static bool asked(struct cluster *c, const char *path)
{
	size_t n = strlen(path);
	for (int i = 0; i < c->s.nreq && i < 64; i++)
		if (!strncmp(c->s.reqs[i].path, path, n) &&
		    (c->s.reqs[i].path[n] == '\0' || c->s.reqs[i].path[n] == '?'))
			return true;
	return false;
}

/* The pools listed of kind k. */
static size_t pools_of(const struct pk_live *l, const struct pk_pool_kind *k)
{
	size_t i, n = 0;
	json_t *p;
	json_array_foreach(l->pools, i, p)
	{
		n += !strcmp(json_string_value(json_object_get(p, "kind")), k->kind);
	}
	return n;
}

/*
 * Every kind of the table is listed with its apiVersion and kind set: a
 * namespaced one in --namespace, a cluster-scoped one from everywhere.
 */
static void test_lists_every_pool_kind(void **state)
{
	(void)state;
	struct script sc = {0};
	struct cluster c;
	struct pk_live l;
	size_t n;
	const struct pk_pool_kind *k = pk_pool_kinds(&n);
	cluster_start(&c, &sc);
	assert_int_equal(pk_live_load("audit", c.kubeconfig, "team", &l), PK_OK);
	assert_int_equal(json_array_size(l.pools), n);
	for (size_t i = 0; i < n; i++) {
		char path[512], api[320];
		const json_t *p = json_array_get(l.pools, i);
		snprintf(path, sizeof(path), "/apis/%s/%s/%s%s", k[i].group, k[i].version,
		         k[i].namespaced ? "namespaces/team/" : "", k[i].resource);
		snprintf(api, sizeof(api), "%s/%s", k[i].group, k[i].version);
		if (!asked(&c, path))
			fail_msg("%s: %s was not listed", k[i].kind, path);
		assert_string_equal(json_string_value(json_object_get(p, "kind")), k[i].kind);
		assert_string_equal(json_string_value(json_object_get(p, "apiVersion")), api);
	}
	pk_live_release(&l);
	cluster_stop(&c);
}

/* A kind the server does not serve (a cluster without its CRD) has no pools; the rest are
 * listed. */
static void test_unserved_pool_kind_is_empty(void **state)
{
	(void)state;
	size_t n;
	const struct pk_pool_kind *k = pk_pool_kinds(&n);
	assert_true(n > 1); /* with one kind, none served is the failure below */
	for (size_t i = 0; i < n; i++) {
		struct script sc = {.unserved = k[i].resource};
		struct cluster c;
		struct pk_live l;
		cluster_start(&c, &sc);
		assert_int_equal(pk_live_load("usage", c.kubeconfig, NULL, &l), PK_OK);
		assert_int_equal(json_array_size(l.pools), n - 1);
		for (size_t j = 0; j < n; j++)
			assert_int_equal(pools_of(&l, &k[j]), j == i ? 0 : 1);
		pk_live_release(&l);
		cluster_stop(&c);
	}
}

/* A server that serves no pool kind has no poolkeeper: that is a failure, as any other
 * failure of a pool listing is. */
static void test_pool_listing_failures(void **state)
{
	(void)state;
	struct script none = {.unserved = "*"}, refused = {.status = 403};
	struct script *scripts[] = {&none, &refused};
	for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
		struct cluster c;
		struct pk_live l;
		cluster_start(&c, scripts[i]);
		assert_int_equal(pk_live_load("audit", c.kubeconfig, NULL, &l), PK_ERR_API);
		assert_null(l.pools); /* released */
		cluster_stop(&c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lists_every_pool_kind),
	    cmocka_unit_test(test_unserved_pool_kind_is_empty),
	    cmocka_unit_test(test_pool_listing_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
