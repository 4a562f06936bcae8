/*
 * manifest_locate.c - a field's line and column in one document's text,
 * from libyaml's events. The search recurses only into the values a path
 * component matched (at most one level per component, and never deeper
 * than the depth cap); everything else is read past by counting depth.
 * See manifest_locate.h.
 */
#include "manifest_locate.h"

#include <stdint.h>
#include <string.h>
#include <yaml.h>

/* One search: the parser and the caps. */
struct locator {
	yaml_parser_t parser;
	size_t events;     /* read so far */
	unsigned depth;    /* mappings and sequences open */
	bool stopped;      /* bad YAML, a cap, or the end of the events */
	size_t first_line; /* the file's line of text[0] */
};

/* The deepest part of the path found so far. */
struct found {
	size_t line;
	size_t col;
	bool whole; /* the whole path */
};

static void found_at(struct found *f, const struct locator *lc, const yaml_mark_t *mark)
{
	f->line = lc->first_line + (size_t)mark->line;
	f->col = (size_t)mark->column + 1;
}

/*
 * Reads the next event into ev (the caller deletes it) and keeps the depth.
 * False, with nothing to delete, once the parser failed, a cap was hit or
 * the events ran out; false from then on.
 */
static bool next_event(struct locator *lc, yaml_event_t *ev)
{
	if (lc->stopped || lc->events >= PK_MANIFEST_LOCATE_MAX_EVENTS ||
	    !yaml_parser_parse(&lc->parser, ev)) {
		lc->stopped = true;
		return false;
	}
	lc->events++;
	switch (ev->type) {
	case YAML_MAPPING_START_EVENT:
	case YAML_SEQUENCE_START_EVENT:
		if (lc->depth >= PK_MANIFEST_LOCATE_MAX_DEPTH)
			break;
		lc->depth++;
		return true;
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		lc->depth--;
		return true;
	case YAML_SCALAR_EVENT:
	case YAML_ALIAS_EVENT:
	case YAML_STREAM_START_EVENT:
	case YAML_DOCUMENT_START_EVENT:
		return true;
	case YAML_DOCUMENT_END_EVENT:
	case YAML_STREAM_END_EVENT:
	case YAML_NO_EVENT: /* what libyaml gives after an error or the end */
		break;
	}
	yaml_event_delete(ev);
	lc->stopped = true;
	return false;
}

/* Reads past the rest of a node whose first event has been read: nothing
 * more for a scalar or an alias, up to the matching end for a collection. */
static void skip_node(struct locator *lc, const yaml_event_t *first)
{
	if (first->type != YAML_MAPPING_START_EVENT && first->type != YAML_SEQUENCE_START_EVENT)
		return;
	unsigned outside = lc->depth - 1;
	yaml_event_t ev;
	while (lc->depth > outside && next_event(lc, &ev))
		yaml_event_delete(&ev);
}

static void search_node(struct locator *lc, const yaml_event_t *first, const char *path,
                        bool want_key, struct found *f);

/* "[n]" at path: sets *n and returns what follows, or NULL when it is not one. */
static const char *parse_index(const char *path, size_t *n)
{
	size_t v = 0;
	const char *p = path + 1;
	if (*p < '0' || *p > '9')
		return NULL;
	for (; *p >= '0' && *p <= '9'; p++) {
		size_t d = (size_t)(*p - '0');
		if (v > (SIZE_MAX - d) / 10)
			return NULL;
		v = v * 10 + d;
	}
	if (*p != ']')
		return NULL;
	*n = v;
	return p + 1;
}

/* A key component matched and `rest` follows it: a '.' there means a key
 * comes next, even an empty one. */
static void after_key(const char **rest, bool *want_key)
{
	*want_key = **rest == '.';
	if (*want_key)
		(*rest)++;
}

/*
 * In a sequence whose start event has been read, element `n`, then `rest`.
 * Reads up to the sequence's end: an index past it is not found.
 */
static void search_sequence(struct locator *lc, size_t n, const char *rest, struct found *f)
{
	bool want_key;
	after_key(&rest, &want_key);
	yaml_event_t ev;
	for (size_t i = 0; next_event(lc, &ev); i++) {
		if (ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			return;
		}
		if (i == n) {
			found_at(f, lc, &ev.start_mark);
			search_node(lc, &ev, rest, want_key, f);
		} else {
			skip_node(lc, &ev);
		}
		yaml_event_delete(&ev);
	}
}

/*
 * The length of scalar key `ev` when the path starts with it and goes on
 * with '.', '[' or its end; -1 when it does not match (also for a key
 * over 1 GiB, so that every length fits a long).
 */
static long key_match(const yaml_event_t *ev, const char *path)
{
	if (ev->type != YAML_SCALAR_EVENT)
		return -1;
	const char *k = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	if (n > (size_t)1 << 30 || memchr(k, '\0', n) != NULL || strncmp(k, path, n) != 0)
		return -1;
	if (path[n] != '\0' && path[n] != '.' && path[n] != '[')
		return -1;
	return (long)n;
}

/*
 * In a mapping whose start event has been read, the value of the longest
 * key that heads `path`, then what follows the key. Reads up to the
 * mapping's end, searching each matching key's value as it comes (their
 * events do not overlap) and keeping the longest key's result.
 */
static void search_mapping(struct locator *lc, const char *path, struct found *f)
{
	struct found best = *f;
	long best_len = -1;
	yaml_event_t key, val;
	while (next_event(lc, &key)) {
		if (key.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&key);
			break;
		}
		long n = key_match(&key, path);
		skip_node(lc, &key);
		yaml_mark_t at = key.start_mark;
		yaml_event_delete(&key);
		if (!next_event(lc, &val))
			break;
		if (n > best_len) {
			struct found cand = {0};
			found_at(&cand, lc, &at);
			const char *rest = path + n;
			bool want_key;
			after_key(&rest, &want_key);
			search_node(lc, &val, rest, want_key, &cand);
			best = cand;
			best_len = n;
		} else {
			skip_node(lc, &val);
		}
		yaml_event_delete(&val);
	}
	*f = best;
}

/*
 * The node whose first event is `first`, searched for `path` (what is left
 * of the field); `want_key`: a key comes first even if path is "" or starts
 * with '[' (the path had a '.' there). Reads the whole node unless stopped.
 */
static void search_node(struct locator *lc, const yaml_event_t *first, const char *path,
                        bool want_key, struct found *f)
{
	if (!want_key && *path == '\0') {
		f->whole = true;
		skip_node(lc, first);
		return;
	}
	if (!want_key && *path == '[') {
		size_t n;
		const char *rest = parse_index(path, &n);
		if (rest != NULL && first->type == YAML_SEQUENCE_START_EVENT) {
			search_sequence(lc, n, rest, f);
			return;
		}
	} else if (first->type == YAML_MAPPING_START_EVENT) {
		search_mapping(lc, path, f);
		return;
	}
	/* A scalar, an alias or the other kind of collection: the path stops. */
	skip_node(lc, first);
}

/*
 * In the root mapping whose start event has been read, element item-1 of
 * the "items" sequence: its first event goes to *obj (the caller deletes
 * it). The rest of the root is left unread: nothing is searched after it.
 */
static bool find_item(struct locator *lc, size_t item, struct found *f, yaml_event_t *obj)
{
	yaml_event_t key, val;
	while (next_event(lc, &key)) {
		if (key.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&key);
			return false;
		}
		bool items = key.type == YAML_SCALAR_EVENT && key.data.scalar.length == 5 &&
		             !memcmp(key.data.scalar.value, "items", 5);
		skip_node(lc, &key);
		yaml_mark_t at = key.start_mark;
		yaml_event_delete(&key);
		if (!next_event(lc, &val))
			return false;
		if (!items || val.type != YAML_SEQUENCE_START_EVENT) {
			skip_node(lc, &val);
			yaml_event_delete(&val);
			continue;
		}
		yaml_event_delete(&val);
		found_at(f, lc, &at);
		for (size_t i = 0; next_event(lc, obj); i++) {
			if (obj->type == YAML_SEQUENCE_END_EVENT || i == item - 1)
				break;
			skip_node(lc, obj);
			yaml_event_delete(obj);
		}
		if (lc->stopped || obj->type == YAML_SEQUENCE_END_EVENT) {
			if (!lc->stopped)
				yaml_event_delete(obj);
			return false;
		}
		found_at(f, lc, &obj->start_mark);
		return true;
	}
	return false;
}

/* The document's root node, whose first event is `root`, searched. */
static void search_root(struct locator *lc, const yaml_event_t *root, size_t item,
                        const char *field, struct found *f)
{
	if (root->type != YAML_MAPPING_START_EVENT)
		return;
	found_at(f, lc, &root->start_mark);
	if (item == 0) {
		search_node(lc, root, field, false, f);
		return;
	}
	yaml_event_t obj;
	if (!find_item(lc, item, f, &obj))
		return;
	if (obj.type == YAML_MAPPING_START_EVENT)
		search_node(lc, &obj, field, false, f);
	yaml_event_delete(&obj);
}

bool pk_manifest_locate(const char *text, size_t len, size_t first_line, size_t item,
                        const char *field, size_t *line, size_t *col)
{
	struct found f = {.line = first_line, .col = 1, .whole = false};
	struct locator lc = {.first_line = first_line};
	yaml_event_t ev;

	if (text == NULL) {
		text = "";
		len = 0;
	}
	if (field == NULL)
		field = "";
	if (!yaml_parser_initialize(&lc.parser))
		goto out;
	yaml_parser_set_input_string(&lc.parser, (const unsigned char *)text, len);
	/* Past the stream and document starts to the first document's root. */
	while (next_event(&lc, &ev)) {
		yaml_event_type_t type = ev.type;
		if (type != YAML_STREAM_START_EVENT && type != YAML_DOCUMENT_START_EVENT) {
			search_root(&lc, &ev, item, field, &f);
			yaml_event_delete(&ev);
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&lc.parser);
out:
	*line = f.line;
	*col = f.col;
	return f.whole;
}
