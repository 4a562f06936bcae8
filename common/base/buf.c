/* buf.c - capped growing buffers and array growth; see buf.h. */
#include "buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pk_buf_init(struct pk_buf *b, size_t max)
{
	*b = (struct pk_buf){.max = max < SIZE_MAX - 1 ? max : SIZE_MAX - 2};
}

int pk_buf_reserve(struct pk_buf *b, size_t n)
{
	if (n > b->max - b->len)
		return PK_ERR_TOO_BIG;
	size_t need = b->len + n + 1; /* at most max + 1: no overflow */
	if (need <= b->cap)
		return PK_OK;
	/* the first allocation is what was asked (at least PK_BUF_FIRST): a known size at once */
	size_t cap = b->cap ? b->cap : need > PK_BUF_FIRST ? need : PK_BUF_FIRST;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (cap > b->max + 1)
		cap = b->max + 1;
	char *p = realloc(b->p, cap);
	if (p == NULL)
		return PK_ERR_NOMEM;
	b->p = p;
	b->cap = cap;
	return PK_OK;
}

int pk_buf_append(struct pk_buf *b, const void *data, size_t n)
{
	int rc = pk_buf_reserve(b, n);
	if (rc != PK_OK)
		return rc;
	if (n > 0)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return PK_OK;
}

int pk_buf_vprintf(struct pk_buf *b, const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	int rc = n < 0 ? PK_ERR_INVALID : pk_buf_reserve(b, (size_t)n);
	if (rc == PK_OK) {
		vsnprintf(b->p + b->len, (size_t)n + 1, fmt, again);
		b->len += (size_t)n;
	}
	va_end(again);
	return rc;
}

int pk_buf_printf(struct pk_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = pk_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void pk_buf_clear(struct pk_buf *b)
{
	b->len = 0;
	if (b->p != NULL)
		b->p[0] = '\0';
}

char *pk_buf_take(struct pk_buf *b, size_t *len)
{
	if (b->p == NULL && pk_buf_reserve(b, 0) != PK_OK)
		return NULL;
	char *p = b->p;
	p[b->len] = '\0';
	if (len != NULL)
		*len = b->len;
	pk_buf_init(b, b->max);
	return p;
}

void pk_buf_free(struct pk_buf *b)
{
	free(b->p);
	pk_buf_init(b, b->max);
}

int pk_array_reserve(void *items, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return PK_OK;
	size_t ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return PK_ERR_NOMEM;
		ncap *= 2;
	}
	if (size != 0 && ncap > SIZE_MAX / size)
		return PK_ERR_NOMEM;
	/* items is a T **: its pointer is read and written as bytes so that any T fits */
	void *old;
	memcpy(&old, items, sizeof(old));
	void *p = realloc(old, ncap * size);
	if (p == NULL)
		return PK_ERR_NOMEM;
	memcpy(items, &p, sizeof(p));
	*cap = ncap;
	return PK_OK;
}
