/*
 * fuzz_kube_list.c - libFuzzer target for a List page decoded object by
 * object (pk_kube_list_decode) and for the scan that names objects it
 * cannot decode (pk_kube_scan). Any bytes: no crash or leak; a decoded
 * page is an object whose items are all objects; every object left out is
 * reported with a reason; the scan finds the same values whether the text
 * comes whole or cut in two at a point the input chooses.
 *
 * Input layout: byte 0 picks the cut point, the rest is the page.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_skip(void *ud, const char *ns, const char *name, const char *why)
{
	size_t *n = ud;
	if (why == NULL || why[0] == '\0' || (ns != NULL && strlen(ns) > PK_KUBE_SCAN_VALUE_MAX) ||
	    (name != NULL && strlen(name) > PK_KUBE_SCAN_VALUE_MAX))
		abort();
	(*n)++;
}

static const char *const paths[] = {
    "metadata.continue",
    "metadata.resourceVersion",
    "items.*.metadata.namespace",
    "items.*.metadata.name",
    "kind",
    "object.metadata.name",
};
#define NPATHS (sizeof(paths) / sizeof(paths[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *s = (const char *)data + 1;
	size_t n = size - 1, cut = n ? data[0] % (n + 1) : 0;

	json_t *page;
	struct pk_err err;
	size_t skipped = 0;
	if (pk_kube_list_decode(s, n, 4096, 32, on_skip, &skipped, &page, &err) == PK_OK) {
		if (!json_is_object(page))
			abort();
		size_t i;
		json_t *it;
		json_array_foreach(json_object_get(page, "items"), i, it)
		{
			if (!json_is_object(it))
				abort();
		}
		json_decref(page);
	} else if (page != NULL || err.msg[0] == '\0') {
		abort();
	}

	struct pk_kube_scan *whole = pk_kube_scan_new(paths, NPATHS),
	                    *parts = pk_kube_scan_new(paths, NPATHS);
	if (whole == NULL || parts == NULL)
		abort();
	pk_kube_scan_feed(whole, s, n);
	pk_kube_scan_feed(parts, s, cut);
	pk_kube_scan_feed(parts, s + cut, n - cut);
	for (size_t i = 0; i < NPATHS; i++) {
		const char *a = pk_kube_scan_value(whole, i), *b = pk_kube_scan_value(parts, i);
		if ((a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0))
			abort();
	}
	if (pk_kube_scan_bytes(whole) != n)
		abort();
	pk_kube_scan_free(whole);
	pk_kube_scan_free(parts);

	char ident[PK_KUBE_IDENT_MAX];
	pk_kube_object_ident(s, n, cut % 2 ? "object" : "", ident, sizeof(ident));
	if (strlen(ident) >= sizeof(ident))
		abort();
	return 0;
}
