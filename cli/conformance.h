/*
 * conformance.h - `poolkeeper conformance`: a run of the CAPI IPAM contract
 * against whichever IPAM provider serves a pool in a live cluster.
 *
 *   poolkeeper conformance --pool-ref GROUP/KIND/NAME [--namespace N]
 *                          [--kubeconfig F] [--timeout DURATION] [--burst N]
 *
 * The run creates its own Cluster, an owner object and claims shaped as an
 * infrastructure provider builds them, watches what the provider does with
 * them, prints one line per check (pass, fail, or skip with the reason),
 * each citing the contract sentence it tests, and deletes what it created.
 * Exit status: 0 no check failed, 1 a check failed, 2 a usage error or a
 * cluster that could not be reached or read.
 *
 * The pure parts (the --pool-ref syntax, the check table, the judgement of
 * one object, the verdict) are exposed for the unit tests.
 */
#ifndef PK_CONFORMANCE_H
#define PK_CONFORMANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "json.h"
#include "pk.h"

#define PK_CONF_EXIT_FAIL  1
#define PK_CONF_EXIT_USAGE 2
#define PK_CONF_BURST_MAX  100 /* the most claims --burst creates at once */

/* The pool under test, as --pool-ref names it. */
struct pk_conf_pool_ref {
	char group[254];
	char kind[64];
	char name[254];
};

/*
 * GROUP/KIND/NAME: GROUP an RFC 1123 subdomain with at least one dot (a CRD's
 * group), KIND an upper-case letter then letters and digits, NAME an
 * RFC 1123 subdomain. PK_ERR_INVALID with a message naming the part.
 */
PK_MUST_CHECK int pk_conf_parse_pool_ref(const char *s, struct pk_conf_pool_ref *out,
                                         struct pk_err *err);

/* The checks, in the order they are printed. */
enum pk_conf_check {
	PK_CONF_ADDRESS_NAME,
	PK_CONF_CLAIM_OWNER,
	PK_CONF_POOL_OWNER,
	PK_CONF_CLAIM_FINALIZER,
	PK_CONF_ADDRESS_FINALIZER,
	PK_CONF_ADDRESS_REF,
	PK_CONF_READY,
	PK_CONF_READY_REASON,
	PK_CONF_PAUSED,
	PK_CONF_UNPAUSED,
	PK_CONF_RELEASE,
	PK_CONF_CLUSTER_GONE,
	PK_CONF_NO_DUPLICATES,
	PK_CONF_COUNT
};

struct pk_conf_check_def {
	const char *id;    /* stable, for CI greps: "owner-claim" */
	const char *what;  /* what the provider must do */
	const char *cites; /* the contract sentence it tests, and where it is */
};

extern const struct pk_conf_check_def pk_conf_checks[PK_CONF_COUNT];

enum pk_conf_verdict { PK_CONF_NOT_RUN = 0, PK_CONF_PASS, PK_CONF_FAIL, PK_CONF_SKIP };

struct pk_conf_result {
	enum pk_conf_verdict verdict;
	char detail[PK_ERR_MSG_MAX]; /* why it failed or was skipped; what was seen */
};

/* Sets r's verdict and formatted detail. */
void pk_conf_set(struct pk_conf_result *r, enum pk_conf_verdict v, const char *fmt, ...)
    PK_PRINTF(3, 4);

/* "pass owner-claim: <what>[: <detail>] [<cites>]\n"; a check never run is a skip. */
void pk_conf_print(FILE *f, enum pk_conf_check c, const struct pk_conf_result *r);

/* 1 (PK_CONF_EXIT_FAIL) when any of the n results failed, else 0. */
int pk_conf_exit_code(const struct pk_conf_result *r, size_t n);

/* ---- judging one object (pure; the detail says what was seen) ---- */

/* The IPAddress addr is named `claim` and its spec's claimRef and poolRef
 * name the claim and the pool. */
enum pk_conf_verdict pk_conf_judge_address(const json_t *addr, const char *claim,
                                           const struct pk_conf_pool_ref *pool,
                                           struct pk_conf_result *r);

/* addr has an owner reference of `uid` with controller (want_controller:
 * true, else not true) and blockOwnerDeletion true. */
enum pk_conf_verdict pk_conf_judge_owner(const json_t *addr, const char *uid, bool want_controller,
                                         struct pk_conf_result *r);

/* obj carries at least one finalizer. */
enum pk_conf_verdict pk_conf_judge_finalizer(const json_t *obj, struct pk_conf_result *r);

/* The claim's status.addressRef.name is `name`. */
enum pk_conf_verdict pk_conf_judge_address_ref(const json_t *claim, const char *name,
                                               struct pk_conf_result *r);

/* The claim's Ready condition has `status`, and `reason` when not NULL. */
enum pk_conf_verdict pk_conf_judge_ready(const json_t *claim, const char *status,
                                         const char *reason, struct pk_conf_result *r);

/* No two IPAddresses of `items` (an array) whose spec.poolRef is the pool
 * hold the same spec.address. */
enum pk_conf_verdict pk_conf_judge_unique(const json_t *items, const struct pk_conf_pool_ref *pool,
                                          struct pk_conf_result *r);

/* obj.a (b NULL) or obj.a.b as a C string (pk_json_cstr), or NULL. */
const char *pk_conf_str_at(const json_t *obj, const char *a, const char *b);

/* s, or "(none)" when NULL: for messages. */
const char *pk_conf_or_none(const char *s);

/* The claim's status condition of type Ready, or NULL. */
const json_t *pk_conf_ready_condition(const json_t *claim);

/* ---- the run (conformance_run.c) ---- */

/* The command; argv holds what follows "conformance". */
int pk_conformance_main(int argc, char *argv[]);

#endif
