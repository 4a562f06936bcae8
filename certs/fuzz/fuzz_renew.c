/*
 * fuzz_renew.c - libFuzzer target for what poolkeeper-certs reads back from
 * a Secret or a folder: the input is up to four texts separated by NUL
 * bytes (ca.crt, ca.key, tls.crt, tls.key), the first byte choosing
 * --renew and --renew-ca. Any bytes must either be refused with a message
 * naming the item, or give material whose serving certificate verifies
 * against its bundle (X509_verify_cert) and matches its key.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "renew.h"

/* 2026-12-01T00:00:00Z, within the seeds' lifetime. */
#define FUZZ_NOW ((time_t)1796083200)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const char *const where[4] = {"F/ca.crt", "F/ca.key", "F/tls.crt", "F/tls.key"};
	struct pk_renew_item items[4];
	memset(items, 0, sizeof(items));
	const char *p = (const char *)data + 1;
	const char *end = (const char *)data + size;
	for (int i = 0; i < 4 && p <= end; i++) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		size_t n = nul != NULL ? (size_t)(nul - p) : (size_t)(end - p);
		items[i] = (struct pk_renew_item){n > 0 ? p : NULL, n, where[i]};
		p += n + 1;
	}
	struct pk_san names;
	struct pk_err err = {{0}};
	pk_san_init(&names);
	if (pk_san_add_dns(&names, "localhost", &err) != PK_OK ||
	    pk_san_add_ip(&names, "127.0.0.1", &err) != PK_OK)
		abort();
	struct pk_renew_policy pol = {
	    .names = &names,
	    .key_type = PK_PKI_ECDSA_P256,
	    .validity_days = 365,
	    .ca_validity_days = 3650,
	    .renew_before_days = 30,
	    .ca_renew_before_days = 90,
	    .renew = (data[0] & 1) != 0,
	    .renew_ca = (data[0] & 2) != 0,
	};
	struct pk_renew_have have = {items[0], items[1], items[2], items[3]};
	struct pk_renew_result r;
	if (pk_renew_plan(&pol, &have, FUZZ_NOW, &r, &err) != PK_OK) {
		if (strstr(err.msg, "F/") == NULL)
			abort(); /* every refusal names the item */
		pk_renew_result_free(&r);
		pk_san_free(&names);
		return 0;
	}
	STACK_OF(X509) *bundle = NULL, *leaf = NULL;
	EVP_PKEY *key = NULL;
	if (pk_pki_parse_certs(r.bundle.pem, r.bundle.len, &bundle, &err) != PK_OK ||
	    pk_pki_parse_certs(r.tls_crt.pem, r.tls_crt.len, &leaf, &err) != PK_OK ||
	    pk_pki_parse_key(r.tls_key.pem, r.tls_key.len, &key, &err) != PK_OK ||
	    pk_pki_verify(sk_X509_value(leaf, 0), bundle, FUZZ_NOW, &err) != PK_OK ||
	    !pk_pki_key_matches(sk_X509_value(leaf, 0), key))
		abort();
	EVP_PKEY_free(key);
	sk_X509_pop_free(bundle, X509_free);
	sk_X509_pop_free(leaf, X509_free);
	pk_renew_result_free(&r);
	pk_san_free(&names);
	return 0;
}
