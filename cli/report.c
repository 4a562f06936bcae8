/* report.c - lint results as text lines or one JSON object. */
#include "report.h"

#include <string.h>

const char *pk_report_severity(enum pk_severity s)
{
	return s == PK_SEV_DENY ? "error" : "warning";
}

static void write_pool_summary(FILE *f, const struct pk_lint_pool_summary *p)
{
	fprintf(f, "%s %s, %s usable, %s to %s", pk_address_family_name(p->family), p->subnet,
	        p->size, p->first, p->last);
}

/* "file:line:col: error: IPPool ns/a: spec.prefix: message [rule]", one per finding. */
static void write_object_text(FILE *f, const struct pk_lint_object *o, bool verbose)
{
	char what[320];
	pk_lint_describe_object(o, what, sizeof(what));
	if (o->status == PK_LINT_SKIPPED) {
		if (verbose)
			fprintf(f, "%s:%zu:1: skipped: %s: %s\n", o->source, o->line, what,
			        o->note);
		return;
	}
	for (size_t k = 0; k < o->n_findings; k++) {
		const struct pk_lint_finding *x = &o->findings[k];
		fprintf(f, "%s:%zu:%zu: %s: %s: %s: %s [%s]\n", o->source, x->line, x->column,
		        pk_report_severity(x->v.severity), what, x->v.field, x->v.message, x->rule);
	}
	if (verbose && o->status != PK_LINT_DENY) {
		fprintf(f, "%s:%zu:1: ok: %s", o->source, o->line, what);
		if (o->pool != NULL) {
			fputs(": ", f);
			write_pool_summary(f, o->pool);
		}
		fputc('\n', f);
	}
}

void pk_report_write_text(FILE *f, const struct pk_lint *l, bool verbose, bool fail_on_warning)
{
	size_t n, np;
	const struct pk_lint_object *objs = pk_lint_objects(l, &n);
	const struct pk_lint_problem *probs = pk_lint_problems(l, &np);

	for (size_t i = 0; i < n; i++)
		write_object_text(f, &objs[i], verbose);
	/* Unreadable files were already reported on stderr as they were met. */
	for (size_t i = 0; i < np; i++)
		if (!probs[i].unreadable)
			fprintf(f, "%s:%zu:%zu: error: %s [load]\n", probs[i].source, probs[i].line,
			        probs[i].column, probs[i].detail);

	struct pk_lint_totals t = pk_lint_get_totals(l);
	fprintf(f,
	        "summary: %zu object%s in %zu file%s: %zu passed, %zu with warnings, %zu denied, "
	        "%zu skipped (not kinds lint checks)",
	        t.objects, t.objects == 1 ? "" : "s", t.files, t.files == 1 ? "" : "s", t.passed,
	        t.warned, t.denied, t.skipped);
	if (t.skipped > 0 && !verbose)
		fputs(" (-v lists them)", f);
	if (t.unloadable > 0)
		fprintf(f, "; %zu file%s did not load", t.unloadable, t.unloadable == 1 ? "" : "s");
	if (t.unreadable > 0)
		fprintf(f, "; %zu file%s could not be read", t.unreadable,
		        t.unreadable == 1 ? "" : "s");
	if (fail_on_warning && t.warned > 0)
		fputs("; --fail-on=warning: warnings fail", f);
	fputc('\n', f);
}

/* Adds key: string, or nothing when s is NULL. Returns false when out of memory. */
static bool set_str(json_t *o, const char *key, const char *s)
{
	if (s == NULL)
		return true;
	return json_object_set_new(o, key, json_string(s)) == 0;
}

static bool set_int(json_t *o, const char *key, size_t v)
{
	return json_object_set_new(o, key, json_integer((json_int_t)v)) == 0;
}

static json_t *object_json(const struct pk_lint_object *o)
{
	json_t *j = json_object();
	if (j == NULL)
		return NULL;
	bool ok =
	    set_str(j, "origin", o->origin) && set_str(j, "source", o->source) &&
	    set_int(j, "line", o->line) && set_int(j, "document", o->document) &&
	    (o->item == 0 || set_int(j, "item", o->item)) &&
	    set_str(j, "apiVersion", o->api_version) && set_str(j, "kind", o->kind) &&
	    set_str(j, "namespace", pk_lint_object_namespace(o)) && set_str(j, "name", o->name) &&
	    set_str(j, "status", pk_lint_status_name(o->status)) && set_str(j, "note", o->note);
	if (ok && o->status != PK_LINT_SKIPPED) {
		json_t *arr = json_array();
		ok = arr != NULL && json_object_set_new(j, "violations", arr) == 0;
		for (size_t k = 0; ok && k < o->n_findings; k++) {
			const struct pk_lint_finding *x = &o->findings[k];
			json_t *vj =
			    json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "severity",
			              pk_report_severity(x->v.severity), "rule", x->rule, "field",
			              x->v.field, "message", x->v.message, "line",
			              (json_int_t)x->line, "column", (json_int_t)x->column);
			ok = vj != NULL && json_array_append_new(arr, vj) == 0;
		}
	}
	if (ok && o->pool != NULL) {
		const struct pk_lint_pool_summary *p = o->pool;
		json_t *pj = json_pack("{s:s, s:s, s:s, s:s, s:s}", "family",
		                       pk_address_family_name(p->family), "subnet", p->subnet,
		                       "usable", p->size, "first", p->first, "last", p->last);
		ok = pj != NULL && json_object_set_new(j, "pool", pj) == 0;
	}
	if (!ok) {
		json_decref(j);
		return NULL;
	}
	return j;
}

json_t *pk_report_to_json(const struct pk_lint *l, bool fail_on_warning)
{
	size_t n, np;
	const struct pk_lint_object *objs = pk_lint_objects(l, &n);
	const struct pk_lint_problem *probs = pk_lint_problems(l, &np);
	struct pk_lint_totals t = pk_lint_get_totals(l);

	json_t *root = json_object(), *objects = json_array(), *problems = json_array();
	bool ok = root != NULL && objects != NULL && problems != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		json_t *oj = object_json(&objs[i]);
		ok = oj != NULL && json_array_append_new(objects, oj) == 0;
	}
	for (size_t i = 0; ok && i < np; i++) {
		json_t *pj =
		    json_pack("{s:s, s:s, s:b, s:I, s:I}", "source", probs[i].source, "message",
		              probs[i].message, "unreadable", probs[i].unreadable, "line",
		              (json_int_t)probs[i].line, "column", (json_int_t)probs[i].column);
		ok = pj != NULL && json_array_append_new(problems, pj) == 0;
	}
	json_t *totals = NULL;
	if (ok)
		totals = json_pack(
		    "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "files",
		    (json_int_t)t.files, "objects", (json_int_t)t.objects, "checked",
		    (json_int_t)t.checked, "passed", (json_int_t)t.passed, "warned",
		    (json_int_t)t.warned, "denied", (json_int_t)t.denied, "skipped",
		    (json_int_t)t.skipped, "deny", (json_int_t)t.deny, "warn", (json_int_t)t.warn,
		    "unloadable", (json_int_t)t.unloadable, "unreadable", (json_int_t)t.unreadable);
	ok = ok && totals != NULL;
	if (ok) {
		ok = json_object_set_new(root, "objects", objects) == 0;
		objects = NULL;
		ok = ok && json_object_set_new(root, "problems", problems) == 0;
		problems = NULL;
		ok = ok && json_object_set_new(root, "totals", totals) == 0;
		totals = NULL;
		ok = ok &&
		     json_object_set_new(root, "failOnWarning", json_boolean(fail_on_warning)) == 0;
		ok = ok && set_int(root, "exitCode", (size_t)pk_lint_exit_code(l, fail_on_warning));
	}
	json_decref(objects);
	json_decref(problems);
	json_decref(totals);
	if (!ok) {
		json_decref(root);
		return NULL;
	}
	return root;
}

int pk_report_dump(FILE *f, json_t *j)
{
	if (j == NULL)
		return PK_ERR_NOMEM;
	int rc = json_dumpf(j, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(j);
	if (rc != 0)
		return PK_ERR_NOMEM;
	fputc('\n', f);
	return PK_OK;
}

int pk_report_write_json(FILE *f, const struct pk_lint *l, bool fail_on_warning)
{
	return pk_report_dump(f, pk_report_to_json(l, fail_on_warning));
}
