/*
 * kube_config.h - where the Kubernetes API is and how poolkeeper proves who
 * it is: kubeconfig files (also merged from $KUBECONFIG), in-cluster
 * service-account config, bearer tokens, token files that rotate, exec
 * credential plugins (kube_exec.h) and client certificates.
 *
 * Sources, in the order pk_kube_config_load tries them (controller-runtime's
 * order, so a poolkeeper binary finds the same cluster kubectl would):
 *   1. opts->path, when set (one file);
 *   2. $KUBECONFIG: a ':'-separated list of files, merged by kubectl's rules:
 *      for clusters, users and contexts the first file that defines a name
 *      wins; current-context is the first one set; files that do not exist
 *      are skipped; relative paths inside a file are relative to that file's
 *      folder;
 *   3. in-cluster config, when KUBERNETES_SERVICE_HOST is set: the server
 *      https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, and the files
 *      token, ca.crt and namespace in opts->incluster_dir (default
 *      /var/run/secrets/kubernetes.io/serviceaccount);
 *   4. $HOME/.kube/config.
 *
 * What a kubeconfig user entry may hold, and what is refused with a message
 * that names the user entry: client-certificate(-data) with client-key(-data)
 * (both or neither; the key must match the certificate), token, tokenFile,
 * exec (client.authentication.k8s.io/v1 or v1beta1; run only when
 * opts->allow_exec; the plugin must print an ExecCredential with
 * status.token); auth-provider and username/password are refused.
 *
 * An exec plugin runs in a process group of its own, with stdin from
 * /dev/null, and must have exited and closed its output within
 * opts->exec_timeout_ms (default 30 s; client-go has none, but a daemon has
 * no one to notice a hung plugin); otherwise it and its process group are
 * killed and the error names the user, the plugin command and the timeout.
 * More than PK_KUBE_CREDENTIAL_MAX bytes on stdout or on stderr also kills
 * it. Only one run at a time, and the config's lock is not held while it
 * runs: other threads keep using a token that has not expired yet, or wait
 * for that run and share its result (token or error).
 * Cluster entries: server (required), certificate-authority(-data),
 * insecure-skip-tls-verify (accepted, reported as a warning through the log
 * callback on every load; refused together with a CA, as kubectl does).
 * tls-server-name and proxy-url are not supported and are ignored: the
 * server's certificate is then checked against the host in server (which
 * fails closed), and proxies come from HTTPS_PROXY/NO_PROXY as libcurl
 * reads them.
 *
 * Tokens: a static token is returned as is. A token file (tokenFile, or the
 * in-cluster token) is re-read when its mtime, size or inode changed,
 * checked at most every opts->token_recheck_ms (projected service-account
 * tokens rotate hourly). An exec credential is cached until 10 s before its
 * expirationTimestamp, or until pk_kube_config_token_invalidate (after a 401).
 *
 * Ownership: pk_kube_config_load* return a config the caller releases with
 * pk_kube_config_free, after every client using it is gone. Strings and
 * buffers returned by the accessors are borrowed from the config.
 *
 * Threading: loading is not shared. A loaded config is immutable except for
 * the token cache, which a mutex guards: pk_kube_config_token and
 * pk_kube_config_token_invalidate may be called from any thread at once.
 */
#ifndef PK_KUBE_CONFIG_H
#define PK_KUBE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "kube.h"
#include "kube_config_member.h"
#include "pk.h"

#define PK_KUBE_INCLUSTER_DIR    "/var/run/secrets/kubernetes.io/serviceaccount"
#define PK_KUBE_CONFIG_MAX_BYTES (4u << 20) /* kubeconfig file */
#define PK_KUBE_TOKEN_RECHECK_MS 10000

struct pk_kube_config;

struct pk_kube_config_opts {
	const char *path;              /* a kubeconfig file; NULL: the search order above */
	const char *context;           /* NULL: current-context */
	const char *incluster_dir;     /* NULL: PK_KUBE_INCLUSTER_DIR */
	const struct pk_kube_log *log; /* copied; may be NULL */
	bool allow_exec;               /* run exec credential plugins; false refuses them */
	unsigned exec_timeout_ms;      /* 0: PK_KUBE_EXEC_TIMEOUT_MS */
	unsigned token_recheck_ms;     /* 0: PK_KUBE_TOKEN_RECHECK_MS */
};

enum pk_kube_auth {
	PK_KUBE_AUTH_NONE = 0,   /* anonymous (or client certificate only) */
	PK_KUBE_AUTH_TOKEN,      /* static bearer token */
	PK_KUBE_AUTH_TOKEN_FILE, /* bearer token read from a file */
	PK_KUBE_AUTH_EXEC,       /* bearer token from an exec credential plugin */
};

/* The search order above. opts may be NULL. */
PK_MUST_CHECK int pk_kube_config_load(const struct pk_kube_config_opts *opts,
                                      struct pk_kube_config **out, struct pk_err *err);

/* The given kubeconfig files, merged by kubectl's rules (missing files are
 * skipped, but at least one must exist). opts->path is ignored. */
PK_MUST_CHECK int pk_kube_config_load_files(const char *const *paths, size_t n,
                                            const struct pk_kube_config_opts *opts,
                                            struct pk_kube_config **out, struct pk_err *err);

/* A kubeconfig held in memory; `source` names it in messages and relative
 * paths inside resolve against `base_dir` (NULL: the current folder). */
PK_MUST_CHECK int pk_kube_config_parse(const char *buf, size_t len, const char *source,
                                       const char *base_dir, const struct pk_kube_config_opts *opts,
                                       struct pk_kube_config **out, struct pk_err *err);

/* In-cluster config from dir (NULL: opts->incluster_dir, then the default)
 * and KUBERNETES_SERVICE_HOST/PORT. */
PK_MUST_CHECK int pk_kube_config_load_incluster(const char *dir,
                                                const struct pk_kube_config_opts *opts,
                                                struct pk_kube_config **out, struct pk_err *err);

/* NULL is fine. */
void pk_kube_config_free(struct pk_kube_config *cfg);

/* "https://host:port" without a trailing '/'. */
const char *pk_kube_config_server(const struct pk_kube_config *cfg);
/* The context's namespace, the in-cluster namespace file, or "default". */
const char *pk_kube_config_namespace(const struct pk_kube_config *cfg);
/* The names chosen, "" for in-cluster config. */
const char *pk_kube_config_context(const struct pk_kube_config *cfg);
const char *pk_kube_config_user(const struct pk_kube_config *cfg);
/* Where it came from: a file name, a ':'-list, or "in-cluster". */
const char *pk_kube_config_source(const struct pk_kube_config *cfg);

/* PEM bytes (not NUL-counted in *len), or NULL when absent. */
const char *pk_kube_config_ca(const struct pk_kube_config *cfg, size_t *len);
const char *pk_kube_config_client_cert(const struct pk_kube_config *cfg, size_t *len);
const char *pk_kube_config_client_key(const struct pk_kube_config *cfg, size_t *len);
bool pk_kube_config_insecure(const struct pk_kube_config *cfg);
enum pk_kube_auth pk_kube_config_auth(const struct pk_kube_config *cfg);

/*
 * The bearer token to send now, as a new string the caller frees; *token is
 * NULL when the config has no token auth. May read the token file or run
 * the exec plugin, or wait for another thread's run (blocking up to about
 * the exec timeout). Thread-safe.
 */
PK_MUST_CHECK int pk_kube_config_token(struct pk_kube_config *cfg, char **token,
                                       struct pk_err *err);

/* After the server answered 401: the next pk_kube_config_token re-reads the
 * token file and re-runs the exec plugin. Thread-safe. */
void pk_kube_config_token_invalidate(struct pk_kube_config *cfg);

/* The log callback the config was loaded with (for the client). */
const struct pk_kube_log *pk_kube_config_log(const struct pk_kube_config *cfg);

#endif
