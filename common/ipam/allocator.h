/*
 * allocator.h - one pool's address allocator.
 *
 * The allocator keeps the pool's free addresses as disjoint intervals
 * (fragments) in a balanced search tree, and recently released addresses
 * in a second tree, one node per address, until their reuse grace period
 * ends. An operation costs O(log n) in the nodes of the tree it touches
 * (expected; the trees are treaps with a per-allocator deterministic
 * priority sequence), except that expiring quarantine costs O(log n) per
 * address it frees, adopting an address outside the usable set costs what
 * a range_set insert does, and pk_allocator_each_quarantined visits every
 * quarantined address. Memory is proportional to fragments plus
 * quarantined addresses, not to the pool's size: a /64 with a million
 * addresses handed out from its start is one fragment. Nodes are recycled,
 * never returned to the system before pk_allocator_free, so memory stays at
 * its peak.
 *
 * Time is always a parameter (seconds, any epoch the caller chooses); the
 * allocator never reads a clock. An address is in exactly one state:
 *   free        in the usable set, may be handed out now
 *   quarantined released, not handed out before its not-before time
 *   used        in the usable set and held
 *   out of range held, but outside the usable set (adopted after the pool
 *               shrank); released back to nowhere
 *
 * Not thread-safe: the controller serialises work per pool.
 */
#ifndef PK_ALLOCATOR_H
#define PK_ALLOCATOR_H

#include "range_set.h"

struct pk_allocator;

enum pk_addr_state {
	PK_ADDR_FREE = 1,
	PK_ADDR_QUARANTINED,
	PK_ADDR_USED,
	PK_ADDR_OUT_OF_RANGE, /* held, outside the usable set */
	PK_ADDR_NOT_IN_POOL,  /* not held, outside the usable set */
};

struct pk_alloc_counts {
	struct pk_count total; /* size of the usable set */
	struct pk_count free;  /* free (quarantined excluded, even past due until expired) */
	struct pk_count used;  /* held inside the usable set */
	pk_u128 quarantined;
	pk_u128 out_of_range; /* held outside the usable set */
	size_t fragments;     /* free intervals */
};

/* A new allocator whose free set is `usable` (copied). NULL when memory runs out. */
struct pk_allocator *pk_allocator_new(const struct pk_range_set *usable);
void pk_allocator_free(struct pk_allocator *a);

/*
 * Hands out the lowest free address. Quarantined addresses whose time has
 * come (not_before <= now) become free first. PK_ERR_EXHAUSTED when none.
 */
PK_MUST_CHECK int pk_allocator_next(struct pk_allocator *a, int64_t now, pk_u128 *out);

/*
 * Hands out a requested address: PK_OK, or PK_ERR_IN_USE, PK_ERR_QUARANTINED
 * (still in its grace period at `now`), PK_ERR_OUT_OF_RANGE.
 */
PK_MUST_CHECK int pk_allocator_take(struct pk_allocator *a, pk_u128 addr, int64_t now);

/*
 * Records an address found held by an existing IPAddress when the
 * allocator is rebuilt (after a restart, a leader change or a spec
 * change). It may be free, quarantined (the IPAddress wins) or outside
 * the usable set (counted out of range). PK_ERR_IN_USE when it is already
 * held: two IPAddresses hold the same address.
 */
PK_MUST_CHECK int pk_allocator_adopt(struct pk_allocator *a, pk_u128 addr);

/*
 * Gives a held address back. When not_before > now it is quarantined until
 * not_before, else it is free at once. An out-of-range address is simply
 * forgotten. PK_ERR_NOT_HELD when nobody holds it.
 */
PK_MUST_CHECK int pk_allocator_release(struct pk_allocator *a, pk_u128 addr, int64_t not_before,
                                       int64_t now);

/*
 * Quarantines a free address until not_before (restoring quarantine from
 * a pool's status after a restart). PK_ERR_IN_USE when held,
 * PK_ERR_OUT_OF_RANGE outside the usable set; a quarantined address gets
 * the later of the two times.
 */
PK_MUST_CHECK int pk_allocator_quarantine(struct pk_allocator *a, pk_u128 addr, int64_t not_before);

/*
 * Frees every quarantined address whose not_before <= now. When memory runs
 * out it stops, and the address in hand stays quarantined until now + 1.
 */
void pk_allocator_expire(struct pk_allocator *a, int64_t now);

enum pk_addr_state pk_allocator_state(const struct pk_allocator *a, pk_u128 addr);

void pk_allocator_counts(const struct pk_allocator *a, struct pk_alloc_counts *out);

/*
 * Calls fn for each quarantined address in ascending order until fn returns
 * false (for recording the quarantine in the pool's status, bounded by the
 * caller).
 */
void pk_allocator_each_quarantined(const struct pk_allocator *a,
                                   bool (*fn)(pk_u128 addr, int64_t not_before, void *ctx),
                                   void *ctx);

/* Bytes held by the allocator, for metrics and the benchmark. */
size_t pk_allocator_memory(const struct pk_allocator *a);

#endif
