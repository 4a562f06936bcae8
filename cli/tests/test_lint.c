/* test_lint.c - dispatch by kind, pool summaries, overlaps, duplicates and exit codes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admission.h"
#include "base64.h"
#include "lint.h"
/* webhook/tests: the mutating endpoint's patches, applied as the apiserver does */
#include "json_patch.h"

#define POOL(kind, ns, name, addrs, prefix)                                                     \
	"apiVersion: " PK_POOL_API_VERSION "\nkind: " kind "\nmetadata:\n  name: " name "\n" ns \
	"spec:\n  addresses: " addrs "\n  prefix: " prefix "\n"

#define CLAIM(version, extra_meta, spec)                                                       \
	"apiVersion: " PK_CAPI_IPAM_GROUP "/" version "\nkind: " PK_CLAIM_KIND "\nmetadata:\n" \
	"  name: c1\n  namespace: default\n" extra_meta "  ownerReferences:\n"                 \
	"  - {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: Metal3Machine, "      \
	"name: m1, uid: u1, controller: true, blockOwnerDeletion: true}\nspec:\n" spec

#define POOL_REF "  poolRef: {apiGroup: " PK_POOL_GROUP ", kind: " PK_POOL_KIND ", name: p}\n"

/* Lints the given (source, text) pairs; NULL-terminated. */
static struct pk_lint *lint(const char *source, const char *text, ...)
{
	struct pk_lint *l = pk_lint_new();
	assert_non_null(l);
	va_list ap;
	va_start(ap, text);
	while (source != NULL) {
		assert_int_equal(pk_lint_add_buffer(l, text, strlen(text), source), PK_OK);
		source = va_arg(ap, const char *);
		if (source != NULL)
			text = va_arg(ap, const char *);
	}
	va_end(ap);
	assert_int_equal(pk_lint_run(l), PK_OK);
	return l;
}

static const struct pk_lint_object *obj(const struct pk_lint *l, size_t i)
{
	size_t n;
	const struct pk_lint_object *o = pk_lint_objects(l, &n);
	assert_true(i < n);
	return &o[i];
}

/* True when object i has a violation of `sev` whose "field: message" contains `want`. */
static bool has(const struct pk_lint *l, size_t i, enum pk_severity sev, const char *want)
{
	const struct pk_lint_object *o = obj(l, i);
	for (size_t k = 0; k < o->n_findings; k++) {
		char text[PK_FIELD_MAX + PK_MESSAGE_MAX + 4];
		if (o->findings[k].v.severity == sev &&
		    strstr(pk_violation_text(&o->findings[k].v, text, sizeof(text)), want) != NULL)
			return true;
	}
	return false;
}

static void test_clean_pools_have_summaries(void **state)
{
	(void)state;
	struct pk_lint *l = lint(
	    "v4.yaml",
	    POOL(PK_POOL_KIND, "  namespace: default\n", "p4", "[10.10.0.0/24]",
	         "24") "  gateway: "
	               "10.10.0.1\n",
	    "v6.yaml", POOL(PK_POOL_KIND, "", "p6", "[\"2001:db8::/64\"]", "64"), "r.yaml",
	    POOL(PK_GLOBAL_POOL_KIND, "", "g", "[192.168.1.10-192.168.1.19, 192.168.1.30]", "24"),
	    NULL);
	const struct pk_lint_object *o = obj(l, 0);
	assert_int_equal(o->status, PK_LINT_PASS);
	assert_non_null(o->pool);
	assert_int_equal(o->pool->family, PK_FAMILY_V4);
	assert_string_equal(o->pool->subnet, "10.10.0.0/24");
	assert_string_equal(o->pool->size, "253");
	assert_string_equal(o->pool->first, "10.10.0.2");
	assert_string_equal(o->pool->last, "10.10.0.254");
	assert_string_equal(o->origin, "v4.yaml:1");

	o = obj(l, 1);
	assert_int_equal(o->status, PK_LINT_PASS);
	assert_string_equal(o->pool->subnet, "2001:db8::/64");
	assert_string_equal(o->pool->size, "18446744073709551615");
	assert_string_equal(o->pool->first, "2001:db8::1");
	assert_string_equal(o->pool->last, "2001:db8::ffff:ffff:ffff:ffff");
	assert_null(o->namespace_);
	assert_string_equal(pk_lint_object_namespace(o), "default");

	o = obj(l, 2);
	assert_int_equal(o->status, PK_LINT_PASS);
	assert_string_equal(o->pool->size, "11");
	assert_string_equal(o->pool->subnet, "192.168.1.0/24");
	assert_null(pk_lint_object_namespace(o));
	char buf[128];
	assert_string_equal(pk_lint_describe_object(o, buf, sizeof(buf)), "GlobalIPPool g");
	assert_int_equal(pk_lint_exit_code(l, true), 0);
	pk_lint_free(l);
}

static void test_pool_denials(void **state)
{
	(void)state;
	struct pk_lint *l = lint("bad.yaml",
	                         POOL(PK_POOL_KIND, "", "hb", "[10.0.0.1/24]", "24") "---\n" POOL(
	                             PK_POOL_KIND, "", "ps", "[10.0.1.0/24]",
	                             "\"24\"") "---\n"
	                                       "apiVersion: " PK_POOL_API_VERSION "\n"
	                                       "kind: " PK_POOL_KIND "\nspec:\n  "
	                                       "addresses: [10.0.2.0/24]\n",
	                         NULL);
	assert_int_equal(obj(l, 0)->status, PK_LINT_DENY);
	assert_true(has(l, 0, PK_SEV_DENY, "did you mean 10.0.0.0/24"));
	assert_null(obj(l, 0)->pool);
	assert_true(has(l, 1, PK_SEV_DENY, "spec.prefix"));
	assert_true(has(l, 2, PK_SEV_DENY, "metadata.name: required"));
	assert_string_equal(obj(l, 1)->origin, "bad.yaml:9 (document 2)");
	assert_int_equal(pk_lint_exit_code(l, false), 1);
	struct pk_lint_totals t = pk_lint_get_totals(l);
	assert_int_equal(t.denied, 3);
	assert_int_equal(t.checked, 3);
	assert_int_equal(t.files, 1);
	pk_lint_free(l);
}

static void test_dispatch_by_kind(void **state)
{
	(void)state;
	struct pk_lint *l = lint(
	    "mixed.yaml",
	    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n"
	    "apiVersion: " PK_CAPI_IPAM_GROUP "/v1alpha1\nkind: " PK_CLAIM_KIND
	    "\nmetadata: {name: "
	    "y}\n---\n"
	    "apiVersion: " PK_POOL_API_VERSION "\nkind: IPPoolSet\nmetadata: {name: z}\n---\n"
	    "kind: " PK_POOL_KIND "\nmetadata: {name: w}\n---\n"
	    "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: "
	    "{name: s}\n",
	    NULL);
	assert_int_equal(obj(l, 0)->status, PK_LINT_SKIPPED);
	assert_int_equal(obj(l, 0)->n_findings, 0);
	assert_non_null(obj(l, 0)->note);
	/* a v1alpha1 claim is checked, as the webhook reviews it converted: with no spec
	 * it names no pool, so it is another provider's, and --foreign-claims=warn says so */
	assert_int_equal(obj(l, 1)->status, PK_LINT_WARN);
	assert_true(has(l, 1, PK_SEV_WARN, "spec: would be denied: must be an object"));
	assert_int_equal(obj(l, 2)->status, PK_LINT_DENY);
	assert_true(has(l, 2, PK_SEV_DENY, "not a kind of " PK_POOL_GROUP));
	assert_true(has(l, 3, PK_SEV_DENY, "apiVersion: required"));
	assert_int_equal(obj(l, 4)->status, PK_LINT_SKIPPED);
	assert_int_equal(obj(l, 4)->item, 1);
	assert_string_equal(obj(l, 4)->kind, "Secret");
	struct pk_lint_totals t = pk_lint_get_totals(l);
	assert_int_equal(t.objects, 5);
	assert_int_equal(t.skipped, 2);
	pk_lint_free(l);
}

#define OBJ(api, kind, rest) \
	"apiVersion: " api "\nkind: " kind "\nmetadata: {name: x, namespace: d}\n" rest

/*
 * Versions and groups: every apiVersion the API server would refuse for
 * the IPAM kinds is an error; v1alpha1, which Cluster API still serves,
 * is checked; other groups' kinds of the same names are not poolkeeper's.
 */
static void test_capi_versions(void **state)
{
	(void)state;
	struct pk_lint *l = lint(
	    "versions.yaml",
	    /* 0: CAPM3's v1alpha1 claim (baremetal/metal3data_manager.go): the cluster in the label
	     */
	    "apiVersion: " PK_CAPI_IPAM_GROUP "/v1alpha1\nkind: " PK_CLAIM_KIND "\nmetadata:\n"
	    "  name: m3-data-pool\n  namespace: d\n  labels: {" PK_CLUSTER_NAME_LABEL ": w1}\n"
	    "  ownerReferences:\n  - {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: "
	    "Metal3Data, name: m3-data, uid: u1, controller: true}\nspec:\n" POOL_REF "---\n"
	    /* 1: v1alpha1 has no spec.clusterName */
	    OBJ(PK_CAPI_IPAM_GROUP "/v1alpha1", PK_CLAIM_KIND,
	        "spec: {clusterName: w1, poolRef: {apiGroup: " PK_POOL_GROUP ", kind: IPPool, "
	        "name: p}}\n") "---\n"
	    /* 2: a v1alpha1 IPAddress gets the IPAddress rules */
	    OBJ(PK_CAPI_IPAM_GROUP "/v1alpha1", PK_ADDRESS_KIND,
	        "spec: {address: 10.0.0.300, prefix: 24, claimRef: {name: x}, poolRef: "
	        "{apiGroup: " PK_POOL_GROUP ", kind: IPPool, name: p}}\n") "---\n"
	    /* 3..5: a version typo, a bare group, a pool in the wrong group */
	    OBJ(PK_CAPI_IPAM_GROUP "/v1betal", PK_CLAIM_KIND, "") "---\n" OBJ(
	        PK_POOL_GROUP, PK_POOL_KIND, "") "---\n" OBJ(PK_CAPI_IPAM_GROUP "/v1beta1",
	                                                     PK_POOL_KIND, "") "---\n"
	    /* 6: a kind the group does not have */
	    OBJ(PK_CAPI_IPAM_GROUP "/v1beta2", "IPAddressPool", "") "---\n"
	    /* 7, 8: other projects' IPPools are theirs */
	    OBJ("crd.projectcalico.org/v1", PK_POOL_KIND,
	        "spec: {cidr: 10.0.0.0/16}\n") "---\n" OBJ("ipam.metal3.io/v1alpha1", PK_POOL_KIND,
	                                                   "") "---\n"
	                                                       /* 9: a misspelled metadata field,
	                                                          refused by the API server */
	                                                       "apiVersion: " PK_POOL_API_VERSION
	                                                       "\nkind: " PK_POOL_KIND
	                                                       "\nmetadata: {name: p, "
	                                                       "namespace: d, lables: {a: "
	                                                       "b}}\nspec: {addresses: "
	                                                       "[10.0.0.0/24], prefix: 24}\n",
	    NULL);
	assert_int_equal(obj(l, 0)->status, PK_LINT_WARN);
	assert_true(has(l, 0, PK_SEV_WARN, "set blockOwnerDeletion: true"));
	assert_false(has(l, 0, PK_SEV_DENY, ""));
	assert_int_equal(obj(l, 1)->status, PK_LINT_DENY);
	assert_true(has(l, 1, PK_SEV_DENY, "spec.clusterName: unknown field"));
	assert_int_equal(obj(l, 2)->status, PK_LINT_DENY);
	assert_true(has(l, 2, PK_SEV_DENY, "spec.address"));
	assert_true(
	    has(l, 3, PK_SEV_DENY, "apiVersion: " PK_CAPI_IPAM_GROUP "/v1betal is not served"));
	assert_true(has(l, 4, PK_SEV_DENY,
	                "a group without its version; did you mean \"" PK_POOL_API_VERSION "\""));
	assert_true(has(l, 5, PK_SEV_DENY, "poolkeeper's IPPool is " PK_POOL_API_VERSION));
	assert_true(has(l, 6, PK_SEV_DENY, "kind: \"IPAddressPool\" is not a kind of"));
	assert_int_equal(obj(l, 7)->status, PK_LINT_SKIPPED);
	assert_int_equal(obj(l, 8)->status, PK_LINT_SKIPPED);
	assert_int_equal(obj(l, 9)->status, PK_LINT_DENY);
	assert_true(has(l, 9, PK_SEV_DENY, "metadata.lables: unknown field"));
	pk_lint_free(l);
}

/* A finding's line and column after comments in other scripts than Latin: bytes are not
 * characters. */
static void test_positions_after_multibyte(void **state)
{
	(void)state;
	struct pk_lint *l =
	    lint("utf8.yaml",
	         "# \xC3\xA9quipe r\xC3\xA9seau \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80\n---\n"
	         "apiVersion: " PK_POOL_API_VERSION "\nkind: " PK_POOL_KIND "\nmetadata: {name: a, "
	         "namespace: d}\nspec: {addresses: [10.0.0.0/24], prefix: 24}\n---\n# \xC3\xBC\n"
	         "apiVersion: " PK_POOL_API_VERSION "\nkind: " PK_POOL_KIND "\nmetadata: {name: b, "
	         "namespace: d}\nspec: {addresses: [10.0.1.0/24], prefix: 24, gatway: 10.0.1.1}\n",
	         NULL);
	assert_int_equal(obj(l, 1)->n_findings, 1);
	assert_string_equal(obj(l, 1)->findings[0].v.field, "spec.gatway");
	assert_int_equal(obj(l, 1)->findings[0].line, 12);
	assert_int_equal(obj(l, 1)->findings[0].column, 46);
	pk_lint_free(l);
}

/* A field holding a NUL reads as missing, as the webhook's rules read it (json.h). */
static void test_nul_in_identity(void **state)
{
	(void)state;
	struct pk_lint *l = lint("nul.yaml",
	                         "apiVersion: " PK_POOL_API_VERSION "\nkind: " PK_POOL_KIND
	                         "\nmetadata: {name: \"a\\0b\"}\nspec: {addresses: "
	                         "[10.0.0.0/24], prefix: 24}\n---\n"
	                         "apiVersion: v1\nkind: \"ConfigMap\\0\"\nmetadata: {name: x}\n",
	                         NULL);
	assert_null(obj(l, 0)->name);
	assert_int_equal(obj(l, 0)->status, PK_LINT_DENY);
	assert_true(has(l, 0, PK_SEV_DENY, "metadata.name: required"));
	assert_null(obj(l, 1)->kind);
	assert_true(has(l, 1, PK_SEV_DENY, "kind: required"));
	pk_lint_free(l);
}

static void test_claims(void **state)
{
	(void)state;
	struct pk_lint *l =
	    lint("c.yaml",
	         CLAIM(PK_CAPI_V1BETA2, "", "  clusterName: w1\n" POOL_REF) "---\n" CLAIM(
	             PK_CAPI_V1BETA2, "",
	             POOL_REF) "---\n" CLAIM(PK_CAPI_V1BETA1,
	                                     "  labels: {" PK_CLUSTER_NAME_LABEL ": "
	                                     "w1}\n",
	                                     POOL_REF),
	         NULL);
	assert_int_equal(obj(l, 0)->status, PK_LINT_PASS);
	assert_int_equal(obj(l, 1)->status, PK_LINT_DENY);
	assert_true(has(l, 1, PK_SEV_DENY, "spec.clusterName"));
	/* Label only: in repair mode (the default) the webhook copies it silently (the one
	 * warning left is the duplicate name of this fixture). */
	assert_int_equal(obj(l, 2)->status, PK_LINT_WARN);
	assert_int_equal(obj(l, 2)->n_findings, 1);
	assert_true(has(l, 2, PK_SEV_WARN, "is also defined at"));
	pk_lint_free(l);

	/* Under deny, the copy comes with the deprecation warning; --strict fails it. */
	static const char label_only[] =
	    CLAIM(PK_CAPI_V1BETA1, "  labels: {" PK_CLUSTER_NAME_LABEL ": w1}\n", POOL_REF);
	l = pk_lint_new();
	assert_non_null(l);
	pk_lint_set_enforcement(l, PK_ENFORCE_DENY, PK_ENFORCE_WARN);
	assert_int_equal(pk_lint_add_buffer(l, label_only, strlen(label_only), "c.yaml"), PK_OK);
	assert_int_equal(pk_lint_run(l), PK_OK);
	assert_int_equal(obj(l, 0)->status, PK_LINT_WARN);
	assert_true(has(l, 0, PK_SEV_WARN,
	                "spec.clusterName: was empty and was set from the "
	                "deprecated label"));
	assert_int_equal(pk_lint_exit_code(l, false), 0);
	assert_int_equal(pk_lint_exit_code(l, true), 1);
	pk_lint_free(l);
}

/* A claim shaped as CAPV creates it (one owner reference, no flags, label only), and one on
 * another provider's pool with no owner, linted under the given modes. */
#define CAPV_CLAIM                                                                     \
	"apiVersion: " PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA1 "\nkind: " PK_CLAIM_KIND \
	"\nmetadata:\n"                                                                \
	"  name: vm-1-0-0\n  namespace: default\n"                                     \
	"  labels: {" PK_CLUSTER_NAME_LABEL ": w1}\n  ownerReferences:\n"              \
	"  - {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: VSphereVM, "  \
	"name: vm-1, uid: u1}\nspec:\n" POOL_REF
#define FOREIGN_CLAIM                                                                  \
	"apiVersion: " PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2 "\nkind: " PK_CLAIM_KIND \
	"\nmetadata:\n"                                                                \
	"  name: f1\nspec:\n  clusterName: w1\n"                                       \
	"  poolRef: {apiGroup: " PK_CAPI_IPAM_GROUP ", kind: InClusterIPPool, name: p}\n"

static struct pk_lint *lint_modes(const char *text, enum pk_enforcement claims,
                                  enum pk_enforcement foreign)
{
	struct pk_lint *l = pk_lint_new();
	assert_non_null(l);
	pk_lint_set_enforcement(l, claims, foreign);
	assert_int_equal(pk_lint_add_buffer(l, text, strlen(text), "c.yaml"), PK_OK);
	assert_int_equal(pk_lint_run(l), PK_OK);
	return l;
}

static void test_claim_modes(void **state)
{
	(void)state;
	/* repair: passes, with the repair the webhook makes as a warning */
	struct pk_lint *l = lint_modes(CAPV_CLAIM, PK_ENFORCE_REPAIR, PK_ENFORCE_WARN);
	assert_int_equal(obj(l, 0)->status, PK_LINT_WARN);
	assert_true(has(l, 0, PK_SEV_WARN,
	                "metadata.ownerReferences[0]: set controller: true and blockOwnerDeletion: "
	                "true on the owner reference to VSphereVM \"vm-1\"; VSphereVM's provider "
	                "should set them itself"));
	assert_int_equal(obj(l, 0)->n_findings, 1);
	pk_lint_free(l);
	/* deny: refused, naming the mode and how to change it */
	l = lint_modes(CAPV_CLAIM, PK_ENFORCE_DENY, PK_ENFORCE_WARN);
	assert_int_equal(obj(l, 0)->status, PK_LINT_DENY);
	assert_true(has(l, 0, PK_SEV_DENY,
	                "[claim enforcement mode \"deny\"; change it with --claim-enforcement, "
	                "chart value webhook.claimEnforcement]"));
	pk_lint_free(l);
	/* warn: admitted with "would be denied" */
	l = lint_modes(CAPV_CLAIM, PK_ENFORCE_WARN, PK_ENFORCE_WARN);
	assert_int_equal(obj(l, 0)->status, PK_LINT_WARN);
	assert_true(has(l, 0, PK_SEV_WARN, "would be denied: no owner reference has controller"));
	pk_lint_free(l);

	/* Another provider's claim without an owner: a warning by default, as the webhook
	 * admits it (lint used to deny it); denied or skipped as --foreign-claims says. */
	l = lint_modes(FOREIGN_CLAIM, PK_ENFORCE_REPAIR, PK_ENFORCE_WARN);
	assert_int_equal(obj(l, 0)->status, PK_LINT_WARN);
	assert_true(has(l, 0, PK_SEV_WARN, "would be denied: required: the claim needs an owner"));
	assert_int_equal(pk_lint_exit_code(l, false), 0);
	pk_lint_free(l);
	l = lint_modes(FOREIGN_CLAIM, PK_ENFORCE_REPAIR, PK_ENFORCE_DENY);
	assert_int_equal(obj(l, 0)->status, PK_LINT_DENY);
	assert_true(has(l, 0, PK_SEV_DENY, "change it with --foreign-claims"));
	pk_lint_free(l);
	l = lint_modes(FOREIGN_CLAIM, PK_ENFORCE_DENY, PK_ENFORCE_IGNORE);
	assert_int_equal(obj(l, 0)->status, PK_LINT_SKIPPED);
	pk_lint_free(l);
}

/* ---- one verdict: lint and the webhook on the same claim in the same modes ---- */

enum verdict { V_PASS, V_WARN, V_DENY };
static const char *const VERDICT_NAMES[] = {"pass", "warn", "deny"};

/* Lint assumes the requester may set blockOwnerDeletion; so does this webhook. */
static int may_always(void *ctx, const json_t *user_info, const char *ns, const char *api_version,
                      const char *kind, const char *name, bool *allowed, char *rule,
                      size_t rule_len, struct pk_err *err)
{
	(void)ctx, (void)user_info, (void)ns, (void)api_version, (void)kind, (void)name;
	(void)err;
	*allowed = true;
	snprintf(rule, rule_len, "update on %s/finalizers", kind);
	return PK_OK;
}

static json_t *admission_call(const struct pk_admission_config *cfg, enum pk_admission_endpoint ep,
                              const json_t *claim)
{
	json_t *rv =
	    json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:O, s:{s:s}}}",
	              "apiVersion", PK_ADMISSION_API_VERSION, "kind", PK_ADMISSION_REVIEW_KIND,
	              "request", "uid", "u", "operation", "CREATE", "resource", "group",
	              PK_CAPI_IPAM_GROUP, "version", PK_CAPI_V1BETA2, "resource", PK_CLAIM_RESOURCE,
	              "namespace", "default", "object", claim, "userInfo", "username", "capv");
	char *body = json_dumps(rv, JSON_COMPACT);
	int http = 0;
	json_t *resp = NULL;
	pk_admission_review(cfg, ep, body, strlen(body), &http, &resp);
	assert_int_equal(http, 200);
	free(body);
	json_decref(rv);
	return resp;
}

/* /mutate, the patch applied, then /validate: denied, admitted with warnings, or clean. */
static enum verdict webhook_verdict(const struct pk_admission_config *cfg, const char *text)
{
	json_t *claim = json_loads(text, 0, NULL);
	assert_non_null(claim);
	json_t *m = admission_call(cfg, PK_ADMISSION_MUTATE, claim);
	const json_t *mr = json_object_get(m, "response");
	bool warned = json_array_size(json_object_get(mr, "warnings")) > 0;
	const char *p64 = json_string_value(json_object_get(mr, "patch"));
	if (p64 != NULL) {
		unsigned char *patch = NULL;
		size_t n = 0;
		assert_int_equal(pk_base64_decode(p64, strlen(p64), &patch, &n), PK_OK);
		assert_true(n > 0);
		pk_test_apply_json_patch(claim, (const char *)patch);
		free(patch);
	}
	json_t *v = admission_call(cfg, PK_ADMISSION_VALIDATE, claim);
	const json_t *vr = json_object_get(v, "response");
	warned = warned || json_array_size(json_object_get(vr, "warnings")) > 0;
	enum verdict out = !json_is_true(json_object_get(vr, "allowed")) ? V_DENY
	                   : warned                                      ? V_WARN
	                                                                 : V_PASS;
	json_decref(m);
	json_decref(v);
	json_decref(claim);
	return out;
}

static enum verdict lint_verdict(const char *text, enum pk_enforcement claims,
                                 enum pk_enforcement foreign)
{
	struct pk_lint *l = lint_modes(text, claims, foreign);
	enum pk_lint_status st = obj(l, 0)->status;
	pk_lint_free(l);
	return st == PK_LINT_DENY ? V_DENY : st == PK_LINT_WARN ? V_WARN : V_PASS;
}

#define VCLAIM(refs, spec)                                                                         \
	"{\"apiVersion\":\"" PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2 "\",\"kind\":\"" PK_CLAIM_KIND \
	"\","                                                                                      \
	"\"metadata\":{\"name\":\"vm-1-0-0\",\"namespace\":\"default\",\"labels\":"                \
	"{\"" PK_CLUSTER_NAME_LABEL "\":\"c1\"},\"ownerReferences\":" refs "},\"spec\":"           \
	"{" spec "}}"
#define V_OURS                                                                     \
	"\"poolRef\":{\"apiGroup\":\"" PK_POOL_GROUP "\",\"kind\":\"" PK_POOL_KIND \
	"\",\"name\":\"p\"}"
#define V_FOREIGN                                                                            \
	"\"poolRef\":{\"apiGroup\":\"" PK_CAPI_IPAM_GROUP "\",\"kind\":\"InClusterIPPool\"," \
	"\"name\":\"p\"}"
#define V_REF(flags)                                                                          \
	"{\"apiVersion\":\"infrastructure.cluster.x-k8s.io/v1beta1\",\"kind\":\"VSphereVM\"," \
	"\"name\":\"vm-1\",\"uid\":\"6f1c\"" flags "}"
#define V_OTHER                               \
	"{\"apiVersion\":\"cluster.x-k8s.io/" \
	"v1beta1\",\"kind\":\"Machine\",\"name\":\"m\",\"uid\":\"7\"}"

static void test_lint_and_webhook_agree(void **state)
{
	(void)state;
	static const struct {
		const char *name, *text;
	} claims[] = {
	    {"CAPV: no flags", VCLAIM("[" V_REF("") "]", V_OURS)},
	    {"CAPM3: controller only", VCLAIM("[" V_REF(",\"controller\":true") "]", V_OURS)},
	    {"Proxmox: both flags, label", VCLAIM("[" V_REF(",\"controller\":true,"
	                                                    "\"blockOwnerDeletion\":true") "]",
	                                          V_OURS)},
	    {"both flags and clusterName",
	     VCLAIM("[" V_REF(",\"controller\":true,\"blockOwnerDeletion\":true") "]",
	            "\"clusterName\":\"c1\"," V_OURS)},
	    {"blockOwnerDeletion only",
	     VCLAIM("[" V_REF(",\"blockOwnerDeletion\":true") "]", V_OURS)},
	    {"no owner", VCLAIM("[]", V_OURS)},
	    {"two, none the controller", VCLAIM("[" V_OTHER "," V_REF("") "]", V_OURS)},
	    {"two, one the controller",
	     VCLAIM("[" V_OTHER "," V_REF(",\"controller\":true") "]", V_OURS)},
	    {"controller a string", VCLAIM("[" V_REF(",\"controller\":\"yes\"") "]", V_OURS)},
	    {"no uid",
	     VCLAIM("[{\"apiVersion\":\"v1\",\"kind\":\"VSphereVM\",\"name\":\"x\"}]", V_OURS)},
	    {"unknown pool kind",
	     VCLAIM("[" V_REF("") "]",
	            "\"poolRef\":{\"apiGroup\":\"" PK_POOL_GROUP "\",\"kind\":\"IPpool\","
	            "\"name\":\"p\"}")},
	    {"foreign, no flags", VCLAIM("[" V_REF("") "]", V_FOREIGN)},
	    {"foreign, no owner", VCLAIM("[]", V_FOREIGN)},
	    {"foreign, complete",
	     VCLAIM("[" V_REF(",\"controller\":true,\"blockOwnerDeletion\":true") "]",
	            "\"clusterName\":\"c1\"," V_FOREIGN)},
	};
	static const enum pk_enforcement ours[] = {PK_ENFORCE_REPAIR, PK_ENFORCE_DENY,
	                                           PK_ENFORCE_WARN};
	static const enum pk_enforcement foreign[] = {PK_ENFORCE_IGNORE, PK_ENFORCE_WARN,
	                                              PK_ENFORCE_DENY};
	struct pk_admission_lookup lk = {.may_block_owner_deletion = may_always};
	size_t seen[3] = {0};
	for (size_t c = 0; c < sizeof(claims) / sizeof(claims[0]); c++)
		for (size_t o = 0; o < 3; o++)
			for (size_t f = 0; f < 3; f++) {
				struct pk_admission_config cfg = {
				    .claims = ours[o], .foreign_claims = foreign[f], .lookup = &lk};
				enum verdict w = webhook_verdict(&cfg, claims[c].text);
				enum verdict l = lint_verdict(claims[c].text, ours[o], foreign[f]);
				if (w != l)
					fail_msg("%s, claims mode %d, foreign mode %d: webhook %s, "
					         "lint %s",
					         claims[c].name, (int)ours[o], (int)foreign[f],
					         VERDICT_NAMES[w], VERDICT_NAMES[l]);
				seen[w]++;
			}
	/* the table reaches every verdict */
	assert_true(seen[V_PASS] > 0 && seen[V_WARN] > 0 && seen[V_DENY] > 0);
	/* and the verdicts the issue names: CAPV passes repair (with its warning), is denied
	 * under deny; an orphan is denied in repair */
	struct pk_admission_config repair = {
	    .claims = PK_ENFORCE_REPAIR, .foreign_claims = PK_ENFORCE_WARN, .lookup = &lk};
	struct pk_admission_config deny = repair;
	deny.claims = PK_ENFORCE_DENY;
	assert_int_equal(webhook_verdict(&repair, claims[0].text), V_WARN);
	assert_int_equal(webhook_verdict(&deny, claims[0].text), V_DENY);
	assert_int_equal(webhook_verdict(&repair, claims[5].text), V_DENY);
	assert_int_equal(webhook_verdict(&repair, claims[2].text), V_PASS);
}

static void test_overlaps(void **state)
{
	(void)state;
	struct pk_lint *l = lint(
	    "a.yaml", POOL(PK_POOL_KIND, "", "a", "[10.1.0.0/24]", "24"), "b.yaml",
	    POOL(PK_POOL_KIND, "  namespace: default\n", "b", "[10.1.0.100-10.1.0.110]", "24"),
	    "c.yaml", POOL(PK_POOL_KIND, "  namespace: other\n", "c", "[10.1.0.0/24]", "24"),
	    "d.yaml", POOL(PK_GLOBAL_POOL_KIND, "", "d", "[10.2.0.0/24]", "24"), "e.yaml",
	    POOL(PK_POOL_KIND, "  namespace: third\n", "e", "[10.2.0.50/32]", "24"), "f.yaml",
	    POOL(PK_POOL_KIND, "  namespace: third\n", "f", "[\"2001:db8::/120\"]", "120"), NULL);
	/* a: first, nothing before it. */
	assert_int_equal(obj(l, 0)->status, PK_LINT_PASS);
	/* b: unset namespace of a is "default" too. */
	assert_int_equal(obj(l, 1)->status, PK_LINT_DENY);
	assert_true(has(l, 1, PK_SEV_DENY, "overlaps with IPPool default/a at a.yaml:1"));
	assert_true(has(l, 1, PK_SEV_DENY, "10.1.0.100"));
	/* c: another namespace, no overlap with a or b. */
	assert_int_equal(obj(l, 2)->status, PK_LINT_PASS);
	/* e: a GlobalIPPool meets every namespace. */
	assert_int_equal(obj(l, 3)->status, PK_LINT_PASS);
	assert_int_equal(obj(l, 4)->status, PK_LINT_DENY);
	assert_true(has(l, 4, PK_SEV_DENY, "GlobalIPPool d"));
	/* f: another family never overlaps. */
	assert_int_equal(obj(l, 5)->status, PK_LINT_PASS);
	pk_lint_free(l);
}

#define ADDRESS(name, addr)                                                              \
	"apiVersion: " PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2 "\nkind: " PK_ADDRESS_KIND \
	"\nmetadata:\n  name: " name "\n  ownerReferences:\n"                            \
	"  - {apiVersion: v1, kind: " PK_CLAIM_KIND ", name: " name                      \
	", uid: u1, controller: true, "                                                  \
	"blockOwnerDeletion: true}\n  - {apiVersion: v1, kind: " PK_POOL_KIND            \
	", name: p, uid: u2, "                                                           \
	"blockOwnerDeletion: true}\nspec:\n  address: " addr                             \
	"\n  prefix: 24\n  claimRef: {name: " name "}\n" POOL_REF

/* An IPAddress is checked against its pool when the files hold it, as the webhook does. */
static void test_ipaddress_in_pool(void **state)
{
	(void)state;
	struct pk_lint *l =
	    lint("p.yaml", POOL(PK_POOL_KIND, "", "p", "[10.1.0.10-10.1.0.20]", "24"), "a.yaml",
	         ADDRESS("m1", "10.1.0.30"), "b.yaml", ADDRESS("m2", "10.1.0.12"), NULL);
	assert_int_equal(obj(l, 1)->status, PK_LINT_DENY);
	assert_true(has(l, 1, PK_SEV_DENY,
	                "spec.address: \"10.1.0.30\" is not a usable address of IPPool default/p"));
	assert_int_equal(obj(l, 2)->status, PK_LINT_PASS);

	/* The pool's delete protection, through lint's lookup: two IPAddresses name it. */
	struct pk_pool_id id = {PK_POOL_KIND, "default", "p"};
	struct pk_violations v;
	struct pk_err err;
	json_t *pool = NULL;
	const struct pk_pool_lookup *lk = pk_lint_lookup(l);
	assert_int_equal(lk->get_pool(lk->ctx, PK_POOL_KIND, "default", "p", &pool, &err), PK_OK);
	assert_non_null(pool);
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_delete(lk, &id, pool, &v, &err), PK_OK);
	assert_int_equal(pk_violations_count(&v, PK_SEV_DENY), 1);
	assert_non_null(strstr(v.items[0].message, "2 IPAddresses allocated from this pool"));
	json_decref(pool);
	pk_lint_free(l);

	/* Without its pool in the files, lint cannot tell: nothing is reported. */
	l = lint("a.yaml", ADDRESS("m1", "10.1.0.30"), NULL);
	assert_int_equal(obj(l, 0)->status, PK_LINT_PASS);
	struct pk_pool_id none = {PK_POOL_KIND, "default", "p"};
	pk_violations_init(&v);
	assert_int_equal(pk_pool_lookup_check_delete(pk_lint_lookup(l), &none, NULL, &v, &err),
	                 PK_OK);
	assert_int_equal(pk_violations_count(&v, PK_SEV_DENY), 1);
	pk_lint_free(l);
}

static void test_denied_pool_not_compared(void **state)
{
	(void)state;
	struct pk_lint *l =
	    lint("a.yaml", POOL(PK_POOL_KIND, "", "a", "[10.1.0.0/24]", "\"24\""), "b.yaml",
	         POOL(PK_POOL_KIND, "", "b", "[10.1.0.0/24]", "24"), NULL);
	assert_int_equal(obj(l, 0)->status, PK_LINT_DENY);
	assert_int_equal(obj(l, 1)->status, PK_LINT_PASS);
	pk_lint_free(l);
}

static void test_duplicates_warn(void **state)
{
	(void)state;
	struct pk_lint *l =
	    lint("a.yaml", POOL(PK_POOL_KIND, "", "a", "[10.1.0.0/24]", "24"), "b.yaml",
	         POOL(PK_POOL_KIND, "  namespace: default\n", "a", "[10.1.0.0/24]", "24"), NULL);
	assert_int_equal(obj(l, 0)->status, PK_LINT_PASS);
	assert_int_equal(obj(l, 1)->status, PK_LINT_WARN);
	assert_true(has(l, 1, PK_SEV_WARN, "also defined at a.yaml:1"));
	assert_non_null(obj(l, 1)->pool);
	pk_lint_free(l);
}

/* An object handed over (as from a live cluster) is checked and freed with the lint. */
static void test_add_object(void **state)
{
	(void)state;
	struct pk_lint *l = pk_lint_new();
	assert_non_null(l);
	json_t *bad = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:[s], s:i}}", "apiVersion",
	                        PK_POOL_API_VERSION, "kind", PK_POOL_KIND, "metadata", "name", "p",
	                        "namespace", "n", "spec", "addresses", "10.0.0.0/33", "prefix", 24);
	assert_non_null(bad);
	assert_int_equal(pk_lint_add_object(l, bad, "cluster", 0), PK_OK);
	assert_int_equal(pk_lint_run(l), PK_OK);
	assert_int_equal(obj(l, 0)->status, PK_LINT_DENY);
	assert_string_equal(obj(l, 0)->source, "cluster");
	assert_string_equal(obj(l, 0)->name, "p");
	assert_int_equal(pk_lint_exit_code(l, false), 1);
	pk_lint_free(l);
}

static void test_problems_and_exit_codes(void **state)
{
	(void)state;
	struct pk_lint *l =
	    lint("ok.yaml", POOL(PK_POOL_KIND, "", "a", "[10.1.0.0/24]", "24"), "broken.yaml",
	         "a:\n\tb: 1\n", "alias.yaml", "a: &x 1\nb: *x\n", NULL);
	size_t np;
	const struct pk_lint_problem *p = pk_lint_problems(l, &np);
	assert_int_equal(np, 2);
	assert_string_equal(p[0].source, "broken.yaml");
	assert_non_null(strstr(p[0].message, "broken.yaml:2:"));
	assert_false(p[0].unreadable);
	assert_non_null(strstr(p[1].message, "anchors and aliases"));
	assert_int_equal(p[0].line, 2);
	assert_true(p[0].column > 0);
	assert_int_equal(pk_lint_exit_code(l, false), 2);
	struct pk_lint_totals t = pk_lint_get_totals(l);
	assert_int_equal(t.files, 3);
	assert_int_equal(t.unloadable, 2);
	assert_int_equal(t.passed, 1);
	pk_lint_free(l);

	l = pk_lint_new();
	assert_non_null(l);
	assert_int_equal(pk_lint_add_unreadable(l, "gone.yaml", "gone.yaml: cannot open: nope"),
	                 PK_OK);
	assert_int_equal(pk_lint_run(l), PK_OK);
	assert_int_equal(pk_lint_exit_code(l, false), 2);
	pk_lint_free(l);

	/* Nothing at all to lint is not a failure. */
	l = lint("empty.yaml", "# nothing here\n", NULL);
	assert_int_equal(pk_lint_exit_code(l, true), 0);
	pk_lint_free(l);
	pk_lint_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clean_pools_have_summaries),
	    cmocka_unit_test(test_pool_denials),
	    cmocka_unit_test(test_dispatch_by_kind),
	    cmocka_unit_test(test_capi_versions),
	    cmocka_unit_test(test_nul_in_identity),
	    cmocka_unit_test(test_positions_after_multibyte),
	    cmocka_unit_test(test_claims),
	    cmocka_unit_test(test_claim_modes),
	    cmocka_unit_test(test_lint_and_webhook_agree),
	    cmocka_unit_test(test_ipaddress_in_pool),
	    cmocka_unit_test(test_overlaps),
	    cmocka_unit_test(test_denied_pool_not_compared),
	    cmocka_unit_test(test_duplicates_warn),
	    cmocka_unit_test(test_problems_and_exit_codes),
	    cmocka_unit_test(test_add_object),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
