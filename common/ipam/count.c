/* count.c - 129-bit address counts and their decimal text. */
#include <string.h>

#include "count.h"

struct pk_count pk_count_add(struct pk_count a, struct pk_count b)
{
	struct pk_count r;
	r.lo = a.lo + b.lo;
	r.carry = a.carry + b.carry + (r.lo < a.lo ? 1u : 0u);
	if (r.carry >= 1) { /* 2^128 is the most any set of addresses holds */
		r.carry = 1;
		r.lo = 0;
	}
	return r;
}

int pk_count_cmp(struct pk_count a, struct pk_count b)
{
	if (a.carry != b.carry)
		return a.carry < b.carry ? -1 : 1;
	if (a.lo != b.lo)
		return a.lo < b.lo ? -1 : 1;
	return 0;
}

struct pk_count pk_count_sub(struct pk_count a, struct pk_count b)
{
	struct pk_count r = {0, 0};
	if (pk_count_cmp(a, b) <= 0)
		return r;
	r.lo = a.lo - b.lo; /* modulo 2^128; the borrow comes out of carry */
	r.carry = a.carry - b.carry - (a.lo < b.lo ? 1u : 0u);
	return r;
}

char *pk_u128_format(pk_u128 v, char buf[PK_COUNT_STRLEN])
{
	char tmp[PK_COUNT_STRLEN];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + (int)(v % 10));
		v /= 10;
	} while (v != 0);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return buf;
}

char *pk_count_format(struct pk_count c, char buf[PK_COUNT_STRLEN])
{
	if (c.carry) {
		static const char two128[] = "340282366920938463463374607431768211456";
		memcpy(buf, two128, sizeof(two128));
		return buf;
	}
	return pk_u128_format(c.lo, buf);
}
