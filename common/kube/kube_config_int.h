/*
 * kube_config_int.h - the loaded config as kube_config.c (sources, cluster,
 * user) and kube_token.c (the token cache) share it. Private to libpkkube:
 * everything else goes through kube_config.h.
 */
#ifndef PK_KUBE_CONFIG_INT_H
#define PK_KUBE_CONFIG_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "kube_config.h"
#include "kube_exec.h"

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

	struct pk_kube_exec *exec; /* the exec plugin, as the kubeconfig describes it */
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

/* Reads a whole file (capped at PK_KUBE_CREDENTIAL_MAX) into a NUL-terminated buffer; `what`
 * starts the message. */
PK_MUST_CHECK int pk_kube_config_read_small(const char *path, const char *what, char **buf,
                                            size_t *len, struct pk_err *err);

#endif
