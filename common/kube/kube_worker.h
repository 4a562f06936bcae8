/*
 * kube_worker.h - a background thread that stops promptly: its owner asks
 * it to stop from any thread, and a nap in progress ends at once. The
 * leader elector runs on one; the same mutex and condition variable serve
 * the owner's own waits (a CLOCK_MONOTONIC condition variable, so that a
 * wall-clock step does not stretch or cut a wait).
 *
 * Ownership: the struct is the owner's (usually a member); init before
 * use, destroy after the thread is stopped.
 *
 * Threading: stop_begin and stopping may be called from any thread; start,
 * stop and destroy from the one that owns the worker.
 */
#ifndef PK_KUBE_WORKER_H
#define PK_KUBE_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

struct pk_kube_worker {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* signalled by stop_begin; the owner may signal it too */
	atomic_int stop;
	pthread_t thread;
	bool running;
};

void pk_kube_worker_init(struct pk_kube_worker *w);
/* Stops the thread when it runs, then releases the mutex and condition variable. */
void pk_kube_worker_destroy(struct pk_kube_worker *w);

/* Runs fn(arg) on a new thread: 0, EBUSY when one runs already, or pthread_create's error. A
 * stop asked before start still holds: start does not clear it. */
int pk_kube_worker_start(struct pk_kube_worker *w, void *(*fn)(void *), void *arg);

/* Asks the thread to stop and wakes its nap; does not wait. */
void pk_kube_worker_stop_begin(struct pk_kube_worker *w);
/* stop_begin, then waits for the thread to end. Nothing when none runs. */
void pk_kube_worker_stop(struct pk_kube_worker *w);

bool pk_kube_worker_stopping(struct pk_kube_worker *w);

/* Sleeps ms, or less once a stop is asked. From the worker's thread. */
void pk_kube_worker_nap(struct pk_kube_worker *w, long ms);

/* CLOCK_MONOTONIC now plus ms, for pthread_cond_timedwait on cv. */
struct timespec pk_kube_worker_deadline(long ms);

#endif
