/*
 * controller.c - poolkeeper-controller's life cycle: the controller and
 * its parts, the workers and their dispatch, leadership, the host the
 * backend is handed, and the metrics page. See controller.h.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "registry.h"
#include "controller_internal.h"
#include "kube_informer.h"
#include "log.h"

void ctl_queue(struct pk_controller *c, const struct pk_work_key *k, long delay_ms)
{
	char key[PK_WORK_KEY_MAX];
	if (!pk_work_key_format(k, key, sizeof(key))) {
		pk_log_error("work key too long: dropped", PK_LOG_STR("name", k->name));
		return;
	}
	int rc = delay_ms > 0 ? pk_queue_add_after(c->queue, key, delay_ms)
	                      : pk_queue_add(c->queue, key);
	if (rc != PK_OK)
		pk_log_error("cannot queue work: out of memory", PK_LOG_STR("key", key));
}

void ctl_queue_claim(void *ud, const char *ns, const char *name)
{
	struct pk_work_key k;
	pk_work_key_claim(&k, ns, name);
	ctl_queue(ud, &k, 0);
}

/* ---- the host the backend is handed ---- */

void ctl_follow(void *ud, const struct pk_pool_next *next)
{
	struct pk_controller *c = ud;
	struct pk_work_key k;
	if (next->claim_key[0] != '\0') {
		pk_object_key_parse(next->claim_key, &k);
		ctl_queue(c, &k, 0);
	}
	if (next->pool_key[0] == '\0' || !pk_pool_key_parse(next->pool_key, &k))
		return;
	if (next->sync)
		ctl_queue(c, &k, PK_POOL_SYNC_DELAY_MS);
	if (next->grace_ms > 0) {
		/* Its own key: the earlier status sync of the pool must not absorb it. */
		k.kind = PK_WORK_POOL_GRACE;
		ctl_queue(c, &k, next->grace_ms);
	}
	if (next->wake)
		pk_cache_claims_of_pool(&c->cache, next->pool_key, true, ctl_queue_claim, c);
}

static void host_queue_claim(void *ud, const char *claim_key, long delay_ms)
{
	struct pk_work_key k;
	pk_object_key_parse(claim_key, &k);
	ctl_queue(ud, &k, delay_ms);
}

static void host_post_event(void *ud, const struct pk_kube_object_ref *regarding, bool warning,
                            const char *reason, const char *action, const char *message)
{
	struct pk_controller *c = ud;
	if (c->events != NULL)
		(void)pk_event_poster_post(c->events, regarding, warning, reason, action, "%s",
		                           message);
}

static void reconciler_queue_claim(void *ud, const char *ns, const char *name, long delay_ms)
{
	struct pk_work_key k;
	pk_work_key_claim(&k, ns, name);
	ctl_queue(ud, &k, delay_ms);
}

/* ---- the workers ---- */

/* The next resync, a period from now (one key: an earlier one queued stays). */
static void queue_resync(struct pk_controller *c)
{
	struct pk_work_key k;
	if (c->resync_period_ms <= 0 || !pk_backend_resyncs(&c->backend))
		return;
	pk_work_key_resync(&k);
	ctl_queue(c, &k, c->resync_period_ms);
}

static int resync(struct pk_controller *c)
{
	long long t0 = pk_metrics_now_ns();
	int rc = c->backend.ops->resync(c->backend.self);
	long long ms = (pk_metrics_now_ns() - t0) / 1000000LL;
	if (rc == PK_OK)
		pk_log_info("resync done", PK_LOG_INT("ms", ms));
	else
		pk_log_warn("resync failed: the next period tries again", PK_LOG_INT("ms", ms),
		            PK_LOG_STR("error", pk_rc_name(rc)));
	queue_resync(c);
	return PK_OK;
}

static int process(struct pk_controller *c, const char *text)
{
	struct pk_work_key k;
	atomic_fetch_add(&c->metrics.reconciles, 1);
	if (!pk_work_key_parse(text, &k)) {
		pk_log_warn("unknown work key dropped", PK_LOG_STR("key", text));
		return PK_OK;
	}
	if (k.kind == PK_WORK_RESYNC)
		return resync(c);
	if (k.kind != PK_WORK_CLAIM) {
		json_t *pool = pk_cache_pool(&c->cache, k.pool_kind, k.namespace, k.name);
		if (pool == NULL)
			return PK_OK; /* gone: nothing to write */
		struct pk_pool_next next;
		memset(&next, 0, sizeof(next));
		int rc = c->backend.ops->reconcile_pool(c->backend.self, &k, pool, &next);
		json_decref(pool);
		ctl_follow(c, &next);
		return rc;
	}
	struct pk_claim_view v;
	pk_cache_claim_view(&c->cache, k.namespace, k.name, &v);
	return pk_claim_reconcile(&c->claims, k.namespace, k.name, &v);
}

/*
 * Leadership started (a new epoch): before any key is processed, one
 * worker has the backend reload from a consistent read and queues every
 * claim and pool; the others wait for it. False when the reload failed
 * (tried again).
 */
static bool leadership_ready(struct pk_controller *c)
{
	int epoch = atomic_load(&c->epoch);
	if (atomic_load(&c->seen_epoch) == epoch)
		return true;
	bool ok = true;
	pthread_mutex_lock(&c->load_mu);
	if (atomic_load(&c->seen_epoch) != epoch) {
		ok = c->backend.ops->on_leading(c->backend.self) == PK_OK;
		if (ok) {
			atomic_store(&c->seen_epoch, epoch);
			ctl_queue_everything(c);
			queue_resync(c);
			atomic_store(&c->trim_due, 1);
		}
	}
	pthread_mutex_unlock(&c->load_mu);
	return ok;
}

static void nap(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void *worker_main(void *arg)
{
	struct pk_controller *c = arg;
	while (!atomic_load(&c->stopping)) {
		if (!atomic_load(&c->leading)) {
			nap(100); /* keys wait in the queue until this process leads */
			continue;
		}
		if (!leadership_ready(c)) {
			nap(1000);
			continue;
		}
		char *key = NULL;
		int got = pk_queue_get(c->queue, 500, &key);
		if (got < 0)
			break;
		if (got == 0) {
			/* Idle: the keys queued at leadership are done; their memory goes back. */
			if (atomic_exchange(&c->trim_due, 0))
				malloc_trim(0);
			continue;
		}
		if (process(c, key) == PK_OK) {
			pk_queue_forget(c->queue, key);
		} else {
			long d = pk_queue_retry(c->queue, key);
			pk_log_debug("retrying", PK_LOG_STR("key", key), PK_LOG_INT("afterMs", d));
		}
		pk_queue_done(c->queue, key);
		free(key);
	}
	return NULL;
}

/* ---- life cycle ---- */

static char *dup_or_null(const char *s)
{
	return s != NULL && *s != '\0' ? strdup(s) : NULL;
}

/* The options copied, and the parts that need no API: NULL when memory ran out. */
static struct pk_controller *controller_alloc(const struct pk_controller_opts *opts)
{
	struct pk_controller *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	pthread_mutex_init(&c->load_mu, NULL);
	c->client = opts->client;
	c->nworkers = opts->workers == 0            ? 1
	              : opts->workers > MAX_WORKERS ? MAX_WORKERS
	                                            : opts->workers;
	c->namespace = dup_or_null(opts->namespace);
	c->selector = dup_or_null(opts->label_selector);
	c->claim_version = strdup(opts->claim_version ? opts->claim_version : PK_CAPI_V1BETA2);
	c->cluster_version = dup_or_null(opts->cluster_version);
	c->credentials_namespace = dup_or_null(opts->credentials_namespace);
	c->resync_period_ms = opts->resync_period_ms;
	c->queue = pk_queue_new();
	c->expect = pk_expect_new();
	int mrc = pk_metrics_init(&c->metrics);
	bool selector_lost =
	    opts->label_selector != NULL && *opts->label_selector != '\0' && c->selector == NULL;
	if (selector_lost || c->claim_version == NULL || c->queue == NULL || c->expect == NULL ||
	    mrc != PK_OK) {
		pk_controller_free(c);
		return NULL;
	}
	c->api = (struct pk_api_writer){c->client, &c->leading, &c->stopping};
	c->writer = pk_api_writer(&c->api);
	c->host = (struct pk_backend_host){.ud = c,
	                                   .writer = &c->writer,
	                                   .queue_claim = host_queue_claim,
	                                   .post_event = host_post_event,
	                                   .ipam_version = c->claim_version,
	                                   .namespace = c->namespace,
	                                   .call_timeout_ms = PK_BACKEND_CALL_TIMEOUT_MS};
	return c;
}

int pk_controller_new(const struct pk_controller_opts *opts, struct pk_controller **out,
                      struct pk_err *err)
{
	struct pk_controller *c = controller_alloc(opts);
	if (c == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	const struct pk_registry_entry *fallback = pk_registry_find(PK_REGISTRY_DEFAULT);
	int made =
	    opts->nbackends != 0
	        ? pk_registry_create(opts->backends, opts->nbackends, &c->host, &c->backend, err)
	        : pk_registry_create(&fallback, 1, &c->host, &c->backend, err);
	if (made != PK_OK) {
		pk_controller_free(c);
		return made;
	}
	c->cache.backend = &c->backend;
	c->cache.metrics = &c->metrics;
	int rc = opts->events_config != NULL
	             ? pk_event_poster_new(opts->events_config, &c->events, err)
	             : PK_OK;
	if (rc != PK_OK) {
		pk_controller_free(c);
		return rc;
	}
	c->claims = (struct pk_claim_reconciler){.backend = &c->backend,
	                                         .writer = &c->writer,
	                                         .expect = c->expect,
	                                         .metrics = &c->metrics,
	                                         .events = c->events,
	                                         .ipam_version = c->claim_version,
	                                         .queue_claim = reconciler_queue_claim,
	                                         .follow = ctl_follow,
	                                         .ud = c};
	if ((rc = ctl_informers_new(c, err)) != PK_OK) {
		pk_controller_free(c);
		return rc;
	}
	*out = c;
	return PK_OK;
}

/* Every informer (some may be NULL); returns how many slots were filled. */
static size_t informers(struct pk_controller *c, struct pk_kube_informer **all, const char **names)
{
	size_t n = 0;
	all[n] = c->cache.claims;
	names[n++] = PK_CLAIM_RESOURCE;
	all[n] = c->cache.addresses;
	names[n++] = PK_ADDRESS_RESOURCE;
	for (size_t i = 0; i < c->cache.npools; i++) {
		all[n] = c->cache.pools[i].inf;
		names[n++] = c->cache.pools[i].kind->resource;
	}
	all[n] = c->cache.clusters;
	names[n++] = PK_CLUSTER_RESOURCE;
	size_t nw = 0;
	const struct pk_backend_watch *w = c->backend.ops != NULL && c->backend.ops->watches != NULL
	                                       ? c->backend.ops->watches(c->backend.self, &nw)
	                                       : NULL;
	for (size_t i = 0; i < c->nwatched && i < nw; i++) {
		all[n] = c->watched[i].inf;
		names[n++] = w[i].resource;
	}
	return n;
}

#define NINF (3 + PK_CACHE_MAX_POOL_KINDS + CTL_MAX_WATCHES)

int pk_controller_start(struct pk_controller *c, struct pk_err *err)
{
	struct pk_kube_informer *all[NINF];
	const char *names[NINF];
	size_t n = informers(c, all, names);
	for (size_t i = 0; i < n; i++) {
		int rc = all[i] != NULL ? pk_kube_informer_start(all[i], err) : PK_OK;
		if (rc != PK_OK)
			return rc;
	}
	return PK_OK;
}

void pk_controller_listing(struct pk_controller *c, char *buf, size_t len)
{
	struct pk_kube_informer *all[NINF];
	const char *names[NINF];
	size_t n = informers(c, all, names), used = 0;
	if (len > 0)
		buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		if (all[i] == NULL || pk_kube_informer_synced(all[i]))
			continue;
		int w = snprintf(buf + used, len - used, "%s%s", used > 0 ? "," : "", names[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

int pk_controller_run(struct pk_controller *c, long timeout_ms, struct pk_err *err)
{
	if (c->started > 0)
		return 1;
	struct pk_kube_informer *all[NINF];
	const char *names[NINF];
	size_t n = informers(c, all, names);
	for (size_t i = 0; i < n; i++)
		if (all[i] != NULL && !pk_kube_informer_wait_synced(all[i], timeout_ms))
			return 0;
	/* The lists' pages are freed: hand that memory back. */
	malloc_trim(0);
	for (; c->started < c->nworkers; c->started++)
		if (pthread_create(&c->workers[c->started], NULL, worker_main, c) != 0)
			return pk_err_set(err, PK_ERR_NOMEM, "cannot start worker thread %u",
			                  c->started + 1);
	return 1;
}

void pk_controller_set_leading(struct pk_controller *c, bool leading)
{
	if (leading)
		atomic_fetch_add(&c->epoch, 1);
	atomic_store(&c->leading, leading ? 1 : 0);
	if (!leading)
		pk_backend_cancel(&c->backend); /* another process answers for the claims now */
}

bool pk_controller_ready(struct pk_controller *c, char *why, size_t len)
{
	struct pk_kube_informer *all[NINF];
	const char *names[NINF];
	size_t n = informers(c, all, names);
	for (size_t i = 0; i < n; i++)
		if (all[i] != NULL && !pk_kube_informer_synced(all[i])) {
			snprintf(why, len, "informers not synced (%s)", names[i]);
			return false;
		}
	return pk_backend_ready(&c->backend, why, len);
}

void pk_controller_stop(struct pk_controller *c)
{
	if (c == NULL)
		return;
	atomic_store(&c->stopping, 1);
	pk_backend_cancel(&c->backend);
	if (c->queue != NULL)
		pk_queue_shutdown(c->queue);
	for (; c->started > 0; c->started--)
		pthread_join(c->workers[c->started - 1], NULL);
	/* All at once: each waits up to about a second for its request in flight. */
	struct pk_kube_informer *all[NINF];
	const char *names[NINF];
	size_t n = informers(c, all, names);
	for (size_t i = 0; i < n; i++)
		pk_kube_informer_stop_begin(all[i]);
	for (size_t i = 0; i < n; i++)
		pk_kube_informer_stop(all[i]);
}

void pk_controller_free(struct pk_controller *c)
{
	if (c == NULL)
		return;
	pk_controller_stop(c);
	pk_event_poster_free(c->events, 2000);
	struct pk_kube_informer *all[NINF];
	const char *names[NINF];
	size_t n = informers(c, all, names);
	for (size_t i = 0; i < n; i++)
		pk_kube_informer_free(all[i]);
	if (c->backend.ops != NULL)
		c->backend.ops->free(c->backend.self);
	pk_expect_free(c->expect);
	pk_metrics_release(&c->metrics);
	pk_queue_free(c->queue);
	pthread_mutex_destroy(&c->load_mu);
	free(c->namespace);
	free(c->selector);
	free(c->claim_version);
	free(c->cluster_version);
	free(c->credentials_namespace);
	free(c);
}

/* ---- metrics ---- */

static void request_metric(void *ud, const char *method, long code, unsigned long long n)
{
	FILE *f = ud;
	char lower[8];
	size_t i = 0;
	for (; method[i] != '\0' && i < sizeof(lower) - 1; i++)
		lower[i] =
		    (char)(method[i] >= 'A' && method[i] <= 'Z' ? method[i] + 32 : method[i]);
	lower[i] = '\0';
	if (code > 0)
		fprintf(f, "poolkeeper_api_requests_total{verb=\"%s\",code=\"%ld\"} %llu\n", lower,
		        code, n);
	else
		fprintf(f, "poolkeeper_api_requests_total{verb=\"%s\",code=\"%s\"} %llu\n", lower,
		        code == 0 ? "none" : "other", n);
}

char *pk_controller_metrics(struct pk_controller *c, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	if (f == NULL)
		return NULL;
	pk_metrics_head(f, "poolkeeper_leader", "gauge", "Whether this process holds the Lease.");
	fprintf(f, "poolkeeper_leader %d\n", atomic_load(&c->leading));
	pk_metrics_head(f, "poolkeeper_workqueue_depth", "gauge",
	                "Keys waiting in the work queue.");
	fprintf(f, "poolkeeper_workqueue_depth %zu\n", pk_queue_len(c->queue));
	pk_metrics_head(f, "poolkeeper_workers", "gauge", "Reconcile workers.");
	fprintf(f, "poolkeeper_workers %u\n", c->nworkers);
	pk_metrics_write(&c->metrics, f);
	unsigned long long written, dropped;
	pk_event_poster_stats(c->events, &written, &dropped);
	pk_metrics_head(f, "poolkeeper_events_total", "counter",
	                "Kubernetes Events written (result=written) or dropped from a full queue.");
	fprintf(f, "poolkeeper_events_total{result=\"written\"} %llu\n", written);
	fprintf(f, "poolkeeper_events_total{result=\"dropped\"} %llu\n", dropped);
	pk_metrics_head(
	    f, "poolkeeper_api_requests_total", "counter",
	    "Kubernetes API requests answered, by verb and HTTP code (none: no answer).");
	pk_kube_client_request_stats(c->client, request_metric, f);
	c->backend.ops->write_metrics(c->backend.self, f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}
