/*
 * kube_token.c - the bearer token a config sends now: a static token, a
 * token file re-read when it rotates, or an exec plugin's credential cached
 * until shortly before it expires, with one plugin run at a time. See
 * kube_config.h for the rules followed.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/crypto.h>

#include "kube_config_int.h"

/* ---- tokens ---- */

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
	int rc = pk_kube_config_read_small(c->token_file, "token file", &buf, &len, err);
	if (rc == PK_OK && strlen(buf) != len)
		rc = pk_err_set(err, PK_ERR_INVALID, "%s: holds a NUL byte", what);
	if (rc == PK_OK)
		rc = pk_kube_token_clean(buf, what, err);
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
	int rc = pk_kube_exec_fetch(c->exec, &c->log, &t, &expiry, &e);
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
