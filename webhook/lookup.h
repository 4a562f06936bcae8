/*
 * lookup.h - the webhook's API access: the admission lookups (pools,
 * IPAddresses of a pool, one pool, one claim) answered from informer
 * caches (cache.h) of IPPools, GlobalIPPools, IPAddresses and
 * IPAddressClaims, which pk_lookup_open starts.
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
 * Whether a requester may set blockOwnerDeletion on a claim's owner
 * reference (pk_lookup_may_block_owner_deletion) is asked of the API server
 * as the apiserver's OwnerReferencesPermissionEnforcement plugin will: the
 * owner's resource is found through discovery (GET /apis/<group>/<version>,
 * /api/v1 for the core group) and cached in a pk_kindmap, then a
 * SubjectAccessReview (authorization.k8s.io/v1) asks whether the user may
 * `update` <resource>/finalizers of the owner. The webhook needs `create` on
 * subjectaccessreviews for that; discovery is open to every authenticated user.
 *
 * Threading: the lookups may be used from every server thread at once.
 */
#ifndef PK_LOOKUP_H
#define PK_LOOKUP_H

#include <stdbool.h>

#include "admission.h"

struct pk_lookup;

enum pk_lookup_mode {
	PK_LOOKUP_CACHED, /* informer caches; live reads until a kind's first list is in */
	PK_LOOKUP_LIVE,   /* no caches: every lookup reads the API server (a benchmark baseline) */
};

/* pk_lookup_open_mode with PK_LOOKUP_CACHED. */
PK_MUST_CHECK int pk_lookup_open(const char *kubeconfig, struct pk_lookup **out,
                                 struct pk_err *err);

/* Loads the API access and, in PK_LOOKUP_CACHED, starts the informers. Frees with
 * pk_lookup_close. A kubeconfig that cannot be loaded is an error naming it. */
PK_MUST_CHECK int pk_lookup_open_mode(const char *kubeconfig, enum pk_lookup_mode mode,
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

/*
 * The may_block_owner_deletion lookup of struct pk_admission_lookup (ctx is the struct
 * pk_lookup): whether the user of user_info (an AdmissionReview's request.userInfo: username,
 * uid, groups, extra) may `update` the finalizers subresource of the owner (api_version, kind,
 * name) in namespace ns, as the apiserver requires before it accepts blockOwnerDeletion: true.
 *   - PK_OK, *allowed set, rule (rule_len bytes) "update on vspherevms/finalizers in API group
 *     infrastructure.cluster.x-k8s.io".
 *   - PK_OK, *allowed false, rule saying so, when discovery knows no resource of that kind in
 *     that group/version (the apiserver would refuse blockOwnerDeletion too).
 *   - PK_ERR_INVALID before any request when ns, api_version, kind or name cannot be a
 *     namespace, an API version, a kind or an object name (they come from a tenant's object
 *     and end up in a URL path or a review), or user_info has no username; err names the field
 *     and the value. Any failure of the discovery or review request: err says which and why.
 */
PK_MUST_CHECK int pk_lookup_may_block_owner_deletion(void *ctx, const json_t *user_info,
                                                     const char *ns, const char *api_version,
                                                     const char *kind, const char *name,
                                                     bool *allowed, char *rule, size_t rule_len,
                                                     struct pk_err *err);

/*
 * What a tenant's owner reference may be asked about, checked before any request:
 * ns a namespace name (DNS label), api_version GROUP/VERSION (a DNS subdomain and a DNS
 * label) or VERSION (the core group), kind at most 63 of letters, digits and '-' starting
 * with a letter, name an object name (at most 253 printable characters, no '/' or '%', not
 * "." or ".."). On PK_OK t holds the group, the version and the discovery path
 * ("/apis/<group>/<version>" or "/api/<version>"); else PK_ERR_INVALID, t zeroed, and err
 * names the field and quotes the value. Pure.
 */
struct pk_owner_target {
	char group[254];
	char version[64];
	char group_version[320]; /* "group/version", or "version" for the core group */
	char path[330];
};
PK_MUST_CHECK int pk_lookup_owner_target(const char *ns, const char *api_version, const char *kind,
                                         const char *name, struct pk_owner_target *t,
                                         struct pk_err *err);

/*
 * The cache of discovery answers behind it: (group/version, kind) -> resource, or "no
 * such kind". At most `max` entries (a new one past that evicts the one closest to
 * expiry); an entry found lives ttl_ns, a kind discovery did not know miss_ttl_ns (so a
 * CRD installed later is found soon). Times are the caller's monotonic nanoseconds.
 * Thread-safe.
 */
struct pk_kindmap;
struct pk_kindmap *pk_kindmap_new(size_t max, long long ttl_ns, long long miss_ttl_ns);
void pk_kindmap_free(struct pk_kindmap *m);
enum pk_kindmap_hit {
	PK_KINDMAP_NONE = 0, /* not cached, or expired: ask discovery */
	PK_KINDMAP_FOUND,    /* resource copied into buf */
	PK_KINDMAP_MISSING,  /* discovery said the group/version has no such kind */
};
enum pk_kindmap_hit pk_kindmap_get(struct pk_kindmap *m, const char *group_version,
                                   const char *kind, long long now_ns, char *buf, size_t len);
/* resource NULL: the kind is missing. PK_ERR_NOMEM leaves the map as it was. */
PK_MUST_CHECK int pk_kindmap_put(struct pk_kindmap *m, const char *group_version, const char *kind,
                                 const char *resource, long long now_ns);
size_t pk_kindmap_len(struct pk_kindmap *m);

/* "https://host:port" of the API server, for the start-up log. */
const char *pk_lookup_server(const struct pk_lookup *l);

#endif
