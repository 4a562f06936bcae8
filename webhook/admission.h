/*
 * admission.h - poolkeeper's admission decisions: an admission.k8s.io/v1
 * AdmissionReview in, an AdmissionReview out. The rules are common/ipam's
 * (rules.h, pool_lookup.h); this module reads the review's envelope, turns
 * mutations into JSON patches and violations into allowed, denied and
 * warnings. No I/O: checks that need other objects (pool overlap, shrink
 * and delete protection, an address inside its pool) go through the
 * caller's lookup callbacks, which the webhook wires to the Kubernetes API
 * and tests wire to fixtures.
 *
 * Thread-safe as long as the lookup callbacks are: a call keeps no state.
 */
#ifndef PK_ADMISSION_H
#define PK_ADMISSION_H

#include <jansson.h>

#include "pk.h"
#include "pool_lookup.h"
#include "rules.h"

/* Request bodies larger than this are refused (the server answers 413). */
#define PK_ADMISSION_MAX_BODY (3u * 1024u * 1024u)
/* JSON nested deeper than this is refused before jansson sees it. */
#define PK_ADMISSION_MAX_DEPTH 64

/*
 * Objects the checks need from the cluster. Each returns PK_OK and a new
 * reference to a JSON array the caller (the admission module) releases,
 * or an error with err set (the request is then denied with that reason,
 * since a check that could not run must not pass silently). The three pool
 * reads are handed to the rules of pool_lookup.h as a struct pk_pool_lookup.
 */
struct pk_admission_lookup {
	void *ctx;
	/* The pool reads, as pool_lookup.h describes them. */
	pk_list_pools_fn *list_pools;
	pk_list_pool_addresses_fn *list_pool_addresses;
	pk_get_pool_fn *get_pool;
	/* One IPAddressClaim, or *obj = NULL when it does not exist. */
	int (*get_claim)(void *ctx, const char *ns, const char *name, json_t **obj,
	                 struct pk_err *err);
	/*
	 * Whether the requesting user (the AdmissionReview's request.userInfo
	 * object) may `update` the finalizers subresource of the owner
	 * (apiVersion, kind, name) in namespace ns: what the apiserver requires
	 * before it accepts blockOwnerDeletion: true. On PK_OK *allowed is set
	 * and `rule` holds, for messages, the rule in words: "update on
	 * vspherevms/finalizers in API group infrastructure.cluster.x-k8s.io"
	 * (or, when the kind has no resource, why). PK_ERR_TIMEOUT: no answer
	 * within the review's deadline. NULL means "cannot ask". Each but
	 * allowed: repair sets controller only, with a warning saying why.
	 */
	int (*may_block_owner_deletion)(void *ctx, const json_t *user_info, const char *ns,
	                                const char *api_version, const char *kind, const char *name,
	                                bool *allowed, char *rule, size_t rule_len,
	                                struct pk_err *err);
};

struct pk_admission_config {
	enum pk_enforcement claims;         /* claims on poolkeeper pools (repair|deny|warn) */
	enum pk_enforcement foreign_claims; /* claims on other providers' pools */
	const struct pk_admission_lookup *lookup; /* NULL: no API access */
	/*
	 * Called once per repair made by the mutating endpoint: owner_kind as
	 * the reference says it (untrusted text), what is "controller",
	 * "blockOwnerDeletion", "clusterName", "skipped:permission" (may not set
	 * it, or could not ask) or "skipped:timeout" (no answer in time). NULL: not
	 * counted.
	 */
	void (*count_repair)(void *ctx, const char *owner_kind, const char *what);
	void *count_ctx;
};

enum pk_admission_endpoint {
	PK_ADMISSION_VALIDATE = 1,
	PK_ADMISSION_MUTATE = 2,
};

/*
 * Decides one request. On success (*http_status 200) *response is the
 * AdmissionReview to send. For a body that is not a usable AdmissionReview
 * *http_status is 400 (or 413 for size) and *response is {"error": ...}
 * naming what is wrong. The caller frees *response with json_decref.
 */
void pk_admission_review(const struct pk_admission_config *cfg, enum pk_admission_endpoint endpoint,
                         const char *body, size_t len, int *http_status, json_t **response);

#endif
