/*
 * jpack.h - a JSON value packed into bytes, for caches that keep many
 * small API objects in memory (the controller's informers).
 *
 * The packed form is a tagged binary encoding of the jansson value that
 * gives back an equal value (json_equal, every member in the same order,
 * every string byte for byte). It is smaller than the JSON text because
 * the strings API objects repeat are stored as forms that print back to
 * exactly the same text:
 *
 *   - a fixed dictionary of member names and values (metadata, spec,
 *     ipam.poolkeeper.io, IPAddressClaim, True, ...): one byte;
 *   - UUIDs in lower-case canonical form: 16 bytes;
 *   - decimal strings without leading zeros (resourceVersions): a varint;
 *   - RFC 3339 times "YYYY-MM-DDTHH:MM:SSZ": a varint of seconds;
 *   - IPv4 and IPv6 addresses as inet_ntop prints them: 4 or 16 bytes.
 *
 * A trimmed IPAddress takes about 150 bytes packed against about 480 as
 * compact JSON text (common/tests/test_jpack.c prints both).
 *
 * The form lives only in one process's memory: it is not a wire or file
 * format and carries no version. pk_jpack_decode still checks every length
 * against the buffer, so bytes that are not a packed value give NULL,
 * never a read out of bounds (fuzzed by common/fuzz/fuzz_jpack.c).
 *
 * Pure: no I/O, no logging, no global state.
 */
#ifndef PK_JPACK_H
#define PK_JPACK_H

#include <stddef.h>

#include <jansson.h>

#include "pk.h"

/* Nesting deeper than jansson's parser accepts is refused. */
#define PK_JPACK_MAX_DEPTH 2048

/* Packs v into *out (malloc'd, *len bytes; release with free). PK_ERR_NOMEM
 * when memory runs out; PK_ERR_INVALID when v is NULL or nested deeper than
 * PK_JPACK_MAX_DEPTH. Nothing is allocated on failure. */
PK_MUST_CHECK int pk_jpack_encode(const json_t *v, unsigned char **out, size_t *len);

/* The value packed in buf[0..len) (a new reference), or NULL when the bytes
 * are not exactly one packed value or memory runs out. */
json_t *pk_jpack_decode(const unsigned char *buf, size_t len);

#endif
