/*
 * test_pki.c - the certificates poolkeeper-certs issues, checked with
 * OpenSSL's own verifier (X509_verify_cert against the CA, and against an
 * old+new bundle), and field by field: SANs, extended key usage, key usage,
 * basic constraints, key identifiers, lifetime, serials; each key type; PEM
 * in and out; and the checks on foreign or broken material.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "pki.h"

#define NOW   ((time_t)1767225600) /* 2026-01-01T00:00:00Z */
#define DAY_S ((time_t)86400)

struct pair {
	EVP_PKEY *key;
	X509 *cert;
};

static void pair_free(struct pair *p)
{
	EVP_PKEY_free(p->key);
	X509_free(p->cert);
	memset(p, 0, sizeof(*p));
}

static struct pair new_ca(enum pk_pki_key_type t, time_t now, unsigned days)
{
	struct pair p = {0};
	struct pk_err err = {{0}};
	if (pk_pki_new_key(t, &p.key, &err) != PK_OK ||
	    pk_pki_make_ca(p.key, now, now + (time_t)days * DAY_S, &p.cert, &err) != PK_OK)
		fail_msg("CA: %s", err.msg);
	return p;
}

static void names_of(struct pk_san *s)
{
	struct pk_err err = {{0}};
	pk_san_init(s);
	assert_int_equal(
	    pk_san_add_service(s, "poolkeeper-webhook", "poolkeeper-system", "cluster.local", &err),
	    PK_OK);
	assert_int_equal(pk_san_add_ip(s, "127.0.0.1", &err), PK_OK);
	assert_int_equal(pk_san_add_ip(s, "::1", &err), PK_OK);
}

static struct pair new_serving(const struct pair *ca, const struct pk_san *names,
                               enum pk_pki_key_type t, time_t now, unsigned days)
{
	struct pair p = {0};
	struct pk_err err = {{0}};
	if (pk_pki_new_key(t, &p.key, &err) != PK_OK ||
	    pk_pki_make_serving(p.key, names, ca->cert, ca->key, now, now + (time_t)days * DAY_S,
	                        &p.cert, &err) != PK_OK)
		fail_msg("serving: %s", err.msg);
	return p;
}

/* X509_verify_cert as a TLS client would call it: trust anchors, time, server purpose. */
static int openssl_verify(X509 *leaf, X509 *const *roots, size_t n, time_t at)
{
	X509_STORE *st = X509_STORE_new();
	for (size_t i = 0; i < n; i++)
		assert_int_equal(X509_STORE_add_cert(st, roots[i]), 1);
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	assert_int_equal(X509_STORE_CTX_init(ctx, st, leaf, NULL), 1);
	X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
	X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), at);
	int ok = X509_verify_cert(ctx);
	int e = ok == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	ERR_clear_error();
	return e;
}

static void test_chain_verifies(void **state)
{
	(void)state;
	struct pk_san names;
	names_of(&names);
	struct pair ca = new_ca(PK_PKI_ECDSA_P256, NOW, 3650);
	struct pair tls = new_serving(&ca, &names, PK_PKI_ECDSA_P256, NOW, 365);

	assert_int_equal(openssl_verify(tls.cert, &ca.cert, 1, NOW), X509_V_OK);
	assert_int_equal(openssl_verify(tls.cert, &ca.cert, 1, NOW + 364 * DAY_S), X509_V_OK);
	/* Backdated by a few minutes for clock skew, not more. */
	assert_int_equal(openssl_verify(tls.cert, &ca.cert, 1, NOW - 60), X509_V_OK);
	assert_int_equal(openssl_verify(tls.cert, &ca.cert, 1, NOW - 3600),
	                 X509_V_ERR_CERT_NOT_YET_VALID);
	assert_int_equal(openssl_verify(tls.cert, &ca.cert, 1, NOW + 366 * DAY_S),
	                 X509_V_ERR_CERT_HAS_EXPIRED);
	/* Another CA does not vouch for it. */
	struct pair other = new_ca(PK_PKI_ECDSA_P256, NOW + 1, 3650);
	assert_int_not_equal(openssl_verify(tls.cert, &other.cert, 1, NOW), X509_V_OK);

	/* The module's own verify agrees, and names the reason when it fails. */
	STACK_OF(X509) *roots = sk_X509_new_null();
	sk_X509_push(roots, ca.cert);
	struct pk_err err = {{0}};
	assert_int_equal(pk_pki_verify(tls.cert, roots, NOW, &err), PK_OK);
	assert_int_equal(pk_pki_verify(tls.cert, roots, NOW + 400 * DAY_S, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "expired"));
	sk_X509_free(roots);
	roots = sk_X509_new_null();
	sk_X509_push(roots, other.cert);
	assert_int_equal(pk_pki_verify(tls.cert, roots, NOW, &err), PK_ERR_INVALID);
	sk_X509_free(roots);

	assert_true(pk_pki_issued_by(tls.cert, ca.cert));
	assert_true(pk_pki_self_signed(ca.cert));
	assert_false(pk_pki_self_signed(tls.cert));
	assert_false(pk_pki_issued_by(tls.cert, other.cert));
	assert_true(pk_pki_key_matches(tls.cert, tls.key));
	assert_false(pk_pki_key_matches(tls.cert, ca.key));
	pair_free(&other);
	pair_free(&tls);
	pair_free(&ca);
	pk_san_free(&names);
}

/* After a CA rotation the bundle holds old and new: certificates of both verify. */
static void test_rotation_bundle(void **state)
{
	(void)state;
	struct pk_san names;
	names_of(&names);
	struct pair old_ca = new_ca(PK_PKI_ECDSA_P256, NOW, 3650);
	struct pair old_tls = new_serving(&old_ca, &names, PK_PKI_ECDSA_P256, NOW, 365);
	time_t later = NOW + 3600 * DAY_S;
	struct pair new_ca_ = new_ca(PK_PKI_ECDSA_P256, later, 3650);
	struct pair new_tls = new_serving(&new_ca_, &names, PK_PKI_ECDSA_P256, later, 365);
	X509 *bundle[2] = {new_ca_.cert, old_ca.cert};
	/* old_tls is expired by then; re-issue a short one under the old CA to model a replica
	 * still serving the old CA's certificate during the rollout. */
	struct pair rollout = new_serving(&old_ca, &names, PK_PKI_ECDSA_P256, later, 30);
	assert_int_equal(openssl_verify(new_tls.cert, bundle, 2, later + 60), X509_V_OK);
	assert_int_equal(openssl_verify(rollout.cert, bundle, 2, later + 60), X509_V_OK);
	/* Each CA alone vouches only for its own. */
	assert_int_not_equal(openssl_verify(new_tls.cert, &old_ca.cert, 1, later + 60), X509_V_OK);
	assert_int_not_equal(openssl_verify(rollout.cert, &new_ca_.cert, 1, later + 60), X509_V_OK);
	/* Distinct subjects, so a bundle can be read by a person. */
	assert_int_not_equal(
	    X509_NAME_cmp(X509_get_subject_name(old_ca.cert), X509_get_subject_name(new_ca_.cert)),
	    0);
	pair_free(&rollout);
	pair_free(&new_tls);
	pair_free(&new_ca_);
	pair_free(&old_tls);
	pair_free(&old_ca);
	pk_san_free(&names);
}

static bool has_ext(X509 *x, int nid, bool critical)
{
	int i = X509_get_ext_by_NID(x, nid, -1);
	return i >= 0 && (X509_EXTENSION_get_critical(X509_get_ext(x, i)) != 0) == critical;
}

/* The names read back are the names asked for (names_of), and hostname checks pass. */
static void check_served_names(X509 *cert, const struct pk_san *names)
{
	struct pk_san got;
	struct pk_err err = {{0}};
	assert_int_equal(pk_pki_cert_names(cert, &got, &err), PK_OK);
	assert_true(pk_san_equal(&got, names));
	pk_san_free(&got);
	assert_int_equal(
	    X509_check_host(cert, "poolkeeper-webhook.poolkeeper-system.svc", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(cert,
	                                 "poolkeeper-webhook.poolkeeper-system.svc.cluster.local",
	                                 0, 0, NULL),
	                 1);
	assert_int_equal(X509_check_host(cert, "other.poolkeeper-system.svc", 0, 0, NULL), 0);
	assert_int_equal(X509_check_ip_asc(cert, "127.0.0.1", 0), 1);
	assert_int_equal(X509_check_ip_asc(cert, "::1", 0), 1);
	assert_int_equal(X509_check_ip_asc(cert, "127.0.0.2", 0), 0);
}

static void test_fields(void **state)
{
	(void)state;
	struct pk_san names;
	names_of(&names);
	struct pair ca = new_ca(PK_PKI_ECDSA_P256, NOW, 3650);
	struct pair tls = new_serving(&ca, &names, PK_PKI_ECDSA_P256, NOW, 365);

	/* CA: CA:TRUE (critical), keyCertSign, a key identifier it points to itself with. */
	assert_int_equal(X509_get_version(ca.cert), X509_VERSION_3);
	assert_true(pk_pki_is_ca(ca.cert));
	assert_true(has_ext(ca.cert, NID_basic_constraints, true));
	assert_true(has_ext(ca.cert, NID_key_usage, true));
	assert_true((X509_get_key_usage(ca.cert) & KU_KEY_CERT_SIGN) != 0);
	assert_true(X509_get_extension_flags(ca.cert) & EXFLAG_SS);
	const ASN1_OCTET_STRING *ca_skid = X509_get0_subject_key_id(ca.cert);
	assert_non_null(ca_skid);
	assert_int_equal(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(ca.cert), ca_skid), 0);

	/* Serving: CA:FALSE (critical), digitalSignature only for EC, serverAuth, names. */
	assert_int_equal(X509_get_version(tls.cert), X509_VERSION_3);
	assert_false(pk_pki_is_ca(tls.cert));
	assert_true(has_ext(tls.cert, NID_basic_constraints, true));
	assert_int_equal(X509_check_ca(tls.cert), 0);
	assert_true(has_ext(tls.cert, NID_key_usage, true));
	assert_int_equal(X509_get_key_usage(tls.cert), KU_DIGITAL_SIGNATURE);
	assert_int_equal(X509_get_extended_key_usage(tls.cert), XKU_SSL_SERVER);
	assert_true(has_ext(tls.cert, NID_subject_alt_name, false)); /* CN present: not critical */
	assert_int_equal(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(tls.cert), ca_skid), 0);
	assert_non_null(X509_get0_subject_key_id(tls.cert));
	assert_int_equal(
	    X509_NAME_cmp(X509_get_issuer_name(tls.cert), X509_get_subject_name(ca.cert)), 0);
	char cn[256];
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(tls.cert), NID_commonName, cn,
	                                      sizeof(cn)) > 0);
	assert_string_equal(cn, "poolkeeper-webhook");

	check_served_names(tls.cert, &names);

	/* Lifetime: 5 minutes back, `days` ahead. */
	time_t nb, na;
	assert_int_equal(pk_pki_validity(tls.cert, &nb, &na), PK_OK);
	assert_int_equal(nb, NOW - PK_PKI_BACKDATE_S);
	assert_int_equal(na, NOW + 365 * DAY_S);
	assert_int_equal(pk_pki_validity(ca.cert, &nb, &na), PK_OK);
	assert_int_equal(na, NOW + 3650 * DAY_S);

	/* Serials: positive, at most 20 octets, never repeated. */
	struct pair tls2 = new_serving(&ca, &names, PK_PKI_ECDSA_P256, NOW, 365);
	char s1[48], s2[48];
	pk_pki_serial_hex(tls.cert, s1, sizeof(s1));
	pk_pki_serial_hex(tls2.cert, s2, sizeof(s2));
	assert_int_equal(strlen(s1), 40);
	assert_string_not_equal(s1, s2);
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(tls.cert), NULL);
	assert_false(BN_is_negative(bn));
	assert_true(BN_num_bytes(bn) <= 20);
	BN_free(bn);

	char t[32];
	pk_pki_format_time(NOW, t);
	assert_string_equal(t, "2026-01-01T00:00:00Z");
	pair_free(&tls2);
	pair_free(&tls);
	pair_free(&ca);
	pk_san_free(&names);
}

static void test_key_types(void **state)
{
	(void)state;
	struct pk_san names;
	struct pk_err err = {{0}};
	pk_san_init(&names);
	assert_int_equal(pk_san_add_dns(&names, "a.example", &err), PK_OK);
	static const enum pk_pki_key_type types[] = {PK_PKI_ECDSA_P256, PK_PKI_ECDSA_P384,
	                                             PK_PKI_RSA_2048};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct pair ca = new_ca(types[i], NOW, 10);
		struct pair tls = new_serving(&ca, &names, types[i], NOW, 5);
		enum pk_pki_key_type got;
		assert_int_equal(pk_pki_key_type_of(tls.key, &got), PK_OK);
		assert_int_equal(got, types[i]);
		assert_int_equal(openssl_verify(tls.cert, &ca.cert, 1, NOW), X509_V_OK);
		bool rsa = types[i] == PK_PKI_RSA_2048;
		assert_int_equal(X509_get_key_usage(tls.cert),
		                 rsa ? (KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT)
		                     : KU_DIGITAL_SIGNATURE);
		int md = 0, pk = 0;
		assert_int_equal(X509_get_signature_info(tls.cert, &md, &pk, NULL, NULL), 1);
		assert_int_equal(md, types[i] == PK_PKI_ECDSA_P384 ? NID_sha384 : NID_sha256);
		pair_free(&tls);
		pair_free(&ca);
	}
	enum pk_pki_key_type t;
	assert_int_equal(pk_pki_parse_key_type("rsa-3072", &t), PK_OK);
	assert_int_equal(t, PK_PKI_RSA_3072);
	assert_string_equal(pk_pki_key_type_name(t), "rsa-3072");
	assert_int_equal(pk_pki_parse_key_type("ed25519", &t), PK_ERR_INVALID);
	/* A key of another algorithm has no type of ours. */
	EVP_PKEY *ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	assert_int_equal(pk_pki_key_type_of(ed, &t), PK_ERR_INVALID);
	EVP_PKEY_free(ed);
	pk_san_free(&names);
}

/* A name longer than 64 cannot be the CN: no CN, and subjectAltName is critical. */
static void test_long_name(void **state)
{
	(void)state;
	struct pk_san names;
	struct pk_err err = {{0}};
	pk_san_init(&names);
	assert_int_equal(pk_san_add_dns(&names,
	                                "a-rather-long-service-name-for-a-webhook.a-rather-long-"
	                                "namespace.svc.cluster.local",
	                                &err),
	                 PK_OK);
	struct pair ca = new_ca(PK_PKI_ECDSA_P256, NOW, 10);
	struct pair tls = new_serving(&ca, &names, PK_PKI_ECDSA_P256, NOW, 5);
	assert_int_equal(X509_NAME_entry_count(X509_get_subject_name(tls.cert)), 0);
	assert_true(has_ext(tls.cert, NID_subject_alt_name, true));
	assert_int_equal(openssl_verify(tls.cert, &ca.cert, 1, NOW), X509_V_OK);
	pair_free(&tls);

	/* Only an IP address: no CN either. */
	struct pk_san ip;
	pk_san_init(&ip);
	assert_int_equal(pk_san_add_ip(&ip, "127.0.0.1", &err), PK_OK);
	tls = new_serving(&ca, &ip, PK_PKI_ECDSA_P256, NOW, 5);
	assert_true(has_ext(tls.cert, NID_subject_alt_name, true));
	assert_int_equal(X509_check_ip_asc(tls.cert, "127.0.0.1", 0), 1);
	pair_free(&tls);

	/* No name at all is refused. */
	struct pk_san none;
	pk_san_init(&none);
	EVP_PKEY *k = NULL;
	X509 *x = NULL;
	assert_int_equal(pk_pki_new_key(PK_PKI_ECDSA_P256, &k, &err), PK_OK);
	assert_int_equal(pk_pki_make_serving(k, &none, ca.cert, ca.key, NOW, NOW + DAY_S, &x, &err),
	                 PK_ERR_INVALID);
	assert_null(x);
	EVP_PKEY_free(k);
	pair_free(&ca);
	pk_san_free(&ip);
	pk_san_free(&names);
}

/* Refused: a bundle of nothing, garbage, a key (kpem) where certificates belong, a broken
 * or cut-off block, more than the cap; a key of garbage, a certificate, or encrypted. pem is a
 * good bundle of two, key the key of kpem. */
static void refuse_bad_pem(const char *pem, size_t len, const char *kpem, EVP_PKEY *key)
{
	struct pk_err err = {{0}};
	STACK_OF(X509) *back = NULL;
	EVP_PKEY *k = NULL;
	/* Negative: nothing, garbage, a key where certificates belong, a broken block. */
	const char *bad[] = {
	    "",
	    "hello",
	    "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
	    "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
	    kpem,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		back = NULL;
		if (pk_pki_parse_certs(bad[i], strlen(bad[i]), &back, &err) != PK_ERR_INVALID)
			fail_msg("bad bundle %zu was accepted", i);
		assert_null(back);
		assert_true(err.msg[0] != '\0');
	}
	assert_non_null(strstr(err.msg, "PRIVATE KEY"));
	/* A cut-off bundle: the second block lacks its end. */
	char *cut = strdup(pem);
	cut[len - 30] = '\0';
	assert_int_equal(pk_pki_parse_certs(cut, strlen(cut), &back, &err), PK_ERR_INVALID);
	free(cut);
	/* Larger than the cap. */
	assert_int_equal(pk_pki_parse_certs(pem, PK_PKI_MAX_PEM + 1, &back, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "larger than"));

	/* Keys: garbage, a certificate, an encrypted key (never a passphrase prompt). */
	assert_int_equal(pk_pki_parse_key("nope", 4, &k, &err), PK_ERR_INVALID);
	assert_int_equal(pk_pki_parse_key(pem, len, &k, &err), PK_ERR_INVALID);
	BIO *b = BIO_new(BIO_s_mem());
	assert_int_equal(
	    PEM_write_bio_PKCS8PrivateKey(b, key, EVP_aes_256_cbc(), "secret", 6, NULL, NULL), 1);
	char *enc = NULL;
	long en = BIO_get_mem_data(b, &enc);
	assert_int_equal(pk_pki_parse_key(enc, (size_t)en, &k, &err), PK_ERR_INVALID);
	BIO_free(b);
}

static void test_pem(void **state)
{
	(void)state;
	struct pk_san names;
	names_of(&names);
	struct pair ca = new_ca(PK_PKI_ECDSA_P256, NOW, 10);
	struct pair ca2 = new_ca(PK_PKI_ECDSA_P256, NOW + 1, 10);
	struct pair tls = new_serving(&ca, &names, PK_PKI_ECDSA_P256, NOW, 5);
	struct pk_err err = {{0}};

	/* A bundle of two round-trips, in order. */
	STACK_OF(X509) *two = sk_X509_new_null();
	sk_X509_push(two, ca.cert);
	sk_X509_push(two, ca2.cert);
	char *pem = NULL;
	size_t len = 0;
	assert_int_equal(pk_pki_certs_pem(two, &pem, &len, &err), PK_OK);
	assert_int_equal(strlen(pem), len);
	sk_X509_free(two);
	STACK_OF(X509) *back = NULL;
	assert_int_equal(pk_pki_parse_certs(pem, len, &back, &err), PK_OK);
	assert_int_equal(sk_X509_num(back), 2);
	assert_true(pk_pki_same_cert(sk_X509_value(back, 0), ca.cert));
	assert_true(pk_pki_same_cert(sk_X509_value(back, 1), ca2.cert));
	assert_false(pk_pki_same_cert(sk_X509_value(back, 0), ca2.cert));
	sk_X509_pop_free(back, X509_free);

	/* Comments around the blocks are fine, as openssl takes them. */
	char *annotated = NULL;
	size_t an = strlen(pem) + 64;
	annotated = malloc(an);
	snprintf(annotated, an, "# the CA bundle\n%s\n", pem);
	assert_int_equal(pk_pki_parse_certs(annotated, strlen(annotated), &back, &err), PK_OK);
	assert_int_equal(sk_X509_num(back), 2);
	sk_X509_pop_free(back, X509_free);
	free(annotated);

	/* A key round-trips as unencrypted PKCS#8 and still matches. */
	char *kpem = NULL;
	size_t klen = 0;
	assert_int_equal(pk_pki_key_pem(tls.key, &kpem, &klen, &err), PK_OK);
	assert_non_null(strstr(kpem, "-----BEGIN PRIVATE KEY-----"));
	EVP_PKEY *k = NULL;
	assert_int_equal(pk_pki_parse_key(kpem, klen, &k, &err), PK_OK);
	assert_true(pk_pki_key_matches(tls.cert, k));
	EVP_PKEY_free(k);

	refuse_bad_pem(pem, len, kpem, tls.key);
	/* One certificate alone encodes as a bundle of one. */
	char *one = NULL;
	size_t olen = 0;
	assert_int_equal(pk_pki_cert_pem(tls.cert, &one, &olen, &err), PK_OK);
	assert_int_equal(strlen(one), olen);
	assert_int_equal(pk_pki_parse_certs(one, olen, &back, &err), PK_OK);
	assert_int_equal(sk_X509_num(back), 1);
	assert_true(pk_pki_same_cert(sk_X509_value(back, 0), tls.cert));
	sk_X509_pop_free(back, X509_free);
	free(one);
	assert_int_equal(ERR_peek_error(), 0); /* nothing left in OpenSSL's queue */

	free(kpem);
	free(pem);
	pair_free(&tls);
	pair_free(&ca2);
	pair_free(&ca);
	pk_san_free(&names);
}

/* A certificate with a SAN type poolkeeper does not issue, and one without SANs. */
static void test_foreign_names(void **state)
{
	(void)state;
	struct pair ca = new_ca(PK_PKI_ECDSA_P256, NOW, 10);
	X509 *x = X509_new();
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
	X509_set_issuer_name(x, X509_get_subject_name(ca.cert));
	ASN1_TIME_set(X509_getm_notBefore(x), NOW);
	ASN1_TIME_set(X509_getm_notAfter(x), NOW + DAY_S);
	X509_set_pubkey(x, ca.key);
	struct pk_san got;
	struct pk_err err = {{0}};
	assert_int_equal(pk_pki_cert_names(x, &got, &err), PK_OK);
	assert_int_equal(got.ndns + got.nip, 0);
	pk_san_free(&got);
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, ca.cert, x, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name,
	                                          "DNS:a.example,email:x@example.com");
	assert_non_null(ext);
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	assert_int_equal(pk_pki_cert_names(x, &got, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "other than DNS or IP"));
	X509_free(x);
	pair_free(&ca);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_chain_verifies), cmocka_unit_test(test_rotation_bundle),
	    cmocka_unit_test(test_fields),         cmocka_unit_test(test_key_types),
	    cmocka_unit_test(test_long_name),      cmocka_unit_test(test_pem),
	    cmocka_unit_test(test_foreign_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
