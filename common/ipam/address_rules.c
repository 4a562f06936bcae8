/*
 * address_rules.c - an IPAddress's contract rules, and an IPAddress against
 * its claim, its pool and the pool's other IPAddresses.
 */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "external_id.h"
#include "json.h"
#include "rules.h"
#include "rules_util.h"

/* IPAddress spec.address: 1-39 characters (CAPI's API types). */
#define IPADDRESS_TEXT_MAX 39

/*
 * The owner reference whose kind is `kind_c` (or, when NULL, equals the
 * JSON string `kind_j`) and whose name equals `name`; NULL when none.
 */
static const json_t *find_ref(const json_t *refs, const char *kind_c, const json_t *kind_j,
                              const json_t *name, size_t *at)
{
	for (size_t i = 0; i < json_array_size(refs); i++) {
		const json_t *r = json_array_get(refs, i);
		const json_t *k = json_object_get(r, "kind");
		bool kind_ok = kind_c != NULL ? rules_util_json_is(k, kind_c)
		                              : rules_util_json_equal(k, kind_j);
		if (kind_ok && rules_util_json_equal(json_object_get(r, "name"), name)) {
			*at = i;
			return r;
		}
	}
	return NULL;
}

/*
 * "Create the IPAddress with an owner reference to the claim (controller:
 * true, blockOwnerDeletion: true) and to the pool (controller: false,
 * blockOwnerDeletion: true)" (CAPI book, IPAM contract).
 */
/* DENY unless the reference `r` (index at) to `owner` (`Kind "name"`) sets `flag` true. */
static void require_ref_flag(const json_t *r, size_t at, const char *flag, const char *owner,
                             struct pk_violations *out)
{
	char field[PK_FIELD_MAX];
	if (rules_util_ref_flag(r, at, flag, out) != 0)
		return;
	snprintf(field, sizeof(field), "metadata.ownerReferences[%zu].%s", at, flag);
	pk_violations_add(out, PK_SEV_DENY, field, "the reference to %s must set %s: true", owner,
	                  flag);
}

static void check_ipaddress_owners(const json_t *addr, const json_t *claim_name,
                                   const json_t *pool_kind, const json_t *pool_name,
                                   struct pk_violations *out)
{
	char q[QUOTE_MAX], k[QUOTE_MAX], owner[2 * QUOTE_MAX + 16];
	const json_t *refs = rules_util_owner_refs(
	    addr,
	    "an IPAddress needs owner references to its IPAddressClaim (controller: true, "
	    "blockOwnerDeletion: true) and to its pool (blockOwnerDeletion: true)",
	    out);
	size_t at = 0;

	if (refs == NULL)
		return;
	if (claim_name != NULL) {
		const json_t *r = find_ref(refs, PK_CLAIM_KIND, NULL, claim_name, &at);
		rules_util_quote(claim_name, q, sizeof(q));
		snprintf(owner, sizeof(owner), PK_CLAIM_KIND " \"%s\"", q);
		if (r == NULL) {
			pk_violations_add(
			    out, PK_SEV_DENY, "metadata.ownerReferences",
			    "no owner reference to %s (spec.claimRef.name); add one with "
			    "controller: true and blockOwnerDeletion: true",
			    owner);
		} else {
			require_ref_flag(r, at, "controller", owner, out);
			require_ref_flag(r, at, "blockOwnerDeletion", owner, out);
		}
	}
	if (pool_kind != NULL && pool_name != NULL) {
		const json_t *r = find_ref(refs, NULL, pool_kind, pool_name, &at);
		rules_util_quote(pool_kind, k, sizeof(k));
		rules_util_quote(pool_name, q, sizeof(q));
		snprintf(owner, sizeof(owner), "the pool %s \"%s\"", k, q);
		if (r == NULL)
			pk_violations_add(out, PK_SEV_DENY, "metadata.ownerReferences",
			                  "no owner reference to %s (spec.poolRef); add one with "
			                  "blockOwnerDeletion: true",
			                  owner);
		else
			require_ref_flag(r, at, "blockOwnerDeletion", owner, out);
	}
}

/* spec.address: 1-39 characters that parse as an address. */
static bool ipaddress_address(const json_t *spec, struct pk_addr *a, struct pk_violations *out)
{
	struct pk_err err;
	const json_t *s = rules_util_require_string(
	    spec, "address", "spec.address", IPADDRESS_TEXT_MAX, "the allocated IP address", out);

	if (s == NULL)
		return false; /* a NUL in it too */
	if (pk_address_parse_n(json_string_value(s), json_string_length(s), a, "spec.address",
	                       &err) != PK_OK) {
		pk_violations_add(out, PK_SEV_DENY, "spec.address", "%s",
		                  pk_violation_detail(&err, "spec.address"));
		return false;
	}
	return true;
}

static void ipaddress_prefix_gateway(const json_t *spec, const struct pk_addr *a, bool have_addr,
                                     struct pk_violations *out)
{
	char desc[DESC_MAX], q[QUOTE_MAX], at[PK_ADDR_STRLEN];
	unsigned bits = have_addr ? pk_address_bits(a->family) : 128;
	const char *fam = have_addr ? pk_address_family_name(a->family) : "IPv4 or IPv6";

	const json_t *p = json_object_get(spec, "prefix");
	if (p == NULL || json_is_null(p))
		pk_violations_add(out, PK_SEV_DENY, "spec.prefix",
		                  "required: the prefix length of the address's subnet (0..%u for "
		                  "%s)",
		                  bits, fam);
	else if (!json_is_integer(p) || json_integer_value(p) < 0 ||
	         json_integer_value(p) > (json_int_t)bits)
		pk_violations_add(out, PK_SEV_DENY, "spec.prefix",
		                  "must be an integer 0..%u for %s, got %s", bits, fam,
		                  pk_violation_describe_value(p, true, desc, sizeof(desc)));

	const json_t *g = json_object_get(spec, "gateway");
	if (g == NULL || json_is_null(g))
		return;
	if (!json_is_string(g)) {
		pk_violations_add(out, PK_SEV_DENY, "spec.gateway",
		                  "must be a string (an IP address), got %s",
		                  pk_violation_describe_value(g, true, desc, sizeof(desc)));
		return;
	}
	if (json_string_length(g) == 0)
		return;
	struct pk_addr gw;
	struct pk_err err;
	rules_util_quote(g, q, sizeof(q));
	if (strlen(json_string_value(g)) != json_string_length(g)) {
		pk_violations_add(out, PK_SEV_DENY, "spec.gateway",
		                  "\"%s\" is not an IPv4 or IPv6 address", q);
		return;
	}
	if (pk_address_parse_n(json_string_value(g), json_string_length(g), &gw, "spec.gateway",
	                       &err) != PK_OK) {
		pk_violations_add(out, PK_SEV_DENY, "spec.gateway", "%s",
		                  pk_violation_detail(&err, "spec.gateway"));
		return;
	}
	if (have_addr && gw.family != a->family)
		pk_violations_add(out, PK_SEV_DENY, "spec.gateway",
		                  "\"%s\" is %s but spec.address %s is %s; both must be of one "
		                  "family",
		                  q, pk_address_family_name(gw.family), pk_address_format(a, at),
		                  pk_address_family_name(a->family));
}

/*
 * The external ID (external_id.h) is written when the IPAddress is created
 * and never changes: changed, a release could act on another's record.
 */
static void check_external_id_kept(const json_t *addr, const json_t *old, struct pk_violations *out)
{
	if (old == NULL || !json_is_object(addr) || pk_external_id_same(addr, old))
		return;
	char was[DESC_MAX], now[DESC_MAX];
	const json_t *a = pk_json_path(old, "metadata", "annotations", PK_EXTERNAL_ID_ANNOTATION);
	const json_t *b = pk_json_path(addr, "metadata", "annotations", PK_EXTERNAL_ID_ANNOTATION);
	pk_violations_add(out, PK_SEV_DENY,
	                  "metadata.annotations[\"" PK_EXTERNAL_ID_ANNOTATION "\"]",
	                  "is set by poolkeeper when it creates the IPAddress and may not change: "
	                  "was %s, now %s",
	                  a ? pk_violation_describe_value(a, false, was, sizeof(was)) : "not set",
	                  b ? pk_violation_describe_value(b, false, now, sizeof(now)) : "not set");
}

void pk_rules_check_ipaddress(const json_t *addr, const json_t *old, struct pk_violations *out)
{
	char desc[DESC_MAX];
	int version;
	check_external_id_kept(addr, old, out);
	const json_t *spec = rules_util_capi_object_spec(
	    addr, old, PK_ADDRESS_KIND, "address, prefix, claimRef and poolRef", &version, out);
	if (spec == NULL) {
		if (json_is_object(addr) && old == NULL)
			(void)rules_util_owner_refs(
			    addr, "an IPAddress needs owner references to its claim and pool", out);
		return;
	}
	struct pk_addr a;
	bool have_addr = ipaddress_address(spec, &a, out);
	ipaddress_prefix_gateway(spec, &a, have_addr, out);

	const json_t *claim_name = NULL;
	const json_t *claim_ref = json_object_get(spec, "claimRef");
	if (claim_ref != NULL && !json_is_null(claim_ref) && !json_is_object(claim_ref))
		pk_violations_add(out, PK_SEV_DENY, "spec.claimRef",
		                  "must be an object with the claim's name, got %s",
		                  pk_violation_describe_value(claim_ref, true, desc, sizeof(desc)));
	else if (claim_ref == NULL || json_is_null(claim_ref))
		pk_violations_add(out, PK_SEV_DENY, "spec.claimRef",
		                  "required: the IPAddressClaim this address was allocated for");
	else
		claim_name =
		    rules_util_require_string(claim_ref, "name", "spec.claimRef.name", NAME_MAX_LEN,
		                              "the IPAddressClaim's name", out);

	const json_t *pool_kind, *pool_name;
	rules_util_check_pool_ref(spec, version, &pool_kind, &pool_name, out);
	check_ipaddress_owners(addr, claim_name, pool_kind, pool_name, out);
}

/* ------------------------------------- an IPAddress against its claim and pool */

/* spec.address parsed, or false when it is missing or does not parse (reported elsewhere). */
static bool ipaddress_value(const json_t *addr, struct pk_addr *a, const json_t **text)
{
	*text = json_object_get(json_object_get(addr, "spec"), "address");
	return json_is_string(*text) &&
	       strlen(json_string_value(*text)) == json_string_length(*text) &&
	       pk_address_parse(json_string_value(*text), a, NULL, NULL) == PK_OK;
}

void pk_rules_check_ipaddress_claim(const json_t *addr, const json_t *claim,
                                    struct pk_violations *out)
{
	char q[QUOTE_MAX], k[QUOTE_MAX], n[QUOTE_MAX];
	const json_t *spec = json_object_get(addr, "spec");
	const json_t *name = json_object_get(json_object_get(spec, "claimRef"), "name");
	const json_t *ref = json_object_get(spec, "poolRef");
	if (!json_is_string(name) || !json_is_object(ref))
		return; /* pk_rules_check_ipaddress reports a missing claimRef or poolRef */
	rules_util_quote(name, q, sizeof(q));
	const json_t *cname = json_object_get(json_object_get(claim, "metadata"), "name");
	if (claim != NULL && json_is_string(cname) && !rules_util_json_equal(cname, name)) {
		char c[QUOTE_MAX];
		pk_violations_add(out, PK_SEV_DENY, "spec.claimRef.name",
		                  "\"%s\" is not IPAddressClaim \"%s\", which owns this IPAddress",
		                  q, rules_util_quote(cname, c, sizeof(c)));
		return;
	}
	const json_t *cref = json_object_get(json_object_get(claim, "spec"), "poolRef");
	static const char *const keys[] = {"apiGroup", "kind", "name"};
	bool same = claim != NULL;
	for (size_t i = 0; same && i < 3; i++)
		same = rules_util_json_equal(json_object_get(ref, keys[i]),
		                             json_object_get(cref, keys[i]));
	if (same)
		return;
	/* One message for "no such claim" and "a claim on another pool": it tells nothing
	 * about the claim that the IPAddress's own spec does not say. */
	const json_t *kind = json_object_get(ref, "kind"), *pool = json_object_get(ref, "name");
	pk_violations_add(out, PK_SEV_DENY, "spec.claimRef.name",
	                  "\"%s\" must name an IPAddressClaim of the IPAddress's namespace whose "
	                  "spec.poolRef is the IPAddress's pool (%s \"%s\"); there is no such "
	                  "claim",
	                  q, json_is_string(kind) ? rules_util_quote(kind, k, sizeof(k)) : "?",
	                  json_is_string(pool) ? rules_util_quote(pool, n, sizeof(n)) : "?");
}

void pk_rules_check_ipaddress_in_pool(const json_t *addr, const struct pk_pool *pool,
                                      const char *pool_name, bool allocated,
                                      struct pk_violations *out)
{
	struct pk_addr a;
	const json_t *text;
	char q[QUOTE_MAX], role[64] = "";
	if (pool == NULL || pool->usable == NULL || !ipaddress_value(addr, &a, &text))
		return;
	const char *why = NULL;
	enum pool_rules_holding h = pool_rules_holding(pool, &a, &why);
	if (h == HOLD_USABLE || (h == HOLD_DRAINED && allocated))
		return;
	if (h == HOLD_DRAINED)
		why = "in spec.excludedAddresses";
	if (why != NULL)
		snprintf(role, sizeof(role), " (it is %s)", why);
	pk_violations_add(
	    out, PK_SEV_DENY, "spec.address", "\"%s\" is not a usable address of %s%s",
	    rules_util_quote(text, q, sizeof(q)), pool_name != NULL ? pool_name : "its pool", role);
}

void pk_rules_check_ipaddress_unique(const json_t *addr, const char *const *others, size_t n,
                                     struct pk_violations *out)
{
	struct pk_addr a, b;
	const json_t *text;
	char q[QUOTE_MAX];
	if (others == NULL || !ipaddress_value(addr, &a, &text))
		return;
	for (size_t i = 0; i < n; i++) {
		if (others[i] == NULL || pk_address_parse(others[i], &b, NULL, NULL) != PK_OK ||
		    b.family != a.family || b.v != a.v)
			continue;
		/* Taken, and nothing more: the holder may be in a namespace the requester
		 * cannot read. */
		pk_violations_add(out, PK_SEV_DENY, "spec.address",
		                  "\"%s\" is already held by another IPAddress of the pool; an "
		                  "address of a pool is held once (create an IPAddressClaim and "
		                  "let poolkeeper allocate a free one)",
		                  rules_util_quote(text, q, sizeof(q)));
		return;
	}
}
