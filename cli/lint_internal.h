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
#include "pool_ref.h"

/*
 * What the report does not show, and all the checks across objects read:
 * the loaded object itself is freed once its own rules have run.
 */
struct lint_internal {
	char *strs;            /* owned: every string of the object and of these facts */
	struct pk_pool *pool;  /* decoded, for pools that passed their own rules */
	unsigned char *kept;   /* packed (jpack.h): what the rules' lookup reads, for */
	size_t kept_len;       /* pools that passed and for IPAddresses; NULL otherwise */
	const char *ref_group; /* spec.poolRef of claims and IPAddresses, NULL when absent */
	const char *ref_kind, *ref_name;
	const char *claim;     /* an IPAddress's spec.claimRef.name */
	const char *address;   /* an IPAddress's spec.address */
	const char *uid;       /* metadata.uid */
	const char *claim_uid; /* an IPAddress's owner reference to its claim: its uid */
	const char *pool_uid;  /* and to its pool (spec.poolRef's kind and name) */
	unsigned claim_ref;    /* those references' places in metadata.ownerReferences */
	unsigned pool_ref;
	size_t offset;      /* where its document starts in its source's text, */
	size_t offset_line; /* and on which line (pk_manifest_doc) */
	bool pk_ref;        /* spec.poolRef names a poolkeeper pool */
	bool in_pool;       /* an IPAddress that passed its own rules: checked in its pool */
};

/* What every object is checked under: the settings of pk_lint_set_*. */
struct lint_settings {
	enum pk_enforcement claims, foreign_claims;
	struct pk_manifest_limits limits;
};

/*
 * One input's objects, checked by their own rules as they load
 * (lint_object.c), before they join the lint in input order.
 */
struct lint_batch {
	const struct lint_settings *set;
	struct pk_violations *scratch; /* what one check found, before it becomes findings */
	char *source;                  /* owned until the batch joins */
	struct pk_lint_object *objects;
	struct lint_internal *internal;
	size_t n, cap_objects, cap_internal;
	char *problem;   /* owned: why the input did not load or could not be read */
	bool unreadable; /* the problem is that it could not be read */
	char *text;      /* owned: the source's text, kept when it cannot be read again */
	size_t text_len;
};

/* An object by (kind, name, namespace): a pool by its own, an IPAddress by its poolRef's. */
struct lint_ref {
	const char *kind, *ns, *name;
	size_t idx;
};

/* One input that joined a lint: its name, which its objects' `source` points into. */
struct lint_source {
	char *name; /* owned */
	char *text; /* owned: its text when it cannot be read again (stdin, a buffer), else NULL */
	size_t text_len;
};

struct pk_lint {
	struct lint_source *sources;
	size_t n_sources, cap_sources;
	struct pk_lint_object *objects;
	struct lint_internal *internal;
	size_t n_objects, cap_objects, cap_internal;
	struct pk_lint_problem *problems;
	size_t n_problems, cap_problems;
	size_t files;
	bool ran;
	struct lint_settings set;
	struct pk_violations scratch; /* what one check found, before it becomes findings */
	/*
	 * The rules' view of what was loaded. While the pool `current` is
	 * checked for overlaps, list_pools gives only `candidates` (the pools
	 * loaded before it that share an address with it), and `listed` what
	 * it gave of them, for name_pool.
	 */
	struct pk_pool_lookup lookup;
	size_t current;
	const size_t *candidates;
	size_t n_candidates;
	const json_t **listed; /* n_candidates entries */
	size_t cached;         /* get_pool's last pool (its index), kept while IPAddresses */
	json_t *cached_pool;   /* are checked in their pools' order; NULL when none */
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

/* poolkeeper's pool kind (pool_ref.h) o is of, by its apiVersion's group and its kind (any
 * version), or NULL. */
const struct pk_pool_kind *lint_pool_kind(const struct pk_lint_object *o);

/*
 * Moves what `scratch` holds onto object o as findings, each with `rule`
 * or, when NULL, "<prefix>/<field without indices>". Empties the scratch.
 */
PK_MUST_CHECK int lint_flush_to(struct pk_violations *scratch, struct pk_lint_object *o,
                                const char *prefix, const char *rule);

/* lint_flush_to from l->scratch onto object i. */
PK_MUST_CHECK int lint_flush(struct pk_lint *l, size_t i, const char *prefix, const char *rule);

/* lint_object.c: the objects of `len` bytes of `buf` into b, each checked by its own rules. */
PK_MUST_CHECK int lint_batch_load(struct lint_batch *b, const char *buf, size_t len);

/*
 * Gives the findings of object o that have no position yet (column 0) the
 * line and column of their field in `text`, its source's text; with no
 * text, its object's line and column 1.
 */
void lint_locate(struct pk_lint_object *o, const struct lint_internal *in, const char *text,
                 size_t len);

/* Releases everything the batch holds and empties it. */
void lint_batch_free(struct lint_batch *b);

/* Releases what object i of a batch or a lint holds. */
void lint_object_release(struct pk_lint_object *o, struct lint_internal *in);

/* The kept object i (a new reference), or NULL when it has none or memory ran out. */
json_t *lint_kept(const struct pk_lint *l, size_t i);

/* lint_lookup.c */
void lint_init_lookup(struct pk_lint *l);
/* The namespace of some pool of kind named name, or NULL when the files hold none. */
const char *lint_pool_namespace(const struct pk_lint *l, const char *kind, const char *name);
/* Drops the pool get_pool keeps. */
void lint_uncache_pool(struct pk_lint *l);
/* Sorts the pools and IPAddresses for the lookup; once, before the checks. */
PK_MUST_CHECK int lint_build_lookup(struct pk_lint *l);

/* lint_cross.c: duplicates, overlaps, claims' pools, addresses, owners. */
PK_MUST_CHECK int lint_check_across(struct pk_lint *l);

#endif
