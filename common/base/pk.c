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

size_t pk_text_edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
	size_t row[65];
	if (na > 64 || nb > 64)
		return SIZE_MAX / 2;
	for (size_t j = 0; j <= nb; j++)
		row[j] = j;
	for (size_t i = 1; i <= na; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= nb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[nb];
}

const char *pk_text_closest(const char *word, const char *const *candidates, size_t n, size_t max)
{
	size_t len = strlen(word), best = SIZE_MAX;
	const char *at = NULL;
	for (size_t i = 0; i < n; i++)
		if (strlen(candidates[i]) == len && strcasecmp(word, candidates[i]) == 0)
			return candidates[i];
	for (size_t i = 0; i < n; i++) {
		size_t d = pk_text_edit_distance(word, len, candidates[i], strlen(candidates[i]));
		if (d < best) {
			best = d;
			at = candidates[i];
		}
	}
	return best <= max && best < len ? at : NULL;
}
