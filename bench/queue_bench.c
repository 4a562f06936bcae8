/*
 * queue_bench.c - the controller's work queue against the linear queue it
 * replaced, side by side in one process.
 *
 * At 1,000, 10,000 and 100,000 keys:
 *   steady     the queue holds n ready keys; each step pops the first,
 *              marks it done and adds it again (a resync going round):
 *              ns per add + pop + done, for both queues, and the ratio;
 *   +delayed   the same with n more keys delayed an hour (retries and
 *              pool syncs waiting): they must cost nothing per pop;
 *   fill       from empty: n adds, then n pops and dones (ns per key).
 * The baseline is the queue as it was before (one list, every lookup and
 * pop a scan), kept here as it was but for names (and running out of
 * memory ends the program). Its fill is quadratic, so it is filled
 * directly (the state n adds would leave) and timed for a sample of
 * steps only, the same steps for both queues. Each figure is the best of
 * three runs, as the machine may be shared.
 *
 * Usage: pk_queue_bench [steps] (default 1000)
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "queue.h"

#define REPS 3

static long long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- the baseline: the linear queue as it was ---- */

enum base_state { B_IDLE, B_QUEUED, B_ACTIVE, B_ACTIVE_DIRTY };

struct base_entry {
	struct base_entry *next;
	char *key;
	enum base_state state;
	long long not_before;
	unsigned long long seq;
	unsigned failures;
};

struct base_queue {
	pthread_mutex_t mu;
	struct base_entry *head;
	unsigned long long seq;
};

static struct base_entry *base_find(struct base_queue *q, const char *key,
                                    struct base_entry ***link)
{
	struct base_entry **l = &q->head;
	for (; *l != NULL; l = &(*l)->next) {
		if (strcmp((*l)->key, key) == 0) {
			if (link != NULL)
				*link = l;
			return *l;
		}
	}
	return NULL;
}

static struct base_entry *base_make(struct base_queue *q, const char *key)
{
	struct base_entry *e = calloc(1, sizeof(*e));
	if (e == NULL || (e->key = strdup(key)) == NULL) {
		fprintf(stderr, "out of memory\n");
		exit(3);
	}
	e->state = B_IDLE;
	e->next = q->head;
	q->head = e;
	return e;
}

static void base_schedule(struct base_queue *q, struct base_entry *e, long long at)
{
	switch (e->state) {
	case B_IDLE:
		e->state = B_QUEUED;
		e->not_before = at;
		e->seq = ++q->seq;
		break;
	case B_QUEUED:
	case B_ACTIVE_DIRTY:
		if (at < e->not_before)
			e->not_before = at;
		break;
	case B_ACTIVE:
		e->state = B_ACTIVE_DIRTY;
		e->not_before = at;
		break;
	}
}

static void base_add_at(struct base_queue *q, const char *key, long long at)
{
	pthread_mutex_lock(&q->mu);
	struct base_entry *e = base_find(q, key, NULL);
	if (e == NULL)
		e = base_make(q, key);
	base_schedule(q, e, at);
	pthread_mutex_unlock(&q->mu);
}

/* The state `n` calls of base_add_at would leave, without their n^2 / 2 compares. */
static void base_fill(struct base_queue *q, char **keys, size_t n, long long at)
{
	for (size_t i = 0; i < n; i++)
		base_schedule(q, base_make(q, keys[i]), at);
}

static void base_done(struct base_queue *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	struct base_entry *e = base_find(q, key, NULL);
	if (e != NULL) {
		if (e->state == B_ACTIVE_DIRTY) {
			e->state = B_QUEUED;
			e->seq = ++q->seq;
		} else if (e->state == B_ACTIVE) {
			e->state = B_IDLE;
			struct base_entry **link = NULL;
			if (e->failures == 0 && base_find(q, e->key, &link) == e) {
				*link = e->next;
				free(e->key);
				free(e);
			}
		}
	}
	pthread_mutex_unlock(&q->mu);
}

static int base_pop(struct base_queue *q, long long now, char **key, long long *wait_ns)
{
	pthread_mutex_lock(&q->mu);
	struct base_entry *best = NULL;
	long long soonest = -1;
	for (struct base_entry *e = q->head; e != NULL; e = e->next) {
		if (e->state != B_QUEUED)
			continue;
		if (e->not_before <= now) {
			if (best == NULL || e->seq < best->seq)
				best = e;
		} else if (soonest < 0 || e->not_before - now < soonest) {
			soonest = e->not_before - now;
		}
	}
	int rc = 0;
	if (best == NULL) {
		*wait_ns = soonest;
	} else if ((*key = strdup(best->key)) != NULL) {
		best->state = B_ACTIVE;
		rc = 1;
	}
	pthread_mutex_unlock(&q->mu);
	return rc;
}

static void base_free(struct base_queue *q)
{
	while (q->head != NULL) {
		struct base_entry *e = q->head;
		q->head = e->next;
		free(e->key);
		free(e);
	}
	pthread_mutex_destroy(&q->mu);
}

/* ---- the runs ---- */

static char **make_keys(size_t n, const char *prefix)
{
	char **keys = calloc(n, sizeof(*keys));
	char buf[96];
	for (size_t i = 0; keys != NULL && i < n; i++) {
		snprintf(buf, sizeof(buf), "%s/team-%zu/machine-%zu-ip-0", prefix, i % 50, i);
		if ((keys[i] = strdup(buf)) == NULL)
			keys = NULL;
	}
	if (keys == NULL) {
		fprintf(stderr, "out of memory\n");
		exit(3);
	}
	return keys;
}

static void free_keys(char **keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

static void must(int rc)
{
	if (rc != PK_OK) {
		fprintf(stderr, "queue: out of memory\n");
		exit(3);
	}
}

/* One step: pop the first key, done, add it back. Returns a checksum of what came out. */
static size_t new_steps(struct pk_queue *q, long long now, size_t steps)
{
	size_t sum = 0;
	for (size_t i = 0; i < steps; i++) {
		char *k = NULL;
		long long wait = 0;
		if (pk_queue_pop(q, now, &k, &wait) != 1) {
			fprintf(stderr, "queue: nothing ready\n");
			exit(4);
		}
		sum += (unsigned char)k[strlen(k) - 6];
		pk_queue_done(q, k);
		must(pk_queue_add(q, k));
		free(k);
	}
	return sum;
}

static size_t base_steps(struct base_queue *q, long long now, size_t steps)
{
	size_t sum = 0;
	for (size_t i = 0; i < steps; i++) {
		char *k = NULL;
		long long wait = 0;
		if (base_pop(q, now, &k, &wait) != 1) {
			fprintf(stderr, "baseline: nothing ready\n");
			exit(4);
		}
		sum += (unsigned char)k[strlen(k) - 6];
		base_done(q, k);
		base_add_at(q, k, 0);
		free(k);
	}
	return sum;
}

/* ns per step with n ready keys (and n delayed ones when `delayed`). */
static double new_steady(char **keys, char **later, size_t n, bool delayed, size_t steps,
                         size_t *sum)
{
	struct pk_queue *q = pk_queue_new();
	if (q == NULL)
		exit(3);
	for (size_t i = 0; i < n; i++) {
		must(pk_queue_add(q, keys[i]));
		if (delayed)
			must(pk_queue_add_after(q, later[i], 3600 * 1000L));
	}
	long long now = mono_ns();
	long long t0 = mono_ns();
	*sum += new_steps(q, now, steps);
	double ns = (double)(mono_ns() - t0) / (double)steps;
	pk_queue_free(q);
	return ns;
}

static double base_steady(char **keys, char **later, size_t n, bool delayed, size_t steps,
                          size_t *sum)
{
	struct base_queue q = {.head = NULL, .seq = 0};
	pthread_mutex_init(&q.mu, NULL);
	long long now = mono_ns();
	/* base_fill prepends: the first key queued ends up last in the list, as with adds */
	base_fill(&q, keys, n, 0);
	if (delayed)
		base_fill(&q, later, n, now + 3600 * 1000000000LL);
	long long t0 = mono_ns();
	*sum += base_steps(&q, now, steps);
	double ns = (double)(mono_ns() - t0) / (double)steps;
	base_free(&q);
	return ns;
}

/* ns per key for n adds then n pops and dones, from an empty queue. */
static double new_fill(char **keys, size_t n)
{
	struct pk_queue *q = pk_queue_new();
	if (q == NULL)
		exit(3);
	long long t0 = mono_ns();
	for (size_t i = 0; i < n; i++)
		must(pk_queue_add(q, keys[i]));
	long long now = mono_ns();
	for (size_t i = 0; i < n; i++) {
		char *k = NULL;
		long long wait = 0;
		if (pk_queue_pop(q, now, &k, &wait) != 1 || strcmp(k, keys[i]) != 0) {
			fprintf(stderr, "queue: wrong order\n");
			exit(4);
		}
		pk_queue_done(q, k);
		free(k);
	}
	double ns = (double)(mono_ns() - t0) / (double)n;
	pk_queue_free(q);
	return ns;
}

/* The fastest of the runs so far (0: none yet): the least disturbed by other work. */
static double best(double so_far, double run)
{
	return so_far == 0 || run < so_far ? run : so_far;
}

int main(int argc, char **argv)
{
	size_t base_max = 1000;
	if (argc > 1) {
		char *end = NULL;
		unsigned long v = strtoul(argv[1], &end, 10);
		if (end == argv[1] || *end != '\0' || v == 0 || v > 1000000) {
			fprintf(stderr, "usage: %s [steps 1..1000000]\n", argv[0]);
			return 2;
		}
		base_max = v;
	}
	const size_t sizes[] = {1000, 10000, 100000};
	size_t sum_new = 0, sum_base = 0;
	printf("%8s  %-9s %12s %12s %8s\n", "keys", "run", "queue ns", "linear ns", "ratio");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		char **keys = make_keys(n, "c");
		char **later = make_keys(n, "p");
		/* the same steps for both: the baseline's sample, the new queue's full round too */
		size_t steps = n < base_max ? n : base_max;
		for (int delayed = 0; delayed <= 1; delayed++) {
			double nq = 0, bq = 0, full = 0;
			for (int r = 0; r < REPS; r++) {
				size_t a = 0, b = 0;
				nq = best(nq, new_steady(keys, later, n, delayed, steps, &a));
				bq = best(bq, base_steady(keys, later, n, delayed, steps, &b));
				full = best(full, new_steady(keys, later, n, delayed, n, &sum_new));
				if (a != b) {
					fprintf(stderr, "the queues disagree on what came out\n");
					return 4;
				}
				sum_base += b;
			}
			printf("%8zu  %-9s %12.0f %12.0f %7.0fx   (queue, full round: %.0f ns)\n",
			       n, delayed ? "+delayed" : "steady", nq, bq, bq / nq, full);
		}
		double fill = 0;
		for (int r = 0; r < REPS; r++)
			fill = best(fill, new_fill(keys, n));
		printf("%8zu  %-9s %12.0f %12s %8s\n", n, "fill", fill, "-", "-");
		free_keys(keys, n);
		free_keys(later, n);
	}
	printf("(best of %d runs of min(keys, %zu) steps each; checksums %zu %zu)\n", REPS,
	       base_max, sum_new, sum_base);
	return 0;
}
