/*
 * pool.c - decoding an IPPool / GlobalIPPool spec from JSON, and the pool's
 * usable set.
 *
 * Nothing here trusts a CRD schema to have run: every field's JSON type is
 * checked, every list and string is bounded, and each problem becomes a
 * violation that names the field and quotes the offending value.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "addr_spec.h"
#include "json.h"
#include "pool.h"

struct decoder {
	struct pk_violations *v;
	size_t denies;
	/* The pool's family, fixed by the first entry that parsed, and that entry. */
	enum pk_family family;
	char family_field[PK_FIELD_MAX];
	char family_text[300];
	bool mixed_reported;
};

static void deny(struct decoder *d, const char *field, const char *fmt, ...) PK_PRINTF(3, 4);

static void deny(struct decoder *d, const char *field, const char *fmt, ...)
{
	char msg[PK_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	d->denies++;
	pk_violations_add(d->v, PK_SEV_DENY, field, "%s", msg);
}

/*
 * Records the family of one entry. The first entry fixes the pool's family;
 * the first entry of the other family is denied, naming both. Returns
 * whether the entry is of the pool's family.
 */
static bool note_family(struct decoder *d, const char *field, const char *s, size_t n,
                        enum pk_family f, pk_u128 first)
{
	char q[300];

	pk_text_quote(s, n, q, sizeof(q));
	if (d->family == PK_FAMILY_NONE) {
		d->family = f;
		snprintf(d->family_field, sizeof(d->family_field), "%s", field);
		snprintf(d->family_text, sizeof(d->family_text), "%s", q);
		return true;
	}
	if (f == d->family)
		return true;
	if (d->mixed_reported)
		return false;
	d->mixed_reported = true;
	/*
	 * ::ffff:a.b.c.d is IPv6 (address.h), so it never joins an IPv4 pool;
	 * say so, since it looks like the IPv4 address it embeds.
	 */
	char hint[120] = "";
	if (f == PK_FAMILY_V6 && d->family == PK_FAMILY_V4 && (first >> 32) == 0xffff) {
		char v4[PK_ADDR_STRLEN];
		pk_address_format_v(first & 0xffffffffu, PK_FAMILY_V4, v4);
		snprintf(hint, sizeof(hint),
		         " (an IPv4-mapped IPv6 address is IPv6; write %s for the IPv4 address)",
		         v4);
	}
	deny(d, field,
	     "\"%s\" is %s but the pool is %s (%s \"%s\"); a pool holds one family, put %s "
	     "addresses in a second pool%s",
	     q, pk_address_family_name(f), pk_address_family_name(d->family), d->family_field,
	     d->family_text, pk_address_family_name(f), hint);
	return false;
}

/* Decodes spec.<key>, a list of address entries, into `set`; `required` for spec.addresses. */
static PK_MUST_CHECK int decode_list(struct decoder *d, const json_t *spec, const char *key,
                                     struct pk_range_set *set, bool required)
{
	char field[PK_FIELD_MAX], desc[200], q[300];
	const json_t *arr = json_object_get(spec, key);

	snprintf(field, sizeof(field), "spec.%s", key);
	if (arr == NULL || json_is_null(arr)) {
		if (required)
			deny(d, field,
			     "required: list the pool's addresses, each a single IP (10.0.0.5), a "
			     "range (10.0.0.10-10.0.0.20) or a CIDR (10.0.0.0/24)");
		return PK_OK;
	}
	if (!json_is_array(arr)) {
		deny(d, field, "must be an array of strings (IPs, ranges a-b or CIDRs), got %s",
		     pk_violation_describe_value(arr, true, desc, sizeof(desc)));
		return PK_OK;
	}
	size_t n = json_array_size(arr);
	if (n == 0 && required) {
		deny(d, field, "must not be empty; list at least one IP, range a-b or CIDR");
		return PK_OK;
	}
	if (n > PK_POOL_MAX_ENTRIES) {
		deny(d, field,
		     "has %zu entries; at most %d are allowed, merge adjacent entries into ranges "
		     "or CIDRs",
		     n, PK_POOL_MAX_ENTRIES);
		return PK_OK;
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(arr, i);
		char ef[PK_FIELD_MAX];
		snprintf(ef, sizeof(ef), "spec.%s[%zu]", key, i);
		if (!json_is_string(e)) {
			deny(d, ef, "must be a string (an IP, a range a-b or a CIDR), got %s",
			     pk_violation_describe_value(e, true, desc, sizeof(desc)));
			continue;
		}
		const char *s = json_string_value(e);
		size_t len = json_string_length(e);
		if (len > PK_ADDR_SPEC_TEXT_MAX) {
			pk_text_quote(s, len, q, sizeof(q));
			deny(d, ef, "\"%s\" is %zu characters long; an entry has at most %d", q,
			     len, PK_ADDR_SPEC_TEXT_MAX);
			continue;
		}
		if (strlen(s) != len) {
			pk_text_quote(s, len, q, sizeof(q));
			deny(d, ef,
			     "\"%s\" contains a NUL character; it is not an IP, range or CIDR", q);
			continue;
		}
		struct pk_addr_spec sp;
		struct pk_err err;
		if (pk_addr_spec_parse(s, &sp, ef, &err) != PK_OK) {
			deny(d, ef, "%s", pk_violation_detail(&err, ef));
			continue;
		}
		if (!note_family(d, ef, s, len, sp.family, sp.first))
			continue;
		int rc = pk_range_set_add(set, sp.first, sp.last);
		if (rc != PK_OK)
			return rc;
	}
	return PK_OK;
}

static void decode_gateway(struct decoder *d, const json_t *spec, struct pk_pool *out)
{
	char desc[200], q[300];
	const json_t *g = json_object_get(spec, "gateway");

	if (g == NULL || json_is_null(g))
		return;
	if (!json_is_string(g)) {
		deny(d, "spec.gateway", "must be a string (an IP address), got %s",
		     pk_violation_describe_value(g, true, desc, sizeof(desc)));
		return;
	}
	const char *s = json_string_value(g);
	size_t len = json_string_length(g);
	if (len == 0)
		return; /* "" means no gateway, as in the in-cluster provider */
	if (len > PK_ADDR_TEXT_MAX || strlen(s) != len) {
		pk_text_quote(s, len, q, sizeof(q));
		deny(d, "spec.gateway", "\"%s\" is not an IP address (%zu characters, at most %d)",
		     q, len, PK_ADDR_TEXT_MAX);
		return;
	}
	struct pk_addr a;
	struct pk_err err;
	if (pk_address_parse_n(s, len, &a, "spec.gateway", &err) != PK_OK) {
		deny(d, "spec.gateway", "%s", pk_violation_detail(&err, "spec.gateway"));
		return;
	}
	if (!note_family(d, "spec.gateway", s, len, a.family, a.v))
		return;
	out->has_gateway = true;
	out->gateway = a.v;
}

bool pk_pool_default_prefix(const json_t *spec, unsigned *prefix)
{
	const json_t *addrs = json_object_get(spec, "addresses");
	const json_t *p = json_object_get(spec, "prefix");
	struct pk_addr_spec sp;
	if ((p != NULL && !json_is_null(p)) || !json_is_array(addrs) || json_array_size(addrs) != 1)
		return false;
	const char *s = pk_json_cstr(json_array_get(addrs, 0));
	if (s == NULL || pk_addr_spec_parse(s, &sp, NULL, NULL) != PK_OK || sp.kind != PK_SPEC_CIDR)
		return false;
	*prefix = sp.prefix_len;
	return true;
}

static void decode_prefix(struct decoder *d, const json_t *spec, struct pk_pool *out)
{
	char desc[200];
	const json_t *p = json_object_get(spec, "prefix");
	unsigned bits = d->family != PK_FAMILY_NONE ? pk_address_bits(d->family) : 128;
	const char *fam =
	    d->family != PK_FAMILY_NONE ? pk_address_family_name(d->family) : "IPv4 or IPv6";

	if (p == NULL || json_is_null(p)) {
		if (pk_pool_default_prefix(spec, &out->prefix)) {
			out->has_prefix = true;
			return;
		}
		deny(d, "spec.prefix",
		     "required: set the prefix length of the pool's subnet (0..%u for %s, e.g. 24 "
		     "for a /24); it may be left out only when spec.addresses is a single CIDR",
		     bits, fam);
		return;
	}
	if (!json_is_integer(p) || json_integer_value(p) < 0 ||
	    json_integer_value(p) > (json_int_t)bits) {
		deny(d, "spec.prefix", "must be an integer 0..%u for %s, got %s", bits, fam,
		     pk_violation_describe_value(p, true, desc, sizeof(desc)));
		return;
	}
	out->has_prefix = true;
	out->prefix = (unsigned)json_integer_value(p);
}

/*
 * addressReuseGracePeriodSeconds' ceiling, also the CRDs' `maximum`. The
 * controller computes now + grace and grace * 1000 ms: bounded here, both
 * stay far inside int64 (and a 32-bit long), whatever the spec says.
 */
#define PK_POOL_MAX_GRACE_SECONDS 86400

static void decode_flags(struct decoder *d, const json_t *spec, struct pk_pool *out)
{
	char desc[200];
	const json_t *r = json_object_get(spec, "allocateReservedIPAddresses");
	if (r != NULL && !json_is_null(r)) {
		if (!json_is_boolean(r))
			deny(d, "spec.allocateReservedIPAddresses", "must be true or false, got %s",
			     pk_violation_describe_value(r, true, desc, sizeof(desc)));
		else
			out->allocate_reserved = json_is_true(r);
	}

	const json_t *g = json_object_get(spec, "addressReuseGracePeriodSeconds");
	if (g == NULL || json_is_null(g))
		return;
	if (!json_is_integer(g)) {
		deny(d, "spec.addressReuseGracePeriodSeconds",
		     "must be a whole number of seconds (0 or more), got %s",
		     pk_violation_describe_value(g, true, desc, sizeof(desc)));
		return;
	}
	if (json_integer_value(g) < 0) {
		deny(d, "spec.addressReuseGracePeriodSeconds",
		     "must not be negative, got %" JSON_INTEGER_FORMAT
		     "; use 0 to let a released address be handed out again at once",
		     json_integer_value(g));
		return;
	}
	if (json_integer_value(g) > PK_POOL_MAX_GRACE_SECONDS) {
		deny(d, "spec.addressReuseGracePeriodSeconds",
		     "must be at most %d (one day), got %" JSON_INTEGER_FORMAT,
		     PK_POOL_MAX_GRACE_SECONDS, json_integer_value(g));
		return;
	}
	out->grace_seconds = (int64_t)json_integer_value(g);
}

/* addresses - excluded - gateway - the subnet's reserved addresses (pool.h). */
static PK_MUST_CHECK int compute_usable(struct pk_pool *p)
{
	size_t n;
	const struct pk_range *r = pk_range_set_ranges(p->addresses, &n);
	if (n == 0)
		return PK_OK;

	struct pk_range_set *u = pk_range_set_dup(p->addresses);
	if (u == NULL)
		return PK_ERR_NOMEM;
	int rc = pk_range_set_subtract(u, p->excluded);
	if (rc == PK_OK && p->has_gateway)
		rc = pk_range_set_remove(u, p->gateway, p->gateway);
	if (rc == PK_OK && !p->allocate_reserved) {
		pk_u128 net, last;
		pk_address_subnet(r[0].lo, p->family, p->prefix, &net, &last);
		if (p->family == PK_FAMILY_V4 && p->prefix < 31) {
			rc = pk_range_set_remove(u, net, net);
			if (rc == PK_OK)
				rc = pk_range_set_remove(u, last, last);
		} else if (p->family == PK_FAMILY_V6 && p->prefix < 127) {
			rc = pk_range_set_remove(u, net, net);
		}
	}
	if (rc != PK_OK) {
		pk_range_set_free(u);
		return rc;
	}
	p->usable = u;
	return PK_OK;
}

int pk_pool_decode(const json_t *spec, struct pk_pool *out, struct pk_violations *v)
{
	struct decoder d;
	char desc[200];
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&d, 0, sizeof(d));
	d.v = v;
	out->addresses = pk_range_set_new();
	out->excluded = pk_range_set_new();
	if (out->addresses == NULL || out->excluded == NULL)
		return PK_ERR_NOMEM;

	if (spec == NULL || json_is_null(spec)) {
		deny(&d, "spec", "required: a pool needs a spec with its addresses");
		return PK_OK;
	}
	if (!json_is_object(spec)) {
		deny(&d, "spec", "must be an object holding the pool's addresses, got %s",
		     pk_violation_describe_value(spec, true, desc, sizeof(desc)));
		return PK_OK;
	}

	/* Order matters: the first address entry fixes the pool's family. */
	rc = decode_list(&d, spec, "addresses", out->addresses, true);
	if (rc != PK_OK)
		return rc;
	rc = decode_list(&d, spec, "excludedAddresses", out->excluded, false);
	if (rc != PK_OK)
		return rc;
	decode_gateway(&d, spec, out);
	decode_prefix(&d, spec, out);
	decode_flags(&d, spec, out);
	out->family = d.family;

	if (d.denies > 0 || out->family == PK_FAMILY_NONE || !out->has_prefix)
		return PK_OK;
	return compute_usable(out);
}

void pk_pool_release(struct pk_pool *p)
{
	if (p == NULL)
		return;
	if (p->addresses != NULL)
		pk_range_set_free(p->addresses);
	if (p->excluded != NULL)
		pk_range_set_free(p->excluded);
	if (p->usable != NULL)
		pk_range_set_free(p->usable);
	p->addresses = NULL;
	p->excluded = NULL;
	p->usable = NULL;
}
