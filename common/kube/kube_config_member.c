/* kube_config_member.c - kubeconfig members read by type; see kube_config_member.h. */
#include "kube_config_member.h"

int pk_kube_config_member_str(const json_t *obj, const char *key, const char *where,
                              const char **out, struct pk_err *err)
{
	*out = NULL;
	json_t *v = json_object_get(obj, key);
	if (v == NULL || json_is_null(v))
		return PK_OK;
	if (!json_is_string(v))
		return pk_err_set(err, PK_ERR_INVALID, "%s: %s must be a string", where, key);
	*out = json_string_value(v);
	if ((*out)[0] == '\0')
		*out = NULL;
	return PK_OK;
}

int pk_kube_config_member_bool(const json_t *obj, const char *key, const char *where, bool *out,
                               struct pk_err *err)
{
	json_t *v = json_object_get(obj, key);
	*out = false;
	if (v == NULL || json_is_null(v))
		return PK_OK;
	if (!json_is_boolean(v))
		return pk_err_set(err, PK_ERR_INVALID, "%s: %s must be true or false", where, key);
	*out = json_is_true(v);
	return PK_OK;
}
