/*
 * lookup.h - the webhook's API access: the admission lookups (pools,
 * IPAddresses of a pool, one pool, one claim) answered from informer
 * caches (cache.h) of each of poolkeeper's pool kinds (pool_ref.h's table),
 * IPAddresses and IPAddressClaims, which pk_lookup_open starts. A pool
 * kind the table does not have is an error naming it, asked of no cache and
 * no API server.
 *
 * Where the API is: --kubeconfig when given; else $KUBECONFIG when set; else
 * the in-cluster service account when KUBERNETES_SERVICE_HOST is set (a
 * pod); else there is no API access and pk_lookup_open returns PK_OK with
 * *out NULL: the webhook then answers the checks that need only the request
 * and says in a warning which ones it skipped.
 *
 * Until an informer has completed its first list, the lookups of its kind
 * read the API server instead (a quorum read: a LIST of every IPAddress for
 * a pool's addresses), so nothing is admitted on an empty cache; the
 * webhook is not ready (pk_lookup_ready) until every informer has listed,
 * so the apiserver sends it little in that window. Afterwards the caches
 * answer, current to within the time a watch event takes to arrive; an
 * informer whose watch broke keeps answering from its last state while it
 * relists. docs/webhook.md ("Lookups") says what that lag means.
 *
 * Whether a requester may set blockOwnerDeletion on a claim's owner reference
 * (pk_lookup_may_block_owner_deletion) is permission.h's question: discovery and a
 * SubjectAccessReview, on lookup threads, within a per-review deadline.
 *
 * Threading: the lookups may be used from every server thread at once.
 */
#ifndef PK_LOOKUP_H
#define PK_LOOKUP_H

#include <stdbool.h>

#include "admission.h"
#include "permission.h"

struct pk_lookup;

enum pk_lookup_mode {
	PK_LOOKUP_CACHED, /* informer caches; live reads until a kind's first list is in */
	PK_LOOKUP_LIVE,   /* no caches: every lookup reads the API server (a benchmark baseline) */
};

struct pk_lookup_opts {
	enum pk_lookup_mode mode;
	struct pk_permission_opts permission; /* zeroed: the defaults */
};

/* pk_lookup_open_mode with PK_LOOKUP_CACHED. */
PK_MUST_CHECK int pk_lookup_open(const char *kubeconfig, struct pk_lookup **out,
                                 struct pk_err *err);

/* Loads the API access and, in PK_LOOKUP_CACHED, starts the informers. Frees with
 * pk_lookup_close. A kubeconfig that cannot be loaded is an error naming it. */
PK_MUST_CHECK int pk_lookup_open_mode(const char *kubeconfig, enum pk_lookup_mode mode,
                                      struct pk_lookup **out, struct pk_err *err);
/* The same with every setting; fields left 0 take their defaults. Starts the lookup
 * threads. */
PK_MUST_CHECK int pk_lookup_open_opts(const char *kubeconfig, const struct pk_lookup_opts *o,
                                      struct pk_lookup **out, struct pk_err *err);

/* Stops the informers and frees. No lookup may be running. NULL is fine. */
void pk_lookup_close(struct pk_lookup *l);

/* The callbacks for struct pk_admission_config (borrowed from l). */
const struct pk_admission_lookup *pk_lookup_admission(const struct pk_lookup *l);

/* Whether every informer has completed its first list (always true in PK_LOOKUP_LIVE, and for
 * NULL: no API access, nothing to load). Takes a void pointer so that it can be a readiness
 * callback. Logs once, when it first answers true, what the caches hold. */
bool pk_lookup_ready(void *l);

/* Objects the caches kept as their name only, being over the cap (cache.h); 0 without
 * caches. Takes the struct pk_lookup as void * (pk_metrics_set_oversized_source). */
unsigned long long pk_lookup_oversized(void *l);

/* Waits up to timeout_ms for pk_lookup_ready; returns it. */
bool pk_lookup_wait_ready(struct pk_lookup *l, long timeout_ms);

/* The may_block_owner_deletion lookup of struct pk_admission_lookup (ctx is the struct
 * pk_lookup): pk_permission_check, whose comment says what it answers. */
PK_MUST_CHECK int pk_lookup_may_block_owner_deletion(void *ctx, const json_t *user_info,
                                                     const char *ns, const char *api_version,
                                                     const char *kind, const char *name,
                                                     bool *allowed, char *rule, size_t rule_len,
                                                     struct pk_err *err);

/* "https://host:port" of the API server, for the start-up log. */
const char *pk_lookup_server(const struct pk_lookup *l);

#endif
