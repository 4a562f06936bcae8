/*
 * test_lint_cross.c - what lint finds across files: claims' pools, one
 * address held twice, IPAddresses against their claim and pool, overlaps
 * by sweep; near-miss apiVersions and kinds; unknown fields; rule ids;
 * every pool kind of pool_ref.h's table by its scope.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lint.h"
#include "pool_ref.h"

#define POOL(name, ns, addrs)                                                       \
	"apiVersion: " PK_POOL_API_VERSION "\nkind: IPPool\nmetadata: {name: " name \
	", namespace: " ns ", uid: pool-uid}\nspec: {addresses: [" addrs "], prefix: 24}\n---\n"

#define CLAIM(name, ns, pool)                                                               \
	"apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddressClaim\nmetadata:\n  "    \
	"name: " name "\n  namespace: " ns                                                  \
	"\n  uid: claim-uid\n  ownerReferences:\n  - {apiVersion: "                         \
	"infrastructure.cluster.x-k8s.io/v1beta1, kind: Metal3Machine, name: m, uid: u, "   \
	"controller: true, blockOwnerDeletion: true}\nspec:\n  clusterName: w\n  poolRef: " \
	"{apiGroup: ipam.poolkeeper.io, kind: IPPool, name: " pool "}\n---\n"

#define ADDRESS(name, claim, pool, claim_uid, addr)                                               \
	"apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata:\n  name: " name    \
	"\n  namespace: default\n  ownerReferences:\n  - {apiVersion: "                           \
	"ipam.cluster.x-k8s.io/v1beta2, kind: IPAddressClaim, name: " claim ", uid: " claim_uid   \
	", controller: true, blockOwnerDeletion: true}\n  - {apiVersion: "                        \
	"ipam.poolkeeper.io/v1alpha1, kind: IPPool, name: " pool ", uid: pool-uid, "              \
	"blockOwnerDeletion: true}\nspec:\n  claimRef: {name: " claim "}\n  poolRef: {apiGroup: " \
	"ipam.poolkeeper.io, kind: IPPool, name: " pool "}\n  address: " addr "\n  prefix: 24\n"  \
	"---\n"

static struct pk_lint *run(const char *text)
{
	struct pk_lint *l = pk_lint_new();
	assert_non_null(l);
	assert_int_equal(pk_lint_add_buffer(l, text, strlen(text), "set.yaml"), PK_OK);
	assert_int_equal(pk_lint_run(l), PK_OK);
	return l;
}

/* The finding of object i with `rule`, or NULL. */
static const struct pk_lint_finding *rule(const struct pk_lint *l, size_t i, const char *id)
{
	size_t n;
	const struct pk_lint_object *o = pk_lint_objects(l, &n);
	assert_true(i < n);
	for (size_t k = 0; k < o[i].n_findings; k++)
		if (!strcmp(o[i].findings[k].rule, id))
			return &o[i].findings[k];
	return NULL;
}

/* Whether f is there and its message contains text. */
static bool says(const struct pk_lint_finding *f, const char *text)
{
	return f != NULL && strstr(f->v.message, text) != NULL;
}

static void test_claim_pool_missing(void **state)
{
	(void)state;
	struct pk_lint *l = run(POOL("p", "default", "10.0.0.0/24") CLAIM("c1", "default", "p")
	                            CLAIM("c2", "default", "q") CLAIM("c3", "other", "p"));
	assert_null(rule(l, 1, "claim-pool-missing"));
	const struct pk_lint_finding *f = rule(l, 2, "claim-pool-missing");
	assert_non_null(f);
	assert_int_equal(f->v.severity, PK_SEV_WARN);
	assert_true(says(f, "IPPool \"q\" is not in the files linted"));
	f = rule(l, 3, "claim-pool-missing");
	assert_non_null(f);
	assert_true(says(f, "the files have it in namespace default"));
	assert_int_equal(pk_lint_exit_code(l, false), 0);
	assert_int_equal(pk_lint_exit_code(l, true), 1);
	pk_lint_free(l);
}

static void test_same_address_and_owners(void **state)
{
	(void)state;
	struct pk_lint *l = run(POOL("p", "default", "10.0.0.0/24") CLAIM("c1", "default", "p")
	                            ADDRESS("a1", "c1", "p", "claim-uid", "10.0.0.5")
	                                ADDRESS("a2", "c2", "p", "u2", "10.0.0.5")
	                                    ADDRESS("a3", "c1", "p", "wrong-uid", "10.0.0.6"));
	assert_null(rule(l, 2, "duplicate-address"));
	assert_null(rule(l, 2, "owner-reference"));
	const struct pk_lint_finding *f = rule(l, 3, "duplicate-address");
	assert_non_null(f);
	assert_int_equal(f->v.severity, PK_SEV_DENY);
	assert_true(says(f, "also held by IPAddress a1"));
	f = rule(l, 4, "owner-reference");
	assert_non_null(f);
	assert_true(says(f, "has uid \"wrong-uid\""));
	/* at the reference's uid: a3 starts on line 46, its first reference is on line 52 */
	assert_string_equal(f->v.field, "metadata.ownerReferences[0].uid");
	assert_int_equal(f->line, 52);
	assert_int_equal(f->column, 81);
	pk_lint_free(l);

	/* an IPAddress on another pool than its claim's */
	l = run(POOL("p", "default", "10.0.0.0/24") POOL("r", "default", "10.0.1.0/24")
	            CLAIM("c1", "default", "p") ADDRESS("a1", "c1", "r", "claim-uid", "10.0.1.5"));
	f = rule(l, 3, "owner-reference");
	assert_non_null(f);
	assert_true(says(f, "differs from the poolRef of its claim"));
	pk_lint_free(l);
}

#define FOREIGN_ADDRESS(name, ns, kind, addr)                                                \
	"apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {name: " name \
	", namespace: " ns "}\nspec:\n  claimRef: {name: " name "}\n  poolRef: {apiGroup: "  \
	"ipam.cluster.x-k8s.io, kind: " kind ", name: g}\n  address: " addr                  \
	"\n  prefix: 24\n---\n"

/*
 * Another provider's pool is named as the webhook and `poolkeeper audit`
 * name it (pool_ref.h): a Global* kind is one pool from every namespace, so
 * one address in two namespaces is held twice; a namespaced kind is one
 * pool per namespace.
 */
static void test_same_address_of_another_providers_pool(void **state)
{
	(void)state;
	struct pk_lint *l =
	    run(FOREIGN_ADDRESS("a1", "default", "GlobalInClusterIPPool", "10.0.0.5")
	            FOREIGN_ADDRESS("a2", "other", "GlobalInClusterIPPool", "10.0.0.5"));
	const struct pk_lint_finding *f = rule(l, 1, "duplicate-address");
	assert_non_null(f);
	assert_true(says(f, "also held by IPAddress a1"));
	pk_lint_free(l);

	l = run(FOREIGN_ADDRESS("a1", "default", "InClusterIPPool", "10.0.0.5")
	            FOREIGN_ADDRESS("a2", "other", "InClusterIPPool", "10.0.0.5"));
	assert_null(rule(l, 0, "duplicate-address"));
	assert_null(rule(l, 1, "duplicate-address"));
	pk_lint_free(l);
}

/* The sweep finds an overlap between the first and the last of three, and no other. */
static void test_overlaps_by_sweep(void **state)
{
	(void)state;
	struct pk_lint *l = run(
	    POOL("a", "default", "10.0.0.0/24") POOL("b", "default", "10.1.0.0/24")
	        POOL("c", "other", "10.0.0.0/24") POOL("d", "default", "10.0.0.100-10.0.0.110"));
	assert_null(rule(l, 0, "pool-overlap"));
	assert_null(rule(l, 1, "pool-overlap"));
	assert_null(rule(l, 2, "pool-overlap")); /* another namespace */
	const struct pk_lint_finding *f = rule(l, 3, "pool-overlap");
	assert_non_null(f);
	assert_true(says(f, "IPPool default/a"));
	pk_lint_free(l);
}

/*
 * 600 copies of one range: every pool after the first is denied, naming
 * pools before it, and a GlobalIPPool among them meets every namespace;
 * the comparisons stay bounded (PK_LINT_OVERLAPS_MAX per pool).
 */
static void test_overlaps_many_copies(void **state)
{
	(void)state;
	struct pk_lint *l = pk_lint_new();
	assert_non_null(l);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	assert_non_null(out);
	for (size_t i = 0; i < 600; i++)
		fprintf(out, POOL("p%zu", "ns%zu", "10.0.0.0/24"), i, i % 2);
	fputs("apiVersion: " PK_POOL_API_VERSION "\nkind: GlobalIPPool\nmetadata: {name: g}\n"
	      "spec: {addresses: [10.0.0.7/32], prefix: 24}\n",
	      out);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(pk_lint_add_buffer(l, text, len, "copies.yaml"), PK_OK);
	free(text);
	assert_int_equal(pk_lint_run(l), PK_OK);
	assert_null(rule(l, 0, "pool-overlap"));
	assert_null(rule(l, 1, "pool-overlap")); /* p1 is alone in ns1 so far */
	for (size_t i = 2; i < 600; i++) {
		const struct pk_lint_finding *f = rule(l, i, "pool-overlap");
		assert_non_null(f);
		char want[32];
		snprintf(want, sizeof(want), "IPPool ns%zu/p", i % 2);
		assert_true(says(f, want));
	}
	/* g meets all 600, in both namespaces: as many findings as one check keeps. */
	size_t n;
	const struct pk_lint_object *g = &pk_lint_objects(l, &n)[600];
	assert_int_equal(g->n_findings, PK_VIOLATIONS_MAX);
	assert_true(says(&g->findings[0], "IPPool ns0/p0"));
	assert_true(says(&g->findings[1], "IPPool ns1/p1"));
	pk_lint_free(l);
}

static void test_near_misses_and_fields(void **state)
{
	(void)state;
	struct pk_lint *l =
	    run("apiVersion: ipam.poolkeepr.io/v1alpha1\nkind: IPPool\nmetadata: {name: a}\n---\n"
	        "apiVersion: ipam.poolkeeper.io/v1alpha1\nkind: IPpool\nmetadata: {name: b}\n---\n"
	        "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAdress\nmetadata: {name: c}\n"
	        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n---\n"
	        "apiVersion: v1\nkind: IPPool\nmetadata: {name: e}\n---\n"
	        "apiVersion: " PK_POOL_API_VERSION "\nkind: IPPool\nmetadata: {name: f}\n"
	        "spec: {addresses: [10.0.0.0/24], prefix: 24, excludeAddresses: [10.0.0.1]}\n");
	const struct pk_lint_finding *f = rule(l, 0, "unknown-api-version");
	assert_non_null(f);
	assert_true(says(f, "did you mean \"ipam.poolkeeper.io/v1alpha1\"?"));
	f = rule(l, 1, "unknown-kind");
	assert_non_null(f);
	assert_true(says(f, "did you mean \"IPPool\"?"));
	f = rule(l, 2, "unknown-kind");
	assert_non_null(f);
	assert_true(says(f, "did you mean \"IPAddress\"?"));
	size_t n;
	const struct pk_lint_object *o = pk_lint_objects(l, &n);
	assert_int_equal(o[3].status, PK_LINT_SKIPPED);
	assert_int_equal(o[4].status, PK_LINT_SKIPPED); /* v1 is far from every group of ours */
	f = rule(l, 5, "unknown-field");
	assert_true(says(f, "unknown field"));
	assert_string_equal(f->v.field, "spec.excludeAddresses");
	assert_true(says(f, "did you mean \"excludedAddresses\"?"));
	/* at the unknown key itself, on the spec line of the last document */
	assert_int_equal(f->line, o[5].line + 3);
	assert_int_equal(f->column, 46);
	assert_int_equal(o[5].status, PK_LINT_DENY);
	pk_lint_free(l);
}

/* ---- every pool kind of pool_ref.h's table ---- */

/* A pool of kind k named `name` in namespace ns ("": none) holding `range`, then "---". */
static void pool_of(const struct pk_pool_kind *k, const char *ns, const char *name,
                    const char *range, char *buf, size_t len)
{
	char spec[256] = "";
	switch (k->spec) {
	case PK_POOL_SPEC_RANGES:
		snprintf(spec, sizeof(spec), "{addresses: [%s], prefix: 24}", range);
		break;
	}
	assert_true(spec[0] != '\0');
	snprintf(buf, len, "apiVersion: %s/%s\nkind: %s\nmetadata: {name: %s%s%s}\nspec: %s\n---\n",
	         k->group, k->version, k->kind, name, ns[0] ? ", namespace: " : "", ns, spec);
}

/* A claim in namespace ns on the pool of kind k named `pool`, then "---". */
static void claim_on(const struct pk_pool_kind *k, const char *ns, const char *pool, char *buf,
                     size_t len)
{
	snprintf(buf, len,
	         "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddressClaim\nmetadata:\n"
	         "  name: c\n  namespace: %s\n  ownerReferences:\n  - {apiVersion: "
	         "infrastructure.cluster.x-k8s.io/v1beta1, kind: Metal3Machine, name: m, uid: u, "
	         "controller: true, blockOwnerDeletion: true}\nspec:\n  clusterName: w\n  "
	         "poolRef: {apiGroup: %s, kind: %s, name: %s}\n---\n",
	         ns, k->group, k->kind, pool);
}

/*
 * Each kind is a pool: checked by the pool rules and summarized, in the
 * namespace its scope gives it ("default" when a namespaced one names
 * none; none for a cluster-scoped one, whatever the manifest says).
 */
static void test_each_pool_kind_scope(void **state)
{
	(void)state;
	size_t n, m;
	const struct pk_pool_kind *k = pk_pool_kinds(&n);
	assert_true(n > 0);
	for (size_t i = 0; i < n; i++) {
		char a[512], b[512], text[1024], what[256], want[256];
		pool_of(&k[i], "", "a", "10.0.0.0/24", a, sizeof(a));
		pool_of(&k[i], "team", "b", "10.0.1.0/24", b, sizeof(b));
		snprintf(text, sizeof(text), "%s%s", a, b);
		struct pk_lint *l = run(text);
		const struct pk_lint_object *o = pk_lint_objects(l, &m);
		assert_int_equal(m, 2);
		for (size_t j = 0; j < m; j++) {
			if (o[j].status != PK_LINT_PASS || o[j].pool == NULL)
				fail_msg("%s %s: not checked as a pool", k[i].kind, o[j].name);
		}
		if (k[i].namespaced) {
			assert_string_equal(pk_lint_object_namespace(&o[0]), "default");
			assert_string_equal(pk_lint_object_namespace(&o[1]), "team");
		} else {
			assert_null(pk_lint_object_namespace(&o[0]));
			assert_null(pk_lint_object_namespace(&o[1]));
		}
		snprintf(want, sizeof(want), "%s %s%s", k[i].kind, k[i].namespaced ? "team/" : "",
		         "b");
		assert_string_equal(pk_lint_describe_object(&o[1], what, sizeof(what)), want);
		pk_lint_free(l);
	}
}

/*
 * Two pools of one range in two namespaces, of every pair of kinds: they
 * overlap unless both kinds are namespaced, and always in one namespace.
 */
static void test_each_pool_kind_overlaps(void **state)
{
	(void)state;
	size_t n;
	const struct pk_pool_kind *k = pk_pool_kinds(&n);
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < n; j++) {
			for (int same_ns = 0; same_ns < 2; same_ns++) {
				char a[512], b[512], text[1024];
				pool_of(&k[i], "one", "x", "10.9.0.0/24", a, sizeof(a));
				pool_of(&k[j], same_ns ? "one" : "two", "y", "10.9.0.0/24", b,
				        sizeof(b));
				snprintf(text, sizeof(text), "%s%s", a, b);
				struct pk_lint *l = run(text);
				bool want = same_ns || !k[i].namespaced || !k[j].namespaced;
				if ((rule(l, 1, "pool-overlap") != NULL) != want)
					fail_msg("%s one/x and %s %s/y: overlap %s", k[i].kind,
					         k[j].kind, same_ns ? "one" : "two",
					         want ? "missed" : "reported");
				pk_lint_free(l);
			}
		}
	}
}

/*
 * A claim on each kind finds its pool by the kind's scope: a namespaced
 * kind's in the claim's namespace only, a cluster-scoped kind's from any.
 */
static void test_each_pool_kind_claims(void **state)
{
	(void)state;
	size_t n;
	const struct pk_pool_kind *k = pk_pool_kinds(&n);
	for (size_t i = 0; i < n; i++) {
		char pool[512], claim[512], missing[512], text[2048];
		pool_of(&k[i], k[i].namespaced ? "other" : "", "p", "10.0.0.0/24", pool,
		        sizeof(pool));
		claim_on(&k[i], "team", "p", claim, sizeof(claim));
		claim_on(&k[i], "team", "q", missing, sizeof(missing));
		snprintf(text, sizeof(text), "%s%s%s", pool, claim, missing);
		struct pk_lint *l = run(text);
		const struct pk_lint_finding *f = rule(l, 1, "claim-pool-missing");
		if (k[i].namespaced)
			assert_true(says(f, "the files have it in namespace other"));
		else
			assert_null(f);
		f = rule(l, 2, "claim-pool-missing");
		assert_non_null(f);
		assert_true(says(f, "is not in the files linted"));
		assert_true(says(f, " in namespace team") == k[i].namespaced);
		pk_lint_free(l);
	}
}

/* A kind of poolkeeper's group that is no pool kind is denied, naming every pool kind. */
static void test_unknown_kind_names_every_pool_kind(void **state)
{
	(void)state;
	size_t n;
	const struct pk_pool_kind *k = pk_pool_kinds(&n);
	struct pk_lint *l =
	    run("apiVersion: " PK_POOL_API_VERSION "\nkind: AddressBlock\nmetadata: {name: a}\n");
	const struct pk_lint_finding *f = rule(l, 0, "unknown-kind");
	assert_true(says(f, "\"AddressBlock\" is not a kind of " PK_POOL_GROUP ", which has "));
	for (size_t i = 0; i < n; i++)
		if (!says(f, k[i].kind))
			fail_msg("%s is not named: %s", k[i].kind, f->v.message);
	pk_lint_free(l);
}

/*
 * Another group's kinds of the pool kinds' names are not poolkeeper's
 * pools: Calico's cluster-scoped IPPool gets no "default" namespace, and
 * another GlobalIPPool keeps the namespace it names.
 */
static void test_pool_kind_names_of_other_groups(void **state)
{
	(void)state;
	size_t n;
	struct pk_lint *l = run("apiVersion: crd.projectcalico.org/v1\nkind: " PK_POOL_KIND
	                        "\nmetadata: {name: a}\nspec: {cidr: 10.0.0.0/16}\n---\n"
	                        "apiVersion: example.io/v1\nkind: " PK_GLOBAL_POOL_KIND
	                        "\nmetadata: {name: b, namespace: x}\n");
	const struct pk_lint_object *o = pk_lint_objects(l, &n);
	assert_int_equal(n, 2);
	assert_int_equal(o[0].status, PK_LINT_SKIPPED);
	assert_null(pk_lint_object_namespace(&o[0]));
	assert_string_equal(pk_lint_object_namespace(&o[1]), "x");
	pk_lint_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_claim_pool_missing),
	    cmocka_unit_test(test_same_address_and_owners),
	    cmocka_unit_test(test_same_address_of_another_providers_pool),
	    cmocka_unit_test(test_overlaps_by_sweep),
	    cmocka_unit_test(test_overlaps_many_copies),
	    cmocka_unit_test(test_near_misses_and_fields),
	    cmocka_unit_test(test_each_pool_kind_scope),
	    cmocka_unit_test(test_each_pool_kind_overlaps),
	    cmocka_unit_test(test_each_pool_kind_claims),
	    cmocka_unit_test(test_unknown_kind_names_every_pool_kind),
	    cmocka_unit_test(test_pool_kind_names_of_other_groups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
