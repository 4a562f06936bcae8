/*
 * cabundle.h - the caBundle of admission webhook configurations
 * (admissionregistration.k8s.io/v1): which configurations, reading them,
 * and the JSON patch (RFC 6902) that sets clientConfig.caBundle in every
 * webhook that does not hold the bundle yet.
 *
 * The patch tests each webhook's name at its index before it writes, so a
 * configuration whose list of webhooks changed since it was read is not
 * patched at the wrong place: the server refuses it and the caller reads
 * again. Needs "get" and "patch" on the configuration.
 *
 * No logging. JSON results are new references the caller json_decrefs.
 */
#ifndef PK_CERTS_CABUNDLE_H
#define PK_CERTS_CABUNDLE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "kube_client.h"
#include "pk.h"

/* At most this many --webhook-configuration flags. */
#define PK_CABUNDLE_MAX_CONFIGS 16

struct pk_webhook_config {
	bool mutating;
	const char *name; /* borrowed */
};

/* "validating/NAME" or "mutating/NAME" (NAME a DNS subdomain); err names the value. */
PK_MUST_CHECK int pk_cabundle_parse(const char *s, struct pk_webhook_config *out,
                                    struct pk_err *err);

/* "ValidatingWebhookConfiguration" or "MutatingWebhookConfiguration". */
const char *pk_cabundle_kind(const struct pk_webhook_config *w);

/* GET the configuration; one that does not exist is an error naming it. */
PK_MUST_CHECK int pk_cabundle_get(struct pk_kube_client *c, const struct pk_webhook_config *w,
                                  json_t **out, struct pk_err *err);

/*
 * The JSON patch that sets every webhook's clientConfig.caBundle to b64
 * (base64 of the PEM bundle), or NULL when every one already holds it (or
 * on allocation failure: *changed is then SIZE_MAX). *changed and *total
 * count the webhooks to patch and all of them.
 */
json_t *pk_cabundle_patch(const json_t *cfg, const char *b64, size_t *changed, size_t *total);

/*
 * Sends the patch; dry_run has the server check it and store nothing.
 * PK_ERR_IN_USE when the configuration changed since it was read (a test
 * operation failed, or a conflict): read again.
 */
PK_MUST_CHECK int pk_cabundle_apply(struct pk_kube_client *c, const struct pk_webhook_config *w,
                                    const json_t *patch, bool dry_run, struct pk_err *err);

#endif
