/*
 * lint_internal.h - the state of a struct pk_lint, shared by lint.c (loading
 * and per-object rules), lint_cross.c (checks across objects) and
 * lint_lookup.c (the rules' lookup over what was loaded). Not for other
 * modules: lint.h is the interface.
 */
#ifndef PK_LINT_INTERNAL_H
#define PK_LINT_INTERNAL_H

#include "lint.h"
#include "manifest.h"
#include "pool.h"

/* What the report does not show: the object's value and its decoded pool. */
struct lint_internal {
	const json_t *value;  /* borrowed from a manifest */
	struct pk_pool *pool; /* decoded, for pools that passed their own rules */
};

/* An object by (kind, name, namespace): a pool by its own, an IPAddress by its poolRef's. */
struct lint_ref {
	const char *kind, *ns, *name;
	size_t idx;
};

struct pk_lint {
	struct pk_manifest **manifests;
	size_t n_manifests, cap_manifests;
	struct pk_lint_object *objects;
	struct lint_internal *internal;
	size_t n_objects, cap_objects, cap_internal;
	struct pk_lint_problem *problems;
	size_t n_problems, cap_problems;
	size_t files;
	bool ran, strict;
	struct pk_manifest_limits limits;
	struct pk_violations scratch; /* what one check found, before it becomes findings */
	enum pk_enforcement claims, foreign_claims;
	/* The rules' view of what was loaded; list_pools sees the pools before `before`. */
	struct pk_pool_lookup lookup;
	size_t before;
	struct lint_ref *pool_refs, *addr_refs; /* sorted; built by lint_build_lookup */
	size_t n_pool_refs, n_addr_refs;
};

/* Namespaced kinds land in "default" when the manifest names no namespace. */
const char *lint_effective_namespace(const struct pk_lint_object *o);

/* strcmp, with NULL before any string. */
int lint_str_cmp(const char *a, const char *b);

/* Whether x and y are the same object (kind, namespace, name). */
bool lint_same_identity(const struct pk_lint_object *x, const struct pk_lint_object *y);

/* Whether o's apiVersion is in `group` and its kind is `kind`. */
bool lint_is_kind(const struct pk_lint_object *o, const char *group, const char *kind);

/*
 * Moves what l->scratch holds onto object i as findings, each with `rule`
 * or, when NULL, "<prefix>/<field without indices>". Empties the scratch.
 */
PK_MUST_CHECK int lint_flush(struct pk_lint *l, size_t i, const char *prefix, const char *rule);

/* lint_lookup.c */
void lint_init_lookup(struct pk_lint *l);
/* The namespace of some pool of kind named name, or NULL when the files hold none. */
const char *lint_pool_namespace(const struct pk_lint *l, const char *kind, const char *name);
/* Sorts the pools and IPAddresses for the lookup; once, before the checks. */
PK_MUST_CHECK int lint_build_lookup(struct pk_lint *l);

/* lint_cross.c: duplicates, overlaps, claims' pools, addresses, owners. */
PK_MUST_CHECK int lint_check_across(struct pk_lint *l);

#endif
