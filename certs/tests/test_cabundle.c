/*
 * test_cabundle.c - webhook configurations: the KIND/NAME flag values
 * (table), the JSON patch (only webhooks that lack the bundle, each guarded
 * by a test of its name), and patching against a fake API: dry runs, a list
 * that changed meanwhile ("read again"), a missing configuration, 403.
 */
#define _GNU_SOURCE /* strcasestr, in the fake server */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cabundle.h"
#include "fake_api.h"

static void test_parse(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int ok; /* 1 validating, 2 mutating, 0 refused */
		const char *name;
	} v[] = {
	    {"validating/poolkeeper-validating", 1, "poolkeeper-validating"},
	    {"mutating/pk.example.io", 2, "pk.example.io"},
	    {"validating/", 0, NULL},
	    {"mutating", 0, NULL},
	    {"Validating/x", 0, NULL},
	    {"validatingwebhookconfiguration/x", 0, NULL},
	    {"validating/X", 0, NULL},
	    {"validating/a/b", 0, NULL},
	    {"/x", 0, NULL},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct pk_webhook_config w;
		struct pk_err err = {{0}};
		int rc = pk_cabundle_parse(v[i].s, &w, &err);
		if ((rc == PK_OK) != (v[i].ok != 0))
			fail_msg("\"%s\": %d (%s)", v[i].s, rc, err.msg);
		if (v[i].ok) {
			assert_int_equal(w.mutating, v[i].ok == 2);
			assert_string_equal(w.name, v[i].name);
		} else {
			assert_non_null(strstr(err.msg, "--webhook-configuration"));
		}
	}
	struct pk_webhook_config w = {.mutating = true, .name = "x"};
	assert_string_equal(pk_cabundle_kind(&w), "MutatingWebhookConfiguration");
}

static void test_patch(void **state)
{
	(void)state;
	json_t *cfg =
	    json_pack("{s:[{s:s, s:{s:s}}, {s:s, s:{s:s, s:s}}, {s:s}]}", "webhooks", "name", "a",
	              "clientConfig", "url", "https://x", "name", "b", "clientConfig", "url",
	              "https://x", "caBundle", "QkFOREw=", "name", "c");
	size_t changed, total;
	json_t *p = pk_cabundle_patch(cfg, "QkFOREw=", &changed, &total);
	assert_non_null(p);
	assert_int_equal(total, 3);
	assert_int_equal(changed, 2);
	char *s = json_dumps(p, JSON_COMPACT);
	assert_string_equal(
	    s, "[{\"op\":\"test\",\"path\":\"/webhooks/0/name\",\"value\":\"a\"},"
	       "{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/"
	       "caBundle\",\"value\":\"QkFOREw=\"},"
	       "{\"op\":\"test\",\"path\":\"/webhooks/2/name\",\"value\":\"c\"},"
	       "{\"op\":\"add\",\"path\":\"/webhooks/2/clientConfig\",\"value\":{\"caBundle\":"
	       "\"QkFOREw=\"}}]");
	free(s);
	json_decref(p);
	/* Another bundle: all three. */
	p = pk_cabundle_patch(cfg, "T1RIRVI=", &changed, &total);
	assert_int_equal(changed, 3);
	json_decref(p);
	json_decref(cfg);
	/* Nothing to do, and no webhooks at all. */
	cfg = json_pack("{s:[{s:s, s:{s:s}}]}", "webhooks", "name", "a", "clientConfig", "caBundle",
	                "QQ==");
	assert_null(pk_cabundle_patch(cfg, "QQ==", &changed, &total));
	assert_int_equal(changed, 0);
	assert_int_equal(total, 1);
	json_decref(cfg);
	cfg = json_object();
	assert_null(pk_cabundle_patch(cfg, "QQ==", &changed, &total));
	assert_int_equal(total, 0);
	json_decref(cfg);
}

static void test_apply(void **state)
{
	(void)state;
	struct fake_api api;
	struct pk_kube_config *cfg = NULL;
	struct pk_kube_client *cli = NULL;
	assert_int_equal(fa_start(&api, &cfg, &cli), 0);
	fa_put_config(&api, false, "pk-validating", 3);
	struct pk_webhook_config w = {.mutating = false, .name = "pk-validating"};
	struct pk_err err = {{0}};
	json_t *obj = NULL;
	assert_int_equal(pk_cabundle_get(cli, &w, &obj, &err), PK_OK);
	size_t changed, total;
	json_t *p = pk_cabundle_patch(obj, "QQ==", &changed, &total);
	assert_int_equal(changed, 3);

	/* A dry run changes nothing. */
	assert_int_equal(pk_cabundle_apply(cli, &w, p, true, &err), PK_OK);
	assert_int_equal(fa_writes(&api), 0);
	assert_int_equal(pk_cabundle_apply(cli, &w, p, false, &err), PK_OK);
	assert_int_equal(fa_writes(&api), 1);
	json_t *now = fa_get(&api, FA_VWC "/pk-validating");
	json_t *after = pk_cabundle_patch(now, "QQ==", &changed, &total);
	assert_null(after);
	assert_int_equal(changed, 0);
	json_decref(now);
	json_decref(p);
	json_decref(obj);

	/* The webhooks moved since they were read: the name test fails, read again. */
	json_t *stale =
	    json_pack("{s:[{s:s, s:{}}]}", "webhooks", "name", "someone-else", "clientConfig");
	p = pk_cabundle_patch(stale, "Qg==", &changed, &total);
	assert_int_equal(pk_cabundle_apply(cli, &w, p, false, &err), PK_ERR_IN_USE);
	assert_int_equal(fa_writes(&api), 1);
	json_decref(p);
	json_decref(stale);

	/* Missing, forbidden. */
	struct pk_webhook_config m = {.mutating = true, .name = "absent"};
	assert_int_equal(pk_cabundle_get(cli, &m, &obj, &err), PK_ERR_INVALID);
	assert_string_equal(err.msg, "MutatingWebhookConfiguration absent: does not exist (create "
	                             "it before its caBundle is set)");
	fa_deny(&api, "PATCH", FA_VWC);
	p = json_pack("[{s:s, s:s, s:s}]", "op", "add", "path", "/metadata/x", "value", "y");
	assert_int_equal(pk_cabundle_apply(cli, &w, p, true, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg,
	                       "ValidatingWebhookConfiguration pk-validating (dry run): patch: "
	                       "forbidden: the identity needs \"patch\" on "
	                       "validatingwebhookconfigurations (cluster-scoped)"));
	json_decref(p);
	fa_deny(&api, "GET", FA_VWC);
	assert_int_equal(pk_cabundle_get(cli, &w, &obj, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "needs \"get\" on validatingwebhookconfigurations"));

	pk_kube_client_free(cli);
	pk_kube_config_free(cfg);
	fa_stop(&api);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_patch),
	    cmocka_unit_test(test_apply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
