/* test_manifest.c - loading YAML and JSON manifests: typing, streams, Lists, caps, refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "json.h"
#include "manifest.h"

static int parse(const char *text, struct pk_manifest *m, struct pk_err *err)
{
	return pk_manifest_parse_buffer(text, strlen(text), "t.yaml", NULL, m, err);
}

/* Parses text that must load; returns the first document's value. */
static json_t *load_one(const char *text, struct pk_manifest *m)
{
	struct pk_err err = {{0}};
	int rc = parse(text, m, &err);
	if (rc != PK_OK)
		print_error("unexpected error: %s\n", err.msg);
	assert_int_equal(rc, PK_OK);
	assert_true(m->n >= 1);
	return m->docs[0].value;
}

/* ---- scalar typing: the YAML 1.2 core schema ---- */

struct scalar_vector {
	const char *yaml; /* the value after "v: " */
	json_type type;
	const char *text;  /* expected string, or NULL */
	long long integer; /* expected integer */
	double real;       /* expected real */
};

static const struct scalar_vector scalars[] = {
    {"", JSON_NULL, NULL, 0, 0},
    {"~", JSON_NULL, NULL, 0, 0},
    {"null", JSON_NULL, NULL, 0, 0},
    {"Null", JSON_NULL, NULL, 0, 0},
    {"NULL", JSON_NULL, NULL, 0, 0},
    {"nULL", JSON_STRING, "nULL", 0, 0},
    {"true", JSON_TRUE, NULL, 0, 0},
    {"True", JSON_TRUE, NULL, 0, 0},
    {"FALSE", JSON_FALSE, NULL, 0, 0},
    {"yes", JSON_STRING, "yes", 0, 0},
    {"on", JSON_STRING, "on", 0, 0},
    {"off", JSON_STRING, "off", 0, 0},
    {"24", JSON_INTEGER, NULL, 24, 0},
    {"-7", JSON_INTEGER, NULL, -7, 0},
    {"+7", JSON_INTEGER, NULL, 7, 0},
    {"007", JSON_INTEGER, NULL, 7, 0},
    {"0x1F", JSON_INTEGER, NULL, 31, 0},
    {"0o17", JSON_INTEGER, NULL, 15, 0},
    {"9223372036854775807", JSON_INTEGER, NULL, INT64_MAX, 0},
    {"-9223372036854775808", JSON_INTEGER, NULL, INT64_MIN, 0},
    {"1.5", JSON_REAL, NULL, 0, 1.5},
    {".5", JSON_REAL, NULL, 0, 0.5},
    {"1.", JSON_REAL, NULL, 0, 1.0},
    {"-2.5e3", JSON_REAL, NULL, 0, -2500.0},
    {"1e3", JSON_REAL, NULL, 0, 1000.0},
    {"\"24\"", JSON_STRING, "24", 0, 0},
    {"'24'", JSON_STRING, "24", 0, 0},
    {"\"true\"", JSON_STRING, "true", 0, 0},
    {"\"\"", JSON_STRING, "", 0, 0},
    {"''", JSON_STRING, "", 0, 0},
    {"!!str 24", JSON_STRING, "24", 0, 0},
    {"! 24", JSON_STRING, "24", 0, 0},
    {"!!int \"24\"", JSON_INTEGER, NULL, 24, 0},
    {"!!float 2", JSON_REAL, NULL, 0, 2.0},
    {"!!bool \"true\"", JSON_TRUE, NULL, 0, 0},
    {"10.0.0.0/24", JSON_STRING, "10.0.0.0/24", 0, 0},
    {"10.0.0.1", JSON_STRING, "10.0.0.1", 0, 0},
    {"2001:db8::1", JSON_STRING, "2001:db8::1", 0, 0},
    {"1_000", JSON_STRING, "1_000", 0, 0},
    {"0x", JSON_STRING, "0x", 0, 0},
    {"0b101", JSON_STRING, "0b101", 0, 0},
    {"1e", JSON_STRING, "1e", 0, 0},
    {".", JSON_STRING, ".", 0, 0},
    {"-x", JSON_STRING, "-x", 0, 0},
    {"1.2.3", JSON_STRING, "1.2.3", 0, 0},
    {"|\n  two\n  lines", JSON_STRING, "two\nlines\n", 0, 0},
    {">-\n  folded\n  text", JSON_STRING, "folded text", 0, 0},
    {"\"caf\\u00e9\"", JSON_STRING, "caf\xc3\xa9", 0, 0},
};

static void test_scalar_typing(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++) {
		const struct scalar_vector *t = &scalars[i];
		char text[128];
		snprintf(text, sizeof(text), "v: %s\n", t->yaml);
		struct pk_manifest m;
		json_t *v = json_object_get(load_one(text, &m), "v");
		assert_non_null(v);
		if (json_typeof(v) != t->type)
			print_error("vector %zu (%s): type %d, want %d\n", i, t->yaml,
			            json_typeof(v), t->type);
		assert_int_equal(json_typeof(v), t->type);
		if (t->type == JSON_STRING)
			assert_string_equal(json_string_value(v), t->text);
		else if (t->type == JSON_INTEGER)
			assert_true(json_integer_value(v) == t->integer);
		else if (t->type == JSON_REAL)
			assert_true(json_real_value(v) == t->real);
		pk_manifest_free(&m);
	}
}

static void test_embedded_nul_in_value_kept(void **state)
{
	(void)state;
	struct pk_manifest m;
	json_t *v = json_object_get(load_one("v: \"a\\0b\"\n", &m), "v");
	assert_int_equal(json_string_length(v), 3);
	assert_memory_equal(json_string_value(v), "a\0b", 3);
	pk_manifest_free(&m);
}

/* ---- documents, styles, sources ---- */

static void test_multi_document_stream(void **state)
{
	(void)state;
	const char *text = "# leading comment\n"
	                   "apiVersion: v1\n"
	                   "kind: A\n"
	                   "---\n"
	                   "# only a comment: an empty document, skipped\n"
	                   "---\n"
	                   "---\n"
	                   "# header\n"
	                   "apiVersion: v1 # trailing comment\n"
	                   "kind: B\n"
	                   "...\n"
	                   "--- {apiVersion: v1, kind: C, spec: {list: [1, two, {x: y}]}}\n";
	struct pk_manifest m;
	struct pk_err err;
	assert_int_equal(parse(text, &m, &err), PK_OK);
	assert_int_equal(m.n, 3);
	assert_int_equal(m.n_documents, 5);
	assert_string_equal(json_string_value(json_object_get(m.docs[0].value, "kind")), "A");
	assert_int_equal(m.docs[0].document, 1);
	assert_int_equal(m.docs[0].line, 2);
	assert_string_equal(json_string_value(json_object_get(m.docs[1].value, "kind")), "B");
	assert_int_equal(m.docs[1].document, 4);
	assert_int_equal(m.docs[1].line, 9);
	assert_int_equal(m.docs[2].document, 5);
	assert_int_equal(m.docs[2].line, 12);
	json_t *list = pk_json_path(m.docs[2].value, "spec", "list");
	assert_int_equal(json_array_size(list), 3);
	assert_string_equal(json_string_value(json_array_get(list, 1)), "two");
	assert_string_equal(m.docs[1].source, "t.yaml");

	char buf[128];
	assert_string_equal(pk_manifest_format_origin(&m, &m.docs[1], buf, sizeof(buf)),
	                    "t.yaml:9 (document 4)");
	pk_manifest_free(&m);
	pk_manifest_free(&m); /* freeing twice is harmless */
}

static void test_single_document_origin(void **state)
{
	(void)state;
	struct pk_manifest m;
	load_one("\n\n# comment\nkind: A\n", &m);
	char buf[64];
	assert_string_equal(pk_manifest_format_origin(&m, &m.docs[0], buf, sizeof(buf)),
	                    "t.yaml:4");
	pk_manifest_free(&m);
}

static void test_empty_inputs(void **state)
{
	(void)state;
	static const char *const empties[] = {
	    "", "\n", "# just a comment\n", "---\n", "---\n...\n", "--- ~\n", "null\n"};
	for (size_t i = 0; i < sizeof(empties) / sizeof(empties[0]); i++) {
		struct pk_manifest m;
		struct pk_err err;
		assert_int_equal(parse(empties[i], &m, &err), PK_OK);
		assert_int_equal(m.n, 0);
		pk_manifest_free(&m);
	}
	struct pk_manifest m;
	struct pk_err err;
	assert_int_equal(pk_manifest_parse_buffer(NULL, 0, "x", NULL, &m, &err), PK_OK);
	assert_int_equal(m.n, 0);
	pk_manifest_free(&m);
}

static void test_json_stream(void **state)
{
	(void)state;
	const char *text = "\xEF\xBB\xBF{\n\t\"apiVersion\": \"v1\",\n\t\"kind\": \"A\",\n"
	                   "\t\"n\": 24, \"s\": \"24\", \"r\": 1.5, \"z\": null\n}\n"
	                   "{\"kind\": \"B\"}{\"kind\": \"C\"}\n";
	struct pk_manifest m;
	struct pk_err err;
	assert_int_equal(pk_manifest_parse_buffer(text, strlen(text), "t.json", NULL, &m, &err),
	                 PK_OK);
	assert_int_equal(m.n, 3);
	assert_true(json_is_integer(json_object_get(m.docs[0].value, "n")));
	assert_true(json_is_string(json_object_get(m.docs[0].value, "s")));
	assert_int_equal(m.docs[1].line, 6);
	assert_int_equal(m.docs[2].line, 6);
	assert_string_equal(json_string_value(json_object_get(m.docs[2].value, "kind")), "C");
	pk_manifest_free(&m);
}

/* A YAML flow mapping also starts with '{': it still loads. */
static void test_yaml_flow_mapping_first(void **state)
{
	(void)state;
	struct pk_manifest m;
	json_t *v = load_one("{kind: A, spec: {prefix: 24}}\n", &m);
	assert_int_equal(json_integer_value(pk_json_path(v, "spec", "prefix")), 24);
	pk_manifest_free(&m);
}

static void test_kind_list_expanded(void **state)
{
	(void)state;
	const char *text = "kind: A\n"
	                   "---\n"
	                   "apiVersion: v1\n"
	                   "kind: List\n"
	                   "items:\n"
	                   "- apiVersion: v1\n"
	                   "  kind: B\n"
	                   "\n"
	                   "- {kind: C}\n"
	                   "---\n"
	                   "kind: IPPoolList\n"
	                   "items: [{kind: D}]\n"
	                   "---\n"
	                   "kind: List\n"
	                   "items: []\n";
	struct pk_manifest m;
	struct pk_err err;
	assert_int_equal(parse(text, &m, &err), PK_OK);
	assert_int_equal(m.n, 4);
	assert_int_equal(pk_manifest_expand_lists(&m, &err), PK_OK);
	assert_int_equal(m.n, 4);
	const char *kinds[] = {"A", "B", "C", "D"};
	const size_t lines[] = {1, 6, 9, 12};
	const size_t items[] = {0, 1, 2, 1};
	for (size_t i = 0; i < 4; i++) {
		assert_string_equal(json_string_value(json_object_get(m.docs[i].value, "kind")),
		                    kinds[i]);
		assert_int_equal(m.docs[i].line, lines[i]);
		assert_int_equal(m.docs[i].item, items[i]);
	}
	char buf[128];
	assert_string_equal(pk_manifest_format_origin(&m, &m.docs[2], buf, sizeof(buf)),
	                    "t.yaml:9 (document 2, item 2)");
	/* Nothing left to expand: a second call changes nothing. */
	assert_int_equal(pk_manifest_expand_lists(&m, &err), PK_OK);
	assert_int_equal(m.n, 4);
	pk_manifest_free(&m);
}

static void test_kind_list_bad_items(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "kind: List\nitems:\n- kind: A\n- 7\n",
	    "kind: List\nitems:\n- kind: List\n  items: []\n",
	    "kind: List\n",
	    "kind: List\nitems: {}\n",
	};
	static const char *const want[] = {"item 2", "List inside a List", "items sequence",
	                                   "items sequence"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pk_manifest m;
		struct pk_err err;
		assert_int_equal(parse(bad[i], &m, &err), PK_OK);
		size_t before = m.n;
		assert_int_equal(pk_manifest_expand_lists(&m, &err), PK_ERR_INVALID);
		assert_non_null(strstr(err.msg, want[i]));
		assert_int_equal(m.n, before); /* unchanged on failure */
		pk_manifest_free(&m);
	}
}

/* ---- streaming: pk_manifest_parse_each ---- */

struct seen {
	struct pk_manifest_doc docs[16];
	json_t *values[16];
	size_t n;
	size_t stop_at; /* 1-based object to refuse, 0: none */
};

static int see(void *ctx, const struct pk_manifest_doc *d, struct pk_err *err)
{
	struct seen *s = ctx;
	assert_true(s->n < 16);
	if (s->n + 1 == s->stop_at)
		return pk_err_set(err, PK_ERR_INVALID, "stopped at %zu", s->stop_at);
	s->docs[s->n] = *d;
	s->values[s->n++] = json_deep_copy(d->value); /* d->value is gone after the call */
	return PK_OK;
}

static void seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		json_decref(s->values[i]);
}

/* Object for object, what parse_buffer and expand_lists give, with each document's start. */
static void test_parse_each_same_objects(void **state)
{
	(void)state;
	static const char *const texts[] = {
	    "kind: A\n---\n# c\nkind: List\nitems:\n- kind: B\n- kind: C\n---\n---\nkind: D\n",
	    "{\"kind\": \"A\"}\n{\"kind\": \"List\", \"items\": [{\"kind\": \"B\"}]}\n",
	    "{kind: A, n: 1}\n",
	};
	for (size_t t = 0; t < sizeof(texts) / sizeof(*texts); t++) {
		struct pk_manifest m;
		struct pk_err err;
		struct seen s = {0};
		size_t docs = 0;
		assert_int_equal(parse(texts[t], &m, &err), PK_OK);
		assert_int_equal(pk_manifest_expand_lists(&m, &err), PK_OK);
		assert_int_equal(pk_manifest_parse_each(texts[t], strlen(texts[t]), "t.yaml", NULL,
		                                        see, &s, &docs, &err),
		                 PK_OK);
		assert_int_equal(s.n, m.n);
		assert_int_equal(docs, m.n_documents);
		for (size_t i = 0; i < s.n; i++) {
			assert_true(json_equal(s.values[i], m.docs[i].value));
			assert_int_equal(s.docs[i].line, m.docs[i].line);
			assert_int_equal(s.docs[i].document, m.docs[i].document);
			assert_int_equal(s.docs[i].item, m.docs[i].item);
			assert_int_equal(s.docs[i].offset, m.docs[i].offset);
			assert_int_equal(s.docs[i].offset_line, m.docs[i].offset_line);
		}
		seen_free(&s);
		pk_manifest_free(&m);
	}
}

/* Where each document starts: its "---", or its first content. */
static void test_document_offsets(void **state)
{
	(void)state;
	const char *text = "# head\nkind: A\n---\nkind: B\n--- \n\n  kind: C\n";
	struct seen s = {0};
	struct pk_err err;
	assert_int_equal(pk_manifest_parse_each(text, strlen(text), "t", NULL, see, &s, NULL, &err),
	                 PK_OK);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.docs[0].offset, 7); /* "kind: A", after the comment */
	assert_int_equal(s.docs[0].offset_line, 2);
	assert_int_equal(s.docs[1].offset, 15); /* the "---" */
	assert_int_equal(s.docs[1].offset_line, 3);
	assert_int_equal(s.docs[2].offset_line, 5);
	assert_int_equal(s.docs[2].line, 7);
	seen_free(&s);
}

/*
 * Offsets are bytes, though libyaml counts characters: after multi-byte
 * UTF-8 (2, 3 and 4 bytes), after a UTF-8 byte order mark (kept by the first
 * document), and in UTF-16 (units of 2 bytes, a surrogate pair of 4).
 */
static void test_document_offsets_are_bytes(void **state)
{
	(void)state;
	static const char utf8[] =
	    "# \xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x98\x80\nkind: A\n---\nkind: B\n";
	static const char bom[] = "\xEF\xBB\xBFkind: A\n---\nkind: B\n";
	/* "k: \U0001F600\n---\nk: b\n" in UTF-16LE after its mark */
	static const char utf16[] =
	    "\xFF\xFEk\0:\0 \0\x3D\xD8\x00\xDE\n\0-\0-\0-\0\n\0k\0:\0 \0b\0\n\0";
	const struct {
		const char *text;
		size_t len, first, second;
	} cases[] = {
	    {utf8, sizeof(utf8) - 1, 14, 22},
	    {bom, sizeof(bom) - 1, 0, 11},
	    {utf16, sizeof(utf16) - 1, 0, 14},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
		struct seen s = {0};
		struct pk_err err;
		assert_int_equal(pk_manifest_parse_each(cases[c].text, cases[c].len, "t", NULL, see,
		                                        &s, NULL, &err),
		                 PK_OK);
		assert_int_equal(s.n, 2);
		assert_int_equal(s.docs[0].offset, cases[c].first);
		assert_int_equal(s.docs[1].offset, cases[c].second);
		assert_int_equal(s.docs[1].offset_line, 2 + (c == 0));
		seen_free(&s);
	}
	assert_int_equal(strstr(utf8, "kind: A") - utf8, 14);
	assert_int_equal(strstr(utf8, "---") - utf8, 22);
}

/* A refusal from the callback, or bad input after good documents, stops the parse. */
static void test_parse_each_stops(void **state)
{
	(void)state;
	const char *text = "kind: A\n---\nkind: B\n---\nkind: C\n";
	struct seen s = {.stop_at = 2};
	struct pk_err err;
	assert_int_equal(pk_manifest_parse_each(text, strlen(text), "t", NULL, see, &s, NULL, &err),
	                 PK_ERR_INVALID);
	assert_int_equal(s.n, 1);
	assert_non_null(strstr(err.msg, "stopped at 2"));
	seen_free(&s);

	const char *bad = "kind: A\n---\nkind: B\n---\na: [\n";
	struct seen t = {0};
	assert_int_equal(pk_manifest_parse_each(bad, strlen(bad), "t", NULL, see, &t, NULL, &err),
	                 PK_ERR_INVALID);
	assert_int_equal(t.n, 2); /* the caller discards what it kept */
	assert_non_null(strstr(err.msg, "t:"));
	seen_free(&t);

	/* A bad List gives none of its items. */
	const char *list = "kind: List\nitems:\n- kind: A\n- 7\n";
	struct seen u = {0};
	assert_int_equal(pk_manifest_parse_each(list, strlen(list), "t", NULL, see, &u, NULL, &err),
	                 PK_ERR_INVALID);
	assert_int_equal(u.n, 0);
	assert_non_null(strstr(err.msg, "item 2"));

	/* Two faults: the stream stops at the first in stream order, a List
	 * without items; parse then expand meets the nesting cap after it first. */
	char two[512];
	snprintf(two, sizeof(two), "kind: List\nitems:\n---\nv: %.80s\n",
	         "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[");
	struct pk_manifest m;
	assert_int_equal(parse(two, &m, &err), PK_ERR_TOO_BIG);
	struct seen w = {0};
	assert_int_equal(pk_manifest_parse_each(two, strlen(two), "t", NULL, see, &w, NULL, &err),
	                 PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "items sequence"));
	assert_int_equal(w.n, 0);
}

/* ---- refusals: each names the file, line and column ---- */

struct bad_vector {
	const char *text;
	int rc;
	const char *where; /* "t.yaml:L:C" prefix expected */
	const char *what;  /* substring expected in the message */
};

static const struct bad_vector bad_inputs[] = {
    {"a:\n\tb: 1\n", PK_ERR_INVALID, "t.yaml:2:", "tab"},
    {"a:\n  b: 1\n c: 2\n", PK_ERR_INVALID, "t.yaml:3:", "expected key"},
    {"a: [1, 2\n", PK_ERR_INVALID, "t.yaml:2:", ""},
    {"a: \"unterminated\n", PK_ERR_INVALID, "t.yaml:", "quoted scalar"},
    {"a: &x 1\nb: 2\n", PK_ERR_INVALID, "t.yaml:1:4:", "anchors and aliases"},
    {"a: 1\nb: *x\n", PK_ERR_INVALID, "t.yaml:", "alias"},
    {"base: &b {x: 1}\nc:\n  <<: *b\n", PK_ERR_INVALID, "t.yaml:1:", "anchor &b"},
    {"a: 1\nb: 2\na: 3\n", PK_ERR_INVALID, "t.yaml:3:1:", "duplicate mapping key \"a\""},
    {"m:\n  x: 1\n  'x': 2\n", PK_ERR_INVALID, "t.yaml:3:3:", "duplicate"},
    {"24: x\n", PK_ERR_INVALID, "t.yaml:1:1:", "not a string"},
    {"true: x\n", PK_ERR_INVALID, "t.yaml:1:1:", "boolean"},
    {"~: x\n", PK_ERR_INVALID, "t.yaml:1:1:", "null"},
    {"? [a, b]\n: x\n", PK_ERR_INVALID, "t.yaml:1:3:", "sequence, not a string"},
    {"? {a: b}\n: x\n", PK_ERR_INVALID, "t.yaml:1:3:", "mapping, not a string"},
    {"\"a\\0b\": 1\n", PK_ERR_INVALID, "t.yaml:1:1:", "NUL"},
    {"a: 99999999999999999999\n", PK_ERR_INVALID, "t.yaml:1:4:", "64-bit"},
    {"a: -9223372036854775809\n", PK_ERR_INVALID, "t.yaml:1:4:", "64-bit"},
    {"a: 0xFFFFFFFFFFFFFFFFF\n", PK_ERR_INVALID, "t.yaml:1:4:", "64-bit"},
    {"a: .inf\n", PK_ERR_INVALID, "t.yaml:1:4:", "JSON"},
    {"a: -.Inf\n", PK_ERR_INVALID, "t.yaml:1:4:", "JSON"},
    {"a: .NaN\n", PK_ERR_INVALID, "t.yaml:1:4:", "JSON"},
    {"a: 1e999\n", PK_ERR_INVALID, "t.yaml:1:4:", "out of range"},
    {"a: !custom x\n", PK_ERR_INVALID, "t.yaml:1:4:", "tag !custom"},
    {"a: !!int abc\n", PK_ERR_INVALID, "t.yaml:1:4:", "!!int"},
    {"a: !!binary aGk=\n", PK_ERR_INVALID, "t.yaml:1:4:", "not supported"},
    {"a: !!map [1]\n", PK_ERR_INVALID, "t.yaml:1:4:", "does not fit"},
    {"- a\n- b\n", PK_ERR_INVALID, "t.yaml:1:1:", "sequence, not a Kubernetes object"},
    {"kind: A\n---\njust text\n", PK_ERR_INVALID, "t.yaml:3:1:", "document 2 is a string"},
    {"a: b: c\n", PK_ERR_INVALID, "t.yaml:1:5:", "mapping values"},
    {"a: \xff\xfe\n", PK_ERR_INVALID, "t.yaml:1:", "UTF-8"},
    {"{\"a\": 1, \"a\": 2}\n", PK_ERR_INVALID, "t.yaml:1:", "duplicate"},
    {"{\"a\": 1}\n{\"b\": [1, }\n", PK_ERR_INVALID, "t.yaml:2:", ""},
    {"{\"a\": 1}\n[1]\n", PK_ERR_INVALID, "t.yaml:2:1:", "sequence"},
    {"{\"a\": 1}\n{\"b\": 99999999999999999999}\n", PK_ERR_INVALID, "t.yaml:2:", "integer"},
};

static void test_bad_inputs(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_inputs) / sizeof(bad_inputs[0]); i++) {
		const struct bad_vector *t = &bad_inputs[i];
		struct pk_manifest m;
		struct pk_err err = {{0}};
		int rc = parse(t->text, &m, &err);
		if (rc != t->rc || strncmp(err.msg, t->where, strlen(t->where)) != 0 ||
		    strstr(err.msg, t->what) == NULL)
			print_error("vector %zu: rc %d, message \"%s\"\n", i, rc, err.msg);
		assert_int_equal(rc, t->rc);
		assert_true(strncmp(err.msg, t->where, strlen(t->where)) == 0);
		assert_non_null(strstr(err.msg, t->what));
		assert_int_equal(m.n, 0);
		assert_null(m.docs);
		pk_manifest_free(&m);
	}
}

/* ---- caps ---- */

static char *nested(size_t depth, bool json)
{
	size_t len = 2 * depth + 16;
	char *s = malloc(len);
	assert_non_null(s);
	size_t o = 0;
	if (json) {
		memcpy(s, "{\"a\":", 5);
		o = 5;
	} else {
		memcpy(s, "a: ", 3);
		o = 3;
	}
	for (size_t i = 0; i < depth; i++)
		s[o++] = '[';
	for (size_t i = 0; i < depth; i++)
		s[o++] = ']';
	if (json)
		s[o++] = '}';
	s[o++] = '\n';
	s[o] = '\0';
	return s;
}

static void test_depth_cap(void **state)
{
	(void)state;
	for (int json = 0; json <= 1; json++) {
		/* The root mapping is one level: 63 more fit in the default 64. */
		char *ok = nested(PK_MANIFEST_MAX_DEPTH - 1, json);
		char *deep = nested(PK_MANIFEST_MAX_DEPTH, json);
		char *very = nested(100000, json);
		struct pk_manifest m;
		struct pk_err err;
		assert_int_equal(parse(ok, &m, &err), PK_OK);
		pk_manifest_free(&m);
		assert_int_equal(parse(deep, &m, &err), PK_ERR_TOO_BIG);
		assert_non_null(strstr(err.msg, "nesting deeper than 64"));
		assert_int_equal(parse(very, &m, &err), PK_ERR_TOO_BIG);
		free(ok);
		free(deep);
		free(very);
	}
}

static void test_size_document_and_node_caps(void **state)
{
	(void)state;
	struct pk_manifest_limits lim = pk_manifest_limits_default();
	struct pk_manifest m;
	struct pk_err err;
	const char *text = "a: 1\n---\nb: 2\n---\nc: [1, 2, 3]\n";

	lim.max_bytes = 10;
	assert_int_equal(pk_manifest_parse_buffer(text, strlen(text), "t", &lim, &m, &err),
	                 PK_ERR_TOO_BIG);
	assert_non_null(strstr(err.msg, "over the limit of 10 bytes"));

	lim = pk_manifest_limits_default();
	lim.max_docs = 2;
	assert_int_equal(pk_manifest_parse_buffer(text, strlen(text), "t", &lim, &m, &err),
	                 PK_ERR_TOO_BIG);
	assert_non_null(strstr(err.msg, "t:4:1: more than 2 documents"));

	lim = pk_manifest_limits_default();
	lim.max_nodes = 8;
	assert_int_equal(pk_manifest_parse_buffer(text, strlen(text), "t", &lim, &m, &err),
	                 PK_ERR_TOO_BIG);
	assert_non_null(strstr(err.msg, "more than 8 nodes"));
	lim.max_nodes = 12; /* 3 + 3 + 6: mappings, keys, values, the sequence */
	assert_int_equal(pk_manifest_parse_buffer(text, strlen(text), "t", &lim, &m, &err), PK_OK);
	pk_manifest_free(&m);

	const char *json = "{\"a\": [1, 2, 3, 4, 5, 6, 7, 8, 9]}";
	lim.max_nodes = 4;
	assert_int_equal(pk_manifest_parse_buffer(json, strlen(json), "t", &lim, &m, &err),
	                 PK_ERR_TOO_BIG);
	lim.max_docs = 1;
	lim.max_nodes = 100;
	const char *two = "{\"a\": 1} {\"b\": 2}";
	assert_int_equal(pk_manifest_parse_buffer(two, strlen(two), "t", &lim, &m, &err),
	                 PK_ERR_TOO_BIG);
	assert_non_null(strstr(err.msg, "more than 1 documents"));
}

/* Many empty documents are capped too: they cost work even when skipped. */
static void test_many_empty_documents(void **state)
{
	(void)state;
	size_t n = PK_MANIFEST_MAX_DOCS + 1;
	char *s = malloc(4 * n + 1);
	assert_non_null(s);
	for (size_t i = 0; i < n; i++)
		memcpy(s + 4 * i, "---\n", 4);
	s[4 * n] = '\0';
	struct pk_manifest m;
	struct pk_err err;
	assert_int_equal(parse(s, &m, &err), PK_ERR_TOO_BIG);
	free(s);
}

/* ---- reading files ---- */

static void test_read_file(void **state)
{
	(void)state;
	char path[] = "/tmp/pk_manifest_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *text = "kind: A\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);

	char *buf = NULL;
	size_t len = 0;
	struct pk_err err;
	assert_int_equal(pk_manifest_read_file(path, 1024, &buf, &len, &err), PK_OK);
	assert_int_equal(len, strlen(text));
	assert_string_equal(buf, text);
	free(buf);

	assert_int_equal(pk_manifest_read_file(path, 4, &buf, &len, &err), PK_ERR_TOO_BIG);
	assert_null(buf);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "limit of 4 bytes"));
	unlink(path);

	assert_int_equal(pk_manifest_read_file(path, 1024, &buf, &len, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "No such file"));

	assert_int_equal(pk_manifest_read_file("/tmp", 1024, &buf, &len, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "directory"));
}

static void test_read_pipe_capped(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	char chunk[100];
	memset(chunk, 'x', sizeof(chunk));
	assert_int_equal(write(p[1], chunk, sizeof(chunk)), (ssize_t)sizeof(chunk));
	close(p[1]);
	char *buf = NULL;
	size_t len = 0;
	struct pk_err err;
	assert_int_equal(pk_manifest_read_fd(p[0], "(stdin)", 99, &buf, &len, &err),
	                 PK_ERR_TOO_BIG);
	assert_non_null(strstr(err.msg, "(stdin)"));
	close(p[0]);

	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], chunk, sizeof(chunk)), (ssize_t)sizeof(chunk));
	close(p[1]);
	assert_int_equal(pk_manifest_read_fd(p[0], "(stdin)", 100, &buf, &len, &err), PK_OK);
	assert_int_equal(len, 100);
	free(buf);
	close(p[0]);
}

/* A FIFO no one writes to is refused at once, naming the path and what it is. */
static void test_read_regular_only(void **state)
{
	(void)state;
	char dir[] = "/tmp/pk_regular_XXXXXX", path[256];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/x.yaml", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	char *buf = NULL;
	size_t len = 0;
	struct pk_err err;
	alarm(10); /* a hang fails the test instead of stalling the suite */
	assert_int_equal(pk_manifest_read_regular(path, 1024, &buf, &len, &err), PK_ERR_INVALID);
	alarm(0);
	assert_null(buf);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "a FIFO, not a regular file"));
	unlink(path);

	assert_int_equal(pk_manifest_read_regular(dir, 1024, &buf, &len, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "a directory, not a regular file"));

	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("kind: A\n", f);
	fclose(f);
	assert_int_equal(pk_manifest_read_regular(path, 1024, &buf, &len, &err), PK_OK);
	assert_string_equal(buf, "kind: A\n");
	free(buf);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scalar_typing),
	    cmocka_unit_test(test_embedded_nul_in_value_kept),
	    cmocka_unit_test(test_multi_document_stream),
	    cmocka_unit_test(test_single_document_origin),
	    cmocka_unit_test(test_empty_inputs),
	    cmocka_unit_test(test_json_stream),
	    cmocka_unit_test(test_yaml_flow_mapping_first),
	    cmocka_unit_test(test_kind_list_expanded),
	    cmocka_unit_test(test_kind_list_bad_items),
	    cmocka_unit_test(test_bad_inputs),
	    cmocka_unit_test(test_depth_cap),
	    cmocka_unit_test(test_size_document_and_node_caps),
	    cmocka_unit_test(test_many_empty_documents),
	    cmocka_unit_test(test_read_file),
	    cmocka_unit_test(test_parse_each_same_objects),
	    cmocka_unit_test(test_document_offsets),
	    cmocka_unit_test(test_document_offsets_are_bytes),
	    cmocka_unit_test(test_parse_each_stops),
	    cmocka_unit_test(test_read_pipe_capped),
	    cmocka_unit_test(test_read_regular_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
