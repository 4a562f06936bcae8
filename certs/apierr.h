/*
 * apierr.h - one line for a failed API request that names the object, the
 * verb and the cause, in the words an operator acts on: "forbidden" says
 * which RBAC rule is missing, "unreachable" which server.
 *
 *   Secret e2e-x/webhook-tls: get: forbidden: the identity needs "get" on
 *   secrets in namespace e2e-x (RBAC): secrets "webhook-tls" is forbidden: ...
 */
#ifndef PK_CERTS_APIERR_H
#define PK_CERTS_APIERR_H

#include "kube.h"
#include "pk.h"

/*
 * object: "Secret ns/name", "ValidatingWebhookConfiguration name"; verb as
 * RBAC spells it ("get", "create", "update", "patch"); resource the plural
 * ("secrets"); ns NULL for cluster-scoped. Returns PK_ERR_INVALID.
 */
int pk_apierr(struct pk_err *err, const char *object, const char *verb, const char *resource,
              const char *ns, const struct pk_kube_error *e);

#endif
