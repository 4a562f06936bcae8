/* schema.c - the field trees of the kinds lint checks, and unknown fields against them. */
#include "schema.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "pool_ref.h"
#include "suggest.h"

#define PATH_MAX_LEN PK_FIELD_MAX

/*
 * The CRDs of the pool kinds whose spec is PK_POOL_SPEC_RANGES, in
 * charts/poolkeeper/crds: ipam.poolkeeper.io_{ippools,globalippools}.yaml
 * (the same tree).
 */
static const char *const pool_paths[] = {"apiVersion",
                                         "kind",
                                         "metadata *",
                                         "spec.addresses[]",
                                         "spec.prefix",
                                         "spec.gateway",
                                         "spec.excludedAddresses[]",
                                         "spec.allocateReservedIPAddresses",
                                         "spec.addressReuseGracePeriodSeconds",
                                         "status.ipAddresses.total",
                                         "status.ipAddresses.used",
                                         "status.ipAddresses.free",
                                         "status.ipAddresses.outOfRange",
                                         "status.quarantinedAddresses[].address",
                                         "status.quarantinedAddresses[].until",
                                         "status.conditions[].type",
                                         "status.conditions[].status",
                                         "status.conditions[].observedGeneration",
                                         "status.conditions[].lastTransitionTime",
                                         "status.conditions[].reason",
                                         "status.conditions[].message",
                                         NULL};

/* cluster-api config/crd/bases/ipam.cluster.x-k8s.io_ipaddressclaims.yaml, v1beta1. */
static const char *const claim_v1beta1_paths[] = {"apiVersion",
                                                  "kind",
                                                  "metadata *",
                                                  "spec.clusterName",
                                                  "spec.poolRef.apiGroup",
                                                  "spec.poolRef.kind",
                                                  "spec.poolRef.name",
                                                  "status.addressRef.name",
                                                  "status.conditions[].lastTransitionTime",
                                                  "status.conditions[].message",
                                                  "status.conditions[].reason",
                                                  "status.conditions[].severity",
                                                  "status.conditions[].status",
                                                  "status.conditions[].type",
                                                  "status.v1beta2.conditions[].lastTransitionTime",
                                                  "status.v1beta2.conditions[].message",
                                                  "status.v1beta2.conditions[].observedGeneration",
                                                  "status.v1beta2.conditions[].reason",
                                                  "status.v1beta2.conditions[].status",
                                                  "status.v1beta2.conditions[].type",
                                                  NULL};

/* The same file, v1alpha1: no spec.clusterName, v1beta1's conditions. */
static const char *const claim_v1alpha1_paths[] = {"apiVersion",
                                                   "kind",
                                                   "metadata *",
                                                   "spec.poolRef.apiGroup",
                                                   "spec.poolRef.kind",
                                                   "spec.poolRef.name",
                                                   "status.addressRef.name",
                                                   "status.conditions[].lastTransitionTime",
                                                   "status.conditions[].message",
                                                   "status.conditions[].reason",
                                                   "status.conditions[].severity",
                                                   "status.conditions[].status",
                                                   "status.conditions[].type",
                                                   NULL};

/* The same file, v1beta2. */
static const char *const claim_v1beta2_paths[] = {
    "apiVersion",
    "kind",
    "metadata *",
    "spec.clusterName",
    "spec.poolRef.apiGroup",
    "spec.poolRef.kind",
    "spec.poolRef.name",
    "status.addressRef.name",
    "status.conditions[].lastTransitionTime",
    "status.conditions[].message",
    "status.conditions[].observedGeneration",
    "status.conditions[].reason",
    "status.conditions[].status",
    "status.conditions[].type",
    "status.deprecated.v1beta1.conditions[].lastTransitionTime",
    "status.deprecated.v1beta1.conditions[].message",
    "status.deprecated.v1beta1.conditions[].reason",
    "status.deprecated.v1beta1.conditions[].severity",
    "status.deprecated.v1beta1.conditions[].status",
    "status.deprecated.v1beta1.conditions[].type",
    NULL};

/* cluster-api config/crd/bases/ipam.cluster.x-k8s.io_ipaddresses.yaml: v1alpha1, v1beta1 and
 * v1beta2 alike. */
static const char *const address_paths[] = {"apiVersion",
                                            "kind",
                                            "metadata *",
                                            "spec.address",
                                            "spec.claimRef.name",
                                            "spec.gateway",
                                            "spec.poolRef.apiGroup",
                                            "spec.poolRef.kind",
                                            "spec.poolRef.name",
                                            "spec.prefix",
                                            NULL};

/*
 * ObjectMeta's fields a manifest may carry. They take the place of the
 * CRDs' "metadata *": the API server's strict field validation checks
 * metadata against ObjectMeta (apiextensions-apiserver,
 * pkg/apiserver/schema/objectmeta/coerce.go) and refuses what it lacks.
 */
static const char *const meta_paths[] = {"metadata.name",
                                         "metadata.generateName",
                                         "metadata.namespace",
                                         "metadata.selfLink",
                                         "metadata.uid",
                                         "metadata.resourceVersion",
                                         "metadata.generation",
                                         "metadata.creationTimestamp",
                                         "metadata.deletionTimestamp",
                                         "metadata.deletionGracePeriodSeconds",
                                         "metadata.labels *",
                                         "metadata.annotations *",
                                         "metadata.ownerReferences[].apiVersion",
                                         "metadata.ownerReferences[].kind",
                                         "metadata.ownerReferences[].name",
                                         "metadata.ownerReferences[].uid",
                                         "metadata.ownerReferences[].controller",
                                         "metadata.ownerReferences[].blockOwnerDeletion",
                                         "metadata.finalizers[]",
                                         "metadata.managedFields[] *",
                                         NULL};

/* A pool kind's paths, by what its spec holds (pool_ref.h); NULL for a spec with none here. */
static const char *const *paths_of_spec(enum pk_pool_spec spec)
{
	switch (spec) {
	case PK_POOL_SPEC_RANGES:
		return pool_paths;
	}
	return NULL;
}

static const struct pk_schema capi_schemas[] = {
    {PK_CAPI_IPAM_GROUP, PK_CAPI_V1ALPHA1, PK_CLAIM_KIND, claim_v1alpha1_paths},
    {PK_CAPI_IPAM_GROUP, PK_CAPI_V1BETA1, PK_CLAIM_KIND, claim_v1beta1_paths},
    {PK_CAPI_IPAM_GROUP, PK_CAPI_V1BETA2, PK_CLAIM_KIND, claim_v1beta2_paths},
    {PK_CAPI_IPAM_GROUP, PK_CAPI_V1ALPHA1, PK_ADDRESS_KIND, address_paths},
    {PK_CAPI_IPAM_GROUP, PK_CAPI_V1BETA1, PK_ADDRESS_KIND, address_paths},
    {PK_CAPI_IPAM_GROUP, PK_CAPI_V1BETA2, PK_ADDRESS_KIND, address_paths},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const capi_api_versions[] = {PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1ALPHA1,
                                                PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA1,
                                                PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2};
static const char *const capi_kinds[] = {PK_CLAIM_KIND, PK_ADDRESS_KIND};

/*
 * Every kind's schema, apiVersion and kind name: the pool kinds' from
 * pool_ref.h's table (one schema each, its paths chosen by its spec), then
 * the Cluster API kinds'. Made once, on first use, by make_known.
 */
static struct {
	struct pk_schema schemas[PK_POOL_KINDS_MAX + COUNT(capi_schemas)];
	char pool_api_versions[PK_POOL_KINDS_MAX][320]; /* group (253) / version (63) */
	const char *api_versions[PK_POOL_KINDS_MAX + COUNT(capi_api_versions)];
	const char *kinds[PK_POOL_KINDS_MAX + COUNT(capi_kinds)];
	size_t n_schemas, n_api_versions, n_kinds;
} known;
static pthread_once_t known_once = PTHREAD_ONCE_INIT;

/* Appends s to list[*n] unless list has it already. */
static void add_once(const char **list, size_t *n, const char *s)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(list[i], s))
			return;
	list[(*n)++] = s;
}

static void make_known(void)
{
	size_t n;
	const struct pk_pool_kind *pk = pk_pool_kinds(&n);
	for (size_t i = 0; i < n; i++) {
		char *api = known.pool_api_versions[i];
		const char *const *paths = paths_of_spec(pk[i].spec);
		snprintf(api, sizeof(known.pool_api_versions[i]), "%s/%s", pk[i].group,
		         pk[i].version);
		add_once(known.api_versions, &known.n_api_versions, api);
		add_once(known.kinds, &known.n_kinds, pk[i].kind);
		if (paths != NULL)
			known.schemas[known.n_schemas++] =
			    (struct pk_schema){pk[i].group, pk[i].version, pk[i].kind, paths};
	}
	for (size_t i = 0; i < COUNT(capi_schemas); i++)
		known.schemas[known.n_schemas++] = capi_schemas[i];
	for (size_t i = 0; i < COUNT(capi_api_versions); i++)
		add_once(known.api_versions, &known.n_api_versions, capi_api_versions[i]);
	for (size_t i = 0; i < COUNT(capi_kinds); i++)
		add_once(known.kinds, &known.n_kinds, capi_kinds[i]);
}

const struct pk_schema *pk_schema_find(const char *group, const char *version, const char *kind)
{
	pthread_once(&known_once, make_known);
	for (size_t i = 0; i < known.n_schemas; i++)
		if (!strcmp(known.schemas[i].group, group) &&
		    !strcmp(known.schemas[i].version, version) &&
		    !strcmp(known.schemas[i].kind, kind))
			return &known.schemas[i];
	return NULL;
}

const char *const *pk_schema_api_versions(size_t *n)
{
	pthread_once(&known_once, make_known);
	*n = known.n_api_versions;
	return known.api_versions;
}

const char *const *pk_schema_kinds(size_t *n)
{
	pthread_once(&known_once, make_known);
	*n = known.n_kinds;
	return known.kinds;
}

/* ---- checking an object ---- */

enum node { NODE_UNKNOWN, NODE_LEAF, NODE_OBJECT, NODE_LIST };

/* More than a kind's paths and ObjectMeta's together. */
#define CANDS_MAX 96

/*
 * The schema paths under one object of the walk: they share their first
 * `at` bytes (the object's own path and its '.'), so a key is compared
 * only with what follows, and only with the paths under its parent.
 */
struct cands {
	const char *p[CANDS_MAX];
	size_t n, at;
};

/* Whether path p (of the schema) is taken over by ObjectMeta's list. */
static bool shadowed(const char *p)
{
	return !strcmp(p, "metadata *");
}

/*
 * What key (klen bytes) is among c's paths; below gets the paths under it
 * when it is an object or a list of objects. A key holding the notation's
 * own characters is never a field.
 */
static enum node classify(const struct cands *c, const char *key, size_t klen, struct cands *below)
{
	enum node found = NODE_UNKNOWN;
	below->n = 0;
	if (strcspn(key, ".[ ") != klen)
		return NODE_UNKNOWN;
	for (size_t i = 0; i < c->n; i++) {
		const char *rest = c->p[i] + c->at;
		if (rest[0] != key[0] || strncmp(rest, key, klen) != 0)
			continue;
		rest += klen;
		size_t skip = 0;
		if (*rest == '\0' || !strcmp(rest, " *") || !strcmp(rest, "[]") ||
		    !strcmp(rest, "[] *"))
			return NODE_LEAF;
		if (*rest == '.') {
			found = NODE_OBJECT;
			skip = 1;
		} else if (!strncmp(rest, "[].", 3)) {
			found = NODE_LIST;
			skip = 3;
		}
		if (skip > 0 && below->n < CANDS_MAX) {
			below->at = (size_t)(rest - c->p[i]) + skip;
			below->p[below->n++] = c->p[i];
		}
	}
	return found;
}

/* The known field among c's paths nearest to key. */
static const char *suggest(const struct cands *c, const char *key, char *buf, size_t len)
{
	const char *names[CANDS_MAX];
	char store[CANDS_MAX][64];
	size_t k = 0;
	for (size_t i = 0; i < c->n; i++) {
		const char *s = c->p[i] + c->at;
		size_t m = strcspn(s, ".[ ");
		if (m == 0 || m >= sizeof(store[k]))
			continue;
		memcpy(store[k], s, m);
		store[k][m] = '\0';
		names[k] = store[k];
		k++;
	}
	const char *best = pk_suggest_name(key, names, k, 3);
	if (best == NULL)
		return NULL;
	snprintf(buf, len, "%s", best);
	return buf;
}

static void walk_object(struct pk_violations *out, const json_t *obj, const struct cands *c,
                        const char *dpath);

/* a b c into buf; false when it does not fit. */
static bool join(char *buf, size_t len, const char *a, const char *b, const char *c)
{
	const char *part[3] = {a, b, c};
	size_t at = 0;
	for (size_t k = 0; k < 3; k++) {
		size_t n = strlen(part[k]);
		if (n >= len - at)
			return false;
		memcpy(buf + at, part[k], n);
		at += n;
	}
	buf[at] = '\0';
	return true;
}

/* One field of an object whose paths are c: known or not, then into it. dpath is shown. */
static void walk_field(struct pk_violations *out, const char *key, const json_t *v,
                       const struct cands *c, const char *dpath)
{
	char dp[PATH_MAX_LEN];
	struct cands below;
	if (!join(dp, sizeof(dp), dpath, *dpath ? "." : "", key))
		return; /* deeper than any known field: its parent was already unknown */
	enum node kind = classify(c, key, strlen(key), &below);
	if (kind == NODE_UNKNOWN) {
		char near[64];
		const char *s = suggest(c, key, near, sizeof(near));
		if (s != NULL)
			pk_violations_add(out, PK_SEV_DENY, dp,
			                  "unknown field \"%.64s\"; did you mean \"%s\"?", key, s);
		else
			pk_violations_add(out, PK_SEV_DENY, dp, "unknown field \"%.64s\"", key);
		return;
	}
	if (kind == NODE_OBJECT && json_is_object(v)) {
		walk_object(out, v, &below, dp);
	} else if (kind == NODE_LIST && json_is_array(v)) {
		char idp[PATH_MAX_LEN], index[32];
		for (size_t i = 0; i < json_array_size(v); i++) {
			snprintf(index, sizeof(index), "[%zu]", i);
			if (join(idp, sizeof(idp), dp, index, "") &&
			    json_is_object(json_array_get(v, i)))
				walk_object(out, json_array_get(v, i), &below, idp);
		}
	}
}

static void walk_object(struct pk_violations *out, const json_t *obj, const struct cands *c,
                        const char *dpath)
{
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)(uintptr_t)obj, key, v)
	{
		walk_field(out, key, v, c, dpath);
	}
}

void pk_schema_check(const struct pk_schema *s, const json_t *obj, struct pk_violations *out)
{
	struct cands root = {.n = 0, .at = 0};
	const char *const *lists[2] = {s->paths, meta_paths};
	for (size_t l = 0; l < 2; l++)
		for (const char *const *p = lists[l]; *p != NULL && root.n < CANDS_MAX; p++)
			if (!shadowed(*p))
				root.p[root.n++] = *p;
	walk_object(out, obj, &root, "");
}

/* ---- the same notation from an OpenAPI v3 schema ---- */

static int push_path(json_t *paths, const char *p, const char *suffix)
{
	char buf[PATH_MAX_LEN];
	if (!join(buf, sizeof(buf), p, suffix, ""))
		return PK_OK;
	return json_array_append_new(paths, json_string(buf)) == 0 ? PK_OK : PK_ERR_NOMEM;
}

static int from_openapi(const json_t *s, const char *path, json_t *paths)
{
	const json_t *props = json_object_get(s, "properties");
	const char *type = json_string_value(json_object_get(s, "type"));
	if (json_object_size(props) > 0) {
		const char *key;
		const json_t *v;
		json_object_foreach((json_t *)(uintptr_t)props, key, v)
		{
			char sub[PATH_MAX_LEN];
			if (join(sub, sizeof(sub), path, *path ? "." : "", key) &&
			    from_openapi(v, sub, paths) != PK_OK)
				return PK_ERR_NOMEM;
		}
		return PK_OK;
	}
	if (type != NULL && !strcmp(type, "array")) {
		const json_t *items = json_object_get(s, "items");
		const char *itype = json_string_value(json_object_get(items, "type"));
		char sub[PATH_MAX_LEN];
		if (!join(sub, sizeof(sub), path, "[]", ""))
			return PK_OK;
		if (json_object_size(json_object_get(items, "properties")) > 0)
			return from_openapi(items, sub, paths);
		return push_path(paths, sub, itype != NULL && !strcmp(itype, "object") ? " *" : "");
	}
	return push_path(paths, path, type != NULL && !strcmp(type, "object") ? " *" : "");
}

int pk_schema_paths_from_openapi(const json_t *schema, json_t *paths)
{
	return from_openapi(schema, "", paths);
}
