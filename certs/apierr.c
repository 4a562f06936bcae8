/* apierr.c - API failures as one line an operator can act on. */
#include "apierr.h"

#include <stdio.h>

int pk_apierr(struct pk_err *err, const char *object, const char *verb, const char *resource,
              const char *ns, const struct pk_kube_error *e)
{
	char scope[128];
	if (ns != NULL)
		snprintf(scope, sizeof(scope), " in namespace %.64s", ns);
	else
		snprintf(scope, sizeof(scope), " (cluster-scoped)");
	switch (e->reason) {
	case PK_KUBE_FORBIDDEN:
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "%s: %s: forbidden: the identity needs \"%s\" on %s%s (RBAC, or an "
		    "admission policy refused it): %.300s",
		    object, verb, verb, resource, scope, e->message);
	case PK_KUBE_UNAUTHORIZED:
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: %s: unauthorized: the API server did not accept the "
		                  "credentials: %.300s",
		                  object, verb, e->message);
	case PK_KUBE_CONNECTION:
		return pk_err_set(err, PK_ERR_INVALID, "%s: %s: API server unreachable: %.300s",
		                  object, verb, e->message);
	case PK_KUBE_TIMEOUT:
		return pk_err_set(err, PK_ERR_INVALID, "%s: %s: timed out: %.300s", object, verb,
		                  e->message);
	default:
		return pk_err_set(err, PK_ERR_INVALID, "%s: %s: %s (HTTP %ld): %.300s", object,
		                  verb, pk_kube_reason_name(e->reason), e->code, e->message);
	}
}
