/*
 * test_secrets.c - the Secrets through the client against a fake API on
 * 127.0.0.1: absent, of the wrong type (refused, naming the type), 403
 * (naming the permission), values decoded, objects built (type, labels,
 * other keys kept, base64), create/update, dry runs storing nothing, and
 * conflicts reported as "read again".
 */
#define _GNU_SOURCE /* strcasestr, in the fake server */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fake_api.h"
#include "json.h"
#include "secrets.h"

struct env {
	struct fake_api api;
	struct pk_kube_config *cfg;
	struct pk_kube_client *cli;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	if (e == NULL || fa_start(&e->api, &e->cfg, &e->cli) != 0)
		return -1;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	pk_kube_client_free(e->cli);
	pk_kube_config_free(e->cfg);
	fa_stop(&e->api);
	free(e);
	return 0;
}

/* Secret t/name, labelled as poolkeeper-certs labels its own. */
static json_t *put_secret(struct env *e, const char *name, const char *type, const char *key,
                          const char *b64)
{
	json_t *s = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:s}}", "apiVersion",
	                      PK_CORE_VERSION, "kind", PK_SECRET_KIND, "metadata", "name", name,
	                      "namespace", "t", "labels", "team", "a", PK_MANAGED_BY_LABEL,
	                      PK_CERTS_MANAGED_BY, "data", key, b64);
	if (type != NULL)
		json_object_set_new(s, "type", json_string(type));
	json_object_set_new(json_object_get(s, "metadata"), "managedFields",
	                    json_pack("[{s:s}]", "manager", "kubectl"));
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", FA_SECRETS, name);
	fa_put(&e->api, path, s);
	return s;
}

static void test_get(void **state)
{
	struct env *e = *state;
	struct pk_err err = {{0}};
	json_t *obj = (json_t *)1;
	/* Absent: fine, nothing. */
	assert_int_equal(pk_secrets_get(e->cli, "t", "webhook-tls", &obj, &err), PK_OK);
	assert_null(obj);

	/* The right type. */
	put_secret(e, "webhook-tls", PK_SECRET_TLS_TYPE, "tls.crt", "aGVsbG8=");
	assert_int_equal(pk_secrets_get(e->cli, "t", "webhook-tls", &obj, &err), PK_OK);
	assert_non_null(obj);
	char *v = NULL;
	size_t n = 0;
	assert_int_equal(pk_secrets_value(obj, "tls.crt", "w", &v, &n, &err), PK_OK);
	assert_int_equal(n, 5);
	assert_string_equal(v, "hello");
	free(v);
	assert_int_equal(pk_secrets_value(obj, "tls.key", "w", &v, &n, &err), PK_OK);
	assert_null(v);
	assert_int_equal(pk_secrets_value(NULL, "tls.key", "w", &v, &n, &err), PK_OK);
	assert_null(v);
	json_decref(obj);

	/* Another type: refused, named. No type at all counts as Opaque. */
	put_secret(e, "opaque", "Opaque", "x", "eA==");
	assert_int_equal(pk_secrets_get(e->cli, "t", "opaque", &obj, &err), PK_ERR_INVALID);
	assert_null(obj);
	assert_non_null(
	    strstr(err.msg, "Secret t/opaque: has type \"Opaque\", not kubernetes.io/tls"));
	put_secret(e, "untyped", NULL, "x", "eA==");
	assert_int_equal(pk_secrets_get(e->cli, "t", "untyped", &obj, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "\"Opaque\""));

	/* A value that is not base64 names where it is. */
	put_secret(e, "broken", PK_SECRET_TLS_TYPE, "tls.crt", "!!!");
	assert_int_equal(pk_secrets_get(e->cli, "t", "broken", &obj, &err), PK_OK);
	assert_int_equal(
	    pk_secrets_value(obj, "tls.crt", "Secret t/broken key tls.crt", &v, &n, &err),
	    PK_ERR_INVALID);
	assert_string_equal(err.msg, "Secret t/broken key tls.crt: not base64");
	json_decref(obj);

	/* 403 names the verb, the resource and the namespace. */
	fa_deny(&e->api, "GET", FA_SECRETS);
	assert_int_equal(pk_secrets_get(e->cli, "t", "webhook-tls", &obj, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "Secret t/webhook-tls: get: forbidden: the identity needs "
	                                "\"get\" on secrets in namespace t"));
	assert_non_null(strstr(err.msg, "system:serviceaccount:t:certs"));
}

/* A kubernetes.io/tls Secret of that name that is not poolkeeper-certs' own: refused, named. */
static void test_get_not_ours(void **state)
{
	struct env *e = *state;
	struct pk_err err = {{0}};
	json_t *obj = (json_t *)1;
	json_t *s =
	    json_deep_copy(put_secret(e, "webhook-tls", PK_SECRET_TLS_TYPE, "tls.crt", "eA=="));
	json_object_del(json_object_get(json_object_get(s, "metadata"), "labels"),
	                PK_MANAGED_BY_LABEL);
	fa_put(&e->api, FA_SECRETS "/webhook-tls", s);
	assert_int_equal(pk_secrets_get(e->cli, "t", "webhook-tls", &obj, &err), PK_ERR_INVALID);
	assert_null(obj);
	assert_non_null(strstr(err.msg, "Secret t/webhook-tls: a kubernetes.io/tls Secret "
	                                "poolkeeper-certs did not make: label "
	                                "app.kubernetes.io/managed-by is missing, not "
	                                "poolkeeper-certs"));
	assert_non_null(strstr(err.msg, "label it app.kubernetes.io/managed-by=poolkeeper-certs"));

	/* another manager's (cert-manager's, Helm's) is not ours either */
	s = json_deep_copy(s);
	json_object_set_new(json_object_get(json_object_get(s, "metadata"), "labels"),
	                    PK_MANAGED_BY_LABEL, json_string("Helm"));
	fa_put(&e->api, FA_SECRETS "/webhook-tls", s);
	assert_int_equal(pk_secrets_get(e->cli, "t", "webhook-tls", &obj, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "label app.kubernetes.io/managed-by is \"Helm\", not "
	                                "poolkeeper-certs"));

	/* no labels at all */
	s = json_deep_copy(s);
	json_object_del(json_object_get(s, "metadata"), "labels");
	fa_put(&e->api, FA_SECRETS "/webhook-tls", s);
	assert_int_equal(pk_secrets_get(e->cli, "t", "webhook-tls", &obj, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "is missing"));
}

static void test_build(void **state)
{
	(void)state;
	struct pk_secret_kv kv[] = {{"tls.crt", "CRT", 3}, {"ca.crt", "", 0}};
	json_t *o = pk_secrets_build(NULL, "t", "s", kv, 2);
	assert_non_null(o);
	assert_string_equal(pk_json_cstr_at(o, "type"), PK_SECRET_TLS_TYPE);
	assert_string_equal(pk_json_meta_cstr(o, "name"), "s");
	assert_string_equal(pk_json_meta_cstr(o, "namespace"), "t");
	json_t *labels = json_object_get(json_object_get(o, "metadata"), "labels");
	assert_string_equal(pk_json_cstr_at(labels, "app.kubernetes.io/managed-by"),
	                    "poolkeeper-certs");
	json_t *data = json_object_get(o, "data");
	assert_string_equal(pk_json_cstr_at(data, "tls.crt"), "Q1JU");
	assert_string_equal(pk_json_cstr_at(data, "ca.crt"), "");
	json_decref(o);

	/* From an existing one: other keys, labels and the type stay; managedFields goes. */
	json_t *old =
	    json_pack("{s:s, s:{s:s, s:s, s:{s:s}, s:[]}, s:{s:s, s:s}}", "type",
	              PK_SECRET_TLS_TYPE, "metadata", "name", "s", "resourceVersion", "7", "labels",
	              "team", "a", "managedFields", "data", "extra", "eA==", "tls.crt", "b2xk");
	o = pk_secrets_build(old, "t", "s", kv, 1);
	data = json_object_get(o, "data");
	assert_string_equal(pk_json_cstr_at(data, "extra"), "eA==");
	assert_string_equal(pk_json_cstr_at(data, "tls.crt"), "Q1JU");
	assert_string_equal(pk_json_meta_cstr(o, "resourceVersion"), "7");
	assert_null(json_object_get(json_object_get(o, "metadata"), "managedFields"));
	assert_string_equal(
	    pk_json_cstr_at(json_object_get(json_object_get(o, "metadata"), "labels"), "team"),
	    "a");
	/* The original is untouched. */
	assert_string_equal(pk_json_cstr_at(json_object_get(old, "data"), "tls.crt"), "b2xk");
	json_decref(o);
	json_decref(old);
}

static void test_write(void **state)
{
	struct env *e = *state;
	struct pk_err err = {{0}};
	struct pk_secret_kv kv[] = {{"tls.crt", "CRT", 3}};
	json_t *o = pk_secrets_build(NULL, "t", "w", kv, 1);
	/* A dry run stores nothing. */
	assert_int_equal(pk_secrets_write(e->cli, "t", "w", o, true, true, &err), PK_OK);
	assert_int_equal(fa_writes(&e->api), 0);
	json_t *got = fa_get(&e->api, FA_SECRETS "/w");
	assert_null(got);
	/* Then for real. */
	assert_int_equal(pk_secrets_write(e->cli, "t", "w", o, true, false, &err), PK_OK);
	assert_int_equal(fa_writes(&e->api), 1);
	/* Creating it again: someone got there first, read again. */
	assert_int_equal(pk_secrets_write(e->cli, "t", "w", o, true, false, &err), PK_ERR_IN_USE);
	assert_non_null(strstr(err.msg, "Secret t/w: create: "));
	json_decref(o);

	/* Update from what was read. */
	json_t *cur = NULL;
	assert_int_equal(pk_secrets_get(e->cli, "t", "w", &cur, &err), PK_OK);
	struct pk_secret_kv kv2[] = {{"tls.crt", "NEW", 3}};
	o = pk_secrets_build(cur, "t", "w", kv2, 1);
	assert_int_equal(pk_secrets_write(e->cli, "t", "w", o, false, false, &err), PK_OK);
	assert_int_equal(fa_writes(&e->api), 2);
	got = fa_get(&e->api, FA_SECRETS "/w");
	assert_string_equal(pk_json_cstr_at(json_object_get(got, "data"), "tls.crt"), "TkVX");
	json_decref(got);
	/* The same stale object again: a conflict. */
	assert_int_equal(pk_secrets_write(e->cli, "t", "w", o, false, false, &err), PK_ERR_IN_USE);
	assert_non_null(strstr(err.msg, "update"));
	json_decref(o);
	json_decref(cur);

	/* Forbidden create names the permission. */
	fa_deny(&e->api, "POST", FA_SECRETS);
	o = pk_secrets_build(NULL, "t", "x", kv, 1);
	assert_int_equal(pk_secrets_write(e->cli, "t", "x", o, true, true, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "Secret t/x (dry run): create: forbidden: the identity "
	                                "needs \"create\" on secrets in namespace t"));
	json_decref(o);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(test_get),
	    T(test_get_not_ours),
	    cmocka_unit_test(test_build),
	    T(test_write),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
