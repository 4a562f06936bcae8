/* kube_informer.c - list+watch into a string-map store, with change callbacks. */
#include "kube_informer.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "json.h"
#include "kube_watch.h"
#include "kube_worker.h"
#include "strmap.h"

/* Versions of NUL-bearing objects warned of lately (see nul_first_time). */
#define NUL_WARNED 64

/* What the store keeps under an object's key. */
struct entry {
	char *rv;
	void *item;
	bool mark; /* seen in the relist being applied */
};

struct pk_kube_informer {
	struct pk_kube_client *c;
	char *group, *version, *resource, *ns, *label, *field;
	struct pk_kube_ref ref;
	long page_size, watch_timeout_s, backoff_base_ms, backoff_max_ms;
	bool bookmarks;
	pk_kube_transform_fn *transform;
	pk_kube_release_fn *release;
	void *tud;
	struct pk_kube_informer_handlers h;

	pthread_rwlock_t lock;   /* the store and rv */
	struct pk_strmap *store; /* key -> struct entry */
	char rv[128];

	/* The thread; its mu guards state, lists and skipped, and its cv
	 * carries both the stop and the waits for them. */
	struct pk_kube_worker w;
	enum pk_kube_informer_state state;
	unsigned long lists, skipped, nul_fields;

	/* informer thread only: hashes of namespace, name and resourceVersion */
	uint64_t nul_warned[NUL_WARNED];
	unsigned nul_next;
};

static char *dup_or_null(const char *s, bool *fail)
{
	if (s == NULL)
		return NULL;
	char *d = strdup(s);
	if (d == NULL)
		*fail = true;
	return d;
}

static void release_item(struct pk_kube_informer *inf, void *item)
{
	if (item == NULL)
		return;
	if (inf->transform == NULL)
		json_decref(item);
	else if (inf->release != NULL)
		inf->release(inf->tud, item);
	else
		free(item);
}

int pk_kube_informer_new(struct pk_kube_client *c, const struct pk_kube_informer_opts *o,
                         struct pk_kube_informer **out, struct pk_err *err)
{
	*out = NULL;
	struct pk_kube_informer *inf = calloc(1, sizeof(*inf));
	if (inf == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	bool fail = false;
	inf->c = c;
	inf->group = dup_or_null(o->ref.group, &fail);
	inf->version = dup_or_null(o->ref.version, &fail);
	inf->resource = dup_or_null(o->ref.resource, &fail);
	inf->ns = dup_or_null(o->ref.namespace, &fail);
	inf->label = dup_or_null(o->label_selector, &fail);
	inf->field = dup_or_null(o->field_selector, &fail);
	inf->ref = (struct pk_kube_ref){.group = inf->group,
	                                .version = inf->version,
	                                .resource = inf->resource,
	                                .namespace = inf->ns};
	inf->page_size = o->page_size;
	inf->watch_timeout_s = o->watch_timeout_s;
	inf->backoff_base_ms = o->backoff_base_ms > 0 ? o->backoff_base_ms : 200;
	inf->backoff_max_ms = o->backoff_max_ms > 0 ? o->backoff_max_ms : 30000;
	inf->bookmarks = !o->no_bookmarks;
	inf->transform = o->transform;
	inf->release = o->release;
	inf->tud = o->transform_ud;
	inf->h = o->handlers;
	inf->store = pk_strmap_new();
	pthread_rwlock_init(&inf->lock, NULL);
	pk_kube_worker_init(&inf->w);
	if (fail || inf->store == NULL) {
		pk_kube_informer_free(inf);
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	char probe[512];
	if (pk_kube_ref_path(&inf->ref, probe, sizeof(probe)) != PK_OK) {
		pk_kube_informer_free(inf);
		return pk_err_set(err, PK_ERR_INVALID,
		                  "informer: the collection needs a version and "
		                  "a resource");
	}
	*out = inf;
	return PK_OK;
}

/* ---- the store (writes only from the informer thread) ---- */

static void entry_free(struct pk_kube_informer *inf, struct entry *e)
{
	release_item(inf, e->item);
	free(e->rv);
	free(e);
}

static char *make_key(const char *ns, const char *name)
{
	size_t n = (ns ? strlen(ns) + 1 : 0) + strlen(name) + 1;
	char *k = malloc(n);
	if (k != NULL)
		snprintf(k, n, "%s%s%s", ns ? ns : "", ns ? "/" : "", name);
	return k;
}

static void remove_entry(struct pk_kube_informer *inf, const char *key)
{
	pthread_rwlock_wrlock(&inf->lock);
	struct entry *e = pk_strmap_remove(inf->store, key);
	pthread_rwlock_unlock(&inf->lock);
	if (e == NULL)
		return;
	if (inf->h.on_delete)
		inf->h.on_delete(inf->h.ud, key, e->item);
	entry_free(inf, e);
}

static void count(struct pk_kube_informer *inf, unsigned long *n)
{
	pthread_mutex_lock(&inf->w.mu);
	(*n)++;
	pthread_mutex_unlock(&inf->w.mu);
}

/* FNV-1a of obj.metadata.<key>'s bytes (NULs too) and a separator, continuing from h. */
static uint64_t hash_meta(uint64_t h, const json_t *obj, const char *key)
{
	const json_t *v = pk_json_path(obj, "metadata", key);
	const unsigned char *s = (const unsigned char *)json_string_value(v);
	size_t n = s != NULL ? json_string_length(v) : 0;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ULL;
	return (h ^ 0xffu) * 1099511628211ULL;
}

/*
 * Whether this version of a NUL-bearing object is warned of for the first
 * time lately; remembered when it is. A relist or a re-sent event repeats a
 * version, and a warning per event would flood the log with one object.
 */
static bool nul_first_time(struct pk_kube_informer *inf, const json_t *obj)
{
	uint64_t h = 14695981039346656037ULL;
	h = hash_meta(hash_meta(hash_meta(h, obj, "namespace"), obj, "name"), obj,
	              "resourceVersion");
	for (unsigned i = 0; i < NUL_WARNED; i++)
		if (inf->nul_warned[i] == h)
			return false;
	inf->nul_warned[inf->nul_next] = h;
	inf->nul_next = (inf->nul_next + 1) % NUL_WARNED;
	return true;
}

/*
 * An object whose strings hold a NUL: it is kept, and each such field reads
 * as invalid to whoever uses it as a C string (pk_json_cstr). Counted once
 * per event, said once per version of the object, naming it and the first
 * such field.
 */
static void report_nul(struct pk_kube_informer *inf, const char *ns, const char *name,
                       const json_t *obj)
{
	char where[256];
	if (!pk_json_nul_path(obj, where, sizeof(where)))
		return;
	count(inf, &inf->nul_fields);
	if (!nul_first_time(inf, obj))
		return;
	char qn[300], qns[300] = "";
	pk_text_quote(name, strlen(name), qn, sizeof(qn));
	if (ns != NULL)
		pk_text_quote(ns, strlen(ns), qns, sizeof(qns));
	pk_kube_logf(pk_kube_client_log(inf->c), PK_KUBE_LOG_WARN,
	             "informer %s: %s%s%s: %s holds a NUL character (\\u0000); that field reads "
	             "as invalid",
	             inf->resource, qns, ns ? "/" : "", qn, where);
}

/* A new version of the object stored in e: swapped in, reported, the old one released. */
static void store_update(struct pk_kube_informer *inf, const char *key, struct entry *e, void *item,
                         char *rv)
{
	pthread_rwlock_wrlock(&inf->lock);
	void *old = e->item;
	char *oldrv = e->rv;
	e->item = item;
	e->rv = rv;
	pthread_rwlock_unlock(&inf->lock);
	if (inf->h.on_update)
		inf->h.on_update(inf->h.ud, key, old, item);
	release_item(inf, old);
	free(oldrv);
}

/* An object not stored yet: added and reported; dropped when memory runs out. */
static void store_add(struct pk_kube_informer *inf, const char *key, uint64_t h, void *item,
                      char *rv)
{
	struct entry *e = calloc(1, sizeof(*e));
	int rc = PK_ERR_NOMEM;
	if (e != NULL) {
		*e = (struct entry){.rv = rv, .item = item, .mark = true};
		pthread_rwlock_wrlock(&inf->lock);
		rc = pk_strmap_put_hashed(inf->store, key, h, e, NULL);
		pthread_rwlock_unlock(&inf->lock);
	}
	if (rc != PK_OK) {
		release_item(inf, item);
		free(rv);
		free(e);
		return;
	}
	if (inf->h.on_add)
		inf->h.on_add(inf->h.ud, key, item);
}

/* Whether the object's name and namespace make a key; counted and logged when not. */
static bool keyable(struct pk_kube_informer *inf, const json_t *obj, const char *ns,
                    const char *name)
{
	if (name != NULL && (ns != NULL || pk_json_path(obj, "metadata", "namespace") == NULL))
		return true;
	/* A name or namespace holding a NUL would alias another key. */
	count(inf, &inf->skipped);
	if (!nul_first_time(inf, obj))
		return false;
	pk_kube_logf(pk_kube_client_log(inf->c), PK_KUBE_LOG_WARN,
	             "informer %s: an object whose metadata.%s is missing or not a plain string is "
	             "left out",
	             inf->resource, name == NULL ? "name" : "namespace");
	return false;
}

/* ADDED/MODIFIED, or an item of a relist. */
static void upsert(struct pk_kube_informer *inf, const json_t *obj)
{
	const char *name = pk_json_meta_cstr(obj, "name");
	const char *ns = pk_json_meta_cstr(obj, "namespace");
	const char *rv = pk_json_meta_cstr(obj, "resourceVersion");
	if (!keyable(inf, obj, ns, name))
		return;
	char *key = make_key(ns, name);
	if (key == NULL)
		return;
	uint64_t h = pk_strmap_hash(key);
	/* this thread is the only writer: no lock to read */
	struct entry *e = pk_strmap_get_hashed(inf->store, key, h);
	if (e != NULL) {
		e->mark = true;
		if (rv != NULL && e->rv != NULL && strcmp(rv, e->rv) == 0) {
			free(key); /* already current: no event */
			return;
		}
	}
	report_nul(inf, ns, name, obj);
	void *item =
	    inf->transform ? inf->transform(inf->tud, obj) : json_incref((json_t *)(uintptr_t)obj);
	char *rvcopy = rv ? strdup(rv) : NULL;
	if (item == NULL || (rv != NULL && rvcopy == NULL)) {
		release_item(inf, item);
		free(rvcopy);
		if (e != NULL)
			remove_entry(inf, key);
	} else if (e != NULL) {
		store_update(inf, key, e, item, rvcopy);
	} else {
		store_add(inf, key, h, item, rvcopy);
	}
	free(key);
}

static void delete_obj(struct pk_kube_informer *inf, const json_t *obj)
{
	const char *name = pk_json_meta_cstr(obj, "name");
	if (name == NULL)
		return;
	char *key = make_key(pk_json_meta_cstr(obj, "namespace"), name);
	if (key != NULL)
		remove_entry(inf, key);
	free(key);
}

static void set_rv(struct pk_kube_informer *inf, const char *rv)
{
	if (rv == NULL || rv[0] == '\0')
		return;
	pthread_rwlock_wrlock(&inf->lock);
	snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
	pthread_rwlock_unlock(&inf->lock);
}

/* A relist: every page's items are applied as they arrive (one page in
 * memory at a time), marking what was seen; what was not seen is deleted
 * at the end. */
static void unmark(void *ud, const char *key, void *value)
{
	(void)ud;
	(void)key;
	((struct entry *)value)->mark = false;
}

static void relist_begin(struct pk_kube_informer *inf)
{
	pk_strmap_foreach(inf->store, unmark, NULL);
}

/*
 * An object of the relist that could not be decoded: what the store holds
 * for it stays (the last state known) rather than being reported deleted,
 * since it still exists.
 */
static void relist_skip(void *ud, const char *ns, const char *name, const char *why)
{
	struct pk_kube_informer *inf = ud;
	(void)why;
	count(inf, &inf->skipped);
	if (name == NULL)
		return;
	char *key = make_key(inf->ns == NULL ? ns : inf->ns, name);
	if (key == NULL)
		return;
	struct entry *e = pk_strmap_get(inf->store, key); /* this thread is the only writer */
	if (e != NULL)
		e->mark = true;
	free(key);
}

static void watch_skip(void *ud, const char *ns, const char *name, const char *why)
{
	struct pk_kube_informer *inf = ud;
	(void)ns;
	(void)name;
	(void)why;
	count(inf, &inf->skipped);
}

static int relist_page(void *ud, const json_t *page)
{
	struct pk_kube_informer *inf = ud;
	size_t i;
	json_t *obj;
	json_array_foreach(pk_json_arr_at(page, "items"), i, obj)
	{
		/* a page may hold hundreds of items, each with its callbacks */
		if (pk_kube_worker_stopping(&inf->w))
			return 1;
		upsert(inf, obj);
	}
	return pk_kube_worker_stopping(&inf->w) ? 1 : 0;
}

/* The keys of the entries a relist did not see (the map cannot change while it is visited). */
struct gone {
	char **keys;
	size_t n, cap;
};

static void collect_unmarked(void *ud, const char *key, void *value)
{
	struct gone *g = ud;
	if (((struct entry *)value)->mark)
		return;
	if (pk_array_reserve(&g->keys, &g->cap, g->n + 1, sizeof(*g->keys)) == PK_OK)
		g->keys[g->n++] = strdup(key);
}

static void relist_end(struct pk_kube_informer *inf, const char *rv)
{
	/* what was not listed is gone */
	struct gone g = {0};
	pk_strmap_foreach(inf->store, collect_unmarked, &g);
	for (size_t k = 0; k < g.n; k++) {
		if (g.keys[k] != NULL)
			remove_entry(inf, g.keys[k]);
		free(g.keys[k]);
	}
	free(g.keys);
	set_rv(inf, rv);
}

/* ---- state ---- */

static void set_state(struct pk_kube_informer *inf, enum pk_kube_informer_state s)
{
	pthread_mutex_lock(&inf->w.mu);
	inf->state = s;
	pthread_cond_broadcast(&inf->w.cv);
	pthread_mutex_unlock(&inf->w.mu);
}

enum pk_kube_informer_state pk_kube_informer_state(struct pk_kube_informer *inf)
{
	pthread_mutex_lock(&inf->w.mu);
	enum pk_kube_informer_state s = inf->state;
	pthread_mutex_unlock(&inf->w.mu);
	return s;
}

bool pk_kube_informer_synced(struct pk_kube_informer *inf)
{
	return pk_kube_informer_state(inf) == PK_KUBE_INFORMER_SYNCED;
}

bool pk_kube_informer_wait_synced(struct pk_kube_informer *inf, long timeout_ms)
{
	struct timespec dl = pk_kube_worker_deadline(timeout_ms < 0 ? 0 : timeout_ms);
	pthread_mutex_lock(&inf->w.mu);
	while (inf->state != PK_KUBE_INFORMER_SYNCED) {
		if (timeout_ms < 0) {
			pthread_cond_wait(&inf->w.cv, &inf->w.mu);
		} else if (pthread_cond_timedwait(&inf->w.cv, &inf->w.mu, &dl) == ETIMEDOUT) {
			break;
		}
	}
	bool ok = inf->state == PK_KUBE_INFORMER_SYNCED;
	pthread_mutex_unlock(&inf->w.mu);
	return ok;
}

/* A counter read under the mutex its writers (count, the loop) hold. */
static unsigned long counter(struct pk_kube_informer *inf, const unsigned long *n)
{
	pthread_mutex_lock(&inf->w.mu);
	unsigned long v = *n;
	pthread_mutex_unlock(&inf->w.mu);
	return v;
}

unsigned long pk_kube_informer_skipped(struct pk_kube_informer *inf)
{
	return counter(inf, &inf->skipped);
}

unsigned long pk_kube_informer_nul_fields(struct pk_kube_informer *inf)
{
	return counter(inf, &inf->nul_fields);
}

unsigned long pk_kube_informer_lists(struct pk_kube_informer *inf)
{
	return counter(inf, &inf->lists);
}

/* ---- reads ---- */

bool pk_kube_informer_get(struct pk_kube_informer *inf, const char *ns, const char *name,
                          pk_kube_visit_fn *fn, void *ud)
{
	char *key = make_key(ns, name);
	if (key == NULL)
		return false;
	pthread_rwlock_rdlock(&inf->lock);
	struct entry *e = pk_strmap_get(inf->store, key);
	if (e != NULL && fn != NULL)
		fn(ud, key, e->item);
	pthread_rwlock_unlock(&inf->lock);
	free(key);
	return e != NULL;
}

struct visit {
	pk_kube_visit_fn *fn;
	void *ud;
	size_t n;
};

static void visit_entry(void *ud, const char *key, void *value)
{
	struct visit *v = ud;
	v->fn(v->ud, key, ((struct entry *)value)->item);
	v->n++;
}

size_t pk_kube_informer_foreach(struct pk_kube_informer *inf, pk_kube_visit_fn *fn, void *ud)
{
	struct visit v = {.fn = fn, .ud = ud};
	pthread_rwlock_rdlock(&inf->lock);
	pk_strmap_foreach(inf->store, visit_entry, &v);
	pthread_rwlock_unlock(&inf->lock);
	return v.n;
}

size_t pk_kube_informer_count(struct pk_kube_informer *inf)
{
	pthread_rwlock_rdlock(&inf->lock);
	size_t n = pk_strmap_len(inf->store);
	pthread_rwlock_unlock(&inf->lock);
	return n;
}

void pk_kube_informer_resource_version(struct pk_kube_informer *inf, char *buf, size_t len)
{
	pthread_rwlock_rdlock(&inf->lock);
	snprintf(buf, len, "%s", inf->rv);
	pthread_rwlock_unlock(&inf->lock);
}

/* ---- the loop ---- */

static int on_event(void *ud, const struct pk_kube_event *ev)
{
	struct pk_kube_informer *inf = ud;
	/* Stopping: drop the rest of what was read (a restart relists). */
	if (pk_kube_worker_stopping(&inf->w))
		return 1;
	switch (ev->type) {
	case PK_KUBE_EVENT_ADDED:
	case PK_KUBE_EVENT_MODIFIED:
		upsert(inf, ev->object);
		break;
	case PK_KUBE_EVENT_DELETED:
		delete_obj(inf, ev->object);
		break;
	case PK_KUBE_EVENT_BOOKMARK:
	case PK_KUBE_EVENT_ERROR:
		break;
	}
	set_rv(inf, ev->resource_version);
	return pk_kube_worker_stopping(&inf->w) ? 1 : 0;
}

static void on_watch_state(void *ud, bool connected)
{
	struct pk_kube_informer *inf = ud;
	set_state(inf, connected ? PK_KUBE_INFORMER_SYNCED : PK_KUBE_INFORMER_STALE);
}

static void *run(void *arg)
{
	struct pk_kube_informer *inf = arg;
	const struct pk_kube_log *log = pk_kube_client_log(inf->c);
	unsigned failures = 0;
	bool synced_once = false;
	while (!pk_kube_worker_stopping(&inf->w)) {
		struct pk_kube_list_opts lo = {.label_selector = inf->label,
		                               .field_selector = inf->field,
		                               .limit = inf->page_size,
		                               .stop = &inf->w.stop,
		                               .on_skip = relist_skip,
		                               .skip_ud = inf};
		struct pk_kube_error e;
		char rv[128];
		relist_begin(inf);
		enum pk_kube_reason rc = pk_kube_client_list_pages(
		    inf->c, &inf->ref, &lo, relist_page, inf, rv, sizeof(rv), &e);
		if (rc != PK_KUBE_OK) {
			if (rc == PK_KUBE_CANCELLED || pk_kube_worker_stopping(&inf->w))
				break;
			long long wait =
			    pk_kube_backoff_ns(failures < 20 ? failures : 20, inf->backoff_base_ms,
			                       inf->backoff_max_ms);
			pk_kube_logf(log, PK_KUBE_LOG_WARN,
			             "informer %s: list failed: %s: %s; retry in %lld ms",
			             inf->resource, pk_kube_reason_name(rc), e.message,
			             wait / 1000000LL);
			failures++;
			pk_kube_worker_nap(&inf->w, (long)(wait / 1000000LL));
			continue;
		}
		relist_end(inf, rv);
		pthread_mutex_lock(&inf->w.mu);
		inf->lists++;
		inf->state = PK_KUBE_INFORMER_SYNCED;
		pthread_cond_broadcast(&inf->w.cv);
		pthread_mutex_unlock(&inf->w.mu);
		if (!synced_once) {
			synced_once = true;
			if (inf->h.on_synced)
				inf->h.on_synced(inf->h.ud);
		}

		struct pk_kube_watch_opts wo = {.label_selector = inf->label,
		                                .field_selector = inf->field,
		                                .resource_version = rv[0] ? rv : NULL,
		                                .bookmarks = inf->bookmarks,
		                                .timeout_s = inf->watch_timeout_s,
		                                .backoff_base_ms = inf->backoff_base_ms,
		                                .backoff_max_ms = inf->backoff_max_ms,
		                                .stop = &inf->w.stop,
		                                .on_state = on_watch_state,
		                                .on_skip = watch_skip,
		                                .skip_ud = inf};
		rc = pk_kube_watch_run(inf->c, &inf->ref, &wo, on_event, inf, NULL, 0, &e);
		set_state(inf, PK_KUBE_INFORMER_STALE);
		if (rc == PK_KUBE_CANCELLED || pk_kube_worker_stopping(&inf->w))
			break;
		if (rc == PK_KUBE_GONE) {
			pk_kube_logf(log, PK_KUBE_LOG_INFO, "informer %s: %s; relisting",
			             inf->resource, e.message);
			failures = 0;
			continue;
		}
		long long wait = pk_kube_backoff_ns(failures < 20 ? failures : 20,
		                                    inf->backoff_base_ms, inf->backoff_max_ms);
		pk_kube_logf(log, PK_KUBE_LOG_WARN,
		             "informer %s: watch failed: %s: %s; relist in %lld ms", inf->resource,
		             pk_kube_reason_name(rc), e.message, wait / 1000000LL);
		failures++;
		pk_kube_worker_nap(&inf->w, (long)(wait / 1000000LL));
	}
	set_state(inf, synced_once ? PK_KUBE_INFORMER_STALE : PK_KUBE_INFORMER_STARTING);
	return NULL;
}

int pk_kube_informer_start(struct pk_kube_informer *inf, struct pk_err *err)
{
	if (inf->w.running)
		return pk_err_set(err, PK_ERR_INVALID, "informer already running");
	/* A stop asked while idle (or by the last run) does not outlive a new start. */
	atomic_store(&inf->w.stop, 0);
	int rc = pk_kube_worker_start(&inf->w, run, inf);
	if (rc != 0)
		return pk_err_set(err, PK_ERR_NOMEM, "cannot start the informer thread: %s",
		                  strerror(rc));
	return PK_OK;
}

void pk_kube_informer_stop_begin(struct pk_kube_informer *inf)
{
	/* Not guarded by `running`: that belongs to the thread that starts and
	 * joins, and a flag left set on an idle informer is cleared by start. */
	if (inf != NULL)
		pk_kube_worker_stop_begin(&inf->w);
}

void pk_kube_informer_stop(struct pk_kube_informer *inf)
{
	if (inf != NULL)
		pk_kube_worker_stop(&inf->w);
}

static void free_entry(void *ud, const char *key, void *value)
{
	(void)key;
	entry_free(ud, value);
}

void pk_kube_informer_free(struct pk_kube_informer *inf)
{
	if (inf == NULL)
		return;
	pk_kube_informer_stop(inf);
	if (inf->store != NULL) {
		pk_strmap_foreach(inf->store, free_entry, inf);
		pk_strmap_free(inf->store, NULL);
	}
	free(inf->group);
	free(inf->version);
	free(inf->resource);
	free(inf->ns);
	free(inf->label);
	free(inf->field);
	pthread_rwlock_destroy(&inf->lock);
	pk_kube_worker_destroy(&inf->w);
	free(inf);
}
