/*
 * manifest_yaml.c - a YAML stream into jansson values through libyaml's
 * event API: scalars typed by the YAML 1.2 core schema, mappings and
 * sequences built without recursion on an explicit stack whose height is
 * the depth cap, every cap checked event by event. See manifest.h for what
 * is accepted and refused.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "buf.h"
#include "manifest_build.h"
#include "parse.h"

/* ---- YAML 1.2 core schema scalars ---- */

#define TAG_PREFIX "tag:yaml.org,2002:"

enum scalar_want {
	WANT_ANY,   /* untagged plain scalar: resolve by the core schema */
	WANT_STR,   /* quoted, "!" or !!str */
	WANT_INT,   /* !!int */
	WANT_FLOAT, /* !!float */
	WANT_BOOL,  /* !!bool */
	WANT_NULL,  /* !!null */
};

static bool is_null_word(const char *s, size_t n)
{
	return n == 0 || (n == 1 && s[0] == '~') ||
	       (n == 4 &&
	        (!memcmp(s, "null", 4) || !memcmp(s, "Null", 4) || !memcmp(s, "NULL", 4)));
}

/*
 * Whether a plain scalar may be other than a string: every core schema
 * null, boolean and number starts with one of these, and the empty scalar
 * is null. Others are strings without further typing.
 */
static bool may_be_typed(const char *s, size_t n)
{
	return n == 0 || strchr("~nNtTfF+-.0123456789", s[0]) != NULL;
}

static int bool_word(const char *s, size_t n)
{
	if (n == 4 && (!memcmp(s, "true", 4) || !memcmp(s, "True", 4) || !memcmp(s, "TRUE", 4)))
		return 1;
	if (n == 5 && (!memcmp(s, "false", 5) || !memcmp(s, "False", 5) || !memcmp(s, "FALSE", 5)))
		return 0;
	return -1;
}

static int digit_value(char c, unsigned base)
{
	int d;
	if (c >= '0' && c <= '9')
		d = c - '0';
	else if (c >= 'a' && c <= 'f')
		d = c - 'a' + 10;
	else if (c >= 'A' && c <= 'F')
		d = c - 'A' + 10;
	else
		return -1;
	return (unsigned)d < base ? d : -1;
}

/*
 * Core schema integer: [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+.
 * Returns 1 and sets *out when it is one and fits int64, 0 when the text is
 * not an integer, -1 when it is one but out of range.
 */
static int parse_core_int(const char *s, size_t n, long long *out)
{
	size_t i = 0;
	bool neg = false;
	unsigned base = 10;
	if (n >= 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
		base = s[1] == 'o' ? 8 : 16;
		i = 2;
	} else if (n > 0 && (s[0] == '-' || s[0] == '+')) {
		neg = s[0] == '-';
		i = 1;
	}
	if (i == n)
		return 0;
	unsigned long long v = 0;
	bool overflow = false;
	for (; i < n; i++) {
		int d = digit_value(s[i], base);
		if (d < 0)
			return 0;
		if (v > (ULLONG_MAX - (unsigned)d) / base)
			overflow = true;
		else
			v = v * base + (unsigned)d;
	}
	if (overflow)
		return -1;
	if (neg) {
		if (v > (unsigned long long)LLONG_MAX + 1)
			return -1;
		*out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
	} else {
		if (v > (unsigned long long)LLONG_MAX)
			return -1;
		*out = (long long)v;
	}
	return 1;
}

/* [-+]?.inf and .nan in their three spellings: floats JSON cannot hold. */
static bool is_core_special_float(const char *s, size_t n)
{
	if (n > 0 && (s[0] == '-' || s[0] == '+')) {
		s++;
		n--;
	}
	if (n != 4)
		return false;
	return !memcmp(s, ".inf", 4) || !memcmp(s, ".Inf", 4) || !memcmp(s, ".INF", 4) ||
	       !memcmp(s, ".nan", 4) || !memcmp(s, ".NaN", 4) || !memcmp(s, ".NAN", 4);
}

/*
 * Turns a scalar into a JSON value. `s` is NUL-terminated at s[n] (libyaml
 * guarantees it). On failure returns NULL with a reason in `why`; *nomem
 * tells a failed allocation from bad input.
 */
static json_t *scalar_value(const char *s, size_t n, enum scalar_want want, char *why,
                            size_t why_len, bool *nomem)
{
	*nomem = false;
	json_t *v = NULL;
	if (want == WANT_STR || (want == WANT_ANY && !may_be_typed(s, n)))
		goto string;
	if ((want == WANT_ANY || want == WANT_NULL) && is_null_word(s, n))
		return json_null();
	if (want == WANT_ANY || want == WANT_BOOL) {
		int b = bool_word(s, n);
		if (b >= 0)
			return json_boolean(b);
	}
	if (want == WANT_ANY || want == WANT_INT || want == WANT_FLOAT) {
		long long iv;
		int r = parse_core_int(s, n, &iv);
		if (r < 0) {
			snprintf(why, why_len, "integer %.40s is outside the 64-bit range", s);
			return NULL;
		}
		if (r > 0) {
			v = want == WANT_FLOAT ? json_real((double)iv) : json_integer(iv);
			goto made;
		}
	}
	if (want == WANT_ANY || want == WANT_FLOAT) {
		if (is_core_special_float(s, n)) {
			snprintf(why, why_len, "%.8s cannot be represented in JSON", s);
			return NULL;
		}
		/* Core schema float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
		double d;
		int r = memchr(s, '\0', n) == NULL ? pk_parse_real(s, &d, NULL) : PK_ERR_INVALID;
		if (r == PK_ERR_TOO_BIG) {
			snprintf(why, why_len, "number %.40s is out of range", s);
			return NULL;
		}
		if (r == PK_OK) {
			v = json_real(d);
			goto made;
		}
	}
	if (want == WANT_ANY)
		goto string;
	snprintf(why, why_len, "\"%.40s\" is not a valid %s", s,
	         want == WANT_INT     ? "!!int"
	         : want == WANT_FLOAT ? "!!float"
	         : want == WANT_BOOL  ? "!!bool"
	                              : "!!null");
	return NULL;
string:
	v = json_stringn(s, n);
made:
	if (v == NULL) {
		*nomem = true;
		snprintf(why, why_len, "out of memory");
	}
	return v;
}

/* ---- the YAML event builder ---- */

struct frame {
	json_t *node;   /* the mapping (object) or sequence (array) being filled */
	char *key;      /* mapping: the key waiting for its value, when has_key; a */
	size_t key_cap; /* buffer the frame keeps from key to key (freed with the stack) */
	bool has_key;
	bool items; /* the root mapping's "items" sequence */
};

static int bset(struct manifest_builder *b, int rc, const yaml_mark_t *mark, const char *fmt, ...)
    PK_PRINTF(4, 5);

/* "<source>:<line>:<column>: <message>" into the caller's pk_err. */
static int bset(struct manifest_builder *b, int rc, const yaml_mark_t *mark, const char *fmt, ...)
{
	char msg[PK_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (mark != NULL)
		return pk_err_set(b->err, rc, "%s:%zu:%zu: %s", b->source, (size_t)mark->line + 1,
		                  (size_t)mark->column + 1, msg);
	return pk_err_set(b->err, rc, "%s: %s", b->source, msg);
}

static void builder_reset_document(struct manifest_builder *b)
{
	while (b->depth > 0) {
		struct frame *f = &b->stack[--b->depth];
		f->has_key = false;
		json_decref(f->node);
		f->node = NULL;
	}
	json_decref(b->root);
	b->root = NULL;
	free(b->item_lines);
	b->item_lines = NULL;
	b->n_item_lines = 0;
	b->cap_item_lines = 0;
}

static int note_item_line(struct manifest_builder *b, size_t line)
{
	if (pk_array_reserve(&b->item_lines, &b->cap_item_lines, b->n_item_lines + 1,
	                     sizeof(*b->item_lines)) != PK_OK)
		return PK_ERR_NOMEM;
	b->item_lines[b->n_item_lines++] = line;
	return PK_OK;
}

static int count_node(struct manifest_builder *b, const yaml_mark_t *mark)
{
	if (++b->nodes > b->lim->max_nodes)
		return bset(b, PK_ERR_TOO_BIG, mark, "more than %zu nodes in one stream",
		            b->lim->max_nodes);
	return PK_OK;
}

/*
 * Attaches a finished value (a scalar, or a container just opened) to its
 * parent. Takes `v` in every case.
 */
static int attach(struct manifest_builder *b, json_t *v, const yaml_mark_t *mark)
{
	if (b->depth == 0) {
		b->root = v;
		b->root_line = (size_t)mark->line + 1;
		return PK_OK;
	}
	struct frame *f = &b->stack[b->depth - 1];
	if (json_is_array(f->node)) {
		if (f->items && note_item_line(b, (size_t)mark->line + 1) != PK_OK) {
			json_decref(v);
			return bset(b, PK_ERR_NOMEM, mark, "out of memory");
		}
		if (json_array_append_new(f->node, v) != 0)
			return bset(b, PK_ERR_NOMEM, mark, "out of memory");
		return PK_OK;
	}
	/* A mapping: `v` is the value for the pending key (UTF-8 by libyaml, no NUL: on_key). */
	int rc = json_object_set_new_nocheck(f->node, f->key, v);
	f->has_key = false;
	if (rc != 0)
		return bset(b, PK_ERR_NOMEM, mark, "out of memory");
	return PK_OK;
}

/* The current frame is a mapping waiting for a key. */
static bool wants_key(const struct manifest_builder *b)
{
	if (b->depth == 0)
		return false;
	const struct frame *f = &b->stack[b->depth - 1];
	return json_is_object(f->node) && !f->has_key;
}

static int tag_want(struct manifest_builder *b, const yaml_event_t *ev, const char *tag,
                    bool collection, enum scalar_want *want)
{
	if (tag == NULL) {
		*want = WANT_ANY;
		return PK_OK;
	}
	if (!strcmp(tag, "!")) {
		*want = WANT_STR;
		return PK_OK;
	}
	size_t pl = strlen(TAG_PREFIX);
	if (!strncmp(tag, TAG_PREFIX, pl)) {
		const char *t = tag + pl;
		if (collection && (!strcmp(t, "map") || !strcmp(t, "seq"))) {
			*want = WANT_ANY;
			return PK_OK;
		}
		if (!collection) {
			static const struct {
				const char *name;
				enum scalar_want want;
			} tags[] = {{"str", WANT_STR},
			            {"int", WANT_INT},
			            {"float", WANT_FLOAT},
			            {"bool", WANT_BOOL},
			            {"null", WANT_NULL}};
			for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
				if (!strcmp(t, tags[i].name)) {
					*want = tags[i].want;
					return PK_OK;
				}
			}
		}
	}
	return bset(b, PK_ERR_INVALID, &ev->start_mark,
	            "tag %.80s is not supported (only the YAML core schema's !!str, !!int, "
	            "!!float, !!bool, !!null, !!map and !!seq)",
	            tag);
}

/* Whether a key scalar is a string without typing it: quoted, or plain and not typable. */
static bool key_is_string(const char *s, size_t n, enum scalar_want want)
{
	return want == WANT_STR || (want == WANT_ANY && !may_be_typed(s, n));
}

/* A mapping key that is a string: no NUL, no duplicates. */
static int on_key(struct manifest_builder *b, const char *s, size_t n, const yaml_mark_t *mark)
{
	struct frame *f = &b->stack[b->depth - 1];
	if (memchr(s, '\0', n) != NULL)
		return bset(b, PK_ERR_INVALID, mark, "mapping key contains a NUL character");
	if (json_object_get(f->node, s) != NULL)
		return bset(b, PK_ERR_INVALID, mark, "duplicate mapping key \"%.80s\"", s);
	if (n + 1 > f->key_cap) {
		char *k = realloc(f->key, n + 1);
		if (k == NULL)
			return bset(b, PK_ERR_NOMEM, mark, "out of memory");
		f->key = k;
		f->key_cap = n + 1;
	}
	memcpy(f->key, s, n + 1);
	f->has_key = true;
	return PK_OK;
}

static int on_scalar(struct manifest_builder *b, const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	const yaml_mark_t *mark = &ev->start_mark;
	int rc;

	if (ev->data.scalar.anchor != NULL)
		return bset(
		    b, PK_ERR_INVALID, mark,
		    "anchor &%.80s: anchors and aliases are not supported (a few bytes of them "
		    "can expand into gigabytes)",
		    (const char *)ev->data.scalar.anchor);
	if ((rc = count_node(b, mark)) != PK_OK)
		return rc;

	enum scalar_want want;
	if ((rc = tag_want(b, ev, (const char *)ev->data.scalar.tag, false, &want)) != PK_OK)
		return rc;
	if (want == WANT_ANY && !ev->data.scalar.plain_implicit)
		want = WANT_STR; /* quoted or block scalars are strings */

	if (wants_key(b) && key_is_string(s, n, want))
		return on_key(b, s, n, mark);
	char why[160];
	bool nomem;
	json_t *v = scalar_value(s, n, want, why, sizeof(why), &nomem);
	if (v == NULL)
		return bset(b, nomem ? PK_ERR_NOMEM : PK_ERR_INVALID, mark, "%s", why);

	if (!wants_key(b))
		return attach(b, v, mark);

	/* A mapping key: strings only. */
	if (!json_is_string(v)) {
		rc = bset(b, PK_ERR_INVALID, mark,
		          "mapping key %.40s%s is %s, not a string (quote it to make it one)",
		          n ? s : "(empty)", n > 40 ? "..." : "", pk_manifest_type_word(v));
		json_decref(v);
		return rc;
	}
	json_decref(v);
	return on_key(b, s, n, mark);
}

static int on_collection_start(struct manifest_builder *b, const yaml_event_t *ev, bool mapping)
{
	const yaml_mark_t *mark = &ev->start_mark;
	const yaml_char_t *anchor =
	    mapping ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
	const yaml_char_t *tag = mapping ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;
	int rc;

	if (anchor != NULL)
		return bset(
		    b, PK_ERR_INVALID, mark,
		    "anchor &%.80s: anchors and aliases are not supported (a few bytes of them "
		    "can expand into gigabytes)",
		    (const char *)anchor);
	if (wants_key(b))
		return bset(b, PK_ERR_INVALID, mark, "mapping key is a %s, not a string",
		            mapping ? "mapping" : "sequence");
	if (b->depth >= b->lim->max_depth)
		return bset(b, PK_ERR_TOO_BIG, mark, "nesting deeper than %u levels",
		            b->lim->max_depth);
	if ((rc = count_node(b, mark)) != PK_OK)
		return rc;
	enum scalar_want want;
	if ((rc = tag_want(b, ev, (const char *)tag, true, &want)) != PK_OK)
		return rc;
	if (tag != NULL && strcmp((const char *)tag, "!") &&
	    strcmp((const char *)tag, mapping ? TAG_PREFIX "map" : TAG_PREFIX "seq"))
		return bset(b, PK_ERR_INVALID, mark, "tag %.80s does not fit a %s",
		            (const char *)tag, mapping ? "mapping" : "sequence");

	/* The root mapping's items: sequence, whose element lines a List needs. */
	bool items =
	    !mapping && b->depth == 1 && b->stack[0].has_key && !strcmp(b->stack[0].key, "items");

	json_t *node = mapping ? json_object() : json_array();
	if (node == NULL)
		return bset(b, PK_ERR_NOMEM, mark, "out of memory");
	json_incref(node); /* one reference for the parent, one for the frame */
	if ((rc = attach(b, node, mark)) != PK_OK) {
		json_decref(node);
		return rc;
	}
	struct frame *f = &b->stack[b->depth++];
	f->node = node;
	f->has_key = false;
	f->items = items;
	return PK_OK;
}

static void on_collection_end(struct manifest_builder *b)
{
	struct frame *f = &b->stack[--b->depth];
	f->has_key = false;
	json_decref(f->node);
	f->node = NULL;
}

static int on_document_end(struct manifest_builder *b, const yaml_event_t *ev)
{
	json_t *root = b->root;
	if (root == NULL || json_is_null(root)) {
		builder_reset_document(b);
		return PK_OK; /* empty documents are skipped */
	}
	if (!json_is_object(root)) {
		yaml_mark_t at = ev->start_mark;
		at.line = b->root_line - 1;
		at.column = 0;
		return bset(b, PK_ERR_INVALID, &at,
		            "document %zu is %s, not a Kubernetes object (a mapping)", b->document,
		            pk_manifest_type_word(root));
	}
	b->root = NULL;
	int rc = pk_manifest_emit(b, root, b->root_line);
	if (rc == PK_ERR_NOMEM)
		return bset(b, PK_ERR_NOMEM, &ev->start_mark, "out of memory");
	return rc;
}

/* libyaml's own error, as "<source>:<line>:<column>: problem (context)". */
static int yaml_error(struct manifest_builder *b, const yaml_parser_t *p)
{
	if (p->error == YAML_MEMORY_ERROR)
		return bset(b, PK_ERR_NOMEM, NULL, "out of memory while parsing YAML");
	const char *problem = p->problem ? p->problem : "malformed YAML";
	if (p->error == YAML_READER_ERROR) {
		size_t line, col;
		pk_manifest_position(b->buf, b->len, p->problem_offset, &line, &col);
		return pk_err_set(b->err, PK_ERR_INVALID, "%s:%zu:%zu: %s", b->source, line, col,
		                  problem);
	}
	size_t line = (size_t)p->problem_mark.line + 1;
	size_t col = (size_t)p->problem_mark.column + 1;

	/* Tabs are the commonest cause of "cannot start any token"; say so. */
	const char *hint = "";
	const char *ls = b->buf;
	const char *end = b->buf + b->len;
	for (size_t l = 1; l < line && ls < end; l++) {
		const char *nl = memchr(ls, '\n', (size_t)(end - ls));
		ls = nl ? nl + 1 : end;
	}
	for (const char *c = ls; c < end && (*c == ' ' || *c == '\t'); c++) {
		if (*c == '\t') {
			hint = " (a tab in the indentation: YAML indents with spaces only)";
			break;
		}
	}
	if (p->context != NULL)
		return pk_err_set(b->err, PK_ERR_INVALID, "%s:%zu:%zu: %s, %s at line %zu%s",
		                  b->source, line, col, problem, p->context,
		                  (size_t)p->context_mark.line + 1, hint);
	return pk_err_set(b->err, PK_ERR_INVALID, "%s:%zu:%zu: %s%s", b->source, line, col, problem,
	                  hint);
}

/* How far the stream has been counted: characters, and the bytes they take. */
struct char_scan {
	size_t chars, bytes;
};

/* The byte order mark libyaml reads past without counting it, for its encoding. */
static size_t bom_length(const unsigned char *buf, size_t len, yaml_encoding_t enc)
{
	if (enc == YAML_UTF8_ENCODING)
		return len >= 3 && buf[0] == 0xEF && buf[1] == 0xBB && buf[2] == 0xBF ? 3 : 0;
	return len >= 2 &&
	               ((buf[0] == 0xFF && buf[1] == 0xFE) || (buf[0] == 0xFE && buf[1] == 0xFF))
	           ? 2
	           : 0;
}

/*
 * libyaml counts a mark's index in characters of the decoded stream (UTF-8,
 * or UTF-16 after its byte order mark); the byte offset in buf of the
 * index-th, counted on from *s (documents come in order, so a stream is
 * counted once). Bytes libyaml would refuse are counted as one character
 * each; the stream stops there anyway. Character 0 is byte 0, so that
 * the first document keeps the byte order mark a second reading of its
 * text needs to decode UTF-16.
 */
static size_t byte_offset(const unsigned char *buf, size_t len, yaml_encoding_t enc,
                          struct char_scan *s, size_t index)
{
	bool utf16 = enc == YAML_UTF16LE_ENCODING || enc == YAML_UTF16BE_ENCODING;
	if (index == 0)
		return 0;
	while (s->chars < index && s->bytes < len) {
		uint64_t w;
		if (utf16) {
			size_t hi = enc == YAML_UTF16LE_ENCODING ? s->bytes + 1 : s->bytes;
			bool pair = hi < len && (buf[hi] & 0xFC) == 0xD8;
			s->bytes += pair ? 4 : 2;
		} else if (index - s->chars >= 8 && len - s->bytes >= 8 &&
		           (memcpy(&w, buf + s->bytes, 8), (w & 0x8080808080808080ULL) == 0)) {
			s->bytes += 8; /* eight ASCII characters at once */
			s->chars += 8;
			continue;
		} else {
			s->bytes++;
			while (s->bytes < len && (buf[s->bytes] & 0xC0) == 0x80)
				s->bytes++;
		}
		s->chars++;
	}
	return s->bytes < len ? s->bytes : len;
}

static int parse_yaml(struct manifest_builder *b)
{
	struct char_scan scan = {0, 0};
	yaml_parser_t parser;
	yaml_event_t ev;
	int rc = PK_OK;
	bool done = false;

	if (!yaml_parser_initialize(&parser))
		return bset(b, PK_ERR_NOMEM, NULL, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)b->buf, b->len);

	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			rc = yaml_error(b, &parser);
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			b->document++;
			b->out->n_documents = b->document;
			b->doc_offset = byte_offset((const unsigned char *)b->buf, b->len,
			                            parser.encoding, &scan, ev.start_mark.index);
			b->doc_line = (size_t)ev.start_mark.line + 1;
			if (b->document > b->lim->max_docs)
				rc =
				    bset(b, PK_ERR_TOO_BIG, &ev.start_mark,
				         "more than %zu documents in one stream", b->lim->max_docs);
			break;
		case YAML_DOCUMENT_END_EVENT:
			rc = on_document_end(b, &ev);
			break;
		case YAML_ALIAS_EVENT:
			rc = bset(b, PK_ERR_INVALID, &ev.start_mark,
			          "alias *%.80s: anchors and aliases are not supported (a few "
			          "bytes of them "
			          "can expand into gigabytes)",
			          (const char *)ev.data.alias.anchor);
			break;
		case YAML_SCALAR_EVENT:
			rc = on_scalar(b, &ev);
			break;
		case YAML_MAPPING_START_EVENT:
			rc = on_collection_start(b, &ev, true);
			break;
		case YAML_SEQUENCE_START_EVENT:
			rc = on_collection_start(b, &ev, false);
			break;
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT:
			on_collection_end(b);
			break;
		case YAML_STREAM_START_EVENT:
			scan.bytes =
			    bom_length((const unsigned char *)b->buf, b->len, parser.encoding);
			break;
		case YAML_NO_EVENT:
			break;
		}
		yaml_event_delete(&ev);
		if (rc != PK_OK)
			break;
	}
	yaml_parser_delete(&parser);
	builder_reset_document(b);
	return rc;
}

int pk_manifest_parse_yaml(struct manifest_builder *b)
{
	unsigned frames = b->lim->max_depth ? b->lim->max_depth : 1;
	b->stack = calloc(frames, sizeof(*b->stack));
	if (b->stack == NULL)
		return bset(b, PK_ERR_NOMEM, NULL, "out of memory");
	int rc = parse_yaml(b);
	for (unsigned i = 0; i < frames; i++)
		free(b->stack[i].key);
	free(b->stack);
	b->stack = NULL;
	return rc;
}
