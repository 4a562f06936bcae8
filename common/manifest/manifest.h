/*
 * manifest.h - Kubernetes manifests (YAML or JSON text) loaded into jansson
 * values, one per document, each remembering where it came from so that a
 * message can say "examples/pool.yaml:12 (document 2)".
 *
 * What is accepted:
 *   - YAML streams of one or more documents ("---"), comments, block and
 *     flow styles. Plain scalars are typed by the YAML 1.2 core schema:
 *     null, Null, NULL, ~ and the empty scalar are null; true/false (also
 *     True, TRUE, False, FALSE) are booleans; [-+]?[0-9]+, 0x.. and 0o..
 *     are integers; decimal floats are reals; everything else is a string.
 *     Quoted scalars are always strings ("24" stays the string "24"), and
 *     so is any scalar tagged "!" or "!!str". Unlike the YAML 1.1 rules
 *     some Kubernetes tools still use, yes/no/on/off are strings.
 *   - JSON: a buffer whose first non-blank byte is '{' is read as JSON,
 *     one or more objects in a row (the test Kubernetes' YAMLOrJSONDecoder
 *     uses).
 *   - Each document's root must be a mapping (a Kubernetes object); empty
 *     documents are skipped.
 *
 * What is refused, with an error naming the source, line and column:
 *   - anchors and aliases ("&a", "*a", merge keys): they let a few bytes
 *     expand into gigabytes ("billion laughs") and no manifest needs them;
 *   - duplicate mapping keys, keys that are not strings (a plain 24: or
 *     true: or a mapping used as a key), keys containing NUL;
 *   - tags other than the core schema's (!!str, !!int, !!float, !!bool,
 *     !!null, !!map, !!seq) and the non-specific "!";
 *   - integers outside int64 and floats that JSON cannot hold (.inf, .nan);
 *   - input over the caps in struct pk_manifest_limits: bytes, nesting
 *     depth, documents, nodes. YAML is checked event by event and JSON by
 *     a scan of the text before jansson parses it, so nothing larger than a
 *     cap is ever built. A cap hit returns
 *     PK_ERR_TOO_BIG, a failed allocation PK_ERR_NOMEM; any other bad
 *     input returns PK_ERR_INVALID.
 *
 * Ownership: a struct pk_manifest owns its documents' values and a copy of
 * the source name; pk_manifest_free releases all of it. doc->value and
 * doc->source are borrowed from the manifest: json_incref a value to keep it
 * longer. On failure the parse and load functions leave `out` empty (still
 * safe to free).
 *
 * The parse functions are pure (no I/O, no globals). The file readers at the
 * end of this header are the module's only I/O.
 */
#ifndef PK_MANIFEST_H
#define PK_MANIFEST_H

#include <jansson.h>

#include "pk.h"

#define PK_MANIFEST_MAX_BYTES (8u << 20) /* 8 MiB per file */
#define PK_MANIFEST_MAX_DEPTH 64         /* nested mappings and sequences */
#define PK_MANIFEST_MAX_DOCS  10000      /* documents per stream, empty ones included */
#define PK_MANIFEST_MAX_NODES (1u << 20) /* scalars, mappings and sequences per stream */

struct pk_manifest_limits {
	size_t max_bytes;
	unsigned max_depth;
	size_t max_docs;
	size_t max_nodes;
};

/* The defaults above. */
struct pk_manifest_limits pk_manifest_limits_default(void);

struct pk_manifest_doc {
	json_t *value;      /* a JSON object; borrowed from the manifest */
	const char *source; /* the name given at parse time; borrowed */
	size_t document;    /* 1-based index of the document in its stream */
	size_t line;        /* 1-based line where the object starts */
	size_t item;        /* 1-based index in the List it came from, 0 when none */
	size_t offset;      /* byte offset of the object's document ("---" or its first content;
	                     * 0 for the first one, its byte order mark included) */
	size_t offset_line; /* 1-based line of that byte */
	/* Internal: start lines of the elements of a List document's items, so
	 * that pk_manifest_expand_lists can give each item its own line. */
	size_t *item_lines;
	size_t n_item_lines;
};

struct pk_manifest {
	struct pk_manifest_doc *docs;
	size_t n;
	size_t cap;
	size_t n_documents; /* documents in the stream, empty ones included */
	char *source;       /* owned copy of the source name */
};

/*
 * Parses `len` bytes of `buf` (need not be NUL-terminated) named `source`
 * in messages. `lim` may be NULL for the defaults. On success `out` holds
 * one entry per non-empty document, in stream order. On failure err says
 * "<source>:<line>:<column>: <what is wrong>" and `out` is left empty.
 */
PK_MUST_CHECK int pk_manifest_parse_buffer(const char *buf, size_t len, const char *source,
                                           const struct pk_manifest_limits *lim,
                                           struct pk_manifest *out, struct pk_err *err);

/*
 * Called by pk_manifest_parse_each with one object: a document, or an item
 * of a List document (as pk_manifest_expand_lists gives them). d->value and
 * d->source are valid only during the call (json_incref the value to keep
 * it). Returning anything but PK_OK stops the parse, and that code is
 * returned; the function sets err itself.
 */
typedef int pk_manifest_each_fn(void *ctx, const struct pk_manifest_doc *d, struct pk_err *err);

/*
 * The streaming form of pk_manifest_parse_buffer followed by
 * pk_manifest_expand_lists: the same input, caps and messages, but each
 * object goes to `fn` as soon as its YAML document ends and is freed after,
 * so that memory holds one document at a time. (A JSON stream is read whole
 * first, since a stream that is not JSON is read again as YAML.)
 * `*n_documents` (may be NULL) is set to the number of documents in the
 * stream, empty ones included, as pk_manifest.n_documents. On failure `fn`
 * may already have seen the objects before the bad part: a caller that
 * keeps anything discards it.
 */
PK_MUST_CHECK int pk_manifest_parse_each(const char *buf, size_t len, const char *source,
                                         const struct pk_manifest_limits *lim,
                                         pk_manifest_each_fn *fn, void *ctx, size_t *n_documents,
                                         struct pk_err *err);

/*
 * Replaces every document of kind "List" (what `kubectl get -o yaml`
 * prints) or of a kind ending in "List" with an `items` array (a typed list
 * such as IPPoolList) by its items, each keeping the list's source and
 * document index, with `item` set and `line` the item's own line. Items
 * must be objects; a List inside a List is refused. On failure the
 * manifest is unchanged.
 */
PK_MUST_CHECK int pk_manifest_expand_lists(struct pk_manifest *m, struct pk_err *err);

/* Releases everything the manifest holds and empties it. NULL is fine. */
void pk_manifest_free(struct pk_manifest *m);

/* "<source>:<line>" or "<source>:<line> (document N)" or "... (document N, item M)":
 * the document part is shown when the stream held more than one document
 * or the object came from a List. Returns buf. */
char *pk_manifest_format_origin(const struct pk_manifest *m, const struct pk_manifest_doc *d,
                                char *buf, size_t len);

/* ---- I/O: reading files and descriptors, with the same byte cap ---- */

/*
 * Reads the whole of `path` (a regular file or a pipe) into a new buffer
 * the caller frees with free(); a NUL is appended after `*len` bytes.
 * Refuses files over `max_bytes` (PK_ERR_TOO_BIG) and reports open and read
 * failures as PK_ERR_INVALID with the path and strerror text in err.
 */
PK_MUST_CHECK int pk_manifest_read_file(const char *path, size_t max_bytes, char **buf, size_t *len,
                                        struct pk_err *err);

/*
 * The same, but only for a regular file: anything else (a FIFO, a device, a
 * directory) is PK_ERR_INVALID naming the path and what it is, found
 * without blocking. For files that untrusted trees supply.
 */
PK_MUST_CHECK int pk_manifest_read_regular(const char *path, size_t max_bytes, char **buf,
                                           size_t *len, struct pk_err *err);

/* "a FIFO", "a socket", ...: what a st_mode names, for messages. */
const char *pk_manifest_file_kind(unsigned mode);

/* The same for an open descriptor (e.g. standard input) named `name`. */
PK_MUST_CHECK int pk_manifest_read_fd(int fd, const char *name, size_t max_bytes, char **buf,
                                      size_t *len, struct pk_err *err);

#endif
