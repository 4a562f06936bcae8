/*
 * controller_internal.h - the controller's state, shared by its files
 * (controller.c: life cycle, workers, leadership, metrics; informers.c:
 * the informers and their handlers). Not for use outside controller/.
 */
#ifndef PK_CONTROLLER_INTERNAL_H
#define PK_CONTROLLER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "backend.h"
#include "cache.h"
#include "claim_reconciler.h"
#include "controller.h"
#include "event_poster.h"
#include "expect.h"
#include "metrics.h"
#include "queue.h"
#include "work_key.h"
#include "writer.h"

#define MAX_WORKERS 64

/* The most resources the backends watch beside pools (backend.h, watches). */
#define CTL_MAX_WATCHES 16

/* What a watched resource's informer handlers know. */
struct backend_watch {
	struct pk_controller *c;
	size_t index; /* in the backend's watches() */
	struct pk_kube_informer *inf;
};

/* What a pool informer's handlers know: the controller and the kind they watch. */
struct pool_watch {
	struct pk_controller *c;
	const struct pk_pool_kind *kind;
};

struct pk_controller {
	struct pk_kube_client *client;
	struct pk_event_poster *events;
	char *namespace;
	char *selector; /* of the claims', pools' and Clusters' informers; NULL: none */
	char *claim_version;
	char *cluster_version;
	struct pk_queue *queue;
	struct pk_cache cache;
	struct pool_watch watches[PK_CACHE_MAX_POOL_KINDS];
	struct backend_watch watched[CTL_MAX_WATCHES];
	size_t nwatched;
	char *credentials_namespace;
	struct pk_api_writer api;
	struct pk_writer writer;
	struct pk_backend backend;
	struct pk_backend_host host;
	struct pk_expect *expect;
	struct pk_metrics metrics;
	struct pk_claim_reconciler claims;
	pthread_t workers[MAX_WORKERS];
	unsigned nworkers, started;
	long resync_period_ms; /* 0: no resync */
	atomic_int leading;
	atomic_int epoch;
	atomic_int stopping;
	atomic_int seen_epoch;
	atomic_int trim_due; /* the queue's first drain after leadership starts gives memory back */
	pthread_mutex_t load_mu; /* one worker reloads the backend when leadership starts */
};

/* Queues a work key after delay_ms (0: at once); logs when memory runs out. */
void ctl_queue(struct pk_controller *c, const struct pk_work_key *k, long delay_ms);
/* Queues the claim ns/name (a pk_cache claim visitor: ud is the controller). */
void ctl_queue_claim(void *ud, const char *ns, const char *name);

/* Queues what a backend's operation changed (a pk_claim_reconciler follow: ud is the
 * controller). */
void ctl_follow(void *ud, const struct pk_pool_next *next);

/* informers.c: creates the informers (an error: pk_kube_informer_new's, with err) and
 * queues every claim and pool, and every IPAddress being deleted (at leadership). */
int ctl_informers_new(struct pk_controller *c, struct pk_err *err);
void ctl_queue_everything(struct pk_controller *c);

#endif
