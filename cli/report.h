/*
 * report.h - printing a finished lint run for people (text) or programs
 * (one JSON object).
 *
 * Text: one line per object, "<file>:<line>: <Kind> <namespace>/<name>: <result>",
 * then one indented line per violation ("    deny spec.addresses[1]: ..."),
 * then the files that did not load (their messages name file, line and
 * column; files that could not be read at all are left to the caller, which
 * says so on stderr when it meets them), then a summary line. Skipped objects are listed only when
 * `verbose`. Passing pools show family, subnet, exact usable size and the
 * first and last usable addresses.
 *
 * JSON: {"objects": [...], "problems": [...], "totals": {...}, "exitCode": N};
 * sizes are decimal strings, since an IPv6 pool can hold 2^64 and more.
 */
#ifndef PK_REPORT_H
#define PK_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "lint.h"

void pk_report_write_text(FILE *f, const struct pk_lint *l, bool verbose, bool strict);

/* A new JSON value the caller frees with json_decref; NULL when out of memory. */
json_t *pk_report_to_json(const struct pk_lint *l, bool strict);

/* pk_report_to_json written to f, indented, with a final newline. */
PK_MUST_CHECK int pk_report_write_json(FILE *f, const struct pk_lint *l, bool strict);

#endif
