/*
 * pool_ref.h - poolkeeper's pool kinds, and which pool a reference names.
 *
 * Every part that reads a spec.poolRef (the webhook's checks and caches,
 * the controller's reconciler and backends, `poolkeeper lint` and `audit`)
 * asks here, so that all of them name the same pool for the same reference:
 *
 *   - poolkeeper's kinds (group ipam.poolkeeper.io) are in one table, each
 *     with its resource and scope. A namespaced kind names the pool of the
 *     referring object's namespace; a cluster-scoped one names the one pool
 *     from every namespace.
 *   - another provider's kind is cluster-scoped when its name starts with
 *     "Global" (GlobalInClusterIPPool and the like, Cluster API providers'
 *     convention), and namespaced otherwise.
 *
 * Pure: no I/O, no globals but the constant table.
 */
#ifndef PK_POOL_REF_H
#define PK_POOL_REF_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* The controller backend of poolkeeper's own allocator (controller/backends/incluster). */
#define PK_INCLUSTER_BACKEND "incluster"

/* What a pool kind's spec holds, beyond what every pool's does (addresses, excluded
 * addresses, prefix, gateway, reserved addresses, the reuse grace period). */
enum pk_pool_spec {
	PK_POOL_SPEC_RANGES = 0, /* nothing more (IPPool's) */
};

/* A pool resource of poolkeeper's, as its backend serves it. */
struct pk_pool_kind {
	const char *kind;            /* "IPPool" */
	const char *group, *version; /* "ipam.poolkeeper.io", "v1alpha1" */
	const char *resource;        /* "ippools" */
	bool namespaced;             /* false: a poolRef from any namespace names the one pool */
	const char *backend;         /* the controller backend that serves it: "incluster" */
	enum pk_pool_spec spec;      /* its spec's fields */
};

/* The most pool kinds the table holds (fixed-size arrays per kind may use it). */
#define PK_POOL_KINDS_MAX 8

/* poolkeeper's pool kinds; those of one backend are next to each other. */
const struct pk_pool_kind *pk_pool_kinds(size_t *n);

/* poolkeeper's kind whose resource (plural) that is, or NULL. */
const struct pk_pool_kind *pk_pool_kind_by_resource(const char *resource);

/* The kinds one backend serves (a slice of pk_pool_kinds), or NULL (*n 0) for none. */
const struct pk_pool_kind *pk_pool_kinds_of_backend(const char *backend, size_t *n);

/* poolkeeper's kind of that group and name, or NULL. */
const struct pk_pool_kind *pk_pool_kind_find(const char *group, const char *kind);

/* poolkeeper's kind a poolRef object ({apiGroup, kind, name}) names, or NULL. */
const struct pk_pool_kind *pk_pool_kind_of_ref(const json_t *pool_ref);

/*
 * True when the poolRef object's apiGroup is ipam.poolkeeper.io, whatever
 * its kind: such a claim is poolkeeper's, and an unknown kind (or none) is
 * one of its violations, not another provider's business.
 */
bool pk_pool_ref_is_poolkeeper_group(const json_t *pool_ref);

/* Whether a pool kind is namespaced (the rule above); group NULL or "" is the core group. */
bool pk_pool_kind_namespaced(const char *group, const char *kind);

/* The pool a poolRef names. Strings are borrowed from the reference and ns. */
struct pk_pool_ref {
	const struct pk_pool_kind *pk; /* poolkeeper's kind, or NULL for another provider's */
	const char *group;             /* "" when the reference has none (the core group) */
	const char *kind, *name;
	const char *ns; /* the pool's namespace; NULL when the kind is cluster-scoped */
};

/*
 * The pool that pool_ref names for an object of namespace ns. False when
 * the reference has no kind or no name (or an empty one), or when a
 * namespaced kind is named from no namespace.
 */
bool pk_pool_ref_read(const json_t *pool_ref, const char *ns, struct pk_pool_ref *out);

/* The pool a poolRef names (pk_pool_ref_read) and a kind, ns and name name the same pool. */
bool pk_pool_ref_is(const struct pk_pool_ref *r, const char *kind, const char *ns,
                    const char *name);

/* Room for "<ns>/<name>" and "<kind>/<ns>/<name>" (kind 63, namespace 63, name 253). */
#define PK_OBJECT_KEY_MAX 400
/* Room for "<group>/<kind>/<ns>/<name>" (group 253 more). */
#define PK_POOL_REF_KEY_MAX 660

/* "<ns>/<name>": a namespaced object's identity, as the informers key it. */
void pk_object_key(const char *ns, const char *name, char *buf, size_t len);

/* "<kind>/<ns>/<name>": one of poolkeeper's pools (ns "" for a cluster-scoped kind). */
void pk_pool_key(const char *kind, const char *ns, const char *name, char *buf, size_t len);

/* "<group>/<kind>/<ns>/<name>" of any provider's pool: false when it did not fit. */
bool pk_pool_ref_key(const struct pk_pool_ref *r, char *buf, size_t len);

#endif
