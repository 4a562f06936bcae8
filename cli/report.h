/*
 * report.h - printing a finished lint run for people (text), programs
 * (one JSON object) and CI systems (GitHub workflow commands, JUnit XML,
 * SARIF 2.1.0).
 *
 * Text: one line per finding, as compilers print them so CI problem
 * matchers read them:
 *   <file>:<line>:<col>: error|warning: <Kind> <namespace>/<name>: <field>: <message> [<rule>]
 * then the files that did not load ("<file>:<line>:<col>: error: ... [load]";
 * files that could not be read at all are left to the caller, which says so
 * on stderr when it meets them), then a summary line. With `verbose`, objects
 * without errors get an "ok" line (passing pools with family, subnet, exact
 * usable size, first and last usable addresses) and skipped ones a
 * "skipped" line.
 *
 * JSON: {"objects": [...], "problems": [...], "totals": {...}, "exitCode": N};
 * each object's "violations" carry severity, rule, field, message, line and
 * column; each problem its line and column. Sizes are decimal strings,
 * since an IPv6 pool can hold 2^64 and more.
 *
 * `fail_on_warning` is --fail-on=warning: warnings count as failures.
 */
#ifndef PK_REPORT_H
#define PK_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "lint.h"

void pk_report_write_text(FILE *f, const struct pk_lint *l, bool verbose, bool fail_on_warning);

/* A new JSON value the caller frees with json_decref; NULL when out of memory. */
json_t *pk_report_to_json(const struct pk_lint *l, bool fail_on_warning);

/* pk_report_to_json written to f, indented, with a final newline. */
PK_MUST_CHECK int pk_report_write_json(FILE *f, const struct pk_lint *l, bool fail_on_warning);

/* j (taken; NULL for out of memory) written to f, indented, with a final newline. */
PK_MUST_CHECK int pk_report_dump(FILE *f, json_t *j);

/* report_ci.c: one workflow command per finding and load error, then a summary line. */
void pk_report_write_github(FILE *f, const struct pk_lint *l, bool fail_on_warning);

/* JUnit XML: a testcase per object, a <failure> per finding that fails. */
void pk_report_write_junit(FILE *f, const struct pk_lint *l, bool fail_on_warning);

/* SARIF 2.1.0, indented; PK_ERR_NOMEM when out of memory. */
PK_MUST_CHECK int pk_report_write_sarif(FILE *f, const struct pk_lint *l);

#endif
