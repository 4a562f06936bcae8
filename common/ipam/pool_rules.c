/*
 * pool_rules.c - a pool's own rules (pk_rules_check_pool), overlap between
 * two pools, shrink protection, and where an address stands in a pool.
 */
#include <stdio.h>
#include <string.h>

#include "addr_spec.h"
#include "pool_ref.h"
#include "rules.h"
#include "rules_util.h"

/* Shrink denials list at most this many addresses, then "and N more". */
#define SHRINK_LIST_MAX 10
/* ... and stop earlier when the list text grows past this (the message is bounded). */
#define SHRINK_LIST_TEXT 300

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
	rules_util_quote(e, q, qlen);
	return sp->family == fam;
}

/* spec.<key> and how many of its entries to re-read: none past the cap (decoding refused it). */
static size_t entries(const json_t *spec, const char *key, const json_t **arr)
{
	*arr = json_object_get(spec, key);
	size_t n = json_is_array(*arr) ? json_array_size(*arr) : 0;
	return n > PK_POOL_MAX_ENTRIES ? 0 : n;
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

	const json_t *arr;
	size_t n = entries(spec, "addresses", &arr);
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
	const json_t *arr;
	size_t n = entries(spec, "excludedAddresses", &arr);
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

/*
 * Whether apiVersion `api` is that of pool kind pk, or, pk NULL (no kind, or one the table
 * does not have), of any pool kind; buf then says which ones it may be ("<group>/<version>",
 * each once).
 */
static bool pool_api_version(const json_t *api, const struct pk_pool_kind *pk, char *buf,
                             size_t len)
{
	size_t n, o = 0;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&n);
	bool ok = false;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const struct pk_pool_kind *k = &kinds[i];
		/* pk's own, or each one once */
		bool skip = pk != NULL && k != pk;
		for (size_t j = 0; pk == NULL && j < i && !skip; j++)
			skip = strcmp(kinds[j].group, k->group) == 0 &&
			       strcmp(kinds[j].version, k->version) == 0;
		if (skip)
			continue;
		char one[320];
		snprintf(one, sizeof(one), "%s/%s", k->group, k->version);
		ok = ok || rules_util_json_is(api, one);
		if (o < len) {
			int w = snprintf(buf + o, len - o, "%s%s", o > 0 ? " or " : "", one);
			o += w > 0 ? (size_t)w : 0;
		}
	}
	return ok;
}

void pk_rules_check_pool(const json_t *pool, const json_t *old, struct pk_violations *out)
{
	char desc[DESC_MAX];
	struct pk_pool p;

	/*
	 * `old` only spares an update the check of names, which it cannot
	 * change: what an update may not do (drop addresses in use) needs the
	 * pool's IPAddresses and is pk_rules_check_pool_shrink.
	 */
	if (!json_is_object(pool)) {
		pk_violations_add(out, PK_SEV_DENY, "object",
		                  "a pool must be a JSON object, got %s",
		                  pk_violation_describe_value(pool, true, desc, sizeof(desc)));
		return;
	}
	if (old == NULL)
		rules_util_check_meta_names(pool, out);
	/* kind: one of poolkeeper's pool kinds; apiVersion: that kind's. */
	char want[POOL_KINDS_TEXT_MAX];
	const json_t *kind = json_object_get(pool, "kind");
	const struct pk_pool_kind *pk = rules_util_pool_kind(kind);
	if (kind != NULL && pk == NULL)
		pk_violations_add(out, PK_SEV_DENY, "kind", "must be %s, got %s",
		                  rules_util_pool_kinds_text(want, sizeof(want)),
		                  pk_violation_describe_value(kind, false, desc, sizeof(desc)));
	const json_t *api = json_object_get(pool, "apiVersion");
	if (api != NULL && !pool_api_version(api, pk, want, sizeof(want)))
		pk_violations_add(out, PK_SEV_DENY, "apiVersion", "must be %s, got %s", want,
		                  pk_violation_describe_value(api, false, desc, sizeof(desc)));

	const json_t *spec = json_object_get(pool, "spec");
	int rc = pk_pool_decode(spec, &p, out);
	if (rc != PK_OK) {
		pk_violations_add(out, PK_SEV_DENY, "spec", "could not be checked: %s",
		                  rc == PK_ERR_NOMEM ? "out of memory; try again" : pk_rc_name(rc));
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

enum pool_rules_holding pool_rules_holding(const struct pk_pool *pool, const struct pk_addr *a,
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
		enum pool_rules_holding h = pool_rules_holding(pool, &a, &why);
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
