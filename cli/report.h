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

/* A finding's severity as every output names it: "error" (a DENY) or "warning". */
const char *pk_report_severity(enum pk_severity s);

void pk_report_write_text(FILE *f, const struct pk_lint *l, bool verbose, bool fail_on_warning);

/* A new JSON value the caller frees with json_decref; NULL when out of memory. */
json_t *pk_report_to_json(const struct pk_lint *l, bool fail_on_warning);

/* pk_report_to_json written to f, indented, with a final newline. */
PK_MUST_CHECK int pk_report_write_json(FILE *f, const struct pk_lint *l, bool fail_on_warning);

/* j (taken; NULL for out of memory) written to f, indented, with a final newline. */
PK_MUST_CHECK int pk_report_dump(FILE *f, json_t *j);

/*
 * A finding with no place in a file: one of audit's live findings. `origin`
 * names where it is as the text output does ("cluster:IPAddress/prod/a") and
 * stands for the file in the CI formats, with no line or column; `object`
 * names the object as lint's findings do ("IPAddress prod/a").
 */
struct pk_report_extra {
	const char *origin, *object, *field, *rule, *message;
	enum pk_severity severity;
};

/* What a CI report covers beside the lint run. */
struct pk_report_ci {
	const char *command; /* "lint", "audit": names the JUnit suite and the GitHub summary */
	bool fail_on_warning;
	const struct pk_report_extra *extra; /* n_extra of them, borrowed; NULL when none */
	size_t n_extra;
	bool count_extra; /* the GitHub summary counts them as live findings (audit's, even 0) */
};

/*
 * report_ci.c, with c's extra findings after lint's (each format as below):
 * GitHub workflow commands, then a summary line.
 */
void pk_report_ci_github(FILE *f, const struct pk_lint *l, const struct pk_report_ci *c);

/*
 * JUnit XML: a testcase per object, with a <failure> per finding that fails
 * and the other findings in one <system-out>; an extra finding joins the
 * testcase of the object whose source is its origin, else one of its own
 * origin. PK_ERR_NOMEM when out of memory (only with extra findings).
 */
PK_MUST_CHECK int pk_report_ci_junit(FILE *f, const struct pk_lint *l,
                                     const struct pk_report_ci *c);

/* SARIF 2.1.0, indented; artifact URIs percent-encoded. PK_ERR_NOMEM when out of memory. */
PK_MUST_CHECK int pk_report_ci_sarif(FILE *f, const struct pk_lint *l,
                                     const struct pk_report_ci *c);

/*
 * The CI report `output` names ("github", "junit" or "sarif"), as above:
 * lint's and audit's one way to them. PK_ERR_NOMEM when out of memory,
 * PK_ERR_INVALID for another name.
 */
PK_MUST_CHECK int pk_report_ci_write(FILE *f, const char *output, const struct pk_lint *l,
                                     const struct pk_report_ci *c);

/*
 * s percent-encoded as an RFC 3986 URI reference: every byte but the
 * unreserved characters (ALPHA DIGIT - . _ ~) and "/" as %XX, so that
 * "sp ace#.yaml" is "sp%20ace%23.yaml" and "cluster:IPPool/a" a relative
 * path. A new string the caller frees; NULL when out of memory.
 */
char *pk_report_uri(const char *s);

#endif
