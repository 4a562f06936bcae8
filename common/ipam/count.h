/*
 * count.h - exact address counts up to and including 2^128 (all of IPv6),
 * which needs 129 bits, and their decimal text.
 */
#ifndef PK_COUNT_H
#define PK_COUNT_H

#include "pk.h"

/* value = carry * 2^128 + lo; carry is 0 or 1. */
struct pk_count {
	pk_u128 lo;
	unsigned carry;
};

/* 2^128 has 39 digits. */
#define PK_COUNT_STRLEN 40

static inline struct pk_count pk_count_of(pk_u128 v)
{
	struct pk_count c = {v, 0};
	return c;
}

/* a + b; saturates at 2^128 (no two disjoint sets of addresses exceed it). */
struct pk_count pk_count_add(struct pk_count a, struct pk_count b);

/* a - b, 0 when b > a. */
struct pk_count pk_count_sub(struct pk_count a, struct pk_count b);

int pk_count_cmp(struct pk_count a, struct pk_count b);

/* Decimal text into buf (at least PK_COUNT_STRLEN bytes); returns buf. */
char *pk_count_format(struct pk_count c, char buf[PK_COUNT_STRLEN]);

/* Decimal text of a plain 128-bit value. */
char *pk_u128_format(pk_u128 v, char buf[PK_COUNT_STRLEN]);

#endif
