/* reconcile.c - the claim and pool reconcilers; see reconcile.h and decide.h. */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "address.h"
#include "allocator.h"
#include "count.h"
#include "decide.h"
#include "events.h"
#include "jpack.h"
#include "kube_informer.h"
#include "log.h"
#include "objects.h"
#include "pool.h"
#include "queue.h"
#include "reconcile.h"
#include "rules.h"
#include "strmap.h"
#include "trim.h"

#define POOL_FINALIZER "ipam.poolkeeper.io/protect-pool"
#define POOL_VERSION   "v1alpha1"
#define POOL_API       PK_POOL_GROUP "/" POOL_VERSION
#define KEY_MAX        640
#define MANAGER        "poolkeeper-controller"
#define MAX_WORKERS    64
/* Pool status writes are batched: one per pool at most this often. */
#define POOL_SYNC_DELAY_MS 300

/* Seconds from a claim being seen to Ready: the histogram's upper bounds. */
static const double ready_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                       1,     2.5,  5,     10,   30,  60,   300};
#define NBUCKETS (sizeof(ready_buckets) / sizeof(ready_buckets[0]))

/* An address held by an IPAddress; the map's key is the IPAddress's namespace/name. */
struct held {
	pk_u128 addr;
	const char *pool_key; /* kind/ns/name, interned (pool_name) */
	enum pk_family family;
};

struct pool_state {
	char key[KEY_MAX]; /* kind/ns/name */
	char uid[128];
	long long generation;
	bool valid;
	char invalid[PK_ERR_MSG_MAX];
	struct pk_pool pool;
	struct pk_allocator *alloc;
	unsigned duplicates;
	char duplicate_text[320];
	bool waiters; /* a claim was told the pool is exhausted */
};

struct pk_controller {
	struct pk_kube_client *client;
	struct pk_ctl_events *events;
	char *namespace;
	char *selector; /* of the claims', pools' and Clusters' informers; NULL: none */
	char *claim_version;
	char *cluster_version;
	char claim_api[64];
	bool v1beta1;
	struct pk_queue *queue;
	struct pk_kube_informer *claims, *addresses, *pools, *gpools, *clusters;
	pthread_t workers[MAX_WORKERS];
	unsigned nworkers, started;
	atomic_int leading;
	atomic_int epoch;
	atomic_int stopping;
	atomic_int seen_epoch;
	atomic_int trim_due; /* the queue's first drain after leadership starts gives memory back */
	pthread_mutex_t load_mu; /* one worker reads the IPAddresses when leadership starts */
	pthread_mutex_t mu;      /* held, states and their allocators */
	struct pk_strmap *held;
	struct pk_strmap *states;
	struct pk_strmap *pool_names; /* pool key -> its one copy */
	pthread_mutex_t seen_mu;
	struct pk_strmap *seen;   /* claim ns/name -> when it was first seen unbound */
	struct pk_strmap *expect; /* claim ns/name -> struct expect (under seen_mu) */
	/* metrics */
	atomic_ullong allocations, releases, reconciles;
	atomic_ullong failures_exhausted, failures_other, failures_not_ready;
	atomic_ullong inconsistent; /* IPAddresses found inconsistent and not adopted */
	atomic_ullong ready_count[NBUCKETS + 1];
	atomic_ullong ready_sum_us;
};

/* ---- small helpers ---- */

static long long wall_now(void)
{
	return (long long)time(NULL);
}

static long long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * What the informers store of an object: the trimmed object (trim.h),
 * packed (jpack.h) and unpacked when a worker needs it (a trimmed claim is
 * about 700 bytes as JSON text, 5 KB as a jansson tree), its
 * resourceVersion's hash, and for claims what the scans over every claim
 * filter on, so that a scan unpacks only the claims it selects.
 */
#define KEPT_READY    1u
#define KEPT_DELETING 2u

struct kept {
	uint64_t pool_hash;    /* claims: pk_strmap_hash of the pool key */
	uint64_t cluster_hash; /* claims: of "<ns>/<cluster name>", 0 when none */
	uint64_t rv_hash;      /* rv_hash_of the object */
	unsigned flags;
	size_t len;
	unsigned char packed[]; /* the trimmed object (trim.h), packed (jpack.h) */
};

/* A new reference to the object an informer item holds, or NULL. */
static json_t *kept_json(const void *item)
{
	const struct kept *k = item;
	return k != NULL ? pk_jpack_decode(k->packed, k->len) : NULL;
}

static void visit_ref(void *ud, const char *key, const void *item)
{
	(void)key;
	*(json_t **)ud = kept_json(item);
}

/* New reference to the stored object, or NULL. */
static json_t *cached(struct pk_kube_informer *inf, const char *ns, const char *name)
{
	json_t *o = NULL;
	if (inf != NULL && name != NULL)
		(void)pk_kube_informer_get(inf, ns, name, visit_ref, &o);
	return o;
}

/* The informer key "ns/name" (or "name") split into a buffer. */
static void key_split(const char *key, char *buf, size_t len, const char **ns, const char **name)
{
	snprintf(buf, len, "%s", key != NULL ? key : "");
	char *slash = strchr(buf, '/');
	if (slash == NULL) {
		*ns = "";
		*name = buf;
	} else {
		*slash = '\0';
		*ns = buf;
		*name = slash + 1;
	}
}

static void queue_key(struct pk_controller *c, const char *prefix, const char *a, const char *b,
                      const char *d, long delay_ms)
{
	char key[KEY_MAX * 2];
	if (d != NULL)
		snprintf(key, sizeof(key), "%.8s/%.300s/%.300s/%.300s", prefix, a ? a : "",
		         b ? b : "", d);
	else
		snprintf(key, sizeof(key), "%.8s/%.300s/%.300s", prefix, a ? a : "", b ? b : "");
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
	snprintf(out, len, "%.20s/%.63s/%.253s", kind, global ? "" : (ns ? ns : ""), name);
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

/* The parts of a pool key "kind/ns/name", in place. */
static void pool_key_split(char *key, const char **kind, const char **ns, const char **name)
{
	char *a = strchr(key, '/'), *b = a ? strchr(a + 1, '/') : NULL;
	*kind = key;
	*ns = *name = "";
	if (a == NULL || b == NULL)
		return;
	*a = *b = '\0';
	*ns = a + 1;
	*name = b + 1;
}

/* An Event about a claim (posted; written by the events thread). */
#define CLAIM_EVENT(c, claim, warning, reason, action, ...)                                   \
	do {                                                                                  \
		struct pk_kube_object_ref ref_ = {.api_version = (c)->claim_api,              \
		                                  .kind = "IPAddressClaim",                   \
		                                  .namespace =                                \
		                                      pk_kube_meta_str((claim), "namespace"), \
		                                  .name = pk_kube_meta_str((claim), "name"),  \
		                                  .uid = pk_kube_meta_str((claim), "uid")};   \
		if ((c)->events != NULL && ref_.name != NULL)                                 \
			(void)pk_ctl_events_post((c)->events, &ref_, (warning), (reason),     \
			                         (action), __VA_ARGS__);                      \
	} while (0)

/* ---- time from a claim being seen to Ready ---- */

static void seen_mark(struct pk_controller *c, const char *key)
{
	pthread_mutex_lock(&c->seen_mu);
	if (pk_strmap_get(c->seen, key) == NULL) {
		long long *t = malloc(sizeof(*t));
		if (t != NULL) {
			*t = mono_ns();
			if (pk_strmap_put(c->seen, key, t, NULL) != PK_OK)
				free(t);
		}
	}
	pthread_mutex_unlock(&c->seen_mu);
}

static void seen_forget(struct pk_controller *c, const char *key)
{
	pthread_mutex_lock(&c->seen_mu);
	free(pk_strmap_remove(c->seen, key));
	pthread_mutex_unlock(&c->seen_mu);
}

/* The claim is Ready now: observe how long that took since it was first seen. */
static void seen_ready(struct pk_controller *c, const char *key)
{
	pthread_mutex_lock(&c->seen_mu);
	long long *t = pk_strmap_remove(c->seen, key);
	pthread_mutex_unlock(&c->seen_mu);
	if (t == NULL)
		return;
	long long ns = mono_ns() - *t;
	free(t);
	double s = (double)ns / 1e9;
	size_t i = 0;
	while (i < NBUCKETS && s > ready_buckets[i])
		i++;
	atomic_fetch_add(&c->ready_count[i], 1);
	atomic_fetch_add(&c->ready_sum_us, (unsigned long long)(ns / 1000));
}

/*
 * ---- expectations: the cache has not caught up with our own writes yet ----
 *
 * A worker goes on from a write with the object the write returned (the
 * finalizer, then the IPAddress, then Ready, in one pass), so the watch
 * events of those writes reach the cache after the worker is done with the
 * claim, and each queues the claim again. Until the cache holds the
 * versions written, it would show the claim as it was before them, and a
 * pass over it would write again (a conflict at best). So each write
 * records the resourceVersion it produced; a pass waits while one is not
 * seen yet; the informers' events clear them. A record that outlives
 * EXPECT_MS (an event never seen: a relist skipped it) is dropped.
 */
#define EXPECT_MS 3000

struct expect {
	uint64_t claim_rv, address_rv; /* pk_strmap_hash of the resourceVersion; 0: none */
	long long until_ns;
};

/* pk_strmap_hash of the object's metadata.resourceVersion; 0 when it has none. */
static uint64_t rv_hash_of(const json_t *obj)
{
	const char *rv = pk_kube_meta_str(obj, "resourceVersion");
	return rv != NULL ? pk_strmap_hash(rv) : 0;
}

/* The write of the claim (or its IPAddress) `key` gave back obj. */
static void expect_write(struct pk_controller *c, const char *key, bool address, const json_t *obj)
{
	uint64_t h = rv_hash_of(obj);
	if (h == 0)
		return;
	pthread_mutex_lock(&c->seen_mu);
	struct expect *x = pk_strmap_get(c->expect, key);
	if (x == NULL && (x = calloc(1, sizeof(*x))) != NULL &&
	    pk_strmap_put(c->expect, key, x, NULL) != PK_OK) {
		free(x);
		x = NULL;
	}
	if (x != NULL) {
		*(address ? &x->address_rv : &x->claim_rv) = h;
		x->until_ns = mono_ns() + EXPECT_MS * 1000000LL;
	}
	pthread_mutex_unlock(&c->seen_mu);
}

/* Under seen_mu: drops x when both halves are seen. */
static void expect_settle(struct pk_controller *c, const char *key, struct expect *x)
{
	if (x->claim_rv == 0 && x->address_rv == 0)
		free(pk_strmap_remove(c->expect, key));
}

/* An informer stored version rv_hash of the claim (or IPAddress) key; 0: it is gone. */
static void expect_seen(struct pk_controller *c, const char *key, bool address, uint64_t rv_hash)
{
	pthread_mutex_lock(&c->seen_mu);
	struct expect *x = pk_strmap_get(c->expect, key);
	if (x != NULL) {
		uint64_t *want = address ? &x->address_rv : &x->claim_rv;
		if (rv_hash == 0 || *want == rv_hash)
			*want = 0;
		if (rv_hash == 0 && !address)
			x->address_rv = 0; /* the claim is gone: nothing to wait for */
		expect_settle(c, key, x);
	}
	pthread_mutex_unlock(&c->seen_mu);
}

/* Milliseconds a pass over the claim should wait for the cache to catch up with claim and
 * address (both as the cache has them; NULL when not there); 0: go ahead. */
static long expect_wait(struct pk_controller *c, const char *key, const json_t *claim,
                        const json_t *address)
{
	long wait = 0;
	pthread_mutex_lock(&c->seen_mu);
	struct expect *x = pk_strmap_get(c->expect, key);
	if (x != NULL) {
		long long left = x->until_ns - mono_ns();
		if (left <= 0 || claim == NULL) {
			x->claim_rv = x->address_rv = 0;
		} else {
			if (x->claim_rv == rv_hash_of(claim))
				x->claim_rv = 0;
			if (address != NULL && x->address_rv == rv_hash_of(address))
				x->address_rv = 0;
			if (x->claim_rv != 0 || x->address_rv != 0)
				wait = (long)(left / 1000000) + 1;
		}
		expect_settle(c, key, x);
	}
	pthread_mutex_unlock(&c->seen_mu);
	return wait;
}

/* ---- informer callbacks: they only queue keys ---- */

/*
 * An informer's first list: its events queue nothing, since the first
 * leadership queues every claim and pool anyway (leadership_ready), and
 * 100,000 queued keys made while the objects are stored would leave the
 * heap full of holes between them once the queue drains.
 */
static bool first_list(struct pk_kube_informer *inf)
{
	return pk_kube_informer_state(inf) == PK_KUBE_INFORMER_STARTING;
}

struct claim_scan {
	struct pk_controller *c;
	const char *pool_key; /* claims of this pool, or NULL */
	uint64_t pool_hash;
	const char *cluster_ns, *cluster_name;
	uint64_t cluster_hash;
	bool unbound_only;
};

static void scan_claim(void *ud, const char *key, const void *item)
{
	struct claim_scan *s = ud;
	const struct kept *k = item;
	char buf[KEY_MAX];
	const char *ns, *name;
	key_split(key, buf, sizeof(buf), &ns, &name);
	if (s->pool_key != NULL && k->pool_hash != s->pool_hash)
		return;
	if (s->cluster_name != NULL && k->cluster_hash != s->cluster_hash)
		return;
	if (s->unbound_only && (k->flags & KEPT_READY) && !(k->flags & KEPT_DELETING))
		return;
	/* A hash says "maybe": the object says for sure. */
	json_t *claim = kept_json(item);
	bool match = claim != NULL;
	if (match && s->pool_key != NULL) {
		char pk[KEY_MAX];
		match = pool_key_of(json_object_get(json_object_get(claim, "spec"), "poolRef"), ns,
		                    pk, sizeof(pk)) &&
		        strcmp(pk, s->pool_key) == 0;
	}
	if (match && s->cluster_name != NULL) {
		const char *cn = pk_claim_cluster_name(claim);
		match = cn != NULL && strcmp(ns, s->cluster_ns) == 0 &&
		        strcmp(cn, s->cluster_name) == 0;
	}
	json_decref(claim);
	if (match)
		queue_key(s->c, "c", ns, name, NULL, 0);
}

static void requeue_claims_of_pool(struct pk_controller *c, const char *pool_key, bool unbound)
{
	struct claim_scan s = {.c = c,
	                       .pool_key = pool_key,
	                       .pool_hash = pk_strmap_hash(pool_key),
	                       .unbound_only = unbound};
	pk_kube_informer_foreach(c->claims, scan_claim, &s);
}

static void on_claim(void *ud, const char *key, const void *item)
{
	struct pk_controller *c = ud;
	const struct kept *k = item;
	char buf[KEY_MAX];
	const char *ns, *name;
	key_split(key, buf, sizeof(buf), &ns, &name);
	if (!(k->flags & (KEPT_READY | KEPT_DELETING)))
		seen_mark(c, key);
	expect_seen(c, key, false, k->rv_hash);
	if (!first_list(c->claims))
		queue_key(c, "c", ns, name, NULL, 0);
}

static void on_claim_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)old;
	on_claim(ud, key, item);
}

static void on_claim_delete(void *ud, const char *key, const void *item)
{
	struct pk_controller *c = ud;
	char buf[KEY_MAX];
	const char *ns, *name;
	(void)item;
	key_split(key, buf, sizeof(buf), &ns, &name);
	seen_forget(c, key);
	expect_seen(c, key, false, 0);
	queue_key(c, "c", ns, name, NULL, 0);
}

/* An IPAddress's events go to the claim named like it: one key, one worker at a time. */
static void address_event(struct pk_controller *c, const char *key, uint64_t rv_hash)
{
	char buf[KEY_MAX];
	const char *ns, *name;
	key_split(key, buf, sizeof(buf), &ns, &name);
	expect_seen(c, key, true, rv_hash);
	if (!first_list(c->addresses))
		queue_key(c, "c", ns, name, NULL, 0);
}

static void on_address(void *ud, const char *key, const void *item)
{
	address_event(ud, key, ((const struct kept *)item)->rv_hash);
}

static void on_address_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)old;
	on_address(ud, key, item);
}

static void on_address_delete(void *ud, const char *key, const void *item)
{
	(void)item;
	address_event(ud, key, 0);
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

static void pool_item_event(struct pk_controller *c, const void *old_item, const void *item,
                            const char *kind)
{
	if (first_list(strcmp(kind, PK_POOL_KIND) == 0 ? c->pools : c->gpools))
		return;
	json_t *now = kept_json(item), *old = old_item != NULL ? kept_json(old_item) : NULL;
	if (now != NULL)
		pool_event(c, now, kind, old_item == NULL || old == NULL || pool_changed(old, now));
	json_decref(now);
	json_decref(old);
}

static void on_pool(void *ud, const char *key, const void *item)
{
	(void)key;
	pool_item_event(ud, NULL, item, PK_POOL_KIND);
}

static void on_pool_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)key;
	pool_item_event(ud, old, item, PK_POOL_KIND);
}

static void on_gpool(void *ud, const char *key, const void *item)
{
	(void)key;
	pool_item_event(ud, NULL, item, PK_GLOBAL_POOL_KIND);
}

static void on_gpool_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)key;
	pool_item_event(ud, old, item, PK_GLOBAL_POOL_KIND);
}

static void cluster_event(struct pk_controller *c, const char *key)
{
	char buf[KEY_MAX], hk[KEY_MAX];
	struct claim_scan s = {.c = c};
	key_split(key, buf, sizeof(buf), &s.cluster_ns, &s.cluster_name);
	snprintf(hk, sizeof(hk), "%.63s/%.253s", s.cluster_ns, s.cluster_name);
	s.cluster_hash = pk_strmap_hash(hk);
	pk_kube_informer_foreach(c->claims, scan_claim, &s);
}

static void on_cluster(void *ud, const char *key, const void *item)
{
	struct pk_controller *c = ud;
	(void)item;
	if (!first_list(c->clusters))
		cluster_event(c, key);
}

/* Only a change of pause matters to the claims (not the Cluster's status). */
static void on_cluster_update(void *ud, const char *key, const void *old_item, const void *item)
{
	json_t *old = kept_json(old_item), *now = kept_json(item);
	const json_t *os = json_object_get(json_object_get(old, "spec"), "paused"),
	             *ns = json_object_get(json_object_get(now, "spec"), "paused");
	const json_t *oa = json_object_get(
	    json_object_get(json_object_get(old, "metadata"), "annotations"), PK_PAUSED_ANNOTATION);
	const json_t *na = json_object_get(
	    json_object_get(json_object_get(now, "metadata"), "annotations"), PK_PAUSED_ANNOTATION);
	bool changed = json_is_true(os) != json_is_true(ns) || (oa == NULL) != (na == NULL);
	json_decref(old);
	json_decref(now);
	if (changed)
		cluster_event(ud, key);
}

/* ---- held addresses and pool states (under c->mu) ---- */

/* One copy of each pool key, shared by every held address of the pool, and how many
 * addresses the record holds from the pool (a status write reads it, never the record). */
struct pool_name {
	size_t held;
	char key[];
};

/* The pool_name whose key an interned pool_key is. */
static struct pool_name *pool_name_of(const char *interned)
{
	return (struct pool_name *)(uintptr_t)(interned - offsetof(struct pool_name, key));
}

/* Under c->mu: h now holds an address of the pool whose interned key is pool_key. */
static void held_set_pool(struct held *h, const char *pool_key)
{
	if (h->pool_key != NULL)
		pool_name_of(h->pool_key)->held--;
	h->pool_key = pool_key;
	pool_name_of(pool_key)->held++;
}

static void held_free(void *v)
{
	struct held *h = v;
	if (h != NULL && h->pool_key != NULL)
		pool_name_of(h->pool_key)->held--;
	free(h);
}

/* Under c->mu: the pool key's one copy. */
static const char *pool_name(struct pk_controller *c, const char *pool_key)
{
	struct pool_name *p = pk_strmap_get(c->pool_names, pool_key);
	if (p != NULL)
		return p->key;
	size_t n = strlen(pool_key);
	if ((p = malloc(sizeof(*p) + n + 1)) == NULL)
		return NULL;
	p->held = 0;
	memcpy(p->key, pool_key, n + 1);
	if (pk_strmap_put(c->pool_names, pool_key, p, NULL) != PK_OK) {
		free(p);
		return NULL;
	}
	return p->key;
}

/* Under c->mu: how many addresses the record holds from the pool. */
static size_t pool_held(struct pk_controller *c, const char *pool_key)
{
	const struct pool_name *p = pk_strmap_get(c->pool_names, pool_key);
	return p != NULL ? p->held : 0;
}

static void state_clear(struct pool_state *s)
{
	pk_allocator_free(s->alloc);
	s->alloc = NULL;
	pk_pool_release(&s->pool);
	memset(&s->pool, 0, sizeof(s->pool));
}

static void state_free(void *v)
{
	struct pool_state *s = v;
	if (s != NULL)
		state_clear(s);
	free(s);
}

static struct pool_state *state_find(struct pk_controller *c, const char *pool_key)
{
	return pk_strmap_get(c->states, pool_key);
}

static void note_duplicate(struct pool_state *s, const char *text, const char *key)
{
	s->duplicates++;
	snprintf(s->duplicate_text, sizeof(s->duplicate_text),
	         "address %s is held by more than one IPAddress (one is %.120s)", text, key);
	pk_log_warn("duplicate address", PK_LOG_STR("pool", s->key), PK_LOG_STR("address", text),
	            PK_LOG_STR("ipaddress", key));
}

static void adopt_held(void *ud, const char *key, void *value)
{
	struct pool_state *s = ud;
	struct held *h = value;
	if (strcmp(h->pool_key, s->key) != 0)
		return;
	if (pk_allocator_adopt(s->alloc, h->addr) == PK_ERR_IN_USE) {
		char t[PK_ADDR_STRLEN];
		pk_address_format_v(h->addr, h->family, t);
		note_duplicate(s, t, key);
	}
}

struct quarantine_copy {
	struct pk_allocator *to;
	enum pk_family family;
};

static bool requarantine(pk_u128 addr, int64_t not_before, void *ctx)
{
	struct quarantine_copy *q = ctx;
	/* Held again since, or outside a new spec: the IPAddress or the spec wins. */
	if (pk_allocator_quarantine(q->to, addr, not_before) != PK_OK)
		pk_log_debug("quarantine not carried over");
	return true;
}

static void restore_quarantine(void *ud, const char *text, long long until)
{
	struct quarantine_copy *q = ud;
	struct pk_addr a;
	if (pk_address_parse(text, &a, "status.quarantinedAddresses", NULL) == PK_OK &&
	    a.family == q->family && pk_allocator_quarantine(q->to, a.v, until) != PK_OK)
		pk_log_debug("quarantine in the pool's status not restored",
		             PK_LOG_STR("address", text));
}

/*
 * The pool's state, (re)built when first needed or when its spec or
 * incarnation changed: decode the spec, adopt every held address of the
 * pool, then quarantine again what the old allocator and the pool's
 * status had in quarantine. NULL when memory runs out.
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
	struct pk_allocator *old = NULL;
	if (s == NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL || pk_strmap_put(c->states, pool_key, s, NULL) != PK_OK) {
			free(s);
			return NULL;
		}
		snprintf(s->key, sizeof(s->key), "%s", pool_key);
	} else {
		/* The same pool, a new spec: its quarantine carries over. */
		if (uid != NULL && strcmp(s->uid, uid) == 0)
			old = s->alloc;
		else
			pk_allocator_free(s->alloc);
		s->alloc = NULL;
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
		pk_allocator_free(old);
		return s;
	}
	s->alloc = pk_allocator_new(s->pool.usable);
	if (s->alloc == NULL) {
		pk_allocator_free(old);
		return NULL;
	}
	s->valid = true;
	pk_strmap_foreach(c->held, adopt_held, s);
	struct quarantine_copy q = {s->alloc, s->pool.family};
	if (old != NULL)
		pk_allocator_each_quarantined(old, requarantine, &q);
	pk_allocator_free(old);
	pk_objects_pool_quarantine(pool, wall_now(), restore_quarantine, &q);
	struct pk_alloc_counts n;
	pk_allocator_counts(s->alloc, &n);
	pk_log_info("pool allocator built", PK_LOG_STR("pool", pool_key),
	            PK_LOG_INT("generation", gen), PK_LOG_UINT("duplicates", s->duplicates),
	            PK_LOG_UINT("quarantined", (unsigned long long)n.quarantined));
	return s;
}

/*
 * Records the address of a poolkeeper IPAddress as held; the pool's allocator
 * adopts it. True when that changed the record (a new address, or a
 * duplicate found): the pool's status is then due.
 */
static bool held_record(struct pk_controller *c, const json_t *a)
{
	const char *ns = pk_kube_meta_str(a, "namespace"), *name = pk_kube_meta_str(a, "name");
	const json_t *spec = json_object_get(a, "spec");
	char pk[KEY_MAX], key[KEY_MAX];
	if (ns == NULL || name == NULL ||
	    !pool_key_of(json_object_get(spec, "poolRef"), ns, pk, sizeof(pk)))
		return false;
	const char *text = pk_kube_json_str(spec, "address");
	struct pk_addr addr;
	struct pk_err err;
	if (text == NULL || pk_address_parse(text, &addr, "spec.address", &err) != PK_OK) {
		pk_log_warn("IPAddress with an unreadable address ignored",
		            PK_LOG_STR("namespace", ns), PK_LOG_STR("name", name),
		            PK_LOG_STR("error", text ? err.msg : "spec.address missing"));
		return false;
	}
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	struct held *h = pk_strmap_get(c->held, key);
	if (h != NULL && h->addr == addr.v && strcmp(h->pool_key, pk) == 0)
		return false;
	const char *pool_copy = pool_name(c, pk);
	if (pool_copy == NULL) {
		pk_log_error("out of memory recording a held address",
		             PK_LOG_STR("ipaddress", key));
		return false;
	}
	if (h != NULL) {
		/* The IPAddress was re-created elsewhere: give the old address back first. */
		struct pool_state *old = state_find(c, h->pool_key);
		if (old != NULL && old->alloc != NULL &&
		    pk_allocator_release(old->alloc, h->addr, 0, wall_now()) != PK_OK)
			pk_log_debug("old address was not held", PK_LOG_STR("ipaddress", key));
	} else {
		h = calloc(1, sizeof(*h));
		if (h == NULL || pk_strmap_put(c->held, key, h, NULL) != PK_OK) {
			free(h);
			pk_log_error("out of memory recording a held address",
			             PK_LOG_STR("ipaddress", key));
			return false;
		}
	}
	held_set_pool(h, pool_copy);
	h->addr = addr.v;
	h->family = addr.family;
	struct pool_state *s = state_find(c, pk);
	if (s != NULL && s->alloc != NULL && pk_allocator_adopt(s->alloc, addr.v) == PK_ERR_IN_USE)
		note_duplicate(s, text, key);
	return true;
}

/* ---- leadership start: a consistent read of every IPAddress ---- */

struct load_ctx {
	struct pk_controller *c;
	size_t n;
};

static int load_page(void *ud, const json_t *page)
{
	struct load_ctx *l = ud;
	size_t i;
	json_t *a;
	pthread_mutex_lock(&l->c->mu);
	json_array_foreach(json_object_get(page, "items"), i, a)
	{
		(void)held_record(l->c, a);
		l->n++;
	}
	pthread_mutex_unlock(&l->c->mu);
	return 0;
}

/* A fresh record of held addresses and no pool states (under c->mu). */
static int reset_records(struct pk_controller *c)
{
	struct pk_strmap *held = pk_strmap_new(), *states = pk_strmap_new();
	if (held == NULL || states == NULL) {
		pk_strmap_free(held, NULL);
		pk_strmap_free(states, NULL);
		return PK_ERR_NOMEM;
	}
	pk_strmap_free(c->held, held_free);
	pk_strmap_free(c->states, state_free);
	c->held = held;
	c->states = states;
	return PK_OK;
}

/*
 * Every IPAddress, page by page (only one page of JSON in memory at a
 * time), recorded as held. Workers process no key until this succeeded.
 */
static int load_held(struct pk_controller *c)
{
	struct pk_kube_ref r = {.group = PK_CAPI_IPAM_GROUP,
	                        .version = c->claim_version,
	                        .resource = "ipaddresses",
	                        .namespace = c->namespace};
	/* resourceVersion unset: a consistent read. Pages of 250: a page of whole IPAddresses
	 * is about 11 KB each as parsed JSON, on top of everything the informers keep. A
	 * shutdown ends the read (100,000 IPAddresses take a minute or more). */
	struct pk_kube_list_opts o = {.limit = 250, .stop = &c->stopping};
	struct pk_kube_error e;
	struct load_ctx l = {c, 0};
	pthread_mutex_lock(&c->mu);
	int rc = reset_records(c);
	pthread_mutex_unlock(&c->mu);
	if (rc != PK_OK)
		return rc;
	if (pk_kube_client_list_pages(c->client, &r, &o, load_page, &l, NULL, 0, &e) !=
	    PK_KUBE_OK) {
		if (!atomic_load(&c->stopping))
			pk_log_error("cannot list IPAddresses", PK_LOG_STR("error", e.message),
			             PK_LOG_STR("reason", pk_kube_reason_name(e.reason)));
		return PK_ERR_INVALID;
	}
	/* The pages' memory goes back to the system, not only to the heap. */
	malloc_trim(0);
	pk_log_info("leading: IPAddresses read", PK_LOG_UINT("ipaddresses", l.n));
	return PK_OK;
}

/* ---- writes (never under c->mu) ---- */

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

/* A JSON patch; *out (when not NULL) is the object patched, or NULL when nothing was. */
static int json_patch(struct pk_controller *c, const struct pk_kube_ref *r, json_t *patch,
                      const char *what, const char *key, json_t **out)
{
	struct pk_kube_error e;
	struct pk_kube_write_opts w = {.field_manager = MANAGER};
	if (out != NULL)
		*out = NULL;
	if (patch == NULL)
		return PK_OK;
	enum pk_kube_reason rc =
	    atomic_load(&c->leading)
	        ? pk_kube_client_patch(c->client, r, PK_KUBE_PATCH_JSON, patch, &w, out, &e)
	        : pk_kube_error_set(&e, PK_KUBE_CANCELLED, 0, "not leading");
	json_decref(patch);
	if (rc == PK_KUBE_NOT_FOUND)
		return PK_OK;
	if (rc != PK_KUBE_OK)
		return write_failed(what, key, &e);
	pk_log_debug("patched", PK_LOG_STR("write", what), PK_LOG_STR("object", key));
	return PK_OK;
}

/* Writes the claim's Ready condition (and addressRef) unless it already says so; *wrote (when
 * not NULL) says whether it wrote. */
static int claim_status_w(struct pk_controller *c, const json_t *claim, const char *key,
                          const char *address, bool ready, const char *reason, const char *message,
                          bool *wrote)
{
	if (wrote != NULL)
		*wrote = false;
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
	json_t *written = NULL;
	enum pk_kube_reason rc =
	    atomic_load(&c->leading)
	        ? pk_kube_client_patch(c->client, &r, PK_KUBE_PATCH_MERGE, patch, &w, &written, &e)
	        : pk_kube_error_set(&e, PK_KUBE_CANCELLED, 0, "not leading");
	json_decref(patch);
	if (rc == PK_KUBE_NOT_FOUND)
		return PK_OK;
	if (rc != PK_KUBE_OK)
		return write_failed("claim status", key, &e);
	expect_write(c, key, false, written);
	json_decref(written);
	if (wrote != NULL)
		*wrote = true;
	pk_log_info(ready ? "claim ready" : "claim not ready", PK_LOG_STR("claim", key),
	            PK_LOG_STR("reason", reason), PK_LOG_STR("message", message));
	if (ready)
		seen_ready(c, key);
	else /* a pause is someone's choice, not a fault: told as Normal */
		CLAIM_EVENT(c, claim, strcmp(reason, PK_REASON_PAUSED) != 0, reason, "Allocate",
		            "%s", message);
	return PK_OK;
}

static int claim_status(struct pk_controller *c, const json_t *claim, const char *key,
                        const char *address, bool ready, const char *reason, const char *message)
{
	return claim_status_w(c, claim, key, address, ready, reason, message, NULL);
}

static void pool_sync_later(struct pk_controller *c, const char *pool_key)
{
	char key[KEY_MAX + 4];
	snprintf(key, sizeof(key), "p/%s", pool_key);
	if (pk_queue_add_after(c->queue, key, POOL_SYNC_DELAY_MS) != PK_OK)
		pk_log_error("cannot queue work: out of memory", PK_LOG_STR("key", key));
}

struct released {
	bool done;
	bool wake; /* claims wait on the pool */
	long long grace;
	char pool_key[KEY_MAX];
	char text[PK_ADDR_STRLEN];
	char still_held_by[KEY_MAX]; /* a duplicate: the IPAddress that still holds it, or "" */
};

struct shared_probe {
	const char *key, *pool_key;
	pk_u128 addr;
	bool found;
	const char *other; /* the first other holder found (a key of c->held) */
};

static void probe_shared(void *ud, const char *key, void *value)
{
	struct shared_probe *p = ud;
	const struct held *h = value;
	if (!p->found && h->addr == p->addr && strcmp(key, p->key) != 0 &&
	    strcmp(h->pool_key, p->pool_key) == 0) {
		p->found = true;
		p->other = key;
	}
}

/* Under c->mu: whether another IPAddress of its pool holds the address the IPAddress `key` does. */
static bool held_elsewhere(struct pk_controller *c, const char *key)
{
	const struct held *h = pk_strmap_get(c->held, key);
	if (h == NULL)
		return false;
	/* A pool without duplicates (the allocator adopted every address once) needs no scan. */
	const struct pool_state *s = state_find(c, h->pool_key);
	if (s != NULL && s->alloc != NULL && s->duplicates == 0)
		return false;
	struct shared_probe p = {key, h->pool_key, h->addr, false, NULL};
	pk_strmap_foreach(c->held, probe_shared, &p);
	return p.found;
}

/*
 * Under c->mu: the address recorded for the claim's IPAddress `key` (now
 * gone) may not be handed to it again: it is of another pool, no longer
 * one the pool hands out, or held by another IPAddress of the pool too.
 * Re-creating it would repeat what was wrong (invariant 1).
 */
static bool held_stale(struct pk_controller *c, const struct pool_state *s, const char *key)
{
	const struct held *h = pk_strmap_get(c->held, key);
	if (h == NULL)
		return false;
	return strcmp(h->pool_key, s->key) != 0 || h->family != s->pool.family ||
	       !pk_range_set_contains(s->pool.usable, h->addr) || held_elsewhere(c, key);
}

/* Under c->mu: releases what the IPAddress `key` held (it is gone). */
static void release_held_locked(struct pk_controller *c, const char *key, struct released *out)
{
	memset(out, 0, sizeof(*out));
	struct held *h = pk_strmap_get(c->held, key);
	if (h == NULL)
		return;
	snprintf(out->pool_key, sizeof(out->pool_key), "%s", h->pool_key);
	pk_address_format_v(h->addr, h->family, out->text);
	struct pool_state *s = state_find(c, h->pool_key);
	if (s != NULL && s->alloc != NULL) {
		/* A duplicate (two IPAddresses, one address): the other one still holds it. */
		struct shared_probe p = {key, h->pool_key, h->addr, false, NULL};
		if (s->duplicates > 0)
			pk_strmap_foreach(c->held, probe_shared, &p);
		if (p.found) {
			s->duplicates--;
			/* Its claim may have been refused adoption for the duplicate: look again.
			 */
			snprintf(out->still_held_by, sizeof(out->still_held_by), "%s", p.other);
		} else {
			long long now = wall_now();
			out->grace = s->valid ? s->pool.grace_seconds : 0;
			/* "addressReuseGracePeriodSeconds": the address waits that long. */
			if (pk_allocator_release(s->alloc, h->addr, now + out->grace, now) != PK_OK)
				pk_log_debug("released address was not held",
				             PK_LOG_STR("address", out->text));
		}
		/* With a grace period, the pool's sync when it ends wakes them. */
		out->wake = s->waiters && out->grace == 0;
		if (out->wake)
			s->waiters = false;
	}
	held_free(pk_strmap_remove(c->held, key));
	out->done = true;
}

/* After release_held_locked, outside the lock: log, count, sync the pool, wake waiters. */
static void released_after(struct pk_controller *c, const char *key, const struct released *r,
                           const json_t *claim)
{
	if (!r->done)
		return;
	atomic_fetch_add(&c->releases, 1);
	pk_log_info("address released", PK_LOG_STR("ipaddress", key),
	            PK_LOG_STR("address", r->text), PK_LOG_STR("pool", r->pool_key));
	if (claim != NULL)
		CLAIM_EVENT(c, claim, false, "AddressReleased", "Release",
		            "address %s returned to %s%s", r->text, r->pool_key,
		            r->grace > 0 ? " (in its reuse grace period)" : "");
	if (r->grace > 0) {
		char qk[KEY_MAX + 4];
		/* Its own key: the earlier status sync of the pool must not absorb it. */
		snprintf(qk, sizeof(qk), "g/%s", r->pool_key);
		if (pk_queue_add_after(c->queue, qk, (long)(r->grace * 1000 + 100)) != PK_OK)
			pk_log_error("cannot queue work: out of memory");
	}
	pool_sync_later(c, r->pool_key);
	if (r->wake)
		requeue_claims_of_pool(c, r->pool_key, true);
	if (r->still_held_by[0] != '\0') {
		char buf[KEY_MAX];
		const char *ns, *name;
		key_split(r->still_held_by, buf, sizeof(buf), &ns, &name);
		queue_key(c, "c", ns, name, NULL, 0);
	}
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

/* Releases the claim's address if its IPAddress is gone (a consistent read says so). */
static int release_if_gone(struct pk_controller *c, const char *ns, const char *name,
                           const char *key, const json_t *claim, bool *gone)
{
	int rc = address_gone(c, ns, name, gone);
	if (rc != PK_OK || !*gone)
		return rc;
	struct released r;
	pthread_mutex_lock(&c->mu);
	release_held_locked(c, key, &r);
	pthread_mutex_unlock(&c->mu);
	released_after(c, key, &r, claim);
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

/* What allocate() takes from the pool state under the lock. */
struct tentative {
	pk_u128 v;
	bool fresh;     /* newly handed out (else: re-creating the held address) */
	bool exhausted; /* none free */
	char text[PK_ADDR_STRLEN], gw[PK_ADDR_STRLEN];
	bool has_gateway;
	unsigned prefix;
	char total[PK_COUNT_STRLEN];
};

/* Under c->mu: the address for the claim, recorded as held at once (so a rebuild keeps it). */
static int take_address(struct pk_controller *c, struct pool_state *s, const char *key,
                        struct tentative *t)
{
	memset(t, 0, sizeof(*t));
	struct held *h = pk_strmap_get(c->held, key);
	if (h != NULL) {
		/* An IPAddress deleted under a live claim comes back with the same address. */
		t->v = h->addr;
	} else {
		int rc = pk_allocator_next(s->alloc, wall_now(), &t->v);
		if (rc == PK_ERR_EXHAUSTED) {
			struct pk_alloc_counts n;
			pk_allocator_counts(s->alloc, &n);
			pk_count_format(n.total, t->total);
			t->exhausted = true;
			s->waiters = true;
			return PK_OK;
		}
		if (rc != PK_OK)
			return rc;
		h = calloc(1, sizeof(*h));
		const char *pool_copy = pool_name(c, s->key);
		if (h == NULL || pool_copy == NULL ||
		    pk_strmap_put(c->held, key, h, NULL) != PK_OK) {
			free(h);
			if (pk_allocator_release(s->alloc, t->v, 0, wall_now()) != PK_OK)
				pk_log_debug("tentative address was not held");
			return PK_ERR_NOMEM;
		}
		held_set_pool(h, pool_copy);
		h->addr = t->v;
		h->family = s->pool.family;
		t->fresh = true;
	}
	pk_address_format_v(t->v, s->pool.family, t->text);
	t->has_gateway = s->pool.has_gateway;
	if (s->pool.has_gateway)
		pk_address_format_v(s->pool.gateway, s->pool.family, t->gw);
	t->prefix = s->pool.has_prefix ? s->pool.prefix : pk_address_bits(s->pool.family);
	return PK_OK;
}

/* Under c->mu: a tentative address whose IPAddress was not created goes back at once. */
static void untake_address(struct pk_controller *c, const char *key, const struct tentative *t)
{
	if (!t->fresh)
		return;
	struct held *h = pk_strmap_remove(c->held, key);
	if (h == NULL)
		return;
	struct pool_state *s = state_find(c, h->pool_key);
	if (s != NULL && s->alloc != NULL &&
	    pk_allocator_release(s->alloc, h->addr, 0, wall_now()) != PK_OK)
		pk_log_debug("tentative address was not held");
	held_free(h);
}

/* Allocates and creates the claim's IPAddress: *created is it, or NULL when none was. */
static int allocate(struct pk_controller *c, const json_t *claim, const char *key,
                    const json_t *pool, const char *kind, const char *pool_key, json_t **created)
{
	*created = NULL;
	const char *ns = pk_kube_meta_str(claim, "namespace"),
	           *name = pk_kube_meta_str(claim, "name");
	const char *pool_ns = pk_kube_meta_str(pool, "namespace");
	char f_text[330];
	snprintf(f_text, sizeof(f_text), "%.63s%s%.253s", pool_ns ? pool_ns : "",
	         pool_ns ? "/" : "", pk_kube_meta_str(pool, "name"));
	pthread_mutex_lock(&c->mu);
	struct pool_state *s = pool_state(c, pool_key, pool);
	bool stale = s != NULL && s->valid && held_stale(c, s, key);
	pthread_mutex_unlock(&c->mu);
	if (stale) {
		/* The record goes once the API confirms the IPAddress is gone; a fresh address
		 * follows. */
		bool gone = false;
		int grc = release_if_gone(c, ns, name, key, claim, &gone);
		if (grc != PK_OK)
			return grc;
		if (!gone) {
			queue_key(c, "c", ns, name, NULL, 1000); /* the cache lags */
			return PK_OK;
		}
	}
	struct tentative t;
	pthread_mutex_lock(&c->mu);
	s = pool_state(c, pool_key, pool);
	int rc = s == NULL   ? PK_ERR_NOMEM
	         : !s->valid ? PK_ERR_INVALID
	                     : take_address(c, s, key, &t);
	pthread_mutex_unlock(&c->mu);
	if (rc != PK_OK)
		return rc; /* retried with backoff; an invalid spec is reported by the next pass */
	if (t.exhausted) {
		char msg[PK_ERR_MSG_MAX];
		snprintf(msg, sizeof(msg),
		         "%.20s %.250s has no free address (%s usable, all in use or in their "
		         "reuse grace period); the claim is retried when one is released",
		         kind, f_text, t.total);
		atomic_fetch_add(&c->failures_exhausted, 1);
		return claim_status(c, claim, key, NULL, false, "PoolExhausted", msg);
	}
	char api[64];
	snprintf(api, sizeof(api), "%s/%s", PK_CAPI_IPAM_GROUP, c->claim_version);
	struct pk_ipaddress_spec spec = {.api_version = api,
	                                 .address = t.text,
	                                 .prefix = t.prefix,
	                                 .gateway = t.has_gateway ? t.gw : NULL,
	                                 .pool_kind = kind,
	                                 .pool_name = pk_kube_meta_str(pool, "name"),
	                                 .pool_uid = pk_kube_meta_str(pool, "uid")};
	json_t *obj = pk_objects_ipaddress(claim, &spec);
	enum pk_kube_reason k;
	struct pk_kube_error e;
	bool sent = false;
	if (obj == NULL) {
		k = pk_kube_error_set(&e, PK_KUBE_NOMEM, 0, "out of memory");
	} else {
		struct pk_kube_ref r = address_ref(c, ns, NULL);
		struct pk_kube_write_opts w = {.field_manager = MANAGER};
		sent = atomic_load(&c->leading);
		k = sent ? pk_kube_client_create(c->client, &r, obj, &w, created, &e)
		         : pk_kube_error_set(&e, PK_KUBE_CANCELLED, 0, "not leading");
		json_decref(obj);
	}
	if (k == PK_KUBE_OK) {
		expect_write(c, key, true, *created);
		if (t.fresh)
			atomic_fetch_add(&c->allocations, 1);
		pk_log_info("address allocated", PK_LOG_STR("claim", key),
		            PK_LOG_STR("address", t.text), PK_LOG_STR("pool", pool_key));
		CLAIM_EVENT(c, claim, false, "AddressAllocated", "Allocate",
		            "address %s allocated from %s %s", t.text, kind, f_text);
		pool_sync_later(c, pool_key);
		return PK_OK;
	}
	/* Not created: the tentative address goes back at once. Perhaps created (no answer, a
	 * 5xx, or a 2xx whose body was unusable): it stays held by the claim, whose next pass
	 * creates the same IPAddress again, or adopts it (AlreadyExists). */
	bool unknown = sent && (e.code == 0 || e.code >= 500 || (e.code >= 200 && e.code < 300));
	if (!unknown) {
		pthread_mutex_lock(&c->mu);
		untake_address(c, key, &t);
		pthread_mutex_unlock(&c->mu);
	}
	if (k == PK_KUBE_ALREADY_EXISTS) {
		/* Adopted on the next pass, from the IPAddress's watch event. */
		pk_log_info("IPAddress exists: adopting", PK_LOG_STR("claim", key));
		queue_key(c, "c", ns, name, NULL, 200);
		return PK_OK;
	}
	if (k == PK_KUBE_CANCELLED)
		return write_failed("create IPAddress", key, &e);
	atomic_fetch_add(&c->failures_other, 1);
	char msg[PK_ERR_MSG_MAX];
	snprintf(msg, sizeof(msg), "creating IPAddress %.63s/%.253s with %s failed: %.100s", ns,
	         name, t.text, e.message);
	(void)claim_status(c, claim, key, NULL, false, "AllocationFailed", msg);
	return write_failed("create IPAddress", key, &e);
}

static int set_ready(struct pk_controller *c, const json_t *claim, const char *key,
                     const json_t *address)
{
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
	json_t *address = cached(c->addresses, ns, name);
	long wait = expect_wait(c, key, claim, address);
	if (wait > 0) {
		/* The cache is behind our own writes: their events queue the claim again. */
		queue_key(c, "c", ns, name, NULL, wait);
		json_decref(claim);
		json_decref(address);
		return PK_OK;
	}
	json_t *pool = NULL, *cluster = NULL, *retired[3] = {NULL, NULL, NULL};
	size_t nretired = 0;
	int rc = PK_OK;
	bool held = false, recorded = false;
	const char *recorded_pool = NULL;
	pthread_mutex_lock(&c->mu);
	if (address != NULL && (recorded = held_record(c, address)))
		recorded_pool = ((struct held *)pk_strmap_get(c->held, key))->pool_key;
	held = pk_strmap_get(c->held, key) != NULL;
	pthread_mutex_unlock(&c->mu);
	/* An IPAddress seen for the first time (by hand, moved, or ours): the pool's counts move.
	 */
	if (recorded && recorded_pool != NULL)
		pool_sync_later(c, recorded_pool);
	if (claim == NULL) {
		/* The claim is gone: its address is released once its IPAddress is too. */
		bool gone = false;
		if (held && address == NULL)
			rc = release_if_gone(c, ns, name, key, NULL, &gone);
		json_decref(address);
		return rc;
	}
	const char *kind = NULL;
	pool = pool_for(c, claim, &kind);
	const char *cname = pk_claim_cluster_name(claim);
	if (cname != NULL && c->clusters != NULL)
		cluster = cached(c->clusters, ns, cname);
	/* One pass goes from a new claim to Ready: each write's answer is the next step's input.
	 * What it replaces stays alive until the pass ends (retired). */
	for (int step = 0; step < 3; step++) {
		struct pk_claim_facts f;
		pk_claim_facts_from(claim, pool, cname != NULL && c->clusters != NULL, cluster,
		                    address, &f);
		char pk[KEY_MAX];
		if (f.pool == PK_POOL_ACTIVE &&
		    pool_key_of(json_object_get(json_object_get(claim, "spec"), "poolRef"), ns, pk,
		                sizeof(pk))) {
			pthread_mutex_lock(&c->mu);
			struct pool_state *s = pool_state(c, pk, pool);
			bool valid = s != NULL && s->valid;
			/* Before an existing IPAddress is taken as the claim's allocation. */
			if (s != NULL)
				pk_claim_facts_check_address(&f, claim, address,
				                             valid ? &s->pool : NULL,
				                             valid && held_elsewhere(c, key));
			pthread_mutex_unlock(&c->mu);
			if (s == NULL) {
				rc = PK_ERR_NOMEM;
				goto out;
			}
			if (!valid)
				f.pool = PK_POOL_INVALID;
		} else {
			pk_claim_facts_check_address(&f, claim, address, NULL, false);
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
		case PK_ACT_ADD_FINALIZER: {
			json_t *now = NULL;
			r = claim_ref(c, ns, name);
			rc = json_patch(c, &r,
			                pk_objects_finalizer_add_patch(claim, PK_CLAIM_FINALIZER),
			                "add claim finalizer", key, &now);
			if (rc == PK_OK && now != NULL) {
				/* Go on with the claim as written: its next step does not wait for
				 * the watch to bring it back. */
				expect_write(c, key, false, now);
				retired[nretired++] = claim; /* kind and cname point into it */
				claim = now;
				continue;
			}
			break;
		}
		case PK_ACT_NOT_READY: {
			if (strcmp(d.reason, "PoolNotReady") == 0 && !pk_claim_ready(claim))
				atomic_fetch_add(&c->failures_not_ready, 1);
			bool wrote = false;
			rc =
			    claim_status_w(c, claim, key, NULL, false, d.reason, d.message, &wrote);
			if (wrote && strcmp(d.reason, PK_REASON_INCONSISTENT) == 0) {
				/* Once per claim and finding: the condition says it from then on.
				 */
				atomic_fetch_add(&c->inconsistent, 1);
				pk_log_warn("IPAddress not adopted", PK_LOG_STR("claim", key),
				            PK_LOG_STR("why", f.address_problem));
			}
			break;
		}
		case PK_ACT_ALLOCATE: {
			json_t *made = NULL;
			rc = allocate(c, claim, key, pool, kind, pk, &made);
			if (rc == PK_OK && made != NULL) {
				retired[nretired++] = address;
				address = made;
				held = true;
				continue; /* Ready next, with the IPAddress as created */
			}
			break;
		}
		case PK_ACT_SET_READY:
			rc = set_ready(c, claim, key, address);
			break;
		case PK_ACT_UNPROTECT_ADDRESS:
			r = address_ref(c, ns, name);
			rc = json_patch(
			    c, &r, pk_objects_finalizer_remove_patch(address, PK_ADDRESS_FINALIZER),
			    "remove IPAddress finalizer", key, NULL);
			break;
		case PK_ACT_DELETE_ADDRESS: {
			r = address_ref(c, ns, name);
			struct pk_kube_delete_opts del = {.uid = pk_kube_meta_str(address, "uid")};
			struct pk_kube_error e;
			enum pk_kube_reason k =
			    atomic_load(&c->leading)
			        ? pk_kube_client_delete(c->client, &r, &del, NULL, &e)
			        : pk_kube_error_set(&e, PK_KUBE_CANCELLED, 0, "not leading");
			if (k != PK_KUBE_OK && k != PK_KUBE_NOT_FOUND)
				rc = write_failed("delete IPAddress", key, &e);
			break;
		}
		case PK_ACT_RELEASE: {
			/* A foreign IPAddress named like the claim is not its to release. */
			if (!f.delete_for_move && f.address != PK_ADDRESS_FOREIGN && held) {
				bool gone = false;
				if ((rc = release_if_gone(c, ns, name, key, claim, &gone)) != PK_OK)
					break;
				if (!gone) {
					/* The cache lags: its DELETED event queues the claim. */
					queue_key(c, "c", ns, name, NULL, 1000);
					break;
				}
			}
			r = claim_ref(c, ns, name);
			rc = json_patch(
			    c, &r, pk_objects_finalizer_remove_patch(claim, PK_CLAIM_FINALIZER),
			    "remove claim finalizer", key, NULL);
			break;
		}
		}
		break;
	}
out:
	json_decref(claim);
	json_decref(pool);
	json_decref(cluster);
	json_decref(address);
	for (size_t i = 0; i < nretired; i++)
		json_decref(retired[i]);
	return rc;
}

/* ---- the pool reconciler: status and finalizer ---- */

struct quarantine_out {
	json_t *list;
	enum pk_family family;
	long long first_end; /* 0: none */
};

static bool quarantine_entry(pk_u128 addr, int64_t not_before, void *ctx)
{
	struct quarantine_out *q = ctx;
	char t[PK_ADDR_STRLEN];
	pk_address_format_v(addr, q->family, t);
	if (q->first_end == 0 || not_before < q->first_end)
		q->first_end = not_before;
	return pk_objects_quarantine_add(q->list, t, not_before);
}

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
	json_t *quarantine = NULL;
	struct pk_alloc_counts n;
	memset(&n, 0, sizeof(n));
	char msg[PK_ERR_MSG_MAX];
	struct pk_condition cond = {.type = "Ready"};
	bool wake = false;
	long long first_end = 0;

	pthread_mutex_lock(&c->mu);
	struct pool_state *s = pool_state(c, pk, pool);
	size_t holding = 0;
	if (s != NULL) {
		holding = pool_held(c, pk);
		cond.generation = s->generation;
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
				    "%s address(es) in use lie outside the pool's addresses; %s "
				    "of %s free",
				    oor, fr, tot);
			} else {
				cond.status = true;
				cond.reason = "Ready";
				snprintf(msg, sizeof(msg), "%s of %s addresses free", fr, tot);
			}
			if (n.quarantined > 0 && strlen(msg) < sizeof(msg) - 80) {
				char qt[PK_COUNT_STRLEN];
				size_t l = strlen(msg);
				snprintf(msg + l, sizeof(msg) - l,
				         "; %s released address(es) in their reuse grace period",
				         pk_u128_format(n.quarantined, qt));
			}
			struct quarantine_out q = {json_array(), s->pool.family, 0};
			if (q.list != NULL)
				pk_allocator_each_quarantined(s->alloc, quarantine_entry, &q);
			quarantine = q.list;
			first_end = q.first_end;
			/* Addresses whose reuse grace period ended are free now. */
			wake = s->waiters && (n.free.lo > 0 || n.free.carry > 0);
			if (wake)
				s->waiters = false;
		}
	}
	unsigned duplicates = s != NULL ? s->duplicates : 0;
	pthread_mutex_unlock(&c->mu);
	if (s == NULL) {
		rc = PK_ERR_NOMEM;
		goto out;
	}
	cond.message = msg;

	struct pk_kube_ref r = {.group = PK_POOL_GROUP,
	                        .version = POOL_VERSION,
	                        .resource = global ? "globalippools" : "ippools",
	                        .namespace = global ? NULL : ns,
	                        .name = name};
	/* A finalizer on the pool while addresses from it exist. */
	if (holding > 0)
		rc = json_patch(c, &r, pk_objects_finalizer_add_patch(pool, POOL_FINALIZER),
		                "add pool finalizer", pk, NULL);
	else
		rc = json_patch(c, &r, pk_objects_finalizer_remove_patch(pool, POOL_FINALIZER),
		                "remove pool finalizer", pk, NULL);
	if (rc != PK_OK)
		goto out;
	json_t *patch = pk_objects_pool_status_patch(pool, &n, &cond, quarantine, wall_now());
	if (patch != NULL) {
		r.subresource = "status";
		struct pk_kube_error e;
		struct pk_kube_write_opts w = {.field_manager = MANAGER};
		enum pk_kube_reason k =
		    atomic_load(&c->leading)
		        ? pk_kube_client_patch(c->client, &r, PK_KUBE_PATCH_MERGE, patch, &w, NULL,
		                               &e)
		        : pk_kube_error_set(&e, PK_KUBE_CANCELLED, 0, "not leading");
		json_decref(patch);
		if (k != PK_KUBE_OK && k != PK_KUBE_NOT_FOUND)
			rc = write_failed("pool status", pk, &e);
		else if (k == PK_KUBE_OK && duplicates > 0) {
			struct pk_kube_object_ref ref = {.api_version = POOL_API,
			                                 .kind = kind,
			                                 .namespace = global ? NULL : ns,
			                                 .name = name,
			                                 .uid = pk_kube_meta_str(pool, "uid")};
			(void)pk_ctl_events_post(c->events, &ref, true, "DuplicateAddresses",
			                         "Reconcile", "%s", msg);
		}
	}
	if (wake)
		requeue_claims_of_pool(c, pk, true);
	/* The next end of a grace period (restored after a restart, too) syncs the pool again. */
	if (first_end > 0) {
		long long in = first_end - wall_now();
		queue_key(c, "g", kind, ns, name, (in > 0 ? (long)in * 1000 : 0) + 100);
	}
out:
	json_decref(quarantine);
	json_decref(pool);
	return rc;
}

/* ---- the workers ---- */

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
	if ((buf[0] == 'p' || buf[0] == 'g') && n == 3)
		return reconcile_pool(c, parts[0], parts[1], parts[2]);
	pk_log_warn("unknown work key dropped", PK_LOG_STR("key", key));
	return PK_OK;
}

static void queue_everything(void *ud, const char *key, const void *item)
{
	on_claim(ud, key, item);
}

struct pool_visit {
	struct pk_controller *c;
	const char *kind;
};

static void queue_pool_visit(void *ud, const char *key, const void *item)
{
	struct pool_visit *v = ud;
	(void)key;
	json_t *pool = kept_json(item);
	if (pool != NULL)
		pool_event(v->c, pool, v->kind, false);
	json_decref(pool);
}

static void queue_pools(struct pk_controller *c, struct pk_kube_informer *inf, const char *kind)
{
	struct pool_visit v = {c, kind};
	if (inf != NULL)
		pk_kube_informer_foreach(inf, queue_pool_visit, &v);
}

/*
 * Leadership started (a new epoch): before any key is processed, one
 * worker reads every IPAddress and queues every claim and pool; the others
 * wait for it. False when the read failed (tried again).
 */
static bool leadership_ready(struct pk_controller *c)
{
	int epoch = atomic_load(&c->epoch);
	if (atomic_load(&c->seen_epoch) == epoch)
		return true;
	bool ok = true;
	pthread_mutex_lock(&c->load_mu);
	if (atomic_load(&c->seen_epoch) != epoch) {
		ok = load_held(c) == PK_OK;
		if (ok) {
			atomic_store(&c->seen_epoch, epoch);
			pk_kube_informer_foreach(c->claims, queue_everything, c);
			queue_pools(c, c->pools, PK_POOL_KIND);
			queue_pools(c, c->gpools, PK_GLOBAL_POOL_KIND);
			atomic_store(&c->trim_due, 1);
		}
	}
	pthread_mutex_unlock(&c->load_mu);
	return ok;
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
		if (!leadership_ready(c)) {
			struct timespec ts = {1, 0};
			nanosleep(&ts, NULL);
			continue;
		}
		char *key = NULL;
		int got = pk_queue_get(c->queue, 500, &key);
		if (got < 0)
			break;
		if (got == 0) {
			/* Idle: the keys queued at leadership are done; their memory goes back. */
			if (atomic_exchange(&c->trim_due, 0))
				malloc_trim(0);
			continue;
		}
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

/* The informers keep only what the controller reads of each object (trim.h), packed
 * (jpack.h): a quarter of its JSON text. */
static void *keep(json_t *trimmed, uint64_t pool_hash, uint64_t cluster_hash, unsigned flags)
{
	uint64_t rv_hash = rv_hash_of(trimmed);
	unsigned char *packed = NULL;
	size_t n = 0;
	int rc = trimmed != NULL ? pk_jpack_encode(trimmed, &packed, &n) : PK_ERR_NOMEM;
	json_decref(trimmed);
	if (rc != PK_OK)
		return NULL;
	struct kept *k = malloc(sizeof(*k) + n);
	if (k != NULL) {
		k->pool_hash = pool_hash;
		k->cluster_hash = cluster_hash;
		k->rv_hash = rv_hash;
		k->flags = flags;
		k->len = n;
		memcpy(k->packed, packed, n);
	}
	free(packed);
	return k;
}

static void *keep_claim(void *ud, const json_t *o)
{
	(void)ud;
	const char *ns = pk_kube_meta_str(o, "namespace");
	char pk[KEY_MAX], ck[KEY_MAX];
	uint64_t ph = 0, ch = 0;
	if (pool_key_of(json_object_get(json_object_get(o, "spec"), "poolRef"), ns, pk, sizeof(pk)))
		ph = pk_strmap_hash(pk);
	const char *cn = pk_claim_cluster_name(o);
	if (cn != NULL) {
		snprintf(ck, sizeof(ck), "%.63s/%.253s", ns ? ns : "", cn);
		ch = pk_strmap_hash(ck);
	}
	unsigned flags = (pk_claim_ready(o) ? KEPT_READY : 0) |
	                 (pk_kube_meta_str(o, "deletionTimestamp") != NULL ? KEPT_DELETING : 0);
	return keep(pk_trim_claim(o), ph, ch, flags);
}
static void *keep_address(void *ud, const json_t *o)
{
	(void)ud;
	return keep(pk_trim_address(o), 0, 0, 0);
}
static void *keep_pool(void *ud, const json_t *o)
{
	(void)ud;
	return keep(pk_trim_pool(o), 0, 0, 0);
}
static void *keep_cluster(void *ud, const json_t *o)
{
	(void)ud;
	return keep(pk_trim_cluster(o), 0, 0, 0);
}

int pk_controller_new(const struct pk_controller_opts *opts, struct pk_controller **out,
                      struct pk_err *err)
{
	struct pk_controller *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->load_mu, NULL);
	pthread_mutex_init(&c->seen_mu, NULL);
	c->client = opts->client;
	c->nworkers = opts->workers == 0            ? 1
	              : opts->workers > MAX_WORKERS ? MAX_WORKERS
	                                            : opts->workers;
	c->namespace = dup_or_null(opts->namespace);
	c->selector = dup_or_null(opts->label_selector);
	c->claim_version = strdup(opts->claim_version ? opts->claim_version : "v1beta2");
	c->cluster_version = dup_or_null(opts->cluster_version);
	c->v1beta1 = c->claim_version != NULL && strcmp(c->claim_version, "v1beta1") == 0;
	c->queue = pk_queue_new();
	c->held = pk_strmap_new();
	c->states = pk_strmap_new();
	c->seen = pk_strmap_new();
	c->expect = pk_strmap_new();
	c->pool_names = pk_strmap_new();
	bool selector_lost =
	    opts->label_selector != NULL && *opts->label_selector != '\0' && c->selector == NULL;
	if (selector_lost || c->claim_version == NULL || c->queue == NULL || c->held == NULL ||
	    c->states == NULL || c->seen == NULL || c->expect == NULL || c->pool_names == NULL) {
		pk_controller_free(c);
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	snprintf(c->claim_api, sizeof(c->claim_api), "%s/%s", PK_CAPI_IPAM_GROUP, c->claim_version);
	if (opts->events_config != NULL &&
	    pk_ctl_events_new(opts->events_config, &c->events, err) != PK_OK) {
		pk_controller_free(c);
		return PK_ERR_INVALID;
	}
	struct {
		struct pk_kube_informer **slot;
		const char *group, *version, *resource;
		bool namespaced;
		bool filtered; /* by the label selector */
		pk_kube_transform_fn *keep;
		struct pk_kube_informer_handlers h;
	} infs[] = {
	    {&c->claims,
	     PK_CAPI_IPAM_GROUP,
	     c->claim_version,
	     "ipaddressclaims",
	     true,
	     true,
	     keep_claim,
	     {on_claim, on_claim_update, on_claim_delete, NULL, c}},
	    {&c->addresses,
	     PK_CAPI_IPAM_GROUP,
	     c->claim_version,
	     "ipaddresses",
	     true,
	     false,
	     keep_address,
	     {on_address, on_address_update, on_address_delete, NULL, c}},
	    {&c->pools,
	     PK_POOL_GROUP,
	     POOL_VERSION,
	     "ippools",
	     true,
	     true,
	     keep_pool,
	     {on_pool, on_pool_update, on_pool, NULL, c}},
	    {&c->gpools,
	     PK_POOL_GROUP,
	     POOL_VERSION,
	     "globalippools",
	     false,
	     true,
	     keep_pool,
	     {on_gpool, on_gpool_update, on_gpool, NULL, c}},
	    {&c->clusters,
	     "cluster.x-k8s.io",
	     c->cluster_version,
	     "clusters",
	     true,
	     true,
	     keep_cluster,
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
		    .label_selector = infs[i].filtered ? c->selector : NULL,
		    .transform = infs[i].keep,
		    .release = NULL, /* free() */
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

#define INFORMERS(c)                                                                \
	{                                                                           \
		(c)->claims, (c)->addresses, (c)->pools, (c)->gpools, (c)->clusters \
	}

int pk_controller_start(struct pk_controller *c, struct pk_err *err)
{
	struct pk_kube_informer *all[5] = INFORMERS(c);
	for (size_t i = 0; i < 5; i++)
		if (all[i] != NULL && pk_kube_informer_start(all[i], err) != PK_OK)
			return PK_ERR_INVALID;
	return PK_OK;
}

void pk_controller_listing(struct pk_controller *c, char *buf, size_t len)
{
	static const char *const names[5] = {"ipaddressclaims", "ipaddresses", "ippools",
	                                     "globalippools", "clusters"};
	struct pk_kube_informer *all[5] = INFORMERS(c);
	size_t used = 0;
	if (len > 0)
		buf[0] = '\0';
	for (size_t i = 0; i < 5 && used < len; i++) {
		if (all[i] == NULL || pk_kube_informer_synced(all[i]))
			continue;
		int n = snprintf(buf + used, len - used, "%s%s", used > 0 ? "," : "", names[i]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

int pk_controller_run(struct pk_controller *c, long timeout_ms, struct pk_err *err)
{
	if (c->started > 0)
		return 1;
	struct pk_kube_informer *all[5] = INFORMERS(c);
	for (size_t i = 0; i < 5; i++)
		if (all[i] != NULL && !pk_kube_informer_wait_synced(all[i], timeout_ms))
			return 0;
	/* The lists' pages are freed: hand that memory back. */
	malloc_trim(0);
	for (; c->started < c->nworkers; c->started++)
		if (pthread_create(&c->workers[c->started], NULL, worker_main, c) != 0)
			return pk_err_set(err, PK_ERR_NOMEM, "cannot start worker thread %u",
			                  c->started + 1);
	return 1;
}

void pk_controller_set_leading(struct pk_controller *c, bool leading)
{
	if (leading)
		atomic_fetch_add(&c->epoch, 1);
	atomic_store(&c->leading, leading ? 1 : 0);
}

bool pk_controller_ready(struct pk_controller *c)
{
	struct pk_kube_informer *all[5] = INFORMERS(c);
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
	for (; c->started > 0; c->started--)
		pthread_join(c->workers[c->started - 1], NULL);
	/* All at once: each waits up to about a second for its request in flight. */
	struct pk_kube_informer *all[5] = INFORMERS(c);
	for (size_t i = 0; i < 5; i++)
		pk_kube_informer_stop_begin(all[i]);
	for (size_t i = 0; i < 5; i++)
		pk_kube_informer_stop(all[i]);
}

void pk_controller_free(struct pk_controller *c)
{
	if (c == NULL)
		return;
	pk_controller_stop(c);
	pk_ctl_events_free(c->events, 2000);
	pk_kube_informer_free(c->claims);
	pk_kube_informer_free(c->addresses);
	pk_kube_informer_free(c->pools);
	pk_kube_informer_free(c->gpools);
	pk_kube_informer_free(c->clusters);
	pk_strmap_free(c->held, held_free);
	pk_strmap_free(c->states, state_free);
	pk_strmap_free(c->seen, free);
	pk_strmap_free(c->expect, free);
	pk_strmap_free(c->pool_names, free);
	pk_queue_free(c->queue);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->load_mu);
	pthread_mutex_destroy(&c->seen_mu);
	free(c->namespace);
	free(c->selector);
	free(c->claim_version);
	free(c->cluster_version);
	free(c);
}

/* ---- metrics ---- */

static void metric_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

struct pool_metrics {
	FILE *f;
	int which; /* 0 total, 1 used, 2 free, 3 out of range, 4 quarantined, 5 duplicates */
};

static void pool_metric(void *ud, const char *key, void *value)
{
	struct pool_metrics *pm = ud;
	const struct pool_state *s = value;
	if (!s->valid || s->alloc == NULL)
		return;
	struct pk_alloc_counts n;
	pk_allocator_counts(s->alloc, &n);
	char k[KEY_MAX], v[PK_COUNT_STRLEN];
	snprintf(k, sizeof(k), "%s", key);
	const char *kind, *ns, *name;
	pool_key_split(k, &kind, &ns, &name);
	switch (pm->which) {
	case 0:
		pk_count_format(n.total, v);
		break;
	case 1:
		pk_count_format(n.used, v);
		break;
	case 2:
		pk_count_format(n.free, v);
		break;
	case 3:
		pk_u128_format(n.out_of_range, v);
		break;
	case 4:
		pk_u128_format(n.quarantined, v);
		break;
	default:
		snprintf(v, sizeof(v), "%u", s->duplicates);
		break;
	}
	static const char *const names[] = {"poolkeeper_pool_addresses",
	                                    "poolkeeper_pool_used_addresses",
	                                    "poolkeeper_pool_free_addresses",
	                                    "poolkeeper_pool_out_of_range_addresses",
	                                    "poolkeeper_pool_quarantined_addresses",
	                                    "poolkeeper_pool_duplicate_addresses"};
	fprintf(pm->f, "%s{namespace=\"%s\",pool=\"%s\",kind=\"%s\"} %s\n", names[pm->which], ns,
	        name, kind, v);
}

static void request_metric(void *ud, const char *method, long code, unsigned long long n)
{
	FILE *f = ud;
	char lower[8];
	size_t i = 0;
	for (; method[i] != '\0' && i < sizeof(lower) - 1; i++)
		lower[i] =
		    (char)(method[i] >= 'A' && method[i] <= 'Z' ? method[i] + 32 : method[i]);
	lower[i] = '\0';
	if (code > 0)
		fprintf(f, "poolkeeper_api_requests_total{verb=\"%s\",code=\"%ld\"} %llu\n", lower,
		        code, n);
	else
		fprintf(f, "poolkeeper_api_requests_total{verb=\"%s\",code=\"%s\"} %llu\n", lower,
		        code == 0 ? "none" : "other", n);
}

char *pk_controller_metrics(struct pk_controller *c, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	if (f == NULL)
		return NULL;
	metric_head(f, "poolkeeper_leader", "gauge", "Whether this process holds the Lease.");
	fprintf(f, "poolkeeper_leader %d\n", atomic_load(&c->leading));
	metric_head(f, "poolkeeper_workqueue_depth", "gauge", "Keys waiting in the work queue.");
	fprintf(f, "poolkeeper_workqueue_depth %zu\n", pk_queue_len(c->queue));
	metric_head(f, "poolkeeper_workers", "gauge", "Reconcile workers.");
	fprintf(f, "poolkeeper_workers %u\n", c->nworkers);
	metric_head(f, "poolkeeper_reconciles_total", "counter", "Work keys processed.");
	fprintf(f, "poolkeeper_reconciles_total %llu\n",
	        (unsigned long long)atomic_load(&c->reconciles));
	metric_head(f, "poolkeeper_allocations_total", "counter", "Addresses allocated.");
	fprintf(f, "poolkeeper_allocations_total %llu\n",
	        (unsigned long long)atomic_load(&c->allocations));
	metric_head(f, "poolkeeper_releases_total", "counter", "Addresses released.");
	fprintf(f, "poolkeeper_releases_total %llu\n",
	        (unsigned long long)atomic_load(&c->releases));
	metric_head(f, "poolkeeper_allocation_failures_total", "counter",
	            "Claims that could not get an address, by reason.");
	fprintf(f,
	        "poolkeeper_allocation_failures_total{reason=\"PoolExhausted\"} %llu\n"
	        "poolkeeper_allocation_failures_total{reason=\"PoolNotReady\"} %llu\n"
	        "poolkeeper_allocation_failures_total{reason=\"AllocationFailed\"} %llu\n",
	        (unsigned long long)atomic_load(&c->failures_exhausted),
	        (unsigned long long)atomic_load(&c->failures_not_ready),
	        (unsigned long long)atomic_load(&c->failures_other));
	metric_head(f, "poolkeeper_inconsistent_ipaddresses_total", "counter",
	            "IPAddresses named like a claim and owned by it that were not adopted: "
	            "another claim or pool, an address the pool does not hand out, or one "
	            "another IPAddress of the pool holds. Counted when the claim's Ready "
	            "condition first says so.");
	fprintf(f, "poolkeeper_inconsistent_ipaddresses_total %llu\n",
	        (unsigned long long)atomic_load(&c->inconsistent));
	metric_head(f, "poolkeeper_claim_ready_seconds", "histogram",
	            "Seconds from a claim being seen unbound to its Ready condition written.");
	unsigned long long cum = 0;
	for (size_t i = 0; i < NBUCKETS; i++) {
		cum += atomic_load(&c->ready_count[i]);
		fprintf(f, "poolkeeper_claim_ready_seconds_bucket{le=\"%g\"} %llu\n",
		        ready_buckets[i], cum);
	}
	cum += atomic_load(&c->ready_count[NBUCKETS]);
	fprintf(f, "poolkeeper_claim_ready_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
	fprintf(f, "poolkeeper_claim_ready_seconds_sum %.6f\n",
	        (double)atomic_load(&c->ready_sum_us) / 1e6);
	fprintf(f, "poolkeeper_claim_ready_seconds_count %llu\n", cum);
	unsigned long long written, dropped;
	pk_ctl_events_stats(c->events, &written, &dropped);
	metric_head(f, "poolkeeper_events_total", "counter",
	            "Kubernetes Events written (result=written) or dropped from a full queue.");
	fprintf(f, "poolkeeper_events_total{result=\"written\"} %llu\n", written);
	fprintf(f, "poolkeeper_events_total{result=\"dropped\"} %llu\n", dropped);
	metric_head(f, "poolkeeper_api_requests_total", "counter",
	            "Kubernetes API requests answered, by verb and HTTP code (none: no answer).");
	pk_kube_client_request_stats(c->client, request_metric, f);
	static const char *const pool_help[][2] = {
	    {"poolkeeper_pool_addresses", "Usable addresses of a pool."},
	    {"poolkeeper_pool_used_addresses", "Addresses of a pool held by an IPAddress."},
	    {"poolkeeper_pool_free_addresses", "Addresses of a pool free now."},
	    {"poolkeeper_pool_out_of_range_addresses",
	     "Addresses in use that lie outside the pool's addresses."},
	    {"poolkeeper_pool_quarantined_addresses",
	     "Released addresses in their reuse grace period."},
	    {"poolkeeper_pool_duplicate_addresses",
	     "Addresses held by more than one IPAddress (left as they are)."},
	};
	pthread_mutex_lock(&c->mu);
	for (int w = 0; w < 6; w++) {
		metric_head(f, pool_help[w][0], "gauge", pool_help[w][1]);
		struct pool_metrics pm = {f, w};
		pk_strmap_foreach(c->states, pool_metric, &pm);
	}
	pthread_mutex_unlock(&c->mu);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}
