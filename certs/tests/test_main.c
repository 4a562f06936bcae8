/*
 * test_main.c - poolkeeper-certs as a program: --version and --help, usage
 * errors (exit 2) naming the flag and the value, repeated --dns/--ip in
 * both spellings, the files mode run twice (the second changes nothing),
 * JSON log lines, and failures (exit 1) as one error line: an API nobody
 * answers, a kubeconfig that does not exist. Runs the built binary
 * (PK_CERTS_BIN, else bin/poolkeeper-certs beside this suite's folder).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "proc.h"

static char bin[PATH_MAX];
static char dir[256];

static int setup(void **state)
{
	(void)state;
	const char *env = getenv("PK_CERTS_BIN");
	if (env != NULL) {
		snprintf(bin, sizeof(bin), "%s", env);
	} else {
		/* build/certs/certs_test_main -> build/bin/poolkeeper-certs */
		char self[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			return -1;
		self[n] = '\0';
		snprintf(bin, sizeof(bin), "%s/../bin/poolkeeper-certs", dirname(self));
	}
	if (access(bin, X_OK) != 0) {
		fprintf(stderr, "poolkeeper-certs not found at %s (set PK_CERTS_BIN)\n", bin);
		return -1;
	}
	return pk_test_tempdir_make(dir, sizeof(dir), "pk-certs-main");
}

static int teardown(void **state)
{
	(void)state;
	return pk_test_tempdir_remove(dir);
}

/* Runs the binary with args; returns its exit status, stdout and stderr. */
static int run(const char *const *args, char *out, size_t ocap, char *err, size_t ecap)
{
	return proc_run(dir, bin, args, out, ocap, err, ecap);
}

static void test_version_and_help(void **state)
{
	(void)state;
	char out[16384], err[4096];
	const char *v[] = {"--version", NULL};
	assert_int_equal(run(v, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "poolkeeper-certs 0.1.0\n");
	const char *h[] = {"--help", NULL};
	assert_int_equal(run(h, out, sizeof(out), err, sizeof(err)), 0);
	assert_non_null(strstr(out, "Usage: poolkeeper-certs"));
	static const char *const names[] = {
	    "--kubeconfig",
	    "--namespace",
	    "--service",
	    "--cluster-domain",
	    "--dns",
	    "--ip",
	    "--secret",
	    "--out-dir",
	    "--webhook-configuration",
	    "--validity-days",
	    "--ca-validity-days",
	    "--renew-before-days",
	    "--renew",
	    "--key-type",
	    "--v",
	    "--log-format",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strstr(out, names[i]) == NULL)
			fail_msg("--help does not list %s", names[i]);
	const char *s[] = {"-h", NULL};
	assert_int_equal(run(s, out, sizeof(out), err, sizeof(err)), 0);
}

static void test_usage_errors(void **state)
{
	(void)state;
	char d[300];
	snprintf(d, sizeof(d), "%s/never", dir);
	static const struct {
		const char *args[10];
		const char *want1, *want2;
	} v[] = {
	    {{"--out-dir", "D", "--ip", "1.2.3"}, "--ip", "\\\"1.2.3\\\""},
	    {{"--out-dir", "D", "--dns", "a_b"}, "--dns", "a_b"},
	    {{"--out-dir", "D", "--ip", "1.1.1.1", "--validity-days=abc"},
	     "--validity-days",
	     "abc"},
	    {{"--out-dir", "D", "--ip", "1.1.1.1", "--validity-days", "0"},
	     "--validity-days",
	     "1..36500"},
	    {{"--secret", "s", "--out-dir", "D", "--ip", "1.1.1.1"}, "exclude each other", NULL},
	    {{"--ip", "1.1.1.1"}, "one of --secret NAME and --out-dir DIR", NULL},
	    {{"--secret", "s", "--ip", "1.1.1.1"}, "--namespace is required with --secret", NULL},
	    {{"--out-dir", "D", "--service", "web"},
	     "--namespace is required with --service",
	     NULL},
	    {{"--out-dir", "D"}, "needs a name", NULL},
	    {{"--out-dir", "D", "--ip", "1.1.1.1", "--webhook-configuration", "foo"},
	     "--webhook-configuration",
	     "foo"},
	    {{"--out-dir", "D", "--ip", "1.1.1.1", "--webhook-configuration", "mutating/a",
	      "--webhook-configuration=mutating/a"},
	     "given twice",
	     NULL},
	    {{"--out-dir", "D", "--ip", "1.1.1.1", "--key-type", "dsa"}, "--key-type", "dsa"},
	    {{"--out-dir", "D", "--ip", "1.1.1.1", "--ca-renew-before-days", "4000"},
	     "--ca-renew-before-days",
	     "every run makes a new CA"},
	    {{"--out-dir", "D", "--ip", "1.1.1.1", "--bogus"}, "unknown flag --bogus", NULL},
	    {{"--out-dir", "D", "--ip", "1.1.1.1", "extra"}, "unexpected argument", "extra"},
	    {{"--secret", "s", "--namespace", "Bad", "--ip", "1.1.1.1"}, "--namespace", "Bad"},
	    {{"--secret", "S!", "--namespace", "n", "--ip", "1.1.1.1"}, "--secret", "S!"},
	    {{"--secret", "s", "--namespace", "n", "--ca-secret", "s", "--ip", "1.1.1.1"},
	     "--ca-secret",
	     "must differ"},
	    {{"--out-dir", "D", "--ip", "1.1.1.1", "--renew=maybe"}, "--renew", "maybe"},
	    {{"--out-dir", "D", "--service", "Web", "--namespace", "n"}, "--service", "Web"},
	    {{"--out-dir", "D", "--service", "web", "--namespace", "n", "--cluster-domain", "a..b"},
	     "--cluster-domain",
	     "a..b"},
	    {{"--out-dir", "D", "--ip", "1.1.1.1", "--v", "11"}, "--v", "0..10"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		const char *args[12];
		size_t n = 0;
		for (size_t j = 0; j < 10 && v[i].args[j] != NULL; j++)
			args[n++] = strcmp(v[i].args[j], "D") == 0 ? d : v[i].args[j];
		args[n] = NULL;
		char out[4096], err[4096];
		int rc = run(args, out, sizeof(out), err, sizeof(err));
		if (rc != 2)
			fail_msg("case %zu: exit %d, want 2; stderr: %s", i, rc, err);
		if (strstr(err, v[i].want1) == NULL ||
		    (v[i].want2 != NULL && strstr(err, v[i].want2) == NULL))
			fail_msg("case %zu: stderr lacks \"%s\"/\"%s\": %s", i, v[i].want1,
			         v[i].want2 ? v[i].want2 : "", err);
		assert_non_null(strstr(err, "level=error msg=\"invalid command line\""));
	}
	/* Nothing was created by any of them. */
	assert_int_equal(access(d, F_OK), -1);
}

/* The day counts' ranges in --help and in the errors; a repeatable flag past its limit. */
static void test_ranges_and_repeats(void **state)
{
	(void)state;
	char out[16384], err[4096], d[300];
	assert_int_equal(
	    run((const char *const[]){"--help", NULL}, out, sizeof(out), err, sizeof(err)), 0);
	static const char *const ranges[] = {
	    "--validity-days N",        "(1..36500, default 365)", "--ca-validity-days N",
	    "(1..36500, default 3650)", "--renew-before-days N",   "(0..36500, default 30)",
	    "--ca-renew-before-days N", "(0..36500, default 90)",  "-v, --v N",
	    "(0..10, default 0)",       "--key-type ecdsa-p256|",  "(default ecdsa-p256)",
	    "--cluster-domain DOMAIN",  "(default cluster.local)",
	};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (strstr(out, ranges[i]) == NULL)
			fail_msg("--help lacks \"%s\":\n%s", ranges[i], out);
	snprintf(d, sizeof(d), "%s/never", dir);
	const char *a1[] = {"--out-dir", d, "--ip", "1.1.1.1", "--ca-validity-days=36501", NULL};
	assert_int_equal(run(a1, out, sizeof(out), err, sizeof(err)), 2);
	assert_non_null(strstr(err, "--ca-validity-days must be an integer in 1..36500"));
	assert_non_null(strstr(err, "36501"));
	const char *a2[] = {"--out-dir", d, "--ip", "1.1.1.1", "--renew-before-days", "-1", NULL};
	assert_int_equal(run(a2, out, sizeof(out), err, sizeof(err)), 2);
	assert_non_null(strstr(err, "--renew-before-days must be an integer in 0..36500"));
	/* 17 webhook configurations, one past the limit. */
	char cfg[17][40];
	const char *a3[24] = {"--out-dir", d, "--ip", "1.1.1.1"};
	for (size_t i = 0; i < 17; i++) {
		snprintf(cfg[i], sizeof(cfg[i]), "--webhook-configuration=validating/w%zu", i);
		a3[4 + i] = cfg[i];
	}
	assert_int_equal(run(a3, out, sizeof(out), err, sizeof(err)), 2);
	assert_non_null(strstr(err, "--webhook-configuration is given more than 16 times"));
	assert_int_equal(access(d, F_OK), -1);
}

static X509 *read_cert(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	assert_non_null(x);
	return x;
}

static void test_files_run(void **state)
{
	(void)state;
	char d[300], crt[400], key[400], ca[400];
	snprintf(d, sizeof(d), "%s/out", dir);
	snprintf(crt, sizeof(crt), "%s/tls.crt", d);
	snprintf(key, sizeof(key), "%s/tls.key", d);
	snprintf(ca, sizeof(ca), "%s/ca.crt", d);
	const char *args[] = {
	    "--out-dir",       d,           "--ip", "127.0.0.1",   "--ip=::1", "--dns", "a.example",
	    "--dns=b.example", "--service", "web",  "--namespace", "ns",       NULL};
	char out[4096], err[8192];
	int rc = run(args, out, sizeof(out), err, sizeof(err));
	if (rc != 0)
		fail_msg("exit %d: %s", rc, err);
	X509 *x = read_cert(crt);
	assert_int_equal(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
	assert_int_equal(X509_check_ip_asc(x, "::1", 0), 1);
	assert_int_equal(X509_check_host(x, "a.example", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(x, "b.example", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(x, "web.ns.svc.cluster.local", 0, 0, NULL), 1);
	X509 *c = read_cert(ca);
	assert_int_equal(X509_verify(x, X509_get0_pubkey(c)), 1);
	X509_free(c);
	X509_free(x);
	struct stat k1, c1;
	assert_int_equal(stat(key, &k1), 0);
	assert_int_equal(k1.st_mode & 0777, 0600);
	assert_int_equal(stat(crt, &c1), 0);

	/* Again: nothing is written (the files are the same inodes). */
	rc = run(args, out, sizeof(out), err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(err, "up to date: nothing written"));
	struct stat k2, c2;
	assert_int_equal(stat(key, &k2), 0);
	assert_int_equal(stat(crt, &c2), 0);
	assert_int_equal(k1.st_ino, k2.st_ino);
	assert_int_equal(c1.st_ino, c2.st_ino);

	/* JSON log lines. */
	const char *json_args[] = {"--out-dir",         d,       "--ip",        "127.0.0.1",
	                           "--ip=::1",          "--dns", "a.example",   "--dns=b.example",
	                           "--service",         "web",   "--namespace", "ns",
	                           "--log-format=json", NULL};
	rc = run(json_args, out, sizeof(out), err, sizeof(err));
	assert_int_equal(rc, 0);
	char *save = NULL;
	size_t lines = 0;
	for (char *line = strtok_r(err, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		json_error_t je;
		json_t *j = json_loads(line, 0, &je);
		if (j == NULL)
			fail_msg("not a JSON line: %s", line);
		json_decref(j);
		lines++;
	}
	assert_true(lines >= 3);
}

/* Exit 1 with exactly one error line naming the object and the cause. */
static void expect_failure(const char *const *args, const char *want)
{
	char out[4096], err[16384];
	int rc = run(args, out, sizeof(out), err, sizeof(err));
	if (rc != 1)
		fail_msg("exit %d, want 1; stderr: %s", rc, err);
	size_t errors = 0;
	for (const char *p = err; (p = strstr(p, "level=error")) != NULL; p++)
		errors++;
	if (errors != 1 || strstr(err, want) == NULL)
		fail_msg("want one error line with \"%s\": %s", want, err);
}

static void test_api_failures(void **state)
{
	(void)state;
	/* A kubeconfig pointing at a port nobody listens on. */
	uint16_t port = proc_free_port();
	char kc[400];
	snprintf(kc, sizeof(kc), "%s/kubeconfig", dir);
	FILE *f = fopen(kc, "w");
	fprintf(f,
	        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "
	        "\"http://127.0.0.1:%d\"}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- "
	        "name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
	        port);
	fclose(f);
	const char *down[] = {"--kubeconfig", kc,         "--namespace", "ns", "--service",
	                      "web",          "--secret", "web-tls",     NULL};
	expect_failure(down, "Secret ns/web-tls-ca: get: API server unreachable");

	char missing[400];
	snprintf(missing, sizeof(missing), "%s/no-such-kubeconfig", dir);
	const char *nokc[] = {"--kubeconfig", missing,    "--namespace", "ns", "--service",
	                      "web",          "--secret", "web-tls",     NULL};
	expect_failure(nokc, "cannot set up API access");

	/* Files mode reaches the API only for webhook configurations. */
	char d[300];
	snprintf(d, sizeof(d), "%s/out2", dir);
	const char *cfgs[] = {
	    "--kubeconfig", kc,  "--out-dir", d, "--ip", "127.0.0.1", "--webhook-configuration",
	    "validating/x", NULL};
	expect_failure(cfgs, "ValidatingWebhookConfiguration x: get: API server unreachable");
	/* ... and the dry runs come first: no file was written. */
	char p[400];
	snprintf(p, sizeof(p), "%s/tls.crt", d);
	assert_int_equal(access(p, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_version_and_help),   cmocka_unit_test(test_usage_errors),
	    cmocka_unit_test(test_ranges_and_repeats), cmocka_unit_test(test_files_run),
	    cmocka_unit_test(test_api_failures),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
