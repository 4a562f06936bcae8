/*
 * meta.h - the shapes of Kubernetes object metadata poolkeeper reads and
 * writes in every part: metav1.Time (RFC 3339 in UTC, whole seconds, as the
 * API server writes creationTimestamp and lastTransitionTime) and the
 * conditions array of a status.
 */
#ifndef PK_META_H
#define PK_META_H

#include <jansson.h>

#include "pk.h"

/* "2026-01-02T03:04:05Z" (21 bytes with the NUL). */
#define PK_TIME_TEXT_MAX 32
void pk_meta_time_text(long long unix_seconds, char buf[PK_TIME_TEXT_MAX]);

/* The inverse, for exactly that form: PK_OK and *out, or PK_ERR_INVALID. */
PK_MUST_CHECK int pk_meta_time_parse(const char *text, long long *out);

/* The condition of that type in a conditions array, or NULL (borrowed). */
const json_t *pk_meta_condition(const json_t *conditions, const char *type);

#endif
