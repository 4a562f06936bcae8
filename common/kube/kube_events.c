/* kube_events.c - events.k8s.io/v1 Events with series aggregation. */
#include "kube_events.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUCKETS        256
#define EVENTS_GROUP   "events.k8s.io"
#define EVENTS_VERSION "v1"

struct ev {
	struct ev *next;
	char *key;    /* what makes two events the same */
	char *ns;     /* of the Event object */
	char *name;   /* of the Event object; NULL while being created */
	long count;   /* occurrences */
	long written; /* occurrences the API knows of */
	long long last_seen_ns;
	long long last_write_ns;
	bool busy; /* a write for it is in flight */
};

struct pk_kube_recorder {
	struct pk_kube_client *c;
	char *controller, *instance;
	long long window_ns, flush_ns;
	size_t max_cached;
	pthread_mutex_t mu;
	struct ev *b[BUCKETS];
	size_t n;
	unsigned long created, updated;
	unsigned seq;
};

int pk_kube_recorder_new(struct pk_kube_client *c, const struct pk_kube_recorder_opts *o,
                         struct pk_kube_recorder **out, struct pk_err *err)
{
	*out = NULL;
	if (o == NULL || o->controller == NULL)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "an event recorder needs a reporting controller");
	struct pk_kube_recorder *r = calloc(1, sizeof(*r));
	if (r == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	char host[129] = "poolkeeper";
	if (o->instance == NULL && gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "poolkeeper");
	host[sizeof(host) - 1] = '\0';
	r->c = c;
	r->controller = strdup(o->controller);
	r->instance = strndup(o->instance ? o->instance : host, 128); /* the API's limit */
	r->window_ns = (long long)(o->series_window_s > 0 ? o->series_window_s
	                                                  : PK_KUBE_EVENT_SERIES_WINDOW_S) *
	               1000000000LL;
	r->flush_ns =
	    (long long)(o->flush_ms > 0 ? o->flush_ms : PK_KUBE_EVENT_FLUSH_MS) * 1000000LL;
	r->max_cached = o->max_cached ? o->max_cached : PK_KUBE_EVENT_MAX_CACHED;
	pthread_mutex_init(&r->mu, NULL);
	if (r->controller == NULL || r->instance == NULL) {
		pk_kube_recorder_free(r);
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	*out = r;
	return PK_OK;
}

static unsigned bucket(const char *key)
{
	uint32_t h = 2166136261u;
	for (; *key; key++)
		h = (h ^ (unsigned char)*key) * 16777619u;
	return h % BUCKETS;
}

static void ev_free(struct ev *e)
{
	free(e->key);
	free(e->ns);
	free(e->name);
	free(e);
}

void pk_kube_micro_time(const struct timespec *t, char *buf, size_t len)
{
	struct tm tm;
	gmtime_r(&t->tv_sec, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, t->tv_nsec / 1000);
}

/* An Event in ns (name NULL: the collection). */
static struct pk_kube_ref event_ref(const char *ns, const char *name)
{
	return (struct pk_kube_ref){.group = EVENTS_GROUP,
	                            .version = EVENTS_VERSION,
	                            .resource = "events",
	                            .namespace = ns,
	                            .name = name};
}

/* PATCHes the series of e to `count`. Called without the lock. */
static enum pk_kube_reason write_series(struct pk_kube_recorder *r, const char *ns,
                                        const char *name, long count)
{
	char now[64];
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	pk_kube_micro_time(&t, now, sizeof(now));
	json_t *p = json_pack("{s:{s:I,s:s}}", "series", "count", (json_int_t)count,
	                      "lastObservedTime", now);
	struct pk_kube_ref ref = event_ref(ns, name);
	struct pk_kube_error e;
	enum pk_kube_reason rc =
	    p ? pk_kube_client_patch(r->c, &ref, PK_KUBE_PATCH_MERGE, p, NULL, NULL, &e)
	      : PK_KUBE_NOMEM;
	json_decref(p);
	if (rc != PK_KUBE_OK)
		pk_kube_logf(pk_kube_client_log(r->c), PK_KUBE_LOG_WARN,
		             "event %s/%s: series update: %s: %s", ns, name,
		             pk_kube_reason_name(rc), e.message);
	return rc;
}

/* Writes e's count if it is behind; the lock is held on entry and exit. */
static enum pk_kube_reason sync_locked(struct pk_kube_recorder *r, struct ev *e)
{
	if (e->busy || e->name == NULL || e->written >= e->count)
		return PK_KUBE_OK;
	e->busy = true;
	long count = e->count;
	char *ns = strdup(e->ns), *name = strdup(e->name);
	pthread_mutex_unlock(&r->mu);
	enum pk_kube_reason rc = ns && name ? write_series(r, ns, name, count) : PK_KUBE_NOMEM;
	pthread_mutex_lock(&r->mu);
	free(ns);
	free(name);
	e->busy = false;
	e->last_write_ns = pk_kube_now_ns();
	if (rc == PK_KUBE_OK) {
		if (count > e->written)
			e->written = count;
		r->updated++;
	}
	return rc;
}

/* Drops the entry seen longest ago (its count written first). Lock held. */
static void evict_one(struct pk_kube_recorder *r)
{
	struct ev **victim = NULL;
	for (int i = 0; i < BUCKETS; i++)
		for (struct ev **pp = &r->b[i]; *pp; pp = &(*pp)->next)
			if (!(*pp)->busy &&
			    (victim == NULL || (*pp)->last_seen_ns < (*victim)->last_seen_ns))
				victim = pp;
	if (victim == NULL)
		return;
	struct ev *e = *victim;
	*victim = e->next;
	r->n--;
	if (e->name != NULL && e->written < e->count) {
		pthread_mutex_unlock(&r->mu);
		(void)write_series(r, e->ns, e->name, e->count);
		pthread_mutex_lock(&r->mu);
	}
	ev_free(e);
}

/* What makes two occurrences the same event; NULL when out of memory. */
static char *event_key(const struct pk_kube_object_ref *reg, const char *ns, bool warning,
                       const char *reason, const char *action, const char *note)
{
	size_t klen = strlen(note) + strlen(reason) + strlen(action) + strlen(reg->kind) +
	              strlen(reg->name) + strlen(ns) + (reg->uid ? strlen(reg->uid) : 0) + 16;
	char *key = malloc(klen);
	if (key != NULL)
		snprintf(key, klen, "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%c\x1f%s", reg->kind, ns,
		         reg->name, reg->uid ? reg->uid : "", reason, action, warning ? 'W' : 'N',
		         note);
	return key;
}

/* Unlinks and frees e when it is still in bucket h. Lock held. */
static void ev_forget(struct pk_kube_recorder *r, unsigned h, struct ev *e)
{
	struct ev **pp = &r->b[h];
	while (*pp && *pp != e)
		pp = &(*pp)->next;
	if (*pp == e) {
		*pp = e->next;
		r->n--;
		ev_free(e);
	}
}

/* The entry for key, or NULL. One whose series ended is written and dropped: the next
 * occurrence starts a new Event. Lock held. */
static struct ev *ev_find(struct pk_kube_recorder *r, unsigned h, const char *key, long long now)
{
	struct ev *e = r->b[h];
	while (e != NULL && strcmp(e->key, key) != 0)
		e = e->next;
	if (e != NULL && now - e->last_seen_ns > r->window_ns && !e->busy) {
		(void)sync_locked(r, e);
		ev_forget(r, h, e);
		e = NULL;
	}
	return e;
}

/* A new entry for key (taken: freed on failure), marked as being created, after making room.
 * Lock held; NULL when out of memory. */
static struct ev *ev_add(struct pk_kube_recorder *r, unsigned h, char *key, const char *ns,
                         long long now)
{
	while (r->n >= r->max_cached && r->n > 0) {
		size_t before = r->n;
		evict_one(r);
		if (r->n == before)
			break;
	}
	struct ev *e = calloc(1, sizeof(*e));
	if (e == NULL || (e->ns = strdup(ns)) == NULL) {
		free(e);
		free(key);
		return NULL;
	}
	e->key = key;
	e->count = 1;
	e->last_seen_ns = now;
	e->busy = true; /* being created */
	e->next = r->b[h];
	r->b[h] = e;
	r->n++;
	return e;
}

/* POSTs the Event named evname. Called without the lock. */
static enum pk_kube_reason create_event(struct pk_kube_recorder *r,
                                        const struct pk_kube_object_ref *reg, const char *ns,
                                        const char *evname, bool warning, const char *reason,
                                        const char *action, const char *note)
{
	char t[64];
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	pk_kube_micro_time(&now, t, sizeof(t));
	json_t *regarding = json_pack("{s:s,s:s,s:s}", "apiVersion", reg->api_version, "kind",
	                              reg->kind, "name", reg->name);
	if (regarding && reg->namespace)
		json_object_set_new(regarding, "namespace", json_string(reg->namespace));
	if (regarding && reg->uid)
		json_object_set_new(regarding, "uid", json_string(reg->uid));
	json_t *obj =
	    json_pack("{s:s,s:s,s:{s:s,s:s},s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o}", "apiVersion",
	              EVENTS_GROUP "/" EVENTS_VERSION, "kind", "Event", "metadata", "name", evname,
	              "namespace", ns, "eventTime", t, "reportingController", r->controller,
	              "reportingInstance", r->instance, "action", action, "reason", reason, "type",
	              warning ? "Warning" : "Normal", "note", note, "regarding", regarding);
	struct pk_kube_ref ref = event_ref(ns, NULL);
	struct pk_kube_error err;
	enum pk_kube_reason rc =
	    obj ? pk_kube_client_create(r->c, &ref, obj, NULL, NULL, &err) : PK_KUBE_NOMEM;
	json_decref(obj);
	if (rc != PK_KUBE_OK)
		pk_kube_logf(pk_kube_client_log(r->c), PK_KUBE_LOG_WARN,
		             "event %s for %s %s/%s: %s: %s", reason, reg->kind, ns, reg->name,
		             pk_kube_reason_name(rc), obj ? err.message : "out of memory");
	return rc;
}

/* After the create: the entry knows its Event (and writes the occurrences counted
 * meanwhile), or is forgotten so that the next occurrence creates it again. */
static void ev_created(struct pk_kube_recorder *r, unsigned h, struct ev *e, const char *evname,
                       enum pk_kube_reason rc)
{
	pthread_mutex_lock(&r->mu);
	e->busy = false;
	e->last_write_ns = pk_kube_now_ns();
	if (rc == PK_KUBE_OK) {
		r->created++;
		e->name = strdup(evname);
		e->written = 1;
		if (e->count > 1)
			(void)sync_locked(r, e);
	} else {
		ev_forget(r, h, e);
	}
	pthread_mutex_unlock(&r->mu);
}

enum pk_kube_reason pk_kube_recorder_emit(struct pk_kube_recorder *r,
                                          const struct pk_kube_object_ref *reg, bool warning,
                                          const char *reason, const char *action, const char *fmt,
                                          ...)
{
	char note[PK_KUBE_EVENT_NOTE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(note, sizeof(note), fmt, ap);
	va_end(ap);
	const char *ns = reg->namespace && reg->namespace[0] ? reg->namespace : "default";
	char *key = event_key(reg, ns, warning, reason, action, note);
	if (key == NULL)
		return PK_KUBE_NOMEM;
	long long now = pk_kube_now_ns();
	unsigned h = bucket(key);

	pthread_mutex_lock(&r->mu);
	struct ev *e = ev_find(r, h, key, now);
	if (e != NULL) {
		free(key);
		e->count++;
		e->last_seen_ns = now;
		enum pk_kube_reason rc = PK_KUBE_OK;
		/* the second occurrence at once, later ones at most once per interval */
		if (e->written == 1 || now - e->last_write_ns >= r->flush_ns)
			rc = sync_locked(r, e);
		pthread_mutex_unlock(&r->mu);
		return rc;
	}
	char evname[300];
	snprintf(evname, sizeof(evname), "%.200s.%llx%02x", reg->name, (unsigned long long)now,
	         r->seq++ & 0xff);
	e = ev_add(r, h, key, ns, now);
	pthread_mutex_unlock(&r->mu);
	if (e == NULL)
		return PK_KUBE_NOMEM;
	enum pk_kube_reason rc = create_event(r, reg, ns, evname, warning, reason, action, note);
	ev_created(r, h, e, evname, rc);
	return rc;
}

enum pk_kube_reason pk_kube_recorder_flush(struct pk_kube_recorder *r)
{
	enum pk_kube_reason first = PK_KUBE_OK;
	pthread_mutex_lock(&r->mu);
	/* sync_locked drops the lock, so restart the scan after each write */
	for (bool again = true; again;) {
		again = false;
		for (int i = 0; i < BUCKETS && !again; i++) {
			for (struct ev *e = r->b[i]; e; e = e->next) {
				if (!e->busy && e->name != NULL && e->written < e->count) {
					enum pk_kube_reason rc = sync_locked(r, e);
					if (rc != PK_KUBE_OK && first == PK_KUBE_OK)
						first = rc;
					/* a failed write is not retried here, or flush would spin
					 */
					if (rc != PK_KUBE_OK)
						e->written = e->count;
					again = true;
					break;
				}
			}
		}
	}
	pthread_mutex_unlock(&r->mu);
	return first;
}

void pk_kube_recorder_stats(struct pk_kube_recorder *r, unsigned long *created,
                            unsigned long *updated)
{
	pthread_mutex_lock(&r->mu);
	*created = r->created;
	*updated = r->updated;
	pthread_mutex_unlock(&r->mu);
}

void pk_kube_recorder_free(struct pk_kube_recorder *r)
{
	if (r == NULL)
		return;
	(void)pk_kube_recorder_flush(r);
	for (int i = 0; i < BUCKETS; i++) {
		struct ev *e = r->b[i], *next;
		for (; e; e = next) {
			next = e->next;
			ev_free(e);
		}
	}
	free(r->controller);
	free(r->instance);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
