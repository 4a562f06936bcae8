/* parse.c - numbers, Go durations and HOST:PORT listen addresses from flag text. */
#include "parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quote(const char *s, char *q, size_t len)
{
	pk_text_quote(s ? s : "", s ? strlen(s) : 0, q, len);
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The digits of s into *v; false when s is empty, holds another byte, or passes UINT64_MAX. */
static bool decimal(const char *s, uint64_t *v)
{
	*v = 0;
	if (s == NULL || *s == '\0')
		return false;
	for (const char *p = s; *p != '\0'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (!is_digit(*p) || *v > (UINT64_MAX - d) / 10)
			return false;
		*v = *v * 10 + d;
	}
	return true;
}

int pk_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out, struct pk_err *err)
{
	uint64_t v;
	if (!decimal(s, &v) || v < min || v > max) {
		char q[300];
		quote(s, q, sizeof(q));
		return pk_err_set(err, PK_ERR_INVALID,
		                  "must be an integer in %llu..%llu, got \"%s\"",
		                  (unsigned long long)min, (unsigned long long)max, q);
	}
	*out = v;
	return PK_OK;
}

int pk_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out, struct pk_err *err)
{
	uint64_t u;
	bool neg = s != NULL && *s == '-';
	bool ok = decimal(s != NULL && (*s == '-' || *s == '+') ? s + 1 : s, &u) &&
	          u <= (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX);
	int64_t v = !ok ? 0 : neg ? (int64_t)(0 - u) : (int64_t)u;
	if (!ok || v < min || v > max) {
		char q[300];
		quote(s, q, sizeof(q));
		return pk_err_set(err, PK_ERR_INVALID,
		                  "must be an integer in %lld..%lld, got \"%s\"", (long long)min,
		                  (long long)max, q);
	}
	*out = v;
	return PK_OK;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, the whole of s */
static bool decimal_real(const char *s)
{
	const char *p = s + (*s == '-' || *s == '+');
	size_t whole = 0, frac = 0;
	for (; is_digit(*p); p++)
		whole++;
	if (*p == '.')
		for (p++; is_digit(*p); p++)
			frac++;
	if (whole == 0 && frac == 0)
		return false;
	if (*p == 'e' || *p == 'E') {
		p += 1 + (p[1] == '-' || p[1] == '+');
		if (!is_digit(*p))
			return false;
		while (is_digit(*p))
			p++;
	}
	return *p == '\0';
}

int pk_parse_real(const char *s, double *out, struct pk_err *err)
{
	char q[300];
	quote(s, q, sizeof(q));
	if (s == NULL || !decimal_real(s))
		return pk_err_set(err, PK_ERR_INVALID, "must be a decimal number, got \"%s\"", q);
	errno = 0;
	double d = strtod(s, NULL);
	/* ERANGE is also underflow: a value nearer zero than a double holds reads as about 0 */
	if (errno == ERANGE && (d > 1.0 || d < -1.0))
		return pk_err_set(err, PK_ERR_TOO_BIG,
		                  "must be a number a double can hold, got \"%s\"", q);
	*out = d;
	return PK_OK;
}

/* ---- durations: Go's time.ParseDuration, the grammar [-+]?([0-9]*(\.[0-9]*)?[a-z]+)+ ---- */

#define DURATION_MAX ((uint64_t)1 << 63) /* one past INT64_MAX, reachable only when negative */

static const struct {
	const char *name;
	uint64_t ns;
} units[] = {
    {"ns", 1},
    {"us", 1000},
    {"\xc2\xb5s", 1000}, /* U+00B5 micro sign */
    {"\xce\xbcs", 1000}, /* U+03BC Greek small letter mu */
    {"ms", 1000 * 1000},
    {"s", 1000 * 1000 * 1000},
    {"m", 60ULL * 1000 * 1000 * 1000},
    {"h", 3600ULL * 1000 * 1000 * 1000},
};

static int bad_duration(const char *s, const char *why, struct pk_err *err)
{
	char q[300];
	quote(s, q, sizeof(q));
	return pk_err_set(err, PK_ERR_INVALID,
	                  "must be a duration such as 15s, 500ms or 1m30s, got \"%s\" (%s)", q,
	                  why);
}

static const char *const TOO_LARGE = "too large";
static const char *const NO_NUMBER = "a number must come before each unit";

/* One number of a duration: whole part *v, fraction *f / *scale; the reason when it is not. */
static const char *duration_number(const char **pp, uint64_t *v, uint64_t *f, double *scale)
{
	const char *p = *pp, *start = p;
	*v = *f = 0;
	*scale = 1;
	for (; is_digit(*p); p++) {
		if (*v > DURATION_MAX / 10)
			return TOO_LARGE;
		*v = *v * 10 + (uint64_t)(*p - '0');
		if (*v > DURATION_MAX)
			return TOO_LARGE;
	}
	bool pre = p != start, post = false;
	if (*p == '.') {
		start = ++p;
		/* Digits beyond what 63 bits hold only add precision nobody sees: skipped. */
		for (bool overflow = false; is_digit(*p); p++) {
			if (overflow || *f > (DURATION_MAX - 1) / 10 ||
			    *f * 10 + (uint64_t)(*p - '0') > DURATION_MAX) {
				overflow = true;
				continue;
			}
			*f = *f * 10 + (uint64_t)(*p - '0');
			*scale *= 10;
		}
		post = p != start;
	}
	*pp = p;
	return pre || post ? NULL : NO_NUMBER;
}

/* One number and its unit, in ns, into *ns; the reason when it is not one. */
static const char *duration_term(const char **pp, uint64_t *ns)
{
	uint64_t v, f;
	double scale;
	if (**pp != '.' && !is_digit(**pp))
		return NO_NUMBER;
	const char *why = duration_number(pp, &v, &f, &scale);
	if (why != NULL)
		return why;
	const char *p = *pp;
	size_t ul = 0;
	while (p[ul] != '\0' && p[ul] != '.' && !is_digit(p[ul]))
		ul++;
	if (ul == 0)
		return "the unit is missing: ns, us, ms, s, m or h";
	uint64_t unit = 0;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i].name) == ul && strncmp(units[i].name, p, ul) == 0)
			unit = units[i].ns;
	if (unit == 0)
		return "unknown unit: use ns, us, ms, s, m or h";
	*pp = p + ul;
	if (v > DURATION_MAX / unit)
		return TOO_LARGE;
	v *= unit;
	/* f / scale < 1, so this adds less than one unit. */
	if (f > 0)
		v += (uint64_t)((double)f * ((double)unit / scale));
	if (v > DURATION_MAX)
		return TOO_LARGE;
	*ns = v;
	return NULL;
}

int pk_parse_duration(const char *s, int64_t min_ns, int64_t max_ns, int64_t *out_ns,
                      struct pk_err *err)
{
	if (s == NULL)
		return bad_duration("", "empty", err);
	const char *p = s;
	bool neg = false;
	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	uint64_t d = 0;
	if (*p == '\0')
		return bad_duration(s, "empty", err);
	if (strcmp(p, "0") == 0)
		p++; /* "0" alone needs no unit */
	while (*p != '\0') {
		uint64_t v;
		const char *why = duration_term(&p, &v);
		if (why != NULL)
			return bad_duration(s, why, err);
		if (v > DURATION_MAX - d)
			return bad_duration(s, TOO_LARGE, err);
		d += v;
	}
	if (!neg && d > (uint64_t)INT64_MAX)
		return bad_duration(s, TOO_LARGE, err);
	int64_t ns = neg ? (int64_t)(0 - d) : (int64_t)d;
	if (ns < min_ns || ns > max_ns) {
		char q[300], lo[64], hi[64];
		quote(s, q, sizeof(q));
		pk_format_duration(min_ns, lo, sizeof(lo));
		pk_format_duration(max_ns, hi, sizeof(hi));
		return pk_err_set(err, PK_ERR_INVALID, "must be a duration in %s..%s, got \"%s\"",
		                  lo, hi, q);
	}
	*out_ns = ns;
	return PK_OK;
}

void pk_format_duration(int64_t ns, char *buf, size_t len)
{
	if (len == 0)
		return;
	buf[0] = '\0';
	if (ns == 0) {
		snprintf(buf, len, "0s");
		return;
	}
	uint64_t u = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
	size_t n = ns < 0 ? (size_t)snprintf(buf, len, "-") : 0;
	static const struct {
		const char *name;
		uint64_t ns;
	} parts[] = {{"h", 3600ULL * 1000 * 1000 * 1000},
	             {"m", 60ULL * 1000 * 1000 * 1000},
	             {"s", 1000 * 1000 * 1000},
	             {"ms", 1000 * 1000},
	             {"us", 1000},
	             {"ns", 1}};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && u > 0 && n < len; i++) {
		uint64_t k = u / parts[i].ns;
		u %= parts[i].ns;
		if (k > 0)
			n += (size_t)snprintf(buf + n, len - n, "%llu%s", (unsigned long long)k,
			                      parts[i].name);
	}
}

/* ---- Kubernetes names and label values ---- */

static bool is_alnum(char c, bool upper)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (upper && c >= 'A' && c <= 'Z');
}

int pk_parse_dns_name(const char *s, bool dots, struct pk_err *err)
{
	size_t n = s ? strlen(s) : 0, max = dots ? 253 : 63;
	bool ok = n > 0 && n <= max;
	for (size_t i = 0; ok && i < n; i++) {
		/* Every label starts and ends with a letter or digit. */
		bool edge = i == 0 || i == n - 1 || (dots && (s[i - 1] == '.' || s[i + 1] == '.'));
		if (dots && s[i] == '.')
			ok = i > 0 && i < n - 1 && s[i - 1] != '.';
		else
			ok = is_alnum(s[i], false) || (!edge && s[i] == '-');
	}
	if (ok)
		return PK_OK;
	char q[300];
	quote(s, q, sizeof(q));
	return pk_err_set(err, PK_ERR_INVALID,
	                  dots ? "must be a DNS subdomain name (at most 253 of a-z, 0-9, '-' and "
	                         "'.', each part starting and ending with a letter or digit), got "
	                         "\"%s\""
	                       : "must be a DNS label (at most 63 of a-z, 0-9 and '-', starting "
	                         "and ending with a letter or digit), got \"%s\"",
	                  q);
}

int pk_parse_label_value(const char *s, struct pk_err *err)
{
	size_t n = s ? strlen(s) : 0;
	bool ok = n > 0 && n <= 63 && is_alnum(s[0], true) && is_alnum(s[n - 1], true);
	for (size_t i = 0; ok && i < n; i++)
		ok = is_alnum(s[i], true) || s[i] == '-' || s[i] == '_' || s[i] == '.';
	if (ok)
		return PK_OK;
	char q[300];
	quote(s, q, sizeof(q));
	return pk_err_set(err, PK_ERR_INVALID,
	                  "must be a label value (at most 63 of A-Z, a-z, 0-9, '-', '_' and '.', "
	                  "starting and ending with a letter or digit), got \"%s\"",
	                  q);
}

/* ---- HOST:PORT ---- */

static int bad_hostport(const char *s, const char *why, struct pk_err *err)
{
	char q[300];
	quote(s, q, sizeof(q));
	return pk_err_set(
	    err, PK_ERR_INVALID,
	    "must be HOST:PORT such as :8080, 127.0.0.1:8080 or [::1]:8080, got \"%s\" "
	    "(%s)",
	    q, why);
}

int pk_parse_hostport(const char *s, struct pk_hostport *out, struct pk_err *err)
{
	memset(out, 0, sizeof(*out));
	if (s == NULL || *s == '\0')
		return bad_hostport("", "empty", err);
	const char *host = s, *colon;
	size_t hl;
	bool v6 = false;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (close == NULL)
			return bad_hostport(s, "\"[\" is not closed by \"]\"", err);
		host = s + 1;
		hl = (size_t)(close - host);
		if (close[1] != ':')
			return bad_hostport(s,
			                    close[1] == '\0' ? "the port is missing"
			                                     : "\":PORT\" must follow \"]\"",
			                    err);
		colon = close + 1;
		v6 = true;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL)
			return bad_hostport(s, "the port is missing", err);
		hl = (size_t)(colon - s);
		if (memchr(s, ':', hl) != NULL)
			return bad_hostport(s, "an IPv6 address goes in brackets: [::1]:8080", err);
	}
	if (hl >= sizeof(out->host))
		return bad_hostport(s, "HOST must be empty, an IPv4 address or [an IPv6 address]",
		                    err);
	memcpy(out->host, host, hl);
	out->host[hl] = '\0';
	unsigned char a[sizeof(struct in6_addr)];
	if (v6 ? inet_pton(AF_INET6, out->host, a) != 1
	       : hl > 0 && inet_pton(AF_INET, out->host, a) != 1)
		return bad_hostport(
		    s,
		    v6 ? "not an IPv6 address in the brackets"
		       : "HOST must be empty, an IPv4 address or [an IPv6 address]; not a name",
		    err);
	const char *port = colon + 1;
	if (*port == '\0')
		return bad_hostport(s, "the port is missing", err);
	uint64_t v = 0;
	struct pk_err ignored;
	if (pk_parse_uint(port, 0, 65535, &v, &ignored) != PK_OK)
		return bad_hostport(s, "PORT must be an integer in 0..65535", err);
	out->port = (uint16_t)v;
	return PK_OK;
}

void pk_hostport_sockaddr(const struct pk_hostport *hp, struct sockaddr_storage *ss, socklen_t *len,
                          bool *any)
{
	memset(ss, 0, sizeof(*ss));
	*any = false;
	*len = 0;
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
	if (hp->host[0] == '\0') {
		*any = true;
	} else if (inet_pton(AF_INET, hp->host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(hp->port);
		*len = sizeof(*v4);
	} else if (inet_pton(AF_INET6, hp->host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(hp->port);
		*len = sizeof(*v6);
	} else {
		*any = true; /* not from pk_parse_hostport: every address, as for "" */
	}
}

void pk_hostport_format(const struct pk_hostport *hp, char *buf, size_t len)
{
	if (strchr(hp->host, ':') != NULL)
		snprintf(buf, len, "[%s]:%u", hp->host, (unsigned)hp->port);
	else
		snprintf(buf, len, "%s:%u", hp->host, (unsigned)hp->port);
}
