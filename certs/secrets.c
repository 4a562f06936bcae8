/* secrets.c - the serving and CA Secrets: read, check, build, write. */
#include "secrets.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "apierr.h"
#include "base64.h"
#include "json.h"

static struct pk_kube_ref secret_ref(const char *ns, const char *name)
{
	return (struct pk_kube_ref){.group = NULL,
	                            .version = PK_CORE_VERSION,
	                            .resource = PK_SECRET_RESOURCE,
	                            .namespace = ns,
	                            .name = name};
}

int pk_secrets_get(struct pk_kube_client *c, const char *ns, const char *name, json_t **out,
                   struct pk_err *err)
{
	*out = NULL;
	char object[320];
	snprintf(object, sizeof(object), PK_SECRET_KIND " %s/%s", ns, name);
	struct pk_kube_ref r = secret_ref(ns, name);
	struct pk_kube_error e;
	json_t *obj = NULL;
	enum pk_kube_reason kr = pk_kube_client_get(c, &r, &obj, &e);
	if (kr == PK_KUBE_NOT_FOUND)
		return PK_OK;
	if (kr != PK_KUBE_OK)
		return pk_apierr(err, object, "get", PK_SECRET_RESOURCE, ns, &e);
	/* The API server fills in Opaque when a Secret is created without a type. */
	const char *type = pk_json_cstr_at(obj, "type");
	if (type == NULL)
		type = "Opaque";
	if (strcmp(type, PK_SECRET_TLS_TYPE) != 0) {
		char q[300];
		pk_text_quote(type, strlen(type), q, sizeof(q));
		json_decref(obj);
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: has type \"%s\", not %s; it is left as it is (delete it or "
		                  "choose another name)",
		                  object, q, PK_SECRET_TLS_TYPE);
	}
	/* Someone else's certificate under this name (a provided one, cert-manager's) is
	 * not ours to overwrite. */
	const char *by = pk_json_cstr_path(obj, "metadata", "labels", PK_MANAGED_BY_LABEL);
	if (by == NULL || strcmp(by, PK_CERTS_MANAGED_BY) != 0) {
		char q[300] = "";
		if (by != NULL)
			pk_text_quote(by, strlen(by), q, sizeof(q));
		json_decref(obj);
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "%s: a " PK_SECRET_TLS_TYPE " Secret poolkeeper-certs did not make: "
		    "label " PK_MANAGED_BY_LABEL " is %s%s%s, not " PK_CERTS_MANAGED_BY
		    "; it is left as it is (delete it, choose another name, or label "
		    "it " PK_MANAGED_BY_LABEL "=" PK_CERTS_MANAGED_BY " to hand it over)",
		    object, by != NULL ? "\"" : "", by != NULL ? q : "missing",
		    by != NULL ? "\"" : "");
	}
	*out = obj;
	return PK_OK;
}

int pk_secrets_value(const json_t *secret, const char *key, const char *where, char **out,
                     size_t *len, struct pk_err *err)
{
	*out = NULL;
	*len = 0;
	const json_t *v = pk_json_path(secret, "data", key);
	if (v == NULL || json_is_null(v))
		return PK_OK;
	const char *s = json_string_value(v);
	if (s == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "%s: not a string", where);
	unsigned char *d = NULL;
	size_t n = 0;
	if (pk_base64_decode(s, json_string_length(v), &d, &n) != PK_OK)
		return pk_err_set(err, PK_ERR_INVALID, "%s: not base64", where);
	*out = (char *)d;
	*len = n;
	return PK_OK;
}

/* obj[key] as an object, created when missing. Borrowed. */
static json_t *child(json_t *obj, const char *key)
{
	json_t *c = json_object_get(obj, key);
	if (json_is_object(c))
		return c;
	c = json_object();
	if (c == NULL || json_object_set_new(obj, key, c) != 0)
		return NULL;
	return c;
}

json_t *pk_secrets_build(const json_t *existing, const char *ns, const char *name,
                         const struct pk_secret_kv *kv, size_t n)
{
	json_t *obj = NULL;
	if (existing != NULL) {
		obj = json_deep_copy(existing);
		json_t *meta = json_object_get(obj, "metadata");
		/* The server keeps its field ownership records when an update leaves them out. */
		json_object_del(meta, "managedFields");
	} else {
		obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:s}", "apiVersion",
		                PK_CORE_VERSION, "kind", PK_SECRET_KIND, "metadata", "name", name,
		                "namespace", ns, "labels", PK_MANAGED_BY_LABEL, PK_CERTS_MANAGED_BY,
		                PK_PROVIDER_LABEL, "ipam-poolkeeper", "type", PK_SECRET_TLS_TYPE);
	}
	json_t *data = obj != NULL ? child(obj, "data") : NULL;
	if (data == NULL)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		char *b64 = pk_base64_encode(kv[i].value, kv[i].len);
		if (b64 == NULL || json_object_set_new(data, kv[i].key, json_string(b64)) != 0) {
			free(b64);
			goto fail;
		}
		free(b64);
	}
	return obj;
fail:
	json_decref(obj);
	return NULL;
}

int pk_secrets_write(struct pk_kube_client *c, const char *ns, const char *name, const json_t *obj,
                     bool create, bool dry_run, struct pk_err *err)
{
	char object[320];
	snprintf(object, sizeof(object), PK_SECRET_KIND " %s/%s%s", ns, name,
	         dry_run ? " (dry run)" : "");
	struct pk_kube_ref r = secret_ref(ns, create ? NULL : name);
	struct pk_kube_write_opts w = {.field_manager = "poolkeeper-certs", .dry_run = dry_run};
	struct pk_kube_error e;
	json_t *res = NULL;
	enum pk_kube_reason kr = create ? pk_kube_client_create(c, &r, obj, &w, &res, &e)
	                                : pk_kube_client_update(c, &r, obj, &w, &res, &e);
	json_decref(res);
	if (kr == PK_KUBE_OK)
		return PK_OK;
	if (kr == PK_KUBE_ALREADY_EXISTS || kr == PK_KUBE_CONFLICT) {
		pk_apierr(err, object, create ? "create" : "update", PK_SECRET_RESOURCE, ns, &e);
		return PK_ERR_IN_USE;
	}
	return pk_apierr(err, object, create ? "create" : "update", PK_SECRET_RESOURCE, ns, &e);
}
