/*
 * client_auth.h - who calls the webhook: the apiserver authenticating with a
 * client certificate, as an AdmissionConfiguration's kubeConfigFile tells it
 * to (docs/install.md, "Authenticating the apiserver").
 *
 * With a CA bundle, every TLS session asks the client for a certificate
 * (GNUTLS_CERT_REQUEST, with no list of acceptable CAs, so that a client
 * whose certificate comes from a CA added since still sends it). A request
 * is then judged once its headers are in, before its body is read:
 *
 *   no certificate           allowed unless required; else 401
 *   one the CA did not sign, expired, or not for client auth   401
 *   a subject CN outside the allowed names (when set)           403
 *
 * The bundle is re-read when the serving pair's watcher runs
 * (pk_client_auth_reload, through pk_certs_watch_also); a bundle that does
 * not parse leaves the one in use in place, logged and counted.
 */
#ifndef PK_WEBHOOK_CLIENT_AUTH_H
#define PK_WEBHOOK_CLIENT_AUTH_H

#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stddef.h>

#include "metrics.h"
#include "pk.h"

/* CA bundle files larger than this are refused. */
#define PK_CLIENT_AUTH_MAX_FILE (1u << 20)
/* At most this many CAs in the bundle, and allowed names. */
#define PK_CLIENT_AUTH_MAX_CAS   64
#define PK_CLIENT_AUTH_MAX_NAMES 32

struct pk_client_auth_config {
	const char *ca_file; /* PEM bundle; required */
	bool required;       /* a request without a valid certificate gets 401 */
	/* Comma-separated subject CNs allowed (e.g. "kube-apiserver"); NULL or "": any the CA
	 * signed. */
	const char *allowed_names;
	struct pk_metrics *metrics; /* borrowed; may be NULL */
};

struct pk_client_auth;

/*
 * Loads the bundle. On failure err names the file (or the flag) and what is
 * wrong. Free with pk_client_auth_free after the TLS listener has stopped.
 */
PK_MUST_CHECK int pk_client_auth_open(const struct pk_client_auth_config *cfg,
                                      struct pk_client_auth **out, struct pk_err *err);
void pk_client_auth_free(struct pk_client_auth *a);

/*
 * Re-reads the bundle: 1 when a new one is in use, 0 when the file is
 * unchanged, PK_ERR_INVALID when it changed and does not parse (logged and
 * counted; the one in use stays). `a` is a struct pk_client_auth.
 */
int pk_client_auth_reload(void *a);

/* Asks the client of a new TLS session for a certificate (before its handshake). */
void pk_client_auth_request(const struct pk_client_auth *a, gnutls_session_t session);

/*
 * Judges the peer of an established session. On anything but PK_CLIENT_OK,
 * why (len bytes) says what was wrong, for the log.
 */
enum pk_client_verdict pk_client_auth_check(struct pk_client_auth *a, gnutls_session_t session,
                                            char *why, size_t len);

#endif
