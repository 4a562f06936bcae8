/* test_flags.c - the flag table parser and the --help it generates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flags.h"

enum { F_FORMAT, F_STRICT, F_VERBOSE, F_NAME, F_N };

static const struct pk_flag table[F_N] = {
    [F_FORMAT] = {"format", 'o', PK_FLAG_CHOICE, "text", "text|json", "output format"},
    [F_STRICT] = {"strict", 0, PK_FLAG_BOOL, NULL, NULL, "fail on warnings"},
    [F_VERBOSE] = {"verbose", 'v', PK_FLAG_COUNT, NULL, NULL, "say more"},
    [F_NAME] = {"name", 0, PK_FLAG_STRING, "x", NULL, "a name"},
};

struct parsed {
	struct pk_flag_value vals[F_N];
	const char *pos[16];
	size_t npos;
	struct pk_err err;
	int rc;
};

static void run(struct parsed *p, int argc, const char *const *argv)
{
	memset(p, 0, sizeof(*p));
	p->rc = pk_flags_parse(table, F_N, argc, (char *const *)(uintptr_t)argv, p->vals, p->pos,
	                       &p->npos, &p->err);
}

static void test_defaults(void **state)
{
	(void)state;
	struct parsed p;
	const char *argv[] = {"a.yaml"};
	run(&p, 1, argv);
	assert_int_equal(p.rc, PK_OK);
	assert_int_equal(p.npos, 1);
	assert_string_equal(p.pos[0], "a.yaml");
	assert_string_equal(pk_flags_get_string(table, p.vals, F_FORMAT), "text");
	assert_string_equal(pk_flags_get_string(table, p.vals, F_NAME), "x");
	assert_false(p.vals[F_STRICT].set);
}

static void test_spellings(void **state)
{
	(void)state;
	struct parsed p;
	const char *a1[] = {"--format", "json", "x", "--strict", "-vv", "-", "--name=n1"};
	run(&p, 7, a1);
	assert_int_equal(p.rc, PK_OK);
	assert_string_equal(pk_flags_get_string(table, p.vals, F_FORMAT), "json");
	assert_true(p.vals[F_STRICT].set);
	assert_int_equal(p.vals[F_VERBOSE].count, 2);
	assert_string_equal(pk_flags_get_string(table, p.vals, F_NAME), "n1");
	assert_int_equal(p.npos, 2);
	assert_string_equal(p.pos[1], "-");

	const char *a2[] = {"--format=json", "-ojson", "-o", "text", "-vo", "json"};
	run(&p, 6, a2);
	assert_int_equal(p.rc, PK_OK);
	assert_string_equal(pk_flags_get_string(table, p.vals, F_FORMAT), "json");
	assert_int_equal(p.vals[F_VERBOSE].count, 1);

	const char *a3[] = {"--", "--strict", "-v"};
	run(&p, 3, a3);
	assert_int_equal(p.rc, PK_OK);
	assert_int_equal(p.npos, 2);
	assert_false(p.vals[F_STRICT].set);
}

static void test_errors(void **state)
{
	(void)state;
	static const struct {
		int argc;
		const char *argv[3];
		const char *want;
	} bad[] = {
	    {1, {"--nope"}, "unknown flag --nope"},
	    {1, {"-x"}, "unknown flag -x"},
	    {1, {"--format"}, "--format needs a value"},
	    {1, {"-o"}, "-o needs a value"},
	    {2, {"--format", "yaml"}, "--format must be one of text|json, got \"yaml\""},
	    {1, {"--format=xml"}, "got \"xml\""},
	    {1, {"--strict=yes"}, "--strict takes no value"},
	    {1, {"--form"}, "unknown flag --form"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct parsed p;
		run(&p, bad[i].argc, bad[i].argv);
		assert_int_equal(p.rc, PK_ERR_INVALID);
		if (strstr(p.err.msg, bad[i].want) == NULL)
			print_error("case %zu: \"%s\"\n", i, p.err.msg);
		assert_non_null(strstr(p.err.msg, bad[i].want));
	}
}

static void test_help_from_table(void **state)
{
	(void)state;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	pk_flags_print_help(f, "tool [flags] FILE", "Does things.", table, F_N);
	fclose(f);
	assert_non_null(strstr(text, "Usage: tool [flags] FILE\n\nDoes things.\n\nFlags:\n"));
	assert_non_null(strstr(text, "-o, --format text|json"));
	assert_non_null(strstr(text, "output format (default text)"));
	assert_non_null(strstr(text, "    --strict"));
	assert_non_null(strstr(text, "-v, --verbose"));
	assert_non_null(strstr(text, "(repeatable)"));
	assert_non_null(strstr(text, "--name VALUE"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_spellings),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_help_from_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
