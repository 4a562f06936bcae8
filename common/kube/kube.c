/* kube.c - error classes, Status decoding, bounded JSON, clocks. */
#include "kube.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "json.h"

void pk_kube_logf(const struct pk_kube_log *log, enum pk_kube_level level, const char *fmt, ...)
{
	if (log == NULL || log->fn == NULL || level < log->min_level)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log->fn(log->ud, level, msg);
}

static const char *const reason_names[] = {
    [PK_KUBE_OK] = "OK",
    [PK_KUBE_NOT_FOUND] = "NotFound",
    [PK_KUBE_ALREADY_EXISTS] = "AlreadyExists",
    [PK_KUBE_CONFLICT] = "Conflict",
    [PK_KUBE_INVALID] = "Invalid",
    [PK_KUBE_BAD_REQUEST] = "BadRequest",
    [PK_KUBE_UNAUTHORIZED] = "Unauthorized",
    [PK_KUBE_FORBIDDEN] = "Forbidden",
    [PK_KUBE_METHOD_NOT_ALLOWED] = "MethodNotAllowed",
    [PK_KUBE_TOO_MANY_REQUESTS] = "TooManyRequests",
    [PK_KUBE_GONE] = "Gone",
    [PK_KUBE_TIMEOUT] = "Timeout",
    [PK_KUBE_SERVER_ERROR] = "ServerError",
    [PK_KUBE_CONNECTION] = "Connection",
    [PK_KUBE_TOO_LARGE] = "TooLarge",
    [PK_KUBE_BAD_RESPONSE] = "BadResponse",
    [PK_KUBE_CONFIG] = "Config",
    [PK_KUBE_NOMEM] = "NoMemory",
    [PK_KUBE_CANCELLED] = "Cancelled",
    [PK_KUBE_UNKNOWN] = "Unknown",
};

const char *pk_kube_reason_name(enum pk_kube_reason r)
{
	if ((unsigned)r < sizeof(reason_names) / sizeof(reason_names[0]) && reason_names[r])
		return reason_names[r];
	return "Unknown";
}

enum pk_kube_reason pk_kube_error_set(struct pk_kube_error *e, enum pk_kube_reason r, long code,
                                      const char *fmt, ...)
{
	if (e == NULL)
		return r;
	e->reason = r;
	e->code = code;
	e->status_reason[0] = '\0';
	e->retry_after_s = 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return r;
}

static enum pk_kube_reason from_code(long code)
{
	if (code >= 200 && code < 300)
		return PK_KUBE_OK;
	switch (code) {
	case 400:
		return PK_KUBE_BAD_REQUEST;
	case 401:
		return PK_KUBE_UNAUTHORIZED;
	case 403:
		return PK_KUBE_FORBIDDEN;
	case 404:
		return PK_KUBE_NOT_FOUND;
	case 405:
		return PK_KUBE_METHOD_NOT_ALLOWED;
	case 408:
	case 504:
		return PK_KUBE_TIMEOUT;
	case 409:
		return PK_KUBE_CONFLICT;
	case 410:
		return PK_KUBE_GONE;
	case 413:
		return PK_KUBE_TOO_LARGE;
	case 422:
		return PK_KUBE_INVALID;
	case 429:
		return PK_KUBE_TOO_MANY_REQUESTS;
	}
	if (code >= 500 && code < 600)
		return PK_KUBE_SERVER_ERROR;
	return PK_KUBE_UNKNOWN;
}

/* metav1.StatusReason values (k8s.io/apimachinery/pkg/apis/meta/v1/types.go). */
static const struct {
	const char *name;
	enum pk_kube_reason r;
} status_reasons[] = {
    {"NotFound", PK_KUBE_NOT_FOUND},
    {"AlreadyExists", PK_KUBE_ALREADY_EXISTS},
    {"Conflict", PK_KUBE_CONFLICT},
    {"Invalid", PK_KUBE_INVALID},
    {"BadRequest", PK_KUBE_BAD_REQUEST},
    {"Unauthorized", PK_KUBE_UNAUTHORIZED},
    {"Forbidden", PK_KUBE_FORBIDDEN},
    {"MethodNotAllowed", PK_KUBE_METHOD_NOT_ALLOWED},
    {"TooManyRequests", PK_KUBE_TOO_MANY_REQUESTS},
    {"Gone", PK_KUBE_GONE},
    {"Expired", PK_KUBE_GONE}, /* "the resourceVersion is too old": relist, as for Gone */
    {"Timeout", PK_KUBE_TIMEOUT},
    {"ServerTimeout", PK_KUBE_TIMEOUT},
    {"InternalError", PK_KUBE_SERVER_ERROR},
    {"ServiceUnavailable", PK_KUBE_SERVER_ERROR},
    {"RequestEntityTooLarge", PK_KUBE_TOO_LARGE},
};

enum pk_kube_reason pk_kube_status_decode_json(long code, const json_t *status,
                                               struct pk_kube_error *e)
{
	struct pk_kube_error tmp;
	if (e == NULL)
		e = &tmp;
	memset(e, 0, sizeof(*e));

	const char *reason = pk_json_cstr_at(status, "reason");
	const char *message = pk_json_cstr_at(status, "message");
	json_int_t c;
	const bool from_body = code == 0;
	if (code == 0 && pk_json_int_at(status, "code", &c) && c >= 100 && c < 600)
		code = (long)c;
	e->code = code;
	e->reason = from_code(code);
	if (reason != NULL) {
		snprintf(e->status_reason, sizeof(e->status_reason), "%s", reason);
		for (size_t i = 0; i < sizeof(status_reasons) / sizeof(status_reasons[0]); i++) {
			if (strcmp(reason, status_reasons[i].name) == 0) {
				e->reason = status_reasons[i].r;
				break;
			}
		}
	}
	/* A code taken from the body (an ERROR watch event) means success only
	 * when the Status says so: "code": 2xx without status "Success" is not. */
	if (e->reason == PK_KUBE_OK && from_body) {
		const char *st = pk_json_cstr_at(status, "status");
		if (st == NULL || strcmp(st, "Success") != 0)
			e->reason = PK_KUBE_UNKNOWN;
	}
	json_int_t ra;
	if (pk_json_int_at(pk_json_obj_at(status, "details"), "retryAfterSeconds", &ra) && ra > 0 &&
	    ra < 86400)
		e->retry_after_s = (long)ra;
	/* An empty message says nothing: the caller still gets words to show. */
	if (message != NULL && message[0] != '\0')
		snprintf(e->message, sizeof(e->message), "%s", message);
	else
		snprintf(e->message, sizeof(e->message), "HTTP %ld %s", code,
		         pk_kube_reason_name(e->reason));
	return e->reason;
}

enum pk_kube_reason pk_kube_status_decode(long code, const char *body, size_t len,
                                          struct pk_kube_error *e)
{
	struct pk_kube_error tmp;
	if (e == NULL)
		e = &tmp;
	json_t *st = NULL;
	if (body != NULL && len > 0 && len <= (1u << 20)) {
		struct pk_err perr;
		if (pk_kube_json_parse(body, len, 32, &st, &perr) != PK_OK)
			st = NULL;
	}
	const char *kind = pk_json_cstr_at(st, "kind");
	if (json_is_object(st) && (kind == NULL || strcmp(kind, "Status") == 0)) {
		enum pk_kube_reason r = pk_kube_status_decode_json(code, st, e);
		json_decref(st);
		return r;
	}
	json_decref(st);
	memset(e, 0, sizeof(*e));
	e->code = code;
	e->reason = from_code(code);
	char quoted[300];
	pk_text_quote(body ? body : "", body ? len : 0, quoted, sizeof(quoted));
	snprintf(e->message, sizeof(e->message), "HTTP %ld %s%s%s", code,
	         pk_kube_reason_name(e->reason), quoted[0] ? ": " : "", quoted);
	return e->reason;
}

/* ---- bounded JSON ---- */

int pk_kube_json_parse(const char *buf, size_t len, unsigned max_depth, json_t **out,
                       struct pk_err *err)
{
	*out = NULL;
	if (max_depth == 0)
		max_depth = PK_KUBE_JSON_MAX_DEPTH;
	unsigned depth = 0;
	bool in_str = false;
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '{' || c == '[') {
			if (++depth > max_depth)
				return pk_err_set(err, PK_ERR_TOO_BIG,
				                  "JSON nested deeper than %u levels at byte %zu",
				                  max_depth, i);
		} else if ((c == '}' || c == ']') && depth > 0) {
			depth--;
		}
	}
	json_error_t je;
	/* "\u0000" in a string is the API server's to accept, and it does:
	 * refusing it here would refuse a whole page or stream for one field. */
	json_t *v = json_loadb(buf, len, JSON_ALLOW_NUL, &je);
	if (v == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "bad JSON at byte %d: %s", je.position,
		                  je.text);
	*out = v;
	return PK_OK;
}

/* ---- scanning text that is not decoded ---- */

#define SCAN_PARTS 4  /* parts of a path */
#define SCAN_KEY   64 /* longest member name compared */

struct pk_kube_scan {
	size_t npaths;
	char parts[PK_KUBE_SCAN_PATHS][SCAN_PARTS][SCAN_KEY];
	size_t nparts[PK_KUBE_SCAN_PATHS];
	char *value[PK_KUBE_SCAN_PATHS]; /* decoded, once seen */
	size_t bytes;
	/* where the scan is */
	unsigned depth;
	bool in_str, esc, in_key;
	int capture; /* path whose value this string is, or -1 */
	char raw[PK_KUBE_SCAN_VALUE_MAX + 2];
	size_t rawlen;
	bool rawlong;
	/* levels 1..SCAN_PARTS: an object (with the member being read) or an array */
	struct {
		bool obj, want_key;
		char key[SCAN_KEY];
		size_t klen;
		bool klong;
	} lv[SCAN_PARTS + 1];
};

struct pk_kube_scan *pk_kube_scan_new(const char *const *paths, size_t n)
{
	if (n > PK_KUBE_SCAN_PATHS)
		return NULL;
	struct pk_kube_scan *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->npaths = n;
	s->capture = -1;
	for (size_t i = 0; i < n; i++) {
		const char *p = paths[i];
		size_t k = 0;
		while (*p) {
			const char *dot = strchr(p, '.');
			size_t len = dot ? (size_t)(dot - p) : strlen(p);
			if (k == SCAN_PARTS || len >= SCAN_KEY) {
				free(s);
				return NULL;
			}
			memcpy(s->parts[i][k], p, len);
			s->parts[i][k][len] = '\0';
			k++;
			p += len + (dot != NULL);
		}
		s->nparts[i] = k;
	}
	return s;
}

void pk_kube_scan_free(struct pk_kube_scan *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->npaths; i++)
		free(s->value[i]);
	free(s);
}

void pk_kube_scan_reset(struct pk_kube_scan *s)
{
	for (size_t i = 0; i < s->npaths; i++) {
		free(s->value[i]);
		s->value[i] = NULL;
	}
	s->bytes = 0;
	s->depth = 0;
	s->in_str = s->esc = s->in_key = false;
	s->capture = -1;
}

const char *pk_kube_scan_value(const struct pk_kube_scan *s, size_t i)
{
	return i < s->npaths ? s->value[i] : NULL;
}

size_t pk_kube_scan_bytes(const struct pk_kube_scan *s)
{
	return s->bytes;
}

/* Which path, if any, the value starting now at s->depth is at. */
static int scan_match(const struct pk_kube_scan *s)
{
	for (size_t i = 0; i < s->npaths; i++) {
		if (s->value[i] != NULL || s->nparts[i] != s->depth)
			continue;
		bool ok = true;
		for (unsigned d = 1; ok && d <= s->depth; d++) {
			const char *want = s->parts[i][d - 1];
			if (s->lv[d].obj)
				ok = !s->lv[d].klong && strcmp(want, s->lv[d].key) == 0;
			else
				ok = strcmp(want, "*") == 0;
		}
		if (ok)
			return (int)i;
	}
	return -1;
}

/* The captured string (its JSON text between the quotes) decoded, kept as the path's value. */
static void scan_keep(struct pk_kube_scan *s)
{
	if (s->rawlong)
		return;
	char q[PK_KUBE_SCAN_VALUE_MAX + 4];
	q[0] = '"';
	memcpy(q + 1, s->raw, s->rawlen);
	q[s->rawlen + 1] = '"';
	json_t *v = json_loadb(q, s->rawlen + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	const char *t = pk_json_cstr(v);
	if (t != NULL)
		s->value[s->capture] = strdup(t);
	json_decref(v);
}

static void scan_char(struct pk_kube_scan *s, char c)
{
	if (s->in_str) {
		bool end = !s->esc && c == '"';
		s->esc = !s->esc && c == '\\';
		if (end) {
			s->in_str = false;
			if (s->in_key) {
				s->in_key = false;
			} else if (s->capture >= 0) {
				scan_keep(s);
				s->capture = -1;
			}
			return;
		}
		if (s->in_key && s->depth <= SCAN_PARTS) {
			if (s->lv[s->depth].klen + 1 < SCAN_KEY)
				s->lv[s->depth].key[s->lv[s->depth].klen++] = c;
			else
				s->lv[s->depth].klong = true;
			s->lv[s->depth].key[s->lv[s->depth].klen] = '\0';
		} else if (s->capture >= 0) {
			if (s->rawlen < PK_KUBE_SCAN_VALUE_MAX)
				s->raw[s->rawlen++] = c;
			else
				s->rawlong = true;
		}
		return;
	}
	switch (c) {
	case '"':
		s->in_str = true;
		s->esc = false;
		if (s->depth >= 1 && s->depth <= SCAN_PARTS && s->lv[s->depth].obj &&
		    s->lv[s->depth].want_key) {
			s->in_key = true;
			s->lv[s->depth].klen = 0;
			s->lv[s->depth].klong = false;
			s->lv[s->depth].key[0] = '\0';
		} else {
			s->capture = s->depth <= SCAN_PARTS ? scan_match(s) : -1;
			s->rawlen = 0;
			s->rawlong = false;
		}
		break;
	case ':':
		if (s->depth >= 1 && s->depth <= SCAN_PARTS)
			s->lv[s->depth].want_key = false;
		break;
	case ',':
		if (s->depth >= 1 && s->depth <= SCAN_PARTS && s->lv[s->depth].obj)
			s->lv[s->depth].want_key = true;
		break;
	case '{':
	case '[':
		s->depth++;
		if (s->depth <= SCAN_PARTS) {
			s->lv[s->depth].obj = c == '{';
			s->lv[s->depth].want_key = c == '{';
			s->lv[s->depth].klen = 0;
			s->lv[s->depth].klong = false;
			s->lv[s->depth].key[0] = '\0';
		}
		break;
	case '}':
	case ']':
		if (s->depth > 0)
			s->depth--;
		break;
	default:
		break;
	}
}

void pk_kube_scan_feed(struct pk_kube_scan *s, const char *data, size_t len)
{
	for (size_t i = 0; i < len; i++)
		scan_char(s, data[i]);
	s->bytes += len;
}

/* A scan of text for the namespace (value 0) and name (value 1) of the object at prefix. */
static struct pk_kube_scan *scan_names(const char *text, size_t len, const char *prefix)
{
	char pn[64], pns[64];
	bool under = prefix != NULL && prefix[0] != '\0';
	snprintf(pn, sizeof(pn), "%s%smetadata.name", under ? prefix : "", under ? "." : "");
	snprintf(pns, sizeof(pns), "%s%smetadata.namespace", under ? prefix : "", under ? "." : "");
	const char *paths[] = {pns, pn};
	struct pk_kube_scan *s = pk_kube_scan_new(paths, 2);
	if (s != NULL)
		pk_kube_scan_feed(s, text, len);
	return s;
}

void pk_kube_object_ident(const char *text, size_t len, const char *prefix, char *buf,
                          size_t buflen)
{
	if (buflen == 0)
		return;
	buf[0] = '\0';
	struct pk_kube_scan *s = scan_names(text, len, prefix);
	if (s == NULL)
		return;
	const char *ns = pk_kube_scan_value(s, 0), *name = pk_kube_scan_value(s, 1);
	char qn[300], qns[300];
	if (name != NULL) {
		pk_text_quote(name, strlen(name), qn, sizeof(qn));
		if (ns != NULL) {
			pk_text_quote(ns, strlen(ns), qns, sizeof(qns));
			snprintf(buf, buflen, "%s/%s", qns, qn);
		} else {
			snprintf(buf, buflen, "%s", qn);
		}
	}
	pk_kube_scan_free(s);
}

/* ---- list pages, object by object ---- */

static size_t skip_ws(const char *p, size_t i, size_t n)
{
	while (i < n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t'))
		i++;
	return i;
}

/*
 * The end (one past) of the JSON value starting at p[i], by structure only
 * (strings, brackets; jansson checks the rest); 0 when the text ends first.
 */
static size_t value_end(const char *p, size_t i, size_t n)
{
	size_t depth = 0;
	bool in_str = false;
	if (i >= n)
		return 0;
	if (p[i] != '"' && p[i] != '{' && p[i] != '[') {
		while (i < n && p[i] != ',' && p[i] != '}' && p[i] != ']' && p[i] != ' ' &&
		       p[i] != '\n' && p[i] != '\r' && p[i] != '\t')
			i++;
		return i;
	}
	for (; i < n; i++) {
		char c = p[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			if (!in_str && depth == 0)
				return i + 1;
			continue;
		}
		if (c == '"')
			in_str = true;
		else if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0)
			return i + 1;
	}
	return 0;
}

struct span {
	size_t start, end;
};

struct page_shape {
	size_t items_start, items_end; /* the items array, brackets included; 0, 0: none */
	struct span *items;
	size_t nitems, cap;
};

static int shape_add(struct page_shape *ps, size_t start, size_t end)
{
	if (pk_array_reserve(&ps->items, &ps->cap, ps->nitems + 1, sizeof(*ps->items)) != PK_OK)
		return PK_ERR_NOMEM;
	ps->items[ps->nitems++] = (struct span){start, end};
	return PK_OK;
}

/* Finds the top-level "items" array and each of its members in a List's text. */
static int page_shape(const char *p, size_t n, struct page_shape *ps, struct pk_err *err)
{
	size_t i = skip_ws(p, 0, n);
	if (i >= n || p[i] != '{')
		return pk_err_set(err, PK_ERR_INVALID, "a list page that is not a JSON object");
	i = skip_ws(p, i + 1, n);
	while (i < n && p[i] != '}') {
		size_t kend = p[i] == '"' ? value_end(p, i, n) : 0;
		if (kend == 0)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "list page: no member name at byte %zu", i);
		bool items = kend - i == 7 && memcmp(p + i, "\"items\"", 7) == 0;
		i = skip_ws(p, kend, n);
		if (i >= n || p[i] != ':')
			return pk_err_set(err, PK_ERR_INVALID, "list page: no ':' at byte %zu", i);
		i = skip_ws(p, i + 1, n);
		if (items && i < n && p[i] == '[' && ps->items_end == 0) {
			ps->items_start = i;
			i = skip_ws(p, i + 1, n);
			while (i < n && p[i] != ']') {
				size_t e = value_end(p, i, n);
				if (e == 0 || e == i)
					return pk_err_set(
					    err, PK_ERR_INVALID,
					    "list page: an item cut short at byte %zu", i);
				if (shape_add(ps, i, e) != PK_OK)
					return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
				i = skip_ws(p, e, n);
				if (i < n && p[i] == ',')
					i = skip_ws(p, i + 1, n);
				else if (i < n && p[i] != ']')
					return pk_err_set(
					    err, PK_ERR_INVALID,
					    "list page: no ',' between items at byte %zu", i);
			}
			if (i >= n)
				return pk_err_set(err, PK_ERR_INVALID,
				                  "list page: items cut short");
			ps->items_end = ++i;
		} else {
			size_t e = value_end(p, i, n);
			if (e == 0 || e == i)
				return pk_err_set(err, PK_ERR_INVALID,
				                  "list page: a member cut short at byte %zu", i);
			i = e;
		}
		i = skip_ws(p, i, n);
		if (i < n && p[i] == ',')
			i = skip_ws(p, i + 1, n);
	}
	if (i >= n)
		return pk_err_set(err, PK_ERR_INVALID, "list page: cut short");
	if (skip_ws(p, i + 1, n) != n)
		return pk_err_set(err, PK_ERR_INVALID, "list page: bytes after the object at %zu",
		                  i + 1);
	return PK_OK;
}

static void skip_item(pk_kube_skip_fn *skip, void *ud, const char *text, size_t len,
                      const char *why)
{
	if (skip == NULL)
		return;
	struct pk_kube_scan *s = scan_names(text, len, "");
	skip(ud, s ? pk_kube_scan_value(s, 0) : NULL, s ? pk_kube_scan_value(s, 1) : NULL, why);
	pk_kube_scan_free(s);
}

int pk_kube_list_decode(const char *buf, size_t len, size_t max_object_bytes, unsigned max_depth,
                        pk_kube_skip_fn *skip, void *ud, json_t **out, struct pk_err *err)
{
	*out = NULL;
	if (max_object_bytes == 0)
		max_object_bytes = PK_KUBE_MAX_OBJECT_BYTES;
	struct page_shape ps = {0};
	int rc = page_shape(buf, len, &ps, err);
	char *env = NULL;
	json_t *page = NULL, *items = NULL;
	if (rc != PK_OK)
		goto out;
	if (ps.items_end == 0) {
		rc = pk_kube_json_parse(buf, len, max_depth, &page, err);
		goto out;
	}
	/* The List without its items: "items":[] */
	size_t envlen = len - (ps.items_end - ps.items_start) + 2;
	env = malloc(envlen);
	if (env == NULL) {
		rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		goto out;
	}
	memcpy(env, buf, ps.items_start);
	memcpy(env + ps.items_start, "[]", 2);
	memcpy(env + ps.items_start + 2, buf + ps.items_end, len - ps.items_end);
	if ((rc = pk_kube_json_parse(env, envlen, max_depth, &page, err)) != PK_OK)
		goto out;
	items = json_object_get(page, "items");
	if (!json_is_array(items)) {
		rc = pk_err_set(err, PK_ERR_INVALID, "list page: items is not an array");
		goto out;
	}
	for (size_t k = 0; k < ps.nitems; k++) {
		const char *t = buf + ps.items[k].start;
		size_t n = ps.items[k].end - ps.items[k].start;
		char why[PK_ERR_MSG_MAX + 64];
		json_t *obj = NULL;
		struct pk_err perr;
		if (n > max_object_bytes) {
			snprintf(why, sizeof(why), "%zu bytes, over the %zu-byte cap on one object",
			         n, max_object_bytes);
		} else if (pk_kube_json_parse(t, n, max_depth, &obj, &perr) != PK_OK) {
			snprintf(why, sizeof(why), "%s", perr.msg);
		} else if (!json_is_object(obj)) {
			snprintf(why, sizeof(why), "not a JSON object");
		} else if (json_array_append_new(items, obj) != 0) {
			rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
			goto out;
		} else {
			continue;
		}
		json_decref(obj);
		skip_item(skip, ud, t, n, why);
	}
out:
	free(ps.items);
	free(env);
	if (rc != PK_OK) {
		json_decref(page);
		page = NULL;
	}
	*out = page;
	return rc;
}

long long pk_kube_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void pk_kube_sleep_ns(long long ns)
{
	if (ns <= 0)
		return;
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000LL),
	                      .tv_nsec = (long)(ns % 1000000000LL)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}
