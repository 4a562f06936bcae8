/* kube_discovery.c - the versions a group serves, and the one to use. */
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "kube_client_int.h"

enum pk_kube_reason pk_kube_client_group_versions(struct pk_kube_client *c, const char *group,
                                                  json_t **versions, struct pk_kube_error *e)
{
	char path[512] = "/api";
	*versions = NULL;
	json_t *doc = NULL;
	if (group != NULL && group[0] != '\0') {
		size_t o = 0;
		if (pk_kube_path_put_raw(path, sizeof(path), &o, "/apis") != PK_OK ||
		    pk_kube_path_put_segment(path, sizeof(path), &o, group) != PK_OK)
			return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0, "bad group name");
	}
	struct call k = {.method = "GET", .path = path};
	enum pk_kube_reason rc = pk_kube_client_call_json(c, &k, &doc, e);
	if (rc != PK_KUBE_OK)
		return rc;
	json_t *out = json_array();
	json_t *vs = json_object_get(doc, "versions");
	const char *pref =
	    json_string_value(json_object_get(json_object_get(doc, "preferredVersion"), "version"));
	if (out == NULL || !json_is_array(vs)) {
		json_decref(out);
		json_decref(doc);
		return pk_kube_error_set(e, PK_KUBE_BAD_RESPONSE, 0, "GET %s: no versions", path);
	}
	if (pref != NULL)
		json_array_append_new(out, json_string(pref));
	size_t i;
	json_t *v;
	json_array_foreach(vs, i, v)
	{
		/* /apis/<g> lists {groupVersion, version}; /api lists plain strings */
		const char *name =
		    json_is_string(v) ? json_string_value(v) : pk_json_cstr_at(v, "version");
		if (name != NULL && (pref == NULL || strcmp(name, pref) != 0))
			json_array_append_new(out, json_string(name));
	}
	json_decref(doc);
	*versions = out;
	return PK_KUBE_OK;
}

/* Whether the array of version names holds v. */
static bool names_version(const json_t *served, const char *v)
{
	size_t i;
	const json_t *s;
	json_array_foreach(served, i, s)
	{
		if (json_is_string(s) && strcmp(json_string_value(s), v) == 0)
			return true;
	}
	return false;
}

enum pk_kube_reason pk_kube_client_preferred_version(struct pk_kube_client *c, const char *group,
                                                     const char *const *versions, char *out,
                                                     size_t len, struct pk_kube_error *e)
{
	if (out != NULL && len > 0)
		out[0] = '\0';
	if (out == NULL || versions == NULL || versions[0] == NULL)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0,
		                         "preferred version: no versions or no output buffer");
	/* Checked up front, so that a short buffer fails on every cluster. */
	for (size_t i = 0; versions[i] != NULL; i++) {
		size_t n = strlen(versions[i]);
		if (n == 0)
			return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0,
			                         "preferred version: empty version");
		if (n >= len)
			return pk_kube_error_set(
			    e, PK_KUBE_BAD_REQUEST, 0,
			    "preferred version: \"%s\" does not fit in %zu bytes", versions[i],
			    len);
	}
	json_t *served = NULL;
	enum pk_kube_reason rc = pk_kube_client_group_versions(c, group, &served, e);
	if (rc != PK_KUBE_OK)
		return rc;
	for (size_t i = 0; versions[i] != NULL; i++) {
		if (names_version(served, versions[i])) {
			snprintf(out, len, "%s", versions[i]);
			break;
		}
	}
	json_decref(served);
	return PK_KUBE_OK;
}
