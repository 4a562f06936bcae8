/*
 * test_lookup.c - the lookups before their caches are loaded: with an API
 * server that cannot be reached, the webhook is not ready (pk_lookup_ready,
 * and /readyz of the built binary answers 503 while /healthz answers 200),
 * and a lookup reads the API instead of answering from an empty cache, so
 * it fails naming what it could not read rather than finding nothing. The
 * loaded case runs against a real kube-apiserver in e2e/tests/webhook.bats,
 * whose start-up waits for /readyz.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lookup.h"
#include "rules.h"
#include "testcerts.h"

static struct testpki pki;
static char kubeconfig[400];

/* A loopback port nothing listens on. */
static uint16_t closed_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	socklen_t len = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &len);
	close(fd);
	return ntohs(sa.sin_port);
}

static int setup(void **state)
{
	(void)state;
	if (!testpki_init(&pki, "lookup-test"))
		return -1;
	snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", pki.dir);
	FILE *f = fopen(kubeconfig, "w");
	if (f == NULL)
		return -1;
	fprintf(f,
	        "apiVersion: v1\nkind: Config\ncurrent-context: dead\n"
	        "clusters:\n- name: dead\n  cluster:\n    server: https://127.0.0.1:%u\n"
	        "    certificate-authority: %s\n"
	        "users:\n- name: u\n  user:\n    token: not-a-real-token\n"
	        "contexts:\n- name: dead\n  context: {cluster: dead, user: u}\n",
	        closed_port(), pki.ca);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	testpki_cleanup(&pki);
	return 0;
}

static void test_not_ready_and_live_before_the_first_list(void **state)
{
	(void)state;
	struct pk_lookup *l = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_lookup_open(kubeconfig, &l, &err), PK_OK);
	assert_non_null(l);
	assert_false(pk_lookup_ready(l));
	assert_false(pk_lookup_wait_ready(l, 300));

	/* not an empty answer from an empty cache: a live read, which fails naming the kind */
	const struct pk_admission_lookup *lk = pk_lookup_admission(l);
	json_t *items = NULL, *obj = NULL;
	assert_int_not_equal(lk->list_pools(lk->ctx, PK_GLOBAL_POOL_KIND, NULL, &items, &err),
	                     PK_OK);
	assert_null(items);
	assert_non_null(strstr(err.msg, PK_GLOBAL_POOL_KIND ": "));
	assert_int_not_equal(
	    lk->list_pool_addresses(lk->ctx, PK_GLOBAL_POOL_KIND, NULL, "shared", &items, &err),
	    PK_OK);
	assert_non_null(strstr(err.msg, "IPAddresses: "));
	assert_int_not_equal(lk->get_pool(lk->ctx, PK_POOL_KIND, "a", "nodes", &obj, &err), PK_OK);
	assert_non_null(strstr(err.msg, PK_POOL_KIND ": "));
	assert_int_not_equal(lk->get_claim(lk->ctx, "a", "m-1", &obj, &err), PK_OK);
	assert_non_null(strstr(err.msg, "IPAddressClaim: "));
	assert_null(obj);
	assert_false(pk_lookup_ready(l));
	pk_lookup_close(l);

	/* no API access at all: nothing to load, ready at once */
	assert_true(pk_lookup_ready(NULL));
	/* live mode: no caches to wait for */
	assert_int_equal(pk_lookup_open_mode(kubeconfig, PK_LOOKUP_LIVE, &l, &err), PK_OK);
	assert_true(pk_lookup_ready(l));
	pk_lookup_close(l);
}

static void slurp(const char *path, char *buf, size_t cap)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return;
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* The status code of GET path on 127.0.0.1:port, or -1. */
static int http_get(uint16_t port, const char *path)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	char req[256], resp[512];
	int n = snprintf(req, sizeof(req),
	                 "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	ssize_t w = write(fd, req, (size_t)n);
	ssize_t r = w == n ? read(fd, resp, sizeof(resp) - 1) : -1;
	close(fd);
	if (r < 12)
		return -1;
	resp[r] = '\0';
	char *end = NULL;
	long code = strtol(resp + 9, &end, 10);
	return end == resp + 12 ? (int)code : -1;
}

static void test_binary_not_ready_until_listed(void **state)
{
	(void)state;
	const char *bin = getenv("PK_WEBHOOK_BIN");
	assert_non_null(bin);
	char errpath[400], buf[16384];
	snprintf(errpath, sizeof(errpath), "%s/webhook.err", pki.dir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(e, 2);
		execl(bin, bin, "--tls-cert-file", pki.cert, "--tls-private-key-file", pki.key,
		      "--webhook-bind-address=127.0.0.1:0",
		      "--health-probe-bind-address=127.0.0.1:0", "--metrics-bind-address=0",
		      "--kubeconfig", kubeconfig, (char *)NULL);
		_exit(127);
	}
	const char *at = NULL;
	for (int i = 0; i < 200 && at == NULL; i++) {
		slurp(errpath, buf, sizeof(buf));
		at = strstr(buf, "listener=health port=");
		if (at == NULL) {
			struct timespec t = {0, 100 * 1000 * 1000};
			nanosleep(&t, NULL);
		}
	}
	int healthz = -1, readyz = -1;
	if (at != NULL) {
		uint16_t port = (uint16_t)strtol(at + strlen("listener=health port="), NULL, 10);
		healthz = http_get(port, "/healthz");
		readyz = http_get(port, "/readyz");
	}
	kill(pid, SIGTERM);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (at == NULL)
		fail_msg("no health listener in: %s", buf);
	assert_int_equal(healthz, 200);
	assert_int_equal(readyz, 503);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_not_ready_and_live_before_the_first_list),
	    cmocka_unit_test(test_binary_not_ready_until_listed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
