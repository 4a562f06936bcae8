/*
 * admission.h - poolkeeper's admission decisions: an admission.k8s.io/v1
 * AdmissionReview in, an AdmissionReview out. No I/O: checks that need
 * other objects (pool overlap, shrink and delete protection, an address
 * inside its pool) go through the caller's lookup callbacks, which the
 * webhook wires to the Kubernetes API and tests wire to fixtures.
 *
 * Thread-safe as long as the lookup callbacks are: a call keeps no state.
 */
#ifndef PK_ADMISSION_H
#define PK_ADMISSION_H

#include <jansson.h>

#include "pk.h"

/* Request bodies larger than this are refused (the server answers 413). */
#define PK_ADMISSION_MAX_BODY (3u * 1024u * 1024u)
/* JSON nested deeper than this is refused before jansson sees it. */
#define PK_ADMISSION_MAX_DEPTH 64

enum pk_enforcement {
	PK_ENFORCE_IGNORE = 0, /* no checks, no warnings */
	PK_ENFORCE_WARN,       /* violations become warnings; admitted */
	PK_ENFORCE_DENY,       /* violations deny */
};

/*
 * Objects the checks need from the cluster. Each returns PK_OK and a new
 * reference to a JSON array the caller (the admission module) releases,
 * or an error with err set (the request is then denied with that reason,
 * since a check that could not run must not pass silently).
 */
struct pk_admission_lookup {
	void *ctx;
	/* Pools of `kind` ("IPPool" or "GlobalIPPool"); ns NULL means every namespace. */
	int (*list_pools)(void *ctx, const char *kind, const char *ns, json_t **items,
	                  struct pk_err *err);
	/* IPAddress objects whose spec.poolRef names this pool (ns NULL for a GlobalIPPool: all).
	 */
	int (*list_pool_addresses)(void *ctx, const char *kind, const char *ns, const char *name,
	                           json_t **items, struct pk_err *err);
	/* One pool, or *obj = NULL when it does not exist. */
	int (*get_pool)(void *ctx, const char *kind, const char *ns, const char *name, json_t **obj,
	                struct pk_err *err);
	/* One IPAddressClaim, or *obj = NULL when it does not exist. */
	int (*get_claim)(void *ctx, const char *ns, const char *name, json_t **obj,
	                 struct pk_err *err);
};

struct pk_admission_config {
	enum pk_enforcement claims;               /* claims on poolkeeper pools (deny|warn) */
	enum pk_enforcement foreign_claims;       /* claims on other providers' pools */
	const struct pk_admission_lookup *lookup; /* NULL: no API access */
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

/* Parses a flag value "deny|warn|ignore"; PK_ERR_INVALID otherwise. */
PK_MUST_CHECK int pk_admission_parse_enforcement(const char *s, enum pk_enforcement *out);

#endif
