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
#include "kube_client.h"
#include "kube_informer.h"
#include "log.h"
#include "lookup.h"
#include "parse.h"
#include "rules.h"
#include "strmap.h"

/* Discovery answers: bounded, and a kind found is asked again after a while, a kind not
 * found soon, so a CRD installed (or changed) later is seen. */
#define KINDMAP_MAX     512
#define KINDMAP_TTL_NS  (10LL * 60 * 1000 * 1000 * 1000)
#define KINDMAP_MISS_NS (10LL * 1000 * 1000 * 1000)

struct pk_lookup {
	struct pk_kube_config *cfg;
	struct pk_kube_client *client;  /* live reads: short timeouts */
	struct pk_kube_client *watcher; /* the informers' lists and watches */
	struct pk_kube_log log;
	struct pk_admission_lookup admission;
	char ipaddress_version[16]; /* v1beta2, or v1beta1 on CAPI before 1.11 */
	struct pk_cache *cache;     /* NULL: PK_LOOKUP_LIVE */
	struct pk_kindmap *kinds;   /* owner kinds -> resources, from discovery */
	struct pk_sarcache *sars;   /* SubjectAccessReview answers */
	long long deadline_ns;      /* how long a review waits for its permission lookup */
	/* the lookup threads and their queue */
	pthread_mutex_t pool_lock;
	pthread_cond_t pool_work;
	struct ask *queue_head, *queue_tail;
	unsigned queued, queue_max;
	bool stopping;
	pthread_t *threads;
	unsigned nthreads; /* started */
	struct pk_kube_informer *informers[PK_CACHE_KINDS];
	atomic_bool announced; /* "caches loaded" was logged */
};

static const char *pool_resource(const char *kind)
{
	return strcmp(kind, PK_GLOBAL_POOL_KIND) == 0 ? PK_GLOBAL_POOL_RESOURCE : PK_POOL_RESOURCE;
}

static enum pk_cache_kind pool_cache(const char *kind)
{
	return strcmp(kind, PK_GLOBAL_POOL_KIND) == 0 ? PK_CACHE_GLOBALIPPOOLS : PK_CACHE_IPPOOLS;
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

static int live_list_pools(struct pk_lookup *l, const char *kind, const char *ns, json_t **items,
                           struct pk_err *err)
{
	struct pk_kube_ref r = {.group = PK_POOL_GROUP,
	                        .version = PK_POOL_VERSION,
	                        .resource = pool_resource(kind),
	                        .namespace = strcmp(kind, PK_GLOBAL_POOL_KIND) == 0 ? NULL : ns};
	struct pk_kube_list_opts o = {0};
	struct pk_kube_error e;
	json_t *list = NULL;
	if (pk_kube_client_list_all(l->client, &r, &o, &list, &e) != PK_KUBE_OK)
		return failed(err, kind, &e);
	*items = take_items(list);
	return PK_OK;
}

static bool names_pool(const json_t *addr, const char *kind, const char *name)
{
	const json_t *ref = pk_json_path(addr, "spec", "poolRef");
	const char *g = pk_json_cstr_at(ref, "apiGroup");
	const char *k = pk_json_cstr_at(ref, "kind");
	const char *n = pk_json_cstr_at(ref, "name");
	return g != NULL && k != NULL && n != NULL && name != NULL &&
	       strcmp(g, PK_POOL_GROUP) == 0 && strcmp(k, kind) == 0 && strcmp(n, name) == 0;
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
		if (names_pool(a, kind, name))
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

static int list_pools(void *ctx, const char *kind, const char *ns, json_t **items,
                      struct pk_err *err)
{
	struct pk_lookup *l = ctx;
	if (cached(l, pool_cache(kind)))
		return pk_cache_list_pools(l->cache, kind, ns, items, err);
	return live_list_pools(l, kind, ns, items, err);
}

static int list_pool_addresses(void *ctx, const char *kind, const char *ns, const char *name,
                               json_t **items, struct pk_err *err)
{
	struct pk_lookup *l = ctx;
	if (cached(l, PK_CACHE_ADDRESSES))
		return pk_cache_list_pool_addresses(l->cache, kind, ns, name, items, err);
	return live_list_pool_addresses(l, kind, ns, name, items, err);
}

static int get_pool(void *ctx, const char *kind, const char *ns, const char *name, json_t **obj,
                    struct pk_err *err)
{
	struct pk_lookup *l = ctx;
	if (cached(l, pool_cache(kind)))
		return pk_cache_get_pool(l->cache, kind, ns, name, obj, err);
	struct pk_kube_ref r = {.group = PK_POOL_GROUP,
	                        .version = PK_POOL_VERSION,
	                        .resource = pool_resource(kind),
	                        .namespace = strcmp(kind, PK_GLOBAL_POOL_KIND) == 0 ? NULL : ns,
	                        .name = name};
	return live_get(l, &r, kind, obj, err);
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

/* ---- owner references: discovery, the kind cache, and the SubjectAccessReview ---- */

/*
 * The two answer caches (owner kinds, SubjectAccessReviews) share one shape: string keys to an
 * optional string value with an expiry, bounded, a full map dropping the entry closest to
 * expiry (with one TTL per map that is the oldest).
 */
#define TTL_KEY_MAX 2048

struct ttlmap {
	pthread_mutex_t lock;
	struct pk_strmap *map; /* key -> struct ttl_entry */
	size_t max;
};

struct ttl_entry {
	long long expires_ns;
	char *value; /* may be NULL */
};

static void ttl_entry_free(void *v)
{
	struct ttl_entry *k = v;
	if (k != NULL)
		free(k->value);
	free(k);
}

static bool ttlmap_init(struct ttlmap *m, size_t max)
{
	if ((m->map = pk_strmap_new()) == NULL)
		return false;
	pthread_mutex_init(&m->lock, NULL);
	m->max = max > 0 ? max : 1;
	return true;
}

static void ttlmap_destroy(struct ttlmap *m)
{
	pk_strmap_free(m->map, ttl_entry_free);
	pthread_mutex_destroy(&m->lock);
}

enum ttl_hit { TTL_NONE, TTL_NULL, TTL_VALUE };

/* A live entry's value copied into buf; one that does not fit is no hit. */
static enum ttl_hit ttlmap_get(struct ttlmap *m, const char *key, long long now_ns, char *buf,
                               size_t len)
{
	enum ttl_hit hit = TTL_NONE;
	pthread_mutex_lock(&m->lock);
	const struct ttl_entry *k = pk_strmap_get(m->map, key);
	if (k != NULL && now_ns < k->expires_ns) {
		if (k->value == NULL)
			hit = TTL_NULL;
		else if (snprintf(buf, len, "%s", k->value) < (int)len)
			hit = TTL_VALUE;
	}
	pthread_mutex_unlock(&m->lock);
	return hit;
}

/* The entry closest to expiry (one that has expired, if any, is closest). */
struct victim {
	const char *key;
	long long expires_ns;
};

static void find_victim(void *ud, const char *key, void *value)
{
	struct victim *v = ud;
	const struct ttl_entry *k = value;
	if (v->key == NULL || k->expires_ns < v->expires_ns) {
		v->key = key;
		v->expires_ns = k->expires_ns;
	}
}

/* Makes room for one new entry: a full map drops the entry closest to expiry. */
static void ttlmap_make_room(struct ttlmap *m)
{
	if (pk_strmap_len(m->map) < m->max)
		return;
	struct victim v = {0};
	pk_strmap_foreach(m->map, find_victim, &v);
	if (v.key != NULL) {
		char key[TTL_KEY_MAX]; /* the map's key is freed by the removal */
		snprintf(key, sizeof(key), "%s", v.key);
		ttl_entry_free(pk_strmap_remove(m->map, key));
	}
}

static int ttlmap_put(struct ttlmap *m, const char *key, const char *value, long long expires_ns)
{
	if (strlen(key) >= TTL_KEY_MAX)
		return PK_ERR_TOO_BIG;
	struct ttl_entry *k = calloc(1, sizeof(*k));
	if (k == NULL || (value != NULL && (k->value = strdup(value)) == NULL)) {
		ttl_entry_free(k);
		return PK_ERR_NOMEM;
	}
	k->expires_ns = expires_ns;
	pthread_mutex_lock(&m->lock);
	if (pk_strmap_get(m->map, key) == NULL)
		ttlmap_make_room(m);
	void *old = NULL;
	int rc = pk_strmap_put(m->map, key, k, &old);
	pthread_mutex_unlock(&m->lock);
	if (rc != PK_OK)
		ttl_entry_free(k);
	ttl_entry_free(old);
	return rc;
}

static size_t ttlmap_len(struct ttlmap *m)
{
	pthread_mutex_lock(&m->lock);
	size_t n = pk_strmap_len(m->map);
	pthread_mutex_unlock(&m->lock);
	return n;
}

/* The kind map: "group/version kind" -> "N resource" (namespaced) or "C resource"
 * (cluster-scoped), or NULL (no such kind). */
struct pk_kindmap {
	struct ttlmap m;
	long long ttl_ns, miss_ttl_ns;
};

#define KIND_KEY_MAX 400

struct pk_kindmap *pk_kindmap_new(size_t max, long long ttl_ns, long long miss_ttl_ns)
{
	struct pk_kindmap *m = calloc(1, sizeof(*m));
	if (m == NULL || !ttlmap_init(&m->m, max)) {
		free(m);
		return NULL;
	}
	m->ttl_ns = ttl_ns;
	m->miss_ttl_ns = miss_ttl_ns;
	return m;
}

void pk_kindmap_free(struct pk_kindmap *m)
{
	if (m == NULL)
		return;
	ttlmap_destroy(&m->m);
	free(m);
}

/* "group/version kind": neither part holds a space once validated; NULL when too long. */
static bool kind_key(const char *gv, const char *kind, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s %s", gv, kind);
	return n > 0 && (size_t)n < len;
}

enum pk_kindmap_hit pk_kindmap_get(struct pk_kindmap *m, const char *gv, const char *kind,
                                   long long now_ns, char *buf, size_t len, bool *namespaced)
{
	char key[KIND_KEY_MAX], v[300];
	*namespaced = true;
	if (!kind_key(gv, kind, key, sizeof(key)))
		return PK_KINDMAP_NONE;
	switch (ttlmap_get(&m->m, key, now_ns, v, sizeof(v))) {
	case TTL_NONE:
		return PK_KINDMAP_NONE;
	case TTL_NULL:
		return PK_KINDMAP_MISSING;
	case TTL_VALUE:
		break;
	}
	if (snprintf(buf, len, "%s", v + 2) >= (int)len)
		return PK_KINDMAP_NONE;
	*namespaced = v[0] == 'N';
	return PK_KINDMAP_FOUND;
}

int pk_kindmap_put(struct pk_kindmap *m, const char *gv, const char *kind, const char *resource,
                   bool namespaced, long long now_ns)
{
	char key[KIND_KEY_MAX], v[300];
	if (!kind_key(gv, kind, key, sizeof(key)))
		return PK_ERR_NOMEM;
	if (resource != NULL &&
	    snprintf(v, sizeof(v), "%c %s", namespaced ? 'N' : 'C', resource) >= (int)sizeof(v))
		return PK_ERR_TOO_BIG;
	return ttlmap_put(&m->m, key, resource != NULL ? v : NULL,
	                  now_ns + (resource != NULL ? m->ttl_ns : m->miss_ttl_ns));
}

size_t pk_kindmap_len(struct pk_kindmap *m)
{
	return ttlmap_len(&m->m);
}

/* The SubjectAccessReview answers: key -> "1" (allowed) or "0". */
struct pk_sarcache {
	struct ttlmap m;
	long long ttl_ns;
};

struct pk_sarcache *pk_sarcache_new(size_t max, long long ttl_ns)
{
	struct pk_sarcache *c = calloc(1, sizeof(*c));
	if (c == NULL || !ttlmap_init(&c->m, max)) {
		free(c);
		return NULL;
	}
	c->ttl_ns = ttl_ns;
	return c;
}

void pk_sarcache_free(struct pk_sarcache *c)
{
	if (c == NULL)
		return;
	ttlmap_destroy(&c->m);
	free(c);
}

enum pk_sarcache_hit pk_sarcache_get(struct pk_sarcache *c, const char *key, long long now_ns)
{
	char v[4];
	if (ttlmap_get(&c->m, key, now_ns, v, sizeof(v)) != TTL_VALUE)
		return PK_SARCACHE_NONE;
	return v[0] == '1' ? PK_SARCACHE_ALLOWED : PK_SARCACHE_DENIED;
}

int pk_sarcache_put(struct pk_sarcache *c, const char *key, bool allowed, long long now_ns)
{
	return ttlmap_put(&c->m, key, allowed ? "1" : "0", now_ns + c->ttl_ns);
}

size_t pk_sarcache_len(struct pk_sarcache *c)
{
	return ttlmap_len(&c->m);
}

/* ---- validation of what a tenant's owner reference says ---- */

static int bad_field(struct pk_err *err, const char *field, const char *v, const char *why)
{
	char q[300];
	pk_text_quote(v != NULL ? v : "", v != NULL ? strlen(v) : 0, q, sizeof(q));
	return pk_err_set(err, PK_ERR_INVALID, "%s \"%s\": %s", field, q, why);
}

/* apiVersion "group/version" or "version" (the core group) into group and version. */
static int split_api_version(const char *av, char *group, size_t glen, char *version, size_t vlen,
                             struct pk_err *err)
{
	static const char field[] = "owner reference apiVersion";
	const char *slash = av != NULL ? strchr(av, '/') : NULL;
	const char *v = slash != NULL ? slash + 1 : av;
	size_t gn = slash != NULL ? (size_t)(slash - av) : 0;
	if (av == NULL || av[0] == '\0')
		return bad_field(err, field, av,
		                 "must be GROUP/VERSION, or VERSION for the core group");
	if (gn >= glen || strlen(v) >= vlen)
		return bad_field(err, field, av, "is too long");
	memcpy(group, av, gn);
	group[gn] = '\0';
	snprintf(version, vlen, "%s", v);
	struct pk_err why = {{0}};
	if (slash != NULL && pk_parse_dns_name(group, true, &why) != PK_OK)
		return bad_field(err, field, av, "its group must be a DNS subdomain name");
	if (pk_parse_dns_name(version, false, &why) != PK_OK)
		return bad_field(err, field, av,
		                 "its version must be a DNS label (v1, v1beta1, ...)");
	return PK_OK;
}

/* A kind: as the apiserver allows for a CRD, a DNS-1035 label once lower-cased (at most
 * 63 of letters, digits and '-', starting with a letter, ending with a letter or digit). */
static int check_kind(const char *kind, struct pk_err *err)
{
	size_t n = kind != NULL ? strlen(kind) : 0;
	bool ok = n > 0 && n <= 63;
	for (size_t i = 0; ok && i < n; i++) {
		char c = kind[i];
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
		bool digit = c >= '0' && c <= '9';
		ok = alpha || (i > 0 && digit) || (i > 0 && i < n - 1 && c == '-');
	}
	return ok ? PK_OK
	          : bad_field(err, "owner reference kind", kind,
	                      "must be at most 63 letters, digits and '-', starting with a letter");
}

/* An object name as the apiserver accepts one in a path segment: not ".", "..", nor
 * holding '/' or '%'; at most 253 bytes of printable ASCII. */
static int check_name(const char *name, struct pk_err *err)
{
	size_t n = name != NULL ? strlen(name) : 0;
	bool ok = n > 0 && n <= 253 && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
	for (size_t i = 0; ok && i < n; i++)
		ok = name[i] > ' ' && name[i] < 0x7f && name[i] != '/' && name[i] != '%';
	return ok ? PK_OK
	          : bad_field(err, "owner reference name", name,
	                      "must be an object name (at most 253 printable characters, no '/' "
	                      "or '%', not \".\" or \"..\")");
}

/* ---- discovery ---- */

/* The APIResource of `kind` in a discovery document (an APIResourceList): the entry whose
 * kind matches and whose name is not a subresource ("vspherevms", not "vspherevms/status"),
 * and fits the kind map. */
static const json_t *resource_of(const json_t *list, const char *kind)
{
	size_t i;
	const json_t *r;
	json_array_foreach(json_object_get(list, "resources"), i, r)
	{
		const char *k = pk_json_cstr_at(r, "kind");
		const char *name = pk_json_cstr_at(r, "name");
		if (k != NULL && name != NULL && name[0] != '\0' && strlen(name) < 256 &&
		    strchr(name, '/') == NULL && strcmp(k, kind) == 0)
			return r;
	}
	return NULL;
}

int pk_lookup_owner_target(const char *ns, const char *api_version, const char *kind,
                           const char *name, struct pk_owner_target *t, struct pk_err *err)
{
	struct pk_err why = {{0}};
	memset(t, 0, sizeof(*t));
	if (pk_parse_dns_name(ns, false, &why) != PK_OK)
		return bad_field(err, "namespace", ns, "must be a namespace name");
	int rc = split_api_version(api_version, t->group, sizeof(t->group), t->version,
	                           sizeof(t->version), err);
	if (rc == PK_OK)
		rc = check_kind(kind, err);
	if (rc == PK_OK)
		rc = check_name(name, err);
	if (rc != PK_OK) {
		memset(t, 0, sizeof(*t));
		return rc;
	}
	/* validated: no '/', '?', '%', '#', space or ".." can reach the path */
	if (t->group[0] == '\0') {
		snprintf(t->group_version, sizeof(t->group_version), "%s", t->version);
		snprintf(t->path, sizeof(t->path), "/api/%s", t->version);
	} else {
		snprintf(t->group_version, sizeof(t->group_version), "%s/%s", t->group, t->version);
		snprintf(t->path, sizeof(t->path), "/apis/%s/%s", t->group, t->version);
	}
	return PK_OK;
}

/* ---- the SubjectAccessReview ---- */

/* Copies the strings of src (an array) into a new array; other items are left out. */
static json_t *string_array(const json_t *src)
{
	json_t *out = json_array();
	size_t i;
	const json_t *v;
	json_array_foreach(src, i, v)
	{
		const char *str = pk_json_cstr(v);
		if (str != NULL)
			json_array_append_new(out, json_string(str));
	}
	return out;
}

/* spec of a SubjectAccessReview for user_info's user. NULL (err set) without a username. */
static json_t *review_spec(const json_t *user_info, struct pk_err *err)
{
	const char *user = pk_json_cstr_at(user_info, "username");
	if (user == NULL || user[0] == '\0') {
		pk_err_set(err, PK_ERR_INVALID, "request.userInfo.username: missing");
		return NULL;
	}
	json_t *spec = json_pack("{s:s}", "user", user);
	const char *uid = pk_json_cstr_at(user_info, "uid");
	if (uid != NULL && uid[0] != '\0')
		json_object_set_new(spec, "uid", json_string(uid));
	json_t *groups = json_object_get(user_info, "groups");
	if (json_is_array(groups))
		json_object_set_new(spec, "groups", string_array(groups));
	json_t *extra = json_object_get(user_info, "extra");
	if (json_is_object(extra)) {
		json_t *x = json_object();
		const char *k;
		json_t *v;
		json_object_foreach(extra, k, v)
		{
			if (json_is_array(v))
				json_object_set_new(x, k, string_array(v));
		}
		json_object_set_new(spec, "extra", x);
	}
	return spec;
}

/* ---- the permission lookup: off the listener's threads, within a deadline ---- */

/*
 * One permission question. The listener thread answers it from the caches when it can;
 * else it queues it for a lookup thread and waits until the deadline. Whichever of the two
 * lets go last frees it (refs, under the pool's lock): a lookup that ends after its review
 * gave up still fills the caches for the next one.
 */
struct ask {
	struct pk_owner_target t;
	char kind[64];
	char ns[64];
	json_t *spec; /* the review's spec, without resourceAttributes (owned) */
	long long deadline_ns;
	/* the answer */
	int rc;
	bool allowed;
	char rule[600];
	struct pk_err err;
	/* the pool's, under its lock */
	int refs;
	bool done;
	pthread_cond_t cond;
	struct ask *next;
};

static void ask_free(struct ask *a)
{
	if (a == NULL)
		return;
	json_decref(a->spec);
	pthread_cond_destroy(&a->cond);
	free(a);
}

/* A condition variable on the monotonic clock, which the deadlines use. */
static void cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
}

static int timed_out(struct pk_err *err, const char *what, const char *why)
{
	return pk_err_set(err, PK_ERR_TIMEOUT, "%s timed out: %s", what, why);
}

/* A request that failed: a timeout (the deadline, the rate limit, the server's) is
 * PK_ERR_TIMEOUT, anything else PK_ERR_API. */
static int request_failed(struct pk_err *err, const char *what, const struct pk_kube_error *e)
{
	if (e->reason == PK_KUBE_TIMEOUT)
		return timed_out(err, what, e->message);
	return pk_err_set(err, PK_ERR_API, "%s: %s (%s)", what, e->message,
	                  pk_kube_reason_name(e->reason));
}

/* Discovery of the ask's group/version into the kind map. */
static int discover(struct pk_lookup *l, struct ask *a, struct pk_err *err)
{
	const char *gv = a->t.group_version;
	struct pk_kube_error e;
	json_t *list = NULL;
	enum pk_kube_reason rc = pk_kube_client_request_by(l->client, "GET", a->t.path, NULL, NULL,
	                                                   0, a->deadline_ns, &list, &e);
	if (rc != PK_KUBE_OK && rc != PK_KUBE_NOT_FOUND) {
		char what[400];
		snprintf(what, sizeof(what), "API discovery of %s", gv);
		return request_failed(err, what, &e);
	}
	const json_t *r = rc == PK_KUBE_OK ? resource_of(list, a->kind) : NULL;
	const char *res = pk_json_cstr_at(r, "name");
	/* APIResource.namespaced: false for a cluster-scoped kind */
	bool namespaced = !json_is_false(json_object_get(r, "namespaced"));
	/* not cached when memory runs out: asked again next time */
	if (pk_kindmap_put(l->kinds, gv, a->kind, res, namespaced, pk_kube_now_ns()) != PK_OK)
		pk_log_warn("cannot cache an owner kind's resource", PK_LOG_STR("kind", a->kind));
	json_decref(list);
	return PK_OK;
}

/* The SubjectAccessReview itself; its answer goes into the cache under key. */
static int review(struct pk_lookup *l, struct ask *a, const json_t *spec, const char *key,
                  struct pk_err *err)
{
	json_t *sar = json_pack("{s:s, s:s, s:O}", "apiVersion",
	                        PK_AUTHORIZATION_GROUP "/" PK_AUTHORIZATION_VERSION, "kind",
	                        PK_SUBJECT_ACCESS_REVIEW_KIND, "spec", spec);
	char *body = sar != NULL ? json_dumps(sar, JSON_COMPACT) : NULL;
	json_decref(sar);
	if (body == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	struct pk_kube_error e;
	json_t *out = NULL;
	enum pk_kube_reason kr = pk_kube_client_request_by(
	    l->client, "POST",
	    "/apis/" PK_AUTHORIZATION_GROUP "/" PK_AUTHORIZATION_VERSION
	    "/" PK_SUBJECT_ACCESS_REVIEW_RESOURCE,
	    "application/json", body, strlen(body), a->deadline_ns, &out, &e);
	free(body);
	if (kr != PK_KUBE_OK)
		return request_failed(err, PK_SUBJECT_ACCESS_REVIEW_KIND, &e);
	a->allowed = json_is_true(pk_json_path(out, "status", "allowed"));
	json_decref(out);
	/* a key too long to keep (or no memory) is asked every time */
	if (key != NULL && pk_sarcache_put(l->sars, key, a->allowed, pk_kube_now_ns()) != PK_OK)
		pk_log_debug("a SubjectAccessReview answer is not cached",
		             PK_LOG_UINT("keyBytes", strlen(key)));
	return PK_OK;
}

/*
 * Answers a from the caches and, unless cached_only, from the API server. *pending set (and
 * PK_OK) when cached_only and the caches do not hold the answer.
 */
static int answer(struct pk_lookup *l, struct ask *a, bool cached_only, bool *pending)
{
	const char *gv = a->t.group_version, *group = a->t.group;
	const char *gname = group[0] != '\0' ? group : "\"\" (core)";
	char res[256];
	bool namespaced = true;
	*pending = false;
	enum pk_kindmap_hit hit =
	    pk_kindmap_get(l->kinds, gv, a->kind, pk_kube_now_ns(), res, sizeof(res), &namespaced);
	if (hit == PK_KINDMAP_NONE) {
		if (cached_only) {
			*pending = true;
			return PK_OK;
		}
		int rc = discover(l, a, &a->err);
		if (rc != PK_OK)
			return rc;
		hit = pk_kindmap_get(l->kinds, gv, a->kind, pk_kube_now_ns(), res, sizeof(res),
		                     &namespaced);
		if (hit == PK_KINDMAP_NONE) /* not cached (no memory): say what is known */
			return pk_err_set(&a->err, PK_ERR_NOMEM,
			                  "API discovery of %s: out of memory", gv);
	}
	if (hit == PK_KINDMAP_MISSING) {
		snprintf(a->rule, sizeof(a->rule),
		         "kind %s has no resource in API group %s version %s (API discovery)",
		         a->kind, gname, a->t.version);
		return PK_OK;
	}
	snprintf(a->rule, sizeof(a->rule), "update on %s/finalizers in API group %s", res, gname);
	/*
	 * As OwnerReferencesPermissionEnforcement asks: `update` of <resource>/finalizers, in the
	 * claim's namespace unless the owner's kind is cluster-scoped (then in none). The owner's
	 * name is left out, so that the answer holds for every owner of the kind and can be
	 * cached: a grant limited to some resourceNames reads as not allowed.
	 */
	json_t *attrs =
	    json_pack("{s:s, s:s, s:s, s:s, s:s}", "verb", "update", "group", group, "version",
	              a->t.version, "resource", res, "subresource", "finalizers");
	if (attrs != NULL && namespaced)
		json_object_set_new(attrs, "namespace", json_string(a->ns));
	json_t *spec = attrs != NULL ? json_deep_copy(a->spec) : NULL;
	if (spec == NULL || json_object_set_new(spec, "resourceAttributes", attrs) != 0) {
		json_decref(spec);
		return pk_err_set(&a->err, PK_ERR_NOMEM, "out of memory");
	}
	/* the cache key: user, uid, groups, extra and the resource, as the review asks */
	char *key = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
	int rc = PK_OK;
	switch (key != NULL ? pk_sarcache_get(l->sars, key, pk_kube_now_ns()) : PK_SARCACHE_NONE) {
	case PK_SARCACHE_ALLOWED:
		a->allowed = true;
		break;
	case PK_SARCACHE_DENIED:
		a->allowed = false;
		break;
	case PK_SARCACHE_NONE:
		if (cached_only)
			*pending = true;
		else
			rc = review(l, a, spec, key, &a->err);
		break;
	}
	free(key);
	json_decref(spec);
	return rc;
}

/* A lookup thread: takes asks off the queue until the pool stops. */
static void *lookup_thread(void *ud)
{
	struct pk_lookup *l = ud;
	pthread_mutex_lock(&l->pool_lock);
	for (;;) {
		while (!l->stopping && l->queue_head == NULL)
			pthread_cond_wait(&l->pool_work, &l->pool_lock);
		struct ask *a = l->queue_head;
		if (a == NULL)
			break; /* stopping, nothing left */
		l->queue_head = a->next;
		if (l->queue_head == NULL)
			l->queue_tail = NULL;
		l->queued--;
		bool stopping = l->stopping;
		pthread_mutex_unlock(&l->pool_lock);

		bool pending;
		if (stopping)
			a->rc =
			    timed_out(&a->err, "the permission check", "the webhook is stopping");
		else if (pk_kube_now_ns() >= a->deadline_ns)
			a->rc = timed_out(&a->err, "the permission check",
			                  "it waited in the lookup queue past its deadline");
		else
			a->rc = answer(l, a, false, &pending);

		pthread_mutex_lock(&l->pool_lock);
		a->done = true;
		pthread_cond_signal(&a->cond);
		if (--a->refs == 0)
			ask_free(a);
	}
	pthread_mutex_unlock(&l->pool_lock);
	return NULL;
}

/*
 * Queues a for a lookup thread and waits for it until its deadline; true then, with the
 * pool's lock held and a shared (a->done says whether the answer came). Never blocks on a
 * full queue: false at once, a->rc the timeout, a still the caller's alone.
 */
static bool ask_and_wait(struct pk_lookup *l, struct ask *a)
{
	pthread_mutex_lock(&l->pool_lock);
	if (l->stopping || l->queued >= l->queue_max) {
		pthread_mutex_unlock(&l->pool_lock);
		char why[128];
		snprintf(why, sizeof(why), "the lookup queue is full (%u waiting)", l->queue_max);
		a->rc = timed_out(&a->err, "the permission check", why);
		return false;
	}
	a->refs = 2;
	if (l->queue_tail != NULL)
		l->queue_tail->next = a;
	else
		l->queue_head = a;
	l->queue_tail = a;
	l->queued++;
	pthread_cond_signal(&l->pool_work);
	struct timespec ts = {.tv_sec = (time_t)(a->deadline_ns / 1000000000LL),
	                      .tv_nsec = (long)(a->deadline_ns % 1000000000LL)};
	while (!a->done && pthread_cond_timedwait(&a->cond, &l->pool_lock, &ts) != ETIMEDOUT)
		;
	return true;
}

int pk_lookup_may_block_owner_deletion(void *ctx, const json_t *user_info, const char *ns,
                                       const char *api_version, const char *kind, const char *name,
                                       bool *allowed, char *rule, size_t rule_len,
                                       struct pk_err *err)
{
	struct pk_lookup *l = ctx;
	*allowed = false;
	if (rule_len > 0)
		rule[0] = '\0';
	struct ask *a = calloc(1, sizeof(*a));
	if (a == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	cond_init_monotonic(&a->cond);
	int rc = pk_lookup_owner_target(ns, api_version, kind, name, &a->t, err);
	if (rc == PK_OK && (a->spec = review_spec(user_info, err)) == NULL)
		rc = PK_ERR_INVALID;
	if (rc != PK_OK) {
		ask_free(a);
		return rc;
	}
	snprintf(a->kind, sizeof(a->kind), "%s", kind);
	snprintf(a->ns, sizeof(a->ns), "%s", ns);
	a->deadline_ns = pk_kube_now_ns() + l->deadline_ns;

	bool pending = false;
	a->rc = answer(l, a, true, &pending);
	/* shared: a lookup thread has it, and the pool's lock is held */
	bool shared = a->rc == PK_OK && pending && ask_and_wait(l, a);
	if (shared && !a->done) {
		/* the lookup thread may still be writing a's answer: not read */
		char why[128];
		snprintf(why, sizeof(why), "no answer within %lld ms", l->deadline_ns / 1000000LL);
		rc = timed_out(err, "the permission check", why);
	} else if ((rc = a->rc) == PK_OK) {
		*allowed = a->allowed;
		snprintf(rule, rule_len, "%s", a->rule);
	} else {
		*err = a->err;
	}
	if (!shared) {
		ask_free(a);
		return rc;
	}
	if (--a->refs == 0)
		ask_free(a);
	pthread_mutex_unlock(&l->pool_lock);
	return rc;
}

/* ---- set-up ---- */

/* The informers, every one cluster-wide: GlobalIPPools are cluster-scoped and their
 * addresses and claims live in any namespace. */
static int start_informers(struct pk_lookup *l, struct pk_err *err)
{
	static const struct {
		const char *group, *resource;
		bool capi; /* served at the IPAddress version */
	} what[PK_CACHE_KINDS] = {
	    [PK_CACHE_IPPOOLS] = {PK_POOL_GROUP, PK_POOL_RESOURCE, false},
	    [PK_CACHE_GLOBALIPPOOLS] = {PK_POOL_GROUP, PK_GLOBAL_POOL_RESOURCE, false},
	    [PK_CACHE_ADDRESSES] = {PK_CAPI_IPAM_GROUP, PK_ADDRESS_RESOURCE, true},
	    [PK_CACHE_CLAIMS] = {PK_CAPI_IPAM_GROUP, PK_CLAIM_RESOURCE, true},
	};
	if ((l->cache = pk_cache_new()) == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	for (int k = 0; k < PK_CACHE_KINDS; k++) {
		struct pk_kube_informer_opts io = {
		    .ref = {.group = what[k].group,
		            .version = what[k].capi ? l->ipaddress_version : PK_POOL_VERSION,
		            .resource = what[k].resource}};
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

/* The lookup threads; err set when one cannot start. */
static int start_pool(struct pk_lookup *l, unsigned n, struct pk_err *err)
{
	if ((l->threads = calloc(n, sizeof(*l->threads))) == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	for (; l->nthreads < n; l->nthreads++) {
		int e = pthread_create(&l->threads[l->nthreads], NULL, lookup_thread, l);
		if (e != 0)
			return pk_err_set(err, PK_ERR_NOMEM, "cannot start a lookup thread: %s",
			                  strerror(e));
	}
	return PK_OK;
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
	pthread_mutex_init(&l->pool_lock, NULL);
	cond_init_monotonic(&l->pool_work);
	l->deadline_ns =
	    (lo->deadline_ms > 0 ? lo->deadline_ms : PK_LOOKUP_DEADLINE_MS) * 1000000LL;
	l->queue_max = lo->queue > 0 ? lo->queue : PK_LOOKUP_QUEUE;
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
	long long sar_ttl_ns =
	    (lo->sar_ttl_ms > 0 ? lo->sar_ttl_ms : PK_LOOKUP_SAR_TTL_MS) * 1000000LL;
	if ((l->kinds = pk_kindmap_new(KINDMAP_MAX, KINDMAP_TTL_NS, KINDMAP_MISS_NS)) == NULL ||
	    (l->sars = pk_sarcache_new(lo->sar_max > 0 ? lo->sar_max : PK_LOOKUP_SAR_MAX,
	                               sar_ttl_ns)) == NULL) {
		rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if ((rc = start_pool(l, lo->threads > 0 ? lo->threads : PK_LOOKUP_THREADS, err)) != PK_OK)
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
	/* The lookup threads: what is queued is answered "stopping", then they end. */
	pthread_mutex_lock(&l->pool_lock);
	l->stopping = true;
	pthread_cond_broadcast(&l->pool_work);
	pthread_mutex_unlock(&l->pool_lock);
	for (unsigned i = 0; i < l->nthreads; i++)
		pthread_join(l->threads[i], NULL);
	free(l->threads);
	pthread_cond_destroy(&l->pool_work);
	pthread_mutex_destroy(&l->pool_lock);
	/* Every stop first, then the waits: they overlap. */
	for (int k = 0; k < PK_CACHE_KINDS; k++)
		pk_kube_informer_stop_begin(l->informers[k]);
	for (int k = 0; k < PK_CACHE_KINDS; k++)
		pk_kube_informer_stop(l->informers[k]);
	/* The items are the informers': free them first, then the cache's index of them. */
	for (int k = 0; k < PK_CACHE_KINDS; k++)
		pk_kube_informer_free(l->informers[k]);
	pk_cache_free(l->cache);
	pk_kindmap_free(l->kinds);
	pk_sarcache_free(l->sars);
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

bool pk_lookup_ready(void *ud)
{
	struct pk_lookup *l = ud;
	if (l == NULL || l->cache == NULL)
		return true;
	if (!pk_cache_ready(l->cache))
		return false;
	if (!atomic_exchange(&l->announced, true))
		pk_log_info(
		    "admission lookups answer from the caches",
		    PK_LOG_UINT(PK_POOL_RESOURCE, pk_cache_count(l->cache, PK_CACHE_IPPOOLS)),
		    PK_LOG_UINT(PK_GLOBAL_POOL_RESOURCE,
		                pk_cache_count(l->cache, PK_CACHE_GLOBALIPPOOLS)),
		    PK_LOG_UINT(PK_ADDRESS_RESOURCE, pk_cache_count(l->cache, PK_CACHE_ADDRESSES)),
		    PK_LOG_UINT(PK_CLAIM_RESOURCE, pk_cache_count(l->cache, PK_CACHE_CLAIMS)));
	return true;
}

bool pk_lookup_wait_ready(struct pk_lookup *l, long timeout_ms)
{
	if (l == NULL || l->cache == NULL)
		return true;
	for (int k = 0; k < PK_CACHE_KINDS; k++) {
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
