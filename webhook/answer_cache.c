/* answer_cache.c - the webhook's caches of API answers: owner kinds and SubjectAccessReviews. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer_cache.h"
#include "strmap.h"

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
