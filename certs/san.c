/* san.c - the DNS names and IP addresses of a serving certificate. */
#include "san.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

void pk_san_init(struct pk_san *s)
{
	memset(s, 0, sizeof(*s));
}

void pk_san_free(struct pk_san *s)
{
	for (size_t i = 0; i < s->ndns; i++)
		free(s->dns[i]);
	memset(s, 0, sizeof(*s));
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static int invalid(struct pk_err *err, const char *name, const char *what)
{
	char q[300];
	pk_text_quote(name, strlen(name), q, sizeof(q));
	return pk_err_set(err, PK_ERR_INVALID, "must be %s, got \"%s\"", what, q);
}

/*
 * One label of [0..n) in lower case: alphanumerics and '-', neither first
 * nor last, at most 63 (RFC 1123 2.1); `letter_first` adds RFC 1035's rule
 * that it starts with a letter.
 */
static bool label_ok(const char *p, size_t n, bool letter_first)
{
	if (n == 0 || n > PK_SAN_LABEL_MAX || p[0] == '-' || p[n - 1] == '-')
		return false;
	if (letter_first && !(p[0] >= 'a' && p[0] <= 'z'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_lower_alnum(p[i]) && p[i] != '-')
			return false;
	return true;
}

int pk_san_check_service(const char *name, struct pk_err *err)
{
	if (!label_ok(name, strlen(name), true))
		return invalid(
		    err, name,
		    "a Service name (at most 63 of a-z, 0-9 and '-', starting with a letter "
		    "and ending with a letter or digit)");
	return PK_OK;
}

/* [0..n) as dot-separated labels, already lower case. */
static bool dns_ok(const char *p, size_t n, bool wildcard)
{
	if (n == 0 || n > PK_SAN_DNS_MAX)
		return false;
	if (wildcard && n > 2 && p[0] == '*' && p[1] == '.') {
		p += 2;
		n -= 2;
	}
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || p[i] == '.') {
			if (!label_ok(p + start, i - start, false))
				return false;
			start = i + 1;
		}
	}
	return true;
}

/* A lower-case copy of name, when it fits; NULL otherwise. */
static char *lowered(const char *name)
{
	size_t n = strlen(name);
	if (n > PK_SAN_DNS_MAX)
		return NULL;
	char *c = malloc(n + 1);
	if (c == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		c[i] = lower(name[i]);
	c[n] = '\0';
	return c;
}

int pk_san_add_dns(struct pk_san *s, const char *name, struct pk_err *err)
{
	char *c = lowered(name);
	if (c == NULL && strlen(name) <= PK_SAN_DNS_MAX)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	if (c == NULL || !dns_ok(c, strlen(c), true)) {
		free(c);
		return invalid(err, name,
		               "a DNS name (at most 253 of letters, digits, '-' and '.', each part "
		               "starting and ending with a letter or digit; \"*.\" may start it)");
	}
	if (pk_san_has_dns(s, c)) {
		free(c);
		return PK_OK;
	}
	if (s->ndns == PK_SAN_MAX) {
		free(c);
		return pk_err_set(err, PK_ERR_INVALID, "must name at most %d DNS names",
		                  PK_SAN_MAX);
	}
	s->dns[s->ndns++] = c;
	return PK_OK;
}

int pk_san_add_service(struct pk_san *s, const char *svc, const char *ns, const char *domain,
                       struct pk_err *err)
{
	int rc;
	if ((rc = pk_san_check_service(svc, err)) != PK_OK ||
	    (rc = pk_parse_dns_name(ns, false, err)) != PK_OK)
		return rc;
	if (domain != NULL && *domain != '\0' &&
	    (rc = pk_parse_dns_name(domain, true, err)) != PK_OK)
		return rc;
	char name[4 * PK_SAN_DNS_MAX];
	size_t nforms = domain != NULL && *domain != '\0' ? 4 : 3;
	for (size_t i = 0; i < nforms; i++) {
		int n;
		switch (i) {
		case 0:
			n = snprintf(name, sizeof(name), "%s", svc);
			break;
		case 1:
			n = snprintf(name, sizeof(name), "%s.%s", svc, ns);
			break;
		case 2:
			n = snprintf(name, sizeof(name), "%s.%s.svc", svc, ns);
			break;
		default:
			n = snprintf(name, sizeof(name), "%s.%s.svc.%s", svc, ns, domain);
			break;
		}
		if (n < 0 || (size_t)n > PK_SAN_DNS_MAX)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "must make names of at most %d characters, not %.64s...",
			                  PK_SAN_DNS_MAX, name);
		if ((rc = pk_san_add_dns(s, name, err)) != PK_OK)
			return rc;
	}
	return PK_OK;
}

int pk_san_add_ip_bytes(struct pk_san *s, const unsigned char *b, size_t len, struct pk_err *err)
{
	if (len != 4 && len != 16)
		return pk_err_set(err, PK_ERR_INVALID, "an IP address of %zu bytes", len);
	struct pk_san_ip ip = {.len = (unsigned char)len};
	memcpy(ip.addr, b, len);
	if (pk_san_has_ip(s, &ip))
		return PK_OK;
	if (s->nip == PK_SAN_MAX)
		return pk_err_set(err, PK_ERR_INVALID, "must name at most %d IP addresses",
		                  PK_SAN_MAX);
	s->ip[s->nip++] = ip;
	return PK_OK;
}

int pk_san_add_ip(struct pk_san *s, const char *addr, struct pk_err *err)
{
	unsigned char b[16];
	if (inet_pton(AF_INET, addr, b) == 1)
		return pk_san_add_ip_bytes(s, b, 4, err);
	if (inet_pton(AF_INET6, addr, b) == 1)
		return pk_san_add_ip_bytes(s, b, 16, err);
	return invalid(err, addr, "an IPv4 or IPv6 address");
}

bool pk_san_has_dns(const struct pk_san *s, const char *name)
{
	for (size_t i = 0; i < s->ndns; i++)
		if (strcmp(s->dns[i], name) == 0)
			return true;
	return false;
}

bool pk_san_has_ip(const struct pk_san *s, const struct pk_san_ip *ip)
{
	for (size_t i = 0; i < s->nip; i++)
		if (s->ip[i].len == ip->len && memcmp(s->ip[i].addr, ip->addr, ip->len) == 0)
			return true;
	return false;
}

bool pk_san_equal(const struct pk_san *a, const struct pk_san *b)
{
	/* Both hold no duplicates, so equal counts and inclusion make equal sets. */
	if (a->ndns != b->ndns || a->nip != b->nip)
		return false;
	for (size_t i = 0; i < a->ndns; i++)
		if (!pk_san_has_dns(b, a->dns[i]))
			return false;
	for (size_t i = 0; i < a->nip; i++)
		if (!pk_san_has_ip(b, &a->ip[i]))
			return false;
	return true;
}

/* Appends text to buf[*o..len), cutting with "..." when it does not fit. */
static void put(char *buf, size_t len, size_t *o, const char *text)
{
	size_t n = strlen(text);
	if (*o >= len)
		return;
	if (*o + n + 1 <= len) {
		memcpy(buf + *o, text, n + 1);
		*o += n;
		return;
	}
	if (len >= 4) {
		size_t keep = len - 4;
		if (keep > *o)
			memcpy(buf + *o, text, keep - *o);
		memcpy(buf + keep, "...", 4);
	}
	*o = len;
}

static void put_ip(char *buf, size_t len, size_t *o, const struct pk_san_ip *ip)
{
	char a[INET6_ADDRSTRLEN + 4] = "IP:";
	inet_ntop(ip->len == 4 ? AF_INET : AF_INET6, ip->addr, a + 3, sizeof(a) - 3);
	put(buf, len, o, a);
}

/* Names of `from` that `other` lacks, "DNS:x, IP:y", after `lead`; returns how many. */
static size_t put_missing(const struct pk_san *from, const struct pk_san *other, const char *lead,
                          char *buf, size_t len, size_t *o)
{
	size_t n = 0;
	for (size_t i = 0; i < from->ndns; i++) {
		if (other != NULL && pk_san_has_dns(other, from->dns[i]))
			continue;
		put(buf, len, o, n++ ? ", " : lead);
		put(buf, len, o, "DNS:");
		put(buf, len, o, from->dns[i]);
	}
	for (size_t i = 0; i < from->nip; i++) {
		if (other != NULL && pk_san_has_ip(other, &from->ip[i]))
			continue;
		put(buf, len, o, n++ ? ", " : lead);
		put_ip(buf, len, o, &from->ip[i]);
	}
	return n;
}

void pk_san_diff(const struct pk_san *want, const struct pk_san *have, char *buf, size_t len)
{
	size_t o = 0;
	if (len == 0)
		return;
	buf[0] = '\0';
	size_t n = put_missing(want, have, "missing ", buf, len, &o);
	put_missing(have, want, n ? "; extra " : "extra ", buf, len, &o);
}

void pk_san_format(const struct pk_san *s, char *buf, size_t len)
{
	size_t o = 0;
	if (len == 0)
		return;
	buf[0] = '\0';
	put_missing(s, NULL, "", buf, len, &o);
}
