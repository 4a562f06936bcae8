/* manifest_read.c - reading manifest files and descriptors under a byte cap (file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "manifest.h"

static int io_fail(struct pk_err *err, const char *name, const char *what, int errnum)
{
	char reason[128];
	if (strerror_r(errnum, reason, sizeof(reason)) != 0)
		snprintf(reason, sizeof(reason), "error %d", errnum);
	return pk_err_set(err, PK_ERR_INVALID, "%s: cannot %s: %s", name, what, reason);
}

int pk_manifest_read_fd(int fd, const char *name, size_t max_bytes, char **buf, size_t *len,
                        struct pk_err *err)
{
	*buf = NULL;
	*len = 0;
	/* a regular file over the cap is named with its size, before anything is read */
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max_bytes)
		return pk_err_set(err, PK_ERR_TOO_BIG,
		                  "%s: %jd bytes is over the limit of %zu bytes", name,
		                  (intmax_t)st.st_size, max_bytes);
	int errnum = 0;
	int rc = pk_read_fd(fd, max_bytes, buf, len, &errnum);
	switch (rc) {
	case PK_OK:
		return PK_OK;
	case PK_ERR_IO:
		return io_fail(err, name, "read", errnum);
	case PK_ERR_TOO_BIG:
		return pk_err_set(err, PK_ERR_TOO_BIG, "%s: more than the limit of %zu bytes", name,
		                  max_bytes);
	default:
		return pk_err_set(err, PK_ERR_NOMEM, "%s: out of memory", name);
	}
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

const char *pk_manifest_file_kind(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFLNK:
		return "a symbolic link";
	default:
		return "not a file";
	}
}

int pk_manifest_read_regular(const char *path, size_t max_bytes, char **buf, size_t *len,
                             struct pk_err *err)
{
	*buf = NULL;
	*len = 0;
	/* O_NONBLOCK: opening a FIFO no writer holds must not wait for one */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return io_fail(err, path, "open", errno);
	struct stat st;
	int rc;
	if (fstat(fd, &st) != 0)
		rc = io_fail(err, path, "read", errno);
	else if (!S_ISREG(st.st_mode))
		rc = pk_err_set(err, PK_ERR_INVALID, "%s: skipped: %s, not a regular file", path,
		                pk_manifest_file_kind((unsigned)st.st_mode));
	else
		rc = pk_manifest_read_fd(fd, path, max_bytes, buf, len, err);
	close(fd);
	return rc;
}
