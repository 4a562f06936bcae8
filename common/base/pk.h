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
	PK_ERR_NOMEM = -2,        /* an allocation failed */
	PK_ERR_EXHAUSTED = -3,    /* no free address */
	PK_ERR_IN_USE = -4,       /* address already held */
	PK_ERR_NOT_HELD = -5,     /* release of an address nobody holds */
	PK_ERR_OUT_OF_RANGE = -6, /* address outside the pool's usable set */
	PK_ERR_QUARANTINED = -7,  /* released recently, reuse grace period running */
	PK_ERR_TOO_BIG = -8,      /* input over a cap (bytes, depth, count); pk_err names the cap */
	PK_ERR_API = -9,          /* an API request failed; struct pk_kube_error says why */
	PK_ERR_IO = -10,          /* a system call on a file failed; the caller has its errno */
	PK_ERR_TIMEOUT = -11,     /* no answer before a deadline; pk_err says what was waited for */
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

/* A short stable text for a return code ("exhausted", "in use", "too big", ...). */
const char *pk_rc_name(int rc);

#endif
