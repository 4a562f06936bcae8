/*
 * fuzz_parse.c - libFuzzer target for base's text parsers: numbers, flag
 * values and base64. Beyond "no crash", it checks what callers rely on: an
 * accepted number is in its range and its decimal text parses back to it,
 * an accepted duration is in its range and its text form parses back to
 * it, an accepted HOST:PORT's text form parses back to the same host and
 * port, and base64 decodes what it encodes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decoding never fails on what encoding made, and gives the bytes back. */
static void fuzz_base64(const uint8_t *data, size_t size)
{
	unsigned char *d = NULL;
	size_t n = 0;
	if (pk_base64_decode((const char *)data, size, &d, &n) == PK_OK && n > size)
		abort();
	free(d);
	char *e = pk_base64_encode(data, size);
	if (e == NULL)
		return;
	if (pk_base64_decode(e, strlen(e), &d, &n) != PK_OK || n != size ||
	    (size > 0 && memcmp(d, data, size) != 0))
		abort();
	free(d);
	free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1024)
		return 0;
	char *s = malloc(size + 1);
	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	struct pk_err err;

	uint64_t v;
	if (pk_parse_uint(s, 1, 65535, &v, &err) == PK_OK && (v < 1 || v > 65535))
		abort();
	int64_t i;
	if (pk_parse_i64(s, -86400, 86400, &i, &err) == PK_OK) {
		char text[32];
		int64_t again;
		snprintf(text, sizeof(text), "%lld", (long long)i);
		if (i < -86400 || i > 86400 ||
		    pk_parse_i64(text, -86400, 86400, &again, &err) != PK_OK || again != i)
			abort();
	}
	double d;
	int rc = pk_parse_real(s, &d, &err);
	if (rc != PK_OK && rc != PK_ERR_INVALID && rc != PK_ERR_TOO_BIG)
		abort();
	fuzz_base64(data, size);

	int64_t ns, back;
	if (pk_parse_duration(s, INT64_MIN, INT64_MAX, &ns, &err) == PK_OK) {
		char text[64];
		pk_format_duration(ns, text, sizeof(text));
		if (pk_parse_duration(text, INT64_MIN, INT64_MAX, &back, &err) != PK_OK ||
		    back != ns)
			abort();
	}
	if (pk_parse_duration(s, PK_NS_PER_S, 600 * PK_NS_PER_S, &ns, &err) == PK_OK &&
	    (ns < PK_NS_PER_S || ns > 600 * PK_NS_PER_S))
		abort();

	struct pk_hostport hp, again;
	if (pk_parse_hostport(s, &hp, &err) == PK_OK) {
		char text[INET6_ADDRSTRLEN + 16];
		pk_hostport_format(&hp, text, sizeof(text));
		if (pk_parse_hostport(text, &again, &err) != PK_OK ||
		    strcmp(again.host, hp.host) != 0 || again.port != hp.port)
			abort();
		struct sockaddr_storage ss;
		socklen_t len;
		bool any;
		pk_hostport_sockaddr(&hp, &ss, &len, &any);
		if (any != (hp.host[0] == '\0'))
			abort();
	}

	(void)pk_parse_dns_name(s, false, &err);
	(void)pk_parse_dns_name(s, true, &err);
	(void)pk_parse_label_value(s, &err);
	free(s);
	return 0;
}
