/*
 * expect_violations.h - helpers the rule suites share: fixtures written
 * with ' for " (to stay readable), and assertions on violation lists that
 * print the whole list when they fail. Include after <cmocka.h>.
 */
#ifndef PK_TEST_EXPECT_VIOLATIONS_H
#define PK_TEST_EXPECT_VIOLATIONS_H

#include <stdlib.h>
#include <string.h>

#include "violation.h"

/* Parses a fixture; `flags` are jansson decoding flags (JSON_DECODE_ANY is added). */
static inline json_t *load_fixture(const char *text, size_t flags)
{
	char *s = strdup(text);
	assert_non_null(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	json_error_t e;
	json_t *j = json_loads(s, JSON_DECODE_ANY | flags, &e);
	if (j == NULL)
		fail_msg("fixture does not parse: %s: %s", e.text, s);
	free(s);
	return j;
}

static inline void dump(const struct pk_violations *v)
{
	char buf[PK_FIELD_MAX + PK_MESSAGE_MAX + 4];
	for (size_t i = 0; i < v->n; i++)
		print_message("  %s %s\n", v->items[i].severity == PK_SEV_DENY ? "DENY" : "WARN",
		              pk_violation_text(&v->items[i], buf, sizeof(buf)));
}

/* Fails unless a violation of `sev` on `field` has a message containing `needle`. */
static inline void expect(const struct pk_violations *v, enum pk_severity sev, const char *field,
                          const char *needle)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->items[i].severity == sev && strcmp(v->items[i].field, field) == 0 &&
		    strstr(v->items[i].message, needle) != NULL)
			return;
	dump(v);
	fail_msg("no %s on %s containing [%s]", sev == PK_SEV_DENY ? "DENY" : "WARN", field,
	         needle);
}

static inline void expect_none(const struct pk_violations *v, enum pk_severity sev)
{
	if (pk_violations_count(v, sev) != 0) {
		dump(v);
		fail_msg("expected no %s", sev == PK_SEV_DENY ? "DENY" : "WARN");
	}
}

#endif
