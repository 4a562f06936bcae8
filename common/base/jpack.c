/* jpack.c - a JSON value packed into bytes; see jpack.h. */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jpack.h"
#include "api.h"
#include "buf.h"

/*
 * The encoding: one tag byte, then what the tag says.
 *
 *   T_NULL, T_TRUE, T_FALSE   nothing more
 *   T_INT                     zig-zag varint
 *   T_REAL                    the double's 8 bytes
 *   T_STR                     varint length, the bytes
 *   T_UUID                    16 bytes (printed lower case, 8-4-4-4-12)
 *   T_DEC                     varint (printed in decimal)
 *   T_TIME                    varint seconds since 1970 (printed YYYY-MM-DDTHH:MM:SSZ)
 *   T_IP4, T_IP6              4 or 16 bytes (printed by inet_ntop)
 *   T_OBJ                     varint count, then count pairs of a string
 *                             (any string tag) and a value
 *   T_ARR                     varint count, then count values
 *   T_DICT + i                the dictionary's string i
 *
 * Varints are little-endian base-128 (7 bits a byte, high bit: more).
 */
enum {
	T_NULL,
	T_TRUE,
	T_FALSE,
	T_INT,
	T_REAL,
	T_STR,
	T_UUID,
	T_DEC,
	T_TIME,
	T_IP4,
	T_IP6,
	T_OBJ,
	T_ARR,
	T_DICT = 0x40,
};

struct word {
	const char *s;
	size_t n;
};

#define W(s)                     \
	{                        \
		s, sizeof(s) - 1 \
	}

/* Member names and values of the objects poolkeeper caches. At most 256 - T_DICT. */
static const struct word dict[] = {
    W("apiVersion"),
    W("kind"),
    W("metadata"),
    W("name"),
    W("namespace"),
    W("uid"),
    W("resourceVersion"),
    W("generation"),
    W("creationTimestamp"),
    W("deletionTimestamp"),
    W("finalizers"),
    W("labels"),
    W("annotations"),
    W("ownerReferences"),
    W("controller"),
    W("blockOwnerDeletion"),
    W("spec"),
    W("status"),
    W("address"),
    W("addresses"),
    W("excludedAddresses"),
    W("prefix"),
    W("gateway"),
    W("claimRef"),
    W("poolRef"),
    W("apiGroup"),
    W("addressRef"),
    W("clusterName"),
    W("paused"),
    W("conditions"),
    W("type"),
    W("reason"),
    W("message"),
    W("severity"),
    W("lastTransitionTime"),
    W("observedGeneration"),
    W("allocateReservedIPAddresses"),
    W("addressReuseGracePeriodSeconds"),
    W("ipAddresses"),
    W("total"),
    W("used"),
    W("free"),
    W("outOfRange"),
    W("quarantinedAddresses"),
    W("until"),
    W(PK_CAPI_V1BETA2),
    W("deprecated"),
    W(PK_CAPI_V1BETA1),
    W("True"),
    W("False"),
    W("Unknown"),
    W("Ready"),
    W("Allocated"),
    W("PoolExhausted"),
    W("PoolNotReady"),
    W("AllocationFailed"),
    W("Info"),
    W("Warning"),
    W("Error"),
    W(PK_ADDRESS_KIND),
    W(PK_CLAIM_KIND),
    W(PK_POOL_KIND),
    W(PK_GLOBAL_POOL_KIND),
    W(PK_CLUSTER_KIND),
    W(PK_POOL_GROUP),
    W(PK_CAPI_IPAM_GROUP),
    W(PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2),
    W(PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA1),
    W(PK_POOL_API_VERSION),
    W(PK_CLAIM_FINALIZER),
    W(PK_ADDRESS_FINALIZER),
    W(PK_CLUSTER_NAME_LABEL),
    W(PK_PAUSED_ANNOTATION),
    W(PK_DELETE_FOR_MOVE_ANNOTATION),
    W(""),
};

#define NDICT (sizeof(dict) / sizeof(dict[0]))
_Static_assert(NDICT <= 256 - T_DICT, "the dictionary outgrew its tags");

/* ---- encoding ---- */

struct out {
	struct pk_buf b; /* no cap of its own: the value packed is already in memory */
	bool nomem;
};

static void put(struct out *o, const void *data, size_t n)
{
	if (!o->nomem && pk_buf_append(&o->b, data, n) != PK_OK)
		o->nomem = true;
}

static void put_byte(struct out *o, unsigned b)
{
	unsigned char c = (unsigned char)b;
	put(o, &c, 1);
}

static void put_varint(struct out *o, uint64_t v)
{
	unsigned char b[10];
	size_t n = 0;
	do {
		b[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v != 0)
			b[n] |= 0x80;
		n++;
	} while (v != 0);
	put(o, b, n);
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1; /* upper case is not the canonical form */
}

static bool uuid_pack(const char *s, size_t n, unsigned char u[16])
{
	if (n != 36)
		return false;
	size_t k = 0;
	for (size_t i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return false;
			continue;
		}
		int hi = hex_value(s[i]), lo = i + 1 < 36 ? hex_value(s[i + 1]) : -1;
		if (hi < 0 || lo < 0)
			return false;
		u[k++] = (unsigned char)(hi << 4 | lo);
		i++;
	}
	return k == 16;
}

static void uuid_print(const unsigned char u[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	size_t k = 0;
	for (size_t i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[k++] = '-';
		out[k++] = hex[u[i] >> 4];
		out[k++] = hex[u[i] & 15];
	}
	out[k] = '\0';
}

#define DEC_MAX_DIGITS 19 /* every 19-digit number fits 64 bits */

static bool dec_pack(const char *s, size_t n, uint64_t *v)
{
	if (n == 0 || n > DEC_MAX_DIGITS || (s[0] == '0' && n > 1))
		return false;
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	*v = x;
	return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

#define TIME_LEN 20              /* YYYY-MM-DDTHH:MM:SSZ */
#define TIME_MAX 253402300799ULL /* 9999-12-31T23:59:59Z */
#define TEXT_MAX 80              /* a printed form, with room the compiler can see */

static void time_print(uint64_t t, char out[TEXT_MAX])
{
	int64_t y;
	unsigned m, d;
	civil_from_days((int64_t)(t / 86400), &y, &m, &d);
	unsigned s = (unsigned)(t % 86400);
	snprintf(out, TEXT_MAX, "%04d-%02u-%02uT%02u:%02u:%02uZ", (int)y, m, d, s / 3600,
	         s / 60 % 60, s % 60);
}

static bool digits(const char *s, size_t n, unsigned *v)
{
	unsigned x = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		x = x * 10 + (unsigned)(s[i] - '0');
	}
	*v = x;
	return true;
}

/* Seconds since 1970 of a time written exactly as time_print writes it. */
static bool time_pack(const char *s, size_t n, uint64_t *t)
{
	unsigned y, mo, d, h, mi, se;
	if (n != TIME_LEN || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
	    s[16] != ':' || s[19] != 'Z' || !digits(s, 4, &y) || !digits(s + 5, 2, &mo) ||
	    !digits(s + 8, 2, &d) || !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) ||
	    !digits(s + 17, 2, &se))
		return false;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59)
		return false;
	int64_t days = days_from_civil(y, mo, d);
	if (days < 0)
		return false;
	*t = (uint64_t)days * 86400 + h * 3600 + mi * 60 + se;
	char back[TEXT_MAX];
	time_print(*t, back);
	return memcmp(back, s, TIME_LEN) == 0; /* 2026-02-30 does not come back */
}

/* An address that inet_ntop prints back exactly as s. */
static bool ip_pack(const char *s, size_t n, int af, unsigned char *bytes)
{
	char text[INET6_ADDRSTRLEN], back[INET6_ADDRSTRLEN];
	if (n < 2 || n >= sizeof(text) || memchr(s, '\0', n) != NULL)
		return false; /* "10.0.0.1\0x" is not an address */
	memcpy(text, s, n);
	text[n] = '\0';
	return inet_pton(af, text, bytes) == 1 &&
	       inet_ntop(af, bytes, back, sizeof(back)) != NULL && strcmp(back, text) == 0;
}

static bool maybe_ip4(const char *s, size_t n)
{
	return n >= 7 && n <= 15 && s[0] >= '0' && s[0] <= '9' && s[n - 1] >= '0' &&
	       s[n - 1] <= '9';
}

static bool maybe_ip6(const char *s, size_t n)
{
	return n >= 2 && n < INET6_ADDRSTRLEN && memchr(s, ':', n) != NULL;
}

static void put_string(struct out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < NDICT; i++) {
		if (dict[i].n == n &&
		    (n == 0 || (dict[i].s[0] == s[0] && memcmp(dict[i].s, s, n) == 0))) {
			put_byte(o, T_DICT + (unsigned)i);
			return;
		}
	}
	unsigned char b[16];
	uint64_t v;
	if (uuid_pack(s, n, b)) {
		put_byte(o, T_UUID);
		put(o, b, 16);
	} else if (dec_pack(s, n, &v)) {
		put_byte(o, T_DEC);
		put_varint(o, v);
	} else if (time_pack(s, n, &v)) {
		put_byte(o, T_TIME);
		put_varint(o, v);
	} else if (maybe_ip4(s, n) && ip_pack(s, n, AF_INET, b)) {
		put_byte(o, T_IP4);
		put(o, b, 4);
	} else if (maybe_ip6(s, n) && ip_pack(s, n, AF_INET6, b)) {
		put_byte(o, T_IP6);
		put(o, b, 16);
	} else {
		put_byte(o, T_STR);
		put_varint(o, n);
		put(o, s, n);
	}
}

static int put_value(struct out *o, const json_t *v, int depth)
{
	if (depth > PK_JPACK_MAX_DEPTH)
		return PK_ERR_INVALID;
	switch (json_typeof(v)) {
	case JSON_NULL:
		put_byte(o, T_NULL);
		break;
	case JSON_TRUE:
		put_byte(o, T_TRUE);
		break;
	case JSON_FALSE:
		put_byte(o, T_FALSE);
		break;
	case JSON_INTEGER: {
		uint64_t u = (uint64_t)json_integer_value(v);
		put_byte(o, T_INT);
		put_varint(o, (u << 1) ^ ((uint64_t)0 - (u >> 63))); /* zig-zag */
		break;
	}
	case JSON_REAL: {
		double d = json_real_value(v);
		put_byte(o, T_REAL);
		put(o, &d, sizeof(d));
		break;
	}
	case JSON_STRING:
		put_string(o, json_string_value(v), json_string_length(v));
		break;
	case JSON_ARRAY: {
		size_t i;
		const json_t *item;
		put_byte(o, T_ARR);
		put_varint(o, json_array_size(v));
		json_array_foreach(v, i, item)
		{
			int rc = put_value(o, item, depth + 1);
			if (rc != PK_OK)
				return rc;
		}
		break;
	}
	case JSON_OBJECT: {
		const char *key;
		const json_t *item;
		put_byte(o, T_OBJ);
		put_varint(o, json_object_size(v));
		/* json_object_foreach wants a non-const object; it does not change it */
		json_object_foreach((json_t *)(uintptr_t)v, key, item)
		{
			put_string(o, key, strlen(key));
			int rc = put_value(o, item, depth + 1);
			if (rc != PK_OK)
				return rc;
		}
		break;
	}
	}
	return o->nomem ? PK_ERR_NOMEM : PK_OK;
}

int pk_jpack_encode(const json_t *v, unsigned char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (v == NULL)
		return PK_ERR_INVALID;
	struct out o = {.nomem = false};
	pk_buf_init(&o.b, SIZE_MAX);
	int rc = put_value(&o, v, 0);
	if (rc == PK_OK && o.nomem)
		rc = PK_ERR_NOMEM;
	if (rc != PK_OK) {
		pk_buf_free(&o.b);
		return rc;
	}
	size_t n;
	unsigned char *packed = (unsigned char *)pk_buf_take(&o.b, &n);
	if (packed == NULL)
		return PK_ERR_NOMEM;
	/* Give back what the doubling left over: many of these are kept. */
	unsigned char *p = realloc(packed, n > 0 ? n : 1);
	*out = p != NULL ? p : packed;
	*len = n;
	return PK_OK;
}

/* ---- decoding ---- */

struct in {
	const unsigned char *p, *end;
};

static bool get_varint(struct in *r, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->p == r->end)
			return false;
		unsigned char b = *r->p++;
		if (shift == 63 && b > 1)
			return false; /* past 64 bits */
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

static bool get_bytes(struct in *r, void *dst, size_t n)
{
	if ((size_t)(r->end - r->p) < n)
		return false;
	memcpy(dst, r->p, n);
	r->p += n;
	return true;
}

/* A string item with tag t: *s and *n point into the buffer or into tmp (which holds any
 * printed form). */
static bool get_string(struct in *r, unsigned t, char tmp[TEXT_MAX], const char **s, size_t *n)
{
	unsigned char b[16];
	uint64_t v;
	if (t >= T_DICT) {
		if (t - T_DICT >= NDICT)
			return false;
		*s = dict[t - T_DICT].s;
		*n = dict[t - T_DICT].n;
		return true;
	}
	switch (t) {
	case T_STR:
		if (!get_varint(r, &v) || v > (uint64_t)(r->end - r->p))
			return false;
		*s = (const char *)r->p;
		*n = (size_t)v;
		r->p += v;
		return true;
	case T_UUID:
		if (!get_bytes(r, b, 16))
			return false;
		uuid_print(b, tmp);
		break;
	case T_DEC:
		if (!get_varint(r, &v) || v > 9999999999999999999ULL)
			return false;
		snprintf(tmp, TEXT_MAX, "%llu", (unsigned long long)v);
		break;
	case T_TIME:
		if (!get_varint(r, &v) || v > TIME_MAX)
			return false;
		time_print(v, tmp);
		break;
	case T_IP4:
	case T_IP6:
		if (!get_bytes(r, b, t == T_IP4 ? 4 : 16) ||
		    inet_ntop(t == T_IP4 ? AF_INET : AF_INET6, b, tmp, INET6_ADDRSTRLEN) == NULL)
			return false;
		break;
	default:
		return false;
	}
	*s = tmp;
	*n = strlen(tmp);
	return true;
}

static json_t *get_value(struct in *r, int depth);

static json_t *get_object(struct in *r, int depth)
{
	uint64_t count;
	if (!get_varint(r, &count))
		return NULL;
	json_t *obj = json_object();
	char tmp[TEXT_MAX], small[128];
	for (uint64_t i = 0; obj != NULL && i < count; i++) {
		const char *s;
		size_t n;
		if (r->p == r->end || !get_string(r, *r->p++, tmp, &s, &n) ||
		    memchr(s, '\0', n) != NULL)
			goto fail;
		/* The key as a C string: small ones on the stack. */
		char *key = n < sizeof(small) ? small : malloc(n + 1);
		if (key == NULL)
			goto fail;
		memcpy(key, s, n);
		key[n] = '\0';
		json_t *item = get_value(r, depth + 1);
		int rc = item != NULL ? json_object_set_new(obj, key, item) : -1;
		if (key != small)
			free(key);
		if (rc != 0)
			goto fail;
	}
	return obj;
fail:
	json_decref(obj);
	return NULL;
}

static json_t *get_array(struct in *r, int depth)
{
	uint64_t count;
	if (!get_varint(r, &count))
		return NULL;
	json_t *arr = json_array();
	for (uint64_t i = 0; arr != NULL && i < count; i++) {
		json_t *item = get_value(r, depth + 1);
		/* json_array_append_new releases item when it fails */
		if (item == NULL || json_array_append_new(arr, item) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *get_value(struct in *r, int depth)
{
	if (depth > PK_JPACK_MAX_DEPTH || r->p == r->end)
		return NULL;
	unsigned t = *r->p++;
	uint64_t v;
	double d;
	switch (t) {
	case T_NULL:
		return json_null();
	case T_TRUE:
		return json_true();
	case T_FALSE:
		return json_false();
	case T_INT:
		if (!get_varint(r, &v))
			return NULL;
		return json_integer((json_int_t)((v >> 1) ^ (0 - (v & 1))));
	case T_REAL:
		return get_bytes(r, &d, sizeof(d)) ? json_real(d) : NULL;
	case T_OBJ:
		return get_object(r, depth);
	case T_ARR:
		return get_array(r, depth);
	default: {
		char tmp[TEXT_MAX];
		const char *s;
		size_t n;
		return get_string(r, t, tmp, &s, &n) ? json_stringn(s, n) : NULL;
	}
	}
}

json_t *pk_jpack_decode(const unsigned char *buf, size_t len)
{
	if (buf == NULL)
		return NULL;
	struct in r = {buf, buf + len};
	json_t *v = get_value(&r, 0);
	if (v != NULL && r.p != r.end) {
		json_decref(v); /* trailing bytes: not one packed value */
		v = NULL;
	}
	return v;
}
