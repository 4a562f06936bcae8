/*
 * fuzz_kube_watch.c - libFuzzer target for the watch stream: any bytes,
 * cut into reads at points the input chooses, go through the splitter and
 * every whole object through the event decoder. Nothing may crash or
 * leak; every event handed on must be a complete, NUL-terminated object.
 *
 * An event over the cap is named by the oversize callback (when byte 0 is
 * odd) with values that are short, NUL-free strings, and the splitter goes
 * on with the next event.
 *
 * Input layout: byte 0 and 1 pick two cut points, the rest is the stream.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube_watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_text(void *ud, const char *text, size_t len)
{
	(void)ud;
	if (len == 0 || text[0] != '{' || text[len - 1] != '}' || text[len] != '\0')
		abort();
	struct pk_kube_event ev;
	json_t *root;
	struct pk_err err;
	if (pk_kube_event_decode(text, len, 32, &ev, &root, &err) == PK_OK) {
		if (ev.object == NULL || (unsigned)ev.type > PK_KUBE_EVENT_ERROR)
			abort();
		if (ev.type == PK_KUBE_EVENT_ERROR && ev.error.message[0] == '\0')
			abort();
	} else if (err.msg[0] == '\0') {
		abort();
	}
	json_decref(root);
	return 0;
}

static void short_string(const char *s)
{
	if (s != NULL && strlen(s) > PK_KUBE_SCAN_VALUE_MAX)
		abort();
}

static int on_over(void *ud, size_t len, const char *type, const char *ns, const char *name,
                   const char *rv)
{
	(void)ud;
	if (len <= 4096)
		abort();
	short_string(type);
	short_string(ns);
	short_string(name);
	short_string(rv);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	const char *s = (const char *)data + 2;
	size_t n = size - 2;
	size_t cut1 = n ? data[0] % (n + 1) : 0;
	size_t cut2 = n ? data[1] % (n + 1) : 0;
	if (cut1 > cut2) {
		size_t t = cut1;
		cut1 = cut2;
		cut2 = t;
	}
	struct pk_kube_splitter *sp = pk_kube_splitter_new(4096);
	if (sp == NULL)
		return 0;
	bool named = data[0] & 1;
	if (named)
		pk_kube_splitter_on_oversize(sp, on_over, NULL);
	struct pk_err err;
	size_t cuts[3] = {cut1, cut2, n}, at = 0;
	for (int i = 0; i < 3; i++) {
		int rc = pk_kube_splitter_feed(sp, s + at, cuts[i] - at, on_text, NULL, &err);
		at = cuts[i];
		if (rc != PK_OK) {
			if (err.msg[0] == '\0')
				abort();
			pk_kube_splitter_reset(sp);
			break;
		}
	}
	if (pk_kube_splitter_pending(sp) > (named ? n : 4096))
		abort();
	pk_kube_splitter_free(sp);
	return 0;
}
