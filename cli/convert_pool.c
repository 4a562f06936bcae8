/*
 * convert_pool.c - one in-cluster pool's spec as a poolkeeper pool spec.
 *
 * What the in-cluster provider (v1.1.0) does, read from its module:
 *   api/v1alpha1/inclusterippool_types.go   v1alpha1: addresses, subnet, start, end,
 *                                           prefix (omitempty: 0 is unset), gateway
 *   api/v1alpha1/conversion.go              v1alpha1 -> v1alpha2: subnet's second to
 *                                           second-last address as the defaults of
 *                                           start and end, "start-end" appended to
 *                                           addresses, an unset prefix from the subnet
 *   api/v1alpha2/inclusterippool_types.go   v1alpha2: addresses, prefix, gateway,
 *                                           allocateReservedIPAddresses,
 *                                           excludedAddresses,
 *                                           addressReuseGracePeriodSeconds
 *   internal/poolutil/pool.go               a CIDR entry goes through netip.ParsePrefix and
 *                                           IPSetBuilder.AddPrefix: host bits are ignored
 *   internal/webhooks/inclusterippool.go    the gateway is parsed and its family checked,
 *                                           never its place in the subnet
 * Where poolkeeper differs (docs/pools.md), the spec is fixed and the change
 * logged, or the difference is an error naming the field and the value.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr_spec.h"
#include "convert.h"
#include "json.h"
#include "pool.h"
#include "suggest.h"

static const char *const v1alpha1_fields[] = {"addresses", "subnet", "start",
                                              "end",       "prefix", "gateway"};
static const char *const v1alpha2_fields[] = {
    "addresses",         "prefix",
    "gateway",           "allocateReservedIPAddresses",
    "excludedAddresses", "addressReuseGracePeriodSeconds"};

#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))
#define TEXT_MAX   300

void pk_convert_logf(struct pk_convert_log *lg, enum pk_convert_level level, const char *field,
                     const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (level == PK_CONVERT_ERROR)
		lg->errors++;
	lg->add(lg->ctx, level, field, msg);
}

/* Unknown spec fields are errors: the API server's strict field validation refuses them. */
static void check_fields(json_t *spec, const char *version, struct pk_convert_log *lg)
{
	bool v1 = !strcmp(version, "v1alpha1");
	const char *const *known = v1 ? v1alpha1_fields : v1alpha2_fields;
	size_t n = v1 ? NFIELDS(v1alpha1_fields) : NFIELDS(v1alpha2_fields);
	const char *key;
	json_t *val;

	json_object_foreach(spec, key, val)
	{
		const char *best = pk_suggest(key, strlen(key), known, n, 3);
		if (best != NULL && strcmp(best, key) == 0)
			continue;
		char field[TEXT_MAX], hint[128] = "";
		snprintf(field, sizeof(field), "spec.%s", key);
		if (best != NULL)
			snprintf(hint, sizeof(hint), "; did you mean %s?", best);
		pk_convert_logf(lg, PK_CONVERT_ERROR, field,
		                "unknown field of %s's spec (kubectl's strict field validation "
		                "refuses it, and the provider never read it)%s",
		                version, hint);
	}
}

/*
 * "a/n" read as Go's netip.ParsePrefix reads it: host bits allowed. False
 * when it is not an address and a prefix length of its family.
 */
static bool parse_prefix_text(const char *s, enum pk_family *fam, pk_u128 *net, unsigned *plen,
                              bool *host_bits)
{
	const char *slash = strchr(s, '/');
	struct pk_addr a;
	if (slash == NULL || pk_address_parse_n(s, (size_t)(slash - s), &a, NULL, NULL) != PK_OK)
		return false;
	const char *d = slash + 1;
	size_t nd = strspn(d, "0123456789");
	if (nd == 0 || nd > 3 || d[nd] != '\0' || (d[0] == '0' && nd > 1))
		return false;
	unsigned long v = strtoul(d, NULL, 10);
	if (v > pk_address_bits(a.family))
		return false;
	pk_u128 mask = pk_address_netmask(a.family, (unsigned)v);
	*fam = a.family;
	*plen = (unsigned)v;
	*net = a.v & mask;
	*host_bits = (a.v & ~mask & pk_address_max(a.family)) != 0;
	return true;
}

/* One entry of spec.<key>: a CIDR with host bits becomes its network; anything invalid an error. */
static int fix_entry(json_t *arr, size_t i, const char *key, struct pk_convert_log *lg)
{
	char field[TEXT_MAX], q[TEXT_MAX], net_text[PK_ADDR_STRLEN], fixed[PK_ADDR_STRLEN + 8];
	const char *s = pk_json_cstr(json_array_get(arr, i));
	struct pk_addr_spec sp;
	struct pk_err err;

	snprintf(field, sizeof(field), "spec.%s[%zu]", key, i);
	if (s == NULL || pk_addr_spec_parse(s, &sp, field, &err) == PK_OK)
		return PK_OK; /* a non-string is left to the pool rules, which name its type */
	pk_text_quote(s, strlen(s), q, sizeof(q));
	enum pk_family fam;
	pk_u128 net;
	unsigned plen;
	bool host_bits;
	if (strchr(s, '-') != NULL || !parse_prefix_text(s, &fam, &net, &plen, &host_bits) ||
	    !host_bits) {
		pk_convert_logf(lg, PK_CONVERT_ERROR, field, "%s",
		                pk_violation_detail(&err, field));
		return PK_OK;
	}
	pk_address_format_v(net, fam, net_text);
	snprintf(fixed, sizeof(fixed), "%s/%u", net_text, plen);
	if (json_array_set_new(arr, i, json_string(fixed)) != 0)
		return PK_ERR_NOMEM;
	pk_convert_logf(lg, PK_CONVERT_CHANGE, field,
	                "\"%s\" has host bits set; the in-cluster provider reads it as %s, written "
	                "so (poolkeeper refuses host bits)",
	                q, fixed);
	return PK_OK;
}

static int fix_entries(json_t *spec, const char *key, struct pk_convert_log *lg)
{
	json_t *arr = json_object_get(spec, key);
	size_t n = json_is_array(arr) ? json_array_size(arr) : 0;
	for (size_t i = 0; i < n; i++) {
		int rc = fix_entry(arr, i, key, lg);
		if (rc != PK_OK)
			return rc;
	}
	return PK_OK;
}

/* A v1alpha1 string field: NULL when absent or empty (omitempty), an error when not a string. */
static const char *v1_string(const json_t *spec, const char *key, struct pk_convert_log *lg)
{
	const json_t *v = json_object_get(spec, key);
	char field[64], desc[200];
	if (v == NULL || json_is_null(v))
		return NULL;
	if (!json_is_string(v) || pk_json_cstr(v) == NULL) {
		snprintf(field, sizeof(field), "spec.%s", key);
		pk_convert_logf(lg, PK_CONVERT_ERROR, field, "must be a string, got %s",
		                pk_violation_describe_value(v, true, desc, sizeof(desc)));
		return NULL;
	}
	return json_string_length(v) > 0 ? json_string_value(v) : NULL;
}

/*
 * v1alpha1's subnet: the defaults of start and end (second and second-last
 * address) and of an unset prefix. False after an error.
 */
static bool v1_subnet(json_t *spec, const char *subnet, char *start, char *end,
                      struct pk_convert_log *lg)
{
	char q[TEXT_MAX], t[PK_ADDR_STRLEN];
	enum pk_family fam;
	pk_u128 net, last;
	unsigned plen;
	bool host_bits;

	pk_text_quote(subnet, strlen(subnet), q, sizeof(q));
	if (!parse_prefix_text(subnet, &fam, &net, &plen, &host_bits)) {
		pk_convert_logf(lg, PK_CONVERT_ERROR, "spec.subnet",
		                "\"%s\" is not a CIDR (an address and a prefix length of its "
		                "family, e.g. 10.0.0.0/24)",
		                q);
		return false;
	}
	pk_address_subnet(net, fam, plen, &net, &last);
	if (host_bits)
		pk_convert_logf(lg, PK_CONVERT_CHANGE, "spec.subnet",
		                "\"%s\" has host bits set; read as %s/%u, as the in-cluster "
		                "provider reads it",
		                q, pk_address_format_v(net, fam, t), plen);
	if ((start[0] == '\0' || end[0] == '\0') && plen + 1 >= pk_address_bits(fam)) {
		pk_convert_logf(lg, PK_CONVERT_ERROR, "spec.subnet",
		                "\"%s\" is a /%u: it has no second and second-last address to "
		                "default spec.start and spec.end to; set both, or write the "
		                "addresses in spec.addresses",
		                q, plen);
		return false;
	}
	if (start[0] == '\0')
		pk_address_format_v(net + 1, fam, start);
	if (end[0] == '\0')
		pk_address_format_v(last - 1, fam, end);
	const json_t *pj = json_object_get(spec, "prefix");
	if (pj == NULL || json_is_null(pj) ||
	    (json_is_integer(pj) && json_integer_value(pj) == 0)) {
		if (json_object_set_new(spec, "prefix", json_integer(plen)) != 0)
			return false;
		pk_convert_logf(lg, PK_CONVERT_CHANGE, "spec.prefix",
		                "%u, from spec.subnet \"%s\" (v1alpha1 takes an unset prefix from "
		                "the subnet)",
		                plen, q);
	}
	return true;
}

/* v1alpha1's subnet/start/end as one more entry of addresses, as the provider's conversion. */
static int convert_v1alpha1(json_t *spec, struct pk_convert_log *lg)
{
	char start[TEXT_MAX] = "", end[TEXT_MAX] = "", range[2 * TEXT_MAX + 2];
	const char *subnet = v1_string(spec, "subnet", lg);
	const char *s = v1_string(spec, "start", lg), *e = v1_string(spec, "end", lg);
	json_int_t p;

	snprintf(start, sizeof(start), "%s", s != NULL ? s : "");
	snprintf(end, sizeof(end), "%s", e != NULL ? e : "");
	if (pk_json_int_at(spec, "prefix", &p) && p == 0 && subnet == NULL)
		(void)json_object_del(spec, "prefix"); /* omitempty: 0 is unset */
	bool ok = subnet == NULL || v1_subnet(spec, subnet, start, end, lg);
	if (ok && (start[0] != '\0') != (end[0] != '\0')) {
		pk_convert_logf(lg, PK_CONVERT_ERROR, start[0] != '\0' ? "spec.start" : "spec.end",
		                "is set without %s (and no spec.subnet to take it from); the "
		                "in-cluster provider ignores it: set both, or write the range in "
		                "spec.addresses",
		                start[0] != '\0' ? "spec.end" : "spec.start");
	} else if (ok && start[0] != '\0') {
		struct pk_addr_spec sp;
		struct pk_err err;
		snprintf(range, sizeof(range), "%s-%s", start, end);
		json_t *arr = json_object_get(spec, "addresses");
		if (arr != NULL && !json_is_null(arr) && !json_is_array(arr))
			goto out; /* the pool rules refuse spec.addresses, naming its type */
		if (!json_is_array(arr)) {
			arr = json_array();
			if (json_object_set_new(spec, "addresses", arr) != 0)
				return PK_ERR_NOMEM;
		}
		if (json_array_append_new(arr, json_string(range)) != 0)
			return PK_ERR_NOMEM;
		if (pk_addr_spec_parse(range, &sp, "spec.start-spec.end", &err) != PK_OK)
			pk_convert_logf(lg, PK_CONVERT_ERROR, "spec.start", "%s",
			                pk_violation_detail(&err, "spec.start-spec.end"));
		else
			pk_convert_logf(lg, PK_CONVERT_CHANGE, "spec.addresses",
			                "\"%s\" added, from v1alpha1's spec.subnet/start/end (the "
			                "range the in-cluster provider hands out)",
			                range);
	}
out:
	(void)json_object_del(spec, "subnet");
	(void)json_object_del(spec, "start");
	(void)json_object_del(spec, "end");
	return PK_OK;
}

/* A missing prefix: that of a lone CIDR (pk_pool_default_prefix), written out. */
static int fill_prefix(json_t *spec, struct pk_convert_log *lg)
{
	const json_t *p = json_object_get(spec, "prefix");
	unsigned bits;
	if (p != NULL && !json_is_null(p))
		return PK_OK;
	if (!pk_pool_default_prefix(spec, &bits)) {
		pk_convert_logf(lg, PK_CONVERT_ERROR, "spec.prefix",
		                "missing, and spec.addresses is not a single CIDR to take it from; "
		                "set the prefix length of the pool's subnet");
		return PK_OK;
	}
	if (json_object_set_new(spec, "prefix", json_integer(bits)) != 0)
		return PK_ERR_NOMEM;
	pk_convert_logf(lg, PK_CONVERT_CHANGE, "spec.prefix",
	                "missing; set to %u, from the single CIDR in spec.addresses", bits);
	return PK_OK;
}

/*
 * A gateway outside <first address>/<prefix> is dropped (poolkeeper denies
 * it; the in-cluster provider never checked); /31, /32, /127 and /128
 * without allocateReservedIPAddresses are a warning: poolkeeper hands out
 * the addresses the in-cluster provider keeps back there.
 */
static int check_subnet(json_t *spec, struct pk_convert_log *lg)
{
	struct pk_violations v;
	struct pk_pool p;
	size_t n = 0;
	int rc;

	pk_violations_init(&v);
	rc = pk_pool_decode(spec, &p, &v);
	const struct pk_range *r = p.addresses ? pk_range_set_ranges(p.addresses, &n) : NULL;
	if (rc != PK_OK || n == 0 || !p.has_prefix || p.family == PK_FAMILY_NONE)
		goto out;
	pk_u128 net, last;
	char gw[PK_ADDR_STRLEN], nt[PK_ADDR_STRLEN];
	pk_address_subnet(r[0].lo, p.family, p.prefix, &net, &last);
	pk_address_format_v(net, p.family, nt);
	if (p.has_gateway && (p.gateway < net || p.gateway > last)) {
		pk_address_format_v(p.gateway, p.family, gw);
		(void)json_object_del(spec, "gateway");
		pk_convert_logf(
		    lg, PK_CONVERT_WARNING, "spec.gateway",
		    "\"%s\" is outside the pool's subnet %s/%u and was dropped "
		    "(poolkeeper refuses it there, and the gateway is optional): new "
		    "IPAddresses carry no gateway, so give machines their route another "
		    "way, or fix the gateway or the prefix",
		    gw, nt, p.prefix);
	}
	if (!p.allocate_reserved && p.prefix + 1 >= pk_address_bits(p.family))
		pk_convert_logf(
		    lg, PK_CONVERT_WARNING, "spec.prefix",
		    "%u: poolkeeper hands out every address of a /%u subnet "
		    "(point-to-point links), where the in-cluster provider keeps its "
		    "first%s address back; exclude %s in spec.excludedAddresses to keep "
		    "it back",
		    p.prefix, p.prefix, p.family == PK_FAMILY_V4 ? " and last" : "", nt);
out:
	pk_pool_release(&p);
	return rc;
}

int pk_convert_pool_spec(const json_t *spec, const char *version, json_t **out,
                         struct pk_convert_log *lg)
{
	char desc[200];
	int rc;

	*out = NULL;
	if (!json_is_object(spec)) {
		pk_convert_logf(lg, PK_CONVERT_ERROR, "spec", "must be an object, got %s",
		                pk_violation_describe_value(spec, true, desc, sizeof(desc)));
		return PK_OK;
	}
	json_t *s = json_deep_copy(spec);
	if (s == NULL)
		return PK_ERR_NOMEM;
	size_t errors = lg->errors;
	check_fields(s, version, lg);
	rc = fix_entries(s, "addresses", lg);
	if (rc == PK_OK)
		rc = fix_entries(s, "excludedAddresses", lg);
	if (rc == PK_OK && !strcmp(version, "v1alpha1"))
		rc = convert_v1alpha1(s, lg);
	/* The prefix and the subnet are read from entries that parsed: none after an error. */
	if (rc == PK_OK && lg->errors == errors)
		rc = fill_prefix(s, lg);
	if (rc == PK_OK && lg->errors == errors)
		rc = check_subnet(s, lg);
	if (rc != PK_OK) {
		json_decref(s);
		return rc;
	}
	*out = s;
	return PK_OK;
}
