/*
 * kube_config.c - kubeconfig and in-cluster config: the sources, merging,
 * the chosen cluster and user, TLS material checked at load. Exec plugins
 * are kube_exec.c; the token cache is kube_token.c. See kube_config.h for
 * the rules followed.
 */
#include "kube_config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "json.h"
#include "kube_config_int.h"
#include "kube_config_member.h"
#include "kube_exec.h"
#include "manifest.h"
#include "parse.h"

/* ---- small helpers ---- */

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
	pk_kube_exec_free(cfg->exec);
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
int pk_kube_config_read_small(const char *path, const char *what, char **buf, size_t *len,
                              struct pk_err *err)
{
	struct pk_err ferr;
	int rc = pk_manifest_read_file(path, PK_KUBE_CREDENTIAL_MAX, buf, len, &ferr);
	if (rc != PK_OK)
		return pk_err_set(err, rc, "%s: %s", what, ferr.msg);
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
	if ((rc = pk_kube_config_member_str(obj, data_key, where, &data, err)) != PK_OK ||
	    (rc = pk_kube_config_member_str(obj, file_key, where, &file, err)) != PK_OK)
		return rc;
	if (data != NULL) {
		unsigned char *b;
		if (pk_base64_decode(data, strlen(data), &b, len) != PK_OK)
			return pk_err_set(err, PK_ERR_INVALID, "%s: %s is not valid base64", where,
			                  data_key);
		*out = (char *)b;
		return PK_OK;
	}
	if (file != NULL) {
		char what[600];
		snprintf(what, sizeof(what), "%s: %s", where, file_key);
		return pk_kube_config_read_small(file, what, out, len, err);
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
		const char *name = pk_json_cstr_at(e, "name");
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
			const char *cmd = pk_json_cstr_at(ex, "command");
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
		const char *cur = pk_json_cstr_at(doc, "current-context");
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
	if ((rc = pk_kube_config_member_str(u, "token", where, &tok, err)) ||
	    (rc = pk_kube_config_member_str(u, "tokenFile", where, &tokfile, err)))
		return rc;
	json_t *ex = json_object_get(u, "exec");
	if (ex != NULL && !json_is_null(ex)) {
		if (!json_is_object(ex))
			return pk_err_set(err, PK_ERR_INVALID, "%s: exec must be a mapping", where);
		if (tok != NULL || tokfile != NULL)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s: exec cannot be combined with token or tokenFile",
			                  where);
		struct pk_kube_exec_cluster xc = {c->server, cluster, c->insecure};
		rc = pk_kube_exec_new(ex, &xc, where, o != NULL && o->allow_exec,
		                      o ? o->exec_timeout_ms : 0, &c->exec, err);
		if (rc == PK_OK)
			c->auth = PK_KUBE_AUTH_EXEC;
		return rc;
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
	if ((rc = pk_kube_config_member_str(cl, "server", where, &server, err)) != PK_OK)
		return rc;
	if (server == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "%s: has no server", where);
	if ((rc = strip_server(c, server, where, err)) != PK_OK)
		return rc;
	if ((rc = pk_kube_config_member_bool(cl, "insecure-skip-tls-verify", where, &c->insecure,
	                                     err)) != PK_OK)
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

/* A new config named by source, context and user, in namespace ns (NULL: "default"). */
static struct pk_kube_config *config_named(const struct pk_kube_config_opts *o, const char *source,
                                           const char *context, const char *user, const char *ns,
                                           struct pk_err *err)
{
	struct pk_kube_config *c = config_new(o);
	if (c != NULL) {
		c->source = strdup(source);
		c->context = strdup(context);
		c->user = strdup(user);
		c->ns = strdup(ns ? ns : "default");
		if (!c->source || !c->context || !c->user || !c->ns) {
			pk_kube_config_free(c);
			c = NULL;
		}
	}
	if (c == NULL)
		pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	return c;
}

/* Hands c (built with result rc) to *out after a first read of its token file, so that a
 * missing one fails at load; on failure c is freed. */
static int config_done(struct pk_kube_config *c, int rc, struct pk_kube_config **out,
                       struct pk_err *err)
{
	if (rc == PK_OK && c->auth == PK_KUBE_AUTH_TOKEN_FILE) {
		char *t = NULL;
		rc = pk_kube_config_token(c, &t, err);
		free(t);
	}
	if (rc != PK_OK) {
		pk_kube_config_free(c);
		return rc;
	}
	*out = c;
	return PK_OK;
}

/* The in-cluster namespace file, trimmed; NULL when absent or empty. */
static char *incluster_ns(const char *dir)
{
	char path[PATH_MAX];
	char *ns = NULL;
	size_t n = 0;
	snprintf(path, sizeof(path), "%s/namespace", dir);
	if (pk_kube_config_read_small(path, "namespace", &ns, &n, NULL) != PK_OK)
		return NULL;
	while (n > 0 && (ns[n - 1] == '\n' || ns[n - 1] == ' '))
		ns[--n] = '\0';
	if (n == 0) {
		free(ns);
		return NULL;
	}
	return ns;
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
	if ((rc = pk_kube_config_member_str(cx, "cluster", where, &cname, err)) ||
	    (rc = pk_kube_config_member_str(cx, "user", where, &uname, err)) ||
	    (rc = pk_kube_config_member_str(cx, "namespace", where, &ns, err)))
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

	struct pk_kube_config *c = config_named(o, src, ctx, uname ? uname : "", ns, err);
	if (c == NULL)
		return PK_ERR_NOMEM;
	rc = build_cluster(c, cl, cname, src, err);
	if (rc == PK_OK && u != NULL)
		rc = build_user(c, u, cl, src, o, err);
	if (rc == PK_OK && c->insecure)
		pk_kube_logf(&c->log, PK_KUBE_LOG_WARN,
		             "kubeconfig %s: cluster \"%s\" sets insecure-skip-tls-verify: the API "
		             "server's certificate is NOT verified",
		             src, cname);
	return config_done(c, rc, out, err);
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
	uint64_t p;
	if (pk_parse_uint(port, 1, 65535, &p, NULL) != PK_OK)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "in-cluster config: KUBERNETES_SERVICE_PORT \"%s\" is not a port",
		                  port);
	if (strlen(host) > 255 || strpbrk(host, "/@ ?#") != NULL)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "in-cluster config: KUBERNETES_SERVICE_HOST is not a host name");
	char server[300], path[PATH_MAX];
	/* An IPv6 address goes in brackets. */
	snprintf(server, sizeof(server), strchr(host, ':') ? "https://[%s]:%u" : "https://%s:%u",
	         host, (unsigned)p);
	char *ns = incluster_ns(dir);
	struct pk_kube_config *c = config_named(opts, "in-cluster", "", "", ns, err);
	free(ns);
	if (c == NULL)
		return PK_ERR_NOMEM;
	snprintf(path, sizeof(path), "%s/token", dir);
	c->server = strdup(server);
	c->token_file = strdup(path);
	c->auth = PK_KUBE_AUTH_TOKEN_FILE;
	int rc = PK_OK;
	if (!c->server || !c->token_file)
		rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	snprintf(path, sizeof(path), "%s/ca.crt", dir);
	if (rc == PK_OK)
		rc = pk_kube_config_read_small(path, "in-cluster config: CA", &c->ca, &c->ca_len,
		                               err);
	if (rc == PK_OK)
		rc = check_certs(c->ca, c->ca_len, "in-cluster config", path, NULL, err);
	return config_done(c, rc, out, err);
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
