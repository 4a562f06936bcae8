/*
 * serving_cert.h - the webhook's serving certificate and key: loaded from files at
 * start, watched, and swapped for new handshakes without a restart.
 *
 * libmicrohttpd has no reload call; it asks GnuTLS for credentials through
 * MHD_OPTION_HTTPS_CERT_CALLBACK on every handshake, and pk_certs_retrieve
 * answers with the pair in use at that moment. Pairs are reference counted:
 * a handshake (and its connection, until it closes) holds the pair it was
 * given, so a swap never frees a certificate or key GnuTLS still points at.
 *
 * A new pair replaces the current one only when both files parse and the
 * key matches the certificate's public key; otherwise the current pair
 * stays, the reason is logged naming the file, and the failure is counted.
 */
#ifndef PK_WEBHOOK_SERVING_CERT_H
#define PK_WEBHOOK_SERVING_CERT_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stdint.h>

#include "metrics.h"
#include "pk.h"

/* Certificate and key files larger than this are refused. */
#define PK_CERTS_MAX_FILE (1u << 20)
/* Longest chain accepted in the certificate file (leaf first). */
#define PK_CERTS_MAX_CHAIN 16

struct pk_certs;
struct pk_cert_pair;

/*
 * Loads the pair from cert_path and key_path (PEM). On failure err names
 * the file and what is wrong with it. `metrics` (may be NULL) is borrowed
 * and must outlive the result; it gets the expiry gauge and the reload
 * counters. Free with pk_certs_free.
 */
PK_MUST_CHECK int pk_certs_open(const char *cert_path, const char *key_path,
                                struct pk_metrics *metrics, struct pk_certs **out,
                                struct pk_err *err);

/*
 * Stops the watcher if running and releases the current pair. Pairs still
 * held by connections are freed when those connections let them go, so
 * call this after the TLS daemon has stopped.
 */
void pk_certs_free(struct pk_certs *c);

/*
 * Re-reads both files. Returns 1 when a new pair is now in use, 0 when the
 * files are unchanged since the last attempt (nothing is logged or
 * counted), and PK_ERR_INVALID when they changed but do not make a usable
 * pair (logged and counted; the current pair stays).
 */
int pk_certs_reload(struct pk_certs *c);

/* Starts a thread calling pk_certs_reload every `seconds` (1..86400). */
PK_MUST_CHECK int pk_certs_start_watch(struct pk_certs *c, unsigned seconds, struct pk_err *err);
/*
 * Makes the watcher call reload(ud) too, after each look at the pair (the
 * client CA bundle, client_auth.h). Call before pk_certs_start_watch.
 */
void pk_certs_watch_also(struct pk_certs *c, int (*reload)(void *ud), void *ud);
/* Stops and joins the watcher; a no-op when none runs. */
void pk_certs_stop_watch(struct pk_certs *c);

/*
 * Reads a whole PEM file of at most PK_CERTS_MAX_FILE bytes into data (the
 * caller frees data->data with free()); err names `what` and the file.
 */
PK_MUST_CHECK int pk_certs_read_file(const char *path, const char *what, gnutls_datum_t *data,
                                     struct pk_err *err);
/* SHA-256 of d, to tell a changed file (zeros when hashing fails). */
void pk_certs_digest(const gnutls_datum_t *d, unsigned char out[32]);

/* The pair in use now, with a reference the caller drops with pk_cert_pair_release. */
struct pk_cert_pair *pk_certs_acquire(struct pk_certs *c);
void pk_cert_pair_release(struct pk_cert_pair *p);
/* The leaf's serial number in lower-case hex, and its notAfter. Borrowed. */
const char *pk_cert_pair_serial(const struct pk_cert_pair *p);
int64_t pk_cert_pair_not_after(const struct pk_cert_pair *p);

/*
 * The GnuTLS callback (gnutls_certificate_retrieve_function2) for
 * MHD_OPTION_HTTPS_CERT_CALLBACK. GnuTLS passes it no user pointer, so it
 * serves the pk_certs set with pk_certs_set_active: one TLS listener per
 * process. The reference it takes is held until pk_certs_session_closed.
 */
int pk_certs_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                      const gnutls_pk_algorithm_t *pk_algos, int pk_algos_len,
                      gnutls_pcert_st **pcert, unsigned int *pcert_len, gnutls_privkey_t *key);
/* Makes `c` the one pk_certs_retrieve serves (NULL: none; handshakes then fail). */
void pk_certs_set_active(struct pk_certs *c);
/* Drops the reference a handshake on `session` took; call when its connection closes. */
void pk_certs_session_closed(struct pk_certs *c, gnutls_session_t session);
/* TLS sessions holding a pair now (tests: zero once every connection has closed). */
size_t pk_certs_count_sessions(struct pk_certs *c);

#endif
