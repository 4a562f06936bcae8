/* file.c - whole files under a byte cap; see file.h. */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

#define PIPE_STEP (64 * 1024) /* bytes reserved at a time when the size is unknown */

static int io_error(int *errnum, int e)
{
	*errnum = e;
	return PK_ERR_IO;
}

/* Bytes that fit at the end of b without growing it (the NUL kept aside). */
static size_t room(const struct pk_buf *b)
{
	return b->cap > b->len + 1 ? b->cap - b->len - 1 : 0;
}

/* Whether fd has more to read: one byte past the cap says the input is too big. */
static int probe_more(int fd, bool *more, int *errnum)
{
	char c;
	ssize_t r;
	while ((r = read(fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return io_error(errnum, errno);
	*more = r > 0;
	return PK_OK;
}

/* Reads fd to its end into b, reserving `first` bytes (then as much again) at a time. */
static int read_all(int fd, size_t first, struct pk_buf *b, int *errnum)
{
	for (;;) {
		if (b->len == b->max) {
			bool more = false;
			int rc = probe_more(fd, &more, errnum);
			if (rc != PK_OK)
				return rc;
			return more ? PK_ERR_TOO_BIG : PK_OK;
		}
		if (room(b) == 0) {
			size_t want = first < b->max - b->len ? first : b->max - b->len;
			if (pk_buf_reserve(b, want) != PK_OK)
				return PK_ERR_NOMEM;
		}
		ssize_t r = read(fd, b->p + b->len, room(b));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return io_error(errnum, errno);
		if (r == 0)
			return PK_OK;
		b->len += (size_t)r;
		b->p[b->len] = '\0';
	}
}

int pk_read_fd(int fd, size_t max, char **buf, size_t *len, int *errnum)
{
	*buf = NULL;
	*len = 0;
	*errnum = 0;
	struct stat st;
	if (fstat(fd, &st) != 0)
		return io_error(errnum, errno);
	if (S_ISDIR(st.st_mode))
		return io_error(errnum, EISDIR);
	if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max)
		return PK_ERR_TOO_BIG;
	struct pk_buf b;
	pk_buf_init(&b, max);
	/* a regular file: its size, and the end seen without growing; else 64 KiB steps */
	size_t first = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : PIPE_STEP;
	int rc = read_all(fd, first, &b, errnum);
	if (rc == PK_OK && (*buf = pk_buf_take(&b, len)) == NULL)
		rc = PK_ERR_NOMEM;
	pk_buf_free(&b);
	return rc;
}

int pk_read_file(const char *path, size_t max, char **buf, size_t *len, int *errnum)
{
	*buf = NULL;
	*len = 0;
	*errnum = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return io_error(errnum, errno);
	int rc = pk_read_fd(fd, max, buf, len, errnum);
	close(fd);
	return rc;
}
