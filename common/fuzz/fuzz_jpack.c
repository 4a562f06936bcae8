/*
 * fuzz_jpack.c - libFuzzer target for the packed JSON form (jpack.h).
 *
 * The input is used twice:
 *   - as JSON text (strings may hold "\u0000", as API objects may): when
 *     jansson parses it, packing and unpacking must give
 *     an equal value that prints the same (members in the same order);
 *   - as packed bytes: decoding must not crash or leak, and whatever it
 *     gives must pack and unpack to an equal value again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const json_t *v)
{
	unsigned char *p;
	size_t n;
	if (pk_jpack_encode(v, &p, &n) != PK_OK)
		abort(); /* jansson's parser depth is within PK_JPACK_MAX_DEPTH */
	json_t *back = pk_jpack_decode(p, n);
	free(p);
	if (back == NULL || !json_equal(v, back))
		abort();
	char *a = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY),
	     *b = json_dumps(back, JSON_COMPACT | JSON_ENCODE_ANY);
	if (a == NULL || b == NULL || strcmp(a, b) != 0)
		abort();
	free(a);
	free(b);
	json_decref(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (v != NULL) {
		round_trip(v);
		json_decref(v);
	}
	v = pk_jpack_decode(data, size);
	if (v != NULL) {
		round_trip(v);
		json_decref(v);
	}
	return 0;
}
