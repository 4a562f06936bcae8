/* cabundle.c - caBundle in admission webhook configurations. */
#include "cabundle.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "apierr.h"
#include "json.h"
#include "parse.h"

int pk_cabundle_parse(const char *s, struct pk_webhook_config *out, struct pk_err *err)
{
	const char *slash = strchr(s, '/');
	const char *name = slash != NULL ? slash + 1 : NULL;
	size_t kl = slash != NULL ? (size_t)(slash - s) : 0;
	char q[300];
	pk_text_quote(s, strlen(s), q, sizeof(q));
	if (slash == NULL || !((kl == 10 && strncmp(s, "validating", kl) == 0) ||
	                       (kl == 8 && strncmp(s, "mutating", kl) == 0)))
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "--webhook-configuration must be validating/NAME or mutating/NAME, "
		    "got \"%s\"",
		    q);
	struct pk_err e = {{0}};
	if (pk_parse_dns_name(name, true, &e) != PK_OK)
		return pk_err_set(err, PK_ERR_INVALID, "--webhook-configuration \"%s\": NAME %s", q,
		                  e.msg);
	out->mutating = kl == 8;
	out->name = name;
	return PK_OK;
}

const char *pk_cabundle_kind(const struct pk_webhook_config *w)
{
	return w->mutating ? PK_MUTATING_WEBHOOK_KIND : PK_VALIDATING_WEBHOOK_KIND;
}

static const char *resource_of(const struct pk_webhook_config *w)
{
	return w->mutating ? PK_MUTATING_WEBHOOK_RESOURCE : PK_VALIDATING_WEBHOOK_RESOURCE;
}

int pk_cabundle_get(struct pk_kube_client *c, const struct pk_webhook_config *w, json_t **out,
                    struct pk_err *err)
{
	char object[320];
	snprintf(object, sizeof(object), "%s %s", pk_cabundle_kind(w), w->name);
	struct pk_kube_ref r = {.group = PK_ADMISSIONREG_GROUP,
	                        .version = PK_ADMISSIONREG_VERSION,
	                        .resource = resource_of(w),
	                        .name = w->name};
	struct pk_kube_error e;
	*out = NULL;
	enum pk_kube_reason kr = pk_kube_client_get(c, &r, out, &e);
	if (kr == PK_KUBE_NOT_FOUND)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: does not exist (create it before its caBundle is set)",
		                  object);
	if (kr != PK_KUBE_OK)
		return pk_apierr(err, object, "get", resource_of(w), NULL, &e);
	return PK_OK;
}

/* Appends a new operation {op, path, value} to patch; false when out of memory. */
static bool op(json_t *patch, const char *o, const char *path, json_t *value)
{
	json_t *x = json_pack("{s:s, s:s, s:o}", "op", o, "path", path, "value", value);
	return x != NULL && json_array_append_new(patch, x) == 0;
}

json_t *pk_cabundle_patch(const json_t *cfg, const char *b64, size_t *changed, size_t *total)
{
	const json_t *hooks = json_object_get(cfg, "webhooks");
	*changed = 0;
	*total = json_is_array(hooks) ? json_array_size(hooks) : 0;
	json_t *patch = json_array();
	if (patch == NULL)
		goto nomem;
	for (size_t i = 0; i < *total; i++) {
		const json_t *h = json_array_get(hooks, i);
		const json_t *cc = json_object_get(h, "clientConfig");
		const char *have = pk_json_cstr_at(cc, "caBundle");
		if (have != NULL && strcmp(have, b64) == 0)
			continue;
		char path[96];
		snprintf(path, sizeof(path), "/webhooks/%zu/name", i);
		const char *name = pk_json_cstr_at(h, "name");
		if (!op(patch, "test", path, name != NULL ? json_string(name) : json_null()))
			goto nomem;
		if (json_is_object(cc)) {
			snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig/caBundle", i);
			if (!op(patch, "add", path, json_string(b64)))
				goto nomem;
		} else {
			snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig", i);
			if (!op(patch, "add", path, json_pack("{s:s}", "caBundle", b64)))
				goto nomem;
		}
		(*changed)++;
	}
	if (*changed == 0) {
		json_decref(patch);
		return NULL;
	}
	return patch;
nomem:
	json_decref(patch);
	*changed = SIZE_MAX;
	return NULL;
}

int pk_cabundle_apply(struct pk_kube_client *c, const struct pk_webhook_config *w,
                      const json_t *patch, bool dry_run, struct pk_err *err)
{
	char object[320];
	snprintf(object, sizeof(object), "%s %s%s", pk_cabundle_kind(w), w->name,
	         dry_run ? " (dry run)" : "");
	struct pk_kube_ref r = {.group = PK_ADMISSIONREG_GROUP,
	                        .version = PK_ADMISSIONREG_VERSION,
	                        .resource = resource_of(w),
	                        .name = w->name};
	struct pk_kube_write_opts o = {.field_manager = "poolkeeper-certs", .dry_run = dry_run};
	struct pk_kube_error e;
	json_t *res = NULL;
	enum pk_kube_reason kr =
	    pk_kube_client_patch(c, &r, PK_KUBE_PATCH_JSON, patch, &o, &res, &e);
	json_decref(res);
	if (kr == PK_KUBE_OK)
		return PK_OK;
	/* A failed "test" operation is 422 Invalid: the webhooks moved since they were read. */
	if (kr == PK_KUBE_INVALID || kr == PK_KUBE_CONFLICT) {
		pk_apierr(err, object, "patch", resource_of(w), NULL, &e);
		return PK_ERR_IN_USE;
	}
	return pk_apierr(err, object, "patch", resource_of(w), NULL, &e);
}
