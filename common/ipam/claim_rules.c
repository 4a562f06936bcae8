/*
 * claim_rules.c - an IPAddressClaim's contract rules (owner references,
 * spec.clusterName, spec.poolRef), the enforcement modes they run under,
 * and the repair the mutating webhook and lint make.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "pool_ref.h"
#include "rules.h"
#include "rules_util.h"

/* spec.clusterName: 1-63 characters (IPAddressClaim v1beta2). */
#define CLUSTER_NAME_MAX 63

struct owner_scan {
	const json_t *refs;  /* the array; NULL when missing, empty or not an array */
	bool well_formed;    /* every reference is */
	long controller;     /* the first reference with controller: true; -1: none */
	bool controller_bod; /* ... and it has blockOwnerDeletion: true */
	long bod_only;       /* the first with blockOwnerDeletion: true but not controller */
};

static const char OWNER_NEEDED[] = "the claim needs an owner reference to its infrastructure "
                                   "machine with controller: true and blockOwnerDeletion: true";

/*
 * Reference i as the apiserver requires it ("apiVersion, kind, name and uid
 * must not be empty", ownerReferences validation) and with boolean flags;
 * each thing wrong is a DENY naming its field.
 */
static bool owner_ref_well_formed(const json_t *r, size_t i, int *c, int *b,
                                  struct pk_violations *out)
{
	static const char *const keys[] = {"apiVersion", "kind", "name", "uid"};
	char desc[DESC_MAX], field[PK_FIELD_MAX];
	bool ok = true;

	*c = *b = 0;
	if (!json_is_object(r)) {
		snprintf(field, sizeof(field), "metadata.ownerReferences[%zu]", i);
		pk_violations_add(out, PK_SEV_DENY, field, "must be an object, got %s",
		                  pk_violation_describe_value(r, true, desc, sizeof(desc)));
		return false;
	}
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const json_t *v = json_object_get(r, keys[k]);
		if (json_is_string(v) && json_string_length(v) > 0)
			continue;
		snprintf(field, sizeof(field), "metadata.ownerReferences[%zu].%s", i, keys[k]);
		if (v != NULL && !json_is_null(v) && !json_is_string(v))
			pk_violations_add(out, PK_SEV_DENY, field, "must be a string, got %s",
			                  pk_violation_describe_value(v, true, desc, sizeof(desc)));
		else
			pk_violations_add(out, PK_SEV_DENY, field,
			                  "required: an owner reference names its owner by "
			                  "apiVersion, kind, name and uid");
		ok = false;
	}
	*c = rules_util_ref_flag(r, i, "controller", out);
	*b = rules_util_ref_flag(r, i, "blockOwnerDeletion", out);
	return ok && *c >= 0 && *b >= 0;
}

static void scan_owners(const json_t *claim, struct owner_scan *sc, struct pk_violations *out)
{
	sc->well_formed = true;
	sc->controller = sc->bod_only = -1;
	sc->controller_bod = false;
	sc->refs = rules_util_owner_refs(claim, OWNER_NEEDED, out);
	for (size_t i = 0; i < json_array_size(sc->refs); i++) {
		int c, b;
		if (!owner_ref_well_formed(json_array_get(sc->refs, i), i, &c, &b, out)) {
			sc->well_formed = false;
			continue;
		}
		if (c == 1 && sc->controller < 0) {
			sc->controller = (long)i;
			sc->controller_bod = b == 1;
		} else if (c == 0 && b == 1 && sc->bod_only < 0) {
			sc->bod_only = (long)i;
		}
	}
}

/* `Kind "a", Kind "b"` of the first few references, for messages. */
static const char *refs_text(const json_t *refs, char *buf, size_t len)
{
	char rt[2 * QUOTE_MAX];
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < json_array_size(refs); i++) {
		const char *t =
		    i == 4 ? "..." : rules_util_ref_text(json_array_get(refs, i), rt, sizeof(rt));
		int w = snprintf(buf + o, len - o, "%s%s", i ? ", " : "", t);
		if (w < 0 || (size_t)w >= len - o || i == 4)
			break;
		o += (size_t)w;
	}
	return buf;
}

/*
 * "The consumer must create the claim with an owner reference to its
 * infrastructure machine, with controller: true and blockOwnerDeletion:
 * true" (CAPI book, IPAM contract), so deleting the machine waits for the
 * claim and its address to be gone. With `lenient` (repair mode), a
 * controller reference without blockOwnerDeletion is a WARN: the mutating
 * webhook sets it whenever the requester may, so one left without it could
 * not be set.
 */
static void check_claim_owners(const json_t *claim, bool lenient, struct pk_violations *out)
{
	char rt[2 * QUOTE_MAX], list[4 * QUOTE_MAX];
	struct owner_scan sc;

	scan_owners(claim, &sc, out);
	if (sc.refs == NULL || !sc.well_formed || (sc.controller >= 0 && sc.controller_bod))
		return;
	size_t n = json_array_size(sc.refs);
	if (sc.controller >= 0) {
		char field[PK_FIELD_MAX];
		const json_t *r = json_array_get(sc.refs, (size_t)sc.controller);
		snprintf(field, sizeof(field), "metadata.ownerReferences[%ld].blockOwnerDeletion",
		         sc.controller);
		if (lenient)
			pk_violations_add(out, PK_SEV_WARN, field,
			                  "the controller reference %s has no blockOwnerDeletion: "
			                  "true, so deleting it does not wait for the claim to be "
			                  "gone; its provider should set it",
			                  rules_util_ref_text(r, rt, sizeof(rt)));
		else
			pk_violations_add(
			    out, PK_SEV_DENY, field,
			    "the controller reference %s must set blockOwnerDeletion: "
			    "true, so that deleting it waits for the claim to be gone",
			    rules_util_ref_text(r, rt, sizeof(rt)));
	} else if (n > 1) {
		pk_violations_add(out, PK_SEV_DENY, "metadata.ownerReferences",
		                  "%zu owner references and none is the controller: %s; set "
		                  "controller: true and blockOwnerDeletion: true on the reference "
		                  "to the infrastructure machine",
		                  n, refs_text(sc.refs, list, sizeof(list)));
	} else if (sc.bod_only >= 0) {
		pk_violations_add(out, PK_SEV_DENY, "metadata.ownerReferences",
		                  "no owner reference has controller: true; set controller: true "
		                  "on the reference to the infrastructure machine (%s has only "
		                  "blockOwnerDeletion: true)",
		                  rules_util_ref_text(json_array_get(sc.refs, 0), rt, sizeof(rt)));
	} else {
		pk_violations_add(out, PK_SEV_DENY, "metadata.ownerReferences",
		                  "no owner reference has controller: true and blockOwnerDeletion: "
		                  "true; %s",
		                  OWNER_NEEDED);
	}
}

/*
 * spec.clusterName (1-63 characters), or its deprecated predecessor, the
 * cluster.x-k8s.io/cluster-name label, which passes with a WARN (the
 * webhook copies it into an empty spec.clusterName on CREATE).
 */
static void check_claim_cluster(const json_t *claim, const json_t *spec, struct pk_violations *out)
{
	char desc[DESC_MAX], q[QUOTE_MAX];
	const json_t *cn = json_object_get(spec, "clusterName");

	if (cn != NULL && !json_is_null(cn) && !json_is_string(cn)) {
		pk_violations_add(out, PK_SEV_DENY, "spec.clusterName", "must be a string, got %s",
		                  pk_violation_describe_value(cn, true, desc, sizeof(desc)));
		return;
	}
	if (json_is_string(cn) && json_string_length(cn) > CLUSTER_NAME_MAX) {
		pk_violations_add(out, PK_SEV_DENY, "spec.clusterName",
		                  "\"%s\" is %zu characters long; a Cluster name has 1-%d",
		                  rules_util_quote(cn, q, sizeof(q)), json_string_length(cn),
		                  CLUSTER_NAME_MAX);
		return;
	}
	if (json_is_string(cn) && json_string_length(cn) > 0)
		return;
	bool from_label = false;
	const char *label = pk_rules_claim_cluster_name(claim, &from_label);
	if (label != NULL && from_label) {
		pk_text_quote(label, strlen(label), q, sizeof(q));
		pk_violations_add(out, PK_SEV_WARN, "spec.clusterName",
		                  "empty; the label %s=\"%s\" is deprecated; set spec.clusterName: "
		                  "\"%s\"",
		                  PK_CLUSTER_NAME_LABEL, q, q);
		return;
	}
	pk_violations_add(out, PK_SEV_DENY, "spec.clusterName",
	                  "required: set it to the name of the Cluster the claim belongs to (the "
	                  "deprecated label %s is accepted too)",
	                  PK_CLUSTER_NAME_LABEL);
}

static void check_claim(const json_t *claim, const json_t *old, bool lenient,
                        struct pk_violations *out)
{
	int version;
	const json_t *spec = rules_util_capi_object_spec(claim, old, PK_CLAIM_KIND,
	                                                 "poolRef and clusterName", &version, out);
	if (spec != NULL) {
		const json_t *kind, *name;
		check_claim_cluster(claim, spec, out);
		rules_util_check_pool_ref(spec, version, &kind, &name, out);
	}
	if (json_is_object(claim) && old == NULL)
		check_claim_owners(claim, lenient, out);
}

const char *pk_rules_claim_cluster_name(const json_t *claim, bool *from_label)
{
	const json_t *labels = json_object_get(json_object_get(claim, "metadata"), "labels");
	const char *n = pk_json_cstr_at(json_object_get(claim, "spec"), "clusterName");
	*from_label = false;
	if (n != NULL && n[0] != '\0')
		return n;
	n = pk_json_cstr_at(labels, PK_CLUSTER_NAME_LABEL);
	if (n == NULL || n[0] == '\0')
		return NULL;
	*from_label = true;
	return n;
}

enum pk_enforcement pk_rules_claim_enforcement(const json_t *claim, enum pk_enforcement claims,
                                               enum pk_enforcement foreign_claims, bool *ours)
{
	/* "Ours" by group: an unknown kind of ipam.poolkeeper.io is our violation. */
	bool mine = pk_pool_ref_is_poolkeeper_group(
	    json_object_get(json_object_get(claim, "spec"), "poolRef"));
	if (ours != NULL)
		*ours = mine;
	return mine ? claims : foreign_claims;
}

void pk_rules_check_claim(const json_t *claim, const json_t *old, struct pk_violations *out)
{
	check_claim(claim, old, false, out);
}

/* Appends `suffix` to a message, cutting the message (never the suffix) to fit. */
static void append_suffix(char *msg, size_t cap, const char *suffix)
{
	size_t n = strlen(msg), k = strlen(suffix);
	if (k >= cap)
		return;
	if (n + k >= cap)
		n = cap - 1 - k;
	memcpy(msg + n, suffix, k + 1);
}

void pk_rules_check_claim_mode(const json_t *claim, const json_t *old, enum pk_enforcement mode,
                               struct pk_violations *out)
{
	struct pk_violations vs;
	char hint[160];
	size_t last = SIZE_MAX;

	if (mode == PK_ENFORCE_IGNORE)
		return;
	pk_violations_init(&vs);
	check_claim(claim, old, mode == PK_ENFORCE_REPAIR, &vs);
	bool ours;
	(void)pk_rules_claim_enforcement(claim, mode, mode, &ours);
	snprintf(hint, sizeof(hint), " [%s mode \"%s\"; change it with %s]",
	         ours ? "claim enforcement" : "foreign claims",
	         mode == PK_ENFORCE_REPAIR ? "repair" : "deny",
	         ours ? "--claim-enforcement, chart value webhook.claimEnforcement"
	              : "--foreign-claims, chart value webhook.foreignClaims");
	for (size_t i = 0; i < vs.n; i++) {
		struct pk_violation *x = &vs.items[i];
		if (x->severity != PK_SEV_DENY)
			continue;
		if (mode == PK_ENFORCE_WARN) {
			char m[PK_MESSAGE_MAX + 32];
			snprintf(m, sizeof(m), "would be denied: %s", x->message);
			memcpy(x->message, m, sizeof(x->message) - 1); /* cut to the cap */
			x->message[sizeof(x->message) - 1] = '\0';
			x->severity = PK_SEV_WARN;
		} else {
			last = i;
		}
	}
	if (last != SIZE_MAX)
		append_suffix(vs.items[last].message, sizeof(vs.items[last].message), hint);
	for (size_t i = 0; i < vs.n; i++)
		pk_violations_add(out, vs.items[i].severity, vs.items[i].field, "%s",
		                  vs.items[i].message);
	out->dropped += vs.dropped;
}

/* ---------------------------------------------------------- claim repair */

void pk_rules_plan_claim_repair(const json_t *claim, enum pk_enforcement mode,
                                struct pk_claim_repair *plan)
{
	memset(plan, 0, sizeof(*plan));
	plan->candidate = -1;
	const json_t *spec = json_object_get(claim, "spec");
	if (mode == PK_ENFORCE_IGNORE || !json_is_object(claim) || !json_is_object(spec) ||
	    pk_pool_kind_of_ref(json_object_get(spec, "poolRef")) == NULL)
		return;

	/* spec.clusterName empty, the deprecated label set: copy it (CAPI's own
	 * defaulting did the same while the label was the only source). */
	const json_t *cn = json_object_get(spec, "clusterName");
	bool from_label = false;
	const char *label = pk_rules_claim_cluster_name(claim, &from_label);
	if ((cn == NULL || (json_is_string(cn) && json_string_length(cn) == 0)) && from_label) {
		plan->cluster_name = label;
		plan->cluster_name_replace = cn != NULL;
	}

	struct owner_scan sc;
	struct pk_violations scratch;
	pk_violations_init(&scratch);
	scan_owners(claim, &sc, &scratch);
	if (sc.refs == NULL || !sc.well_formed)
		return;
	if (sc.controller >= 0)
		plan->candidate = sc.controller;
	else if (json_array_size(sc.refs) == 1)
		plan->candidate = 0;
	if (plan->candidate < 0 || mode != PK_ENFORCE_REPAIR)
		return;
	plan->set_controller = sc.controller < 0;
	plan->set_block_owner_deletion = sc.controller < 0 || !sc.controller_bod;
	if (sc.controller < 0 && sc.bod_only == 0)
		plan->set_block_owner_deletion = false; /* it has it already */
}

bool pk_rules_claim_repair_any(const struct pk_claim_repair *plan)
{
	return plan->set_controller || plan->set_block_owner_deletion || plan->cluster_name != NULL;
}

int pk_rules_apply_claim_repair(json_t *claim, const struct pk_claim_repair *plan)
{
	if (plan->set_controller || plan->set_block_owner_deletion) {
		json_t *refs =
		    json_object_get(json_object_get(claim, "metadata"), "ownerReferences");
		json_t *ref =
		    plan->candidate < 0 ? NULL : json_array_get(refs, (size_t)plan->candidate);
		if (!json_is_object(ref))
			return PK_ERR_INVALID;
		if (plan->set_controller &&
		    json_object_set_new(ref, "controller", json_true()) != 0)
			return PK_ERR_NOMEM;
		if (plan->set_block_owner_deletion &&
		    json_object_set_new(ref, "blockOwnerDeletion", json_true()) != 0)
			return PK_ERR_NOMEM;
	}
	if (plan->cluster_name != NULL) {
		json_t *spec = json_object_get(claim, "spec");
		if (!json_is_object(spec))
			return PK_ERR_INVALID;
		if (json_object_set_new(spec, "clusterName", json_string(plan->cluster_name)) != 0)
			return PK_ERR_NOMEM;
	}
	return PK_OK;
}

void pk_rules_note_claim_repair(const json_t *claim, const struct pk_claim_repair *plan,
                                enum pk_enforcement mode, struct pk_violations *out)
{
	if (plan->set_controller || plan->set_block_owner_deletion) {
		const json_t *refs =
		    json_object_get(json_object_get(claim, "metadata"), "ownerReferences");
		const json_t *ref = json_array_get(refs, (size_t)plan->candidate);
		const json_t *kind = json_object_get(ref, "kind");
		char field[PK_FIELD_MAX], rt[2 * QUOTE_MAX], k[QUOTE_MAX];
		bool both = plan->set_controller && plan->set_block_owner_deletion;
		snprintf(field, sizeof(field), "metadata.ownerReferences[%ld]", plan->candidate);
		pk_violations_add(out, PK_SEV_WARN, field,
		                  "set %s on the owner reference to %s; %s's provider should set "
		                  "%s itself",
		                  both ? "controller: true and blockOwnerDeletion: true"
		                  : plan->set_controller ? "controller: true"
		                                         : "blockOwnerDeletion: true",
		                  rules_util_ref_text(ref, rt, sizeof(rt)),
		                  json_is_string(kind) ? rules_util_quote(kind, k, sizeof(k)) : "?",
		                  both ? "them" : "it");
	}
	if (plan->cluster_name != NULL && mode != PK_ENFORCE_REPAIR)
		pk_violations_add(out, PK_SEV_WARN, "spec.clusterName",
		                  "was empty and was set from the deprecated label %s; set "
		                  "spec.clusterName in the claim instead",
		                  PK_CLUSTER_NAME_LABEL);
}
