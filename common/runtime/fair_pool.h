/*
 * fair_pool.h - threads that run a listener's costly work off its
 * threads, fair between sources.
 *
 * A listener thread that does a request's work itself serves its
 * connections in the order they happen to be ready: one client with many
 * connections and requests that take long (a review that waits for a
 * permission lookup) keeps everyone else waiting behind all of its own.
 * Handed to a fair pool, a request waits in its source's line (the peer's
 * IP address, pk_httpd_source), and a free thread takes the next job from
 * the source served least recently that has one waiting. A source with a
 * single request in a while (the apiserver among attackers) goes first,
 * whatever the others have queued; sources with full lines take turns.
 *
 * What waits is bounded: each job says how many bytes it holds, and once
 * the waiting jobs hold more than the pool's `max_bytes`, the newest job of
 * the source holding most is shed (run at once as PK_FAIR_SHED), as often
 * as it takes, so a flood costs its own source its newest jobs and never
 * another source's single one.
 *
 * A job is the caller's: it embeds a struct pk_fair_job and gets it back
 * in `run`, on one of the pool's threads (a shed job on the pushing
 * thread). Once `run` has returned the pool no longer touches the job. The
 * listener typically suspends its connection, pushes the job, and resumes
 * the connection from `run`.
 */
#ifndef PK_FAIR_POOL_H
#define PK_FAIR_POOL_H

#include <stdbool.h>

#include "httpd_source.h"
#include "pk.h"

/* How a job is run. */
enum pk_fair_turn {
	PK_FAIR_RUN,      /* its turn: do the work */
	PK_FAIR_STOPPING, /* the pool is stopping: answer at once without doing the work */
	PK_FAIR_SHED,     /* shed to keep max_bytes: answer at once without doing the work */
};

struct pk_fair_job;
typedef void (*pk_fair_run_fn)(struct pk_fair_job *job, enum pk_fair_turn turn);

struct pk_fair_job {
	pk_fair_run_fn run;
	size_t bytes;                    /* what it holds while it waits, as the caller counts */
	struct pk_fair_job *prev, *next; /* the pool's */
};

struct pk_fair_pool;

/* `threads` threads (at least one), named `name` in errors; max_bytes 0: no bound. */
PK_MUST_CHECK int pk_fair_pool_start(const char *name, unsigned threads, size_t max_bytes,
                                     struct pk_fair_pool **out, struct pk_err *err);

/*
 * Queues job in src's line, then sheds what max_bytes asks for (this job
 * itself when its source holds most). After pk_fair_pool_stop has begun,
 * runs it at once, PK_FAIR_STOPPING.
 */
void pk_fair_pool_push(struct pk_fair_pool *p, const struct pk_httpd_source *src,
                       struct pk_fair_job *job);

/* Jobs waiting (not yet running), and jobs shed so far, for metrics and tests. */
unsigned pk_fair_pool_waiting(struct pk_fair_pool *p);
unsigned long long pk_fair_pool_shed(struct pk_fair_pool *p);

/*
 * Runs every job still waiting as PK_FAIR_STOPPING, lets the running ones
 * finish, joins the threads and frees p. NULL is a no-op.
 */
void pk_fair_pool_stop(struct pk_fair_pool *p);

#endif
