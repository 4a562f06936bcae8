/* client_auth.c - client certificates: the CA bundle, its reload, and the verdict per request. */
#include "client_auth.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/x509.h>

#include "log.h"
#include "serving_cert.h"

/* The longest chain a client may present that is looked at. */
#define MAX_PEER_CHAIN 16
/* A subject CN is at most 64 characters (RFC 5280, ub-common-name). */
#define NAME_MAX_LEN 64

/* One bundle, shared by the requests verifying against it while a reload swaps it. */
struct trust {
	atomic_uint refs;
	gnutls_x509_trust_list_t list;
	unsigned ncas;
};

struct pk_client_auth {
	char *path;
	bool required;
	char names[PK_CLIENT_AUTH_MAX_NAMES][NAME_MAX_LEN + 1];
	size_t nnames;
	struct pk_metrics *metrics;
	pthread_mutex_t lock; /* guards current */
	struct trust *current;
	unsigned char digest[32]; /* what the file held at the last attempt (reload only) */
};

static void trust_release(struct trust *t)
{
	if (t != NULL && atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1) {
		gnutls_x509_trust_list_deinit(t->list, 1);
		free(t);
	}
}

static struct trust *trust_acquire(struct pk_client_auth *a)
{
	pthread_mutex_lock(&a->lock);
	struct trust *t = a->current;
	atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&a->lock);
	return t;
}

/* A bundle from PEM bytes; err names the file. */
static int trust_parse(const char *path, const gnutls_datum_t *pem, struct trust **out,
                       struct pk_err *err)
{
	gnutls_x509_crt_t *crts = NULL;
	unsigned n = 0;
	int g = gnutls_x509_crt_list_import2(&crts, &n, pem, GNUTLS_X509_FMT_PEM, 0);
	if (g < 0)
		return pk_err_set(err, PK_ERR_INVALID, "client CA file %s: %s", path,
		                  gnutls_strerror(g));
	int rc = PK_ERR_INVALID;
	struct trust *t = NULL;
	if (n == 0) {
		pk_err_set(err, PK_ERR_INVALID, "client CA file %s: no certificate", path);
		goto out;
	}
	if (n > PK_CLIENT_AUTH_MAX_CAS) {
		pk_err_set(err, PK_ERR_INVALID, "client CA file %s: %u certificates, at most %u",
		           path, n, PK_CLIENT_AUTH_MAX_CAS);
		goto out;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL || gnutls_x509_trust_list_init(&t->list, 0) < 0) {
		free(t);
		t = NULL;
		rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		goto out;
	}
	atomic_init(&t->refs, 1);
	/* The list takes the certificates over, added or not. */
	g = gnutls_x509_trust_list_add_cas(t->list, crts, n, 0);
	for (unsigned i = 0; i < n; i++)
		crts[i] = NULL;
	if (g < 0 || (unsigned)g != n) {
		pk_err_set(err, PK_ERR_INVALID, "client CA file %s: %s", path,
		           g < 0 ? gnutls_strerror(g) : "a certificate is repeated");
		trust_release(t);
		t = NULL;
		goto out;
	}
	t->ncas = n;
	*out = t;
	t = NULL;
	rc = PK_OK;
out:
	for (unsigned i = 0; i < n; i++)
		if (crts[i] != NULL)
			gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	return rc;
}

/* "a, b" into a->names; the error names the flag and the name at fault. */
static int names_parse(struct pk_client_auth *a, const char *list, struct pk_err *err)
{
	const char *p = list;
	while (p != NULL && *p != '\0') {
		const char *end = strchr(p, ',');
		size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
		const char *s = p;
		while (n > 0 && *s == ' ') {
			s++;
			n--;
		}
		while (n > 0 && s[n - 1] == ' ')
			n--;
		if (n == 0)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "--client-cert-allowed-names: empty name in \"%s\"",
			                  list);
		if (n > NAME_MAX_LEN)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "--client-cert-allowed-names: \"%.*s\" is longer than %u "
			                  "characters",
			                  (int)n, s, NAME_MAX_LEN);
		if (a->nnames == PK_CLIENT_AUTH_MAX_NAMES)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "--client-cert-allowed-names: more than %u names",
			                  PK_CLIENT_AUTH_MAX_NAMES);
		memcpy(a->names[a->nnames], s, n);
		a->names[a->nnames][n] = '\0';
		a->nnames++;
		p = end != NULL ? end + 1 : NULL;
	}
	return PK_OK;
}

int pk_client_auth_open(const struct pk_client_auth_config *cfg, struct pk_client_auth **out,
                        struct pk_err *err)
{
	if (cfg->ca_file == NULL || *cfg->ca_file == '\0')
		return pk_err_set(err, PK_ERR_INVALID, "--client-ca-file is required");
	struct pk_client_auth *a = calloc(1, sizeof(*a));
	if (a == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	pthread_mutex_init(&a->lock, NULL);
	a->required = cfg->required;
	a->metrics = cfg->metrics;
	gnutls_datum_t pem = {NULL, 0};
	int rc = PK_ERR_NOMEM;
	a->path = strdup(cfg->ca_file);
	if (a->path == NULL) {
		pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((rc = names_parse(a, cfg->allowed_names, err)) != PK_OK ||
	    (rc = pk_certs_read_file(a->path, "client CA file", &pem, err)) != PK_OK)
		goto out;
	pk_certs_digest(&pem, a->digest);
	if ((rc = trust_parse(a->path, &pem, &a->current, err)) != PK_OK)
		goto out;
	pk_log_info("client CA bundle loaded", PK_LOG_STR("file", a->path),
	            PK_LOG_UINT("certificates", a->current->ncas),
	            PK_LOG_BOOL("required", a->required), PK_LOG_UINT("allowedNames", a->nnames));
	*out = a;
	a = NULL;
out:
	free(pem.data);
	pk_client_auth_free(a);
	return rc;
}

void pk_client_auth_free(struct pk_client_auth *a)
{
	if (a == NULL)
		return;
	trust_release(a->current);
	pthread_mutex_destroy(&a->lock);
	free(a->path);
	free(a);
}

int pk_client_auth_reload(void *ud)
{
	struct pk_client_auth *a = ud;
	gnutls_datum_t pem = {NULL, 0};
	struct pk_err err = {{0}};
	struct trust *t = NULL;
	unsigned char d[32] = {0};
	int rc = pk_certs_read_file(a->path, "client CA file", &pem, &err);
	if (rc == PK_OK)
		pk_certs_digest(&pem, d);
	if (memcmp(d, a->digest, 32) == 0) {
		rc = 0; /* unchanged, or still unreadable: said once already */
		goto out;
	}
	memcpy(a->digest, d, 32);
	if (rc != PK_OK || trust_parse(a->path, &pem, &t, &err) != PK_OK) {
		pk_log_warn("client CA reload failed; keeping the bundle in use",
		            PK_LOG_STR("reason", err.msg));
		pk_metrics_count_client_ca_reload(a->metrics, false);
		rc = PK_ERR_INVALID;
		goto out;
	}
	pthread_mutex_lock(&a->lock);
	struct trust *old = a->current;
	a->current = t;
	pthread_mutex_unlock(&a->lock);
	trust_release(old);
	pk_metrics_count_client_ca_reload(a->metrics, true);
	pk_log_info("client CA bundle reloaded", PK_LOG_STR("file", a->path),
	            PK_LOG_UINT("certificates", t->ncas));
	rc = 1;
out:
	free(pem.data);
	return rc;
}

void pk_client_auth_request(const struct pk_client_auth *a, gnutls_session_t session)
{
	if (a == NULL || session == NULL)
		return;
	/* REQUEST, not REQUIRE: the verdict is the request's, so that it is logged and
	 * counted with its reason, and answered 401 rather than a bare handshake alert. */
	gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUEST);
	/* No acceptable-CA list: Go's client sends its certificate only when the list
	 * is empty or names its issuer, and the bundle may change after the handshake
	 * credentials were made. */
	gnutls_certificate_send_x509_rdn_sequence(session, 1);
}

/* The leaf's subject CN into cn; false when it has none. */
static bool leaf_cn(gnutls_x509_crt_t leaf, char *cn, size_t len)
{
	size_t n = len;
	if (gnutls_x509_crt_get_dn_by_oid(leaf, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &n) < 0)
		return false;
	cn[len - 1] = '\0';
	return true;
}

static bool name_allowed(const struct pk_client_auth *a, const char *cn)
{
	for (size_t i = 0; i < a->nnames; i++)
		if (strcmp(a->names[i], cn) == 0)
			return true;
	return false;
}

/* Verifies the chain against the bundle in use; PK_CLIENT_OK or PK_CLIENT_BAD_CERT. */
static enum pk_client_verdict verify_chain(struct pk_client_auth *a, gnutls_x509_crt_t *crts,
                                           unsigned n, char *why, size_t len)
{
	struct trust *t = trust_acquire(a);
	/* "TLS WWW client authentication" (RFC 5280 id-kp-clientAuth): checked when the
	 * certificate has an extended key usage at all. */
	gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID,
	                                 .data =
	                                     (unsigned char *)(uintptr_t)GNUTLS_KP_TLS_WWW_CLIENT,
	                                 .size = 0};
	unsigned status = 0;
	int g = gnutls_x509_trust_list_verify_crt2(t->list, crts, n, &purpose, 1, 0, &status, NULL);
	trust_release(t);
	if (g < 0) {
		snprintf(why, len, "verification failed: %s", gnutls_strerror(g));
		return PK_CLIENT_BAD_CERT;
	}
	if (status != 0) {
		gnutls_datum_t text = {NULL, 0};
		if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text,
		                                                 0) >= 0)
			snprintf(why, len, "%s", (const char *)text.data);
		else
			snprintf(why, len, "not signed by the client CA");
		gnutls_free(text.data);
		return PK_CLIENT_BAD_CERT;
	}
	return PK_CLIENT_OK;
}

enum pk_client_verdict pk_client_auth_check(struct pk_client_auth *a, gnutls_session_t session,
                                            char *why, size_t len)
{
	unsigned n = 0;
	const gnutls_datum_t *peers =
	    session != NULL ? gnutls_certificate_get_peers(session, &n) : NULL;
	if (peers == NULL || n == 0) {
		if (!a->required)
			return PK_CLIENT_OK;
		snprintf(why, len, "no client certificate presented");
		return PK_CLIENT_NO_CERT;
	}
	if (gnutls_certificate_type_get(session) != GNUTLS_CRT_X509) {
		snprintf(why, len, "not an X.509 certificate");
		return PK_CLIENT_BAD_CERT;
	}
	if (n > MAX_PEER_CHAIN) {
		snprintf(why, len, "a chain of %u certificates, at most %u", n, MAX_PEER_CHAIN);
		return PK_CLIENT_BAD_CERT;
	}
	gnutls_x509_crt_t crts[MAX_PEER_CHAIN] = {0};
	enum pk_client_verdict v = PK_CLIENT_BAD_CERT;
	unsigned got = 0;
	for (; got < n; got++) {
		if (gnutls_x509_crt_init(&crts[got]) < 0)
			break;
		if (gnutls_x509_crt_import(crts[got], &peers[got], GNUTLS_X509_FMT_DER) < 0) {
			got++;
			snprintf(why, len, "certificate %u does not parse", got - 1);
			goto out;
		}
	}
	if (got != n) {
		snprintf(why, len, "out of memory");
		goto out;
	}
	v = verify_chain(a, crts, n, why, len);
	if (v != PK_CLIENT_OK)
		goto out;
	char cn[NAME_MAX_LEN + 2] = "";
	if (a->nnames > 0 && (!leaf_cn(crts[0], cn, sizeof(cn)) || !name_allowed(a, cn))) {
		snprintf(why, len, "subject CN \"%s\" is not among the allowed names", cn);
		v = PK_CLIENT_NAME_NOT_ALLOWED;
	}
out:
	for (unsigned i = 0; i < got; i++)
		gnutls_x509_crt_deinit(crts[i]);
	return v;
}
