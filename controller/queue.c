/*
 * queue.c - the controller's work queue; see queue.h.
 *
 * Every key the queue knows has one entry, found through a pk_strmap
 * (common/base/strmap.h) from key to entry. A queued entry waits in one of
 * three places:
 *   fifo      due at or before `horizon`, in queueing order (seq): a key
 *             queued now has the highest seq so far, so it goes last;
 *   promoted  due at or before `horizon` but queued before some of the
 *             fifo (a delayed key that came due, or one re-added with an
 *             earlier time): a heap by seq;
 *   delayed   due after `horizon`: a heap by due time, whose root says
 *             how long until the next one.
 * pk_queue_pop moves the horizon to its `now`, first promoting the delayed
 * entries that came due; the next key is then the lower seq of the fifo's
 * head and the promoted heap's root, so ready keys leave in the order they
 * were queued. Lookups and fifo moves are O(1) on average, heap moves
 * O(log n). A `now` before the horizon (callers of pk_queue_pop pass their
 * own) sends what is not due by it back to the delayed heap, in O(n); the
 * monotonic clock of pk_queue_get never does.
 *
 * Each entry is in at most one heap, and both heaps keep room for every
 * entry in the map (reserved when an entry is made), so moving an entry
 * never allocates and pk_queue_done and pk_queue_pop cannot fail for want
 * of memory (but for the key pk_queue_pop copies out).
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "queue.h"
#include "strmap.h"

/* The heaps' smallest size; they shrink back towards it. */
#define HEAP_MIN 32
/* Delays beyond this many ms (about 70 years) are cut to it, so due times cannot overflow. */
#define DELAY_MAX_MS (LLONG_MAX / 4 / 1000000LL)

enum entry_state {
	E_IDLE,         /* known only for its failure count */
	E_QUEUED,       /* waiting until not_before */
	E_ACTIVE,       /* a worker holds it */
	E_ACTIVE_DIRTY, /* held, and added again meanwhile */
};

enum entry_place {
	P_NONE,
	P_FIFO,
	P_PROMOTED,
	P_DELAYED,
};

struct entry {
	struct entry *next;   /* in the fifo */
	long long not_before; /* monotonic ns; for E_QUEUED and E_ACTIVE_DIRTY */
	long long seq;        /* place in line: lower was queued first */
	size_t pos;           /* index in its heap */
	uint64_t hash;        /* pk_strmap_hash(key), to remove it without hashing again */
	enum entry_state state;
	enum entry_place place;
	unsigned failures;
	char key[];
};

/* A heap item keeps its sort key beside it, so sifting reads only the heap. */
struct item {
	long long k; /* seq (promoted) or not_before (delayed) */
	struct entry *e;
};

struct heap {
	struct item *v;
	size_t len, cap;
};

struct pk_queue {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pk_strmap *index; /* key -> struct entry */
	struct entry *fifo_head, *fifo_tail;
	size_t fifo_len;
	struct heap promoted, delayed;
	long long horizon; /* queued entries due by it are in the fifo or promoted */
	long long seq;
	bool shut;
};

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- the heaps ---- */

static bool before(const struct item *a, const struct item *b)
{
	if (a->k != b->k)
		return a->k < b->k;
	return a->e->seq < b->e->seq; /* equal due times: first queued first */
}

static void heap_place(struct heap *h, size_t i, struct item it)
{
	h->v[i] = it;
	it.e->pos = i;
}

static void sift_up(struct heap *h, size_t i)
{
	struct item it = h->v[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!before(&it, &h->v[parent]))
			break;
		heap_place(h, i, h->v[parent]);
		i = parent;
	}
	heap_place(h, i, it);
}

static void sift_down(struct heap *h, size_t i)
{
	struct item it = h->v[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->len)
			break;
		if (c + 1 < h->len && before(&h->v[c + 1], &h->v[c]))
			c++;
		if (!before(&h->v[c], &it))
			break;
		heap_place(h, i, h->v[c]);
		i = c;
	}
	heap_place(h, i, it);
}

/* Never allocates: room was reserved (heap_reserve) when e was made. */
static void heap_push(struct heap *h, struct entry *e, long long k, enum entry_place place)
{
	e->place = place;
	heap_place(h, h->len++, (struct item){k, e});
	sift_up(h, e->pos);
}

static void heap_remove(struct heap *h, struct entry *e)
{
	size_t i = e->pos;
	struct item last = h->v[--h->len];
	e->place = P_NONE;
	if (last.e == e)
		return;
	heap_place(h, i, last);
	if (i > 0 && before(&last, &h->v[(i - 1) / 2]))
		sift_up(h, i);
	else
		sift_down(h, i);
}

static void heapify(struct heap *h)
{
	for (size_t i = h->len / 2; i-- > 0;)
		sift_down(h, i);
}

static int heap_reserve(struct heap *h, size_t n)
{
	/* At least HEAP_MIN, then doubling (amortised O(1)): what heap_trim shrinks back to. */
	return pk_array_reserve(&h->v, &h->cap, n < HEAP_MIN ? HEAP_MIN : n, sizeof(*h->v));
}

/* Gives memory back once the heap has far more room than the map has entries. */
static void heap_trim(struct heap *h, size_t entries)
{
	if (h->cap <= HEAP_MIN || entries * 8 >= h->cap)
		return;
	size_t cap = entries * 2 < HEAP_MIN ? HEAP_MIN : entries * 2;
	struct item *v = realloc(h->v, cap * sizeof(*v));
	if (v == NULL)
		return;
	h->v = v;
	h->cap = cap;
}

/* ---- the fifo ---- */

static void fifo_append(struct pk_queue *q, struct entry *e)
{
	e->place = P_FIFO;
	e->next = NULL;
	if (q->fifo_tail != NULL)
		q->fifo_tail->next = e;
	else
		q->fifo_head = e;
	q->fifo_tail = e;
	q->fifo_len++;
}

static struct entry *fifo_shift(struct pk_queue *q)
{
	struct entry *e = q->fifo_head;
	q->fifo_head = e->next;
	if (q->fifo_head == NULL)
		q->fifo_tail = NULL;
	q->fifo_len--;
	e->next = NULL;
	e->place = P_NONE;
	return e;
}

/* ---- the queue ---- */

struct pk_queue *pk_queue_new(void)
{
	struct pk_queue *q = calloc(1, sizeof(*q));
	if (q == NULL)
		return NULL;
	q->index = pk_strmap_new();
	if (q->index == NULL) {
		free(q);
		return NULL;
	}
	pthread_mutex_init(&q->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cv, &ca);
	pthread_condattr_destroy(&ca);
	return q;
}

void pk_queue_free(struct pk_queue *q)
{
	if (q == NULL)
		return;
	pk_strmap_free(q->index, free);
	free(q->promoted.v);
	free(q->delayed.v);
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

/* Under the lock: key's entry, or NULL. */
static struct entry *find(const struct pk_queue *q, const char *key)
{
	return pk_strmap_get(q->index, key);
}

/* Under the lock: key's entry, made idle when new. NULL when memory runs out. */
static struct entry *find_or_make(struct pk_queue *q, const char *key)
{
	uint64_t h = pk_strmap_hash(key);
	struct entry *e = pk_strmap_get_hashed(q->index, key, h);
	if (e != NULL)
		return e;
	/* Room in both heaps for every entry. */
	size_t count = pk_strmap_len(q->index);
	if (heap_reserve(&q->promoted, count + 1) != PK_OK ||
	    heap_reserve(&q->delayed, count + 1) != PK_OK)
		return NULL;
	size_t len = strlen(key) + 1;
	e = calloc(1, sizeof(*e) + len);
	if (e == NULL)
		return NULL;
	memcpy(e->key, key, len);
	e->hash = h;
	e->state = E_IDLE;
	e->place = P_NONE;
	if (pk_strmap_put_hashed(q->index, key, h, e, NULL) != PK_OK) {
		free(e);
		return NULL;
	}
	return e;
}

/* Under the lock: forget an idle entry with nothing to remember. */
static void maybe_drop(struct pk_queue *q, struct entry *e)
{
	if (e->state != E_IDLE || e->failures != 0)
		return;
	(void)pk_strmap_remove_hashed(q->index, e->key, e->hash);
	free(e);
	size_t count = pk_strmap_len(q->index);
	heap_trim(&q->promoted, count);
	heap_trim(&q->delayed, count);
}

/* Under the lock: e was just queued (the highest seq so far). */
static void enqueue(struct pk_queue *q, struct entry *e)
{
	if (e->not_before <= q->horizon)
		fifo_append(q, e);
	else
		heap_push(&q->delayed, e, e->not_before, P_DELAYED);
}

/* Under the lock: queue e to run at `at`. */
static void schedule(struct pk_queue *q, struct entry *e, long long at)
{
	switch (e->state) {
	case E_IDLE:
		e->state = E_QUEUED;
		e->not_before = at;
		e->seq = ++q->seq;
		enqueue(q, e);
		break;
	case E_QUEUED:
		/* The earlier time wins; the place in line (seq) stays. */
		if (at >= e->not_before)
			break;
		e->not_before = at;
		if (e->place != P_DELAYED)
			break;
		if (at <= q->horizon) {
			heap_remove(&q->delayed, e);
			heap_push(&q->promoted, e, e->seq, P_PROMOTED);
		} else {
			q->delayed.v[e->pos].k = at;
			sift_up(&q->delayed, e->pos);
		}
		break;
	case E_ACTIVE:
		e->state = E_ACTIVE_DIRTY;
		e->not_before = at;
		break;
	case E_ACTIVE_DIRTY:
		if (at < e->not_before)
			e->not_before = at;
		break;
	}
}

static int add_at(struct pk_queue *q, const char *key, long long at)
{
	pthread_mutex_lock(&q->mu);
	struct entry *e = find_or_make(q, key);
	if (e == NULL) {
		pthread_mutex_unlock(&q->mu);
		return PK_ERR_NOMEM;
	}
	schedule(q, e, at);
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	return PK_OK;
}

int pk_queue_add(struct pk_queue *q, const char *key)
{
	return add_at(q, key, 0);
}

static long long due_in(long delay_ms)
{
	long long d = delay_ms < DELAY_MAX_MS ? delay_ms : DELAY_MAX_MS;
	if (d < -DELAY_MAX_MS)
		d = -DELAY_MAX_MS;
	return now_ns() + d * 1000000LL;
}

int pk_queue_add_after(struct pk_queue *q, const char *key, long delay_ms)
{
	return add_at(q, key, due_in(delay_ms));
}

long pk_queue_backoff_ms(unsigned failures)
{
	long d = PK_QUEUE_BACKOFF_BASE_MS;
	for (unsigned i = 0; i < failures && d < PK_QUEUE_BACKOFF_MAX_MS; i++)
		d *= 2;
	return d < PK_QUEUE_BACKOFF_MAX_MS ? d : PK_QUEUE_BACKOFF_MAX_MS;
}

long pk_queue_retry(struct pk_queue *q, const char *key)
{
	long d;
	pthread_mutex_lock(&q->mu);
	struct entry *e = find_or_make(q, key);
	if (e == NULL) {
		pthread_mutex_unlock(&q->mu);
		return -1;
	}
	d = pk_queue_backoff_ms(e->failures);
	if (e->failures < 64)
		e->failures++;
	schedule(q, e, due_in(d));
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	return d;
}

void pk_queue_forget(struct pk_queue *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	struct entry *e = find(q, key);
	if (e != NULL) {
		e->failures = 0;
		maybe_drop(q, e);
	}
	pthread_mutex_unlock(&q->mu);
}

void pk_queue_done(struct pk_queue *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	struct entry *e = find(q, key);
	if (e != NULL) {
		if (e->state == E_ACTIVE_DIRTY) {
			/* Queued again now: behind every key queued before this call. */
			e->state = E_QUEUED;
			e->seq = ++q->seq;
			enqueue(q, e);
			pthread_cond_broadcast(&q->cv);
		} else if (e->state == E_ACTIVE) {
			e->state = E_IDLE;
			maybe_drop(q, e);
		}
	}
	pthread_mutex_unlock(&q->mu);
}

/* Under the lock, when the clock went back (a caller's own now): what is not due waits again. */
static void rewind_to(struct pk_queue *q, long long now)
{
	struct entry *e = q->fifo_head;
	q->fifo_head = q->fifo_tail = NULL;
	q->fifo_len = 0;
	while (e != NULL) {
		struct entry *next = e->next;
		if (e->not_before <= now)
			fifo_append(q, e);
		else
			heap_push(&q->delayed, e, e->not_before, P_DELAYED);
		e = next;
	}
	struct heap *p = &q->promoted;
	size_t n = p->len;
	p->len = 0;
	for (size_t i = 0; i < n; i++) {
		struct item it = p->v[i];
		if (it.e->not_before <= now)
			heap_place(p, p->len++, it);
		else
			heap_push(&q->delayed, it.e, it.e->not_before, P_DELAYED);
	}
	heapify(p);
}

/* Under the lock: the next ready entry at now (left where it is), or NULL. */
static struct entry *next_ready(struct pk_queue *q, long long now)
{
	if (now < q->horizon)
		rewind_to(q, now);
	q->horizon = now;
	while (q->delayed.len > 0 && q->delayed.v[0].k <= now) {
		struct entry *e = q->delayed.v[0].e;
		heap_remove(&q->delayed, e);
		heap_push(&q->promoted, e, e->seq, P_PROMOTED);
	}
	struct entry *f = q->fifo_head;
	struct entry *p = q->promoted.len > 0 ? q->promoted.v[0].e : NULL;
	if (f == NULL)
		return p;
	return p != NULL && p->seq < f->seq ? p : f;
}

/* Under the lock. */
static int pop_locked(struct pk_queue *q, long long now, char **key, long long *wait_ns)
{
	struct entry *best = next_ready(q, now);
	if (best == NULL) {
		if (wait_ns != NULL)
			*wait_ns = q->delayed.len > 0 ? q->delayed.v[0].k - now : -1;
		return 0;
	}
	char *copy = strdup(best->key);
	if (copy == NULL) {
		if (wait_ns != NULL)
			*wait_ns = 1000000LL;
		return 0;
	}
	if (best->place == P_FIFO)
		(void)fifo_shift(q);
	else
		heap_remove(&q->promoted, best);
	best->state = E_ACTIVE;
	*key = copy;
	return 1;
}

int pk_queue_pop(struct pk_queue *q, long long now, char **key, long long *wait_ns)
{
	pthread_mutex_lock(&q->mu);
	int rc = pop_locked(q, now, key, wait_ns);
	pthread_mutex_unlock(&q->mu);
	return rc;
}

int pk_queue_get(struct pk_queue *q, long timeout_ms, char **key)
{
	long long deadline = due_in(timeout_ms);
	int rc = 0;
	pthread_mutex_lock(&q->mu);
	for (;;) {
		if (q->shut) {
			rc = -1;
			break;
		}
		long long now = now_ns(), wait = -1;
		if (pop_locked(q, now, key, &wait) == 1) {
			rc = 1;
			break;
		}
		if (now >= deadline)
			break;
		long long until = deadline;
		if (wait >= 0 && now + wait < until)
			until = now + wait;
		struct timespec ts = {.tv_sec = (time_t)(until / 1000000000LL),
		                      .tv_nsec = (long)(until % 1000000000LL)};
		int w = pthread_cond_timedwait(&q->cv, &q->mu, &ts);
		(void)w;
	}
	pthread_mutex_unlock(&q->mu);
	return rc;
}

void pk_queue_shutdown(struct pk_queue *q)
{
	pthread_mutex_lock(&q->mu);
	q->shut = true;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

size_t pk_queue_len(struct pk_queue *q)
{
	pthread_mutex_lock(&q->mu);
	size_t n = q->fifo_len + q->promoted.len + q->delayed.len;
	pthread_mutex_unlock(&q->mu);
	return n;
}
