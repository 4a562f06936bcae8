/*
 * kube_exec.c - exec credential plugins: the kubeconfig's exec entry, one
 * run of the plugin (spawn, bounded read of both pipes, deadline, kill of
 * its process group) and the ExecCredential it prints. See kube_exec.h and
 * kube_config.h for the rules followed.
 */
#define _GNU_SOURCE /* pipe2 */
#include "kube_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "json.h"
#include "kube_config_member.h"

extern char **environ;

struct pk_kube_exec {
	char **argv; /* command and args, NULL-terminated */
	char **env;  /* NAME=VALUE, NULL-terminated */
	char *api;
	char *hint;
	char *info; /* KUBERNETES_EXEC_INFO value */
	unsigned timeout_ms;
	char where[400]; /* "kubeconfig F: user \"u\": exec plugin \"cmd\"" */
};

static void free_strv(char **v)
{
	if (v == NULL)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

void pk_kube_exec_free(struct pk_kube_exec *x)
{
	if (x == NULL)
		return;
	free_strv(x->argv);
	free_strv(x->env);
	free(x->api);
	free(x->hint);
	free(x->info);
	free(x);
}

/* ---- the kubeconfig's exec entry ---- */

/* The members that decide whether the plugin may run at all. */
static int exec_check(const json_t *ex, const char *where, bool allow, const char **cmd,
                      const char **api, const char **hint, struct pk_err *err)
{
	const char *mode;
	int rc;
	if ((rc = pk_kube_config_member_str(ex, "command", where, cmd, err)) ||
	    (rc = pk_kube_config_member_str(ex, "apiVersion", where, api, err)) ||
	    (rc = pk_kube_config_member_str(ex, "installHint", where, hint, err)) ||
	    (rc = pk_kube_config_member_str(ex, "interactiveMode", where, &mode, err)))
		return rc;
	if (*cmd == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "%s: exec has no command", where);
	if (!allow)
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "%s: uses exec credential plugin \"%s\", which this program does not run "
		    "(use a token, tokenFile or client certificate for it instead)",
		    where, *cmd);
	if (*api == NULL || (strcmp(*api, "client.authentication.k8s.io/v1") != 0 &&
	                     strcmp(*api, "client.authentication.k8s.io/v1beta1") != 0))
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: exec apiVersion \"%s\" is not supported "
		                  "(client.authentication.k8s.io/v1 or v1beta1)",
		                  where, *api ? *api : "");
	if (mode != NULL && strcmp(mode, "Always") == 0)
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "%s: exec plugin \"%s\" needs a terminal (interactiveMode Always)", where,
		    *cmd);
	return PK_OK;
}

/* argv (command, then args) and the NAME=VALUE entries of env. */
static int exec_copy_args(struct pk_kube_exec *x, const json_t *ex, const char *cmd,
                          const char *where, struct pk_err *err)
{
	json_t *args = json_object_get(ex, "args");
	json_t *env = json_object_get(ex, "env");
	if ((args && !json_is_null(args) && !json_is_array(args)) ||
	    (env && !json_is_null(env) && !json_is_array(env)))
		return pk_err_set(err, PK_ERR_INVALID, "%s: exec args and env must be lists",
		                  where);
	size_t na = json_is_array(args) ? json_array_size(args) : 0;
	size_t ne = json_is_array(env) ? json_array_size(env) : 0;
	x->argv = calloc(na + 2, sizeof(char *));
	x->env = calloc(ne + 1, sizeof(char *));
	if (x->argv == NULL || x->env == NULL || (x->argv[0] = strdup(cmd)) == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < na; i++) {
		const char *a = json_string_value(json_array_get(args, i));
		if (a == NULL)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s: exec args[%zu] must be a string", where, i);
		if ((x->argv[i + 1] = strdup(a)) == NULL)
			return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < ne; i++) {
		json_t *e = json_array_get(env, i);
		const char *n = pk_json_cstr_at(e, "name"), *v = pk_json_cstr_at(e, "value");
		if (n == NULL || n[0] == '\0' || strchr(n, '=') != NULL || v == NULL)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s: exec env[%zu] needs a name and a string value",
			                  where, i);
		size_t len = strlen(n) + strlen(v) + 2;
		if ((x->env[i] = malloc(len)) == NULL)
			return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		snprintf(x->env[i], len, "%s=%s", n, v);
	}
	return PK_OK;
}

/* KUBERNETES_EXEC_INFO: what client-go passes; the cluster only when asked. */
static int exec_info(struct pk_kube_exec *x, const json_t *ex,
                     const struct pk_kube_exec_cluster *cluster, const char *where,
                     struct pk_err *err)
{
	json_t *spec = json_pack("{s:b}", "interactive", 0);
	bool provide = false;
	if (pk_kube_config_member_bool(ex, "provideClusterInfo", where, &provide, err) != PK_OK) {
		json_decref(spec);
		return PK_ERR_INVALID;
	}
	if (provide && spec != NULL) {
		json_t *cl = json_pack("{s:s}", "server", cluster->server);
		const char *cad = pk_json_cstr_at(cluster->entry, "certificate-authority-data");
		if (cl != NULL && cad != NULL)
			json_object_set_new(cl, "certificate-authority-data", json_string(cad));
		if (cl != NULL && cluster->insecure)
			json_object_set_new(cl, "insecure-skip-tls-verify", json_true());
		json_object_set_new(spec, "cluster", cl);
	}
	json_t *info = json_pack("{s:s,s:s,s:o}", "apiVersion", x->api, "kind", "ExecCredential",
	                         "spec", spec);
	x->info = info ? json_dumps(info, JSON_COMPACT) : NULL;
	json_decref(info);
	return x->info ? PK_OK : pk_err_set(err, PK_ERR_NOMEM, "out of memory");
}

int pk_kube_exec_new(const json_t *ex, const struct pk_kube_exec_cluster *cluster,
                     const char *where, bool allow, unsigned timeout_ms, struct pk_kube_exec **out,
                     struct pk_err *err)
{
	const char *cmd, *api, *hint;
	*out = NULL;
	int rc = exec_check(ex, where, allow, &cmd, &api, &hint, err);
	if (rc != PK_OK)
		return rc;
	struct pk_kube_exec *x = calloc(1, sizeof(*x));
	if (x == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	x->timeout_ms = timeout_ms ? timeout_ms : PK_KUBE_EXEC_TIMEOUT_MS;
	snprintf(x->where, sizeof(x->where), "%s: exec plugin \"%s\"", where, cmd);
	rc = exec_copy_args(x, ex, cmd, where, err);
	if (rc == PK_OK) {
		x->api = strdup(api);
		x->hint = hint ? strdup(hint) : NULL;
		if (x->api == NULL || (hint != NULL && x->hint == NULL))
			rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	if (rc == PK_OK)
		rc = exec_info(x, ex, cluster, where, err);
	if (rc != PK_OK) {
		pk_kube_exec_free(x);
		return rc;
	}
	*out = x;
	return PK_OK;
}

/* ---- one run ---- */

/* Ours, less what the kubeconfig's entries and KUBERNETES_EXEC_INFO set, then those. The
 * strings are borrowed except *info, which the caller frees with the array. */
static char **exec_envp(const struct pk_kube_exec *x, char **info)
{
	size_t nenv = 0, nextra = 0;
	while (environ[nenv])
		nenv++;
	while (x->env[nextra])
		nextra++;
	char **envp = calloc(nenv + nextra + 2, sizeof(char *));
	size_t infolen = strlen(x->info) + sizeof("KUBERNETES_EXEC_INFO=");
	*info = malloc(infolen);
	if (envp == NULL || *info == NULL) {
		free(envp);
		free(*info);
		*info = NULL;
		return NULL;
	}
	snprintf(*info, infolen, "KUBERNETES_EXEC_INFO=%s", x->info);
	size_t k = 0;
	for (size_t i = 0; i < nenv; i++) {
		bool overridden = strncmp(environ[i], "KUBERNETES_EXEC_INFO=", 21) == 0;
		for (size_t j = 0; j < nextra && !overridden; j++) {
			size_t nl = (size_t)(strchr(x->env[j], '=') - x->env[j]);
			overridden = strncmp(environ[i], x->env[j], nl + 1) == 0;
		}
		if (!overridden)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < nextra; j++)
		envp[k++] = x->env[j];
	envp[k++] = *info;
	envp[k] = NULL;
	return envp;
}

/* What one run has read and how it went. */
struct exec_io {
	int outp[2], errp[2];
	bool oopen, eopen, reaped, timed_out;
	int status;
	char *obuf; /* PK_KUBE_CREDENTIAL_MAX + 1 bytes */
	size_t olen;
	char ebuf[1024]; /* the last bytes of stderr, for the message */
	size_t elen, etotal;
	const char *too_big; /* the pipe that overflowed */
};

/* The plugin in a process group of its own, stdin from /dev/null, stdout and stderr into
 * the pipes (whose write ends are closed here). */
static int exec_spawn(const struct pk_kube_exec *x, char **envp, struct exec_io *io, pid_t *pid,
                      struct pk_err *err)
{
	if (pipe2(io->outp, O_CLOEXEC) != 0 || pipe2(io->errp, O_CLOEXEC) != 0)
		return pk_err_set(err, PK_ERR_INVALID, "%s: pipe: %s", x->where, strerror(errno));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, io->outp[1], 1);
	posix_spawn_file_actions_adddup2(&fa, io->errp[1], 2);
	posix_spawnattr_t attr;
	posix_spawnattr_init(&attr);
	sigset_t none;
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&attr, 0);
	int serr = posix_spawnp(pid, x->argv[0], &fa, &attr, x->argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(io->outp[1]);
	close(io->errp[1]);
	io->outp[1] = io->errp[1] = -1;
	if (serr != 0) {
		*pid = -1;
		return pk_err_set(err, PK_ERR_INVALID, "%s: cannot run: %s%s%s", x->where,
		                  strerror(serr), x->hint ? "; " : "", x->hint ? x->hint : "");
	}
	io->oopen = io->eopen = true;
	return PK_OK;
}

static void read_stdout(struct exec_io *io)
{
	char tmp[4096];
	ssize_t r = read(io->outp[0], tmp, sizeof(tmp));
	if (r <= 0 && !(r < 0 && errno == EINTR)) {
		io->oopen = false;
	} else if (r > 0) {
		if (io->olen + (size_t)r > PK_KUBE_CREDENTIAL_MAX) {
			io->too_big = "stdout";
			return;
		}
		memcpy(io->obuf + io->olen, tmp, (size_t)r);
		io->olen += (size_t)r;
	}
}

static void read_stderr(struct exec_io *io)
{
	char tmp[1024];
	ssize_t r = read(io->errp[0], tmp, sizeof(tmp));
	if (r <= 0 && !(r < 0 && errno == EINTR)) {
		io->eopen = false;
		return;
	}
	if (r < 0)
		return;
	io->etotal += (size_t)r;
	/* keep the last bytes of stderr for the message */
	size_t n = (size_t)r > sizeof(io->ebuf) ? sizeof(io->ebuf) : (size_t)r;
	if (io->elen + n > sizeof(io->ebuf)) {
		size_t drop = io->elen + n - sizeof(io->ebuf);
		memmove(io->ebuf, io->ebuf + drop, io->elen - drop);
		io->elen -= drop;
	}
	memcpy(io->ebuf + io->elen, tmp + ((size_t)r - n), n);
	io->elen += n;
	if (io->etotal > PK_KUBE_CREDENTIAL_MAX)
		io->too_big = "stderr";
}

/* Whether the plugin has exited (reaped); an error other than EINTR fails. */
static int exec_poll_exit(const struct pk_kube_exec *x, pid_t pid, struct exec_io *io,
                          struct pk_err *err)
{
	pid_t w = waitpid(pid, &io->status, WNOHANG);
	if (w == pid || (w < 0 && errno == ECHILD)) {
		io->reaped = true; /* ECHILD: SIGCHLD is ignored, nothing to reap */
		if (w < 0)
			io->status = 0;
	} else if (w < 0 && errno != EINTR) {
		return pk_err_set(err, PK_ERR_INVALID, "%s: waitpid: %s", x->where,
		                  strerror(errno));
	}
	return PK_OK;
}

/*
 * Until the plugin has exited and both pipes are closed, all within one
 * deadline: a plugin may close its pipes and run on, or leave them to a
 * child that outlives it, so neither EOF nor the exit is waited for
 * without it. Output is capped on both pipes.
 */
static int exec_collect(const struct pk_kube_exec *x, pid_t pid, struct exec_io *io,
                        struct pk_err *err)
{
	long long deadline = pk_kube_now_ns() + (long long)x->timeout_ms * 1000000LL;
	while (io->oopen || io->eopen || !io->reaped) {
		if (!io->reaped) {
			int rc = exec_poll_exit(x, pid, io, err);
			if (rc != PK_OK)
				return rc;
			if (io->reaped && !io->oopen && !io->eopen)
				break;
		}
		long long left = (deadline - pk_kube_now_ns()) / 1000000LL;
		if (left <= 0) {
			io->timed_out = true;
			break;
		}
		/* look for the exit often while the plugin runs */
		long cap = !io->reaped ? (io->oopen || io->eopen ? 50 : 5) : 1000;
		int wait_ms = (int)(left > cap ? cap : left);
		if (!io->oopen && !io->eopen) {
			poll(NULL, 0, wait_ms);
			continue;
		}
		struct pollfd pf[2] = {{io->oopen ? io->outp[0] : -1, POLLIN, 0},
		                       {io->eopen ? io->errp[0] : -1, POLLIN, 0}};
		int pr = poll(pf, 2, wait_ms);
		if (pr < 0 && errno != EINTR)
			return pk_err_set(err, PK_ERR_INVALID, "%s: poll: %s", x->where,
			                  strerror(errno));
		if (pr <= 0)
			continue;
		if (io->oopen && pf[0].revents)
			read_stdout(io);
		if (io->too_big == NULL && io->eopen && pf[1].revents)
			read_stderr(io);
		if (io->too_big != NULL)
			break;
	}
	return PK_OK;
}

/* The plugin and what it started in its process group, killed and reaped. */
static void exec_kill(pid_t pid, int *status)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	/* After SIGKILL the wait is short (unless the kernel holds the process in an
	 * uninterruptible sleep). */
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
}

/* How the finished run went: a timeout, too much output, or its exit status. */
static int exec_verdict(const struct pk_kube_exec *x, const struct pk_kube_log *log,
                        struct exec_io *io, struct pk_err *err)
{
	if (io->timed_out)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: no answer within %u ms (the exec plugin timeout); it was "
		                  "killed",
		                  x->where, x->timeout_ms);
	if (io->too_big != NULL)
		return pk_err_set(err, PK_ERR_TOO_BIG,
		                  "%s: printed more than %u bytes on %s; it was killed", x->where,
		                  PK_KUBE_CREDENTIAL_MAX, io->too_big);
	while (io->elen > 0 && (io->ebuf[io->elen - 1] == '\n' || io->ebuf[io->elen - 1] == '\r'))
		io->elen--;
	char equote[300];
	pk_text_quote(io->ebuf, io->elen, equote, sizeof(equote));
	if (io->elen > 0)
		pk_kube_logf(log, PK_KUBE_LOG_DEBUG, "%s: stderr: %s", x->where, equote);
	if (!WIFEXITED(io->status) || WEXITSTATUS(io->status) != 0) {
		int code =
		    WIFEXITED(io->status) ? WEXITSTATUS(io->status) : 128 + WTERMSIG(io->status);
		return pk_err_set(err, PK_ERR_INVALID, "%s: exited with status %d%s%s%s%s",
		                  x->where, code, io->elen ? ": " : "", equote, x->hint ? "; " : "",
		                  x->hint && code == 127 ? x->hint : "");
	}
	return PK_OK;
}

/* Runs the plugin; stdout (capped, NUL-terminated) into *out_buf. */
static int exec_run(const struct pk_kube_exec *x, const struct pk_kube_log *log, char **out_buf,
                    size_t *out_len, struct pk_err *err)
{
	struct exec_io io = {.outp = {-1, -1}, .errp = {-1, -1}};
	char *info = NULL;
	char **envp = exec_envp(x, &info);
	pid_t pid = -1;
	int rc = envp ? exec_spawn(x, envp, &io, &pid, err)
	              : pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	if (rc == PK_OK && (io.obuf = malloc(PK_KUBE_CREDENTIAL_MAX + 1)) == NULL)
		rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	if (rc == PK_OK) {
		rc = exec_collect(x, pid, &io, err);
		if (!io.reaped)
			exec_kill(pid, &io.status);
		else if (io.timed_out || io.too_big != NULL)
			/* It exited, but left a child holding a pipe: that child's group
			 * still exists, so its id is not reused yet. */
			kill(-pid, SIGKILL);
		pid = -1;
		if (rc == PK_OK)
			rc = exec_verdict(x, log, &io, err);
	}
	if (pid > 0)
		exec_kill(pid, NULL);
	for (int i = 0; i < 2; i++) {
		if (io.outp[i] >= 0)
			close(io.outp[i]);
		if (io.errp[i] >= 0)
			close(io.errp[i]);
	}
	if (rc == PK_OK) {
		io.obuf[io.olen] = '\0';
		*out_buf = io.obuf;
		*out_len = io.olen;
		io.obuf = NULL;
	}
	free(io.obuf);
	free(envp);
	free(info);
	return rc;
}

int pk_kube_exec_fetch(const struct pk_kube_exec *x, const struct pk_kube_log *log, char **token,
                       time_t *expiry, struct pk_err *err)
{
	*token = NULL;
	*expiry = 0;
	char *buf;
	size_t len;
	int rc = exec_run(x, log, &buf, &len, err);
	if (rc != PK_OK)
		return rc;
	rc = pk_kube_exec_credential_parse(buf, len, x->api, x->where, token, expiry, err);
	OPENSSL_cleanse(buf, len);
	free(buf);
	return rc;
}

/* ---- the ExecCredential ---- */

int pk_kube_token_clean(char *t, const char *what, struct pk_err *err)
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
	const char *kind = pk_json_cstr_at(cred, "kind");
	const char *api = pk_json_cstr_at(cred, "apiVersion");
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
	const char *exp = pk_json_cstr_at(st, "expirationTimestamp");
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
	if ((rc = pk_kube_token_clean(t, where, err)) != PK_OK) {
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
