/* base64.c - standard base64 both ways; see base64.h. */
#include "base64.h"

#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *pk_base64_encode(const void *data, size_t len)
{
	const unsigned char *in = data;
	if (len / 3 >= (SIZE_MAX - 5) / 4)
		return NULL;
	char *out = malloc(4 * ((len + 2) / 3) + 1);
	if (out == NULL)
		return NULL;
	size_t o = 0, i = 0;
	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = alphabet[(v >> 6) & 63];
		out[o++] = alphabet[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int pk_base64_decode(const char *in, size_t n, unsigned char **out, size_t *outlen)
{
	*out = NULL;
	*outlen = 0;
	unsigned char *buf = malloc(n / 4 * 3 + 4);
	if (buf == NULL)
		return PK_ERR_NOMEM;
	size_t o = 0, pad = 0, digits = 0;
	unsigned acc = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		int v = b64_value(c);
		if (v < 0 || pad > 0) /* a bad character, or data after padding */
			goto bad;
		acc = (acc << 6) | (unsigned)v;
		if (++digits % 4 == 0) {
			buf[o++] = (unsigned char)(acc >> 16);
			buf[o++] = (unsigned char)(acc >> 8);
			buf[o++] = (unsigned char)acc;
			acc = 0;
		}
	}
	switch (digits % 4) {
	case 0:
		if (pad != 0)
			goto bad;
		break;
	case 1:
		goto bad;
	case 2:
		if (pad != 0 && pad != 2)
			goto bad;
		buf[o++] = (unsigned char)(acc >> 4);
		break;
	case 3:
		if (pad != 0 && pad != 1)
			goto bad;
		buf[o++] = (unsigned char)(acc >> 10);
		buf[o++] = (unsigned char)(acc >> 2);
		break;
	}
	buf[o] = '\0';
	*out = buf;
	*outlen = o;
	return PK_OK;
bad:
	free(buf);
	return PK_ERR_INVALID;
}
