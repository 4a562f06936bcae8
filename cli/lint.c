/* lint.c - running the contract rules over loaded manifests and keeping what they found. */
#include "lint.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "lint_internal.h"
#include "pool_lookup.h"
#include "rules.h"
#include "schema.h"
#include "suggest.h"

static int keep_manifest(struct pk_lint *l, struct pk_manifest *m);

struct pk_lint *pk_lint_new(void)
{
	struct pk_lint *l = calloc(1, sizeof(struct pk_lint));
	if (l != NULL) {
		l->claims = PK_ENFORCE_REPAIR;
		l->foreign_claims = PK_ENFORCE_WARN;
		l->limits = pk_manifest_limits_default();
		lint_init_lookup(l);
	}
	return l;
}

void pk_lint_set_enforcement(struct pk_lint *l, enum pk_enforcement claims,
                             enum pk_enforcement foreign_claims)
{
	l->claims = claims;
	l->foreign_claims = foreign_claims;
}

void pk_lint_set_max_file_size(struct pk_lint *l, size_t bytes)
{
	struct pk_manifest_limits d = pk_manifest_limits_default();
	l->limits = d;
	l->limits.max_bytes = bytes;
	if (bytes > d.max_bytes) {
		size_t times = bytes / d.max_bytes + 1;
		l->limits.max_docs = d.max_docs * times;
		l->limits.max_nodes = d.max_nodes * times;
	}
}

void pk_lint_set_strict(struct pk_lint *l, bool strict)
{
	l->strict = strict;
}

void pk_lint_free(struct pk_lint *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->n_objects; i++) {
		free(l->objects[i].findings);
		free(l->objects[i].origin);
		if (l->internal[i].pool != NULL) {
			pk_pool_release(l->internal[i].pool);
			free(l->internal[i].pool);
		}
	}
	free(l->objects);
	free(l->internal);
	free(l->pool_refs);
	free(l->addr_refs);
	for (size_t i = 0; i < l->n_manifests; i++) {
		pk_manifest_free(l->manifests[i]);
		free(l->manifests[i]);
	}
	free(l->manifests);
	for (size_t i = 0; i < l->n_problems; i++) {
		free(l->problems[i].source);
		free(l->problems[i].message);
	}
	free(l->problems);
	free(l);
}

/* The decimal at s (0 when none); where it ends. */
static const char *read_number(const char *s, size_t *out)
{
	*out = 0;
	for (; *s >= '0' && *s <= '9' && *out < SIZE_MAX / 10 - 10; s++)
		*out = *out * 10 + (size_t)(*s - '0');
	return s;
}

static int add_problem(struct pk_lint *l, const char *source, const char *message, bool unreadable)
{
	if (pk_array_reserve(&l->problems, &l->cap_problems, l->n_problems + 1,
	                     sizeof(*l->problems)) != PK_OK)
		return PK_ERR_NOMEM;
	struct pk_lint_problem *p = &l->problems[l->n_problems];
	p->source = strdup(source);
	p->message = strdup(message);
	p->unreadable = unreadable;
	p->line = p->column = 0;
	p->detail = p->message;
	/* "<source>:<line>:<column>: what", as the manifest loader words it. */
	size_t sl = strlen(source);
	if (!strncmp(p->message, source, sl) && p->message[sl] == ':') {
		const char *q = p->message + sl + 1;
		q = read_number(q, &p->line);
		if (*q == ':')
			q = read_number(q + 1, &p->column);
		if (p->line > 0 && q[0] == ':' && q[1] == ' ')
			p->detail = q + 2;
	}
	if (p->source == NULL || p->message == NULL) {
		free(p->source);
		free(p->message);
		return PK_ERR_NOMEM;
	}
	l->n_problems++;
	return PK_OK;
}

int pk_lint_add_unreadable(struct pk_lint *l, const char *source, const char *message)
{
	l->files++;
	return add_problem(l, source, message, true);
}

static int add_object(struct pk_lint *l, const struct pk_manifest *m,
                      const struct pk_manifest_doc *d)
{
	/* objects and internal grow together, each with its own capacity. */
	if (pk_array_reserve(&l->objects, &l->cap_objects, l->n_objects + 1, sizeof(*l->objects)) !=
	        PK_OK ||
	    pk_array_reserve(&l->internal, &l->cap_internal, l->n_objects + 1,
	                     sizeof(*l->internal)) != PK_OK)
		return PK_ERR_NOMEM;
	struct pk_lint_object *o = &l->objects[l->n_objects];
	struct lint_internal *in = &l->internal[l->n_objects];
	memset(o, 0, sizeof(*o));
	memset(in, 0, sizeof(*in));
	char origin[PK_LINT_ORIGIN_MAX];
	o->origin = strdup(pk_manifest_format_origin(m, d, origin, sizeof(origin)));
	if (o->origin == NULL)
		return PK_ERR_NOMEM;
	o->source = d->source;
	o->line = d->line;
	o->document = d->document;
	o->item = d->item;
	o->api_version = pk_json_cstr_at(d->value, "apiVersion");
	o->kind = pk_json_cstr_at(d->value, "kind");
	o->namespace_ = pk_json_meta_cstr(d->value, "namespace");
	o->name = pk_json_meta_cstr(d->value, "name");
	in->value = d->value;
	l->n_objects++;
	return PK_OK;
}

int pk_lint_add_buffer(struct pk_lint *l, const char *buf, size_t len, const char *source)
{
	l->files++;
	struct pk_manifest *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return PK_ERR_NOMEM;
	struct pk_err err = {{0}};
	int rc = pk_manifest_parse_buffer(buf, len, source, &l->limits, m, &err);
	if (rc == PK_OK)
		rc = pk_manifest_expand_lists(m, &err);
	if (rc != PK_OK) {
		pk_manifest_free(m);
		free(m);
		return add_problem(l, source, err.msg, false);
	}
	return keep_manifest(l, m);
}

/* Keeps m (taken) and adds its objects. */
static int keep_manifest(struct pk_lint *l, struct pk_manifest *m)
{
	if (pk_array_reserve(&l->manifests, &l->cap_manifests, l->n_manifests + 1,
	                     sizeof(*l->manifests)) != PK_OK) {
		pk_manifest_free(m);
		free(m);
		return PK_ERR_NOMEM;
	}
	l->manifests[l->n_manifests++] = m;
	for (size_t i = 0; i < m->n; i++)
		if (add_object(l, m, &m->docs[i]) != PK_OK)
			return PK_ERR_NOMEM;
	return PK_OK;
}

int pk_lint_add_object(struct pk_lint *l, json_t *obj, const char *source, size_t line)
{
	struct pk_manifest *m = calloc(1, sizeof(*m));
	l->files++;
	if (m == NULL || (m->source = strdup(source ? source : "(object)")) == NULL ||
	    (m->docs = calloc(1, sizeof(*m->docs))) == NULL) {
		json_decref(obj);
		if (m != NULL)
			pk_manifest_free(m);
		free(m);
		return PK_ERR_NOMEM;
	}
	m->n = m->cap = m->n_documents = 1;
	m->docs[0].value = obj;
	m->docs[0].source = m->source;
	m->docs[0].document = 1;
	m->docs[0].line = line;
	return keep_manifest(l, m);
}

/* ---- per-object rules ---- */

static bool is_pool_kind(const char *kind)
{
	return kind != NULL && (!strcmp(kind, PK_POOL_KIND) || !strcmp(kind, PK_GLOBAL_POOL_KIND));
}

/* Namespaced kinds land in "default" when the manifest names no namespace. */
const char *lint_effective_namespace(const struct pk_lint_object *o)
{
	if (o->kind == NULL || !strcmp(o->kind, PK_GLOBAL_POOL_KIND))
		return NULL;
	if (o->namespace_ != NULL && o->namespace_[0] != '\0')
		return o->namespace_;
	if (!strcmp(o->kind, PK_POOL_KIND) || !strcmp(o->kind, PK_CLAIM_KIND) ||
	    !strcmp(o->kind, PK_ADDRESS_KIND))
		return "default";
	return NULL;
}

const char *pk_lint_object_namespace(const struct pk_lint_object *o)
{
	return lint_effective_namespace(o);
}

/* "pool/spec.addresses" from "spec.addresses[2]": the rule a finding came from. */
static void derive_rule(const char *prefix, const char *field, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "%s/", prefix);
	for (const char *f = field; *f != '\0' && o + 1 < len; f++) {
		if (*f == '[') {
			f += strcspn(f, "]");
			if (*f == '\0')
				break;
			continue;
		}
		buf[o++] = *f;
	}
	buf[o < len ? o : len - 1] = '\0';
}

int lint_flush(struct pk_lint *l, size_t i, const char *prefix, const char *rule)
{
	struct pk_lint_object *o = &l->objects[i];
	struct pk_violations *v = &l->scratch;
	if (v->n > 0 && pk_array_reserve(&o->findings, &o->cap_findings, o->n_findings + v->n,
	                                 sizeof(*o->findings)) != PK_OK)
		return PK_ERR_NOMEM;
	for (size_t k = 0; k < v->n; k++) {
		struct pk_lint_finding *f = &o->findings[o->n_findings++];
		f->v = v->items[k];
		if (rule != NULL)
			snprintf(f->rule, sizeof(f->rule), "%s", rule);
		else
			derive_rule(prefix, f->v.field, f->rule, sizeof(f->rule));
		f->line = o->line;
		f->column = 1;
		if (f->v.severity == PK_SEV_DENY)
			o->n_deny++;
		else
			o->n_warn++;
	}
	pk_violations_init(v);
	return PK_OK;
}

char *pk_lint_describe_object(const struct pk_lint_object *o, char *buf, size_t len)
{
	const char *ns = lint_effective_namespace(o);
	snprintf(buf, len, "%s %s%s%s", o->kind ? o->kind : "(no kind)", ns ? ns : "",
	         ns ? "/" : "", o->name ? o->name : "(no name)");
	return buf;
}

/* The API server refuses an object without a name (generateName only on create). */
static void check_name(const json_t *obj, struct pk_violations *v)
{
	const char *name = pk_json_meta_cstr(obj, "name");
	const char *gen = pk_json_meta_cstr(obj, "generateName");
	if ((name == NULL || name[0] == '\0') && (gen == NULL || gen[0] == '\0'))
		pk_violations_add(v, PK_SEV_DENY, "metadata.name",
		                  "required: the API server refuses an object without a name");
}

static void check_pool_object(struct pk_lint *l, struct lint_internal *in)
{
	struct pk_violations *v = &l->scratch;
	pk_rules_check_pool(in->value, NULL, v);
	check_name(in->value, v);
	if (pk_violations_count(v, PK_SEV_DENY) > 0)
		return;
	/* Decode again for the overlap check and the summary; the rules
	 * above already reported everything decoding finds. */
	struct pk_pool *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return;
	struct pk_violations *scratch = malloc(sizeof(*scratch));
	if (scratch != NULL)
		pk_violations_init(scratch);
	if (scratch == NULL ||
	    pk_pool_decode(json_object_get(in->value, "spec"), p, scratch) != PK_OK ||
	    p->usable == NULL) {
		pk_pool_release(p);
		free(p);
		p = NULL;
	}
	free(scratch);
	in->pool = p;
}

/*
 * A claim as the webhook decides it on CREATE: the mutating endpoint's
 * repair (on a copy; lint assumes the requester may set blockOwnerDeletion)
 * and its warnings, then the validating endpoint's check of the result, each
 * under the mode the claim falls under.
 */
static int check_claim_object(struct pk_lint *l, struct pk_lint_object *o,
                              const struct lint_internal *in)
{
	enum pk_enforcement mode =
	    pk_rules_claim_enforcement(in->value, l->claims, l->foreign_claims, NULL);
	struct pk_violations *v = &l->scratch;
	struct pk_claim_repair plan;

	if (mode == PK_ENFORCE_IGNORE) {
		o->status = PK_LINT_SKIPPED;
		o->note = "a claim on another provider's pool, which --foreign-claims=ignore skips";
		return PK_OK;
	}
	pk_rules_plan_claim_repair(in->value, mode, &plan);
	if (!pk_rules_claim_repair_any(&plan)) {
		pk_rules_check_claim_mode(in->value, NULL, mode, v);
	} else {
		json_t *copy = json_deep_copy(in->value);
		if (copy == NULL || pk_rules_apply_claim_repair(copy, &plan) != PK_OK) {
			json_decref(copy);
			return PK_ERR_NOMEM;
		}
		pk_rules_note_claim_repair(in->value, &plan, mode, v);
		pk_rules_check_claim_mode(copy, NULL, mode, v);
		json_decref(copy);
	}
	check_name(in->value, v);
	return PK_OK;
}

/*
 * An IPAddress as the webhook decides it on CREATE: its own rules, then,
 * when they pass, against its pool when the files hold it.
 */
static int check_ipaddress_object(struct pk_lint *l, struct pk_lint_object *o,
                                  const struct lint_internal *in)
{
	struct pk_err err;
	struct pk_violations *v = &l->scratch;
	pk_rules_check_ipaddress(in->value, NULL, v);
	check_name(in->value, v);
	if (pk_violations_count(v, PK_SEV_DENY) > 0 ||
	    !pk_rules_is_poolkeeper_pool_ref(
	        json_object_get(json_object_get(in->value, "spec"), "poolRef")))
		return PK_OK;
	return pk_pool_lookup_check_ipaddress_pool(&l->lookup, lint_effective_namespace(o),
	                                           in->value, v, &err);
}

/* apiVersion and kind are strings: split the group off. */
struct gvk {
	char group[128];
	const char *version;
	bool ours, capi;
};

static void split_api_version(const struct pk_lint_object *o, struct gvk *g)
{
	const char *slash = strchr(o->api_version, '/');
	size_t n = slash ? (size_t)(slash - o->api_version) : 0;
	if (n >= sizeof(g->group))
		n = 0;
	memcpy(g->group, o->api_version, n);
	g->group[n] = '\0';
	g->version = slash ? slash + 1 : o->api_version;
	g->ours = !strcmp(g->group, PK_POOL_GROUP);
	g->capi = !strcmp(g->group, PK_CAPI_IPAM_GROUP);
}

/*
 * A near miss of a known apiVersion or kind: DENY with the suggestion,
 * rather than a skip that would let a typo through. Returns true when it
 * found one.
 */
static bool check_near_miss(struct pk_lint *l, const struct pk_lint_object *o, const struct gvk *g,
                            const char **rule)
{
	size_t nv, nk;
	const char *const *versions = pk_schema_api_versions(&nv);
	const char *const *kinds = pk_schema_kinds(&nk);
	const char *near_kind = pk_suggest_name(o->kind, kinds, nk, 2);
	if (!g->ours && !g->capi) {
		const char *v = pk_suggest_name(o->api_version, versions, nv, 3);
		if (v == NULL)
			return false;
		*rule = "unknown-api-version";
		pk_violations_add(&l->scratch, PK_SEV_DENY, "apiVersion",
		                  "unknown apiVersion \"%.64s\"; did you mean \"%s\"?",
		                  o->api_version, v);
		return true;
	}
	if (near_kind == NULL || !strcmp(near_kind, o->kind))
		return false;
	*rule = "unknown-kind";
	pk_violations_add(&l->scratch, PK_SEV_DENY, "kind",
	                  "\"%.64s\" is not a kind of %s; did you mean \"%s\"?", o->kind, g->group,
	                  near_kind);
	return true;
}

/* The unknown fields of a kind with a schema; they come first in its findings. */
static int check_fields(struct pk_lint *l, size_t i, const struct gvk *g)
{
	const struct pk_lint_object *o = &l->objects[i];
	const struct pk_schema *s = pk_schema_find(g->group, g->version, o->kind);
	if (s == NULL)
		return PK_OK;
	pk_schema_check(s, l->internal[i].value, l->strict, &l->scratch);
	return lint_flush(l, i, NULL, "unknown-field");
}

static void skip(struct pk_lint_object *o, const char *note)
{
	o->status = PK_LINT_SKIPPED;
	o->note = note;
}

/* The rules that apply to object i, by apiVersion and kind; its findings. */
static int check_object(struct pk_lint *l, size_t i)
{
	struct pk_lint_object *o = &l->objects[i];
	struct lint_internal *in = &l->internal[i];
	const char *rule = NULL;
	struct gvk g;

	if (o->api_version == NULL || o->kind == NULL) {
		if (o->api_version == NULL)
			pk_violations_add(&l->scratch, PK_SEV_DENY, "apiVersion",
			                  "required: every Kubernetes object names its apiVersion");
		if (o->kind == NULL)
			pk_violations_add(&l->scratch, PK_SEV_DENY, "kind",
			                  "required: every Kubernetes object names its kind");
		return lint_flush(l, i, NULL, "required");
	}
	split_api_version(o, &g);
	if (check_near_miss(l, o, &g, &rule))
		return lint_flush(l, i, NULL, rule);
	if (g.ours && is_pool_kind(o->kind) && !strcmp(g.version, PK_POOL_VERSION)) {
		if (check_fields(l, i, &g) != PK_OK)
			return PK_ERR_NOMEM;
		check_pool_object(l, in);
		return lint_flush(l, i, "pool", NULL);
	}
	if (g.ours && is_pool_kind(o->kind)) {
		pk_violations_add(&l->scratch, PK_SEV_DENY, "apiVersion",
		                  "%.64s is not served; %s serves %s", o->api_version, o->kind,
		                  PK_POOL_API_VERSION);
		return lint_flush(l, i, NULL, "unknown-api-version");
	}
	if (g.ours) {
		pk_violations_add(&l->scratch, PK_SEV_DENY, "kind",
		                  "\"%.64s\" is not a kind of %s, which has %s and %s", o->kind,
		                  PK_POOL_GROUP, PK_POOL_KIND, PK_GLOBAL_POOL_KIND);
		return lint_flush(l, i, NULL, "unknown-kind");
	}
	bool claim = !strcmp(o->kind, PK_CLAIM_KIND), address = !strcmp(o->kind, PK_ADDRESS_KIND);
	if (g.capi && pk_rules_is_capi_ipam_version(g.version) && (claim || address)) {
		if (check_fields(l, i, &g) != PK_OK)
			return PK_ERR_NOMEM;
		int rc = claim ? check_claim_object(l, o, in) : check_ipaddress_object(l, o, in);
		if (rc != PK_OK)
			return rc;
		return lint_flush(l, i, claim ? "claim" : "ipaddress", NULL);
	}
	skip(o, g.capi ? "a kind or version of " PK_CAPI_IPAM_GROUP " that lint does not check"
	               : "not an IPAM kind");
	return PK_OK;
}

static void fill_summary(struct pk_lint_object *o, const struct pk_pool *p)
{
	size_t n;
	const struct pk_range *r = pk_range_set_ranges(p->usable, &n);
	if (n == 0)
		return;
	struct pk_lint_pool_summary *s = &o->pool;
	s->family = p->family;
	pk_count_format(pk_range_set_size(p->usable), s->size);
	pk_address_format_v(r[0].lo, p->family, s->first);
	pk_address_format_v(r[n - 1].hi, p->family, s->last);
	size_t na;
	const struct pk_range *a = pk_range_set_ranges(p->addresses, &na);
	pk_u128 net, bcast;
	char net_text[PK_ADDR_STRLEN];
	pk_address_subnet(na ? a[0].lo : r[0].lo, p->family, p->prefix, &net, &bcast);
	snprintf(s->subnet, sizeof(s->subnet), "%s/%u",
	         pk_address_format_v(net, p->family, net_text), p->prefix);
	o->has_pool = true;
}

int pk_lint_run(struct pk_lint *l)
{
	if (l->ran)
		return PK_OK;
	l->ran = true;
	l->before = l->n_objects;
	pk_violations_init(&l->scratch);
	if (lint_build_lookup(l) != PK_OK)
		return PK_ERR_NOMEM;
	for (size_t i = 0; i < l->n_objects; i++)
		if (check_object(l, i) != PK_OK)
			return PK_ERR_NOMEM;
	if (lint_check_across(l) != PK_OK)
		return PK_ERR_NOMEM;
	for (size_t i = 0; i < l->n_objects; i++) {
		struct pk_lint_object *o = &l->objects[i];
		if (o->status == PK_LINT_SKIPPED)
			continue;
		if (o->n_deny > 0)
			o->status = PK_LINT_DENY;
		else if (o->n_warn > 0)
			o->status = PK_LINT_WARN;
		else
			o->status = PK_LINT_PASS;
		if (o->status != PK_LINT_DENY && l->internal[i].pool != NULL)
			fill_summary(o, l->internal[i].pool);
	}
	return PK_OK;
}

const struct pk_lint_object *pk_lint_objects(const struct pk_lint *l, size_t *n)
{
	*n = l->n_objects;
	return l->objects;
}

const struct pk_lint_problem *pk_lint_problems(const struct pk_lint *l, size_t *n)
{
	*n = l->n_problems;
	return l->problems;
}

struct pk_lint_totals pk_lint_get_totals(const struct pk_lint *l)
{
	struct pk_lint_totals t = {0};
	t.files = l->files;
	t.objects = l->n_objects;
	for (size_t i = 0; i < l->n_objects; i++) {
		const struct pk_lint_object *o = &l->objects[i];
		switch (o->status) {
		case PK_LINT_PASS:
			t.passed++;
			break;
		case PK_LINT_WARN:
			t.warned++;
			break;
		case PK_LINT_DENY:
			t.denied++;
			break;
		case PK_LINT_SKIPPED:
			t.skipped++;
			break;
		}
		t.deny += o->n_deny;
		t.warn += o->n_warn;
	}
	t.checked = t.passed + t.warned + t.denied;
	for (size_t i = 0; i < l->n_problems; i++) {
		if (l->problems[i].unreadable)
			t.unreadable++;
		else
			t.unloadable++;
	}
	return t;
}

int pk_lint_exit_code(const struct pk_lint *l, bool fail_on_warning)
{
	struct pk_lint_totals t = pk_lint_get_totals(l);
	if (t.unreadable > 0 || t.unloadable > 0)
		return 2;
	if (t.denied > 0 || (fail_on_warning && t.warned > 0))
		return 1;
	return 0;
}

const char *pk_lint_status_name(enum pk_lint_status s)
{
	switch (s) {
	case PK_LINT_PASS:
		return "pass";
	case PK_LINT_WARN:
		return "warn";
	case PK_LINT_DENY:
		return "deny";
	case PK_LINT_SKIPPED:
		return "skipped";
	}
	return "unknown";
}
