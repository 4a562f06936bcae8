/*
 * conformance_run.c - `poolkeeper conformance` against a live cluster: finds
 * the pool through discovery, creates the run's namespace (unless given),
 * Clusters, owner object and claims, waits for what the provider does with
 * them, judges it with the functions of conformance.c, prints the checks
 * and deletes everything it created, removing the finalizers a provider
 * left behind when it did not let go within the timeout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "conformance.h"
#include "flags.h"
#include "json.h"
#include "kube_client.h"
#include "kube_config.h"
#include "parse.h"

#define CLAIMS_MAX    (PK_CONF_BURST_MAX + 8)
#define POLL_NS       (250LL * 1000000)
#define MIN_SETTLE_NS (5LL * 1000000000)
#define NAME_LEN      64

struct run {
	struct pk_kube_client *c;
	struct pk_conf_pool_ref pool;
	char pool_version[32], pool_resource[128], pool_uid[64];
	bool namespaced;
	char ipam_v[16], cluster_v[16];
	char ns[NAME_LEN], id[8], owner_uid[64];
	bool own_ns;
	long long timeout_ns;
	unsigned burst;
	struct pk_conf_result res[PK_CONF_COUNT];
	char claims[CLAIMS_MAX][NAME_LEN]; /* every claim created, for the clean-up */
	size_t nclaims;
};

static struct pk_kube_ref claim_ref(const struct run *r, const char *name)
{
	return (struct pk_kube_ref){.group = PK_CAPI_IPAM_GROUP,
	                            .version = r->ipam_v,
	                            .resource = PK_CLAIM_RESOURCE,
	                            .namespace = r->ns,
	                            .name = name};
}

static struct pk_kube_ref address_ref(const struct run *r, const char *name)
{
	struct pk_kube_ref ref = claim_ref(r, name);
	ref.resource = PK_ADDRESS_RESOURCE;
	return ref;
}

static struct pk_kube_ref cluster_ref(const struct run *r, const char *name)
{
	return (struct pk_kube_ref){.group = PK_CAPI_CORE_GROUP,
	                            .version = r->cluster_v,
	                            .resource = PK_CLUSTER_RESOURCE,
	                            .namespace = r->ns,
	                            .name = name};
}

/* The owner object: a ConfigMap stands in for the infrastructure machine. */
static struct pk_kube_ref owner_ref(const struct run *r, const char *name)
{
	return (struct pk_kube_ref){
	    .version = "v1", .resource = "configmaps", .namespace = r->ns, .name = name};
}

static void name_of(const struct run *r, const char *role, char *buf, size_t len)
{
	snprintf(buf, len, "conf-%s%s%s", r->id, *role ? "-" : "", role);
}

static json_t *get(struct run *r, const struct pk_kube_ref *ref)
{
	json_t *obj = NULL;
	struct pk_kube_error e;
	if (pk_kube_client_get(r->c, ref, &obj, &e) != PK_KUBE_OK)
		return NULL;
	return obj;
}

/* Creates obj (taking it); on failure prints why and returns false. */
static bool create(struct run *r, const struct pk_kube_ref *ref, json_t *obj, char *uid,
                   size_t uid_len)
{
	json_t *out = NULL;
	struct pk_kube_error e = {0};
	enum pk_kube_reason rc =
	    obj ? pk_kube_client_create(r->c, ref, obj, NULL, &out, &e) : PK_KUBE_NOMEM;
	if (rc == PK_KUBE_OK && uid)
		snprintf(uid, uid_len, "%s",
		         pk_conf_or_none(pk_conf_str_at(out, "metadata", "uid")));
	else if (rc != PK_KUBE_OK)
		fprintf(stderr, "poolkeeper conformance: creating %s %s: %s: %s\n", ref->resource,
		        pk_conf_or_none(pk_json_cstr_at(json_object_get(obj, "metadata"), "name")),
		        pk_kube_reason_name(rc), e.message);
	json_decref(obj);
	json_decref(out);
	return rc == PK_KUBE_OK;
}

static bool create_cluster(struct run *r, const char *role, bool paused)
{
	char name[NAME_LEN], api[64];
	name_of(r, role, name, sizeof(name));
	snprintf(api, sizeof(api), "%s/%s", PK_CAPI_CORE_GROUP, r->cluster_v);
	struct pk_kube_ref ref = cluster_ref(r, NULL);
	return create(r, &ref,
	              json_pack("{s:s,s:s,s:{s:s},s:{s:b}}", "apiVersion", api, "kind",
	                        PK_CLUSTER_KIND, "metadata", "name", name, "spec", "paused",
	                        paused),
	              NULL, 0);
}

/*
 * A claim as an infrastructure provider builds it, modelled on Proxmox's
 * (github.com/ionos-cloud/cluster-api-provider-proxmox v0.7.0,
 * pkg/kubernetes/ipam/ipam.go, CreateIPAddressClaim): named after the
 * machine, its device and the family; the cluster-name label; an owner
 * reference to the machine with controller and blockOwnerDeletion
 * (SetControllerReference); spec.poolRef; and spec.clusterName, which the
 * contract asks for and v1beta2 has. Proxmox puts no finalizer of its own.
 */
static bool create_claim(struct run *r, const char *dev, const char *cluster_role,
                         const char *pool_name, char *name, size_t len)
{
	char owner[NAME_LEN], cluster[NAME_LEN], api[64];
	name_of(r, "", owner, sizeof(owner));
	name_of(r, cluster_role, cluster, sizeof(cluster));
	snprintf(name, len, "%.20s-%.16s-inet", owner, dev);
	snprintf(api, sizeof(api), "%s/%s", PK_CAPI_IPAM_GROUP, r->ipam_v);
	json_t *claim = json_pack(
	    "{s:s,s:s,s:{s:s,s:{s:s},s:[{s:s,s:s,s:s,s:s,s:b,s:b}]},s:{s:s,s:{s:s,s:s,s:s}}}",
	    "apiVersion", api, "kind", PK_CLAIM_KIND, "metadata", "name", name, "labels",
	    PK_CLUSTER_NAME_LABEL, cluster, "ownerReferences", "apiVersion", "v1", "kind",
	    "ConfigMap", "name", owner, "uid", r->owner_uid, "controller", 1, "blockOwnerDeletion",
	    1, "spec", "clusterName", cluster, "poolRef", "apiGroup", r->pool.group, "kind",
	    r->pool.kind, "name", pool_name);
	if (r->nclaims < CLAIMS_MAX)
		snprintf(r->claims[r->nclaims++], NAME_LEN, "%s", name);
	struct pk_kube_ref ref = claim_ref(r, NULL);
	return create(r, &ref, claim, NULL, 0);
}

/* Claim and IPAddress `name` as they are now (either may be NULL); true when the IPAddress
 * exists and the claim's status.addressRef is set. */
static bool bound(struct run *r, const char *name, json_t **claim, json_t **addr)
{
	struct pk_kube_ref cr = claim_ref(r, name), ar = address_ref(r, name);
	*claim = get(r, &cr);
	*addr = get(r, &ar);
	return *claim && *addr &&
	       pk_conf_str_at(json_object_get(*claim, "status"), "addressRef", "name") != NULL;
}

static bool wait_bound(struct run *r, const char *name, long long deadline, json_t **claim,
                       json_t **addr)
{
	for (;;) {
		if (bound(r, name, claim, addr))
			return true;
		if (pk_kube_now_ns() >= deadline)
			return false;
		json_decref(*claim);
		json_decref(*addr);
		pk_kube_sleep_ns(POLL_NS);
	}
}

static bool gone(struct run *r, const struct pk_kube_ref *ref)
{
	json_t *obj = NULL;
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_client_get(r->c, ref, &obj, &e);
	json_decref(obj);
	return rc == PK_KUBE_NOT_FOUND;
}

/* Until both are gone or the deadline passes. */
static bool wait_gone(struct run *r, const struct pk_kube_ref *a, const struct pk_kube_ref *b,
                      long long deadline)
{
	while (!(gone(r, a) && (b == NULL || gone(r, b)))) {
		if (pk_kube_now_ns() >= deadline)
			return false;
		pk_kube_sleep_ns(POLL_NS);
	}
	return true;
}

static void fmt_secs(long long ns, char *buf, size_t len)
{
	pk_format_duration(ns / 1000000 * 1000000, buf, len);
}

/* The checks on one bound claim and its IPAddress (addr NULL: none appeared). */
static void judge_bound(struct run *r, const char *name, const json_t *claim, const json_t *addr)
{
	struct pk_conf_result *res = r->res;
	char t[32];
	fmt_secs(r->timeout_ns, t, sizeof(t));
	if (addr == NULL) {
		pk_conf_set(&res[PK_CONF_ADDRESS_NAME], PK_CONF_FAIL, "no IPAddress %s after %s",
		            name, t);
		for (int c = PK_CONF_CLAIM_OWNER; c <= PK_CONF_ADDRESS_FINALIZER; c++)
			if (c != PK_CONF_CLAIM_FINALIZER)
				pk_conf_set(&res[c], PK_CONF_SKIP, "no IPAddress to inspect");
	} else {
		pk_conf_judge_address(addr, name, &r->pool, &res[PK_CONF_ADDRESS_NAME]);
		pk_conf_judge_owner(addr, pk_conf_str_at(claim, "metadata", "uid"), true,
		                    &res[PK_CONF_CLAIM_OWNER]);
		pk_conf_judge_owner(addr, r->pool_uid, false, &res[PK_CONF_POOL_OWNER]);
		pk_conf_judge_finalizer(addr, &res[PK_CONF_ADDRESS_FINALIZER]);
	}
	if (claim == NULL) {
		pk_conf_set(&res[PK_CONF_CLAIM_FINALIZER], PK_CONF_FAIL, "claim %s is gone", name);
		pk_conf_set(&res[PK_CONF_ADDRESS_REF], PK_CONF_FAIL, "claim %s is gone", name);
		pk_conf_set(&res[PK_CONF_READY], PK_CONF_FAIL, "claim %s is gone", name);
		return;
	}
	pk_conf_judge_finalizer(claim, &res[PK_CONF_CLAIM_FINALIZER]);
	pk_conf_judge_address_ref(claim, name, &res[PK_CONF_ADDRESS_REF]);
	pk_conf_judge_ready(claim, "True", NULL, &res[PK_CONF_READY]);
}

/* The first claim: bound within the timeout, then inspected. Returns how long it took
 * (the timeout when it was not bound). */
static long long check_first(struct run *r, char *name, size_t len)
{
	json_t *claim = NULL, *addr = NULL;
	long long t0 = pk_kube_now_ns();
	if (!create_claim(r, "net0", "", r->pool.name, name, len)) {
		judge_bound(r, name, NULL, NULL);
		return r->timeout_ns;
	}
	bool ok = wait_bound(r, name, t0 + r->timeout_ns, &claim, &addr);
	long long took = pk_kube_now_ns() - t0;
	/* The Ready condition may follow addressRef in a later write. */
	for (long long end = pk_kube_now_ns() + 2 * 1000000000LL;
	     ok && pk_conf_ready_condition(claim) == NULL && pk_kube_now_ns() < end;) {
		pk_kube_sleep_ns(POLL_NS);
		json_decref(claim);
		json_decref(addr);
		ok = bound(r, name, &claim, &addr);
	}
	judge_bound(r, name, claim, addr);
	json_decref(claim);
	json_decref(addr);
	return ok ? took : r->timeout_ns;
}

/* The paused claim: untouched for `settle` after its creation at t0, then its Cluster is
 * unpaused and it must be bound. */
static void check_paused(struct run *r, const char *name, long long t0, long long settle)
{
	json_t *claim = NULL, *addr = NULL;
	char s[32], t[32];
	fmt_secs(settle, s, sizeof(s));
	fmt_secs(r->timeout_ns, t, sizeof(t));
	long long wait = t0 + settle - pk_kube_now_ns();
	if (wait > 0)
		pk_kube_sleep_ns(wait);
	bool early = bound(r, name, &claim, &addr) || addr != NULL;
	if (claim == NULL) {
		pk_conf_set(&r->res[PK_CONF_PAUSED], PK_CONF_FAIL, "claim %s is gone", name);
	} else if (early) {
		pk_conf_set(
		    &r->res[PK_CONF_PAUSED], PK_CONF_FAIL, "IPAddress %s (%s) within %s", name,
		    pk_conf_or_none(pk_conf_str_at(json_object_get(addr, "spec"), "address", NULL)),
		    s);
	} else {
		pk_conf_set(&r->res[PK_CONF_PAUSED], PK_CONF_PASS,
		            "no IPAddress, no addressRef in %s", s);
	}
	json_decref(claim);
	json_decref(addr);
	char cluster[NAME_LEN];
	name_of(r, "paused", cluster, sizeof(cluster));
	struct pk_kube_ref ref = cluster_ref(r, cluster);
	json_t *patch = json_pack("{s:{s:b}}", "spec", "paused", 0);
	struct pk_kube_error e = {0};
	enum pk_kube_reason rc =
	    patch ? pk_kube_client_patch(r->c, &ref, PK_KUBE_PATCH_MERGE, patch, NULL, NULL, &e)
	          : PK_KUBE_NOMEM;
	json_decref(patch);
	if (rc != PK_KUBE_OK) {
		pk_conf_set(&r->res[PK_CONF_UNPAUSED], PK_CONF_SKIP,
		            "cannot unpause Cluster %s: %s", cluster, e.message);
		return;
	}
	bool ok = wait_bound(r, name, pk_kube_now_ns() + r->timeout_ns, &claim, &addr);
	if (ok)
		pk_conf_set(&r->res[PK_CONF_UNPAUSED], PK_CONF_PASS, "IPAddress %s (%s)", name,
		            pk_conf_or_none(
		                pk_conf_str_at(json_object_get(addr, "spec"), "address", NULL)));
	else
		pk_conf_set(&r->res[PK_CONF_UNPAUSED], PK_CONF_FAIL,
		            "no IPAddress and addressRef %s after the unpause", t);
	json_decref(claim);
	json_decref(addr);
}

/* The claim on a pool that does not exist: Ready=False, reason PoolNotReady, by the deadline. */
static void check_reason(struct run *r, const char *name, long long deadline)
{
	struct pk_kube_ref ref = claim_ref(r, name);
	json_t *claim = NULL;
	for (;;) {
		claim = get(r, &ref);
		if (pk_conf_ready_condition(claim) != NULL || pk_kube_now_ns() >= deadline)
			break;
		json_decref(claim);
		pk_kube_sleep_ns(POLL_NS);
	}
	if (claim == NULL)
		pk_conf_set(&r->res[PK_CONF_READY_REASON], PK_CONF_FAIL, "claim %s is gone", name);
	else
		pk_conf_judge_ready(claim, "False", "PoolNotReady", &r->res[PK_CONF_READY_REASON]);
	json_decref(claim);
}

static enum pk_kube_reason delete_object(struct run *r, const struct pk_kube_ref *ref)
{
	struct pk_kube_error e = {0};
	enum pk_kube_reason rc = pk_kube_client_delete(r->c, ref, NULL, NULL, &e);
	if (rc != PK_KUBE_OK && rc != PK_KUBE_NOT_FOUND)
		fprintf(stderr, "poolkeeper conformance: deleting %s %s: %s: %s\n", ref->resource,
		        ref->name, pk_kube_reason_name(rc), e.message);
	return rc;
}

/* Deletes claim `name`; the result says whether it and its IPAddress went by the deadline. */
static void check_deleted(struct run *r, const char *name, struct pk_conf_result *res)
{
	struct pk_kube_ref cr = claim_ref(r, name), ar = address_ref(r, name);
	char t[32];
	fmt_secs(r->timeout_ns, t, sizeof(t));
	enum pk_kube_reason rc = delete_object(r, &cr);
	if (rc != PK_KUBE_OK) {
		pk_conf_set(res, PK_CONF_FAIL, "deleting claim %s: %s", name,
		            pk_kube_reason_name(rc));
		return;
	}
	if (wait_gone(r, &cr, &ar, pk_kube_now_ns() + r->timeout_ns)) {
		pk_conf_set(res, PK_CONF_PASS, "claim and IPAddress %s gone", name);
		return;
	}
	json_t *claim = get(r, &cr), *addr = get(r, &ar);
	const json_t *fin = json_object_get(json_object_get(claim, "metadata"), "finalizers");
	pk_conf_set(res, PK_CONF_FAIL, "after %s: claim %s%s, IPAddress %s", t,
	            claim ? "still there, finalizer " : "gone",
	            claim ? pk_conf_or_none(pk_json_cstr(json_array_get(fin, 0))) : "",
	            addr ? "still there" : "gone");
	json_decref(claim);
	json_decref(addr);
}

/* A claim on a Cluster that is then deleted: the claim's deletion must go through. */
static void check_cluster_gone(struct run *r)
{
	char name[NAME_LEN], cluster[NAME_LEN], t[32];
	json_t *claim = NULL, *addr = NULL;
	struct pk_conf_result *res = &r->res[PK_CONF_CLUSTER_GONE];
	fmt_secs(r->timeout_ns, t, sizeof(t));
	name_of(r, "doomed", cluster, sizeof(cluster));
	if (!create_cluster(r, "doomed", false) ||
	    !create_claim(r, "net3", "doomed", r->pool.name, name, sizeof(name))) {
		pk_conf_set(res, PK_CONF_SKIP, "could not create Cluster %s and its claim",
		            cluster);
		return;
	}
	bool ok = wait_bound(r, name, pk_kube_now_ns() + r->timeout_ns, &claim, &addr);
	json_decref(claim);
	json_decref(addr);
	if (!ok) {
		pk_conf_set(res, PK_CONF_SKIP, "claim %s not bound after %s", name, t);
		return;
	}
	struct pk_kube_ref ref = cluster_ref(r, cluster);
	if (delete_object(r, &ref) != PK_KUBE_OK ||
	    !wait_gone(r, &ref, NULL, pk_kube_now_ns() + r->timeout_ns)) {
		pk_conf_set(res, PK_CONF_SKIP, "Cluster %s did not go within %s", cluster, t);
		return;
	}
	check_deleted(r, name, res);
}

/* How many of the burst's claims are bound; *exhausted: an unbound one says PoolExhausted. */
static unsigned burst_bound(struct run *r, char names[][NAME_LEN], bool *exhausted)
{
	unsigned n = 0;
	*exhausted = false;
	for (unsigned i = 0; i < r->burst; i++) {
		json_t *claim = NULL, *addr = NULL;
		if (bound(r, names[i], &claim, &addr))
			n++;
		const char *why = pk_json_cstr_at(pk_conf_ready_condition(claim), "reason");
		if (why && !strcmp(why, "PoolExhausted"))
			*exhausted = true;
		json_decref(claim);
		json_decref(addr);
	}
	return n;
}

/* Every IPAddress the run may read: the whole cluster's, else the namespace's. */
static json_t *list_addresses(struct run *r)
{
	json_t *list = NULL;
	struct pk_kube_error e;
	struct pk_kube_ref all = address_ref(r, NULL);
	all.namespace = NULL;
	if (pk_kube_client_list_all(r->c, &all, NULL, &list, &e) == PK_KUBE_OK)
		return list;
	struct pk_kube_ref mine = address_ref(r, NULL);
	if (pk_kube_client_list_all(r->c, &mine, NULL, &list, &e) == PK_KUBE_OK)
		return list;
	return NULL;
}

static void check_burst(struct run *r)
{
	static char names[PK_CONF_BURST_MAX][NAME_LEN];
	struct pk_conf_result *res = &r->res[PK_CONF_NO_DUPLICATES];
	char dev[16], t[32];
	bool exhausted = false;
	unsigned made = 0, n = 0;
	fmt_secs(r->timeout_ns, t, sizeof(t));
	for (unsigned i = 0; i < r->burst; i++) {
		snprintf(dev, sizeof(dev), "net%u", 100 + i);
		made += create_claim(r, dev, "", r->pool.name, names[i], NAME_LEN);
	}
	long long deadline = pk_kube_now_ns() + r->timeout_ns;
	while ((n = burst_bound(r, names, &exhausted)) < r->burst && !exhausted &&
	       pk_kube_now_ns() < deadline)
		pk_kube_sleep_ns(POLL_NS);
	json_t *list = list_addresses(r);
	if (list == NULL) {
		pk_conf_set(res, PK_CONF_SKIP, "cannot list IPAddresses");
		return;
	}
	if (pk_conf_judge_unique(json_object_get(list, "items"), &r->pool, res) == PK_CONF_PASS &&
	    n < r->burst) {
		char seen[sizeof(res->detail)];
		snprintf(seen, sizeof(seen), "%s", res->detail);
		if (exhausted)
			pk_conf_set(res, PK_CONF_PASS, "%u of %u claims bound (pool exhausted), %s",
			            n, r->burst, seen);
		else
			pk_conf_set(res, PK_CONF_FAIL,
			            "%u of %u claims (%u created) bound after %s", n, r->burst,
			            made, t);
	}
	json_decref(list);
}

/* ---- setting up and cleaning up ---- */

/* Whether /apis/GROUP/version serves the pool's kind; sets its resource and scope. */
static bool serves_kind(struct run *r, const char *version, struct pk_kube_error *e)
{
	char path[512];
	json_t *doc = NULL;
	bool found = false;
	snprintf(path, sizeof(path), "/apis/%s/%s", r->pool.group, version);
	if (pk_kube_client_request(r->c, "GET", path, NULL, NULL, 0, 0, &doc, e) != PK_KUBE_OK)
		return false;
	size_t i;
	const json_t *res;
	json_array_foreach(json_object_get(doc, "resources"), i, res)
	{
		const char *k = pk_json_cstr_at(res, "kind"), *n = pk_json_cstr_at(res, "name");
		if (!found && k && n && !strcmp(k, r->pool.kind) && !strchr(n, '/')) {
			snprintf(r->pool_resource, sizeof(r->pool_resource), "%s", n);
			snprintf(r->pool_version, sizeof(r->pool_version), "%s", version);
			r->namespaced = json_is_true(json_object_get(res, "namespaced"));
			found = true;
		}
	}
	json_decref(doc);
	return found;
}

/*
 * The pool's resource, version and scope from discovery (the first of the group's
 * versions, preferred first, that serves the kind: a group such as
 * ipam.cluster.x-k8s.io holds kinds of several versions), then its uid.
 */
static bool find_pool(struct run *r, const char *ns)
{
	json_t *versions = NULL, *pool = NULL;
	struct pk_kube_error e = {0};
	bool ok = false;
	if (pk_kube_client_group_versions(r->c, r->pool.group, &versions, &e) != PK_KUBE_OK)
		goto out;
	for (size_t i = 0; !ok && i < json_array_size(versions); i++) {
		const char *v = pk_json_cstr(json_array_get(versions, i));
		ok = v != NULL && serves_kind(r, v, &e);
	}
	if (!ok) {
		snprintf(e.message, sizeof(e.message), "API group %.253s serves no kind %.63s",
		         r->pool.group, r->pool.kind);
		goto out;
	}
	ok = false;
	if (r->namespaced && ns == NULL) {
		snprintf(e.message, sizeof(e.message),
		         "%s is namespaced: name the pool's namespace with --namespace",
		         r->pool.kind);
		goto out;
	}
	struct pk_kube_ref ref = {.group = r->pool.group,
	                          .version = r->pool_version,
	                          .resource = r->pool_resource,
	                          .name = r->pool.name,
	                          .namespace = r->namespaced ? ns : NULL};
	if (pk_kube_client_get(r->c, &ref, &pool, &e) == PK_KUBE_OK) {
		snprintf(r->pool_uid, sizeof(r->pool_uid), "%s",
		         pk_conf_or_none(pk_conf_str_at(pool, "metadata", "uid")));
		ok = true;
	}
out:
	if (!ok)
		fprintf(stderr, "poolkeeper conformance: pool %s/%s/%s: %s\n", r->pool.group,
		        r->pool.kind, r->pool.name, e.message);
	json_decref(versions);
	json_decref(pool);
	return ok;
}

static bool pick_versions(struct run *r)
{
	static const char *const want[] = {PK_CAPI_V1BETA2, PK_CAPI_V1BETA1, NULL};
	struct pk_kube_error e = {0};
	if (pk_kube_client_preferred_version(r->c, PK_CAPI_IPAM_GROUP, want, r->ipam_v,
	                                     sizeof(r->ipam_v), &e) != PK_KUBE_OK ||
	    pk_kube_client_preferred_version(r->c, PK_CAPI_CORE_GROUP, want, r->cluster_v,
	                                     sizeof(r->cluster_v), &e) != PK_KUBE_OK ||
	    !*r->ipam_v || !*r->cluster_v) {
		fprintf(
		    stderr,
		    "poolkeeper conformance: %s and %s must be served in v1beta2 or v1beta1: %s\n",
		    PK_CAPI_IPAM_GROUP, PK_CAPI_CORE_GROUP, *e.message ? e.message : "not served");
		return false;
	}
	return true;
}

/* The namespace (created unless given), the run's id, its Clusters and the owner. */
static bool set_up(struct run *r, const char *ns)
{
	struct pk_kube_ref nsref = {.version = "v1", .resource = "namespaces"};
	FILE *f = fopen("/dev/urandom", "rb");
	unsigned char b[5] = {0};
	if (f == NULL || fread(b, 1, sizeof(b), f) != sizeof(b)) {
		if (f)
			fclose(f);
		fprintf(stderr, "poolkeeper conformance: cannot read /dev/urandom\n");
		return false;
	}
	fclose(f);
	for (size_t i = 0; i < sizeof(b); i++)
		r->id[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[b[i] % 36];
	if (ns != NULL) {
		snprintf(r->ns, sizeof(r->ns), "%s", ns);
	} else {
		snprintf(r->ns, sizeof(r->ns), "pk-conformance-%s", r->id);
		if (!create(r, &nsref,
		            json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
		                      "metadata", "name", r->ns),
		            NULL, 0))
			return false;
		r->own_ns = true;
	}
	char owner[NAME_LEN];
	name_of(r, "", owner, sizeof(owner));
	struct pk_kube_ref oref = owner_ref(r, NULL);
	return create_cluster(r, "", false) && create_cluster(r, "paused", true) &&
	       create(r, &oref,
	              json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
	                        "metadata", "name", owner),
	              r->owner_uid, sizeof(r->owner_uid));
}

/* Removes every finalizer of ref's object, for what the provider left behind. */
static void drop_finalizers(struct run *r, const struct pk_kube_ref *ref)
{
	json_t *obj = get(r, ref);
	size_t n = json_array_size(json_object_get(json_object_get(obj, "metadata"), "finalizers"));
	json_decref(obj);
	if (n == 0)
		return;
	json_t *patch = json_pack("{s:{s:n}}", "metadata", "finalizers");
	struct pk_kube_error e;
	if (patch && pk_kube_client_patch(r->c, ref, PK_KUBE_PATCH_MERGE, patch, NULL, NULL, &e) ==
	                 PK_KUBE_OK)
		fprintf(
		    stderr,
		    "poolkeeper conformance: clean-up: removed %zu finalizer(s) the provider left "
		    "on %s %s\n",
		    n, ref->resource, ref->name);
	json_decref(patch);
}

/* Deletes every claim, waits for the provider to let them go, then removes what is left. */
static void clean_up(struct run *r)
{
	long long deadline = pk_kube_now_ns() + r->timeout_ns;
	for (size_t i = 0; i < r->nclaims; i++) {
		struct pk_kube_ref cr = claim_ref(r, r->claims[i]);
		(void)delete_object(r, &cr);
	}
	for (size_t i = 0; i < r->nclaims; i++) {
		struct pk_kube_ref cr = claim_ref(r, r->claims[i]),
		                   ar = address_ref(r, r->claims[i]);
		if (wait_gone(r, &cr, &ar, deadline))
			continue;
		drop_finalizers(r, &cr);
		if (!gone(r, &ar)) {
			drop_finalizers(r, &ar);
			(void)delete_object(r, &ar);
		}
	}
	static const char *const roles[] = {"", "paused", "doomed"};
	char name[NAME_LEN];
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
		name_of(r, roles[i], name, sizeof(name));
		struct pk_kube_ref ref = cluster_ref(r, name);
		(void)delete_object(r, &ref);
	}
	name_of(r, "", name, sizeof(name));
	struct pk_kube_ref oref = owner_ref(r, name);
	(void)delete_object(r, &oref);
	if (r->own_ns) {
		struct pk_kube_ref nsref = {
		    .version = "v1", .resource = "namespaces", .name = r->ns};
		(void)delete_object(r, &nsref);
	}
}

/* ---- the command ---- */

static void run_checks(struct run *r)
{
	char first[NAME_LEN], paused[NAME_LEN], absent[NAME_LEN], missing[NAME_LEN];
	name_of(r, "absent", missing, sizeof(missing));
	long long t_absent = pk_kube_now_ns();
	bool have_absent = create_claim(r, "net1", "", missing, absent, sizeof(absent));
	long long t_paused = pk_kube_now_ns();
	bool have_paused = create_claim(r, "net2", "paused", r->pool.name, paused, sizeof(paused));
	long long took = check_first(r, first, sizeof(first));
	/* A provider that took `took` for a claim had three times that to touch the paused one. */
	long long settle = 3 * took < MIN_SETTLE_NS ? MIN_SETTLE_NS : 3 * took;
	if (settle > r->timeout_ns)
		settle = r->timeout_ns;
	if (have_paused) {
		check_paused(r, paused, t_paused, settle);
	} else {
		pk_conf_set(&r->res[PK_CONF_PAUSED], PK_CONF_SKIP, "could not create the claim");
		pk_conf_set(&r->res[PK_CONF_UNPAUSED], PK_CONF_SKIP, "could not create the claim");
	}
	if (have_absent)
		check_reason(r, absent, t_absent + r->timeout_ns);
	else
		pk_conf_set(&r->res[PK_CONF_READY_REASON], PK_CONF_SKIP,
		            "could not create the claim");
	if (r->res[PK_CONF_ADDRESS_NAME].verdict == PK_CONF_PASS)
		check_deleted(r, first, &r->res[PK_CONF_RELEASE]);
	else
		pk_conf_set(&r->res[PK_CONF_RELEASE], PK_CONF_SKIP,
		            "the first claim was not bound");
	check_cluster_gone(r);
	check_burst(r);
}

enum conf_flag { C_POOL, C_NS, C_KUBECONFIG, C_TIMEOUT, C_BURST, C_HELP, C_COUNT };

static const struct pk_flag conf_flags[C_COUNT] = {
    [C_POOL] = {"pool-ref", 0, PK_FLAG_STRING, NULL, "GROUP/KIND/NAME",
                "the pool the claims of the run name (required)"},
    [C_NS] = {"namespace", 'n', PK_FLAG_STRING, NULL, "NAME",
              "where the run's objects go (a namespaced pool's namespace); else a namespace "
              "of its own, deleted at the end"},
    [C_KUBECONFIG] = PK_FLAG_DEF_KUBECONFIG,
    [C_TIMEOUT] = {"timeout", 0, PK_FLAG_DURATION, "60s", "1s..1h",
                   "how long each step waits for the provider"},
    [C_BURST] = {"burst", 0, PK_FLAG_UINT, "20", "1..100",
                 "claims created at once for the duplicate check"},
    [C_HELP] = PK_FLAG_DEF_HELP,
};

static const char conf_usage[] = "poolkeeper conformance --pool-ref GROUP/KIND/NAME [flags]";
static const char conf_summary[] =
    "Runs the Cluster API IPAM contract against the provider of a pool in a live cluster:\n"
    "creates a Cluster, an owner object and claims as an infrastructure provider does,\n"
    "checks what the provider makes of them, prints one line per check (pass, fail, or\n"
    "skip with the reason) citing the contract, and deletes what it created.\n"
    "\n"
    "Exit status: 0 no check failed, 1 a check failed, 2 usage error or a cluster that\n"
    "could not be reached or read.";

static bool connect_cluster(struct run *r, const char *kubeconfig, struct pk_kube_config **cfg)
{
	struct pk_kube_config_opts co = {.path = kubeconfig, .allow_exec = true};
	/* A poll reads two objects per claim of the burst, 4 times a second. */
	struct pk_kube_client_opts o = {.qps = 100, .burst = 200};
	struct pk_err err = {{0}};
	if (pk_kube_config_load(&co, cfg, &err) != PK_OK ||
	    pk_kube_client_new(*cfg, &o, &r->c, &err) != PK_OK) {
		fprintf(stderr, "poolkeeper conformance: %s\n", err.msg);
		return false;
	}
	return true;
}

static int run_and_report(struct run *r, const char *ns)
{
	if (!find_pool(r, ns) || !pick_versions(r))
		return PK_CONF_EXIT_USAGE;
	bool ready = set_up(r, ns);
	printf("conformance: pool %s/%s/%s (%s, %s), namespace %s, run %s\n", r->pool.group,
	       r->pool.kind, r->pool.name, r->pool_version,
	       r->namespaced ? "namespaced" : "cluster-scoped", r->ns, r->id);
	if (ready)
		run_checks(r);
	clean_up(r);
	if (!ready)
		return PK_CONF_EXIT_USAGE;
	unsigned n[4] = {0};
	for (int c = 0; c < PK_CONF_COUNT; c++) {
		pk_conf_print(stdout, c, &r->res[c]);
		n[r->res[c].verdict]++;
	}
	printf("conformance: %u passed, %u failed, %u skipped\n", n[PK_CONF_PASS], n[PK_CONF_FAIL],
	       n[PK_CONF_SKIP] + n[PK_CONF_NOT_RUN]);
	return pk_conf_exit_code(r->res, PK_CONF_COUNT);
}

int pk_conformance_main(int argc, char *argv[])
{
	struct pk_flag_value vals[C_COUNT];
	struct pk_err err = {{0}};
	size_t npos = 0;
	const char **pos = calloc((size_t)argc + 1, sizeof(*pos));
	static struct run r;
	struct pk_kube_config *cfg = NULL;
	int status = PK_CONF_EXIT_USAGE;
	if (pos == NULL)
		return status;
	if (pk_flags_parse(conf_flags, C_COUNT, argc, argv, vals, pos, &npos, &err) != PK_OK) {
		fprintf(stderr, "poolkeeper conformance: %s\n", err.msg);
		goto out;
	}
	if (pk_flags_get_bool(vals, C_HELP)) {
		pk_flags_print_help(stdout, conf_usage, conf_summary, conf_flags, C_COUNT);
		status = 0;
		goto out;
	}
	const char *ref = vals[C_POOL].set ? pk_flags_get_string(conf_flags, vals, C_POOL) : NULL;
	const char *ns = vals[C_NS].set ? pk_flags_get_string(conf_flags, vals, C_NS) : NULL;
	if (npos > 0 || ref == NULL || pk_conf_parse_pool_ref(ref, &r.pool, &err) != PK_OK ||
	    (ns && pk_parse_dns_name(ns, false, &err) != PK_OK)) {
		fprintf(stderr,
		        "poolkeeper conformance: %s\nRun 'poolkeeper conformance --help'.\n",
		        npos > 0      ? "takes no arguments"
		        : ref == NULL ? "--pool-ref is required"
		                      : err.msg);
		goto out;
	}
	r.timeout_ns = (long long)pk_flags_get_num(vals, C_TIMEOUT);
	r.burst = (unsigned)pk_flags_get_num(vals, C_BURST);
	if (connect_cluster(
	        &r,
	        vals[C_KUBECONFIG].set ? pk_flags_get_string(conf_flags, vals, C_KUBECONFIG) : NULL,
	        &cfg))
		status = run_and_report(&r, ns);
out:
	pk_kube_client_free(r.c);
	pk_kube_config_free(cfg);
	free(pos);
	return status;
}
