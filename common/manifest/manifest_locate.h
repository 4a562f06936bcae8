/*
 * manifest_locate.h - the line and column of one field of a loaded object,
 * found by reading its document's text again, so that a finding can say
 * "examples/pool.yaml:14:5" rather than the object's first line.
 *
 * The loader (manifest.h) keeps one line per object; this finds the rest
 * on demand, for the objects that have findings only. It reads the text
 * with libyaml's event parser, one pass, in time linear in the document's
 * size, holding no more than one path's worth of state on the C stack: no
 * allocation besides libyaml's own. Hostile input is bounded by
 * PK_MANIFEST_LOCATE_MAX_EVENTS and PK_MANIFEST_LOCATE_MAX_DEPTH.
 *
 * Pure: no I/O, no globals. `text` is borrowed and only read.
 */
#ifndef PK_MANIFEST_LOCATE_H
#define PK_MANIFEST_LOCATE_H

#include <stdbool.h>
#include <stddef.h>

/* Events read before giving up (a document the loader takes has at most
 * 2 * PK_MANIFEST_MAX_NODES + 2), and mappings and sequences open at once. */
#define PK_MANIFEST_LOCATE_MAX_EVENTS (1u << 22)
#define PK_MANIFEST_LOCATE_MAX_DEPTH  256

/*
 * Where `field` is in one document. `text`/`len` start at the document's
 * first byte (a "---" line or its first content; len may run past the
 * document: parsing stops at the end of the first document), and
 * `first_line` is the 1-based line of text[0] in its file; text need not
 * be NUL-terminated and NULL is read as empty.
 * `item` > 0: the object is element item-1 of that document's `items`
 * sequence (a kind: List); 0: the document's root mapping is the object.
 * Either way the object must be a mapping.
 * `field` is a path as rules report it: keys joined by '.', sequence
 * indices as "[n]" ("spec.addresses[2]", "metadata.ownerReferences[0].uid",
 * "spec.poolRef.name"); "" or NULL means the object itself. A key may itself
 * contain dots (annotation keys like "ipam.poolkeeper.io/skip"): at a mapping,
 * match the longest key that equals the remaining path up to a '.', '[' or its end.
 * Sets *line and *col to the deepest part of the path found: a mapping key's
 * own position for a key, an element's start for an index; the object's
 * start when nothing matched, and (first_line, 1) when there is no object.
 * Positions come from libyaml's marks (line: first_line + mark.line; col:
 * mark.column + 1), as in the loader's own messages: a column counts characters,
 * so a multi-byte UTF-8 character before the field counts once, and a line
 * ends where libyaml's does: LF, CR LF, a lone CR, or Unicode's NEL, LS, PS.
 * Returns true when the whole path was found, false otherwise (the position
 * then is the deepest found part). Never fails otherwise: bad YAML or a cap
 * stops the search where it is and returns what was found so far; bytes
 * that are not UTF-8 stop it where libyaml's reader meets them, which may be
 * before the field (it decodes up to 16 KiB ahead; the loader refuses such
 * text anyway). Anchors and aliases are read past; a path through one, or
 * through a scalar, is not found.
 */
bool pk_manifest_locate(const char *text, size_t len, size_t first_line, size_t item,
                        const char *field, size_t *line, size_t *col);

#endif
