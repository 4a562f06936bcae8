/* httpd_source.c - connections' sources and the counts per source (httpd_source.h). */
#include "httpd_source.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

struct pk_httpd_source pk_httpd_source_from(const struct sockaddr *sa)
{
	struct pk_httpd_source src = {0};
	if (sa == NULL)
		return src;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
		src.family = AF_INET;
		memcpy(src.addr, &in->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			src.family = AF_INET;
			memcpy(src.addr, in6->sin6_addr.s6_addr + 12, 4);
		} else {
			src.family = AF_INET6;
			memcpy(src.addr, &in6->sin6_addr, 16);
		}
	}
	return src;
}

struct pk_httpd_source pk_httpd_source_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ai =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	return pk_httpd_source_from(ai != NULL ? ai->client_addr : NULL);
}

bool pk_httpd_source_same(const struct pk_httpd_source *a, const struct pk_httpd_source *b)
{
	return a->family != 0 && a->family == b->family &&
	       memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

static size_t source_hash(const struct pk_httpd_source *src)
{
	/* FNV-1a over the family and the address. */
	uint64_t x = 1469598103934665603ull ^ src->family;
	x *= 1099511628211ull;
	for (size_t i = 0; i < sizeof(src->addr); i++) {
		x ^= src->addr[i];
		x *= 1099511628211ull;
	}
	return (size_t)(x ^ (x >> 32));
}

int pk_httpd_source_counts_init(struct pk_httpd_source_counts *c, size_t most, struct pk_err *err)
{
	memset(c, 0, sizeof(*c));
	c->nslots = 16;
	while (c->nslots < 2 * most)
		c->nslots *= 2;
	c->slots = calloc(c->nslots, sizeof(*c->slots));
	if (c->slots == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	return PK_OK;
}

void pk_httpd_source_counts_free(struct pk_httpd_source_counts *c)
{
	free(c->slots);
	memset(c, 0, sizeof(*c));
}

/* src's slot: its own, or the free one where it would go. */
static struct pk_httpd_source_count *slot_of(const struct pk_httpd_source_counts *c,
                                             const struct pk_httpd_source *src)
{
	size_t mask = c->nslots - 1;
	for (size_t i = source_hash(src) & mask;; i = (i + 1) & mask) {
		struct pk_httpd_source_count *e = &c->slots[i];
		if (e->n == 0 || pk_httpd_source_same(&e->src, src))
			return e;
	}
}

unsigned pk_httpd_source_counts_get(const struct pk_httpd_source_counts *c,
                                    const struct pk_httpd_source *src)
{
	return src->family != 0 ? slot_of(c, src)->n : 0;
}

bool pk_httpd_source_counts_add(struct pk_httpd_source_counts *c, const struct pk_httpd_source *src)
{
	if (src->family == 0)
		return false;
	struct pk_httpd_source_count *e = slot_of(c, src);
	if (e->n == 0) {
		/* Never full, so every probe ends; beyond what can be counted, uncounted. */
		if (2 * (c->nused + 1) > c->nslots)
			return false;
		c->nused++;
		e->src = *src;
	}
	e->n++;
	return true;
}

/*
 * A slot that frees up is refilled from the run after it (backward-shift
 * deletion), so no probe sequence is broken.
 */
void pk_httpd_source_counts_remove(struct pk_httpd_source_counts *c,
                                   const struct pk_httpd_source *src)
{
	struct pk_httpd_source_count *e = slot_of(c, src);
	if (e->n == 0 || --e->n > 0)
		return;
	c->nused--;
	size_t mask = c->nslots - 1;
	size_t hole = (size_t)(e - c->slots);
	for (size_t i = (hole + 1) & mask; c->slots[i].n != 0; i = (i + 1) & mask) {
		size_t home = source_hash(&c->slots[i].src) & mask;
		/* Moves back only an entry whose home is not between the hole and it. */
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			c->slots[hole] = c->slots[i];
			c->slots[i].n = 0;
			hole = i;
		}
	}
}
