/* addr_spec.c - single addresses, ranges a-b and CIDRs a/n as intervals. */
#include <string.h>

#include "addr_spec.h"

#define WHAT(w) ((w) ? (w) : "address")

/* The address module's reason without its "address: " lead-in. */
static const char *detail(const struct pk_err *e)
{
	static const char lead[] = "address: ";
	return strncmp(e->msg, lead, sizeof(lead) - 1) == 0 ? e->msg + sizeof(lead) - 1 : e->msg;
}

/* Parses the decimal prefix length in s[0..n) within 0..max, no sign, no leading zeros. */
static bool parse_prefix_len(const char *s, size_t n, unsigned max, unsigned *out)
{
	if (n == 0 || n > 3)
		return false;
	if (n > 1 && s[0] == '0')
		return false;
	unsigned v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > max)
		return false;
	*out = v;
	return true;
}

/* "a-b": both ends of one family, the lower first. */
static int parse_range(const char *s, size_t n, const char *dash, const char *what, const char *q,
                       struct pk_addr_spec *out, struct pk_err *err)
{
	struct pk_addr a, b;
	struct pk_err sub;
	size_t ln = (size_t)(dash - s);
	if (memchr(dash + 1, '-', n - ln - 1) != NULL)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: \"%s\" has more than one '-'; a range is start-end",
		                  WHAT(what), q);
	if (pk_address_parse_n(s, ln, &a, NULL, &sub) != PK_OK)
		return pk_err_set(err, PK_ERR_INVALID, "%s: range \"%s\": start: %s", WHAT(what), q,
		                  detail(&sub));
	if (pk_address_parse_n(dash + 1, n - ln - 1, &b, NULL, &sub) != PK_OK)
		return pk_err_set(err, PK_ERR_INVALID, "%s: range \"%s\": end: %s", WHAT(what), q,
		                  detail(&sub));
	if (a.family != b.family)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: range \"%s\" mixes an %s start and an %s end", WHAT(what), q,
		                  pk_address_family_name(a.family),
		                  pk_address_family_name(b.family));
	if (a.v > b.v)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: range \"%s\" starts after it ends; write the lower address "
		                  "first",
		                  WHAT(what), q);
	out->kind = PK_SPEC_RANGE;
	out->family = a.family;
	out->first = a.v;
	out->last = b.v;
	out->prefix_len = 0;
	return PK_OK;
}

/* "a/n": a network address (no host bits set) and a prefix length of its family. */
static int parse_cidr(const char *s, size_t n, const char *slash, const char *what, const char *q,
                      struct pk_addr_spec *out, struct pk_err *err)
{
	struct pk_addr a;
	struct pk_err sub;
	size_t ln = (size_t)(slash - s);
	if (pk_address_parse_n(s, ln, &a, NULL, &sub) != PK_OK)
		return pk_err_set(err, PK_ERR_INVALID, "%s: CIDR \"%s\": %s", WHAT(what), q,
		                  detail(&sub));
	unsigned bits = pk_address_bits(a.family), plen;
	if (!parse_prefix_len(slash + 1, n - ln - 1, bits, &plen))
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: CIDR \"%s\" has prefix length \"%s\"; expected a number "
		                  "0..%u for %s",
		                  WHAT(what), q, q + (slash - s) + 1, bits,
		                  pk_address_family_name(a.family));
	pk_u128 first, last;
	pk_address_subnet(a.v, a.family, plen, &first, &last);
	if (first != a.v) {
		char net[PK_ADDR_STRLEN];
		pk_address_format_v(first, a.family, net);
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: CIDR \"%s\" has host bits set; did you mean %s/%u?",
		                  WHAT(what), q, net, plen);
	}
	out->kind = PK_SPEC_CIDR;
	out->family = a.family;
	out->first = first;
	out->last = last;
	out->prefix_len = plen;
	return PK_OK;
}

int pk_addr_spec_parse(const char *s, struct pk_addr_spec *out, const char *what,
                       struct pk_err *err)
{
	if (s == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "%s: missing", WHAT(what));
	size_t n = strnlen(s, PK_ADDR_SPEC_TEXT_MAX + 1);
	char q[300];
	pk_text_quote(s, n, q, sizeof(q));
	if (n == 0)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: empty; expected an IP address, a range a-b or a CIDR a/n",
		                  WHAT(what));
	if (n > PK_ADDR_SPEC_TEXT_MAX)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: \"%.64s...\" is too long for an address, range or CIDR "
		                  "(at most %d characters)",
		                  WHAT(what), q, PK_ADDR_SPEC_TEXT_MAX);

	const char *slash = memchr(s, '/', n);
	const char *dash = memchr(s, '-', n);
	struct pk_addr a;
	struct pk_err sub;

	if (slash != NULL && dash != NULL && dash < slash)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: \"%s\" mixes a range and a CIDR; write either a-b or a/n",
		                  WHAT(what), q);
	if (dash != NULL && slash == NULL)
		return parse_range(s, n, dash, what, q, out, err);
	if (slash != NULL)
		return parse_cidr(s, n, slash, what, q, out, err);
	if (pk_address_parse_n(s, n, &a, NULL, &sub) != PK_OK)
		return pk_err_set(err, PK_ERR_INVALID, "%s: %s", WHAT(what), detail(&sub));
	out->kind = PK_SPEC_SINGLE;
	out->family = a.family;
	out->first = a.v;
	out->last = a.v;
	out->prefix_len = pk_address_bits(a.family);
	return PK_OK;
}
