/* pk.c - error text helpers shared by the pure modules. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

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

/* ---- JSON strings as C strings ---- */

bool pk_json_has_nul(const json_t *v)
{
	const char *s = json_string_value(v);
	return s != NULL && memchr(s, '\0', json_string_length(v)) != NULL;
}

const char *pk_json_cstr(const json_t *v)
{
	return pk_json_has_nul(v) ? NULL : json_string_value(v);
}

const char *pk_json_cstr_at(const json_t *obj, const char *key)
{
	return pk_json_cstr(json_object_get(obj, key));
}

/* Appends text to buf at *o, cutting at len - 1. */
static void path_put(char *buf, size_t len, size_t *o, const char *text)
{
	size_t n = strlen(text);
	if (*o + 1 >= len)
		return;
	if (n > len - 1 - *o)
		n = len - 1 - *o;
	memcpy(buf + *o, text, n);
	*o += n;
	buf[*o] = '\0';
}

static bool plain_key(const char *k)
{
	if (*k == '\0')
		return false;
	for (; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		      (*k >= '0' && *k <= '9') || *k == '_' || *k == '-'))
			return false;
	return true;
}

static bool nul_path(const json_t *v, char *buf, size_t len, size_t o, int depth)
{
	if (json_is_string(v))
		return pk_json_has_nul(v);
	if (depth >= PK_JSON_NUL_MAX_DEPTH)
		return false;
	if (json_is_array(v)) {
		size_t i;
		const json_t *x;
		json_array_foreach(v, i, x)
		{
			char idx[32];
			size_t at = o;
			snprintf(idx, sizeof(idx), "[%zu]", i);
			path_put(buf, len, &at, idx);
			if (nul_path(x, buf, len, at, depth + 1))
				return true;
			buf[o] = '\0';
		}
		return false;
	}
	if (json_is_object(v)) {
		const char *k;
		const json_t *x;
		/* json_object_foreach wants a non-const object; it does not change it */
		json_object_foreach((json_t *)(uintptr_t)v, k, x)
		{
			size_t at = o;
			if (plain_key(k)) {
				if (o > 0)
					path_put(buf, len, &at, ".");
				path_put(buf, len, &at, k);
			} else {
				char q[300];
				pk_text_quote(k, strlen(k), q, sizeof(q));
				path_put(buf, len, &at, "[\"");
				path_put(buf, len, &at, q);
				path_put(buf, len, &at, "\"]");
			}
			if (nul_path(x, buf, len, at, depth + 1))
				return true;
			buf[o] = '\0';
		}
	}
	return false;
}

bool pk_json_nul_path(const json_t *v, char *buf, size_t len)
{
	if (len == 0)
		return false;
	buf[0] = '\0';
	return nul_path(v, buf, len, 0, 0);
}
