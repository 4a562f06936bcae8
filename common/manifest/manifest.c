/*
 * manifest.c - Kubernetes manifests from YAML (libyaml's event API) or JSON
 * (jansson) into jansson values. See manifest.h for what is accepted and
 * refused. The tree is built without recursion from an explicit stack whose
 * height is the depth cap.
 */
#include "manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

struct pk_manifest_limits pk_manifest_limits_default(void)
{
	struct pk_manifest_limits l = {
	    .max_bytes = PK_MANIFEST_MAX_BYTES,
	    .max_depth = PK_MANIFEST_MAX_DEPTH,
	    .max_docs = PK_MANIFEST_MAX_DOCS,
	    .max_nodes = PK_MANIFEST_MAX_NODES,
	};
	return l;
}

/* ---- the manifest container ---- */

static void doc_release(struct pk_manifest_doc *d)
{
	json_decref(d->value);
	d->value = NULL;
	free(d->item_lines);
	d->item_lines = NULL;
	d->n_item_lines = 0;
}

void pk_manifest_free(struct pk_manifest *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->n; i++)
		doc_release(&m->docs[i]);
	free(m->docs);
	free(m->source);
	memset(m, 0, sizeof(*m));
}

/* Appends a document; takes `value` and `item_lines` on success only. */
static int manifest_push(struct pk_manifest *m, json_t *value, size_t document, size_t line,
                         size_t *item_lines, size_t n_item_lines)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 8;
		struct pk_manifest_doc *d = realloc(m->docs, cap * sizeof(*d));
		if (d == NULL)
			return PK_ERR_NOMEM;
		m->docs = d;
		m->cap = cap;
	}
	struct pk_manifest_doc *d = &m->docs[m->n++];
	memset(d, 0, sizeof(*d));
	d->value = value;
	d->source = m->source;
	d->document = document;
	d->line = line;
	d->item_lines = item_lines;
	d->n_item_lines = n_item_lines;
	return PK_OK;
}

static const char *json_type_word(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "a mapping";
	case JSON_ARRAY:
		return "a sequence";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "a value";
}

/* 1-based line and column of byte `off` in buf. */
static void offset_position(const char *buf, size_t len, size_t off, size_t *line, size_t *col)
{
	size_t l = 1, c = 1;
	if (off > len)
		off = len;
	for (size_t i = 0; i < off; i++) {
		if (buf[i] == '\n') {
			l++;
			c = 1;
		} else {
			c++;
		}
	}
	*line = l;
	*col = c;
}

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

static bool all_digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Core schema float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool is_core_float(const char *s, size_t n)
{
	size_t i = 0;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		i++;
	size_t int_start = i;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	size_t int_digits = i - int_start;
	size_t frac_digits = 0;
	if (i < n && s[i] == '.') {
		i++;
		size_t f = i;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		frac_digits = i - f;
	}
	if (int_digits == 0 && frac_digits == 0)
		return false;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			i++;
		if (!all_digits(s + i, n - i))
			return false;
		i = n;
	}
	return i == n;
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
	if (want == WANT_STR)
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
		if (is_core_float(s, n)) {
			char *end = NULL;
			errno = 0;
			double d = strtod(s, &end);
			if (end != s + n || (errno == ERANGE && (d > 1.0 || d < -1.0))) {
				snprintf(why, why_len, "number %.40s is out of range", s);
				return NULL;
			}
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
	json_t *node; /* the mapping (object) or sequence (array) being filled */
	char *key;    /* mapping: the key waiting for its value, NULL when none */
	bool items;   /* the root mapping's "items" sequence */
};

struct builder {
	const struct pk_manifest_limits *lim;
	const char *source;
	const char *buf;
	size_t len;
	struct pk_manifest *out;
	struct pk_err *err;

	struct frame *stack; /* max_depth entries */
	unsigned depth;
	size_t nodes;
	size_t document; /* 1-based, of the document being built */
	json_t *root;
	size_t root_line;
	size_t *item_lines;
	size_t n_item_lines;
	size_t cap_item_lines;
};

static int bset(struct builder *b, int rc, const yaml_mark_t *mark, const char *fmt, ...)
    PK_PRINTF(4, 5);

/* "<source>:<line>:<column>: <message>" into the caller's pk_err. */
static int bset(struct builder *b, int rc, const yaml_mark_t *mark, const char *fmt, ...)
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

static void builder_reset_document(struct builder *b)
{
	while (b->depth > 0) {
		struct frame *f = &b->stack[--b->depth];
		free(f->key);
		f->key = NULL;
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

static int note_item_line(struct builder *b, size_t line)
{
	if (b->n_item_lines == b->cap_item_lines) {
		size_t cap = b->cap_item_lines ? b->cap_item_lines * 2 : 16;
		size_t *p = realloc(b->item_lines, cap * sizeof(*p));
		if (p == NULL)
			return PK_ERR_NOMEM;
		b->item_lines = p;
		b->cap_item_lines = cap;
	}
	b->item_lines[b->n_item_lines++] = line;
	return PK_OK;
}

static int count_node(struct builder *b, const yaml_mark_t *mark)
{
	if (++b->nodes > b->lim->max_nodes)
		return bset(b, PK_ERR_NOMEM, mark, "more than %zu nodes in one stream",
		            b->lim->max_nodes);
	return PK_OK;
}

/*
 * Attaches a finished value (a scalar, or a container just opened) to its
 * parent. Takes `v` in every case.
 */
static int attach(struct builder *b, json_t *v, const yaml_mark_t *mark)
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
	/* A mapping: `v` is the value for the pending key. */
	int rc = json_object_set_new(f->node, f->key, v);
	free(f->key);
	f->key = NULL;
	if (rc != 0)
		return bset(b, PK_ERR_NOMEM, mark, "out of memory");
	return PK_OK;
}

/* The current frame is a mapping waiting for a key. */
static bool wants_key(const struct builder *b)
{
	if (b->depth == 0)
		return false;
	const struct frame *f = &b->stack[b->depth - 1];
	return json_is_object(f->node) && f->key == NULL;
}

static int tag_want(struct builder *b, const yaml_event_t *ev, const char *tag, bool collection,
                    enum scalar_want *want)
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

static int on_scalar(struct builder *b, const yaml_event_t *ev)
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

	char why[160];
	bool nomem;
	json_t *v = scalar_value(s, n, want, why, sizeof(why), &nomem);
	if (v == NULL)
		return bset(b, nomem ? PK_ERR_NOMEM : PK_ERR_INVALID, mark, "%s", why);

	if (!wants_key(b))
		return attach(b, v, mark);

	/* A mapping key: strings only, no NUL, no duplicates. */
	struct frame *f = &b->stack[b->depth - 1];
	if (!json_is_string(v)) {
		rc = bset(b, PK_ERR_INVALID, mark,
		          "mapping key %.40s%s is %s, not a string (quote it to make it one)",
		          n ? s : "(empty)", n > 40 ? "..." : "", json_type_word(v));
		json_decref(v);
		return rc;
	}
	json_decref(v);
	if (memchr(s, '\0', n) != NULL)
		return bset(b, PK_ERR_INVALID, mark, "mapping key contains a NUL character");
	if (json_object_get(f->node, s) != NULL)
		return bset(b, PK_ERR_INVALID, mark, "duplicate mapping key \"%.80s\"", s);
	f->key = strdup(s);
	if (f->key == NULL)
		return bset(b, PK_ERR_NOMEM, mark, "out of memory");
	return PK_OK;
}

static int on_collection_start(struct builder *b, const yaml_event_t *ev, bool mapping)
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
		return bset(b, PK_ERR_NOMEM, mark, "nesting deeper than %u levels",
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
	bool items = !mapping && b->depth == 1 && b->stack[0].key != NULL &&
	             !strcmp(b->stack[0].key, "items");

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
	f->key = NULL;
	f->items = items;
	return PK_OK;
}

static void on_collection_end(struct builder *b)
{
	struct frame *f = &b->stack[--b->depth];
	free(f->key);
	f->key = NULL;
	json_decref(f->node);
	f->node = NULL;
}

static int on_document_end(struct builder *b, const yaml_event_t *ev)
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
		            json_type_word(root));
	}
	if (manifest_push(b->out, root, b->document, b->root_line, b->item_lines,
	                  b->n_item_lines) != PK_OK)
		return bset(b, PK_ERR_NOMEM, &ev->start_mark, "out of memory");
	b->root = NULL;
	b->item_lines = NULL;
	b->n_item_lines = 0;
	b->cap_item_lines = 0;
	return PK_OK;
}

/* libyaml's own error, as "<source>:<line>:<column>: problem (context)". */
static int yaml_error(struct builder *b, const yaml_parser_t *p)
{
	if (p->error == YAML_MEMORY_ERROR)
		return bset(b, PK_ERR_NOMEM, NULL, "out of memory while parsing YAML");
	const char *problem = p->problem ? p->problem : "malformed YAML";
	if (p->error == YAML_READER_ERROR) {
		size_t line, col;
		offset_position(b->buf, b->len, p->problem_offset, &line, &col);
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

static int parse_yaml(struct builder *b)
{
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
			if (b->document > b->lim->max_docs)
				rc =
				    bset(b, PK_ERR_NOMEM, &ev.start_mark,
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

/* ---- JSON ---- */

/*
 * Caps depth and node count on the raw text before jansson builds anything:
 * every '{' and '[' opens a node and every ',' separates one more.
 */
static int json_prescan(struct builder *b)
{
	unsigned depth = 0;
	size_t nodes = 0;
	bool in_string = false, escape = false;
	for (size_t i = 0; i < b->len; i++) {
		char c = b->buf[i];
		if (in_string) {
			if (escape)
				escape = false;
			else if (c == '\\')
				escape = true;
			else if (c == '"')
				in_string = false;
			continue;
		}
		if (c == '"') {
			in_string = true;
		} else if (c == '{' || c == '[') {
			nodes++;
			if (++depth > b->lim->max_depth) {
				size_t line, col;
				offset_position(b->buf, b->len, i, &line, &col);
				return pk_err_set(b->err, PK_ERR_NOMEM,
				                  "%s:%zu:%zu: nesting deeper than %u levels",
				                  b->source, line, col, b->lim->max_depth);
			}
		} else if (c == '}' || c == ']') {
			if (depth > 0)
				depth--;
		} else if (c == ',') {
			nodes++;
		}
		if (nodes > b->lim->max_nodes) {
			size_t line, col;
			offset_position(b->buf, b->len, i, &line, &col);
			return pk_err_set(b->err, PK_ERR_NOMEM,
			                  "%s:%zu:%zu: more than %zu nodes in one stream",
			                  b->source, line, col, b->lim->max_nodes);
		}
	}
	return PK_OK;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int parse_json(struct builder *b, size_t pos)
{
	int rc = json_prescan(b);
	if (rc != PK_OK)
		return rc;
	while (pos < b->len) {
		while (pos < b->len && is_blank(b->buf[pos]))
			pos++;
		if (pos == b->len)
			break;
		size_t line, col;
		offset_position(b->buf, b->len, pos, &line, &col);
		b->document++;
		b->out->n_documents = b->document;
		if (b->document > b->lim->max_docs)
			return pk_err_set(b->err, PK_ERR_NOMEM,
			                  "%s:%zu:%zu: more than %zu documents in one stream",
			                  b->source, line, col, b->lim->max_docs);
		json_error_t je;
		json_t *v = json_loadb(b->buf + pos, b->len - pos,
		                       JSON_REJECT_DUPLICATES | JSON_DISABLE_EOF_CHECK, &je);
		if (v == NULL) {
			/* jansson counts from where this document began. */
			size_t el = je.line > 0 ? (size_t)je.line : 1;
			size_t ec = je.column > 0 ? (size_t)je.column : 1;
			if (el == 1)
				ec += col - 1;
			el += line - 1;
			return pk_err_set(b->err, PK_ERR_INVALID, "%s:%zu:%zu: %s", b->source, el,
			                  ec, je.text);
		}
		if (!json_is_object(v)) {
			rc = pk_err_set(b->err, PK_ERR_INVALID,
			                "%s:%zu:%zu: document %zu is %s, not a Kubernetes object",
			                b->source, line, col, b->document, json_type_word(v));
			json_decref(v);
			return rc;
		}
		if (manifest_push(b->out, v, b->document, line, NULL, 0) != PK_OK) {
			json_decref(v);
			return pk_err_set(b->err, PK_ERR_NOMEM, "%s: out of memory", b->source);
		}
		if (je.position <= 0)
			break;
		pos += (size_t)je.position;
	}
	return PK_OK;
}

static int run_yaml(struct builder *b)
{
	unsigned frames = b->lim->max_depth ? b->lim->max_depth : 1;
	b->stack = calloc(frames, sizeof(*b->stack));
	if (b->stack == NULL)
		return bset(b, PK_ERR_NOMEM, NULL, "out of memory");
	int rc = parse_yaml(b);
	free(b->stack);
	b->stack = NULL;
	return rc;
}

static void clear_documents(struct pk_manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		doc_release(&m->docs[i]);
	m->n = 0;
	m->n_documents = 0;
}

int pk_manifest_parse_buffer(const char *buf, size_t len, const char *source,
                             const struct pk_manifest_limits *lim, struct pk_manifest *out,
                             struct pk_err *err)
{
	struct pk_manifest_limits defaults = pk_manifest_limits_default();
	if (lim == NULL)
		lim = &defaults;
	if (source == NULL)
		source = "(input)";
	memset(out, 0, sizeof(*out));
	if (buf == NULL && len > 0)
		return pk_err_set(err, PK_ERR_INVALID, "%s: no input", source);
	if (len > lim->max_bytes)
		return pk_err_set(err, PK_ERR_NOMEM, "%s: %zu bytes is over the limit of %zu bytes",
		                  source, len, lim->max_bytes);
	out->source = strdup(source);
	if (out->source == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "%s: out of memory", source);

	struct builder b = {
	    .lim = lim,
	    .source = out->source,
	    .buf = buf,
	    .len = len,
	    .out = out,
	    .err = err,
	};
	int rc;
	if (len == 0)
		return PK_OK;
	/* Decide JSON or YAML the way Kubernetes' YAMLOrJSONDecoder does: a
	 * JSON stream starts with '{' (after blanks and a UTF-8 BOM). */
	size_t pos = 0;
	if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3))
		pos = 3;
	while (pos < len && is_blank(buf[pos]))
		pos++;
	bool json = pos < len && buf[pos] == '{';
	rc = json ? parse_json(&b, pos) : run_yaml(&b);
	if (json && rc == PK_ERR_INVALID) {
		/* A YAML flow mapping ({a: 1}) also starts with '{'. Read it as
		 * YAML; if that fails too, the JSON error is the one to show. */
		struct pk_err json_err = {{0}};
		pk_err_set(&json_err, rc, "%s", err ? err->msg : "");
		clear_documents(out);
		b.document = 0;
		b.nodes = 0;
		rc = run_yaml(&b);
		if (rc == PK_ERR_INVALID && err != NULL)
			*err = json_err;
	}
	if (rc != PK_OK)
		pk_manifest_free(out);
	return rc;
}

/* ---- kind: List ---- */

static bool is_list(const json_t *obj)
{
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	if (kind == NULL)
		return false;
	if (!strcmp(kind, "List"))
		return true;
	size_t n = strlen(kind);
	return n > 4 && !strcmp(kind + n - 4, "List") &&
	       json_is_array(json_object_get(obj, "items"));
}

int pk_manifest_expand_lists(struct pk_manifest *m, struct pk_err *err)
{
	size_t total = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct pk_manifest_doc *d = &m->docs[i];
		if (!is_list(d->value)) {
			total++;
			continue;
		}
		const json_t *items = json_object_get(d->value, "items");
		if (!json_is_array(items))
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s:%zu (document %zu): a List needs an items sequence",
			                  d->source, d->line, d->document);
		for (size_t j = 0; j < json_array_size(items); j++) {
			const json_t *it = json_array_get(items, j);
			size_t line = j < d->n_item_lines ? d->item_lines[j] : d->line;
			if (!json_is_object(it))
				return pk_err_set(
				    err, PK_ERR_INVALID,
				    "%s:%zu (document %zu, item %zu): List item is %s, "
				    "not a Kubernetes object",
				    d->source, line, d->document, j + 1, json_type_word(it));
			if (is_list(it))
				return pk_err_set(
				    err, PK_ERR_INVALID,
				    "%s:%zu (document %zu, item %zu): a List inside a List "
				    "is not supported",
				    d->source, line, d->document, j + 1);
		}
		total += json_array_size(items);
	}
	if (total == m->n) {
		bool any = false;
		for (size_t i = 0; i < m->n; i++)
			any = any || is_list(m->docs[i].value);
		if (!any)
			return PK_OK;
	}

	struct pk_manifest_doc *docs = calloc(total ? total : 1, sizeof(*docs));
	if (docs == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "%s: out of memory", m->source);
	size_t k = 0;
	for (size_t i = 0; i < m->n; i++) {
		struct pk_manifest_doc *d = &m->docs[i];
		if (!is_list(d->value)) {
			docs[k] = *d;
			json_incref(docs[k].value);
			docs[k].item_lines = NULL;
			docs[k].n_item_lines = 0;
			k++;
			continue;
		}
		json_t *items = json_object_get(d->value, "items");
		for (size_t j = 0; j < json_array_size(items); j++) {
			docs[k].value = json_incref(json_array_get(items, j));
			docs[k].source = d->source;
			docs[k].document = d->document;
			docs[k].line = j < d->n_item_lines ? d->item_lines[j] : d->line;
			docs[k].item = j + 1;
			k++;
		}
	}
	for (size_t i = 0; i < m->n; i++)
		doc_release(&m->docs[i]);
	free(m->docs);
	m->docs = docs;
	m->n = total;
	m->cap = total ? total : 1;
	return PK_OK;
}

char *pk_manifest_format_origin(const struct pk_manifest *m, const struct pk_manifest_doc *d,
                                char *buf, size_t len)
{
	if (d->item > 0)
		snprintf(buf, len, "%s:%zu (document %zu, item %zu)", d->source, d->line,
		         d->document, d->item);
	else if (m != NULL && m->n_documents > 1)
		snprintf(buf, len, "%s:%zu (document %zu)", d->source, d->line, d->document);
	else
		snprintf(buf, len, "%s:%zu", d->source, d->line);
	return buf;
}

/* ---- I/O: the module's only system calls live below this line ---- */

static int io_fail(struct pk_err *err, const char *name, const char *what, int errnum)
{
	char reason[128];
	if (strerror_r(errnum, reason, sizeof(reason)) != 0)
		snprintf(reason, sizeof(reason), "error %d", errnum);
	return pk_err_set(err, PK_ERR_INVALID, "%s: cannot %s: %s", name, what, reason);
}

int pk_manifest_read_fd(int fd, const char *name, size_t max_bytes, char **buf, size_t *len,
                        struct pk_err *err)
{
	*buf = NULL;
	*len = 0;
	struct stat st;
	if (fstat(fd, &st) != 0)
		return io_fail(err, name, "read", errno);
	if (S_ISDIR(st.st_mode))
		return io_fail(err, name, "read", EISDIR);
	if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max_bytes)
		return pk_err_set(err, PK_ERR_NOMEM, "%s: %jd bytes is over the limit of %zu bytes",
		                  name, (intmax_t)st.st_size, max_bytes);

	size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 64 * 1024;
	if (cap > max_bytes + 1)
		cap = max_bytes + 1;
	char *p = malloc(cap + 1);
	if (p == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "%s: out of memory", name);
	size_t n = 0;
	for (;;) {
		if (n == cap) {
			if (cap > max_bytes)
				break; /* one byte past the cap: too big */
			size_t ncap = cap * 2 > max_bytes + 1 ? max_bytes + 1 : cap * 2;
			char *q = realloc(p, ncap + 1);
			if (q == NULL) {
				free(p);
				return pk_err_set(err, PK_ERR_NOMEM, "%s: out of memory", name);
			}
			p = q;
			cap = ncap;
		}
		ssize_t r = read(fd, p + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(p);
			return io_fail(err, name, "read", e);
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max_bytes) {
		free(p);
		return pk_err_set(err, PK_ERR_NOMEM, "%s: more than the limit of %zu bytes", name,
		                  max_bytes);
	}
	p[n] = '\0';
	*buf = p;
	*len = n;
	return PK_OK;
}

int pk_manifest_read_file(const char *path, size_t max_bytes, char **buf, size_t *len,
                          struct pk_err *err)
{
	*buf = NULL;
	*len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return io_fail(err, path, "open", errno);
	int rc = pk_manifest_read_fd(fd, path, max_bytes, buf, len, err);
	close(fd);
	return rc;
}
