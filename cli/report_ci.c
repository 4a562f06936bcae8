/*
 * report_ci.c - lint results in the formats CI systems read: GitHub
 * Actions workflow commands, JUnit XML and SARIF 2.1.0.
 */
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "report.h"

/* Where a finding or a load error points, and what it says. */
struct entry {
	const char *source, *rule, *field, *message, *object;
	size_t line, column;
	enum pk_severity severity;
};

typedef void (*entry_fn)(FILE *f, const struct entry *e, void *ctx);

/* Calls fn for every finding, then every file that did not load. */
static void each_entry(const struct pk_lint *l, FILE *f, entry_fn fn, void *ctx)
{
	size_t n, np;
	const struct pk_lint_object *objs = pk_lint_objects(l, &n);
	const struct pk_lint_problem *probs = pk_lint_problems(l, &np);
	for (size_t i = 0; i < n; i++) {
		char what[320];
		pk_lint_describe_object(&objs[i], what, sizeof(what));
		for (size_t k = 0; k < objs[i].n_findings; k++) {
			const struct pk_lint_finding *x = &objs[i].findings[k];
			struct entry e = {objs[i].source, x->rule, x->v.field, x->v.message,
			                  what,           x->line, x->column,  x->v.severity};
			fn(f, &e, ctx);
		}
	}
	for (size_t i = 0; i < np; i++) {
		struct entry e = {probs[i].source, "load",          "",         probs[i].detail, "",
		                  probs[i].line,   probs[i].column, PK_SEV_DENY};
		fn(f, &e, ctx);
	}
}

/* ---- GitHub Actions: ::error file=F,line=L,col=C,title=T::message ---- */

/* Workflow command escaping: % \r \n always, and : , in properties. */
static void gh_escape(FILE *f, const char *s, bool property)
{
	for (; *s != '\0'; s++) {
		if (*s == '%')
			fputs("%25", f);
		else if (*s == '\r')
			fputs("%0D", f);
		else if (*s == '\n')
			fputs("%0A", f);
		else if (property && *s == ':')
			fputs("%3A", f);
		else if (property && *s == ',')
			fputs("%2C", f);
		else
			fputc(*s, f);
	}
}

static void gh_entry(FILE *f, const struct entry *e, void *ctx)
{
	(void)ctx;
	fprintf(f, "::%s file=", e->severity == PK_SEV_DENY ? "error" : "warning");
	gh_escape(f, e->source, true);
	fprintf(f, ",line=%zu,col=%zu,title=", e->line ? e->line : 1, e->column ? e->column : 1);
	gh_escape(f, e->rule, true);
	fputs("::", f);
	if (e->object[0] != '\0') {
		gh_escape(f, e->object, false);
		fputs(": ", f);
	}
	if (e->field[0] != '\0') {
		gh_escape(f, e->field, false);
		fputs(": ", f);
	}
	gh_escape(f, e->message, false);
	fputc('\n', f);
}

void pk_report_write_github(FILE *f, const struct pk_lint *l, bool fail_on_warning)
{
	each_entry(l, f, gh_entry, NULL);
	struct pk_lint_totals t = pk_lint_get_totals(l);
	fprintf(f, "poolkeeper lint: %zu object%s, %zu denied, %zu with warnings, %zu skipped%s\n",
	        t.objects, t.objects == 1 ? "" : "s", t.denied, t.warned, t.skipped,
	        fail_on_warning && t.warned ? " (warnings fail)" : "");
}

/* ---- JUnit XML: a testcase per object, a failure per finding ---- */

static void xml_escape(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '&')
			fputs("&amp;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c < 0x20 && c != '\n' && c != '\t')
			fputc('?', f);
		else
			fputc(c, f);
	}
}

static void junit_case(FILE *f, const struct pk_lint_object *o, bool fail_on_warning)
{
	char what[320];
	pk_lint_describe_object(o, what, sizeof(what));
	fputs("    <testcase classname=\"", f);
	xml_escape(f, o->source);
	fputs("\" name=\"", f);
	xml_escape(f, what);
	fputs("\">\n", f);
	if (o->status == PK_LINT_SKIPPED)
		fprintf(f, "      <skipped message=\"%s\"/>\n", o->note ? o->note : "");
	for (size_t k = 0; k < o->n_findings; k++) {
		const struct pk_lint_finding *x = &o->findings[k];
		bool fails = x->v.severity == PK_SEV_DENY || fail_on_warning;
		fprintf(f, "      <%s type=\"", fails ? "failure" : "system-out");
		if (fails) {
			xml_escape(f, x->rule);
			fputs("\" message=\"", f);
			xml_escape(f, x->v.field);
			fputs(": ", f);
			xml_escape(f, x->v.message);
			fputs("\">", f);
		} else {
			fputs("warning\">", f);
		}
		fprintf(f, "%s:%zu:%zu: %s: ", o->source, x->line, x->column,
		        x->v.severity == PK_SEV_DENY ? "error" : "warning");
		xml_escape(f, x->v.field);
		fputs(": ", f);
		xml_escape(f, x->v.message);
		fprintf(f, " [%s]</%s>\n", x->rule, fails ? "failure" : "system-out");
	}
	fputs("    </testcase>\n", f);
}

void pk_report_write_junit(FILE *f, const struct pk_lint *l, bool fail_on_warning)
{
	size_t n, np;
	const struct pk_lint_object *objs = pk_lint_objects(l, &n);
	const struct pk_lint_problem *probs = pk_lint_problems(l, &np);
	struct pk_lint_totals t = pk_lint_get_totals(l);
	size_t failures = t.denied + (fail_on_warning ? t.warned : 0);
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fprintf(f,
	        "<testsuites name=\"poolkeeper lint\" tests=\"%zu\" failures=\"%zu\" "
	        "errors=\"%zu\">\n  <testsuite name=\"poolkeeper lint\" tests=\"%zu\" "
	        "failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\">\n",
	        n + np, failures, np, n + np, failures, np, t.skipped);
	for (size_t i = 0; i < n; i++)
		junit_case(f, &objs[i], fail_on_warning);
	for (size_t i = 0; i < np; i++) {
		fputs("    <testcase classname=\"", f);
		xml_escape(f, probs[i].source);
		fputs("\" name=\"load\">\n      <error type=\"load\" message=\"", f);
		xml_escape(f, probs[i].message);
		fputs("\"/>\n    </testcase>\n", f);
	}
	fputs("  </testsuite>\n</testsuites>\n", f);
}

/* ---- SARIF 2.1.0: tool.driver.rules from the rule ids, a result per finding ---- */

struct sarif {
	json_t *rules, *index, *results; /* index: rule id -> its place in rules */
	bool ok;
};

static json_t *sarif_location(const struct entry *e)
{
	json_t *region = json_pack("{s:I, s:I}", "startLine", (json_int_t)(e->line ? e->line : 1),
	                           "startColumn", (json_int_t)(e->column ? e->column : 1));
	char logical[PK_FIELD_MAX + 340];
	snprintf(logical, sizeof(logical), "%s%s%s", e->object, e->field[0] ? ": " : "", e->field);
	return json_pack("{s:{s:{s:s}, s:o}, s:[{s:s}]}", "physicalLocation", "artifactLocation",
	                 "uri", e->source, "region", region, "logicalLocations",
	                 "fullyQualifiedName", logical);
}

static void sarif_entry(FILE *f, const struct entry *e, void *ctx)
{
	struct sarif *s = ctx;
	(void)f;
	if (!s->ok)
		return;
	json_t *at = json_object_get(s->index, e->rule);
	if (at == NULL) {
		at = json_integer((json_int_t)json_array_size(s->rules));
		s->ok = at != NULL && json_object_set_new(s->index, e->rule, at) == 0 &&
		        json_array_append_new(s->rules,
		                              json_pack("{s:s, s:{s:s}}", "id", e->rule,
		                                        "shortDescription", "text", e->rule)) == 0;
	}
	char text[PK_FIELD_MAX + PK_MESSAGE_MAX + 340];
	snprintf(text, sizeof(text), "%s%s%s%s%s", e->object, e->object[0] ? ": " : "", e->field,
	         e->field[0] ? ": " : "", e->message);
	json_t *r = json_pack("{s:s, s:I, s:s, s:{s:s}, s:[o]}", "ruleId", e->rule, "ruleIndex",
	                      json_integer_value(at), "level",
	                      e->severity == PK_SEV_DENY ? "error" : "warning", "message", "text",
	                      text, "locations", sarif_location(e));
	s->ok = s->ok && r != NULL && json_array_append_new(s->results, r) == 0;
}

int pk_report_write_sarif(FILE *f, const struct pk_lint *l)
{
	struct sarif s = {json_array(), json_object(), json_array(), true};
	s.ok = s.rules != NULL && s.index != NULL && s.results != NULL;
	each_entry(l, f, sarif_entry, &s);
	json_t *root = NULL;
	if (s.ok)
		root = json_pack("{s:s, s:s, s:[{s:{s:{s:s, s:O}}, s:O}]}", "$schema",
		                 "https://json.schemastore.org/sarif-2.1.0.json", "version",
		                 "2.1.0", "runs", "tool", "driver", "name", "poolkeeper", "rules",
		                 s.rules, "results", s.results);
	json_decref(s.rules);
	json_decref(s.index);
	json_decref(s.results);
	return pk_report_dump(f, root);
}
