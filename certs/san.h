/*
 * san.h - the names a serving certificate must carry: the Service's DNS
 * names (svc, svc.ns, svc.ns.svc, svc.ns.svc.<cluster domain>), extra DNS
 * names and IP addresses, checked, lower-cased and without duplicates, so
 * two lists can be compared as sets.
 *
 * Pure: no I/O, no logging. Failures come back as PK_ERR_INVALID with a
 * reason that quotes the value and starts "must be"; the caller puts the
 * flag's name in front.
 */
#ifndef PK_CERTS_SAN_H
#define PK_CERTS_SAN_H

#include <stdbool.h>
#include <stddef.h>

#include "pk.h"

/* At most this many DNS names, and as many IP addresses. */
#define PK_SAN_MAX 64
/* RFC 1035 2.3.4: a name is at most 253 characters, a label at most 63. */
#define PK_SAN_DNS_MAX   253
#define PK_SAN_LABEL_MAX 63

struct pk_san_ip {
	unsigned char len; /* 4 or 16 */
	unsigned char addr[16];
};

/* Initialise with pk_san_init; owns its strings, released by pk_san_free. */
struct pk_san {
	char *dns[PK_SAN_MAX]; /* lower case, in the order added */
	size_t ndns;
	struct pk_san_ip ip[PK_SAN_MAX];
	size_t nip;
};

void pk_san_init(struct pk_san *s);
void pk_san_free(struct pk_san *s);

/*
 * A Kubernetes Service name: an RFC 1035 label, [a-z]([-a-z0-9]*[a-z0-9])?,
 * at most 63. The message starts "must be" (parse.h's convention), for the
 * caller to put the flag's name in front.
 */
PK_MUST_CHECK int pk_san_check_service(const char *name, struct pk_err *err);

/*
 * Adds svc, svc.ns, svc.ns.svc and svc.ns.svc.<domain>: how clients in
 * the cluster (the API server among them) name the Service. domain NULL or
 * "" adds the first three only. svc is checked with pk_san_check_service,
 * ns as a DNS label and domain as a DNS subdomain (parse.h).
 */
PK_MUST_CHECK int pk_san_add_service(struct pk_san *s, const char *svc, const char *ns,
                                     const char *domain, struct pk_err *err);

/*
 * A DNS name (RFC 1123 labels; a leading "*." wildcard label is allowed),
 * lower-cased; a name already present is not added twice. Messages start
 * "must be".
 */
PK_MUST_CHECK int pk_san_add_dns(struct pk_san *s, const char *name, struct pk_err *err);

/* An IPv4 or IPv6 address in the notation inet_pton(3) reads. */
PK_MUST_CHECK int pk_san_add_ip(struct pk_san *s, const char *addr, struct pk_err *err);

/* The same bytes, for names read back from a certificate (no checks). */
PK_MUST_CHECK int pk_san_add_ip_bytes(struct pk_san *s, const unsigned char *b, size_t len,
                                      struct pk_err *err);

bool pk_san_has_dns(const struct pk_san *s, const char *name);
bool pk_san_has_ip(const struct pk_san *s, const struct pk_san_ip *ip);

/* True when a and b hold the same names, in any order. */
bool pk_san_equal(const struct pk_san *a, const struct pk_san *b);

/*
 * What `have` lacks and what it has beyond `want`, for a log line:
 * "missing DNS:a.b, IP:10.0.0.1; extra DNS:c". Always NUL-terminated; cut
 * with "..." when buf is short.
 */
void pk_san_diff(const struct pk_san *want, const struct pk_san *have, char *buf, size_t len);

/* "DNS:a, DNS:b, IP:127.0.0.1" into buf (cut with "..." when short). */
void pk_san_format(const struct pk_san *s, char *buf, size_t len);

#endif
