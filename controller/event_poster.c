/* event_poster.c - Events posted by the reconcilers, written by one thread; see event_poster.h. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "event_poster.h"
#include "kube_client.h"
#include "log.h"

struct pending {
	char api_version[64], kind[32], ns[64], name[254], uid[64];
	bool warning;
	char reason[64], action[32];
	char note[PK_KUBE_EVENT_NOTE_MAX];
};

struct pk_event_poster {
	struct pk_kube_client *client;
	struct pk_kube_recorder *rec;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pending *ring; /* PK_EVENT_POSTER_QUEUE slots */
	size_t head, n;
	bool stopping;
	long long drain_until_ns;
	pthread_t thread;
	atomic_ullong written, dropped;
};

static long long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *writer_main(void *arg)
{
	struct pk_event_poster *ev = arg;
	struct pending p;
	long long last_flush = mono_ns();
	pthread_mutex_lock(&ev->mu);
	for (;;) {
		if (ev->n == 0) {
			if (ev->stopping)
				break;
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 5;
			pthread_cond_timedwait(&ev->cv, &ev->mu, &until);
		}
		if (ev->stopping && (ev->n == 0 || mono_ns() > ev->drain_until_ns))
			break;
		bool have = ev->n > 0;
		if (have) {
			p = ev->ring[ev->head];
			ev->head = (ev->head + 1) % PK_EVENT_POSTER_QUEUE;
			ev->n--;
		}
		pthread_mutex_unlock(&ev->mu);
		if (have) {
			struct pk_kube_object_ref ref = {.api_version = p.api_version,
			                                 .kind = p.kind,
			                                 .namespace = p.ns[0] ? p.ns : NULL,
			                                 .name = p.name,
			                                 .uid = p.uid[0] ? p.uid : NULL};
			if (pk_kube_recorder_emit(ev->rec, &ref, p.warning, p.reason, p.action,
			                          "%s", p.note) == PK_KUBE_OK)
				atomic_fetch_add(&ev->written, 1);
		}
		/* Series counts of repeated events are written every few seconds. */
		if (mono_ns() - last_flush > 5000000000LL) {
			(void)pk_kube_recorder_flush(ev->rec);
			last_flush = mono_ns();
		}
		pthread_mutex_lock(&ev->mu);
	}
	pthread_mutex_unlock(&ev->mu);
	return NULL;
}

int pk_event_poster_new(struct pk_kube_config *cfg, struct pk_event_poster **out,
                        struct pk_err *err)
{
	struct pk_event_poster *ev = calloc(1, sizeof(*ev));
	if (ev == NULL || (ev->ring = calloc(PK_EVENT_POSTER_QUEUE, sizeof(*ev->ring))) == NULL) {
		free(ev);
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	struct pk_kube_client_opts co = {.qps = PK_EVENT_POSTER_QPS,
	                                 .burst = PK_EVENT_POSTER_BURST};
	struct pk_kube_recorder_opts ro = {.controller = PK_CONTROLLER_NAME};
	int rc = pk_kube_client_new(cfg, &co, &ev->client, err);
	if (rc == PK_OK)
		rc = pk_kube_recorder_new(ev->client, &ro, &ev->rec, err);
	if (rc != PK_OK) {
		pk_kube_client_free(ev->client);
		free(ev->ring);
		free(ev);
		return rc;
	}
	pthread_mutex_init(&ev->mu, NULL);
	pthread_cond_init(&ev->cv, NULL);
	if (pthread_create(&ev->thread, NULL, writer_main, ev) != 0) {
		pk_kube_recorder_free(ev->rec);
		pk_kube_client_free(ev->client);
		pthread_mutex_destroy(&ev->mu);
		pthread_cond_destroy(&ev->cv);
		free(ev->ring);
		free(ev);
		return pk_err_set(err, PK_ERR_NOMEM, "cannot start the events thread");
	}
	*out = ev;
	return PK_OK;
}

static void copy(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src != NULL ? src : "");
}

bool pk_event_poster_post(struct pk_event_poster *ev, const struct pk_kube_object_ref *regarding,
                          bool warning, const char *reason, const char *action, const char *fmt,
                          ...)
{
	if (ev == NULL)
		return false;
	pthread_mutex_lock(&ev->mu);
	if (ev->n == PK_EVENT_POSTER_QUEUE || ev->stopping) {
		pthread_mutex_unlock(&ev->mu);
		atomic_fetch_add(&ev->dropped, 1);
		return false;
	}
	struct pending *p = &ev->ring[(ev->head + ev->n) % PK_EVENT_POSTER_QUEUE];
	copy(p->api_version, sizeof(p->api_version), regarding->api_version);
	copy(p->kind, sizeof(p->kind), regarding->kind);
	copy(p->ns, sizeof(p->ns), regarding->namespace);
	copy(p->name, sizeof(p->name), regarding->name);
	copy(p->uid, sizeof(p->uid), regarding->uid);
	p->warning = warning;
	copy(p->reason, sizeof(p->reason), reason);
	copy(p->action, sizeof(p->action), action);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->note, sizeof(p->note), fmt, ap);
	va_end(ap);
	ev->n++;
	pthread_cond_signal(&ev->cv);
	pthread_mutex_unlock(&ev->mu);
	return true;
}

void pk_event_poster_free(struct pk_event_poster *ev, long drain_ms)
{
	if (ev == NULL)
		return;
	pthread_mutex_lock(&ev->mu);
	ev->stopping = true;
	ev->drain_until_ns = mono_ns() + (long long)drain_ms * 1000000LL;
	pthread_cond_signal(&ev->cv);
	pthread_mutex_unlock(&ev->mu);
	pthread_join(ev->thread, NULL);
	if (ev->n > 0)
		pk_log_warn("events not written at exit", PK_LOG_UINT("events", ev->n));
	pk_kube_recorder_free(ev->rec); /* flushes series counts */
	pk_kube_client_free(ev->client);
	pthread_mutex_destroy(&ev->mu);
	pthread_cond_destroy(&ev->cv);
	free(ev->ring);
	free(ev);
}

void pk_event_poster_stats(struct pk_event_poster *ev, unsigned long long *written,
                           unsigned long long *dropped)
{
	*written = ev ? atomic_load(&ev->written) : 0;
	*dropped = ev ? atomic_load(&ev->dropped) : 0;
}
