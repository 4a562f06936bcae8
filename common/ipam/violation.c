/* violation.c - the list of rule violations and its text forms. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "violation.h"

void pk_violations_init(struct pk_violations *v)
{
	/* Not the 20 KiB of items: each is written whole as it is added, and only
	 * items[0..n) are read. Checks init one on the stack per call. */
	v->n = 0;
	v->dropped = 0;
}

/*
 * Cuts a trailing, incomplete UTF-8 sequence that truncation may have left,
 * so the text stays valid UTF-8 (jansson refuses anything else when the
 * webhook puts it in a response).
 */
static void trim_utf8(char *s)
{
	size_t n = strlen(s);
	size_t i = n;

	while (i > 0 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0 || (unsigned char)s[i - 1] < 0x80)
		return;
	unsigned char lead = (unsigned char)s[i - 1];
	size_t want = (lead & 0xe0) == 0xc0 ? 2 : (lead & 0xf0) == 0xe0 ? 3 : 4;
	if (n - (i - 1) < want)
		s[i - 1] = '\0';
}

void pk_violations_add(struct pk_violations *v, enum pk_severity sev, const char *field,
                       const char *fmt, ...)
{
	if (v->n >= PK_VIOLATIONS_MAX) {
		v->dropped++;
		return;
	}
	struct pk_violation *x = &v->items[v->n++];
	x->severity = sev;
	snprintf(x->field, sizeof(x->field), "%s", field != NULL ? field : "");
	trim_utf8(x->field);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->message, sizeof(x->message), fmt, ap);
	va_end(ap);
	trim_utf8(x->message);
}

size_t pk_violations_count(const struct pk_violations *v, enum pk_severity sev)
{
	size_t c = 0;
	for (size_t i = 0; i < v->n; i++)
		if (v->items[i].severity == sev)
			c++;
	return c;
}

const char *pk_violation_detail(const struct pk_err *e, const char *field)
{
	size_t n = strlen(field);
	if (strncmp(e->msg, field, n) == 0 && e->msg[n] == ':' && e->msg[n + 1] == ' ')
		return e->msg + n + 2;
	return e->msg;
}

char *pk_violation_text(const struct pk_violation *x, char *buf, size_t len)
{
	if (len == 0)
		return buf;
	if (x->field[0] != '\0')
		snprintf(buf, len, "%s: %s", x->field, x->message);
	else
		snprintf(buf, len, "%s", x->message);
	trim_utf8(buf);
	return buf;
}

char *pk_violations_join(const struct pk_violations *v, enum pk_severity sev, char *buf, size_t len)
{
	size_t o = 0;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < v->n && o + 1 < len; i++) {
		const struct pk_violation *x = &v->items[i];
		if (x->severity != sev)
			continue;
		int w = snprintf(buf + o, len - o, "%s%s%s%s", o > 0 ? "; " : "", x->field,
		                 x->field[0] != '\0' ? ": " : "", x->message);
		if (w < 0)
			break;
		o += (size_t)w;
		if (o >= len)
			o = len - 1;
	}
	if (v->dropped > 0 && o + 1 < len) {
		int w = snprintf(buf + o, len - o, "%sand %zu more", o > 0 ? "; " : "", v->dropped);
		if (w > 0)
			o += (size_t)w;
	}
	trim_utf8(buf);
	return buf;
}

char *pk_violation_describe_value(const json_t *j, bool with_type, char *buf, size_t len)
{
	char q[300];

	if (len == 0)
		return buf;
	if (j == NULL) {
		snprintf(buf, len, "nothing");
		return buf;
	}
	switch (json_typeof(j)) {
	case JSON_STRING:
		pk_text_quote(json_string_value(j), json_string_length(j), q, sizeof(q));
		snprintf(buf, len, "\"%s\"%s", q, with_type ? " (a string)" : "");
		break;
	case JSON_INTEGER:
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT "%s", json_integer_value(j),
		         with_type ? " (a number)" : "");
		break;
	case JSON_REAL: {
		/* 24.0 is shown as 24.0, not 24, so "must be an integer" makes sense. */
		char num[40];
		snprintf(num, sizeof(num), "%.17g", json_real_value(j));
		bool plain = strpbrk(num, ".eEin") == NULL;
		snprintf(buf, len, "%s%s%s", num, plain ? ".0" : "",
		         with_type ? " (a number)" : "");
		break;
	}
	case JSON_TRUE:
		snprintf(buf, len, "true%s", with_type ? " (a boolean)" : "");
		break;
	case JSON_FALSE:
		snprintf(buf, len, "false%s", with_type ? " (a boolean)" : "");
		break;
	case JSON_NULL:
		snprintf(buf, len, "null");
		break;
	case JSON_OBJECT:
		snprintf(buf, len, "an object");
		break;
	case JSON_ARRAY:
		snprintf(buf, len, "an array");
		break;
	}
	return buf;
}
