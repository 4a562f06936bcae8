/* lint.c - running the contract rules over loaded manifests and keeping what they found. */
#include "lint.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "manifest.h"
#include "pool.h"
#include "pool_lookup.h"
#include "rules.h"

/* What the report does not show: the object's value and its decoded pool. */
struct lint_internal {
	const json_t *value;  /* borrowed from a manifest */
	struct pk_pool *pool; /* decoded, for pools that passed their own rules */
};

struct pk_lint {
	struct pk_manifest **manifests;
	size_t n_manifests, cap_manifests;
	struct pk_lint_object *objects;
	struct lint_internal *internal;
	size_t n_objects, cap_objects, cap_internal;
	struct pk_lint_problem *problems;
	size_t n_problems, cap_problems;
	size_t files;
	bool ran;
	enum pk_enforcement claims, foreign_claims;
	/* The rules' view of what was loaded; list_pools sees the pools before `before`. */
	struct pk_pool_lookup lookup;
	size_t before;
};

static void init_lookup(struct pk_lint *l);
static int keep_manifest(struct pk_lint *l, struct pk_manifest *m);

struct pk_lint *pk_lint_new(void)
{
	struct pk_lint *l = calloc(1, sizeof(struct pk_lint));
	if (l != NULL) {
		l->claims = PK_ENFORCE_REPAIR;
		l->foreign_claims = PK_ENFORCE_WARN;
		init_lookup(l);
	}
	return l;
}

void pk_lint_set_enforcement(struct pk_lint *l, enum pk_enforcement claims,
                             enum pk_enforcement foreign_claims)
{
	l->claims = claims;
	l->foreign_claims = foreign_claims;
}

void pk_lint_free(struct pk_lint *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->n_objects; i++) {
		free(l->objects[i].violations);
		if (l->internal[i].pool != NULL) {
			pk_pool_release(l->internal[i].pool);
			free(l->internal[i].pool);
		}
	}
	free(l->objects);
	free(l->internal);
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

static int add_problem(struct pk_lint *l, const char *source, const char *message, bool unreadable)
{
	if (pk_array_reserve(&l->problems, &l->cap_problems, l->n_problems + 1,
	                     sizeof(*l->problems)) != PK_OK)
		return PK_ERR_NOMEM;
	struct pk_lint_problem *p = &l->problems[l->n_problems];
	p->source = strdup(source);
	p->message = strdup(message);
	p->unreadable = unreadable;
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
	pk_manifest_format_origin(m, d, o->origin, sizeof(o->origin));
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
	int rc = pk_manifest_parse_buffer(buf, len, source, NULL, m, &err);
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
static const char *effective_namespace(const struct pk_lint_object *o)
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
	return effective_namespace(o);
}

char *pk_lint_describe_object(const struct pk_lint_object *o, char *buf, size_t len)
{
	const char *ns = effective_namespace(o);
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

static void check_pool_object(struct pk_lint_object *o, struct lint_internal *in)
{
	pk_rules_check_pool(in->value, NULL, o->violations);
	check_name(in->value, o->violations);
	if (pk_violations_count(o->violations, PK_SEV_DENY) > 0)
		return;
	/* Decode again for the overlap check and the summary; the rules
	 * above already reported everything decoding finds. */
	struct pk_pool *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return;
	struct pk_violations scratch;
	pk_violations_init(&scratch);
	if (pk_pool_decode(json_object_get(in->value, "spec"), p, &scratch) != PK_OK ||
	    p->usable == NULL) {
		pk_pool_release(p);
		free(p);
		return;
	}
	in->pool = p;
}

/*
 * A claim as the webhook decides it on CREATE: the mutating endpoint's
 * repair (on a copy; lint assumes the requester may set blockOwnerDeletion)
 * and its warnings, then the validating endpoint's check of the result, each
 * under the mode the claim falls under.
 */
static int check_claim_object(const struct pk_lint *l, struct pk_lint_object *o,
                              const struct lint_internal *in)
{
	enum pk_enforcement mode =
	    pk_rules_claim_enforcement(in->value, l->claims, l->foreign_claims, NULL);
	struct pk_claim_repair plan;

	if (mode == PK_ENFORCE_IGNORE) {
		free(o->violations);
		o->violations = NULL;
		o->status = PK_LINT_SKIPPED;
		o->note = "a claim on another provider's pool, which --foreign-claims=ignore skips";
		return PK_OK;
	}
	pk_rules_plan_claim_repair(in->value, mode, &plan);
	if (!pk_rules_claim_repair_any(&plan)) {
		pk_rules_check_claim_mode(in->value, NULL, mode, o->violations);
	} else {
		json_t *copy = json_deep_copy(in->value);
		if (copy == NULL || pk_rules_apply_claim_repair(copy, &plan) != PK_OK) {
			json_decref(copy);
			return PK_ERR_NOMEM;
		}
		pk_rules_note_claim_repair(in->value, &plan, mode, o->violations);
		pk_rules_check_claim_mode(copy, NULL, mode, o->violations);
		json_decref(copy);
	}
	check_name(in->value, o->violations);
	return PK_OK;
}

/*
 * An IPAddress as the webhook decides it on CREATE: its own rules, then,
 * when they pass, against its pool when the files hold it.
 */
static int check_ipaddress_object(const struct pk_lint *l, struct pk_lint_object *o,
                                  const struct lint_internal *in)
{
	struct pk_err err;
	pk_rules_check_ipaddress(in->value, NULL, o->violations);
	check_name(in->value, o->violations);
	if (pk_violations_count(o->violations, PK_SEV_DENY) > 0 ||
	    !pk_rules_is_poolkeeper_pool_ref(
	        json_object_get(json_object_get(in->value, "spec"), "poolRef")))
		return PK_OK;
	return pk_pool_lookup_check_ipaddress_pool(&l->lookup, effective_namespace(o), in->value,
	                                           o->violations, &err);
}

static int check_object(const struct pk_lint *l, struct pk_lint_object *o, struct lint_internal *in)
{
	if (o->api_version == NULL || o->kind == NULL) {
		if (o->api_version == NULL)
			pk_violations_add(o->violations, PK_SEV_DENY, "apiVersion",
			                  "required: every Kubernetes object names its apiVersion");
		if (o->kind == NULL)
			pk_violations_add(o->violations, PK_SEV_DENY, "kind",
			                  "required: every Kubernetes object names its kind");
		return PK_OK;
	}
	const char *slash = strchr(o->api_version, '/');
	size_t group_len = slash ? (size_t)(slash - o->api_version) : 0;
	const char *version = slash ? slash + 1 : o->api_version;
	bool ours = group_len == strlen(PK_POOL_GROUP) &&
	            !strncmp(o->api_version, PK_POOL_GROUP, group_len);
	bool capi = group_len == strlen(PK_CAPI_IPAM_GROUP) &&
	            !strncmp(o->api_version, PK_CAPI_IPAM_GROUP, group_len);

	if (ours) {
		if (is_pool_kind(o->kind)) {
			check_pool_object(o, in);
			return PK_OK;
		}
		pk_violations_add(o->violations, PK_SEV_DENY, "kind",
		                  "\"%.64s\" is not a kind of %s, which has %s and %s", o->kind,
		                  PK_POOL_GROUP, PK_POOL_KIND, PK_GLOBAL_POOL_KIND);
		return PK_OK;
	}
	if (capi && pk_rules_is_capi_ipam_version(version)) {
		if (!strcmp(o->kind, PK_CLAIM_KIND))
			return check_claim_object(l, o, in);
		if (!strcmp(o->kind, PK_ADDRESS_KIND))
			return check_ipaddress_object(l, o, in);
	}
	free(o->violations);
	o->violations = NULL;
	o->status = PK_LINT_SKIPPED;
	o->note = capi ? "a kind or version of " PK_CAPI_IPAM_GROUP " that lint does not check"
	               : "not an IPAM kind";
	return PK_OK;
}

/* ---- across objects: duplicates and overlapping pools ---- */

struct identity {
	const char *kind, *ns, *name;
	size_t idx;
};

static int str_cmp_null(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

static int cmp_identity(const void *pa, const void *pb)
{
	const struct identity *x = pa, *y = pb;
	int c = str_cmp_null(x->kind, y->kind);
	if (c == 0)
		c = str_cmp_null(x->ns, y->ns);
	if (c == 0)
		c = str_cmp_null(x->name, y->name);
	if (c == 0)
		c = (x->idx > y->idx) - (x->idx < y->idx);
	return c;
}

static bool same_identity(const struct pk_lint_object *x, const struct pk_lint_object *y)
{
	return x->name != NULL && y->name != NULL && !str_cmp_null(x->kind, y->kind) &&
	       !str_cmp_null(effective_namespace(x), effective_namespace(y)) &&
	       !strcmp(x->name, y->name);
}

/* Sorting by (kind, namespace, name, load order) puts duplicates side by side. */
static int check_duplicates(struct pk_lint *l)
{
	size_t n = 0;
	struct identity *ids = malloc((l->n_objects ? l->n_objects : 1) * sizeof(*ids));
	if (ids == NULL)
		return PK_ERR_NOMEM;
	for (size_t i = 0; i < l->n_objects; i++) {
		const struct pk_lint_object *o = &l->objects[i];
		if (o->violations == NULL || o->name == NULL)
			continue;
		ids[n].kind = o->kind;
		ids[n].ns = effective_namespace(o);
		ids[n].name = o->name;
		ids[n].idx = i;
		n++;
	}
	qsort(ids, n, sizeof(*ids), cmp_identity);
	for (size_t k = 1; k < n; k++) {
		struct pk_lint_object *prev = &l->objects[ids[k - 1].idx];
		struct pk_lint_object *o = &l->objects[ids[k].idx];
		if (!same_identity(prev, o))
			continue;
		char what[256];
		pk_lint_describe_object(o, what, sizeof(what));
		pk_violations_add(o->violations, PK_SEV_WARN, "metadata.name",
		                  "%s is also defined at %s; applying both keeps only the last",
		                  what, prev->origin);
	}
	free(ids);
	return PK_OK;
}

/*
 * Each pool that passed against the pools loaded before it, as the webhook
 * checks one at admission: every overlapping pair is reported once, on the
 * later pool.
 */
static int check_overlaps(struct pk_lint *l)
{
	int rc = PK_OK;
	for (size_t j = 0; j < l->n_objects && rc == PK_OK; j++) {
		const struct pk_lint_object *o = &l->objects[j];
		struct pk_pool_id id = {
		    .kind = o->kind, .ns = effective_namespace(o), .name = o->name};
		struct pk_err err;
		if (l->internal[j].pool == NULL)
			continue;
		l->before = j;
		rc = pk_pool_lookup_check_overlaps(&l->lookup, &id, l->internal[j].value,
		                                   o->violations, &err);
	}
	l->before = l->n_objects;
	return rc;
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
	for (size_t i = 0; i < l->n_objects; i++) {
		struct pk_lint_object *o = &l->objects[i];
		o->violations = malloc(sizeof(*o->violations));
		if (o->violations == NULL)
			return PK_ERR_NOMEM;
		pk_violations_init(o->violations);
		if (check_object(l, o, &l->internal[i]) != PK_OK)
			return PK_ERR_NOMEM;
	}
	if (check_duplicates(l) != PK_OK)
		return PK_ERR_NOMEM;
	if (check_overlaps(l) != PK_OK)
		return PK_ERR_NOMEM;
	for (size_t i = 0; i < l->n_objects; i++) {
		struct pk_lint_object *o = &l->objects[i];
		if (o->violations == NULL)
			continue;
		if (pk_violations_count(o->violations, PK_SEV_DENY) > 0)
			o->status = PK_LINT_DENY;
		else if (pk_violations_count(o->violations, PK_SEV_WARN) > 0)
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
		if (o->violations != NULL) {
			t.deny += pk_violations_count(o->violations, PK_SEV_DENY);
			t.warn += pk_violations_count(o->violations, PK_SEV_WARN);
		}
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

int pk_lint_exit_code(const struct pk_lint *l, bool strict)
{
	struct pk_lint_totals t = pk_lint_get_totals(l);
	if (t.unreadable > 0)
		return 2;
	if (t.denied > 0 || t.unloadable > 0)
		return 1;
	if (strict && t.warned > 0)
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

/* ---- the rules' lookup over what was loaded ---- */

static bool is_kind(const struct pk_lint_object *o, const char *group, const char *kind)
{
	size_t n = strlen(group);
	return o->api_version != NULL && o->kind != NULL && !strncmp(o->api_version, group, n) &&
	       o->api_version[n] == '/' && !strcmp(o->kind, kind);
}

/* Whether object i is a pool of `kind` in namespace ns (NULL: any) named `name` (NULL: any). */
static bool pool_matches(const struct pk_lint *l, size_t i, const char *kind, const char *ns,
                         const char *name)
{
	const struct pk_lint_object *o = &l->objects[i];
	const char *ons = effective_namespace(o);
	return is_kind(o, PK_POOL_GROUP, kind) && o->name != NULL &&
	       (name == NULL || !strcmp(o->name, name)) &&
	       (ns == NULL || (ons != NULL && !strcmp(ons, ns)));
}

static int append(json_t *items, const json_t *value, struct pk_err *err)
{
	if (json_array_append(items, (json_t *)(uintptr_t)value) != 0)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	return PK_OK;
}

/* The pools that passed their own rules, loaded before l->before, but that one's duplicates. */
static int lookup_list_pools(void *ctx, const char *kind, const char *ns, json_t **items,
                             struct pk_err *err)
{
	struct pk_lint *l = ctx;
	const struct pk_lint_object *cur = l->before < l->n_objects ? &l->objects[l->before] : NULL;
	*items = json_array();
	if (*items == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < l->before; i++) {
		if (l->internal[i].pool == NULL || !pool_matches(l, i, kind, ns, NULL) ||
		    (cur != NULL && same_identity(cur, &l->objects[i])))
			continue;
		if (append(*items, l->internal[i].value, err) != PK_OK) {
			json_decref(*items);
			return PK_ERR_NOMEM;
		}
	}
	return PK_OK;
}

static int lookup_list_pool_addresses(void *ctx, const char *kind, const char *ns, const char *name,
                                      json_t **items, struct pk_err *err)
{
	struct pk_lint *l = ctx;
	*items = json_array();
	if (*items == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < l->n_objects; i++) {
		const struct pk_lint_object *o = &l->objects[i];
		const json_t *v = l->internal[i].value;
		const json_t *ref = json_object_get(json_object_get(v, "spec"), "poolRef");
		const char *ons = effective_namespace(o), *rname = pk_json_cstr_at(ref, "name");
		const char *rkind = pk_json_cstr_at(ref, "kind");
		if (name == NULL || !is_kind(o, PK_CAPI_IPAM_GROUP, PK_ADDRESS_KIND) ||
		    !pk_rules_is_poolkeeper_pool_ref(ref) || rname == NULL || strcmp(rname, name) ||
		    strcmp(rkind, kind) || (ns != NULL && strcmp(ons, ns)))
			continue;
		if (append(*items, v, err) != PK_OK) {
			json_decref(*items);
			return PK_ERR_NOMEM;
		}
	}
	return PK_OK;
}

/* The last definition of the pool (applying the files keeps the last). */
static int lookup_get_pool(void *ctx, const char *kind, const char *ns, const char *name,
                           json_t **obj, struct pk_err *err)
{
	struct pk_lint *l = ctx;
	(void)err;
	*obj = NULL;
	for (size_t i = l->n_objects; i-- > 0 && name != NULL;) {
		if (pool_matches(l, i, kind, strcmp(kind, PK_POOL_KIND) ? NULL : ns, name)) {
			*obj = json_incref((json_t *)(uintptr_t)l->internal[i].value);
			break;
		}
	}
	return PK_OK;
}

/* "IPPool default/a at file.yaml:3 (document 1)": which object, and where it was loaded. */
static void lookup_name_pool(void *ctx, const json_t *other, char *buf, size_t len)
{
	const struct pk_lint *l = ctx;
	char what[256];
	snprintf(buf, len, "another pool");
	for (size_t i = 0; i < l->n_objects; i++) {
		if (l->internal[i].value == other) {
			snprintf(buf, len, "%s at %s",
			         pk_lint_describe_object(&l->objects[i], what, sizeof(what)),
			         l->objects[i].origin);
			return;
		}
	}
}

static void init_lookup(struct pk_lint *l)
{
	l->lookup.ctx = l;
	l->lookup.list_pools = lookup_list_pools;
	l->lookup.list_pool_addresses = lookup_list_pool_addresses;
	l->lookup.get_pool = lookup_get_pool;
	l->lookup.name_pool = lookup_name_pool;
	l->lookup.partial = true;
}

const struct pk_pool_lookup *pk_lint_lookup(const struct pk_lint *l)
{
	return &l->lookup;
}
