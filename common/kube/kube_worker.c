/* kube_worker.c - a background thread whose naps end when it is asked to stop. */
#include "kube_worker.h"

#include <errno.h>

void pk_kube_worker_init(struct pk_kube_worker *w)
{
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&w->stop, 0);
	w->running = false;
}

void pk_kube_worker_destroy(struct pk_kube_worker *w)
{
	pk_kube_worker_stop(w);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
}

int pk_kube_worker_start(struct pk_kube_worker *w, void *(*fn)(void *), void *arg)
{
	if (w->running)
		return EBUSY;
	int rc = pthread_create(&w->thread, NULL, fn, arg);
	if (rc == 0)
		w->running = true;
	return rc;
}

void pk_kube_worker_stop_begin(struct pk_kube_worker *w)
{
	/* The store comes before taking mu, and a nap tests the flag under mu before it
	 * waits, so a nap that is about to begin cannot miss this. */
	atomic_store(&w->stop, 1);
	pthread_mutex_lock(&w->mu);
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

void pk_kube_worker_stop(struct pk_kube_worker *w)
{
	if (!w->running)
		return;
	pk_kube_worker_stop_begin(w);
	pthread_join(w->thread, NULL);
	w->running = false;
}

bool pk_kube_worker_stopping(struct pk_kube_worker *w)
{
	return atomic_load(&w->stop) != 0;
}

struct timespec pk_kube_worker_deadline(long ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	return dl;
}

void pk_kube_worker_nap(struct pk_kube_worker *w, long ms)
{
	struct timespec dl = pk_kube_worker_deadline(ms);
	pthread_mutex_lock(&w->mu);
	while (!atomic_load(&w->stop))
		if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&w->mu);
}
