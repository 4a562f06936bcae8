/*
 * schema.h - the fields each kind lint checks may carry, as the API server
 * knows them from the CRDs' OpenAPI v3 schemas, so that a misspelled field
 * (`excludeAddresses:`) is an error with a "did you mean" suggestion, as
 * kubectl's strict field validation would refuse it.
 *
 * The field trees are small tables in schema.c, one path per leaf:
 *   "spec.addresses[]"   a list of scalars
 *   "status.conditions[].type"   a field of the objects in a list
 *   "metadata *"         as the CRDs say it; checked against ObjectMeta's fields
 * poolkeeper's pool kinds are those of pool_ref.h's table, each with the
 * paths of its spec (enum pk_pool_spec), from the CRDs in
 * charts/poolkeeper/crds; test_schema derives the same paths from every CRD
 * there (pk_schema_paths_from_openapi) and fails when the two differ. The Cluster API kinds are
 * derived from cluster-api's config/crd/bases/ipam.cluster.x-k8s.io_ipaddressclaims.yaml and
 * ipam.cluster.x-k8s.io_ipaddresses.yaml (v1alpha1, v1beta1 and v1beta2).
 */
#ifndef PK_SCHEMA_H
#define PK_SCHEMA_H

#include <jansson.h>

#include "violation.h"

struct pk_schema {
	const char *group, *version, *kind;
	const char *const *paths; /* NULL-terminated */
};

/* The schema of group/version kind, or NULL when lint knows none. */
const struct pk_schema *pk_schema_find(const char *group, const char *version, const char *kind);

/*
 * Every field of obj the schema does not know is a DENY on its path
 * ("spec.excludeAddresses"), with the nearest known sibling as a
 * suggestion; metadata's own fields are checked against ObjectMeta's, as
 * the API server does. Values of the wrong type are left to the rules.
 */
void pk_schema_check(const struct pk_schema *s, const json_t *obj, struct pk_violations *out);

/* The known groups' versions and kinds, for suggestions on near misses. */
const char *const *pk_schema_api_versions(size_t *n);
const char *const *pk_schema_kinds(size_t *n);

/*
 * The leaf paths of an OpenAPI v3 schema (a CRD version's
 * schema.openAPIV3Schema), in the notation above, appended to `paths`
 * (a JSON array of strings). Returns PK_OK or PK_ERR_NOMEM.
 */
PK_MUST_CHECK int pk_schema_paths_from_openapi(const json_t *schema, json_t *paths);

#endif
