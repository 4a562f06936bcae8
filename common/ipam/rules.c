/*
 * rules.c - the CAPI IPAM contract and poolkeeper's pool rules over decoded
 * Kubernetes objects. The webhook, the controller and the CLI all call
 * these, so a user reads the same words wherever a rule is reported.
 *
 * No JSON type is assumed: a CRD schema may not have run (the CLI lints
 * files; a webhook may see objects before any schema does), so a string
 * where a boolean belongs is a violation, never a crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "addr_spec.h"
#include "rules.h"

#define DESC_MAX  200
#define QUOTE_MAX 300

/* Shrink denials list at most this many addresses, then "and N more". */
#define SHRINK_LIST_MAX 10
/* ... and stop earlier when the list text grows past this (the message is bounded). */
#define SHRINK_LIST_TEXT 300

/* Field paths deeper than this are reported at this depth in immutability denials. */
#define CHANGE_DEPTH_MAX 8

/* Kubernetes object names are DNS subdomains: at most 253 characters. */
#define NAME_MAX_LEN 253
/* spec.clusterName: 1-63 characters (IPAddressClaim v1beta2). */
#define CLUSTER_NAME_MAX 63
/* IPAddress spec.address: 1-39 characters (CAPI's API types). */
#define IPADDRESS_TEXT_MAX 39

static const char *detail(const struct pk_err *e, const char *field)
{
	size_t n = strlen(field);
	if (strncmp(e->msg, field, n) == 0 && e->msg[n] == ':' && e->msg[n + 1] == ' ')
		return e->msg + n + 2;
	return e->msg;
}

static const char *quote_json_string(const json_t *s, char *buf, size_t len)
{
	pk_text_quote(json_string_value(s), json_string_length(s), buf, len);
	return buf;
}

/* True when `s` is a JSON string equal to the C string `want`. */
static bool json_string_is(const json_t *s, const char *want)
{
	return json_is_string(s) && json_string_length(s) == strlen(want) &&
	       memcmp(json_string_value(s), want, json_string_length(s)) == 0;
}

/* True when the JSON strings a and b are equal (embedded NULs included). */
static bool json_strings_equal(const json_t *a, const json_t *b)
{
	return json_is_string(a) && json_is_string(b) &&
	       json_string_length(a) == json_string_length(b) &&
	       memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
}

/*
 * A required, non-empty string member; DENY and NULL when it is missing,
 * of another type, empty or longer than `max`.
 */
static const json_t *require_string(const json_t *obj, const char *key, const char *field,
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
		                  quote_json_string(s, q, sizeof(q)), json_string_length(s), max);
		return NULL;
	}
	return s;
}

/* ---------------------------------------------------------------- pools */

/* The pool's subnet: its first (lowest) address with spec.prefix (pool.h). */
static bool pool_subnet(const struct pk_pool *p, pk_u128 *net, pk_u128 *last)
{
	size_t n = 0;
	if (p->family == PK_FAMILY_NONE || !p->has_prefix || p->addresses == NULL)
		return false;
	const struct pk_range *r = pk_range_set_ranges(p->addresses, &n);
	if (n == 0)
		return false;
	pk_address_subnet(r[0].lo, p->family, p->prefix, net, last);
	return true;
}

/* Is `v` one of the subnet addresses the pool keeps back (pool.h)? */
static const char *reserved_role(const struct pk_pool *p, pk_u128 v)
{
	pk_u128 net, last;
	if (p->allocate_reserved || !pool_subnet(p, &net, &last))
		return NULL;
	if (p->family == PK_FAMILY_V4 && p->prefix < 31) {
		if (v == net)
			return "the subnet's network address";
		if (v == last)
			return "the subnet's broadcast address";
	}
	if (p->family == PK_FAMILY_V6 && p->prefix < 127 && v == net)
		return "the subnet's Subnet-Router anycast address";
	return NULL;
}

/*
 * Re-reads one entry of spec.<key> that pk_pool_decode already accepted;
 * false for entries it refused (those are reported already).
 */
static bool entry_at(const json_t *arr, size_t i, enum pk_family fam, struct pk_addr_spec *sp,
                     char *q, size_t qlen)
{
	const json_t *e = json_array_get(arr, i);
	if (!json_is_string(e) || json_string_length(e) > PK_ADDR_SPEC_TEXT_MAX ||
	    strlen(json_string_value(e)) != json_string_length(e))
		return false;
	if (pk_addr_spec_parse(json_string_value(e), sp, NULL, NULL) != PK_OK)
		return false;
	quote_json_string(e, q, qlen);
	return sp->family == fam;
}

static void check_pool_subnet(const json_t *spec, const struct pk_pool *p,
                              struct pk_violations *out)
{
	pk_u128 net, last;
	char q[QUOTE_MAX], subnet[PK_ADDR_STRLEN + 8], nettext[PK_ADDR_STRLEN];

	if (!pool_subnet(p, &net, &last))
		return;
	pk_address_format_v(net, p->family, nettext);
	snprintf(subnet, sizeof(subnet), "%s/%u", nettext, p->prefix);

	const json_t *arr = json_object_get(spec, "addresses");
	size_t n = json_is_array(arr) ? json_array_size(arr) : 0;
	if (n > PK_POOL_MAX_ENTRIES)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		struct pk_addr_spec sp;
		if (!entry_at(arr, i, p->family, &sp, q, sizeof(q)))
			continue;
		if (sp.first >= net && sp.last <= last)
			continue;
		char field[PK_FIELD_MAX];
		snprintf(field, sizeof(field), "spec.addresses[%zu]", i);
		pk_violations_add(
		    out, PK_SEV_DENY, field,
		    "\"%s\" is not inside the pool's subnet %s (the pool's first "
		    "address with spec.prefix %u); widen spec.prefix or put the entry "
		    "in a pool of its own",
		    q, subnet, p->prefix);
	}

	if (p->has_gateway && (p->gateway < net || p->gateway > last)) {
		char gw[PK_ADDR_STRLEN];
		pk_address_format_v(p->gateway, p->family, gw);
		pk_violations_add(out, PK_SEV_DENY, "spec.gateway",
		                  "\"%s\" is not inside the pool's subnet %s (the pool's first "
		                  "address with spec.prefix %u); machines reach their gateway on "
		                  "their own subnet",
		                  gw, subnet, p->prefix);
	}
}

/* An excluded entry that excludes nothing is harmless but probably a typo. */
static void check_pool_excluded(const json_t *spec, const struct pk_pool *p,
                                struct pk_violations *out)
{
	char q[QUOTE_MAX];
	size_t nr = 0;

	if (p->family == PK_FAMILY_NONE || p->addresses == NULL)
		return;
	const struct pk_range *r = pk_range_set_ranges(p->addresses, &nr);
	if (nr == 0)
		return;
	const json_t *arr = json_object_get(spec, "excludedAddresses");
	size_t n = json_is_array(arr) ? json_array_size(arr) : 0;
	if (n > PK_POOL_MAX_ENTRIES)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		struct pk_addr_spec sp;
		if (!entry_at(arr, i, p->family, &sp, q, sizeof(q)))
			continue;
		bool hits = false;
		for (size_t k = 0; k < nr && !hits; k++)
			hits = r[k].lo <= sp.last && sp.first <= r[k].hi;
		if (hits)
			continue;
		char field[PK_FIELD_MAX];
		snprintf(field, sizeof(field), "spec.excludedAddresses[%zu]", i);
		pk_violations_add(out, PK_SEV_WARN, field,
		                  "\"%s\" excludes no address of spec.addresses, so it has no "
		                  "effect; check it for a typo",
		                  q);
	}
}

void pk_rules_check_pool(const json_t *pool, const json_t *old, struct pk_violations *out)
{
	char desc[DESC_MAX];
	struct pk_pool p;

	/*
	 * `old` is accepted for symmetry with the other rules: what an update
	 * may not do (drop addresses in use) needs the pool's IPAddresses and
	 * is pk_rules_check_pool_shrink.
	 */
	(void)old;
	if (!json_is_object(pool)) {
		pk_violations_add(out, PK_SEV_DENY, "object",
		                  "a pool must be a JSON object, got %s",
		                  pk_violation_describe_value(pool, true, desc, sizeof(desc)));
		return;
	}
	const json_t *kind = json_object_get(pool, "kind");
	if (kind != NULL && !json_string_is(kind, PK_POOL_KIND) &&
	    !json_string_is(kind, PK_GLOBAL_POOL_KIND))
		pk_violations_add(out, PK_SEV_DENY, "kind", "must be %s or %s, got %s",
		                  PK_POOL_KIND, PK_GLOBAL_POOL_KIND,
		                  pk_violation_describe_value(kind, false, desc, sizeof(desc)));
	const json_t *api = json_object_get(pool, "apiVersion");
	if (api != NULL && !json_string_is(api, PK_POOL_GROUP "/v1alpha1"))
		pk_violations_add(out, PK_SEV_DENY, "apiVersion", "must be %s, got %s",
		                  PK_POOL_GROUP "/v1alpha1",
		                  pk_violation_describe_value(api, false, desc, sizeof(desc)));

	const json_t *spec = json_object_get(pool, "spec");
	if (pk_pool_decode(spec, &p, out) != PK_OK) {
		pk_violations_add(out, PK_SEV_DENY, "spec",
		                  "could not be checked: out of memory; try again");
		goto out;
	}
	check_pool_subnet(spec, &p, out);
	check_pool_excluded(spec, &p, out);
	if (p.usable != NULL && pk_range_set_empty(p.usable))
		pk_violations_add(
		    out, PK_SEV_DENY, "spec.addresses",
		    "no allocatable address left after excludedAddresses/gateway/"
		    "reserved addresses are removed; add addresses, exclude fewer, or "
		    "set allocateReservedIPAddresses: true to hand out the subnet's "
		    "reserved addresses too");
out:
	pk_pool_release(&p);
}

/*
 * Pools are compared on what each can hand out (the usable sets), so pools
 * that split one subnet between them with excludedAddresses do not overlap.
 * A pool whose spec was denied has no usable set; its listed addresses
 * stand in.
 */
static const struct pk_range_set *handed_out(const struct pk_pool *p)
{
	return p->usable != NULL ? p->usable : p->addresses;
}

void pk_rules_check_pool_overlap(const struct pk_pool *pool, const struct pk_pool *other,
                                 const char *other_name, struct pk_violations *out)
{
	if (pool == NULL || other == NULL || pool->family == PK_FAMILY_NONE ||
	    pool->family != other->family)
		return;
	const struct pk_range_set *a = handed_out(pool), *b = handed_out(other);
	if (a == NULL || b == NULL)
		return;
	size_t na, nb, i = 0, j = 0;
	const struct pk_range *ra = pk_range_set_ranges(a, &na);
	const struct pk_range *rb = pk_range_set_ranges(b, &nb);
	while (i < na && j < nb) {
		if (ra[i].hi < rb[j].lo) {
			i++;
		} else if (rb[j].hi < ra[i].lo) {
			j++;
		} else {
			char shared[PK_ADDR_STRLEN];
			pk_u128 first = ra[i].lo > rb[j].lo ? ra[i].lo : rb[j].lo;
			pk_address_format_v(first, pool->family, shared);
			pk_violations_add(out, PK_SEV_DENY, "spec.addresses",
			                  "overlaps with %s: both could hand out %s (the first "
			                  "address they share); pools must not share addresses, "
			                  "remove or exclude the shared ones from one of them",
			                  other_name != NULL ? other_name : "another pool", shared);
			return;
		}
	}
}

enum holding {
	HOLD_USABLE,  /* the pool hands it out */
	HOLD_DRAINED, /* in spec.addresses, excluded since: its IPAddress keeps it */
	HOLD_OUT,     /* the pool cannot hold it */
};

/*
 * Where an address stands in a pool whose spec decoded. For HOLD_OUT, *why
 * is "the gateway" or a reserved subnet role, or NULL (outside
 * spec.addresses, or of the other family).
 */
static enum holding pool_holding(const struct pk_pool *pool, const struct pk_addr *a,
                                 const char **why)
{
	*why = NULL;
	if (a->family != pool->family)
		return HOLD_OUT;
	if (pk_range_set_contains(pool->usable, a->v))
		return HOLD_USABLE;
	if (pool->has_gateway && a->v == pool->gateway)
		*why = "the gateway";
	else
		*why = reserved_role(pool, a->v);
	if (*why == NULL && pk_range_set_contains(pool->addresses, a->v))
		return HOLD_DRAINED;
	return HOLD_OUT;
}

/* Appends "addr" or "addr (why)" to a list; false once the list is full. */
static bool list_append(char *buf, size_t len, size_t *shown, const char *addr, const char *why)
{
	size_t o = strlen(buf);
	if (*shown >= SHRINK_LIST_MAX || o >= SHRINK_LIST_TEXT)
		return false;
	snprintf(buf + o, len - o, "%s%s%s%s%s", o > 0 ? ", " : "", addr, why ? " (now " : "",
	         why ? why : "", why ? ")" : "");
	(*shown)++;
	return true;
}

/*
 * An address in use "falls out" of the pool when the new spec no longer
 * lets the pool hold it: it left spec.addresses, changed family, or became
 * the gateway or a reserved subnet address (a prefix change can do that).
 *
 * Falling into excludedAddresses is NOT falling out. Excluding an address
 * that is still allocated is how an admin drains it: its IPAddress keeps
 * it, and once released it is not handed out again. Denying that would
 * leave no way to stop an address being reused other than deleting the
 * machine first. The in-cluster provider's webhook likewise checks in-use
 * addresses against spec.addresses only. Such addresses get a WARN so the
 * admin sees which ones are draining.
 */
void pk_rules_check_pool_shrink(const struct pk_pool *pool, const char *const *in_use,
                                size_t n_in_use, struct pk_violations *out)
{
	char gone[512] = "", drained[512] = "";
	size_t n_gone = 0, shown_gone = 0, n_drained = 0, shown_drained = 0;

	/* A pool whose spec was denied has no usable set; that denial says enough. */
	if (pool == NULL || pool->usable == NULL || in_use == NULL)
		return;
	for (size_t i = 0; i < n_in_use; i++) {
		struct pk_addr a;
		char text[PK_ADDR_STRLEN];
		/* An IPAddress whose address does not parse was never handed out by a pool. */
		if (in_use[i] == NULL || pk_address_parse(in_use[i], &a, NULL, NULL) != PK_OK)
			continue;
		pk_address_format(&a, text);
		const char *why = NULL;
		enum holding h = pool_holding(pool, &a, &why);
		if (h == HOLD_USABLE)
			continue;
		if (h == HOLD_DRAINED) {
			n_drained++;
			(void)list_append(drained, sizeof(drained), &shown_drained, text, NULL);
			continue;
		}
		n_gone++;
		(void)list_append(gone, sizeof(gone), &shown_gone, text, why);
	}
	if (n_gone > 0) {
		char more[48] = "";
		if (n_gone > shown_gone)
			snprintf(more, sizeof(more), " and %zu more", n_gone - shown_gone);
		pk_violations_add(out, PK_SEV_DENY, "spec.addresses",
		                  "the new spec drops %zu address%s still allocated from the pool: "
		                  "%s%s; delete the IPAddressClaims holding them first, or keep "
		                  "them in the pool",
		                  n_gone, n_gone == 1 ? "" : "es", gone, more);
	}
	if (n_drained > 0) {
		char more[48] = "";
		if (n_drained > shown_drained)
			snprintf(more, sizeof(more), " and %zu more", n_drained - shown_drained);
		pk_violations_add(out, PK_SEV_WARN, "spec.excludedAddresses",
		                  "excludes %zu address%s still allocated: %s%s; they stay with "
		                  "their IPAddresses and are not handed out again once released",
		                  n_drained, n_drained == 1 ? "" : "es", drained, more);
	}
}

/* --------------------------------------------------- claims and addresses */

/*
 * apiVersion and kind of a CAPI IPAM object; returns 1 or 2 for v1beta1 or
 * v1beta2, 0 (after a DENY) for anything else.
 */
static int capi_version(const json_t *obj, const char *kind, struct pk_violations *out)
{
	char desc[DESC_MAX];
	const json_t *k = json_object_get(obj, "kind");
	const json_t *api = json_object_get(obj, "apiVersion");

	if (!json_string_is(k, kind))
		pk_violations_add(out, PK_SEV_DENY, "kind", "must be %s, got %s", kind,
		                  pk_violation_describe_value(k, false, desc, sizeof(desc)));
	if (json_string_is(api, PK_CAPI_IPAM_GROUP "/v1beta1"))
		return 1;
	if (json_string_is(api, PK_CAPI_IPAM_GROUP "/v1beta2"))
		return 2;
	pk_violations_add(out, PK_SEV_DENY, "apiVersion", "must be %s or %s, got %s",
	                  PK_CAPI_IPAM_GROUP "/v1beta1", PK_CAPI_IPAM_GROUP "/v1beta2",
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

/* Edit distance of a and b (bytes), or a large number past 64 bytes. */
static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
	size_t row[65];
	if (na > 64 || nb > 64)
		return SIZE_MAX / 2;
	for (size_t j = 0; j <= nb; j++)
		row[j] = j;
	for (size_t i = 1; i <= na; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= nb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[nb];
}

/*
 * The poolkeeper kind an unknown kind most likely meant: the one it equals
 * ignoring case, else the one within an edit distance of 3 (the nearer;
 * IPPool on a tie), else both.
 */
static const char *closest_pool_kind(const json_t *kind)
{
	static const char *const kinds[] = {PK_POOL_KIND, PK_GLOBAL_POOL_KIND};
	const char *k = json_string_value(kind);
	size_t n = json_string_length(kind), best = SIZE_MAX, at = 0;
	for (size_t i = 0; i < 2; i++) {
		if (n == strlen(kinds[i]) && strncasecmp(k, kinds[i], n) == 0)
			return kinds[i];
		size_t d = edit_distance(k, n, kinds[i], strlen(kinds[i]));
		if (d < best) {
			best = d;
			at = i;
		}
	}
	return best <= 3 ? kinds[at] : PK_POOL_KIND " or " PK_GLOBAL_POOL_KIND;
}

/*
 * spec.poolRef: kind and name required; apiGroup required in v1beta2. In
 * v1beta1 a missing apiGroup is a WARN: such a reference names a core-group
 * object, never a poolkeeper pool, and whether foreign claims are refused
 * is the webhook's decision (--foreign-claims), not this rule's.
 */
static void check_pool_ref(const json_t *spec, int version, const json_t **kind,
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
			                  "%s/v1beta2 requires it",
			                  PK_POOL_GROUP, PK_CAPI_IPAM_GROUP);
		else
			pk_violations_add(
			    out, PK_SEV_DENY, "spec.poolRef.apiGroup",
			    "required: the pool's API group (%s for poolkeeper pools)",
			    PK_POOL_GROUP);
	}
	bool ours = json_string_is(g, PK_POOL_GROUP);
	*kind =
	    require_string(r, "kind", "spec.poolRef.kind", NAME_MAX_LEN,
	                   ours ? "the kind of a pool of " PK_POOL_GROUP " (" PK_POOL_KIND
	                          " or " PK_GLOBAL_POOL_KIND "); did you mean " PK_POOL_KIND "?"
	                        : "the pool's kind (IPPool or GlobalIPPool for poolkeeper pools)",
	                   out);
	if (ours && *kind != NULL && !pk_rules_is_poolkeeper_pool_ref(r)) {
		char q[QUOTE_MAX];
		pk_violations_add(out, PK_SEV_DENY, "spec.poolRef.kind",
		                  "\"%s\" is not a kind of %s; did you mean %s?",
		                  quote_json_string(*kind, q, sizeof(q)), PK_POOL_GROUP,
		                  closest_pool_kind(*kind));
		*kind = NULL;
	}
	*name =
	    require_string(r, "name", "spec.poolRef.name", NAME_MAX_LEN, "the pool's name", out);
}

/* metadata.ownerReferences as an array, or NULL after a DENY. */
static const json_t *owner_refs(const json_t *obj, const char *needed, struct pk_violations *out)
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
static int ref_flag(const json_t *ref, size_t i, const char *key, struct pk_violations *out)
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
static const char *ref_text(const json_t *ref, char *buf, size_t len)
{
	char k[QUOTE_MAX], n[QUOTE_MAX];
	const json_t *kind = json_object_get(ref, "kind"), *name = json_object_get(ref, "name");
	if (snprintf(buf, len, "%s \"%s\"",
	             json_is_string(kind) ? quote_json_string(kind, k, sizeof(k)) : "?",
	             json_is_string(name) ? quote_json_string(name, n, sizeof(n)) : "?") < 0)
		buf[0] = '\0';
	return buf;
}

/* What the owner references of a claim hold, as "exactly one candidate" (rules.h) reads them. */
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
	*c = ref_flag(r, i, "controller", out);
	*b = ref_flag(r, i, "blockOwnerDeletion", out);
	return ok && *c >= 0 && *b >= 0;
}

static void scan_owners(const json_t *claim, struct owner_scan *sc, struct pk_violations *out)
{
	sc->well_formed = true;
	sc->controller = sc->bod_only = -1;
	sc->controller_bod = false;
	sc->refs = owner_refs(claim, OWNER_NEEDED, out);
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
		const char *t = i == 4 ? "..." : ref_text(json_array_get(refs, i), rt, sizeof(rt));
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
			                  ref_text(r, rt, sizeof(rt)));
		else
			pk_violations_add(
			    out, PK_SEV_DENY, field,
			    "the controller reference %s must set blockOwnerDeletion: "
			    "true, so that deleting it waits for the claim to be gone",
			    ref_text(r, rt, sizeof(rt)));
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
		                  ref_text(json_array_get(sc.refs, 0), rt, sizeof(rt)));
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
		                  quote_json_string(cn, q, sizeof(q)), json_string_length(cn),
		                  CLUSTER_NAME_MAX);
		return;
	}
	if (json_is_string(cn) && json_string_length(cn) > 0)
		return;
	const json_t *labels = json_object_get(json_object_get(claim, "metadata"), "labels");
	const json_t *label = json_object_get(labels, PK_CLUSTER_NAME_LABEL);
	if (json_is_string(label) && json_string_length(label) > 0) {
		quote_json_string(label, q, sizeof(q));
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

/*
 * What a claim and an IPAddress check first: that the object is one, that
 * an UPDATE changes no spec (and nothing else is checked then: finalizers,
 * annotations and owner references rewritten by the garbage collector or
 * clusterctl move must always pass, or deletion and move would be
 * blocked), its apiVersion and kind, and that spec is an object. Returns
 * the spec to check further, or NULL when there is nothing more to check
 * (*version is set whenever the object is one).
 */
static const json_t *capi_object_spec(const json_t *obj, const json_t *old, const char *kind,
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

static void check_claim(const json_t *claim, const json_t *old, bool lenient,
                        struct pk_violations *out)
{
	int version;
	const json_t *spec = capi_object_spec(claim, old, "IPAddressClaim",
	                                      "poolRef and clusterName", &version, out);
	if (spec != NULL) {
		const json_t *kind, *name;
		check_claim_cluster(claim, spec, out);
		check_pool_ref(spec, version, &kind, &name, out);
	}
	if (json_is_object(claim) && old == NULL)
		check_claim_owners(claim, lenient, out);
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
	bool ours = pk_rules_is_poolkeeper_group_ref(
	    json_object_get(json_object_get(claim, "spec"), "poolRef"));
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

/* ---------------------------------------------------------- claim repair */

void pk_rules_plan_claim_repair(const json_t *claim, enum pk_enforcement mode,
                                struct pk_claim_repair *plan)
{
	memset(plan, 0, sizeof(*plan));
	plan->candidate = -1;
	const json_t *spec = json_object_get(claim, "spec");
	if (mode == PK_ENFORCE_IGNORE || !json_is_object(claim) || !json_is_object(spec) ||
	    !pk_rules_is_poolkeeper_pool_ref(json_object_get(spec, "poolRef")))
		return;

	/* spec.clusterName empty, the deprecated label set: copy it (CAPI's own
	 * defaulting did the same while the label was the only source). */
	const json_t *cn = json_object_get(spec, "clusterName");
	const json_t *labels = json_object_get(json_object_get(claim, "metadata"), "labels");
	const char *label = pk_json_cstr_at(labels, PK_CLUSTER_NAME_LABEL);
	if ((cn == NULL || (json_is_string(cn) && json_string_length(cn) == 0)) && label != NULL &&
	    label[0] != '\0') {
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
		                  ref_text(ref, rt, sizeof(rt)),
		                  json_is_string(kind) ? quote_json_string(kind, k, sizeof(k))
		                                       : "?",
		                  both ? "them" : "it");
	}
	if (plan->cluster_name != NULL && mode != PK_ENFORCE_REPAIR)
		pk_violations_add(out, PK_SEV_WARN, "spec.clusterName",
		                  "was empty and was set from the deprecated label %s; set "
		                  "spec.clusterName in the claim instead",
		                  PK_CLUSTER_NAME_LABEL);
}

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
		bool kind_ok =
		    kind_c != NULL ? json_string_is(k, kind_c) : json_strings_equal(k, kind_j);
		if (kind_ok && json_strings_equal(json_object_get(r, "name"), name)) {
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
static void check_ipaddress_owners(const json_t *addr, const json_t *claim_name,
                                   const json_t *pool_kind, const json_t *pool_name,
                                   struct pk_violations *out)
{
	char q[QUOTE_MAX], k[QUOTE_MAX], field[PK_FIELD_MAX];
	const json_t *refs = owner_refs(
	    addr,
	    "an IPAddress needs owner references to its IPAddressClaim (controller: true, "
	    "blockOwnerDeletion: true) and to its pool (blockOwnerDeletion: true)",
	    out);
	size_t at = 0;

	if (refs == NULL)
		return;
	if (claim_name != NULL) {
		const json_t *r = find_ref(refs, "IPAddressClaim", NULL, claim_name, &at);
		quote_json_string(claim_name, q, sizeof(q));
		if (r == NULL) {
			pk_violations_add(
			    out, PK_SEV_DENY, "metadata.ownerReferences",
			    "no owner reference to IPAddressClaim \"%s\" (spec.claimRef."
			    "name); add one with controller: true and "
			    "blockOwnerDeletion: true",
			    q);
		} else {
			if (ref_flag(r, at, "controller", out) == 0) {
				snprintf(field, sizeof(field),
				         "metadata.ownerReferences[%zu].controller", at);
				pk_violations_add(out, PK_SEV_DENY, field,
				                  "the reference to IPAddressClaim \"%s\" must set "
				                  "controller: true",
				                  q);
			}
			if (ref_flag(r, at, "blockOwnerDeletion", out) == 0) {
				snprintf(field, sizeof(field),
				         "metadata.ownerReferences[%zu].blockOwnerDeletion", at);
				pk_violations_add(out, PK_SEV_DENY, field,
				                  "the reference to IPAddressClaim \"%s\" must set "
				                  "blockOwnerDeletion: true",
				                  q);
			}
		}
	}
	if (pool_kind != NULL && pool_name != NULL) {
		const json_t *r = find_ref(refs, NULL, pool_kind, pool_name, &at);
		quote_json_string(pool_kind, k, sizeof(k));
		quote_json_string(pool_name, q, sizeof(q));
		if (r == NULL) {
			pk_violations_add(
			    out, PK_SEV_DENY, "metadata.ownerReferences",
			    "no owner reference to the pool %s \"%s\" (spec.poolRef); "
			    "add one with blockOwnerDeletion: true",
			    k, q);
		} else if (ref_flag(r, at, "blockOwnerDeletion", out) == 0) {
			snprintf(field, sizeof(field),
			         "metadata.ownerReferences[%zu].blockOwnerDeletion", at);
			pk_violations_add(out, PK_SEV_DENY, field,
			                  "the reference to the pool %s \"%s\" must set "
			                  "blockOwnerDeletion: true",
			                  k, q);
		}
	}
}

/* spec.address: 1-39 characters that parse as an address. */
static bool ipaddress_address(const json_t *spec, struct pk_addr *a, struct pk_violations *out)
{
	char q[QUOTE_MAX];
	struct pk_err err;
	const json_t *s = require_string(spec, "address", "spec.address", IPADDRESS_TEXT_MAX,
	                                 "the allocated IP address", out);

	if (s == NULL)
		return false;
	if (strlen(json_string_value(s)) != json_string_length(s)) {
		pk_violations_add(out, PK_SEV_DENY, "spec.address",
		                  "\"%s\" is not an IPv4 or IPv6 address",
		                  quote_json_string(s, q, sizeof(q)));
		return false;
	}
	if (pk_address_parse_n(json_string_value(s), json_string_length(s), a, "spec.address",
	                       &err) != PK_OK) {
		pk_violations_add(out, PK_SEV_DENY, "spec.address", "%s",
		                  detail(&err, "spec.address"));
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
	quote_json_string(g, q, sizeof(q));
	if (strlen(json_string_value(g)) != json_string_length(g)) {
		pk_violations_add(out, PK_SEV_DENY, "spec.gateway",
		                  "\"%s\" is not an IPv4 or IPv6 address", q);
		return;
	}
	if (pk_address_parse_n(json_string_value(g), json_string_length(g), &gw, "spec.gateway",
	                       &err) != PK_OK) {
		pk_violations_add(out, PK_SEV_DENY, "spec.gateway", "%s",
		                  detail(&err, "spec.gateway"));
		return;
	}
	if (have_addr && gw.family != a->family)
		pk_violations_add(out, PK_SEV_DENY, "spec.gateway",
		                  "\"%s\" is %s but spec.address %s is %s; both must be of one "
		                  "family",
		                  q, pk_address_family_name(gw.family), pk_address_format(a, at),
		                  pk_address_family_name(a->family));
}

void pk_rules_check_ipaddress(const json_t *addr, const json_t *old, struct pk_violations *out)
{
	char desc[DESC_MAX];
	int version;
	const json_t *spec = capi_object_spec(
	    addr, old, "IPAddress", "address, prefix, claimRef and poolRef", &version, out);
	if (spec == NULL) {
		if (json_is_object(addr) && old == NULL)
			(void)owner_refs(
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
		claim_name = require_string(claim_ref, "name", "spec.claimRef.name", NAME_MAX_LEN,
		                            "the IPAddressClaim's name", out);

	const json_t *pool_kind, *pool_name;
	check_pool_ref(spec, version, &pool_kind, &pool_name, out);
	check_ipaddress_owners(addr, claim_name, pool_kind, pool_name, out);
}

bool pk_rules_is_poolkeeper_group_ref(const json_t *pool_ref)
{
	return json_is_object(pool_ref) &&
	       json_string_is(json_object_get(pool_ref, "apiGroup"), PK_POOL_GROUP);
}

bool pk_rules_is_poolkeeper_pool_ref(const json_t *pool_ref)
{
	const json_t *kind = json_object_get(pool_ref, "kind");
	return pk_rules_is_poolkeeper_group_ref(pool_ref) &&
	       (json_string_is(kind, PK_POOL_KIND) || json_string_is(kind, PK_GLOBAL_POOL_KIND));
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
	quote_json_string(name, q, sizeof(q));
	const json_t *cname = json_object_get(json_object_get(claim, "metadata"), "name");
	if (claim != NULL && json_is_string(cname) && !json_strings_equal(cname, name)) {
		char c[QUOTE_MAX];
		pk_violations_add(out, PK_SEV_DENY, "spec.claimRef.name",
		                  "\"%s\" is not IPAddressClaim \"%s\", which owns this IPAddress",
		                  q, quote_json_string(cname, c, sizeof(c)));
		return;
	}
	const json_t *cref = json_object_get(json_object_get(claim, "spec"), "poolRef");
	static const char *const keys[] = {"apiGroup", "kind", "name"};
	bool same = claim != NULL;
	for (size_t i = 0; same && i < 3; i++)
		same = json_strings_equal(json_object_get(ref, keys[i]),
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
	                  q, json_is_string(kind) ? quote_json_string(kind, k, sizeof(k)) : "?",
	                  json_is_string(pool) ? quote_json_string(pool, n, sizeof(n)) : "?");
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
	enum holding h = pool_holding(pool, &a, &why);
	if (h == HOLD_USABLE || (h == HOLD_DRAINED && allocated))
		return;
	if (h == HOLD_DRAINED)
		why = "in spec.excludedAddresses";
	if (why != NULL)
		snprintf(role, sizeof(role), " (it is %s)", why);
	pk_violations_add(out, PK_SEV_DENY, "spec.address",
	                  "\"%s\" is not a usable address of %s%s",
	                  quote_json_string(text, q, sizeof(q)),
	                  pool_name != NULL ? pool_name : "its pool", role);
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
		                  quote_json_string(text, q, sizeof(q)));
		return;
	}
}
