/*
 * test_main.c - poolkeeper-controller as a program: --help from the flag
 * table, --version, every bad flag value named with the flag and refused
 * with exit 2 before any API access, and a missing kubeconfig named with
 * exit 1. Runs the built binary (PK_CONTROLLER_BIN); the daemon against a
 * real API server is e2e/tests/controller.bats.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

static const char *bin;
static char dir[200];

static int setup(void **state)
{
	(void)state;
	bin = getenv("PK_CONTROLLER_BIN");
	if (bin == NULL) {
		fprintf(stderr, "PK_CONTROLLER_BIN is not set\n");
		return -1;
	}
	return pk_test_tempdir_make(dir, sizeof(dir), "pk-controller-main");
}

static int teardown(void **state)
{
	(void)state;
	return pk_test_tempdir_remove(dir);
}

/* Runs the controller with args (NULL-terminated) and no API in reach; returns its status. */
static int run(const char *const *args, char *out, size_t ocap, char *err, size_t ecap)
{
	return proc_run(dir, bin, args, out, ocap, err, ecap);
}

static void test_help(void **state)
{
	(void)state;
	char out[16384], err[4096];
	const char *args[] = {"--help", NULL};
	assert_int_equal(run(args, out, sizeof(out), err, sizeof(err)), 0);
	const char *want[] = {
	    "Usage: poolkeeper-controller [flags]",
	    "--kubeconfig FILE",
	    "--namespace NS",
	    "--watch-filter VALUE",
	    "cluster.x-k8s.io/watch-filter=VALUE",
	    "--workers N",
	    "(1..64, default 2)",
	    "--kube-api-qps N",
	    "(1..100000, default 50)",
	    "--kube-api-burst N",
	    "(1..100000, default 100)",
	    "--leader-elect ",
	    "(default true)",
	    "--leader-elect-lease-duration DURATION",
	    "(1s..10m, default 15s)",
	    "--leader-elect-renew-deadline DURATION",
	    "(1s..10m, default 10s)",
	    "--leader-elect-retry-period DURATION",
	    "(100ms..1m, default 2s)",
	    "--leader-election-namespace NS",
	    "--leader-election-id NAME",
	    "(default poolkeeper-controller)",
	    "--health-probe-bind-address HOST:PORT",
	    "(default :8081)",
	    "--metrics-bind-address HOST:PORT",
	    "0 turns metrics off (default :8080)",
	    "--log-format text|json",
	    "-v, --v N",
	    "(0..10, default 0)",
	    "--version",
	    "-h, --help",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strstr(out, want[i]) == NULL)
			fail_msg("--help lacks \"%s\":\n%s", want[i], out);
	const char *gone[] = {"--qps",           "--burst",   "--health-port", "--metrics-port",
	                      "--bind-address ", "--verbose", "true|false"};
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		if (strstr(out, gone[i]) != NULL)
			fail_msg("--help still has \"%s\":\n%s", gone[i], out);
}

static void test_version(void **state)
{
	(void)state;
	char out[256], err[4096];
	const char *args[] = {"--version", NULL};
	assert_int_equal(run(args, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "poolkeeper-controller " PK_VERSION "\n");
	assert_string_equal(err, "");
	/* Another flag's bad value still fails first: flags are all checked while parsing. */
	const char *a2[] = {"--version", "--workers=0", NULL};
	assert_int_equal(run(a2, out, sizeof(out), err, sizeof(err)), 2);
	assert_non_null(strstr(err, "--workers"));
}

static void expect_usage_error(const char *const *args, const char *want1, const char *want2)
{
	char out[4096], err[8192];
	int rc = run(args, out, sizeof(out), err, sizeof(err));
	if (rc != 2)
		fail_msg("%s: exit %d, want 2; stderr: %s", args[0], rc, err);
	if (strstr(err, want1) == NULL || (want2 != NULL && strstr(err, want2) == NULL))
		fail_msg("stderr does not name \"%s\"/\"%s\": %s", want1, want2 ? want2 : "", err);
	if (strstr(err, "cannot set up API access") != NULL)
		fail_msg("a usage error reached the API set-up: %s", err);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_bad_flags(void **state)
{
	(void)state;
	/* Backends: only the names this build has, each once. */
	expect_usage_error(ARGS("--backends=kea"), "kea\\\" is not a backend of this build",
	                   "it has: incluster");
	expect_usage_error(ARGS("--backends="), "--backends: empty", "incluster");
	expect_usage_error(ARGS("--backends=incluster,incluster"), "is named twice", NULL);
	/* The resync period: a duration up to a day, 0s for never. */
	expect_usage_error(ARGS("--resync-period=48h"), "--resync-period must be a duration in",
	                   "48h");
	expect_usage_error(ARGS("--resync-period=often"), "--resync-period", "often");
	expect_usage_error(ARGS("--credentials-namespace=Team_A"),
	                   "--credentials-namespace must be a DNS label", "Team_A");
	/* Booleans: bare is true, a value only after "=", and only true or false. */
	expect_usage_error(ARGS("--leader-elect", "false"), "--leader-elect takes its value after",
	                   "--leader-elect=false");
	expect_usage_error(ARGS("--leader-elect=no"), "--leader-elect must be true or false", "no");
	expect_usage_error(ARGS("--leader-elect=0"), "--leader-elect must be true or false", "0");
	/* Durations. */
	expect_usage_error(ARGS("--leader-elect-lease-duration", "15"),
	                   "--leader-elect-lease-duration must be a duration", "unit is missing");
	expect_usage_error(ARGS("--leader-elect-lease-duration=1h"),
	                   "--leader-elect-lease-duration must be a duration in 1s..10m", "1h");
	expect_usage_error(ARGS("--leader-elect-retry-period=-1s"),
	                   "--leader-elect-retry-period must be a duration in 100ms..1m", "-1s");
	expect_usage_error(ARGS("--leader-elect-renew-deadline=10"),
	                   "--leader-elect-renew-deadline", "10");
	/* client-go's rules between the three. */
	expect_usage_error(ARGS("--leader-elect-renew-deadline=15s"),
	                   "--leader-elect-renew-deadline (15s) must be shorter than "
	                   "--leader-elect-lease-duration (15s)",
	                   NULL);
	expect_usage_error(ARGS("--leader-elect-lease-duration=5s"),
	                   "--leader-elect-renew-deadline (10s) must be shorter than "
	                   "--leader-elect-lease-duration (5s)",
	                   NULL);
	expect_usage_error(ARGS("--leader-elect-retry-period=9s"),
	                   "--leader-elect-renew-deadline (10s) must be longer than 1.2 times "
	                   "--leader-elect-retry-period (9s)",
	                   NULL);
	expect_usage_error(
	    ARGS("--leader-elect-renew-deadline=3s", "--leader-elect-retry-period", "2500ms"),
	    "1.2 times", "2500ms");
	/* Numbers. */
	expect_usage_error(ARGS("--workers=0"), "--workers must be an integer in 1..64", "0");
	expect_usage_error(ARGS("--workers", "65"), "--workers", "65");
	expect_usage_error(ARGS("--kube-api-qps=0"), "--kube-api-qps", "1..100000");
	expect_usage_error(ARGS("--kube-api-qps=2.5"), "--kube-api-qps", "2.5");
	expect_usage_error(ARGS("--kube-api-burst", "100001"), "--kube-api-burst", "100001");
	expect_usage_error(ARGS("--v=11"), "--v must be an integer in 0..10", "11");
	expect_usage_error(ARGS("-v", "-1"), "--v must be an integer in 0..10", "-1");
	expect_usage_error(ARGS("-v"), "-v needs a value", NULL);
	/* Listen addresses. */
	expect_usage_error(ARGS("--health-probe-bind-address=8081"), "--health-probe-bind-address",
	                   "the port is missing");
	expect_usage_error(ARGS("--health-probe-bind-address", "[::1"),
	                   "--health-probe-bind-address", "is not closed");
	expect_usage_error(ARGS("--health-probe-bind-address=0"), "--health-probe-bind-address",
	                   "the port is missing");
	expect_usage_error(ARGS("--metrics-bind-address=:65536"), "--metrics-bind-address",
	                   ":65536");
	expect_usage_error(ARGS("--metrics-bind-address=localhost:8080"), "--metrics-bind-address",
	                   "localhost:8080");
	/* Names. */
	expect_usage_error(ARGS("--watch-filter=a/b"), "--watch-filter must be a label value",
	                   "a/b");
	expect_usage_error(ARGS("--namespace=Team_A"), "--namespace must be a DNS label", "Team_A");
	expect_usage_error(ARGS("--leader-election-namespace=-x"),
	                   "--leader-election-namespace must be a DNS label", "-x");
	expect_usage_error(ARGS("--leader-election-id=My_Lease"),
	                   "--leader-election-id must be a DNS subdomain name", "My_Lease");
	expect_usage_error(ARGS("--leader-election-id="), "--leader-election-id must not be empty",
	                   NULL);
	/* The old spellings are gone. */
	const char *old[] = {"--qps=5",          "--burst=5",         "--health-port=0",
	                     "--metrics-port=0", "--bind-address=::", "--verbose",
	                     "--port=0"};
	for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++)
		expect_usage_error(ARGS(old[i]), "unknown flag", NULL);
	expect_usage_error(ARGS("-vv"), "--v must be an integer in 0..10", NULL);
	expect_usage_error(ARGS("stray"), "unexpected argument \\\"stray\\\"", NULL);
}

/* Good flags get as far as API access, which fails naming the kubeconfig: exit 1. */
static void test_good_flags_reach_api_access(void **state)
{
	(void)state;
	char out[4096], err[8192], missing[400];
	snprintf(missing, sizeof(missing), "%s/no-such-kubeconfig", dir);
	const char *args[] = {"--kubeconfig",
	                      missing,
	                      "--leader-elect",
	                      "--leader-elect=false",
	                      "--leader-elect-lease-duration=1m30s",
	                      "--leader-elect-renew-deadline",
	                      "1m",
	                      "--leader-elect-retry-period=500ms",
	                      "--leader-election-namespace=poolkeeper-system",
	                      "--leader-election-id",
	                      "poolkeeper-controller.shard-a",
	                      "--namespace",
	                      "team-a",
	                      "--watch-filter=shard-a",
	                      "--workers=64",
	                      "--kube-api-qps",
	                      "100000",
	                      "--kube-api-burst=1",
	                      "--health-probe-bind-address=[::1]:0",
	                      "--metrics-bind-address",
	                      "0",
	                      "--v=10",
	                      "--log-format=json",
	                      NULL};
	assert_int_equal(run(args, out, sizeof(out), err, sizeof(err)), 1);
	assert_non_null(strstr(err, "cannot set up API access"));
	assert_non_null(strstr(err, missing));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_help),
	    cmocka_unit_test(test_version),
	    cmocka_unit_test(test_bad_flags),
	    cmocka_unit_test(test_good_flags_reach_api_access),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
