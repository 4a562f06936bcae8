/*
 * log.h - the daemons' log: one event per line on stderr, as Kubernetes
 * components write them, either
 *
 *   ts=2026-01-02T03:04:05.678Z level=info msg="listening" listener=webhook port=9443
 *
 * or (--log-format=json)
 *
 *   {"ts":"2026-01-02T03:04:05.678Z","level":"info","msg":"listening","listener":"webhook","port":9443}
 *
 * An event is a constant message and typed fields:
 *
 *   pk_log_info("listening", PK_LOG_STR("listener", "webhook"), PK_LOG_INT("port", port));
 *   pk_log_errno(PK_LOG_ERROR, "cannot open", PK_LOG_STR("file", path));
 *
 * The macros test the level before any argument is evaluated, so a
 * disabled debug line costs one comparison. A line is formatted into a
 * stack buffer (PK_LOG_LINE_MAX bytes, cut with "..." beyond that) and
 * written with one write(2), so lines from several threads never
 * interleave. The level, format and descriptor are process-wide; set them
 * during start-up, before other threads run.
 *
 * Pure modules never log: they return what went wrong and the daemon
 * logs it here.
 */
#ifndef PK_LOG_H
#define PK_LOG_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "pk.h"

#define PK_LOG_LINE_MAX 4096

enum pk_log_level {
	PK_LOG_ERROR = 0,
	PK_LOG_WARN = 1,
	PK_LOG_INFO = 2, /* the default */
	PK_LOG_DEBUG = 3,
};

enum pk_log_format {
	PK_LOG_TEXT = 0,
	PK_LOG_JSON = 1,
};

enum pk_log_field_type {
	PK_LOG_FIELD_END = 0,
	PK_LOG_FIELD_STR,
	PK_LOG_FIELD_INT,
	PK_LOG_FIELD_UINT,
	PK_LOG_FIELD_FLOAT,
	PK_LOG_FIELD_BOOL,
};

/* One key and its value; build them with the PK_LOG_* macros below. */
struct pk_log_field {
	enum pk_log_field_type type;
	const char *key; /* borrowed; plain [A-Za-z0-9_.-] keys are expected */
	union {
		const char *s; /* borrowed; NULL is written as an empty string */
		long long i;
		unsigned long long u;
		double f;
		bool b;
	} v;
};

#define PK_LOG_STR(k, val) \
	((struct pk_log_field){.type = PK_LOG_FIELD_STR, .key = (k), .v.s = (val)})
#define PK_LOG_INT(k, val) \
	((struct pk_log_field){.type = PK_LOG_FIELD_INT, .key = (k), .v.i = (long long)(val)})
#define PK_LOG_UINT(k, val)     \
	((struct pk_log_field){ \
	    .type = PK_LOG_FIELD_UINT, .key = (k), .v.u = (unsigned long long)(val)})
#define PK_LOG_FLOAT(k, val) \
	((struct pk_log_field){.type = PK_LOG_FIELD_FLOAT, .key = (k), .v.f = (double)(val)})
#define PK_LOG_BOOL(k, val) \
	((struct pk_log_field){.type = PK_LOG_FIELD_BOOL, .key = (k), .v.b = (bool)(val)})
#define PK_LOG_END ((struct pk_log_field){.type = PK_LOG_FIELD_END, .key = NULL, .v.i = 0})

/* The current threshold: events above it are dropped before formatting. */
extern enum pk_log_level pk_log_threshold;

/* Sets the threshold; --v=1 or more on the command line means PK_LOG_DEBUG. */
void pk_log_set_level(enum pk_log_level level);
/* "text" or "json"; PK_ERR_INVALID (naming the value) otherwise. */
PK_MUST_CHECK int pk_log_parse_format(const char *s, enum pk_log_format *out, struct pk_err *err);
void pk_log_set_format(enum pk_log_format format);
/* Where lines go; stderr (2) unless a test points it elsewhere. */
void pk_log_set_fd(int fd);

static inline bool pk_log_enabled(enum pk_log_level level)
{
	return level <= pk_log_threshold;
}

/*
 * Writes one event. The variadic part is struct pk_log_field values ending
 * with PK_LOG_END; the macros add the terminator. `errnum` non-zero appends
 * error="<strerror(errnum)>". Call through the macros.
 */
void pk_log_write(enum pk_log_level level, int errnum, const char *msg, ...);

/*
 * Formats one event into buf (always NUL-terminated, newline included) and
 * returns its length; the same text pk_log_write sends. For tests.
 */
size_t pk_log_format_line(char *buf, size_t cap, enum pk_log_format format, enum pk_log_level level,
                          int errnum, const char *msg, const struct pk_log_field *fields);

#define pk_log_at(level, ...)                                              \
	do {                                                               \
		if (pk_log_enabled(level))                                 \
			pk_log_write((level), 0, __VA_ARGS__, PK_LOG_END); \
	} while (0)

#define pk_log_error(...) pk_log_at(PK_LOG_ERROR, __VA_ARGS__)
#define pk_log_warn(...)  pk_log_at(PK_LOG_WARN, __VA_ARGS__)
#define pk_log_info(...)  pk_log_at(PK_LOG_INFO, __VA_ARGS__)
#define pk_log_debug(...) pk_log_at(PK_LOG_DEBUG, __VA_ARGS__)

/* Like pk_log_at, with error="<strerror(errno)>" from errno at the call. */
#define pk_log_errno(level, ...)                                                             \
	do {                                                                                 \
		int pk_log_saved_errno_ = errno;                                             \
		if (pk_log_enabled(level))                                                   \
			pk_log_write((level), pk_log_saved_errno_, __VA_ARGS__, PK_LOG_END); \
		errno = pk_log_saved_errno_;                                                 \
	} while (0)

struct pk_kube_log;

/*
 * Points the Kubernetes client's log callback (kube.h) at this log: its
 * lines become events "kubernetes client" with detail=<line>, at the
 * matching level, debug ones only at --v=1 or more. *out is the caller's.
 */
void pk_log_kube_sink(struct pk_kube_log *out);

/* Start-up only: logs at error level and exits with status 1. */
#define pk_log_fatal(...)                                               \
	do {                                                            \
		pk_log_write(PK_LOG_ERROR, 0, __VA_ARGS__, PK_LOG_END); \
		exit(1);                                                \
	} while (0)

#endif
