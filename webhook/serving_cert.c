/* serving_cert.c - the serving certificate and key: load, match, watch, swap. */
#include "serving_cert.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/x509.h>

#include "file.h"
#include "log.h"

struct pk_cert_pair {
	atomic_uint refs;
	gnutls_pcert_st pcerts[PK_CERTS_MAX_CHAIN];
	unsigned npcerts;
	gnutls_privkey_t key;
	int64_t not_after;
	char serial[2 * 40 + 1];
};

/* Which pair each live TLS session was given: session -> pair, hashed by pointer. */
struct session_ref {
	gnutls_session_t session;
	struct pk_cert_pair *pair;
	struct session_ref *next;
};
#define SESSION_BUCKETS 256

struct pk_certs {
	char *cert_path;
	char *key_path;
	struct pk_metrics *metrics;

	pthread_mutex_t lock; /* guards current and sessions */
	struct pk_cert_pair *current;
	struct session_ref *sessions[SESSION_BUCKETS];

	/* What the files held at the last attempt, good or bad (reload thread only). */
	unsigned char cert_digest[32];
	unsigned char key_digest[32];

	pthread_mutex_t watch_lock;
	pthread_cond_t watch_cond;
	bool watch_running;
	bool watch_stop;
	int (*also)(void *ud); /* pk_certs_watch_also */
	void *also_ud;
	unsigned watch_seconds;
	pthread_t watch_thread;
};

static _Atomic(struct pk_certs *) active_certs;

static void pair_free(struct pk_cert_pair *p)
{
	for (unsigned i = 0; i < p->npcerts; i++)
		gnutls_pcert_deinit(&p->pcerts[i]);
	if (p->key != NULL)
		gnutls_privkey_deinit(p->key);
	free(p);
}

void pk_cert_pair_release(struct pk_cert_pair *p)
{
	if (p != NULL && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1)
		pair_free(p);
}

static struct pk_cert_pair *pair_ref(struct pk_cert_pair *p)
{
	atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
	return p;
}

const char *pk_cert_pair_serial(const struct pk_cert_pair *p)
{
	return p->serial;
}

int64_t pk_cert_pair_not_after(const struct pk_cert_pair *p)
{
	return p->not_after;
}

int pk_certs_read_file(const char *path, const char *what, gnutls_datum_t *data, struct pk_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	int errnum = 0;
	int rc = pk_read_file(path, PK_CERTS_MAX_FILE, &buf, &len, &errnum);
	if (rc == PK_ERR_IO)
		return pk_err_set(err, PK_ERR_INVALID, "%s %s: %s", what, path, strerror(errnum));
	if (rc == PK_ERR_TOO_BIG)
		return pk_err_set(err, PK_ERR_INVALID, "%s %s: larger than %u bytes", what, path,
		                  PK_CERTS_MAX_FILE);
	if (rc != PK_OK)
		return pk_err_set(err, PK_ERR_NOMEM, "%s %s: out of memory", what, path);
	if (len == 0) {
		free(buf);
		return pk_err_set(err, PK_ERR_INVALID, "%s %s: empty file", what, path);
	}
	data->data = (unsigned char *)buf;
	data->size = (unsigned)len;
	return PK_OK;
}

/* The DER SubjectPublicKeyInfo of a public key; the caller frees out->data with gnutls_free. */
static int pubkey_der(gnutls_pubkey_t pub, gnutls_datum_t *out)
{
	return gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, out);
}

/* True when `key` is the private half of the leaf's public key. */
static bool key_matches(gnutls_privkey_t key, gnutls_pcert_st *leaf)
{
	gnutls_pubkey_t pub = NULL;
	gnutls_datum_t a = {NULL, 0}, b = {NULL, 0};
	bool ok = false;
	if (gnutls_pubkey_init(&pub) < 0)
		return false;
	if (gnutls_pubkey_import_privkey(pub, key, 0, 0) < 0)
		goto out;
	if (pubkey_der(pub, &a) < 0 || pubkey_der(leaf->pubkey, &b) < 0)
		goto out;
	ok = a.size == b.size && memcmp(a.data, b.data, a.size) == 0;
out:
	gnutls_free(a.data);
	gnutls_free(b.data);
	gnutls_pubkey_deinit(pub);
	return ok;
}

/* Builds a pair from PEM bytes; err names the file at fault. */
static int pair_parse(const char *cert_path, const gnutls_datum_t *cert, const char *key_path,
                      const gnutls_datum_t *keydata, struct pk_cert_pair **out, struct pk_err *err)
{
	struct pk_cert_pair *p = calloc(1, sizeof(*p));
	gnutls_x509_crt_t crt = NULL;
	int rc = PK_ERR_INVALID;
	if (p == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	atomic_init(&p->refs, 1);

	unsigned n = PK_CERTS_MAX_CHAIN;
	int g = gnutls_pcert_list_import_x509_raw(p->pcerts, &n, cert, GNUTLS_X509_FMT_PEM,
	                                          GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
	if (g < 0) {
		pk_err_set(err, PK_ERR_INVALID, "certificate file %s: %s", cert_path,
		           gnutls_strerror(g));
		goto out;
	}
	p->npcerts = n;
	if (n == 0) {
		pk_err_set(err, PK_ERR_INVALID, "certificate file %s: no certificate", cert_path);
		goto out;
	}
	g = gnutls_privkey_init(&p->key);
	if (g >= 0)
		g = gnutls_privkey_import_x509_raw(p->key, keydata, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (g < 0) {
		pk_err_set(err, PK_ERR_INVALID, "private key file %s: %s", key_path,
		           gnutls_strerror(g));
		goto out;
	}
	if (!key_matches(p->key, &p->pcerts[0])) {
		pk_err_set(err, PK_ERR_INVALID,
		           "private key file %s does not match the certificate in %s", key_path,
		           cert_path);
		goto out;
	}
	g = gnutls_pcert_export_x509(&p->pcerts[0], &crt);
	if (g < 0) {
		pk_err_set(err, PK_ERR_INVALID, "certificate file %s: %s", cert_path,
		           gnutls_strerror(g));
		goto out;
	}
	p->not_after = (int64_t)gnutls_x509_crt_get_expiration_time(crt);
	unsigned char serial[40];
	size_t slen = sizeof(serial);
	if (gnutls_x509_crt_get_serial(crt, serial, &slen) < 0)
		slen = 0;
	for (size_t i = 0; i < slen; i++)
		snprintf(p->serial + 2 * i, 3, "%02x", serial[i]);
	*out = p;
	p = NULL;
	rc = PK_OK;
out:
	if (crt != NULL)
		gnutls_x509_crt_deinit(crt);
	if (p != NULL)
		pair_free(p);
	return rc;
}

/* Reads both files; *cert and *key are freed by the caller with free(). */
static int read_pair_files(const struct pk_certs *c, gnutls_datum_t *cert, gnutls_datum_t *key,
                           struct pk_err *err)
{
	int rc = pk_certs_read_file(c->cert_path, "certificate file", cert, err);
	if (rc != PK_OK)
		return rc;
	rc = pk_certs_read_file(c->key_path, "private key file", key, err);
	if (rc != PK_OK) {
		free(cert->data);
		cert->data = NULL;
	}
	return rc;
}

void pk_certs_digest(const gnutls_datum_t *d, unsigned char out[32])
{
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, d->data, d->size, out) < 0)
		memset(out, 0, 32);
}

/* Makes `p` current (taking over the caller's reference) and drops the old one. */
static void install(struct pk_certs *c, struct pk_cert_pair *p)
{
	pthread_mutex_lock(&c->lock);
	struct pk_cert_pair *old = c->current;
	c->current = p;
	pthread_mutex_unlock(&c->lock);
	pk_cert_pair_release(old);
	pk_metrics_set_cert_expiry(c->metrics, p->not_after);
}

int pk_certs_open(const char *cert_path, const char *key_path, struct pk_metrics *metrics,
                  struct pk_certs **out, struct pk_err *err)
{
	if (cert_path == NULL || *cert_path == '\0')
		return pk_err_set(err, PK_ERR_INVALID, "--tls-cert-file is required");
	if (key_path == NULL || *key_path == '\0')
		return pk_err_set(err, PK_ERR_INVALID, "--tls-private-key-file is required");
	struct pk_certs *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	gnutls_datum_t cert = {NULL, 0}, key = {NULL, 0};
	struct pk_cert_pair *p = NULL;
	int rc = PK_ERR_NOMEM;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->watch_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->watch_cond, &ca);
	pthread_condattr_destroy(&ca);
	c->metrics = metrics;
	c->cert_path = strdup(cert_path);
	c->key_path = strdup(key_path);
	if (c->cert_path == NULL || c->key_path == NULL) {
		pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = read_pair_files(c, &cert, &key, err);
	if (rc != PK_OK)
		goto out;
	pk_certs_digest(&cert, c->cert_digest);
	pk_certs_digest(&key, c->key_digest);
	rc = pair_parse(c->cert_path, &cert, c->key_path, &key, &p, err);
	if (rc != PK_OK)
		goto out;
	install(c, p);
	pk_log_info("serving certificate loaded", PK_LOG_STR("file", c->cert_path),
	            PK_LOG_STR("serial", p->serial), PK_LOG_INT("notAfter", p->not_after));
	*out = c;
	c = NULL;
out:
	free(cert.data);
	free(key.data);
	if (c != NULL)
		pk_certs_free(c);
	return rc;
}

int pk_certs_reload(struct pk_certs *c)
{
	gnutls_datum_t cert = {NULL, 0}, key = {NULL, 0};
	struct pk_err err = {{0}};
	struct pk_cert_pair *p = NULL;
	int rc = read_pair_files(c, &cert, &key, &err);
	if (rc != PK_OK) {
		/* A missing file during a Secret update is transient; say so once per state. */
		unsigned char none[32] = {0};
		if (memcmp(c->cert_digest, none, 32) != 0 || memcmp(c->key_digest, none, 32) != 0) {
			memset(c->cert_digest, 0, 32);
			memset(c->key_digest, 0, 32);
			pk_log_warn("certificate reload failed; keeping the current pair",
			            PK_LOG_STR("reason", err.msg));
			pk_metrics_count_reload(c->metrics, false);
			return PK_ERR_INVALID;
		}
		return 0;
	}
	unsigned char cd[32], kd[32];
	pk_certs_digest(&cert, cd);
	pk_certs_digest(&key, kd);
	if (memcmp(cd, c->cert_digest, 32) == 0 && memcmp(kd, c->key_digest, 32) == 0) {
		rc = 0;
		goto out;
	}
	memcpy(c->cert_digest, cd, 32);
	memcpy(c->key_digest, kd, 32);
	if (pair_parse(c->cert_path, &cert, c->key_path, &key, &p, &err) != PK_OK) {
		pk_log_warn("certificate reload failed; keeping the current pair",
		            PK_LOG_STR("reason", err.msg));
		pk_metrics_count_reload(c->metrics, false);
		rc = PK_ERR_INVALID;
		goto out;
	}
	install(c, p);
	pk_metrics_count_reload(c->metrics, true);
	pk_log_info("serving certificate reloaded", PK_LOG_STR("file", c->cert_path),
	            PK_LOG_STR("serial", p->serial), PK_LOG_INT("notAfter", p->not_after));
	rc = 1;
out:
	free(cert.data);
	free(key.data);
	return rc;
}

static void *watch_main(void *arg)
{
	struct pk_certs *c = arg;
	pthread_mutex_lock(&c->watch_lock);
	while (!c->watch_stop) {
		struct timespec deadline;
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += c->watch_seconds;
		while (!c->watch_stop && pthread_cond_timedwait(&c->watch_cond, &c->watch_lock,
		                                                &deadline) != ETIMEDOUT)
			;
		if (c->watch_stop)
			break;
		pthread_mutex_unlock(&c->watch_lock);
		(void)pk_certs_reload(c); /* logs and counts its own failures */
		if (c->also != NULL)
			(void)c->also(c->also_ud); /* so does it */
		pthread_mutex_lock(&c->watch_lock);
	}
	pthread_mutex_unlock(&c->watch_lock);
	return NULL;
}

int pk_certs_start_watch(struct pk_certs *c, unsigned seconds, struct pk_err *err)
{
	if (seconds < 1 || seconds > 86400)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "--cert-poll-seconds must be in 1..86400, got %u", seconds);
	if (c->watch_running)
		return PK_OK;
	c->watch_seconds = seconds;
	c->watch_stop = false;
	int e = pthread_create(&c->watch_thread, NULL, watch_main, c);
	if (e != 0)
		return pk_err_set(err, PK_ERR_NOMEM, "cannot start the certificate watcher: %s",
		                  strerror(e));
	c->watch_running = true;
	return PK_OK;
}

void pk_certs_watch_also(struct pk_certs *c, int (*reload)(void *ud), void *ud)
{
	c->also = reload;
	c->also_ud = ud;
}

void pk_certs_stop_watch(struct pk_certs *c)
{
	if (!c->watch_running)
		return;
	pthread_mutex_lock(&c->watch_lock);
	c->watch_stop = true;
	pthread_cond_signal(&c->watch_cond);
	pthread_mutex_unlock(&c->watch_lock);
	pthread_join(c->watch_thread, NULL);
	c->watch_running = false;
}

struct pk_cert_pair *pk_certs_acquire(struct pk_certs *c)
{
	pthread_mutex_lock(&c->lock);
	struct pk_cert_pair *p = c->current ? pair_ref(c->current) : NULL;
	pthread_mutex_unlock(&c->lock);
	return p;
}

void pk_certs_free(struct pk_certs *c)
{
	if (c == NULL)
		return;
	pk_certs_stop_watch(c);
	struct pk_certs *self = c;
	atomic_compare_exchange_strong(&active_certs, &self, NULL);
	for (size_t b = 0; b < SESSION_BUCKETS; b++) {
		struct session_ref *r = c->sessions[b];
		while (r != NULL) {
			struct session_ref *next = r->next;
			pk_cert_pair_release(r->pair);
			free(r);
			r = next;
		}
	}
	pk_cert_pair_release(c->current);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->watch_lock);
	pthread_cond_destroy(&c->watch_cond);
	free(c->cert_path);
	free(c->key_path);
	free(c);
}

void pk_certs_set_active(struct pk_certs *c)
{
	atomic_store(&active_certs, c);
}

static size_t session_bucket(gnutls_session_t s)
{
	uintptr_t v = (uintptr_t)s;
	return (size_t)((v >> 4) ^ (v >> 12)) % SESSION_BUCKETS;
}

int pk_certs_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                      const gnutls_pk_algorithm_t *pk_algos, int pk_algos_len,
                      gnutls_pcert_st **pcert, unsigned int *pcert_len, gnutls_privkey_t *key)
{
	(void)req_ca_dn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_len;
	struct pk_certs *c = atomic_load(&active_certs);
	if (c == NULL)
		return -1;
	struct session_ref *fresh = malloc(sizeof(*fresh));
	if (fresh == NULL)
		return -1;
	size_t b = session_bucket(session);
	pthread_mutex_lock(&c->lock);
	if (c->current == NULL) {
		pthread_mutex_unlock(&c->lock);
		free(fresh);
		return -1;
	}
	struct pk_cert_pair *p = pair_ref(c->current);
	struct pk_cert_pair *dropped = NULL;
	struct session_ref *r = c->sessions[b];
	while (r != NULL && r->session != session)
		r = r->next;
	if (r != NULL) {
		/* A second handshake on one session (renegotiation) moves it to the new pair. */
		dropped = r->pair;
		r->pair = p;
	} else {
		fresh->session = session;
		fresh->pair = p;
		fresh->next = c->sessions[b];
		c->sessions[b] = fresh;
		fresh = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	free(fresh);
	pk_cert_pair_release(dropped);
	*pcert = p->pcerts;
	*pcert_len = p->npcerts;
	*key = p->key;
	return 0;
}

void pk_certs_session_closed(struct pk_certs *c, gnutls_session_t session)
{
	if (c == NULL || session == NULL)
		return;
	size_t b = session_bucket(session);
	struct session_ref *found = NULL;
	pthread_mutex_lock(&c->lock);
	for (struct session_ref **pp = &c->sessions[b]; *pp != NULL; pp = &(*pp)->next) {
		if ((*pp)->session == session) {
			found = *pp;
			*pp = found->next;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (found != NULL) {
		pk_cert_pair_release(found->pair);
		free(found);
	}
}

size_t pk_certs_count_sessions(struct pk_certs *c)
{
	size_t n = 0;
	pthread_mutex_lock(&c->lock);
	for (size_t b = 0; b < SESSION_BUCKETS; b++)
		for (const struct session_ref *r = c->sessions[b]; r != NULL; r = r->next)
			n++;
	pthread_mutex_unlock(&c->lock);
	return n;
}
