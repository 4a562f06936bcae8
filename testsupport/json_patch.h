/*
 * json_patch.h - applies the JSON Patches poolkeeper's mutating endpoint
 * sends (test, add and replace of object members, RFC 6902) to an object,
 * as the apiserver would, so that tests can hand the result to the
 * validating endpoint. A failed `test` fails the test. Include after
 * <cmocka.h>.
 */
#ifndef PK_TEST_JSON_PATCH_H
#define PK_TEST_JSON_PATCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* The JSON Pointer target's parent and last token (no ~ escapes in our paths). */
static inline json_t *pk_test_pointer_parent(json_t *doc, const char *path, char *last, size_t len)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	char *slash = strrchr(buf, '/');
	assert_non_null(slash);
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

static inline void pk_test_apply_json_patch(json_t *doc, const char *patch_text)
{
	json_error_t e;
	json_t *patch = json_loads(patch_text, 0, &e);
	if (patch == NULL)
		fail_msg("patch does not parse: %s: %s", e.text, patch_text);
	size_t i;
	json_t *op;
	json_array_foreach(patch, i, op)
	{
		char last[64];
		const char *o = json_string_value(json_object_get(op, "op"));
		json_t *parent = pk_test_pointer_parent(
		    doc, json_string_value(json_object_get(op, "path")), last, sizeof(last));
		assert_true(json_is_object(parent));
		json_t *value = json_object_get(op, "value");
		if (strcmp(o, "test") == 0)
			assert_true(json_equal(json_object_get(parent, last), value));
		else if (strcmp(o, "replace") == 0)
			assert_non_null(json_object_get(parent, last));
		else
			assert_string_equal(o, "add");
		if (strcmp(o, "test") != 0)
			json_object_set(parent, last, value);
	}
	json_decref(patch);
}

#endif
