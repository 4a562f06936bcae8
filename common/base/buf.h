/*
 * buf.h - growing memory with a hard cap (curl's dynbuf takes its "toobig"
 * at init): a byte buffer for bodies, events and files read from
 * untrusted peers, and the growth step of the arrays modules append to.
 *
 * A struct pk_buf holds len bytes at p, always followed by a NUL once
 * anything was added, so text can be used as a C string. It never holds
 * more than max bytes: an append that would pass the cap fails with
 * PK_ERR_TOO_BIG and leaves the buffer as it was. Capacity doubles (from
 * PK_BUF_FIRST, or from what pk_buf_reserve asked) and never goes past
 * max + 1, so a capped buffer never allocates more than the cap allows.
 *
 * Ownership: the buffer owns p; pk_buf_take hands it to the caller (who
 * frees it with free()), pk_buf_free releases it. Threading: none.
 */
#ifndef PK_BUF_H
#define PK_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "pk.h"

#define PK_BUF_FIRST 256 /* bytes of the first allocation when none was reserved */

struct pk_buf {
	char *p;    /* NULL until something is added or reserved */
	size_t len; /* bytes held, not counting the NUL after them */
	size_t cap; /* bytes allocated at p */
	size_t max; /* the cap on len */
};

/* An empty buffer that holds at most max bytes. */
void pk_buf_init(struct pk_buf *b, size_t max);

/*
 * Room for n more bytes (and the NUL after them) without another
 * allocation: what a caller that knows the size (a Content-Length, a
 * file's size) asks once. PK_ERR_TOO_BIG when len + n passes max,
 * PK_ERR_NOMEM when the allocation fails; the buffer is unchanged on either.
 */
PK_MUST_CHECK int pk_buf_reserve(struct pk_buf *b, size_t n);

/* Appends data[0..n); PK_ERR_TOO_BIG or PK_ERR_NOMEM as pk_buf_reserve. */
PK_MUST_CHECK int pk_buf_append(struct pk_buf *b, const void *data, size_t n);

/* Appends printf-style text; PK_ERR_TOO_BIG or PK_ERR_NOMEM as pk_buf_reserve (the buffer
 * unchanged), PK_ERR_INVALID when the format fails. */
PK_MUST_CHECK int pk_buf_printf(struct pk_buf *b, const char *fmt, ...) PK_PRINTF(2, 3);
PK_MUST_CHECK int pk_buf_vprintf(struct pk_buf *b, const char *fmt, va_list ap) PK_PRINTF(2, 0);

/* Forgets the content, keeps the memory. */
void pk_buf_clear(struct pk_buf *b);

/* Hands the bytes over (NUL-terminated; never NULL unless memory ran out: an empty buffer
 * gives ""), *len set when len is not NULL; the buffer is empty again. */
char *pk_buf_take(struct pk_buf *b, size_t *len);

/* Releases the memory; the buffer is empty again (same max). */
void pk_buf_free(struct pk_buf *b);

/*
 * The growth step of an array: makes *items (a T *, passed as &items) hold
 * at least need elements of size bytes, *cap counting what it holds now.
 * Doubles from 16 elements; PK_ERR_NOMEM (array unchanged) when memory runs
 * out or the size would overflow. Use:
 *   if (pk_array_reserve(&a->items, &a->cap, a->n + 1, sizeof(*a->items)) != PK_OK)
 */
PK_MUST_CHECK int pk_array_reserve(void *items, size_t *cap, size_t need, size_t size);

#endif
