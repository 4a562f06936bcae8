/*
 * lint.h - `poolkeeper lint`: the contract rules of common/ipam/rules.h over
 * manifests, collected into a report that report.h prints.
 *
 * Which rules run, by apiVersion group and kind:
 *   ipam.poolkeeper.io       a pool kind of          pk_rules_check_pool (as a CREATE)
 *                            pool_ref.h's table
 *                            (IPPool, GlobalIPPool)
 *                            any other kind          DENY: not a poolkeeper kind
 *   ipam.cluster.x-k8s.io    IPAddressClaim          as the webhook on CREATE: the repair
 *                                                    plan applied to a copy, its warnings,
 *                                                    then pk_rules_check_claim_mode; the mode
 *                                                    is --claim-enforcement for claims whose
 *                                                    poolRef.apiGroup is ipam.poolkeeper.io,
 *                                                    --foreign-claims for the others
 *   (v1beta1 and v1beta2)    IPAddress               pk_rules_check_ipaddress (as a CREATE);
 *                                                    when it passes and the files hold its
 *                                                    pool, pk_pool_lookup_check_ipaddress_pool
 *   anything else                                    skipped, with a note
 * Objects without a string apiVersion and kind, and checked objects without
 * metadata.name (or generateName), are DENY: the API server refuses them.
 * Checked kinds' fields are checked against their CRDs' schemas (schema.h):
 * an unknown field is DENY with a "did you mean". An apiVersion within
 * three edits of a known one, and a kind near a known one in a known group,
 * are DENY with a suggestion rather than skipped.
 *
 * Across everything loaded, pools that pass their own rules are checked for
 * overlap by the webhook's rule (pk_pool_lookup_check_overlaps, through
 * pk_lint_lookup): a pool of a namespaced kind (IPPool) against the pools
 * of its namespace ("default" when unset) and every cluster-scoped pool; a
 * cluster-scoped pool (GlobalIPPool) against every pool.
 * Each overlapping pair is reported once, on the pool loaded later, naming
 * the earlier one and where it is. An object defined
 * twice (same kind, namespace and name) is a WARN on the later one, since
 * applying both keeps only the last.
 *
 * Pools that pass get a summary: family, subnet, exact usable size and the
 * first and last usable addresses.
 *
 * Ownership: a struct pk_lint owns everything it loads; the report views
 * (pk_lint_objects, pk_lint_problems) are borrowed and valid until
 * pk_lint_free. Nothing here prints; report.h does.
 */
#ifndef PK_LINT_H
#define PK_LINT_H

#include "address.h"
#include "count.h"
#include "json.h"
#include "pool_lookup.h"
#include "rules.h"
#include "violation.h"

enum pk_lint_status {
	PK_LINT_PASS = 0,
	PK_LINT_WARN = 1,    /* warnings only */
	PK_LINT_DENY = 2,    /* at least one DENY */
	PK_LINT_SKIPPED = 3, /* not a kind lint checks */
};

#define PK_LINT_ORIGIN_MAX 512
#define PK_LINT_MAX_JOBS   64 /* threads pk_lint_add_files uses at most */

struct pk_lint_pool_summary {
	enum pk_family family;
	char subnet[PK_ADDR_STRLEN + 4]; /* "10.10.0.0/24" */
	char size[PK_COUNT_STRLEN];      /* exact usable count, decimal */
	char first[PK_ADDR_STRLEN];      /* lowest usable address */
	char last[PK_ADDR_STRLEN];       /* highest usable address */
};

/*
 * One thing lint found on an object: the violation (severity, field path,
 * message), the rule that found it ("pool/spec.addresses",
 * "unknown-field", "claim-pool-missing", ...) and where: the line and
 * column of its field (pk_manifest_locate), or of the deepest part of the
 * field's path the object has; the object's line and column 1 when its
 * text is not at hand (a file that changed or went away before the run).
 */
#define PK_LINT_RULE_MAX 64
struct pk_lint_finding {
	struct pk_violation v;
	char rule[PK_LINT_RULE_MAX];
	size_t line, column;
};

struct pk_lint_object {
	char *origin; /* owned; "examples/pool.yaml:12 (document 2)", under PK_LINT_ORIGIN_MAX */
	const char *source;
	size_t line, document, item; /* see struct pk_manifest_doc */
	/* Borrowed from the loaded object; NULL when absent, not a string, or holding a NUL
	 * (read as the rules read them: pk_json_cstr). */
	const char *api_version, *kind, *namespace_, *name;
	enum pk_lint_status status;
	const char *note;                 /* why it was skipped; static text */
	struct pk_lint_finding *findings; /* n_findings of them; NULL when none */
	size_t n_findings, cap_findings;
	size_t n_deny, n_warn;             /* findings of each severity */
	struct pk_lint_pool_summary *pool; /* owned; set for a pool that passed, else NULL */
};

/* A file that could not be read (unreadable) or not be loaded (bad YAML/JSON, a cap). */
struct pk_lint_problem {
	char *source;        /* owned */
	char *message;       /* owned; names the file, and line and column when known */
	size_t line, column; /* from the message; 0 when it names none */
	const char *detail;  /* the message after "<source>:<line>:<column>: "; in message */
	bool unreadable;
};

struct pk_lint_totals {
	size_t files;      /* inputs given: loaded, unloadable or unreadable */
	size_t objects;    /* objects found */
	size_t checked;    /* objects the rules ran on */
	size_t passed;     /* checked with no violation */
	size_t warned;     /* checked with warnings only */
	size_t denied;     /* checked with at least one DENY */
	size_t skipped;    /* not a kind lint checks */
	size_t deny;       /* DENY violations, all objects */
	size_t warn;       /* WARN violations, all objects */
	size_t unloadable; /* files whose YAML/JSON did not load */
	size_t unreadable; /* files that could not be read */
};

struct pk_lint;

struct pk_lint *pk_lint_new(void);
void pk_lint_free(struct pk_lint *l);

/*
 * The modes claims are checked under, as the webhook's flags of the same
 * names: claims (default repair) for claims on poolkeeper pools,
 * foreign_claims (default warn) for the others. Call before adding.
 */
void pk_lint_set_enforcement(struct pk_lint *l, enum pk_enforcement claims,
                             enum pk_enforcement foreign_claims);

/*
 * The largest file pk_lint_add_buffer loads (the manifest loader's
 * default, 8 MiB, when never called); above the default, the caps on
 * documents and nodes grow in proportion, so that a large
 * `kubectl get -o yaml` dump loads. Call before adding.
 */
void pk_lint_set_max_file_size(struct pk_lint *l, size_t bytes);

/*
 * Loads the manifests in `len` bytes of `buf` named `source` (copied),
 * expands Lists, and checks each object by its own rules as it loads:
 * only what the checks across objects need is kept, not the object.
 * Content that does not load is recorded as a problem, not returned as an
 * error, and none of its objects is kept. Returns PK_OK, or PK_ERR_NOMEM.
 */
PK_MUST_CHECK int pk_lint_add_buffer(struct pk_lint *l, const char *buf, size_t len,
                                     const char *source);

/*
 * Reads and adds each of `paths` ("-" is standard input, named "(stdin)")
 * as pk_lint_add_buffer would, on `jobs` threads (0 or 1: this one), each
 * file read, loaded and checked on its own and freed before its thread
 * takes the next. The objects join in the order of `paths` whatever the
 * threads' order, so the report is the same for any `jobs`. A file that
 * cannot be read is recorded as unreadable (pk_lint_problems). Returns
 * PK_OK, or PK_ERR_NOMEM.
 */
PK_MUST_CHECK int pk_lint_add_files(struct pk_lint *l, char *const *paths, size_t n, unsigned jobs);

/*
 * Adds one object read from elsewhere (a live cluster), as if it were the
 * only document of a file named `source` at `line` (0 when unknown). The
 * lint takes `obj` whether or not this succeeds. Counts as one input.
 * Returns PK_OK, or PK_ERR_NOMEM.
 */
PK_MUST_CHECK int pk_lint_add_object(struct pk_lint *l, json_t *obj, const char *source,
                                     size_t line);

/* Records a file that could not be read; `message` should name it. */
PK_MUST_CHECK int pk_lint_add_unreadable(struct pk_lint *l, const char *source,
                                         const char *message);

/* Runs every rule over what was added. Call once, after the last add. */
PK_MUST_CHECK int pk_lint_run(struct pk_lint *l);

const struct pk_lint_object *pk_lint_objects(const struct pk_lint *l, size_t *n);
const struct pk_lint_problem *pk_lint_problems(const struct pk_lint *l, size_t *n);
struct pk_lint_totals pk_lint_get_totals(const struct pk_lint *l);

/*
 * 2 when a file could not be read or did not load; else 1 when any object
 * was denied (or, with `fail_on_warning`, has a warning); else 0.
 */
int pk_lint_exit_code(const struct pk_lint *l, bool fail_on_warning);

/*
 * "IPPool default/a", "GlobalIPPool g", "ConfigMap x" into buf: the kind and
 * the name, with the namespace the object lands in for namespaced kinds.
 * Returns buf.
 */
char *pk_lint_describe_object(const struct pk_lint_object *o, char *buf, size_t len);

/* The namespace the object lands in: its own, "default" for namespaced IPAM
 * kinds without one, NULL for cluster-scoped pool kinds (GlobalIPPool) and for
 * other kinds without one. */
const char *pk_lint_object_namespace(const struct pk_lint_object *o);

/*
 * The rules' lookup (pool_lookup.h) over everything loaded, for running
 * the checks that need other objects on files: get_pool finds a pool's
 * last definition, list_pool_addresses the IPAddresses naming a pool,
 * list_pools the pools that passed their own rules. It is partial: a pool
 * the files do not hold may exist. Valid after pk_lint_run, until
 * pk_lint_free.
 */
const struct pk_pool_lookup *pk_lint_lookup(const struct pk_lint *l);

/* "pass", "warn", "deny", "skipped". */
const char *pk_lint_status_name(enum pk_lint_status s);

#endif
