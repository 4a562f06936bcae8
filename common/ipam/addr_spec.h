/*
 * addr_spec.h - the address entries cluster admins write in pools:
 *   a single address  "10.0.0.5"            "2001:db8::5"
 *   a range  a-b      "10.0.0.10-10.0.0.20" (start <= end, one family)
 *   a CIDR   a/n      "10.0.0.0/24"         (no host bits set)
 * Each is one closed interval [first, last] of one family.
 */
#ifndef PK_ADDR_SPEC_H
#define PK_ADDR_SPEC_H

#include "address.h"

enum pk_addr_spec_kind {
	PK_SPEC_SINGLE = 1,
	PK_SPEC_RANGE = 2,
	PK_SPEC_CIDR = 3,
};

/* Longest entry accepted: two full IPv6 texts and a dash. */
#define PK_ADDR_SPEC_TEXT_MAX (2 * PK_ADDR_TEXT_MAX + 1)

struct pk_addr_spec {
	enum pk_addr_spec_kind kind;
	enum pk_family family;
	pk_u128 first;
	pk_u128 last;
	unsigned prefix_len; /* CIDR only */
};

/*
 * Parses one entry. `what` names it in messages (e.g. "spec.addresses[2]").
 * A CIDR with host bits set is refused with a message naming the network
 * address it probably meant ("did you mean 10.0.0.0/24?").
 */
PK_MUST_CHECK int pk_addr_spec_parse(const char *s, struct pk_addr_spec *out, const char *what,
                                     struct pk_err *err);

#endif
