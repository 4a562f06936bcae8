/*
 * pk.h - types every poolkeeper module shares: the 128-bit address value,
 * error reporting for pure modules, and the must-check attribute.
 *
 * Pure modules (address, addr_spec, range_set, count, pool, allocator,
 * rules) do no I/O, no logging and keep no globals. They report failure
 * through a return code and, where a person will read it, a struct pk_err
 * whose message names the field and the offending value.
 */
#ifndef PK_H
#define PK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An ignored error must not compile quietly (s2n's result type idea). */
#define PK_MUST_CHECK   __attribute__((warn_unused_result))
#define PK_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* Every IPv4 and IPv6 address is one 128-bit value; IPv4 uses 0..2^32-1. */
typedef unsigned __int128 pk_u128;

#define PK_U128_MAX (~(pk_u128)0)

enum pk_rc {
	PK_OK = 0,
	PK_ERR_INVALID = -1,      /* malformed input; pk_err says why */
	PK_ERR_NOMEM = -2,        /* allocation failed or a size cap was hit */
	PK_ERR_EXHAUSTED = -3,    /* no free address */
	PK_ERR_IN_USE = -4,       /* address already held */
	PK_ERR_NOT_HELD = -5,     /* release of an address nobody holds */
	PK_ERR_OUT_OF_RANGE = -6, /* address outside the pool's usable set */
	PK_ERR_QUARANTINED = -7,  /* released recently, reuse grace period running */
};

#define PK_ERR_MSG_MAX 512

/* A human-readable reason; callers own it (usually on the stack). */
struct pk_err {
	char msg[PK_ERR_MSG_MAX];
};

/* Formats into err->msg when err is not NULL; always returns rc. */
int pk_err_set(struct pk_err *err, int rc, const char *fmt, ...) PK_PRINTF(3, 4);

/*
 * Copies up to 64 bytes of s[0..n) into buf for an error message: printable
 * ASCII as is, anything else (and '"', '\\') as \xNN, "..." when cut.
 * buf of 300 bytes always suffices.
 */
void pk_text_quote(const char *s, size_t n, char *buf, size_t len);

/* A short stable name for a return code ("exhausted", "in use", ...). */
const char *pk_rc_name(int rc);

/*
 * JSON strings as C strings. The API server accepts "\u0000" inside any
 * string (an annotation value, a reference's name), and jansson keeps such
 * a string whole with its length, but json_string_value() then reads as a
 * shorter C string: "pool-a\u0000x" would compare equal to "pool-a". A
 * field that is used as a C string (names, namespaces, addresses,
 * references, kinds) is therefore read through pk_json_cstr, which treats
 * a string holding a NUL as invalid: NULL, exactly as if the field were not
 * a string. Borrowed from v; valid while v lives.
 */
struct json_t;
const char *pk_json_cstr(const struct json_t *v);

/* pk_json_cstr of the member key of obj (NULL when obj is not an object). */
const char *pk_json_cstr_at(const struct json_t *obj, const char *key);

/* Whether v is a string that holds a NUL character. */
bool pk_json_has_nul(const struct json_t *v);

/*
 * The path of the first string in v (members and items, depth first, at
 * most PK_JSON_NUL_MAX_DEPTH deep) that holds a NUL, as
 * "metadata.annotations[\"x\"]" style text written into buf (len bytes; cut
 * when longer, always terminated): where a report names the field. False,
 * and buf "", when there is none.
 */
#define PK_JSON_NUL_MAX_DEPTH 64
bool pk_json_nul_path(const struct json_t *v, char *buf, size_t len);

#endif
