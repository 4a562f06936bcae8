/*
 * queue.h - the controller's work queue: keys (any text; the controller
 * queues the work keys of work_key.h, "c/<ns>/<name>" for a claim and
 * "p/..." or "g/..." for a pool), each queued at most once, handed to one
 * worker at a time, with delayed retries and per-key exponential backoff
 * (client-go's workqueue semantics, small):
 *   - adding a key that is queued keeps one entry (the earlier time wins,
 *     and the key keeps its place in line);
 *   - adding a key while a worker holds it marks it dirty: it is queued
 *     again when the worker calls pk_queue_done, never handed to a second
 *     worker at the same time;
 *   - pk_queue_retry re-queues after PK_QUEUE_BACKOFF_BASE_MS doubled per
 *     earlier failure (capped at PK_QUEUE_BACKOFF_MAX_MS); a success calls
 *     pk_queue_forget to reset the count.
 * Ready keys come out in the order they were queued (a delayed key keeps
 * its place from when it was queued; a dirty key is queued at
 * pk_queue_done, behind every key queued before). A hash table finds a
 * key; a FIFO holds the keys queued ready, one heap by place in line the
 * delayed keys that came due, another by due time those still delayed.
 * Every call costs O(log n) in the number of keys known (amortised: the
 * heaps grow and shrink by doubling), so 100,000 claims are fine; the one
 * exception is pk_queue_pop given a time earlier than an earlier call's
 * (O(n) for that call).
 *
 * Threading: every function may be called from any thread.
 * Ownership: keys are copied in; pk_queue_get and pk_queue_pop hand out a
 * copy the caller passes to pk_queue_done and then frees.
 */
#ifndef PK_QUEUE_H
#define PK_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

#include "pk.h"

#define PK_QUEUE_BACKOFF_BASE_MS 50
#define PK_QUEUE_BACKOFF_MAX_MS  30000

struct pk_queue;

/* NULL when memory runs out. */
struct pk_queue *pk_queue_new(void);
void pk_queue_free(struct pk_queue *q);

/* Queues key to run at once. PK_ERR_NOMEM when memory runs out. */
PK_MUST_CHECK int pk_queue_add(struct pk_queue *q, const char *key);

/* Queues key to run no sooner than delay_ms from now. */
PK_MUST_CHECK int pk_queue_add_after(struct pk_queue *q, const char *key, long delay_ms);

/* Re-queues key after its backoff (which doubles with each call); returns the delay in ms, or
 * -1 when memory ran out (the key is then not queued again). */
long pk_queue_retry(struct pk_queue *q, const char *key);

/* Resets key's failure count (after it succeeded). */
void pk_queue_forget(struct pk_queue *q, const char *key);

/* The worker is done with key: it is dropped, or queued again if it was added meanwhile. */
void pk_queue_done(struct pk_queue *q, const char *key);

/*
 * The next ready key at time now_ns (monotonic), marked in progress: 1 and
 * *key (the caller frees it). 0 when none is ready; *wait_ns then says how
 * long until the next one (-1: nothing queued). Never blocks. now_ns earlier
 * than an earlier call's is answered right too, at O(n) cost for that call.
 */
int pk_queue_pop(struct pk_queue *q, long long now_ns, char **key, long long *wait_ns);

/*
 * Blocks until a key is ready (1), timeout_ms passes (0), or the queue is
 * shut down (-1).
 */
int pk_queue_get(struct pk_queue *q, long timeout_ms, char **key);

/* Wakes every waiting pk_queue_get with -1; later gets return -1 at once. */
void pk_queue_shutdown(struct pk_queue *q);

/* Keys queued (ready or delayed), not counting those in progress. */
size_t pk_queue_len(struct pk_queue *q);

/* Backoff for a key that failed `failures` times before (pure). */
long pk_queue_backoff_ms(unsigned failures);

#endif
