/* decide.c - the claim reconciler's next step; see decide.h for the contract. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "decide.h"
#include "json.h"
#include "objects.h"
#include "pool.h"
#include "rules.h"

const char *pk_claim_action_name(enum pk_claim_action a)
{
	switch (a) {
	case PK_ACT_NONE:
		return "none";
	case PK_ACT_WAIT:
		return "wait";
	case PK_ACT_ADD_FINALIZER:
		return "add finalizer";
	case PK_ACT_NOT_READY:
		return "not ready";
	case PK_ACT_ALLOCATE:
		return "allocate";
	case PK_ACT_SET_READY:
		return "set ready";
	case PK_ACT_UNPROTECT_ADDRESS:
		return "remove address finalizer";
	case PK_ACT_DELETE_ADDRESS:
		return "delete address";
	case PK_ACT_RELEASE:
		return "release";
	}
	return "unknown";
}

static void set(struct pk_claim_decision *d, enum pk_claim_action a, const char *reason,
                const char *fmt, ...) PK_PRINTF(4, 5);
static void set(struct pk_claim_decision *d, enum pk_claim_action a, const char *reason,
                const char *fmt, ...)
{
	va_list ap;
	d->action = a;
	d->reason = reason;
	va_start(ap, fmt);
	vsnprintf(d->message, sizeof(d->message), fmt, ap);
	va_end(ap);
}

/* Deletion: never blocked by a missing Cluster or pool. */
static void decide_deleting(const struct pk_claim_facts *f, struct pk_claim_decision *d)
{
	if (!f->has_finalizer) {
		set(d, PK_ACT_NONE, "Released", "nothing of poolkeeper's holds the claim");
		return;
	}
	if (f->cluster == PK_CLUSTER_PAUSED) {
		set(d, PK_ACT_WAIT, PK_REASON_PAUSED,
		    "%s is paused; the address is released once it is not", f->cluster_text);
		return;
	}
	if (f->pool == PK_POOL_PAUSED) {
		set(d, PK_ACT_WAIT, PK_REASON_PAUSED,
		    "%s is paused; the address is released once it is not", f->pool_text);
		return;
	}
	/* clusterctl move deletes the source objects; the IPAddress moves with the claim. */
	if (f->delete_for_move) {
		set(d, PK_ACT_RELEASE, "Moved",
		    "moved by clusterctl: only the finalizer comes off");
		return;
	}
	/* The claim's own pause holds its release as a paused Cluster does: its owner asked
	 * that nothing be done to it. (A move only takes the finalizer off: no release.) */
	if (f->paused) {
		set(d, PK_ACT_WAIT, PK_REASON_PAUSED,
		    "%s is paused; the address is released once it is not", f->claim_text);
		return;
	}
	switch (f->address) {
	case PK_ADDRESS_OURS:
	case PK_ADDRESS_OURS_DELETING:
		if (f->address_has_finalizer)
			set(d, PK_ACT_UNPROTECT_ADDRESS, "Releasing",
			    "the claim is being deleted: unprotecting its IPAddress");
		else if (f->address == PK_ADDRESS_OURS)
			set(d, PK_ACT_DELETE_ADDRESS, "Releasing",
			    "the claim is being deleted: deleting its IPAddress");
		else
			set(d, PK_ACT_WAIT, "Releasing",
			    "waiting for the IPAddress to be gone before releasing the address");
		return;
	case PK_ADDRESS_NONE:
	case PK_ADDRESS_FOREIGN: /* not ours to delete */
		set(d, PK_ACT_RELEASE, "Released", "the IPAddress is gone: releasing the address");
		return;
	}
}

/* The claim has an IPAddress named like it: true (d set), or false (none: allocate). */
static bool decide_address(const struct pk_claim_facts *f, struct pk_claim_decision *d)
{
	switch (f->address) {
	case PK_ADDRESS_OURS:
		/* An address already held stays held, whatever became of the pool. */
		if (f->bound) {
			set(d, PK_ACT_NONE, "Allocated", "bound");
		} else if (f->address_check == PK_ADDRESS_INCONSISTENT) {
			/* Never adopted, never changed: it may be someone's by mistake, and the
			 * address it names may be another claim's. */
			set(d, PK_ACT_NOT_READY, PK_REASON_INCONSISTENT,
			    "the IPAddress named like the claim is not adopted: %s; it is left as "
			    "it is, and the claim gets an address once it is deleted",
			    f->address_problem);
		} else if (f->address_check == PK_ADDRESS_UNCHECKED) {
			set(d, PK_ACT_NOT_READY, "PoolNotReady",
			    "%s %s; the existing IPAddress is adopted once it can be checked "
			    "against the pool",
			    f->pool_text,
			    f->pool == PK_POOL_MISSING    ? "does not exist"
			    : f->pool == PK_POOL_DELETING ? "is being deleted"
			                                  : "has an invalid spec");
		} else {
			set(d, PK_ACT_SET_READY, "Allocated", "adopting the existing IPAddress");
		}
		return true;
	case PK_ADDRESS_OURS_DELETING:
		/* Deleted under a live claim: let it go, then re-create it identically. */
		if (f->address_has_finalizer)
			set(d, PK_ACT_UNPROTECT_ADDRESS, "AddressDeleted",
			    "the IPAddress was deleted while its claim exists; it is re-created "
			    "with the same address once it is gone");
		else
			set(d, PK_ACT_WAIT, "AddressDeleted",
			    "waiting for the deleted IPAddress to be gone to re-create it");
		return true;
	case PK_ADDRESS_FOREIGN:
		set(d, PK_ACT_NOT_READY, "AllocationFailed",
		    "an IPAddress named like the claim exists and is not owned by it; delete it or "
		    "rename the claim");
		return true;
	case PK_ADDRESS_NONE:
		break;
	}
	return false;
}

/* No IPAddress yet: allocate from an active pool in scope, or say why not. */
static void decide_allocate(const struct pk_claim_facts *f, struct pk_claim_decision *d)
{
	switch (f->pool) {
	case PK_POOL_MISSING:
		set(d, PK_ACT_NOT_READY, "PoolNotReady", "%s does not exist", f->pool_text);
		return;
	case PK_POOL_DELETING:
		set(d, PK_ACT_NOT_READY, "PoolNotReady", "%s is being deleted", f->pool_text);
		return;
	case PK_POOL_INVALID:
		set(d, PK_ACT_NOT_READY, "PoolNotReady",
		    "%s has an invalid spec; see its Ready condition", f->pool_text);
		return;
	case PK_POOL_PAUSED: /* handled above */
	case PK_POOL_ACTIVE:
		break;
	}
	if (!f->pool_in_scope) {
		set(d, PK_ACT_NOT_READY, "PoolNotReady",
		    "%s serves claims of its own namespace only; a pool of a cluster-scoped kind "
		    "shares addresses across namespaces",
		    f->pool_text);
		return;
	}
	set(d, PK_ACT_ALLOCATE, "Allocating", "allocating from %s", f->pool_text);
}

void pk_decide_claim(const struct pk_claim_facts *f, struct pk_claim_decision *d)
{
	d->message[0] = '\0';
	if (!f->ours) {
		set(d, PK_ACT_NONE, "NotOurs", "poolRef names another provider's pool");
		return;
	}
	if (f->deleting) {
		decide_deleting(f, d);
		return;
	}
	if (f->cluster == PK_CLUSTER_PAUSED || f->pool == PK_POOL_PAUSED) {
		set(d, PK_ACT_WAIT, PK_REASON_PAUSED, "%s is paused",
		    f->cluster == PK_CLUSTER_PAUSED ? f->cluster_text : f->pool_text);
		return;
	}
	if (f->cluster == PK_CLUSTER_MISSING) {
		set(d, PK_ACT_WAIT, "ClusterNotFound",
		    "%s does not exist; the claim is handled once it does", f->cluster_text);
		return;
	}
	/* clusterctl move is taking the objects away: nothing is allocated or re-created. */
	if (f->delete_for_move || f->address_delete_for_move) {
		set(d, PK_ACT_WAIT, "MoveInProgress",
		    "clusterctl move is moving the %s; nothing is allocated or re-created "
		    "meanwhile",
		    f->delete_for_move ? "claim" : "IPAddress");
		return;
	}
	/* The claim's own pause: nothing allocated, adopted, re-created or released. A claim
	 * not bound yet says so on its Ready condition; a bound one keeps its address and its
	 * Ready=True (the address is still its own). */
	if (f->paused) {
		set(d, f->bound ? PK_ACT_WAIT : PK_ACT_NOT_READY, PK_REASON_PAUSED, "%s is paused",
		    f->claim_text);
		return;
	}
	/* "Put its finalizer on the claim before allocating" (contract, provider step 3). */
	if (!f->has_finalizer) {
		set(d, PK_ACT_ADD_FINALIZER, "Allocating", "adding finalizer %s",
		    PK_CLAIM_FINALIZER);
		return;
	}
	if (!decide_address(f, d))
		decide_allocate(f, d);
}

/* ---- facts from objects ---- */

static bool deleting(const json_t *obj)
{
	return pk_json_cstr_path(obj, "metadata", "deletionTimestamp") != NULL;
}

static bool annotated(const json_t *obj, const char *key)
{
	return pk_json_path(obj, "metadata", "annotations", key) != NULL;
}

bool pk_claim_ready(const json_t *claim)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(json_object_get(claim, "status"), "conditions"), i, c)
	{
		const char *t = pk_json_cstr_at(c, "type"), *s = pk_json_cstr_at(c, "status");
		if (t != NULL && s != NULL && strcmp(t, "Ready") == 0 && strcmp(s, "True") == 0)
			return true;
	}
	return false;
}

const char *pk_claim_cluster_name(const json_t *claim)
{
	bool from_label;
	return pk_rules_claim_cluster_name(claim, &from_label);
}

void pk_pool_facts_from(const json_t *claim, const struct pk_pool_kind *kind, const json_t *pool,
                        struct pk_pool_facts *out)
{
	const char *ns = pk_json_meta_cstr(claim, "namespace");
	bool global = kind != NULL && !kind->namespaced;
	out->kind = kind;
	out->served = kind != NULL;
	if (pool == NULL)
		out->state = PK_POOL_MISSING;
	else if (deleting(pool))
		out->state = PK_POOL_DELETING;
	else if (annotated(pool, PK_PAUSED_ANNOTATION))
		out->state = PK_POOL_PAUSED;
	else
		out->state = PK_POOL_ACTIVE; /* a backend says INVALID when it cannot decode it */
	const char *pool_ns = pk_json_meta_cstr(pool, "namespace");
	out->in_scope =
	    global || pool == NULL || (pool_ns != NULL && ns != NULL && strcmp(pool_ns, ns) == 0);
}

void pk_claim_facts_from(const json_t *claim, const struct pk_pool_kind *kind, const json_t *pool,
                         bool cluster_named, const json_t *cluster, const json_t *address,
                         struct pk_claim_facts *f)
{
	struct pk_pool_facts p;
	pk_pool_facts_from(claim, kind, pool, &p);
	pk_claim_facts_build(claim, &p, cluster_named, cluster, address, f);
}

/* The texts for messages: pool (its namespace only for a namespaced kind), Cluster and claim. */
static void facts_texts(const json_t *claim, const struct pk_pool_facts *pool,
                        struct pk_claim_facts *f)
{
	const json_t *md = json_object_get(claim, "metadata");
	const json_t *ref = json_object_get(json_object_get(claim, "spec"), "poolRef");
	const char *ns = pk_json_cstr_at(md, "namespace"), *name = pk_json_cstr_at(md, "name");
	const char *kind = pk_json_cstr_at(ref, "kind"), *pool_name = pk_json_cstr_at(ref, "name");
	bool global = pool->kind != NULL && !pool->kind->namespaced;
	snprintf(f->pool_text, sizeof(f->pool_text), "%s %s%s%s", kind ? kind : "pool",
	         global ? "" : (ns ? ns : ""), global ? "" : "/", pool_name ? pool_name : "?");
	const char *cname = pk_claim_cluster_name(claim);
	snprintf(f->cluster_text, sizeof(f->cluster_text), "Cluster %s/%s", ns ? ns : "",
	         cname ? cname : "?");
	snprintf(f->claim_text, sizeof(f->claim_text), "IPAddressClaim %s/%s", ns ? ns : "",
	         name ? name : "?");
}

/*
 * Whether an IPAddress with no controller reference to the claim is still the claim's
 * while the claim is being deleted. Deleting the claim in the foreground (its owner was
 * deleted with --cascade=foreground), the garbage collector finds the IPAddress kept alive by
 * its other owner, the pool (blockOwnerDeletion), and patches the claim's reference out of
 * it instead of deleting it (attemptToDeleteItem's "solid owners" branch, kube-controller-
 * manager pkg/controller/garbagecollector/garbagecollector.go). Left as foreign, its address
 * would be held for ever. It is the claim's by every other sign: named like the claim,
 * its spec.claimRef names the claim and its spec.poolRef the claim's pool (of the kind its
 * backend serves), and no other controller owns it.
 */
static bool left_by_collector(const json_t *claim, const struct pk_pool_kind *kind,
                              const json_t *address)
{
	const json_t *amd = json_object_get(address, "metadata");
	const char *name = pk_json_meta_cstr(claim, "name");
	const char *aname = pk_json_cstr_at(amd, "name");
	if (name == NULL || aname == NULL || strcmp(name, aname) != 0)
		return false;
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(amd, "ownerReferences"), i, c)
	{
		if (json_is_true(json_object_get(c, "controller")))
			return false;
	}
	const json_t *ref = pk_json_path(address, "spec", "poolRef");
	const char *group = pk_json_cstr_at(ref, "apiGroup"), *k = pk_json_cstr_at(ref, "kind");
	if (kind == NULL || group == NULL || k == NULL || strcmp(group, kind->group) != 0 ||
	    strcmp(k, kind->kind) != 0)
		return false;
	struct pk_violations vs;
	pk_violations_init(&vs);
	pk_rules_check_ipaddress_claim(address, claim, &vs);
	return pk_json_cstr_path(address, "spec", "claimRef", "name") != NULL &&
	       pk_violations_count(&vs, PK_SEV_DENY) == 0;
}

void pk_claim_facts_build(const json_t *claim, const struct pk_pool_facts *pool, bool cluster_named,
                          const json_t *cluster, const json_t *address, struct pk_claim_facts *f)
{
	memset(f, 0, sizeof(*f));
	const json_t *md = json_object_get(claim, "metadata");
	const char *name = pk_json_cstr_at(md, "name");
	const char *uid = pk_json_cstr_at(md, "uid");

	f->ours = pool->served;
	f->deleting = deleting(claim);
	f->has_finalizer = pk_objects_has_finalizer(claim, PK_CLAIM_FINALIZER);
	f->delete_for_move = annotated(claim, PK_DELETE_FOR_MOVE_ANNOTATION);
	f->paused = annotated(claim, PK_PAUSED_ANNOTATION); /* CAPI's HasPaused: the key alone */
	f->address_delete_for_move =
	    address != NULL && annotated(address, PK_DELETE_FOR_MOVE_ANNOTATION);
	facts_texts(claim, pool, f);

	/* Bound: status.addressRef names the IPAddress and Ready is True. */
	const json_t *status = json_object_get(claim, "status");
	const char *bound_to = pk_json_cstr_path(status, "addressRef", "name");
	f->bound = bound_to != NULL && name != NULL && strcmp(bound_to, name) == 0 &&
	           pk_claim_ready(claim);

	if (!cluster_named)
		f->cluster = PK_CLUSTER_UNNAMED;
	else if (cluster == NULL)
		f->cluster = PK_CLUSTER_MISSING;
	else if (json_is_true(json_object_get(json_object_get(cluster, "spec"), "paused")) ||
	         annotated(cluster, PK_PAUSED_ANNOTATION))
		f->cluster = PK_CLUSTER_PAUSED;
	else
		f->cluster = PK_CLUSTER_ACTIVE;
	f->pool = pool->state;
	f->pool_in_scope = pool->in_scope;

	if (address == NULL) {
		f->address = PK_ADDRESS_NONE;
		return;
	}
	const json_t *amd = json_object_get(address, "metadata");
	bool owned = false;
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(amd, "ownerReferences"), i, c)
	{
		const char *ouid = pk_json_cstr_at(c, "uid"), *okind = pk_json_cstr_at(c, "kind");
		if (json_is_true(json_object_get(c, "controller")) && ouid != NULL && uid != NULL &&
		    okind != NULL && strcmp(okind, PK_CLAIM_KIND) == 0 && strcmp(ouid, uid) == 0)
			owned = true;
	}
	if (!owned && f->deleting)
		owned = left_by_collector(claim, pool->kind, address);
	if (!owned)
		f->address = PK_ADDRESS_FOREIGN;
	else
		f->address = deleting(address) ? PK_ADDRESS_OURS_DELETING : PK_ADDRESS_OURS;
	f->address_has_finalizer = pk_objects_has_finalizer(address, PK_ADDRESS_FINALIZER);
}

void pk_claim_facts_check_address(struct pk_claim_facts *f, const json_t *claim,
                                  const json_t *address, const struct pk_pool *pool, bool taken)
{
	f->address_check = PK_ADDRESS_CONSISTENT;
	f->address_problem[0] = '\0';
	if (f->address != PK_ADDRESS_OURS || f->bound)
		return;
	struct pk_violations vs;
	pk_violations_init(&vs);
	pk_rules_check_ipaddress_claim(address, claim, &vs);
	if (pk_violations_count(&vs, PK_SEV_DENY) == 0 && pool == NULL) {
		f->address_check = PK_ADDRESS_UNCHECKED;
		return;
	}
	pk_rules_check_ipaddress_in_pool(address, pool, f->pool_text, true, &vs);
	const char *text = pk_json_cstr_path(address, "spec", "address");
	if (taken && text != NULL)
		pk_rules_check_ipaddress_unique(address, &text, 1, &vs);
	/* An address that does not parse was never handed out by a pool. */
	struct pk_addr a;
	if (text == NULL || pk_address_parse(text, &a, NULL, NULL) != PK_OK)
		pk_violations_add(&vs, PK_SEV_DENY, "spec.address",
		                  "missing, or not an IP address");
	if (pk_violations_count(&vs, PK_SEV_DENY) == 0)
		return;
	f->address_check = PK_ADDRESS_INCONSISTENT;
	pk_violations_join(&vs, PK_SEV_DENY, f->address_problem, sizeof(f->address_problem));
}
