/*
 * expect.h - own-write expectations: the cache has not caught up with the
 * controller's own writes yet.
 *
 * A worker goes on from a write with the object the write returned (the
 * finalizer, then the IPAddress, then Ready, in one pass), so the watch
 * events of those writes reach the cache after the worker is done with the
 * claim, and each queues the claim again. Until the cache holds the
 * versions written, it would show the claim as it was before them, and a
 * pass over it would write again (a conflict at best). So each write
 * records the resourceVersion it produced (as its pk_strmap_hash); a pass
 * waits while one is not seen yet; the informers' events clear them. A
 * record that outlives PK_EXPECT_MS (an event never seen: a relist skipped
 * it) is dropped.
 *
 * Keys are the claim's "<ns>/<name>"; its IPAddress is named like it, so
 * one record holds both halves. Times are monotonic nanoseconds passed in
 * (tests pass their own).
 *
 * Threading: every function may be called from any thread (one mutex).
 */
#ifndef PK_EXPECT_H
#define PK_EXPECT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "pk.h"

#define PK_EXPECT_MS 3000

struct pk_expect;

/* NULL when memory runs out. */
struct pk_expect *pk_expect_new(void);
void pk_expect_free(struct pk_expect *x);

/* pk_strmap_hash of the object's metadata.resourceVersion; 0 when it has none (or NULL). */
uint64_t pk_expect_rv_hash(const json_t *obj);

/* The write of the claim (address false) or its IPAddress (true) gave back rv_hash (0: no
 * record). */
void pk_expect_write(struct pk_expect *x, const char *key, bool address, uint64_t rv_hash,
                     long long now_ns);

/* An informer stored version rv_hash of the claim (or IPAddress) key; 0: it is gone (a claim
 * gone clears both halves). */
void pk_expect_seen(struct pk_expect *x, const char *key, bool address, uint64_t rv_hash);

/*
 * Milliseconds a pass over the claim should wait for the cache to catch up,
 * given the versions the cache holds (claim_present false: no claim in the
 * cache; address_rv 0: no IPAddress); 0: go ahead.
 */
long pk_expect_wait(struct pk_expect *x, const char *key, bool claim_present, uint64_t claim_rv,
                    uint64_t address_rv, long long now_ns);

/* Records held (for tests and metrics). */
size_t pk_expect_len(struct pk_expect *x);

#endif
