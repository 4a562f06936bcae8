/* outdir.c - reading and atomically replacing the certificate files. */
#include "outdir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"

static int path_of(char *buf, size_t len, const char *dir, const char *name, struct pk_err *err)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= len)
		return pk_err_set(err, PK_ERR_INVALID, "%.64s...: path longer than %zu bytes", dir,
		                  len - 1);
	return PK_OK;
}

int pk_outdir_prepare(const char *dir, struct pk_err *err)
{
	char p[PATH_MAX];
	size_t n = strlen(dir);
	if (n == 0 || n >= sizeof(p))
		return pk_err_set(err, PK_ERR_INVALID, "--out-dir: empty or longer than %zu bytes",
		                  sizeof(p) - 1);
	memcpy(p, dir, n + 1);
	/* mkdir -p: each prefix ending before a '/', then the whole path. */
	for (size_t i = 1; i <= n; i++) {
		if (i < n && p[i] != '/')
			continue;
		char c = p[i];
		p[i] = '\0';
		if (mkdir(p, 0755) != 0 && errno != EEXIST)
			return pk_err_set(err, PK_ERR_INVALID, "cannot create folder %s: %s", p,
			                  strerror(errno));
		p[i] = c;
	}
	struct stat st;
	if (stat(dir, &st) != 0)
		return pk_err_set(err, PK_ERR_INVALID, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return pk_err_set(err, PK_ERR_INVALID, "%s is not a folder", dir);
	return PK_OK;
}

int pk_outdir_read(const char *dir, const char *name, char **data, size_t *len, mode_t *mode,
                   struct pk_err *err)
{
	char p[PATH_MAX];
	int rc = path_of(p, sizeof(p), dir, name, err);
	*data = NULL;
	*len = 0;
	if (rc != PK_OK)
		return rc;
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT)
		return PK_OK;
	if (fd < 0)
		return pk_err_set(err, PK_ERR_INVALID, "cannot read %s: %s", p, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0) {
		rc = pk_err_set(err, PK_ERR_INVALID, "cannot read %s: %s", p, strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		rc = pk_err_set(err, PK_ERR_INVALID, "%s is not a regular file", p);
	} else {
		int errnum = 0;
		rc = pk_read_fd(fd, PK_OUTDIR_MAX_FILE, data, len, &errnum);
		if (rc == PK_ERR_IO)
			rc = pk_err_set(err, PK_ERR_INVALID, "cannot read %s: %s", p,
			                strerror(errnum));
		else if (rc == PK_ERR_TOO_BIG)
			rc = pk_err_set(err, PK_ERR_INVALID, "%s is larger than %u bytes", p,
			                PK_OUTDIR_MAX_FILE);
		else if (rc != PK_OK)
			rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	if (rc == PK_OK && mode != NULL)
		*mode = st.st_mode & 07777;
	close(fd);
	return rc;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

int pk_outdir_write(const char *dir, const char *name, const char *data, size_t len, mode_t mode,
                    struct pk_err *err)
{
	char final[PATH_MAX], tmp[PATH_MAX];
	int rc = path_of(final, sizeof(final), dir, name, err);
	if (rc != PK_OK)
		return rc;
	/* A dot file in the same folder: rename(2) is atomic only within one file system. */
	int n = snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return pk_err_set(err, PK_ERR_INVALID, "%.64s...: path too long", final);
	/* mkstemp creates the file 0600: a key is never readable by others, not even briefly. */
	int fd = mkstemp(tmp);
	if (fd < 0)
		return pk_err_set(err, PK_ERR_INVALID, "cannot write %s: %s", final,
		                  strerror(errno));
	if (write_all(fd, data, len) != 0 || fchmod(fd, mode) != 0 || fsync(fd) != 0) {
		rc = pk_err_set(err, PK_ERR_INVALID, "cannot write %s: %s", final, strerror(errno));
		close(fd);
		goto fail;
	}
	if (close(fd) != 0) {
		rc = pk_err_set(err, PK_ERR_INVALID, "cannot write %s: %s", final, strerror(errno));
		goto fail;
	}
	if (rename(tmp, final) != 0) {
		rc = pk_err_set(err, PK_ERR_INVALID, "cannot replace %s: %s", final,
		                strerror(errno));
		goto fail;
	}
	if (sync_dir(dir) != 0)
		return pk_err_set(err, PK_ERR_INVALID, "cannot flush folder %s: %s", dir,
		                  strerror(errno));
	return PK_OK;
fail:
	unlink(tmp);
	return rc;
}

int pk_outdir_chmod(const char *dir, const char *name, mode_t mode, struct pk_err *err)
{
	char p[PATH_MAX];
	int rc = path_of(p, sizeof(p), dir, name, err);
	if (rc != PK_OK)
		return rc;
	if (chmod(p, mode) != 0)
		return pk_err_set(err, PK_ERR_INVALID, "cannot chmod %s: %s", p, strerror(errno));
	return PK_OK;
}
