/* manifest_read.c - reading manifest files and descriptors under a byte cap. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "manifest.h"

static int io_fail(struct pk_err *err, const char *name, const char *what, int errnum)
{
	char reason[128];
	if (strerror_r(errnum, reason, sizeof(reason)) != 0)
		snprintf(reason, sizeof(reason), "error %d", errnum);
	return pk_err_set(err, PK_ERR_INVALID, "%s: cannot %s: %s", name, what, reason);
}

/* Bytes that fit at the end of b without growing it (the NUL kept aside). */
static size_t room(const struct pk_buf *b)
{
	return b->cap > b->len + 1 ? b->cap - b->len - 1 : 0;
}

/* Whether fd has more to read: one byte past the cap says the input is too big. */
static int probe_more(int fd, const char *name, bool *more, struct pk_err *err)
{
	char c;
	ssize_t r;
	while ((r = read(fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return io_fail(err, name, "read", errno);
	*more = r > 0;
	return PK_OK;
}

/* Reads fd to its end into b; a regular file's size is reserved at once. */
static int read_all(int fd, const char *name, size_t first, struct pk_buf *b, struct pk_err *err)
{
	for (;;) {
		if (b->len == b->max) {
			bool more = false;
			int rc = probe_more(fd, name, &more, err);
			if (rc != PK_OK)
				return rc;
			if (more)
				return pk_err_set(err, PK_ERR_TOO_BIG,
				                  "%s: more than the limit of %zu bytes", name,
				                  b->max);
			return PK_OK;
		}
		if (room(b) == 0) {
			size_t want = first < b->max - b->len ? first : b->max - b->len;
			if (pk_buf_reserve(b, want) != PK_OK)
				return pk_err_set(err, PK_ERR_NOMEM, "%s: out of memory", name);
		}
		ssize_t r = read(fd, b->p + b->len, room(b));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return io_fail(err, name, "read", errno);
		if (r == 0)
			return PK_OK;
		b->len += (size_t)r;
		b->p[b->len] = '\0';
	}
}

int pk_manifest_read_fd(int fd, const char *name, size_t max_bytes, char **buf, size_t *len,
                        struct pk_err *err)
{
	*buf = NULL;
	*len = 0;
	struct stat st;
	if (fstat(fd, &st) != 0)
		return io_fail(err, name, "read", errno);
	if (S_ISDIR(st.st_mode))
		return io_fail(err, name, "read", EISDIR);
	if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max_bytes)
		return pk_err_set(err, PK_ERR_TOO_BIG,
		                  "%s: %jd bytes is over the limit of %zu bytes", name,
		                  (intmax_t)st.st_size, max_bytes);
	struct pk_buf b;
	pk_buf_init(&b, max_bytes);
	/* a regular file: its size, and the end seen without growing; else 64 KiB steps */
	size_t first = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 64 * 1024;
	int rc = read_all(fd, name, first, &b, err);
	if (rc == PK_OK && (*buf = pk_buf_take(&b, len)) == NULL)
		rc = pk_err_set(err, PK_ERR_NOMEM, "%s: out of memory", name);
	pk_buf_free(&b);
	return rc;
}

int pk_manifest_read_file(const char *path, size_t max_bytes, char **buf, size_t *len,
                          struct pk_err *err)
{
	*buf = NULL;
	*len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return io_fail(err, path, "open", errno);
	int rc = pk_manifest_read_fd(fd, path, max_bytes, buf, len, err);
	close(fd);
	return rc;
}
