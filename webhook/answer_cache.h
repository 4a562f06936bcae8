/*
 * answer_cache.h - the webhook's caches of API answers for the permission lookup
 * (permission.h): which resource an owner kind is and whether it is namespaced (from
 * discovery), and SubjectAccessReview answers. Both are bounded and expire their entries.
 * Pure of I/O; thread-safe.
 */
#ifndef PK_ANSWER_CACHE_H
#define PK_ANSWER_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "pk.h"

/*
 * The cache of discovery answers behind it: (group/version, kind) -> resource and whether
 * it is namespaced (APIResource.namespaced), or "no such kind". At most `max` entries (a new one
 * past that evicts the one closest to expiry); an entry found lives ttl_ns, a kind discovery did
 * not know miss_ttl_ns (so a CRD installed later is found soon). Times are the caller's monotonic
 * nanoseconds. Thread-safe.
 */
struct pk_kindmap;
struct pk_kindmap *pk_kindmap_new(size_t max, long long ttl_ns, long long miss_ttl_ns);
void pk_kindmap_free(struct pk_kindmap *m);
enum pk_kindmap_hit {
	PK_KINDMAP_NONE = 0, /* not cached, or expired: ask discovery */
	PK_KINDMAP_FOUND,    /* resource copied into buf */
	PK_KINDMAP_MISSING,  /* discovery said the group/version has no such kind */
};
/* *namespaced set on PK_KINDMAP_FOUND (true otherwise). */
enum pk_kindmap_hit pk_kindmap_get(struct pk_kindmap *m, const char *group_version,
                                   const char *kind, long long now_ns, char *buf, size_t len,
                                   bool *namespaced);
/* resource NULL: the kind is missing. An error leaves the map as it was. */
PK_MUST_CHECK int pk_kindmap_put(struct pk_kindmap *m, const char *group_version, const char *kind,
                                 const char *resource, bool namespaced, long long now_ns);
size_t pk_kindmap_len(struct pk_kindmap *m);

/*
 * The cache of SubjectAccessReview answers: key (the review's spec as compact JSON with
 * sorted keys: user, uid, groups, extra, and the resource attributes, the namespace among
 * them) -> allowed or not, each kept ttl_ns. At most `max` entries: a new one past that
 * evicts the oldest. A key of 2 KiB or more is not kept (PK_ERR_TOO_BIG). Times are the
 * caller's monotonic nanoseconds. Thread-safe.
 */
struct pk_sarcache;
struct pk_sarcache *pk_sarcache_new(size_t max, long long ttl_ns);
void pk_sarcache_free(struct pk_sarcache *c);
enum pk_sarcache_hit {
	PK_SARCACHE_NONE = 0, /* not cached, or expired */
	PK_SARCACHE_ALLOWED,
	PK_SARCACHE_DENIED,
};
enum pk_sarcache_hit pk_sarcache_get(struct pk_sarcache *c, const char *key, long long now_ns);
PK_MUST_CHECK int pk_sarcache_put(struct pk_sarcache *c, const char *key, bool allowed,
                                  long long now_ns);
size_t pk_sarcache_len(struct pk_sarcache *c);

#endif
