/*
 * test_rules.c - the contract rules as users meet them: pools (subnet,
 * gateway, exhaustion, overlap, shrink), IPAddressClaims of both API
 * versions, and IPAddresses, allowed and denied, with the offending value
 * in the message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pool_ref.h"
#include "rules.h"

#include "expect_violations.h"
#include "provider_refs.h"

static json_t *load(const char *text)
{
	return load_fixture(text, JSON_ALLOW_NUL); /* as the webhook and the client parse */
}

/*
 * Sets (value != NULL, JSON text with ' for ") or deletes (value == NULL)
 * the member at a dotted path; numeric segments index arrays.
 */
static void edit(json_t *root, const char *path, const char *value)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	json_t *cur = root;
	char *seg = buf;
	for (;;) {
		char *dot = strchr(seg, '.');
		if (dot != NULL)
			*dot = '\0';
		bool idx = seg[0] >= '0' && seg[0] <= '9';
		size_t i = idx ? (size_t)strtoul(seg, NULL, 10) : 0;
		if (dot == NULL) {
			if (value == NULL) {
				if (idx)
					json_array_remove(cur, i);
				else
					json_object_del(cur, seg);
			} else {
				json_t *v = load(value);
				if (idx)
					assert_int_equal(json_array_set_new(cur, i, v), 0);
				else
					assert_int_equal(json_object_set_new(cur, seg, v), 0);
			}
			return;
		}
		cur = idx ? json_array_get(cur, i) : json_object_get(cur, seg);
		assert_non_null(cur);
		seg = dot + 1;
	}
}

/* ------------------------------------------------------------------ pools */

static const char pool_base[] =
    "{'apiVersion':'" PK_POOL_API_VERSION "','kind':'" PK_POOL_KIND "',"
    "'metadata':{'name':'p1','namespace':'default'},"
    "'spec':{'addresses':['10.0.0.10-10.0.0.100'],'prefix':24,'gateway':'10.0.0.1'}}";

struct edit_case {
	const char *name;
	const char *path;  /* NULL: the base object unchanged */
	const char *value; /* NULL: delete */
	enum pk_severity sev;
	const char *field; /* NULL: expect no violation of any severity */
	const char *needle;
};

static const struct edit_case pool_cases[] = {
    {"good pool", NULL, NULL, 0, NULL, NULL},
    {"name holds a NUL", "metadata.name", "'p1\\u0000x'", PK_SEV_DENY, "metadata.name",
     "\"p1\\x00x\" holds a NUL character (\\u0000) at byte 2; a name is a DNS subdomain"},
    {"namespace holds a NUL", "metadata.namespace", "'\\u0000'", PK_SEV_DENY, "metadata.namespace",
     "at byte 0"},
    {"an annotation holds a NUL", "metadata.annotations", "{'note':'a\\u0000b'}", 0, NULL, NULL},
    {PK_GLOBAL_POOL_KIND, "kind", "'" PK_GLOBAL_POOL_KIND "'", 0, NULL, NULL},
    {"entry outside the subnet", "spec.addresses", "['10.0.0.10-10.0.0.100','10.0.1.5']",
     PK_SEV_DENY, "spec.addresses[1]", "\"10.0.1.5\" is not inside the pool's subnet 10.0.0.0/24"},
    {"CIDR wider than the prefix", "spec.addresses", "['10.0.0.0/23']", PK_SEV_DENY,
     "spec.addresses[0]", "\"10.0.0.0/23\" is not inside the pool's subnet 10.0.0.0/24"},
    {"gateway outside the subnet", "spec.gateway", "'10.0.1.1'", PK_SEV_DENY, "spec.gateway",
     "\"10.0.1.1\" is not inside the pool's subnet 10.0.0.0/24"},
    {"IPv6 gateway outside the subnet", "spec",
     "{'addresses':['2001:db8:1::/64'],'gateway':'2001:db8:2::1'}", PK_SEV_DENY, "spec.gateway",
     "\"2001:db8:2::1\" is not inside the pool's subnet 2001:db8:1::/64"},
    {"excluded everything", "spec.excludedAddresses", "['10.0.0.0/24']", PK_SEV_DENY,
     "spec.addresses", "no allocatable address left after excludedAddresses/gateway/reserved"},
    {"only the gateway", "spec", "{'addresses':['10.0.0.5'],'prefix':32,'gateway':'10.0.0.5'}",
     PK_SEV_DENY, "spec.addresses", "no allocatable address left"},
    {"only reserved addresses", "spec", "{'addresses':['10.0.0.0','10.0.0.255'],'prefix':24}",
     PK_SEV_DENY, "spec.addresses", "set allocateReservedIPAddresses: true"},
    {"reserved addresses allowed", "spec",
     "{'addresses':['10.0.0.0','10.0.0.255'],'prefix':24,'allocateReservedIPAddresses':true}", 0,
     NULL, NULL},
    {"excluded entry outside the addresses is a warning", "spec.excludedAddresses",
     "['10.0.0.50','10.9.0.0/24']", PK_SEV_WARN, "spec.excludedAddresses[1]",
     "\"10.9.0.0/24\" excludes no address of spec.addresses"},
    {"excluded entry overlapping the addresses in part is fine", "spec.excludedAddresses",
     "['10.0.0.0/28']", 0, NULL, NULL},
    {"decode violations come through", "spec.prefix", "'24'", PK_SEV_DENY, "spec.prefix",
     "got \"24\" (a string)"},
    {"mixed families", "spec.addresses", "['10.0.0.10','::ffff:10.0.0.11']", PK_SEV_DENY,
     "spec.addresses[1]", "\"::ffff:10.0.0.11\" is IPv6 but the pool is IPv4"},
    {"grace period negative", "spec.addressReuseGracePeriodSeconds", "-1", PK_SEV_DENY,
     "spec.addressReuseGracePeriodSeconds", "must not be negative, got -1"},
    {"grace period just over the bound", "spec.addressReuseGracePeriodSeconds", "86401",
     PK_SEV_DENY, "spec.addressReuseGracePeriodSeconds",
     "must be at most 86400 (one day), got 86401"},
    {"grace period INT64_MAX", "spec.addressReuseGracePeriodSeconds", "9223372036854775807",
     PK_SEV_DENY, "spec.addressReuseGracePeriodSeconds",
     "must be at most 86400 (one day), got 9223372036854775807"},
    {"grace period at the bound", "spec.addressReuseGracePeriodSeconds", "86400", 0, NULL, NULL},
    {"spec missing", "spec", NULL, PK_SEV_DENY, "spec", "required"},
    {"wrong kind", "kind", "'InClusterIPPool'", PK_SEV_DENY, "kind",
     "must be IPPool or GlobalIPPool, got \"InClusterIPPool\""},
    {"wrong apiVersion", "apiVersion", "'" PK_CAPI_IPAM_GROUP "/v1alpha2'", PK_SEV_DENY,
     "apiVersion", "got \"" PK_CAPI_IPAM_GROUP "/v1alpha2\""},
};

static void run_cases(const char *base, const struct edit_case *cases, size_t n,
                      void (*check)(const json_t *, const json_t *, struct pk_violations *))
{
	for (size_t i = 0; i < n; i++) {
		const struct edit_case *c = &cases[i];
		print_message("case: %s\n", c->name);
		json_t *obj = load(base);
		if (c->path != NULL)
			edit(obj, c->path, c->value);
		struct pk_violations v;
		pk_violations_init(&v);
		check(obj, NULL, &v);
		if (c->field == NULL) {
			expect_none(&v, PK_SEV_DENY);
			expect_none(&v, PK_SEV_WARN);
		} else {
			expect(&v, c->sev, c->field, c->needle);
			/* A warning alone never denies. */
			if (c->sev == PK_SEV_WARN)
				expect_none(&v, PK_SEV_DENY);
		}
		json_decref(obj);
	}
}

static void test_pool_rules(void **state)
{
	(void)state;
	run_cases(pool_base, pool_cases, sizeof(pool_cases) / sizeof(pool_cases[0]),
	          pk_rules_check_pool);
}

static void test_pool_update_and_non_objects(void **state)
{
	(void)state;
	struct pk_violations v;
	json_t *pool = load(pool_base);

	/* UPDATE runs the same object rules; old is accepted. */
	pk_violations_init(&v);
	pk_rules_check_pool(pool, pool, &v);
	assert_int_equal(v.n, 0);

	json_t *arr = load("[1]");
	pk_violations_init(&v);
	pk_rules_check_pool(arr, NULL, &v);
	expect(&v, PK_SEV_DENY, "object", "got an array");
	pk_violations_init(&v);
	pk_rules_check_pool(NULL, NULL, &v);
	expect(&v, PK_SEV_DENY, "object", "got nothing");
	json_decref(arr);
	json_decref(pool);
}

/*
 * A pool's kind is any of the table's, at that kind's apiVersion; any other
 * kind is refused with the table's kinds ("IPPool or GlobalIPPool", ", "
 * before the others).
 */
static void test_pool_kinds_of_the_table(void **state)
{
	(void)state;
	size_t n;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&n);
	struct pk_violations v;
	char want[1024] = "must be ", api[300];
	for (size_t i = 0; i < n; i++) {
		size_t o = strlen(want);
		snprintf(want + o, sizeof(want) - o, "%s%s",
		         i == 0      ? ""
		         : i + 1 < n ? ", "
		                     : " or ",
		         kinds[i].kind);
	}
	size_t o = strlen(want);
	snprintf(want + o, sizeof(want) - o, ", got \"KeaIPPool\"");
	for (size_t i = 0; i < n; i++) {
		json_t *pool = load(pool_base);
		snprintf(api, sizeof(api), "%s/%s", kinds[i].group, kinds[i].version);
		json_object_set_new(pool, "kind", json_string(kinds[i].kind));
		json_object_set_new(pool, "apiVersion", json_string(api));
		pk_violations_init(&v);
		pk_rules_check_pool(pool, NULL, &v);
		expect_none(&v, PK_SEV_DENY);
		/* its own group at another version is not its apiVersion */
		snprintf(api, sizeof(api), "%s/v0", kinds[i].group);
		json_object_set_new(pool, "apiVersion", json_string(api));
		pk_violations_init(&v);
		pk_rules_check_pool(pool, NULL, &v);
		snprintf(api, sizeof(api), "must be %s/%s, got", kinds[i].group, kinds[i].version);
		expect(&v, PK_SEV_DENY, "apiVersion", api);
		json_decref(pool);
	}
	json_t *pool = load(pool_base);
	json_object_set_new(pool, "kind", json_string("KeaIPPool"));
	pk_violations_init(&v);
	pk_rules_check_pool(pool, NULL, &v);
	expect(&v, PK_SEV_DENY, "kind", want);
	assert_int_equal(v.n, 1); /* its apiVersion is a pool kind's: the kind is what is wrong */
	json_decref(pool);
}

static void decode(const char *spec, struct pk_pool *p)
{
	json_t *j = load(spec);
	struct pk_violations v;
	pk_violations_init(&v);
	assert_int_equal(pk_pool_decode(j, p, &v), PK_OK);
	if (pk_violations_count(&v, PK_SEV_DENY) != 0)
		dump(&v);
	json_decref(j);
}

static void test_pool_overlap(void **state)
{
	(void)state;
	static const struct {
		const char *name, *a, *b, *needle; /* needle NULL: no overlap */
	} cases[] = {
	    {"contained", "{'addresses':['10.0.0.0/24']}", "{'addresses':['10.0.0.128/25']}",
	     /* 10.0.0.128 is b's own network address, which b never hands out. */
	     "overlaps with IPPool default/b: both could hand out 10.0.0.129"},
	    {"first shared address is the lowest",
	     "{'addresses':['10.0.0.10-10.0.0.20','10.0.0.50'],'prefix':24}",
	     "{'addresses':['10.0.0.15-10.0.0.60'],'prefix':24}", "hand out 10.0.0.15 (the first"},
	    {"IPv6", "{'addresses':['2001:db8::/64']}",
	     "{'addresses':['2001:db8::ffff-2001:db8::1:0'],'prefix':64}",
	     "hand out 2001:db8::ffff"},
	    {"halves of one subnet", "{'addresses':['10.0.0.0/25'],'prefix':24}",
	     "{'addresses':['10.0.0.128/25'],'prefix':24}", NULL},
	    {"one subnet split with excludedAddresses",
	     "{'addresses':['10.0.0.0/24'],'excludedAddresses':['10.0.0.128/25']}",
	     "{'addresses':['10.0.0.0/24'],'excludedAddresses':['10.0.0.0/25']}", NULL},
	    {"families differ", "{'addresses':['10.0.0.0/24']}",
	     "{'addresses':['::ffff:10.0.0.0/120']}", NULL},
	    {"adjacent ranges", "{'addresses':['10.0.0.1-10.0.0.9'],'prefix':24}",
	     "{'addresses':['10.0.0.10-10.0.0.19'],'prefix':24}", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("case: %s\n", cases[i].name);
		struct pk_pool a, b;
		decode(cases[i].a, &a);
		decode(cases[i].b, &b);
		struct pk_violations v;
		pk_violations_init(&v);
		pk_rules_check_pool_overlap(&a, &b, "IPPool default/b", &v);
		if (cases[i].needle == NULL) {
			expect_none(&v, PK_SEV_DENY);
		} else {
			expect(&v, PK_SEV_DENY, "spec.addresses", cases[i].needle);
			/* Overlap is symmetric. */
			pk_violations_init(&v);
			pk_rules_check_pool_overlap(&b, &a, "IPPool default/a", &v);
			expect(&v, PK_SEV_DENY, "spec.addresses", "overlaps with IPPool default/a");
		}
		pk_pool_release(&a);
		pk_pool_release(&b);
	}
}

static void test_pool_shrink(void **state)
{
	(void)state;
	struct pk_pool p;
	struct pk_violations v;

	/* The pool shrank to the lower half; 10.0.0.200 is still allocated. */
	decode("{'addresses':['10.0.0.0/25'],'prefix':24,'gateway':'10.0.0.1'}", &p);
	const char *in_use[] = {"10.0.0.5", "10.0.0.200", "garbage", NULL, "2001:db8::5"};
	pk_violations_init(&v);
	pk_rules_check_pool_shrink(&p, in_use, 5, &v);
	expect(&v, PK_SEV_DENY, "spec.addresses",
	       "drops 2 addresses still allocated from the pool: 10.0.0.200, 2001:db8::5;");
	assert_int_equal(v.n, 1);

	/* Nothing falls out: no violation. */
	const char *fine[] = {"10.0.0.5", "10.0.0.126"};
	pk_violations_init(&v);
	pk_rules_check_pool_shrink(&p, fine, 2, &v);
	assert_int_equal(v.n, 0);

	/* An in-use address that is now the gateway or the network address falls out. */
	const char *reserved[] = {"10.0.0.1", "10.0.0.0"};
	pk_violations_init(&v);
	pk_rules_check_pool_shrink(&p, reserved, 2, &v);
	expect(&v, PK_SEV_DENY, "spec.addresses",
	       "10.0.0.1 (now the gateway), 10.0.0.0 (now the subnet's network address)");
	pk_pool_release(&p);

	/* At most ten are listed, then "and N more". */
	decode("{'addresses':['10.0.0.0/28'],'prefix':24}", &p);
	char texts[12][16];
	const char *many[12];
	for (int i = 0; i < 12; i++) {
		snprintf(texts[i], sizeof(texts[i]), "10.0.1.%d", i);
		many[i] = texts[i];
	}
	pk_violations_init(&v);
	pk_rules_check_pool_shrink(&p, many, 12, &v);
	expect(&v, PK_SEV_DENY, "spec.addresses", "drops 12 addresses");
	expect(&v, PK_SEV_DENY, "spec.addresses", "10.0.1.9 and 2 more;");
	assert_null(strstr(v.items[0].message, "10.0.1.10"));
	pk_pool_release(&p);

	/*
	 * Excluding an address still in use drains it: allowed, with a
	 * warning naming it; it is not handed out again once released.
	 */
	decode("{'addresses':['10.0.0.0/24'],'excludedAddresses':['10.0.0.7']}", &p);
	const char *drained[] = {"10.0.0.7", "10.0.0.8"};
	pk_violations_init(&v);
	pk_rules_check_pool_shrink(&p, drained, 2, &v);
	expect_none(&v, PK_SEV_DENY);
	expect(&v, PK_SEV_WARN, "spec.excludedAddresses",
	       "excludes 1 address still allocated: 10.0.0.7;");
	pk_pool_release(&p);

	/* A denied spec has no usable set; the shrink rule adds nothing to its denial. */
	decode("{'addresses':['10.0.0.0/24'],'prefix':'24'}", &p);
	pk_violations_init(&v);
	pk_rules_check_pool_shrink(&p, drained, 2, &v);
	assert_int_equal(v.n, 0);
	pk_pool_release(&p);
}

/* ----------------------------------------------------------------- claims */

static const char claim_v1beta2[] =
    "{'apiVersion':'" PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2 "','kind':'" PK_CLAIM_KIND "',"
    "'metadata':{'name':'m1-eth0','namespace':'default','ownerReferences':["
    "{'apiVersion':'infrastructure.cluster.x-k8s.io/v1beta1','kind':'VSphereMachine',"
    "'name':'m1','uid':'u1','controller':true,'blockOwnerDeletion':true}]},"
    "'spec':{'clusterName':'c1','poolRef':{'apiGroup':'" PK_POOL_GROUP "','kind':'" PK_POOL_KIND
    "',"
    "'name':'p1'}}}";

static const char claim_v1beta1[] =
    "{'apiVersion':'" PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA1 "','kind':'" PK_CLAIM_KIND "',"
    "'metadata':{'name':'m1-eth0','namespace':'default',"
    "'labels':{'" PK_CLUSTER_NAME_LABEL "':'c1'},'ownerReferences':["
    "{'apiVersion':'infrastructure.cluster.x-k8s.io/v1beta1','kind':'Metal3Machine',"
    "'name':'m1','uid':'u1','controller':true,'blockOwnerDeletion':true}]},"
    "'spec':{'clusterName':'c1','poolRef':{'apiGroup':'" PK_POOL_GROUP "',"
    "'kind':'" PK_GLOBAL_POOL_KIND "','name':'p1'}}}";

static const struct edit_case claim_cases[] = {
    {"good claim", NULL, NULL, 0, NULL, NULL},
    {"name holds a NUL", "metadata.name", "'m1\\u0000'", PK_SEV_DENY, "metadata.name",
     "holds a NUL character (\\u0000) at byte 2"},
    {"generateName holds a NUL", "metadata.generateName", "'m1-\\u0000'", PK_SEV_DENY,
     "metadata.generateName", "at byte 3"},
    {"poolRef name holds a NUL", "spec.poolRef.name", "'p1\\u0000x'", PK_SEV_DENY,
     "spec.poolRef.name", "holds a NUL character (\\u0000) at byte 2: the pool's name"},
    {"an annotation holds a NUL", "metadata.annotations", "{'note':'a\\u0000b'}", 0, NULL, NULL},
    {"foreign pool is no violation here", "spec.poolRef",
     "{'apiGroup':'" PK_CAPI_IPAM_GROUP "','kind':'InClusterIPPool','name':'x'}", 0, NULL, NULL},
    {"poolRef apiGroup missing in v1beta2", "spec.poolRef.apiGroup", NULL, PK_SEV_DENY,
     "spec.poolRef.apiGroup", "required"},
    {"poolRef apiGroup empty in v1beta2", "spec.poolRef.apiGroup", "''", PK_SEV_DENY,
     "spec.poolRef.apiGroup", "required"},
    {"poolRef apiGroup a number", "spec.poolRef.apiGroup", "7", PK_SEV_DENY,
     "spec.poolRef.apiGroup", "got 7 (a number)"},
    {"poolRef kind missing", "spec.poolRef.kind", NULL, PK_SEV_DENY, "spec.poolRef.kind",
     "required"},
    {"poolRef name empty", "spec.poolRef.name", "''", PK_SEV_DENY, "spec.poolRef.name",
     "must not be empty"},
    {"poolRef a string", "spec.poolRef", "'p1'", PK_SEV_DENY, "spec.poolRef",
     "got \"p1\" (a string)"},
    {"poolRef missing", "spec.poolRef", NULL, PK_SEV_DENY, "spec.poolRef", "required"},
    {"clusterName and label missing", "spec.clusterName", NULL, PK_SEV_DENY, "spec.clusterName",
     "required"},
    {"clusterName empty", "spec.clusterName", "''", PK_SEV_DENY, "spec.clusterName", "required"},
    {"clusterName too long", "spec.clusterName",
     "'cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc'", PK_SEV_DENY,
     "spec.clusterName", "is 64 characters long; a Cluster name has 1-63"},
    {"clusterName a number", "spec.clusterName", "5", PK_SEV_DENY, "spec.clusterName",
     "got 5 (a number)"},
    {"ownerReferences missing", "metadata.ownerReferences", NULL, PK_SEV_DENY,
     "metadata.ownerReferences", "required: the claim needs an owner reference"},
    {"ownerReferences empty", "metadata.ownerReferences", "[]", PK_SEV_DENY,
     "metadata.ownerReferences", "is empty"},
    {"ownerReferences an object", "metadata.ownerReferences", "{}", PK_SEV_DENY,
     "metadata.ownerReferences", "must be an array of owner references, got an object"},
    {"owner reference a string", "metadata.ownerReferences.0", "'m1'", PK_SEV_DENY,
     "metadata.ownerReferences[0]", "got \"m1\" (a string)"},
    {"controller is the string true", "metadata.ownerReferences.0.controller", "'true'",
     PK_SEV_DENY, "metadata.ownerReferences[0].controller", "got \"true\" (a string)"},
    {"blockOwnerDeletion is 1", "metadata.ownerReferences.0.blockOwnerDeletion", "1", PK_SEV_DENY,
     "metadata.ownerReferences[0].blockOwnerDeletion", "got 1 (a number)"},
    {"controller without blockOwnerDeletion", "metadata.ownerReferences.0.blockOwnerDeletion", NULL,
     PK_SEV_DENY, "metadata.ownerReferences[0].blockOwnerDeletion",
     "the controller reference VSphereMachine \"m1\" must set blockOwnerDeletion: true"},
    {"blockOwnerDeletion without controller", "metadata.ownerReferences.0.controller", "false",
     PK_SEV_DENY, "metadata.ownerReferences", "no owner reference has controller: true"},
    {"neither flag", "metadata.ownerReferences.0",
     "{'apiVersion':'infrastructure.cluster.x-k8s.io/v1beta1','kind':'VSphereMachine',"
     "'name':'m1','uid':'u1'}",
     PK_SEV_DENY, "metadata.ownerReferences",
     "no owner reference has controller: true and blockOwnerDeletion: true"},
    {"a good reference among others", "metadata.ownerReferences",
     "[{'apiVersion':'v1','kind':'Foo','name':'f','uid':'u0'},{'apiVersion':'v1',"
     "'kind':'VSphereMachine','name':'m1','uid':'u1','controller':true,"
     "'blockOwnerDeletion':true}]",
     0, NULL, NULL},
    {"two references, none the controller", "metadata.ownerReferences",
     "[{'apiVersion':'v1','kind':'Foo','name':'f','uid':'u0'},{'apiVersion':'v1',"
     "'kind':'VSphereMachine','name':'m1','uid':'u1','blockOwnerDeletion':true}]",
     PK_SEV_DENY, "metadata.ownerReferences",
     "2 owner references and none is the controller: Foo \"f\", VSphereMachine \"m1\"; set "
     "controller: true and blockOwnerDeletion: true on the reference to the infrastructure "
     "machine"},
    {"owner reference without uid", "metadata.ownerReferences.0.uid", NULL, PK_SEV_DENY,
     "metadata.ownerReferences[0].uid", "required: an owner reference names its owner by"},
    {"owner reference with an empty name", "metadata.ownerReferences.0.name", "''", PK_SEV_DENY,
     "metadata.ownerReferences[0].name", "required"},
    {"owner reference apiVersion a number", "metadata.ownerReferences.0.apiVersion", "1",
     PK_SEV_DENY, "metadata.ownerReferences[0].apiVersion", "must be a string, got 1"},
    {"unknown kind of " PK_POOL_GROUP, "spec.poolRef.kind", "'IPpool'", PK_SEV_DENY,
     "spec.poolRef.kind", "\"IPpool\" is not a kind of " PK_POOL_GROUP "; did you mean IPPool?"},
    {"kind of " PK_POOL_GROUP " near GlobalIPPool", "spec.poolRef.kind", "'GlobalPool'",
     PK_SEV_DENY, "spec.poolRef.kind", "did you mean GlobalIPPool?"},
    {"kind of " PK_POOL_GROUP " in lower case", "spec.poolRef.kind", "'globalippool'", PK_SEV_DENY,
     "spec.poolRef.kind", "did you mean GlobalIPPool?"},
    {"kind of " PK_POOL_GROUP " far from both", "spec.poolRef.kind", "'Subnet'", PK_SEV_DENY,
     "spec.poolRef.kind", "did you mean IPPool or GlobalIPPool?"},
    {"no kind with " PK_POOL_GROUP, "spec.poolRef.kind", NULL, PK_SEV_DENY, "spec.poolRef.kind",
     "required: the kind of a pool of " PK_POOL_GROUP " (IPPool or "
     "GlobalIPPool); did you mean IPPool?"},
    {"an unknown kind of another group is no violation here", "spec.poolRef",
     "{'apiGroup':'ipam.example.com','kind':'IPpool','name':'x'}", 0, NULL, NULL},
    {"metadata an array", "metadata", "[]", PK_SEV_DENY, "metadata", "got an array"},
    {"spec missing", "spec", NULL, PK_SEV_DENY, "spec", "must be an object"},
    {"wrong kind", "kind", "'" PK_ADDRESS_KIND "'", PK_SEV_DENY, "kind",
     "must be IPAddressClaim, got \"" PK_ADDRESS_KIND "\""},
    {"unknown apiVersion", "apiVersion", "'" PK_CAPI_IPAM_GROUP "/v1alpha1'", PK_SEV_DENY,
     "apiVersion", "got \"" PK_CAPI_IPAM_GROUP "/v1alpha1\""},
};

static const struct edit_case claim_v1beta1_cases[] = {
    {"good v1beta1 claim", NULL, NULL, 0, NULL, NULL},
    {"v1beta1 without apiGroup is a warning", "spec.poolRef.apiGroup", NULL, PK_SEV_WARN,
     "spec.poolRef.apiGroup", "never a pool; set it (" PK_POOL_GROUP},
    {"deprecated label only is a warning", "spec.clusterName", NULL, PK_SEV_WARN,
     "spec.clusterName",
     "the label " PK_CLUSTER_NAME_LABEL "=\"c1\" is deprecated; set spec.clusterName"},
    {"empty clusterName with the label is a warning", "spec.clusterName", "''", PK_SEV_WARN,
     "spec.clusterName", "is deprecated"},
    {"label empty and no clusterName", "metadata.labels", "{'" PK_CLUSTER_NAME_LABEL "':''}", 0,
     NULL, NULL},
    {"v1beta1 owner references are checked too", "metadata.ownerReferences.0.controller", "'yes'",
     PK_SEV_DENY, "metadata.ownerReferences[0].controller", "got \"yes\""},
    {"v1beta1 poolRef kind missing", "spec.poolRef.kind", NULL, PK_SEV_DENY, "spec.poolRef.kind",
     "required"},
};

static void test_claim_create(void **state)
{
	(void)state;
	run_cases(claim_v1beta2, claim_cases, sizeof(claim_cases) / sizeof(claim_cases[0]),
	          pk_rules_check_claim);
	run_cases(claim_v1beta1, claim_v1beta1_cases,
	          sizeof(claim_v1beta1_cases) / sizeof(claim_v1beta1_cases[0]),
	          pk_rules_check_claim);

	/* In v1beta2 a lone deprecated label also passes, with the warning. */
	json_t *c = load(claim_v1beta2);
	edit(c, "spec.clusterName", NULL);
	edit(c, "metadata.labels", "{'" PK_CLUSTER_NAME_LABEL "':'c9'}");
	struct pk_violations v;
	pk_violations_init(&v);
	pk_rules_check_claim(c, NULL, &v);
	expect_none(&v, PK_SEV_DENY);
	expect(&v, PK_SEV_WARN, "spec.clusterName", "set spec.clusterName: \"c9\"");
	json_decref(c);

	/* Neither clusterName nor a non-empty label (the v1beta1 fixture's label emptied). */
	c = load(claim_v1beta1);
	edit(c, "spec.clusterName", NULL);
	edit(c, "metadata.labels", "{'" PK_CLUSTER_NAME_LABEL "':''}");
	pk_violations_init(&v);
	pk_rules_check_claim(c, NULL, &v);
	expect(&v, PK_SEV_DENY, "spec.clusterName", "required");
	json_decref(c);
}

/* ------------------------------------------------- claim repair and modes */

/*
 * Claims as the infrastructure providers create them, field for field from
 * their code: a poolkeeper pool, the deprecated cluster-name label and no
 * spec.clusterName, one owner reference to the provider's machine object.
 */
static json_t *provider_claim(const char *refs, const char *spec_cluster)
{
	char buf[2048];
	snprintf(buf, sizeof(buf),
	         "{'apiVersion':'" PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA1 "','kind':'" PK_CLAIM_KIND
	         "',"
	         "'metadata':{'name':'vm-1-0-0','namespace':'default',"
	         "'labels':{'" PK_CLUSTER_NAME_LABEL "':'c1'},'ownerReferences':%s},"
	         "'spec':{%s'poolRef':{'apiGroup':'" PK_POOL_GROUP "','kind':'" PK_POOL_KIND "',"
	         "'name':'p1'}}}",
	         refs, spec_cluster);
	return load(buf);
}

#define CAPV_REFS    "[" CAPV_REF "]"
#define CAPM3_REFS   "[" CAPM3_REF "]"
#define CAPO_REFS    "[" CAPO_REF "]"
#define PROXMOX_REFS "[" PROXMOX_REF "]"

struct repair_case {
	const char *name;
	const char *refs;
	const char *spec_cluster; /* "'clusterName':...," or "" */
	long candidate;
	bool controller, bod;
	bool cluster, replace; /* the label is copied; by replace */
	const char *note;      /* the owner-reference note, NULL: none */
};

static const struct repair_case repair_cases[] = {
    {"CAPV: one reference, no flags, label only", CAPV_REFS, "", 0, true, true, true, false,
     "set controller: true and blockOwnerDeletion: true on the owner reference to VSphereVM "
     "\"vm-1\"; VSphereVM's provider should set them itself"},
    {"CAPM3: controller without blockOwnerDeletion", CAPM3_REFS, "", 0, false, true, true, false,
     "set blockOwnerDeletion: true on the owner reference to Metal3Data \"data-1\"; "
     "Metal3Data's provider should set it itself"},
    {"CAPO: one reference, no flags", CAPO_REFS, "", 0, true, true, true, false,
     "OpenStackServer's provider should set them itself"},
    {"Proxmox: both flags, nothing but the label", PROXMOX_REFS, "", 0, false, false, true, false,
     NULL},
    {"Proxmox with clusterName set: nothing at all", PROXMOX_REFS, "'clusterName':'c1',", 0, false,
     false, false, false, NULL},
    {"an empty clusterName is replaced", PROXMOX_REFS, "'clusterName':'',", 0, false, false, true,
     true, NULL},
    {"one reference with blockOwnerDeletion only: controller added",
     "[{'apiVersion':'v1','kind':'Foo','name':'f','uid':'u0','blockOwnerDeletion':true}]", "", 0,
     true, false, true, false,
     "set controller: true on the owner reference to Foo \"f\"; Foo's provider should set it "
     "itself"},
    {"no owner reference", "[]", "", -1, false, false, true, false, NULL},
    {"two references, none the controller",
     "[{'apiVersion':'v1','kind':'Foo','name':'f','uid':'u0'}," CAPV_REF "]", "", -1, false, false,
     true, false, NULL},
    {"two references, the second the controller",
     "[{'apiVersion':'v1','kind':'Foo','name':'f','uid':'u0'}," CAPM3_REF "]", "", 1, false, true,
     true, false, "Metal3Data \"data-1\""},
    {"controller a string: nothing repaired",
     "[{'apiVersion':'v1','kind':'Foo','name':'f','uid':'u0','controller':'true'}]", "", -1, false,
     false, true, false, NULL},
    {"blockOwnerDeletion a number: nothing repaired",
     "[{'apiVersion':'v1','kind':'Foo','name':'f','uid':'u0','blockOwnerDeletion':1}]", "", -1,
     false, false, true, false, NULL},
    {"uid missing: nothing repaired", "[{'apiVersion':'v1','kind':'Foo','name':'f'}]", "", -1,
     false, false, true, false, NULL},
    {"a reference that is not an object: nothing repaired", "['vm-1']", "", -1, false, false, true,
     false, NULL},
    {"another good reference next to a malformed one: nothing repaired",
     "[{'kind':'Foo'}," CAPV_REF "]", "", -1, false, false, true, false, NULL},
};

static void test_claim_repair_plan(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(repair_cases) / sizeof(repair_cases[0]); i++) {
		const struct repair_case *rc = &repair_cases[i];
		print_message("case: %s\n", rc->name);
		json_t *c = provider_claim(rc->refs, rc->spec_cluster);
		struct pk_claim_repair plan;
		pk_rules_plan_claim_repair(c, PK_ENFORCE_REPAIR, &plan);
		assert_int_equal(plan.candidate, rc->candidate);
		assert_int_equal(plan.set_controller, rc->controller);
		assert_int_equal(plan.set_block_owner_deletion, rc->bod);
		assert_int_equal(plan.cluster_name != NULL, rc->cluster);
		if (rc->cluster)
			assert_string_equal(plan.cluster_name, "c1");
		assert_int_equal(plan.cluster_name_replace, rc->replace);

		/* The notes: one per owner-reference repair, none for the label in repair mode. */
		struct pk_violations v;
		pk_violations_init(&v);
		pk_rules_note_claim_repair(c, &plan, PK_ENFORCE_REPAIR, &v);
		expect_none(&v, PK_SEV_DENY);
		assert_int_equal(v.n, rc->note != NULL ? 1 : 0);
		if (rc->note != NULL)
			assert_non_null(strstr(v.items[0].message, rc->note));

		/* Applied, what was repairable now passes; what was not still denies. */
		json_t *fixed = json_deep_copy(c);
		assert_int_equal(pk_rules_apply_claim_repair(fixed, &plan), PK_OK);
		pk_violations_init(&v);
		pk_rules_check_claim_mode(fixed, NULL, PK_ENFORCE_REPAIR, &v);
		if (rc->candidate >= 0) {
			assert_int_equal(v.n, 0);
		} else {
			expect(&v, PK_SEV_DENY, v.items[0].field, "");
			assert_non_null(strstr(v.items[v.n - 1].message,
			                       "[claim enforcement mode \"repair\"; change it with "
			                       "--claim-enforcement, chart value "
			                       "webhook.claimEnforcement]"));
		}
		json_decref(fixed);

		/* deny and warn modes never touch owner references; the label is still copied,
		 * with the deprecation note. */
		pk_rules_plan_claim_repair(c, PK_ENFORCE_DENY, &plan);
		assert_false(plan.set_controller || plan.set_block_owner_deletion);
		assert_int_equal(plan.cluster_name != NULL, rc->cluster);
		pk_violations_init(&v);
		pk_rules_note_claim_repair(c, &plan, PK_ENFORCE_WARN, &v);
		assert_int_equal(v.n, rc->cluster ? 1 : 0);
		if (rc->cluster)
			expect(&v, PK_SEV_WARN, "spec.clusterName", "deprecated label");
		/* ignore: no plan */
		pk_rules_plan_claim_repair(c, PK_ENFORCE_IGNORE, &plan);
		assert_false(pk_rules_claim_repair_any(&plan));
		json_decref(c);
	}

	/* Only claims on a poolkeeper pool of a known kind are planned. */
	json_t *c = provider_claim(CAPV_REFS, "");
	struct pk_claim_repair plan;
	edit(c, "spec.poolRef.kind", "'IPpool'");
	pk_rules_plan_claim_repair(c, PK_ENFORCE_REPAIR, &plan);
	assert_false(pk_rules_claim_repair_any(&plan));
	edit(c, "spec.poolRef",
	     "{'apiGroup':'" PK_CAPI_IPAM_GROUP "','kind':'InClusterIPPool',"
	     "'name':'p'}");
	pk_rules_plan_claim_repair(c, PK_ENFORCE_REPAIR, &plan);
	assert_false(pk_rules_claim_repair_any(&plan));
	json_decref(c);
	/* A plan that does not fit the object is refused, not applied. */
	c = provider_claim("[]", "");
	plan = (struct pk_claim_repair){.candidate = 0, .set_controller = true};
	assert_int_equal(pk_rules_apply_claim_repair(c, &plan), PK_ERR_INVALID);
	json_decref(c);
}

/* spec.clusterName, else the deprecated label: the one fallback every part uses. */
static void test_claim_cluster_name(void **state)
{
	(void)state;
	static const struct {
		const char *claim;
		const char *want;
		bool from_label;
	} cases[] = {
	    {"{'spec':{'clusterName':'c1'},'metadata':{'labels':{'" PK_CLUSTER_NAME_LABEL
	     "':'c2'}}}",
	     "c1", false},
	    {"{'spec':{'clusterName':''},'metadata':{'labels':{'" PK_CLUSTER_NAME_LABEL "':'c2'}}}",
	     "c2", true},
	    {"{'spec':{},'metadata':{'labels':{'" PK_CLUSTER_NAME_LABEL "':'c2'}}}", "c2", true},
	    {"{'spec':{'clusterName':''},'metadata':{'labels':{'" PK_CLUSTER_NAME_LABEL "':''}}}",
	     NULL, false},
	    {"{'spec':{'clusterName':7},'metadata':{'labels':{'other':'c2'}}}", NULL, false},
	    {"{'spec':{'clusterName':'c\\u0000x'}}", NULL, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *c = load_fixture(cases[i].claim, JSON_ALLOW_NUL);
		bool from_label = !cases[i].from_label;
		const char *got = pk_rules_claim_cluster_name(c, &from_label);
		if (cases[i].want == NULL)
			assert_null(got);
		else
			assert_string_equal(got, cases[i].want);
		assert_int_equal(from_label, cases[i].from_label);
		json_decref(c);
	}
}

/* The mode a claim falls under: by poolRef.apiGroup, whatever the kind. */
static void test_claim_enforcement(void **state)
{
	(void)state;
	json_t *ours = load("{'spec':{'poolRef':{'apiGroup':'" PK_POOL_GROUP "','kind':'Pool'}}}");
	json_t *theirs =
	    load("{'spec':{'poolRef':{'apiGroup':'example.com','kind':'" PK_POOL_KIND "'}}}");
	json_t *none = load("{'spec':{}}");
	bool mine = false;
	assert_int_equal(pk_rules_claim_enforcement(ours, PK_ENFORCE_DENY, PK_ENFORCE_WARN, &mine),
	                 PK_ENFORCE_DENY);
	assert_true(mine);
	assert_int_equal(
	    pk_rules_claim_enforcement(theirs, PK_ENFORCE_DENY, PK_ENFORCE_WARN, &mine),
	    PK_ENFORCE_WARN);
	assert_false(mine);
	assert_int_equal(
	    pk_rules_claim_enforcement(none, PK_ENFORCE_REPAIR, PK_ENFORCE_IGNORE, NULL),
	    PK_ENFORCE_IGNORE);
	assert_true(pk_rules_is_capi_ipam_version(PK_CAPI_V1BETA1));
	assert_true(pk_rules_is_capi_ipam_version(PK_CAPI_V1BETA2));
	assert_false(pk_rules_is_capi_ipam_version("v1alpha1"));
	assert_false(pk_rules_is_capi_ipam_version(NULL));
	json_decref(none);
	json_decref(theirs);
	json_decref(ours);
}

static void test_claim_modes(void **state)
{
	(void)state;
	struct pk_violations v;
	/* CAPM3 after a repair the requester was not allowed: controller, no blockOwnerDeletion */
	json_t *c = provider_claim(CAPM3_REFS, "'clusterName':'c1',");
	pk_violations_init(&v);
	pk_rules_check_claim_mode(c, NULL, PK_ENFORCE_REPAIR, &v);
	expect_none(&v, PK_SEV_DENY);
	expect(&v, PK_SEV_WARN, "metadata.ownerReferences[0].blockOwnerDeletion",
	       "the controller reference Metal3Data \"data-1\" has no blockOwnerDeletion: true");
	pk_violations_init(&v);
	pk_rules_check_claim_mode(c, NULL, PK_ENFORCE_DENY, &v);
	expect(&v, PK_SEV_DENY, "metadata.ownerReferences[0].blockOwnerDeletion",
	       "must set blockOwnerDeletion: true, so that deleting it waits for the claim to be "
	       "gone [claim enforcement mode \"deny\"; change it with --claim-enforcement, chart "
	       "value webhook.claimEnforcement]");
	pk_violations_init(&v);
	pk_rules_check_claim_mode(c, NULL, PK_ENFORCE_WARN, &v);
	expect_none(&v, PK_SEV_DENY);
	expect(&v, PK_SEV_WARN, "metadata.ownerReferences[0].blockOwnerDeletion",
	       "would be denied: the controller reference");
	pk_violations_init(&v);
	pk_rules_check_claim_mode(c, NULL, PK_ENFORCE_IGNORE, &v);
	assert_int_equal(v.n, 0);
	json_decref(c);

	/* Only the last DENY carries the mode; a foreign claim names --foreign-claims. */
	c = provider_claim("[]", "");
	edit(c, "spec.poolRef",
	     "{'apiGroup':'" PK_CAPI_IPAM_GROUP "','kind':'InClusterIPPool',"
	     "'name':'p'}");
	edit(c, "metadata.labels", NULL);
	pk_violations_init(&v);
	pk_rules_check_claim_mode(c, NULL, PK_ENFORCE_DENY, &v);
	assert_int_equal(pk_violations_count(&v, PK_SEV_DENY), 2);
	assert_null(strstr(v.items[0].message, "mode"));
	assert_non_null(strstr(v.items[1].message, "[foreign claims mode \"deny\"; change it with "
	                                           "--foreign-claims, chart value "
	                                           "webhook.foreignClaims]"));
	json_decref(c);

	/* On UPDATE metadata is never checked, in any mode. */
	json_t *old = provider_claim(CAPV_REFS, "'clusterName':'c1',");
	c = json_deep_copy(old);
	edit(c, "metadata.ownerReferences", "[]");
	static const enum pk_enforcement modes[] = {PK_ENFORCE_REPAIR, PK_ENFORCE_DENY,
	                                            PK_ENFORCE_WARN};
	for (size_t i = 0; i < 3; i++) {
		pk_violations_init(&v);
		pk_rules_check_claim_mode(c, old, modes[i], &v);
		assert_int_equal(v.n, 0);
	}
	json_decref(c);
	json_decref(old);

	/* A DENY message near the cap still ends with the mode (the message is cut, not it). */
	char big[300];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	c = provider_claim(PROXMOX_REFS, "");
	json_object_set_new(json_object_get(json_object_get(c, "spec"), "poolRef"), "kind",
	                    json_string(big));
	pk_violations_init(&v);
	pk_rules_check_claim_mode(c, NULL, PK_ENFORCE_REPAIR, &v);
	const char *m = v.items[v.n - 1].message;
	assert_string_equal(m + strlen(m) - strlen("webhook.claimEnforcement]"),
	                    "webhook.claimEnforcement]");
	json_decref(c);

	enum pk_enforcement e = PK_ENFORCE_IGNORE;
	assert_int_equal(pk_rules_parse_enforcement("repair", &e), PK_OK);
	assert_int_equal(e, PK_ENFORCE_REPAIR);
	assert_int_equal(pk_rules_parse_enforcement("Repair", &e), PK_ERR_INVALID);
	assert_int_equal(pk_rules_parse_enforcement(NULL, &e), PK_ERR_INVALID);
	assert_int_equal(e, PK_ENFORCE_REPAIR);
}

static void test_claim_update(void **state)
{
	(void)state;
	static const struct edit_case cases[] = {
	    /* Metadata-only changes always pass, even ones CREATE would deny. */
	    {"finalizer added", "metadata.finalizers", "['" PK_CLAIM_FINALIZER "']", 0, NULL, NULL},
	    {"owner references removed by the garbage collector", "metadata.ownerReferences", NULL,
	     0, NULL, NULL},
	    {"owner reference rewritten by clusterctl move", "metadata.ownerReferences.0.uid",
	     "'u2'", 0, NULL, NULL},
	    {"delete-for-move annotation", "metadata.annotations",
	     "{'" PK_DELETE_FOR_MOVE_ANNOTATION "':''}", 0, NULL, NULL},
	    {"poolRef name changed", "spec.poolRef.name", "'p2'", PK_SEV_DENY, "spec.poolRef.name",
	     "spec is immutable: changed from \"p1\" to \"p2\""},
	    {"clusterName removed", "spec.clusterName", NULL, PK_SEV_DENY, "spec.clusterName",
	     "changed from \"c1\" to nothing"},
	    {"field added", "spec.extra", "1", PK_SEV_DENY, "spec.extra",
	     "changed from nothing to 1"},
	    {"spec removed", "spec", NULL, PK_SEV_DENY, "spec",
	     "changed from an object to nothing"},
	    {"spec replaced by a string", "spec", "'x'", PK_SEV_DENY, "spec",
	     "changed from an object to \"x\""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct edit_case *c = &cases[i];
		print_message("case: %s\n", c->name);
		json_t *old = load(claim_v1beta2);
		json_t *obj = load(claim_v1beta2);
		edit(obj, c->path, c->value);
		struct pk_violations v;
		pk_violations_init(&v);
		pk_rules_check_claim(obj, old, &v);
		if (c->field == NULL)
			assert_int_equal(v.n, 0);
		else
			expect(&v, c->sev, c->field, c->needle);
		json_decref(old);
		json_decref(obj);
	}

	/* An old claim that CREATE would deny still takes metadata updates. */
	json_t *old = load(claim_v1beta1);
	edit(old, "spec.clusterName", NULL);
	edit(old, "metadata.labels", NULL);
	json_t *obj = json_deep_copy(old);
	edit(obj, "metadata.finalizers", "[]");
	struct pk_violations v;
	pk_violations_init(&v);
	pk_rules_check_claim(obj, old, &v);
	assert_int_equal(v.n, 0);
	json_decref(old);
	json_decref(obj);

	json_t *s = load("'x'");
	pk_violations_init(&v);
	pk_rules_check_claim(s, NULL, &v);
	expect(&v, PK_SEV_DENY, "object", "got \"x\" (a string)");
	json_decref(s);
}

/* -------------------------------------------------------------- addresses */

static const char ipaddress_base[] =
    "{'apiVersion':'" PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2 "','kind':'" PK_ADDRESS_KIND "',"
    "'metadata':{'name':'m1-eth0','namespace':'default','ownerReferences':["
    "{'apiVersion':'" PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2 "','kind':'" PK_CLAIM_KIND
    "','name':'m1-eth0',"
    "'uid':'u1','controller':true,'blockOwnerDeletion':true},"
    "{'apiVersion':'" PK_POOL_API_VERSION "','kind':'" PK_POOL_KIND "','name':'p1','uid':'u2',"
    "'blockOwnerDeletion':true}]},"
    "'spec':{'address':'10.0.0.5','prefix':24,'gateway':'10.0.0.1',"
    "'claimRef':{'name':'m1-eth0'},"
    "'poolRef':{'apiGroup':'" PK_POOL_GROUP "','kind':'" PK_POOL_KIND "','name':'p1'}}}";

static const struct edit_case ipaddress_cases[] = {
    {"good address", NULL, NULL, 0, NULL, NULL},
    {"name holds a NUL", "metadata.name", "'m1\\u0000'", PK_SEV_DENY, "metadata.name",
     "holds a NUL"},
    {"address holds a NUL", "spec.address", "'10.0.0.5\\u0000x'", PK_SEV_DENY, "spec.address",
     "holds a NUL character (\\u0000) at byte 8"},
    {"claimRef name holds a NUL", "spec.claimRef.name", "'m1-eth0\\u0000'", PK_SEV_DENY,
     "spec.claimRef.name", "at byte 7"},
    {"IPv6", "spec",
     "{'address':'2001:db8::5','prefix':64,'gateway':'2001:db8::1','claimRef':{'name':"
     "'m1-eth0'},'poolRef':{'apiGroup':'" PK_POOL_GROUP "','kind':'" PK_POOL_KIND "','name':'p1'}}",
     0, NULL, NULL},
    {"no gateway", "spec.gateway", NULL, 0, NULL, NULL},
    {"empty gateway", "spec.gateway", "''", 0, NULL, NULL},
    {"pool reference with controller false", "metadata.ownerReferences.1.controller", "false", 0,
     NULL, NULL},
    {"address does not parse", "spec.address", "'10.0.0.300'", PK_SEV_DENY, "spec.address",
     "\"10.0.0.300\""},
    {"address too long", "spec.address", "'2001:0db8:0000:0000:0000:0000:0000:00001'", PK_SEV_DENY,
     "spec.address", "is 40 characters long; at most 39"},
    {"address a number", "spec.address", "10", PK_SEV_DENY, "spec.address", "got 10 (a number)"},
    {"address missing", "spec.address", NULL, PK_SEV_DENY, "spec.address", "required"},
    {"prefix too long for IPv4", "spec.prefix", "33", PK_SEV_DENY, "spec.prefix",
     "must be an integer 0..32 for IPv4, got 33"},
    {"prefix a string", "spec.prefix", "'24'", PK_SEV_DENY, "spec.prefix", "got \"24\" (a string)"},
    {"prefix missing", "spec.prefix", NULL, PK_SEV_DENY, "spec.prefix", "required"},
    {"gateway of the other family", "spec.gateway", "'2001:db8::1'", PK_SEV_DENY, "spec.gateway",
     "\"2001:db8::1\" is IPv6 but spec.address 10.0.0.5 is IPv4"},
    {"gateway does not parse", "spec.gateway", "'gw'", PK_SEV_DENY, "spec.gateway", "\"gw\""},
    {"gateway a boolean", "spec.gateway", "true", PK_SEV_DENY, "spec.gateway",
     "got true (a boolean)"},
    {"claimRef name empty", "spec.claimRef.name", "''", PK_SEV_DENY, "spec.claimRef.name",
     "must not be empty"},
    {"claimRef missing", "spec.claimRef", NULL, PK_SEV_DENY, "spec.claimRef", "required"},
    {"claimRef an array", "spec.claimRef", "[]", PK_SEV_DENY, "spec.claimRef", "got an array"},
    {"poolRef kind missing", "spec.poolRef.kind", NULL, PK_SEV_DENY, "spec.poolRef.kind",
     "required"},
    {"no owner reference to the claim", "metadata.ownerReferences.0.name", "'other'", PK_SEV_DENY,
     "metadata.ownerReferences", "no owner reference to IPAddressClaim \"m1-eth0\""},
    {"claim reference not controller", "metadata.ownerReferences.0.controller", "false",
     PK_SEV_DENY, "metadata.ownerReferences[0].controller",
     "the reference to IPAddressClaim \"m1-eth0\" must set controller: true"},
    {"claim reference without blockOwnerDeletion", "metadata.ownerReferences.0.blockOwnerDeletion",
     NULL, PK_SEV_DENY, "metadata.ownerReferences[0].blockOwnerDeletion",
     "must set blockOwnerDeletion: true"},
    {"claim reference controller a string", "metadata.ownerReferences.0.controller", "'true'",
     PK_SEV_DENY, "metadata.ownerReferences[0].controller", "got \"true\" (a string)"},
    {"no owner reference to the pool", "metadata.ownerReferences.1", NULL, PK_SEV_DENY,
     "metadata.ownerReferences", "no owner reference to the pool IPPool \"p1\""},
    {"pool reference of another kind", "metadata.ownerReferences.1.kind",
     "'" PK_GLOBAL_POOL_KIND "'", PK_SEV_DENY, "metadata.ownerReferences",
     "no owner reference to the pool IPPool \"p1\""},
    {"pool reference without blockOwnerDeletion", "metadata.ownerReferences.1.blockOwnerDeletion",
     "false", PK_SEV_DENY, "metadata.ownerReferences[1].blockOwnerDeletion",
     "the reference to the pool IPPool \"p1\" must set blockOwnerDeletion: true"},
    {"ownerReferences missing", "metadata.ownerReferences", NULL, PK_SEV_DENY,
     "metadata.ownerReferences", "required"},
    {"wrong kind", "kind", "'" PK_CLAIM_KIND "'", PK_SEV_DENY, "kind", "must be IPAddress"},
    {"spec a number", "spec", "3", PK_SEV_DENY, "spec", "got 3 (a number)"},
};

static void test_ipaddress(void **state)
{
	(void)state;
	run_cases(ipaddress_base, ipaddress_cases,
	          sizeof(ipaddress_cases) / sizeof(ipaddress_cases[0]), pk_rules_check_ipaddress);

	/* v1beta1: poolRef without apiGroup is a warning, prefix 128 fits IPv6. */
	json_t *a = load(ipaddress_base);
	edit(a, "apiVersion", "'" PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA1 "'");
	edit(a, "spec.poolRef.apiGroup", NULL);
	edit(a, "spec.address", "'2001:db8::5'");
	edit(a, "spec.prefix", "128");
	edit(a, "spec.gateway", NULL);
	struct pk_violations v;
	pk_violations_init(&v);
	pk_rules_check_ipaddress(a, NULL, &v);
	expect_none(&v, PK_SEV_DENY);
	expect(&v, PK_SEV_WARN, "spec.poolRef.apiGroup", "not set");
	edit(a, "spec.prefix", "129");
	pk_violations_init(&v);
	pk_rules_check_ipaddress(a, NULL, &v);
	expect(&v, PK_SEV_DENY, "spec.prefix", "0..128 for IPv6, got 129");
	json_decref(a);

	/* UPDATE: spec immutable, metadata free. */
	json_t *old = load(ipaddress_base);
	json_t *obj = load(ipaddress_base);
	edit(obj, "metadata.finalizers", "[]");
	edit(obj, "metadata.ownerReferences", NULL);
	pk_violations_init(&v);
	pk_rules_check_ipaddress(obj, old, &v);
	assert_int_equal(v.n, 0);
	edit(obj, "spec.address", "'10.0.0.6'");
	pk_violations_init(&v);
	pk_rules_check_ipaddress(obj, old, &v);
	expect(&v, PK_SEV_DENY, "spec.address",
	       "spec is immutable: changed from \"10.0.0.5\" to \"10.0.0.6\"; delete and "
	       "re-create the IPAddress");
	json_decref(old);
	json_decref(obj);
}

/* The external ID a backend's record has is written at create and never changes: changed, a
 * release could act on another tenant's record. Other annotations stay free. */
static void test_ipaddress_external_id_kept(void **state)
{
	(void)state;
	static const char field[] = "metadata.annotations[\"ipam.poolkeeper.io/external-id\"]";
	json_t *old = load(ipaddress_base);
	json_object_set_new(json_object_get(old, "metadata"), "annotations",
	                    json_pack("{s:s}", PK_EXTERNAL_ID_ANNOTATION, "lease-1"));
	json_t *obj = json_deep_copy(old);
	json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
	struct pk_violations v;
	json_object_set_new(ann, "example.org/note", json_string("x"));
	pk_violations_init(&v);
	pk_rules_check_ipaddress(obj, old, &v);
	assert_int_equal(v.n, 0);
	/* another tenant's record named */
	json_object_set_new(ann, PK_EXTERNAL_ID_ANNOTATION, json_string("lease-2"));
	pk_violations_init(&v);
	pk_rules_check_ipaddress(obj, old, &v);
	expect(&v, PK_SEV_DENY, field,
	       "is set by poolkeeper when it creates the IPAddress and may not change: was "
	       "\"lease-1\", now \"lease-2\"");
	/* removed */
	json_object_del(ann, PK_EXTERNAL_ID_ANNOTATION);
	pk_violations_init(&v);
	pk_rules_check_ipaddress(obj, old, &v);
	expect(&v, PK_SEV_DENY, field, "was \"lease-1\", now not set");
	/* added after create */
	pk_violations_init(&v);
	pk_rules_check_ipaddress(old, obj, &v);
	expect(&v, PK_SEV_DENY, field, "was not set, now \"lease-1\"");
	/* a NUL inside is another value */
	json_object_set_new(ann, PK_EXTERNAL_ID_ANNOTATION, json_stringn("lease-1\0x", 9));
	pk_violations_init(&v);
	pk_rules_check_ipaddress(obj, old, &v);
	expect(&v, PK_SEV_DENY, field, "was \"lease-1\"");
	/* at create, any value is the controller's to write */
	pk_violations_init(&v);
	pk_rules_check_ipaddress(obj, NULL, &v);
	expect_none(&v, PK_SEV_DENY);
	json_decref(old);
	json_decref(obj);
}

/* An IPAddress against its claim: the claim named, on the same pool; one message either way. */
static void test_ipaddress_claim(void **state)
{
	(void)state;
	struct pk_violations v;
	json_t *a = load(ipaddress_base);
	json_t *claim = load("{'metadata':{'name':'m1-eth0','namespace':'default'},'spec':{"
	                     "'poolRef':{'apiGroup':'" PK_POOL_GROUP "','kind':'" PK_POOL_KIND "',"
	                     "'name':'p1'}}}");
	pk_violations_init(&v);
	pk_rules_check_ipaddress_claim(a, claim, &v);
	assert_int_equal(v.n, 0);

	/* no such claim */
	pk_violations_init(&v);
	pk_rules_check_ipaddress_claim(a, NULL, &v);
	expect(&v, PK_SEV_DENY, "spec.claimRef.name",
	       "\"m1-eth0\" must name an IPAddressClaim of the IPAddress's namespace whose "
	       "spec.poolRef is the IPAddress's pool (IPPool \"p1\"); there is no such claim");
	assert_int_equal(v.n, 1);
	/* a claim on another pool: each of apiGroup, kind and name counts, and the claim's own
	 * pool is never told */
	const char *other[][2] = {{"spec.poolRef.name", "'p2-secret'"},
	                          {"spec.poolRef.kind", "'" PK_GLOBAL_POOL_KIND "'"},
	                          {"spec.poolRef.apiGroup", "'" PK_CAPI_IPAM_GROUP "'"},
	                          {"spec.poolRef.apiGroup", NULL},
	                          {"spec.poolRef", "'p1'"}};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		json_t *c = json_deep_copy(claim);
		edit(c, other[i][0], other[i][1]);
		pk_violations_init(&v);
		pk_rules_check_ipaddress_claim(a, c, &v);
		expect(&v, PK_SEV_DENY, "spec.claimRef.name", "there is no such claim");
		assert_null(strstr(v.items[0].message, "secret"));
		json_decref(c);
	}
	/* the controller's view: the claim owning the IPAddress is not the one claimRef names */
	json_t *c = json_deep_copy(claim);
	edit(c, "metadata.name", "'m2-eth0'");
	pk_violations_init(&v);
	pk_rules_check_ipaddress_claim(a, c, &v);
	expect(&v, PK_SEV_DENY, "spec.claimRef.name",
	       "\"m1-eth0\" is not IPAddressClaim \"m2-eth0\", which owns this IPAddress");
	json_decref(c);
	/* an embedded NUL makes another name, never a match of its prefix */
	json_t *nul = json_deep_copy(a);
	json_object_set_new(json_object_get(json_object_get(nul, "spec"), "claimRef"), "name",
	                    json_stringn("m1-eth0\0x", 9));
	pk_violations_init(&v);
	pk_rules_check_ipaddress_claim(nul, claim, &v);
	expect(&v, PK_SEV_DENY, "spec.claimRef.name", "is not IPAddressClaim");
	json_decref(nul);
	/* missing claimRef or poolRef: reported by pk_rules_check_ipaddress, not twice */
	edit(a, "spec.claimRef", NULL);
	pk_violations_init(&v);
	pk_rules_check_ipaddress_claim(a, NULL, &v);
	assert_int_equal(v.n, 0);
	json_decref(a);
	json_decref(claim);
}

/* An IPAddress against its pool: usable, or (adopting) drained; never the gateway. */
static void test_ipaddress_in_pool(void **state)
{
	(void)state;
	struct pk_pool p;
	struct pk_violations v;
	decode("{'addresses':['10.0.0.0/24'],'prefix':24,'gateway':'10.0.0.1',"
	       "'excludedAddresses':['10.0.0.100']}",
	       &p);
	static const struct {
		const char *address;
		bool allocated;
		const char *says; /* NULL: fine */
	} cases[] = {
	    {"10.0.0.5", false, NULL},
	    {"10.0.0.5", true, NULL},
	    {"10.0.0.1", false,
	     "\"10.0.0.1\" is not a usable address of IPPool ns/p1 (it is the "
	     "gateway)"},
	    {"10.0.0.1", true, "(it is the gateway)"},
	    {"10.0.0.255", true, "(it is the subnet's broadcast address)"},
	    {"10.0.0.100", false, "(it is in spec.excludedAddresses)"},
	    {"10.0.0.100", true, NULL}, /* excluded after it was handed out: it stays */
	    {"10.0.1.5", true, "\"10.0.1.5\" is not a usable address of IPPool ns/p1"},
	    {"2001:db8::5", false, "is not a usable address"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *a = load(ipaddress_base);
		json_object_set_new(json_object_get(a, "spec"), "address",
		                    json_string(cases[i].address));
		pk_violations_init(&v);
		pk_rules_check_ipaddress_in_pool(a, &p, "IPPool ns/p1", cases[i].allocated, &v);
		if (cases[i].says == NULL) {
			if (v.n != 0) {
				dump(&v);
				fail_msg("%s (allocated %d): want no violation", cases[i].address,
				         cases[i].allocated);
			}
		} else {
			expect(&v, PK_SEV_DENY, "spec.address", cases[i].says);
		}
		json_decref(a);
	}
	/* an address that does not parse, or no usable set: reported elsewhere */
	json_t *a = load(ipaddress_base);
	edit(a, "spec.address", "'nope'");
	pk_violations_init(&v);
	pk_rules_check_ipaddress_in_pool(a, &p, "IPPool ns/p1", false, &v);
	assert_int_equal(v.n, 0);
	pk_rules_check_ipaddress_in_pool(a, NULL, "IPPool ns/p1", false, &v);
	assert_int_equal(v.n, 0);
	json_decref(a);
	pk_pool_release(&p);
}

/* Uniqueness within a pool: parsed addresses compared, nothing said of the holder. */
static void test_ipaddress_unique(void **state)
{
	(void)state;
	struct pk_violations v;
	json_t *a = load(ipaddress_base);
	const char *others[] = {"10.0.0.6", NULL, "garbage", "10.0.0.7"};
	pk_violations_init(&v);
	pk_rules_check_ipaddress_unique(a, others, 4, &v);
	assert_int_equal(v.n, 0);
	const char *taken[] = {"10.0.0.6", "10.0.0.5"};
	pk_violations_init(&v);
	pk_rules_check_ipaddress_unique(a, taken, 2, &v);
	expect(&v, PK_SEV_DENY, "spec.address",
	       "\"10.0.0.5\" is already held by another IPAddress of the pool");
	assert_int_equal(v.n, 1);
	/* the same IPv6 address written two ways; the other family never matches */
	edit(a, "spec.address", "'fd00:0:0::1'");
	const char *six[] = {"::ffff:10.0.0.5", "fd00::1"};
	pk_violations_init(&v);
	pk_rules_check_ipaddress_unique(a, six, 1, &v);
	assert_int_equal(v.n, 0);
	pk_rules_check_ipaddress_unique(a, six, 2, &v);
	expect(&v, PK_SEV_DENY, "spec.address", "\"fd00:0:0::1\" is already held");
	/* nothing to compare */
	pk_violations_init(&v);
	pk_rules_check_ipaddress_unique(a, NULL, 0, &v);
	edit(a, "spec.address", "'10.0.0.500'");
	pk_rules_check_ipaddress_unique(a, taken, 2, &v);
	assert_int_equal(v.n, 0);
	json_decref(a);
}

/* The fixture pools in common/tests/fixtures pass every pool rule. */
static void test_fixture_pools(void **state)
{
	(void)state;
	const char *root = getenv("PK_SOURCE_DIR");
	if (root == NULL)
		skip();
	static const char *const files[] = {"pool-v4.json", "pool-v6.json"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/common/tests/fixtures/%s", root, files[i]);
		json_error_t e;
		json_t *pool = json_load_file(path, 0, &e);
		if (pool == NULL)
			fail_msg("%s: %s", path, e.text);
		struct pk_violations v;
		pk_violations_init(&v);
		pk_rules_check_pool(pool, NULL, &v);
		if (v.n != 0)
			dump(&v);
		assert_int_equal(v.n, 0);
		json_decref(pool);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pool_rules),
	    cmocka_unit_test(test_pool_update_and_non_objects),
	    cmocka_unit_test(test_pool_kinds_of_the_table),
	    cmocka_unit_test(test_pool_overlap),
	    cmocka_unit_test(test_pool_shrink),
	    cmocka_unit_test(test_claim_create),
	    cmocka_unit_test(test_claim_update),
	    cmocka_unit_test(test_ipaddress),
	    cmocka_unit_test(test_ipaddress_external_id_kept),
	    cmocka_unit_test(test_ipaddress_claim),
	    cmocka_unit_test(test_ipaddress_in_pool),
	    cmocka_unit_test(test_ipaddress_unique),
	    cmocka_unit_test(test_claim_repair_plan),
	    cmocka_unit_test(test_claim_modes),
	    cmocka_unit_test(test_claim_cluster_name),
	    cmocka_unit_test(test_claim_enforcement),
	    cmocka_unit_test(test_fixture_pools),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
