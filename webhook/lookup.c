/* lookup.c - admission lookups from informer caches, with live reads until they are loaded. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "cache.h"
#include "json.h"
#include "kube_client.h"
#include "kube_informer.h"
#include "log.h"
#include "lookup.h"
#include "parse.h"
#include "permission.h"
#include "pool_ref.h"
#include "rules.h"
#include "strmap.h"

/* Discovery answers: bounded, and a kind found is asked again after a while, a kind not
 * found soon, so a CRD installed (or changed) later is seen. */

struct pk_lookup {
	struct pk_kube_config *cfg;
	struct pk_kube_client *client;  /* live reads: short timeouts */
	struct pk_kube_client *watcher; /* the informers' lists and watches */
	struct pk_kube_log log;
	struct pk_admission_lookup admission;
	char ipaddress_version[16];       /* v1beta2, or v1beta1 on CAPI before 1.11 */
	struct pk_cache *cache;           /* NULL: PK_LOOKUP_LIVE */
	struct pk_permission *permission; /* blockOwnerDeletion: discovery and reviews */
	struct pk_kube_informer *informers[PK_CACHE_KINDS_MAX];
	atomic_bool announced; /* "caches loaded" was logged */
};

/* The namespace to ask for poolkeeper's pool kind in: none for a cluster-scoped kind. */
static const char *pool_namespace(const struct pk_pool_kind *pk, const char *ns)
{
	return pk->namespaced ? ns : NULL;
}

/* Whether kind k is answered from the cache: once its informer has listed. */
static bool cached(const struct pk_lookup *l, enum pk_cache_kind k)
{
	return l->cache != NULL && pk_cache_synced(l->cache, k);
}

static int failed(struct pk_err *err, const char *what, const struct pk_kube_error *e)
{
	return pk_err_set(err, PK_ERR_INVALID, "%s: %s (%s)", what, e->message,
	                  pk_kube_reason_name(e->reason));
}

/* ---- live reads: before the caches are loaded, and the PK_LOOKUP_LIVE mode ---- */

/* items of a List, as a new reference */
static json_t *take_items(json_t *list)
{
	json_t *items = json_object_get(list, "items");
	items = json_is_array(items) ? json_incref(items) : json_array();
	json_decref(list);
	return items;
}

static int live_list_pools(struct pk_lookup *l, const struct pk_pool_kind *pk, const char *ns,
                           json_t **items, struct pk_err *err)
{
	struct pk_kube_ref r = {.group = pk->group,
	                        .version = pk->version,
	                        .resource = pk->resource,
	                        .namespace = pool_namespace(pk, ns)};
	struct pk_kube_list_opts o = {0};
	struct pk_kube_error e;
	json_t *list = NULL;
	if (pk_kube_client_list_all(l->client, &r, &o, &list, &e) != PK_KUBE_OK)
		return failed(err, pk->kind, &e);
	*items = take_items(list);
	return PK_OK;
}

/* Whether an IPAddress names poolkeeper's pool kind/ns/name (ns NULL: of any namespace). */
static bool names_pool(const json_t *addr, const char *kind, const char *ns, const char *name)
{
	struct pk_pool_ref r;
	return pk_pool_ref_read(pk_json_path(addr, "spec", "poolRef"),
	                        pk_json_meta_cstr(addr, "namespace"), &r) &&
	       r.pk != NULL && pk_pool_ref_is(&r, kind, ns != NULL ? ns : r.ns, name);
}

static int live_list_pool_addresses(struct pk_lookup *l, const char *kind, const char *ns,
                                    const char *name, json_t **items, struct pk_err *err)
{
	/* CAPI's IPAddress CRD has no selectable poolRef field: list and filter. */
	struct pk_kube_ref r = {.group = PK_CAPI_IPAM_GROUP,
	                        .version = l->ipaddress_version,
	                        .resource = PK_ADDRESS_RESOURCE,
	                        .namespace = ns};
	struct pk_kube_list_opts o = {0};
	struct pk_kube_error e;
	json_t *list = NULL;
	if (pk_kube_client_list_all(l->client, &r, &o, &list, &e) != PK_KUBE_OK)
		return failed(err, PK_ADDRESS_KIND "es", &e);
	json_t *all = take_items(list);
	*items = json_array();
	size_t i;
	json_t *a;
	json_array_foreach(all, i, a)
	{
		if (names_pool(a, kind, ns, name))
			json_array_append(*items, a);
	}
	json_decref(all);
	return PK_OK;
}

/* One object, or *obj NULL when it does not exist. */
static int live_get(struct pk_lookup *l, const struct pk_kube_ref *r, const char *what,
                    json_t **obj, struct pk_err *err)
{
	struct pk_kube_error e;
	*obj = NULL;
	enum pk_kube_reason rc = pk_kube_client_get(l->client, r, obj, &e);
	if (rc == PK_KUBE_NOT_FOUND)
		return PK_OK;
	if (rc != PK_KUBE_OK)
		return failed(err, what, &e);
	return PK_OK;
}

/* ---- the admission callbacks ---- */

/* The pool reads take poolkeeper's kinds only: a kind the table does not have is an error
 * (pk_cache_pool_slot's), never a read of another kind's pools. */

static int list_pools(void *ctx, const char *kind, const char *ns, json_t **items,
                      struct pk_err *err)
{
	struct pk_lookup *l = ctx;
	enum pk_cache_kind k;
	*items = NULL;
	int rc = pk_cache_pool_slot(kind, &k, err);
	if (rc != PK_OK)
		return rc;
	if (cached(l, k))
		return pk_cache_list_pools(l->cache, kind, ns, items, err);
	return live_list_pools(l, pk_cache_slot_pool_kind(k), ns, items, err);
}

static int list_pool_addresses(void *ctx, const char *kind, const char *ns, const char *name,
                               json_t **items, struct pk_err *err)
{
	struct pk_lookup *l = ctx;
	enum pk_cache_kind k;
	*items = NULL;
	int rc = pk_cache_pool_slot(kind, &k, err);
	if (rc != PK_OK)
		return rc;
	if (cached(l, PK_CACHE_ADDRESSES))
		return pk_cache_list_pool_addresses(l->cache, kind, ns, name, items, err);
	return live_list_pool_addresses(l, kind, ns, name, items, err);
}

static int get_pool(void *ctx, const char *kind, const char *ns, const char *name, json_t **obj,
                    struct pk_err *err)
{
	struct pk_lookup *l = ctx;
	enum pk_cache_kind k;
	*obj = NULL;
	int rc = pk_cache_pool_slot(kind, &k, err);
	if (rc != PK_OK)
		return rc;
	if (cached(l, k))
		return pk_cache_get_pool(l->cache, kind, ns, name, obj, err);
	const struct pk_pool_kind *pk = pk_cache_slot_pool_kind(k);
	struct pk_kube_ref r = {.group = pk->group,
	                        .version = pk->version,
	                        .resource = pk->resource,
	                        .namespace = pool_namespace(pk, ns),
	                        .name = name};
	return live_get(l, &r, pk->kind, obj, err);
}

static int get_claim(void *ctx, const char *ns, const char *name, json_t **obj, struct pk_err *err)
{
	struct pk_lookup *l = ctx;
	if (cached(l, PK_CACHE_CLAIMS))
		return pk_cache_get_claim(l->cache, ns, name, obj, err);
	struct pk_kube_ref r = {.group = PK_CAPI_IPAM_GROUP,
	                        .version = l->ipaddress_version,
	                        .resource = PK_CLAIM_RESOURCE,
	                        .namespace = ns,
	                        .name = name};
	return live_get(l, &r, PK_CLAIM_KIND, obj, err);
}

int pk_lookup_may_block_owner_deletion(void *ctx, const json_t *user_info, const char *ns,
                                       const char *api_version, const char *kind, const char *name,
                                       bool *allowed, char *rule, size_t rule_len,
                                       struct pk_err *err)
{
	const struct pk_lookup *l = ctx;
	return pk_permission_check(l->permission, user_info, ns, api_version, kind, name, allowed,
	                           rule, rule_len, err);
}

/* ---- set-up ---- */

/* What the informer of cache slot k lists: a pool kind's resource as the table says, or
 * IPAddresses and claims at the version the cluster serves. */
static struct pk_kube_ref informer_ref(const struct pk_lookup *l, enum pk_cache_kind k)
{
	const struct pk_pool_kind *pk = pk_cache_slot_pool_kind(k);
	if (pk != NULL)
		return (struct pk_kube_ref){
		    .group = pk->group, .version = pk->version, .resource = pk->resource};
	return (struct pk_kube_ref){.group = PK_CAPI_IPAM_GROUP,
	                            .version = l->ipaddress_version,
	                            .resource = k == PK_CACHE_ADDRESSES ? PK_ADDRESS_RESOURCE
	                                                                : PK_CLAIM_RESOURCE};
}

/* The informers, one per cache slot, every one cluster-wide: a cluster-scoped pool kind's
 * addresses and claims live in any namespace. */
static int start_informers(struct pk_lookup *l, struct pk_err *err)
{
	if ((l->cache = pk_cache_new()) == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	for (size_t k = 0; k < pk_cache_kinds(); k++) {
		struct pk_kube_informer_opts io = {.ref = informer_ref(l, (enum pk_cache_kind)k)};
		pk_cache_feed(l->cache, (enum pk_cache_kind)k, &io);
		int rc = pk_kube_informer_new(l->watcher, &io, &l->informers[k], err);
		if (rc == PK_OK)
			rc = pk_kube_informer_start(l->informers[k], err);
		if (rc != PK_OK)
			return rc;
	}
	return PK_OK;
}

int pk_lookup_open(const char *kubeconfig, struct pk_lookup **out, struct pk_err *err)
{
	return pk_lookup_open_mode(kubeconfig, PK_LOOKUP_CACHED, out, err);
}

int pk_lookup_open_mode(const char *kubeconfig, enum pk_lookup_mode mode, struct pk_lookup **out,
                        struct pk_err *err)
{
	const struct pk_lookup_opts o = {.mode = mode};
	return pk_lookup_open_opts(kubeconfig, &o, out, err);
}

int pk_lookup_open_opts(const char *kubeconfig, const struct pk_lookup_opts *lo,
                        struct pk_lookup **out, struct pk_err *err)
{
	enum pk_lookup_mode mode = lo->mode;
	*out = NULL;
	bool have_path = kubeconfig != NULL && kubeconfig[0] != '\0';
	const char *env = getenv("KUBECONFIG");
	if (!have_path && (env == NULL || env[0] == '\0') &&
	    getenv("KUBERNETES_SERVICE_HOST") == NULL)
		return PK_OK; /* no API access */

	struct pk_lookup *l = calloc(1, sizeof(*l));
	if (l == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	atomic_init(&l->announced, false);
	pk_log_kube_sink(&l->log);
	struct pk_kube_config_opts co = {
	    .path = have_path ? kubeconfig : NULL, .log = &l->log, .allow_exec = true};
	int rc = pk_kube_config_load(&co, &l->cfg, err);
	if (rc != PK_OK)
		goto fail;
	/* Admission answers within the apiserver's timeout (10 s by default): fail fast, with
	 * one retry at most. */
	struct pk_kube_client_opts opts = {.qps = 50,
	                                   .burst = 100,
	                                   .timeout_ms = 5000,
	                                   .connect_timeout_ms = 2000,
	                                   .max_retries = 1,
	                                   .backoff_max_ms = 500};
	/* The informers' own client: list pages and watches take longer than an admission
	 * read may, they retry at their own pace, and they must not eat the reviews' rate. */
	struct pk_kube_client_opts wopts = {.qps = 50, .burst = 100};
	rc = pk_kube_client_new(l->cfg, &opts, &l->client, err);
	if (rc == PK_OK)
		rc = pk_kube_client_new(l->cfg, &wopts, &l->watcher, err);
	if (rc != PK_OK)
		goto fail;
	/* Which IPAddress version the cluster serves decides how addresses are read:
	 * v1beta2 unless only v1beta1 is served. */
	static const char *const prefer[] = {PK_CAPI_V1BETA2, PK_CAPI_V1BETA1, NULL};
	struct pk_kube_error e;
	if (pk_kube_client_preferred_version(l->watcher, PK_CAPI_IPAM_GROUP, prefer,
	                                     l->ipaddress_version, sizeof(l->ipaddress_version),
	                                     &e) != PK_KUBE_OK)
		pk_log_warn("cannot read which versions of " PK_CAPI_IPAM_GROUP " are served; "
		            "assuming " PK_CAPI_V1BETA2,
		            PK_LOG_STR("error", e.message));
	if (l->ipaddress_version[0] == '\0') /* not read, or served in neither */
		snprintf(l->ipaddress_version, sizeof(l->ipaddress_version), "%s", PK_CAPI_V1BETA2);
	if ((rc = pk_permission_new(l->client, &lo->permission, &l->permission, err)) != PK_OK)
		goto fail;
	if (mode == PK_LOOKUP_CACHED && (rc = start_informers(l, err)) != PK_OK)
		goto fail;
	l->admission.ctx = l;
	l->admission.list_pools = list_pools;
	l->admission.list_pool_addresses = list_pool_addresses;
	l->admission.get_pool = get_pool;
	l->admission.get_claim = get_claim;
	l->admission.may_block_owner_deletion = pk_lookup_may_block_owner_deletion;
	*out = l;
	return PK_OK;
fail:
	pk_lookup_close(l);
	return rc;
}

void pk_lookup_close(struct pk_lookup *l)
{
	if (l == NULL)
		return;
	/* the lookup threads first: they use the client */
	pk_permission_free(l->permission);
	/* Every stop first, then the waits: they overlap. */
	for (size_t k = 0; k < pk_cache_kinds(); k++)
		pk_kube_informer_stop_begin(l->informers[k]);
	for (size_t k = 0; k < pk_cache_kinds(); k++)
		pk_kube_informer_stop(l->informers[k]);
	/* The items are the informers': free them first, then the cache's index of them. */
	for (size_t k = 0; k < pk_cache_kinds(); k++)
		pk_kube_informer_free(l->informers[k]);
	pk_cache_free(l->cache);
	pk_kube_client_free(l->watcher);
	pk_kube_client_free(l->client);
	pk_kube_config_free(l->cfg);
	free(l);
}

const struct pk_admission_lookup *pk_lookup_admission(const struct pk_lookup *l)
{
	return l != NULL ? &l->admission : NULL;
}

unsigned long long pk_lookup_oversized(void *ud)
{
	struct pk_lookup *l = ud;
	return l != NULL && l->cache != NULL ? pk_cache_oversized(l->cache) : 0;
}

/* What the caches hold once loaded: each pool kind's resource, then IPAddresses and claims. */
static void announce(struct pk_cache *c)
{
	/* One field per slot; those not in use end the list, since pk_log_write reads up to
	 * the first PK_LOG_END. */
	struct pk_log_field f[PK_CACHE_KINDS_MAX];
	size_t n = 0;
	for (size_t k = PK_CACHE_POOLS; k < pk_cache_kinds(); k++)
		f[n++] = PK_LOG_UINT(pk_cache_slot_pool_kind((enum pk_cache_kind)k)->resource,
		                     pk_cache_count(c, (enum pk_cache_kind)k));
	f[n++] = PK_LOG_UINT(PK_ADDRESS_RESOURCE, pk_cache_count(c, PK_CACHE_ADDRESSES));
	f[n++] = PK_LOG_UINT(PK_CLAIM_RESOURCE, pk_cache_count(c, PK_CACHE_CLAIMS));
	while (n < PK_CACHE_KINDS_MAX)
		f[n++] = PK_LOG_END;
	_Static_assert(PK_CACHE_KINDS_MAX == 10, "pass every field below");
	pk_log_info("admission lookups answer from the caches", f[0], f[1], f[2], f[3], f[4], f[5],
	            f[6], f[7], f[8], f[9]);
}

bool pk_lookup_ready(void *ud)
{
	struct pk_lookup *l = ud;
	if (l == NULL || l->cache == NULL)
		return true;
	if (!pk_cache_ready(l->cache))
		return false;
	if (!atomic_exchange(&l->announced, true))
		announce(l->cache);
	return true;
}

bool pk_lookup_wait_ready(struct pk_lookup *l, long timeout_ms)
{
	if (l == NULL || l->cache == NULL)
		return true;
	for (size_t k = 0; k < pk_cache_kinds(); k++) {
		if (!pk_kube_informer_wait_synced(l->informers[k], timeout_ms))
			return false;
	}
	/* on_synced runs just after the state turns synced */
	for (int i = 0; i < 100 && !pk_cache_ready(l->cache); i++)
		pk_kube_sleep_ns(10 * 1000 * 1000);
	return pk_lookup_ready(l);
}

const char *pk_lookup_server(const struct pk_lookup *l)
{
	return l != NULL ? pk_kube_config_server(l->cfg) : "";
}
