/*
 * json_patch.h - applies the JSON Patches poolkeeper's mutating endpoint
 * sends (test, add and replace of object members, RFC 6902) to an object,
 * as the apiserver would, so that tests can hand the result to the
 * validating endpoint (pk_test_apply_json_patch: a failed op fails the
 * test), or so that a fake API server can answer a patch request
 * (pk_test_json_patch: a failed op is a result). Include after <cmocka.h>.
 */
#ifndef PK_TEST_JSON_PATCH_H
#define PK_TEST_JSON_PATCH_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* The JSON Pointer target's parent and last token (no ~ escapes in our paths); NULL when
 * there is none. */
static inline json_t *pk_test_pointer_parent(json_t *doc, const char *path, char *last, size_t len)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path != NULL ? path : "");
	char *slash = strrchr(buf, '/');
	if (slash == NULL)
		return NULL;
	snprintf(last, len, "%s", slash + 1);
	*slash = '\0';
	json_t *cur = doc;
	char *save = NULL;
	for (char *tok = strtok_r(buf + 1, "/", &save); tok != NULL && cur != NULL;
	     tok = strtok_r(NULL, "/", &save))
		cur = json_is_array(cur) ? json_array_get(cur, strtoul(tok, NULL, 10))
		                         : json_object_get(cur, tok);
	return cur;
}

/* The member `last` of parent (an object's key or an array's index), or NULL. */
static inline json_t *pk_test_pointer_get(json_t *parent, const char *last)
{
	if (json_is_array(parent)) {
		char *end;
		unsigned long k = strtoul(last, &end, 10);
		return *last != '\0' && *end == '\0' ? json_array_get(parent, k) : NULL;
	}
	return json_object_get(parent, last);
}

/*
 * Applies patch (an array of operations) to doc as the apiserver would,
 * op by op; false, with the reason in why, at the first one that fails: a
 * `test` whose value differs (a test of null passes on a missing member, as
 * the apiserver's does), a `replace` or `remove` of a member that is not
 * there, a path whose parent is not an object or array, an op other than
 * test, add, replace and remove. In an array, `add` inserts at an index or
 * appends at "-". The ops before it stay applied (a caller that must not see
 * them patches a copy).
 */
static inline bool pk_test_json_patch(json_t *doc, const json_t *patch, char *why, size_t len)
{
	size_t i;
	const json_t *op;
	json_array_foreach(patch, i, op)
	{
		char last[128];
		const char *o = json_string_value(json_object_get(op, "op"));
		const char *path = json_string_value(json_object_get(op, "path"));
		json_t *parent = pk_test_pointer_parent(doc, path, last, sizeof(last));
		json_t *value = json_object_get(op, "value");
		o = o != NULL ? o : "";
		bool array = json_is_array(parent);
		json_t *cur = pk_test_pointer_get(parent, last);
		bool ok;
		if (!json_is_object(parent) && !array) {
			snprintf(why, len, "op %zu: the parent of %s is not an object or array", i,
			         path != NULL ? path : "(no path)");
			return false;
		}
		if (strcmp(o, "test") == 0)
			ok = cur != NULL ? json_equal(cur, value) : json_is_null(value);
		else if (strcmp(o, "remove") == 0)
			ok = cur != NULL &&
			     (array ? json_array_remove(parent, strtoul(last, NULL, 10))
			            : json_object_del(parent, last)) == 0;
		else if (strcmp(o, "replace") == 0)
			ok = cur != NULL &&
			     (array ? json_array_set(parent, strtoul(last, NULL, 10), value)
			            : json_object_set(parent, last, value)) == 0;
		else if (strcmp(o, "add") == 0 && array)
			ok = strcmp(last, "-") == 0
			         ? json_array_append(parent, value) == 0
			         : json_array_insert(parent, strtoul(last, NULL, 10), value) == 0;
		else if (strcmp(o, "add") == 0)
			ok = json_object_set(parent, last, value) == 0;
		else {
			snprintf(why, len, "op %zu: \"%s\" is not test, add, replace or remove", i,
			         o);
			return false;
		}
		if (!ok) {
			snprintf(why, len, "op %zu: %s %s failed", i, o, path != NULL ? path : "");
			return false;
		}
	}
	return true;
}

/* Applies a patch given as text; any op that fails fails the test. */
static inline void pk_test_apply_json_patch(json_t *doc, const char *patch_text)
{
	json_error_t e;
	json_t *patch = json_loads(patch_text, 0, &e);
	if (patch == NULL)
		fail_msg("patch does not parse: %s: %s", e.text, patch_text);
	char why[300];
	if (!pk_test_json_patch(doc, patch, why, sizeof(why)))
		fail_msg("%s: %s", why, patch_text);
	json_decref(patch);
}

#endif
