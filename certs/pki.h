/*
 * pki.h - poolkeeper-certs' X.509 work on OpenSSL 3: private keys, a CA
 * certificate, a serving certificate signed by it, PEM in and out, and the
 * checks that decide whether a stored pair is still good (key match,
 * issuer, names, lifetime, chain verification with X509_verify_cert).
 *
 * What is issued (RFC 5280 profile; CA/B Forum habits where they apply):
 *   CA:      version 3, random 159-bit serial, subject CN=poolkeeper-ca@<unix time>,
 *            basicConstraints critical CA:TRUE pathlen:0, keyUsage critical
 *            keyCertSign+cRLSign+digitalSignature, subjectKeyIdentifier,
 *            authorityKeyIdentifier (its own).
 *   serving: version 3, random serial, subject CN=<first DNS name> (none when
 *            it is longer than 64; subjectAltName is then critical), basicConstraints
 *            critical CA:FALSE, keyUsage critical digitalSignature (+keyEncipherment
 *            for RSA keys), extendedKeyUsage serverAuth, subjectAltName DNS and IP
 *            names, subjectKeyIdentifier, authorityKeyIdentifier of the CA.
 *   Both are signed with SHA-256 (SHA-384 by a P-384 key) and valid from 5 minutes
 *   before `now`, so a node whose clock lags a little accepts them at once.
 *
 * Pure: no file or network I/O and no logging (key generation draws from
 * OpenSSL's random generator). Errors name what was being done and carry
 * OpenSSL's reason. Objects returned through X509 ** / EVP_PKEY ** /
 * STACK_OF(X509) ** are the caller's (X509_free, EVP_PKEY_free,
 * sk_X509_pop_free(s, X509_free)); text through char ** is the caller's (free).
 */
#ifndef PK_CERTS_PKI_H
#define PK_CERTS_PKI_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "pk.h"
#include "san.h"

/* Stored PEM texts larger than this are refused before OpenSSL sees them. */
#define PK_PKI_MAX_PEM (1u << 20)
/* At most this many certificates in a CA bundle. */
#define PK_PKI_MAX_BUNDLE 64
/* Certificates start this long before `now` (clock skew between nodes). */
#define PK_PKI_BACKDATE_S 300

enum pk_pki_key_type {
	PK_PKI_ECDSA_P256 = 0, /* the default */
	PK_PKI_ECDSA_P384,
	PK_PKI_RSA_2048,
	PK_PKI_RSA_3072,
};

/* "ecdsa-p256|ecdsa-p384|rsa-2048|rsa-3072", for a flag's range. */
#define PK_PKI_KEY_TYPES "ecdsa-p256|ecdsa-p384|rsa-2048|rsa-3072"

PK_MUST_CHECK int pk_pki_parse_key_type(const char *s, enum pk_pki_key_type *out);
const char *pk_pki_key_type_name(enum pk_pki_key_type t);
/* The type of an existing key; PK_ERR_INVALID for any other algorithm or size. */
PK_MUST_CHECK int pk_pki_key_type_of(const EVP_PKEY *key, enum pk_pki_key_type *out);

PK_MUST_CHECK int pk_pki_new_key(enum pk_pki_key_type t, EVP_PKEY **out, struct pk_err *err);

/* A self-signed CA valid from now - PK_PKI_BACKDATE_S to not_after. */
PK_MUST_CHECK int pk_pki_make_ca(EVP_PKEY *key, time_t now, time_t not_after, X509 **out,
                                 struct pk_err *err);

/* A serving certificate for `key` with `names`, signed by ca/ca_key. names must hold
 * at least one name. */
PK_MUST_CHECK int pk_pki_make_serving(EVP_PKEY *key, const struct pk_san *names, X509 *ca,
                                      EVP_PKEY *ca_key, time_t now, time_t not_after, X509 **out,
                                      struct pk_err *err);

/* ---- PEM ---- */

/*
 * Every "CERTIFICATE" block of pem[0..len) (text between blocks is
 * ignored, as openssl does); at least one, at most PK_PKI_MAX_BUNDLE. Any
 * other block type, a block that does not decode, or no block at all is
 * PK_ERR_INVALID.
 */
PK_MUST_CHECK int pk_pki_parse_certs(const char *pem, size_t len, STACK_OF(X509) * *out,
                                     struct pk_err *err);

/* One private key (PKCS#8, or the traditional EC/RSA forms); encrypted keys are refused. */
PK_MUST_CHECK int pk_pki_parse_key(const char *pem, size_t len, EVP_PKEY **out, struct pk_err *err);

/* PEM text of certificates (one after the other) and of a key (PKCS#8,
 * unencrypted); *out is NUL-terminated, *len excludes the NUL. */
PK_MUST_CHECK int pk_pki_certs_pem(STACK_OF(X509) * certs, char **out, size_t *len,
                                   struct pk_err *err);
PK_MUST_CHECK int pk_pki_cert_pem(X509 *cert, char **out, size_t *len, struct pk_err *err);
PK_MUST_CHECK int pk_pki_key_pem(EVP_PKEY *key, char **out, size_t *len, struct pk_err *err);

/* ---- checks ---- */

/* The certificate's public key is key's. */
bool pk_pki_key_matches(X509 *cert, EVP_PKEY *key);
/* ca is a CA certificate (basicConstraints CA:TRUE, keyCertSign when keyUsage is present). */
bool pk_pki_is_ca(X509 *ca);
/* cert names ca as its issuer and ca's key verifies its signature. */
bool pk_pki_issued_by(X509 *cert, X509 *ca);
/* cert is its own issuer and its key verifies its own signature (a root, as poolkeeper
 * makes its CAs). */
bool pk_pki_self_signed(X509 *cert);
/* The same DER encoding. */
bool pk_pki_same_cert(X509 *a, X509 *b);

/* notBefore and notAfter as Unix time; PK_ERR_INVALID when unreadable. */
PK_MUST_CHECK int pk_pki_validity(const X509 *cert, time_t *not_before, time_t *not_after);

/* The DNS and IP subjectAltNames of cert into *out (initialised here). */
PK_MUST_CHECK int pk_pki_cert_names(X509 *cert, struct pk_san *out, struct pk_err *err);

/*
 * X509_verify_cert of leaf against the CA certificates in `roots` as trust
 * anchors, at time `at`, for the TLS server purpose (so the leaf's
 * keyUsage and extendedKeyUsage are checked too). PK_ERR_INVALID with
 * OpenSSL's verify error in err when the chain does not hold.
 */
PK_MUST_CHECK int pk_pki_verify(X509 *leaf, STACK_OF(X509) * roots, time_t at, struct pk_err *err);

/* The serial number in lower-case hex into buf (at least 41 bytes for 159 bits). */
void pk_pki_serial_hex(const X509 *cert, char *buf, size_t len);

/* Unix time as "2026-01-02T03:04:05Z". */
void pk_pki_format_time(time_t t, char buf[32]);

#endif
