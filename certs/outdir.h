/*
 * outdir.h - the CA and serving pair as files in one folder: ca.crt (the
 * CA bundle), ca.key, tls.crt, tls.key, the names a Kubernetes TLS Secret
 * volume uses, so the webhook reads the same paths either way.
 *
 * Every file is replaced atomically: written to a temporary file in the
 * same folder, flushed, given its mode, renamed over the old one, and the
 * folder flushed, so a reader sees the old or the new file, never a part.
 * Private keys are mode 0600, certificates 0644.
 *
 * No logging: failures come back in err naming the file and the cause.
 */
#ifndef PK_CERTS_OUTDIR_H
#define PK_CERTS_OUTDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "pk.h"

/* A stored file larger than this is refused. */
#define PK_OUTDIR_MAX_FILE (1u << 20)

#define PK_OUTDIR_KEY_MODE  0600
#define PK_OUTDIR_CERT_MODE 0644

/* Creates dir (and missing parents, mode 0755) when it does not exist. */
PK_MUST_CHECK int pk_outdir_prepare(const char *dir, struct pk_err *err);

/*
 * Reads dir/name into a new NUL-terminated buffer (*data, *len; the caller
 * frees). A file that does not exist is PK_OK with *data NULL. *mode (may
 * be NULL) gets its permission bits.
 */
PK_MUST_CHECK int pk_outdir_read(const char *dir, const char *name, char **data, size_t *len,
                                 mode_t *mode, struct pk_err *err);

/* Replaces dir/name with data[0..len) and mode, atomically (see above). */
PK_MUST_CHECK int pk_outdir_write(const char *dir, const char *name, const char *data, size_t len,
                                  mode_t mode, struct pk_err *err);

/* Sets dir/name's permission bits (a key file found readable by others). */
PK_MUST_CHECK int pk_outdir_chmod(const char *dir, const char *name, mode_t mode,
                                  struct pk_err *err);

#endif
