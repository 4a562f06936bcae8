/*
 * file.h - reading a whole file or descriptor into memory under a byte cap:
 * manifests, certificate and key files, the certificate tool's output
 * folder. Never more than the cap plus one byte is read or allocated; a
 * regular file's size is checked and reserved at once, a pipe is read in
 * 64 KiB steps.
 *
 * Errors are codes, not messages, so that each caller names the file its
 * own way: PK_ERR_TOO_BIG over the cap, PK_ERR_IO when open, fstat or read
 * fails (*errnum gets errno; a directory is EISDIR), PK_ERR_NOMEM.
 */
#ifndef PK_FILE_H
#define PK_FILE_H

#include <stddef.h>

#include "pk.h"

/*
 * Reads fd to its end into a new buffer (*buf, *len bytes, a NUL after
 * them; the caller frees it). *buf is NULL on any error. fd stays open.
 */
PK_MUST_CHECK int pk_read_fd(int fd, size_t max, char **buf, size_t *len, int *errnum);

/* Opens path (read-only, close-on-exec, no controlling tty) and reads it as pk_read_fd. */
PK_MUST_CHECK int pk_read_file(const char *path, size_t max, char **buf, size_t *len, int *errnum);

#endif
