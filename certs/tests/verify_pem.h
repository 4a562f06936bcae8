/*
 * verify_pem.h - the certs suites' own check of stored material: OpenSSL's
 * X509_verify_cert of a leaf (PEM) against a bundle (PEM) as a TLS server
 * at a given time, independent of pki.c's pk_pki_verify. Include after
 * <cmocka.h>.
 */
#ifndef PK_CERTS_TEST_VERIFY_PEM_H
#define PK_CERTS_TEST_VERIFY_PEM_H

#include <time.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "pki.h"

/* X509_V_OK, or the verification error. */
static inline int verify_pem(const char *leaf_pem, size_t ll, const char *bundle_pem, size_t bl,
                             time_t at)
{
	STACK_OF(X509) *bundle = NULL, *leaf = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_pki_parse_certs(bundle_pem, bl, &bundle, &err), PK_OK);
	assert_int_equal(pk_pki_parse_certs(leaf_pem, ll, &leaf, &err), PK_OK);
	X509_STORE *st = X509_STORE_new();
	for (int i = 0; i < sk_X509_num(bundle); i++)
		X509_STORE_add_cert(st, sk_X509_value(bundle, i));
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_STORE_CTX_init(ctx, st, sk_X509_value(leaf, 0), NULL);
	X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
	X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), at);
	int e = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	sk_X509_pop_free(bundle, X509_free);
	sk_X509_pop_free(leaf, X509_free);
	ERR_clear_error();
	return e;
}

#endif
