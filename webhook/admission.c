/*
 * admission.c - AdmissionReview in, AdmissionReview out.
 *
 * "The webhook responds with an AdmissionReview object of the same version,
 * with response.uid set to request.uid" (Kubernetes, Dynamic Admission
 * Control). Denials carry status.code and status.message; warnings go to
 * response.warnings, which kubectl prints as "Warning:" lines; mutations
 * are a base64 JSONPatch.
 */
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr_spec.h"
#include "admission.h"
#include "pool.h"
#include "rules.h"
#include "violation.h"

#define MSG_MAX       4096
#define NAME_TEXT_MAX 640
#define WARNINGS_MAX  16

/*
 * A JSON string of text that may have been cut inside a UTF-8 sequence by
 * a bounded buffer, or carry bytes from an error message: falls back to
 * the quoted (ASCII) form rather than failing.
 */
static json_t *jstr(const char *text)
{
	json_t *j = json_string(text);
	if (j == NULL) {
		char q[1200];
		pk_text_quote(text, strlen(text), q, sizeof(q));
		j = json_string(q);
	}
	return j;
}

/* What one request turns into. */
struct verdict {
	bool allowed;
	int code;
	char message[MSG_MAX];
	json_t *warnings; /* array of strings */
	json_t *patch;    /* array of JSONPatch operations, or NULL */
};

static void warn(struct verdict *v, const char *fmt, ...) PK_PRINTF(2, 3);
static void warn(struct verdict *v, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	if (json_array_size(v->warnings) >= WARNINGS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_array_append_new(v->warnings, jstr(buf));
}

static void deny(struct verdict *v, int code, const char *fmt, ...) PK_PRINTF(3, 4);
static void deny(struct verdict *v, int code, const char *fmt, ...)
{
	va_list ap;
	v->allowed = false;
	v->code = code;
	va_start(ap, fmt);
	vsnprintf(v->message, sizeof(v->message), fmt, ap);
	va_end(ap);
}

/*
 * Applies violations: DENY ones deny under PK_ENFORCE_DENY and become
 * warnings under PK_ENFORCE_WARN; WARN ones are always warnings.
 */
static void apply(struct verdict *v, const struct pk_violations *vs, enum pk_enforcement mode,
                  const char *what)
{
	char line[PK_FIELD_MAX + PK_MESSAGE_MAX + 8];
	if (mode == PK_ENFORCE_IGNORE)
		return;
	size_t denies = pk_violations_count(vs, PK_SEV_DENY);
	if (denies > 0 && mode == PK_ENFORCE_DENY) {
		char joined[MSG_MAX - NAME_TEXT_MAX];
		pk_violations_join(vs, PK_SEV_DENY, joined, sizeof(joined));
		deny(v, 403, "%s: %s", what, joined);
	}
	for (size_t i = 0; i < vs->n; i++) {
		const struct pk_violation *x = &vs->items[i];
		pk_violation_text(x, line, sizeof(line));
		if (x->severity == PK_SEV_WARN)
			warn(v, "%s: %s", what, line);
		else if (mode == PK_ENFORCE_WARN)
			warn(v, "%s: would be denied: %s", what, line);
	}
}

/* ---- small JSON helpers ---- */

static const char *meta_str(const json_t *obj, const char *key)
{
	return pk_json_cstr_at(json_object_get(obj, "metadata"), key);
}

static bool has_annotation(const json_t *obj, const char *key)
{
	const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
	return json_is_object(ann) && json_object_get(ann, key) != NULL;
}

/* "IPPool ns/name" or "GlobalIPPool name"; ns and name come from the request. */
static void object_name(char *buf, size_t len, const char *kind, const char *ns, const char *name)
{
	char qn[300], qs[300];
	pk_text_quote(name ? name : "", name ? strlen(name) : 0, qn, sizeof(qn));
	if (ns != NULL && ns[0] != '\0') {
		pk_text_quote(ns, strlen(ns), qs, sizeof(qs));
		snprintf(buf, len, "%s %s/%s", kind, qs, qn[0] ? qn : "(generated name)");
	} else {
		snprintf(buf, len, "%s %s", kind, qn[0] ? qn : "(generated name)");
	}
}

/* Rejects JSON nested deeper than max before jansson's recursive parser runs. */
static bool depth_ok(const char *s, size_t n, int max)
{
	int depth = 0;
	bool in_str = false, esc = false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (in_str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '{' || c == '[') {
			if (++depth > max)
				return false;
		} else if (c == '}' || c == ']') {
			depth--;
		}
	}
	return true;
}

static int b64(const char *in, size_t n, char **out)
{
	size_t cap = 4 * ((n + 2) / 3) + 1;
	*out = malloc(cap);
	if (*out == NULL)
		return PK_ERR_NOMEM;
	EVP_EncodeBlock((unsigned char *)*out, (const unsigned char *)in, (int)n);
	return PK_OK;
}

/* ---- pools ---- */

static const char *pool_kind_of(const char *resource)
{
	if (strcmp(resource, "ippools") == 0)
		return PK_POOL_KIND;
	if (strcmp(resource, "globalippools") == 0)
		return PK_GLOBAL_POOL_KIND;
	return NULL;
}

/*
 * How a message names another object: by name only when it lives in the
 * requested object's own namespace, since the requester may not be allowed
 * to read anything else (another namespace's pools and addresses, or
 * cluster-scoped pools). Anything else is described by its kind alone; an
 * admin finds it with kubectl or `poolkeeper audit`.
 */
static bool nameable(const char *req_ns, const char *other_ns)
{
	return req_ns != NULL && req_ns[0] != '\0' && other_ns != NULL &&
	       strcmp(req_ns, other_ns) == 0;
}

/* Another pool, seen from a request for a pool in namespace ns (NULL: a GlobalIPPool). */
static void other_pool_name(char *buf, size_t len, const char *ns, const char *other_kind,
                            const char *other_ns, const char *other)
{
	if (strcmp(other_kind, PK_POOL_KIND) == 0 && nameable(ns, other_ns))
		object_name(buf, len, other_kind, other_ns, other);
	else if (strcmp(other_kind, PK_POOL_KIND) == 0)
		snprintf(buf, len, "an IPPool of %s namespace",
		         ns != NULL && ns[0] != '\0' ? "another" : "a");
	else
		snprintf(buf, len, "a GlobalIPPool");
}

/* Checks `pool` against every other poolkeeper pool it may not overlap. */
static void pool_overlaps(const struct pk_admission_config *cfg, const char *kind, const char *ns,
                          const char *name, const char *what, const json_t *obj, struct verdict *v,
                          struct pk_violations *vs)
{
	const struct pk_admission_lookup *lk = cfg->lookup;
	struct pk_pool me;
	struct pk_violations ignore;
	pk_violations_init(&ignore);
	memset(&me, 0, sizeof(me));
	if (pk_pool_decode(json_object_get(obj, "spec"), &me, &ignore) != PK_OK ||
	    me.usable == NULL) {
		pk_pool_release(&me);
		return; /* the spec itself is already reported */
	}
	bool global = strcmp(kind, PK_GLOBAL_POOL_KIND) == 0;
	/* An IPPool against its namespace's IPPools and every GlobalIPPool; a GlobalIPPool against
	 * all. */
	const struct {
		const char *kind;
		const char *ns;
	} scopes[2] = {{PK_POOL_KIND, global ? NULL : ns}, {PK_GLOBAL_POOL_KIND, NULL}};
	for (int s = 0; s < 2; s++) {
		json_t *items = NULL;
		struct pk_err err;
		if (lk->list_pools(lk->ctx, scopes[s].kind, scopes[s].ns, &items, &err) != PK_OK) {
			deny(v, 500, "%s: cannot check overlap with other pools: %s", what,
			     err.msg);
			pk_pool_release(&me);
			return;
		}
		size_t i;
		json_t *other;
		json_array_foreach(items, i, other)
		{
			const char *ons = meta_str(other, "namespace");
			const char *oname = meta_str(other, "name");
			if (oname == NULL)
				continue;
			if (name != NULL && strcmp(scopes[s].kind, kind) == 0 &&
			    strcmp(oname, name) == 0 &&
			    (global || (ons != NULL && ns != NULL && strcmp(ons, ns) == 0)))
				continue; /* itself */
			struct pk_pool theirs;
			memset(&theirs, 0, sizeof(theirs));
			pk_violations_init(&ignore);
			if (pk_pool_decode(json_object_get(other, "spec"), &theirs, &ignore) ==
			        PK_OK &&
			    theirs.usable != NULL) {
				char oname_text[NAME_TEXT_MAX];
				other_pool_name(oname_text, sizeof(oname_text), ns, scopes[s].kind,
				                ons, oname);
				pk_rules_check_pool_overlap(&me, &theirs, oname_text, vs);
			}
			pk_pool_release(&theirs);
		}
		json_decref(items);
	}
	pk_pool_release(&me);
}

/* spec.address of every IPAddress allocated from the pool, as a C array of borrowed strings. */
static int pool_addresses(const struct pk_admission_config *cfg, const char *kind, const char *ns,
                          const char *name, json_t **items, const char ***texts, size_t *n,
                          struct pk_err *err)
{
	const struct pk_admission_lookup *lk = cfg->lookup;
	*texts = NULL;
	*n = 0;
	int rc = lk->list_pool_addresses(lk->ctx, kind, ns, name, items, err);
	if (rc != PK_OK)
		return rc;
	size_t cnt = json_array_size(*items);
	*texts = calloc(cnt + 1, sizeof(**texts));
	if (*texts == NULL) {
		json_decref(*items);
		*items = NULL;
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	size_t i;
	json_t *a;
	json_array_foreach(*items, i, a)
	{
		const char *t = pk_json_cstr_at(json_object_get(a, "spec"), "address");
		if (t != NULL)
			(*texts)[(*n)++] = t;
	}
	return PK_OK;
}

static void review_pool(const struct pk_admission_config *cfg, enum pk_admission_endpoint endpoint,
                        const char *op, const char *kind, const char *ns, const char *name,
                        const json_t *obj, const json_t *old, struct verdict *v)
{
	char what[NAME_TEXT_MAX];
	object_name(what, sizeof(what), kind, ns, name);

	if (endpoint == PK_ADMISSION_MUTATE) {
		/* Default prefix from a lone CIDR when unset; nothing else is rewritten. */
		const json_t *spec = json_object_get(obj, "spec");
		const json_t *addrs = json_object_get(spec, "addresses");
		if (strcmp(op, "DELETE") == 0 || !json_is_object(spec) ||
		    json_object_get(spec, "prefix") != NULL || !json_is_array(addrs) ||
		    json_array_size(addrs) != 1 || pk_json_cstr(json_array_get(addrs, 0)) == NULL)
			return;
		struct pk_addr_spec sp;
		struct pk_err err;
		if (pk_addr_spec_parse(pk_json_cstr(json_array_get(addrs, 0)), &sp, NULL, &err) !=
		        PK_OK ||
		    sp.kind != PK_SPEC_CIDR)
			return;
		v->patch = json_pack("[{s:s, s:s, s:i}]", "op", "add", "path", "/spec/prefix",
		                     "value", (json_int_t)sp.prefix_len);
		return;
	}

	struct pk_violations vs;
	pk_violations_init(&vs);

	if (strcmp(op, "DELETE") == 0) {
		if (has_annotation(old, PK_DELETE_FOR_MOVE_ANNOTATION) ||
		    has_annotation(old, PK_SKIP_DELETE_PROTECTION_ANNOTATION))
			return;
		if (cfg->lookup == NULL) {
			warn(v,
			     "%s: delete protection was not checked: poolkeeper-webhook has no "
			     "API access",
			     what);
			return;
		}
		if (name == NULL) {
			warn(v, "%s: delete protection was not checked: the request names no pool",
			     what);
			return;
		}
		json_t *items = NULL;
		const char **texts = NULL;
		size_t n = 0;
		struct pk_err err;
		if (pool_addresses(cfg, kind, ns, name, &items, &texts, &n, &err) != PK_OK) {
			deny(v, 500, "%s: cannot check for IPAddresses allocated from it: %s", what,
			     err.msg);
			return;
		}
		size_t total = json_array_size(items);
		if (total > 0) {
			/* The first one is named when it is in the pool's namespace (always,
			 * for an IPPool); a GlobalIPPool's may be anywhere. */
			const json_t *first = json_array_get(items, 0);
			const char *fns = meta_str(first, "namespace");
			char who[NAME_TEXT_MAX + 16] = "";
			if (nameable(ns, fns)) {
				char one[NAME_TEXT_MAX];
				object_name(one, sizeof(one), "IPAddress", fns,
				            meta_str(first, "name"));
				snprintf(who, sizeof(who), " (first: %s)", one);
			}
			deny(v, 403,
			     "%s: %zu IPAddress%s allocated from this pool still exist%s%s; "
			     "delete the claims that hold them first, or annotate the pool "
			     "with %s to delete it anyway",
			     what, total, total == 1 ? "" : "es", total == 1 ? "s" : "", who,
			     PK_SKIP_DELETE_PROTECTION_ANNOTATION);
		}
		free(texts);
		json_decref(items);
		return;
	}

	pk_rules_check_pool(obj, old, &vs);
	if (cfg->lookup == NULL) {
		warn(v,
		     "%s: overlap and shrink checks were skipped: poolkeeper-webhook has no API "
		     "access",
		     what);
	} else if (pk_violations_count(&vs, PK_SEV_DENY) == 0) {
		pool_overlaps(cfg, kind, ns, name, what, obj, v, &vs);
		if (!v->allowed)
			return;
		if (strcmp(op, "UPDATE") == 0 && name != NULL) {
			json_t *items = NULL;
			const char **texts = NULL;
			size_t n = 0;
			struct pk_err err;
			if (pool_addresses(cfg, kind, ns, name, &items, &texts, &n, &err) !=
			    PK_OK) {
				deny(v, 500, "%s: cannot check addresses in use: %s", what,
				     err.msg);
				return;
			}
			struct pk_pool me;
			struct pk_violations ignore;
			memset(&me, 0, sizeof(me));
			pk_violations_init(&ignore);
			if (pk_pool_decode(json_object_get(obj, "spec"), &me, &ignore) == PK_OK &&
			    me.usable != NULL)
				pk_rules_check_pool_shrink(&me, texts, n, &vs);
			pk_pool_release(&me);
			free(texts);
			json_decref(items);
		}
	}
	apply(v, &vs, PK_ENFORCE_DENY, what);
}

/* ---- claims and addresses ---- */

/* WARN violations as warnings, "<what>: <message>" (the field is in the message's words). */
static void warn_notes(struct verdict *v, const struct pk_violations *vs, const char *what)
{
	char line[PK_FIELD_MAX + PK_MESSAGE_MAX + 8];
	for (size_t i = 0; i < vs->n; i++)
		if (vs->items[i].severity == PK_SEV_WARN)
			warn(v, "%s: %s", what,
			     pk_violation_text(&vs->items[i], line, sizeof(line)));
}

/*
 * Before blockOwnerDeletion: true goes on the candidate, whether the
 * requester may set it: OwnerReferencesPermissionEnforcement (kube-apiserver,
 * a validating plugin, so it sees our patch) refuses it unless the
 * requesting user may `update` the owner's finalizers subresource. When it
 * cannot be set, the plan keeps controller only and a warning names the rule.
 */
static void check_block_owner_deletion(const struct pk_admission_config *cfg,
                                       const json_t *user_info, const char *ns, const json_t *ref,
                                       const char *what, struct pk_claim_repair *plan,
                                       struct verdict *v)
{
	const struct pk_admission_lookup *lk = cfg->lookup;
	const char *api = pk_json_cstr_at(ref, "apiVersion"), *kind = pk_json_cstr_at(ref, "kind"),
	           *oname = pk_json_cstr_at(ref, "name");
	const char *user = pk_json_cstr_at(user_info, "username");
	char rule[600] = "", owner[NAME_TEXT_MAX], quser[300];
	bool allowed = false;
	struct pk_err err = {0};

	pk_text_quote(user ? user : "the requester", strlen(user ? user : "the requester"), quser,
	              sizeof(quser));
	char qk[300], qn[300];
	pk_text_quote(kind ? kind : "?", strlen(kind ? kind : "?"), qk, sizeof(qk));
	pk_text_quote(oname ? oname : "?", strlen(oname ? oname : "?"), qn, sizeof(qn));
	snprintf(owner, sizeof(owner), "%s \"%s\"", qk, qn);
	if (lk == NULL || lk->may_block_owner_deletion == NULL || ns == NULL || api == NULL ||
	    kind == NULL || oname == NULL) {
		snprintf(rule, sizeof(rule),
		         "poolkeeper-webhook cannot ask whether it may update the owner's "
		         "finalizers");
	} else if (lk->may_block_owner_deletion(lk->ctx, user_info, ns, api, kind, oname, &allowed,
	                                        rule, sizeof(rule), &err) != PK_OK) {
		allowed = false;
		snprintf(rule, sizeof(rule), "the permission check failed: %s", err.msg);
	} else if (allowed) {
		return;
	}
	plan->set_block_owner_deletion = false;
	warn(v,
	     "%s: %s may not set blockOwnerDeletion on the owner reference to %s (%s); grant it "
	     "(docs/compatibility.md) and poolkeeper sets it on the next claim",
	     what, quser, owner, rule);
	if (cfg->count_repair != NULL)
		cfg->count_repair(cfg->count_ctx, kind ? kind : "", "skipped:permission");
}

static void count_repairs(const struct pk_admission_config *cfg, const json_t *ref,
                          const struct pk_claim_repair *plan)
{
	if (cfg->count_repair == NULL)
		return;
	const char *kind = pk_json_cstr_at(ref, "kind");
	kind = kind ? kind : "";
	if (plan->set_controller)
		cfg->count_repair(cfg->count_ctx, kind, "controller");
	if (plan->set_block_owner_deletion)
		cfg->count_repair(cfg->count_ctx, kind, "blockOwnerDeletion");
	if (plan->cluster_name != NULL)
		cfg->count_repair(cfg->count_ctx, kind, "clusterName");
}

/*
 * Appends to `patch` the operations that set controller and/or
 * blockOwnerDeletion to true on owner reference `i`, after a test that the
 * reference there still has `uid` (another mutating webhook may have
 * reordered the list).
 */
static void patch_ref_flags(json_t *patch, size_t i, const json_t *uid, bool controller, bool block)
{
	static const char *const flags[] = {"controller", "blockOwnerDeletion"};
	const bool set[] = {controller, block};
	char path[96];
	snprintf(path, sizeof(path), "/metadata/ownerReferences/%zu/uid", i);
	json_array_append_new(
	    patch, json_pack("{s:s, s:s, s:O}", "op", "test", "path", path, "value", uid));
	for (size_t f = 0; f < 2; f++) {
		if (!set[f])
			continue;
		snprintf(path, sizeof(path), "/metadata/ownerReferences/%zu/%s", i, flags[f]);
		json_array_append_new(
		    patch, json_pack("{s:s, s:s, s:b}", "op", "add", "path", path, "value", 1));
	}
}

/* The JSON Patch of a plan. */
static json_t *repair_patch(const json_t *ref, const struct pk_claim_repair *plan)
{
	json_t *patch = json_array();
	if (plan->set_controller || plan->set_block_owner_deletion)
		patch_ref_flags(patch, (size_t)plan->candidate, json_object_get(ref, "uid"),
		                plan->set_controller, plan->set_block_owner_deletion);
	if (plan->cluster_name != NULL)
		json_array_append_new(
		    patch, json_pack("{s:s, s:s, s:s}", "op",
		                     plan->cluster_name_replace ? "replace" : "add", "path",
		                     "/spec/clusterName", "value", plan->cluster_name));
	return patch;
}

/* Whether `flag` is true on the stored reference and absent (or null) on the new one. */
static bool dropped(const json_t *was, const json_t *now, const char *flag)
{
	const json_t *v = json_object_get(now, flag);
	return json_is_true(json_object_get(was, flag)) && (v == NULL || json_is_null(v));
}

/*
 * On UPDATE in repair mode: the flags a writer drops from an owner reference
 * the stored claim has, put back. A provider that re-applies its own owner
 * reference on every reconcile (CAPV's createOrPatchIPAddressClaim runs
 * EnsureOwnerRef, which replaces the reference with one that has neither
 * flag) would otherwise undo the repair, and the apiserver would refuse its
 * patch anyway: changing owner references needs `delete` on the claim, which
 * CAPV's role lacks (OwnerReferencesPermissionEnforcement). With the flags
 * put back the references are unchanged, so that patch passes and the claim
 * keeps the contract. Only an absent flag is put back, never one the writer
 * set to false, and controller only while no other reference has it. The
 * reference is matched by uid, and the patch tests that uid at its index.
 */
static json_t *restore_patch(const json_t *obj, const json_t *old)
{
	const json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
	const json_t *old_refs =
	    json_object_get(json_object_get(old, "metadata"), "ownerReferences");
	json_t *patch = NULL;
	bool has_controller = false;
	size_t i, j;
	const json_t *r, *o;

	json_array_foreach(refs, i, r)
	{
		has_controller |= json_is_true(json_object_get(r, "controller"));
	}
	json_array_foreach(refs, i, r)
	{
		const char *uid = pk_json_cstr_at(r, "uid");
		if (uid == NULL || uid[0] == '\0')
			continue;
		const json_t *was = NULL;
		json_array_foreach(old_refs, j, o)
		{
			const char *ouid = pk_json_cstr_at(o, "uid");
			if (ouid != NULL && strcmp(ouid, uid) == 0) {
				was = o;
				break;
			}
		}
		bool c = was != NULL && !has_controller && dropped(was, r, "controller");
		bool b = was != NULL && dropped(was, r, "blockOwnerDeletion");
		if (!c && !b)
			continue;
		if (patch == NULL)
			patch = json_array();
		patch_ref_flags(patch, i, json_object_get(r, "uid"), c, b);
	}
	return patch;
}

static void review_claim(const struct pk_admission_config *cfg, enum pk_admission_endpoint endpoint,
                         const char *op, const char *ns, const char *name, const json_t *obj,
                         const json_t *old, const json_t *user_info, struct verdict *v)
{
	if (strcmp(op, "CREATE") != 0 && strcmp(op, "UPDATE") != 0)
		return; /* deletion is never blocked */
	const json_t *pool_ref = json_object_get(json_object_get(obj, "spec"), "poolRef");
	/* "Ours" by group: an unknown kind of ipam.poolkeeper.io is our violation. */
	bool ours = pk_rules_is_poolkeeper_group_ref(pool_ref);
	enum pk_enforcement mode = ours ? cfg->claims : cfg->foreign_claims;
	char what[NAME_TEXT_MAX];
	object_name(what, sizeof(what), "IPAddressClaim", ns, name);

	if (endpoint == PK_ADMISSION_MUTATE) {
		/* On CREATE: the repair. On UPDATE (the spec is immutable then) only the
		 * repaired flags a writer dropped are put back; metadata changes by the
		 * garbage collector or clusterctl move are otherwise never touched. */
		if (strcmp(op, "UPDATE") == 0) {
			if (ours && mode == PK_ENFORCE_REPAIR && json_is_object(old))
				v->patch = restore_patch(obj, old);
			return;
		}
		struct pk_claim_repair plan;
		pk_rules_plan_claim_repair(obj, mode, &plan);
		if (!pk_rules_claim_repair_any(&plan))
			return;
		const json_t *refs =
		    json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
		const json_t *ref =
		    plan.candidate < 0 ? NULL : json_array_get(refs, (size_t)plan.candidate);
		if (plan.set_block_owner_deletion)
			check_block_owner_deletion(cfg, user_info,
			                           ns != NULL ? ns : meta_str(obj, "namespace"),
			                           ref, what, &plan, v);
		if (!pk_rules_claim_repair_any(&plan))
			return;
		struct pk_violations notes;
		pk_violations_init(&notes);
		pk_rules_note_claim_repair(obj, &plan, mode, &notes);
		warn_notes(v, &notes, what);
		count_repairs(cfg, ref, &plan);
		v->patch = repair_patch(ref, &plan);
		return;
	}
	struct pk_violations vs;
	pk_violations_init(&vs);
	pk_rules_check_claim_mode(obj, strcmp(op, "UPDATE") == 0 ? old : NULL, mode, &vs);
	apply(v, &vs, PK_ENFORCE_DENY, what);
}

/*
 * Updates that only clean up are never refused, whatever else the
 * IPAddress says: its deletion under way, clusterctl move taking it away,
 * or a finalizer coming off (the controller releasing it). Refusing them
 * would block a claim's deletion or a move (ARCHITECTURE.md, invariants 3
 * and 4).
 */
static bool cleanup_update(const json_t *obj, const json_t *old)
{
	const json_t *nf = json_object_get(json_object_get(obj, "metadata"), "finalizers");
	const json_t *of = json_object_get(json_object_get(old, "metadata"), "finalizers");
	return meta_str(obj, "deletionTimestamp") != NULL ||
	       has_annotation(obj, PK_DELETE_FOR_MOVE_ANNOTATION) ||
	       json_array_size(nf) < json_array_size(of);
}

/*
 * The checks of an IPAddress that need other objects: on CREATE, the
 * address is one its pool hands out; on CREATE and UPDATE, its claim
 * exists in its namespace on the same pool, and no other IPAddress of the
 * pool holds the address. False when a lookup failed (v is then denied:
 * a check that could not run must not pass).
 */
static bool ipaddress_against_cluster(const struct pk_admission_config *cfg, bool update,
                                      const char *ns, const char *name, const json_t *obj,
                                      const char *what, struct verdict *v, struct pk_violations *vs)
{
	const struct pk_admission_lookup *lk = cfg->lookup;
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *ref = json_object_get(spec, "poolRef");
	const char *kind = pk_json_cstr_at(ref, "kind"), *pname = pk_json_cstr_at(ref, "name");
	bool global = strcmp(kind, PK_GLOBAL_POOL_KIND) == 0;
	const char *pool_ns = global ? NULL : ns;
	char pool_text[NAME_TEXT_MAX];
	struct pk_err err;
	object_name(pool_text, sizeof(pool_text), kind, pool_ns, pname);

	if (!update) {
		json_t *pool = NULL;
		if (lk->get_pool(lk->ctx, kind, pool_ns, pname, &pool, &err) != PK_OK) {
			deny(v, 500, "%s: cannot read %s: %s", what, pool_text, err.msg);
			return false;
		}
		if (pool == NULL) {
			/* clusterctl move may recreate addresses in any order: warn only. */
			warn(v, "%s: %s does not exist", what, pool_text);
		} else {
			struct pk_pool p;
			struct pk_violations ignore;
			memset(&p, 0, sizeof(p));
			pk_violations_init(&ignore);
			if (pk_pool_decode(json_object_get(pool, "spec"), &p, &ignore) == PK_OK)
				pk_rules_check_ipaddress_in_pool(obj, &p, pool_text, false, vs);
			pk_pool_release(&p);
			json_decref(pool);
		}
	}

	/* "claimRef ... the IPAddressClaim this address was allocated for" (CAPI's
	 * IPAddress types): it exists, here, and claims from this pool. */
	const char *cname = pk_json_cstr_at(json_object_get(spec, "claimRef"), "name");
	json_t *claim = NULL;
	if (lk->get_claim == NULL) {
		warn(v, "%s: spec.claimRef was not checked: poolkeeper-webhook cannot read claims",
		     what);
	} else {
		if (ns != NULL && cname != NULL &&
		    lk->get_claim(lk->ctx, ns, cname, &claim, &err) != PK_OK) {
			deny(v, 500, "%s: cannot read the IPAddressClaim spec.claimRef names: %s",
			     what, err.msg);
			return false;
		}
		pk_rules_check_ipaddress_claim(obj, claim, vs);
		json_decref(claim);
	}

	/* "No address is held by two IPAddresses of the same pool." Itself (an UPDATE, or a
	 * CREATE the apiserver will answer AlreadyExists) is not another. */
	json_t *items = NULL;
	const char **texts = NULL;
	size_t n = 0;
	if (pool_addresses(cfg, kind, pool_ns, pname, &items, &texts, &n, &err) != PK_OK) {
		deny(v, 500, "%s: cannot check whether the address is free: %s", what, err.msg);
		return false;
	}
	size_t i, kept = 0;
	json_t *a;
	json_array_foreach(items, i, a)
	{
		const char *t = pk_json_cstr_at(json_object_get(a, "spec"), "address");
		const char *ans = meta_str(a, "namespace"), *aname = meta_str(a, "name");
		bool self = name != NULL && ns != NULL && ans != NULL && aname != NULL &&
		            strcmp(ans, ns) == 0 && strcmp(aname, name) == 0;
		if (t != NULL && !self)
			texts[kept++] = t;
	}
	pk_rules_check_ipaddress_unique(obj, texts, kept, vs);
	free(texts);
	json_decref(items);
	return true;
}

static void review_ipaddress(const struct pk_admission_config *cfg,
                             enum pk_admission_endpoint endpoint, const char *op, const char *ns,
                             const char *name, const json_t *obj, const json_t *old,
                             struct verdict *v)
{
	if (endpoint == PK_ADMISSION_MUTATE ||
	    (strcmp(op, "CREATE") != 0 && strcmp(op, "UPDATE") != 0))
		return;
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *ref = json_object_get(spec, "poolRef");
	if (!pk_rules_is_poolkeeper_pool_ref(ref))
		return; /* another provider's address */
	char what[NAME_TEXT_MAX];
	object_name(what, sizeof(what), "IPAddress", ns, name);
	struct pk_violations vs;
	pk_violations_init(&vs);
	bool update = strcmp(op, "UPDATE") == 0;
	pk_rules_check_ipaddress(obj, update ? old : NULL, &vs);

	if (pk_violations_count(&vs, PK_SEV_DENY) == 0 && !(update && cleanup_update(obj, old))) {
		if (cfg->lookup == NULL)
			warn(v,
			     "%s: its pool, claim and address were not checked: "
			     "poolkeeper-webhook has no API access",
			     what);
		else if (!ipaddress_against_cluster(cfg, update, ns, name, obj, what, v, &vs))
			return;
	}
	apply(v, &vs, PK_ENFORCE_DENY, what);
}

/* ---- the envelope ---- */

static void bad_request(int *status, json_t **response, int code, const char *fmt, ...)
    PK_PRINTF(4, 5);
static void bad_request(int *status, json_t **response, int code, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	*status = code;
	*response = json_object();
	json_object_set_new(*response, "error", jstr(buf));
}

void pk_admission_review(const struct pk_admission_config *cfg, enum pk_admission_endpoint endpoint,
                         const char *body, size_t len, int *http_status, json_t **response)
{
	*response = NULL;
	if (len > PK_ADMISSION_MAX_BODY) {
		bad_request(http_status, response, 413,
		            "request body is %zu bytes; at most %u are accepted", len,
		            PK_ADMISSION_MAX_BODY);
		return;
	}
	if (!depth_ok(body, len, PK_ADMISSION_MAX_DEPTH)) {
		bad_request(http_status, response, 400, "JSON is nested deeper than %d levels",
		            PK_ADMISSION_MAX_DEPTH);
		return;
	}
	json_error_t jerr;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		bad_request(http_status, response, 400, "body is not JSON: %s at line %d column %d",
		            jerr.text, jerr.line, jerr.column);
		return;
	}
	const json_t *req = json_object_get(root, "request");
	const char *api = pk_json_cstr_at(root, "apiVersion"),
	           *kind = pk_json_cstr_at(root, "kind");
	if (!json_is_object(root) || kind == NULL || strcmp(kind, "AdmissionReview") != 0 ||
	    api == NULL || strcmp(api, "admission.k8s.io/v1") != 0) {
		bad_request(http_status, response, 400,
		            "body is not an admission.k8s.io/v1 AdmissionReview");
		goto out;
	}
	if (!json_is_object(req)) {
		bad_request(http_status, response, 400, "AdmissionReview has no request object");
		goto out;
	}
	const char *uid = pk_json_cstr_at(req, "uid");
	if (uid == NULL || uid[0] == '\0') {
		bad_request(http_status, response, 400, "request.uid is missing or empty");
		goto out;
	}
	const char *op = pk_json_cstr_at(req, "operation");
	if (op == NULL || (strcmp(op, "CREATE") != 0 && strcmp(op, "UPDATE") != 0 &&
	                   strcmp(op, "DELETE") != 0 && strcmp(op, "CONNECT") != 0)) {
		bad_request(http_status, response, 400,
		            "request.operation must be CREATE, UPDATE, DELETE or CONNECT");
		goto out;
	}
	const json_t *obj = json_object_get(req, "object");
	const json_t *old = json_object_get(req, "oldObject");
	bool writes = strcmp(op, "CREATE") == 0 || strcmp(op, "UPDATE") == 0;
	if (writes && !json_is_object(obj)) {
		bad_request(http_status, response, 400, "request.object is missing on %s", op);
		goto out;
	}
	if (strcmp(op, "UPDATE") == 0 && !json_is_object(old)) {
		bad_request(http_status, response, 400, "request.oldObject is missing on UPDATE");
		goto out;
	}
	const json_t *res = json_object_get(req, "resource");
	const char *group = pk_json_cstr_at(res, "group"),
	           *version = pk_json_cstr_at(res, "version"),
	           *resource = pk_json_cstr_at(res, "resource");
	if (group == NULL || version == NULL || resource == NULL) {
		bad_request(http_status, response, 400,
		            "request.resource needs group, version and resource");
		goto out;
	}
	const char *ns = pk_json_cstr_at(req, "namespace");
	/*
	 * request.name may be empty (a create with generateName; some deletes
	 * carry only oldObject): take the name from the object itself. Code
	 * below treats a NULL name as "no name known", never dereferences it.
	 */
	const char *name = pk_json_cstr_at(req, "name");
	if (name != NULL && name[0] == '\0')
		name = NULL;
	if (name == NULL)
		name = meta_str(writes ? obj : old, "name");
	if (name != NULL && name[0] == '\0')
		name = NULL;
	if (!json_is_object(old))
		old = NULL;

	struct verdict v = {.allowed = true, .code = 200};
	v.warnings = json_array();
	const char *pool_kind = pool_kind_of(resource);
	if (strcmp(group, PK_POOL_GROUP) == 0 && strcmp(version, "v1alpha1") == 0 &&
	    pool_kind != NULL) {
		review_pool(cfg, endpoint, op, pool_kind, ns, name, obj, old, &v);
	} else if (strcmp(group, PK_CAPI_IPAM_GROUP) == 0 &&
	           (strcmp(version, "v1beta1") == 0 || strcmp(version, "v1beta2") == 0) &&
	           strcmp(resource, "ipaddressclaims") == 0) {
		review_claim(cfg, endpoint, op, ns, name, obj, old,
		             json_object_get(req, "userInfo"), &v);
	} else if (strcmp(group, PK_CAPI_IPAM_GROUP) == 0 &&
	           (strcmp(version, "v1beta1") == 0 || strcmp(version, "v1beta2") == 0) &&
	           strcmp(resource, "ipaddresses") == 0) {
		review_ipaddress(cfg, endpoint, op, ns, name, obj, old, &v);
	} else {
		char q[300];
		char r[400];
		snprintf(r, sizeof(r), "%s/%s/%s", group, version, resource);
		pk_text_quote(r, strlen(r), q, sizeof(q));
		deny(&v, 400, "poolkeeper-webhook does not handle resource \"%s\"", q);
	}
	if (endpoint == PK_ADMISSION_MUTATE && !v.allowed) {
		/* a mutation never denies; the validating call reports it */
		v.allowed = true;
	}

	json_t *resp = json_object();
	json_object_set_new(resp, "uid", json_string(uid)); /* valid UTF-8: jansson parsed it */
	json_object_set_new(resp, "allowed", json_boolean(v.allowed));
	if (!v.allowed) {
		json_t *st = json_object();
		json_object_set_new(st, "code", json_integer(v.code));
		json_object_set_new(st, "reason",
		                    json_string(v.code == 403   ? "Forbidden"
		                                : v.code == 400 ? "BadRequest"
		                                                : "InternalError"));
		json_object_set_new(st, "message", jstr(v.message));
		json_object_set_new(resp, "status", st);
	}
	if (json_array_size(v.warnings) > 0)
		json_object_set(resp, "warnings", v.warnings);
	if (v.allowed && v.patch != NULL) {
		char *text = json_dumps(v.patch, JSON_COMPACT);
		char *enc = NULL;
		if (text != NULL && b64(text, strlen(text), &enc) == PK_OK) {
			json_object_set_new(resp, "patchType", json_string("JSONPatch"));
			json_object_set_new(resp, "patch", json_string(enc));
		}
		free(text);
		free(enc);
	}
	json_decref(v.warnings);
	json_decref(v.patch);
	*response = json_object();
	json_object_set_new(*response, "apiVersion", json_string("admission.k8s.io/v1"));
	json_object_set_new(*response, "kind", json_string("AdmissionReview"));
	json_object_set_new(*response, "response", resp);
	*http_status = 200;
out:
	json_decref(root);
}
