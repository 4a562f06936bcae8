/* log.c - one event per line on stderr, key=value text or JSON. */
#include "kube.h"
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum pk_log_level pk_log_threshold = PK_LOG_INFO;
static enum pk_log_format log_format = PK_LOG_TEXT;
static int log_fd = 2;

/* Largest number of fields one event carries; the rest are dropped. */
#define LOG_MAX_FIELDS 32

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void pk_log_set_level(enum pk_log_level level)
{
	if ((int)level < (int)PK_LOG_ERROR)
		level = PK_LOG_ERROR;
	if (level > PK_LOG_DEBUG)
		level = PK_LOG_DEBUG;
	pk_log_threshold = level;
}

int pk_log_parse_format(const char *s, enum pk_log_format *out, struct pk_err *err)
{
	if (s != NULL && !strcmp(s, "text")) {
		*out = PK_LOG_TEXT;
		return PK_OK;
	}
	if (s != NULL && !strcmp(s, "json")) {
		*out = PK_LOG_JSON;
		return PK_OK;
	}
	return pk_err_set(err, PK_ERR_INVALID, "--log-format must be text or json, got \"%.64s\"",
	                  s ? s : "");
}

void pk_log_set_format(enum pk_log_format format)
{
	log_format = format;
}

void pk_log_set_fd(int fd)
{
	log_fd = fd;
}

/* A cursor over the line buffer: appends stop at the end, `cut` records it. */
struct line {
	char *buf;
	size_t cap; /* usable bytes, excluding room kept for "...\n" */
	size_t len;
	bool cut;
};

static void put_bytes(struct line *l, const char *s, size_t n)
{
	if (l->len + n > l->cap) {
		n = l->cap - l->len;
		l->cut = true;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void put_str(struct line *l, const char *s)
{
	put_bytes(l, s, strlen(s));
}

static void put_fmt(struct line *l, const char *fmt, ...) PK_PRINTF(2, 3);
static void put_fmt(struct line *l, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	put_bytes(l, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* A text value needs quotes when empty or when it holds anything but [A-Za-z0-9_.:/@+-]. */
static bool text_needs_quotes(const char *s)
{
	if (*s == '\0')
		return true;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("_.:/@+-[]", *p) != NULL))
			return true;
	}
	return false;
}

/*
 * A quoted string, escaped the same way for text and JSON: \" \\ \n \r \t
 * and \u00XX for other control bytes, so one event stays one line whatever
 * a client sent.
 */
static void put_quoted(struct line *l, const char *s)
{
	put_bytes(l, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			put_bytes(l, "\\\"", 2);
			break;
		case '\\':
			put_bytes(l, "\\\\", 2);
			break;
		case '\n':
			put_bytes(l, "\\n", 2);
			break;
		case '\r':
			put_bytes(l, "\\r", 2);
			break;
		case '\t':
			put_bytes(l, "\\t", 2);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				put_fmt(l, "\\u%04x", (unsigned)*p);
			else
				put_bytes(l, (const char *)p, 1);
		}
		if (l->cut)
			break;
	}
	put_bytes(l, "\"", 1);
}

static void put_key(struct line *l, enum pk_log_format format, const char *key, bool first)
{
	if (format == PK_LOG_JSON) {
		if (!first)
			put_bytes(l, ",", 1);
		put_quoted(l, key);
		put_bytes(l, ":", 1);
	} else {
		if (!first)
			put_bytes(l, " ", 1);
		put_str(l, key);
		put_bytes(l, "=", 1);
	}
}

static void put_string_value(struct line *l, enum pk_log_format format, const char *s)
{
	if (s == NULL)
		s = "";
	if (format == PK_LOG_JSON || text_needs_quotes(s))
		put_quoted(l, s);
	else
		put_str(l, s);
}

static void put_field(struct line *l, enum pk_log_format format, const struct pk_log_field *f)
{
	put_key(l, format, f->key ? f->key : "field", false);
	switch (f->type) {
	case PK_LOG_FIELD_STR:
		put_string_value(l, format, f->v.s);
		break;
	case PK_LOG_FIELD_INT:
		put_fmt(l, "%lld", f->v.i);
		break;
	case PK_LOG_FIELD_UINT:
		put_fmt(l, "%llu", f->v.u);
		break;
	case PK_LOG_FIELD_FLOAT:
		/* JSON has no NaN or infinity; neither has a useful log line. */
		if (f->v.f != f->v.f || f->v.f > 1e300 || f->v.f < -1e300)
			put_str(l, format == PK_LOG_JSON ? "null" : "NaN");
		else
			put_fmt(l, "%.6g", f->v.f);
		break;
	case PK_LOG_FIELD_BOOL:
		put_str(l, f->v.b ? "true" : "false");
		break;
	case PK_LOG_FIELD_END:
		break;
	}
}

static void put_timestamp(struct line *l, enum pk_log_format format)
{
	struct timespec ts;
	struct tm tm;
	char tbuf[40];
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(tbuf + n, sizeof(tbuf) - n, ".%03ldZ", ts.tv_nsec / 1000000L);
	put_key(l, format, "ts", true);
	if (format == PK_LOG_JSON)
		put_quoted(l, tbuf);
	else
		put_str(l, tbuf);
}

size_t pk_log_format_line(char *buf, size_t cap, enum pk_log_format format, enum pk_log_level level,
                          int errnum, const char *msg, const struct pk_log_field *fields)
{
	/* Room for the worst ending: ,"cut":true} (JSON), newline, NUL. */
	const size_t reserve = 24;
	if (cap <= reserve) {
		if (cap > 0)
			buf[0] = '\0';
		return 0;
	}
	struct line l = {.buf = buf, .cap = cap - reserve, .len = 0, .cut = false};
	if ((int)level < 0 || level > PK_LOG_DEBUG)
		level = PK_LOG_ERROR;

	if (format == PK_LOG_JSON)
		put_bytes(&l, "{", 1);
	put_timestamp(&l, format);
	put_key(&l, format, "level", false);
	put_string_value(&l, format, level_names[level]);
	/* A field that does not fit is dropped whole, so the line still parses. */
	size_t mark = l.len;
	put_key(&l, format, "msg", false);
	put_quoted(&l, msg ? msg : "");
	for (size_t i = 0; fields != NULL && fields[i].type != PK_LOG_FIELD_END && !l.cut; i++) {
		mark = l.len;
		put_field(&l, format, &fields[i]);
	}
	if (errnum != 0 && !l.cut) {
		char ebuf[128];
		/* The XSI strerror_r (we build with _POSIX_C_SOURCE) fills ebuf. */
		if (strerror_r(errnum, ebuf, sizeof(ebuf)) != 0)
			snprintf(ebuf, sizeof(ebuf), "errno %d", errnum);
		struct pk_log_field ef = PK_LOG_STR("error", ebuf);
		mark = l.len;
		put_field(&l, format, &ef);
	}
	if (l.cut) {
		/* The reserve is kept outside l.cap, so this always fits. */
		const char *tail = format == PK_LOG_JSON ? ",\"cut\":true" : " cut=true";
		l.len = mark;
		memcpy(buf + l.len, tail, strlen(tail));
		l.len += strlen(tail);
	}
	if (format == PK_LOG_JSON)
		buf[l.len++] = '}';
	buf[l.len++] = '\n';
	buf[l.len] = '\0';
	return l.len;
}

void pk_log_write(enum pk_log_level level, int errnum, const char *msg, ...)
{
	struct pk_log_field fields[LOG_MAX_FIELDS + 1];
	size_t n = 0;
	va_list ap;
	va_start(ap, msg);
	for (;;) {
		struct pk_log_field f = va_arg(ap, struct pk_log_field);
		if (f.type == PK_LOG_FIELD_END)
			break;
		if (n < LOG_MAX_FIELDS)
			fields[n++] = f;
	}
	va_end(ap);
	fields[n] = PK_LOG_END;

	char buf[PK_LOG_LINE_MAX];
	size_t len = pk_log_format_line(buf, sizeof(buf), log_format, level, errnum, msg, fields);
	const char *p = buf;
	while (len > 0) {
		ssize_t w = write(log_fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		p += w;
		len -= (size_t)w;
	}
}

/* ---- the Kubernetes client's lines ---- */

static void kube_line(void *ud, enum pk_kube_level level, const char *msg)
{
	(void)ud;
	enum pk_log_level l = level == PK_KUBE_LOG_ERROR  ? PK_LOG_ERROR
	                      : level == PK_KUBE_LOG_WARN ? PK_LOG_WARN
	                      : level == PK_KUBE_LOG_INFO ? PK_LOG_INFO
	                                                  : PK_LOG_DEBUG;
	pk_log_at(l, "kubernetes client", PK_LOG_STR("detail", msg));
}

void pk_log_kube_sink(struct pk_kube_log *out)
{
	out->fn = kube_line;
	out->ud = NULL;
	out->min_level = pk_log_enabled(PK_LOG_DEBUG) ? PK_KUBE_LOG_DEBUG : PK_KUBE_LOG_INFO;
}
