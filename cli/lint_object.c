/*
 * lint_object.c - one input's objects, each checked by its own rules as it
 * loads (pk_manifest_parse_each), and reduced to what the report and the
 * checks across objects need: its names and findings, the facts of
 * lint_internal, and for pools that passed and IPAddresses a packed copy
 * of what the rules' lookup reads. The loaded object itself is freed with
 * its document, so a lint holds one document at a time per thread.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "jpack.h"
#include "json.h"
#include "lint_internal.h"
#include "manifest_locate.h"
#include "pool_lookup.h"
#include "pool_ref.h"
#include "rules.h"
#include "schema.h"
#include "suggest.h"

/* ---- findings ---- */

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

int lint_flush_to(struct pk_violations *v, struct pk_lint_object *o, const char *prefix,
                  const char *rule)
{
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
		f->column = 0; /* located by lint_locate */
		if (f->v.severity == PK_SEV_DENY)
			o->n_deny++;
		else
			o->n_warn++;
	}
	pk_violations_init(v);
	return PK_OK;
}

void lint_locate(struct pk_lint_object *o, const struct lint_internal *in, const char *text,
                 size_t len)
{
	for (size_t k = 0; k < o->n_findings; k++) {
		struct pk_lint_finding *f = &o->findings[k];
		if (f->column != 0)
			continue;
		f->line = o->line;
		f->column = 1;
		if (text != NULL && in->offset < len)
			pk_manifest_locate(text + in->offset, len - in->offset, in->offset_line,
			                   o->item, f->v.field, &f->line, &f->column);
	}
}

void lint_object_release(struct pk_lint_object *o, struct lint_internal *in)
{
	free(o->findings);
	free(o->origin);
	free(o->pool);
	free(in->strs);
	free(in->kept);
	if (in->pool != NULL) {
		pk_pool_release(in->pool);
		free(in->pool);
	}
}

/* ---- the object's own rules ---- */

/* The API server refuses an object without a name (generateName only on create). */
static void check_name(const json_t *obj, struct pk_violations *v)
{
	const char *name = pk_json_meta_cstr(obj, "name");
	const char *gen = pk_json_meta_cstr(obj, "generateName");
	if ((name == NULL || name[0] == '\0') && (gen == NULL || gen[0] == '\0'))
		pk_violations_add(v, PK_SEV_DENY, "metadata.name",
		                  "required: the API server refuses an object without a name");
}

/* "IPPool and GlobalIPPool": poolkeeper's pool kinds, as a message names them. */
static const char *pool_kinds_phrase(char *buf, size_t len)
{
	size_t n, at = 0;
	const struct pk_pool_kind *k = pk_pool_kinds(&n);
	buf[0] = '\0';
	for (size_t i = 0; i < n && at < len; i++) {
		const char *sep = i == 0 ? "" : i + 1 < n ? ", " : " and ";
		int w = snprintf(buf + at, len - at, "%s%s", sep, k[i].kind);
		at += w > 0 ? (size_t)w : 0;
	}
	return buf;
}

/* A pool's rules; one that passes is decoded for the checks across objects and its summary. */
static void check_pool_object(struct lint_batch *b, const json_t *value, struct lint_internal *in)
{
	struct pk_violations *v = b->scratch;
	pk_rules_check_pool(value, NULL, v);
	check_name(value, v);
	if (pk_violations_count(v, PK_SEV_DENY) > 0)
		return;
	/* Decode again; the rules above already reported everything decoding finds. */
	struct pk_pool *p = calloc(1, sizeof(*p));
	struct pk_violations *quiet = malloc(sizeof(*quiet));
	if (p != NULL && quiet != NULL) {
		pk_violations_init(quiet);
		if (pk_pool_decode(json_object_get(value, "spec"), p, quiet) == PK_OK &&
		    p->usable != NULL) {
			in->pool = p;
			p = NULL;
		}
	}
	if (p != NULL) {
		pk_pool_release(p);
		free(p);
	}
	free(quiet);
}

/*
 * A claim as the webhook decides it on CREATE: the mutating endpoint's
 * repair (on a copy; lint assumes the requester may set blockOwnerDeletion)
 * and its warnings, then the validating endpoint's check of the result, each
 * under the mode the claim falls under.
 */
static int check_claim_object(struct lint_batch *b, const json_t *value, struct pk_lint_object *o)
{
	enum pk_enforcement mode =
	    pk_rules_claim_enforcement(value, b->set->claims, b->set->foreign_claims, NULL);
	struct pk_violations *v = b->scratch;
	struct pk_claim_repair plan;

	if (mode == PK_ENFORCE_IGNORE) {
		o->status = PK_LINT_SKIPPED;
		o->note = "a claim on another provider's pool, which --foreign-claims=ignore skips";
		return PK_OK;
	}
	pk_rules_plan_claim_repair(value, mode, &plan);
	if (!pk_rules_claim_repair_any(&plan)) {
		pk_rules_check_claim_mode(value, NULL, mode, v);
	} else {
		json_t *copy = json_deep_copy(value);
		if (copy == NULL || pk_rules_apply_claim_repair(copy, &plan) != PK_OK) {
			json_decref(copy);
			return PK_ERR_NOMEM;
		}
		pk_rules_note_claim_repair(value, &plan, mode, v);
		pk_rules_check_claim_mode(copy, NULL, mode, v);
		json_decref(copy);
	}
	check_name(value, v);
	return PK_OK;
}

/*
 * An IPAddress's own rules, as the webhook decides them on CREATE. One that
 * passes and names a poolkeeper pool is checked against its pool once
 * every input has loaded (lint_cross.c), since the pool may come later.
 */
static void check_ipaddress_object(struct lint_batch *b, const json_t *value,
                                   struct lint_internal *in)
{
	struct pk_violations *v = b->scratch;
	pk_rules_check_ipaddress(value, NULL, v);
	check_name(value, v);
	in->in_pool = pk_violations_count(v, PK_SEV_DENY) == 0 && in->pk_ref;
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
static bool check_near_miss(struct lint_batch *b, const struct pk_lint_object *o,
                            const struct gvk *g, const char **rule)
{
	size_t nv, nk;
	const char *const *versions = pk_schema_api_versions(&nv);
	const char *const *kinds = pk_schema_kinds(&nk);
	if (!strcmp(o->api_version, PK_POOL_GROUP) || !strcmp(o->api_version, PK_CAPI_IPAM_GROUP)) {
		*rule = "unknown-api-version";
		pk_violations_add(b->scratch, PK_SEV_DENY, "apiVersion",
		                  "\"%s\" is a group without its version; did you mean \"%s/%s\"?",
		                  o->api_version, o->api_version,
		                  strcmp(o->api_version, PK_POOL_GROUP) ? PK_CAPI_V1BETA2
		                                                        : PK_POOL_VERSION);
		return true;
	}
	if (!g->ours && !g->capi) {
		const char *v = pk_suggest_name(o->api_version, versions, nv, 3);
		if (v == NULL)
			return false;
		*rule = "unknown-api-version";
		pk_violations_add(b->scratch, PK_SEV_DENY, "apiVersion",
		                  "unknown apiVersion \"%.64s\"; did you mean \"%s\"?",
		                  o->api_version, v);
		return true;
	}
	const char *near_kind = pk_suggest_name(o->kind, kinds, nk, 2);
	if (near_kind == NULL || !strcmp(near_kind, o->kind))
		return false;
	*rule = "unknown-kind";
	pk_violations_add(b->scratch, PK_SEV_DENY, "kind",
	                  "\"%.64s\" is not a kind of %s; did you mean \"%s\"?", o->kind, g->group,
	                  near_kind);
	return true;
}

/*
 * A Cluster API IPAM group object that is not a served version of its two
 * kinds: the API server knows no such resource. Returns the rule.
 */
static const char *check_capi_unserved(struct lint_batch *b, const struct pk_lint_object *o,
                                       const struct gvk *g)
{
	if (!strcmp(o->kind, PK_CLAIM_KIND) || !strcmp(o->kind, PK_ADDRESS_KIND)) {
		pk_violations_add(b->scratch, PK_SEV_DENY, "apiVersion",
		                  "%.64s is not served; %s serves %s, %s and %s", o->api_version,
		                  o->kind, PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2, PK_CAPI_V1BETA1,
		                  PK_CAPI_V1ALPHA1);
		return "unknown-api-version";
	}
	const struct pk_pool_kind *pk = pk_pool_kind_find(PK_POOL_GROUP, o->kind);
	if (pk != NULL)
		pk_violations_add(b->scratch, PK_SEV_DENY, "apiVersion",
		                  "%s is not a kind of %s; poolkeeper's %s is %s/%s", o->kind,
		                  g->group, o->kind, pk->group, pk->version);
	else
		pk_violations_add(b->scratch, PK_SEV_DENY, "kind",
		                  "\"%.64s\" is not a kind of %s, which has %s and %s", o->kind,
		                  g->group, PK_CLAIM_KIND, PK_ADDRESS_KIND);
	return pk != NULL ? "unknown-api-version" : "unknown-kind";
}

/*
 * The object as the webhook reviews it: Cluster API converts a v1alpha1
 * claim or IPAddress to a version poolkeeper's registrations name
 * (matchPolicy Equivalent), with the same fields (a v1alpha1 claim has no
 * spec.clusterName, and its conversion sets none). A new reference, or NULL
 * when out of memory.
 */
static json_t *as_reviewed(const json_t *value, const struct gvk *g)
{
	if (strcmp(g->version, PK_CAPI_V1ALPHA1) != 0)
		return json_incref((json_t *)(uintptr_t)value);
	json_t *copy = json_copy((json_t *)(uintptr_t)value);
	if (copy != NULL &&
	    json_object_set_new(copy, "apiVersion",
	                        json_string(PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA1)) != 0) {
		json_decref(copy);
		return NULL;
	}
	return copy;
}

/* The unknown fields of a kind with a schema; they come first in its findings. */
static int check_fields(struct lint_batch *b, const json_t *value, struct pk_lint_object *o,
                        const struct gvk *g)
{
	const struct pk_schema *s = pk_schema_find(g->group, g->version, o->kind);
	if (s == NULL)
		return PK_OK;
	pk_schema_check(s, value, b->scratch);
	return lint_flush_to(b->scratch, o, NULL, "unknown-field");
}

/* A poolkeeper group object: a pool kind's (pool_ref.h) of its served version, or a DENY. */
static int check_ours(struct lint_batch *b, const json_t *value, struct pk_lint_object *o,
                      struct lint_internal *in, const struct gvk *g)
{
	const struct pk_pool_kind *pk = pk_pool_kind_find(g->group, o->kind);
	char kinds[PK_POOL_KINDS_MAX * 72];
	if (pk != NULL && !strcmp(g->version, pk->version)) {
		if (check_fields(b, value, o, g) != PK_OK)
			return PK_ERR_NOMEM;
		check_pool_object(b, value, in);
		return lint_flush_to(b->scratch, o, "pool", NULL);
	}
	if (pk != NULL) {
		pk_violations_add(b->scratch, PK_SEV_DENY, "apiVersion",
		                  "%.64s is not served; %s serves %s/%s", o->api_version, o->kind,
		                  pk->group, pk->version);
		return lint_flush_to(b->scratch, o, NULL, "unknown-api-version");
	}
	pk_violations_add(b->scratch, PK_SEV_DENY, "kind",
	                  "\"%.64s\" is not a kind of %s, which has %s", o->kind, PK_POOL_GROUP,
	                  pool_kinds_phrase(kinds, sizeof(kinds)));
	return lint_flush_to(b->scratch, o, NULL, "unknown-kind");
}

/* A claim or IPAddress of a served version: its fields, then the rules on what is reviewed. */
static int check_capi(struct lint_batch *b, const json_t *value, struct pk_lint_object *o,
                      struct lint_internal *in, const struct gvk *g, json_t **seen)
{
	bool claim = !strcmp(o->kind, PK_CLAIM_KIND);
	if (check_fields(b, value, o, g) != PK_OK || (*seen = as_reviewed(value, g)) == NULL)
		return PK_ERR_NOMEM;
	if (claim && check_claim_object(b, *seen, o) != PK_OK)
		return PK_ERR_NOMEM;
	if (!claim)
		check_ipaddress_object(b, *seen, in);
	return lint_flush_to(b->scratch, o, claim ? "claim" : "ipaddress", NULL);
}

/*
 * The rules that apply to an object, by apiVersion and kind; its findings.
 * *seen is set to the object as the webhook would review it (a new
 * reference) when it is a claim or IPAddress that was checked.
 */
static int check_object(struct lint_batch *b, const json_t *value, struct pk_lint_object *o,
                        struct lint_internal *in, json_t **seen)
{
	const char *rule = NULL;
	struct gvk g;

	if (o->api_version == NULL || o->kind == NULL) {
		if (o->api_version == NULL)
			pk_violations_add(b->scratch, PK_SEV_DENY, "apiVersion",
			                  "required: every Kubernetes object names its apiVersion");
		if (o->kind == NULL)
			pk_violations_add(b->scratch, PK_SEV_DENY, "kind",
			                  "required: every Kubernetes object names its kind");
		return lint_flush_to(b->scratch, o, NULL, "required");
	}
	split_api_version(o, &g);
	if (check_near_miss(b, o, &g, &rule))
		return lint_flush_to(b->scratch, o, NULL, rule);
	if (g.ours)
		return check_ours(b, value, o, in, &g);
	if (g.capi && pk_rules_is_capi_served_version(g.version) &&
	    (!strcmp(o->kind, PK_CLAIM_KIND) || !strcmp(o->kind, PK_ADDRESS_KIND)))
		return check_capi(b, value, o, in, &g, seen);
	if (g.capi)
		return lint_flush_to(b->scratch, o, NULL, check_capi_unserved(b, o, &g));
	o->status = PK_LINT_SKIPPED;
	o->note = "not an IPAM kind";
	return PK_OK;
}

/* ---- what is kept of an object ---- */

/* The strings an object keeps, copied into one block. */
enum {
	S_API,
	S_KIND,
	S_NS,
	S_NAME,
	S_GROUP,
	S_RKIND,
	S_RNAME,
	S_CLAIM,
	S_ADDR,
	S_UID,
	S_CLAIM_UID,
	S_POOL_UID,
	S_COUNT
};

/*
 * The kinds lint checks, spelled once (the pool kinds in pool_ref.h's
 * table): an object of one of them points its kind there, so that sorting
 * and matching by kind can compare pointers first (lint_str_cmp).
 */
static const char *const capi_kinds[] = {PK_CLAIM_KIND, PK_ADDRESS_KIND};

static const char *intern_kind(const char *kind)
{
	size_t n;
	const struct pk_pool_kind *pk = pk_pool_kinds(&n);
	for (size_t k = 0; kind != NULL && k < n; k++)
		if (!strcmp(kind, pk[k].kind))
			return pk[k].kind;
	for (size_t k = 0; kind != NULL && k < sizeof(capi_kinds) / sizeof(*capi_kinds); k++)
		if (!strcmp(kind, capi_kinds[k]))
			return capi_kinds[k];
	return kind;
}

/* The uid of the first owner reference of `kind` named `name`, or NULL; *at its place. */
static const char *owner_uid(const json_t *obj, const char *kind, const char *name, unsigned *at)
{
	const json_t *refs = pk_json_path_keys(obj, "metadata", "ownerReferences", NULL);
	for (size_t k = 0; kind != NULL && name != NULL && k < json_array_size(refs); k++) {
		const json_t *r = json_array_get(refs, k);
		const char *rk = pk_json_cstr_at(r, "kind"), *rn = pk_json_cstr_at(r, "name");
		if (rk != NULL && rn != NULL && !strcmp(rk, kind) && !strcmp(rn, name)) {
			*at = k > UINT_MAX ? UINT_MAX : (unsigned)k;
			return pk_json_cstr_at(r, "uid");
		}
	}
	return NULL;
}

static int copy_strings(const json_t *v, struct pk_lint_object *o, struct lint_internal *in)
{
	const json_t *spec = json_object_get(v, "spec"), *ref = json_object_get(spec, "poolRef");
	const char *s[S_COUNT] = {
	    pk_json_cstr_at(v, "apiVersion"),
	    pk_json_cstr_at(v, "kind"),
	    pk_json_meta_cstr(v, "namespace"),
	    pk_json_meta_cstr(v, "name"),
	    pk_json_cstr_at(ref, "apiGroup"),
	    pk_json_cstr_at(ref, "kind"),
	    pk_json_cstr_at(ref, "name"),
	    pk_json_cstr(pk_json_path_keys(spec, "claimRef", "name", NULL)),
	    pk_json_cstr_at(spec, "address"),
	    pk_json_meta_cstr(v, "uid"),
	    NULL,
	    NULL,
	};
	if (s[S_KIND] != NULL && !strcmp(s[S_KIND], PK_ADDRESS_KIND)) {
		s[S_CLAIM_UID] = owner_uid(v, PK_CLAIM_KIND, s[S_CLAIM], &in->claim_ref);
		s[S_POOL_UID] = owner_uid(v, s[S_RKIND], s[S_RNAME], &in->pool_ref);
	}
	size_t len[S_COUNT], total = 0;
	for (size_t k = 0; k < S_COUNT; k++)
		total += len[k] = s[k] != NULL ? strlen(s[k]) + 1 : 0;
	char *p = in->strs = malloc(total ? total : 1);
	const char *at[S_COUNT];
	if (p == NULL)
		return PK_ERR_NOMEM;
	for (size_t k = 0; k < S_COUNT; k++) {
		at[k] = s[k] != NULL ? memcpy(p, s[k], len[k]) : NULL;
		p += len[k];
	}
	o->api_version = at[S_API], o->kind = intern_kind(at[S_KIND]), o->namespace_ = at[S_NS];
	o->name = at[S_NAME];
	in->ref_group = at[S_GROUP], in->ref_kind = at[S_RKIND], in->ref_name = at[S_RNAME];
	in->claim = at[S_CLAIM], in->address = at[S_ADDR], in->uid = at[S_UID];
	in->claim_uid = at[S_CLAIM_UID], in->pool_uid = at[S_POOL_UID];
	in->pk_ref = pk_pool_kind_of_ref(ref) != NULL;
	return PK_OK;
}

/*
 * What the rules' lookup reads of a pool or an IPAddress, packed: the
 * object without status, with only the metadata the checks name (an
 * IPAddress's owner references are facts of lint_internal instead).
 */
static int keep(const json_t *v, bool pool, struct lint_internal *in)
{
	static const char *const meta_keys[] = {"name", "namespace", "uid", "annotations"};
	const json_t *meta = json_object_get(v, "metadata");
	json_t *k = json_object(), *m = json_object();
	bool ok = k != NULL && m != NULL;
	for (size_t i = 0; ok && i < (pool ? 4 : 2); i++) {
		json_t *x = json_object_get(meta, meta_keys[i]);
		ok = x == NULL || json_object_set(m, meta_keys[i], x) == 0;
	}
	const char *top[] = {"apiVersion", "kind", "spec"};
	for (size_t i = 0; ok && i < 3; i++) {
		json_t *x = json_object_get(v, top[i]);
		ok = x == NULL || json_object_set(k, top[i], x) == 0;
	}
	ok = ok && json_object_set(k, "metadata", m) == 0;
	int rc = ok ? pk_jpack_encode(k, &in->kept, &in->kept_len) : PK_ERR_NOMEM;
	json_decref(m);
	json_decref(k);
	return rc == PK_ERR_INVALID ? PK_OK : rc; /* too deep to pack: nothing to look up */
}

json_t *lint_kept(const struct pk_lint *l, size_t i)
{
	const struct lint_internal *in = &l->internal[i];
	return in->kept != NULL ? pk_jpack_decode(in->kept, in->kept_len) : NULL;
}

/* ---- loading ---- */

static int batch_reserve(struct lint_batch *b)
{
	if (pk_array_reserve(&b->objects, &b->cap_objects, b->n + 1, sizeof(*b->objects)) !=
	        PK_OK ||
	    pk_array_reserve(&b->internal, &b->cap_internal, b->n + 1, sizeof(*b->internal)) !=
	        PK_OK)
		return PK_ERR_NOMEM;
	memset(&b->objects[b->n], 0, sizeof(*b->objects));
	memset(&b->internal[b->n], 0, sizeof(*b->internal));
	return PK_OK;
}

/* One loaded object: checked, reduced, and added to the batch. */
static int on_object(void *ctx, const struct pk_manifest_doc *d, struct pk_err *err)
{
	struct lint_batch *b = ctx;
	if (batch_reserve(b) != PK_OK)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	struct pk_lint_object *o = &b->objects[b->n];
	struct lint_internal *in = &b->internal[b->n];
	o->source = b->source;
	o->line = d->line;
	o->document = d->document;
	o->item = d->item;
	in->offset = d->offset;
	in->offset_line = d->offset_line;
	b->n++; /* from here on released with the batch */
	json_t *seen = NULL;
	int rc = copy_strings(d->value, o, in);
	if (rc == PK_OK)
		rc = check_object(b, d->value, o, in, &seen);
	if (rc == PK_OK && o->status != PK_LINT_SKIPPED &&
	    (in->pool != NULL || (o->kind != NULL && !strcmp(o->kind, PK_ADDRESS_KIND))))
		rc = keep(seen != NULL ? seen : d->value, in->pool != NULL, in);
	json_decref(seen);
	return rc == PK_OK ? PK_OK : pk_err_set(err, rc, "out of memory");
}

/* Every object's origin, now that the number of documents is known. */
static int name_origins(struct lint_batch *b, size_t n_documents)
{
	struct pk_manifest m = {.n_documents = n_documents};
	for (size_t i = 0; i < b->n; i++) {
		struct pk_lint_object *o = &b->objects[i];
		struct pk_manifest_doc d = {
		    .source = b->source, .document = o->document, .line = o->line, .item = o->item};
		char origin[PK_LINT_ORIGIN_MAX];
		o->origin = strdup(pk_manifest_format_origin(&m, &d, origin, sizeof(origin)));
		if (o->origin == NULL)
			return PK_ERR_NOMEM;
	}
	return PK_OK;
}

static void batch_clear_objects(struct lint_batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		lint_object_release(&b->objects[i], &b->internal[i]);
	b->n = 0;
}

void lint_batch_free(struct lint_batch *b)
{
	batch_clear_objects(b);
	free(b->objects);
	free(b->internal);
	free(b->source);
	free(b->problem);
	free(b->text);
	memset(b, 0, sizeof(*b));
}

int lint_batch_load(struct lint_batch *b, const char *buf, size_t len)
{
	struct pk_err err = {{0}};
	size_t docs = 0;
	int rc =
	    pk_manifest_parse_each(buf, len, b->source, &b->set->limits, on_object, b, &docs, &err);
	if (rc == PK_OK) {
		for (size_t i = 0; i < b->n; i++)
			lint_locate(&b->objects[i], &b->internal[i], buf, len);
		return name_origins(b, docs);
	}
	batch_clear_objects(b);
	if (rc == PK_ERR_NOMEM)
		return rc;
	b->problem = strdup(err.msg);
	return b->problem != NULL ? PK_OK : PK_ERR_NOMEM;
}
