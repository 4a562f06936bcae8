/*
 * fuzz_kube_config.c - libFuzzer target for the two inputs poolkeeper takes
 * from outside to reach the API server: a kubeconfig (YAML, merged and
 * checked into a config) and an exec credential plugin's stdout (an
 * ExecCredential). Any input must give a config or an error message, never
 * a crash, a leak or an unbounded message.
 *
 * Input layout: byte 0 chooses the parser (even: kubeconfig, odd:
 * ExecCredential of client.authentication.k8s.io/v1 or, when bit 1 is set,
 * v1beta1); the rest is the document. The seeds start with '0' (a
 * kubeconfig), '1' (v1) or '3' (v1beta1) so that they stay readable.
 *
 * Nothing is executed: exec plugins are only parsed (allow_exec lets the
 * exec entry be checked; a plugin runs only from pk_kube_config_token,
 * which is never called here for exec). A kubeconfig may name files
 * (certificate-authority, client-key, tokenFile), which are read: inputs
 * that name anything under /dev, /proc or /sys are skipped, so that a
 * device or a FIFO cannot block or flood the run.
 */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube_config.h"
#include "kube_exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool names_special_files(const char *s, size_t n)
{
	static const char *const bad[] = {"/dev", "/proc", "/sys"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (memmem(s, n, bad[i], strlen(bad[i])) != NULL)
			return true;
	return false;
}

static void check_msg(const struct pk_err *err)
{
	if (strnlen(err->msg, sizeof(err->msg)) >= sizeof(err->msg))
		abort();
}

static void fuzz_kubeconfig(const char *buf, size_t len)
{
	if (names_special_files(buf, len))
		return;
	struct pk_kube_config_opts o = {.allow_exec = true};
	struct pk_kube_config *c = NULL;
	struct pk_err err;
	memset(&err, 0, sizeof(err));
	if (pk_kube_config_parse(buf, len, "fuzz", "/nonexistent-pk-fuzz", &o, &c, &err) != PK_OK) {
		if (c != NULL)
			abort();
		check_msg(&err);
		return;
	}
	/* what the client reads from a loaded config */
	size_t n;
	const char *server = pk_kube_config_server(c);
	if (server == NULL ||
	    (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0))
		abort();
	if (pk_kube_config_namespace(c) == NULL || pk_kube_config_context(c) == NULL ||
	    pk_kube_config_user(c) == NULL || pk_kube_config_source(c) == NULL)
		abort();
	const char *ca = pk_kube_config_ca(c, &n);
	if (ca != NULL && n == 0)
		abort();
	if (ca != NULL && pk_kube_config_insecure(c))
		abort(); /* refused together, as kubectl does */
	const char *cert = pk_kube_config_client_cert(c, &n);
	const char *key = pk_kube_config_client_key(c, &n);
	if ((cert == NULL) != (key == NULL))
		abort();
	enum pk_kube_auth a = pk_kube_config_auth(c);
	if (a == PK_KUBE_AUTH_TOKEN) {
		char *t = NULL;
		if (pk_kube_config_token(c, &t, &err) != PK_OK || t == NULL)
			abort();
		free(t);
	}
	pk_kube_config_free(c);
}

static void fuzz_exec_credential(const char *api, const char *buf, size_t len)
{
	char *tok = NULL;
	time_t exp = 0;
	struct pk_err err;
	memset(&err, 0, sizeof(err));
	int rc = pk_kube_exec_credential_parse(buf, len, api, "fuzz", &tok, &exp, &err);
	if (rc != PK_OK) {
		if (tok != NULL)
			abort();
		check_msg(&err);
		return;
	}
	/* a token goes into an HTTP header: non-empty, no control characters */
	if (tok == NULL || tok[0] == '\0')
		abort();
	for (const char *p = tok; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
	free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *buf = (const char *)data + 1;
	size_t len = size - 1;
	if ((data[0] & 1) == 0)
		fuzz_kubeconfig(buf, len);
	else
		fuzz_exec_credential((data[0] & 2) ? "client.authentication.k8s.io/v1beta1"
		                                   : "client.authentication.k8s.io/v1",
		                     buf, len);
	return 0;
}
