/*
 * manifest.c - Kubernetes manifests into jansson values: the documents
 * and where each came from, JSON streams (YAML is manifest_yaml.c), the
 * choice between the two, and List expansion. See manifest.h for what is
 * accepted and refused.
 */
#include "manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "manifest_build.h"

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

/* ---- the manifest container ---- */ /* ---- the manifest container ---- */

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

static int push(struct pk_manifest *m, const struct pk_manifest_doc *d)
{
	if (pk_array_reserve(&m->docs, &m->cap, m->n + 1, sizeof(*m->docs)) != PK_OK)
		return PK_ERR_NOMEM;
	m->docs[m->n++] = *d;
	return PK_OK;
}

/* ---- positions and words for messages ---- */

const char *pk_manifest_type_word(const json_t *v)
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

void pk_manifest_position(const char *buf, size_t len, size_t off, size_t *line, size_t *col)
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

/* ---- JSON ---- */

/*
 * Caps depth and node count on the raw text before jansson builds anything:
 * every '{' and '[' opens a node and every ',' separates one more.
 */
static int json_prescan(struct manifest_builder *b)
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
				pk_manifest_position(b->buf, b->len, i, &line, &col);
				return pk_err_set(b->err, PK_ERR_TOO_BIG,
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
			pk_manifest_position(b->buf, b->len, i, &line, &col);
			return pk_err_set(b->err, PK_ERR_TOO_BIG,
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

static int parse_json(struct manifest_builder *b, size_t pos)
{
	int rc = json_prescan(b);
	if (rc != PK_OK)
		return rc;
	size_t at = 0, line = 1, col = 1; /* the position of byte `at`, carried forward */
	while (pos < b->len) {
		while (pos < b->len && is_blank(b->buf[pos]))
			pos++;
		if (pos == b->len)
			break;
		for (; at < pos; at++) {
			col = b->buf[at] == '\n' ? 1 : col + 1;
			line += b->buf[at] == '\n';
		}
		b->document++;
		b->out->n_documents = b->document;
		b->doc_offset = pos;
		b->doc_line = line;
		if (b->document > b->lim->max_docs)
			return pk_err_set(b->err, PK_ERR_TOO_BIG,
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
			rc =
			    pk_err_set(b->err, PK_ERR_INVALID,
			               "%s:%zu:%zu: document %zu is %s, not a Kubernetes object",
			               b->source, line, col, b->document, pk_manifest_type_word(v));
			json_decref(v);
			return rc;
		}
		rc = pk_manifest_emit(b, v, line);
		if (rc != PK_OK)
			return rc;
		if (je.position <= 0)
			break;
		pos += (size_t)je.position;
	}
	return PK_OK;
}

static void clear_documents(struct pk_manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		doc_release(&m->docs[i]);
	m->n = 0;
	m->n_documents = 0;
}

/* ---- kind: List ---- */

static bool is_list(const json_t *obj)
{
	const char *kind = pk_json_cstr_at(obj, "kind");
	if (kind == NULL)
		return false;
	if (!strcmp(kind, "List"))
		return true;
	size_t n = strlen(kind);
	return n > 4 && !strcmp(kind + n - 4, "List") && pk_json_arr_at(obj, "items") != NULL;
}

/* The objects of document d: d itself, or each item of a List, to fn in order. */
static int each_object(const struct pk_manifest_doc *d, pk_manifest_each_fn *fn, void *ctx,
                       struct pk_err *err)
{
	if (!is_list(d->value))
		return fn(ctx, d, err);
	const json_t *items = pk_json_arr_at(d->value, "items");
	if (items == NULL)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s:%zu (document %zu): a List needs an items sequence",
		                  d->source, d->line, d->document);
	/* Every item is checked before the first is given, so a bad List gives nothing. */
	for (size_t j = 0; j < json_array_size(items); j++) {
		const json_t *it = json_array_get(items, j);
		size_t line = j < d->n_item_lines ? d->item_lines[j] : d->line;
		if (!json_is_object(it))
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%s:%zu (document %zu, item %zu): List item is %s, not a "
			                  "Kubernetes object",
			                  d->source, line, d->document, j + 1,
			                  pk_manifest_type_word(it));
		if (is_list(it))
			return pk_err_set(
			    err, PK_ERR_INVALID,
			    "%s:%zu (document %zu, item %zu): a List inside a List is "
			    "not supported",
			    d->source, line, d->document, j + 1);
	}
	for (size_t j = 0; j < json_array_size(items); j++) {
		struct pk_manifest_doc item = *d;
		item.value = json_array_get(items, j);
		item.line = j < d->n_item_lines ? d->item_lines[j] : d->line;
		item.item = j + 1;
		item.item_lines = NULL;
		item.n_item_lines = 0;
		int rc = fn(ctx, &item, err);
		if (rc != PK_OK)
			return rc;
	}
	return PK_OK;
}

int pk_manifest_emit(struct manifest_builder *b, json_t *value, size_t line)
{
	struct pk_manifest_doc d = {
	    .value = value,
	    .source = b->out->source,
	    .document = b->document,
	    .line = line,
	    .offset = b->doc_offset,
	    .offset_line = b->doc_line,
	    .item_lines = b->item_lines,
	    .n_item_lines = b->n_item_lines,
	};
	b->item_lines = NULL;
	b->n_item_lines = 0;
	b->cap_item_lines = 0;
	if (b->each != NULL) {
		int rc = each_object(&d, b->each, b->each_ctx, b->err);
		doc_release(&d);
		return rc;
	}
	if (push(b->out, &d) != PK_OK) {
		doc_release(&d);
		return pk_err_set(b->err, PK_ERR_NOMEM, "%s: out of memory", b->source);
	}
	return PK_OK;
}

/* Reads b->buf as JSON or YAML into b->out (or b->each, for YAML). */
static int parse_stream(struct manifest_builder *b)
{
	/* Decide JSON or YAML the way Kubernetes' YAMLOrJSONDecoder does: a
	 * JSON stream starts with '{' (after blanks and a UTF-8 BOM). */
	size_t pos = 0, len = b->len;
	const char *buf = b->buf;
	if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3))
		pos = 3;
	while (pos < len && is_blank(buf[pos]))
		pos++;
	if (pos == len || buf[pos] != '{')
		return pk_manifest_parse_yaml(b);
	pk_manifest_each_fn *each = b->each;
	b->each = NULL; /* JSON is kept whole: it may yet be read as YAML */
	int rc = parse_json(b, pos);
	b->each = each;
	if (rc == PK_ERR_INVALID) {
		/* A YAML flow mapping ({a: 1}) also starts with '{'. Read it as
		 * YAML; if that fails too, the JSON error is the one to show. */
		struct pk_err json_err = {{0}};
		pk_err_set(&json_err, rc, "%s", b->err ? b->err->msg : "");
		clear_documents(b->out);
		b->document = 0;
		b->nodes = 0;
		rc = pk_manifest_parse_yaml(b);
		if (rc == PK_ERR_INVALID && b->err != NULL)
			*b->err = json_err;
		return rc;
	}
	for (size_t i = 0; rc == PK_OK && each != NULL && i < b->out->n; i++)
		rc = each_object(&b->out->docs[i], each, b->each_ctx, b->err);
	return rc;
}

/* The checks and the set-up both parse functions share; then parse_stream. */
static int parse_into(const char *buf, size_t len, const char *source,
                      const struct pk_manifest_limits *lim, struct manifest_builder *b,
                      struct pk_manifest *out, struct pk_err *err)
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
		return pk_err_set(err, PK_ERR_TOO_BIG,
		                  "%s: %zu bytes is over the limit of %zu bytes", source, len,
		                  lim->max_bytes);
	out->source = strdup(source);
	if (out->source == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "%s: out of memory", source);
	b->lim = lim;
	b->source = out->source;
	b->buf = buf;
	b->len = len;
	b->out = out;
	b->err = err;
	int rc = len == 0 ? PK_OK : parse_stream(b);
	if (rc != PK_OK)
		pk_manifest_free(out);
	return rc;
}

int pk_manifest_parse_buffer(const char *buf, size_t len, const char *source,
                             const struct pk_manifest_limits *lim, struct pk_manifest *out,
                             struct pk_err *err)
{
	struct manifest_builder b = {0};
	return parse_into(buf, len, source, lim, &b, out, err);
}

int pk_manifest_parse_each(const char *buf, size_t len, const char *source,
                           const struct pk_manifest_limits *lim, pk_manifest_each_fn *fn, void *ctx,
                           size_t *n_documents, struct pk_err *err)
{
	struct manifest_builder b = {.each = fn, .each_ctx = ctx};
	struct pk_manifest m;
	int rc = parse_into(buf, len, source, lim, &b, &m, err);
	if (n_documents != NULL)
		*n_documents = m.n_documents;
	pk_manifest_free(&m);
	return rc;
}

/* Collects each_object's objects into a new array (pk_manifest_expand_lists). */
struct collect {
	struct pk_manifest_doc *docs;
	size_t n, cap;
};

static int collect_one(void *ctx, const struct pk_manifest_doc *d, struct pk_err *err)
{
	struct collect *c = ctx;
	if (pk_array_reserve(&c->docs, &c->cap, c->n + 1, sizeof(*c->docs)) != PK_OK)
		return pk_err_set(err, PK_ERR_NOMEM, "%s: out of memory", d->source);
	struct pk_manifest_doc *k = &c->docs[c->n++];
	*k = *d;
	json_incref(k->value);
	k->item_lines = NULL;
	k->n_item_lines = 0;
	return PK_OK;
}

int pk_manifest_expand_lists(struct pk_manifest *m, struct pk_err *err)
{
	bool any = false;
	for (size_t i = 0; i < m->n && !any; i++)
		any = is_list(m->docs[i].value);
	if (!any)
		return PK_OK;
	struct collect c = {0};
	int rc = PK_OK;
	for (size_t i = 0; i < m->n && rc == PK_OK; i++)
		rc = each_object(&m->docs[i], collect_one, &c, err);
	if (rc != PK_OK) {
		for (size_t i = 0; i < c.n; i++)
			json_decref(c.docs[i].value);
		free(c.docs);
		return rc;
	}
	for (size_t i = 0; i < m->n; i++)
		doc_release(&m->docs[i]);
	free(m->docs);
	m->docs = c.docs;
	m->n = c.n;
	m->cap = c.cap;
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
