/* fair_pool.c - threads that take turns between sources' lines of jobs (fair_pool.h). */
#include "fair_pool.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One source's waiting jobs, oldest first. */
struct line {
	struct pk_httpd_source src;
	struct pk_fair_job *head, *tail;
	size_t bytes;    /* what its jobs hold */
	uint64_t first;  /* when its head job was pushed (the pool's push count) */
	uint64_t served; /* when a job of its was last taken (the pool's take count); 0: never */
};

struct pk_fair_pool {
	pthread_mutex_t mu;
	pthread_cond_t more;
	bool stopping;
	size_t max_bytes, bytes;
	struct line *lines; /* those with a job waiting; a line leaves once empty */
	size_t nlines, cap;
	unsigned waiting;
	unsigned long long shed;
	uint64_t pushes, takes;
	/* The history of lines that left, so a source whose line empties does not
	 * come back as one never served: its last take, by source. */
	struct line *gone;
	size_t ngone, gone_next;
	unsigned nthreads;
	pthread_t *threads;
};

/* Sources whose last turn the pool remembers once their lines are empty. */
#define GONE_KEPT 64

/* One line per address; every unknown source (family 0) shares one line. */
static bool same(const struct pk_httpd_source *a, const struct pk_httpd_source *b)
{
	return a->family == b->family && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

/* Called with p->mu held. */
static struct line *line_of(struct pk_fair_pool *p, const struct pk_httpd_source *src)
{
	for (size_t i = 0; i < p->nlines; i++)
		if (same(&p->lines[i].src, src))
			return &p->lines[i];
	return NULL;
}

/* The last take of a source whose line left; 0 when forgotten. Called with p->mu held. */
static uint64_t served_before(const struct pk_fair_pool *p, const struct pk_httpd_source *src)
{
	for (size_t i = 0; i < p->ngone; i++)
		if (same(&p->gone[i].src, src))
			return p->gone[i].served;
	return 0;
}

/* l is empty: remembered, oldest forgotten first, then removed. Called with p->mu held. */
static void leave(struct pk_fair_pool *p, struct line *l)
{
	size_t at = p->ngone;
	for (size_t i = 0; i < p->ngone; i++)
		if (same(&p->gone[i].src, &l->src))
			at = i;
	if (at == p->ngone) {
		if (p->ngone < GONE_KEPT)
			p->ngone++;
		else
			at = p->gone_next++ % GONE_KEPT;
	}
	p->gone[at] = *l;
	*l = p->lines[--p->nlines];
}

/* Takes job, the head or the tail of l, out of its line. Called with p->mu held. */
static void unlink_job(struct pk_fair_pool *p, struct line *l, struct pk_fair_job *job)
{
	if (job->prev != NULL)
		job->prev->next = job->next;
	else
		l->head = job->next;
	if (job->next != NULL)
		job->next->prev = job->prev;
	else
		l->tail = job->prev;
	job->prev = job->next = NULL;
	l->bytes -= job->bytes;
	p->bytes -= job->bytes;
	p->waiting--;
	if (l->head == NULL)
		leave(p, l);
}

/*
 * The next job: the head of the line served least recently; among lines
 * served equally (never, say), the one whose head waited longest. Called
 * with p->mu held and a job waiting.
 */
static struct pk_fair_job *take(struct pk_fair_pool *p)
{
	size_t best = 0;
	for (size_t i = 1; i < p->nlines; i++) {
		const struct line *l = &p->lines[i], *b = &p->lines[best];
		if (l->served < b->served || (l->served == b->served && l->first < b->first))
			best = i;
	}
	struct line *l = &p->lines[best];
	struct pk_fair_job *job = l->head;
	l->served = ++p->takes;
	l->first = ++p->pushes; /* the rest of the line waits as if pushed now: it had its turn */
	unlink_job(p, l, job);
	return job;
}

/*
 * While the waiting jobs hold more than max_bytes, the newest job of the
 * line holding most leaves, onto *shed. Called with p->mu held.
 */
static void keep_bytes(struct pk_fair_pool *p, struct pk_fair_job **shed)
{
	while (p->max_bytes > 0 && p->bytes > p->max_bytes && p->nlines > 0) {
		size_t most = 0;
		for (size_t i = 1; i < p->nlines; i++)
			if (p->lines[i].bytes > p->lines[most].bytes)
				most = i;
		struct pk_fair_job *job = p->lines[most].tail;
		unlink_job(p, &p->lines[most], job);
		job->next = *shed;
		*shed = job;
		p->shed++;
	}
}

static void *pool_main(void *arg)
{
	struct pk_fair_pool *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->waiting == 0 && !p->stopping)
			pthread_cond_wait(&p->more, &p->mu);
		if (p->waiting == 0)
			break;
		struct pk_fair_job *job = take(p);
		enum pk_fair_turn turn = p->stopping ? PK_FAIR_STOPPING : PK_FAIR_RUN;
		pthread_mutex_unlock(&p->mu);
		job->run(job, turn);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int pk_fair_pool_start(const char *name, unsigned threads, size_t max_bytes,
                       struct pk_fair_pool **out, struct pk_err *err)
{
	struct pk_fair_pool *p = calloc(1, sizeof(*p));
	if (threads == 0)
		threads = 1;
	if (p != NULL) {
		p->threads = calloc(threads, sizeof(*p->threads));
		p->gone = calloc(GONE_KEPT, sizeof(*p->gone));
	}
	if (p == NULL || p->threads == NULL || p->gone == NULL) {
		if (p != NULL) {
			free(p->threads);
			free(p->gone);
		}
		free(p);
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	p->max_bytes = max_bytes;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->more, NULL);
	for (; p->nthreads < threads; p->nthreads++) {
		if (pthread_create(&p->threads[p->nthreads], NULL, pool_main, p) != 0) {
			pk_fair_pool_stop(p);
			return pk_err_set(err, PK_ERR_NOMEM, "%s: cannot start thread %u of %u",
			                  name, p->nthreads + 1, threads);
		}
	}
	*out = p;
	return PK_OK;
}

/* src's line, added when it has none; NULL when out of memory. Called with p->mu held. */
static struct line *line_for(struct pk_fair_pool *p, const struct pk_httpd_source *src)
{
	struct line *l = line_of(p, src);
	if (l != NULL)
		return l;
	if (p->nlines == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		struct line *grown = realloc(p->lines, cap * sizeof(*grown));
		if (grown == NULL)
			return NULL;
		p->lines = grown;
		p->cap = cap;
	}
	l = &p->lines[p->nlines++];
	memset(l, 0, sizeof(*l));
	l->src = *src;
	l->served = served_before(p, src);
	return l;
}

void pk_fair_pool_push(struct pk_fair_pool *p, const struct pk_httpd_source *src,
                       struct pk_fair_job *job)
{
	job->prev = job->next = NULL;
	pthread_mutex_lock(&p->mu);
	struct line *l = p->stopping ? NULL : line_for(p, src);
	if (l == NULL) {
		/* Stopping, or out of memory: answered at once, never lost. */
		pthread_mutex_unlock(&p->mu);
		job->run(job, PK_FAIR_STOPPING);
		return;
	}
	if (l->head == NULL) {
		l->head = job;
		l->first = ++p->pushes;
	} else {
		l->tail->next = job;
		job->prev = l->tail;
	}
	l->tail = job;
	l->bytes += job->bytes;
	p->bytes += job->bytes;
	p->waiting++;
	struct pk_fair_job *shed = NULL;
	keep_bytes(p, &shed);
	if (p->waiting > 0)
		pthread_cond_signal(&p->more);
	pthread_mutex_unlock(&p->mu);
	while (shed != NULL) {
		struct pk_fair_job *next = shed->next;
		shed->next = NULL;
		shed->run(shed, PK_FAIR_SHED);
		shed = next;
	}
}

unsigned pk_fair_pool_waiting(struct pk_fair_pool *p)
{
	pthread_mutex_lock(&p->mu);
	unsigned n = p->waiting;
	pthread_mutex_unlock(&p->mu);
	return n;
}

unsigned long long pk_fair_pool_shed(struct pk_fair_pool *p)
{
	pthread_mutex_lock(&p->mu);
	unsigned long long n = p->shed;
	pthread_mutex_unlock(&p->mu);
	return n;
}

void pk_fair_pool_stop(struct pk_fair_pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->more);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	/* With no thread started, what was pushed still runs. */
	pthread_mutex_lock(&p->mu);
	while (p->waiting > 0) {
		struct pk_fair_job *job = take(p);
		pthread_mutex_unlock(&p->mu);
		job->run(job, PK_FAIR_STOPPING);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	pthread_cond_destroy(&p->more);
	pthread_mutex_destroy(&p->mu);
	free(p->lines);
	free(p->gone);
	free(p->threads);
	free(p);
}
