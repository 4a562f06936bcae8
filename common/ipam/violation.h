/*
 * violation.h - what a contract rule found wrong: a field path, a message
 * that names the offending value, and a severity. The webhook turns DENY
 * into a denial and WARN into an AdmissionReview warning; the controller
 * into conditions and events; the CLI into lines of its report. All of them
 * print pk_violation_text, so a user reads the same words everywhere.
 */
#ifndef PK_VIOLATION_H
#define PK_VIOLATION_H

#include <jansson.h>

#include "pk.h"

enum pk_severity {
	PK_SEV_DENY = 1,
	PK_SEV_WARN = 2,
};

#define PK_FIELD_MAX   160
#define PK_MESSAGE_MAX 480
/* At most this many violations are kept; the rest are counted in `dropped`. */
#define PK_VIOLATIONS_MAX 32

struct pk_violation {
	enum pk_severity severity;
	char field[PK_FIELD_MAX];     /* e.g. "spec.addresses[2]" */
	char message[PK_MESSAGE_MAX]; /* e.g. "\"10.0.0.300\" is not an IPv4 or IPv6 address" */
};

struct pk_violations {
	struct pk_violation items[PK_VIOLATIONS_MAX];
	size_t n;
	size_t dropped;
};

/* Empties v: n and dropped to 0 (items[0..n) are the only ones ever read). */
void pk_violations_init(struct pk_violations *v);

/* Appends one; past PK_VIOLATIONS_MAX it only counts. Text is truncated to fit. */
void pk_violations_add(struct pk_violations *v, enum pk_severity sev, const char *field,
                       const char *fmt, ...) PK_PRINTF(4, 5);

size_t pk_violations_count(const struct pk_violations *v, enum pk_severity sev);

/*
 * The reason in a parser's error (address.h, addr_spec.h) without its
 * "<field>: " lead-in, for a violation that carries the field itself.
 */
const char *pk_violation_detail(const struct pk_err *e, const char *field);

/* "field: message" into buf; returns buf. */
char *pk_violation_text(const struct pk_violation *x, char *buf, size_t len);

/*
 * All violations of one severity as one line, "a: x; b: y" (plus
 * "; and N more" when some were dropped), for an AdmissionReview status
 * message or a condition. Returns buf.
 */
char *pk_violations_join(const struct pk_violations *v, enum pk_severity sev, char *buf,
                         size_t len);

/*
 * A JSON value as a message shows it: a string quoted through pk_text_quote
 * ("\"24\""), a number or boolean as written, "null", "an object", "an
 * array", "nothing" for NULL. With `with_type`, scalars get their JSON type
 * appended ("\"24\" (a string)") for messages about wrong types. The text
 * is ASCII and at most about 100 bytes. Returns buf.
 */
char *pk_violation_describe_value(const json_t *j, bool with_type, char *buf, size_t len);

#endif
