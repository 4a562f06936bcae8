/*
 * fuzz_manifest.c - libFuzzer target for the manifest loader: any bytes,
 * YAML or JSON, must either load or fail with a message and a code that
 * says what happened (bad input, a cap hit, memory), within the caps,
 * without crashing or leaking. Loaded documents are expanded as Lists and
 * re-serialised to walk every value built. The streaming form
 * (pk_manifest_parse_each) must agree: it loads exactly when parse and
 * expand do, and then gives the same objects in the same order.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct compare {
	const struct pk_manifest *m; /* expanded; NULL when expansion failed */
	size_t n;
};

static int compare_one(void *ctx, const struct pk_manifest_doc *d, struct pk_err *err)
{
	struct compare *c = ctx;
	(void)err;
	if (c->m != NULL) {
		if (c->n >= c->m->n)
			abort();
		const struct pk_manifest_doc *w = &c->m->docs[c->n];
		if (!json_equal(w->value, d->value) || w->line != d->line || w->item != d->item ||
		    w->offset != d->offset)
			abort();
	}
	c->n++;
	return PK_OK;
}

/* Streams the same bytes: the same code as parse and expand, the same objects. */
static void check_stream(const uint8_t *data, size_t size, const struct pk_manifest_limits *lim,
                         int want_rc, const struct pk_manifest *m)
{
	struct compare c = {m, 0};
	struct pk_err err;
	int rc = pk_manifest_parse_each((const char *)data, size, "fuzz", lim, compare_one, &c,
	                                NULL, &err);
	/* Both load or both fail. Not always with one code: the stream stops at
	 * the first bad object in stream order (a List without items), where
	 * parse then expand reports a bad document further on (a cap) first. */
	if ((rc == PK_OK) != (want_rc == PK_OK) && rc != PK_ERR_NOMEM && want_rc != PK_ERR_NOMEM)
		abort();
	if (rc == PK_OK && m != NULL && c.n != m->n)
		abort();
}

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
		check_stream(data, size, &lim, rc, NULL);
		return 0;
	}
	int xrc = pk_manifest_expand_lists(&m, &err);
	check_stream(data, size, &lim, xrc, xrc == PK_OK ? &m : NULL);
	if (xrc == PK_OK) {
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
