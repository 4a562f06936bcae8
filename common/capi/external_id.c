/* external_id.c - an IPAddress's external record ID; see external_id.h. */
#include <string.h>

#include "api.h"
#include "external_id.h"
#include "json.h"

static const json_t *annotation(const json_t *obj)
{
	return json_object_get(pk_json_path(obj, "metadata", "annotations"),
	                       PK_EXTERNAL_ID_ANNOTATION);
}

const char *pk_external_id(const json_t *obj)
{
	const json_t *v = annotation(obj);
	const char *s = pk_json_cstr(v);
	if (s == NULL || s[0] == '\0' || json_string_length(v) >= PK_EXTERNAL_ID_MAX)
		return NULL;
	return s;
}

bool pk_external_id_same(const json_t *a, const json_t *b)
{
	const json_t *x = annotation(a), *y = annotation(b);
	if (x == NULL || y == NULL)
		return x == y;
	return json_equal(x, y);
}
