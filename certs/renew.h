/*
 * renew.h - whether the stored CA and serving pair are kept or replaced,
 * and the material to hold afterwards. The one place that decides; the
 * file and Secret writers only store what it returns.
 *
 * The stored material is four PEM texts: the CA bundle (ca.crt: the
 * signing CA and older CAs that have not expired), the signing CA's key
 * (ca.key), and the serving pair (tls.crt, tls.key).
 *
 * The CA (the certificate in the bundle whose key is ca.key) is replaced by
 * a new one when there is none, when `renew_ca` is set, or when it expires
 * within max(ca_renew_before_days, renew_before_days) days. The old CA stays
 * in the bundle until it expires, so certificates it signed keep verifying
 * while every replica moves to one signed by the new CA.
 *
 * The serving pair is re-issued, under the signing CA, when there is none,
 * when `renew` is set, when the CA is new, when it was signed by another
 * (older) CA of the bundle, when its names are not exactly `names`, when
 * its key is not of `key_type`, when it does not verify against the bundle
 * as a TLS server certificate, or when it expires within renew_before_days
 * days. It never outlives its CA.
 *
 * Material that cannot be used is an error, never overwritten quietly:
 * a PEM text that does not parse, a key that matches no certificate, half a
 * pair, a serving certificate that no CA of the bundle signed. With `renew`
 * such material is replaced instead (a new CA when the CA's is the broken
 * part).
 *
 * Pure: no I/O, no logging.
 */
#ifndef PK_CERTS_RENEW_H
#define PK_CERTS_RENEW_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "pk.h"
#include "pki.h"
#include "san.h"

struct pk_renew_policy {
	const struct pk_san *names; /* borrowed; at least one name */
	enum pk_pki_key_type key_type;
	unsigned validity_days;        /* serving certificate */
	unsigned ca_validity_days;     /* CA */
	unsigned renew_before_days;    /* serving: re-issue this close to expiry */
	unsigned ca_renew_before_days; /* CA: replace this close to expiry */
	bool renew;                    /* --renew: re-issue the serving pair regardless */
	bool renew_ca;                 /* --renew-ca: a new CA (and pair) regardless */
};

/* One stored text: bytes (borrowed, NULL when absent) and where it lives, for messages. */
struct pk_renew_item {
	const char *pem;
	size_t len;
	const char *where; /* "Secret ns/name-ca key ca.crt", "/dir/ca.crt" */
};

struct pk_renew_have {
	struct pk_renew_item bundle; /* ca.crt */
	struct pk_renew_item ca_key;
	struct pk_renew_item tls_crt;
	struct pk_renew_item tls_key;
};

/* Owned PEM text. */
struct pk_renew_pem {
	char *pem;
	size_t len;
};

struct pk_renew_result {
	bool new_ca;         /* a CA was made */
	bool new_serving;    /* a serving pair was issued */
	bool bundle_changed; /* the bundle's certificates are not the stored ones */
	char ca_reason[256]; /* why the CA was made, or "valid until <time>" */
	char serving_reason[512];
	/* What to store: originals byte for byte where nothing changed. */
	struct pk_renew_pem bundle; /* signing CA first, then older CAs */
	struct pk_renew_pem ca_crt; /* the signing CA alone */
	struct pk_renew_pem ca_key;
	struct pk_renew_pem tls_crt;
	struct pk_renew_pem tls_key;
	time_t ca_not_after, serving_not_after;
	size_t bundle_count;
	char serving_serial[48];
};

/*
 * Decides at `now` and fills *out (zeroed first; release with
 * pk_renew_result_free, also after a failure). PK_ERR_INVALID with a
 * message naming the stored item (its `where`) and what is wrong with it.
 */
PK_MUST_CHECK int pk_renew_plan(const struct pk_renew_policy *p, const struct pk_renew_have *have,
                                time_t now, struct pk_renew_result *out, struct pk_err *err);

void pk_renew_result_free(struct pk_renew_result *r);

/* The same bytes (both absent counts as equal). */
bool pk_renew_same(const struct pk_renew_pem *a, const char *b, size_t blen);

#endif
