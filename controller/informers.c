/*
 * informers.c - the controller's informers and their handlers. Handlers
 * only queue keys (and note what the expectations and the time-to-Ready
 * histogram need); the workers do the rest.
 */
#include <string.h>

#include "api.h"
#include "controller_internal.h"
#include "json.h"
#include "kube.h"
#include "log.h"
#include "rules.h"

/*
 * An informer's first list: its events queue nothing, since the first
 * leadership queues every claim and pool anyway (ctl_queue_everything), and
 * 100,000 queued keys made while the objects are stored would leave the
 * heap full of holes between them once the queue drains.
 */
static void on_claim(void *ud, const char *key, const void *item)
{
	struct pk_controller *c = ud;
	struct pk_work_key k;
	pk_object_key_parse(key, &k);
	/* Time to Ready is poolkeeper's to measure only for its own claims. */
	if (pk_cache_item_ours(item) && !pk_cache_item_ready(item) && !pk_cache_item_deleting(item))
		pk_metrics_seen(&c->metrics, key, pk_metrics_now_ns());
	pk_expect_seen(c->expect, key, false, pk_cache_item_rv_hash(item));
	if (!pk_cache_first_list(c->cache.claims))
		ctl_queue(c, &k, 0);
}

static void on_claim_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)old;
	on_claim(ud, key, item);
}

static void on_claim_delete(void *ud, const char *key, const void *item)
{
	struct pk_controller *c = ud;
	struct pk_work_key k;
	(void)item;
	pk_object_key_parse(key, &k);
	pk_metrics_forget(&c->metrics, key);
	pk_expect_seen(c->expect, key, false, 0);
	ctl_queue(c, &k, 0);
}

/* An IPAddress's events go to the claim named like it: one key, one worker at a time. */
static void address_event(struct pk_controller *c, const char *key, uint64_t rv_hash)
{
	struct pk_work_key k;
	pk_object_key_parse(key, &k);
	pk_expect_seen(c->expect, key, true, rv_hash);
	if (!pk_cache_first_list(c->cache.addresses))
		ctl_queue(c, &k, 0);
}

static void on_address(void *ud, const char *key, const void *item)
{
	address_event(ud, key, pk_cache_item_rv_hash(item));
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
	if ((pk_json_cstr_at(om, "deletionTimestamp") == NULL) !=
	    (pk_json_cstr_at(nm, "deletionTimestamp") == NULL))
		return true;
	const json_t *oa =
	    json_object_get(json_object_get(om, "annotations"), PK_PAUSED_ANNOTATION);
	const json_t *na =
	    json_object_get(json_object_get(nm, "annotations"), PK_PAUSED_ANNOTATION);
	return (oa == NULL) != (na == NULL);
}

/* Queues the pool's key, and its claims when they should look again. */
static void pool_event(struct pk_controller *c, const json_t *pool, const struct pk_pool_kind *kind,
                       bool claims)
{
	const char *name = pk_json_meta_cstr(pool, "name"),
	           *ns = pk_json_meta_cstr(pool, "namespace");
	if (name == NULL)
		return;
	struct pk_work_key k;
	pk_work_key_pool(&k, PK_WORK_POOL, kind->kind, ns, name);
	ctl_queue(c, &k, 0);
	if (claims) {
		char pk[PK_OBJECT_KEY_MAX];
		pk_pool_key(kind->kind, ns, name, pk, sizeof(pk));
		pk_cache_claims_of_pool(&c->cache, pk, false, ctl_queue_claim, c);
	}
}

static void pool_item_event(struct pool_watch *w, const void *old_item, const void *item)
{
	if (pk_cache_first_list(pk_cache_pool_informer(&w->c->cache, w->kind->kind)))
		return;
	json_t *now = pk_cache_item_json(item);
	json_t *old = old_item != NULL ? pk_cache_item_json(old_item) : NULL;
	if (now != NULL)
		pool_event(w->c, now, w->kind,
		           old_item == NULL || old == NULL || pool_changed(old, now));
	json_decref(now);
	json_decref(old);
}

static void on_pool(void *ud, const char *key, const void *item)
{
	(void)key;
	pool_item_event(ud, NULL, item);
}

static void on_pool_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)key;
	pool_item_event(ud, old, item);
}

static void cluster_event(struct pk_controller *c, const char *key)
{
	struct pk_work_key k;
	pk_object_key_parse(key, &k);
	pk_cache_claims_of_cluster(&c->cache, k.namespace, k.name, ctl_queue_claim, c);
}

static void on_cluster(void *ud, const char *key, const void *item)
{
	struct pk_controller *c = ud;
	(void)item;
	if (!pk_cache_first_list(c->cache.clusters))
		cluster_event(c, key);
}

/* Only a change of pause matters to the claims (not the Cluster's status). */
static void on_cluster_update(void *ud, const char *key, const void *old_item, const void *item)
{
	json_t *old = pk_cache_item_json(old_item), *now = pk_cache_item_json(item);
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

struct informer_spec {
	struct pk_kube_informer **slot;
	const char *group, *version, *resource;
	bool namespaced;
	bool filtered; /* by the label selector */
	pk_kube_transform_fn *keep;
	struct pk_kube_informer_handlers h;
	const char *ns; /* namespaced: this namespace instead of the watched one */
};

static int informer_new(struct pk_controller *c, const struct informer_spec *s, struct pk_err *err)
{
	if (s->version == NULL)
		return PK_OK; /* Clusters not served */
	const char *ns = s->ns != NULL ? s->ns : c->namespace;
	if (!s->namespaced && c->namespace != NULL && s->ns == NULL) {
		pk_log_warn("watching one namespace: pools of a kind that is not namespaced are "
		            "ignored, since their addresses in other namespaces cannot be seen",
		            PK_LOG_STR("namespace", c->namespace),
		            PK_LOG_STR("resource", s->resource));
		return PK_OK;
	}
	struct pk_kube_informer_opts io = {
	    .ref = {.group = s->group,
	            .version = s->version,
	            .resource = s->resource,
	            .namespace = s->namespaced ? ns : NULL},
	    .label_selector = s->filtered ? c->selector : NULL,
	    .transform = s->keep,
	    .transform_ud = &c->cache,
	    .release = NULL, /* free() */
	    .handlers = s->h,
	};
	return pk_kube_informer_new(c->client, &io, s->slot, err);
}

/* Claims not Ready (nor going): their backend's connection changed, so they are looked at
 * again. */
static void queue_unready_claim(void *ud, const char *key, const void *item)
{
	struct pk_work_key k;
	if (!pk_cache_item_ours(item) || pk_cache_item_ready(item) || pk_cache_item_deleting(item))
		return;
	pk_object_key_parse(key, &k);
	ctl_queue(ud, &k, 0);
}

/* A watched object changed (obj) or went (NULL): the backend is told. */
static void watched_event(struct backend_watch *w, const char *key, const void *item)
{
	struct pk_controller *c = w->c;
	json_t *obj = item != NULL ? pk_cache_item_json(item) : NULL;
	bool requeue = false;
	c->backend.ops->watched(c->backend.self, w->index, key, obj, &requeue);
	json_decref(obj);
	if (requeue && !pk_cache_first_list(c->cache.claims))
		pk_kube_informer_foreach(c->cache.claims, queue_unready_claim, c);
}

static void on_watched(void *ud, const char *key, const void *item)
{
	watched_event(ud, key, item);
}

static void on_watched_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)old;
	watched_event(ud, key, item);
}

static void on_watched_delete(void *ud, const char *key, const void *item)
{
	(void)item;
	watched_event(ud, key, NULL);
}

/* An informer for each resource the backends watch beside pools. */
static int watches_new(struct pk_controller *c, struct pk_err *err)
{
	size_t n = 0;
	const struct pk_backend_watch *w =
	    c->backend.ops->watches != NULL ? c->backend.ops->watches(c->backend.self, &n) : NULL;
	if (n > CTL_MAX_WATCHES)
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "the backends watch %zu resources; the controller watches at most %d", n,
		    CTL_MAX_WATCHES);
	for (size_t i = 0; i < n; i++) {
		c->watched[i] = (struct backend_watch){c, i, NULL};
		c->nwatched = i + 1;
		if (w[i].namespaced && c->credentials_namespace == NULL) {
			pk_log_warn("no credentials namespace: a backend's Secrets are not read",
			            PK_LOG_STR("resource", w[i].resource));
			continue;
		}
		struct informer_spec s = {
		    &c->watched[i].inf,
		    w[i].group,
		    w[i].version,
		    w[i].resource,
		    w[i].namespaced,
		    false,
		    pk_cache_keep_connection,
		    {on_watched, on_watched_update, on_watched_delete, NULL, &c->watched[i]},
		    w[i].namespaced ? c->credentials_namespace : "",
		};
		int rc = informer_new(c, &s, err);
		if (rc != PK_OK)
			return rc;
	}
	return PK_OK;
}

int ctl_informers_new(struct pk_controller *c, struct pk_err *err)
{
	int rc;
	/* IPAddresses are never filtered: every address of a pool served must be seen to be
	 * held, whoever created it. */
	const struct informer_spec fixed[] = {
	    {&c->cache.claims,
	     PK_CAPI_IPAM_GROUP,
	     c->claim_version,
	     PK_CLAIM_RESOURCE,
	     true,
	     true,
	     pk_cache_keep_claim,
	     {on_claim, on_claim_update, on_claim_delete, NULL, c},
	     NULL},
	    {&c->cache.addresses,
	     PK_CAPI_IPAM_GROUP,
	     c->claim_version,
	     PK_ADDRESS_RESOURCE,
	     true,
	     false,
	     pk_cache_keep_address,
	     {on_address, on_address_update, on_address_delete, NULL, c},
	     NULL},
	};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if ((rc = informer_new(c, &fixed[i], err)) != PK_OK)
			return rc;
	size_t n = 0;
	const struct pk_pool_kind *kinds = c->backend.ops->kinds(c->backend.self, &n);
	if (n > PK_CACHE_MAX_POOL_KINDS)
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "the backends serve %zu pool kinds; the controller watches at most %d", n,
		    PK_CACHE_MAX_POOL_KINDS);
	for (size_t i = 0; i < n; i++) {
		c->watches[i] = (struct pool_watch){c, &kinds[i]};
		c->cache.pools[i].kind = &kinds[i];
		c->cache.npools = i + 1;
		struct informer_spec s = {&c->cache.pools[i].inf,
		                          kinds[i].group,
		                          kinds[i].version,
		                          kinds[i].resource,
		                          kinds[i].namespaced,
		                          true,
		                          pk_cache_keep_pool,
		                          {on_pool, on_pool_update, on_pool, NULL, &c->watches[i]},
		                          NULL};
		if ((rc = informer_new(c, &s, err)) != PK_OK)
			return rc;
	}
	struct informer_spec cl = {&c->cache.clusters,
	                           PK_CAPI_CORE_GROUP,
	                           c->cluster_version,
	                           PK_CLUSTER_RESOURCE,
	                           true,
	                           true,
	                           pk_cache_keep_cluster,
	                           {on_cluster, on_cluster_update, on_cluster, NULL, c},
	                           NULL};
	if ((rc = informer_new(c, &cl, err)) != PK_OK)
		return rc;
	return watches_new(c, err);
}

static void queue_claim_item(void *ud, const char *key, const void *item)
{
	on_claim(ud, key, item);
}

static void queue_pool_item(void *ud, const char *key, const void *item)
{
	struct pool_watch *w = ud;
	(void)key;
	json_t *pool = pk_cache_item_json(item);
	if (pool != NULL)
		pool_event(w->c, pool, w->kind, false);
	json_decref(pool);
}

/* An IPAddress being deleted: its claim's key, which may have no claim left to queue it. */
static void queue_deleting_address(void *ud, const char *key, const void *item)
{
	struct pk_work_key k;
	if (!pk_cache_item_deleting(item))
		return;
	pk_object_key_parse(key, &k);
	ctl_queue(ud, &k, 0);
}

void ctl_queue_everything(struct pk_controller *c)
{
	pk_kube_informer_foreach(c->cache.claims, queue_claim_item, c);
	pk_kube_informer_foreach(c->cache.addresses, queue_deleting_address, c);
	for (size_t i = 0; i < c->cache.npools; i++)
		if (c->cache.pools[i].inf != NULL)
			pk_kube_informer_foreach(c->cache.pools[i].inf, queue_pool_item,
			                         &c->watches[i]);
}
