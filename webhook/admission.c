/*
 * admission.c - AdmissionReview in, AdmissionReview out.
 *
 * "The webhook responds with an AdmissionReview object of the same version,
 * with response.uid set to request.uid" (Kubernetes, Dynamic Admission
 * Control). Denials carry status.code and status.message; warnings go to
 * response.warnings, which kubectl prints as "Warning:" lines; mutations
 * are a base64 JSONPatch.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr_spec.h"
#include "admission.h"
#include "base64.h"
#include "json.h"
#include "pool.h"
#include "pool_lookup.h"
#include "pool_ref.h"
#include "rules.h"
#include "violation.h"

#define MSG_MAX       4096
#define NAME_TEXT_MAX PK_OBJECT_NAME_MAX
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

/* What the envelope of one request says. */
struct request {
	const char *uid, *op, *group, *version, *resource, *ns, *name;
	const json_t *obj, *old, *user_info;
};

/* ---- pools ---- */

/* poolkeeper's pool kind the request's resource is (its group, version and resource), or
 * NULL. */
static const struct pk_pool_kind *pool_kind_of(const struct request *rq)
{
	const struct pk_pool_kind *pk = pk_pool_kind_by_resource(rq->resource);
	if (pk == NULL || strcmp(rq->group, pk->group) != 0 ||
	    strcmp(rq->version, pk->version) != 0)
		return NULL;
	return pk;
}

/* The rules' lookup: the pool reads of the admission lookup. */
static struct pk_pool_lookup pool_lookup(const struct pk_admission_lookup *lk)
{
	struct pk_pool_lookup pl = {.ctx = lk->ctx,
	                            .list_pools = lk->list_pools,
	                            .list_pool_addresses = lk->list_pool_addresses,
	                            .get_pool = lk->get_pool};
	return pl;
}

/* The mutation: the default prefix (pk_pool_default_prefix); nothing else is rewritten. */
static void mutate_pool(const char *op, const json_t *obj, struct verdict *v)
{
	unsigned prefix;
	if (strcmp(op, "DELETE") == 0 ||
	    !pk_pool_default_prefix(json_object_get(obj, "spec"), &prefix))
		return;
	v->patch = json_pack("[{s:s, s:s, s:i}]", "op", "add", "path", "/spec/prefix", "value",
	                     (json_int_t)prefix);
}

static void validate_pool_delete(const struct pk_admission_config *cfg, const struct pk_pool_id *id,
                                 const char *what, const json_t *old, struct verdict *v)
{
	struct pk_violations vs;
	struct pk_err err;
	if (!pk_pool_lookup_protects_delete(old))
		return;
	if (cfg->lookup == NULL) {
		warn(v,
		     "%s: delete protection was not checked: poolkeeper-webhook has no API access",
		     what);
		return;
	}
	if (id->name == NULL) {
		warn(v, "%s: delete protection was not checked: the request names no pool", what);
		return;
	}
	struct pk_pool_lookup pl = pool_lookup(cfg->lookup);
	pk_violations_init(&vs);
	if (pk_pool_lookup_check_delete(&pl, id, old, &vs, &err) != PK_OK) {
		deny(v, 500, "%s: %s", what, err.msg);
		return;
	}
	apply(v, &vs, PK_ENFORCE_DENY, what);
}

static void review_pool(const struct pk_admission_config *cfg, enum pk_admission_endpoint endpoint,
                        const char *op, const struct pk_pool_id *id, const json_t *obj,
                        const json_t *old, struct verdict *v)
{
	char what[NAME_TEXT_MAX];
	struct pk_violations vs;
	struct pk_err err;
	pk_pool_lookup_object_name(what, sizeof(what), id->kind, id->ns, id->name);

	if (endpoint == PK_ADMISSION_MUTATE) {
		mutate_pool(op, obj, v);
		return;
	}
	if (strcmp(op, "DELETE") == 0) {
		validate_pool_delete(cfg, id, what, old, v);
		return;
	}
	pk_violations_init(&vs);
	pk_rules_check_pool(obj, old, &vs);
	if (cfg->lookup == NULL) {
		warn(v,
		     "%s: overlap and shrink checks were skipped: poolkeeper-webhook has no API "
		     "access",
		     what);
	} else if (pk_violations_count(&vs, PK_SEV_DENY) == 0) {
		struct pk_pool_lookup pl = pool_lookup(cfg->lookup);
		int rc = pk_pool_lookup_check_overlaps(&pl, id, obj, &vs, &err);
		if (rc == PK_OK && strcmp(op, "UPDATE") == 0 && id->name != NULL)
			rc = pk_pool_lookup_check_shrink(&pl, id, obj, &vs, &err);
		if (rc != PK_OK) {
			deny(v, 500, "%s: %s", what, err.msg);
			return;
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
	int rc;

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
	} else if ((rc = lk->may_block_owner_deletion(lk->ctx, user_info, ns, api, kind, oname,
	                                              &allowed, rule, sizeof(rule), &err)) ==
	           PK_ERR_TIMEOUT) {
		/* The lookup could not be answered within the review's deadline (permission.h):
		 * the claim is admitted in time with controller only, as when it may not. */
		plan->set_block_owner_deletion = false;
		warn(v,
		     "%s: blockOwnerDeletion was not set on the owner reference to %s: the check "
		     "whether %s may update the finalizers of kind %s timed out (%s); poolkeeper "
		     "sets it on the next claim",
		     what, owner, quser, qk, err.msg);
		if (cfg->count_repair != NULL)
			cfg->count_repair(cfg->count_ctx, kind, "skipped:timeout");
		return;
	} else if (rc != PK_OK) {
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

/*
 * The mutating endpoint on a claim. On CREATE: the repair. On UPDATE (the
 * spec is immutable then) only the repaired flags a writer dropped are put
 * back; metadata changes by the garbage collector or clusterctl move are
 * otherwise never touched.
 */
static void mutate_claim(const struct pk_admission_config *cfg, const struct request *rq,
                         enum pk_enforcement mode, bool ours, const char *what, struct verdict *v)
{
	const json_t *obj = rq->obj;
	if (strcmp(rq->op, "UPDATE") == 0) {
		if (ours && mode == PK_ENFORCE_REPAIR && json_is_object(rq->old))
			v->patch = restore_patch(obj, rq->old);
		return;
	}
	struct pk_claim_repair plan;
	pk_rules_plan_claim_repair(obj, mode, &plan);
	if (!pk_rules_claim_repair_any(&plan))
		return;
	const json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
	const json_t *ref =
	    plan.candidate < 0 ? NULL : json_array_get(refs, (size_t)plan.candidate);
	if (plan.set_block_owner_deletion)
		check_block_owner_deletion(cfg, rq->user_info,
		                           rq->ns != NULL ? rq->ns
		                                          : pk_json_meta_cstr(obj, "namespace"),
		                           ref, what, &plan, v);
	if (!pk_rules_claim_repair_any(&plan))
		return;
	struct pk_violations notes;
	pk_violations_init(&notes);
	pk_rules_note_claim_repair(obj, &plan, mode, &notes);
	warn_notes(v, &notes, what);
	count_repairs(cfg, ref, &plan);
	v->patch = repair_patch(ref, &plan);
}

static void review_claim(const struct pk_admission_config *cfg, enum pk_admission_endpoint endpoint,
                         const struct request *rq, struct verdict *v)
{
	if (strcmp(rq->op, "CREATE") != 0 && strcmp(rq->op, "UPDATE") != 0)
		return; /* deletion is never blocked */
	bool ours;
	enum pk_enforcement mode =
	    pk_rules_claim_enforcement(rq->obj, cfg->claims, cfg->foreign_claims, &ours);
	char what[NAME_TEXT_MAX];
	pk_pool_lookup_object_name(what, sizeof(what), PK_CLAIM_KIND, rq->ns, rq->name);

	if (endpoint == PK_ADMISSION_MUTATE) {
		mutate_claim(cfg, rq, mode, ours, what, v);
		return;
	}
	struct pk_violations vs;
	pk_violations_init(&vs);
	pk_rules_check_claim_mode(rq->obj, strcmp(rq->op, "UPDATE") == 0 ? rq->old : NULL, mode,
	                          &vs);
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
	const json_t *nf = pk_json_path(obj, "metadata", "finalizers");
	const json_t *of = pk_json_path(old, "metadata", "finalizers");
	return pk_json_meta_cstr(obj, "deletionTimestamp") != NULL ||
	       pk_json_path(obj, "metadata", "annotations", PK_DELETE_FOR_MOVE_ANNOTATION) !=
	           NULL ||
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
                                      const struct request *rq, const char *what, struct verdict *v,
                                      struct pk_violations *vs)
{
	const struct pk_admission_lookup *lk = cfg->lookup;
	struct pk_pool_lookup pl = pool_lookup(lk);
	struct pk_err err;

	if (!update && pk_pool_lookup_check_ipaddress_pool(&pl, rq->ns, rq->obj, vs, &err) != PK_OK)
		goto failed;
	/* "claimRef ... the IPAddressClaim this address was allocated for" (CAPI's
	 * IPAddress types): it exists, here, and claims from this pool. */
	const char *cname =
	    pk_json_cstr_at(json_object_get(json_object_get(rq->obj, "spec"), "claimRef"), "name");
	json_t *claim = NULL;
	if (lk->get_claim == NULL) {
		warn(v, "%s: spec.claimRef was not checked: poolkeeper-webhook cannot read claims",
		     what);
	} else {
		if (rq->ns != NULL && cname != NULL &&
		    lk->get_claim(lk->ctx, rq->ns, cname, &claim, &err) != PK_OK) {
			deny(v, 500, "%s: cannot read the IPAddressClaim spec.claimRef names: %s",
			     what, err.msg);
			return false;
		}
		pk_rules_check_ipaddress_claim(rq->obj, claim, vs);
		json_decref(claim);
	}
	/* "No address is held by two IPAddresses of the same pool." Itself (an UPDATE, or a
	 * CREATE the apiserver will answer AlreadyExists) is not another. */
	if (pk_pool_lookup_check_ipaddress_unique(&pl, rq->ns, rq->name, rq->obj, vs, &err) ==
	    PK_OK)
		return true;
failed:
	deny(v, 500, "%s: %s", what, err.msg);
	return false;
}

static void review_ipaddress(const struct pk_admission_config *cfg,
                             enum pk_admission_endpoint endpoint, const struct request *rq,
                             struct verdict *v)
{
	const char *op = rq->op;
	if (endpoint == PK_ADMISSION_MUTATE ||
	    (strcmp(op, "CREATE") != 0 && strcmp(op, "UPDATE") != 0))
		return;
	const json_t *ref = json_object_get(json_object_get(rq->obj, "spec"), "poolRef");
	if (pk_pool_kind_of_ref(ref) == NULL)
		return; /* another provider's address */
	char what[NAME_TEXT_MAX];
	pk_pool_lookup_object_name(what, sizeof(what), PK_ADDRESS_KIND, rq->ns, rq->name);
	struct pk_violations vs;
	pk_violations_init(&vs);
	bool update = strcmp(op, "UPDATE") == 0;
	pk_rules_check_ipaddress(rq->obj, update ? rq->old : NULL, &vs);

	if (pk_violations_count(&vs, PK_SEV_DENY) == 0 &&
	    !(update && cleanup_update(rq->obj, rq->old))) {
		if (cfg->lookup == NULL)
			warn(v,
			     "%s: its pool, claim and address were not checked: "
			     "poolkeeper-webhook has no API access",
			     what);
		else if (!ipaddress_against_cluster(cfg, update, rq, what, v, &vs))
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

/* The body as JSON, or NULL after bad_request (size, depth, syntax). */
static json_t *load_body(const char *body, size_t len, int *http_status, json_t **response)
{
	json_error_t jerr;
	if (len > PK_ADMISSION_MAX_BODY) {
		bad_request(http_status, response, 413,
		            "request body is %zu bytes; at most %u are accepted", len,
		            PK_ADMISSION_MAX_BODY);
		return NULL;
	}
	if (!depth_ok(body, len, PK_ADMISSION_MAX_DEPTH)) {
		bad_request(http_status, response, 400, "JSON is nested deeper than %d levels",
		            PK_ADMISSION_MAX_DEPTH);
		return NULL;
	}
	/*
	 * JSON_ALLOW_NUL: the API server accepts "\u0000" in strings it does not
	 * validate (an annotation's value), so an object may hold one; refusing
	 * the review would leave it never updatable, its finalizers never
	 * removable. The rules read any string holding a NUL as invalid
	 * (pk_json_cstr), so such a name or reference is denied by them.
	 */
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (root == NULL)
		bad_request(http_status, response, 400, "body is not JSON: %s at line %d column %d",
		            jerr.text, jerr.line, jerr.column);
	return root;
}

/* request.uid and request.operation; false after bad_request. */
static bool parse_operation(const json_t *root, struct request *rq, int *http_status,
                            json_t **response)
{
	const json_t *req = json_object_get(root, "request");
	const char *api = pk_json_cstr_at(root, "apiVersion"),
	           *kind = pk_json_cstr_at(root, "kind");
	if (!json_is_object(root) || kind == NULL || strcmp(kind, PK_ADMISSION_REVIEW_KIND) != 0 ||
	    api == NULL || strcmp(api, PK_ADMISSION_API_VERSION) != 0) {
		bad_request(http_status, response, 400,
		            "body is not an " PK_ADMISSION_API_VERSION
		            " " PK_ADMISSION_REVIEW_KIND);
		return false;
	}
	if (!json_is_object(req)) {
		bad_request(http_status, response, 400,
		            PK_ADMISSION_REVIEW_KIND " has no request object");
		return false;
	}
	rq->uid = pk_json_cstr_at(req, "uid");
	if (rq->uid == NULL || rq->uid[0] == '\0') {
		bad_request(http_status, response, 400, "request.uid is missing or empty");
		return false;
	}
	const char *op = rq->op = pk_json_cstr_at(req, "operation");
	if (op == NULL || (strcmp(op, "CREATE") != 0 && strcmp(op, "UPDATE") != 0 &&
	                   strcmp(op, "DELETE") != 0 && strcmp(op, "CONNECT") != 0)) {
		bad_request(http_status, response, 400,
		            "request.operation must be CREATE, UPDATE, DELETE or CONNECT");
		return false;
	}
	return true;
}

/* The rest of the request: objects, resource, namespace and name; false after bad_request. */
static bool parse_request(const json_t *root, struct request *rq, int *http_status,
                          json_t **response)
{
	const json_t *req = json_object_get(root, "request");
	if (!parse_operation(root, rq, http_status, response))
		return false;
	const char *op = rq->op;
	rq->obj = json_object_get(req, "object");
	rq->old = json_object_get(req, "oldObject");
	rq->user_info = json_object_get(req, "userInfo");
	bool writes = strcmp(op, "CREATE") == 0 || strcmp(op, "UPDATE") == 0;
	if (writes && !json_is_object(rq->obj)) {
		bad_request(http_status, response, 400, "request.object is missing on %s", op);
		return false;
	}
	if (strcmp(op, "UPDATE") == 0 && !json_is_object(rq->old)) {
		bad_request(http_status, response, 400, "request.oldObject is missing on UPDATE");
		return false;
	}
	const json_t *res = json_object_get(req, "resource");
	rq->group = pk_json_cstr_at(res, "group");
	rq->version = pk_json_cstr_at(res, "version");
	rq->resource = pk_json_cstr_at(res, "resource");
	if (rq->group == NULL || rq->version == NULL || rq->resource == NULL) {
		bad_request(http_status, response, 400,
		            "request.resource needs group, version and resource");
		return false;
	}
	rq->ns = pk_json_cstr_at(req, "namespace");
	/*
	 * request.name may be empty (a create with generateName; some deletes
	 * carry only oldObject): take the name from the object itself. Code
	 * below treats a NULL name as "no name known", never dereferences it.
	 */
	rq->name = pk_json_cstr_at(req, "name");
	if (rq->name != NULL && rq->name[0] == '\0')
		rq->name = NULL;
	if (rq->name == NULL)
		rq->name = pk_json_meta_cstr(writes ? rq->obj : rq->old, "name");
	if (rq->name != NULL && rq->name[0] == '\0')
		rq->name = NULL;
	if (!json_is_object(rq->old))
		rq->old = NULL;
	return true;
}

/* Hands the request to the review of its resource. */
static void dispatch(const struct pk_admission_config *cfg, enum pk_admission_endpoint endpoint,
                     const struct request *rq, struct verdict *v)
{
	const struct pk_pool_kind *pool_kind = pool_kind_of(rq);
	bool capi = strcmp(rq->group, PK_CAPI_IPAM_GROUP) == 0 &&
	            pk_rules_is_capi_ipam_version(rq->version);
	if (pool_kind != NULL) {
		struct pk_pool_id id = {.kind = pool_kind->kind, .ns = rq->ns, .name = rq->name};
		review_pool(cfg, endpoint, rq->op, &id, rq->obj, rq->old, v);
	} else if (capi && strcmp(rq->resource, PK_CLAIM_RESOURCE) == 0) {
		review_claim(cfg, endpoint, rq, v);
	} else if (capi && strcmp(rq->resource, PK_ADDRESS_RESOURCE) == 0) {
		review_ipaddress(cfg, endpoint, rq, v);
	} else {
		char q[300];
		char r[400];
		snprintf(r, sizeof(r), "%s/%s/%s", rq->group, rq->version, rq->resource);
		pk_text_quote(r, strlen(r), q, sizeof(q));
		deny(v, 400, "poolkeeper-webhook does not handle resource \"%s\"", q);
	}
}

/* The AdmissionReview that answers request `rq` with verdict `v`. */
static json_t *respond(const struct request *rq, const struct verdict *v)
{
	json_t *resp = json_object();
	json_object_set_new(resp, "uid", json_string(rq->uid)); /* valid UTF-8: jansson parsed it */
	json_object_set_new(resp, "allowed", json_boolean(v->allowed));
	if (!v->allowed) {
		json_t *st = json_object();
		json_object_set_new(st, "code", json_integer(v->code));
		json_object_set_new(st, "reason",
		                    json_string(v->code == 403   ? "Forbidden"
		                                : v->code == 400 ? "BadRequest"
		                                                 : "InternalError"));
		json_object_set_new(st, "message", jstr(v->message));
		json_object_set_new(resp, "status", st);
	}
	if (json_array_size(v->warnings) > 0)
		json_object_set(resp, "warnings", v->warnings);
	if (v->allowed && v->patch != NULL) {
		char *text = json_dumps(v->patch, JSON_COMPACT);
		char *enc = text != NULL ? pk_base64_encode(text, strlen(text)) : NULL;
		if (enc != NULL) {
			json_object_set_new(resp, "patchType", json_string("JSONPatch"));
			json_object_set_new(resp, "patch", json_string(enc));
		}
		free(text);
		free(enc);
	}
	json_t *review = json_object();
	json_object_set_new(review, "apiVersion", json_string(PK_ADMISSION_API_VERSION));
	json_object_set_new(review, "kind", json_string(PK_ADMISSION_REVIEW_KIND));
	json_object_set_new(review, "response", resp);
	return review;
}

void pk_admission_review(const struct pk_admission_config *cfg, enum pk_admission_endpoint endpoint,
                         const char *body, size_t len, int *http_status, json_t **response)
{
	struct request rq;
	*response = NULL;
	json_t *root = load_body(body, len, http_status, response);
	if (root == NULL)
		return;
	memset(&rq, 0, sizeof(rq));
	if (parse_request(root, &rq, http_status, response)) {
		struct verdict v = {.allowed = true, .code = 200};
		v.warnings = json_array();
		dispatch(cfg, endpoint, &rq, &v);
		if (endpoint == PK_ADMISSION_MUTATE && !v.allowed) {
			/* a mutation never denies; the validating call reports it */
			v.allowed = true;
		}
		*response = respond(&rq, &v);
		*http_status = 200;
		json_decref(v.warnings);
		json_decref(v.patch);
	}
	json_decref(root);
}
