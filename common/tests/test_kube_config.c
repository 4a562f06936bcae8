/* test_kube_config.c - kubeconfig, $KUBECONFIG merging, in-cluster config, tokens, exec plugins. */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "kube_config.h"
#include "kube_exec.h"

static char tmpdir[256];
static char fixdir[512];
static char *ca_b64, *cert_b64, *key_b64, *other_b64;

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *s = malloc(n + 1);
	memcpy(s, buf, n + 1);
	return s;
}

static char *b64_file(const char *name)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", fixdir, name);
	char *pem = slurp(path);
	size_t n = strlen(pem);
	char *out = malloc(n * 2 + 4);
	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)pem, (int)n);
	free(pem);
	return out;
}

static void write_file(const char *name, const char *text)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *tpath(const char *name)
{
	static char path[4][1024];
	static int k;
	k = (k + 1) % 4;
	snprintf(path[k], sizeof(path[k]), "%s/%s", tmpdir, name);
	return path[k];
}

static int group_setup(void **state)
{
	(void)state;
	const char *src = getenv("PK_SOURCE_DIR");
	snprintf(fixdir, sizeof(fixdir), "%s/common/tests/fixtures/kube", src ? src : ".");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/pk-kubecfg-XXXXXX");
	if (mkdtemp(tmpdir) == NULL)
		return -1;
	ca_b64 = b64_file("ca.crt");
	cert_b64 = b64_file("client.crt");
	key_b64 = b64_file("client.key");
	other_b64 = b64_file("other.key");
	unsetenv("KUBECONFIG");
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	free(ca_b64);
	free(cert_b64);
	free(key_b64);
	free(other_b64);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A kubeconfig with one cluster, the given user body and the context "ctx". */
static char *kubeconfig(const char *cluster_extra, const char *user_body)
{
	static char buf[16384];
	snprintf(buf, sizeof(buf),
	         "apiVersion: v1\nkind: Config\n"
	         "clusters:\n- name: c1\n  cluster:\n    server: https://127.0.0.1:6443/\n%s"
	         "users:\n- name: u1\n  user:\n%s"
	         "contexts:\n- name: ctx\n  context:\n    cluster: c1\n    user: u1\n"
	         "    namespace: ns1\n"
	         "- name: other\n  context:\n    cluster: c1\n"
	         "current-context: ctx\n",
	         cluster_extra, user_body);
	return buf;
}

static int parse(const char *text, const struct pk_kube_config_opts *o, struct pk_kube_config **c,
                 struct pk_err *err)
{
	memset(err, 0, sizeof(*err));
	return pk_kube_config_parse(text, strlen(text), "test.yaml", tmpdir, o, c, err);
}

static void expect_error(const char *text, const struct pk_kube_config_opts *o, const char *want)
{
	struct pk_kube_config *c = NULL;
	struct pk_err err;
	int rc = parse(text, o, &c, &err);
	if (rc == PK_OK || strstr(err.msg, want) == NULL)
		print_error("error \"%s\" does not contain \"%s\"\n", err.msg, want);
	assert_int_not_equal(rc, PK_OK);
	assert_null(c);
	assert_non_null(strstr(err.msg, want));
}

/* ---- good files ---- */

static void test_data_fields(void **state)
{
	(void)state;
	char cl[4096], user[8192];
	snprintf(cl, sizeof(cl), "    certificate-authority-data: %s\n", ca_b64);
	snprintf(user, sizeof(user), "    client-certificate-data: %s\n    client-key-data: %s\n",
	         cert_b64, key_b64);
	struct pk_kube_config *c;
	struct pk_err err;
	assert_int_equal(parse(kubeconfig(cl, user), NULL, &c, &err), PK_OK);
	assert_string_equal(pk_kube_config_server(c), "https://127.0.0.1:6443");
	assert_string_equal(pk_kube_config_namespace(c), "ns1");
	assert_string_equal(pk_kube_config_context(c), "ctx");
	assert_string_equal(pk_kube_config_user(c), "u1");
	size_t n;
	const char *pem = pk_kube_config_ca(c, &n);
	assert_non_null(pem);
	assert_non_null(strstr(pem, "BEGIN CERTIFICATE"));
	assert_non_null(pk_kube_config_client_cert(c, &n));
	assert_non_null(pk_kube_config_client_key(c, &n));
	assert_false(pk_kube_config_insecure(c));
	assert_int_equal(pk_kube_config_auth(c), PK_KUBE_AUTH_NONE);
	char *tok = (char *)1;
	assert_int_equal(pk_kube_config_token(c, &tok, &err), PK_OK);
	assert_null(tok);
	pk_kube_config_free(c);
}

static void test_file_fields_relative(void **state)
{
	(void)state;
	char cmd[4096];
	snprintf(cmd, sizeof(cmd),
	         "mkdir -p '%s/pki' && cp '%s/ca.crt' '%s/client.crt' '%s/client.key' '%s/pki/'",
	         tmpdir, fixdir, fixdir, fixdir, tmpdir);
	assert_int_equal(system(cmd), 0);
	const char *text = kubeconfig("    certificate-authority: pki/ca.crt\n",
	                              "    client-certificate: pki/client.crt\n"
	                              "    client-key: pki/client.key\n");
	struct pk_kube_config *c;
	struct pk_err err;
	assert_int_equal(parse(text, NULL, &c, &err), PK_OK);
	size_t n;
	assert_non_null(pk_kube_config_ca(c, &n));
	assert_true(n > 100);
	pk_kube_config_free(c);
}

static void test_named_context_and_defaults(void **state)
{
	(void)state;
	struct pk_kube_config_opts o = {.context = "other"};
	struct pk_kube_config *c;
	struct pk_err err;
	assert_int_equal(parse(kubeconfig("", "    token: abc\n"), &o, &c, &err), PK_OK);
	/* context "other" has no namespace and no user */
	assert_string_equal(pk_kube_config_namespace(c), "default");
	assert_int_equal(pk_kube_config_auth(c), PK_KUBE_AUTH_NONE);
	pk_kube_config_free(c);
}

static void test_static_token(void **state)
{
	(void)state;
	struct pk_kube_config *c;
	struct pk_err err;
	assert_int_equal(parse(kubeconfig("", "    token: \"s3cret\"\n"), NULL, &c, &err), PK_OK);
	assert_int_equal(pk_kube_config_auth(c), PK_KUBE_AUTH_TOKEN);
	char *tok;
	assert_int_equal(pk_kube_config_token(c, &tok, &err), PK_OK);
	assert_string_equal(tok, "s3cret");
	free(tok);
	pk_kube_config_free(c);
}

static void test_token_file_rotation(void **state)
{
	(void)state;
	write_file("tok", "first\n");
	struct pk_kube_config_opts o = {.token_recheck_ms = 1};
	struct pk_kube_config *c;
	struct pk_err err;
	assert_int_equal(parse(kubeconfig("", "    tokenFile: tok\n"), &o, &c, &err), PK_OK);
	assert_int_equal(pk_kube_config_auth(c), PK_KUBE_AUTH_TOKEN_FILE);
	char *tok;
	assert_int_equal(pk_kube_config_token(c, &tok, &err), PK_OK);
	assert_string_equal(tok, "first");
	free(tok);
	/* rotated the way the kubelet does it: a new file renamed over the old one */
	write_file("tok.new", "second-token\n");
	assert_int_equal(rename(tpath("tok.new"), tpath("tok")), 0);
	struct timespec ts = {0, 5 * 1000 * 1000};
	nanosleep(&ts, NULL);
	assert_int_equal(pk_kube_config_token(c, &tok, &err), PK_OK);
	assert_string_equal(tok, "second-token");
	free(tok);
	/* a vanished file keeps the last good token */
	assert_int_equal(unlink(tpath("tok")), 0);
	nanosleep(&ts, NULL);
	assert_int_equal(pk_kube_config_token(c, &tok, &err), PK_OK);
	assert_string_equal(tok, "second-token");
	free(tok);
	pk_kube_config_free(c);
}

static void test_token_file_recheck_interval(void **state)
{
	(void)state;
	write_file("tok2", "aaa");
	struct pk_kube_config_opts o = {.token_recheck_ms = 60000};
	struct pk_kube_config *c;
	struct pk_err err;
	assert_int_equal(parse(kubeconfig("", "    tokenFile: tok2\n"), &o, &c, &err), PK_OK);
	write_file("tok2", "bbbb");
	char *tok;
	assert_int_equal(pk_kube_config_token(c, &tok, &err), PK_OK);
	assert_string_equal(tok, "aaa"); /* not re-checked within the interval */
	free(tok);
	pk_kube_config_token_invalidate(c);
	assert_int_equal(pk_kube_config_token(c, &tok, &err), PK_OK);
	assert_string_equal(tok, "bbbb"); /* after a 401 it is */
	free(tok);
	pk_kube_config_free(c);
}

static int warnings;
static char last_warning[1024];
static void log_cb(void *ud, enum pk_kube_level level, const char *msg)
{
	(void)ud;
	if (level == PK_KUBE_LOG_WARN) {
		warnings++;
		snprintf(last_warning, sizeof(last_warning), "%s", msg);
	}
}

static void test_insecure_warns(void **state)
{
	(void)state;
	struct pk_kube_log log = {.fn = log_cb};
	struct pk_kube_config_opts o = {.log = &log};
	struct pk_kube_config *c;
	struct pk_err err;
	warnings = 0;
	assert_int_equal(parse(kubeconfig("    insecure-skip-tls-verify: true\n", "    token: t\n"),
	                       &o, &c, &err),
	                 PK_OK);
	assert_true(pk_kube_config_insecure(c));
	assert_int_equal(warnings, 1);
	assert_non_null(strstr(last_warning, "insecure-skip-tls-verify"));
	pk_kube_config_free(c);
}

/* ---- bad files ---- */

static void test_bad_files(void **state)
{
	(void)state;
	char cl[4096], user[8192];

	expect_error(kubeconfig("", "    token: t\n"),
	             &(struct pk_kube_config_opts){.context = "nope"},
	             "context \"nope\" not found");
	expect_error("apiVersion: v1\nkind: Config\n", NULL, "no current-context");
	expect_error("", NULL, "no current-context");
	expect_error("clusters: [\n", NULL, "test.yaml");
	expect_error(
	    "clusters:\n- name: c1\n  cluster: {}\ncontexts:\n- name: x\n  context: {cluster: c1}\n"
	    "current-context: x\n",
	    NULL, "cluster \"c1\": has no server");
	expect_error("clusters:\n- name: c1\n  cluster: {server: ftp://x}\ncontexts:\n- name: x\n"
	             "  context: {cluster: c1}\ncurrent-context: x\n",
	             NULL, "must start with https://");
	/* a scheme with no host: rejected, not connected to "https:" */
	expect_error("clusters:\n- name: c1\n  cluster: {server: \"https://\"}\ncontexts:\n"
	             "- name: x\n  context: {cluster: c1}\ncurrent-context: x\n",
	             NULL, "server \"https://\" names no host");
	expect_error("clusters:\n- name: c1\n  cluster: {server: \"http:///api\"}\ncontexts:\n"
	             "- name: x\n  context: {cluster: c1}\ncurrent-context: x\n",
	             NULL, "server \"http:///api\" names no host");
	expect_error("clusters:\n- cluster: {server: https://x}\n", NULL, "entry 1 has no name");
	expect_error("contexts:\n- name: x\n  context: {cluster: nope}\ncurrent-context: x\n", NULL,
	             "cluster \"nope\" not found");
	expect_error("clusters:\n- name: c1\n  cluster: {server: https://x}\ncontexts:\n- name: x\n"
	             "  context: {cluster: c1, user: ghost}\ncurrent-context: x\n",
	             NULL, "user \"ghost\" not found");
	expect_error(kubeconfig("    certificate-authority-data: \"!!notbase64\"\n", ""), NULL,
	             "certificate-authority-data is not valid base64");
	expect_error(kubeconfig("    certificate-authority-data: aGVsbG8=\n", ""), NULL,
	             "holds no PEM certificate");
	expect_error(kubeconfig("    certificate-authority: /nonexistent/ca.crt\n", ""), NULL,
	             "/nonexistent/ca.crt");
	snprintf(cl, sizeof(cl),
	         "    certificate-authority-data: %s\n    insecure-skip-tls-verify: true\n",
	         ca_b64);
	expect_error(kubeconfig(cl, ""), NULL, "is not allowed");
	expect_error(kubeconfig("    insecure-skip-tls-verify: yes\n", ""), NULL,
	             "must be true or false");
	expect_error(kubeconfig("", "    client-key-data: \"a*b\"\n"), NULL,
	             "user \"u1\": client-key-data is not valid base64");
	snprintf(user, sizeof(user), "    client-certificate-data: %s\n", cert_b64);
	expect_error(kubeconfig("", user), NULL, "client-certificate given without client-key");
	snprintf(user, sizeof(user),
	         "    client-certificate-data: %s\n    client-key: /nonexistent/k.key\n", cert_b64);
	expect_error(kubeconfig("", user), NULL, "user \"u1\": client-key");
	snprintf(user, sizeof(user), "    client-certificate-data: %s\n    client-key: %s\n",
	         cert_b64, tmpdir); /* a folder: cannot be read as a file */
	expect_error(kubeconfig("", user), NULL, "user \"u1\": client-key");
	snprintf(user, sizeof(user), "    client-certificate-data: %s\n    client-key-data: %s\n",
	         cert_b64, other_b64);
	expect_error(kubeconfig("", user), NULL, "does not match the client certificate");
	snprintf(user, sizeof(user), "    client-certificate-data: %s\n    client-key-data: %s\n",
	         cert_b64, cert_b64);
	expect_error(kubeconfig("", user), NULL, "holds no PEM private key");
	expect_error(kubeconfig("", "    tokenFile: /nonexistent/token\n"), NULL,
	             "/nonexistent/token");
	write_file("empty-token", "\n");
	expect_error(kubeconfig("", "    tokenFile: empty-token\n"), NULL, "token is empty");
	expect_error(kubeconfig("", "    token: 12345\n"), NULL, "token must be a string");
	expect_error(kubeconfig("", "    auth-provider:\n      name: gcp\n"), NULL,
	             "user \"u1\": auth-provider plugins are not supported");
	expect_error(kubeconfig("", "    username: a\n    password: b\n"), NULL,
	             "user \"u1\": basic authentication");
	expect_error("clusters: {a: 1}\n", NULL, "clusters must be a list");
	expect_error("a: 1\n---\nb: 2\n", NULL, "expected one");
}

/* ---- exec plugins ---- */

static char *exec_user(const char *mode, const char *extra)
{
	static char buf[2048];
	snprintf(buf, sizeof(buf),
	         "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
	         "      command: sh\n      args: [\"%s/exec-plugin.sh\", \"%s\"%s%s]\n"
	         "      env:\n      - {name: PK_TEST_PLUGIN_ENV, value: hello}\n"
	         "      installHint: install the test plugin\n"
	         "      interactiveMode: Never\n",
	         fixdir, mode, extra ? ", " : "", extra ? extra : "");
	return buf;
}

static void test_exec_refused(void **state)
{
	(void)state;
	expect_error(kubeconfig("", exec_user("token", NULL)), NULL,
	             "user \"u1\": uses exec credential plugin \"sh\"");
}

static void test_exec_token(void **state)
{
	(void)state;
	struct pk_kube_config_opts o = {.allow_exec = true};
	struct pk_kube_config *c;
	struct pk_err err;
	assert_int_equal(parse(kubeconfig("", exec_user("token", NULL)), &o, &c, &err), PK_OK);
	assert_int_equal(pk_kube_config_auth(c), PK_KUBE_AUTH_EXEC);
	char *tok;
	if (pk_kube_config_token(c, &tok, &err) != PK_OK)
		print_error("%s\n", err.msg);
	assert_non_null(tok);
	assert_string_equal(tok, "tok-hello-yes");
	free(tok);
	pk_kube_config_free(c);
}

static void test_exec_cache_and_invalidate(void **state)
{
	(void)state;
	char counter[1100], extra[1200];
	snprintf(counter, sizeof(counter), "%s", tpath("runs"));
	unlink(counter);
	snprintf(extra, sizeof(extra), "\"%s\"", counter);
	struct pk_kube_config_opts o = {.allow_exec = true};
	struct pk_kube_config *c;
	struct pk_err err;
	assert_int_equal(parse(kubeconfig("", exec_user("counter", extra)), &o, &c, &err), PK_OK);
	char *tok;
	assert_int_equal(pk_kube_config_token(c, &tok, &err), PK_OK);
	assert_string_equal(tok, "run-1");
	free(tok);
	/* no expiry: cached */
	assert_int_equal(pk_kube_config_token(c, &tok, &err), PK_OK);
	assert_string_equal(tok, "run-1");
	free(tok);
	pk_kube_config_token_invalidate(c);
	assert_int_equal(pk_kube_config_token(c, &tok, &err), PK_OK);
	assert_string_equal(tok, "run-2");
	free(tok);
	pk_kube_config_free(c);
}

static void test_exec_expired_reruns(void **state)
{
	(void)state;
	struct pk_kube_config_opts o = {.allow_exec = true};
	struct pk_kube_config *c;
	struct pk_err err;
	assert_int_equal(parse(kubeconfig("", exec_user("expired", NULL)), &o, &c, &err), PK_OK);
	char *tok;
	assert_int_equal(pk_kube_config_token(c, &tok, &err), PK_OK);
	assert_string_equal(tok, "old");
	free(tok);
	pk_kube_config_free(c);
}

static void expect_exec_error(const char *mode, unsigned timeout_ms, const char *want)
{
	struct pk_kube_config_opts o = {.allow_exec = true, .exec_timeout_ms = timeout_ms};
	struct pk_kube_config *c;
	struct pk_err err;
	assert_int_equal(parse(kubeconfig("", exec_user(mode, NULL)), &o, &c, &err), PK_OK);
	char *tok = NULL;
	memset(&err, 0, sizeof(err));
	int rc = pk_kube_config_token(c, &tok, &err);
	if (rc == PK_OK || strstr(err.msg, want) == NULL)
		print_error("mode %s: error \"%s\" does not contain \"%s\"\n", mode, err.msg, want);
	assert_int_not_equal(rc, PK_OK);
	assert_null(tok);
	assert_non_null(strstr(err.msg, "user \"u1\""));
	assert_non_null(strstr(err.msg, want));
	pk_kube_config_free(c);
}

static void test_exec_failures(void **state)
{
	(void)state;
	long long t0 = pk_kube_now_ns();
	expect_exec_error("sleep", 300, "no answer within 300 ms (the exec plugin timeout)");
	assert_true(pk_kube_now_ns() - t0 < 3000000000LL); /* killed, not waited for */
	expect_exec_error("fail", 0, "exited with status 3: plugin: you are not logged in");
	expect_exec_error("garbage", 0, "not an ExecCredential");
	expect_exec_error("wrongkind", 0, "must be kind ExecCredential");
	expect_exec_error("cert", 0, "only tokens are supported");

	/* a command that does not exist: the install hint is shown */
	struct pk_kube_config_opts o = {.allow_exec = true};
	struct pk_kube_config *c;
	struct pk_err err;
	const char *user = "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
	                   "      command: pk-no-such-plugin\n      installHint: get it from x\n";
	assert_int_equal(parse(kubeconfig("", user), &o, &c, &err), PK_OK);
	char *tok;
	assert_int_not_equal(pk_kube_config_token(c, &tok, &err), PK_OK);
	assert_non_null(strstr(err.msg, "get it from x"));
	pk_kube_config_free(c);

	expect_error(
	    kubeconfig("", "    exec:\n      apiVersion: client.authentication.k8s.io/v1alpha1\n"
	                   "      command: x\n"),
	    &o, "is not supported");
	expect_error(kubeconfig("", "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
	                            "      command: x\n      interactiveMode: Always\n"),
	             &o, "needs a terminal");
	expect_error(
	    kubeconfig("", "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"), &o,
	    "exec has no command");
}

/* ---- exec plugins that hang, flood, or run long: written by the test ---- */

/* A user whose exec plugin is the shell script `body`, saved as tmpdir/name. */
static char *script_user(const char *name, const char *body)
{
	static char buf[2048];
	write_file(name, body);
	assert_int_equal(chmod(tpath(name), 0755), 0);
	snprintf(buf, sizeof(buf),
	         "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
	         "      command: \"%s\"\n      interactiveMode: Never\n",
	         tpath(name));
	return buf;
}

struct token_call {
	struct pk_kube_config *c;
	int rc;
	char *tok;
	struct pk_err err;
	long long ms; /* how long the call took */
};

static void *token_thread(void *arg)
{
	struct token_call *t = arg;
	long long t0 = pk_kube_now_ns();
	t->rc = pk_kube_config_token(t->c, &t->tok, &t->err);
	t->ms = (pk_kube_now_ns() - t0) / 1000000LL;
	return NULL;
}

/* pk_kube_config_token on another thread, which must end within limit_s. */
static void token_within(struct token_call *t, int limit_s)
{
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, token_thread, t), 0);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += limit_s;
	int jr = pthread_timedjoin_np(th, NULL, &until);
	if (jr != 0) {
		/* the thread is stuck in the library: leave it, the process ends soon */
		print_error("pk_kube_config_token still running after %d s\n", limit_s);
		fail();
	}
}

/* Whether pid is gone (or a zombie nobody reaped yet). */
static bool process_gone(long pid)
{
	char path[64], st[256];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return true;
	size_t n = fread(st, 1, sizeof(st) - 1, f);
	fclose(f);
	st[n] = '\0';
	const char *paren = strrchr(st, ')');
	return paren != NULL && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

static long read_pid(const char *name)
{
	for (int i = 0; i < 200; i++) {
		FILE *f = fopen(tpath(name), "r");
		if (f != NULL) {
			long pid = 0;
			char line[32] = "";
			if (fgets(line, sizeof(line), f) != NULL)
				pid = strtol(line, NULL, 10);
			fclose(f);
			if (pid > 0)
				return pid;
		}
		struct timespec ts = {0, 10000000L};
		nanosleep(&ts, NULL);
	}
	return -1;
}

static void expect_killed(const char *pidfile)
{
	long pid = read_pid(pidfile);
	assert_true(pid > 0);
	bool gone = false;
	for (int i = 0; i < 200 && !(gone = process_gone(pid)); i++) {
		struct timespec ts = {0, 10000000L};
		nanosleep(&ts, NULL);
	}
	if (!gone)
		print_error("the plugin's child %ld still runs\n", pid);
	assert_true(gone);
}

/* A plugin that sleeps for ever; one that closes its pipes first (the
 * exit is then waited for, not EOF); one that floods stdout; one that
 * floods stderr. Each is stopped by the timeout or the output cap, with its
 * process group, and named in the error. */
static void test_exec_hang_and_flood(void **state)
{
	(void)state;
	static const struct {
		const char *name, *body;
		unsigned timeout_ms;
		const char *want;
		const char *pidfile; /* a child the plugin started, which must die too */
	} v[] = {
	    {"hang.sh", "#!/bin/sh\nsleep 100000 &\necho $! >\"$0.pid\"\nexec sleep 100000\n", 400,
	     "no answer within 400 ms (the exec plugin timeout); it was killed", "hang.sh.pid"},
	    {"closed.sh",
	     "#!/bin/sh\nexec >/dev/null 2>&1\nsleep 100000 &\necho $! >\"$0.pid\"\n"
	     "exec sleep 100000\n",
	     400, "no answer within 400 ms", "closed.sh.pid"},
	    {"flood.sh", "#!/bin/sh\nexec yes pk-flood\n", 20000,
	     "printed more than 1048576 bytes on stdout; it was killed", NULL},
	    {"flood-err.sh", "#!/bin/sh\nexec yes pk-flood >&2\n", 20000,
	     "printed more than 1048576 bytes on stderr; it was killed", NULL},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct pk_kube_config_opts o = {.allow_exec = true,
		                                .exec_timeout_ms = v[i].timeout_ms};
		struct pk_kube_config *c;
		struct pk_err err;
		assert_int_equal(
		    parse(kubeconfig("", script_user(v[i].name, v[i].body)), &o, &c, &err), PK_OK);
		struct token_call t = {.c = c};
		token_within(&t, 10);
		if (t.rc == PK_OK || strstr(t.err.msg, v[i].want) == NULL)
			print_error("%s: \"%s\"\n", v[i].name, t.err.msg);
		assert_int_not_equal(t.rc, PK_OK);
		/* a flood is over the cap, a hang is a failed run */
		assert_int_equal(t.rc, v[i].timeout_ms > 10000 ? PK_ERR_TOO_BIG : PK_ERR_INVALID);
		assert_null(t.tok);
		assert_non_null(strstr(t.err.msg, v[i].want));
		assert_non_null(strstr(t.err.msg, tpath(v[i].name))); /* names the command */
		if (v[i].timeout_ms > 10000)
			assert_true(t.ms < 8000); /* the cap stopped it, not the timeout */
		if (v[i].pidfile != NULL)
			expect_killed(v[i].pidfile);
		pk_kube_config_free(c);
	}
}

static int count_lines(const char *name)
{
	FILE *f = fopen(tpath(name), "r");
	int n = 0, ch;
	if (f == NULL)
		return 0;
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* While the plugin runs, the config's lock is free: invalidation does not
 * wait for it, and a second caller waits for that run instead of starting
 * another, and shares its result (a token, or the failure). */
static void test_exec_runs_without_the_lock(void **state)
{
	(void)state;
	static const struct {
		const char *name, *body, *want_tok, *want_err;
	} v[] = {
	    {"slow.sh",
	     "#!/bin/sh\necho run >>\"$0.runs\"\nsleep 1\n"
	     "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
	     "\"ExecCredential\",\"status\":{\"token\":\"slow-token\"}}\\n'\n",
	     "slow-token", NULL},
	    {"slowfail.sh", "#!/bin/sh\necho run >>\"$0.runs\"\nsleep 1\necho nope >&2\nexit 3\n",
	     NULL, "exited with status 3: nope"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char runs[64];
		snprintf(runs, sizeof(runs), "%s.runs", v[i].name);
		unlink(tpath(runs));
		struct pk_kube_config_opts o = {.allow_exec = true, .exec_timeout_ms = 10000};
		struct pk_kube_config *c;
		struct pk_err err;
		assert_int_equal(
		    parse(kubeconfig("", script_user(v[i].name, v[i].body)), &o, &c, &err), PK_OK);
		struct token_call a = {.c = c}, b = {.c = c};
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, token_thread, &a), 0);
		for (int k = 0; k < 500 && count_lines(runs) == 0; k++) {
			struct timespec ts = {0, 10000000L};
			nanosleep(&ts, NULL);
		}
		assert_int_equal(count_lines(runs), 1); /* the plugin is running now */
		long long t0 = pk_kube_now_ns();
		pk_kube_config_token_invalidate(c);
		long long inval_ms = (pk_kube_now_ns() - t0) / 1000000LL;
		if (inval_ms >= 300)
			print_error("invalidate waited %lld ms for the plugin\n", inval_ms);
		assert_true(inval_ms < 300);
		token_thread(&b); /* waits for a's run */
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_int_equal(count_lines(runs), 1); /* one run served both */
		for (int k = 0; k < 2; k++) {
			struct token_call *t = k ? &b : &a;
			if (v[i].want_tok != NULL) {
				assert_int_equal(t->rc, PK_OK);
				assert_string_equal(t->tok, v[i].want_tok);
			} else {
				assert_int_not_equal(t->rc, PK_OK);
				assert_non_null(strstr(t->err.msg, v[i].want_err));
			}
			free(t->tok);
		}
		pk_kube_config_free(c);
	}
}

/* The ExecCredential parser on its own (table-driven). */
static void test_exec_credential_parse(void **state)
{
	(void)state;
	static const char v1[] = "client.authentication.k8s.io/v1";
	static const struct {
		const char *in;
		const char *tok;  /* NULL: refused */
		long long expiry; /* when tok */
		const char *want; /* part of the error when refused */
	} v[] = {
	    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
	     "\"status\":{\"token\":\" abc \\n\"}}",
	     "abc", 0, NULL},
	    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
	     "\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"2026-01-02T03:04:05.5+01:00\"}"
	     "}",
	     "t", 1767319445LL, NULL},
	    {"{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\","
	     "\"status\":{\"token\":\"t\"}}",
	     NULL, 0, "apiVersion client.authentication.k8s.io/v1"},
	    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
	     "\"status\":{\"token\":\"a\\u0000b\"}}",
	     NULL, 0, "NUL"},
	    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
	     "\"status\":{\"token\":\"a\\u0001b\"}}",
	     NULL, 0, "control character"},
	    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
	     "\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"2026-13-01T00:00:00Z\"}}",
	     NULL, 0, "bad expirationTimestamp"},
	    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
	     "\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"\\u0007\"}}",
	     NULL, 0, "bad expirationTimestamp \"\\x07\""},
	    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
	     "\"status\":{\"token\":7}}",
	     NULL, 0, "no status.token"},
	    {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\"}",
	     NULL, 0, "no status.token"},
	    {"[]", NULL, 0, "not an ExecCredential"},
	    {"", NULL, 0, "not an ExecCredential"},
	    {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", NULL, 0, "not an ExecCredential"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char *tok = (char *)"unset";
		time_t exp = 1;
		struct pk_err err;
		memset(&err, 0, sizeof(err));
		int rc = pk_kube_exec_credential_parse(v[i].in, strlen(v[i].in), v1, "plugin p",
		                                       &tok, &exp, &err);
		if (v[i].tok != NULL) {
			if (rc != PK_OK)
				print_error("vector %zu: %s\n", i, err.msg);
			assert_int_equal(rc, PK_OK);
			assert_string_equal(tok, v[i].tok);
			assert_int_equal((long long)exp, v[i].expiry);
			free(tok);
			continue;
		}
		if (rc == PK_OK || strstr(err.msg, v[i].want) == NULL)
			print_error("vector %zu: \"%s\"\n", i, err.msg);
		assert_int_not_equal(rc, PK_OK);
		assert_null(tok);
		assert_non_null(strstr(err.msg, "plugin p: "));
		assert_non_null(strstr(err.msg, v[i].want));
	}
}

/* ---- $KUBECONFIG merging ---- */

static void test_kubeconfig_env_merge(void **state)
{
	(void)state;
	write_file("a.yaml", "clusters:\n- name: c1\n  cluster: {server: \"https://first:1\"}\n"
	                     "contexts:\n- name: x\n  context: {cluster: c1, namespace: from-a}\n"
	                     "current-context: x\n");
	write_file("b.yaml", "clusters:\n- name: c1\n  cluster: {server: \"https://second:2\"}\n"
	                     "- name: c2\n  cluster: {server: \"https://only-b:3\"}\n"
	                     "contexts:\n- name: y\n  context: {cluster: c2}\n"
	                     "current-context: y\n");
	char env[4096];
	snprintf(env, sizeof(env), "%s:%s:%s", tpath("missing.yaml"), tpath("a.yaml"),
	         tpath("b.yaml"));
	setenv("KUBECONFIG", env, 1);
	struct pk_kube_config *c;
	struct pk_err err;
	assert_int_equal(pk_kube_config_load(NULL, &c, &err), PK_OK);
	/* current-context from the first file that sets it; c1 from the first file */
	assert_string_equal(pk_kube_config_context(c), "x");
	assert_string_equal(pk_kube_config_server(c), "https://first:1");
	assert_string_equal(pk_kube_config_namespace(c), "from-a");
	pk_kube_config_free(c);
	struct pk_kube_config_opts o = {.context = "y"};
	assert_int_equal(pk_kube_config_load(&o, &c, &err), PK_OK);
	assert_string_equal(pk_kube_config_server(c), "https://only-b:3");
	pk_kube_config_free(c);

	snprintf(env, sizeof(env), "%s", tpath("missing.yaml"));
	setenv("KUBECONFIG", env, 1);
	assert_int_not_equal(pk_kube_config_load(NULL, &c, &err), PK_OK);
	assert_non_null(strstr(err.msg, "missing.yaml"));
	unsetenv("KUBECONFIG");

	/* an explicit path wins over $KUBECONFIG */
	setenv("KUBECONFIG", tpath("b.yaml"), 1);
	o = (struct pk_kube_config_opts){.path = tpath("a.yaml")};
	assert_int_equal(pk_kube_config_load(&o, &c, &err), PK_OK);
	assert_string_equal(pk_kube_config_context(c), "x");
	pk_kube_config_free(c);
	unsetenv("KUBECONFIG");
}

/* ---- in-cluster ---- */

static void test_incluster(void **state)
{
	(void)state;
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/sa' && cp '%s/ca.crt' '%s/sa/ca.crt'", tmpdir,
	         fixdir, tmpdir);
	assert_int_equal(system(cmd), 0);
	write_file("sa/token", "sa-token-1\n");
	write_file("sa/namespace", "poolkeeper-system\n");
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	struct pk_kube_config_opts o = {.incluster_dir = tpath("sa"), .token_recheck_ms = 1};
	struct pk_kube_config *c;
	struct pk_err err;
	assert_int_equal(pk_kube_config_load(&o, &c, &err), PK_OK);
	assert_string_equal(pk_kube_config_server(c), "https://10.96.0.1:443");
	assert_string_equal(pk_kube_config_namespace(c), "poolkeeper-system");
	assert_string_equal(pk_kube_config_source(c), "in-cluster");
	char *tok;
	assert_int_equal(pk_kube_config_token(c, &tok, &err), PK_OK);
	assert_string_equal(tok, "sa-token-1");
	free(tok);
	pk_kube_config_free(c);

	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	assert_int_equal(pk_kube_config_load_incluster(NULL, &o, &c, &err), PK_OK);
	assert_string_equal(pk_kube_config_server(c), "https://[fd00::1]:443");
	pk_kube_config_free(c);

	static const char *const bad_ports[] = {
	    "99999", "0",    "65536", "-1",    "+443",
	    " 443",  "443 ", "443x",  "0x1bb", "18446744073709551617"};
	for (size_t i = 0; i < sizeof(bad_ports) / sizeof(bad_ports[0]); i++) {
		setenv("KUBERNETES_SERVICE_PORT", bad_ports[i], 1);
		assert_int_equal(pk_kube_config_load_incluster(NULL, &o, &c, &err), PK_ERR_INVALID);
		assert_non_null(strstr(err.msg, "not a port"));
	}
	setenv("KUBERNETES_SERVICE_PORT", "65535", 1);
	assert_int_equal(pk_kube_config_load_incluster(NULL, &o, &c, &err), PK_OK);
	assert_string_equal(pk_kube_config_server(c), "https://[fd00::1]:65535");
	pk_kube_config_free(c);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_not_equal(pk_kube_config_load_incluster(tpath("nope"), &o, &c, &err), PK_OK);
	assert_non_null(strstr(err.msg, "CA"));
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	assert_int_not_equal(pk_kube_config_load_incluster(NULL, &o, &c, &err), PK_OK);
	assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_HOST"));
}

static void test_base64(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		const char *out; /* NULL: invalid */
	} v[] = {
	    {"", ""},
	    {"aGVsbG8=", "hello"},
	    {"aGVsbG8", "hello"},
	    {"aGVsbA==", "hell"},
	    {"aGVs\nbA==", "hell"},
	    {"aGVsbG8h", "hello!"},
	    {"a", NULL},
	    {"aGVsbG8=x", NULL},
	    {"aGVs*G8=", NULL},
	    {"aGVsbG8==", NULL},
	    {"====", NULL},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		unsigned char *out;
		size_t n;
		int rc = pk_base64_decode(v[i].in, strlen(v[i].in), &out, &n);
		if (v[i].out == NULL) {
			assert_int_not_equal(rc, PK_OK);
			continue;
		}
		assert_int_equal(rc, PK_OK);
		assert_int_equal(n, strlen(v[i].out));
		assert_memory_equal(out, v[i].out, n);
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_data_fields),
	    cmocka_unit_test(test_file_fields_relative),
	    cmocka_unit_test(test_named_context_and_defaults),
	    cmocka_unit_test(test_static_token),
	    cmocka_unit_test(test_token_file_rotation),
	    cmocka_unit_test(test_token_file_recheck_interval),
	    cmocka_unit_test(test_insecure_warns),
	    cmocka_unit_test(test_bad_files),
	    cmocka_unit_test(test_exec_refused),
	    cmocka_unit_test(test_exec_token),
	    cmocka_unit_test(test_exec_cache_and_invalidate),
	    cmocka_unit_test(test_exec_expired_reruns),
	    cmocka_unit_test(test_exec_failures),
	    cmocka_unit_test(test_exec_hang_and_flood),
	    cmocka_unit_test(test_exec_runs_without_the_lock),
	    cmocka_unit_test(test_exec_credential_parse),
	    cmocka_unit_test(test_kubeconfig_env_merge),
	    cmocka_unit_test(test_incluster),
	    cmocka_unit_test(test_base64),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
