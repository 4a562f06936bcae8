/*
 * kube_exec.h - exec credential plugins (client.authentication.k8s.io/v1
 * and v1beta1): what a kubeconfig user's exec entry describes, one run of
 * the plugin, and the ExecCredential it prints. kube_config.h states the
 * rules (process group, stdin, timeout, output caps, KUBERNETES_EXEC_INFO);
 * the config keeps the token cache and decides when a plugin runs.
 *
 * Ownership: pk_kube_exec_new returns a description the caller releases
 * with pk_kube_exec_free. JSON values passed in are borrowed.
 *
 * Threading: a description is immutable once built; pk_kube_exec_fetch may
 * run from any thread (the config allows one run at a time).
 */
#ifndef PK_KUBE_EXEC_H
#define PK_KUBE_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "kube.h"
#include "pk.h"

struct pk_kube_exec;

/* Where the plugin's cluster is, for KUBERNETES_EXEC_INFO (provideClusterInfo). */
struct pk_kube_exec_cluster {
	const char *server;  /* "https://host:port" */
	const json_t *entry; /* the kubeconfig cluster mapping (certificate-authority-data) */
	bool insecure;       /* insecure-skip-tls-verify */
};

/*
 * The user's exec mapping `ex`, checked: a command, a supported apiVersion,
 * interactiveMode other than Always, args and env as lists of strings and
 * of {name, value}. `where` names the user ("kubeconfig F: user \"u\"") and
 * starts every message. allow false refuses any plugin; timeout_ms 0 is
 * PK_KUBE_EXEC_TIMEOUT_MS.
 */
PK_MUST_CHECK int pk_kube_exec_new(const json_t *ex, const struct pk_kube_exec_cluster *cluster,
                                   const char *where, bool allow, unsigned timeout_ms,
                                   struct pk_kube_exec **out, struct pk_err *err);

/* NULL is fine. */
void pk_kube_exec_free(struct pk_kube_exec *x);

/*
 * Runs the plugin once and reads its ExecCredential: *token is a new
 * string the caller frees (and cleanses), *expiry 0 when none was given.
 * The plugin's stderr goes to `log` at debug level.
 */
PK_MUST_CHECK int pk_kube_exec_fetch(const struct pk_kube_exec *x, const struct pk_kube_log *log,
                                     char **token, time_t *expiry, struct pk_err *err);

/* ---- pure; exposed for the config, tests and fuzzing ---- */

/*
 * An exec plugin's stdout (len bytes, need not be NUL-terminated): an
 * ExecCredential of api_version with a non-empty status.token (no NUL, no
 * control characters; surrounding whitespace trimmed) and an optional
 * RFC 3339 status.expirationTimestamp. *token is a new string the caller
 * frees; *expiry is 0 when none was given. `where` starts error messages.
 */
PK_MUST_CHECK int pk_kube_exec_credential_parse(const char *buf, size_t len,
                                                const char *api_version, const char *where,
                                                char **token, time_t *expiry, struct pk_err *err);

/* A bearer token as read (a token file, a plugin's status.token): trims
 * surrounding whitespace in place; refuses an empty token and control
 * characters, which would otherwise end up inside an HTTP header. */
PK_MUST_CHECK int pk_kube_token_clean(char *t, const char *what, struct pk_err *err);

#endif
