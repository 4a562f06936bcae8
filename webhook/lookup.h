/*
 * lookup.h - the webhook's API access: the admission lookups (other pools,
 * IPAddresses of a pool, one pool) answered by the Kubernetes API.
 *
 * Where the API is: --kubeconfig when given; else $KUBECONFIG when set; else
 * the in-cluster service account when KUBERNETES_SERVICE_HOST is set (a
 * pod); else there is no API access and pk_lookup_open returns PK_OK with
 * *out NULL: the webhook then answers the checks that need only the request
 * and says in a warning which ones it skipped.
 *
 * Reads are always fresh (no resourceVersion: a quorum read), since a
 * stale list could admit an overlapping pool. Threading: the lookup may be
 * used from every server thread at once (the client is thread-safe).
 */
#ifndef PK_LOOKUP_H
#define PK_LOOKUP_H

#include "admission.h"

struct pk_lookup;

/* Frees with pk_lookup_close. A kubeconfig that cannot be loaded is an error naming it. */
PK_MUST_CHECK int pk_lookup_open(const char *kubeconfig, struct pk_lookup **out,
                                 struct pk_err *err);
void pk_lookup_close(struct pk_lookup *l);

/* The callbacks for struct pk_admission_config (borrowed from l). */
const struct pk_admission_lookup *pk_lookup_admission(const struct pk_lookup *l);

/* "https://host:port" of the API server, for the start-up log. */
const char *pk_lookup_server(const struct pk_lookup *l);

#endif
