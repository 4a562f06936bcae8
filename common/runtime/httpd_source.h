/*
 * httpd_source.h - a connection's source, as the listeners' per-source
 * limits and the fair pool's lines know it: the peer's IP address, an
 * IPv4-mapped IPv6 address as IPv4. And a table that counts something
 * (open connections) per source.
 */
#ifndef PK_HTTPD_SOURCE_H
#define PK_HTTPD_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "pk.h"

struct pk_httpd_source {
	sa_family_t family; /* AF_INET, AF_INET6; 0: unknown (never limited) */
	uint8_t addr[16];
};

/* sa's source; unknown (family 0) for NULL or another family. */
struct pk_httpd_source pk_httpd_source_from(const struct sockaddr *sa);
/* The source of conn's peer. */
struct pk_httpd_source pk_httpd_source_of(struct MHD_Connection *conn);
/* Both known and the same address. */
bool pk_httpd_source_same(const struct pk_httpd_source *a, const struct pk_httpd_source *b);

/*
 * Counts per known source: open addressing with linear probing over a
 * power of two of slots, at least twice the most sources counted at once,
 * so every probe ends; a count that falls to 0 frees its slot. Not locked:
 * the caller's lock guards it.
 */
struct pk_httpd_source_counts {
	struct pk_httpd_source_count {
		struct pk_httpd_source src;
		unsigned n; /* 0: a free slot */
	} * slots;
	size_t nslots, nused;
};

/* For up to `most` sources at once. */
PK_MUST_CHECK int pk_httpd_source_counts_init(struct pk_httpd_source_counts *c, size_t most,
                                              struct pk_err *err);
void pk_httpd_source_counts_free(struct pk_httpd_source_counts *c);
/* src's count; 0 for an unknown source. */
unsigned pk_httpd_source_counts_get(const struct pk_httpd_source_counts *c,
                                    const struct pk_httpd_source *src);
/* One more for src; false when it was not counted (unknown source, or `most` sources already). */
bool pk_httpd_source_counts_add(struct pk_httpd_source_counts *c,
                                const struct pk_httpd_source *src);
/* One less for src, which pk_httpd_source_counts_add counted. */
void pk_httpd_source_counts_remove(struct pk_httpd_source_counts *c,
                                   const struct pk_httpd_source *src);

#endif
