/*
 * address.h - IPv4 and IPv6 addresses as one 128-bit value plus a family.
 *
 * Parsing goes through inet_pton(3); nothing here is a hand-written address
 * parser. On top of inet_pton this module refuses what Kubernetes and Go's
 * net/netip refuse and inet_pton alone would let through or report vaguely:
 * surrounding or embedded whitespace, IPv6 zones ("fe80::1%eth0"), and IPv4
 * octets with leading zeros ("010.0.0.1", ambiguous with octal).
 *
 * IPv4-mapped IPv6 ("::ffff:10.0.0.1") is an IPv6 address here, exactly as
 * net/netip's ParseAddr treats it: it is never folded into IPv4, so it cannot
 * appear in an IPv4 pool and never equals the IPv4 address it embeds. It is
 * formatted the way inet_ntop prints it ("::ffff:10.0.0.1").
 */
#ifndef PK_ADDRESS_H
#define PK_ADDRESS_H

#include "pk.h"

enum pk_family {
	PK_FAMILY_NONE = 0,
	PK_FAMILY_V4 = 4,
	PK_FAMILY_V6 = 6,
};

struct pk_addr {
	pk_u128 v;
	enum pk_family family;
};

/* Longest text accepted as an address (INET6_ADDRSTRLEN less the NUL). */
#define PK_ADDR_TEXT_MAX 45
/* Buffer size that holds any formatted address plus NUL. */
#define PK_ADDR_STRLEN 46

/* Number of bits in the family's addresses: 32, 128, or 0 for NONE. */
unsigned pk_address_bits(enum pk_family f);

/* Largest value of the family (2^32-1 or 2^128-1). */
pk_u128 pk_address_max(enum pk_family f);

/* "IPv4" / "IPv6" / "unknown", for messages. */
const char *pk_address_family_name(enum pk_family f);

/*
 * Parses one address. `what` names the input in error messages (a field
 * path such as "spec.gateway"); it may be NULL. Returns PK_OK or
 * PK_ERR_INVALID with err set.
 */
PK_MUST_CHECK int pk_address_parse(const char *s, struct pk_addr *out, const char *what,
                                   struct pk_err *err);

/* Same, on a length-delimited buffer that need not be NUL-terminated. */
PK_MUST_CHECK int pk_address_parse_n(const char *s, size_t n, struct pk_addr *out, const char *what,
                                     struct pk_err *err);

/*
 * Canonical text (RFC 5952 for IPv6, dotted quad for IPv4) into buf, which
 * holds at least PK_ADDR_STRLEN bytes. Returns buf.
 */
char *pk_address_format(const struct pk_addr *a, char buf[PK_ADDR_STRLEN]);

/* Formats a raw value of a family; convenience over pk_address_format. */
char *pk_address_format_v(pk_u128 v, enum pk_family f, char buf[PK_ADDR_STRLEN]);

/* Mask with the top `prefix_len` bits of the family set. prefix_len <= bits. */
pk_u128 pk_address_netmask(enum pk_family f, unsigned prefix_len);

/* First and last value of the subnet of `v` with `prefix_len`. */
void pk_address_subnet(pk_u128 v, enum pk_family f, unsigned prefix_len, pk_u128 *first,
                       pk_u128 *last);

#endif
