/*
 * json_fixture.h - helpers the controller's suites share: API objects
 * written with ' for " (to stay readable), parsed, and compared as JSON.
 * Include after <cmocka.h>.
 */
#ifndef PK_TEST_JSON_FIXTURE_H
#define PK_TEST_JSON_FIXTURE_H

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1767225600LL /* 2026-01-01T00:00:00Z */

/* Parses a fixture (any JSON value); the test fails when it does not parse. */
static inline json_t *load(const char *text)
{
	char *s = strdup(text);
	assert_non_null(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	json_error_t e;
	json_t *j = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	if (j == NULL)
		fail_msg("fixture does not parse: %s: %s", e.text, s);
	free(s);
	return j;
}

/* load() of a fixture formatted with printf's rules (at most 2 KB). */
static inline json_t *loadf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline json_t *loadf(const char *fmt, ...)
{
	char text[2048];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(text))
		fail_msg("fixture too long: %s", fmt);
	return load(text);
}

/* Fails unless got is the JSON value want_text (a fixture) stands for, keys in any order. */
static inline void assert_json(const json_t *got, const char *want_text)
{
	json_t *want = load(want_text);
	char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
	char *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
	assert_non_null(g);
	assert_non_null(w);
	assert_string_equal(g, w);
	free(g);
	free(w);
	json_decref(want);
}

#endif
