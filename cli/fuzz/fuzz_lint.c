/*
 * fuzz_lint.c - libFuzzer target for poolkeeper lint as a whole: the first
 * byte picks the claim modes, the second where the input splits into two
 * files (so that the checks across files see objects of both), the rest is
 * the text. Any text must lint without crashing or leaking, give an exit
 * code of 0, 1 or 2, place every finding inside its file (a line no further
 * than the file's line breaks allow, a column no further than its bytes),
 * and print in every output (text, json, github, junit, sarif).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lint.h"
#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const enum pk_enforcement claims[] = {PK_ENFORCE_REPAIR, PK_ENFORCE_DENY, PK_ENFORCE_WARN};
static const enum pk_enforcement foreign[] = {PK_ENFORCE_IGNORE, PK_ENFORCE_WARN, PK_ENFORCE_DENY};

/* An upper bound on the lines of text: one more than its LF and CR bytes. */
static size_t max_lines(const char *text, size_t len)
{
	size_t n = 1;
	for (size_t i = 0; i < len; i++)
		n += text[i] == '\n' || text[i] == '\r';
	return n;
}

static FILE *sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	if (sink == NULL && (sink = fopen("/dev/null", "w")) == NULL)
		abort();
	const char *text = (const char *)data + 2;
	size_t len = size - 2, cut = len ? data[1] * len / 255 : 0;
	struct pk_lint *l = pk_lint_new();
	if (l == NULL)
		return 0;
	pk_lint_set_enforcement(l, claims[data[0] % 3], foreign[(data[0] / 3) % 3]);
	if (pk_lint_add_buffer(l, text, cut, "a.yaml") != PK_OK ||
	    pk_lint_add_buffer(l, text + cut, len - cut, "b.yaml") != PK_OK ||
	    pk_lint_run(l) != PK_OK) {
		pk_lint_free(l);
		return 0; /* out of memory */
	}
	size_t lines[2] = {max_lines(text, cut), max_lines(text + cut, len - cut)};
	size_t bytes[2] = {cut, len - cut}, n;
	const struct pk_lint_object *o = pk_lint_objects(l, &n);
	for (size_t i = 0; i < n; i++) {
		size_t f = strcmp(o[i].source, "a.yaml") != 0;
		if (o[i].line < 1 || o[i].line > lines[f])
			abort();
		for (size_t k = 0; k < o[i].n_findings; k++) {
			const struct pk_lint_finding *x = &o[i].findings[k];
			if (x->line < 1 || x->line > lines[f] || x->column < 1 ||
			    x->column > bytes[f] + 1)
				abort();
		}
	}
	int code = pk_lint_exit_code(l, data[0] & 0x80);
	if (code < 0 || code > 2)
		abort();
	pk_report_write_text(sink, l, true, false);
	int rc = pk_report_write_json(sink, l, false);
	if (rc != PK_OK && rc != PK_ERR_NOMEM)
		abort();
	static const char *const ci[] = {"github", "junit", "sarif"};
	const struct pk_report_ci c = {.command = "lint", .fail_on_warning = data[0] & 0x80};
	for (size_t k = 0; k < 3; k++) {
		rc = pk_report_ci_write(sink, ci[k], l, &c);
		if (rc != PK_OK && rc != PK_ERR_NOMEM)
			abort();
	}
	pk_lint_free(l);
	return 0;
}
