/*
 * test_renew.c - when the CA and the serving pair are kept and when they
 * are replaced: a first run, a rerun that keeps everything byte for byte,
 * re-issue near expiry, on changed names, on --renew and on another key
 * type; CA rotation with the old CA kept in the bundle until it expires
 * (both generations verify with X509_verify_cert meanwhile); a pair never
 * outliving its CA; and stored material that is refused (unless --renew).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "renew.h"
#include "verify_pem.h"

#define NOW   ((time_t)1767225600) /* 2026-01-01T00:00:00Z */
#define DAY_S ((time_t)86400)

/* The four stored texts, as files or Secret keys would hold them. */
struct store {
	char *v[4]; /* bundle, ca.key, tls.crt, tls.key */
	size_t len[4];
};

static const char *const where[4] = {"S/ca.crt", "S/ca.key", "S/tls.crt", "S/tls.key"};

static void store_set(struct store *s, int i, const char *pem, size_t len)
{
	free(s->v[i]);
	s->v[i] = NULL;
	s->len[i] = 0;
	if (pem != NULL) {
		s->v[i] = malloc(len + 1);
		memcpy(s->v[i], pem, len);
		s->v[i][len] = '\0';
		s->len[i] = len;
	}
}

static void store_free(struct store *s)
{
	for (int i = 0; i < 4; i++)
		store_set(s, i, NULL, 0);
}

static struct pk_renew_have have_of(const struct store *s)
{
	struct pk_renew_have h = {
	    .bundle = {s->v[0], s->len[0], where[0]},
	    .ca_key = {s->v[1], s->len[1], where[1]},
	    .tls_crt = {s->v[2], s->len[2], where[2]},
	    .tls_key = {s->v[3], s->len[3], where[3]},
	};
	return h;
}

/* Stores what a plan returned, as the writers would. */
static void store_save(struct store *s, const struct pk_renew_result *r)
{
	store_set(s, 0, r->bundle.pem, r->bundle.len);
	store_set(s, 1, r->ca_key.pem, r->ca_key.len);
	store_set(s, 2, r->tls_crt.pem, r->tls_crt.len);
	store_set(s, 3, r->tls_key.pem, r->tls_key.len);
}

static bool unchanged(const struct store *s, const struct pk_renew_result *r)
{
	return pk_renew_same(&r->bundle, s->v[0], s->len[0]) &&
	       pk_renew_same(&r->ca_key, s->v[1], s->len[1]) &&
	       pk_renew_same(&r->tls_crt, s->v[2], s->len[2]) &&
	       pk_renew_same(&r->tls_key, s->v[3], s->len[3]);
}

struct fixture {
	struct pk_san names;
	struct pk_renew_policy policy;
	struct store st;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct pk_err err = {{0}};
	pk_san_init(&f->names);
	if (pk_san_add_service(&f->names, "poolkeeper-webhook", "poolkeeper-system",
	                       "cluster.local", &err) != PK_OK ||
	    pk_san_add_ip(&f->names, "127.0.0.1", &err) != PK_OK)
		return -1;
	f->policy = (struct pk_renew_policy){
	    .names = &f->names,
	    .key_type = PK_PKI_ECDSA_P256,
	    .validity_days = 365,
	    .ca_validity_days = 3650,
	    .renew_before_days = 30,
	    .ca_renew_before_days = 90,
	};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	pk_san_free(&f->names);
	store_free(&f->st);
	free(f);
	return 0;
}

static void plan_ok(struct fixture *f, const struct pk_renew_policy *p, time_t now,
                    struct pk_renew_result *r)
{
	struct pk_renew_have h = have_of(&f->st);
	struct pk_err err = {{0}};
	if (pk_renew_plan(p, &h, now, r, &err) != PK_OK)
		fail_msg("plan: %s", err.msg);
}

/* A plan that must fail; returns its message (static buffer). */
static const char *plan_fails(struct fixture *f, const struct pk_renew_policy *p, time_t now)
{
	static struct pk_err err;
	struct pk_renew_result r;
	struct pk_renew_have h = have_of(&f->st);
	memset(&err, 0, sizeof(err));
	int rc = pk_renew_plan(p, &h, now, &r, &err);
	pk_renew_result_free(&r);
	if (rc != PK_ERR_INVALID)
		fail_msg("plan did not fail (%d)", rc);
	assert_non_null(strstr(err.msg, "nothing was changed (--renew replaces it)"));
	return err.msg;
}

/* X509_verify_cert of the stored tls.crt against the stored bundle at `at`. */
static int verify_stored(const struct store *s, time_t at)
{
	return verify_pem(s->v[2], s->len[2], s->v[0], s->len[0], at);
}

/* A first run (at NOW), stored. */
static void first_run(struct fixture *f)
{
	struct pk_renew_result r;
	plan_ok(f, &f->policy, NOW, &r);
	assert_true(r.new_ca);
	assert_true(r.new_serving);
	assert_true(r.bundle_changed);
	assert_int_equal(r.bundle_count, 1);
	assert_string_equal(r.ca_reason, "no CA yet");
	assert_string_equal(r.serving_reason, "no serving certificate yet");
	assert_int_equal(r.serving_not_after, NOW + 365 * DAY_S);
	assert_int_equal(r.ca_not_after, NOW + 3650 * DAY_S);
	/* The CA alone and the bundle are the same certificate on a first run. */
	assert_true(pk_renew_same(&r.ca_crt, r.bundle.pem, r.bundle.len));
	store_save(&f->st, &r);
	pk_renew_result_free(&r);
	assert_int_equal(verify_stored(&f->st, NOW), X509_V_OK);
}

static void test_first_run_and_keep(void **state)
{
	struct fixture *f = *state;
	first_run(f);
	/* The names are the ones asked for. */
	STACK_OF(X509) *leaf = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_pki_parse_certs(f->st.v[2], f->st.len[2], &leaf, &err), PK_OK);
	struct pk_san got;
	assert_int_equal(pk_pki_cert_names(sk_X509_value(leaf, 0), &got, &err), PK_OK);
	assert_true(pk_san_equal(&got, &f->names));
	pk_san_free(&got);
	sk_X509_pop_free(leaf, X509_free);

	/* Runs later on keep everything, byte for byte. */
	static const time_t later[] = {NOW, NOW + DAY_S, NOW + 334 * DAY_S};
	for (size_t i = 0; i < sizeof(later) / sizeof(later[0]); i++) {
		struct pk_renew_result r;
		plan_ok(f, &f->policy, later[i], &r);
		assert_false(r.new_ca);
		assert_false(r.new_serving);
		assert_false(r.bundle_changed);
		assert_true(unchanged(&f->st, &r));
		assert_non_null(strstr(r.serving_reason, "valid until 2027-01-01T00:00:00Z"));
		assert_non_null(strstr(r.ca_reason, "valid until"));
		pk_renew_result_free(&r);
	}
}

static void test_renew_near_expiry(void **state)
{
	struct fixture *f = *state;
	first_run(f);
	char *ca_before = strdup(f->st.v[0]);
	char *key_before = strdup(f->st.v[1]);
	char *crt_before = strdup(f->st.v[2]);
	struct pk_renew_result r;
	/* 29 days before expiry: within the 30-day window. */
	plan_ok(f, &f->policy, NOW + 336 * DAY_S, &r);
	assert_false(r.new_ca);
	assert_true(r.new_serving);
	assert_false(r.bundle_changed);
	assert_non_null(
	    strstr(r.serving_reason, "expires at 2027-01-01T00:00:00Z, within 30 days"));
	/* Same CA, byte for byte; a new certificate. */
	assert_string_equal(r.bundle.pem, ca_before);
	assert_string_equal(r.ca_key.pem, key_before);
	assert_string_not_equal(r.tls_crt.pem, crt_before);
	assert_int_equal(r.serving_not_after, NOW + (336 + 365) * DAY_S);
	store_save(&f->st, &r);
	pk_renew_result_free(&r);
	assert_int_equal(verify_stored(&f->st, NOW + 337 * DAY_S), X509_V_OK);

	/* A window wider than the lifetime re-issues on every run. */
	struct pk_renew_policy p = f->policy;
	p.renew_before_days = 400;
	plan_ok(f, &p, NOW + 337 * DAY_S, &r);
	assert_false(r.new_ca);
	assert_true(r.new_serving);
	pk_renew_result_free(&r);

	/* An expired certificate is re-issued too. */
	plan_ok(f, &f->policy, NOW + (336 + 366) * DAY_S, &r);
	assert_true(r.new_serving);
	pk_renew_result_free(&r);
	free(ca_before);
	free(key_before);
	free(crt_before);
}

static void test_renew_on_names_flag_and_key_type(void **state)
{
	struct fixture *f = *state;
	first_run(f);
	struct pk_err err = {{0}};
	struct pk_renew_result r;

	/* A name more. */
	struct pk_san more;
	pk_san_init(&more);
	for (size_t i = 0; i < f->names.ndns; i++)
		assert_int_equal(pk_san_add_dns(&more, f->names.dns[i], &err), PK_OK);
	assert_int_equal(pk_san_add_ip(&more, "127.0.0.1", &err), PK_OK);
	assert_int_equal(pk_san_add_dns(&more, "webhook.example.com", &err), PK_OK);
	struct pk_renew_policy p = f->policy;
	p.names = &more;
	plan_ok(f, &p, NOW + DAY_S, &r);
	assert_false(r.new_ca);
	assert_true(r.new_serving);
	assert_string_equal(r.serving_reason, "its names differ: missing DNS:webhook.example.com");
	pk_renew_result_free(&r);

	/* A name less. */
	struct pk_san less;
	pk_san_init(&less);
	assert_int_equal(pk_san_add_ip(&less, "127.0.0.1", &err), PK_OK);
	p.names = &less;
	plan_ok(f, &p, NOW + DAY_S, &r);
	assert_true(r.new_serving);
	assert_non_null(strstr(r.serving_reason, "extra DNS:poolkeeper-webhook"));
	pk_renew_result_free(&r);

	/* --renew: a new pair under the same CA. */
	p = f->policy;
	p.renew = true;
	plan_ok(f, &p, NOW + DAY_S, &r);
	assert_false(r.new_ca);
	assert_true(r.new_serving);
	assert_string_equal(r.serving_reason, "--renew");
	assert_true(pk_renew_same(&r.bundle, f->st.v[0], f->st.len[0]));
	assert_true(pk_renew_same(&r.ca_key, f->st.v[1], f->st.len[1]));
	assert_false(pk_renew_same(&r.tls_key, f->st.v[3], f->st.len[3]));
	store_save(&f->st, &r);
	pk_renew_result_free(&r);
	assert_int_equal(verify_stored(&f->st, NOW + DAY_S), X509_V_OK);

	/* Another key type. */
	p = f->policy;
	p.key_type = PK_PKI_ECDSA_P384;
	plan_ok(f, &p, NOW + DAY_S, &r);
	assert_false(r.new_ca);
	assert_true(r.new_serving);
	assert_string_equal(r.serving_reason, "its key is not ecdsa-p384");
	pk_renew_result_free(&r);
	pk_san_free(&more);
	pk_san_free(&less);
}

static void test_ca_rotation(void **state)
{
	struct fixture *f = *state;
	first_run(f);
	char *old_bundle = strdup(f->st.v[0]);

	/* 80 days before the CA expires: within its 90-day window. */
	time_t t = NOW + (3650 - 80) * DAY_S;
	/* Keep the serving pair fresh up to then, so only the CA is due. */
	struct pk_renew_policy renew = f->policy;
	renew.renew = true;
	struct pk_renew_result r;
	plan_ok(f, &renew, t - 100 * DAY_S, &r);
	assert_false(r.new_ca);
	store_save(&f->st, &r);
	pk_renew_result_free(&r);
	struct store before = {0};
	for (int i = 0; i < 4; i++)
		store_set(&before, i, f->st.v[i], f->st.len[i]);

	plan_ok(f, &f->policy, t, &r);
	assert_true(r.new_ca);
	assert_true(r.new_serving);
	assert_true(r.bundle_changed);
	assert_int_equal(r.bundle_count, 2);
	assert_non_null(
	    strstr(r.ca_reason, "the CA expires at 2035-12-30T00:00:00Z, within 90 days"));
	assert_string_equal(r.serving_reason, "a new CA");
	/* New CA first, the old one after it, byte for byte. */
	assert_non_null(strstr(r.bundle.pem, old_bundle));
	assert_true(strncmp(r.bundle.pem, old_bundle, strlen(old_bundle)) != 0);
	assert_true(
	    pk_renew_same(&r.ca_crt, r.bundle.pem, strlen(r.bundle.pem) - strlen(old_bundle)));
	store_save(&f->st, &r);
	pk_renew_result_free(&r);
	/* The new pair verifies against the bundle, and so does the pair a replica still serves. */
	assert_int_equal(verify_stored(&f->st, t + 60), X509_V_OK);
	store_set(&before, 0, f->st.v[0], f->st.len[0]);
	assert_int_equal(verify_stored(&before, t + 60), X509_V_OK);

	/* Reruns keep it all. */
	plan_ok(f, &f->policy, t + DAY_S, &r);
	assert_false(r.new_ca);
	assert_false(r.new_serving);
	assert_true(unchanged(&f->st, &r));
	pk_renew_result_free(&r);

	/* Once the old CA has expired it leaves the bundle; nothing else changes. */
	plan_ok(f, &f->policy, NOW + 3651 * DAY_S, &r);
	assert_false(r.new_ca);
	assert_false(r.new_serving);
	assert_true(r.bundle_changed);
	assert_int_equal(r.bundle_count, 1);
	assert_true(pk_renew_same(&r.bundle, r.ca_crt.pem, r.ca_crt.len));
	store_save(&f->st, &r);
	pk_renew_result_free(&r);
	assert_int_equal(verify_stored(&f->st, NOW + 3651 * DAY_S), X509_V_OK);

	/* --renew-ca rotates a CA that is not due. */
	struct pk_renew_policy p = f->policy;
	p.renew_ca = true;
	plan_ok(f, &p, NOW + 3652 * DAY_S, &r);
	assert_true(r.new_ca);
	assert_true(r.new_serving);
	assert_int_equal(r.bundle_count, 2);
	assert_string_equal(r.ca_reason, "--renew-ca");
	pk_renew_result_free(&r);
	store_free(&before);
	free(old_bundle);
}

/* The serving window widens the CA's: a CA due within renew_before_days rotates. */
static void test_ca_window_widened(void **state)
{
	struct fixture *f = *state;
	first_run(f);
	struct pk_renew_policy p = f->policy;
	p.ca_renew_before_days = 0;
	struct pk_renew_result r;
	plan_ok(f, &p, NOW + (3650 - 20) * DAY_S, &r);
	assert_true(r.new_ca);
	pk_renew_result_free(&r);
}

/* A serving certificate never outlives its CA. */
static void test_clamped_to_ca(void **state)
{
	struct fixture *f = *state;
	struct pk_renew_policy p = f->policy;
	p.ca_validity_days = 120;
	p.ca_renew_before_days = 10;
	struct pk_renew_result r;
	plan_ok(f, &p, NOW, &r);
	assert_int_equal(r.serving_not_after, r.ca_not_after);
	assert_int_equal(r.ca_not_after, NOW + 120 * DAY_S);
	store_save(&f->st, &r);
	pk_renew_result_free(&r);
	/* And it stays kept while the CA is not due. */
	plan_ok(f, &p, NOW + 50 * DAY_S, &r);
	assert_false(r.new_serving);
	assert_false(r.new_ca);
	pk_renew_result_free(&r);
}

/* A pair signed by an older CA of the bundle (a run that stored the CA, then failed). */
static void test_older_ca_in_bundle(void **state)
{
	struct fixture *f = *state;
	first_run(f);
	struct pk_renew_policy p = f->policy;
	p.renew_ca = true;
	struct pk_renew_result r;
	plan_ok(f, &p, NOW + DAY_S, &r);
	/* Store the new CA and bundle, keep the old pair. */
	store_set(&f->st, 0, r.bundle.pem, r.bundle.len);
	store_set(&f->st, 1, r.ca_key.pem, r.ca_key.len);
	pk_renew_result_free(&r);
	assert_int_equal(verify_stored(&f->st, NOW + DAY_S), X509_V_OK);
	plan_ok(f, &f->policy, NOW + DAY_S, &r);
	assert_false(r.new_ca);
	assert_true(r.new_serving);
	assert_string_equal(r.serving_reason, "signed by an older CA of the bundle");
	assert_false(r.bundle_changed);
	pk_renew_result_free(&r);
}

/* Material that cannot be used: an error naming it, unless --renew. */
/* A first run of another fixture with f's names: another CA and its pair. */
static void another_run(const struct fixture *f, struct fixture *other)
{
	other->policy = f->policy;
	other->policy.names = &f->names;
	struct pk_renew_result r;
	plan_ok(other, &other->policy, NOW, &r);
	store_save(&other->st, &r);
	pk_renew_result_free(&r);
}

/* A first run, stored, and a copy of it in *good; *renew is the policy with --renew. */
static void refusals_start(struct fixture *f, struct store *good, struct pk_renew_policy *renew)
{
	first_run(f);
	for (int i = 0; i < 4; i++)
		store_set(good, i, f->st.v[i], f->st.len[i]);
	*renew = f->policy;
	renew->renew = true;
}

/* Refused serving material, each named, and what --renew makes of it. From the first run
 * (good, in f) and back to it. */
static void refused_serving(struct fixture *f, const struct store *good,
                            const struct pk_renew_policy *renew, const struct fixture *other)
{
	struct pk_renew_result r;
	const char *msg;

	/* A bundle that does not parse. */
	store_set(&f->st, 0, "garbage", 7);
	msg = plan_fails(f, &f->policy, NOW);
	assert_non_null(strstr(msg, "S/ca.crt: "));
	plan_ok(f, renew, NOW, &r);
	assert_true(r.new_ca);
	assert_true(r.new_serving);
	assert_non_null(strstr(r.ca_reason, "the stored CA cannot be used (--renew): S/ca.crt"));
	assert_int_equal(r.bundle_count, 1);
	pk_renew_result_free(&r);
	store_set(&f->st, 0, good->v[0], good->len[0]);

	/* A serving key that does not parse: --renew re-issues under the same CA. */
	store_set(&f->st, 3, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", 58);
	msg = plan_fails(f, &f->policy, NOW);
	assert_non_null(strstr(msg, "S/tls.key: "));
	plan_ok(f, renew, NOW, &r);
	assert_false(r.new_ca);
	assert_true(r.new_serving);
	assert_true(pk_renew_same(&r.bundle, good->v[0], good->len[0]));
	pk_renew_result_free(&r);
	store_set(&f->st, 3, good->v[3], good->len[3]);

	/* A pair from a CA that is not in the bundle. */
	store_set(&f->st, 2, other->st.v[2], other->st.len[2]);
	store_set(&f->st, 3, other->st.v[3], other->st.len[3]);
	msg = plan_fails(f, &f->policy, NOW);
	assert_non_null(strstr(msg, "S/tls.crt was not signed by any CA in S/ca.crt"));
	plan_ok(f, renew, NOW, &r);
	assert_false(r.new_ca);
	assert_true(r.new_serving);
	pk_renew_result_free(&r);

	/* A key that is not the certificate's. */
	store_set(&f->st, 2, good->v[2], good->len[2]);
	msg = plan_fails(f, &f->policy, NOW);
	assert_non_null(strstr(msg, "S/tls.key does not match S/tls.crt"));
	store_set(&f->st, 3, good->v[3], good->len[3]);

	/* Half a pair. */
	store_set(&f->st, 3, NULL, 0);
	msg = plan_fails(f, &f->policy, NOW);
	assert_non_null(strstr(msg, "S/tls.crt is there but S/tls.key is missing"));
	store_set(&f->st, 3, good->v[3], good->len[3]);
}

/* Refused CA material, each named, and what --renew makes of it. */
static void refused_ca(struct fixture *f, const struct store *good,
                       const struct pk_renew_policy *renew, const struct fixture *other)
{
	struct pk_renew_result r;
	const char *msg;

	/* A bundle without its key, and a key without its certificate. */
	store_set(&f->st, 1, NULL, 0);
	msg = plan_fails(f, &f->policy, NOW);
	assert_non_null(strstr(msg, "S/ca.crt is there but S/ca.key is missing"));
	store_set(&f->st, 1, other->st.v[1], other->st.len[1]);
	msg = plan_fails(f, &f->policy, NOW);
	assert_non_null(strstr(msg, "S/ca.key matches no certificate in S/ca.crt"));
	store_set(&f->st, 1, good->v[1], good->len[1]);

	/* A pair with no CA at all: not issued here. */
	store_set(&f->st, 0, NULL, 0);
	store_set(&f->st, 1, NULL, 0);
	msg = plan_fails(f, &f->policy, NOW);
	assert_non_null(strstr(msg, "it was not issued here"));
	plan_ok(f, renew, NOW, &r);
	assert_true(r.new_ca);
	assert_true(r.new_serving);
	pk_renew_result_free(&r);

	/* A "CA" that is a serving certificate. */
	store_set(&f->st, 0, good->v[2], good->len[2]);
	store_set(&f->st, 1, good->v[3], good->len[3]);
	store_set(&f->st, 2, NULL, 0);
	store_set(&f->st, 3, NULL, 0);
	msg = plan_fails(f, &f->policy, NOW);
	assert_non_null(strstr(msg, "is not a CA certificate"));
}

static void test_refused_material(void **state)
{
	struct fixture *f = *state;
	struct store good = {0};
	struct pk_renew_policy renew;
	refusals_start(f, &good, &renew);
	struct fixture other = {0};
	another_run(f, &other);
	refused_serving(f, &good, &renew, &other);
	refused_ca(f, &good, &renew, &other);
	store_free(&other.st);
	store_free(&good);
}

/* A CA certificate for `key` signed by another CA: not a root. */
static char *intermediate_pem(EVP_PKEY *key, size_t *len)
{
	struct pk_err err = {{0}};
	EVP_PKEY *root_key = NULL;
	X509 *root = NULL;
	assert_int_equal(pk_pki_new_key(PK_PKI_ECDSA_P256, &root_key, &err), PK_OK);
	assert_int_equal(pk_pki_make_ca(root_key, NOW, NOW + 3650 * DAY_S, &root, &err), PK_OK);
	X509 *x = X509_new();
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 2);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	                           (const unsigned char *)"intermediate", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(root));
	ASN1_TIME_set(X509_getm_notBefore(x), NOW - 60);
	ASN1_TIME_set(X509_getm_notAfter(x), NOW + 3650 * DAY_S);
	X509_set_pubkey(x, key);
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, root, x, NULL, NULL, 0);
	X509_EXTENSION *bc =
	    X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, "critical,CA:TRUE");
	X509_add_ext(x, bc, -1);
	X509_EXTENSION_free(bc);
	assert_true(X509_sign(x, root_key, EVP_sha256()) > 0);
	char *pem = NULL;
	assert_int_equal(pk_pki_cert_pem(x, &pem, len, &err), PK_OK);
	X509_free(x);
	X509_free(root);
	EVP_PKEY_free(root_key);
	return pem;
}

/* A CA that is not a root, and one not valid yet. */
static void test_ca_profile(void **state)
{
	struct fixture *f = *state;
	struct pk_err err = {{0}};
	EVP_PKEY *key = NULL;
	assert_int_equal(pk_pki_new_key(PK_PKI_ECDSA_P256, &key, &err), PK_OK);
	size_t cl = 0, kl = 0;
	char *crt = intermediate_pem(key, &cl);
	char *kp = NULL;
	assert_int_equal(pk_pki_key_pem(key, &kp, &kl, &err), PK_OK);
	store_set(&f->st, 0, crt, cl);
	store_set(&f->st, 1, kp, kl);
	const char *msg = plan_fails(f, &f->policy, NOW);
	assert_non_null(
	    strstr(msg, "S/ca.crt: the certificate of S/ca.key is not a self-signed CA"));
	struct pk_renew_policy renew = f->policy;
	renew.renew = true;
	struct pk_renew_result r;
	plan_ok(f, &renew, NOW, &r);
	assert_true(r.new_ca);
	assert_int_equal(r.bundle_count, 1); /* what could not be used is not carried */
	pk_renew_result_free(&r);
	free(crt);
	free(kp);
	EVP_PKEY_free(key);
	store_free(&f->st);

	/* A clock that went back: the CA is not valid yet, so a new one is made. */
	first_run(f);
	plan_ok(f, &f->policy, NOW - DAY_S, &r);
	assert_true(r.new_ca);
	assert_non_null(strstr(r.ca_reason, "the CA is not valid before 2025-12-31T23:55:00Z"));
	assert_true(r.new_serving);
	store_save(&f->st, &r);
	pk_renew_result_free(&r);
	assert_int_equal(verify_stored(&f->st, NOW - DAY_S), X509_V_OK);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(test_first_run_and_keep),
	    T(test_renew_near_expiry),
	    T(test_renew_on_names_flag_and_key_type),
	    T(test_ca_rotation),
	    T(test_ca_window_widened),
	    T(test_clamped_to_ca),
	    T(test_older_ca_in_bundle),
	    T(test_refused_material),
	    T(test_ca_profile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
