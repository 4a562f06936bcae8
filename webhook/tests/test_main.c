/*
 * test_main.c - poolkeeper-webhook as a program: flags in both spellings,
 * bad values named in the error, start-up failures naming the file, the
 * "listening" lines with the bound ports, and a clean exit on SIGTERM and
 * SIGINT. Runs the built binary (PK_WEBHOOK_BIN).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <jansson.h>

#include "proc.h"
#include "testcerts.h"

static struct testpki pki;
static const char *bin;

static int setup(void **state)
{
	(void)state;
	bin = getenv("PK_WEBHOOK_BIN");
	if (bin == NULL) {
		fprintf(stderr, "PK_WEBHOOK_BIN is not set\n");
		return -1;
	}
	return testpki_init(&pki, "main-test") ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	testpki_cleanup(&pki);
	return 0;
}

static void start(struct proc *p, const char *const *args)
{
	proc_start(p, pki.dir, bin, args);
}

/* Starts the webhook with the test pair and `extra` flags (NULL-terminated, at most 30). */
static void start_with_pair(struct proc *p, const char *const *extra)
{
	const char *args[36] = {"--tls-cert-file", pki.cert, "--tls-private-key-file", pki.key};
	size_t n = 4;
	for (size_t i = 0; extra[i] != NULL && n < 35; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	start(p, args);
}

/* Runs to completion; returns the exit status and stderr (and stdout) in buf. */
static int run(const char *const *args, char *err, size_t cap, char *out, size_t ocap)
{
	return proc_run(pki.dir, bin, args, out, ocap, err, cap);
}

static void expect_usage_error(const char *const *args, const char *want1, const char *want2)
{
	char err[8192];
	int rc = run(args, err, sizeof(err), NULL, 0);
	if (rc != 2)
		fail_msg("exit %d, want 2; stderr: %s", rc, err);
	if (strstr(err, want1) == NULL || (want2 != NULL && strstr(err, want2) == NULL))
		fail_msg("stderr does not name \"%s\"/\"%s\": %s", want1, want2 ? want2 : "", err);
}

static void test_help(void **state)
{
	(void)state;
	char err[4096], out[8192];
	const char *args[] = {"--help", NULL};
	assert_int_equal(run(args, err, sizeof(err), out, sizeof(out)), 0);
	const char *want[] = {"--tls-cert-file FILE",
	                      "--tls-private-key-file FILE",
	                      "--webhook-bind-address HOST:PORT",
	                      "(default :9443)",
	                      "--health-probe-bind-address HOST:PORT",
	                      "(default :8081)",
	                      "--metrics-bind-address HOST:PORT",
	                      "0 turns metrics off (default :8080)",
	                      "--kubeconfig FILE",
	                      "--claim-enforcement repair|deny|warn",
	                      "--foreign-claims ignore|warn|deny",
	                      "--log-format text|json",
	                      "-v, --v N",
	                      "(0..10, default 0)",
	                      "--cert-poll-seconds N",
	                      "(1..86400, default 10)",
	                      "--thread-pool-size N",
	                      "(0..1024, default 0)",
	                      "--max-connections N",
	                      "(1..100000, default 1000)",
	                      "--max-connections-per-source N",
	                      "(0..100000, default 0)",
	                      "--shutdown-grace-seconds N",
	                      "(0..3600, default 25)",
	                      "--version",
	                      "-h, --help"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strstr(out, want[i]) == NULL)
			fail_msg("--help lacks %s:\n%s", want[i], out);
	/* The old spellings are gone. */
	const char *gone[] = {"--port ", "--health-port", "--metrics-port", "--bind-address ",
	                      "--verbose"};
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		if (strstr(out, gone[i]) != NULL)
			fail_msg("--help still has %s:\n%s", gone[i], out);
}

/* "<program> <CMake project version>" on stdout, exit 0, before anything else is checked. */
static void test_version(void **state)
{
	(void)state;
	char err[4096], out[256];
	const char *args[] = {"--version", NULL};
	assert_int_equal(run(args, err, sizeof(err), out, sizeof(out)), 0);
	assert_string_equal(out, "poolkeeper-webhook " PK_VERSION "\n");
	assert_string_equal(err, "");
	const char *bad[] = {"--version=nope", NULL};
	assert_int_equal(run(bad, err, sizeof(err), out, sizeof(out)), 2);
	assert_non_null(strstr(err, "--version must be true or false, got \\\"nope\\\""));
}

static void test_bad_flags(void **state)
{
	(void)state;
	const char *base[] = {"--tls-cert-file", pki.cert, "--tls-private-key-file", pki.key};
#define WITH(...) (const char *const[]){base[0], base[1], base[2], base[3], __VA_ARGS__, NULL}
	expect_usage_error(WITH("--webhook-bind-address=:abc"), "--webhook-bind-address", ":abc");
	expect_usage_error(WITH("--webhook-bind-address", ":70000"), "--webhook-bind-address",
	                   "PORT must be an integer in 0..65535");
	expect_usage_error(WITH("--webhook-bind-address", ":65536"), "--webhook-bind-address",
	                   ":65536");
	expect_usage_error(WITH("--webhook-bind-address", ":-1"), "--webhook-bind-address", ":-1");
	expect_usage_error(WITH("--webhook-bind-address="), "--webhook-bind-address", "empty");
	expect_usage_error(WITH("--webhook-bind-address", "9443"), "--webhook-bind-address",
	                   "the port is missing");
	expect_usage_error(WITH("--webhook-bind-address", "127.0.0.1"), "--webhook-bind-address",
	                   "the port is missing");
	expect_usage_error(WITH("--webhook-bind-address=0"), "--webhook-bind-address",
	                   "the port is missing");
	expect_usage_error(WITH("--health-probe-bind-address=[::1:8081"),
	                   "--health-probe-bind-address", "is not closed");
	expect_usage_error(WITH("--health-probe-bind-address=::1:8081"),
	                   "--health-probe-bind-address", "brackets");
	expect_usage_error(WITH("--health-probe-bind-address=example.org:8081"),
	                   "--health-probe-bind-address", "example.org:8081");
	expect_usage_error(WITH("--metrics-bind-address", "x"), "--metrics-bind-address",
	                   "0 turns it off");
	expect_usage_error(WITH("--cert-poll-seconds=0"), "--cert-poll-seconds",
	                   "must be an integer in 1..86400, got");
	expect_usage_error(WITH("--thread-pool-size=1025"), "--thread-pool-size", "1025");
	expect_usage_error(WITH("--max-connections=0"), "--max-connections", "1..100000");
	expect_usage_error(WITH("--max-connections-per-source=1001"),
	                   "--max-connections-per-source must not exceed --max-connections (1000)",
	                   "1001");
	expect_usage_error(WITH("--max-connections=8", "--max-connections-per-source=9"),
	                   "--max-connections-per-source", "got 9");
	expect_usage_error(WITH("--shutdown-grace-seconds", "1h"), "--shutdown-grace-seconds",
	                   "1h");
	expect_usage_error(WITH("--shutdown-grace-seconds=3601"),
	                   "--shutdown-grace-seconds must be an integer in 0..3600", "3601");
	expect_usage_error(WITH("--cert-poll-seconds", "86401"),
	                   "--cert-poll-seconds must be an integer in 1..86400", "86401");
	expect_usage_error(WITH("--v=11"), "--v must be an integer in 0..10", "11");
	expect_usage_error(WITH("-v", "x"), "--v must be an integer in 0..10", "x");
	expect_usage_error(WITH("-v"), "-v needs a value", NULL);
	expect_usage_error(WITH("-vv"), "--v must be an integer in 0..10", "v");
	expect_usage_error(WITH("--help=yes"), "--help must be true or false", "yes");
	expect_usage_error(WITH("--claim-enforcement=maybe"), "--claim-enforcement", "maybe");
	expect_usage_error(WITH("--claim-enforcement=ignore"), "--claim-enforcement", "ignore");
	expect_usage_error(WITH("--foreign-claims", "block"), "--foreign-claims", "block");
	expect_usage_error(WITH("--log-format=xml"), "--log-format", "xml");
	expect_usage_error(WITH("--bogus"), "--bogus", NULL);
	expect_usage_error(WITH("--port=0"), "unknown flag --port", NULL);
	expect_usage_error(WITH("--bind-address=127.0.0.1"), "unknown flag --bind-address", NULL);
	expect_usage_error(WITH("--verbose"), "unknown flag --verbose", NULL);
	expect_usage_error(WITH("--webhook-bind-address"), "--webhook-bind-address",
	                   "needs a value");
	expect_usage_error(WITH("stray"), "stray", NULL);
	expect_usage_error(WITH("--require-client-cert"),
	                   "--require-client-cert needs --client-ca-file", NULL);
	expect_usage_error(WITH("--client-cert-allowed-names=kube-apiserver"),
	                   "--client-cert-allowed-names", "needs --client-ca-file");
	expect_usage_error(WITH("--require-client-cert=maybe"), "--require-client-cert", "maybe");
	expect_usage_error((const char *const[]){"--tls-private-key-file", pki.key, NULL},
	                   "--tls-cert-file", NULL);
	expect_usage_error((const char *const[]){"--tls-cert-file", pki.cert, NULL},
	                   "--tls-private-key-file", NULL);
#undef WITH
}

static void test_bad_files(void **state)
{
	(void)state;
	char missing[400], other_crt[400], other_key[400], err[8192];
	snprintf(missing, sizeof(missing), "%s/nope/tls.crt", pki.dir);
	snprintf(other_crt, sizeof(other_crt), "%s/main-other.crt", pki.dir);
	snprintf(other_key, sizeof(other_key), "%s/main-other.key", pki.dir);
	assert_true(testpki_issue(&pki, "other", other_crt, other_key));
	const char *a1[] = {"--tls-cert-file",
	                    missing,
	                    "--tls-private-key-file",
	                    pki.key,
	                    "--webhook-bind-address=127.0.0.1:0",
	                    "--health-probe-bind-address=127.0.0.1:0",
	                    "--metrics-bind-address=0",
	                    NULL};
	assert_int_equal(run(a1, err, sizeof(err), NULL, 0), 1);
	assert_non_null(strstr(err, missing));
	const char *a2[] = {"--tls-cert-file",
	                    pki.cert,
	                    "--tls-private-key-file",
	                    other_key,
	                    "--webhook-bind-address=127.0.0.1:0",
	                    "--health-probe-bind-address=127.0.0.1:0",
	                    "--metrics-bind-address=0",
	                    NULL};
	assert_int_equal(run(a2, err, sizeof(err), NULL, 0), 1);
	assert_non_null(strstr(err, other_key));
	assert_non_null(strstr(err, "does not match"));
	const char *a3[] = {"--tls-cert-file", pki.ca /* no key of ours matches */,
	                    "--tls-private-key-file", pki.cert, NULL};
	assert_int_equal(run(a3, err, sizeof(err), NULL, 0), 1);
	assert_non_null(strstr(err, "private key file"));
	/* A client CA that is missing or not PEM stops the start, naming the file. */
	const char *a4[] = {"--tls-cert-file",
	                    pki.cert,
	                    "--tls-private-key-file",
	                    pki.key,
	                    "--client-ca-file",
	                    missing,
	                    "--webhook-bind-address=127.0.0.1:0",
	                    "--health-probe-bind-address=127.0.0.1:0",
	                    "--metrics-bind-address=0",
	                    NULL};
	assert_int_equal(run(a4, err, sizeof(err), NULL, 0), 1);
	assert_non_null(strstr(err, "client CA file"));
	assert_non_null(strstr(err, missing));
	const char *a5[] = {"--tls-cert-file",
	                    pki.cert,
	                    "--tls-private-key-file",
	                    pki.key,
	                    "--client-ca-file",
	                    pki.ca,
	                    "--client-cert-allowed-names",
	                    "kube-apiserver,,x",
	                    "--webhook-bind-address=127.0.0.1:0",
	                    "--health-probe-bind-address=127.0.0.1:0",
	                    "--metrics-bind-address=0",
	                    NULL};
	assert_int_equal(run(a5, err, sizeof(err), NULL, 0), 1);
	assert_non_null(strstr(err, "--client-cert-allowed-names: empty name"));
}

static void test_start_and_stop(void **state)
{
	(void)state;
	char buf[16384], port[64], want[128];
	uint16_t n = proc_free_port();
	snprintf(port, sizeof(port), "--webhook-bind-address=127.0.0.1:%u", n);
	const char *a1[] = {port,
	                    "--health-probe-bind-address=127.0.0.1:0",
	                    "--metrics-bind-address",
	                    "127.0.0.1:0",
	                    "-v",
	                    "1",
	                    NULL};
	struct proc p;
	start_with_pair(&p, a1);
	snprintf(want, sizeof(want), "msg=\"listening\" listener=webhook port=%u ", n);
	proc_expect(&p, want, buf, sizeof(buf));
	assert_non_null(strstr(buf, "msg=\"listening\" listener=health port="));
	assert_non_null(strstr(buf, "msg=\"listening\" listener=metrics port="));
	assert_non_null(strstr(buf, "address=127.0.0.1"));
	assert_null(strstr(buf, "listener=health port=0 "));
	assert_null(strstr(buf, "listener=metrics port=0 "));
	assert_int_equal(proc_stop(&p, SIGTERM), 0);
	proc_slurp(p.err, buf, sizeof(buf));
	assert_non_null(strstr(buf, "msg=\"shutting down\" signal=SIGTERM"));
	assert_non_null(strstr(buf, "msg=\"stopped\""));

	/* The other spelling, JSON logs, SIGINT. */
	n = proc_free_port();
	snprintf(port, sizeof(port), "127.0.0.1:%u", n);
	char certflag[400];
	snprintf(certflag, sizeof(certflag), "--tls-cert-file=%s", pki.cert);
	const char *a3[] = {certflag,
	                    "--tls-private-key-file",
	                    pki.key,
	                    "--webhook-bind-address",
	                    port,
	                    "--health-probe-bind-address",
	                    "127.0.0.1:0",
	                    "--metrics-bind-address=127.0.0.1:0",
	                    "--v=0",
	                    "--log-format",
	                    "json",
	                    "--claim-enforcement=warn",
	                    "--foreign-claims",
	                    "ignore",
	                    NULL};
	start(&p, a3);
	snprintf(want, sizeof(want), "\"listener\":\"webhook\",\"port\":%u,", n);
	proc_expect(&p, want, buf, sizeof(buf));
	assert_int_equal(proc_stop(&p, SIGINT), 0);
	proc_slurp(p.err, buf, sizeof(buf));
	/* Every line is one JSON object. */
	for (char *line = buf, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		*nl = '\0';
		json_t *doc = json_loads(line, 0, NULL);
		if (doc == NULL)
			fail_msg("not a JSON line: %s", line);
		json_decref(doc);
	}
}

/* --metrics-bind-address=0: no metrics listener, said once; the others listen. */
static void test_metrics_off(void **state)
{
	(void)state;
	char buf[16384];
	const char *args[] = {"--webhook-bind-address=127.0.0.1:0",
	                      "--health-probe-bind-address=127.0.0.1:0", "--metrics-bind-address=0",
	                      NULL};
	struct proc p;
	start_with_pair(&p, args);
	proc_expect(&p, "listener=health port=", buf, sizeof(buf));
	assert_int_equal(proc_stop(&p, SIGTERM), 0);
	proc_slurp(p.err, buf, sizeof(buf));
	assert_non_null(strstr(buf, "listener=webhook port="));
	assert_null(strstr(buf, "listener=metrics"));
	const char *off = strstr(buf, "msg=\"metrics off\"");
	assert_non_null(off);
	assert_null(strstr(off + 1, "msg=\"metrics off\""));
}

/* A request in flight when SIGTERM arrives is answered; new connections are refused. */
/*
 * Starts the webhook with the test pair on 127.0.0.1:port (health on a free
 * port, metrics off) and waits for its "listening" line; its stderr so far is
 * left in buf.
 */
static void serve(struct proc *p, uint16_t port, char *buf, size_t cap)
{
	char addr[64], want[128];
	snprintf(addr, sizeof(addr), "--webhook-bind-address=127.0.0.1:%u", port);
	const char *args[] = {addr, "--health-probe-bind-address=127.0.0.1:0",
	                      "--metrics-bind-address=0", NULL};
	start_with_pair(p, args);
	snprintf(want, sizeof(want), "listener=webhook port=%u ", port);
	proc_expect(p, want, buf, cap);
}

/* A TLS client connection to the webhook. */
struct tls {
	struct sockaddr_in sa;
	int fd;
	gnutls_certificate_credentials_t cred;
	gnutls_session_t s;
};

/* A TLS client session with the webhook on 127.0.0.1:port, handshake done. */
static void tls_connect(uint16_t port, struct tls *t)
{
	t->fd = socket(AF_INET, SOCK_STREAM, 0);
	t->sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &t->sa.sin_addr);
	assert_int_equal(connect(t->fd, (struct sockaddr *)&t->sa, sizeof(t->sa)), 0);
	assert_int_equal(gnutls_certificate_allocate_credentials(&t->cred), 0);
	assert_int_equal(gnutls_init(&t->s, GNUTLS_CLIENT), 0);
	assert_int_equal(gnutls_set_default_priority(t->s), 0);
	gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, t->cred);
	gnutls_transport_set_int(t->s, t->fd);
	gnutls_handshake_set_timeout(t->s, 10000);
	gnutls_record_set_timeout(t->s, 10000);
	int rc;
	do
		rc = gnutls_handshake(t->s);
	while (rc < 0 && !gnutls_error_is_fatal(rc));
	assert_int_equal(rc, 0);
}

static void tls_close(struct tls *t)
{
	gnutls_deinit(t->s);
	gnutls_certificate_free_credentials(t->cred);
	close(t->fd);
}

static void test_graceful_stop(void **state)
{
	(void)state;
	char buf[16384];
	uint16_t n = proc_free_port();
	struct proc p;
	serve(&p, n, buf, sizeof(buf));

	struct tls c;
	tls_connect(n, &c);
	const char *head = "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{";
	assert_true(gnutls_record_send(c.s, head, strlen(head)) > 0);
	/* Let the server see the headers, then ask it to stop. */
	struct timespec t = {0, 300 * 1000 * 1000};
	nanosleep(&t, NULL);
	kill(p.pid, SIGTERM);
	assert_true(proc_wait_for(&p, "shutting down", buf, sizeof(buf)));
	nanosleep(&t, NULL);
	/* The listener is closed: a new connection is refused. */
	int fd2 = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_not_equal(connect(fd2, (struct sockaddr *)&c.sa, sizeof(c.sa)), 0);
	close(fd2);
	/* The request in flight still gets its answer, with Connection: close. */
	assert_true(gnutls_record_send(c.s, "}", 1) == 1);
	size_t len = 0;
	for (;;) {
		ssize_t r = gnutls_record_recv(c.s, buf + len, sizeof(buf) - 1 - len);
		if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	if (strncmp(buf, "HTTP/1.1 400", 12) != 0)
		fail_msg("want the in-flight answer, got: %s", buf);
	assert_non_null(strstr(buf, "Connection: close"));
	tls_close(&c);
	assert_int_equal(proc_finish(&p), 0);
}

/*
 * GnuTLS writes every handshake's secrets to $SSLKEYLOGFILE: the webhook
 * removes it from its environment at start, says so, and no file appears
 * after a handshake.
 */
static void test_keylog_cleared(void **state)
{
	(void)state;
	char buf[16384], keylog[512];
	uint16_t n = proc_free_port();
	snprintf(keylog, sizeof(keylog), "%s/keylog.txt", pki.dir);
	unlink(keylog);
	struct proc p;
	/* Only the webhook gets it: this process's own GnuTLS would write too. */
	setenv("SSLKEYLOGFILE", keylog, 1);
	serve(&p, n, buf, sizeof(buf));
	unsetenv("SSLKEYLOGFILE");
	assert_non_null(strstr(buf, "SSLKEYLOGFILE was set; it was removed"));
	struct tls c;
	tls_connect(n, &c);
	const char *req = "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
	assert_true(gnutls_record_send(c.s, req, strlen(req)) > 0);
	ssize_t r;
	do
		r = gnutls_record_recv(c.s, buf, sizeof(buf) - 1);
	while (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED);
	assert_true(r > 0);
	tls_close(&c);
	assert_int_equal(proc_stop(&p, SIGTERM), 0);
	if (access(keylog, F_OK) == 0)
		fail_msg("the webhook wrote TLS secrets to %s", keylog);
}

/* Reads one answer (up to the server's close or `cap`) from a TLS session. */
static size_t tls_read(gnutls_session_t s, char *buf, size_t cap)
{
	size_t len = 0;
	for (;;) {
		ssize_t r = gnutls_record_recv(s, buf + len, cap - 1 - len);
		if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		buf[len] = '\0';
		const char *body = strstr(buf, "\r\n\r\n");
		const char *cl = strstr(buf, "Content-Length: ");
		if (body != NULL && cl != NULL &&
		    (size_t)(buf + len - (body + 4)) >= strtoul(cl + 16, NULL, 10))
			break;
		if (len + 1 >= cap)
			break;
	}
	buf[len] = '\0';
	return len;
}

/* One TLS POST on a new connection; the answer into buf. */
static void tls_post(uint16_t port, const char *body, size_t len, char *buf, size_t cap)
{
	struct tls c;
	tls_connect(port, &c);
	char head[160];
	snprintf(head, sizeof(head),
	         "POST /validate HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: "
	         "%zu\r\n\r\n",
	         len);
	assert_true(gnutls_record_send(c.s, head, strlen(head)) > 0);
	for (size_t off = 0; off < len;) {
		ssize_t w =
		    gnutls_record_send(c.s, body + off, len - off > 16384 ? 16384 : len - off);
		if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED)
			continue;
		assert_true(w > 0);
		off += (size_t)w;
	}
	tls_read(c.s, buf, cap);
	tls_close(&c);
}

static int tcp_dial(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* True when the server closes fd within `ms`. */
static bool closed_within(int fd, int ms)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	char c[512];
	while (poll(&pf, 1, ms) == 1) {
		ssize_t r = recv(fd, c, sizeof(c), 0);
		if (r <= 0)
			return true;
	}
	return false;
}

/* A body of a million empty objects is refused naming the parse limit; smaller ones parse. */
static void post_large_bodies(uint16_t n, char *buf, size_t cap)
{
	/* [{},{},...]: 3 MB, a million values. */
	size_t len = 3000000;
	char *many = malloc(len);
	assert_non_null(many);
	many[0] = '[';
	for (size_t i = 1; i + 3 < len; i += 3)
		memcpy(many + i, "{},", 3);
	len = 1 + (len - 4) / 3 * 3;
	many[len - 1] = ']';
	tls_post(n, many, len, buf, cap);
	if (strncmp(buf, "HTTP/1.1 413", 12) != 0 || strstr(buf, "application/json") == NULL ||
	    strstr(buf, "8388608 are allowed") == NULL)
		fail_msg("want a 413 JSON error naming the parse limit, got: %.400s", buf);
	/* Two 1.4 MB strings (large annotations on object and oldObject) fit the budget. */
	memset(many, 'a', len);
	memcpy(many, "{\"a\":\"", 6);
	memcpy(many + 1400006, "\",\"b\":\"", 7);
	memcpy(many + 2800013, "\"}", 2);
	tls_post(n, many, 2800015, buf, cap);
	if (strncmp(buf, "HTTP/1.1 400", 12) != 0 ||
	    strstr(buf, "not an admission.k8s.io/v1 AdmissionReview") == NULL)
		fail_msg("want 400 naming the AdmissionReview, got: %.400s", buf);
	/* Ten thousand values parse, and are refused for what they are. */
	many[0] = '[';
	for (size_t i = 1; i + 3 < len; i += 3)
		memcpy(many + i, "{},", 3);
	many[30000] = ']';
	tls_post(n, many, 30001, buf, cap);
	if (strncmp(buf, "HTTP/1.1 400", 12) != 0 ||
	    strstr(buf, "not an admission.k8s.io/v1 AdmissionReview") == NULL)
		fail_msg("want 400 naming the AdmissionReview, got: %.400s", buf);
	free(many);
}

/* Four requests in progress fill --max-connections=4: a fifth is closed at once. */
static void fill_connections(uint16_t n)
{
	struct tls busy[4];
	const char *head = "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{";
	for (int i = 0; i < 4; i++) {
		tls_connect(n, &busy[i]);
		assert_true(gnutls_record_send(busy[i].s, head, strlen(head)) > 0);
	}
	struct timespec t = {0, 300 * 1000 * 1000};
	nanosleep(&t, NULL);
	int extra = tcp_dial(n);
	assert_true(closed_within(extra, 1000));
	close(extra);
	for (int i = 0; i < 4; i++)
		tls_close(&busy[i]);
}

/* /healthz answers while slow clients hold more connections than the listener takes. */
static void probe_past_slow_clients(uint16_t hp, char *buf, size_t cap)
{
	int slow[80];
	for (int i = 0; i < 80; i++) {
		slow[i] = tcp_dial(hp);
		assert_int_equal(send(slow[i], "GET /hea", 8, MSG_NOSIGNAL), 8);
	}
	for (int round = 0; round < 3; round++) {
		int fd = tcp_dial(hp);
		const char *get = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
		assert_int_equal(send(fd, get, strlen(get), MSG_NOSIGNAL), (ssize_t)strlen(get));
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		assert_int_equal(poll(&pf, 1, 5000), 1);
		ssize_t r = recv(fd, buf, cap - 1, 0);
		assert_true(r > 0);
		buf[r] = '\0';
		if (strncmp(buf, "HTTP/1.1 200", 12) != 0)
			fail_msg("/healthz with slow clients: %s", buf);
		close(fd);
	}
	for (int i = 0; i < 80; i++)
		close(slow[i]);
}

/*
 * The real binary against hostile clients, with generous limits: a body of
 * a million empty objects is refused naming the parse limit; with every
 * connection busy a new one is closed at once; /healthz answers while slow
 * clients fill the health listener; a valid review still gets through.
 */
static void test_hostile_clients(void **state)
{
	(void)state;
	char buf[16384], addr[64], health[64];
	uint16_t n = proc_free_port(), hp = proc_free_port();
	snprintf(addr, sizeof(addr), "--webhook-bind-address=127.0.0.1:%u", n);
	snprintf(health, sizeof(health), "--health-probe-bind-address=127.0.0.1:%u", hp);
	const char *args[] = {addr, health, "--metrics-bind-address=0", "--max-connections=4",
	                      NULL};
	struct proc p;
	start_with_pair(&p, args);
	proc_expect(&p, "listener=webhook port=", buf, sizeof(buf));

	post_large_bodies(n, buf, sizeof(buf));
	fill_connections(n);
	probe_past_slow_clients(hp, buf, sizeof(buf));

	/* After all that, a valid request is answered. */
	tls_post(n, "{}", 2, buf, sizeof(buf));
	assert_true(strncmp(buf, "HTTP/1.1 400", 12) == 0);
	assert_int_equal(proc_stop(&p, SIGTERM), 0);
}

/*
 * --max-connections-per-source reaches the HTTPS listener: with one allowed
 * and a request in progress, a second connection from 127.0.0.1 is closed
 * at once, though --max-connections has room.
 */
static void test_per_source(void **state)
{
	(void)state;
	char buf[4096], addr[64], health[64];
	uint16_t n = proc_free_port(), hp = proc_free_port();
	snprintf(addr, sizeof(addr), "--webhook-bind-address=127.0.0.1:%u", n);
	snprintf(health, sizeof(health), "--health-probe-bind-address=127.0.0.1:%u", hp);
	const char *args[] = {addr, health, "--metrics-bind-address=0",
	                      "--max-connections-per-source=1", NULL};
	struct proc p;
	start_with_pair(&p, args);
	proc_expect(&p, "listener=webhook port=", buf, sizeof(buf));
	struct tls busy;
	tls_connect(n, &busy);
	const char *head = "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{";
	assert_true(gnutls_record_send(busy.s, head, strlen(head)) > 0);
	struct timespec t = {0, 200 * 1000 * 1000};
	nanosleep(&t, NULL);
	int extra = tcp_dial(n);
	assert_true(closed_within(extra, 1000));
	close(extra);
	tls_close(&busy);
	assert_int_equal(proc_stop(&p, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_help),
	    cmocka_unit_test(test_version),
	    cmocka_unit_test(test_bad_flags),
	    cmocka_unit_test(test_metrics_off),
	    cmocka_unit_test(test_bad_files),
	    cmocka_unit_test(test_start_and_stop),
	    cmocka_unit_test(test_graceful_stop),
	    cmocka_unit_test(test_keylog_cleared),
	    cmocka_unit_test(test_hostile_clients),
	    cmocka_unit_test(test_per_source),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
