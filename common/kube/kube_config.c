/*
 * kube_config.c - kubeconfig and in-cluster config, token files and exec
 * credential plugins. See kube_config.h for the rules followed.
 */
#define _GNU_SOURCE /* pipe2 */
#include "kube_config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "manifest.h"

extern char **environ;

struct pk_kube_config {
	char *source;
	char *server;
	char *ns;
	char *context;
	char *user;
	char *ca;
	size_t ca_len;
	char *cert;
	size_t cert_len;
	char *key;
	size_t key_len;
	bool insecure;
	enum pk_kube_auth auth;
	struct pk_kube_log log;

	char *token_static;
	char *token_file;

	/* exec plugin, as the kubeconfig describes it */
	char **exec_argv; /* command and args, NULL-terminated */
	char **exec_env;  /* NAME=VALUE, NULL-terminated */
	char *exec_api;
	char *exec_hint;
	char *exec_info; /* KUBERNETES_EXEC_INFO value */
	unsigned exec_timeout_ms;
	unsigned recheck_ms;

	/* token cache, under mu */
	pthread_mutex_t mu;
	/* One exec plugin run at a time, and mu is not held while it runs (up to
	 * exec_timeout_ms): other threads keep their cached token, invalidate,
	 * or wait on exec_done for that run's result. */
	pthread_cond_t exec_done;
	bool exec_running;
	unsigned long exec_runs; /* finished runs */
	int exec_rc;             /* the last run's result, and its message */
	struct pk_err exec_err;
	char *token;
	long long checked_ns;  /* when the token file was last stat'ed */
	struct timespec mtime; /* token file identity at the last read */
	off_t size;
	ino_t ino;
	time_t expiry; /* exec credential expiry (wall clock), 0 = none */
	bool valid;
};

/* ---- small helpers ---- */

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void free_strv(char **v)
{
	if (v == NULL)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

void pk_kube_config_free(struct pk_kube_config *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->source);
	free(cfg->server);
	free(cfg->ns);
	free(cfg->context);
	free(cfg->user);
	free(cfg->ca);
	if (cfg->key != NULL)
		OPENSSL_cleanse(cfg->key, cfg->key_len);
	free(cfg->key);
	free(cfg->cert);
	free(cfg->token_static);
	free(cfg->token_file);
	free_strv(cfg->exec_argv);
	free_strv(cfg->exec_env);
	free(cfg->exec_api);
	free(cfg->exec_hint);
	free(cfg->exec_info);
	if (cfg->token != NULL)
		OPENSSL_cleanse(cfg->token, strlen(cfg->token));
	free(cfg->token);
	pthread_cond_destroy(&cfg->exec_done);
	pthread_mutex_destroy(&cfg->mu);
	free(cfg);
}

static struct pk_kube_config *config_new(const struct pk_kube_config_opts *o)
{
	struct pk_kube_config *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->exec_done, NULL);
	if (o != NULL && o->log != NULL)
		c->log = *o->log;
	c->exec_timeout_ms = o && o->exec_timeout_ms ? o->exec_timeout_ms : PK_KUBE_EXEC_TIMEOUT_MS;
	c->recheck_ms = o && o->token_recheck_ms ? o->token_recheck_ms : PK_KUBE_TOKEN_RECHECK_MS;
	return c;
}

/* Joins dir and a relative path; absolute paths and NULL dir are copied. */
static char *resolve_path(const char *dir, const char *p)
{
	if (p == NULL)
		return NULL;
	if (p[0] == '/' || dir == NULL || dir[0] == '\0')
		return strdup(p);
	size_t n = strlen(dir) + strlen(p) + 2;
	char *s = malloc(n);
	if (s != NULL)
		snprintf(s, n, "%s/%s", dir, p);
	return s;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (slash == NULL)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* Reads a whole file (capped) into a NUL-terminated buffer. */
static int read_small_file(const char *path, const char *what, char **buf, size_t *len,
                           struct pk_err *err)
{
	struct pk_err ferr;
	int rc = pk_manifest_read_file(path, PK_KUBE_CREDENTIAL_MAX, buf, len, &ferr);
	if (rc != PK_OK)
		return pk_err_set(err, rc, "%s: %s", what, ferr.msg);
	return PK_OK;
}

/*
 * A string member; NULL when absent. A present member of another type is an
 * error (a YAML plain scalar like `token: 1234` loads as an integer).
 */
static int get_str(const json_t *obj, const char *key, const char *where, const char **out,
                   struct pk_err *err)
{
	*out = NULL;
	json_t *v = json_object_get(obj, key);
	if (v == NULL || json_is_null(v))
		return PK_OK;
	if (!json_is_string(v))
		return pk_err_set(err, PK_ERR_INVALID, "%s: %s must be a string", where, key);
	*out = json_string_value(v);
	if ((*out)[0] == '\0')
		*out = NULL;
	return PK_OK;
}

static int get_bool(const json_t *obj, const char *key, const char *where, bool *out,
                    struct pk_err *err)
{
	json_t *v = json_object_get(obj, key);
	*out = false;
	if (v == NULL || json_is_null(v))
		return PK_OK;
	if (!json_is_boolean(v))
		return pk_err_set(err, PK_ERR_INVALID, "%s: %s must be true or false", where, key);
	*out = json_is_true(v);
	return PK_OK;
}

/* PEM bytes from KEY-data (base64) or KEY (a file). Both absent: *out NULL. */
static int load_pem(const json_t *obj, const char *file_key, const char *data_key,
                    const char *where, char **out, size_t *len, struct pk_err *err)
{
	const char *data, *file;
	int rc;
	*out = NULL;
	*len = 0;
	if ((rc = get_str(obj, data_key, where, &data, err)) != PK_OK ||
	    (rc = get_str(obj, file_key, where, &file, err)) != PK_OK)
		return rc;
	if (data != NULL) {
		unsigned char *b;
		if (pk_kube_base64_decode(data, strlen(data), &b, len) != PK_OK)
			return pk_err_set(err, PK_ERR_INVALID, "%s: %s is not valid base64", where,
			                  data_key);
		*out = (char *)b;
		return PK_OK;
	}
	if (file != NULL) {
		char what[600];
		snprintf(what, sizeof(what), "%s: %s", where, file_key);
		return read_small_file(file, what, out, len, err);
	}
	return PK_OK;
}

/* ---- TLS material checks: fail at load, not at the first request ---- */

static int check_certs(const char *pem, size_t len, const char *where, const char *what,
                       X509 **first, struct pk_err *err)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	if (b == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "%s: out of memory", where);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	ERR_clear_error();
	if (x == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "%s: %s holds no PEM certificate", where,
		                  what);
	if (first != NULL)
		*first = x;
	else
		X509_free(x);
	return PK_OK;
}

static int check_client_pair(struct pk_kube_config *c, const char *where, struct pk_err *err)
{
	X509 *x = NULL;
	int rc = check_certs(c->cert, c->cert_len, where, "client certificate", &x, err);
	if (rc != PK_OK)
		return rc;
	BIO *b = BIO_new_mem_buf(c->key, (int)c->key_len);
	EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	ERR_clear_error();
	if (k == NULL) {
		X509_free(x);
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: client key holds no PEM private key (or it is encrypted)",
		                  where);
	}
	int ok = X509_check_private_key(x, k);
	ERR_clear_error();
	EVP_PKEY_free(k);
	X509_free(x);
	if (ok != 1)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: client key does not match the client certificate", where);
	return PK_OK;
}

/* ---- kubeconfig merging ---- */

/* name -> entry body, with relative paths already resolved. */
struct merged {
	json_t *clusters;
	json_t *users;
	json_t *contexts;
	char *current;
	char *sources;
};

static void merged_free(struct merged *m)
{
	json_decref(m->clusters);
	json_decref(m->users);
	json_decref(m->contexts);
	free(m->current);
	free(m->sources);
}

static int resolve_member(json_t *obj, const char *key, const char *dir)
{
	const char *p = json_string_value(json_object_get(obj, key));
	if (p == NULL || p[0] == '\0' || p[0] == '/')
		return PK_OK;
	char *abs = resolve_path(dir, p);
	if (abs == NULL)
		return PK_ERR_NOMEM;
	int rc = json_object_set_new(obj, key, json_string(abs)) == 0 ? PK_OK : PK_ERR_NOMEM;
	free(abs);
	return rc;
}

/* Adds the named entries of list `key` of doc to into, first name wins. */
static int merge_list(const json_t *doc, const char *key, const char *inner, const char *source,
                      const char *dir, json_t *into, struct pk_err *err)
{
	json_t *list = json_object_get(doc, key);
	if (list == NULL || json_is_null(list))
		return PK_OK;
	if (!json_is_array(list))
		return pk_err_set(err, PK_ERR_INVALID, "kubeconfig %s: %s must be a list", source,
		                  key);
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e)
	{
		const char *name = pk_kube_json_str(e, "name");
		json_t *body = json_object_get(e, inner);
		if (name == NULL || name[0] == '\0')
			return pk_err_set(err, PK_ERR_INVALID,
			                  "kubeconfig %s: %s entry %zu has no name", source, key,
			                  i + 1);
		if (body == NULL || json_is_null(body))
			body = json_object();
		else
			body = json_deep_copy(body);
		if (body == NULL || !json_is_object(body)) {
			json_decref(body);
			return pk_err_set(err, PK_ERR_INVALID,
			                  "kubeconfig %s: %s \"%s\": %s must be a mapping", source,
			                  key, name, inner);
		}
		if (json_object_get(into, name) != NULL) {
			json_decref(body);
			continue;
		}
		int rc = PK_OK;
		if (strcmp(inner, "cluster") == 0) {
			rc = resolve_member(body, "certificate-authority", dir);
		} else if (strcmp(inner, "user") == 0) {
			if (rc == PK_OK)
				rc = resolve_member(body, "client-certificate", dir);
			if (rc == PK_OK)
				rc = resolve_member(body, "client-key", dir);
			if (rc == PK_OK)
				rc = resolve_member(body, "tokenFile", dir);
			/* client-go resolves an exec command that names a path (has a '/'). */
			json_t *ex = json_object_get(body, "exec");
			const char *cmd = pk_kube_json_str(ex, "command");
			if (rc == PK_OK && cmd != NULL && strchr(cmd, '/') != NULL)
				rc = resolve_member(ex, "command", dir);
		}
		if (rc != PK_OK || json_object_set_new(into, name, body) != 0)
			return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	return PK_OK;
}

static int merge_doc(struct merged *m, const char *buf, size_t len, const char *source,
                     const char *dir, struct pk_err *err)
{
	struct pk_manifest man;
	struct pk_err merr;
	int rc = pk_manifest_parse_buffer(buf, len, source, NULL, &man, &merr);
	if (rc != PK_OK)
		return pk_err_set(err, rc, "kubeconfig %s", merr.msg);
	if (man.n > 1) {
		pk_manifest_free(&man);
		return pk_err_set(err, PK_ERR_INVALID,
		                  "kubeconfig %s: holds %zu documents, expected one", source,
		                  man.n);
	}
	if (man.n == 1) {
		const json_t *doc = man.docs[0].value;
		if ((rc = merge_list(doc, "clusters", "cluster", source, dir, m->clusters, err)) ||
		    (rc = merge_list(doc, "users", "user", source, dir, m->users, err)) ||
		    (rc = merge_list(doc, "contexts", "context", source, dir, m->contexts, err))) {
			pk_manifest_free(&man);
			return rc;
		}
		const char *cur = pk_kube_json_str(doc, "current-context");
		if (m->current == NULL && cur != NULL && cur[0] != '\0')
			m->current = strdup(cur);
	}
	pk_manifest_free(&man);
	size_t n = (m->sources ? strlen(m->sources) + 1 : 0) + strlen(source) + 1;
	char *s = malloc(n);
	if (s == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	snprintf(s, n, "%s%s%s", m->sources ? m->sources : "", m->sources ? ":" : "", source);
	free(m->sources);
	m->sources = s;
	return PK_OK;
}

/* ---- building the config from the chosen entries ---- */

static int build_exec(struct pk_kube_config *c, const json_t *ex, const json_t *cluster,
                      const char *where, const struct pk_kube_config_opts *o, struct pk_err *err)
{
	const char *cmd, *api, *hint, *mode;
	int rc;
	if ((rc = get_str(ex, "command", where, &cmd, err)) ||
	    (rc = get_str(ex, "apiVersion", where, &api, err)) ||
	    (rc = get_str(ex, "installHint", where, &hint, err)) ||
	    (rc = get_str(ex, "interactiveMode", where, &mode, err)))
		return rc;
	if (cmd == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "%s: exec has no command", where);
	if (o == NULL || !o->allow_exec)
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "%s: uses exec credential plugin \"%s\", which this program does not run "
		    "(use a token, tokenFile or client certificate for it instead)",
		    where, cmd);
	if (api == NULL || (strcmp(api, "client.authentication.k8s.io/v1") != 0 &&
	                    strcmp(api, "client.authentication.k8s.io/v1beta1") != 0))
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: exec apiVersion \"%s\" is not supported "
		                  "(client.authentication.k8s.io/v1 or v1beta1)",
		                  where, api ? api : "");
	if (mode != NULL && strcmp(mode, "Always") == 0)
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "%s: exec plugin \"%s\" needs a terminal (interactiveMode Always)", where, cmd);

	json_t *args = json_object_get(ex, "args");
	json_t *env = json_object_get(ex, "env");
	if ((args && !json_is_null(args) && !json_is_array(args)) ||
	    (env && !json_is_null(env) && !json_is_array(env)))
		return pk_err_set(err, PK_ERR_INVALID, "%s: exec args and env must be lists",
		                  where);
	size_t na = json_is_array(args) ? json_array_size(args) : 0;
	size_t ne = json_is_array(env) ? json_array_size(env) : 0;
	c->exec_argv = calloc(na + 2, sizeof(char *));
	c->exec_env = calloc(ne + 1, sizeof(char *));
	if (c->exec_argv == NULL || c->exec_env == NULL || (c->exec_argv[0] = strdup(cmd)) == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < na; i++) {
		const char *a = json_string_value(json_array_get(args, i));
		if (a == NULL)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s: exec args[%zu] must be a string", where, i);
		if ((c->exec_argv[i + 1] = strdup(a)) == NULL)
			return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < ne; i++) {
		json_t *e = json_array_get(env, i);
		const char *n = pk_kube_json_str(e, "name"), *v = pk_kube_json_str(e, "value");
		if (n == NULL || n[0] == '\0' || strchr(n, '=') != NULL || v == NULL)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s: exec env[%zu] needs a name and a string value",
			                  where, i);
		size_t len = strlen(n) + strlen(v) + 2;
		if ((c->exec_env[i] = malloc(len)) == NULL)
			return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		snprintf(c->exec_env[i], len, "%s=%s", n, v);
	}
	c->exec_api = strdup(api);
	c->exec_hint = xstrdup(hint);

	/* KUBERNETES_EXEC_INFO: what client-go passes; the cluster only when asked. */
	json_t *spec = json_pack("{s:b}", "interactive", 0);
	bool provide = false;
	if (get_bool(ex, "provideClusterInfo", where, &provide, err) != PK_OK) {
		json_decref(spec);
		return PK_ERR_INVALID;
	}
	if (provide && spec != NULL) {
		json_t *cl = json_pack("{s:s}", "server", c->server);
		const char *cad = pk_kube_json_str(cluster, "certificate-authority-data");
		if (cl != NULL && cad != NULL)
			json_object_set_new(cl, "certificate-authority-data", json_string(cad));
		if (cl != NULL && c->insecure)
			json_object_set_new(cl, "insecure-skip-tls-verify", json_true());
		json_object_set_new(spec, "cluster", cl);
	}
	json_t *info =
	    json_pack("{s:s,s:s,s:o}", "apiVersion", api, "kind", "ExecCredential", "spec", spec);
	c->exec_info = info ? json_dumps(info, JSON_COMPACT) : NULL;
	json_decref(info);
	if (c->exec_api == NULL || c->exec_info == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	c->auth = PK_KUBE_AUTH_EXEC;
	return PK_OK;
}

static int build_user(struct pk_kube_config *c, const json_t *u, const json_t *cluster,
                      const char *source, const struct pk_kube_config_opts *o, struct pk_err *err)
{
	char where[400];
	int rc;
	snprintf(where, sizeof(where), "kubeconfig %s: user \"%s\"", source, c->user);

	if (json_object_get(u, "auth-provider") != NULL)
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "%s: auth-provider plugins are not supported (use exec, a token or "
		    "a client certificate)",
		    where);
	if (json_object_get(u, "username") != NULL || json_object_get(u, "password") != NULL)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: basic authentication (username/password) is not supported",
		                  where);
	if ((rc = load_pem(u, "client-certificate", "client-certificate-data", where, &c->cert,
	                   &c->cert_len, err)) != PK_OK ||
	    (rc = load_pem(u, "client-key", "client-key-data", where, &c->key, &c->key_len, err)) !=
	        PK_OK)
		return rc;
	if ((c->cert == NULL) != (c->key == NULL))
		return pk_err_set(err, PK_ERR_INVALID, "%s: client-%s given without client-%s",
		                  where, c->cert ? "certificate" : "key",
		                  c->cert ? "key" : "certificate");
	if (c->cert != NULL && (rc = check_client_pair(c, where, err)) != PK_OK)
		return rc;

	const char *tok, *tokfile;
	if ((rc = get_str(u, "token", where, &tok, err)) ||
	    (rc = get_str(u, "tokenFile", where, &tokfile, err)))
		return rc;
	json_t *ex = json_object_get(u, "exec");
	if (ex != NULL && !json_is_null(ex)) {
		if (!json_is_object(ex))
			return pk_err_set(err, PK_ERR_INVALID, "%s: exec must be a mapping", where);
		if (tok != NULL || tokfile != NULL)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s: exec cannot be combined with token or tokenFile",
			                  where);
		return build_exec(c, ex, cluster, where, o, err);
	}
	/* client-go: a token takes precedence over tokenFile. */
	if (tok != NULL) {
		if ((c->token_static = strdup(tok)) == NULL)
			return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		c->auth = PK_KUBE_AUTH_TOKEN;
	} else if (tokfile != NULL) {
		if ((c->token_file = strdup(tokfile)) == NULL)
			return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		c->auth = PK_KUBE_AUTH_TOKEN_FILE;
	}
	return PK_OK;
}

static int strip_server(struct pk_kube_config *c, const char *server, const char *where,
                        struct pk_err *err)
{
	if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: server \"%s\" must start with https:// (or http://)", where,
		                  server);
	const char *host = server + (server[4] == 's' ? 8 : 7);
	if (strcspn(host, "/?#") == 0)
		return pk_err_set(err, PK_ERR_INVALID, "%s: server \"%s\" names no host", where,
		                  server);
	size_t n = strlen(server);
	while (n > 0 && server[n - 1] == '/')
		n--;
	c->server = strndup(server, n);
	return c->server ? PK_OK : pk_err_set(err, PK_ERR_NOMEM, "out of memory");
}

static int build_cluster(struct pk_kube_config *c, const json_t *cl, const char *name,
                         const char *source, struct pk_err *err)
{
	char where[400];
	const char *server;
	int rc;
	snprintf(where, sizeof(where), "kubeconfig %s: cluster \"%s\"", source, name);
	if ((rc = get_str(cl, "server", where, &server, err)) != PK_OK)
		return rc;
	if (server == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "%s: has no server", where);
	if ((rc = strip_server(c, server, where, err)) != PK_OK)
		return rc;
	if ((rc = get_bool(cl, "insecure-skip-tls-verify", where, &c->insecure, err)) != PK_OK)
		return rc;
	if ((rc = load_pem(cl, "certificate-authority", "certificate-authority-data", where, &c->ca,
	                   &c->ca_len, err)) != PK_OK)
		return rc;
	if (c->ca != NULL && c->insecure)
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "%s: a certificate authority together with insecure-skip-tls-verify "
		    "is not allowed",
		    where);
	if (c->ca != NULL && (rc = check_certs(c->ca, c->ca_len, where, "certificate authority",
	                                       NULL, err)) != PK_OK)
		return rc;
	return PK_OK;
}

static int config_from_merged(struct merged *m, const struct pk_kube_config_opts *o,
                              struct pk_kube_config **out, struct pk_err *err)
{
	const char *src = m->sources ? m->sources : "(none)";
	const char *ctx = o && o->context ? o->context : m->current;
	int rc;
	if (ctx == NULL)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "kubeconfig %s: no current-context set and no context named",
		                  src);
	json_t *cx = json_object_get(m->contexts, ctx);
	if (cx == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "kubeconfig %s: context \"%s\" not found",
		                  src, ctx);
	char where[400];
	snprintf(where, sizeof(where), "kubeconfig %s: context \"%s\"", src, ctx);
	const char *cname, *uname, *ns;
	if ((rc = get_str(cx, "cluster", where, &cname, err)) ||
	    (rc = get_str(cx, "user", where, &uname, err)) ||
	    (rc = get_str(cx, "namespace", where, &ns, err)))
		return rc;
	if (cname == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "%s: has no cluster", where);
	json_t *cl = json_object_get(m->clusters, cname);
	if (cl == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "%s: cluster \"%s\" not found", where,
		                  cname);
	json_t *u = NULL;
	if (uname != NULL && (u = json_object_get(m->users, uname)) == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "%s: user \"%s\" not found", where, uname);

	struct pk_kube_config *c = config_new(o);
	if (c == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	c->source = strdup(src);
	c->context = strdup(ctx);
	c->user = strdup(uname ? uname : "");
	c->ns = strdup(ns ? ns : "default");
	if (!c->source || !c->context || !c->user || !c->ns) {
		rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((rc = build_cluster(c, cl, cname, src, err)) != PK_OK)
		goto out;
	if (u != NULL && (rc = build_user(c, u, cl, src, o, err)) != PK_OK)
		goto out;
	if (c->insecure)
		pk_kube_logf(&c->log, PK_KUBE_LOG_WARN,
		             "kubeconfig %s: cluster \"%s\" sets insecure-skip-tls-verify: the API "
		             "server's certificate is NOT verified",
		             src, cname);
	if (c->auth == PK_KUBE_AUTH_TOKEN_FILE) {
		char *t = NULL;
		if ((rc = pk_kube_config_token(c, &t, err)) != PK_OK)
			goto out;
		free(t);
	}
	*out = c;
	c = NULL;
out:
	pk_kube_config_free(c);
	return rc;
}

static int merged_init(struct merged *m, struct pk_err *err)
{
	memset(m, 0, sizeof(*m));
	m->clusters = json_object();
	m->users = json_object();
	m->contexts = json_object();
	if (!m->clusters || !m->users || !m->contexts)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	return PK_OK;
}

int pk_kube_config_parse(const char *buf, size_t len, const char *source, const char *base_dir,
                         const struct pk_kube_config_opts *opts, struct pk_kube_config **out,
                         struct pk_err *err)
{
	struct merged m;
	*out = NULL;
	int rc = merged_init(&m, err);
	if (rc == PK_OK)
		rc = merge_doc(&m, buf, len, source, base_dir, err);
	if (rc == PK_OK)
		rc = config_from_merged(&m, opts, out, err);
	merged_free(&m);
	return rc;
}

int pk_kube_config_load_files(const char *const *paths, size_t n,
                              const struct pk_kube_config_opts *opts, struct pk_kube_config **out,
                              struct pk_err *err)
{
	struct merged m;
	size_t found = 0;
	*out = NULL;
	int rc = merged_init(&m, err);
	for (size_t i = 0; rc == PK_OK && i < n; i++) {
		if (paths[i] == NULL || paths[i][0] == '\0')
			continue;
		char *buf = NULL, *dir = NULL;
		size_t len;
		struct stat st;
		/* kubectl skips $KUBECONFIG entries that do not exist. */
		if (n > 1 && stat(paths[i], &st) != 0 && errno == ENOENT)
			continue;
		struct pk_err ferr;
		rc = pk_manifest_read_file(paths[i], PK_KUBE_CONFIG_MAX_BYTES, &buf, &len, &ferr);
		if (rc != PK_OK) {
			rc = pk_err_set(err, rc, "kubeconfig %s", ferr.msg);
			break;
		}
		dir = dir_of(paths[i]);
		rc = dir ? merge_doc(&m, buf, len, paths[i], dir, err)
		         : pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		free(dir);
		free(buf);
		found++;
	}
	if (rc == PK_OK && found == 0)
		rc = pk_err_set(err, PK_ERR_INVALID, "no kubeconfig file found");
	if (rc == PK_OK)
		rc = config_from_merged(&m, opts, out, err);
	merged_free(&m);
	return rc;
}

int pk_kube_config_load_incluster(const char *dir, const struct pk_kube_config_opts *opts,
                                  struct pk_kube_config **out, struct pk_err *err)
{
	*out = NULL;
	if (dir == NULL)
		dir = opts && opts->incluster_dir ? opts->incluster_dir : PK_KUBE_INCLUSTER_DIR;
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0')
		return pk_err_set(err, PK_ERR_INVALID,
		                  "in-cluster config: KUBERNETES_SERVICE_HOST and "
		                  "KUBERNETES_SERVICE_PORT must be set");
	char *end;
	errno = 0;
	long p = strtol(port, &end, 10);
	if (errno != 0 || *end != '\0' || p < 1 || p > 65535)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "in-cluster config: KUBERNETES_SERVICE_PORT \"%s\" is not a port",
		                  port);
	if (strlen(host) > 255 || strpbrk(host, "/@ ?#") != NULL)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "in-cluster config: KUBERNETES_SERVICE_HOST is not a host name");
	struct pk_kube_config *c = config_new(opts);
	int rc = PK_OK;
	char path[PATH_MAX];
	if (c == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	char server[300];
	/* An IPv6 address goes in brackets. */
	snprintf(server, sizeof(server), strchr(host, ':') ? "https://[%s]:%ld" : "https://%s:%ld",
	         host, p);
	c->server = strdup(server);
	c->source = strdup("in-cluster");
	c->context = strdup("");
	c->user = strdup("");
	snprintf(path, sizeof(path), "%s/token", dir);
	c->token_file = strdup(path);
	c->auth = PK_KUBE_AUTH_TOKEN_FILE;
	if (!c->server || !c->source || !c->context || !c->user || !c->token_file) {
		rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/ca.crt", dir);
	if ((rc = read_small_file(path, "in-cluster config: CA", &c->ca, &c->ca_len, err)) != PK_OK)
		goto out;
	if ((rc = check_certs(c->ca, c->ca_len, "in-cluster config", path, NULL, err)) != PK_OK)
		goto out;
	snprintf(path, sizeof(path), "%s/namespace", dir);
	char *ns = NULL;
	size_t nslen = 0;
	if (read_small_file(path, "namespace", &ns, &nslen, NULL) == PK_OK) {
		while (nslen > 0 && (ns[nslen - 1] == '\n' || ns[nslen - 1] == ' '))
			ns[--nslen] = '\0';
	}
	if (ns == NULL || nslen == 0) {
		free(ns);
		ns = strdup("default");
	}
	c->ns = ns;
	char *t = NULL;
	if ((rc = pk_kube_config_token(c, &t, err)) != PK_OK)
		goto out;
	free(t);
	*out = c;
	c = NULL;
out:
	pk_kube_config_free(c);
	return rc;
}

int pk_kube_config_load(const struct pk_kube_config_opts *opts, struct pk_kube_config **out,
                        struct pk_err *err)
{
	*out = NULL;
	if (opts != NULL && opts->path != NULL) {
		const char *p = opts->path;
		return pk_kube_config_load_files(&p, 1, opts, out, err);
	}
	const char *env = getenv("KUBECONFIG");
	if (env != NULL && env[0] != '\0') {
		char *copy = strdup(env);
		size_t n = 1;
		if (copy == NULL)
			return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		for (const char *s = copy; *s; s++)
			n += *s == ':';
		const char **v = calloc(n, sizeof(*v));
		if (v == NULL) {
			free(copy);
			return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		}
		size_t k = 0;
		char *s = copy;
		for (;;) {
			v[k++] = s;
			char *colon = strchr(s, ':');
			if (colon == NULL)
				break;
			*colon = '\0';
			s = colon + 1;
		}
		int rc = pk_kube_config_load_files(v, k, opts, out, err);
		free(v);
		free(copy);
		return rc;
	}
	if (getenv("KUBERNETES_SERVICE_HOST") != NULL)
		return pk_kube_config_load_incluster(NULL, opts, out, err);
	const char *home = getenv("HOME");
	if (home == NULL || home[0] == '\0')
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "no kubeconfig: KUBECONFIG, in-cluster config and HOME are all unset");
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/.kube/config", home);
	const char *p = path;
	return pk_kube_config_load_files(&p, 1, opts, out, err);
}

/* ---- accessors ---- */

const char *pk_kube_config_server(const struct pk_kube_config *cfg)
{
	return cfg->server;
}
const char *pk_kube_config_namespace(const struct pk_kube_config *cfg)
{
	return cfg->ns;
}
const char *pk_kube_config_context(const struct pk_kube_config *cfg)
{
	return cfg->context;
}
const char *pk_kube_config_user(const struct pk_kube_config *cfg)
{
	return cfg->user;
}
const char *pk_kube_config_source(const struct pk_kube_config *cfg)
{
	return cfg->source;
}
const char *pk_kube_config_ca(const struct pk_kube_config *cfg, size_t *len)
{
	*len = cfg->ca_len;
	return cfg->ca;
}
const char *pk_kube_config_client_cert(const struct pk_kube_config *cfg, size_t *len)
{
	*len = cfg->cert_len;
	return cfg->cert;
}
const char *pk_kube_config_client_key(const struct pk_kube_config *cfg, size_t *len)
{
	*len = cfg->key_len;
	return cfg->key;
}
bool pk_kube_config_insecure(const struct pk_kube_config *cfg)
{
	return cfg->insecure;
}
enum pk_kube_auth pk_kube_config_auth(const struct pk_kube_config *cfg)
{
	return cfg->auth;
}
const struct pk_kube_log *pk_kube_config_log(const struct pk_kube_config *cfg)
{
	return &cfg->log;
}

/* ---- tokens ---- */

/* Trims surrounding whitespace in place; refuses control characters, which
 * would otherwise end up inside an HTTP header. */
static int clean_token(char *t, const char *what, struct pk_err *err)
{
	size_t n = strlen(t);
	while (n > 0 &&
	       (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' ' || t[n - 1] == '\t'))
		t[--n] = '\0';
	size_t start = 0;
	while (t[start] == ' ' || t[start] == '\t' || t[start] == '\n' || t[start] == '\r')
		start++;
	memmove(t, t + start, n - start + 1);
	for (char *p = t; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s: token holds a control character", what);
	if (t[0] == '\0')
		return pk_err_set(err, PK_ERR_INVALID, "%s: token is empty", what);
	return PK_OK;
}

/* Under cfg->mu. */
static int token_from_file(struct pk_kube_config *c, struct pk_err *err)
{
	long long now = pk_kube_now_ns();
	if (c->valid && now - c->checked_ns < (long long)c->recheck_ms * 1000000LL)
		return PK_OK;
	struct stat st;
	char what[PATH_MAX + 32];
	snprintf(what, sizeof(what), "token file %s", c->token_file);
	if (stat(c->token_file, &st) != 0) {
		if (c->valid) /* keep serving the last token; the file may be mid-rotation */
			return PK_OK;
		return pk_err_set(err, PK_ERR_INVALID, "%s: %s", what, strerror(errno));
	}
	c->checked_ns = now;
	if (c->valid && st.st_size == c->size && st.st_ino == c->ino &&
	    st.st_mtim.tv_sec == c->mtime.tv_sec && st.st_mtim.tv_nsec == c->mtime.tv_nsec)
		return PK_OK;
	char *buf = NULL;
	size_t len;
	int rc = read_small_file(c->token_file, "token file", &buf, &len, err);
	if (rc == PK_OK && strlen(buf) != len)
		rc = pk_err_set(err, PK_ERR_INVALID, "%s: holds a NUL byte", what);
	if (rc == PK_OK)
		rc = clean_token(buf, what, err);
	if (rc != PK_OK) {
		free(buf);
		return c->valid ? PK_OK : rc;
	}
	free(c->token);
	c->token = buf;
	c->size = st.st_size;
	c->ino = st.st_ino;
	c->mtime = st.st_mtim;
	c->valid = true;
	return PK_OK;
}

/* RFC 3339 ("2026-01-02T03:04:05Z", fraction and offset optional) to time_t. */
static int parse_rfc3339(const char *s, time_t *out)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const int widths[6] = {4, 2, 2, 2, 2, 2};
	const char seps[6] = {'-', '-', 'T', ':', ':', '\0'};
	int vals[6];
	const char *p = s;
	for (int i = 0; i < 6; i++) {
		int v = 0;
		for (int k = 0; k < widths[i]; k++, p++) {
			if (*p < '0' || *p > '9')
				return -1;
			v = v * 10 + (*p - '0');
		}
		vals[i] = v;
		if (seps[i] != '\0') {
			if (*p != seps[i] && !(seps[i] == 'T' && (*p == 't' || *p == ' ')))
				return -1;
			p++;
		}
	}
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	long off = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1;
		if (!(p[1] >= '0' && p[1] <= '9' && p[2] >= '0' && p[2] <= '9' && p[3] == ':' &&
		      p[4] >= '0' && p[4] <= '9' && p[5] >= '0' && p[5] <= '9'))
			return -1;
		off = sign * (((p[1] - '0') * 10 + (p[2] - '0')) * 3600L +
		              ((p[4] - '0') * 10 + (p[5] - '0')) * 60L);
		p += 6;
	} else {
		return -1;
	}
	if (*p != '\0' || vals[1] < 1 || vals[1] > 12 || vals[2] < 1 || vals[2] > 31 ||
	    vals[3] > 23 || vals[4] > 59 || vals[5] > 60)
		return -1;
	tm.tm_year = vals[0] - 1900;
	tm.tm_mon = vals[1] - 1;
	tm.tm_mday = vals[2];
	tm.tm_hour = vals[3];
	tm.tm_min = vals[4];
	tm.tm_sec = vals[5];
	*out = timegm(&tm) - off;
	return 0;
}

/* Runs the plugin; stdout (capped) into *out_buf. Called without cfg->mu. */
static int exec_run(const struct pk_kube_config *c, char **out_buf, size_t *out_len,
                    struct pk_err *err)
{
	char where[400];
	snprintf(where, sizeof(where), "kubeconfig %s: user \"%s\": exec plugin \"%s\"", c->source,
	         c->user, c->exec_argv[0]);
	*out_buf = NULL;
	*out_len = 0;

	/* environment: ours, then the kubeconfig's entries, then KUBERNETES_EXEC_INFO */
	size_t nenv = 0, nextra = 0;
	while (environ[nenv])
		nenv++;
	while (c->exec_env[nextra])
		nextra++;
	char **envp = calloc(nenv + nextra + 2, sizeof(char *));
	size_t infolen = strlen(c->exec_info) + sizeof("KUBERNETES_EXEC_INFO=");
	char *info = malloc(infolen);
	int rc = PK_OK;
	int outp[2] = {-1, -1}, errp[2] = {-1, -1};
	pid_t pid = -1;
	char *obuf = NULL, ebuf[1024];
	size_t olen = 0, elen = 0;
	if (envp == NULL || info == NULL) {
		rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		goto out;
	}
	snprintf(info, infolen, "KUBERNETES_EXEC_INFO=%s", c->exec_info);
	size_t k = 0;
	for (size_t i = 0; i < nenv; i++) {
		bool overridden = strncmp(environ[i], "KUBERNETES_EXEC_INFO=", 21) == 0;
		for (size_t j = 0; j < nextra && !overridden; j++) {
			size_t nl = (size_t)(strchr(c->exec_env[j], '=') - c->exec_env[j]);
			overridden = strncmp(environ[i], c->exec_env[j], nl + 1) == 0;
		}
		if (!overridden)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < nextra; j++)
		envp[k++] = c->exec_env[j];
	envp[k++] = info;
	envp[k] = NULL;

	if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
		rc = pk_err_set(err, PK_ERR_INVALID, "%s: pipe: %s", where, strerror(errno));
		goto out;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
	posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
	posix_spawnattr_t attr;
	posix_spawnattr_init(&attr);
	sigset_t none;
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&attr, 0);
	int serr = posix_spawnp(&pid, c->exec_argv[0], &fa, &attr, c->exec_argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(outp[1]);
	close(errp[1]);
	outp[1] = errp[1] = -1;
	if (serr != 0) {
		pid = -1;
		rc =
		    pk_err_set(err, PK_ERR_INVALID, "%s: cannot run: %s%s%s", where, strerror(serr),
		               c->exec_hint ? "; " : "", c->exec_hint ? c->exec_hint : "");
		goto out;
	}

	obuf = malloc(PK_KUBE_CREDENTIAL_MAX + 1);
	if (obuf == NULL) {
		rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		goto out;
	}
	/*
	 * Until the plugin has exited and both pipes are closed, all within one
	 * deadline: a plugin may close its pipes and run on, or leave them to a
	 * child that outlives it, so neither EOF nor the exit is waited for
	 * without it. Output is capped on both pipes.
	 */
	long long deadline = pk_kube_now_ns() + (long long)c->exec_timeout_ms * 1000000LL;
	bool oopen = true, eopen = true, reaped = false, timed_out = false;
	const char *too_big = NULL; /* the pipe that overflowed */
	size_t etotal = 0;
	int status = 0;
	while (oopen || eopen || !reaped) {
		if (!reaped) {
			pid_t w = waitpid(pid, &status, WNOHANG);
			if (w == pid || (w < 0 && errno == ECHILD)) {
				reaped = true; /* ECHILD: SIGCHLD is ignored, nothing to reap */
				if (w < 0)
					status = 0;
				if (!oopen && !eopen)
					break;
			} else if (w < 0 && errno != EINTR) {
				rc = pk_err_set(err, PK_ERR_INVALID, "%s: waitpid: %s", where,
				                strerror(errno));
				break;
			}
		}
		long long left = (deadline - pk_kube_now_ns()) / 1000000LL;
		if (left <= 0) {
			timed_out = true;
			break;
		}
		/* look for the exit often while the plugin runs */
		long cap = !reaped ? (oopen || eopen ? 50 : 5) : 1000;
		int wait_ms = (int)(left > cap ? cap : left);
		if (!oopen && !eopen) {
			poll(NULL, 0, wait_ms);
			continue;
		}
		struct pollfd pf[2] = {{oopen ? outp[0] : -1, POLLIN, 0},
		                       {eopen ? errp[0] : -1, POLLIN, 0}};
		int pr = poll(pf, 2, wait_ms);
		if (pr < 0 && errno != EINTR) {
			rc =
			    pk_err_set(err, PK_ERR_INVALID, "%s: poll: %s", where, strerror(errno));
			break;
		}
		if (pr <= 0)
			continue;
		if (oopen && pf[0].revents) {
			char tmp[4096];
			ssize_t r = read(outp[0], tmp, sizeof(tmp));
			if (r <= 0 && !(r < 0 && errno == EINTR)) {
				oopen = false;
			} else if (r > 0) {
				if (olen + (size_t)r > PK_KUBE_CREDENTIAL_MAX) {
					too_big = "stdout";
					break;
				}
				memcpy(obuf + olen, tmp, (size_t)r);
				olen += (size_t)r;
			}
		}
		if (eopen && pf[1].revents) {
			char tmp[1024];
			ssize_t r = read(errp[0], tmp, sizeof(tmp));
			if (r <= 0 && !(r < 0 && errno == EINTR)) {
				eopen = false;
			} else if (r > 0) {
				etotal += (size_t)r;
				/* keep the last bytes of stderr for the message */
				size_t n = (size_t)r > sizeof(ebuf) ? sizeof(ebuf) : (size_t)r;
				if (elen + n > sizeof(ebuf)) {
					size_t drop = elen + n - sizeof(ebuf);
					memmove(ebuf, ebuf + drop, elen - drop);
					elen -= drop;
				}
				memcpy(ebuf + elen, tmp + ((size_t)r - n), n);
				elen += n;
				if (etotal > PK_KUBE_CREDENTIAL_MAX) {
					too_big = "stderr";
					break;
				}
			}
		}
	}
	if (!reaped) {
		/* The plugin and what it started in its process group. After
		 * SIGKILL the wait is short (unless the kernel holds the process
		 * in an uninterruptible sleep). */
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	} else if (timed_out || too_big != NULL) {
		/* It exited, but left a child holding a pipe: that child's group
		 * still exists, so its id is not reused yet. */
		kill(-pid, SIGKILL);
	}
	pid = -1;
	if (rc != PK_OK)
		goto out;
	if (timed_out) {
		rc = pk_err_set(err, PK_ERR_INVALID,
		                "%s: no answer within %u ms (the exec plugin timeout); it was "
		                "killed",
		                where, c->exec_timeout_ms);
		goto out;
	}
	if (too_big != NULL) {
		rc = pk_err_set(err, PK_ERR_NOMEM,
		                "%s: printed more than %u bytes on %s; it was killed", where,
		                PK_KUBE_CREDENTIAL_MAX, too_big);
		goto out;
	}
	while (elen > 0 && (ebuf[elen - 1] == '\n' || ebuf[elen - 1] == '\r'))
		elen--;
	char equote[300];
	pk_text_quote(ebuf, elen, equote, sizeof(equote));
	if (elen > 0)
		pk_kube_logf(&c->log, PK_KUBE_LOG_DEBUG, "%s: stderr: %s", where, equote);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		rc = pk_err_set(err, PK_ERR_INVALID, "%s: exited with status %d%s%s%s%s", where,
		                code, elen ? ": " : "", equote, c->exec_hint ? "; " : "",
		                c->exec_hint && code == 127 ? c->exec_hint : "");
		goto out;
	}
	obuf[olen] = '\0';
	*out_buf = obuf;
	*out_len = olen;
	obuf = NULL;
out:
	if (pid > 0) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	for (int i = 0; i < 2; i++) {
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	free(obuf);
	free(envp);
	free(info);
	return rc;
}

int pk_kube_exec_credential_parse(const char *buf, size_t len, const char *api_version,
                                  const char *where, char **token, time_t *expiry_out,
                                  struct pk_err *err)
{
	*token = NULL;
	*expiry_out = 0;
	json_t *cred = NULL;
	struct pk_err jerr;
	int rc = PK_OK;
	if (pk_kube_json_parse(buf, len, 16, &cred, &jerr) != PK_OK || !json_is_object(cred)) {
		rc = pk_err_set(err, PK_ERR_INVALID, "%s: output is not an ExecCredential: %s",
		                where, cred ? "not an object" : jerr.msg);
		goto out;
	}
	const char *kind = pk_kube_json_str(cred, "kind");
	const char *api = pk_kube_json_str(cred, "apiVersion");
	if (kind == NULL || strcmp(kind, "ExecCredential") != 0 || api == NULL ||
	    strcmp(api, api_version) != 0) {
		rc = pk_err_set(err, PK_ERR_INVALID,
		                "%s: output must be kind ExecCredential, apiVersion %s", where,
		                api_version);
		goto out;
	}
	json_t *st = json_object_get(cred, "status");
	json_t *tokv = json_object_get(st, "token");
	const char *tok = json_string_value(tokv);
	if (tok == NULL || tok[0] == '\0') {
		rc = pk_err_set(err, PK_ERR_INVALID,
		                json_object_get(st, "clientCertificateData")
		                    ? "%s: returned a client certificate; only tokens are supported"
		                    : "%s: returned no status.token",
		                where);
		goto out;
	}
	/* "\u0000" would cut the token short as a C string */
	if (json_string_length(tokv) != strlen(tok)) {
		rc = pk_err_set(err, PK_ERR_INVALID, "%s: status.token holds a NUL byte", where);
		goto out;
	}
	time_t expiry = 0;
	const char *exp = pk_kube_json_str(st, "expirationTimestamp");
	if (exp != NULL && parse_rfc3339(exp, &expiry) != 0) {
		char q[300];
		pk_text_quote(exp, strlen(exp), q, sizeof(q));
		rc =
		    pk_err_set(err, PK_ERR_INVALID, "%s: bad expirationTimestamp \"%s\"", where, q);
		goto out;
	}
	char *t = strdup(tok);
	if (t == NULL) {
		rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((rc = clean_token(t, where, err)) != PK_OK) {
		OPENSSL_cleanse(t, strlen(t));
		free(t);
		goto out;
	}
	*token = t;
	*expiry_out = expiry;
out:
	json_decref(cred);
	return rc;
}

/* Runs the plugin and reads its ExecCredential: a new token (caller frees)
 * and its expiry. Touches only what is fixed at load: called without mu. */
static int exec_fetch(const struct pk_kube_config *c, char **token, time_t *expiry,
                      struct pk_err *err)
{
	*token = NULL;
	*expiry = 0;
	char *buf;
	size_t len;
	int rc = exec_run(c, &buf, &len, err);
	if (rc != PK_OK)
		return rc;
	char where[400];
	snprintf(where, sizeof(where), "kubeconfig %s: user \"%s\": exec plugin \"%s\"", c->source,
	         c->user, c->exec_argv[0]);
	rc = pk_kube_exec_credential_parse(buf, len, c->exec_api, where, token, expiry, err);
	OPENSSL_cleanse(buf, len);
	free(buf);
	return rc;
}

/*
 * Under cfg->mu, which it gives up while the plugin runs and holds again on
 * return. One run at a time: a thread that finds a run going uses the cached
 * token if it has not expired yet, else waits for that run and shares its
 * result (the run ends within exec_timeout_ms: the plugin is then killed).
 */
static int token_from_exec(struct pk_kube_config *c, struct pk_err *err)
{
	for (;;) {
		time_t now = time(NULL);
		if (c->valid && (c->expiry == 0 || now + 10 < c->expiry))
			return PK_OK;
		if (!c->exec_running)
			break;
		if (c->valid && now < c->expiry)
			return PK_OK;
		unsigned long runs = c->exec_runs;
		while (c->exec_running && c->exec_runs == runs)
			pthread_cond_wait(&c->exec_done, &c->mu);
		if (c->exec_runs != runs && c->exec_rc != PK_OK) {
			if (err != NULL)
				*err = c->exec_err;
			return c->exec_rc;
		}
	}
	c->exec_running = true;
	pthread_mutex_unlock(&c->mu);
	char *t = NULL;
	time_t expiry = 0;
	struct pk_err e;
	memset(&e, 0, sizeof(e));
	int rc = exec_fetch(c, &t, &expiry, &e);
	pthread_mutex_lock(&c->mu);
	if (rc == PK_OK) {
		if (c->token != NULL)
			OPENSSL_cleanse(c->token, strlen(c->token));
		free(c->token);
		c->token = t;
		c->expiry = expiry;
		c->valid = true;
	}
	c->exec_rc = rc;
	c->exec_err = e;
	c->exec_runs++;
	c->exec_running = false;
	pthread_cond_broadcast(&c->exec_done);
	if (rc != PK_OK && err != NULL)
		*err = e;
	return rc;
}

int pk_kube_config_token(struct pk_kube_config *cfg, char **token, struct pk_err *err)
{
	*token = NULL;
	int rc = PK_OK;
	switch (cfg->auth) {
	case PK_KUBE_AUTH_NONE:
		return PK_OK;
	case PK_KUBE_AUTH_TOKEN:
		*token = strdup(cfg->token_static);
		return *token ? PK_OK : pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	case PK_KUBE_AUTH_TOKEN_FILE:
	case PK_KUBE_AUTH_EXEC:
		break;
	}
	pthread_mutex_lock(&cfg->mu);
	rc = cfg->auth == PK_KUBE_AUTH_EXEC ? token_from_exec(cfg, err) : token_from_file(cfg, err);
	if (rc == PK_OK && (*token = strdup(cfg->token)) == NULL)
		rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	pthread_mutex_unlock(&cfg->mu);
	return rc;
}

void pk_kube_config_token_invalidate(struct pk_kube_config *cfg)
{
	pthread_mutex_lock(&cfg->mu);
	if (cfg->auth == PK_KUBE_AUTH_EXEC)
		cfg->valid = false;
	cfg->checked_ns = 0; /* re-stat the token file on the next call */
	if (cfg->auth == PK_KUBE_AUTH_TOKEN_FILE)
		cfg->size = -1; /* and re-read it even if it looks unchanged */
	pthread_mutex_unlock(&cfg->mu);
}
