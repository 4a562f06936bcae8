/*
 * fuzz_manifest.c - libFuzzer target for the manifest loader: any bytes,
 * YAML or JSON, must either load or fail with a message and a code that
 * says what happened (bad input, a cap hit, memory), within the caps,
 * without crashing or leaking. Loaded documents are expanded as Lists and
 * re-serialised to walk every value built.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pk_manifest_limits lim = pk_manifest_limits_default();
	struct pk_manifest m;
	struct pk_err err;

	/* Smaller caps keep each run fast and let the fuzzer reach them. */
	lim.max_nodes = 4096;
	lim.max_docs = 64;
	int rc = pk_manifest_parse_buffer((const char *)data, size, "fuzz", &lim, &m, &err);
	if (rc != PK_OK) {
		if (err.msg[0] == '\0' || strncmp(err.msg, "fuzz", 4) != 0)
			abort(); /* every error names its source */
		if (rc != PK_ERR_INVALID && rc != PK_ERR_TOO_BIG && rc != PK_ERR_NOMEM)
			abort(); /* bad input, a cap, or memory: nothing else */
		return 0;
	}
	if (pk_manifest_expand_lists(&m, &err) == PK_OK) {
		for (size_t i = 0; i < m.n; i++) {
			char origin[256];
			pk_manifest_format_origin(&m, &m.docs[i], origin, sizeof(origin));
			if (!json_is_object(m.docs[i].value))
				abort();
			char *s = json_dumps(m.docs[i].value, JSON_COMPACT);
			free(s);
		}
	}
	pk_manifest_free(&m);
	return 0;
}
