/*
 * fuzz_addr_spec.c - libFuzzer target for address and address-spec parsing.
 * Beyond "no crash", it checks what callers rely on: an accepted entry is an
 * interval of one family inside that family's space, its canonical text
 * parses back to the same value, and a CIDR's bounds are its subnet's.
 */
#include <stdlib.h>
#include <string.h>

#include "addr_spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *s = malloc(size + 1);
	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	struct pk_addr_spec sp;
	struct pk_err err;
	if (pk_addr_spec_parse(s, &sp, "spec.addresses[0]", &err) == PK_OK) {
		if (sp.first > sp.last || sp.last > pk_address_max(sp.family))
			abort();
		char buf[PK_ADDR_STRLEN];
		struct pk_addr back;
		pk_address_format_v(sp.first, sp.family, buf);
		if (pk_address_parse(buf, &back, NULL, &err) != PK_OK || back.v != sp.first ||
		    back.family != sp.family)
			abort();
		if (sp.kind == PK_SPEC_CIDR) {
			pk_u128 f, l;
			pk_address_subnet(sp.first, sp.family, sp.prefix_len, &f, &l);
			if (f != sp.first || l != sp.last)
				abort();
		}
	} else if (memchr(err.msg, '\0', sizeof(err.msg)) == NULL) {
		abort();
	}

	struct pk_addr a;
	(void)pk_address_parse_n((const char *)data, size, &a, NULL, &err);
	free(s);
	return 0;
}
