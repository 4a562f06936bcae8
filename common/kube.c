/* kube.c - error classes, Status decoding, bounded JSON, base64, clocks. */
#include "kube.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

	const char *reason = pk_kube_json_str(status, "reason");
	const char *message = pk_kube_json_str(status, "message");
	json_t *c = json_object_get(status, "code");
	const bool from_body = code == 0;
	if (code == 0 && json_is_integer(c) && json_integer_value(c) >= 100 &&
	    json_integer_value(c) < 600)
		code = (long)json_integer_value(c);
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
		const char *st = pk_kube_json_str(status, "status");
		if (st == NULL || strcmp(st, "Success") != 0)
			e->reason = PK_KUBE_UNKNOWN;
	}
	json_t *details = json_object_get(status, "details");
	json_t *ra = json_object_get(details, "retryAfterSeconds");
	if (json_is_integer(ra) && json_integer_value(ra) > 0 && json_integer_value(ra) < 86400)
		e->retry_after_s = (long)json_integer_value(ra);
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
	if (json_is_object(st) && (pk_kube_json_str(st, "kind") == NULL ||
	                           strcmp(pk_kube_json_str(st, "kind"), "Status") == 0)) {
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
				return pk_err_set(err, PK_ERR_NOMEM,
				                  "JSON nested deeper than %u levels at byte %zu",
				                  max_depth, i);
		} else if ((c == '}' || c == ']') && depth > 0) {
			depth--;
		}
	}
	json_error_t je;
	json_t *v = json_loadb(buf, len, 0, &je);
	if (v == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "bad JSON at byte %d: %s", je.position,
		                  je.text);
	*out = v;
	return PK_OK;
}

/* ---- base64 ---- */

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int pk_kube_base64_decode(const char *in, size_t n, unsigned char **out, size_t *outlen)
{
	*out = NULL;
	*outlen = 0;
	unsigned char *buf = malloc(n / 4 * 3 + 4);
	if (buf == NULL)
		return PK_ERR_NOMEM;
	size_t o = 0, pad = 0, digits = 0;
	unsigned acc = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		int v = b64_value(c);
		if (v < 0 || pad > 0) /* a bad character, or data after padding */
			goto bad;
		acc = (acc << 6) | (unsigned)v;
		if (++digits % 4 == 0) {
			buf[o++] = (unsigned char)(acc >> 16);
			buf[o++] = (unsigned char)(acc >> 8);
			buf[o++] = (unsigned char)acc;
			acc = 0;
		}
	}
	switch (digits % 4) {
	case 0:
		if (pad != 0)
			goto bad;
		break;
	case 1:
		goto bad;
	case 2:
		if (pad != 0 && pad != 2)
			goto bad;
		buf[o++] = (unsigned char)(acc >> 4);
		break;
	case 3:
		if (pad != 0 && pad != 1)
			goto bad;
		buf[o++] = (unsigned char)(acc >> 10);
		buf[o++] = (unsigned char)(acc >> 2);
		break;
	}
	buf[o] = '\0';
	*out = buf;
	*outlen = o;
	return PK_OK;
bad:
	free(buf);
	return PK_ERR_INVALID;
}

const char *pk_kube_json_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

const char *pk_kube_meta_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
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
