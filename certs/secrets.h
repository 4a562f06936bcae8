/*
 * secrets.h - the Secrets poolkeeper-certs keeps, through the project's
 * Kubernetes client: the serving Secret (type kubernetes.io/tls: tls.crt,
 * tls.key, ca.crt) that the webhook mounts, and the CA Secret beside it
 * (also kubernetes.io/tls: tls.crt and tls.key of the CA, ca.crt the bundle),
 * which the webhook never mounts.
 *
 * A Secret of any other type is never changed: reading one is an error
 * naming it. Nor is a kubernetes.io/tls Secret poolkeeper-certs did not
 * make: one that lacks the label app.kubernetes.io/managed-by=
 * poolkeeper-certs, which every Secret it creates carries. Writes keep the keys, labels and
 * annotations others put there. Updates are conditional on the resourceVersion read.
 *
 * No logging. JSON results are new references the caller json_decrefs;
 * strings through char ** are the caller's to free.
 */
#ifndef PK_CERTS_SECRETS_H
#define PK_CERTS_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "kube_client.h"
#include "pk.h"

#define PK_SECRET_TLS_TYPE "kubernetes.io/tls"
/* The value of PK_MANAGED_BY_LABEL on the Secrets poolkeeper-certs creates, and owns. */
#define PK_CERTS_MANAGED_BY "poolkeeper-certs"
/* Longest Secret name (a DNS subdomain, RFC 1123). */
#define PK_SECRET_NAME_MAX 253

/* One data key and its value (bytes, not base64). */
struct pk_secret_kv {
	const char *key;
	const char *value;
	size_t len;
};

/*
 * GET Secret ns/name into *out; a Secret that does not exist is PK_OK with
 * *out NULL. One of another type than kubernetes.io/tls, or without the
 * label app.kubernetes.io/managed-by=poolkeeper-certs, is PK_ERR_INVALID
 * (err names it, and its type or the label); other failures per apierr.h.
 */
PK_MUST_CHECK int pk_secrets_get(struct pk_kube_client *c, const char *ns, const char *name,
                                 json_t **out, struct pk_err *err);

/*
 * data[key] decoded from base64 into a new NUL-terminated buffer (*out,
 * *len); NULL when the Secret or the key is absent. `where` names it in an
 * error (a value that is not base64).
 */
PK_MUST_CHECK int pk_secrets_value(const json_t *secret, const char *key, const char *where,
                                   char **out, size_t *len, struct pk_err *err);

/*
 * The Secret to write: a copy of `existing` (NULL: a new kubernetes.io/tls
 * Secret ns/name, labelled app.kubernetes.io/managed-by=poolkeeper-certs)
 * with each kv set in data. NULL when out of memory.
 */
json_t *pk_secrets_build(const json_t *existing, const char *ns, const char *name,
                         const struct pk_secret_kv *kv, size_t n);

/*
 * Creates (create true) or updates Secret ns/name as obj; dry_run asks the
 * server to check everything (RBAC, admission, validation) and store
 * nothing. PK_ERR_IN_USE when another writer got there first (409
 * AlreadyExists or Conflict): read again and decide again.
 */
PK_MUST_CHECK int pk_secrets_write(struct pk_kube_client *c, const char *ns, const char *name,
                                   const json_t *obj, bool create, bool dry_run,
                                   struct pk_err *err);

#endif
