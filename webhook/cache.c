/* cache.c - the webhook's informer-fed copy of pools, IPAddresses and claims; see cache.h. */
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cache.h"
#include "jpack.h"
#include "json.h"
#include "log.h"
#include "pool_ref.h"
#include "rules.h"
#include "strmap.h"
#include "trim.h"

/*
 * An informer item: the trimmed object, packed. An IPAddress of a
 * poolkeeper pool also carries the pool's key after the packed bytes and
 * sits on that pool's list (prev, next: changed only under the write lock).
 */
struct kept {
	struct kept *prev, *next;
	uint32_t len;      /* packed bytes */
	uint32_t pool_len; /* bytes of the pool key after them; 0: in no pool */
	unsigned char data[];
};
/* pk_trim_pack allocates the header up to data: the whole struct. */
_Static_assert(offsetof(struct kept, data) == sizeof(struct kept), "no padding after the header");

/* The IPAddresses of one pool. */
struct pool_list {
	struct kept *head;
	size_t n;
};

struct feed {
	struct pk_cache *c;
	enum pk_cache_kind kind;
};

struct pk_cache {
	pthread_rwlock_t lock;
	/* key (the informer's "ns/name" or "name") -> struct kept, borrowed from the informer */
	struct pk_strmap *objects[PK_CACHE_KINDS_MAX]; /* not used for IPAddresses */
	struct pk_strmap *by_pool;                     /* pool key -> struct pool_list */
	size_t addresses;
	atomic_bool synced[PK_CACHE_KINDS_MAX];
	atomic_ullong oversized; /* object versions over PK_TRIM_MAX_BYTES */
	struct feed feeds[PK_CACHE_KINDS_MAX];
};

size_t pk_cache_kinds(void)
{
	size_t n;
	(void)pk_pool_kinds(&n);
	return PK_CACHE_POOLS + n;
}

const struct pk_pool_kind *pk_cache_slot_pool_kind(enum pk_cache_kind k)
{
	size_t n;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&n);
	return k >= PK_CACHE_POOLS && (size_t)(k - PK_CACHE_POOLS) < n ? &kinds[k - PK_CACHE_POOLS]
	                                                               : NULL;
}

int pk_cache_pool_slot(const char *kind, enum pk_cache_kind *slot, struct pk_err *err)
{
	size_t n;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&n);
	const struct pk_pool_kind *pk = pk_pool_kind_find(PK_POOL_GROUP, kind);
	*slot =
	    pk != NULL ? (enum pk_cache_kind)(PK_CACHE_POOLS + (pk - kinds)) : PK_CACHE_KINDS_MAX;
	if (pk != NULL)
		return PK_OK;
	char q[300];
	pk_text_quote(kind != NULL ? kind : "", kind != NULL ? strlen(kind) : 0, q, sizeof(q));
	return pk_err_set(err, PK_ERR_INVALID, "\"%s\" is not a pool kind of %s", q, PK_POOL_GROUP);
}

static const char *pool_key(const struct kept *k)
{
	return (const char *)k->data + k->len;
}

/* The key (pk_pool_key) of the poolkeeper pool an IPAddress names, or false when it names
 * none. */
static bool address_pool_key(const json_t *addr, char *buf, size_t len)
{
	struct pk_pool_ref r;
	if (!pk_pool_ref_read(pk_json_path(addr, "spec", "poolRef"),
	                      pk_json_meta_cstr(addr, "namespace"), &r) ||
	    r.pk == NULL)
		return false;
	pk_pool_key(r.kind, r.ns, r.name, buf, len);
	return true;
}

/* An object over the cap is kept as its identity only (trim.h): said for each version of it
 * that arrives, and counted. */
static void report_oversized(struct feed *f, const json_t *obj, size_t bytes)
{
	const struct pk_pool_kind *pk = pk_cache_slot_pool_kind(f->kind);
	const char *kind = pk != NULL                      ? pk->kind
	                   : f->kind == PK_CACHE_ADDRESSES ? PK_ADDRESS_KIND
	                                                   : PK_CLAIM_KIND;
	atomic_fetch_add(&f->c->oversized, 1);
	pk_log_warn("object over the cache's cap: only its name is kept", PK_LOG_STR("kind", kind),
	            PK_LOG_STR("namespace", pk_json_meta_cstr(obj, "namespace")),
	            PK_LOG_STR("name", pk_json_meta_cstr(obj, "name")), PK_LOG_UINT("bytes", bytes),
	            PK_LOG_UINT("cap", PK_TRIM_MAX_BYTES));
}

/* Packs a trimmed object of obj (released here) with the pool key (NULL: none) into a new
 * item. */
static struct kept *keep(struct feed *f, const json_t *obj, json_t *trimmed, const char *pool)
{
	size_t plen = pool != NULL ? strlen(pool) : 0;
	if (plen >= PK_OBJECT_KEY_MAX) {
		json_decref(trimmed);
		return NULL;
	}
	size_t n = 0, over = 0;
	struct kept *k =
	    pk_trim_pack(trimmed, offsetof(struct kept, data), plen > 0 ? plen + 1 : 0, &n, &over);
	if (k == NULL || n > UINT32_MAX) {
		free(k);
		return NULL;
	}
	if (over > 0)
		report_oversized(f, obj, over);
	k->len = (uint32_t)n;
	k->pool_len = (uint32_t)plen;
	if (plen > 0)
		memcpy(k->data + n, pool, plen + 1);
	return k;
}

/* ---- transforms (on the informer's thread, no lock; ud is the kind's struct feed) ---- */

static void *keep_pool(void *ud, const json_t *obj)
{
	return keep(ud, obj, pk_trim_pool(obj), NULL);
}

/* Only the addresses of poolkeeper pools are kept: no lookup asks for the others. */
static void *keep_address(void *ud, const json_t *obj)
{
	char key[PK_OBJECT_KEY_MAX];
	if (!address_pool_key(obj, key, sizeof(key)))
		return NULL;
	return keep(ud, obj, pk_trim_address(obj), key);
}

/* A claim on another provider's pool keeps its identity only (trim.h): the IPAddress check,
 * the only reader, answers "no such claim" alike for it and for no claim at all. */
static void *keep_claim(void *ud, const json_t *obj)
{
	if (pk_pool_kind_of_ref(pk_json_path(obj, "spec", "poolRef")) == NULL)
		return keep(ud, obj, pk_trim_foreign_claim(obj), NULL);
	json_t *t = pk_trim_claim(obj);
	/* The controller keeps the conditions for its status patches; no admission check reads
	 * them, and they are most of a trimmed claim. */
	json_t *status = json_object_get(t, "status");
	json_object_del(status, "conditions");
	if (status != NULL && json_object_size(status) == 0)
		json_object_del(t, "status");
	return keep(ud, obj, t, NULL);
}

/* ---- handlers (on the informer's thread) ---- */

/* Under the write lock. False when memory ran out (the address is then in no list). */
static bool link_address(struct pk_cache *c, struct kept *k)
{
	c->addresses++;
	if (k->pool_len == 0)
		return true;
	const char *key = pool_key(k);
	struct pool_list *l = pk_strmap_get(c->by_pool, key);
	if (l == NULL) {
		l = calloc(1, sizeof(*l));
		if (l == NULL || pk_strmap_put(c->by_pool, key, l, NULL) != PK_OK) {
			free(l);
			k->pool_len = 0; /* so that unlinking it finds no list */
			return false;
		}
	}
	k->prev = NULL;
	k->next = l->head;
	if (l->head != NULL)
		l->head->prev = k;
	l->head = k;
	l->n++;
	return true;
}

/* Under the write lock. */
static void unlink_address(struct pk_cache *c, struct kept *k)
{
	c->addresses--;
	if (k->pool_len == 0)
		return;
	const char *key = pool_key(k);
	struct pool_list *l = pk_strmap_get(c->by_pool, key);
	if (l == NULL)
		return;
	if (k->prev != NULL)
		k->prev->next = k->next;
	else
		l->head = k->next;
	if (k->next != NULL)
		k->next->prev = k->prev;
	k->prev = k->next = NULL;
	if (--l->n == 0)
		free(pk_strmap_remove(c->by_pool, key));
}

/* Under the write lock. */
static void put(struct feed *f, const char *key, struct kept *old, struct kept *item)
{
	struct pk_cache *c = f->c;
	if (f->kind == PK_CACHE_ADDRESSES) {
		if (old != NULL)
			unlink_address(c, old);
		(void)link_address(c, item);
		return;
	}
	/* Out of memory: the object is left out, so a read says it does not exist. Stale is
	 * not an option: the old item is released once this returns. */
	if (pk_strmap_put(c->objects[f->kind], key, item, NULL) != PK_OK && old != NULL)
		(void)pk_strmap_remove(c->objects[f->kind], key);
}

static void on_add(void *ud, const char *key, const void *item)
{
	struct feed *f = ud;
	pthread_rwlock_wrlock(&f->c->lock);
	put(f, key, NULL, (struct kept *)(uintptr_t)item);
	pthread_rwlock_unlock(&f->c->lock);
}

static void on_update(void *ud, const char *key, const void *old, const void *item)
{
	struct feed *f = ud;
	pthread_rwlock_wrlock(&f->c->lock);
	put(f, key, (struct kept *)(uintptr_t)old, (struct kept *)(uintptr_t)item);
	pthread_rwlock_unlock(&f->c->lock);
}

static void on_delete(void *ud, const char *key, const void *item)
{
	struct feed *f = ud;
	struct pk_cache *c = f->c;
	pthread_rwlock_wrlock(&c->lock);
	if (f->kind == PK_CACHE_ADDRESSES)
		unlink_address(c, (struct kept *)(uintptr_t)item);
	else if (pk_strmap_get(c->objects[f->kind], key) == item)
		(void)pk_strmap_remove(c->objects[f->kind], key);
	pthread_rwlock_unlock(&c->lock);
}

static void on_synced(void *ud)
{
	struct feed *f = ud;
	atomic_store(&f->c->synced[f->kind], true);
}

/* ---- set-up ---- */

struct pk_cache *pk_cache_new(void)
{
	struct pk_cache *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	/* An informer's event must not wait behind a steady stream of reviews. */
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&c->lock, &a);
	pthread_rwlockattr_destroy(&a);
	bool ok = (c->by_pool = pk_strmap_new()) != NULL;
	for (size_t k = 0; k < pk_cache_kinds(); k++) {
		c->feeds[k] = (struct feed){.c = c, .kind = (enum pk_cache_kind)k};
		atomic_init(&c->synced[k], false);
		if (k != PK_CACHE_ADDRESSES && (c->objects[k] = pk_strmap_new()) == NULL)
			ok = false;
	}
	if (!ok) {
		pk_cache_free(c);
		return NULL;
	}
	return c;
}

void pk_cache_free(struct pk_cache *c)
{
	if (c == NULL)
		return;
	/* The items are the informers'; only the lists are the cache's. */
	pk_strmap_free(c->by_pool, free);
	for (size_t k = 0; k < pk_cache_kinds(); k++)
		pk_strmap_free(c->objects[k], NULL);
	pthread_rwlock_destroy(&c->lock);
	free(c);
}

void pk_cache_feed(struct pk_cache *c, enum pk_cache_kind k, struct pk_kube_informer_opts *io)
{
	io->transform = k == PK_CACHE_ADDRESSES ? keep_address
	                : k == PK_CACHE_CLAIMS  ? keep_claim
	                                        : keep_pool;
	io->release = NULL; /* free() */
	io->transform_ud = &c->feeds[k];
	io->handlers = (struct pk_kube_informer_handlers){on_add, on_update, on_delete, on_synced,
	                                                  &c->feeds[k]};
}

unsigned long long pk_cache_oversized(struct pk_cache *c)
{
	return atomic_load(&c->oversized);
}

bool pk_cache_synced(struct pk_cache *c, enum pk_cache_kind k)
{
	return atomic_load(&c->synced[k]);
}

bool pk_cache_ready(struct pk_cache *c)
{
	for (size_t k = 0; k < pk_cache_kinds(); k++)
		if (!atomic_load(&c->synced[k]))
			return false;
	return true;
}

size_t pk_cache_count(struct pk_cache *c, enum pk_cache_kind k)
{
	pthread_rwlock_rdlock(&c->lock);
	size_t n = k == PK_CACHE_ADDRESSES ? c->addresses : pk_strmap_len(c->objects[k]);
	pthread_rwlock_unlock(&c->lock);
	return n;
}

/* ---- reads ---- */

static int nomem(struct pk_err *err, const char *what)
{
	return pk_err_set(err, PK_ERR_NOMEM, "out of memory reading the cached %s", what);
}

/* Visits the pools; the array gets those of namespace ns (every one when ns is NULL). */
struct pool_scan {
	const char *ns;
	size_t nslen;
	json_t *items;
	bool nomem;
};

static void scan_pool(void *ud, const char *key, void *value)
{
	struct pool_scan *s = ud;
	const struct kept *k = value;
	if (s->nomem ||
	    (s->ns != NULL && (strncmp(key, s->ns, s->nslen) != 0 || key[s->nslen] != '/')))
		return;
	json_t *o = pk_jpack_decode(k->data, k->len);
	if (o == NULL || json_array_append_new(s->items, o) != 0)
		s->nomem = true;
}

int pk_cache_list_pools(struct pk_cache *c, const char *kind, const char *ns, json_t **items,
                        struct pk_err *err)
{
	enum pk_cache_kind k;
	*items = NULL;
	int rc = pk_cache_pool_slot(kind, &k, err);
	if (rc != PK_OK)
		return rc;
	/* A cluster-scoped kind's pools are keyed by name alone: every one is asked for. */
	struct pool_scan s = {.ns = pk_cache_slot_pool_kind(k)->namespaced ? ns : NULL,
	                      .items = json_array()};
	s.nslen = s.ns != NULL ? strlen(s.ns) : 0;
	if (s.items == NULL)
		return nomem(err, kind);
	pthread_rwlock_rdlock(&c->lock);
	pk_strmap_foreach(c->objects[k], scan_pool, &s);
	pthread_rwlock_unlock(&c->lock);
	if (s.nomem) {
		json_decref(s.items);
		return nomem(err, kind);
	}
	*items = s.items;
	return PK_OK;
}

/* Under the read lock: appends the addresses of one pool list. False when memory ran out. */
static bool append_list(const struct pool_list *l, json_t *items)
{
	for (const struct kept *k = l != NULL ? l->head : NULL; k != NULL; k = k->next) {
		json_t *o = pk_jpack_decode(k->data, k->len);
		if (o == NULL || json_array_append_new(items, o) != 0)
			return false;
	}
	return true;
}

/* A namespaced kind's pool name asked for in every namespace: the lists of
 * "<kind>/<any>/<name>". */
struct name_scan {
	const char *kind, *name;
	size_t kind_len;
	json_t *items;
	bool nomem;
};

static void scan_kind_lists(void *ud, const char *key, void *value)
{
	struct name_scan *s = ud;
	const char *rest = strncmp(key, s->kind, s->kind_len) == 0 && key[s->kind_len] == '/'
	                       ? strchr(key + s->kind_len + 1, '/')
	                       : NULL;
	if (!s->nomem && rest != NULL && strcmp(rest + 1, s->name) == 0)
		s->nomem = !append_list(value, s->items);
}

int pk_cache_list_pool_addresses(struct pk_cache *c, const char *kind, const char *ns,
                                 const char *name, json_t **items, struct pk_err *err)
{
	enum pk_cache_kind k;
	*items = NULL;
	int rc = pk_cache_pool_slot(kind, &k, err);
	if (rc != PK_OK)
		return rc;
	*items = json_array();
	if (*items == NULL)
		return nomem(err, PK_ADDRESS_KIND "es");
	const struct pk_pool_kind *pk = pk_cache_slot_pool_kind(k);
	bool every_ns = ns == NULL && pk->namespaced;
	char key[PK_OBJECT_KEY_MAX];
	if (name == NULL)
		return PK_OK; /* names no pool anything can be in */
	pk_pool_key(pk->kind, pk->namespaced ? ns : NULL, name, key, sizeof(key));
	bool ok;
	pthread_rwlock_rdlock(&c->lock);
	if (every_ns) {
		struct name_scan s = {
		    .kind = pk->kind, .name = name, .kind_len = strlen(pk->kind), .items = *items};
		pk_strmap_foreach(c->by_pool, scan_kind_lists, &s);
		ok = !s.nomem;
	} else {
		ok = append_list(pk_strmap_get(c->by_pool, key), *items);
	}
	pthread_rwlock_unlock(&c->lock);
	if (!ok) {
		json_decref(*items);
		*items = NULL;
		return nomem(err, PK_ADDRESS_KIND "es");
	}
	return PK_OK;
}

/* One object of a keyed kind, or *obj NULL when it is not held. */
static int get_one(struct pk_cache *c, enum pk_cache_kind k, const char *ns, const char *name,
                   const char *what, json_t **obj, struct pk_err *err)
{
	*obj = NULL;
	if (name == NULL)
		return PK_OK;
	char key[PK_OBJECT_KEY_MAX];
	int n =
	    snprintf(key, sizeof(key), "%s%s%s", ns != NULL ? ns : "", ns != NULL ? "/" : "", name);
	if (n < 0 || (size_t)n >= sizeof(key))
		return PK_OK; /* longer than any name the API server accepts */
	bool held;
	pthread_rwlock_rdlock(&c->lock);
	const struct kept *kp = pk_strmap_get(c->objects[k], key);
	held = kp != NULL;
	if (held)
		*obj = pk_jpack_decode(kp->data, kp->len);
	pthread_rwlock_unlock(&c->lock);
	if (held && *obj == NULL)
		return nomem(err, what);
	return PK_OK;
}

int pk_cache_get_pool(struct pk_cache *c, const char *kind, const char *ns, const char *name,
                      json_t **obj, struct pk_err *err)
{
	enum pk_cache_kind k;
	*obj = NULL;
	int rc = pk_cache_pool_slot(kind, &k, err);
	if (rc != PK_OK)
		return rc;
	return get_one(c, k, pk_cache_slot_pool_kind(k)->namespaced ? ns : NULL, name, kind, obj,
	               err);
}

int pk_cache_get_claim(struct pk_cache *c, const char *ns, const char *name, json_t **obj,
                       struct pk_err *err)
{
	return get_one(c, PK_CACHE_CLAIMS, ns, name, PK_CLAIM_KIND, obj, err);
}
