/*
 * strmap.h - a map from NUL-terminated strings to pointers: chained
 * buckets, FNV-1a hashes, doubling when the load passes one and halving
 * when it falls below 1/8 (so a burst of keys, once removed, gives its
 * memory back), so that get, put and remove are O(1) on average at any
 * size. Keys are copied in; values are the caller's (pk_strmap_free can
 * release them).
 *
 * Threading: none; callers lock. Iteration order is unspecified, and the
 * map must not change during pk_strmap_foreach.
 */
#ifndef PK_STRMAP_H
#define PK_STRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "pk.h"

struct pk_strmap;

/* NULL when memory runs out. */
struct pk_strmap *pk_strmap_new(void);

/* Calls free_value (when not NULL) on every value, then releases the map. NULL is fine. */
void pk_strmap_free(struct pk_strmap *m, void (*free_value)(void *value));

/* The value stored under key, or NULL. */
void *pk_strmap_get(const struct pk_strmap *m, const char *key);

/*
 * Stores value under key. When key was there, its old value is replaced
 * and handed back in *old (when old is not NULL); else *old is NULL.
 * PK_ERR_NOMEM (map unchanged) when memory runs out.
 */
PK_MUST_CHECK int pk_strmap_put(struct pk_strmap *m, const char *key, void *value, void **old);

/* Removes key; returns its value, or NULL when it was not there. */
void *pk_strmap_remove(struct pk_strmap *m, const char *key);

/*
 * get, put and remove for a caller that has the key's hash already: h must
 * be pk_strmap_hash(key). A key looked up, added and later removed is then
 * hashed once.
 */
void *pk_strmap_get_hashed(const struct pk_strmap *m, const char *key, uint64_t h);
PK_MUST_CHECK int pk_strmap_put_hashed(struct pk_strmap *m, const char *key, uint64_t h,
                                       void *value, void **old);
void *pk_strmap_remove_hashed(struct pk_strmap *m, const char *key, uint64_t h);

size_t pk_strmap_len(const struct pk_strmap *m);

typedef void pk_strmap_visit_fn(void *ud, const char *key, void *value);
void pk_strmap_foreach(const struct pk_strmap *m, pk_strmap_visit_fn *fn, void *ud);

/* 64-bit FNV-1a of s. */
uint64_t pk_strmap_hash(const char *s);

#endif
