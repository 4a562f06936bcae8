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
 * `update` <resource>/finalizers of the owner, in the claim's namespace unless
 * discovery says the owner's resource is cluster-scoped (APIResource.namespaced
 * false: then in none, as the plugin asks). The webhook needs `create` on
 * subjectaccessreviews for that; discovery is open to every authenticated user.
 *
 * Those two requests never run on a listener's thread: the review's thread answers
 * from the caches (the kind map; SubjectAccessReview answers, kept
 * PK_LOOKUP_SAR_TTL_MS whether allowed or not) or hands the question to a small
 * fixed pool of lookup threads through a bounded queue, and waits for the answer
 * at most the per-review deadline. The requests themselves, the client's rate
 * limit included, are bounded by the same deadline. A full queue or a passed
 * deadline is PK_ERR_TIMEOUT at once: the review then goes on without
 * blockOwnerDeletion (admission.c says so in a warning). A lookup that ends after
 * its review stopped waiting still fills the caches.
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

/* How long a review waits for its permission lookup: well under the apiserver's webhook
 * timeout (the chart's timeoutSeconds, 10 s by default and at least 1 s), so that a review
 * whose lookup cannot be answered is still answered in time. */
#define PK_LOOKUP_DEADLINE_MS 1000
#define PK_LOOKUP_THREADS     4     /* lookup threads */
#define PK_LOOKUP_QUEUE       64    /* questions waiting for one of them */
#define PK_LOOKUP_SAR_TTL_MS  10000 /* a SubjectAccessReview answer, allowed or not, is kept */
#define PK_LOOKUP_SAR_MAX     1024  /* answers kept at most (the oldest goes first) */

struct pk_lookup_opts {
	enum pk_lookup_mode mode;
	long deadline_ms; /* 0: PK_LOOKUP_DEADLINE_MS */
	unsigned threads; /* 0: PK_LOOKUP_THREADS */
	unsigned queue;   /* 0: PK_LOOKUP_QUEUE */
	long sar_ttl_ms;  /* 0: PK_LOOKUP_SAR_TTL_MS */
	size_t sar_max;   /* 0: PK_LOOKUP_SAR_MAX */
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

/*
 * The may_block_owner_deletion lookup of struct pk_admission_lookup (ctx is the struct
 * pk_lookup): whether the user of user_info (an AdmissionReview's request.userInfo: username,
 * uid, groups, extra) may `update` the finalizers subresource of the owner (api_version, kind,
 * name) in namespace ns, as the apiserver requires before it accepts blockOwnerDeletion: true.
 * Asked for the resource, not the one owner (so the answer can be cached).
 *   - PK_OK, *allowed set, rule (rule_len bytes) "update on vspherevms/finalizers in API group
 *     infrastructure.cluster.x-k8s.io".
 *   - PK_OK, *allowed false, rule saying so, when discovery knows no resource of that kind in
 *     that group/version (the apiserver would refuse blockOwnerDeletion too).
 *   - PK_ERR_INVALID before any request when ns, api_version, kind or name cannot be a
 *     namespace, an API version, a kind or an object name (they come from a tenant's object
 *     and end up in a URL path or a review), or user_info has no username; err names the field
 *     and the value.
 *   - PK_ERR_TIMEOUT when the answer could not come within the deadline (the queue was full,
 *     the deadline passed, the rate limit would have held a request past it, the request
 *     timed out); err says which.
 *   - PK_ERR_API for any other failure of the discovery or review request: err says which
 *     and why.
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
 * The cache of discovery answers behind it: (group/version, kind) -> resource and whether
 * it is namespaced (APIResource.namespaced), or "no such kind". At most `max` entries (a new one
 * past that evicts the one closest to expiry); an entry found lives ttl_ns, a kind discovery did
 * not know miss_ttl_ns (so a CRD installed later is found soon). Times are the caller's monotonic
 * nanoseconds. Thread-safe.
 */
struct pk_kindmap;
struct pk_kindmap *pk_kindmap_new(size_t max, long long ttl_ns, long long miss_ttl_ns);
void pk_kindmap_free(struct pk_kindmap *m);
enum pk_kindmap_hit {
	PK_KINDMAP_NONE = 0, /* not cached, or expired: ask discovery */
	PK_KINDMAP_FOUND,    /* resource copied into buf */
	PK_KINDMAP_MISSING,  /* discovery said the group/version has no such kind */
};
/* *namespaced set on PK_KINDMAP_FOUND (true otherwise). */
enum pk_kindmap_hit pk_kindmap_get(struct pk_kindmap *m, const char *group_version,
                                   const char *kind, long long now_ns, char *buf, size_t len,
                                   bool *namespaced);
/* resource NULL: the kind is missing. An error leaves the map as it was. */
PK_MUST_CHECK int pk_kindmap_put(struct pk_kindmap *m, const char *group_version, const char *kind,
                                 const char *resource, bool namespaced, long long now_ns);
size_t pk_kindmap_len(struct pk_kindmap *m);

/*
 * The cache of SubjectAccessReview answers: key (the review's spec as compact JSON with
 * sorted keys: user, uid, groups, extra, and the resource attributes, the namespace among
 * them) -> allowed or not, each kept ttl_ns. At most `max` entries: a new one past that
 * evicts the oldest. A key of 2 KiB or more is not kept (PK_ERR_TOO_BIG). Times are the
 * caller's monotonic nanoseconds. Thread-safe.
 */
struct pk_sarcache;
struct pk_sarcache *pk_sarcache_new(size_t max, long long ttl_ns);
void pk_sarcache_free(struct pk_sarcache *c);
enum pk_sarcache_hit {
	PK_SARCACHE_NONE = 0, /* not cached, or expired */
	PK_SARCACHE_ALLOWED,
	PK_SARCACHE_DENIED,
};
enum pk_sarcache_hit pk_sarcache_get(struct pk_sarcache *c, const char *key, long long now_ns);
PK_MUST_CHECK int pk_sarcache_put(struct pk_sarcache *c, const char *key, bool allowed,
                                  long long now_ns);
size_t pk_sarcache_len(struct pk_sarcache *c);

/* "https://host:port" of the API server, for the start-up log. */
const char *pk_lookup_server(const struct pk_lookup *l);

#endif
