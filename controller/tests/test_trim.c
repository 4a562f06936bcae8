/*
 * test_trim.c - the cached copies of API objects: what the controller
 * reads survives, the rest (managedFields, the last-applied annotation,
 * other labels and annotations, a Cluster's spec and status) is gone, and
 * every reader - the facts the decisions take, every patch and object
 * built from a cached object, the reads the claim reconciler and its backend make themselves -
 * answers the same for the trimmed object as for the whole one, also when members have the wrong
 * JSON type.
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
#include "tenant.h"

#include "decide.h"
#include "external_id.h"
#include "incluster.h"
#include "jpack.h"
#include "json.h"
#include "json_fixture.h"
#include "objects.h"
#include "rules.h"
#include "trim.h"

/* ---- recorded objects, as the API server returns them ---- */

/* What the API server adds to every object it returns; the controller never reads it. */
static const char *const MANAGED_FIELDS =
    "[{'manager':'kubectl-client-side-apply','operation':'Update','apiVersion':'v1',"
    "'time':'2026-01-02T03:04:05Z','fieldsType':'FieldsV1',"
    "'fieldsV1':{'f:metadata':{'f:annotations':{'.':{},"
    "'f:kubectl.kubernetes.io/last-applied-configuration':{}},'f:labels':{'.':{}}},"
    "'f:spec':{'.':{}}}},"
    "{'manager':'poolkeeper-controller','operation':'Update','apiVersion':'v1',"
    "'time':'2026-01-02T03:04:06Z','fieldsType':'FieldsV1','subresource':'status',"
    "'fieldsV1':{'f:status':{'.':{},'f:conditions':{'.':{},'k:{type:Ready}':{'.':{},"
    "'f:lastTransitionTime':{},'f:message':{},'f:reason':{},'f:status':{},'f:type':{}}}}}}]";

/* A fixture as the API server would return it: with managedFields. */
static json_t *recorded(const char *text)
{
	json_t *o = load(text);
	json_t *md = json_object_get(o, "metadata");
	if (json_is_object(md))
		assert_int_equal(json_object_set_new(md, "managedFields", load(MANAGED_FIELDS)), 0);
	return o;
}

static const char *const CLAIM =
    "{'apiVersion':'ipam.cluster.x-k8s.io/v1beta2','kind':'IPAddressClaim',"
    "'metadata':{'name':'prod-md-0-x7k2p-ip-0','namespace':'team-a',"
    "'uid':'5b0c7a1e-0000-4000-8000-000000000001','resourceVersion':'48213','generation':2,"
    "'creationTimestamp':'2026-01-02T03:04:05Z',"
    "'finalizers':['other.example.com/hold','ipam.poolkeeper.io/release-address'],"
    "'labels':{'cluster.x-k8s.io/cluster-name':'prod',"
    "'cluster.x-k8s.io/deployment-name':'prod-md-0'},"
    "'annotations':{'kubectl.kubernetes.io/last-applied-configuration':'{kind:IPAddressClaim}',"
    "'example.com/note':'keep out'},"
    "'ownerReferences':[{'apiVersion':'infrastructure.cluster.x-k8s.io/v1beta1',"
    "'kind':'Metal3Machine','name':'prod-md-0-x7k2p','uid':'m-1','controller':true,"
    "'blockOwnerDeletion':true}]},"
    "'spec':{'poolRef':{'apiGroup':'ipam.poolkeeper.io','kind':'IPPool','name':'nodes'},"
    "'clusterName':'prod'},"
    "'status':{'addressRef':{'name':'prod-md-0-x7k2p-ip-0'},'conditions':["
    "{'type':'Ready','status':'True','reason':'Allocated','message':'address 10.0.0.5',"
    "'lastTransitionTime':'2026-01-02T03:04:06Z','observedGeneration':2},"
    "{'type':'Audited','status':'False','reason':'Pending','message':'',"
    "'lastTransitionTime':'2026-01-02T03:04:07Z'}]}}";

static const char *const CLAIM_TRIMMED =
    "{'apiVersion':'ipam.cluster.x-k8s.io/v1beta2',"
    "'metadata':{'name':'prod-md-0-x7k2p-ip-0','namespace':'team-a',"
    "'uid':'5b0c7a1e-0000-4000-8000-000000000001','resourceVersion':'48213','generation':2,"
    "'finalizers':[1,'ipam.poolkeeper.io/release-address'],"
    "'labels':{'cluster.x-k8s.io/cluster-name':'prod'}},"
    "'spec':{'poolRef':{'apiGroup':'ipam.poolkeeper.io','kind':'IPPool','name':'nodes'},"
    "'clusterName':'prod'},"
    "'status':{'addressRef':{'name':'prod-md-0-x7k2p-ip-0'},'conditions':["
    "{'type':'Ready','status':'True','reason':'Allocated','message':'address 10.0.0.5',"
    "'lastTransitionTime':'2026-01-02T03:04:06Z','observedGeneration':2},"
    "{'type':'Audited','status':'False','reason':'Pending','message':'',"
    "'lastTransitionTime':'2026-01-02T03:04:07Z'}]}}";

static const char *const ADDRESS =
    "{'apiVersion':'ipam.cluster.x-k8s.io/v1beta2','kind':'IPAddress',"
    "'metadata':{'name':'prod-md-0-x7k2p-ip-0','namespace':'team-a','uid':'a-1',"
    "'resourceVersion':'48214','generation':1,'creationTimestamp':'2026-01-02T03:04:06Z',"
    "'finalizers':['ipam.poolkeeper.io/protect-address'],"
    "'labels':{'cluster.x-k8s.io/cluster-name':'prod'},"
    "'ownerReferences':[{'apiVersion':'ipam.cluster.x-k8s.io/v1beta2','kind':'IPAddressClaim',"
    "'name':'prod-md-0-x7k2p-ip-0','uid':'5b0c7a1e-0000-4000-8000-000000000001',"
    "'controller':true,'blockOwnerDeletion':true},"
    "{'apiVersion':'ipam.poolkeeper.io/v1alpha1','kind':'IPPool','name':'nodes','uid':'p-1',"
    "'controller':false,'blockOwnerDeletion':true}]},"
    "'spec':{'address':'10.0.0.5','prefix':24,'gateway':'10.0.0.1',"
    "'claimRef':{'name':'prod-md-0-x7k2p-ip-0'},"
    "'poolRef':{'apiGroup':'ipam.poolkeeper.io','kind':'IPPool','name':'nodes'}}}";

static const char *const ADDRESS_TRIMMED =
    "{'metadata':{'name':'prod-md-0-x7k2p-ip-0','namespace':'team-a','uid':'a-1',"
    "'resourceVersion':'48214','finalizers':['ipam.poolkeeper.io/protect-address'],"
    "'ownerReferences':[{'kind':'IPAddressClaim','uid':'5b0c7a1e-0000-4000-8000-000000000001',"
    "'controller':true}]},"
    "'spec':{'address':'10.0.0.5','prefix':24,'gateway':'10.0.0.1',"
    "'claimRef':{'name':'prod-md-0-x7k2p-ip-0'},"
    "'poolRef':{'apiGroup':'ipam.poolkeeper.io','kind':'IPPool','name':'nodes'}}}";

static const char *const POOL =
    "{'apiVersion':'ipam.poolkeeper.io/v1alpha1','kind':'IPPool',"
    "'metadata':{'name':'nodes','namespace':'team-a','uid':'p-1','resourceVersion':'47000',"
    "'generation':3,'creationTimestamp':'2026-01-01T00:00:00Z',"
    "'finalizers':['ipam.poolkeeper.io/protect-pool'],'labels':{'team':'a'},"
    "'annotations':{'kubectl.kubernetes.io/last-applied-configuration':'{kind:IPPool}'}},"
    "'spec':{'addresses':['10.0.0.0/24'],'prefix':24,'gateway':'10.0.0.1'},"
    "'status':{'ipAddresses':{'total':'253','used':'1','free':'252','outOfRange':'0'},"
    "'conditions':[{'type':'Ready','status':'True','reason':'Ready',"
    "'message':'252 of 253 addresses free','lastTransitionTime':'2026-01-01T00:00:01Z',"
    "'observedGeneration':3}],"
    "'quarantinedAddresses':[{'address':'10.0.0.9','until':'2026-01-01T00:10:00Z'}]}}";

static const char *const POOL_TRIMMED =
    "{'metadata':{'name':'nodes','namespace':'team-a','uid':'p-1','resourceVersion':'47000',"
    "'generation':3,'finalizers':['ipam.poolkeeper.io/protect-pool']},"
    "'spec':{'addresses':['10.0.0.0/24'],'prefix':24,'gateway':'10.0.0.1'},"
    "'status':{'ipAddresses':{'total':'253','used':'1','free':'252','outOfRange':'0'},"
    "'conditions':[{'type':'Ready','status':'True','reason':'Ready',"
    "'message':'252 of 253 addresses free','lastTransitionTime':'2026-01-01T00:00:01Z',"
    "'observedGeneration':3}],"
    "'quarantinedAddresses':[{'address':'10.0.0.9','until':'2026-01-01T00:10:00Z'}]}}";

static const char *const CLUSTER =
    "{'apiVersion':'cluster.x-k8s.io/v1beta2','kind':'Cluster',"
    "'metadata':{'name':'prod','namespace':'team-a','uid':'k-1','resourceVersion':'46000',"
    "'generation':5,'finalizers':['cluster.cluster.x-k8s.io'],"
    "'labels':{'cluster.x-k8s.io/cluster-name':'prod'},"
    "'annotations':{'cluster.x-k8s.io/paused':'','example.com/owner':'ops'}},"
    "'spec':{'paused':false,'clusterNetwork':{'pods':{'cidrBlocks':['192.168.0.0/16']}},"
    "'controlPlaneRef':{'apiGroup':'controlplane.cluster.x-k8s.io',"
    "'kind':'KubeadmControlPlane','name':'prod-cp'},"
    "'topology':{'classRef':{'name':'quick-start'},'version':'v1.33.0'}},"
    "'status':{'phase':'Provisioned','conditions':[{'type':'Available','status':'True',"
    "'reason':'Available','lastTransitionTime':'2026-01-01T00:00:00Z'}]}}";

static const char *const CLUSTER_TRIMMED =
    "{'metadata':{'name':'prod','namespace':'team-a',"
    "'annotations':{'cluster.x-k8s.io/paused':''}},'spec':{'paused':false}}";

/* ---- kept and dropped ---- */

static void test_kept_and_dropped(void **state)
{
	(void)state;
	struct {
		const char *full, *trimmed;
		json_t *(*trim)(const json_t *);
	} cases[] = {
	    {CLAIM, CLAIM_TRIMMED, pk_trim_claim},
	    {ADDRESS, ADDRESS_TRIMMED, pk_trim_address},
	    {POOL, POOL_TRIMMED, pk_trim_pool},
	    {CLUSTER, CLUSTER_TRIMMED, pk_trim_cluster},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *full = recorded(cases[i].full);
		json_t *t = cases[i].trim(full);
		assert_non_null(t);
		assert_json(t, cases[i].trimmed);
		const json_t *md = json_object_get(t, "metadata");
		assert_null(json_object_get(md, "managedFields"));
		assert_null(json_object_get(md, "creationTimestamp"));
		assert_null(json_object_get(json_object_get(md, "annotations"),
		                            "kubectl.kubernetes.io/last-applied-configuration"));
		/* trimming again changes nothing */
		json_t *again = cases[i].trim(t);
		assert_true(json_equal(t, again));
		json_decref(again);
		json_decref(t);
		json_decref(full);
	}
}

static void test_annotations_kept(void **state)
{
	(void)state;
	json_t *claim =
	    load("{'metadata':{'name':'c','annotations':{"
	         "'clusterctl.cluster.x-k8s.io/delete-for-move':'',"
	         "'cluster.x-k8s.io/paused':'true','example.com/x':'y'},"
	         "'labels':{'example.com/x':'y'},'deletionTimestamp':'2026-01-03T00:00:00Z'}}");
	json_t *t = pk_trim_claim(claim);
	assert_json(t,
	            "{'metadata':{'name':'c','annotations':{"
	            "'clusterctl.cluster.x-k8s.io/delete-for-move':'',"
	            "'cluster.x-k8s.io/paused':''},'deletionTimestamp':'2026-01-03T00:00:00Z'}}");
	json_decref(t);
	json_decref(claim);

	json_t *pool = load("{'metadata':{'name':'p','deletionTimestamp':'2026-01-03T00:00:00Z',"
	                    "'annotations':{'cluster.x-k8s.io/paused':'',"
	                    "'clusterctl.cluster.x-k8s.io/delete-for-move':''}}}");
	t = pk_trim_pool(pool);
	assert_json(t, "{'metadata':{'name':'p','deletionTimestamp':'2026-01-03T00:00:00Z',"
	               "'annotations':{'cluster.x-k8s.io/paused':''}}}");
	json_decref(t);
	json_decref(pool);

	json_t *cluster =
	    load("{'metadata':{'name':'k'},'spec':{'paused':true,'x':1},'status':{}}");
	t = pk_trim_cluster(cluster);
	assert_json(t, "{'metadata':{'name':'k'},'spec':{'paused':true}}");
	json_decref(t);
	json_decref(cluster);

	/* An IPAddress keeps its backend's record ID, as long as poolkeeper writes one at most. */
	json_t *a = load("{'metadata':{'name':'a','annotations':{"
	                 "'ipam.poolkeeper.io/external-id':'rec-7','example.com/x':'y'}}}");
	t = pk_trim_address(a);
	assert_json(t, "{'metadata':{'name':'a','annotations':{"
	               "'ipam.poolkeeper.io/external-id':'rec-7'}}}");
	json_decref(t);
	char *big = malloc(PK_EXTERNAL_ID_MAX + 1);
	assert_non_null(big);
	memset(big, 'x', PK_EXTERNAL_ID_MAX);
	big[PK_EXTERNAL_ID_MAX] = '\0';
	json_object_set_new(pk_json_path(a, "metadata", "annotations"), PK_EXTERNAL_ID_ANNOTATION,
	                    json_string(big));
	t = pk_trim_address(a);
	assert_json(t, "{'metadata':{'name':'a'}}");
	json_decref(t);
	big[PK_EXTERNAL_ID_MAX - 1] = '\0';
	json_object_set_new(pk_json_path(a, "metadata", "annotations"), PK_EXTERNAL_ID_ANNOTATION,
	                    json_string(big));
	t = pk_trim_address(a);
	assert_string_equal(pk_external_id(t), big);
	json_decref(t);
	json_object_set_new(pk_json_path(a, "metadata", "annotations"), PK_EXTERNAL_ID_ANNOTATION,
	                    json_integer(7));
	t = pk_trim_address(a);
	assert_json(t, "{'metadata':{'name':'a'}}");
	json_decref(t);
	free(big);
	json_decref(a);
}

static void test_shares_nothing(void **state)
{
	(void)state;
	json_t *claim = recorded(CLAIM);
	json_t *t = pk_trim_claim(claim);
	/* a change to the whole object after trimming does not reach the copy, and back */
	json_array_append_new(json_object_get(json_object_get(claim, "metadata"), "finalizers"),
	                      json_string("late/one"));
	json_object_set_new(json_object_get(json_object_get(claim, "spec"), "poolRef"), "name",
	                    json_string("other"));
	json_object_set_new(json_object_get(t, "metadata"), "name", json_string("renamed"));
	json_decref(claim);
	assert_json(json_object_get(json_object_get(t, "metadata"), "finalizers"),
	            "[1,'ipam.poolkeeper.io/release-address']");
	assert_json(json_object_get(json_object_get(t, "spec"), "poolRef"),
	            "{'apiGroup':'ipam.poolkeeper.io','kind':'IPPool','name':'nodes'}");
	json_decref(t);
}

static void test_not_objects(void **state)
{
	(void)state;
	json_t *(*fns[])(const json_t *) = {pk_trim_claim, pk_trim_address, pk_trim_pool,
	                                    pk_trim_cluster};
	const char *bad[] = {"'x'", "1", "1.5", "[]", "[{}]", "null", "true", "false"};
	for (size_t f = 0; f < sizeof(fns) / sizeof(fns[0]); f++) {
		assert_null(fns[f](NULL));
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			json_t *v = load(bad[i]);
			assert_null(fns[f](v));
			json_decref(v);
		}
		json_t *empty = load("{}");
		json_t *t = fns[f](empty);
		assert_non_null(t);
		assert_int_equal(json_object_size(t), 0);
		json_decref(t);
		json_decref(empty);
	}
}

/* ---- every reader agrees ---- */

struct objs {
	json_t *claim, *address, *pool, *cluster;
};

/* Which change to the recorded objects is being checked, for failure messages. */
static char context[256] = "recorded objects";

#define SAME_FACT(field)                                                                \
	do {                                                                            \
		if ((int)fw.field != (int)ft.field)                                     \
			fail_msg("%s: facts." #field ": whole %d, trimmed %d", context, \
			         (int)fw.field, (int)ft.field);                         \
	} while (0)

static const json_t *at(const json_t *o, const char *const *path)
{
	for (; *path != NULL && o != NULL; path++)
		o = json_object_get(o, *path);
	return o;
}

static void same_json(const json_t *a, const json_t *b, const char *what)
{
	if (a == NULL && b == NULL)
		return;
	if (a != NULL && b != NULL && json_equal(a, b))
		return;
	char *x = a ? json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
	char *y = b ? json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
	print_error("%s: %s: whole %s, trimmed %s\n", context, what, x ? x : "(none)",
	            y ? y : "(none)");
	free(x);
	free(y);
	fail();
}

/* Compares and releases two results. */
static void same_new(json_t *a, json_t *b, const char *what)
{
	same_json(a, b, what);
	json_decref(a);
	json_decref(b);
}

static void same_str(const char *a, const char *b, const char *what)
{
	if ((a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0))
		fail_msg("%s: %s: whole %s, trimmed %s", context, what, a ? a : "(none)",
		         b ? b : "(none)");
}

/* The in-process backend's kind that the claim's poolRef names (incluster.h). */
static const struct pk_pool_kind *kind_of(const json_t *claim)
{
	return pk_incluster_kind(pk_json_path(claim, "spec", "poolRef"));
}

static void facts_of(const struct objs *o, struct pk_claim_facts *f)
{
	pk_claim_facts_from(o->claim, kind_of(o->claim), o->pool,
	                    pk_claim_cluster_name(o->claim) != NULL, o->cluster, o->address, f);
}

static void collect_quarantine(void *ud, const char *address, long long until)
{
	json_t *list = ud;
	json_array_append_new(
	    list, json_pack("{s:s, s:I}", "address", address, "until", (json_int_t)until));
}

/* The reads claim_reconciler.c makes of cached objects itself (the rest go through decide.c and
 * objects.c, called below). */
static const char *const claim_reads[][5] = {
    {"apiVersion"},
    {"metadata", "name"},
    {"metadata", "namespace"},
    {"metadata", "uid"},
    {"metadata", "generation"},
    {"metadata", "deletionTimestamp"},
    {"spec", "poolRef", "apiGroup"},
    {"spec", "poolRef", "kind"},
    {"spec", "poolRef", "name"},
    {"status", "addressRef", "name"},
};
static const char *const address_reads[][5] = {
    {"metadata", "name"},        {"metadata", "namespace"},       {"metadata", "uid"},
    {"spec", "address"},         {"spec", "poolRef", "apiGroup"}, {"spec", "poolRef", "kind"},
    {"spec", "poolRef", "name"},
};
static const char *const pool_reads[][5] = {
    {"metadata", "name"},
    {"metadata", "namespace"},
    {"metadata", "uid"},
    {"metadata", "generation"},
    {"metadata", "deletionTimestamp"},
    {"spec"},
    {"status", "quarantinedAddresses"},
};
static const char *const cluster_reads[][5] = {
    {"metadata", "name"},
    {"metadata", "namespace"},
    {"spec", "paused"},
};
/* Annotations read by their key alone (informers.c's pause changes; decide.c reads them
 * through the facts). */
static const char *const pool_keys[][5] = {{"metadata", "annotations", PK_PAUSED_ANNOTATION}};
static const char *const cluster_keys[][5] = {{"metadata", "annotations", PK_PAUSED_ANNOTATION}};
static const char *const claim_keys[][5] = {
    {"metadata", "annotations", PK_PAUSED_ANNOTATION},
    {"metadata", "annotations", PK_DELETE_FOR_MOVE_ANNOTATION}};

static void same_reads(const json_t *a, const json_t *b, const char *const (*reads)[5], size_t n,
                       const char *kind)
{
	for (size_t i = 0; i < n; i++) {
		char what[160];
		snprintf(what, sizeof(what), "%s %s.%s.%s", kind, reads[i][0],
		         reads[i][1] ? reads[i][1] : "", reads[i][2] ? reads[i][2] : "");
		same_json(at(a, reads[i]), at(b, reads[i]), what);
	}
}

static void same_keys(const json_t *a, const json_t *b, const char *const (*keys)[5], size_t n,
                      const char *kind)
{
	for (size_t i = 0; i < n; i++)
		if ((at(a, keys[i]) == NULL) != (at(b, keys[i]) == NULL))
			fail_msg("%s: %s %s: there in one only", context, kind, keys[i][2]);
}

/* The facts decide.c finds, and the members read directly. */
static void agree_facts(const struct objs *w, const struct objs *t)
{
	struct pk_claim_facts fw, ft;
	facts_of(w, &fw);
	facts_of(t, &ft);
	SAME_FACT(ours);
	SAME_FACT(pool_in_scope);
	SAME_FACT(deleting);
	SAME_FACT(has_finalizer);
	SAME_FACT(delete_for_move);
	SAME_FACT(paused);
	SAME_FACT(bound);
	SAME_FACT(cluster);
	SAME_FACT(pool);
	SAME_FACT(address);
	SAME_FACT(address_has_finalizer);
	same_str(fw.pool_text, ft.pool_text, "facts.pool_text");
	same_str(fw.cluster_text, ft.cluster_text, "facts.cluster_text");
	same_str(fw.claim_text, ft.claim_text, "facts.claim_text");
	same_str(pk_claim_cluster_name(w->claim), pk_claim_cluster_name(t->claim), "cluster name");

	same_reads(w->claim, t->claim, claim_reads, sizeof(claim_reads) / sizeof(claim_reads[0]),
	           "claim");
	same_reads(w->address, t->address, address_reads,
	           sizeof(address_reads) / sizeof(address_reads[0]), "address");
	same_reads(w->pool, t->pool, pool_reads, sizeof(pool_reads) / sizeof(pool_reads[0]),
	           "pool");
	same_reads(w->cluster, t->cluster, cluster_reads,
	           sizeof(cluster_reads) / sizeof(cluster_reads[0]), "cluster");
	same_keys(w->claim, t->claim, claim_keys, sizeof(claim_keys) / sizeof(claim_keys[0]),
	          "claim");
	same_keys(w->pool, t->pool, pool_keys, 1, "pool");
	same_keys(w->cluster, t->cluster, cluster_keys, 1, "cluster");
}

/* Finalizer patches: resourceVersion and the entry's index. Only poolkeeper's own finalizers
 * are ever added or removed, so only they are kept (trim.h). */
static void agree_finalizer_patches(const struct objs *w, const struct objs *t)
{
	const char *fins[] = {PK_CLAIM_FINALIZER, PK_ADDRESS_FINALIZER, PK_POOL_FINALIZER};
	const json_t *objs[][2] = {
	    {w->claim, t->claim}, {w->address, t->address}, {w->pool, t->pool}};
	for (size_t o = 0; o < 3; o++) {
		for (size_t f = 0; f < sizeof(fins) / sizeof(fins[0]); f++) {
			same_new(pk_objects_finalizer_add_patch(objs[o][0], fins[f]),
			         pk_objects_finalizer_add_patch(objs[o][1], fins[f]), "add patch");
			same_new(pk_objects_finalizer_remove_patch(objs[o][0], fins[f]),
			         pk_objects_finalizer_remove_patch(objs[o][1], fins[f]),
			         "remove patch");
		}
	}
}

/* The claim's status, as claim_reconciler.c's claim_status builds it. */
static void agree_claim_status(const struct objs *w, const struct objs *t)
{
	for (int ready = 0; ready <= 1; ready++) {
		const json_t *gw =
		    json_object_get(json_object_get(w->claim, "metadata"), "generation");
		const json_t *gt =
		    json_object_get(json_object_get(t->claim, "metadata"), "generation");
		struct pk_condition cw = {.type = "Ready",
		                          .status = ready,
		                          .reason = ready ? "Allocated" : "PoolExhausted",
		                          .message = ready ? "address 10.0.0.5" : "no free address",
		                          .generation =
		                              json_is_integer(gw) ? json_integer_value(gw) : -1};
		struct pk_condition ct = cw;
		ct.generation = json_is_integer(gt) ? json_integer_value(gt) : -1;
		assert_int_equal(cw.generation, ct.generation);
		const json_t *sw = json_object_get(w->claim, "status");
		const json_t *st = json_object_get(t->claim, "status");
		assert_int_equal(pk_objects_condition_same(json_object_get(sw, "conditions"), &cw),
		                 pk_objects_condition_same(json_object_get(st, "conditions"), &ct));
		same_new(pk_objects_claim_status_patch(w->claim, "prod-md-0-x7k2p-ip-0", &cw, T0),
		         pk_objects_claim_status_patch(t->claim, "prod-md-0-x7k2p-ip-0", &ct, T0),
		         "claim status patch");
		same_new(pk_objects_claim_status_patch(w->claim, NULL, &cw, T0),
		         pk_objects_claim_status_patch(t->claim, NULL, &ct, T0),
		         "claim status patch");
		cw.v1beta1 = ct.v1beta1 = true;
		same_new(pk_objects_claim_status_patch(w->claim, NULL, &cw, T0),
		         pk_objects_claim_status_patch(t->claim, NULL, &ct, T0),
		         "v1beta1 claim status patch");
	}
}

/* The IPAddress made for the claim, and the pool's status and quarantine. */
static void agree_written(const struct objs *w, const struct objs *t)
{
	struct pk_ipaddress_spec s = {.api_version = "ipam.cluster.x-k8s.io/v1beta2",
	                              .address = "10.0.0.5",
	                              .prefix = 24,
	                              .gateway = "10.0.0.1",
	                              .pool_kind = kind_of(w->claim),
	                              .pool_name = "nodes",
	                              .pool_uid = "p-1"};
	same_new(pk_objects_ipaddress(w->claim, &s), pk_objects_ipaddress(t->claim, &s),
	         "IPAddress");

	struct pk_alloc_counts n;
	memset(&n, 0, sizeof(n));
	struct pk_condition pc = {.type = "Ready",
	                          .status = true,
	                          .reason = "Ready",
	                          .message = "252 of 253 addresses free",
	                          .generation = 3};
	same_new(pk_objects_pool_status_patch(w->pool, &n, &pc, NULL, T0),
	         pk_objects_pool_status_patch(t->pool, &n, &pc, NULL, T0), "pool status patch");
	json_t *qw = json_array(), *qt = json_array();
	pk_objects_pool_quarantine(w->pool, T0, collect_quarantine, qw);
	pk_objects_pool_quarantine(t->pool, T0, collect_quarantine, qt);
	same_new(qw, qt, "pool quarantine");
}

static void agree(const struct objs *w, const struct objs *t)
{
	agree_facts(w, t);
	agree_finalizer_patches(w, t);
	agree_claim_status(w, t);
	agree_written(w, t);
}

static void load_all(struct objs *o)
{
	o->claim = recorded(CLAIM);
	o->address = recorded(ADDRESS);
	o->pool = recorded(POOL);
	o->cluster = recorded(CLUSTER);
}

/* The controller's informers keep the trimmed object packed (jpack.h): the readers see it
 * unpacked, so that is what they are checked on. The packed form gives back an equal object
 * that prints the same. */
static json_t *kept(json_t *trimmed)
{
	if (trimmed == NULL)
		return NULL;
	unsigned char *p;
	size_t n;
	assert_int_equal(pk_jpack_encode(trimmed, &p, &n), PK_OK);
	json_t *back = pk_jpack_decode(p, n);
	free(p);
	assert_non_null(back);
	char *a = json_dumps(trimmed, JSON_COMPACT), *b = json_dumps(back, JSON_COMPACT);
	assert_non_null(a);
	assert_non_null(b);
	if (strcmp(a, b) != 0)
		fail_msg("%s: packed object differs:\n%s\n%s", context, a, b);
	free(a);
	free(b);
	json_decref(trimmed);
	return back;
}

static void trim_all(const struct objs *w, struct objs *t)
{
	t->claim = kept(pk_trim_claim(w->claim));
	t->address = kept(pk_trim_address(w->address));
	t->pool = kept(pk_trim_pool(w->pool));
	t->cluster = kept(pk_trim_cluster(w->cluster));
	assert_non_null(t->claim);
	assert_non_null(t->address);
	assert_non_null(t->pool);
	assert_non_null(t->cluster);
}

static void free_all(struct objs *o)
{
	json_decref(o->claim);
	json_decref(o->address);
	json_decref(o->pool);
	json_decref(o->cluster);
}

/*
 * Sets (or, with value NULL, deletes) the member at path; a segment that
 * is a number indexes an array.
 */
static void set_at(json_t *root, const char *const *path, const char *value)
{
	json_t *o = root;
	size_t n = 0;
	while (path[n] != NULL)
		n++;
	for (size_t i = 0; i + 1 < n; i++) {
		char *end = NULL;
		long idx = strtol(path[i], &end, 10);
		o = json_is_array(o) && *end == '\0' ? json_array_get(o, (size_t)idx)
		                                     : json_object_get(o, path[i]);
		if (o == NULL)
			fail_msg("fixture has no %s", path[i]);
	}
	char *end = NULL;
	long idx = strtol(path[n - 1], &end, 10);
	if (json_is_array(o) && *end == '\0') {
		assert_int_equal(value ? json_array_set_new(o, (size_t)idx, load(value))
		                       : json_array_remove(o, (size_t)idx),
		                 0);
		return;
	}
	assert_true(json_is_object(o));
	if (value != NULL)
		assert_int_equal(json_object_set_new(o, path[n - 1], load(value)), 0);
	else
		(void)json_object_del(o, path[n - 1]);
}

enum which { CLAIM_, ADDRESS_, POOL_, CLUSTER_ };

struct change {
	enum which which;
	const char *path[6];
	const char *value; /* JSON with ' for "; NULL deletes */
};

static const struct change changes[] = {
    /* a plain recorded set, and the states the decisions tell apart */
    {CLAIM_, {"kind"}, "'IPAddressClaim'"},
    {CLAIM_, {"metadata", "deletionTimestamp"}, "'2026-01-03T00:00:00Z'"},
    {CLAIM_, {"metadata", "annotations", PK_DELETE_FOR_MOVE_ANNOTATION}, "''"},
    {CLAIM_, {"metadata", "finalizers"}, NULL},
    {CLAIM_, {"spec", "clusterName"}, NULL},
    {CLAIM_, {"spec", "poolRef", "kind"}, "'GlobalIPPool'"},
    {CLAIM_, {"spec", "poolRef", "apiGroup"}, "'ipam.cluster.x-k8s.io'"},
    {CLAIM_, {"status", "conditions", "0", "status"}, "'False'"},
    {CLUSTER_, {"spec", "paused"}, "true"},
    {CLUSTER_, {"metadata", "annotations", PK_PAUSED_ANNOTATION}, NULL},
    {POOL_, {"metadata", "annotations", PK_PAUSED_ANNOTATION}, "''"},
    {POOL_, {"metadata", "deletionTimestamp"}, "'2026-01-03T00:00:00Z'"},
    {POOL_, {"metadata", "namespace"}, "'team-b'"},
    {ADDRESS_, {"metadata", "deletionTimestamp"}, "'2026-01-03T00:00:00Z'"},
    {ADDRESS_, {"metadata", "ownerReferences", "0", "uid"}, "'someone-else'"},
    {ADDRESS_, {"metadata", "ownerReferences", "0", "controller"}, "false"},
    {ADDRESS_, {"metadata", "ownerReferences", "1", "controller"}, "true"},
    {ADDRESS_, {"metadata", "ownerReferences", "0"}, NULL},
    {ADDRESS_, {"metadata", "finalizers"}, "[]"},
    /* finalizers: poolkeeper's at other indexes, twice, beside others' */
    {CLAIM_, {"metadata", "finalizers"}, "['ipam.poolkeeper.io/release-address']"},
    {CLAIM_,
     {"metadata", "finalizers"},
     "['ipam.poolkeeper.io/release-address','a.io/b','ipam.poolkeeper.io/release-address']"},
    {CLAIM_,
     {"metadata", "finalizers"},
     "['a.io/b','ipam.poolkeeper.io/protect-pool','c.io/d','e.io/f',"
     "'ipam.poolkeeper.io/release-address','g.io/h']"},
    {CLAIM_, {"metadata", "finalizers"}, "['a.io/b','c.io/d']"},
    {CLAIM_, {"metadata", "finalizers"}, "[4,'ipam.poolkeeper.io/release-address']"},
    {CLAIM_, {"metadata", "finalizers"}, "[-3,0,'ipam.poolkeeper.io/release-address']"},
    {ADDRESS_,
     {"metadata", "finalizers"},
     "['x.io/y','z.io/w','ipam.poolkeeper.io/protect-address','x.io/y']"},
    {POOL_,
     {"metadata", "finalizers"},
     "['x.io/y','ipam.poolkeeper.io/protect-address','ipam.poolkeeper.io/protect-pool']"},
    /* wrong JSON types and missing parts */
    {CLAIM_, {"apiVersion"}, "7"},
    {CLAIM_, {"metadata"}, "'x'"},
    {CLAIM_, {"metadata"}, "[1,2]"},
    {CLAIM_, {"metadata"}, NULL},
    {CLAIM_, {"metadata", "name"}, "{}"},
    {CLAIM_, {"metadata", "resourceVersion"}, "48213"},
    {CLAIM_, {"metadata", "generation"}, "'2'"},
    {CLAIM_, {"metadata", "finalizers"}, "'ipam.poolkeeper.io/release-address'"},
    {CLAIM_, {"metadata", "finalizers"}, "{'ipam.poolkeeper.io/release-address':1}"},
    {CLAIM_, {"metadata", "finalizers"}, "[1,null,{},'ipam.poolkeeper.io/release-address']"},
    {CLAIM_, {"metadata", "labels"}, "['cluster.x-k8s.io/cluster-name']"},
    {CLAIM_, {"metadata", "labels", PK_CLUSTER_NAME_LABEL}, "{'x':1}"},
    {CLAIM_, {"metadata", "annotations"}, "'x'"},
    {CLAIM_, {"metadata", "annotations", PK_DELETE_FOR_MOVE_ANNOTATION}, "null"},
    {CLAIM_, {"metadata", "deletionTimestamp"}, "5"},
    {CLAIM_, {"spec"}, "'x'"},
    {CLAIM_, {"spec", "poolRef"}, "['ipam.poolkeeper.io','IPPool','nodes']"},
    {CLAIM_, {"spec", "poolRef", "name"}, "true"},
    {CLAIM_, {"spec", "clusterName"}, "{}"},
    {CLAIM_, {"metadata", "annotations", PK_PAUSED_ANNOTATION}, "''"},
    {CLAIM_, {"metadata", "annotations", PK_PAUSED_ANNOTATION}, "'false'"},
    {CLAIM_, {"metadata", "annotations"}, "['cluster.x-k8s.io/paused']"},
    {CLAIM_, {"status"}, "[]"},
    {CLAIM_, {"status", "conditions"}, "'Ready'"},
    {CLAIM_, {"status", "conditions"}, "{'type':'Ready'}"},
    {CLAIM_, {"status", "conditions", "0"}, "'Ready'"},
    {CLAIM_, {"status", "conditions", "1"}, "[{}]"},
    {CLAIM_, {"status", "conditions", "0", "observedGeneration"}, "'2'"},
    {CLAIM_, {"status", "addressRef"}, "'prod-md-0-x7k2p-ip-0'"},
    {CLAIM_, {"status", "addressRef", "name"}, "null"},
    {ADDRESS_, {"metadata"}, "true"},
    {ADDRESS_, {"metadata", "ownerReferences"}, "'x'"},
    {ADDRESS_, {"metadata", "ownerReferences"}, "{'kind':'IPAddressClaim'}"},
    {ADDRESS_, {"metadata", "ownerReferences"}, "[1,'x',null,[],{}]"},
    {ADDRESS_, {"metadata", "ownerReferences", "0"}, "'IPAddressClaim'"},
    {ADDRESS_, {"metadata", "ownerReferences", "0", "controller"}, "'true'"},
    {ADDRESS_, {"metadata", "ownerReferences", "0", "controller"}, "1"},
    {ADDRESS_, {"metadata", "ownerReferences", "0", "kind"}, "[]"},
    {ADDRESS_, {"metadata", "ownerReferences", "0", "uid"}, "5"},
    {ADDRESS_, {"metadata", "finalizers"}, "{}"},
    {ADDRESS_, {"metadata", "uid"}, "[]"},
    {ADDRESS_, {"spec"}, "'x'"},
    {ADDRESS_, {"spec", "address"}, "10"},
    {ADDRESS_, {"spec", "poolRef"}, "null"},
    {POOL_, {"metadata"}, "null"},
    {POOL_, {"metadata", "annotations"}, "['cluster.x-k8s.io/paused']"},
    {POOL_, {"metadata", "generation"}, "3.5"},
    {POOL_, {"metadata", "uid"}, "{}"},
    {POOL_, {"metadata", "finalizers"}, "'ipam.poolkeeper.io/protect-pool'"},
    {POOL_, {"spec"}, "'x'"},
    {POOL_, {"status"}, "'x'"},
    {POOL_, {"status", "conditions"}, "{}"},
    {POOL_, {"status", "quarantinedAddresses"}, "[1,{'address':5},{'until':'x'}]"},
    {POOL_, {"status", "ipAddresses"}, "[]"},
    {CLUSTER_, {"metadata"}, "[]"},
    {CLUSTER_, {"metadata", "annotations"}, "'cluster.x-k8s.io/paused'"},
    {CLUSTER_, {"metadata", "name"}, "1"},
    {CLUSTER_, {"spec"}, "'paused'"},
    {CLUSTER_, {"spec"}, NULL},
    {CLUSTER_, {"spec", "paused"}, "'true'"},
    {CLUSTER_, {"spec", "paused"}, "1"},
    /* a NUL inside a string the controller reads: that field is invalid, in the whole
     * object and the trimmed one alike */
    {CLAIM_, {"spec", "poolRef", "name"}, "'nodes\\u0000x'"},
    {CLAIM_, {"spec", "poolRef", "kind"}, "'IPPool\\u0000'"},
    {CLAIM_, {"spec", "clusterName"}, "'prod\\u0000'"},
    {CLAIM_, {"metadata", "finalizers", "1"}, "'ipam.poolkeeper.io/release-address\\u0000'"},
    {CLAIM_, {"metadata", "labels", PK_CLUSTER_NAME_LABEL}, "'\\u0000prod'"},
    {CLAIM_, {"status", "addressRef", "name"}, "'prod-md-0-x7k2p-ip-0\\u0000'"},
    {CLAIM_, {"status", "conditions", "0", "message"}, "'a\\u0000b'"},
    {ADDRESS_, {"spec", "address"}, "'10.0.0.5\\u0000x'"},
    {ADDRESS_,
     {"metadata", "ownerReferences", "0", "uid"},
     "'5b0c7a1e-0000-4000-8000-000000000001\\u0000'"},
    {ADDRESS_, {"metadata", "ownerReferences", "0", "kind"}, "'IPAddressClaim\\u0000'"},
    {POOL_, {"metadata", "annotations", PK_PAUSED_ANNOTATION}, "'\\u0000'"},
    {POOL_,
     {"status", "quarantinedAddresses"},
     "[{'address':'10.0.0.9\\u0000','until':'2099-01-01T00:00:00Z'}]"},
    {CLUSTER_, {"metadata", "annotations", PK_PAUSED_ANNOTATION}, "'x\\u0000'"},
};

static void test_readers_agree(void **state)
{
	(void)state;
	struct objs w, t;
	load_all(&w);
	trim_all(&w, &t);
	agree(&w, &t);
	free_all(&t);
	free_all(&w);
}

static void test_readers_agree_on_changed_and_malformed_objects(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		const struct change *c = &changes[i];
		struct objs w, t;
		load_all(&w);
		json_t *target[] = {w.claim, w.address, w.pool, w.cluster};
		set_at(target[c->which], c->path, c->value);
		snprintf(context, sizeof(context), "change %zu (%s.%s.%s.%s = %s)", i, c->path[0],
		         c->path[1] ? c->path[1] : "", c->path[2] ? c->path[2] : "",
		         c->path[3] ? c->path[3] : "", c->value ? c->value : "deleted");
		trim_all(&w, &t);
		agree(&w, &t);
		free_all(&t);
		free_all(&w);
	}
	snprintf(context, sizeof(context), "recorded objects");
}

/* Only the objects themselves: the other three are missing. */
static void test_readers_agree_without_the_others(void **state)
{
	(void)state;
	struct objs w, t;
	load_all(&w);
	trim_all(&w, &t);
	struct objs w1 = {w.claim, NULL, NULL, NULL}, t1 = {t.claim, NULL, NULL, NULL};
	agree(&w1, &t1);
	struct objs w2 = {w.claim, w.address, NULL, w.cluster},
	            t2 = {t.claim, t.address, NULL, t.cluster};
	agree(&w2, &t2);
	free_all(&t);
	free_all(&w);
}

/* Strings holding a NUL are kept whole (length and all), never cut at the NUL. */
static void test_nul_strings_kept_whole(void **state)
{
	(void)state;
	json_t *a = load("{'metadata':{'name':'a','namespace':'t'},'spec':{'address':"
	                 "'10.0.0.5\\u0000x','poolRef':{'name':'p\\u0000q'}}}");
	json_t *t = pk_trim_address(a);
	const json_t *addr = json_object_get(json_object_get(t, "spec"), "address");
	assert_int_equal(json_string_length(addr), 10);
	assert_memory_equal(json_string_value(addr), "10.0.0.5\0x", 10);
	assert_null(pk_json_cstr(addr));
	assert_true(json_equal(json_object_get(a, "spec"), json_object_get(t, "spec")));
	/* and through the packed store */
	unsigned char *b;
	size_t n;
	assert_int_equal(pk_jpack_encode(t, &b, &n), PK_OK);
	json_t *back = pk_jpack_decode(b, n);
	assert_true(json_equal(back, t));
	free(b);
	json_decref(back);
	json_decref(t);
	json_decref(a);
}

/* ---- a tenant's long finalizer lists and other providers' claims ---- */

static void test_long_finalizer_list(void **state)
{
	(void)state;
	static const size_t at[] = {2150, 0, 4299, 4300};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		snprintf(context, sizeof(context), "4,300 finalizers, poolkeeper's at %zu", at[i]);
		struct objs w, t;
		load_all(&w);
		assert_true(
		    pk_test_set_tenant_finalizers(w.claim, 4300, at[i], PK_CLAIM_FINALIZER));
		assert_true(pk_test_json_text_size(w.claim) > 1190000);
		trim_all(&w, &t);
		/* the recorded claim trims to 700 bytes of text: a few more for the run lengths */
		size_t n = pk_test_json_text_size(t.claim);
		if (n > 800)
			fail_msg("%s: trimmed to %zu bytes", context, n);
		assert_int_equal(pk_objects_has_finalizer(t.claim, PK_CLAIM_FINALIZER),
		                 at[i] < 4300);
		json_t *rm = pk_objects_finalizer_remove_patch(t.claim, PK_CLAIM_FINALIZER);
		if (at[i] < 4300) {
			char path[64];
			snprintf(path, sizeof(path), "/metadata/finalizers/%zu", at[i]);
			assert_non_null(rm);
			assert_string_equal(
			    json_string_value(json_object_get(json_array_get(rm, 2), "path")),
			    path);
		} else {
			assert_null(rm);
		}
		json_decref(rm);
		agree(&w, &t);
		free_all(&t);
		free_all(&w);
	}
	snprintf(context, sizeof(context), "recorded objects");
}

/* The decision on a claim, from the objects a pass reads. */
static void decision_of(const struct objs *o, struct pk_claim_decision *d)
{
	struct pk_claim_facts f;
	facts_of(o, &f);
	pk_claim_facts_check_address(&f, o->claim, o->address, NULL, false);
	pk_decide_claim(&f, d);
}

static void test_foreign_claim(void **state)
{
	(void)state;
	const char *refs[] = {
	    "{'apiGroup':'ipam.cluster.x-k8s.io','kind':'InClusterIPPool','name':'nodes'}",
	    "{'apiGroup':'ipam.poolkeeper.io','kind':'Pool','name':'nodes'}",
	    "{'kind':'IPPool','name':'nodes'}",
	};
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
		struct objs w, t;
		load_all(&w);
		assert_true(pk_test_set_tenant_finalizers(w.claim, 4300, 4300, PK_CLAIM_FINALIZER));
		assert_int_equal(
		    json_object_set_new(json_object_get(w.claim, "spec"), "poolRef", load(refs[i])),
		    0);
		assert_false(
		    (pk_pool_kind_of_ref(pk_json_path(w.claim, "spec", "poolRef")) != NULL));
		trim_all(&w, &t);
		json_decref(t.claim);
		t.claim = kept(pk_trim_foreign_claim(w.claim));
		assert_json(t.claim,
		            "{'metadata':{'name':'prod-md-0-x7k2p-ip-0','namespace':'team-a',"
		            "'uid':'5b0c7a1e-0000-4000-8000-000000000001',"
		            "'resourceVersion':'48213'}}");
		/* deleted or not: not ours, and nothing is done */
		for (int deleting = 0; deleting <= 1; deleting++) {
			if (deleting)
				set_at(w.claim,
				       (const char *const[]){"metadata", "deletionTimestamp", NULL},
				       "'2026-01-03T00:00:00Z'");
			struct pk_claim_decision dw, dt;
			decision_of(&w, &dw);
			decision_of(&t, &dt);
			assert_int_equal(dw.action, PK_ACT_NONE);
			assert_int_equal(dt.action, dw.action);
			assert_string_equal(dt.reason, dw.reason);
			assert_string_equal(dt.message, dw.message);
		}
		free_all(&t);
		free_all(&w);
	}
}

/* The same trimmed copy whatever the list held before: trimming a trimmed copy again (run
 * lengths and all) changes nothing. */
static void test_finalizer_runs_trim_again(void **state)
{
	(void)state;
	json_t *claim = recorded(CLAIM);
	assert_true(pk_test_set_tenant_finalizers(claim, 300, 120, PK_CLAIM_FINALIZER));
	json_t *t = pk_trim_claim(claim);
	assert_json(json_object_get(json_object_get(t, "metadata"), "finalizers"),
	            "[120,'ipam.poolkeeper.io/release-address',179]");
	json_t *again = pk_trim_claim(t);
	assert_true(json_equal(t, again));
	json_decref(again);
	json_decref(t);
	json_decref(claim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kept_and_dropped),
	    cmocka_unit_test(test_annotations_kept),
	    cmocka_unit_test(test_shares_nothing),
	    cmocka_unit_test(test_not_objects),
	    cmocka_unit_test(test_nul_strings_kept_whole),
	    cmocka_unit_test(test_readers_agree),
	    cmocka_unit_test(test_readers_agree_on_changed_and_malformed_objects),
	    cmocka_unit_test(test_readers_agree_without_the_others),
	    cmocka_unit_test(test_long_finalizer_list),
	    cmocka_unit_test(test_foreign_claim),
	    cmocka_unit_test(test_finalizer_runs_trim_again),
	};
	return cmocka_run_group_tests_name("trim", tests, NULL, NULL);
}
