/*
 * manifest_build.h - what manifest.c (documents, positions, JSON) and
 * manifest_yaml.c (YAML events into values) share while one buffer is
 * parsed. Internal to the manifest library: callers use manifest.h.
 */
#ifndef PK_MANIFEST_BUILD_H
#define PK_MANIFEST_BUILD_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "manifest.h"

struct frame;

/* The state of one pk_manifest_parse_buffer call. */
struct manifest_builder {
	const struct pk_manifest_limits *lim;
	const char *source;
	const char *buf;
	size_t len;
	struct pk_manifest *out;
	struct pk_err *err;

	struct frame *stack; /* max_depth entries (manifest_yaml.c) */
	unsigned depth;
	size_t nodes;
	size_t document;             /* 1-based, of the document being built */
	size_t doc_offset, doc_line; /* where it starts: byte offset, 1-based line */
	pk_manifest_each_fn *each;   /* set: objects go here as documents end (YAML only) */
	void *each_ctx;
	json_t *root;
	size_t root_line;
	size_t *item_lines;
	size_t n_item_lines;
	size_t cap_item_lines;
};

/*
 * A document of the stream is complete: `value` is its root mapping, which
 * starts on `line`, and b->item_lines the lines of its items. With b->each
 * the document's objects go to it and are freed; otherwise the document is
 * appended to b->out. Takes `value` and b->item_lines in every case; on
 * failure err is set.
 */
PK_MUST_CHECK int pk_manifest_emit(struct manifest_builder *b, json_t *value, size_t line);

/* "a mapping", "a string", ...: v's type in YAML words for messages. */
const char *pk_manifest_type_word(const json_t *v);

/* 1-based line and column of byte `off` in buf. */
void pk_manifest_position(const char *buf, size_t len, size_t off, size_t *line, size_t *col);

/* Parses b->buf as a YAML stream into b->out (manifest_yaml.c). */
PK_MUST_CHECK int pk_manifest_parse_yaml(struct manifest_builder *b);

#endif
