/*
 * conformance.c - the pure parts of `poolkeeper conformance`: the
 * --pool-ref syntax, the table of checks with the contract sentence each
 * tests, the judgement of one object, the lines printed and the verdict.
 * The run against a cluster is conformance_run.c.
 *
 * The sentences are quoted from the Cluster API book's IPAM contract
 * (docs/book/src/developer/providers/contracts/ipam.md, "IPAM Provider"),
 * from the IPAM API types (api/ipam/v1beta2/ipaddressclaim_types.go), and,
 * where the reference provider amended the book, from that amendment.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "conformance.h"
#include "json.h"
#include "parse.h"

#define BOOK "CAPI book, IPAM contract"

const struct pk_conf_check_def pk_conf_checks[PK_CONF_COUNT] = {
    [PK_CONF_ADDRESS_NAME] = {"address-name",
                              "an IPAddress named after the claim, its claimRef and poolRef "
                              "naming the claim and the pool",
                              BOOK " 5.1: \"It should have the same name as the claim.\""},
    [PK_CONF_CLAIM_OWNER] = {"owner-claim",
                             "the IPAddress's owner reference to the claim has controller and "
                             "blockOwnerDeletion",
                             BOOK " 5.2: \"It must have a owner reference with `controller: true` "
                                  "and `blockOwnerDeletion: true` to the Claim\""},
    [PK_CONF_POOL_OWNER] = {"owner-pool",
                            "the IPAddress's owner reference to the pool has blockOwnerDeletion "
                            "and not controller",
                            BOOK " 5.3: \"It must have a owner reference with `controller: false` "
                                 "and `blockOwnerDeletion: true` to the referenced Pool\""},
    [PK_CONF_CLAIM_FINALIZER] = {"claim-finalizer", "a finalizer of the provider on the claim",
                                 BOOK " 3: \"Add any required provider-specific finalziers (you "
                                      "probably need one)\""},
    [PK_CONF_ADDRESS_FINALIZER] = {"address-finalizer",
                                   "a finalizer on the IPAddress that protects it",
                                   BOOK " 5.4: \"It should have a Finalizer that prevents "
                                        "accidental deletion\""},
    [PK_CONF_ADDRESS_REF] = {"address-ref", "status.addressRef names the IPAddress",
                             BOOK " 6: \"Set the `status.addressRef` on the IPAddressClaim to the "
                                  "created IPAddress\""},
    [PK_CONF_READY] = {"ready", "the bound claim's Ready condition is True",
                       "api/ipam/v1beta2: \"IPAddressClaimReadyCondition is true if the "
                       "IPAddressClaim allocation succeeded.\""},
    [PK_CONF_READY_REASON] = {"ready-reason",
                              "a claim on a pool that does not exist is Ready=False, reason "
                              "PoolNotReady",
                              "api/ipam/v1beta2: \"IPAddressClaimReadyPoolNotReadyReason is the "
                              "reason used when the referenced IP pool is not ready.\""},
    [PK_CONF_PAUSED] = {"paused", "nothing allocated to a claim while its Cluster is paused",
                        BOOK " 2.4: \"If the referenced cluster has `spec.paused` set or a "
                             "`cluster.x-k8s.io/paused` annotation, skip reconciliation\""},
    [PK_CONF_UNPAUSED] = {"unpaused", "the claim is allocated once its Cluster is unpaused",
                          BOOK " 2.2: \"If the paused field is empty and the "
                               "`cluster.x-k8s.io/paused` annotation is not present, "
                               "reconciliation can continue.\""},
    [PK_CONF_RELEASE] = {"release",
                         "a deleted claim's IPAddress is deleted and the claim's finalizer "
                         "removed",
                         BOOK ", Deleted IPAddressClaim 3-4: \"Delete the IPAddress object\", "
                              "\"Remove the Finalizer from the claim\""},
    [PK_CONF_CLUSTER_GONE] = {"cluster-gone",
                              "the deletion of a claim whose Cluster is gone is not blocked",
                              BOOK " 2.3 \"If the referenced cluster is not found, abort "
                                   "reconciliation.\", as the reference provider amended it "
                                   "(\"Cluster paused detection blocks garbage collection of "
                                   "IPAddressClaims on cluster deletion\"): a claim being "
                                   "deleted proceeds"},
    [PK_CONF_NO_DUPLICATES] = {"no-duplicates",
                               "a burst of claims gets addresses no other IPAddress of the pool "
                               "holds",
                               BOOK " 4: \"Allocate an IP address for the claim\": an address "
                                    "held by another IPAddress of the pool is not free"},
};

void pk_conf_set(struct pk_conf_result *r, enum pk_conf_verdict v, const char *fmt, ...)
{
	va_list ap;
	r->verdict = v;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
}

void pk_conf_print(FILE *f, enum pk_conf_check c, const struct pk_conf_result *r)
{
	static const char *const words[] = {[PK_CONF_NOT_RUN] = "skip",
	                                    [PK_CONF_PASS] = "pass",
	                                    [PK_CONF_FAIL] = "fail",
	                                    [PK_CONF_SKIP] = "skip"};
	const struct pk_conf_check_def *d = &pk_conf_checks[c];
	const char *detail = r->verdict == PK_CONF_NOT_RUN ? "not run" : r->detail;
	fprintf(f, "%s %s: %s%s%s [%s]\n", words[r->verdict], d->id, d->what, *detail ? ": " : "",
	        detail, d->cites);
}

int pk_conf_exit_code(const struct pk_conf_result *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].verdict == PK_CONF_FAIL)
			return PK_CONF_EXIT_FAIL;
	return 0;
}

/* Copies the part of s up to '/' (or the end) into buf; returns what follows it, or NULL. */
static const char *take_part(const char *s, char *buf, size_t len, bool *fits)
{
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	*fits = n < len;
	if (*fits) {
		memcpy(buf, s, n);
		buf[n] = '\0';
	}
	return slash ? slash + 1 : NULL;
}

static int check_kind(const char *k, struct pk_err *err)
{
	if (k[0] < 'A' || k[0] > 'Z')
		return pk_err_set(err, PK_ERR_INVALID,
		                  "KIND \"%s\" must start with an upper-case letter", k);
	for (const char *p = k; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9')))
			return pk_err_set(err, PK_ERR_INVALID,
			                  "KIND \"%s\" may hold only letters and digits", k);
	return PK_OK;
}

int pk_conf_parse_pool_ref(const char *s, struct pk_conf_pool_ref *out, struct pk_err *err)
{
	static const char form[] = "GROUP/KIND/NAME, e.g. " PK_POOL_GROUP "/" PK_POOL_KIND "/nodes";
	bool f1 = false, f2 = false, f3 = false;
	const char *rest = take_part(s, out->group, sizeof(out->group), &f1);
	const char *name = rest ? take_part(rest, out->kind, sizeof(out->kind), &f2) : NULL;
	if (name == NULL || strchr(name, '/') != NULL)
		return pk_err_set(err, PK_ERR_INVALID, "--pool-ref \"%s\" is not %s", s, form);
	(void)take_part(name, out->name, sizeof(out->name), &f3);
	if (!f1 || !f2 || !f3)
		return pk_err_set(err, PK_ERR_INVALID, "--pool-ref \"%s\": a part is too long", s);
	struct pk_err sub = {{0}};
	if (strchr(out->group, '.') == NULL || pk_parse_dns_name(out->group, true, &sub) != PK_OK)
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "--pool-ref: GROUP \"%s\" is not an API group (a DNS subdomain with a "
		    "dot, as a CRD's)",
		    out->group);
	if (check_kind(out->kind, &sub) != PK_OK)
		return pk_err_set(err, PK_ERR_INVALID, "--pool-ref: %s", sub.msg);
	if (pk_parse_dns_name(out->name, true, &sub) != PK_OK)
		return pk_err_set(err, PK_ERR_INVALID, "--pool-ref: NAME: %s", sub.msg);
	return PK_OK;
}

/* ---- judging objects ---- */

const char *pk_conf_str_at(const json_t *obj, const char *a, const char *b)
{
	const json_t *v = json_object_get(obj, a);
	return b ? pk_json_cstr_at(v, b) : pk_json_cstr(v);
}

const char *pk_conf_or_none(const char *s)
{
	return s ? s : "(none)";
}

enum pk_conf_verdict pk_conf_judge_address(const json_t *addr, const char *claim,
                                           const struct pk_conf_pool_ref *pool,
                                           struct pk_conf_result *r)
{
	const json_t *spec = json_object_get(addr, "spec");
	const json_t *pr = json_object_get(spec, "poolRef");
	const char *name = pk_conf_str_at(addr, "metadata", "name");
	const char *cref = pk_conf_str_at(spec, "claimRef", "name");
	const char *g = pk_json_cstr_at(pr, "apiGroup"), *k = pk_json_cstr_at(pr, "kind"),
	           *n = pk_json_cstr_at(pr, "name");
	bool ok = name && !strcmp(name, claim) && cref && !strcmp(cref, claim) && g &&
	          !strcmp(g, pool->group) && k && !strcmp(k, pool->kind) && n &&
	          !strcmp(n, pool->name);
	pk_conf_set(r, ok ? PK_CONF_PASS : PK_CONF_FAIL,
	            "IPAddress %s: claimRef %s, poolRef %s/%s/%s, address %s",
	            pk_conf_or_none(name), pk_conf_or_none(cref), pk_conf_or_none(g),
	            pk_conf_or_none(k), pk_conf_or_none(n),
	            pk_conf_or_none(pk_conf_str_at(spec, "address", NULL)));
	return r->verdict;
}

enum pk_conf_verdict pk_conf_judge_owner(const json_t *addr, const char *uid, bool want_controller,
                                         struct pk_conf_result *r)
{
	const json_t *refs = json_object_get(json_object_get(addr, "metadata"), "ownerReferences");
	size_t i;
	const json_t *ref;
	json_array_foreach(refs, i, ref)
	{
		const char *u = pk_json_cstr_at(ref, "uid");
		if (u == NULL || uid == NULL || strcmp(u, uid) != 0)
			continue;
		bool ctl = json_is_true(json_object_get(ref, "controller"));
		bool bod = json_is_true(json_object_get(ref, "blockOwnerDeletion"));
		bool ok = bod && ctl == want_controller;
		pk_conf_set(r, ok ? PK_CONF_PASS : PK_CONF_FAIL,
		            "reference to %s %s: controller %s, blockOwnerDeletion %s",
		            pk_conf_or_none(pk_json_cstr_at(ref, "kind")),
		            pk_conf_or_none(pk_json_cstr_at(ref, "name")),
		            ctl ? "true" : "not true", bod ? "true" : "not true");
		return r->verdict;
	}
	pk_conf_set(r, PK_CONF_FAIL, "no owner reference with uid %s (%zu references)",
	            pk_conf_or_none(uid), json_array_size(refs));
	return r->verdict;
}

enum pk_conf_verdict pk_conf_judge_finalizer(const json_t *obj, struct pk_conf_result *r)
{
	const json_t *fin = json_object_get(json_object_get(obj, "metadata"), "finalizers");
	const char *first = pk_json_cstr(json_array_get(fin, 0));
	if (first == NULL)
		pk_conf_set(r, PK_CONF_FAIL, "no finalizer");
	else
		pk_conf_set(r, PK_CONF_PASS, "%s%s", first,
		            json_array_size(fin) > 1 ? ", ..." : "");
	return r->verdict;
}

enum pk_conf_verdict pk_conf_judge_address_ref(const json_t *claim, const char *name,
                                               struct pk_conf_result *r)
{
	const char *got = pk_conf_str_at(json_object_get(claim, "status"), "addressRef", "name");
	pk_conf_set(r, got && !strcmp(got, name) ? PK_CONF_PASS : PK_CONF_FAIL,
	            "status.addressRef.name %s", pk_conf_or_none(got));
	return r->verdict;
}

/* The claim's condition of type Ready, or NULL. */
const json_t *pk_conf_ready_condition(const json_t *claim)
{
	const json_t *conds = json_object_get(json_object_get(claim, "status"), "conditions");
	size_t i;
	const json_t *c;
	json_array_foreach(conds, i, c)
	{
		const char *t = pk_json_cstr_at(c, "type");
		if (t && !strcmp(t, "Ready"))
			return c;
	}
	return NULL;
}

enum pk_conf_verdict pk_conf_judge_ready(const json_t *claim, const char *status,
                                         const char *reason, struct pk_conf_result *r)
{
	const json_t *c = pk_conf_ready_condition(claim);
	if (c == NULL) {
		pk_conf_set(r, PK_CONF_FAIL, "no Ready condition");
		return r->verdict;
	}
	const char *s = pk_json_cstr_at(c, "status"), *why = pk_json_cstr_at(c, "reason");
	bool ok = s && !strcmp(s, status) && (reason == NULL || (why && !strcmp(why, reason)));
	pk_conf_set(r, ok ? PK_CONF_PASS : PK_CONF_FAIL, "Ready=%s, reason %s: %s",
	            pk_conf_or_none(s), pk_conf_or_none(why),
	            pk_conf_or_none(pk_json_cstr_at(c, "message")));
	return r->verdict;
}

static bool in_pool(const json_t *addr, const struct pk_conf_pool_ref *pool)
{
	const json_t *pr = json_object_get(json_object_get(addr, "spec"), "poolRef");
	const char *g = pk_json_cstr_at(pr, "apiGroup"), *k = pk_json_cstr_at(pr, "kind"),
	           *n = pk_json_cstr_at(pr, "name");
	return g && k && n && !strcmp(g, pool->group) && !strcmp(k, pool->kind) &&
	       !strcmp(n, pool->name);
}

enum pk_conf_verdict pk_conf_judge_unique(const json_t *items, const struct pk_conf_pool_ref *pool,
                                          struct pk_conf_result *r)
{
	size_t i, j, held = 0;
	const json_t *a, *b;
	json_array_foreach(items, i, a)
	{
		if (!in_pool(a, pool))
			continue;
		held++;
		const char *x = pk_conf_str_at(json_object_get(a, "spec"), "address", NULL);
		for (j = i + 1; x != NULL && j < json_array_size(items); j++) {
			b = json_array_get(items, j);
			const char *y = pk_conf_str_at(json_object_get(b, "spec"), "address", NULL);
			if (in_pool(b, pool) && y && !strcmp(x, y)) {
				pk_conf_set(
				    r, PK_CONF_FAIL, "%s is held by IPAddress %s/%s and %s/%s", x,
				    pk_conf_or_none(pk_conf_str_at(a, "metadata", "namespace")),
				    pk_conf_or_none(pk_conf_str_at(a, "metadata", "name")),
				    pk_conf_or_none(pk_conf_str_at(b, "metadata", "namespace")),
				    pk_conf_or_none(pk_conf_str_at(b, "metadata", "name")));
				return r->verdict;
			}
		}
	}
	pk_conf_set(r, PK_CONF_PASS, "%zu IPAddresses of the pool, each address once", held);
	return r->verdict;
}
