/* test_manifest_locate.c - a field's line and column in a document's text: block, flow and
 * JSON styles, List items, dotted keys, misses, offsets, streams, bad and hostile input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "manifest.h"
#include "manifest_locate.h"

/* Locates `field` in the first `len` bytes of text and checks the answer and the position. */
static void check_n(const char *text, size_t len, size_t first_line, size_t item, const char *field,
                    bool whole, size_t line, size_t col)
{
	size_t l = 0, c = 0;
	bool got = pk_manifest_locate(text, len, first_line, item, field, &l, &c);
	if (got != whole || l != line || c != col)
		print_error("field \"%s\" item %zu: %s at %zu:%zu, want %s at %zu:%zu\n",
		            field ? field : "(null)", item, got ? "found" : "not found", l, c,
		            whole ? "found" : "not found", line, col);
	assert_int_equal(got, whole);
	assert_int_equal(l, line);
	assert_int_equal(c, col);
}

static void check(const char *text, size_t item, const char *field, bool whole, size_t line,
                  size_t col)
{
	check_n(text, text ? strlen(text) : 0, 1, item, field, whole, line, col);
}

static const char claim[] = "apiVersion: ipam.cluster.x-k8s.io/v1beta1\n" /* 1 */
                            "kind: IPAddressClaim\n"                      /* 2 */
                            "metadata:\n"                                 /* 3 */
                            "  name: c1   # the claim\n"                  /* 4 */
                            "  ownerReferences:\n"                        /* 5 */
                            "  - kind: Machine\n"                         /* 6 */
                            "    uid: 1234\n"                             /* 7 */
                            "  -   kind: Other\n"                         /* 8 */
                            "      uid: 5678\n"                           /* 9 */
                            "spec:\n"                                     /* 10 */
                            "  # where from\n"                            /* 11 */
                            "  poolRef:\n"                                /* 12 */
                            "    name: pool-a\n"                          /* 13 */
                            "  addresses:\n"                              /* 14 */
                            "  - 10.0.0.1\n"                              /* 15 */
                            "  - |\n"                                     /* 16 */
                            "    two\n"                                   /* 17 */
                            "    lines\n"                                 /* 18 */
                            "  -    10.0.0.3\n";                          /* 19 */

static void test_block_style(void **state)
{
	(void)state;
	check(claim, 0, "spec.poolRef.name", true, 13, 5);
	check(claim, 0, "spec.poolRef", true, 12, 3);
	check(claim, 0, "spec", true, 10, 1);
	check(claim, 0, "kind", true, 2, 1);
	check(claim, 0, "metadata.name", true, 4, 3);
	check(claim, 0, "metadata.ownerReferences[0].uid", true, 7, 5);
	check(claim, 0, "metadata.ownerReferences[1]", true, 8, 7);
	check(claim, 0, "metadata.ownerReferences[1].uid", true, 9, 7);
	check(claim, 0, "spec.addresses[0]", true, 15, 5);
	check(claim, 0, "spec.addresses[1]", true, 16, 5);
	check(claim, 0, "spec.addresses[2]", true, 19, 8);
	/* The object itself: its first key. */
	check(claim, 0, "", true, 1, 1);
	check(claim, 0, NULL, true, 1, 1);
}

static void test_flow_style(void **state)
{
	(void)state;
	const char *t = "{kind: IPAddressClaim, metadata: {name: c1},\n" /* 1 */
	                " spec: {poolRef: {name: p},\n"                  /* 2 */
	                "   addresses: [10.0.0.1, \"10.0.0.2\",\n"       /* 3 */
	                "     {x: [1, [2, 3]]}, 'four']}}\n";            /* 4 */
	check(t, 0, "", true, 1, 1);
	check(t, 0, "metadata.name", true, 1, 35);
	check(t, 0, "spec", true, 2, 2);
	check(t, 0, "spec.poolRef.name", true, 2, 19);
	check(t, 0, "spec.addresses[1]", true, 3, 26);
	check(t, 0, "spec.addresses[2]", true, 4, 6);
	check(t, 0, "spec.addresses[2].x[1][1]", true, 4, 18);
	check(t, 0, "spec.addresses[3]", true, 4, 24);
	check(t, 0, "spec.addresses[4]", false, 3, 4);
}

static void test_json(void **state)
{
	(void)state;
	check("{\"spec\": {\"addresses\": [\"a\", \"b\"]}}", 0, "spec.addresses[1]", true, 1, 30);
	check("{\"spec\": {\"addresses\": [\"a\", \"b\"]}}", 0, "spec.addresses", true, 1, 11);
	/* No space after the colons, pretty-printed on several lines. */
	const char *t = "{\n"
	                "  \"kind\":\"IPAddress\",\n"
	                "  \"metadata\":{\"name\":\"a\",\"annotations\":{\"x.y/z\":\"1\"}},\n"
	                "  \"spec\":{\n"
	                "    \"address\":\"10.0.0.1\",\n"
	                "    \"prefix\":24\n"
	                "  }\n"
	                "}\n";
	check(t, 0, "", true, 1, 1);
	check(t, 0, "kind", true, 2, 3);
	check(t, 0, "metadata.annotations.x.y/z", true, 3, 41);
	check(t, 0, "spec.prefix", true, 6, 5);
	check(t, 0, "spec.gateway", false, 4, 3);
}

static const char list[] = "apiVersion: v1\n"           /* 1 */
                           "kind: List\n"               /* 2 */
                           "items:\n"                   /* 3 */
                           "- kind: IPAddressClaim\n"   /* 4 */
                           "  spec:\n"                  /* 5 */
                           "    poolRef: {name: a}\n"   /* 6 */
                           "-\n"                        /* 7 */
                           "  kind: IPAddressClaim\n"   /* 8 */
                           "  spec:\n"                  /* 9 */
                           "    poolRef:\n"             /* 10 */
                           "      name: b\n"            /* 11 */
                           "- just a scalar\n"          /* 12 */
                           "metadata: {name: after}\n"; /* 13 */

static void test_list_item(void **state)
{
	(void)state;
	check(list, 2, "spec.poolRef.name", true, 11, 7);
	check(list, 2, "", true, 8, 3);
	check(list, 1, "spec.poolRef.name", true, 6, 15);
	check(list, 1, "kind", true, 4, 3);
	/* The item's own fields only, not the List's. */
	check(list, 2, "apiVersion", false, 8, 3);
	check(list, 2, "metadata", false, 8, 3);
	check(list, 2, "spec.poolRef.uid", false, 10, 5);
	/* Item 3 is not a mapping; item 4 does not exist: the items key. */
	check(list, 3, "", false, 12, 3);
	check(list, 3, "kind", false, 12, 3);
	check(list, 4, "", false, 3, 1);
	/* No items sequence: the root. */
	check("kind: List\nitems: 3\n", 1, "", false, 1, 1);
	check("kind: List\n", 1, "kind", false, 1, 1);
	check("[a, b]\n", 1, "", false, 1, 1);
	/* Flow style, as JSON. */
	check("{\"kind\": \"List\", \"items\": [{\"a\": 1}, {\"b\": [5, 6]}]}", 2, "b[1]", true, 1,
	      48);
}

static void test_dotted_keys(void **state)
{
	(void)state;
	const char *t = "metadata:\n"                        /* 1 */
	                "  annotations:\n"                   /* 2 */
	                "    ipam: a\n"                      /* 3 */
	                "    ipam.poolkeeper.io/skip: 'x'\n" /* 4 */
	                "    ipam.poolkeeper.io: b\n"        /* 5 */
	                "    \"ipam.poolkeeper\": {io: c}\n" /* 6 */
	                "  labels: {a.b: 1, a: {b: 2}}\n";   /* 7 */
	check(t, 0, "metadata.annotations.ipam.poolkeeper.io/skip", true, 4, 5);
	/* Longest key wins, before or after shorter ones. */
	check(t, 0, "metadata.annotations.ipam.poolkeeper.io", true, 5, 5);
	check(t, 0, "metadata.annotations.ipam", true, 3, 5);
	check(t, 0, "metadata.labels.a.b", true, 7, 12);
	/* Through the longest key's scalar: not found, even though a shorter key leads on. */
	check(t, 0, "metadata.annotations.ipam.poolkeeper.io.x", false, 5, 5);
	/* A key is matched whole, never as a prefix of a longer name. */
	check(t, 0, "metadata.annotations.ipam.pool", false, 3, 5);
	check(t, 0, "metadata.annotations.ipa", false, 2, 3);
}

static void test_index_out_of_range(void **state)
{
	(void)state;
	check(claim, 0, "spec.addresses[3]", false, 14, 3);
	check(claim, 0, "spec.addresses[99999999999999999999999999]", false, 14, 3);
	check(claim, 0, "metadata.ownerReferences[2].uid", false, 5, 3);
	/* Not an index: not found at the sequence's key. */
	check(claim, 0, "spec.addresses[]", false, 14, 3);
	check(claim, 0, "spec.addresses[x]", false, 14, 3);
	check(claim, 0, "spec.addresses[-1]", false, 14, 3);
	check(claim, 0, "spec.addresses[1", false, 14, 3);
	check("a: []\n", 0, "a[0]", false, 1, 1);
	/* An index into a mapping, a key into a sequence. */
	check(claim, 0, "spec[0]", false, 10, 1);
	check(claim, 0, "spec.addresses.x", false, 14, 3);
	check(claim, 0, "[0]", false, 1, 1);
}

static void test_path_through_scalar(void **state)
{
	(void)state;
	check(claim, 0, "metadata.name.first", false, 4, 3);
	check(claim, 0, "metadata.name[0]", false, 4, 3);
	check(claim, 0, "spec.addresses[1].x", false, 16, 5);
	check("a: ~\nb: 1\n", 0, "a.b", false, 1, 1);
}

static void test_unknown_key(void **state)
{
	(void)state;
	check(claim, 0, "spec.nope", false, 10, 1);
	check(claim, 0, "spec.poolRef.kind", false, 12, 3);
	check(claim, 0, "nope", false, 1, 1);
	check(claim, 0, "Spec", false, 1, 1);
	check(claim, 0, "spec.", false, 10, 1);
}

static void test_first_line_offset(void **state)
{
	(void)state;
	check_n(claim, strlen(claim), 40, 0, "spec.poolRef.name", true, 52, 5);
	check_n(claim, strlen(claim), 40, 0, "", true, 40, 1);
	check_n(claim, strlen(claim), 40, 0, "nope", false, 40, 1);
	check_n(list, strlen(list), 40, 2, "spec.poolRef.name", true, 50, 7);
	check_n("", 0, 40, 0, "a", false, 40, 1);
}

static void test_document_start_marker(void **state)
{
	(void)state;
	const char *t = "--- # the pool\n"
	                "kind: IPPool\n"
	                "spec:\n"
	                "  gateway: 10.0.0.1\n";
	check(t, 0, "spec.gateway", true, 4, 3);
	check(t, 0, "", true, 2, 1);
	check("--- {a: {b: 1}}\n", 0, "a.b", true, 1, 10);
	check("--- {a: {b: 1}}\n", 0, "", true, 1, 5);
	check("%YAML 1.1\n---\na: 1\n", 0, "a", true, 3, 1);
}

static void test_multi_document(void **state)
{
	(void)state;
	const char *t = "a: 1\n"
	                "---\n"
	                "b: 2\n"
	                "...\n"
	                "c: 3\n";
	check(t, 0, "a", true, 1, 1);
	check(t, 0, "b", false, 1, 1);
	check(t, 0, "c", false, 1, 1);
	/* The second document, given from its own "---" as a caller would. */
	const char *second = strstr(t, "---");
	check_n(second, strlen(second), 2, 0, "b", true, 3, 1);
	check_n(second, strlen(second), 2, 0, "a", false, 3, 1);
	/* A JSON stream of objects in a row: only the first one. */
	check("{\"a\": 1}\n{\"b\": 2}\n", 0, "b", false, 1, 1);
	check("{\"a\": 1}\n{\"b\": 2}\n", 0, "a", true, 1, 2);
	/* len ends the text even without a NUL. */
	check_n("a: 1\nb: 2\n", 5, 1, 0, "b", false, 1, 1);
	check_n("a: 1\nb: 2\n", 5, 1, 0, "a", true, 1, 1);
}

static void test_empty_text(void **state)
{
	(void)state;
	check("", 0, "a", false, 1, 1);
	check("", 0, "", false, 1, 1);
	check(NULL, 0, "", false, 1, 1);
	check("   \n\n", 0, "a", false, 1, 1);
	check("# only a comment\n", 0, "", false, 1, 1);
	check("---\n", 0, "", false, 1, 1);
	check("---\n...\n", 1, "", false, 1, 1);
	/* A root that is not a mapping is no object. */
	check("\n\njust text\n", 0, "", false, 1, 1);
	check("- a\n- b\n", 0, "[0]", false, 1, 1);
}

static void test_multiline_scalars_and_comments(void **state)
{
	(void)state;
	const char *t = "a: >-\n"           /* 1 */
	                "  folded\n"        /* 2 */
	                "\n"                /* 3 */
	                "  text\n"          /* 4 */
	                "b: \"double\n"     /* 5 */
	                "  quoted\"  # c\n" /* 6 */
	                "# c: 9\n"          /* 7 */
	                "c: plain\n"        /* 8 */
	                "  continued\n"     /* 9 */
	                "d:\n"              /* 10 */
	                "    # inside\n"    /* 11 */
	                "    e: 'it''s'\n"  /* 12 */
	                "? f\n"             /* 13 */
	                ": [1,\n"           /* 14 */
	                "   # between\n"    /* 15 */
	                "   2]\n";          /* 16 */
	check(t, 0, "b", true, 5, 1);
	check(t, 0, "c", true, 8, 1);
	check(t, 0, "d.e", true, 12, 5);
	check(t, 0, "f[1]", true, 16, 4);
}

static void test_anchors_and_aliases(void **state)
{
	(void)state;
	const char *t = "a: &x {b: 1}\n"
	                "c: *x\n"
	                "*x : 2\n"
	                "d: !!str &y e\n"
	                "f: [*y, &z g]\n";
	check(t, 0, "a.b", true, 1, 8);
	check(t, 0, "a", true, 1, 1);
	check(t, 0, "c.b", false, 2, 1);
	check(t, 0, "d", true, 4, 1);
	check(t, 0, "f[1]", true, 5, 9);
}

static void test_bad_yaml(void **state)
{
	(void)state;
	/* Stops at the error, keeping what it found before. */
	const char *t = "a:\n"
	                "  b: 1\n"
	                " c: 2\n"
	                "d: 3\n";
	check(t, 0, "a.b", true, 2, 3);
	check(t, 0, "d", false, 1, 1);
	check(t, 0, "a.x", false, 1, 1);
	check("a: [1, 2\n", 0, "a[1]", true, 1, 8);
	check("a: [1, 2\n", 0, "a[2]", false, 1, 1);
	check("a: {b: [1}\n", 0, "a.b[0]", true, 1, 9);
	check("a:\tb\n\tc: 1\n", 0, "c", false, 1, 1);
	/* Not UTF-8: libyaml's reader decodes ahead and refuses the text before any event. */
	check("a: 1\nb: \xff\n", 0, "a", false, 1, 1);
	check("a: 1\nb: \xff\n", 0, "", false, 1, 1);
}

/* Nesting past the depth cap stops the search; below it nothing is lost. */
static void nested(char *buf, size_t size, unsigned depth)
{
	size_t n = 0;
	n += (size_t)snprintf(buf + n, size - n, "a: ");
	for (unsigned i = 0; i < depth; i++)
		buf[n++] = '[';
	for (unsigned i = 0; i < depth; i++)
		buf[n++] = ']';
	snprintf(buf + n, size - n, "\nb: 1\n");
}

static void test_depth_cap(void **state)
{
	(void)state;
	static char buf[1024];
	nested(buf, sizeof(buf), PK_MANIFEST_LOCATE_MAX_DEPTH - 1);
	check(buf, 0, "b", true, 2, 1);
	check(buf, 0, "a[0][0][0]", true, 1, 7);
	nested(buf, sizeof(buf), PK_MANIFEST_LOCATE_MAX_DEPTH);
	check(buf, 0, "b", false, 1, 1);
	check(buf, 0, "a", true, 1, 1);
}

static void test_lines_and_columns(void **state)
{
	(void)state;
	/* CR LF and a lone CR end a line once. */
	check("a: 1\r\nb:\r\n  c: 2\r\n", 0, "b.c", true, 3, 3);
	check("a: 1\rb: 2\r", 0, "b", true, 2, 1);
	/* A column counts characters, as libyaml's marks do: é is one. */
	check("x: {\xc3\xa9: 1, b: 2}\n", 0, "x.b", true, 1, 11);
	/* A byte order mark is not a column. */
	check("\xef\xbb\xbf"
	      "a: {b: 1}\n",
	      0, "a.b", true, 1, 5);
}

/* The object's position agrees with the loader's line for it. */
static void test_agrees_with_loader(void **state)
{
	(void)state;
	struct pk_manifest m;
	struct pk_err err;
	const char *t = "# two documents\n"
	                "kind: A\n"
	                "---\n"
	                "kind: List\n"
	                "items:\n"
	                "- kind: B\n"
	                "-   kind: C\n"
	                "    spec: {x: 1}\n";
	assert_int_equal(pk_manifest_parse_buffer(t, strlen(t), "t.yaml", NULL, &m, &err), PK_OK);
	assert_int_equal(pk_manifest_expand_lists(&m, &err), PK_OK);
	assert_int_equal(m.n, 3);
	const char *second = strstr(t, "---");
	for (size_t i = 0; i < m.n; i++) {
		const struct pk_manifest_doc *d = &m.docs[i];
		const char *text = d->document == 1 ? t : second;
		size_t first = d->document == 1 ? 1 : 3;
		size_t line, col;
		assert_true(
		    pk_manifest_locate(text, strlen(text), first, d->item, "", &line, &col));
		assert_int_equal(line, d->line);
		assert_true(
		    pk_manifest_locate(text, strlen(text), first, d->item, "kind", &line, &col));
		assert_int_equal(line, d->line);
	}
	size_t line, col;
	assert_true(pk_manifest_locate(second, strlen(second), 3, 2, "spec.x", &line, &col));
	assert_int_equal(line, 8);
	assert_int_equal(col, 12);
	pk_manifest_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_block_style),
	    cmocka_unit_test(test_flow_style),
	    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_list_item),
	    cmocka_unit_test(test_dotted_keys),
	    cmocka_unit_test(test_index_out_of_range),
	    cmocka_unit_test(test_path_through_scalar),
	    cmocka_unit_test(test_unknown_key),
	    cmocka_unit_test(test_first_line_offset),
	    cmocka_unit_test(test_document_start_marker),
	    cmocka_unit_test(test_multi_document),
	    cmocka_unit_test(test_empty_text),
	    cmocka_unit_test(test_multiline_scalars_and_comments),
	    cmocka_unit_test(test_anchors_and_aliases),
	    cmocka_unit_test(test_bad_yaml),
	    cmocka_unit_test(test_depth_cap),
	    cmocka_unit_test(test_lines_and_columns),
	    cmocka_unit_test(test_agrees_with_loader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
