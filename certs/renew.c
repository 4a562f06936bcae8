/* renew.c - keep or replace the CA and the serving pair; the material to store. */
#include "renew.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY_S ((time_t)86400)

/* Stored material that cannot be used, replaced under --renew: the first reason. */
struct unusable {
	bool set;
	char why[PK_ERR_MSG_MAX];
};

/* What was read from the stored texts; every pointer owned here. */
struct stored {
	STACK_OF(X509) * bundle;
	EVP_PKEY *ca_key;
	X509 *signing; /* borrowed from bundle: the certificate of ca_key */
	STACK_OF(X509) * tls_chain;
	X509 *tls; /* borrowed from tls_chain: its first certificate */
	EVP_PKEY *tls_key;
	struct unusable ca_bad;  /* CA material present but replaced under --renew */
	struct unusable tls_bad; /* the same for the serving pair */
};

static void stored_free(struct stored *s)
{
	sk_X509_pop_free(s->bundle, X509_free);
	EVP_PKEY_free(s->ca_key);
	sk_X509_pop_free(s->tls_chain, X509_free);
	EVP_PKEY_free(s->tls_key);
}

static bool present(const struct pk_renew_item *i)
{
	return i->pem != NULL && i->len > 0;
}

void pk_renew_result_free(struct pk_renew_result *r)
{
	free(r->bundle.pem);
	free(r->ca_crt.pem);
	free(r->ca_key.pem);
	free(r->tls_crt.pem);
	free(r->tls_key.pem);
	memset(r, 0, sizeof(*r));
}

bool pk_renew_same(const struct pk_renew_pem *a, const char *b, size_t blen)
{
	if (a->pem == NULL || b == NULL)
		return a->pem == NULL && b == NULL;
	return a->len == blen && memcmp(a->pem, b, blen) == 0;
}

static int copy_item(struct pk_renew_pem *dst, const struct pk_renew_item *src, struct pk_err *err)
{
	dst->pem = malloc(src->len + 1);
	if (dst->pem == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	memcpy(dst->pem, src->pem, src->len);
	dst->pem[src->len] = '\0';
	dst->len = src->len;
	return PK_OK;
}

/*
 * Material that cannot be used: an error naming it, or with --renew a note
 * in why[] and PK_OK, so that it is replaced.
 */
static int unusable(const struct pk_renew_policy *p, struct unusable *u, struct pk_err *err,
                    const char *fmt, ...) PK_PRINTF(4, 5);
static int unusable(const struct pk_renew_policy *p, struct unusable *u, struct pk_err *err,
                    const char *fmt, ...)
{
	char msg[PK_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!p->renew)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s; nothing was changed (--renew replaces it)", msg);
	if (!u->set)
		snprintf(u->why, sizeof(u->why), "%s", msg);
	u->set = true;
	return PK_OK;
}

#define CA_UNUSABLE(...)  unusable(p, &s->ca_bad, err, __VA_ARGS__)
#define TLS_UNUSABLE(...) unusable(p, &s->tls_bad, err, __VA_ARGS__)

/* A certificate text and its key, both or neither: parsed into *certs and *key. */
static int read_pair(const struct pk_renew_policy *p, const struct pk_renew_item *crt,
                     const struct pk_renew_item *key, STACK_OF(X509) * *certs, EVP_PKEY **pkey,
                     struct unusable *u, struct pk_err *err)
{
	struct pk_err e = {{0}};
	int rc = PK_OK;
	if (present(crt) && pk_pki_parse_certs(crt->pem, crt->len, certs, &e) != PK_OK &&
	    (rc = unusable(p, u, err, "%s: %s", crt->where, e.msg)) != PK_OK)
		return rc;
	if (present(key) && pk_pki_parse_key(key->pem, key->len, pkey, &e) != PK_OK &&
	    (rc = unusable(p, u, err, "%s: %s", key->where, e.msg)) != PK_OK)
		return rc;
	if (!u->set && present(crt) != present(key))
		return unusable(p, u, err, "%s is there but %s is missing",
		                present(crt) ? crt->where : key->where,
		                present(crt) ? key->where : crt->where);
	return PK_OK;
}

/* The CA bundle and key: parsed, and the certificate of the key found. */
static int read_ca(const struct pk_renew_policy *p, const struct pk_renew_have *h, struct stored *s,
                   struct pk_err *err)
{
	int rc = read_pair(p, &h->bundle, &h->ca_key, &s->bundle, &s->ca_key, &s->ca_bad, err);
	if (rc != PK_OK || s->ca_bad.set || s->bundle == NULL)
		return rc;
	for (int i = 0; i < sk_X509_num(s->bundle) && s->signing == NULL; i++)
		if (pk_pki_key_matches(sk_X509_value(s->bundle, i), s->ca_key))
			s->signing = sk_X509_value(s->bundle, i);
	if (s->signing == NULL)
		return CA_UNUSABLE("%s matches no certificate in %s", h->ca_key.where,
		                   h->bundle.where);
	if (!pk_pki_is_ca(s->signing)) {
		s->signing = NULL;
		return CA_UNUSABLE("%s: the certificate of %s is not a CA certificate",
		                   h->bundle.where, h->ca_key.where);
	}
	/* A trust anchor: caBundle is verified up to it, and poolkeeper makes only roots. */
	if (!pk_pki_self_signed(s->signing)) {
		s->signing = NULL;
		return CA_UNUSABLE("%s: the certificate of %s is not a self-signed CA",
		                   h->bundle.where, h->ca_key.where);
	}
	time_t nb, na;
	if (pk_pki_validity(s->signing, &nb, &na) != PK_OK) {
		s->signing = NULL;
		return CA_UNUSABLE("%s: the CA certificate's validity does not decode",
		                   h->bundle.where);
	}
	return PK_OK;
}

/* The serving pair: parsed, matched, and signed by a CA of the bundle. */
static int read_serving(const struct pk_renew_policy *p, const struct pk_renew_have *h,
                        struct stored *s, struct pk_err *err)
{
	int rc =
	    read_pair(p, &h->tls_crt, &h->tls_key, &s->tls_chain, &s->tls_key, &s->tls_bad, err);
	if (rc != PK_OK || s->tls_bad.set || s->tls_chain == NULL)
		return rc;
	s->tls = sk_X509_value(s->tls_chain, 0);
	if (!pk_pki_key_matches(s->tls, s->tls_key))
		return TLS_UNUSABLE("%s does not match %s", h->tls_key.where, h->tls_crt.where);
	if (s->bundle == NULL && !s->ca_bad.set)
		return TLS_UNUSABLE("%s is there but no CA is (%s, %s): it was not issued here",
		                    h->tls_crt.where, h->bundle.where, h->ca_key.where);
	if (s->bundle == NULL || s->ca_bad.set)
		return PK_OK; /* replaced with the CA */
	for (int i = 0; i < sk_X509_num(s->bundle); i++)
		if (pk_pki_issued_by(s->tls, sk_X509_value(s->bundle, i)))
			return PK_OK;
	return TLS_UNUSABLE("%s was not signed by any CA in %s", h->tls_crt.where, h->bundle.where);
}

/* The work of one plan; everything made is owned here until handed to the result. */
struct made {
	EVP_PKEY *ca_key;
	X509 *ca;
	EVP_PKEY *tls_key;
	X509 *tls;
	STACK_OF(X509) * bundle; /* borrowed certificates */
};

static void made_free(struct made *m)
{
	EVP_PKEY_free(m->ca_key);
	X509_free(m->ca);
	EVP_PKEY_free(m->tls_key);
	X509_free(m->tls);
	sk_X509_free(m->bundle);
}

/* notAfter, or 0 when it does not decode (read_ca and the issuing code made sure it does). */
static time_t not_after_of(const X509 *c)
{
	time_t nb, na;
	return pk_pki_validity(c, &nb, &na) == PK_OK ? na : 0;
}

/* Sets the reason the CA is replaced, or leaves it "" when it is kept. */
static void ca_decision(const struct pk_renew_policy *p, const struct stored *s, time_t now,
                        char *why, size_t len)
{
	why[0] = '\0';
	if (s->ca_bad.set) {
		snprintf(why, len, "the stored CA cannot be used (--renew): %.200s", s->ca_bad.why);
		return;
	}
	if (s->signing == NULL) {
		snprintf(why, len, "no CA yet");
		return;
	}
	if (p->renew_ca) {
		snprintf(why, len, "--renew-ca");
		return;
	}
	time_t nb = 0, na = 0;
	if (pk_pki_validity(s->signing, &nb, &na) == PK_OK && nb > now) {
		char t[32];
		pk_pki_format_time(nb, t);
		snprintf(why, len, "the CA is not valid before %s (a clock behind?)", t);
		return;
	}
	unsigned days = p->ca_renew_before_days > p->renew_before_days ? p->ca_renew_before_days
	                                                               : p->renew_before_days;
	if (na - now <= (time_t)days * DAY_S) {
		char t[32];
		pk_pki_format_time(na, t);
		snprintf(why, len, "the CA expires at %s, within %u days", t, days);
	}
}

/* Sets the reason the serving pair is re-issued, or leaves it "" when it is kept. */
static void serving_decision(const struct pk_renew_policy *p, const struct stored *s,
                             const struct made *m, X509 *signing, bool new_ca, time_t now,
                             char *why, size_t len)
{
	why[0] = '\0';
	if (s->tls_bad.set) {
		snprintf(why, len, "the stored pair cannot be used (--renew): %.400s",
		         s->tls_bad.why);
		return;
	}
	if (s->tls == NULL) {
		snprintf(why, len, "no serving certificate yet");
		return;
	}
	if (p->renew) {
		snprintf(why, len, "--renew");
		return;
	}
	if (new_ca || s->ca_bad.set) {
		snprintf(why, len, "a new CA");
		return;
	}
	if (!pk_pki_issued_by(s->tls, signing)) {
		snprintf(why, len, "signed by an older CA of the bundle");
		return;
	}
	struct pk_san have;
	struct pk_err e = {{0}};
	if (pk_pki_cert_names(s->tls, &have, &e) != PK_OK) {
		snprintf(why, len, "its names cannot be read: %.400s", e.msg);
		return;
	}
	if (!pk_san_equal(p->names, &have)) {
		char diff[400];
		pk_san_diff(p->names, &have, diff, sizeof(diff));
		snprintf(why, len, "its names differ: %s", diff);
		pk_san_free(&have);
		return;
	}
	pk_san_free(&have);
	enum pk_pki_key_type t;
	if (pk_pki_key_type_of(s->tls_key, &t) != PK_OK || t != p->key_type) {
		snprintf(why, len, "its key is not %s", pk_pki_key_type_name(p->key_type));
		return;
	}
	if (pk_pki_verify(s->tls, m->bundle, now, &e) != PK_OK) {
		snprintf(why, len, "it %.400s", e.msg);
		return;
	}
	time_t nb = 0, na = 0;
	if (pk_pki_validity(s->tls, &nb, &na) != PK_OK) {
		snprintf(why, len, "its validity does not decode");
		return;
	}
	if (na - now <= (time_t)p->renew_before_days * DAY_S) {
		char tb[32];
		pk_pki_format_time(na, tb);
		snprintf(why, len, "it expires at %s, within %u days", tb, p->renew_before_days);
	}
}

/* The signing CA first, then the stored CAs that have not expired, each once. */
static int build_bundle(const struct stored *s, X509 *signing, time_t now, struct made *m,
                        bool *changed, struct pk_err *err)
{
	m->bundle = sk_X509_new_null();
	if (m->bundle == NULL || sk_X509_push(m->bundle, signing) <= 0)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	for (int i = 0; s->bundle != NULL && !s->ca_bad.set && i < sk_X509_num(s->bundle); i++) {
		X509 *c = sk_X509_value(s->bundle, i);
		time_t nb, na;
		bool dup = false;
		for (int j = 0; j < sk_X509_num(m->bundle) && !dup; j++)
			dup = pk_pki_same_cert(c, sk_X509_value(m->bundle, j));
		/* "old CAs leave the bundle only once expired" */
		if (dup || (pk_pki_validity(c, &nb, &na) == PK_OK && na <= now))
			continue;
		if (sk_X509_num(m->bundle) == PK_PKI_MAX_BUNDLE)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "the CA bundle would hold more than %d certificates",
			                  PK_PKI_MAX_BUNDLE);
		if (sk_X509_push(m->bundle, c) <= 0)
			return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	*changed =
	    s->bundle == NULL || s->ca_bad.set || sk_X509_num(s->bundle) != sk_X509_num(m->bundle);
	for (int i = 0; !*changed && i < sk_X509_num(m->bundle); i++)
		*changed =
		    !pk_pki_same_cert(sk_X509_value(s->bundle, i), sk_X509_value(m->bundle, i));
	return PK_OK;
}

/* The signing CA: the stored one, or a new one when ca_decision says so. */
static int choose_ca(const struct pk_renew_policy *p, const struct stored *s, time_t now,
                     struct made *m, struct pk_renew_result *out, X509 **signing,
                     EVP_PKEY **signing_key, struct pk_err *err)
{
	ca_decision(p, s, now, out->ca_reason, sizeof(out->ca_reason));
	out->new_ca = out->ca_reason[0] != '\0';
	*signing = s->signing;
	*signing_key = s->ca_key;
	if (out->new_ca) {
		int rc;
		if ((rc = pk_pki_new_key(p->key_type, &m->ca_key, err)) != PK_OK ||
		    (rc = pk_pki_make_ca(m->ca_key, now, now + (time_t)p->ca_validity_days * DAY_S,
		                         &m->ca, err)) != PK_OK)
			return rc;
		*signing = m->ca;
		*signing_key = m->ca_key;
	}
	out->ca_not_after = not_after_of(*signing);
	if (!out->new_ca) {
		char t[32];
		pk_pki_format_time(out->ca_not_after, t);
		snprintf(out->ca_reason, sizeof(out->ca_reason), "valid until %s", t);
	}
	return PK_OK;
}

/* The serving certificate: the stored one, or one issued under signing when
 * serving_decision says so. */
static int choose_serving(const struct pk_renew_policy *p, const struct pk_renew_have *have,
                          const struct stored *s, time_t now, X509 *signing, EVP_PKEY *signing_key,
                          struct made *m, struct pk_renew_result *out, struct pk_err *err)
{
	serving_decision(p, s, m, signing, out->new_ca, now, out->serving_reason,
	                 sizeof(out->serving_reason));
	out->new_serving = out->serving_reason[0] != '\0';
	X509 *tls = s->tls;
	if (out->new_serving) {
		/* A certificate never outlives the CA that vouches for it. */
		time_t na = now + (time_t)p->validity_days * DAY_S;
		if (na > out->ca_not_after)
			na = out->ca_not_after;
		int rc;
		if ((rc = pk_pki_new_key(p->key_type, &m->tls_key, err)) != PK_OK ||
		    (rc = pk_pki_make_serving(m->tls_key, p->names, signing, signing_key, now, na,
		                              &m->tls, err)) != PK_OK)
			return rc;
		tls = m->tls;
		/* Never hand back a pair that does not verify: a CA that cannot vouch for it
		 * (a weak key, an odd profile) is refused, not written. */
		struct pk_err e = {{0}};
		if (pk_pki_verify(m->tls, m->bundle, now, &e) != PK_OK)
			return pk_err_set(
			    err, PK_ERR_INVALID,
			    "the certificate issued under the CA of %s %.300s; nothing "
			    "was changed (--renew-ca replaces the CA)",
			    have->bundle.where ? have->bundle.where : "the bundle", e.msg);
	}
	out->serving_not_after = not_after_of(tls);
	pk_pki_serial_hex(tls, out->serving_serial, sizeof(out->serving_serial));
	if (!out->new_serving) {
		char t[32];
		pk_pki_format_time(out->serving_not_after, t);
		snprintf(out->serving_reason, sizeof(out->serving_reason), "valid until %s", t);
	}
	return PK_OK;
}

/* The material to store. Unchanged material is handed back byte for byte, so a rerun
 * compares equal. */
static int hand_back(const struct pk_renew_have *have, const struct made *m, X509 *signing,
                     struct pk_renew_result *out, struct pk_err *err)
{
	int rc;
	if ((rc = out->bundle_changed
	              ? pk_pki_certs_pem(m->bundle, &out->bundle.pem, &out->bundle.len, err)
	              : copy_item(&out->bundle, &have->bundle, err)) != PK_OK ||
	    (rc = pk_pki_cert_pem(signing, &out->ca_crt.pem, &out->ca_crt.len, err)) != PK_OK ||
	    (rc = out->new_ca ? pk_pki_key_pem(m->ca_key, &out->ca_key.pem, &out->ca_key.len, err)
	                      : copy_item(&out->ca_key, &have->ca_key, err)) != PK_OK ||
	    (rc = out->new_serving
	              ? pk_pki_cert_pem(m->tls, &out->tls_crt.pem, &out->tls_crt.len, err)
	              : copy_item(&out->tls_crt, &have->tls_crt, err)) != PK_OK)
		return rc;
	return out->new_serving
	           ? pk_pki_key_pem(m->tls_key, &out->tls_key.pem, &out->tls_key.len, err)
	           : copy_item(&out->tls_key, &have->tls_key, err);
}

int pk_renew_plan(const struct pk_renew_policy *p, const struct pk_renew_have *have, time_t now,
                  struct pk_renew_result *out, struct pk_err *err)
{
	struct stored s;
	struct made m;
	memset(&s, 0, sizeof(s));
	memset(&m, 0, sizeof(m));
	memset(out, 0, sizeof(*out));
	X509 *signing = NULL;
	EVP_PKEY *signing_key = NULL;
	int rc;
	if ((rc = read_ca(p, have, &s, err)) == PK_OK &&
	    (rc = read_serving(p, have, &s, err)) == PK_OK &&
	    (rc = choose_ca(p, &s, now, &m, out, &signing, &signing_key, err)) == PK_OK &&
	    (rc = build_bundle(&s, signing, now, &m, &out->bundle_changed, err)) == PK_OK) {
		out->bundle_count = (size_t)sk_X509_num(m.bundle);
		if ((rc = choose_serving(p, have, &s, now, signing, signing_key, &m, out, err)) ==
		    PK_OK)
			rc = hand_back(have, &m, signing, out, err);
	}
	made_free(&m);
	stored_free(&s);
	return rc;
}
