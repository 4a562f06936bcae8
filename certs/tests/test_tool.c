/*
 * test_tool.c - whole runs of poolkeeper-certs against a fake API and in a
 * temporary folder: first run (two Secrets, chain verified with
 * X509_verify_cert, caBundle in every webhook), second run writing nothing
 * (resourceVersions unchanged), re-issue near expiry, CA rotation with both
 * CAs in the bundle, and failures that leave nothing half done: a Secret of
 * the wrong type, 403 on a read, on a write and on the caBundle patch
 * (refused by the dry run before any Secret is written), a missing
 * configuration, an unreachable API, stored material that is not ours;
 * conflicts answered by reading again.
 */
#define _GNU_SOURCE /* strcasestr, in the fake server */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "base64.h"
#include "fake_api.h"
#include "json.h"
#include "log.h"
#include "outdir.h"
#include "secrets.h"
#include "tempdir.h"
#include "tool.h"
#include "verify_pem.h"

#define NOW   ((time_t)1767225600) /* 2026-01-01T00:00:00Z */
#define DAY_S ((time_t)86400)

struct env {
	struct fake_api api;
	struct pk_kube_config *cfg;
	struct pk_kube_client *cli;
	struct pk_san names;
	struct pk_webhook_config configs[2];
	struct pk_tool_opts o;
	char dir[256];
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct pk_err err = {{0}};
	if (e == NULL || fa_start(&e->api, &e->cfg, &e->cli) != 0)
		return -1;
	pk_san_init(&e->names);
	if (pk_san_add_service(&e->names, "pk-webhook", "t", "cluster.local", &err) != PK_OK)
		return -1;
	fa_put_config(&e->api, false, "pk-validating", 3);
	fa_put_config(&e->api, true, "pk-mutating", 2);
	e->configs[0] = (struct pk_webhook_config){false, "pk-validating"};
	e->configs[1] = (struct pk_webhook_config){true, "pk-mutating"};
	e->o = (struct pk_tool_opts){
	    .namespace = "t",
	    .secret = "webhook-tls",
	    .configs = e->configs,
	    .nconfigs = 2,
	    .policy = {.names = &e->names,
	               .key_type = PK_PKI_ECDSA_P256,
	               .validity_days = 365,
	               .ca_validity_days = 3650,
	               .renew_before_days = 30,
	               .ca_renew_before_days = 90},
	    .client = e->cli,
	    .now = NOW,
	};
	if (pk_test_tempdir_make(e->dir, sizeof(e->dir), "pk-tool") != 0)
		return -1;
	pk_log_set_level(PK_LOG_WARN);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	int rc = pk_test_tempdir_remove(e->dir);
	pk_kube_client_free(e->cli);
	pk_kube_config_free(e->cfg);
	fa_stop(&e->api);
	pk_san_free(&e->names);
	free(e);
	return rc == 0 ? 0 : -1;
}

static void run_ok(struct env *e, struct pk_tool_outcome *out)
{
	struct pk_err err = {{0}};
	if (pk_tool_run(&e->o, out, &err) != PK_OK)
		fail_msg("run: %s", err.msg);
}

static const char *run_fails(struct env *e)
{
	static struct pk_err err;
	struct pk_tool_outcome out;
	memset(&err, 0, sizeof(err));
	if (pk_tool_run(&e->o, &out, &err) != PK_ERR_INVALID)
		fail_msg("run did not fail");
	return err.msg;
}

/* A value of a stored Secret, decoded (the caller frees). */
static char *secret_value(struct env *e, const char *name, const char *key, size_t *len)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", FA_SECRETS, name);
	json_t *s = fa_get(&e->api, path);
	char *v = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_secrets_value(s, key, "test", &v, len, &err), PK_OK);
	json_decref(s);
	return v;
}

static char *rv_of(struct env *e, const char *path)
{
	json_t *o = fa_get(&e->api, path);
	const char *rv = pk_json_meta_cstr(o, "resourceVersion");
	char *copy = rv ? strdup(rv) : NULL;
	json_decref(o);
	return copy;
}

/* Every webhook of a configuration holds base64(bundle). */
static void assert_bundle_in(struct env *e, const char *path, const char *bundle, size_t len)
{
	json_t *cfg = fa_get(&e->api, path);
	char *b64 = pk_base64_encode(bundle, len);
	size_t i;
	json_t *h;
	json_array_foreach(json_object_get(cfg, "webhooks"), i, h)
	{
		const char *have = pk_json_cstr_at(json_object_get(h, "clientConfig"), "caBundle");
		if (have == NULL || strcmp(have, b64) != 0)
			fail_msg("%s webhook %zu: caBundle not the bundle", path, i);
	}
	free(b64);
	json_decref(cfg);
}

static void test_secrets_first_and_second_run(void **state)
{
	struct env *e = *state;
	struct pk_tool_outcome out;
	run_ok(e, &out);
	assert_true(out.new_ca);
	assert_true(out.new_serving);
	assert_int_equal(out.secrets_written, 2);
	assert_int_equal(out.configs_patched, 2);
	assert_int_equal(out.webhooks_patched, 5);
	assert_int_equal(fa_writes(&e->api), 4);

	size_t crt_l, key_l, ca_l, cacrt_l, cakey_l, cabundle_l;
	char *crt = secret_value(e, "webhook-tls", "tls.crt", &crt_l);
	char *key = secret_value(e, "webhook-tls", "tls.key", &key_l);
	char *ca = secret_value(e, "webhook-tls", "ca.crt", &ca_l);
	char *cacrt = secret_value(e, "webhook-tls-ca", "tls.crt", &cacrt_l);
	char *cakey = secret_value(e, "webhook-tls-ca", "tls.key", &cakey_l);
	char *cabundle = secret_value(e, "webhook-tls-ca", "ca.crt", &cabundle_l);
	assert_non_null(crt);
	assert_non_null(key);
	assert_non_null(cakey);
	/* The serving Secret carries the bundle, never the CA's key. */
	assert_int_equal(ca_l, cabundle_l);
	assert_memory_equal(ca, cabundle, ca_l);
	assert_int_equal(cacrt_l, ca_l);
	assert_true(key_l != cakey_l || memcmp(key, cakey, key_l) != 0);
	json_t *tls = fa_get(&e->api, FA_SECRETS "/webhook-tls");
	assert_string_equal(pk_json_cstr_at(tls, "type"), "kubernetes.io/tls");
	assert_int_equal(json_object_size(json_object_get(tls, "data")), 3);
	json_decref(tls);
	assert_int_equal(verify_pem(crt, crt_l, ca, ca_l, NOW), X509_V_OK);
	assert_bundle_in(e, FA_VWC "/pk-validating", ca, ca_l);
	assert_bundle_in(e, FA_MWC "/pk-mutating", ca, ca_l);

	/* Second run: nothing written, not even a dry run. */
	char *rv1 = rv_of(e, FA_SECRETS "/webhook-tls");
	char *rv2 = rv_of(e, FA_VWC "/pk-validating");
	unsigned dry = e->api.dry_writes;
	e->o.now = NOW + DAY_S;
	run_ok(e, &out);
	assert_false(out.new_ca);
	assert_false(out.new_serving);
	assert_int_equal(out.secrets_written + out.configs_patched, 0);
	assert_int_equal(fa_writes(&e->api), 4);
	assert_int_equal(e->api.dry_writes, dry);
	char *rv1b = rv_of(e, FA_SECRETS "/webhook-tls");
	char *rv2b = rv_of(e, FA_VWC "/pk-validating");
	assert_string_equal(rv1, rv1b);
	assert_string_equal(rv2, rv2b);

	/* A configuration reset by someone (helm upgrade) gets its bundle back, alone. */
	fa_put_config(&e->api, true, "pk-mutating", 2);
	run_ok(e, &out);
	assert_int_equal(out.secrets_written, 0);
	assert_int_equal(out.configs_patched, 1);
	assert_bundle_in(e, FA_MWC "/pk-mutating", ca, ca_l);

	free(rv1);
	free(rv2);
	free(rv1b);
	free(rv2b);
	free(crt);
	free(key);
	free(ca);
	free(cacrt);
	free(cakey);
	free(cabundle);
}

static void test_secrets_near_expiry_and_rotation(void **state)
{
	struct env *e = *state;
	struct pk_tool_outcome out;
	run_ok(e, &out);
	size_t ca0_l;
	char *ca0 = secret_value(e, "webhook-tls", "ca.crt", &ca0_l);

	/* Near expiry: a new pair under the same CA; the configurations already trust it. */
	e->o.now = NOW + 340 * DAY_S;
	unsigned w = fa_writes(&e->api);
	run_ok(e, &out);
	assert_false(out.new_ca);
	assert_true(out.new_serving);
	assert_int_equal(out.secrets_written, 1);
	assert_int_equal(out.configs_patched, 0);
	assert_int_equal(fa_writes(&e->api), w + 1);
	size_t crt_l, ca_l;
	char *crt = secret_value(e, "webhook-tls", "tls.crt", &crt_l);
	char *ca = secret_value(e, "webhook-tls", "ca.crt", &ca_l);
	assert_int_equal(ca_l, ca0_l);
	assert_memory_equal(ca, ca0, ca_l);
	assert_int_equal(verify_pem(crt, crt_l, ca0, ca0_l, e->o.now), X509_V_OK);
	free(crt);
	free(ca);

	/* The CA's turn: a new CA, the bundle holds both, every configuration gets it. */
	e->o.now = NOW + 3570 * DAY_S;
	run_ok(e, &out);
	assert_true(out.new_ca);
	assert_true(out.new_serving);
	assert_int_equal(out.secrets_written, 2);
	assert_int_equal(out.configs_patched, 2);
	crt = secret_value(e, "webhook-tls", "tls.crt", &crt_l);
	ca = secret_value(e, "webhook-tls", "ca.crt", &ca_l);
	STACK_OF(X509) *bundle = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_pki_parse_certs(ca, ca_l, &bundle, &err), PK_OK);
	assert_int_equal(sk_X509_num(bundle), 2);
	sk_X509_pop_free(bundle, X509_free);
	assert_non_null(memmem(ca, ca_l, ca0, ca0_l));
	assert_int_equal(verify_pem(crt, crt_l, ca, ca_l, e->o.now), X509_V_OK);
	assert_bundle_in(e, FA_VWC "/pk-validating", ca, ca_l);
	assert_bundle_in(e, FA_MWC "/pk-mutating", ca, ca_l);
	free(crt);
	free(ca);
	free(ca0);
}

static void test_wrong_type_refused(void **state)
{
	struct env *e = *state;
	json_t *s =
	    json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:{s:s}}", "apiVersion", PK_CORE_VERSION,
	              "kind", PK_SECRET_KIND, "metadata", "name", "webhook-tls", "namespace", "t",
	              "type", "Opaque", "data", "password", "aHVudGVyMg==");
	fa_put(&e->api, FA_SECRETS "/webhook-tls", s);
	char *rv = rv_of(e, FA_SECRETS "/webhook-tls");
	const char *msg = run_fails(e);
	assert_non_null(
	    strstr(msg, "Secret t/webhook-tls: has type \"Opaque\", not kubernetes.io/tls"));
	assert_int_equal(fa_writes(&e->api), 0);
	assert_int_equal(e->api.dry_writes, 0);
	char *rv2 = rv_of(e, FA_SECRETS "/webhook-tls");
	assert_string_equal(rv, rv2);
	/* Nothing else was created either. */
	json_t *ca = fa_get(&e->api, FA_SECRETS "/webhook-tls-ca");
	assert_null(ca);
	free(rv);
	free(rv2);
}

/* A kubernetes.io/tls Secret of its name that poolkeeper-certs did not make is not overwritten. */
static void test_foreign_tls_refused(void **state)
{
	struct env *e = *state;
	json_t *s =
	    json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:s, s:{s:s, s:s}}", "apiVersion",
	              PK_CORE_VERSION, "kind", PK_SECRET_KIND, "metadata", "name", "webhook-tls",
	              "namespace", "t", "labels", PK_MANAGED_BY_LABEL, "cert-manager", "type",
	              PK_SECRET_TLS_TYPE, "data", "tls.crt", "eA==", "tls.key", "eA==");
	fa_put(&e->api, FA_SECRETS "/webhook-tls", s);
	char *rv = rv_of(e, FA_SECRETS "/webhook-tls");
	const char *msg = run_fails(e);
	assert_non_null(strstr(msg, "Secret t/webhook-tls: a kubernetes.io/tls Secret "
	                            "poolkeeper-certs did not make: label "
	                            "app.kubernetes.io/managed-by is \"cert-manager\""));
	assert_int_equal(fa_writes(&e->api), 0);
	assert_int_equal(e->api.dry_writes, 0);
	char *rv2 = rv_of(e, FA_SECRETS "/webhook-tls");
	assert_string_equal(rv, rv2);
	assert_null(fa_get(&e->api, FA_SECRETS "/webhook-tls-ca"));
	free(rv);
	free(rv2);
}

static void test_forbidden(void **state)
{
	struct env *e = *state;
	/* No read permission on Secrets. */
	fa_deny(&e->api, "GET", FA_SECRETS);
	const char *msg = run_fails(e);
	assert_non_null(strstr(msg, "Secret t/webhook-tls-ca: get: forbidden: the identity needs "
	                            "\"get\" on secrets in namespace t"));
	assert_int_equal(fa_writes(&e->api), 0);

	/* No patch permission on a configuration: refused by the dry run, before any Secret. */
	fa_deny(&e->api, "PATCH", FA_MWC "/pk-mutating");
	msg = run_fails(e);
	assert_non_null(strstr(msg, "MutatingWebhookConfiguration pk-mutating (dry run): patch: "
	                            "forbidden: the identity needs \"patch\" on "
	                            "mutatingwebhookconfigurations"));
	assert_int_equal(fa_writes(&e->api), 0);
	assert_null(fa_get(&e->api, FA_SECRETS "/webhook-tls"));

	/* Given the permission, the same run completes. */
	fa_deny(&e->api, NULL, NULL);
	struct pk_tool_outcome out;
	run_ok(e, &out);
	assert_int_equal(fa_writes(&e->api), 4);

	/* No update permission: --renew fails, the Secret stays as it was. */
	char *rv = rv_of(e, FA_SECRETS "/webhook-tls");
	fa_deny(&e->api, "PUT", FA_SECRETS);
	e->o.policy.renew = true;
	msg = run_fails(e);
	assert_non_null(strstr(msg, "update: forbidden: the identity needs \"update\" on secrets"));
	assert_int_equal(fa_writes(&e->api), 4);
	char *rv2 = rv_of(e, FA_SECRETS "/webhook-tls");
	assert_string_equal(rv, rv2);
	free(rv);
	free(rv2);
}

static void test_conflict_reads_again(void **state)
{
	struct env *e = *state;
	struct pk_tool_outcome out;
	run_ok(e, &out);
	/* Another writer changes the Secret under the first update: read, decide, write again. */
	pthread_mutex_lock(&e->api.mu);
	e->api.conflicts = 1;
	pthread_mutex_unlock(&e->api.mu);
	e->o.policy.renew = true;
	run_ok(e, &out);
	assert_int_equal(out.attempts, 2);
	assert_true(out.new_serving);
	assert_int_equal(out.secrets_written, 1);
	/* One that never stops: given up after three attempts. */
	pthread_mutex_lock(&e->api.mu);
	e->api.conflicts = 10;
	pthread_mutex_unlock(&e->api.mu);
	const char *msg = run_fails(e);
	assert_non_null(strstr(msg, "still changing after 3 attempts"));
}

static void test_missing_configuration_and_unreachable(void **state)
{
	struct env *e = *state;
	struct pk_webhook_config missing[] = {{false, "absent"}};
	e->o.configs = missing;
	e->o.nconfigs = 1;
	const char *msg = run_fails(e);
	assert_non_null(strstr(msg, "ValidatingWebhookConfiguration absent: does not exist"));
	assert_int_equal(fa_writes(&e->api), 0);

	/* An API nobody answers. */
	struct fake_server dead = {.port = fs_closed_port()};
	struct pk_kube_config *cfg = NULL;
	struct pk_kube_client *cli = NULL;
	struct pk_kube_client_opts co = {.qps = -1, .max_retries = -1};
	assert_int_equal(fs_client_new(&dead, &co, &cfg, &cli), 0);
	e->o.client = cli;
	msg = run_fails(e);
	assert_non_null(strstr(msg, "Secret t/webhook-tls-ca: get: API server unreachable"));
	pk_kube_client_free(cli);
	pk_kube_config_free(cfg);
}

/* The serving Secret lost (deleted by hand): re-issued under the CA that is kept. */
static void test_partial_state(void **state)
{
	struct env *e = *state;
	struct pk_tool_outcome out;
	run_ok(e, &out);
	size_t l0;
	char *ca0 = secret_value(e, "webhook-tls-ca", "tls.crt", &l0);
	pthread_mutex_lock(&e->api.mu);
	json_object_del(e->api.objects, FA_SECRETS "/webhook-tls");
	pthread_mutex_unlock(&e->api.mu);
	run_ok(e, &out);
	assert_false(out.new_ca);
	assert_true(out.new_serving);
	assert_int_equal(out.secrets_written, 1);
	assert_int_equal(out.configs_patched, 0);
	size_t l1;
	char *ca1 = secret_value(e, "webhook-tls-ca", "tls.crt", &l1);
	assert_int_equal(l0, l1);
	assert_memory_equal(ca0, ca1, l0);
	free(ca0);
	free(ca1);

	/* The CA Secret lost: the pair left behind is not ours to renew. */
	pthread_mutex_lock(&e->api.mu);
	json_object_del(e->api.objects, FA_SECRETS "/webhook-tls-ca");
	pthread_mutex_unlock(&e->api.mu);
	unsigned w = fa_writes(&e->api);
	const char *msg = run_fails(e);
	assert_non_null(strstr(msg, "it was not issued here"));
	assert_int_equal(fa_writes(&e->api), w);
	/* --renew starts over with a new CA. */
	e->o.policy.renew = true;
	run_ok(e, &out);
	assert_true(out.new_ca);
	assert_int_equal(out.secrets_written, 2);
}

static mode_t mode_of(const char *dir, const char *name)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(stat(p, &st), 0);
	return st.st_mode & 07777;
}

static char *file(const char *dir, const char *name, size_t *len)
{
	char *d = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_outdir_read(dir, name, &d, len, NULL, &err), PK_OK);
	return d;
}

static void test_files(void **state)
{
	struct env *e = *state;
	e->o.secret = NULL;
	e->o.out_dir = e->dir;
	struct pk_tool_outcome out;
	run_ok(e, &out);
	assert_int_equal(out.files_written, 4);
	assert_int_equal(out.configs_patched, 2);
	assert_int_equal(fa_writes(&e->api), 2); /* only the configurations */
	assert_int_equal(mode_of(e->dir, "tls.key"), 0600);
	assert_int_equal(mode_of(e->dir, "ca.key"), 0600);
	assert_int_equal(mode_of(e->dir, "tls.crt"), 0644);
	assert_int_equal(mode_of(e->dir, "ca.crt"), 0644);
	size_t crt_l, ca_l;
	char *crt = file(e->dir, "tls.crt", &crt_l);
	char *ca = file(e->dir, "ca.crt", &ca_l);
	assert_int_equal(verify_pem(crt, crt_l, ca, ca_l, NOW), X509_V_OK);
	assert_bundle_in(e, FA_VWC "/pk-validating", ca, ca_l);

	/* Again: nothing. */
	run_ok(e, &out);
	assert_int_equal(out.files_written + out.configs_patched, 0);

	/* --renew: tls.crt changes, ca.crt does not. */
	e->o.policy.renew = true;
	run_ok(e, &out);
	assert_int_equal(out.files_written, 2);
	size_t crt2_l, ca2_l;
	char *crt2 = file(e->dir, "tls.crt", &crt2_l);
	char *ca2 = file(e->dir, "ca.crt", &ca2_l);
	assert_true(crt2_l != crt_l || memcmp(crt, crt2, crt_l) != 0);
	assert_int_equal(ca2_l, ca_l);
	assert_memory_equal(ca, ca2, ca_l);
	e->o.policy.renew = false;

	/* A key found readable by others is narrowed. */
	char p[512];
	snprintf(p, sizeof(p), "%s/tls.key", e->dir);
	assert_int_equal(chmod(p, 0644), 0);
	run_ok(e, &out);
	assert_int_equal(out.files_written, 1);
	assert_int_equal(mode_of(e->dir, "tls.key"), 0600);

	/* A certificate that is not one: refused, named, left alone; --renew replaces it. */
	struct pk_err err = {{0}};
	assert_int_equal(pk_outdir_write(e->dir, "tls.crt", "junk", 4, 0644, &err), PK_OK);
	const char *msg = run_fails(e);
	assert_non_null(strstr(msg, "/tls.crt: no PEM CERTIFICATE block"));
	size_t jl;
	char *junk = file(e->dir, "tls.crt", &jl);
	assert_string_equal(junk, "junk");
	free(junk);
	e->o.policy.renew = true;
	run_ok(e, &out);
	assert_true(out.new_serving);
	assert_false(out.new_ca);
	free(crt);
	free(ca);
	free(crt2);
	free(ca2);
}

static void test_files_without_api(void **state)
{
	struct env *e = *state;
	e->o.secret = NULL;
	e->o.out_dir = e->dir;
	e->o.nconfigs = 0;
	e->o.client = NULL;
	e->o.now = 0; /* the clock */
	struct pk_tool_outcome out;
	run_ok(e, &out);
	assert_int_equal(out.files_written, 4);
	/* Secrets need the API. */
	e->o.secret = "x";
	e->o.out_dir = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_tool_run(&e->o, &out, &err), PK_ERR_INVALID);
	e->o.out_dir = e->dir;
	assert_int_equal(pk_tool_run(&e->o, &out, &err), PK_ERR_INVALID);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(test_secrets_first_and_second_run),
	    T(test_secrets_near_expiry_and_rotation),
	    T(test_wrong_type_refused),
	    T(test_foreign_tls_refused),
	    T(test_forbidden),
	    T(test_conflict_reads_again),
	    T(test_missing_configuration_and_unreachable),
	    T(test_partial_state),
	    T(test_files),
	    T(test_files_without_api),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
