/* queue.c - the controller's work queue; see queue.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "queue.h"

enum entry_state {
	E_IDLE,         /* known only for its failure count */
	E_QUEUED,       /* waiting until not_before */
	E_ACTIVE,       /* a worker holds it */
	E_ACTIVE_DIRTY, /* held, and added again meanwhile */
};

struct entry {
	struct entry *next;
	char *key;
	enum entry_state state;
	long long not_before; /* monotonic ns; for E_QUEUED and E_ACTIVE_DIRTY */
	unsigned long long seq;
	unsigned failures;
};

struct pk_queue {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct entry *head;
	unsigned long long seq;
	bool shut;
};

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct pk_queue *pk_queue_new(void)
{
	struct pk_queue *q = calloc(1, sizeof(*q));
	if (q == NULL)
		return NULL;
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
	struct entry *e = q->head;
	while (e != NULL) {
		struct entry *n = e->next;
		free(e->key);
		free(e);
		e = n;
	}
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

static struct entry *find(struct pk_queue *q, const char *key, struct entry ***link)
{
	struct entry **l = &q->head;
	for (; *l != NULL; l = &(*l)->next) {
		if (strcmp((*l)->key, key) == 0) {
			if (link != NULL)
				*link = l;
			return *l;
		}
	}
	return NULL;
}

static struct entry *find_or_make(struct pk_queue *q, const char *key)
{
	struct entry *e = find(q, key, NULL);
	if (e != NULL)
		return e;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	e->key = strdup(key);
	if (e->key == NULL) {
		free(e);
		return NULL;
	}
	e->state = E_IDLE;
	e->next = q->head;
	q->head = e;
	return e;
}

/* Under the lock: queue e to run at `at`. */
static void schedule(struct pk_queue *q, struct entry *e, long long at)
{
	switch (e->state) {
	case E_IDLE:
		e->state = E_QUEUED;
		e->not_before = at;
		e->seq = ++q->seq;
		break;
	case E_QUEUED:
		if (at < e->not_before)
			e->not_before = at;
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

int pk_queue_add_after(struct pk_queue *q, const char *key, long delay_ms)
{
	return add_at(q, key, now_ns() + (long long)delay_ms * 1000000LL);
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
	schedule(q, e, now_ns() + (long long)d * 1000000LL);
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	return d;
}

/* Under the lock: drop an idle entry with nothing to remember. */
static void maybe_drop(struct pk_queue *q, struct entry *e)
{
	struct entry **link = NULL;
	if (e->state != E_IDLE || e->failures != 0)
		return;
	if (find(q, e->key, &link) == e) {
		*link = e->next;
		free(e->key);
		free(e);
	}
}

void pk_queue_forget(struct pk_queue *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	struct entry *e = find(q, key, NULL);
	if (e != NULL) {
		e->failures = 0;
		maybe_drop(q, e);
	}
	pthread_mutex_unlock(&q->mu);
}

void pk_queue_done(struct pk_queue *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	struct entry *e = find(q, key, NULL);
	if (e != NULL) {
		if (e->state == E_ACTIVE_DIRTY) {
			e->state = E_QUEUED;
			e->seq = ++q->seq;
			pthread_cond_broadcast(&q->cv);
		} else if (e->state == E_ACTIVE) {
			e->state = E_IDLE;
			maybe_drop(q, e);
		}
	}
	pthread_mutex_unlock(&q->mu);
}

/* Under the lock. */
static int pop_locked(struct pk_queue *q, long long now, char **key, long long *wait_ns)
{
	struct entry *best = NULL;
	long long soonest = -1;
	for (struct entry *e = q->head; e != NULL; e = e->next) {
		if (e->state != E_QUEUED)
			continue;
		if (e->not_before <= now) {
			if (best == NULL || e->seq < best->seq)
				best = e;
		} else if (soonest < 0 || e->not_before - now < soonest) {
			soonest = e->not_before - now;
		}
	}
	if (best == NULL) {
		if (wait_ns != NULL)
			*wait_ns = soonest;
		return 0;
	}
	char *copy = strdup(best->key);
	if (copy == NULL) {
		if (wait_ns != NULL)
			*wait_ns = 1000000LL;
		return 0;
	}
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
	long long deadline = now_ns() + (long long)timeout_ms * 1000000LL;
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
	size_t n = 0;
	pthread_mutex_lock(&q->mu);
	for (struct entry *e = q->head; e != NULL; e = e->next)
		if (e->state == E_QUEUED)
			n++;
	pthread_mutex_unlock(&q->mu);
	return n;
}
