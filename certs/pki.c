/* pki.c - keys, CA and serving certificates, PEM, and their checks on OpenSSL 3. */
#include "pki.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

/* err = "<what>: <OpenSSL's reason>"; clears OpenSSL's error queue. */
static int ossl_fail(struct pk_err *err, const char *what)
{
	unsigned long e = ERR_get_error();
	char reason[256] = "no further detail";
	if (e != 0)
		ERR_error_string_n(e, reason, sizeof(reason));
	ERR_clear_error();
	return pk_err_set(err, PK_ERR_INVALID, "%s: %s", what, reason);
}

static const char *const key_type_names[] = {
    [PK_PKI_ECDSA_P256] = "ecdsa-p256",
    [PK_PKI_ECDSA_P384] = "ecdsa-p384",
    [PK_PKI_RSA_2048] = "rsa-2048",
    [PK_PKI_RSA_3072] = "rsa-3072",
};

int pk_pki_parse_key_type(const char *s, enum pk_pki_key_type *out)
{
	for (size_t i = 0; i < sizeof(key_type_names) / sizeof(key_type_names[0]); i++) {
		if (strcmp(s, key_type_names[i]) == 0) {
			*out = (enum pk_pki_key_type)i;
			return PK_OK;
		}
	}
	return PK_ERR_INVALID;
}

const char *pk_pki_key_type_name(enum pk_pki_key_type t)
{
	return (size_t)t < sizeof(key_type_names) / sizeof(key_type_names[0]) ? key_type_names[t]
	                                                                      : "unknown";
}

int pk_pki_key_type_of(const EVP_PKEY *key, enum pk_pki_key_type *out)
{
	if (EVP_PKEY_is_a(key, "EC")) {
		char group[64];
		size_t gl = 0;
		if (EVP_PKEY_get_group_name(key, group, sizeof(group), &gl) != 1)
			return PK_ERR_INVALID;
		if (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0)
			*out = PK_PKI_ECDSA_P256;
		else if (strcmp(group, "secp384r1") == 0 || strcmp(group, "P-384") == 0)
			*out = PK_PKI_ECDSA_P384;
		else
			return PK_ERR_INVALID;
		return PK_OK;
	}
	if (EVP_PKEY_is_a(key, "RSA")) {
		int bits = EVP_PKEY_get_bits(key);
		if (bits == 2048)
			*out = PK_PKI_RSA_2048;
		else if (bits == 3072)
			*out = PK_PKI_RSA_3072;
		else
			return PK_ERR_INVALID;
		return PK_OK;
	}
	return PK_ERR_INVALID;
}

int pk_pki_new_key(enum pk_pki_key_type t, EVP_PKEY **out, struct pk_err *err)
{
	EVP_PKEY *k = NULL;
	switch (t) {
	case PK_PKI_ECDSA_P256:
		k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
		break;
	case PK_PKI_ECDSA_P384:
		k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
		break;
	case PK_PKI_RSA_2048:
		k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
		break;
	case PK_PKI_RSA_3072:
		k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)3072);
		break;
	}
	if (k == NULL)
		return ossl_fail(err, "cannot generate a private key");
	*out = k;
	return PK_OK;
}

/* SHA-384 for P-384 signers (RFC 5480 pairs curve and hash), SHA-256 otherwise. */
static const EVP_MD *digest_for(const EVP_PKEY *signer)
{
	enum pk_pki_key_type t;
	if (pk_pki_key_type_of(signer, &t) == PK_OK && t == PK_PKI_ECDSA_P384)
		return EVP_sha384();
	return EVP_sha256();
}

/*
 * A positive random serial of 159 bits with the top bit set: unpredictable,
 * and within RFC 5280 4.1.2.2's 20 octets.
 */
static int set_random_serial(X509 *x, struct pk_err *err)
{
	unsigned char b[20];
	if (RAND_bytes(b, sizeof(b)) != 1)
		return ossl_fail(err, "cannot draw a random serial number");
	b[0] = (unsigned char)((b[0] & 0x7f) | 0x40);
	BIGNUM *bn = BN_bin2bn(b, sizeof(b), NULL);
	int ok = bn != NULL && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	if (!ok)
		return ossl_fail(err, "cannot set the serial number");
	return PK_OK;
}

static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value, struct pk_err *err)
{
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
	if (ext == NULL || X509_add_ext(x, ext, -1) != 1) {
		X509_EXTENSION_free(ext);
		char what[128];
		snprintf(what, sizeof(what), "cannot add extension %s", OBJ_nid2sn(nid));
		return ossl_fail(err, what);
	}
	X509_EXTENSION_free(ext);
	return PK_OK;
}

/* The parts both kinds share: version 3, serial, validity, public key. */
static int start_cert(X509 **out, EVP_PKEY *key, time_t now, time_t not_after, struct pk_err *err)
{
	X509 *x = X509_new();
	if (x == NULL)
		return ossl_fail(err, "out of memory");
	int rc = set_random_serial(x, err);
	if (rc != PK_OK)
		goto fail;
	if (X509_set_version(x, X509_VERSION_3) != 1 ||
	    ASN1_TIME_set(X509_getm_notBefore(x), now - PK_PKI_BACKDATE_S) == NULL ||
	    ASN1_TIME_set(X509_getm_notAfter(x), not_after) == NULL ||
	    X509_set_pubkey(x, key) != 1) {
		rc = ossl_fail(err, "cannot fill in the certificate");
		goto fail;
	}
	*out = x;
	return PK_OK;
fail:
	X509_free(x);
	return rc;
}

static int add_names(X509 *x, const struct pk_san *names, bool critical, struct pk_err *err)
{
	GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
	int rc = PK_OK;
	if (gens == NULL)
		return ossl_fail(err, "out of memory");
	for (size_t i = 0; i < names->ndns + names->nip; i++) {
		GENERAL_NAME *g = GENERAL_NAME_new();
		ASN1_STRING *s = i < names->ndns ? ASN1_IA5STRING_new() : ASN1_OCTET_STRING_new();
		bool ok = g != NULL && s != NULL;
		if (ok && i < names->ndns)
			ok = ASN1_STRING_set(s, names->dns[i], (int)strlen(names->dns[i])) == 1;
		else if (ok)
			ok = ASN1_OCTET_STRING_set(s, names->ip[i - names->ndns].addr,
			                           names->ip[i - names->ndns].len) == 1;
		if (!ok) {
			GENERAL_NAME_free(g);
			ASN1_STRING_free(s);
			rc = ossl_fail(err, "cannot build subjectAltName");
			goto out;
		}
		GENERAL_NAME_set0_value(g, i < names->ndns ? GEN_DNS : GEN_IPADD, s);
		if (sk_GENERAL_NAME_push(gens, g) <= 0) {
			GENERAL_NAME_free(g);
			rc = ossl_fail(err, "cannot build subjectAltName");
			goto out;
		}
	}
	if (X509_add1_ext_i2d(x, NID_subject_alt_name, gens, critical ? 1 : 0,
	                      X509V3_ADD_DEFAULT) != 1)
		rc = ossl_fail(err, "cannot add subjectAltName");
out:
	GENERAL_NAMES_free(gens);
	return rc;
}

/* An extension by its configuration text (X509V3_EXT_conf_nid). */
struct ext {
	int nid;
	const char *value;
};

/*
 * The end both kinds share: their own extensions (exts, then names as
 * subjectAltName unless NULL), the key identifiers, and the signature by
 * signer. *out gets x, or x is released.
 */
static int finish_cert(X509 *x, X509V3_CTX *ctx, const struct ext *exts, size_t n,
                       const struct pk_san *names, bool names_critical, EVP_PKEY *signer,
                       const char *what, X509 **out, struct pk_err *err)
{
	int rc = PK_OK;
	for (size_t i = 0; rc == PK_OK && i < n; i++)
		rc = add_ext(x, ctx, exts[i].nid, exts[i].value, err);
	if (rc == PK_OK && names != NULL)
		rc = add_names(x, names, names_critical, err);
	if (rc == PK_OK)
		rc = add_ext(x, ctx, NID_subject_key_identifier, "hash", err);
	if (rc == PK_OK)
		rc = add_ext(x, ctx, NID_authority_key_identifier, "keyid:always", err);
	if (rc == PK_OK && X509_sign(x, signer, digest_for(signer)) <= 0) {
		char msg[96];
		snprintf(msg, sizeof(msg), "cannot sign %s", what);
		rc = ossl_fail(err, msg);
	}
	if (rc != PK_OK) {
		X509_free(x);
		return rc;
	}
	*out = x;
	return PK_OK;
}

/* Fails a certificate under construction: the error is read before x is released. */
static int drop_cert(X509 *x, struct pk_err *err, const char *what)
{
	int rc = ossl_fail(err, what);
	X509_free(x);
	return rc;
}

int pk_pki_make_ca(EVP_PKEY *key, time_t now, time_t not_after, X509 **out, struct pk_err *err)
{
	X509 *x = NULL;
	int rc = start_cert(&x, key, now, not_after, err);
	if (rc != PK_OK)
		return rc;
	/* A distinct subject for each CA, so old and new in one bundle are told apart. */
	char cn[64];
	snprintf(cn, sizeof(cn), "poolkeeper-ca@%lld", (long long)now);
	X509_NAME *name = X509_get_subject_name(x);
	if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
	                               0) != 1 ||
	    X509_set_issuer_name(x, name) != 1)
		return drop_cert(x, err, "cannot set the CA's name");
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	static const struct ext exts[] = {
	    {NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
	    {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
	};
	return finish_cert(x, &ctx, exts, sizeof(exts) / sizeof(exts[0]), NULL, false, key,
	                   "the CA certificate", out, err);
}

int pk_pki_make_serving(EVP_PKEY *key, const struct pk_san *names, X509 *ca, EVP_PKEY *ca_key,
                        time_t now, time_t not_after, X509 **out, struct pk_err *err)
{
	if (names->ndns + names->nip == 0)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "a serving certificate needs at least one name");
	X509 *x = NULL;
	int rc = start_cert(&x, key, now, not_after, err);
	if (rc != PK_OK)
		return rc;
	/* CN holds at most 64 characters (RFC 5280 ub-common-name); clients read the SANs. */
	bool cn = names->ndns > 0 && strlen(names->dns[0]) <= 64;
	X509_NAME *subject = X509_get_subject_name(x);
	if ((cn &&
	     X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
	                                (const unsigned char *)names->dns[0], -1, -1, 0) != 1) ||
	    X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1)
		return drop_cert(x, err, "cannot set the certificate's names");
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, ca, x, NULL, NULL, 0);
	/* RSA key exchange encrypts to the key; ECDSA only signs (RFC 5480 3). */
	const struct ext exts[] = {
	    {NID_basic_constraints, "critical,CA:FALSE"},
	    {NID_key_usage, EVP_PKEY_is_a(key, "RSA") ? "critical,digitalSignature,keyEncipherment"
	                                              : "critical,digitalSignature"},
	    {NID_ext_key_usage, "serverAuth"},
	};
	return finish_cert(x, &ctx, exts, sizeof(exts) / sizeof(exts[0]), names, !cn, ca_key,
	                   "the serving certificate", out, err);
}

/* ---- PEM ---- */

static BIO *mem_in(const char *pem, size_t len, struct pk_err *err)
{
	if (len > PK_PKI_MAX_PEM) {
		pk_err_set(err, PK_ERR_INVALID, "larger than %u bytes", PK_PKI_MAX_PEM);
		return NULL;
	}
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	if (b == NULL)
		ossl_fail(err, "out of memory");
	return b;
}

int pk_pki_parse_certs(const char *pem, size_t len, STACK_OF(X509) * *out, struct pk_err *err)
{
	BIO *b = mem_in(pem, len, err);
	if (b == NULL)
		return PK_ERR_INVALID;
	STACK_OF(X509) *certs = sk_X509_new_null();
	int rc = PK_OK;
	if (certs == NULL) {
		rc = ossl_fail(err, "out of memory");
		goto out;
	}
	for (int n = 1;; n++) {
		char *name = NULL, *header = NULL;
		unsigned char *data = NULL;
		long dlen = 0;
		ERR_clear_error();
		if (PEM_read_bio(b, &name, &header, &data, &dlen) != 1) {
			unsigned long e = ERR_peek_last_error();
			if (ERR_GET_LIB(e) == ERR_LIB_PEM &&
			    ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
				ERR_clear_error();
				break;
			}
			rc = ossl_fail(err, n == 1 ? "not PEM" : "a PEM block does not decode");
			goto out;
		}
		const unsigned char *p = data;
		X509 *x = NULL;
		if (strcmp(name, "CERTIFICATE") != 0) {
			rc = pk_err_set(err, PK_ERR_INVALID,
			                "PEM block %d is \"%.40s\", not a CERTIFICATE", n, name);
		} else if ((x = d2i_X509(NULL, &p, dlen)) == NULL || p != data + dlen) {
			X509_free(x);
			x = NULL;
			rc = ossl_fail(err, "a CERTIFICATE block is not an X.509 certificate");
		} else if (sk_X509_num(certs) == PK_PKI_MAX_BUNDLE) {
			rc = pk_err_set(err, PK_ERR_INVALID, "more than %d certificates",
			                PK_PKI_MAX_BUNDLE);
		} else if (sk_X509_push(certs, x) <= 0) {
			rc = ossl_fail(err, "out of memory");
		} else {
			x = NULL;
		}
		X509_free(x);
		OPENSSL_free(name);
		OPENSSL_free(header);
		OPENSSL_free(data);
		if (rc != PK_OK)
			goto out;
	}
	if (sk_X509_num(certs) == 0) {
		rc = pk_err_set(err, PK_ERR_INVALID, "no PEM CERTIFICATE block");
		goto out;
	}
	*out = certs;
	certs = NULL;
out:
	sk_X509_pop_free(certs, X509_free);
	BIO_free(b);
	return rc;
}

/* Never ask for a passphrase: a stored key must not be encrypted. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

int pk_pki_parse_key(const char *pem, size_t len, EVP_PKEY **out, struct pk_err *err)
{
	BIO *b = mem_in(pem, len, err);
	if (b == NULL)
		return PK_ERR_INVALID;
	ERR_clear_error();
	EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL);
	BIO_free(b);
	if (k == NULL)
		return ossl_fail(err, "not an unencrypted PEM private key");
	ERR_clear_error();
	*out = k;
	return PK_OK;
}

/* The contents of a memory BIO as a new NUL-terminated string. */
static int take_bio(BIO *b, char **out, size_t *len, struct pk_err *err)
{
	char *p = NULL;
	long n = BIO_get_mem_data(b, &p);
	if (n < 0 || p == NULL)
		return ossl_fail(err, "cannot encode PEM");
	char *s = malloc((size_t)n + 1);
	if (s == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	memcpy(s, p, (size_t)n);
	s[n] = '\0';
	*out = s;
	*len = (size_t)n;
	return PK_OK;
}

int pk_pki_certs_pem(STACK_OF(X509) * certs, char **out, size_t *len, struct pk_err *err)
{
	BIO *b = BIO_new(BIO_s_mem());
	if (b == NULL)
		return ossl_fail(err, "out of memory");
	int rc = PK_OK;
	for (int i = 0; i < sk_X509_num(certs); i++) {
		if (PEM_write_bio_X509(b, sk_X509_value(certs, i)) != 1) {
			rc = ossl_fail(err, "cannot encode a certificate");
			goto out;
		}
	}
	rc = take_bio(b, out, len, err);
out:
	BIO_free(b);
	return rc;
}

int pk_pki_cert_pem(X509 *cert, char **out, size_t *len, struct pk_err *err)
{
	STACK_OF(X509) *one = sk_X509_new_null();
	if (one == NULL || sk_X509_push(one, cert) <= 0) {
		sk_X509_free(one);
		return ossl_fail(err, "out of memory");
	}
	int rc = pk_pki_certs_pem(one, out, len, err);
	sk_X509_free(one); /* the certificate is the caller's */
	return rc;
}

int pk_pki_key_pem(EVP_PKEY *key, char **out, size_t *len, struct pk_err *err)
{
	BIO *b = BIO_new(BIO_s_mem());
	if (b == NULL)
		return ossl_fail(err, "out of memory");
	int rc = PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) == 1
	             ? take_bio(b, out, len, err)
	             : ossl_fail(err, "cannot encode a private key");
	BIO_free(b);
	return rc;
}

/* ---- checks ---- */

bool pk_pki_key_matches(X509 *cert, EVP_PKEY *key)
{
	const EVP_PKEY *pub = X509_get0_pubkey(cert);
	bool ok = pub != NULL && EVP_PKEY_eq(pub, key) == 1;
	ERR_clear_error();
	return ok;
}

bool pk_pki_is_ca(X509 *ca)
{
	/* 1: basicConstraints CA:TRUE, and keyCertSign whenever keyUsage is present. */
	return X509_check_ca(ca) == 1;
}

bool pk_pki_issued_by(X509 *cert, X509 *ca)
{
	EVP_PKEY *pub = X509_get0_pubkey(ca);
	bool ok =
	    X509_check_issued(ca, cert) == X509_V_OK && pub != NULL && X509_verify(cert, pub) == 1;
	ERR_clear_error();
	return ok;
}

bool pk_pki_self_signed(X509 *cert)
{
	return pk_pki_issued_by(cert, cert);
}

bool pk_pki_same_cert(X509 *a, X509 *b)
{
	return X509_cmp(a, b) == 0;
}

static int asn1_time(const ASN1_TIME *a, time_t *out)
{
	struct tm tm;
	if (a == NULL || ASN1_TIME_to_tm(a, &tm) != 1)
		return PK_ERR_INVALID;
	*out = timegm(&tm);
	return PK_OK;
}

int pk_pki_validity(const X509 *cert, time_t *not_before, time_t *not_after)
{
	if (asn1_time(X509_get0_notBefore(cert), not_before) != PK_OK ||
	    asn1_time(X509_get0_notAfter(cert), not_after) != PK_OK) {
		ERR_clear_error();
		return PK_ERR_INVALID;
	}
	return PK_OK;
}

int pk_pki_cert_names(X509 *cert, struct pk_san *out, struct pk_err *err)
{
	pk_san_init(out);
	int crit = 0;
	GENERAL_NAMES *gens = X509_get_ext_d2i(cert, NID_subject_alt_name, &crit, NULL);
	ERR_clear_error();
	if (gens == NULL)
		return crit == -1
		           ? PK_OK
		           : pk_err_set(err, PK_ERR_INVALID, "subjectAltName does not decode");
	int rc = PK_OK;
	for (int i = 0; rc == PK_OK && i < sk_GENERAL_NAME_num(gens); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		int type = 0;
		const ASN1_STRING *s = GENERAL_NAME_get0_value(g, &type);
		const unsigned char *d = ASN1_STRING_get0_data(s);
		int n = ASN1_STRING_length(s);
		if (type == GEN_DNS) {
			char name[PK_SAN_DNS_MAX + 1];
			if (n <= 0 || n > PK_SAN_DNS_MAX || memchr(d, '\0', (size_t)n) != NULL) {
				rc = pk_err_set(err, PK_ERR_INVALID, "a DNS name of %d bytes", n);
				break;
			}
			memcpy(name, d, (size_t)n);
			name[n] = '\0';
			rc = pk_san_add_dns(out, name, err);
		} else if (type == GEN_IPADD) {
			rc = pk_san_add_ip_bytes(out, d, n > 0 ? (size_t)n : 0, err);
		} else {
			rc = pk_err_set(err, PK_ERR_INVALID,
			                "a subjectAltName other than DNS or IP (type %d)", type);
		}
	}
	GENERAL_NAMES_free(gens);
	if (rc != PK_OK)
		pk_san_free(out);
	return rc;
}

int pk_pki_verify(X509 *leaf, STACK_OF(X509) * roots, time_t at, struct pk_err *err)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	int rc = PK_OK;
	if (st == NULL || ctx == NULL) {
		rc = ossl_fail(err, "out of memory");
		goto out;
	}
	for (int i = 0; i < sk_X509_num(roots); i++) {
		if (X509_STORE_add_cert(st, sk_X509_value(roots, i)) != 1) {
			rc = ossl_fail(err, "cannot add a CA certificate to the trust store");
			goto out;
		}
	}
	if (X509_STORE_CTX_init(ctx, st, leaf, NULL) != 1 ||
	    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER) != 1) {
		rc = ossl_fail(err, "cannot set up verification");
		goto out;
	}
	X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), at);
	if (X509_verify_cert(ctx) != 1) {
		int e = X509_STORE_CTX_get_error(ctx);
		rc = pk_err_set(err, PK_ERR_INVALID, "does not verify: %s (at depth %d)",
		                X509_verify_cert_error_string(e),
		                X509_STORE_CTX_get_error_depth(ctx));
	}
out:
	ERR_clear_error();
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	return rc;
}

void pk_pki_serial_hex(const X509 *cert, char *buf, size_t len)
{
	if (len == 0)
		return;
	buf[0] = '\0';
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL);
	char *hex = bn != NULL ? BN_bn2hex(bn) : NULL;
	if (hex != NULL) {
		size_t i = 0;
		for (; hex[i] != '\0' && i + 1 < len; i++)
			buf[i] =
			    (char)(hex[i] >= 'A' && hex[i] <= 'F' ? hex[i] - 'A' + 'a' : hex[i]);
		buf[i] = '\0';
	}
	OPENSSL_free(hex);
	BN_free(bn);
	ERR_clear_error();
}

void pk_pki_format_time(time_t t, char buf[32])
{
	struct tm tm;
	if (gmtime_r(&t, &tm) == NULL || strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, 32, "@%lld", (long long)t);
}
