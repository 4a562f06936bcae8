/* kube_watch.c - watch stream splitting, event decoding, the resuming watch loop. */
#include "kube_watch.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"

/* ---- splitter ---- */

/* Deeper than any event the decoder accepts; deeper input is refused here. */
#define SPLIT_MAX_DEPTH (PK_KUBE_JSON_MAX_DEPTH * 2)
/* What names an event that is not decoded: its type, and its object's namespace, name and
 * resourceVersion (the order of the oversize callback's arguments). */
static const char *const event_names[] = {
    "type", "object.metadata.namespace", "object.metadata.name", "object.metadata.resourceVersion"};

/* An event over the cap is read to its end unkept; past this, it is no event. */
#define OVERSIZE_MAX_BYTES (256u << 20)

struct pk_kube_splitter {
	struct pk_buf buf; /* the unfinished object so far, capped at the event cap */
	unsigned depth;    /* brace/bracket depth inside the object; 0 between objects */
	bool in_str, esc;
	uint64_t kinds[SPLIT_MAX_DEPTH / 64]; /* bit d: level d+1 opened with '[' */
	/* an event over the cap, streaming by */
	pk_kube_oversize_fn *ofn;
	void *oud;
	struct pk_kube_scan *oscan; /* non-NULL while one is */
	size_t olen;
};

void pk_kube_splitter_on_oversize(struct pk_kube_splitter *s, pk_kube_oversize_fn *fn, void *ud)
{
	s->ofn = fn;
	s->oud = ud;
}

struct pk_kube_splitter *pk_kube_splitter_new(size_t max_event_bytes)
{
	struct pk_kube_splitter *s = calloc(1, sizeof(*s));
	if (s != NULL)
		pk_buf_init(&s->buf, max_event_bytes ? max_event_bytes : PK_KUBE_EVENT_MAX_BYTES);
	return s;
}

void pk_kube_splitter_free(struct pk_kube_splitter *s)
{
	if (s == NULL)
		return;
	pk_kube_scan_free(s->oscan);
	pk_buf_free(&s->buf);
	free(s);
}

void pk_kube_splitter_reset(struct pk_kube_splitter *s)
{
	pk_buf_clear(&s->buf);
	s->depth = 0;
	s->in_str = s->esc = false;
	pk_kube_scan_free(s->oscan);
	s->oscan = NULL;
	s->olen = 0;
}

size_t pk_kube_splitter_pending(const struct pk_kube_splitter *s)
{
	return s->oscan != NULL ? s->olen : s->buf.len;
}

/* The event passes the cap: what was kept and what follows go through a scan that keeps
 * only its names. */
static int oversize_begin(struct pk_kube_splitter *s, struct pk_err *err)
{
	s->oscan = pk_kube_scan_new(event_names, 4);
	if (s->oscan == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	pk_kube_scan_feed(s->oscan, s->buf.p ? s->buf.p : "", s->buf.len);
	s->olen = s->buf.len;
	pk_buf_clear(&s->buf);
	return PK_OK;
}

/* Takes n bytes of the event being read. */
static int take(struct pk_kube_splitter *s, const char *p, size_t n, struct pk_err *err)
{
	if (s->oscan == NULL && s->ofn != NULL && n > s->buf.max - s->buf.len) {
		int rc = oversize_begin(s, err);
		if (rc != PK_OK)
			return rc;
	}
	if (s->oscan == NULL) {
		int rc = pk_buf_append(&s->buf, p, n);
		if (rc == PK_ERR_TOO_BIG)
			return pk_err_set(err, rc, "watch event larger than %zu bytes", s->buf.max);
		return rc == PK_OK ? PK_OK : pk_err_set(err, rc, "out of memory");
	}
	if (s->olen + n > OVERSIZE_MAX_BYTES)
		return pk_err_set(err, PK_ERR_TOO_BIG, "watch event larger than %u bytes",
		                  OVERSIZE_MAX_BYTES);
	pk_kube_scan_feed(s->oscan, p, n);
	s->olen += n;
	return PK_OK;
}

/* An opening '{' or '[' at data[i]. Past the depth the decoder accepts, the event streams by
 * unkept (what came before goes into the buffer, *start moves). */
static int split_open(struct pk_kube_splitter *s, char c, const char *data, size_t i, size_t *start,
                      struct pk_err *err)
{
	if (s->depth >= SPLIT_MAX_DEPTH && s->ofn == NULL)
		return pk_err_set(err, PK_ERR_TOO_BIG, "watch event nested deeper than %d levels",
		                  SPLIT_MAX_DEPTH);
	if (s->depth >= SPLIT_MAX_DEPTH) {
		/* too deep to decode: it streams by, counted only */
		if (s->oscan == NULL) {
			int rc = take(s, data + *start, i - *start, err);
			if (rc == PK_OK && s->oscan == NULL)
				rc = oversize_begin(s, err);
			if (rc != PK_OK)
				return rc;
			*start = i;
		}
		s->depth++;
		return PK_OK;
	}
	uint64_t bit = 1ULL << (s->depth % 64);
	if (c == '[')
		s->kinds[s->depth / 64] |= bit;
	else
		s->kinds[s->depth / 64] &= ~bit;
	s->depth++;
	return PK_OK;
}

/* A closing '}' or ']'; *done when it ends the object. */
static int split_close(struct pk_kube_splitter *s, char c, bool *done, struct pk_err *err)
{
	if (s->depth > SPLIT_MAX_DEPTH) {
		s->depth--;
		return PK_OK;
	}
	unsigned d = s->depth - 1;
	bool square = (s->kinds[d / 64] >> (d % 64)) & 1;
	if (square != (c == ']'))
		return pk_err_set(err, PK_ERR_INVALID, "watch stream: garbage: '%c' closes '%c'", c,
		                  square ? '[' : '{');
	if (--s->depth == 0)
		*done = true;
	return PK_OK;
}

/* Inside an object: scans data from *i to its end (*done, *i just past it) or to the end of
 * this read. */
static int split_scan(struct pk_kube_splitter *s, const char *data, size_t len, size_t *i,
                      size_t *start, bool *done, struct pk_err *err)
{
	for (; *i < len && !*done; (*i)++) {
		char c = data[*i];
		int rc = PK_OK;
		if (s->in_str) {
			if (s->esc)
				s->esc = false;
			else if (c == '\\')
				s->esc = true;
			else if (c == '"')
				s->in_str = false;
		} else if (c == '"') {
			s->in_str = true;
		} else if (c == '{' || c == '[') {
			rc = split_open(s, c, data, *i, start, err);
		} else if (c == '}' || c == ']') {
			rc = split_close(s, c, done, err);
		}
		if (rc != PK_OK)
			return rc;
	}
	return PK_OK;
}

/* A whole object: to the oversize callback when it streamed by, else to fn. */
static int split_deliver(struct pk_kube_splitter *s, pk_kube_text_fn *fn, void *ud)
{
	if (s->oscan != NULL) {
		struct pk_kube_scan *sc = s->oscan;
		size_t n = s->olen;
		s->oscan = NULL;
		s->olen = 0;
		int rc = s->ofn(s->oud, n, pk_kube_scan_value(sc, 0), pk_kube_scan_value(sc, 1),
		                pk_kube_scan_value(sc, 2), pk_kube_scan_value(sc, 3));
		pk_kube_scan_free(sc);
		return rc;
	}
	int rc = fn(ud, s->buf.p, s->buf.len);
	pk_buf_clear(&s->buf);
	return rc;
}

int pk_kube_splitter_feed(struct pk_kube_splitter *s, const char *data, size_t len,
                          pk_kube_text_fn *fn, void *ud, struct pk_err *err)
{
	size_t i = 0;
	while (i < len) {
		if (s->depth == 0) {
			/* between objects: whitespace, then '{' */
			char c = data[i];
			if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
				i++;
				continue;
			}
			if (c != '{') {
				char q[300];
				pk_text_quote(data + i, len - i, q, sizeof(q));
				return pk_err_set(err, PK_ERR_INVALID,
				                  "watch stream: garbage between events: \"%s\"",
				                  q);
			}
		}
		size_t start = i;
		bool done = false;
		int rc = split_scan(s, data, len, &i, &start, &done, err);
		if (rc == PK_OK)
			rc = take(s, data + start, i - start, err);
		if (rc == PK_OK && done)
			rc = split_deliver(s, fn, ud);
		if (rc != 0)
			return rc;
	}
	return PK_OK;
}

/* ---- events ---- */

static const char *const type_names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

const char *pk_kube_event_type_name(enum pk_kube_event_type t)
{
	return (unsigned)t < 5 ? type_names[t] : "?";
}

int pk_kube_event_decode(const char *text, size_t len, unsigned max_depth, struct pk_kube_event *ev,
                         json_t **root, struct pk_err *err)
{
	memset(ev, 0, sizeof(*ev));
	*root = NULL;
	/* the object is one level down in the event */
	unsigned depth = (max_depth ? max_depth : PK_KUBE_JSON_MAX_DEPTH) + 1;
	int rc = pk_kube_json_parse(text, len, depth, root, err);
	if (rc != PK_OK)
		return rc;
	const char *type = pk_json_cstr_at(*root, "type");
	json_t *obj = json_object_get(*root, "object");
	if (type == NULL || !json_is_object(obj))
		return pk_err_set(err, PK_ERR_INVALID, "watch event without type or object");
	unsigned t;
	for (t = 0; t < 5; t++)
		if (strcmp(type, type_names[t]) == 0)
			break;
	if (t == 5) {
		char q[300];
		pk_text_quote(type, strlen(type), q, sizeof(q));
		return pk_err_set(err, PK_ERR_INVALID, "watch event of unknown type \"%s\"", q);
	}
	ev->type = (enum pk_kube_event_type)t;
	ev->object = obj;
	ev->resource_version = pk_json_meta_cstr(obj, "resourceVersion");
	if (ev->type == PK_KUBE_EVENT_ERROR)
		pk_kube_status_decode_json(0, obj, &ev->error);
	return PK_OK;
}

/* ---- the watch loop ---- */

struct wstate {
	struct pk_kube_splitter *sp;
	pk_kube_watch_fn *fn;
	void *ud;
	const struct pk_kube_watch_opts *o;
	const struct pk_kube_log *log;
	char rv[128];
	const char *path;
	unsigned max_depth;
	size_t max_event;
	unsigned long skipped;
	/* how the current connection ended, when it was our decision */
	enum pk_kube_reason end;
	struct pk_kube_error err;
	struct pk_err perr;
	bool garbage;
	unsigned long events;
	long long connected_ns; /* when this connection's 200 arrived, 0 before */
	bool reported;          /* on_state(true) said for this connection */
};

static void report_good(struct wstate *w)
{
	if (w->reported)
		return;
	w->reported = true;
	if (w->o->on_state != NULL)
		w->o->on_state(w->ud, true);
}

static bool known_type(const char *t)
{
	for (unsigned i = 0; t != NULL && i < 5; i++)
		if (strcmp(t, type_names[i]) == 0)
			return true;
	return false;
}

/* An event whose object cannot be decoded: reported, its resourceVersion taken, passed
 * over. An ERROR event, or text that names no known type, is not an object's: garbage. */
static int skip_event(struct wstate *w, const char *type, const char *ns, const char *name,
                      const char *rv, const char *why)
{
	if (!known_type(type) || strcmp(type, "ERROR") == 0) {
		w->garbage = true;
		return 1;
	}
	char obj[620];
	pk_kube_quote_object(ns, name, obj, sizeof(obj));
	pk_kube_logf(w->log, PK_KUBE_LOG_WARN,
	             "watch %s: %s event of %s passed over, its object cannot be decoded: %s",
	             w->path, type, obj, why);
	if (w->o->on_skip != NULL)
		w->o->on_skip(w->o->skip_ud, ns, name, why);
	w->events++;
	w->skipped++;
	report_good(w);
	/* a resourceVersion is a decimal the server made; anything else is not kept */
	if (rv != NULL && rv[0] != '\0' && strspn(rv, "0123456789") == strlen(rv) &&
	    strlen(rv) < sizeof(w->rv))
		snprintf(w->rv, sizeof(w->rv), "%s", rv);
	return 0;
}

static int on_oversize(void *ud, size_t len, const char *type, const char *ns, const char *name,
                       const char *rv)
{
	struct wstate *w = ud;
	char why[160];
	snprintf(why, sizeof(why), "an event of %zu bytes, over the %zu-byte cap", len,
	         w->max_event);
	return skip_event(w, type, ns, name, rv, why);
}

static int on_text(void *ud, const char *text, size_t len)
{
	struct wstate *w = ud;
	struct pk_kube_event ev;
	json_t *root;
	int rc = pk_kube_event_decode(text, len, w->max_depth, &ev, &root, &w->perr);
	if (rc != PK_OK && root == NULL) {
		/* Whole JSON by structure (the splitter saw to that), yet not decoded. */
		struct pk_kube_scan *sc = pk_kube_scan_new(event_names, 4);
		if (sc == NULL) {
			w->garbage = true;
			return 1;
		}
		pk_kube_scan_feed(sc, text, len);
		rc = skip_event(w, pk_kube_scan_value(sc, 0), pk_kube_scan_value(sc, 1),
		                pk_kube_scan_value(sc, 2), pk_kube_scan_value(sc, 3), w->perr.msg);
		pk_kube_scan_free(sc);
		return rc;
	}
	if (rc != PK_OK) {
		json_decref(root);
		w->garbage = true;
		return 1;
	}
	if (ev.type == PK_KUBE_EVENT_ERROR) {
		w->err = ev.error;
		w->end = ev.error.reason == PK_KUBE_OK ? PK_KUBE_UNKNOWN : ev.error.reason;
		json_decref(root);
		return 1;
	}
	w->events++;
	report_good(w);
	if (ev.resource_version != NULL && ev.resource_version[0] != '\0')
		snprintf(w->rv, sizeof(w->rv), "%s", ev.resource_version);
	rc = w->fn(w->ud, &ev);
	json_decref(root);
	if (rc != 0) {
		w->end = PK_KUBE_CANCELLED;
		return 1;
	}
	return 0;
}

static bool stopped(const struct pk_kube_watch_opts *o);

static int on_piece(void *ud, const char *data, size_t len)
{
	struct wstate *w = ud;
	if (data == NULL) {
		w->connected_ns = pk_kube_now_ns();
		return 0;
	}
	if (len == 0) {
		/* a tick: a second without an ERROR makes the connection good */
		if (w->connected_ns != 0 && pk_kube_now_ns() - w->connected_ns >= 1000000000LL)
			report_good(w);
		return stopped(w->o) ? 1 : 0;
	}
	int rc = pk_kube_splitter_feed(w->sp, data, len, on_text, w, &w->perr);
	if (rc == PK_OK)
		return 0;
	if (rc < 0)
		w->garbage = true;
	return 1;
}

static bool stopped(const struct pk_kube_watch_opts *o)
{
	return o->stop != NULL && atomic_load(o->stop);
}

/* The watch request: base plus the query, resuming at rv when set. */
static int watch_path(const struct pk_kube_watch_opts *o, const char *base, const char *rv,
                      char *path, size_t len)
{
	char num[32];
	snprintf(path, len, "%s", base);
	long timeout = o->timeout_s > 0 ? o->timeout_s : 300 + (long)(pk_kube_now_ns() % 300);
	snprintf(num, sizeof(num), "%ld", timeout);
	if (pk_kube_query_add(path, len, "watch", "true") != PK_OK ||
	    (o->bookmarks &&
	     pk_kube_query_add(path, len, "allowWatchBookmarks", "true") != PK_OK) ||
	    (o->label_selector &&
	     pk_kube_query_add(path, len, "labelSelector", o->label_selector) != PK_OK) ||
	    (o->field_selector &&
	     pk_kube_query_add(path, len, "fieldSelector", o->field_selector) != PK_OK) ||
	    (rv[0] && pk_kube_query_add(path, len, "resourceVersion", rv) != PK_OK))
		return PK_ERR_TOO_BIG;
	return pk_kube_query_add(path, len, "timeoutSeconds", num);
}

/* One connection, until it ends: false when the watch was stopped, else *rc and *serr say
 * how it ended (an ERROR event and garbage included). */
static bool watch_once(struct pk_kube_client *c, struct wstate *w, const char *path,
                       enum pk_kube_reason *rc, struct pk_kube_error *serr)
{
	pk_kube_splitter_reset(w->sp);
	w->end = PK_KUBE_OK;
	w->garbage = false;
	w->connected_ns = 0;
	w->reported = false;
	*rc = pk_kube_client_stream(c, path, on_piece, w, w->o->stop, serr);
	/* an end inside an event is a break, not the server's timeout */
	bool clean = *rc == PK_KUBE_OK && w->end == PK_KUBE_OK && !w->garbage &&
	             pk_kube_splitter_pending(w->sp) == 0;
	if (!clean && w->o->on_state != NULL)
		w->o->on_state(w->ud, false);
	if (w->end == PK_KUBE_CANCELLED || stopped(w->o))
		return false;
	if (w->end != PK_KUBE_OK) {
		/* an ERROR event */
		*rc = w->end;
		*serr = w->err;
	} else if (w->garbage) {
		pk_kube_logf(w->log, PK_KUBE_LOG_WARN, "watch %s: %s; reconnecting from %s",
		             w->path, w->perr.msg, w->rv[0] ? w->rv : "now");
		*rc = PK_KUBE_CONNECTION;
		snprintf(serr->message, sizeof(serr->message), "%s", w->perr.msg);
	}
	return true;
}

/* Whether the watch reconnects after a connection that ended so. */
static bool transient(enum pk_kube_reason rc)
{
	return rc == PK_KUBE_OK || rc == PK_KUBE_CONNECTION || rc == PK_KUBE_TIMEOUT ||
	       rc == PK_KUBE_SERVER_ERROR || rc == PK_KUBE_TOO_MANY_REQUESTS ||
	       rc == PK_KUBE_UNKNOWN;
}

/* The pause before reconnecting after the failures-th failure in a row. */
static void watch_pause(struct wstate *w, enum pk_kube_reason rc, const struct pk_kube_error *serr,
                        unsigned failures, long base, long max)
{
	long long wait = pk_kube_backoff_ns(failures < 20 ? failures : 20, base, max);
	if (rc == PK_KUBE_TOO_MANY_REQUESTS && serr->retry_after_s > 0)
		wait = serr->retry_after_s * 1000000000LL;
	pk_kube_logf(w->log, failures ? PK_KUBE_LOG_WARN : PK_KUBE_LOG_INFO,
	             "watch %s: %s: %s; reconnecting from %s in %lld ms", w->path,
	             pk_kube_reason_name(rc), serr->message, w->rv[0] ? w->rv : "now",
	             wait / 1000000LL);
	pk_kube_nap(w->o->stop, wait);
}

enum pk_kube_reason pk_kube_watch_run(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                      const struct pk_kube_watch_opts *opts, pk_kube_watch_fn *fn,
                                      void *ud, char *rv_out, size_t rv_len,
                                      struct pk_kube_error *e)
{
	static const struct pk_kube_watch_opts zero;
	const struct pk_kube_watch_opts *o = opts ? opts : &zero;
	struct wstate w = {.fn = fn, .ud = ud, .o = o, .log = pk_kube_client_log(c)};
	struct pk_kube_ref coll = *r;
	coll.name = NULL;
	coll.subresource = NULL;
	long base = o->backoff_base_ms > 0 ? o->backoff_base_ms : 200;
	long max = o->backoff_max_ms > 0 ? o->backoff_max_ms : 30000;
	unsigned failures = 0;
	enum pk_kube_reason rc;
	char base_path[4096];

	if (o->resource_version != NULL)
		snprintf(w.rv, sizeof(w.rv), "%s", o->resource_version);
	if (pk_kube_ref_path(&coll, base_path, sizeof(base_path)) != PK_OK)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0, "cannot build the watch path");
	w.sp = pk_kube_splitter_new(o->max_event_bytes);
	if (w.sp == NULL)
		return pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
	w.path = base_path;
	w.max_event = o->max_event_bytes ? o->max_event_bytes : PK_KUBE_EVENT_MAX_BYTES;
	pk_kube_splitter_on_oversize(w.sp, on_oversize, &w);

	for (;;) {
		char path[8192];
		struct pk_kube_error serr;
		unsigned long before = w.events;
		if (stopped(o)) {
			rc = pk_kube_error_set(e, PK_KUBE_CANCELLED, 0, "watch stopped");
			break;
		}
		if (watch_path(o, base_path, w.rv, path, sizeof(path)) != PK_OK) {
			rc = pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0, "watch query too long");
			break;
		}
		if (!watch_once(c, &w, path, &rc, &serr)) {
			rc = pk_kube_error_set(e, PK_KUBE_CANCELLED, 0, "watch stopped");
			break;
		}
		if (!transient(rc)) { /* 410 Gone among them: the caller lists again */
			if (e != NULL)
				*e = serr;
			break;
		}
		if (rc == PK_KUBE_OK) {
			/* a clean end (the server's timeoutSeconds): resume at once, or
			 * after a short pause when the connection carried nothing */
			failures = 0;
			if (w.events == before)
				pk_kube_nap(o->stop, base * 1000000LL);
			continue;
		}
		if (w.events > before)
			failures = 0;
		watch_pause(&w, rc, &serr, failures, base, max);
		failures++;
	}
	if (rv_out != NULL && rv_len > 0)
		snprintf(rv_out, rv_len, "%s", w.rv);
	pk_kube_splitter_free(w.sp);
	return rc;
}
