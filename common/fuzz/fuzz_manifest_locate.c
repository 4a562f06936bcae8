/*
 * fuzz_manifest_locate.c - libFuzzer target for pk_manifest_locate: the
 * first byte picks the item (0-3) and the starting line, the second a field
 * from a table of paths as rules write them (and some they never would),
 * the rest is the text. Any text must give a position inside it (a line
 * no further than its line breaks allow, a column no further than its
 * bytes) without crashing, leaking or running past `len`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest_locate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fields[] = {
    "",
    "kind",
    "metadata.name",
    "metadata.annotations.ipam.poolkeeper.io/skip",
    "metadata.ownerReferences[0].uid",
    "spec",
    "spec.poolRef.name",
    "spec.addresses[2]",
    "spec.addresses[0][1][2]",
    "items[1]",
    "a",
    "a.b",
    "a[0]",
    "a.b.c.d",
    "a..b",
    ".a",
    "a.",
    "[0]",
    "a[",
    "a[99999999999999999999999]",
};

/* An upper bound on the line breaks libyaml can see in text: LF, CR, and
 * one byte of each NEL, LS and PS in UTF-8 (C2 85, E2 80 A8/A9) or UTF-16
 * (00 85, 20 28/29 in either order). */
static size_t breaks(const char *text, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		n += c == '\n' || c == '\r' || c == 0x85 || c == 0xa8 || c == 0xa9 || c == 0x28 ||
		     c == 0x29;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t item = data[0] & 3;
	size_t first_line = 1 + (data[0] >> 2);
	const char *field = fields[data[1] % (sizeof(fields) / sizeof(fields[0]))];
	size_t len = size - 2;

	/* A copy of exactly len bytes, so that reading past them is caught. */
	char *text = malloc(len ? len : 1);
	if (text == NULL)
		return 0;
	memcpy(text, data + 2, len);

	size_t line = 0, col = 0;
	bool whole = pk_manifest_locate(text, len, first_line, item, field, &line, &col);
	if (line < first_line || line - first_line > breaks(text, len) || col < 1 || col > len + 1)
		abort();
	if (whole && len == 0)
		abort(); /* nothing is found in an empty text */
	free(text);
	return 0;
}
