/* claim_reconciler.c - the generic claim reconciler; see claim_reconciler.h. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "claim_reconciler.h"
#include "json.h"
#include "kube.h"
#include "log.h"
#include "objects.h"
#include "rules.h"

/* One pass over one claim. */
struct pass {
	struct pk_claim_reconciler *r;
	const char *ns, *name;
	char key[PK_OBJECT_KEY_MAX];
	struct pk_claim_id id; /* the backend's name for the claim; its strings are the claim's
	                        * as the pass began (kept alive with `retired`) */
	struct pk_claim_view v;
	struct pk_pool_view pool;
	bool held;          /* the backend holds an address for the claim */
	json_t *retired[3]; /* replaced by a write's answer; alive until the pass ends */
	size_t nretired;
};

static long long wall_now(void)
{
	return (long long)time(NULL);
}

static void claim_api(const struct pk_claim_reconciler *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", PK_CAPI_IPAM_GROUP, r->ipam_version);
}

static struct pk_kube_ref claim_ref(const struct pass *p, const char *resource)
{
	struct pk_kube_ref ref = {.group = PK_CAPI_IPAM_GROUP,
	                          .version = p->r->ipam_version,
	                          .resource = resource,
	                          .namespace = p->ns,
	                          .name = p->name};
	return ref;
}

/* An Event about the claim (posted; written by the events thread). */
static void claim_event(const struct pass *p, const json_t *claim, bool warning, const char *reason,
                        const char *action, const char *message)
{
	char api[64];
	claim_api(p->r, api, sizeof(api));
	struct pk_kube_object_ref ref = {.api_version = api,
	                                 .kind = PK_CLAIM_KIND,
	                                 .namespace = pk_json_meta_cstr(claim, "namespace"),
	                                 .name = pk_json_meta_cstr(claim, "name"),
	                                 .uid = pk_json_meta_cstr(claim, "uid")};
	if (p->r->events != NULL && ref.name != NULL)
		(void)pk_event_poster_post(p->r->events, &ref, warning, reason, action, "%s",
		                           message);
}

static void requeue(const struct pass *p, long delay_ms)
{
	p->r->queue_claim(p->r->ud, p->ns, p->name, delay_ms);
}

/* What a backend's operation changed, for the controller to follow up. */
static void follow(const struct pass *p, const struct pk_pool_next *next)
{
	if (next->pool_key[0] != '\0' || next->claim_key[0] != '\0')
		p->r->follow(p->r->ud, next);
}

/* The object a write returned replaces *slot for the rest of the pass. */
static void replace(struct pass *p, json_t **slot, json_t *now)
{
	p->retired[p->nretired++] = *slot;
	*slot = now;
}

/* Writes the claim's Ready condition (and addressRef) unless it already says so; *wrote says
 * whether it wrote. */
static int claim_status(struct pass *p, const char *address, bool ready, const char *reason,
                        const char *message, bool *wrote)
{
	const json_t *claim = p->v.claim;
	*wrote = false;
	const json_t *g = json_object_get(json_object_get(claim, "metadata"), "generation");
	struct pk_condition cond = {.type = "Ready",
	                            .status = ready,
	                            .reason = reason,
	                            .message = message,
	                            .generation = json_is_integer(g) ? json_integer_value(g) : -1,
	                            .v1beta1 = strcmp(p->r->ipam_version, PK_CAPI_V1BETA1) == 0};
	const json_t *st = json_object_get(claim, "status");
	const char *cur = pk_json_cstr_at(json_object_get(st, "addressRef"), "name");
	bool ref_same = address == NULL || (cur != NULL && strcmp(cur, address) == 0);
	if (ref_same && pk_objects_condition_same(json_object_get(st, "conditions"), &cond))
		return PK_OK;
	json_t *patch = pk_objects_claim_status_patch(claim, address, &cond, wall_now());
	if (patch == NULL)
		return PK_ERR_NOMEM;
	struct pk_kube_ref ref = claim_ref(p, PK_CLAIM_RESOURCE);
	ref.subresource = "status";
	json_t *written = NULL;
	int rc = pk_writer_patch(p->r->writer, &ref, true, patch, "claim status", p->key, &written);
	if (rc != PK_OK || written == NULL)
		return rc; /* failed, or the claim is gone */
	pk_expect_write(p->r->expect, p->key, false, pk_expect_rv_hash(written),
	                pk_metrics_now_ns());
	json_decref(written);
	*wrote = true;
	pk_log_info(ready ? "claim ready" : "claim not ready", PK_LOG_STR("claim", p->key),
	            PK_LOG_STR("reason", reason), PK_LOG_STR("message", message));
	if (ready)
		pk_metrics_ready(p->r->metrics, p->key, pk_metrics_now_ns());
	else /* a pause is someone's choice, not a fault: told as Normal */
		claim_event(p, claim, strcmp(reason, PK_REASON_PAUSED) != 0, reason, "Allocate",
		            message);
	return PK_OK;
}

/*
 * What a backend's result that is not OK does to the claim: with a reason,
 * Ready=False says it (and an Event); then the key waits as the result says:
 * PENDING for the backend to queue it, TRANSIENT for retry_after_ms (or the
 * backoff), PERMANENT for PK_BACKEND_PERMANENT_RETRY_MS. Without a reason,
 * nothing is written and the key is retried with backoff.
 */
static int not_done(struct pass *p, const struct pk_backend_result *r)
{
	if (r->reason[0] == '\0' && r->status != PK_BACKEND_PENDING)
		return PK_ERR_INVALID; /* retried with backoff */
	int rc = PK_OK;
	if (r->reason[0] != '\0') {
		bool wrote;
		rc = claim_status(p, NULL, false, r->reason, r->message, &wrote);
	}
	if (rc != PK_OK || r->status == PK_BACKEND_PENDING || r->status == PK_BACKEND_EXHAUSTED)
		return rc;
	if (r->status == PK_BACKEND_PERMANENT)
		requeue(p, PK_BACKEND_PERMANENT_RETRY_MS);
	else if (r->retry_after_ms > 0)
		requeue(p, r->retry_after_ms);
	else
		return PK_ERR_INVALID; /* written; retried with backoff */
	return PK_OK;
}

/*
 * Releases the claim's address once a consistent read shows its IPAddress
 * gone; *done once the backend confirmed it. When not done, the claim comes
 * back: queued here (1 s while the cache lags, or as the backend's result
 * says), or by its IPAddress's DELETED event when the claim itself is gone.
 */
static int release_if_gone(struct pass *p, const json_t *claim, bool *done)
{
	struct pk_kube_ref ref = claim_ref(p, PK_ADDRESS_RESOURCE);
	bool gone = false;
	*done = false;
	int rc = pk_writer_gone(p->r->writer, &ref, p->key, &gone);
	if (rc != PK_OK)
		return rc;
	if (!gone) {
		if (claim != NULL)
			requeue(p, 1000); /* the cache lags: its DELETED event queues the claim */
		return PK_OK;
	}
	struct pk_release_note n;
	struct pk_backend_result r;
	p->r->backend->ops->release_address(p->r->backend->self, &p->id, &n, &r);
	follow(p, &r.next);
	if (r.status != PK_BACKEND_OK) {
		/* The finalizer stays until the backend confirms: nothing is lost. */
		pk_log_warn("release not confirmed", PK_LOG_STR("claim", p->key),
		            PK_LOG_STR("reason", r.reason), PK_LOG_STR("message", r.message));
		if (claim != NULL)
			return not_done(p, &r);
		if (r.status == PK_BACKEND_PENDING)
			return PK_OK;
		requeue(p, r.status == PK_BACKEND_PERMANENT ? PK_BACKEND_PERMANENT_RETRY_MS
		           : r.retry_after_ms > 0           ? r.retry_after_ms
		                                            : 1000);
		return PK_OK;
	}
	p->held = false;
	*done = true;
	if (!n.released)
		return PK_OK;
	atomic_fetch_add(&p->r->metrics->releases, 1);
	pk_log_info("address released", PK_LOG_STR("ipaddress", p->key),
	            PK_LOG_STR("address", n.address), PK_LOG_STR("pool", r.next.pool_key));
	if (claim != NULL) {
		char msg[PK_ERR_MSG_MAX];
		snprintf(msg, sizeof(msg), "address %s returned to %s%s", n.address,
		         r.next.pool_key,
		         n.grace_seconds > 0 ? " (in its reuse grace period)" : "");
		claim_event(p, claim, false, "AddressReleased", "Release", msg);
	}
	return PK_OK;
}

/* "<ns>/<name>" or "<name>" of the pool, for messages. */
static void pool_text(const json_t *pool, char *buf, size_t len)
{
	const char *ns = pk_json_meta_cstr(pool, "namespace");
	snprintf(buf, len, "%.63s%s%.253s", ns ? ns : "", ns ? "/" : "",
	         pk_json_meta_cstr(pool, "name"));
}

/* Creates the IPAddress of a lease: *created is it, or NULL when none was. */
static int create_address(struct pass *p, const struct pk_address_lease *l, json_t **created)
{
	const json_t *claim = p->v.claim, *pool = p->pool.obj;
	const struct pk_pool_kind *kind = p->pool.facts.kind;
	char api[64], where[330], msg[PK_ERR_MSG_MAX];
	claim_api(p->r, api, sizeof(api));
	pool_text(pool, where, sizeof(where));
	struct pk_ipaddress_spec spec = {.api_version = api,
	                                 .address = l->address,
	                                 .prefix = l->prefix,
	                                 .gateway = l->gateway[0] != '\0' ? l->gateway : NULL,
	                                 .pool_kind = kind,
	                                 .pool_name = pk_json_meta_cstr(pool, "name"),
	                                 .pool_uid = pk_json_meta_cstr(pool, "uid"),
	                                 .external_id = l->external_id};
	json_t *obj = pk_objects_ipaddress(claim, &spec);
	struct pk_kube_error e;
	enum pk_kube_reason k;
	bool sent = obj != NULL;
	if (obj == NULL) {
		k = pk_kube_error_set(&e, PK_KUBE_NOMEM, 0, "out of memory");
	} else {
		struct pk_kube_ref ref = claim_ref(p, PK_ADDRESS_RESOURCE);
		ref.name = NULL;
		k = p->r->writer->ops->create(p->r->writer->self, &ref, obj, created, &e);
		json_decref(obj);
	}
	if (k == PK_KUBE_OK) {
		pk_expect_write(p->r->expect, p->key, true, pk_expect_rv_hash(*created),
		                pk_metrics_now_ns());
		if (l->fresh)
			atomic_fetch_add(&p->r->metrics->allocations, 1);
		pk_log_info("address allocated", PK_LOG_STR("claim", p->key),
		            PK_LOG_STR("address", l->address), PK_LOG_STR("pool", p->pool.key));
		snprintf(msg, sizeof(msg), "address %s allocated from %s %s", l->address,
		         kind != NULL ? kind->kind : "pool", where);
		claim_event(p, claim, false, "AddressAllocated", "Allocate", msg);
		return PK_OK;
	}
	/* Not created: the lease goes back at once. Perhaps created (no answer, a 5xx, or a
	 * 2xx whose body was unusable; code -1 was never sent): it stays held by the claim,
	 * whose next pass creates the same IPAddress again, or adopts it (AlreadyExists). */
	bool unknown = sent && (e.code == 0 || e.code >= 500 || (e.code >= 200 && e.code < 300));
	if (!unknown)
		p->r->backend->ops->abandon_address(p->r->backend->self, &p->id, l);
	if (k == PK_KUBE_ALREADY_EXISTS) {
		/* Adopted on the next pass, from the IPAddress's watch event. */
		pk_log_info("IPAddress exists: adopting", PK_LOG_STR("claim", p->key));
		requeue(p, 200);
		return PK_OK;
	}
	if (k == PK_KUBE_CANCELLED)
		return pk_writer_failed("create IPAddress", p->key, &e);
	atomic_fetch_add(&p->r->metrics->failures_other, 1);
	snprintf(msg, sizeof(msg), "creating IPAddress %.63s/%.253s with %s failed: %.100s", p->ns,
	         p->name, l->address, e.message);
	bool wrote;
	(void)claim_status(p, NULL, false, PK_REASON_ALLOCATION_FAILED, msg, &wrote);
	return pk_writer_failed("create IPAddress", p->key, &e);
}

/* Leases the claim's address from the backend and creates its IPAddress. */
static int allocate(struct pass *p, json_t **created)
{
	const struct pk_backend *b = p->r->backend;
	struct pk_address_lease l;
	struct pk_backend_result res;
	*created = NULL;
	b->ops->ensure_address(b->self, &p->pool, &p->id, &l, &res);
	follow(p, &res.next);
	if (res.status == PK_BACKEND_STALE) {
		/* The record goes once the API confirms the IPAddress is gone; a fresh address
		 * follows. */
		bool done = false;
		int rc = release_if_gone(p, p->v.claim, &done);
		if (rc != PK_OK || !done)
			return rc; /* the claim comes back: release_if_gone queued it */
		b->ops->ensure_address(b->self, &p->pool, &p->id, &l, &res);
		follow(p, &res.next);
		if (res.status == PK_BACKEND_STALE)
			return PK_ERR_INVALID; /* released, yet stale: retried with backoff */
	}
	if (res.status == PK_BACKEND_EXHAUSTED)
		atomic_fetch_add(&p->r->metrics->failures_exhausted, 1);
	else if (res.reason[0] != '\0' &&
	         (res.status == PK_BACKEND_TRANSIENT || res.status == PK_BACKEND_PERMANENT))
		atomic_fetch_add(&p->r->metrics->failures_other, 1);
	if (res.status != PK_BACKEND_OK)
		return not_done(p, &res);
	return create_address(p, &l, created);
}

static int set_ready(struct pass *p)
{
	const char *text = pk_json_cstr_at(json_object_get(p->v.address, "spec"), "address");
	char msg[PK_ERR_MSG_MAX];
	bool wrote;
	snprintf(msg, sizeof(msg), "address %s allocated in IPAddress %.300s", text ? text : "?",
	         p->key);
	return claim_status(p, pk_json_meta_cstr(p->v.address, "name"), true, "Allocated", msg,
	                    &wrote);
}

static int not_ready(struct pass *p, const struct pk_claim_facts *f,
                     const struct pk_claim_decision *d)
{
	if (strcmp(d->reason, "PoolNotReady") == 0 && !pk_claim_ready(p->v.claim))
		atomic_fetch_add(&p->r->metrics->failures_not_ready, 1);
	bool wrote = false;
	int rc = claim_status(p, NULL, false, d->reason, d->message, &wrote);
	if (wrote && strcmp(d->reason, PK_REASON_INCONSISTENT) == 0) {
		/* Once per claim and finding: the condition says it from then on. */
		atomic_fetch_add(&p->r->metrics->inconsistent, 1);
		pk_log_warn("IPAddress not adopted", PK_LOG_STR("claim", p->key),
		            PK_LOG_STR("why", f->address_problem));
	}
	return rc;
}

/* Releases the address (once its IPAddress is gone) and takes the claim's finalizer off. */
static int release(struct pass *p, const struct pk_claim_facts *f)
{
	/* A foreign IPAddress named like the claim is not its to release. */
	if (!f->delete_for_move && f->address != PK_ADDRESS_FOREIGN && p->held) {
		bool done = false;
		int rc = release_if_gone(p, p->v.claim, &done);
		if (rc != PK_OK || !done)
			return rc; /* the finalizer stays; the claim comes back */
	}
	struct pk_kube_ref ref = claim_ref(p, PK_CLAIM_RESOURCE);
	return pk_writer_patch(p->r->writer, &ref, false,
	                       pk_objects_finalizer_remove_patch(p->v.claim, PK_CLAIM_FINALIZER),
	                       "remove claim finalizer", p->key, NULL);
}

/* The facts of the claim as the pass has it now. */
static void facts(struct pass *p, struct pk_claim_facts *f)
{
	pk_claim_facts_build(p->v.claim, &p->pool.facts, p->v.cluster_named, p->v.cluster,
	                     p->v.address, f);
	if (f->pool == PK_POOL_ACTIVE)
		p->r->backend->ops->check_address(p->r->backend->self, &p->pool, &p->id, p->v.claim,
		                                  p->v.address, f);
	else
		pk_claim_facts_check_address(f, p->v.claim, p->v.address, NULL, false);
}

/* Performs d; true (and *rc PK_OK) when the pass goes on with the object written. */
static bool act(struct pass *p, const struct pk_claim_facts *f, const struct pk_claim_decision *d,
                int *rc)
{
	struct pk_kube_ref ref;
	json_t *now = NULL;
	switch (d->action) {
	case PK_ACT_NONE:
	case PK_ACT_WAIT:
		*rc = PK_OK;
		return false;
	case PK_ACT_ADD_FINALIZER:
		ref = claim_ref(p, PK_CLAIM_RESOURCE);
		*rc =
		    pk_writer_patch(p->r->writer, &ref, false,
		                    pk_objects_finalizer_add_patch(p->v.claim, PK_CLAIM_FINALIZER),
		                    "add claim finalizer", p->key, &now);
		if (*rc != PK_OK || now == NULL)
			return false;
		/* Go on with the claim as written: its next step does not wait for the watch. */
		pk_expect_write(p->r->expect, p->key, false, pk_expect_rv_hash(now),
		                pk_metrics_now_ns());
		replace(p, &p->v.claim, now);
		return true;
	case PK_ACT_NOT_READY:
		*rc = not_ready(p, f, d);
		return false;
	case PK_ACT_ALLOCATE:
		*rc = allocate(p, &now);
		if (*rc != PK_OK || now == NULL)
			return false;
		replace(p, &p->v.address, now);
		p->held = true;
		return true; /* Ready next, with the IPAddress as created */
	case PK_ACT_SET_READY:
		*rc = set_ready(p);
		return false;
	case PK_ACT_UNPROTECT_ADDRESS:
		ref = claim_ref(p, PK_ADDRESS_RESOURCE);
		*rc = pk_writer_patch(
		    p->r->writer, &ref, false,
		    pk_objects_finalizer_remove_patch(p->v.address, PK_ADDRESS_FINALIZER),
		    "remove IPAddress finalizer", p->key, NULL);
		return false;
	case PK_ACT_DELETE_ADDRESS:
		ref = claim_ref(p, PK_ADDRESS_RESOURCE);
		*rc = pk_writer_delete(p->r->writer, &ref, pk_json_meta_cstr(p->v.address, "uid"),
		                       "delete IPAddress", p->key);
		return false;
	case PK_ACT_RELEASE:
		*rc = release(p, f);
		return false;
	}
	*rc = PK_OK;
	return false;
}

/* Whether the cache is behind the controller's own writes (then the claim is queued again by
 * their events, or when the wait ends). */
static bool cache_behind(struct pass *p)
{
	long wait =
	    pk_expect_wait(p->r->expect, p->key, p->v.claim != NULL, pk_expect_rv_hash(p->v.claim),
	                   pk_expect_rv_hash(p->v.address), pk_metrics_now_ns());
	if (wait > 0)
		requeue(p, wait);
	return wait > 0;
}

/*
 * An IPAddress whose claim is gone, deleted by someone, loses its protect finalizer: nothing
 * is left for it to protect, and its deletion (the clean-up of the IPAddresses clusterctl move
 * leaves behind with a cluster-wide pool, docs/install.md) would otherwise wait for ever. Its
 * address is released once it is gone, as any other.
 */
static int unprotect_orphan(struct pass *p)
{
	if (pk_json_meta_cstr(p->v.address, "deletionTimestamp") == NULL ||
	    !pk_objects_has_finalizer(p->v.address, PK_ADDRESS_FINALIZER))
		return PK_OK;
	struct pk_kube_ref ref = claim_ref(p, PK_ADDRESS_RESOURCE);
	return pk_writer_patch(
	    p->r->writer, &ref, false,
	    pk_objects_finalizer_remove_patch(p->v.address, PK_ADDRESS_FINALIZER),
	    "remove IPAddress finalizer", p->key, NULL);
}

static int claim_pass(struct pass *p)
{
	const struct pk_backend *b = p->r->backend;
	if (cache_behind(p))
		return PK_OK;
	/* An IPAddress seen for the first time (by hand, moved, or ours) is recorded. */
	if (p->v.address != NULL) {
		struct pk_pool_next next;
		memset(&next, 0, sizeof(next));
		b->ops->address_seen(b->self, p->v.address, &next);
		follow(p, &next);
	}
	p->held = b->ops->holds(b->self, &p->id);
	if (p->v.claim == NULL) {
		/* The claim is gone: its address is released once its IPAddress is too. */
		bool done = false;
		if (p->held && p->v.address == NULL)
			return release_if_gone(p, NULL, &done);
		if (p->v.address != NULL)
			return unprotect_orphan(p);
		return PK_OK;
	}
	int rc = pk_backend_view_pool(b, p->v.claim, p->v.pool, &p->pool);
	p->v.pool = NULL; /* the view owns it */
	if (rc != PK_OK)
		return rc;
	for (int step = 0; step < 3; step++) {
		struct pk_claim_facts f;
		struct pk_claim_decision d;
		facts(p, &f);
		pk_decide_claim(&f, &d);
		pk_log_debug("reconcile", PK_LOG_STR("claim", p->key),
		             PK_LOG_STR("action", pk_claim_action_name(d.action)),
		             PK_LOG_STR("reason", d.reason));
		if (!act(p, &f, &d, &rc))
			break;
	}
	return rc;
}

int pk_claim_reconcile(struct pk_claim_reconciler *r, const char *ns, const char *name,
                       struct pk_claim_view *v)
{
	struct pass p = {.r = r, .ns = ns, .name = name, .v = *v};
	memset(v, 0, sizeof(*v));
	pk_object_key(ns, name, p.key, sizeof(p.key));
	p.id = (struct pk_claim_id){.ns = ns, .name = name, .key = p.key};
	p.id.external_id = pk_external_id(p.v.address);
	if (p.v.claim != NULL) {
		p.id.uid = pk_json_meta_cstr(p.v.claim, "uid");
		p.id.cluster = pk_claim_cluster_name(p.v.claim);
	}
	int rc = claim_pass(&p);
	pk_claim_view_clear(&p.v);
	pk_pool_view_clear(&p.pool);
	for (size_t i = 0; i < p.nretired; i++)
		json_decref(p.retired[i]);
	return rc;
}
