/*
 * tenant.h - a hostile tenant's long finalizer lists, as the cache and trim
 * suites and the finalizer bench build them: n finalizers of another party,
 * 277 bytes each (4,300 make a 1.19 MB claim), with `own` at index `at`
 * (none when at is n or more, or own is NULL).
 */
#ifndef PK_TEST_TENANT_H
#define PK_TEST_TENANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define PK_TEST_TENANT_FINALIZER_BYTES 277

/* The list, or NULL when memory ran out. */
static inline json_t *pk_test_tenant_finalizers(size_t n, size_t at, const char *own)
{
	json_t *list = json_array();
	for (size_t i = 0; list != NULL && i < n; i++) {
		char f[PK_TEST_TENANT_FINALIZER_BYTES + 1];
		int w = snprintf(f, sizeof(f), "tenant.example.com/hold-%zu-", i);
		while (w >= 0 && w < PK_TEST_TENANT_FINALIZER_BYTES)
			f[w++] = 'x';
		f[PK_TEST_TENANT_FINALIZER_BYTES] = '\0';
		if (json_array_append_new(list, json_string(i == at && own != NULL ? own : f)) !=
		    0) {
			json_decref(list);
			list = NULL;
		}
	}
	return list;
}

/* Sets obj's metadata.finalizers to that list; false when memory ran out. */
static inline bool pk_test_set_tenant_finalizers(json_t *obj, size_t n, size_t at, const char *own)
{
	json_t *list = pk_test_tenant_finalizers(n, at, own);
	return list != NULL &&
	       json_object_set_new(json_object_get(obj, "metadata"), "finalizers", list) == 0;
}

/* The bytes of o as compact JSON text: what a tenant's object costs on the wire, beside what
 * a cache keeps of it (aborts when memory runs out). */
static inline size_t pk_test_json_text_size(const json_t *o)
{
	char *t = json_dumps(o, JSON_COMPACT);
	if (t == NULL)
		abort();
	size_t n = strlen(t);
	free(t);
	return n;
}

#endif
