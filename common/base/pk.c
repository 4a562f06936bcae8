/* pk.c - error texts and quoting shared by the pure modules. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "pk.h"

int pk_err_set(struct pk_err *err, int rc, const char *fmt, ...)
{
	if (err == NULL)
		return rc;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return rc;
}

const char *pk_rc_name(int rc)
{
	switch (rc) {
	case PK_OK:
		return "ok";
	case PK_ERR_INVALID:
		return "invalid";
	case PK_ERR_NOMEM:
		return "out of memory";
	case PK_ERR_EXHAUSTED:
		return "exhausted";
	case PK_ERR_IN_USE:
		return "in use";
	case PK_ERR_NOT_HELD:
		return "not held";
	case PK_ERR_OUT_OF_RANGE:
		return "out of range";
	case PK_ERR_QUARANTINED:
		return "quarantined";
	case PK_ERR_TOO_BIG:
		return "too big";
	case PK_ERR_API:
		return "API request failed";
	case PK_ERR_IO:
		return "I/O error";
	case PK_ERR_TIMEOUT:
		return "timed out";
	}
	return "unknown";
}

void pk_text_quote(const char *s, size_t n, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	const size_t show = n > 64 ? 64 : n;

	if (len == 0)
		return;
	for (size_t i = 0; i < show && o + 5 < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			buf[o++] = (char)c;
		} else {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		}
	}
	if (n > show && o + 4 < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
}
