/*
 * parse.h - numbers and the values command-line flags carry, parsed
 * strictly (OpenBSD's strtonum: the whole text, in a range, or an error
 * naming the text): a decimal in a range, a real number, a Go duration
 * ("15s", "500ms", "1m30s", as time.ParseDuration reads them) in a range,
 * and a listen address "HOST:PORT" (controller-runtime's
 * --metrics-bind-address spelling). Use these rather than strto*: they
 * refuse leading blanks, trailing bytes and silent wrap-around.
 *
 * Pure: no I/O, no logging. Every error message starts with "must be", so
 * that a caller puts the flag's (or field's) name in front: --workers must
 * be an integer in 1..64, got "0".
 */
#ifndef PK_PARSE_H
#define PK_PARSE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "pk.h"

/* Nanoseconds per unit, as Go's time package counts them. */
#define PK_NS_PER_MS (1000LL * 1000LL)
#define PK_NS_PER_S  (1000LL * PK_NS_PER_MS)

/*
 * A decimal integer in [min, max]: digits only (no sign, no spaces, no
 * "0x"). PK_ERR_INVALID with a message naming the value and the range.
 */
PK_MUST_CHECK int pk_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out,
                                struct pk_err *err);

/* A decimal integer in [min, max] with an optional sign ("-5", "+5", "5"); as pk_parse_uint. */
PK_MUST_CHECK int pk_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out,
                               struct pk_err *err);

/*
 * A decimal real number, the whole of s: [-+]?(.D+|D+(.D*)?)([eE][-+]?D+)?
 * (no "inf", "nan", hex or blanks). PK_ERR_INVALID when s is not one,
 * PK_ERR_TOO_BIG when its magnitude is beyond a double; a value nearer zero
 * than a double holds reads as (about) zero.
 */
PK_MUST_CHECK int pk_parse_real(const char *s, double *out, struct pk_err *err);

/*
 * A Go duration in [min_ns, max_ns]: "0", or a signed sequence of decimal
 * numbers, each with an optional fraction and a unit (ns, us, µs, ms, s,
 * m, h): "300ms", "1.5h", "2h45m". A number without a unit ("15") is an
 * error, as in Go.
 */
PK_MUST_CHECK int pk_parse_duration(const char *s, int64_t min_ns, int64_t max_ns, int64_t *out_ns,
                                    struct pk_err *err);

/* Compact Go duration text of ns ("1m30s", "500ms", "0s") that parses back to ns. */
void pk_format_duration(int64_t ns, char *buf, size_t len);

/*
 * A Kubernetes object name: with `dots` false an RFC 1123 label (a
 * namespace: at most 63 of a-z, 0-9 and '-', starting and ending with a
 * letter or digit), with `dots` true an RFC 1123 subdomain (a Lease: at
 * most 253, labels joined by '.').
 */
PK_MUST_CHECK int pk_parse_dns_name(const char *s, bool dots, struct pk_err *err);

/* A label value: at most 63 of A-Z, a-z, 0-9, '-', '_' and '.', alphanumeric at both ends. */
PK_MUST_CHECK int pk_parse_label_value(const char *s, struct pk_err *err);

/* A listen address. */
struct pk_hostport {
	char host[INET6_ADDRSTRLEN]; /* without brackets; "" for every address */
	uint16_t port;               /* 0: any free port */
};

/*
 * "HOST:PORT", with HOST empty (every address: dual-stack where the host
 * has IPv6), an IPv4 literal (0.0.0.0 is every IPv4 address) or an IPv6
 * literal in brackets ("[::1]:8081"), and PORT in 0..65535 (0: any free
 * port). Host names are refused: a listener binds an address.
 */
PK_MUST_CHECK int pk_parse_hostport(const char *s, struct pk_hostport *out, struct pk_err *err);

/*
 * The socket address of hp (its port included). *any is true, and *ss of
 * family AF_UNSPEC with *len 0, when the host is empty.
 */
void pk_hostport_sockaddr(const struct pk_hostport *hp, struct sockaddr_storage *ss, socklen_t *len,
                          bool *any);

/* "HOST:PORT" text of hp, IPv6 in brackets, for logs and errors. */
void pk_hostport_format(const struct pk_hostport *hp, char *buf, size_t len);

#endif
