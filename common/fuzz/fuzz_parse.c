/*
 * fuzz_parse.c - libFuzzer target for the flag value parsers. Beyond "no
 * crash", it checks what callers rely on: an accepted number is in its
 * range, an accepted duration is in its range and its text form parses back
 * to it, and an accepted HOST:PORT's text form parses back to the same host
 * and port.
 */
#include <stdlib.h>
#include <string.h>

#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
