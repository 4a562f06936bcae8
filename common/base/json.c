/* json.c - typed getters over jansson values and NUL-aware strings; see json.h. */
#include "json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pk.h"

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

const char *pk_json_meta_cstr(const json_t *obj, const char *key)
{
	return pk_json_cstr_at(json_object_get(obj, "metadata"), key);
}

json_t *pk_json_obj_at(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	return json_is_object(v) ? v : NULL;
}

json_t *pk_json_arr_at(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	return json_is_array(v) ? v : NULL;
}

bool pk_json_int_at(const json_t *obj, const char *key, json_int_t *out)
{
	json_t *v = json_object_get(obj, key);
	if (!json_is_integer(v))
		return false;
	*out = json_integer_value(v);
	return true;
}

json_t *pk_json_path_keys(const json_t *v, ...)
{
	/* json_object_get answers NULL for a NULL or non-object value */
	json_t *at = (json_t *)(uintptr_t)v;
	va_list ap;
	va_start(ap, v);
	for (const char *k = va_arg(ap, const char *); k != NULL && at != NULL;
	     k = va_arg(ap, const char *))
		at = json_object_get(at, k);
	va_end(ap);
	return at;
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
