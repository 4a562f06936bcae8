/*
 * rules_util.c - what the contract rule files share (rules_util.h), the
 * checks every CAPI IPAM object starts with (its apiVersion and kind, an
 * immutable spec, spec.poolRef, owner references), which pool references
 * are poolkeeper's, and the enforcement modes' names.
 *
 * No JSON type is assumed: a CRD schema may not have run (the CLI lints
 * files; a webhook may see objects before any schema does), so a string
 * where a boolean belongs is a violation, never a crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "pool_ref.h"
#include "rules.h"
#include "rules_util.h"
#include "suggest.h"

/* Field paths deeper than this are reported at this depth in immutability denials. */
#define CHANGE_DEPTH_MAX 8

const char *rules_util_quote(const json_t *s, char *buf, size_t len)
{
	pk_text_quote(json_string_value(s), json_string_length(s), buf, len);
	return buf;
}

/* True when `s` is a JSON string equal to the C string `want`. */
bool rules_util_json_is(const json_t *s, const char *want)
{
	return json_is_string(s) && json_string_length(s) == strlen(want) &&
	       memcmp(json_string_value(s), want, json_string_length(s)) == 0;
}

/* True when the JSON strings a and b are equal (embedded NULs included). */
bool rules_util_json_equal(const json_t *a, const json_t *b)
{
	return json_is_string(a) && json_is_string(b) &&
	       json_string_length(a) == json_string_length(b) &&
	       memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
}

/*
 * A required, non-empty string member; DENY and NULL when it is missing,
 * of another type, empty, longer than `max` or holding a NUL.
 */
const json_t *rules_util_require_string(const json_t *obj, const char *key, const char *field,
                                        size_t max, const char *hint, struct pk_violations *out)
{
	char desc[DESC_MAX], q[QUOTE_MAX];
	const json_t *s = json_object_get(obj, key);

	if (s == NULL || json_is_null(s)) {
		pk_violations_add(out, PK_SEV_DENY, field, "required: %s", hint);
		return NULL;
	}
	if (!json_is_string(s)) {
		pk_violations_add(out, PK_SEV_DENY, field, "must be a string, got %s",
		                  pk_violation_describe_value(s, true, desc, sizeof(desc)));
		return NULL;
	}
	if (json_string_length(s) == 0) {
		pk_violations_add(out, PK_SEV_DENY, field, "must not be empty: %s", hint);
		return NULL;
	}
	if (json_string_length(s) > max) {
		pk_violations_add(out, PK_SEV_DENY, field,
		                  "\"%s\" is %zu characters long; at most %zu are allowed",
		                  rules_util_quote(s, q, sizeof(q)), json_string_length(s), max);
		return NULL;
	}
	/* a NUL would cut the C string the rest of poolkeeper reads (json.h) */
	if (pk_json_has_nul(s)) {
		pk_violations_add(out, PK_SEV_DENY, field,
		                  "\"%s\" holds a NUL character (\\u0000) at byte %zu: %s",
		                  rules_util_quote(s, q, sizeof(q)), strlen(json_string_value(s)),
		                  hint);
		return NULL;
	}
	return s;
}

void rules_util_check_meta_names(const json_t *obj, struct pk_violations *out)
{
	static const char *const keys[] = {"name", "namespace", "generateName"};
	char field[32], q[QUOTE_MAX];
	const json_t *meta = json_object_get(obj, "metadata");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const json_t *s = json_object_get(meta, keys[i]);
		if (!pk_json_has_nul(s))
			continue;
		snprintf(field, sizeof(field), "metadata.%s", keys[i]);
		/* "a lowercase RFC 1123 subdomain" (k8s.io/apimachinery, IsDNS1123Subdomain) */
		pk_violations_add(
		    out, PK_SEV_DENY, field,
		    "\"%s\" holds a NUL character (\\u0000) at byte %zu; a name is a "
		    "DNS subdomain (lower-case letters, digits, '-' and '.') and never "
		    "holds one",
		    rules_util_quote(s, q, sizeof(q)), strlen(json_string_value(s)));
	}
}

/*
 * apiVersion and kind of a CAPI IPAM object; returns 1 or 2 for v1beta1 or
 * v1beta2, 0 (after a DENY) for anything else.
 */
static int capi_version(const json_t *obj, const char *kind, struct pk_violations *out)
{
	char desc[DESC_MAX];
	const json_t *k = json_object_get(obj, "kind");
	const json_t *api = json_object_get(obj, "apiVersion");

	if (!rules_util_json_is(k, kind))
		pk_violations_add(out, PK_SEV_DENY, "kind", "must be %s, got %s", kind,
		                  pk_violation_describe_value(k, false, desc, sizeof(desc)));
	if (rules_util_json_is(api, PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA1))
		return 1;
	if (rules_util_json_is(api, PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2))
		return 2;
	pk_violations_add(out, PK_SEV_DENY, "apiVersion", "must be %s or %s, got %s",
	                  PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA1,
	                  PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2,
	                  pk_violation_describe_value(api, false, desc, sizeof(desc)));
	return 0;
}

/*
 * "The spec is immutable" (CAPI's own webhooks for IPAddressClaim and
 * IPAddress): on UPDATE the new spec must equal the stored one. The DENY
 * names the first field that differs.
 */
static void check_spec_immutable(const json_t *obj, const json_t *old, const char *kind,
                                 struct pk_violations *out)
{
	const json_t *a = json_object_get(obj, "spec");
	const json_t *b = json_object_get(old, "spec");
	char field[PK_FIELD_MAX] = "spec";

	if (a == NULL && b == NULL)
		return;
	if (a != NULL && b != NULL && json_equal(a, b))
		return;
	for (int depth = 0; depth < CHANGE_DEPTH_MAX && json_is_object(a) && json_is_object(b);
	     depth++) {
		const char *key = NULL, *k;
		const json_t *x;
		json_object_foreach((json_t *)(uintptr_t)a, k, x)
		{
			const json_t *y = json_object_get(b, k);
			if (y == NULL || !json_equal(x, y)) {
				key = k;
				break;
			}
		}
		if (key == NULL) {
			json_object_foreach((json_t *)(uintptr_t)b, k, x)
			{
				if (json_object_get(a, k) == NULL) {
					key = k;
					break;
				}
			}
		}
		if (key == NULL)
			break;
		char q[QUOTE_MAX];
		size_t o = strlen(field);
		pk_text_quote(key, strlen(key), q, sizeof(q));
		if (o + 1 + strlen(q) >= sizeof(field))
			break;
		field[o] = '.';
		memcpy(field + o + 1, q, strlen(q) + 1);
		a = json_object_get(a, key);
		b = json_object_get(b, key);
	}
	char was[DESC_MAX], now[DESC_MAX];
	pk_violations_add(out, PK_SEV_DENY, field,
	                  "spec is immutable: changed from %s to %s; delete and re-create the %s "
	                  "to change it",
	                  pk_violation_describe_value(b, false, was, sizeof(was)),
	                  pk_violation_describe_value(a, false, now, sizeof(now)), kind);
}

const struct pk_pool_kind *rules_util_pool_kind(const json_t *kind)
{
	size_t n;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&n);
	for (size_t i = 0; i < n; i++)
		if (rules_util_json_is(kind, kinds[i].kind))
			return &kinds[i];
	return NULL;
}

const char *rules_util_pool_kinds_text(char *buf, size_t len)
{
	size_t n, o = 0;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&n);
	buf[0] = '\0';
	for (size_t i = 0; i < n && o < len; i++) {
		int w = snprintf(buf + o, len - o, "%s%s",
		                 i == 0      ? ""
		                 : i + 1 < n ? ", "
		                             : " or ",
		                 kinds[i].kind);
		o += w > 0 ? (size_t)w : 0;
	}
	return buf;
}

/*
 * The poolkeeper kind an unknown kind most likely meant: the one it equals
 * ignoring case, else the one within an edit distance of 3 (the nearer;
 * the first in the table on a tie), else any of them (in buf).
 */
static const char *closest_pool_kind(const json_t *kind, char *buf, size_t len)
{
	size_t nk;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&nk);
	const char *k = json_string_value(kind);
	size_t n = json_string_length(kind), best = SIZE_MAX, at = 0;
	for (size_t i = 0; i < nk; i++) {
		const char *name = kinds[i].kind;
		if (n == strlen(name) && strncasecmp(k, name, n) == 0)
			return name;
		size_t d = pk_edit_distance(k, n, name, strlen(name));
		if (d < best) {
			best = d;
			at = i;
		}
	}
	return best <= 3 ? kinds[at].kind : rules_util_pool_kinds_text(buf, len);
}

/*
 * spec.poolRef: kind and name required; apiGroup required in v1beta2. In
 * v1beta1 a missing apiGroup is a WARN: such a reference names a core-group
 * object, never a poolkeeper pool, and whether foreign claims are refused
 * is the webhook's decision (--foreign-claims), not this rule's.
 */
void rules_util_check_pool_ref(const json_t *spec, int version, const json_t **kind,
                               const json_t **name, struct pk_violations *out)
{
	char desc[DESC_MAX];
	const json_t *r = json_object_get(spec, "poolRef");

	*kind = *name = NULL;
	if (r == NULL || json_is_null(r)) {
		pk_violations_add(out, PK_SEV_DENY, "spec.poolRef",
		                  "required: name the pool with apiGroup (%s for poolkeeper "
		                  "pools), kind and name",
		                  PK_POOL_GROUP);
		return;
	}
	if (!json_is_object(r)) {
		pk_violations_add(out, PK_SEV_DENY, "spec.poolRef",
		                  "must be an object with apiGroup, kind and name, got %s",
		                  pk_violation_describe_value(r, true, desc, sizeof(desc)));
		return;
	}
	const json_t *g = json_object_get(r, "apiGroup");
	if (g != NULL && !json_is_null(g) && !json_is_string(g)) {
		pk_violations_add(out, PK_SEV_DENY, "spec.poolRef.apiGroup",
		                  "must be a string, got %s",
		                  pk_violation_describe_value(g, true, desc, sizeof(desc)));
	} else if (g == NULL || json_is_null(g) || json_string_length(g) == 0) {
		if (version == 1)
			pk_violations_add(out, PK_SEV_WARN, "spec.poolRef.apiGroup",
			                  "not set: a poolRef without apiGroup names a core-group "
			                  "object, never a pool; set it (%s for poolkeeper pools), "
			                  "%s/" PK_CAPI_V1BETA2 " requires it",
			                  PK_POOL_GROUP, PK_CAPI_IPAM_GROUP);
		else
			pk_violations_add(
			    out, PK_SEV_DENY, "spec.poolRef.apiGroup",
			    "required: the pool's API group (%s for poolkeeper pools)",
			    PK_POOL_GROUP);
	}
	bool ours = rules_util_json_is(g, PK_POOL_GROUP);
	size_t nk;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&nk);
	char names[POOL_KINDS_TEXT_MAX], hint[POOL_KINDS_TEXT_MAX + 128];
	rules_util_pool_kinds_text(names, sizeof(names));
	if (ours)
		snprintf(hint, sizeof(hint), "the kind of a pool of %s (%s); did you mean %s?",
		         PK_POOL_GROUP, names, kinds[0].kind);
	else
		snprintf(hint, sizeof(hint), "the pool's kind (%s for poolkeeper pools)", names);
	*kind = rules_util_require_string(r, "kind", "spec.poolRef.kind", NAME_MAX_LEN, hint, out);
	if (ours && *kind != NULL && pk_pool_kind_of_ref(r) == NULL) {
		char q[QUOTE_MAX];
		pk_violations_add(out, PK_SEV_DENY, "spec.poolRef.kind",
		                  "\"%s\" is not a kind of %s; did you mean %s?",
		                  rules_util_quote(*kind, q, sizeof(q)), PK_POOL_GROUP,
		                  closest_pool_kind(*kind, names, sizeof(names)));
		*kind = NULL;
	}
	*name = rules_util_require_string(r, "name", "spec.poolRef.name", NAME_MAX_LEN,
	                                  "the pool's name", out);
}

/* metadata.ownerReferences as an array, or NULL after a DENY. */
const json_t *rules_util_owner_refs(const json_t *obj, const char *needed,
                                    struct pk_violations *out)
{
	char desc[DESC_MAX];
	const json_t *meta = json_object_get(obj, "metadata");

	if (meta != NULL && !json_is_object(meta)) {
		pk_violations_add(out, PK_SEV_DENY, "metadata", "must be an object, got %s",
		                  pk_violation_describe_value(meta, true, desc, sizeof(desc)));
		return NULL;
	}
	const json_t *refs = json_object_get(meta, "ownerReferences");
	if (refs == NULL || json_is_null(refs)) {
		pk_violations_add(out, PK_SEV_DENY, "metadata.ownerReferences", "required: %s",
		                  needed);
		return NULL;
	}
	if (!json_is_array(refs)) {
		pk_violations_add(out, PK_SEV_DENY, "metadata.ownerReferences",
		                  "must be an array of owner references, got %s",
		                  pk_violation_describe_value(refs, true, desc, sizeof(desc)));
		return NULL;
	}
	if (json_array_size(refs) == 0) {
		pk_violations_add(out, PK_SEV_DENY, "metadata.ownerReferences", "is empty: %s",
		                  needed);
		return NULL;
	}
	return refs;
}

/* controller / blockOwnerDeletion of reference i: 1 true, 0 false or absent, -1 wrong type. */
int rules_util_ref_flag(const json_t *ref, size_t i, const char *key, struct pk_violations *out)
{
	char desc[DESC_MAX], field[PK_FIELD_MAX];
	const json_t *f = json_object_get(ref, key);

	if (f == NULL || json_is_null(f) || json_is_false(f))
		return 0;
	if (json_is_true(f))
		return 1;
	snprintf(field, sizeof(field), "metadata.ownerReferences[%zu].%s", i, key);
	pk_violations_add(out, PK_SEV_DENY, field, "must be a boolean (true or false), got %s",
	                  pk_violation_describe_value(f, true, desc, sizeof(desc)));
	return -1;
}

/* `Kind "name"` of an owner reference, for messages. */
const char *rules_util_ref_text(const json_t *ref, char *buf, size_t len)
{
	char k[QUOTE_MAX], n[QUOTE_MAX];
	const json_t *kind = json_object_get(ref, "kind"), *name = json_object_get(ref, "name");
	if (snprintf(buf, len, "%s \"%s\"",
	             json_is_string(kind) ? rules_util_quote(kind, k, sizeof(k)) : "?",
	             json_is_string(name) ? rules_util_quote(name, n, sizeof(n)) : "?") < 0)
		buf[0] = '\0';
	return buf;
}

/*
 * What a claim and an IPAddress check first: that the object is one, that
 * an UPDATE changes no spec (and nothing else is checked then: finalizers,
 * annotations and owner references rewritten by the garbage collector or
 * clusterctl move must always pass, or deletion and move would be
 * blocked), its apiVersion and kind, and that spec is an object. Returns
 * the spec to check further, or NULL when there is nothing more to check
 * (*version is set whenever the object is one).
 */
const json_t *rules_util_capi_object_spec(const json_t *obj, const json_t *old, const char *kind,
                                          const char *spec_hint, int *version,
                                          struct pk_violations *out)
{
	char desc[DESC_MAX];

	*version = 0;
	if (!json_is_object(obj)) {
		pk_violations_add(out, PK_SEV_DENY, "object", "an %s must be a JSON object, got %s",
		                  kind, pk_violation_describe_value(obj, true, desc, sizeof(desc)));
		return NULL;
	}
	if (old != NULL) {
		check_spec_immutable(obj, old, kind, out);
		return NULL;
	}
	rules_util_check_meta_names(obj, out);
	*version = capi_version(obj, kind, out);
	const json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec)) {
		pk_violations_add(out, PK_SEV_DENY, "spec", "must be an object with %s, got %s",
		                  spec_hint,
		                  pk_violation_describe_value(spec, true, desc, sizeof(desc)));
		return NULL;
	}
	return spec;
}

bool pk_rules_is_capi_ipam_version(const char *version)
{
	return version != NULL &&
	       (strcmp(version, PK_CAPI_V1BETA1) == 0 || strcmp(version, PK_CAPI_V1BETA2) == 0);
}

bool pk_rules_is_capi_served_version(const char *version)
{
	return pk_rules_is_capi_ipam_version(version) ||
	       (version != NULL && strcmp(version, PK_CAPI_V1ALPHA1) == 0);
}

int pk_rules_parse_enforcement(const char *s, enum pk_enforcement *out)
{
	static const struct {
		const char *name;
		enum pk_enforcement mode;
	} modes[] = {{"repair", PK_ENFORCE_REPAIR},
	             {"deny", PK_ENFORCE_DENY},
	             {"warn", PK_ENFORCE_WARN},
	             {"ignore", PK_ENFORCE_IGNORE}};
	for (size_t i = 0; s != NULL && i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strcmp(s, modes[i].name) == 0) {
			*out = modes[i].mode;
			return PK_OK;
		}
	}
	return PK_ERR_INVALID;
}
