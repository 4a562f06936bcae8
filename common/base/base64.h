/*
 * base64.h - standard base64 (RFC 4648 section 4, "+/" and "=" padding):
 * what Secret data, caBundle fields, kubeconfig "-data" keys and an
 * AdmissionReview's JSONPatch carry. Pure: no I/O, no globals.
 */
#ifndef PK_BASE64_H
#define PK_BASE64_H

#include <stddef.h>

#include "pk.h"

/*
 * The base64 text of data[0..len), padded, without line breaks, as a new
 * NUL-terminated string the caller frees. NULL when memory runs out or the
 * text's size would overflow.
 */
char *pk_base64_encode(const void *data, size_t len);

/*
 * Decodes in[0..n) (whitespace ignored, padding optional) into a new buffer
 * the caller frees; a NUL follows the *outlen bytes. PK_ERR_INVALID on a
 * character outside the alphabet, data after padding or a length no
 * encoder makes; PK_ERR_NOMEM when memory runs out.
 */
PK_MUST_CHECK int pk_base64_decode(const char *in, size_t n, unsigned char **out, size_t *outlen);

#endif
