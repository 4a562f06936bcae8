/* reconcile.c - the claim and pool reconcilers; see reconcile.h and decide.h. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "address.h"
#include "allocator.h"
#include "count.h"
#include "decide.h"
#include "kube_informer.h"
#include "log.h"
#include "objects.h"
#include "pool.h"
#include "queue.h"
#include "reconcile.h"
#include "rules.h"

#define POOL_FINALIZER "ipam.poolkeeper.io/protect-pool"
#define POOL_VERSION   "v1alpha1"
#define KEY_MAX        640
#define MANAGER        "poolkeeper-controller"
/* Pool status writes are batched: one per pool at most this often. */
#define POOL_SYNC_DELAY_MS 300

/* An address recorded as held by an IPAddress, keyed by the IPAddress's namespace/name. */
struct held {
	struct held *next;
	char key[KEY_MAX];      /* ns/name of the IPAddress (and of its claim) */
	char pool_key[KEY_MAX]; /* kind/ns/name */
	pk_u128 addr;
	enum pk_family family;
};

struct pool_state {
	struct pool_state *next;
	char key[KEY_MAX]; /* kind/ns/name */
	char uid[128];
	long long generation;
	bool valid;
	char invalid[PK_ERR_MSG_MAX];
	struct pk_pool pool;
	struct pk_allocator *alloc;
	unsigned duplicates;
	char duplicate_text[320];
};

struct pk_controller {
	struct pk_kube_client *client;
	char *namespace;
	char *claim_version;
	char *cluster_version;
	bool v1beta1;
	struct pk_queue *queue;
	struct pk_kube_informer *claims, *addresses, *pools, *gpools, *clusters;
	pthread_t worker;
	bool worker_started;
	atomic_int leading;
	atomic_int epoch;
	atomic_int stopping;
	int seen_epoch;
	struct held *held;
	struct pool_state *states;
	/* metrics */
	atomic_ullong allocations, releases, failures_exhausted, failures_other, reconciles;
};

/* ---- small helpers ---- */

static long long wall_now(void)
{
	return (long long)time(NULL);
}

static void visit_ref(void *ud, const char *key, const void *item)
{
	(void)key;
	*(json_t **)ud = json_incref((json_t *)(uintptr_t)item);
}

/* New reference to the stored object, or NULL. */
static json_t *cached(struct pk_kube_informer *inf, const char *ns, const char *name)
{
	json_t *o = NULL;
	if (inf != NULL && name != NULL)
		(void)pk_kube_informer_get(inf, ns, name, visit_ref, &o);
	return o;
}

static void queue_key(struct pk_controller *c, const char *prefix, const char *a, const char *b,
                      const char *d, long delay_ms)
{
	char key[KEY_MAX * 2];
	if (d != NULL)
		snprintf(key, sizeof(key), "%s/%s/%s/%s", prefix, a ? a : "", b ? b : "", d);
	else
		snprintf(key, sizeof(key), "%s/%s/%s", prefix, a ? a : "", b ? b : "");
	int rc = delay_ms > 0 ? pk_queue_add_after(c->queue, key, delay_ms)
	                      : pk_queue_add(c->queue, key);
	if (rc != PK_OK)
		pk_log_error("cannot queue work: out of memory", PK_LOG_STR("key", key));
}

/* "IPPool/ns/name" or "GlobalIPPool//name" for a poolRef seen from namespace ns. */
static bool pool_key_of(const json_t *pool_ref, const char *ns, char *out, size_t len)
{
	if (!pk_rules_is_poolkeeper_pool_ref(pool_ref))
		return false;
	const char *kind = pk_kube_json_str(pool_ref, "kind"),
	           *name = pk_kube_json_str(pool_ref, "name");
	if (kind == NULL || name == NULL)
		return false;
	bool global = strcmp(kind, PK_GLOBAL_POOL_KIND) == 0;
	snprintf(out, len, "%s/%s/%s", kind, global ? "" : (ns ? ns : ""), name);
	return true;
}

static bool pool_key_of_object(const json_t *pool, const char *kind, char *out, size_t len)
{
	const char *name = pk_kube_meta_str(pool, "name"),
	           *ns = pk_kube_meta_str(pool, "namespace");
	if (name == NULL)
		return false;
	snprintf(out, len, "%s/%s/%s", kind, ns ? ns : "", name);
	return true;
}

/* ---- informer callbacks: they only queue keys ---- */

struct claim_scan {
	struct pk_controller *c;
	const char *pool_key; /* claims of this pool, or NULL */
	const char *cluster_ns, *cluster_name;
	bool unbound_only;
};

static bool claim_ready(const json_t *claim)
{
	const json_t *st = json_object_get(claim, "status");
	const json_t *r = pk_objects_condition(json_object_get(st, "conditions"), "Ready");
	const char *s = pk_kube_json_str(r, "status");
	return s != NULL && strcmp(s, "True") == 0;
}

static void scan_claim(void *ud, const char *key, const void *item)
{
	struct claim_scan *s = ud;
	const json_t *claim = item;
	const char *ns = pk_kube_meta_str(claim, "namespace"),
	           *name = pk_kube_meta_str(claim, "name");
	(void)key;
	if (ns == NULL || name == NULL)
		return;
	if (s->pool_key != NULL) {
		char pk[KEY_MAX];
		if (!pool_key_of(json_object_get(json_object_get(claim, "spec"), "poolRef"), ns, pk,
		                 sizeof(pk)) ||
		    strcmp(pk, s->pool_key) != 0)
			return;
	}
	if (s->cluster_name != NULL) {
		const char *cn = pk_claim_cluster_name(claim);
		if (cn == NULL || strcmp(ns, s->cluster_ns) != 0 ||
		    strcmp(cn, s->cluster_name) != 0)
			return;
	}
	if (s->unbound_only && claim_ready(claim) &&
	    pk_kube_meta_str(claim, "deletionTimestamp") == NULL)
		return;
	queue_key(s->c, "c", ns, name, NULL, 0);
}

static void requeue_claims_of_pool(struct pk_controller *c, const char *pool_key, bool unbound)
{
	struct claim_scan s = {.c = c, .pool_key = pool_key, .unbound_only = unbound};
	pk_kube_informer_foreach(c->claims, scan_claim, &s);
}

static void on_claim(void *ud, const char *key, const void *item)
{
	struct pk_controller *c = ud;
	const json_t *claim = item;
	(void)key;
	queue_key(c, "c", pk_kube_meta_str(claim, "namespace"), pk_kube_meta_str(claim, "name"),
	          NULL, 0);
}

static void on_claim_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)old;
	on_claim(ud, key, item);
}

static void on_address(void *ud, const char *key, const void *item)
{
	struct pk_controller *c = ud;
	const json_t *a = item;
	(void)key;
	queue_key(c, "a", pk_kube_meta_str(a, "namespace"), pk_kube_meta_str(a, "name"), NULL, 0);
}

static void on_address_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)old;
	on_address(ud, key, item);
}

/* What of a pool makes its waiting claims worth another look (not its status). */
static bool pool_changed(const json_t *old, const json_t *now)
{
	const json_t *om = json_object_get(old, "metadata"), *nm = json_object_get(now, "metadata");
	if (!json_equal(json_object_get(om, "generation"), json_object_get(nm, "generation")))
		return true;
	if ((pk_kube_json_str(om, "deletionTimestamp") == NULL) !=
	    (pk_kube_json_str(nm, "deletionTimestamp") == NULL))
		return true;
	const json_t *oa =
	    json_object_get(json_object_get(om, "annotations"), PK_PAUSED_ANNOTATION);
	const json_t *na =
	    json_object_get(json_object_get(nm, "annotations"), PK_PAUSED_ANNOTATION);
	return (oa == NULL) != (na == NULL);
}

static void pool_event(struct pk_controller *c, const json_t *pool, const char *kind, bool claims)
{
	char pk[KEY_MAX];
	if (!pool_key_of_object(pool, kind, pk, sizeof(pk)))
		return;
	char key[KEY_MAX + 4];
	snprintf(key, sizeof(key), "p/%s", pk);
	if (pk_queue_add(c->queue, key) != PK_OK)
		pk_log_error("cannot queue work: out of memory", PK_LOG_STR("key", key));
	if (claims)
		requeue_claims_of_pool(c, pk, false);
}

static void on_pool(void *ud, const char *key, const void *item)
{
	(void)key;
	pool_event(ud, item, PK_POOL_KIND, true);
}

static void on_pool_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)key;
	pool_event(ud, item, PK_POOL_KIND, pool_changed(old, item));
}

static void on_gpool(void *ud, const char *key, const void *item)
{
	(void)key;
	pool_event(ud, item, PK_GLOBAL_POOL_KIND, true);
}

static void on_gpool_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)key;
	pool_event(ud, item, PK_GLOBAL_POOL_KIND, pool_changed(old, item));
}

static void cluster_event(struct pk_controller *c, const json_t *cluster)
{
	struct claim_scan s = {.c = c,
	                       .cluster_ns = pk_kube_meta_str(cluster, "namespace"),
	                       .cluster_name = pk_kube_meta_str(cluster, "name")};
	if (s.cluster_ns == NULL || s.cluster_name == NULL)
		return;
	pk_kube_informer_foreach(c->claims, scan_claim, &s);
}

static void on_cluster(void *ud, const char *key, const void *item)
{
	(void)key;
	cluster_event(ud, item);
}

static void on_cluster_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)key;
	(void)old;
	cluster_event(ud, item);
}

/* ---- held addresses and pool states (worker thread only) ---- */

static struct held *held_find(struct pk_controller *c, const char *key)
{
	for (struct held *h = c->held; h != NULL; h = h->next)
		if (strcmp(h->key, key) == 0)
			return h;
	return NULL;
}

static void held_drop(struct pk_controller *c, const char *key)
{
	for (struct held **l = &c->held; *l != NULL; l = &(*l)->next) {
		if (strcmp((*l)->key, key) == 0) {
			struct held *h = *l;
			*l = h->next;
			free(h);
			return;
		}
	}
}

static void held_free_all(struct pk_controller *c)
{
	while (c->held != NULL) {
		struct held *h = c->held;
		c->held = h->next;
		free(h);
	}
}

static struct pool_state *state_find(struct pk_controller *c, const char *pool_key)
{
	for (struct pool_state *s = c->states; s != NULL; s = s->next)
		if (strcmp(s->key, pool_key) == 0)
			return s;
	return NULL;
}

static void state_clear(struct pool_state *s)
{
	pk_allocator_free(s->alloc);
	s->alloc = NULL;
	pk_pool_release(&s->pool);
	memset(&s->pool, 0, sizeof(s->pool));
}

static void states_free_all(struct pk_controller *c)
{
	while (c->states != NULL) {
		struct pool_state *s = c->states;
		c->states = s->next;
		state_clear(s);
		free(s);
	}
}

/* Records the address of a poolkeeper IPAddress as held; the pool's allocator adopts it. */
static void held_record(struct pk_controller *c, const json_t *addr_obj);

/*
 * The pool's state, (re)built when first needed or when its spec or
 * incarnation changed: decode the spec, then adopt every held address of
 * the pool. NULL when memory runs out.
 */
static struct pool_state *pool_state(struct pk_controller *c, const char *pool_key,
                                     const json_t *pool)
{
	struct pool_state *s = state_find(c, pool_key);
	const char *uid = pk_kube_meta_str(pool, "uid");
	const json_t *g = json_object_get(json_object_get(pool, "metadata"), "generation");
	long long gen = json_is_integer(g) ? (long long)json_integer_value(g) : 0;
	if (s != NULL && uid != NULL && strcmp(s->uid, uid) == 0 && s->generation == gen)
		return s;
	if (s == NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL)
			return NULL;
		snprintf(s->key, sizeof(s->key), "%s", pool_key);
		s->next = c->states;
		c->states = s;
	} else {
		state_clear(s);
	}
	snprintf(s->uid, sizeof(s->uid), "%s", uid ? uid : "");
	s->generation = gen;
	s->valid = false;
	s->duplicates = 0;
	s->duplicate_text[0] = '\0';
	s->invalid[0] = '\0';

	struct pk_violations v;
	pk_violations_init(&v);
	int rc = pk_pool_decode(json_object_get(pool, "spec"), &s->pool, &v);
	if (rc != PK_OK || s->pool.usable == NULL) {
		char why[PK_ERR_MSG_MAX];
		pk_violations_join(&v, PK_SEV_DENY, why, sizeof(why));
		snprintf(s->invalid, sizeof(s->invalid), "the spec of %.100s is not usable: %.380s",
		         pool_key, rc != PK_OK ? "out of memory" : why);
		return s;
	}
	s->alloc = pk_allocator_new(s->pool.usable);
	if (s->alloc == NULL)
		return NULL;
	s->valid = true;
	for (struct held *h = c->held; h != NULL; h = h->next) {
		if (strcmp(h->pool_key, pool_key) != 0)
			continue;
		if (pk_allocator_adopt(s->alloc, h->addr) == PK_ERR_IN_USE) {
			char t[PK_ADDR_STRLEN];
			pk_address_format_v(h->addr, h->family, t);
			s->duplicates++;
			snprintf(s->duplicate_text, sizeof(s->duplicate_text),
			         "address %s is held by more than one IPAddress (one is %.120s)", t,
			         h->key);
			pk_log_warn("duplicate address", PK_LOG_STR("pool", pool_key),
			            PK_LOG_STR("address", t), PK_LOG_STR("ipaddress", h->key));
		}
	}
	pk_log_info("pool allocator built", PK_LOG_STR("pool", pool_key),
	            PK_LOG_INT("generation", gen), PK_LOG_UINT("duplicates", s->duplicates));
	return s;
}

static void held_record(struct pk_controller *c, const json_t *a)
{
	const char *ns = pk_kube_meta_str(a, "namespace"), *name = pk_kube_meta_str(a, "name");
	const json_t *spec = json_object_get(a, "spec");
	char pk[KEY_MAX], key[KEY_MAX];
	if (ns == NULL || name == NULL ||
	    !pool_key_of(json_object_get(spec, "poolRef"), ns, pk, sizeof(pk)))
		return;
	const char *text = pk_kube_json_str(spec, "address");
	struct pk_addr addr;
	struct pk_err err;
	if (text == NULL || pk_address_parse(text, &addr, "spec.address", &err) != PK_OK) {
		pk_log_warn("IPAddress with an unreadable address ignored",
		            PK_LOG_STR("namespace", ns), PK_LOG_STR("name", name),
		            PK_LOG_STR("error", text ? err.msg : "spec.address missing"));
		return;
	}
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	struct held *h = held_find(c, key);
	if (h != NULL && h->addr == addr.v && strcmp(h->pool_key, pk) == 0)
		return;
	if (h != NULL) {
		/* The IPAddress was re-created elsewhere: give the old address back first. */
		struct pool_state *old = state_find(c, h->pool_key);
		if (old != NULL && old->alloc != NULL &&
		    pk_allocator_release(old->alloc, h->addr, 0, wall_now()) != PK_OK)
			pk_log_debug("old address was not held", PK_LOG_STR("ipaddress", key));
	} else {
		h = calloc(1, sizeof(*h));
		if (h == NULL) {
			pk_log_error("out of memory recording a held address",
			             PK_LOG_STR("ipaddress", key));
			return;
		}
		snprintf(h->key, sizeof(h->key), "%s", key);
		h->next = c->held;
		c->held = h;
	}
	snprintf(h->pool_key, sizeof(h->pool_key), "%s", pk);
	h->addr = addr.v;
	h->family = addr.family;
	struct pool_state *s = state_find(c, pk);
	if (s != NULL && s->alloc != NULL) {
		int rc = pk_allocator_adopt(s->alloc, addr.v);
		if (rc == PK_ERR_IN_USE) {
			s->duplicates++;
			snprintf(s->duplicate_text, sizeof(s->duplicate_text),
			         "address %s is held by more than one IPAddress (one is %.120s)",
			         text, key);
			pk_log_warn("duplicate address", PK_LOG_STR("pool", pk),
			            PK_LOG_STR("address", text), PK_LOG_STR("ipaddress", key));
		}
	}
}

/* ---- leadership start: a consistent read of every IPAddress ---- */

static int load_held(struct pk_controller *c)
{
	struct pk_kube_ref r = {.group = PK_CAPI_IPAM_GROUP,
	                        .version = c->claim_version,
	                        .resource = "ipaddresses",
	                        .namespace = c->namespace};
	struct pk_kube_list_opts o = {0}; /* resourceVersion unset: a consistent read */
	struct pk_kube_error e;
	json_t *list = NULL;
	if (pk_kube_client_list_all(c->client, &r, &o, &list, &e) != PK_KUBE_OK) {
		pk_log_error("cannot list IPAddresses", PK_LOG_STR("error", e.message),
		             PK_LOG_STR("reason", pk_kube_reason_name(e.reason)));
		return PK_ERR_INVALID;
	}
	held_free_all(c);
	states_free_all(c);
	size_t i, n = 0;
	json_t *a;
	json_array_foreach(json_object_get(list, "items"), i, a)
	{
		held_record(c, a);
		n++;
	}
	json_decref(list);
	pk_log_info("leading: IPAddresses read", PK_LOG_UINT("ipaddresses", n));
	return PK_OK;
}

/* ---- writes ---- */

static struct pk_kube_ref claim_ref(struct pk_controller *c, const char *ns, const char *name)
{
	struct pk_kube_ref r = {.group = PK_CAPI_IPAM_GROUP,
	                        .version = c->claim_version,
	                        .resource = "ipaddressclaims",
	                        .namespace = ns,
	                        .name = name};
	return r;
}

static struct pk_kube_ref address_ref(struct pk_controller *c, const char *ns, const char *name)
{
	struct pk_kube_ref r = claim_ref(c, ns, name);
	r.resource = "ipaddresses";
	return r;
}

static int write_failed(const char *what, const char *key, const struct pk_kube_error *e)
{
	pk_log_warn("write failed", PK_LOG_STR("write", what), PK_LOG_STR("object", key),
	            PK_LOG_STR("reason", pk_kube_reason_name(e->reason)),
	            PK_LOG_STR("error", e->message));
	return PK_ERR_INVALID;
}

static int json_patch(struct pk_controller *c, const struct pk_kube_ref *r, json_t *patch,
                      const char *what, const char *key)
{
	struct pk_kube_error e;
	struct pk_kube_write_opts w = {.field_manager = MANAGER};
	if (patch == NULL)
		return PK_OK;
	enum pk_kube_reason rc =
	    pk_kube_client_patch(c->client, r, PK_KUBE_PATCH_JSON, patch, &w, NULL, &e);
	json_decref(patch);
	if (rc == PK_KUBE_NOT_FOUND)
		return PK_OK;
	if (rc != PK_KUBE_OK)
		return write_failed(what, key, &e);
	pk_log_debug("patched", PK_LOG_STR("write", what), PK_LOG_STR("object", key));
	return PK_OK;
}

static int claim_status(struct pk_controller *c, const json_t *claim, const char *key,
                        const char *address, bool ready, const char *reason, const char *message)
{
	const json_t *g = json_object_get(json_object_get(claim, "metadata"), "generation");
	struct pk_condition cond = {.type = "Ready",
	                            .status = ready,
	                            .reason = reason,
	                            .message = message,
	                            .generation = json_is_integer(g) ? json_integer_value(g) : -1,
	                            .v1beta1 = c->v1beta1};
	const json_t *st = json_object_get(claim, "status");
	const char *cur = pk_kube_json_str(json_object_get(st, "addressRef"), "name");
	bool ref_same = address == NULL || (cur != NULL && strcmp(cur, address) == 0);
	if (ref_same && pk_objects_condition_same(json_object_get(st, "conditions"), &cond))
		return PK_OK;
	json_t *patch = pk_objects_claim_status_patch(claim, address, &cond, wall_now());
	if (patch == NULL)
		return PK_ERR_NOMEM;
	struct pk_kube_ref r =
	    claim_ref(c, pk_kube_meta_str(claim, "namespace"), pk_kube_meta_str(claim, "name"));
	r.subresource = "status";
	struct pk_kube_error e;
	struct pk_kube_write_opts w = {.field_manager = MANAGER};
	enum pk_kube_reason rc =
	    pk_kube_client_patch(c->client, &r, PK_KUBE_PATCH_MERGE, patch, &w, NULL, &e);
	json_decref(patch);
	if (rc == PK_KUBE_NOT_FOUND)
		return PK_OK;
	if (rc != PK_KUBE_OK)
		return write_failed("claim status", key, &e);
	pk_log_info(ready ? "claim ready" : "claim not ready", PK_LOG_STR("claim", key),
	            PK_LOG_STR("reason", reason), PK_LOG_STR("message", message));
	return PK_OK;
}

static void pool_sync_later(struct pk_controller *c, const char *pool_key)
{
	char key[KEY_MAX + 4];
	snprintf(key, sizeof(key), "p/%s", pool_key);
	if (pk_queue_add_after(c->queue, key, POOL_SYNC_DELAY_MS) != PK_OK)
		pk_log_error("cannot queue work: out of memory", PK_LOG_STR("key", key));
}

/* Releases what the IPAddress `key` held, once it is gone; wakes the pool's waiting claims. */
static void release_held(struct pk_controller *c, const char *key, const json_t *pool)
{
	struct held *h = held_find(c, key);
	if (h == NULL)
		return;
	char pk[KEY_MAX], t[PK_ADDR_STRLEN];
	snprintf(pk, sizeof(pk), "%s", h->pool_key);
	pk_address_format_v(h->addr, h->family, t);
	/* A duplicate (two IPAddresses, one address): the other one still holds it. */
	bool shared = false;
	for (struct held *o = c->held; o != NULL; o = o->next)
		if (o != h && o->addr == h->addr && strcmp(o->pool_key, pk) == 0)
			shared = true;
	struct pool_state *s = state_find(c, pk);
	if (s != NULL && s->alloc != NULL && shared && s->duplicates > 0)
		s->duplicates--;
	if (s != NULL && s->alloc != NULL && !shared) {
		long long now = wall_now();
		long long grace = s->valid ? s->pool.grace_seconds : 0;
		/* "addressReuseGracePeriodSeconds": the address waits that long before reuse. */
		if (pk_allocator_release(s->alloc, h->addr, now + grace, now) != PK_OK)
			pk_log_debug("released address was not held", PK_LOG_STR("address", t));
		if (grace > 0) {
			char qk[KEY_MAX + 4];
			/* Its own key: the earlier status sync of the pool must not absorb it. */
			snprintf(qk, sizeof(qk), "g/%s", pk);
			if (pk_queue_add_after(c->queue, qk, (long)(grace * 1000 + 100)) != PK_OK)
				pk_log_error("cannot queue work: out of memory");
		}
	}
	(void)pool;
	held_drop(c, key);
	atomic_fetch_add(&c->releases, 1);
	pk_log_info("address released", PK_LOG_STR("ipaddress", key), PK_LOG_STR("address", t),
	            PK_LOG_STR("pool", pk));
	pool_sync_later(c, pk);
	requeue_claims_of_pool(c, pk, true);
}

/* Whether the IPAddress is really gone: the cache may lag, the API does not. */
static int address_gone(struct pk_controller *c, const char *ns, const char *name, bool *gone)
{
	struct pk_kube_ref r = address_ref(c, ns, name);
	struct pk_kube_error e;
	json_t *o = NULL;
	enum pk_kube_reason rc = pk_kube_client_get(c->client, &r, &o, &e);
	json_decref(o);
	if (rc == PK_KUBE_NOT_FOUND) {
		*gone = true;
		return PK_OK;
	}
	if (rc != PK_KUBE_OK)
		return write_failed("get IPAddress", name, &e);
	*gone = false;
	return PK_OK;
}

/* ---- the claim reconciler ---- */

static json_t *pool_for(struct pk_controller *c, const json_t *claim, const char **kind)
{
	const json_t *ref = json_object_get(json_object_get(claim, "spec"), "poolRef");
	*kind = pk_kube_json_str(ref, "kind");
	if (!pk_rules_is_poolkeeper_pool_ref(ref) || *kind == NULL)
		return NULL;
	if (strcmp(*kind, PK_GLOBAL_POOL_KIND) == 0)
		return cached(c->gpools, NULL, pk_kube_json_str(ref, "name"));
	return cached(c->pools, pk_kube_meta_str(claim, "namespace"),
	              pk_kube_json_str(ref, "name"));
}

static int allocate(struct pk_controller *c, const json_t *claim, const char *key,
                    const json_t *pool, const char *kind, struct pool_state *s)
{
	const char *ns = pk_kube_meta_str(claim, "namespace"),
	           *name = pk_kube_meta_str(claim, "name");
	const char *pool_ns = pk_kube_meta_str(pool, "namespace");
	char f_text[330];
	snprintf(f_text, sizeof(f_text), "%.63s%s%.253s", pool_ns ? pool_ns : "",
	         pool_ns ? "/" : "", pk_kube_meta_str(pool, "name"));
	struct held *h = held_find(c, key);
	pk_u128 v;
	bool fresh = false;
	if (h != NULL) {
		/* An IPAddress deleted under a live claim comes back with the same address. */
		v = h->addr;
	} else {
		int rc = pk_allocator_next(s->alloc, wall_now(), &v);
		if (rc == PK_ERR_EXHAUSTED) {
			struct pk_alloc_counts n;
			char total[PK_COUNT_STRLEN];
			char msg[PK_ERR_MSG_MAX];
			pk_allocator_counts(s->alloc, &n);
			snprintf(
			    msg, sizeof(msg),
			    "%.20s %.250s has no free address (%s usable, all in use or in their "
			    "reuse grace period); the claim is retried when one is released",
			    kind, f_text, pk_count_format(n.total, total));
			atomic_fetch_add(&c->failures_exhausted, 1);
			return claim_status(c, claim, key, NULL, false, "PoolExhausted", msg);
		}
		if (rc != PK_OK)
			return rc;
		fresh = true;
	}
	char text[PK_ADDR_STRLEN], gw[PK_ADDR_STRLEN];
	pk_address_format_v(v, s->pool.family, text);
	if (s->pool.has_gateway)
		pk_address_format_v(s->pool.gateway, s->pool.family, gw);
	char api[64];
	snprintf(api, sizeof(api), "%s/%s", PK_CAPI_IPAM_GROUP, c->claim_version);
	unsigned prefix = s->pool.has_prefix ? s->pool.prefix : pk_address_bits(s->pool.family);
	struct pk_ipaddress_spec spec = {.api_version = api,
	                                 .address = text,
	                                 .prefix = prefix,
	                                 .gateway = s->pool.has_gateway ? gw : NULL,
	                                 .pool_kind = kind,
	                                 .pool_name = pk_kube_meta_str(pool, "name"),
	                                 .pool_uid = pk_kube_meta_str(pool, "uid")};
	json_t *obj = pk_objects_ipaddress(claim, &spec);
	if (obj == NULL) {
		if (fresh && pk_allocator_release(s->alloc, v, 0, wall_now()) != PK_OK)
			pk_log_debug("tentative address was not held");
		return PK_ERR_NOMEM;
	}
	struct pk_kube_ref r = address_ref(c, ns, NULL);
	struct pk_kube_error e;
	struct pk_kube_write_opts w = {.field_manager = MANAGER};
	enum pk_kube_reason rc = atomic_load(&c->leading)
	                             ? pk_kube_client_create(c->client, &r, obj, &w, NULL, &e)
	                             : pk_kube_error_set(&e, PK_KUBE_CANCELLED, 0, "not leading");
	json_decref(obj);
	if (rc == PK_KUBE_OK) {
		if (fresh) {
			struct held *nh = calloc(1, sizeof(*nh));
			if (nh == NULL)
				return PK_ERR_NOMEM;
			snprintf(nh->key, sizeof(nh->key), "%s", key);
			snprintf(nh->pool_key, sizeof(nh->pool_key), "%s", s->key);
			nh->addr = v;
			nh->family = s->pool.family;
			nh->next = c->held;
			c->held = nh;
			atomic_fetch_add(&c->allocations, 1);
		}
		pk_log_info("address allocated", PK_LOG_STR("claim", key),
		            PK_LOG_STR("address", text), PK_LOG_STR("pool", s->key));
		pool_sync_later(c, s->key);
		return PK_OK;
	}
	/* Not created: the tentative address goes back at once. */
	if (fresh && pk_allocator_release(s->alloc, v, 0, wall_now()) != PK_OK)
		pk_log_debug("tentative address was not held");
	if (rc == PK_KUBE_ALREADY_EXISTS) {
		/* Adopted on the next pass from the IPAddress's watch event. */
		pk_log_info("IPAddress exists: adopting", PK_LOG_STR("claim", key));
		queue_key(c, "a", ns, name, NULL, 0);
		return PK_OK;
	}
	atomic_fetch_add(&c->failures_other, 1);
	char msg[PK_ERR_MSG_MAX];
	snprintf(msg, sizeof(msg), "creating IPAddress %.63s/%.253s with %s failed: %.100s", ns,
	         name, text, e.message);
	if (rc != PK_KUBE_CANCELLED)
		(void)claim_status(c, claim, key, NULL, false, "AllocationFailed", msg);
	return write_failed("create IPAddress", key, &e);
}

static int set_ready(struct pk_controller *c, const json_t *claim, const char *key,
                     const json_t *address)
{
	held_record(c, address);
	const char *text = pk_kube_json_str(json_object_get(address, "spec"), "address");
	char msg[PK_ERR_MSG_MAX];
	snprintf(msg, sizeof(msg), "address %s allocated in IPAddress %.300s", text ? text : "?",
	         key);
	return claim_status(c, claim, key, pk_kube_meta_str(address, "name"), true, "Allocated",
	                    msg);
}

static int reconcile_claim(struct pk_controller *c, const char *ns, const char *name)
{
	char key[KEY_MAX];
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	json_t *claim = cached(c->claims, ns, name);
	json_t *pool = NULL, *cluster = NULL, *address = NULL;
	int rc = PK_OK;
	if (claim == NULL) {
		/* The claim is gone: its address is released once its IPAddress is too. */
		if (held_find(c, key) != NULL && cached(c->addresses, ns, name) == NULL) {
			bool gone = false;
			if ((rc = address_gone(c, ns, name, &gone)) == PK_OK && gone)
				release_held(c, key, NULL);
		}
		return rc;
	}
	const char *kind = NULL;
	pool = pool_for(c, claim, &kind);
	const char *cname = pk_claim_cluster_name(claim);
	if (cname != NULL && c->clusters != NULL)
		cluster = cached(c->clusters, ns, cname);
	address = cached(c->addresses, ns, name);

	struct pk_claim_facts f;
	pk_claim_facts_from(claim, pool, cname != NULL && c->clusters != NULL, cluster, address,
	                    &f);
	struct pool_state *s = NULL;
	char pk[KEY_MAX];
	if (f.pool == PK_POOL_ACTIVE &&
	    pool_key_of(json_object_get(json_object_get(claim, "spec"), "poolRef"), ns, pk,
	                sizeof(pk))) {
		s = pool_state(c, pk, pool);
		if (s == NULL) {
			rc = PK_ERR_NOMEM;
			goto out;
		}
		if (!s->valid)
			f.pool = PK_POOL_INVALID;
	}
	struct pk_claim_decision d;
	pk_decide_claim(&f, &d);
	pk_log_debug("reconcile", PK_LOG_STR("claim", key),
	             PK_LOG_STR("action", pk_claim_action_name(d.action)),
	             PK_LOG_STR("reason", d.reason));
	struct pk_kube_ref r;
	switch (d.action) {
	case PK_ACT_NONE:
	case PK_ACT_WAIT:
		break;
	case PK_ACT_ADD_FINALIZER:
		r = claim_ref(c, ns, name);
		rc = json_patch(c, &r, pk_objects_finalizer_add_patch(claim, PK_CLAIM_FINALIZER),
		                "add claim finalizer", key);
		break;
	case PK_ACT_NOT_READY:
		rc = claim_status(c, claim, key, NULL, false, d.reason, d.message);
		break;
	case PK_ACT_ALLOCATE:
		rc = allocate(c, claim, key, pool, kind, s);
		break;
	case PK_ACT_SET_READY:
		rc = set_ready(c, claim, key, address);
		break;
	case PK_ACT_UNPROTECT_ADDRESS:
		r = address_ref(c, ns, name);
		rc = json_patch(c, &r,
		                pk_objects_finalizer_remove_patch(address, PK_ADDRESS_FINALIZER),
		                "remove IPAddress finalizer", key);
		break;
	case PK_ACT_DELETE_ADDRESS: {
		r = address_ref(c, ns, name);
		struct pk_kube_delete_opts del = {.uid = pk_kube_meta_str(address, "uid")};
		struct pk_kube_error e;
		enum pk_kube_reason k = pk_kube_client_delete(c->client, &r, &del, NULL, &e);
		if (k != PK_KUBE_OK && k != PK_KUBE_NOT_FOUND)
			rc = write_failed("delete IPAddress", key, &e);
		break;
	}
	case PK_ACT_RELEASE: {
		/* A foreign IPAddress named like the claim is not the claim's to release. */
		if (!f.delete_for_move && f.address != PK_ADDRESS_FOREIGN &&
		    held_find(c, key) != NULL) {
			bool gone = false;
			if ((rc = address_gone(c, ns, name, &gone)) != PK_OK)
				break;
			if (!gone) {
				/* The cache lags: its DELETED event brings the claim back. */
				queue_key(c, "c", ns, name, NULL, 1000);
				break;
			}
			release_held(c, key, pool);
		}
		r = claim_ref(c, ns, name);
		rc = json_patch(c, &r, pk_objects_finalizer_remove_patch(claim, PK_CLAIM_FINALIZER),
		                "remove claim finalizer", key);
		break;
	}
	}
out:
	json_decref(claim);
	json_decref(pool);
	json_decref(cluster);
	json_decref(address);
	return rc;
}

/* ---- IPAddress events ---- */

static int reconcile_address(struct pk_controller *c, const char *ns, const char *name)
{
	json_t *a = cached(c->addresses, ns, name);
	if (a != NULL) {
		held_record(c, a);
		json_decref(a);
	}
	/* Its claim takes the next step (release, adopt, re-create). */
	return reconcile_claim(c, ns, name);
}

/* ---- the pool reconciler: status and finalizer ---- */

static int reconcile_pool(struct pk_controller *c, const char *kind, const char *ns,
                          const char *name)
{
	bool global = strcmp(kind, PK_GLOBAL_POOL_KIND) == 0;
	char pk[KEY_MAX];
	snprintf(pk, sizeof(pk), "%s/%s/%s", kind, ns, name);
	json_t *pool = global ? cached(c->gpools, NULL, name) : cached(c->pools, ns, name);
	if (pool == NULL)
		return PK_OK;
	int rc = PK_OK;
	struct pool_state *s = pool_state(c, pk, pool);
	if (s == NULL) {
		rc = PK_ERR_NOMEM;
		goto out;
	}
	struct pk_kube_ref r = {.group = PK_POOL_GROUP,
	                        .version = POOL_VERSION,
	                        .resource = global ? "globalippools" : "ippools",
	                        .namespace = global ? NULL : ns,
	                        .name = name};
	size_t holding = 0;
	for (struct held *h = c->held; h != NULL; h = h->next)
		if (strcmp(h->pool_key, pk) == 0)
			holding++;
	/* "a finalizer on the pool while addresses from it exist" (issue 6, Pools). */
	if (holding > 0)
		rc = json_patch(c, &r, pk_objects_finalizer_add_patch(pool, POOL_FINALIZER),
		                "add pool finalizer", pk);
	else
		rc = json_patch(c, &r, pk_objects_finalizer_remove_patch(pool, POOL_FINALIZER),
		                "remove pool finalizer", pk);
	if (rc != PK_OK)
		goto out;

	struct pk_alloc_counts n;
	memset(&n, 0, sizeof(n));
	char msg[PK_ERR_MSG_MAX];
	struct pk_condition cond = {.type = "Ready", .generation = s->generation};
	if (!s->valid) {
		cond.status = false;
		cond.reason = "InvalidSpec";
		snprintf(msg, sizeof(msg), "%s", s->invalid);
	} else {
		pk_allocator_expire(s->alloc, wall_now());
		pk_allocator_counts(s->alloc, &n);
		char fr[PK_COUNT_STRLEN], tot[PK_COUNT_STRLEN], oor[PK_COUNT_STRLEN];
		pk_count_format(n.free, fr);
		pk_count_format(n.total, tot);
		pk_u128_format(n.out_of_range, oor);
		if (s->duplicates > 0) {
			cond.status = false;
			cond.reason = "DuplicateAddresses";
			snprintf(msg, sizeof(msg),
			         "%u duplicate address(es) found and left as they are: %s",
			         s->duplicates, s->duplicate_text);
		} else if (n.out_of_range > 0) {
			cond.status = true;
			cond.reason = "AddressesOutOfRange";
			snprintf(
			    msg, sizeof(msg),
			    "%s address(es) in use lie outside the pool's addresses; %s of %s free",
			    oor, fr, tot);
		} else {
			cond.status = true;
			cond.reason = "Ready";
			snprintf(msg, sizeof(msg), "%s of %s addresses free", fr, tot);
		}
	}
	cond.message = msg;
	json_t *patch = pk_objects_pool_status_patch(pool, &n, &cond, wall_now());
	if (patch != NULL) {
		r.subresource = "status";
		struct pk_kube_error e;
		struct pk_kube_write_opts w = {.field_manager = MANAGER};
		enum pk_kube_reason k =
		    pk_kube_client_patch(c->client, &r, PK_KUBE_PATCH_MERGE, patch, &w, NULL, &e);
		json_decref(patch);
		if (k != PK_KUBE_OK && k != PK_KUBE_NOT_FOUND)
			rc = write_failed("pool status", pk, &e);
	}
	/* Addresses whose reuse grace period ended are free now: wake the waiting claims. */
	if (s->valid && (n.free.lo > 0 || n.free.carry > 0))
		requeue_claims_of_pool(c, pk, true);
out:
	json_decref(pool);
	return rc;
}

/* ---- the worker ---- */

/* Splits "x/a/b[/c]" in place; returns the number of parts after the prefix. */
static int split_key(char *key, char **parts, int max)
{
	int n = 0;
	char *p = strchr(key, '/');
	while (p != NULL && n < max) {
		*p = '\0';
		parts[n++] = p + 1;
		p = strchr(p + 1, '/');
	}
	return n;
}

static int process(struct pk_controller *c, const char *key)
{
	char buf[KEY_MAX * 2];
	char *parts[3] = {NULL, NULL, NULL};
	snprintf(buf, sizeof(buf), "%s", key);
	int n = split_key(buf, parts, 3);
	atomic_fetch_add(&c->reconciles, 1);
	if (buf[0] == 'c' && n == 2)
		return reconcile_claim(c, parts[0], parts[1]);
	if (buf[0] == 'a' && n == 2)
		return reconcile_address(c, parts[0], parts[1]);
	if ((buf[0] == 'p' || buf[0] == 'g') && n == 3)
		return reconcile_pool(c, parts[0], parts[1], parts[2]);
	pk_log_warn("unknown work key dropped", PK_LOG_STR("key", key));
	return PK_OK;
}

static void queue_everything(void *ud, const char *key, const void *item)
{
	(void)key;
	on_claim(ud, NULL, item);
}

static void queue_pools(struct pk_controller *c, struct pk_kube_informer *inf, const char *kind);

struct pool_visit {
	struct pk_controller *c;
	const char *kind;
};

static void queue_pool_visit(void *ud, const char *key, const void *item)
{
	struct pool_visit *v = ud;
	(void)key;
	pool_event(v->c, item, v->kind, false);
}

static void queue_pools(struct pk_controller *c, struct pk_kube_informer *inf, const char *kind)
{
	struct pool_visit v = {c, kind};
	if (inf != NULL)
		pk_kube_informer_foreach(inf, queue_pool_visit, &v);
}

static void *worker_main(void *arg)
{
	struct pk_controller *c = arg;
	for (;;) {
		if (atomic_load(&c->stopping))
			break;
		if (!atomic_load(&c->leading)) {
			/* Keys wait in the queue until this process leads. */
			struct timespec ts = {0, 100000000};
			nanosleep(&ts, NULL);
			continue;
		}
		int epoch = atomic_load(&c->epoch);
		if (epoch != c->seen_epoch) {
			if (load_held(c) != PK_OK) {
				struct timespec ts = {1, 0};
				nanosleep(&ts, NULL);
				continue;
			}
			c->seen_epoch = epoch;
			pk_kube_informer_foreach(c->claims, queue_everything, c);
			queue_pools(c, c->pools, PK_POOL_KIND);
			queue_pools(c, c->gpools, PK_GLOBAL_POOL_KIND);
		}
		char *key = NULL;
		int got = pk_queue_get(c->queue, 500, &key);
		if (got < 0)
			break;
		if (got == 0)
			continue;
		if (process(c, key) == PK_OK) {
			pk_queue_forget(c->queue, key);
		} else {
			long d = pk_queue_retry(c->queue, key);
			pk_log_debug("retrying", PK_LOG_STR("key", key), PK_LOG_INT("afterMs", d));
		}
		pk_queue_done(c->queue, key);
		free(key);
	}
	return NULL;
}

/* ---- life cycle ---- */

static char *dup_or_null(const char *s)
{
	return s != NULL && *s != '\0' ? strdup(s) : NULL;
}

int pk_controller_new(const struct pk_controller_opts *opts, struct pk_controller **out,
                      struct pk_err *err)
{
	struct pk_controller *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	c->client = opts->client;
	c->namespace = dup_or_null(opts->namespace);
	c->claim_version = strdup(opts->claim_version ? opts->claim_version : "v1beta2");
	c->cluster_version = dup_or_null(opts->cluster_version);
	c->v1beta1 = c->claim_version != NULL && strcmp(c->claim_version, "v1beta1") == 0;
	c->queue = pk_queue_new();
	if (c->claim_version == NULL || c->queue == NULL) {
		pk_controller_free(c);
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	struct {
		struct pk_kube_informer **slot;
		const char *group, *version, *resource;
		bool namespaced;
		struct pk_kube_informer_handlers h;
	} infs[] = {
	    {&c->claims,
	     PK_CAPI_IPAM_GROUP,
	     c->claim_version,
	     "ipaddressclaims",
	     true,
	     {on_claim, on_claim_update, on_claim, NULL, c}},
	    {&c->addresses,
	     PK_CAPI_IPAM_GROUP,
	     c->claim_version,
	     "ipaddresses",
	     true,
	     {on_address, on_address_update, on_address, NULL, c}},
	    {&c->pools,
	     PK_POOL_GROUP,
	     POOL_VERSION,
	     "ippools",
	     true,
	     {on_pool, on_pool_update, on_pool, NULL, c}},
	    {&c->gpools,
	     PK_POOL_GROUP,
	     POOL_VERSION,
	     "globalippools",
	     false,
	     {on_gpool, on_gpool_update, on_gpool, NULL, c}},
	    {&c->clusters,
	     "cluster.x-k8s.io",
	     c->cluster_version,
	     "clusters",
	     true,
	     {on_cluster, on_cluster_update, on_cluster, NULL, c}},
	};
	for (size_t i = 0; i < sizeof(infs) / sizeof(infs[0]); i++) {
		if (infs[i].version == NULL)
			continue; /* Clusters not served */
		if (!infs[i].namespaced && c->namespace != NULL) {
			pk_log_warn(
			    "watching one namespace: GlobalIPPools are ignored, since their "
			    "addresses in other namespaces cannot be seen",
			    PK_LOG_STR("namespace", c->namespace));
			continue;
		}
		struct pk_kube_informer_opts io = {
		    .ref = {.group = infs[i].group,
		            .version = infs[i].version,
		            .resource = infs[i].resource,
		            .namespace = infs[i].namespaced ? c->namespace : NULL},
		    .handlers = infs[i].h,
		};
		if (pk_kube_informer_new(c->client, &io, infs[i].slot, err) != PK_OK) {
			pk_controller_free(c);
			return PK_ERR_INVALID;
		}
	}
	*out = c;
	return PK_OK;
}

int pk_controller_start(struct pk_controller *c, long timeout_ms, struct pk_err *err)
{
	struct pk_kube_informer *all[5] = {c->claims, c->addresses, c->pools, c->gpools,
	                                   c->clusters};
	for (size_t i = 0; i < 5; i++)
		if (all[i] != NULL && pk_kube_informer_start(all[i], err) != PK_OK)
			return PK_ERR_INVALID;
	for (size_t i = 0; i < 5; i++)
		if (all[i] != NULL && !pk_kube_informer_wait_synced(all[i], timeout_ms))
			return pk_err_set(err, PK_ERR_INVALID,
			                  "the informers did not sync within %ld ms", timeout_ms);
	if (pthread_create(&c->worker, NULL, worker_main, c) != 0)
		return pk_err_set(err, PK_ERR_NOMEM, "cannot start the worker thread");
	c->worker_started = true;
	return PK_OK;
}

void pk_controller_set_leading(struct pk_controller *c, bool leading)
{
	if (leading)
		atomic_fetch_add(&c->epoch, 1);
	atomic_store(&c->leading, leading ? 1 : 0);
}

bool pk_controller_ready(struct pk_controller *c)
{
	struct pk_kube_informer *all[5] = {c->claims, c->addresses, c->pools, c->gpools,
	                                   c->clusters};
	for (size_t i = 0; i < 5; i++)
		if (all[i] != NULL && !pk_kube_informer_synced(all[i]))
			return false;
	return true;
}

void pk_controller_stop(struct pk_controller *c)
{
	if (c == NULL)
		return;
	atomic_store(&c->stopping, 1);
	pk_queue_shutdown(c->queue);
	if (c->worker_started) {
		pthread_join(c->worker, NULL);
		c->worker_started = false;
	}
	struct pk_kube_informer *all[5] = {c->claims, c->addresses, c->pools, c->gpools,
	                                   c->clusters};
	for (size_t i = 0; i < 5; i++)
		if (all[i] != NULL)
			pk_kube_informer_stop(all[i]);
}

void pk_controller_free(struct pk_controller *c)
{
	if (c == NULL)
		return;
	pk_controller_stop(c);
	pk_kube_informer_free(c->claims);
	pk_kube_informer_free(c->addresses);
	pk_kube_informer_free(c->pools);
	pk_kube_informer_free(c->gpools);
	pk_kube_informer_free(c->clusters);
	held_free_all(c);
	states_free_all(c);
	pk_queue_free(c->queue);
	free(c->namespace);
	free(c->claim_version);
	free(c->cluster_version);
	free(c);
}

size_t pk_controller_metrics(struct pk_controller *c, char *buf, size_t len)
{
	int n = snprintf(
	    buf, len,
	    "# HELP poolkeeper_leader Whether this process holds the Lease.\n"
	    "# TYPE poolkeeper_leader gauge\npoolkeeper_leader %d\n"
	    "# HELP poolkeeper_workqueue_depth Keys waiting in the work queue.\n"
	    "# TYPE poolkeeper_workqueue_depth gauge\npoolkeeper_workqueue_depth %zu\n"
	    "# HELP poolkeeper_allocations_total Addresses allocated.\n"
	    "# TYPE poolkeeper_allocations_total counter\npoolkeeper_allocations_total %llu\n"
	    "# HELP poolkeeper_releases_total Addresses released.\n"
	    "# TYPE poolkeeper_releases_total counter\npoolkeeper_releases_total %llu\n"
	    "# HELP poolkeeper_allocation_failures_total Allocations that failed, by reason.\n"
	    "# TYPE poolkeeper_allocation_failures_total counter\n"
	    "poolkeeper_allocation_failures_total{reason=\"PoolExhausted\"} %llu\n"
	    "poolkeeper_allocation_failures_total{reason=\"AllocationFailed\"} %llu\n"
	    "# HELP poolkeeper_reconciles_total Work keys processed.\n"
	    "# TYPE poolkeeper_reconciles_total counter\npoolkeeper_reconciles_total %llu\n",
	    atomic_load(&c->leading), pk_queue_len(c->queue),
	    (unsigned long long)atomic_load(&c->allocations),
	    (unsigned long long)atomic_load(&c->releases),
	    (unsigned long long)atomic_load(&c->failures_exhausted),
	    (unsigned long long)atomic_load(&c->failures_other),
	    (unsigned long long)atomic_load(&c->reconciles));
	if (n < 0)
		return 0;
	return (size_t)n < len ? (size_t)n : len - 1;
}
