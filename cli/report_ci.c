/*
 * report_ci.c - lint results in the formats CI systems read: GitHub
 * Actions workflow commands, JUnit XML and SARIF 2.1.0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "strmap.h"

/* Where a finding or a load error points, and what it says. */
struct entry {
	const char *source, *rule, *field, *message, *object;
	size_t line, column;
	bool placed; /* false: no line or column (an extra finding); line 0 reads as 1 */
	enum pk_severity severity;
};

typedef void (*entry_fn)(FILE *f, const struct entry *e, void *ctx);

static struct entry finding_entry(const struct pk_lint_object *o, const struct pk_lint_finding *x,
                                  const char *what)
{
	return (struct entry){o->source, x->rule,   x->v.field, x->v.message, what,
	                      x->line,   x->column, true,       x->v.severity};
}

static struct entry extra_entry(const struct pk_report_extra *x)
{
	return (struct entry){x->origin, x->rule, x->field, x->message, x->object,
	                      0,         0,       false,    x->severity};
}

static bool fails(const struct entry *e, bool fail_on_warning)
{
	return e->severity == PK_SEV_DENY || fail_on_warning;
}

/* Calls fn for every finding, every extra finding, then every file that did not load. */
static void each_entry(const struct pk_lint *l, const struct pk_report_ci *c, FILE *f, entry_fn fn,
                       void *ctx)
{
	size_t n, np;
	const struct pk_lint_object *objs = pk_lint_objects(l, &n);
	const struct pk_lint_problem *probs = pk_lint_problems(l, &np);
	for (size_t i = 0; i < n; i++) {
		char what[320];
		pk_lint_describe_object(&objs[i], what, sizeof(what));
		for (size_t k = 0; k < objs[i].n_findings; k++) {
			struct entry e = finding_entry(&objs[i], &objs[i].findings[k], what);
			fn(f, &e, ctx);
		}
	}
	for (size_t i = 0; i < c->n_extra; i++) {
		struct entry e = extra_entry(&c->extra[i]);
		fn(f, &e, ctx);
	}
	for (size_t i = 0; i < np; i++) {
		struct entry e = {probs[i].source, "load",          "",   probs[i].detail, "",
		                  probs[i].line,   probs[i].column, true, PK_SEV_DENY};
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

/* An extra finding has a file (its origin) but no line or column. */
static void gh_entry(FILE *f, const struct entry *e, void *ctx)
{
	(void)ctx;
	fprintf(f, "::%s file=", pk_report_severity(e->severity));
	gh_escape(f, e->source, true);
	if (e->placed)
		fprintf(f, ",line=%zu,col=%zu", e->line ? e->line : 1, e->column ? e->column : 1);
	fputs(",title=", f);
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

void pk_report_ci_github(FILE *f, const struct pk_lint *l, const struct pk_report_ci *c)
{
	each_entry(l, c, f, gh_entry, NULL);
	struct pk_lint_totals t = pk_lint_get_totals(l);
	fprintf(f, "poolkeeper %s: %zu object%s, %zu denied, %zu with warnings, %zu skipped",
	        c->command, t.objects, t.objects == 1 ? "" : "s", t.denied, t.warned, t.skipped);
	if (c->count_extra)
		fprintf(f, "; %zu live finding%s", c->n_extra, c->n_extra == 1 ? "" : "s");
	bool warned = t.warned > 0;
	for (size_t i = 0; !warned && i < c->n_extra; i++)
		warned = c->extra[i].severity != PK_SEV_DENY;
	fprintf(f, "%s\n", c->fail_on_warning && warned ? " (warnings fail)" : "");
}

/* ---- JUnit XML: a testcase per object, a failure per finding ---- */

/*
 * The length of the UTF-8 sequence at s that XML 1.0 takes as a character
 * (none of overlong forms, surrogates, past U+10FFFF, U+FFFE, U+FFFF), or 0.
 */
static size_t xml_utf8_len(const unsigned char *s)
{
	unsigned cp;
	size_t n;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		n = 2, cp = s[0] & 0x1Fu;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		n = 3, cp = s[0] & 0x0Fu;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		n = 4, cp = s[0] & 0x07u;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3Fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF)
		return 0;
	return n;
}

/*
 * XML-escaped text. In an attribute (`attr`) newlines, carriage returns and
 * tabs become character references, which attribute-value normalization
 * keeps (a raw one reads back as a space); in content a carriage return
 * does, which end-of-line handling would drop. Bytes XML 1.0 does not take
 * (other control characters, invalid UTF-8) become "?".
 */
static void xml_escape(FILE *f, const char *s, bool attr)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p != '\0') {
		unsigned char c = *p;
		size_t n = xml_utf8_len(p);
		if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '&')
			fputs("&amp;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c == '\r')
			fputs("&#13;", f);
		else if (attr && c == '\n')
			fputs("&#10;", f);
		else if (attr && c == '\t')
			fputs("&#9;", f);
		else if ((c < 0x20 && c != '\n' && c != '\t') || n == 0)
			fputc('?', f);
		else
			fwrite(p, 1, n, f);
		p += n ? n : 1;
	}
}

/* An extra finding and its testcase. */
struct junit_extra {
	size_t at;    /* an object's index, or n_objects + k for the k-th origin no object has */
	size_t extra; /* its index in the report's extra findings */
};

/* One testcase: an object of the lint, or an origin of extra findings no object has. */
struct junit_case {
	const char *classname, *name;
	const struct pk_lint_object *o;  /* NULL for extra findings alone */
	const struct junit_extra *extra; /* n_extra of the report's extra findings */
	size_t n_extra;
};

/* Calls fn for each finding of the testcase: the object's, then its extra ones. */
static void case_each(const struct junit_case *jc, const struct pk_report_ci *c, FILE *f,
                      entry_fn fn, void *ctx)
{
	for (size_t k = 0; jc->o != NULL && k < jc->o->n_findings; k++) {
		struct entry e = finding_entry(jc->o, &jc->o->findings[k], jc->name);
		fn(f, &e, ctx);
	}
	for (size_t k = 0; k < jc->n_extra; k++) {
		struct entry e = extra_entry(&c->extra[jc->extra[k].extra]);
		fn(f, &e, ctx);
	}
}

/* What the passes over a testcase's findings share. */
struct junit_pass {
	bool fail_on_warning;
	bool failed; /* a finding fails */
	bool out;    /* <system-out> is open */
};

static void junit_fails(FILE *f, const struct entry *e, void *ctx)
{
	struct junit_pass *jp = ctx;
	(void)f;
	jp->failed = jp->failed || fails(e, jp->fail_on_warning);
}

/* "<source>:<line>:<col>: error: <field>: <message> [<rule>]", the source alone when unplaced. */
static void junit_line(FILE *f, const struct entry *e)
{
	xml_escape(f, e->source, false);
	if (e->placed)
		fprintf(f, ":%zu:%zu", e->line, e->column);
	fprintf(f, ": %s: ", pk_report_severity(e->severity));
	xml_escape(f, e->field, false);
	fputs(": ", f);
	xml_escape(f, e->message, false);
	fputs(" [", f);
	xml_escape(f, e->rule, false);
	fputc(']', f);
}

static void junit_failure(FILE *f, const struct entry *e, void *ctx)
{
	struct junit_pass *jp = ctx;
	if (!fails(e, jp->fail_on_warning))
		return;
	fputs("      <failure type=\"", f);
	xml_escape(f, e->rule, true);
	fputs("\" message=\"", f);
	xml_escape(f, e->field, true);
	fputs(": ", f);
	xml_escape(f, e->message, true);
	fputs("\">", f);
	junit_line(f, e);
	fputs("</failure>\n", f);
}

/* The findings that do not fail, one a line in a single <system-out>. */
static void junit_out(FILE *f, const struct entry *e, void *ctx)
{
	struct junit_pass *jp = ctx;
	if (fails(e, jp->fail_on_warning))
		return;
	fputs(jp->out ? "\n" : "      <system-out>", f);
	jp->out = true;
	junit_line(f, e);
}

static bool junit_case_fails(const struct junit_case *jc, const struct pk_report_ci *c)
{
	struct junit_pass jp = {c->fail_on_warning, false, false};
	case_each(jc, c, NULL, junit_fails, &jp);
	return jp.failed;
}

static void junit_case(FILE *f, const struct junit_case *jc, const struct pk_report_ci *c)
{
	struct junit_pass jp = {c->fail_on_warning, false, false};
	fputs("    <testcase classname=\"", f);
	xml_escape(f, jc->classname, true);
	fputs("\" name=\"", f);
	xml_escape(f, jc->name, true);
	fputs("\">\n", f);
	if (jc->o != NULL && jc->o->status == PK_LINT_SKIPPED) {
		fputs("      <skipped message=\"", f);
		xml_escape(f, jc->o->note ? jc->o->note : "", true);
		fputs("\"/>\n", f);
	}
	case_each(jc, c, f, junit_failure, &jp);
	case_each(jc, c, f, junit_out, &jp);
	if (jp.out)
		fputs("</system-out>\n", f);
	fputs("    </testcase>\n", f);
}

/*
 * The extra findings by testcase (each testcase's in their order), and
 * orphan[k], the first finding of the k-th origin no object has.
 */
struct junit_groups {
	struct junit_extra *by_case;
	size_t *orphan, n_orphans;
};

static void junit_groups_free(struct junit_groups *g)
{
	free(g->by_case);
	free(g->orphan);
}

static int cmp_by_case(const void *pa, const void *pb)
{
	const struct junit_extra *a = pa, *b = pb;
	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	return a->extra < b->extra ? -1 : a->extra > b->extra;
}

static int junit_group(const struct pk_report_ci *c, const struct pk_lint_object *objs, size_t n,
                       struct junit_groups *g)
{
	memset(g, 0, sizeof(*g));
	if (c->n_extra == 0)
		return PK_OK;
	struct pk_strmap *cases = pk_strmap_new();
	g->by_case = calloc(c->n_extra, sizeof(*g->by_case));
	g->orphan = calloc(c->n_extra, sizeof(*g->orphan));
	int rc = cases && g->by_case && g->orphan ? PK_OK : PK_ERR_NOMEM;
	/* source -> testcase index + 1: the first object of each source */
	for (size_t i = 0; rc == PK_OK && i < n; i++)
		if (pk_strmap_get(cases, objs[i].source) == NULL)
			rc = pk_strmap_put(cases, objs[i].source, (void *)(uintptr_t)(i + 1), NULL);
	for (size_t i = 0; rc == PK_OK && i < c->n_extra; i++) {
		uintptr_t at = (uintptr_t)pk_strmap_get(cases, c->extra[i].origin);
		if (at == 0) {
			g->orphan[g->n_orphans++] = i;
			at = n + g->n_orphans;
			rc = pk_strmap_put(cases, c->extra[i].origin, (void *)at, NULL);
		}
		g->by_case[i] = (struct junit_extra){at - 1, i};
	}
	pk_strmap_free(cases, NULL);
	if (rc != PK_OK) {
		junit_groups_free(g);
		return rc;
	}
	qsort(g->by_case, c->n_extra, sizeof(*g->by_case), cmp_by_case);
	return PK_OK;
}

/* Testcase k (objects, then orphan origins); *next walks g->by_case along the testcases. */
static struct junit_case junit_case_at(const struct pk_report_ci *c,
                                       const struct pk_lint_object *objs, size_t n,
                                       const struct junit_groups *g, size_t k, size_t *next,
                                       char *what, size_t len)
{
	struct junit_case jc = {0};
	if (k < n) {
		jc.o = &objs[k];
		jc.classname = objs[k].source;
		jc.name = pk_lint_describe_object(&objs[k], what, len);
	} else {
		const struct pk_report_extra *x = &c->extra[g->orphan[k - n]];
		jc.classname = x->origin;
		jc.name = x->object;
	}
	jc.extra = g->by_case ? &g->by_case[*next] : NULL;
	while (*next < c->n_extra && g->by_case[*next].at == k) {
		jc.n_extra++;
		(*next)++;
	}
	return jc;
}

int pk_report_ci_junit(FILE *f, const struct pk_lint *l, const struct pk_report_ci *c)
{
	size_t n, np;
	const struct pk_lint_object *objs = pk_lint_objects(l, &n);
	const struct pk_lint_problem *probs = pk_lint_problems(l, &np);
	struct pk_lint_totals t = pk_lint_get_totals(l);
	struct junit_groups g;
	if (junit_group(c, objs, n, &g) != PK_OK)
		return PK_ERR_NOMEM;
	size_t ncases = n + g.n_orphans, failures = 0, next = 0;
	char what[320];
	for (size_t k = 0; k < ncases; k++) {
		struct junit_case jc = junit_case_at(c, objs, n, &g, k, &next, what, sizeof(what));
		failures += junit_case_fails(&jc, c);
	}
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"poolkeeper ", f);
	xml_escape(f, c->command, true);
	fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\">\n", ncases + np, failures,
	        np);
	fputs("  <testsuite name=\"poolkeeper ", f);
	xml_escape(f, c->command, true);
	fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\">\n",
	        ncases + np, failures, np, t.skipped);
	next = 0;
	for (size_t k = 0; k < ncases; k++) {
		struct junit_case jc = junit_case_at(c, objs, n, &g, k, &next, what, sizeof(what));
		junit_case(f, &jc, c);
	}
	for (size_t i = 0; i < np; i++) {
		fputs("    <testcase classname=\"", f);
		xml_escape(f, probs[i].source, true);
		fputs("\" name=\"load\">\n      <error type=\"load\" message=\"", f);
		xml_escape(f, probs[i].message, true);
		fputs("\"/>\n    </testcase>\n", f);
	}
	fputs("  </testsuite>\n</testsuites>\n", f);
	junit_groups_free(&g);
	return PK_OK;
}

/* Without extra findings nothing is allocated: lint's JUnit report cannot fail. */
/* ---- SARIF 2.1.0: tool.driver.rules from the rule ids, a result per finding ---- */

char *pk_report_uri(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(strlen(s) * 3 + 1), *o = out;
	if (out == NULL)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~/", *p) != NULL) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 0xF];
		}
	}
	*o = '\0';
	return out;
}

struct sarif {
	json_t *rules, *index, *results; /* index: rule id -> its place in rules */
	bool ok;
};

/*
 * The artifact (the source, percent-encoded), its region, and the object. A
 * finding with no place (a live one) is at line 1: GitHub code scanning
 * takes no result without region.startLine.
 */
static json_t *sarif_location(const struct entry *e)
{
	char *uri = pk_report_uri(e->source);
	json_t *phys = uri ? json_pack("{s:{s:s}}", "artifactLocation", "uri", uri) : NULL;
	free(uri);
	json_t *region =
	    e->placed ? json_pack("{s:I, s:I}", "startLine", (json_int_t)(e->line ? e->line : 1),
	                          "startColumn", (json_int_t)(e->column ? e->column : 1))
	              : json_pack("{s:I}", "startLine", (json_int_t)1);
	if (json_object_set_new(phys, "region", region) != 0) { /* region freed, also on NULL */
		json_decref(phys);
		return NULL;
	}
	char logical[PK_FIELD_MAX + 600];
	snprintf(logical, sizeof(logical), "%s%s%s", e->object, e->field[0] ? ": " : "", e->field);
	return phys ? json_pack("{s:o, s:[{s:s}]}", "physicalLocation", phys, "logicalLocations",
	                        "fullyQualifiedName", logical)
	            : NULL;
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
	char text[PK_FIELD_MAX + PK_MESSAGE_MAX + 600];
	snprintf(text, sizeof(text), "%s%s%s%s%s", e->object, e->object[0] ? ": " : "", e->field,
	         e->field[0] ? ": " : "", e->message);
	json_t *r = json_pack("{s:s, s:I, s:s, s:{s:s}, s:[o]}", "ruleId", e->rule, "ruleIndex",
	                      json_integer_value(at), "level", pk_report_severity(e->severity),
	                      "message", "text", text, "locations", sarif_location(e));
	s->ok = s->ok && r != NULL && json_array_append_new(s->results, r) == 0;
}

int pk_report_ci_sarif(FILE *f, const struct pk_lint *l, const struct pk_report_ci *c)
{
	struct sarif s = {json_array(), json_object(), json_array(), true};
	s.ok = s.rules != NULL && s.index != NULL && s.results != NULL;
	each_entry(l, c, f, sarif_entry, &s);
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

int pk_report_ci_write(FILE *f, const char *output, const struct pk_lint *l,
                       const struct pk_report_ci *c)
{
	if (!strcmp(output, "github")) {
		pk_report_ci_github(f, l, c);
		return PK_OK;
	}
	if (!strcmp(output, "junit"))
		return pk_report_ci_junit(f, l, c);
	if (!strcmp(output, "sarif"))
		return pk_report_ci_sarif(f, l, c);
	return PK_ERR_INVALID;
}
