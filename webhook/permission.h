/*
 * permission.h - whether a requester may set blockOwnerDeletion on a claim's owner
 * reference, asked of the API server as the apiserver's OwnerReferencesPermissionEnforcement
 * plugin will: the owner's resource is found through discovery (GET /apis/<group>/<version>,
 * /api/v1 for the core group) and kept in a pk_kindmap with its scope, then a
 * SubjectAccessReview (authorization.k8s.io/v1) asks whether the user may `update`
 * <resource>/finalizers, in the claim's namespace unless discovery says the owner's resource
 * is cluster-scoped (APIResource.namespaced false: then in none, as the plugin asks). The
 * webhook needs `create` on subjectaccessreviews; discovery is open to every authenticated
 * user.
 *
 * Those two requests never run on a listener's thread: the review's thread answers from the
 * caches (answer_cache.h: the kind map, and the SubjectAccessReview answers, allowed or not,
 * kept briefly) or hands the question to a small fixed pool of lookup threads through a
 * bounded queue, and waits for the answer at most the per-review deadline. The requests
 * themselves, the client's rate limit included, are bounded by the same deadline. A full
 * queue or a passed deadline is PK_ERR_TIMEOUT at once: the review then goes on without
 * blockOwnerDeletion (admission.c says so in a warning). A question identical to one queued
 * or running shares its answer. A lookup that ends after its review stopped waiting still
 * fills the caches, for the next review.
 *
 * Threading: pk_permission_check may be called from every server thread at once.
 */
#ifndef PK_PERMISSION_H
#define PK_PERMISSION_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "kube_client.h"
#include "pk.h"

/* How long a review waits for its permission lookup: well under the apiserver's webhook
 * timeout (the chart's timeoutSeconds: 10 s by default, 1 s at the least) and under the 1 s
 * a valid review should take at worst, so that a review whose lookup cannot be answered in
 * time is still answered in time, without blockOwnerDeletion. */
#define PK_PERMISSION_DEADLINE_MS 500
#define PK_PERMISSION_THREADS     4     /* lookup threads */
#define PK_PERMISSION_QUEUE       64    /* questions waiting for one of them */
#define PK_PERMISSION_SAR_TTL_MS  10000 /* a SubjectAccessReview answer, allowed or not, is kept */
#define PK_PERMISSION_SAR_MAX     1024  /* answers kept at most (the oldest goes first) */
/* After a lookup missed its deadline, questions that are neither cached nor already being
 * asked are not queued for this long: each is answered at once as a timeout. A flood of
 * reviews whose lookups cannot be answered in time (forged ones, each with a user of its
 * own) then holds no listener thread for a deadline apiece, and the apiserver's reviews
 * behind them are answered in time. */
#define PK_PERMISSION_SHED_MS 1000

struct pk_permission_opts {
	long deadline_ms; /* 0: PK_PERMISSION_DEADLINE_MS */
	unsigned threads; /* 0: PK_PERMISSION_THREADS */
	unsigned queue;   /* 0: PK_PERMISSION_QUEUE */
	long sar_ttl_ms;  /* 0: PK_PERMISSION_SAR_TTL_MS */
	size_t sar_max;   /* 0: PK_PERMISSION_SAR_MAX */
};

struct pk_permission;

/* Starts the lookup threads, which send through client (borrowed: it must outlive the
 * pk_permission). o NULL: the defaults. Free with pk_permission_free. */
PK_MUST_CHECK int pk_permission_new(struct pk_kube_client *client,
                                    const struct pk_permission_opts *o, struct pk_permission **out,
                                    struct pk_err *err);

/* Stops the lookup threads (a question still queued is answered "stopping") and frees. No
 * pk_permission_check may be running. NULL is fine. */
void pk_permission_free(struct pk_permission *p);

/*
 * Whether the user of user_info (an AdmissionReview's request.userInfo: username, uid,
 * groups, extra) may `update` the finalizers subresource of the owner (api_version, kind,
 * name) in namespace ns, as the apiserver requires before it accepts blockOwnerDeletion:
 * true. Asked for the resource, not the one owner, so that the answer can be cached: a grant
 * limited to some resourceNames reads as not allowed.
 *   - PK_OK, *allowed set, rule (rule_len bytes) "update on vspherevms/finalizers in API group
 *     infrastructure.cluster.x-k8s.io".
 *   - PK_OK, *allowed false, rule saying so, when discovery knows no resource of that kind in
 *     that group/version (the apiserver would refuse blockOwnerDeletion too).
 *   - PK_ERR_INVALID before any request when ns, api_version, kind or name cannot be a
 *     namespace, an API version, a kind or an object name (they come from a tenant's object
 *     and end up in a URL path or a review), or user_info has no username; err names the field
 *     and the value.
 *   - PK_ERR_TIMEOUT when the answer could not come within the deadline (the queue was full,
 *     the deadline passed, the rate limit would have held a request past it, a request timed
 *     out); err says which.
 *   - PK_ERR_API for any other failure of the discovery or review request: err says which
 *     and why.
 */
PK_MUST_CHECK int pk_permission_check(struct pk_permission *p, const json_t *user_info,
                                      const char *ns, const char *api_version, const char *kind,
                                      const char *name, bool *allowed, char *rule, size_t rule_len,
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
PK_MUST_CHECK int pk_permission_owner_target(const char *ns, const char *api_version,
                                             const char *kind, const char *name,
                                             struct pk_owner_target *t, struct pk_err *err);

#endif
