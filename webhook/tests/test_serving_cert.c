/*
 * test_serving_cert.c - the serving pair: loading, refusing bad files with the
 * file named, reloading only on change, keeping the old pair when the new
 * one is unusable, and pairs outliving a swap while still held.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "log.h"
#include "serving_cert.h"
#include "testcerts.h"

static int setup(void **state)
{
	static struct testpki pki;
	memset(&pki, 0, sizeof(pki));
	pk_log_set_level(PK_LOG_ERROR);
	if (!testpki_init(&pki, "first"))
		return -1;
	*state = &pki;
	return 0;
}

static int teardown(void **state)
{
	testpki_cleanup(*state);
	return 0;
}

static void test_open_ok(void **state)
{
	struct testpki *pki = *state;
	struct pk_certs *c = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_certs_open(pki->cert, pki->key, NULL, &c, &err), PK_OK);
	struct pk_cert_pair *p = pk_certs_acquire(c);
	assert_non_null(p);
	assert_true(strlen(pk_cert_pair_serial(p)) > 0);
	assert_true(pk_cert_pair_not_after(p) > 0);
	pk_cert_pair_release(p);
	/* Unchanged files: nothing to do. */
	assert_int_equal(pk_certs_reload(c), 0);
	pk_certs_free(c);
}

static void expect_open_fails(const char *cert, const char *key, const char *want)
{
	struct pk_certs *c = NULL;
	struct pk_err err = {{0}};
	assert_int_not_equal(pk_certs_open(cert, key, NULL, &c, &err), PK_OK);
	assert_null(c);
	if (strstr(err.msg, want) == NULL)
		fail_msg("error \"%s\" does not mention \"%s\"", err.msg, want);
}

static void test_open_refuses(void **state)
{
	struct testpki *pki = *state;
	char missing[400], garbage[400], other_crt[400], other_key[400];
	snprintf(missing, sizeof(missing), "%s/missing.crt", pki->dir);
	snprintf(garbage, sizeof(garbage), "%s/garbage.pem", pki->dir);
	snprintf(other_crt, sizeof(other_crt), "%s/other.crt", pki->dir);
	snprintf(other_key, sizeof(other_key), "%s/other.key", pki->dir);
	assert_true(testpki_write(garbage, "-----BEGIN CERTIFICATE-----\nnope\n"));
	assert_true(testpki_issue(pki, "other", other_crt, other_key));

	expect_open_fails(missing, pki->key, missing);
	expect_open_fails(pki->cert, missing, missing);
	expect_open_fails(garbage, pki->key, garbage);
	expect_open_fails(pki->cert, garbage, garbage);
	/* A key that is not the certificate's: both files named. */
	expect_open_fails(pki->cert, other_key, other_key);
	expect_open_fails(pki->cert, other_key, "does not match");
	expect_open_fails("", pki->key, "--tls-cert-file");
	expect_open_fails(pki->cert, NULL, "--tls-private-key-file");
	/* An empty file. */
	assert_true(testpki_write(garbage, ""));
	expect_open_fails(garbage, pki->key, "empty");
}

static void test_reload(void **state)
{
	struct testpki *pki = *state;
	struct pk_metrics *m = pk_metrics_new();
	struct pk_certs *c = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_certs_open(pki->cert, pki->key, m, &c, &err), PK_OK);

	struct pk_cert_pair *old = pk_certs_acquire(c);
	char old_serial[128];
	snprintf(old_serial, sizeof(old_serial), "%s", pk_cert_pair_serial(old));

	/* A new good pair is picked up. */
	assert_true(testpki_issue(pki, "second", pki->cert, pki->key));
	assert_int_equal(pk_certs_reload(c), 1);
	struct pk_cert_pair *now = pk_certs_acquire(c);
	assert_string_not_equal(pk_cert_pair_serial(now), old_serial);
	/* The old pair is still whole for whoever holds it (ASan checks this). */
	assert_string_equal(pk_cert_pair_serial(old), old_serial);
	pk_cert_pair_release(old);
	assert_int_equal(pk_metrics_get_reloads(m, true), 1);

	/* A key that does not match: the current pair stays, one failure counted. */
	char other_crt[400], other_key[400];
	snprintf(other_crt, sizeof(other_crt), "%s/third.crt", pki->dir);
	snprintf(other_key, sizeof(other_key), "%s/third.key", pki->dir);
	assert_true(testpki_issue(pki, "third", other_crt, other_key));
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", other_key, pki->key);
	assert_true(testpki_run(cmd));
	assert_int_equal(pk_certs_reload(c), PK_ERR_INVALID);
	assert_int_equal(pk_metrics_get_reloads(m, false), 1);
	/* The same bad files are not retried or counted again. */
	assert_int_equal(pk_certs_reload(c), 0);
	assert_int_equal(pk_metrics_get_reloads(m, false), 1);
	struct pk_cert_pair *still = pk_certs_acquire(c);
	assert_string_equal(pk_cert_pair_serial(still), pk_cert_pair_serial(now));
	pk_cert_pair_release(still);

	/* A missing file is a failure too, and the pair stays. */
	assert_int_equal(unlink(pki->key), 0);
	assert_int_equal(pk_certs_reload(c), PK_ERR_INVALID);
	assert_int_equal(pk_metrics_get_reloads(m, false), 2);
	still = pk_certs_acquire(c);
	assert_string_equal(pk_cert_pair_serial(still), pk_cert_pair_serial(now));
	pk_cert_pair_release(still);

	/* The matching key comes back: a good pair again. */
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", other_crt, pki->cert);
	assert_true(testpki_run(cmd));
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", other_key, pki->key);
	assert_true(testpki_run(cmd));
	assert_int_equal(pk_certs_reload(c), 1);
	pk_cert_pair_release(now);
	pk_certs_free(c);
	pk_metrics_free(m);
}

static void test_watch(void **state)
{
	struct testpki *pki = *state;
	struct pk_certs *c = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_certs_open(pki->cert, pki->key, NULL, &c, &err), PK_OK);
	assert_int_not_equal(pk_certs_start_watch(c, 0, &err), PK_OK);
	assert_non_null(strstr(err.msg, "--cert-poll-seconds"));
	assert_int_equal(pk_certs_start_watch(c, 1, &err), PK_OK);
	struct pk_cert_pair *before = pk_certs_acquire(c);
	assert_true(testpki_issue(pki, "watched", pki->cert, pki->key));
	bool changed = false;
	for (int i = 0; i < 50 && !changed; i++) {
		usleep(100 * 1000);
		struct pk_cert_pair *p = pk_certs_acquire(c);
		changed = strcmp(pk_cert_pair_serial(p), pk_cert_pair_serial(before)) != 0;
		pk_cert_pair_release(p);
	}
	assert_true(changed);
	pk_cert_pair_release(before);
	/* Stopping is prompt and free stops a running watcher too. */
	pk_certs_stop_watch(c);
	pk_certs_stop_watch(c);
	assert_int_equal(pk_certs_start_watch(c, 1, &err), PK_OK);
	pk_certs_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_open_ok),
	    cmocka_unit_test(test_open_refuses),
	    cmocka_unit_test(test_reload),
	    cmocka_unit_test(test_watch),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
