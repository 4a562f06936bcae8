/* address.c - IPv4/IPv6 parsing and formatting over inet_pton/inet_ntop. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "address.h"

unsigned pk_address_bits(enum pk_family f)
{
	switch (f) {
	case PK_FAMILY_V4:
		return 32;
	case PK_FAMILY_V6:
		return 128;
	default:
		return 0;
	}
}

pk_u128 pk_address_max(enum pk_family f)
{
	return f == PK_FAMILY_V4 ? (pk_u128)UINT32_MAX : PK_U128_MAX;
}

const char *pk_address_family_name(enum pk_family f)
{
	switch (f) {
	case PK_FAMILY_V4:
		return "IPv4";
	case PK_FAMILY_V6:
		return "IPv6";
	default:
		return "unknown";
	}
}

#define WHAT(w) ((w) ? (w) : "address")

int pk_address_parse_n(const char *s, size_t n, struct pk_addr *out, const char *what,
                       struct pk_err *err)
{
	char shown[300] = "";
	char text[PK_ADDR_TEXT_MAX + 1];
/* The text as messages quote it, made only when a message needs it. */
#define SHOWN() (shown[0] != '\0' ? shown : (pk_text_quote(s, n, shown, sizeof(shown)), shown))

	if (n == 0)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: empty, expected an IPv4 or IPv6 address", WHAT(what));
	if (n > PK_ADDR_TEXT_MAX)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s: \"%s\" is too long to be an IP address (%zu characters, at "
		                  "most %d)",
		                  WHAT(what), SHOWN(), n, PK_ADDR_TEXT_MAX);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f')
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s: \"%s\" contains whitespace; write the address alone",
			                  WHAT(what), SHOWN());
		if (c == '%')
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s: \"%s\" has a zone (%%...); zones are not allowed in "
			                  "pool addresses",
			                  WHAT(what), SHOWN());
		if (c == '\0' || c >= 0x7f)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s: \"%s\" is not an IPv4 or IPv6 address", WHAT(what),
			                  SHOWN());
	}
	memcpy(text, s, n);
	text[n] = '\0';

	if (memchr(text, ':', n) != NULL) {
		unsigned char b[16];
		if (inet_pton(AF_INET6, text, b) != 1)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s: \"%s\" is not a valid IPv6 address", WHAT(what),
			                  SHOWN());
		pk_u128 v = 0;
		for (int i = 0; i < 16; i++)
			v = (v << 8) | b[i];
		out->v = v;
		out->family = PK_FAMILY_V6;
		return PK_OK;
	}

	/*
	 * "010.0.0.1" means 8.0.0.1 to some resolvers and 10.0.0.1 to others;
	 * Go's net/netip and Kubernetes refuse it, so poolkeeper does too,
	 * whatever this C library's inet_pton would say.
	 */
	for (size_t i = 0; i < n; i++) {
		bool starts = (i == 0 || text[i - 1] == '.');
		if (starts && text[i] == '0' && i + 1 < n && text[i + 1] >= '0' &&
		    text[i + 1] <= '9')
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s: \"%s\" has an IPv4 octet with a leading zero; write "
			                  "it without (octal notation is ambiguous)",
			                  WHAT(what), SHOWN());
	}
	unsigned char b4[4];
	if (inet_pton(AF_INET, text, b4) != 1)
		return pk_err_set(err, PK_ERR_INVALID, "%s: \"%s\" is not an IPv4 or IPv6 address",
		                  WHAT(what), SHOWN());
	out->v = ((pk_u128)b4[0] << 24) | ((pk_u128)b4[1] << 16) | ((pk_u128)b4[2] << 8) | b4[3];
	out->family = PK_FAMILY_V4;
	return PK_OK;
#undef SHOWN
}

int pk_address_parse(const char *s, struct pk_addr *out, const char *what, struct pk_err *err)
{
	if (s == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "%s: missing, expected an IP address",
		                  WHAT(what));
	/* Bound the scan: anything past the cap is refused by parse_n anyway. */
	size_t n = strnlen(s, PK_ADDR_TEXT_MAX + 1);
	if (n > PK_ADDR_TEXT_MAX)
		n = strlen(s);
	return pk_address_parse_n(s, n, out, what, err);
}

static bool v_hi96_zero(const unsigned char b[16])
{
	for (int i = 0; i < 12; i++)
		if (b[i] != 0)
			return false;
	return true;
}

char *pk_address_format(const struct pk_addr *a, char buf[PK_ADDR_STRLEN])
{
	return pk_address_format_v(a->v, a->family, buf);
}

char *pk_address_format_v(pk_u128 v, enum pk_family f, char buf[PK_ADDR_STRLEN])
{
	if (f == PK_FAMILY_V4) {
		unsigned char b[4];
		for (int i = 3; i >= 0; i--) {
			b[i] = (unsigned char)(v & 0xff);
			v >>= 8;
		}
		if (inet_ntop(AF_INET, b, buf, PK_ADDR_STRLEN) == NULL)
			buf[0] = '\0';
		return buf;
	}
	if (f == PK_FAMILY_V6) {
		unsigned char b[16];
		for (int i = 15; i >= 0; i--) {
			b[i] = (unsigned char)(v & 0xff);
			v >>= 8;
		}
		if (inet_ntop(AF_INET6, b, buf, PK_ADDR_STRLEN) == NULL) {
			buf[0] = '\0';
			return buf;
		}
		/*
		 * The C library prints ::/96 (deprecated IPv4-compatible addresses)
		 * as "::a.b.c.d". RFC 5952 section 5 keeps the dotted form for
		 * well-known prefixes such as ::ffff:0:0/96 only, and Go's net/netip
		 * (what the Kubernetes side prints) writes these in hex, so do that.
		 */
		if (strchr(buf, '.') != NULL && (v_hi96_zero(b))) {
			unsigned w6 = ((unsigned)b[12] << 8) | b[13];
			unsigned w7 = ((unsigned)b[14] << 8) | b[15];
			if (w6 == 0)
				snprintf(buf, PK_ADDR_STRLEN, "::%x", w7);
			else
				snprintf(buf, PK_ADDR_STRLEN, "::%x:%x", w6, w7);
		}
		return buf;
	}
	memcpy(buf, "?", 2);
	return buf;
}

pk_u128 pk_address_netmask(enum pk_family f, unsigned prefix_len)
{
	unsigned bits = pk_address_bits(f);
	if (prefix_len > bits)
		prefix_len = bits;
	if (prefix_len == 0)
		return 0;
	pk_u128 all = pk_address_max(f);
	/* Shift by less than 128 only: shifting a 128-bit value by 128 is undefined. */
	pk_u128 host =
	    (bits - prefix_len) == 128 ? PK_U128_MAX : (((pk_u128)1 << (bits - prefix_len)) - 1);
	return all & ~host;
}

void pk_address_subnet(pk_u128 v, enum pk_family f, unsigned prefix_len, pk_u128 *first,
                       pk_u128 *last)
{
	pk_u128 mask = pk_address_netmask(f, prefix_len);
	*first = v & mask;
	*last = (v & mask) | (pk_address_max(f) & ~mask);
}
