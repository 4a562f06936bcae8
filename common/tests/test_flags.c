/* test_flags.c - the flag table parser and the --help it generates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flags.h"

enum {
	F_FORMAT,
	F_STRICT,
	F_VERBOSE,
	F_NAME,
	F_ELECT,
	F_WORKERS,
	F_V,
	F_LEASE,
	F_ADDR,
	F_METRICS,
	F_N
};

static const struct pk_flag table[F_N] = {
    [F_FORMAT] = {"format", 'o', PK_FLAG_CHOICE, "text", "text|json", "output format"},
    [F_STRICT] = {"strict", 0, PK_FLAG_BOOL, NULL, NULL, "fail on warnings"},
    [F_VERBOSE] = {"verbose", 'V', PK_FLAG_COUNT, NULL, NULL, "say more"},
    [F_NAME] = {"name", 0, PK_FLAG_STRING, "x", NULL, "a name"},
    [F_ELECT] = {"leader-elect", 0, PK_FLAG_BOOL, "true", NULL, "elect a leader"},
    [F_WORKERS] = {"workers", 0, PK_FLAG_UINT, "2", "1..64", "workers"},
    [F_V] = {"v", 'v', PK_FLAG_UINT, "0", "0..10", "verbosity"},
    [F_LEASE] = {"lease-duration", 0, PK_FLAG_DURATION, "15s", "1s..10m", "lease"},
    [F_ADDR] = {"health-probe-bind-address", 0, PK_FLAG_STRING, ":8081", "HOST:PORT", "health"},
    [F_METRICS] = {"metrics-bind-address", 0, PK_FLAG_STRING, ":8080", "HOST:PORT", "metrics"},
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
	assert_false(pk_flags_get_bool(p.vals, F_STRICT));
	assert_true(pk_flags_get_bool(p.vals, F_ELECT));
	assert_int_equal(pk_flags_get_num(p.vals, F_WORKERS), 2);
	assert_int_equal(pk_flags_get_num(p.vals, F_V), 0);
	assert_int_equal(pk_flags_get_num(p.vals, F_LEASE), 15 * PK_NS_PER_S);
	struct pk_hostport hp;
	bool off = true;
	assert_int_equal(pk_flags_get_hostport(table, p.vals, F_ADDR, &hp, NULL, &p.err), PK_OK);
	assert_string_equal(hp.host, "");
	assert_int_equal(hp.port, 8081);
	assert_int_equal(pk_flags_get_hostport(table, p.vals, F_METRICS, &hp, &off, &p.err), PK_OK);
	assert_false(off);
	assert_int_equal(hp.port, 8080);
}

static void test_spellings(void **state)
{
	(void)state;
	struct parsed p;
	const char *a1[] = {"--format", "json", "x", "--strict", "-VV", "-", "--name=n1"};
	run(&p, 7, a1);
	assert_int_equal(p.rc, PK_OK);
	assert_string_equal(pk_flags_get_string(table, p.vals, F_FORMAT), "json");
	assert_true(p.vals[F_STRICT].set);
	assert_int_equal(p.vals[F_VERBOSE].count, 2);
	assert_string_equal(pk_flags_get_string(table, p.vals, F_NAME), "n1");
	assert_int_equal(p.npos, 2);
	assert_string_equal(p.pos[1], "-");

	const char *a2[] = {"--format=json", "-ojson", "-o", "text", "-Vo", "json"};
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

/* Booleans as Go's flag package reads them: bare is true, a value only after "=". */
static void test_bools(void **state)
{
	(void)state;
	struct parsed p;
	const char *a1[] = {"--strict", "--leader-elect=false"};
	run(&p, 2, a1);
	assert_int_equal(p.rc, PK_OK);
	assert_true(pk_flags_get_bool(p.vals, F_STRICT));
	assert_false(pk_flags_get_bool(p.vals, F_ELECT));
	const char *a2[] = {"--leader-elect", "--strict=true", "--strict=false"};
	run(&p, 3, a2);
	assert_int_equal(p.rc, PK_OK);
	assert_true(pk_flags_get_bool(p.vals, F_ELECT));
	assert_false(pk_flags_get_bool(p.vals, F_STRICT)); /* the last one wins */
	/* A bool never takes the next argument: it stays a positional one. */
	const char *a3[] = {"--strict", "file.yaml"};
	run(&p, 2, a3);
	assert_int_equal(p.rc, PK_OK);
	assert_int_equal(p.npos, 1);
	assert_string_equal(p.pos[0], "file.yaml");
}

/* Numbers and durations: every spelling, checked against the range while parsing. */
static void test_numbers(void **state)
{
	(void)state;
	struct parsed p;
	const char *a1[] = {"--workers", "64", "--v=3", "--lease-duration", "1m30s"};
	run(&p, 5, a1);
	assert_int_equal(p.rc, PK_OK);
	assert_int_equal(pk_flags_get_num(p.vals, F_WORKERS), 64);
	assert_int_equal(pk_flags_get_num(p.vals, F_V), 3);
	assert_int_equal(pk_flags_get_num(p.vals, F_LEASE), 90 * PK_NS_PER_S);
	assert_string_equal(pk_flags_get_string(table, p.vals, F_LEASE), "1m30s");
	const char *a2[] = {"--v", "10", "--workers=1", "--lease-duration=2500ms"};
	run(&p, 4, a2);
	assert_int_equal(p.rc, PK_OK);
	assert_int_equal(pk_flags_get_num(p.vals, F_V), 10);
	assert_int_equal(pk_flags_get_num(p.vals, F_LEASE), 2500 * PK_NS_PER_MS);
	const char *a3[] = {"-v", "2"};
	run(&p, 2, a3);
	assert_int_equal(p.rc, PK_OK);
	assert_int_equal(pk_flags_get_num(p.vals, F_V), 2);
	const char *a4[] = {"-v4"};
	run(&p, 1, a4);
	assert_int_equal(p.rc, PK_OK);
	assert_int_equal(pk_flags_get_num(p.vals, F_V), 4);
}

static void test_hostports(void **state)
{
	(void)state;
	struct parsed p;
	struct pk_hostport hp;
	bool off = false;
	const char *a1[] = {"--health-probe-bind-address", "[::1]:0", "--metrics-bind-address=0"};
	run(&p, 3, a1);
	assert_int_equal(p.rc, PK_OK);
	assert_int_equal(pk_flags_get_hostport(table, p.vals, F_ADDR, &hp, NULL, &p.err), PK_OK);
	assert_string_equal(hp.host, "::1");
	assert_int_equal(hp.port, 0);
	assert_int_equal(pk_flags_get_hostport(table, p.vals, F_METRICS, &hp, &off, &p.err), PK_OK);
	assert_true(off);
	/* "0" turns off only a listener that may be off. */
	const char *a2[] = {"--health-probe-bind-address=0", "--metrics-bind-address=127.0.0.1"};
	run(&p, 2, a2);
	assert_int_equal(p.rc, PK_OK);
	assert_int_equal(pk_flags_get_hostport(table, p.vals, F_ADDR, &hp, NULL, &p.err),
	                 PK_ERR_INVALID);
	assert_non_null(strstr(p.err.msg, "--health-probe-bind-address must be HOST:PORT"));
	assert_non_null(strstr(p.err.msg, "got \"0\""));
	assert_int_equal(pk_flags_get_hostport(table, p.vals, F_METRICS, &hp, &off, &p.err),
	                 PK_ERR_INVALID);
	assert_non_null(strstr(p.err.msg, "--metrics-bind-address"));
	assert_non_null(strstr(p.err.msg, "\"127.0.0.1\" (the port is missing)"));
}

/* A table whose default or range does not parse fails every run, so no test misses it. */
static void test_bad_tables(void **state)
{
	(void)state;
	static const struct pk_flag bad[][1] = {
	    {{"n", 0, PK_FLAG_UINT, "0", "1..9", "default out of range"}},
	    {{"n", 0, PK_FLAG_UINT, "1", "1-9", "no range"}},
	    {{"n", 0, PK_FLAG_UINT, NULL, "1..9", "no default"}},
	    {{"d", 0, PK_FLAG_DURATION, "1s", "2s..1s", "empty range"}},
	    {{"d", 0, PK_FLAG_DURATION, "5", "1s..9s", "default without a unit"}},
	    {{"b", 0, PK_FLAG_BOOL, "yes", NULL, "a bool default other than true"}},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pk_flag_value vals[1];
		const char *pos[1];
		size_t npos;
		struct pk_err err;
		assert_int_equal(pk_flags_parse(bad[i], 1, 0, NULL, vals, pos, &npos, &err),
		                 PK_ERR_INVALID);
		assert_non_null(strstr(err.msg, bad[i][0].name));
	}
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
	    {1, {"--strict=yes"}, "--strict must be true or false, got \"yes\""},
	    {1, {"--strict="}, "--strict must be true or false, got \"\""},
	    {1, {"--leader-elect=1"}, "--leader-elect must be true or false, got \"1\""},
	    {2, {"--leader-elect", "false"}, "--leader-elect takes its value after \"=\""},
	    {2, {"--strict", "true"}, "(--strict=true)"},
	    {1, {"--verbose=2"}, "--verbose takes no value"},
	    {1, {"--form"}, "unknown flag --form"},
	    {2, {"--workers", "0"}, "--workers must be an integer in 1..64, got \"0\""},
	    {1, {"--workers=65"}, "--workers must be an integer in 1..64, got \"65\""},
	    {1, {"--workers=-1"}, "got \"-1\""},
	    {1, {"--workers=2x"}, "got \"2x\""},
	    {1, {"--workers="}, "--workers must be an integer in 1..64, got \"\""},
	    {1, {"--v=11"}, "--v must be an integer in 0..10, got \"11\""},
	    {1, {"-v"}, "-v needs a value"},
	    {1, {"--v"}, "--v needs a value"},
	    {2, {"-v", "x"}, "--v must be an integer in 0..10, got \"x\""},
	    {1, {"--lease-duration=15"}, "--lease-duration must be a duration such as 15s"},
	    {1,
	     {"--lease-duration=-1s"},
	     "--lease-duration must be a duration in 1s..10m, got \"-1s\""},
	    {1,
	     {"--lease-duration=1h"},
	     "--lease-duration must be a duration in 1s..10m, got \"1h\""},
	    {1, {"--lease-duration=999ms"}, "in 1s..10m, got \"999ms\""},
	    {1, {"--lease-duration=1x"}, "unknown unit"},
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
	assert_non_null(strstr(text, "-V, --verbose"));
	assert_non_null(strstr(text, "(repeatable)"));
	assert_non_null(strstr(text, "--name VALUE"));
	assert_non_null(strstr(text, "--leader-elect"));
	assert_non_null(strstr(text, "elect a leader (default true)"));
	assert_non_null(strstr(text, "--workers N"));
	assert_non_null(strstr(text, "workers (1..64, default 2)"));
	assert_non_null(strstr(text, "-v, --v N"));
	assert_non_null(strstr(text, "--lease-duration DURATION"));
	assert_non_null(strstr(text, "lease (1s..10m, default 15s)"));
	assert_non_null(strstr(text, "--health-probe-bind-address HOST:PORT"));
	assert_non_null(strstr(text, "health (default :8081)"));
	free(text);
}

/* A daemon's command line: flags only; a positional is named in the error. */
static void test_parse_only(void **state)
{
	(void)state;
	struct pk_flag_value vals[F_N];
	struct pk_err err = {{0}};
	const char *ok[] = {"prog", "--workers=3", "-v", "2"};
	assert_int_equal(
	    pk_flags_parse_only(table, F_N, 4, (char *const *)(uintptr_t)ok, vals, &err), PK_OK);
	assert_int_equal(pk_flags_get_num(vals, F_WORKERS), 3);
	assert_int_equal(pk_flags_get_num(vals, F_V), 2);
	const char *stray[] = {"prog", "--workers", "3", "stray"};
	assert_int_equal(
	    pk_flags_parse_only(table, F_N, 4, (char *const *)(uintptr_t)stray, vals, &err),
	    PK_ERR_INVALID);
	assert_string_equal(err.msg, "unexpected argument \"stray\"");
	const char *bad[] = {"prog", "--workers=0"};
	assert_int_equal(
	    pk_flags_parse_only(table, F_N, 2, (char *const *)(uintptr_t)bad, vals, &err),
	    PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "--workers"));
	assert_int_equal(pk_flags_parse_only(table, F_N, 0, NULL, vals, &err), PK_ERR_INVALID);
}

#define ARGV(...) ((char *const *)(uintptr_t)(const char *const[]){__VA_ARGS__})

/* Every value of a repeated flag, in order, in both spellings; the count goes past `max`. */
static void test_collect(void **state)
{
	(void)state;
	const char *got[2];
	size_t n = 9;
	struct pk_err err = {{0}};
	assert_int_equal(pk_flags_collect(table, F_N, 9,
	                                  ARGV("prog", "--name", "a", "-v", "1", "--name=b",
	                                       "--strict", "--name", "c"),
	                                  F_NAME, got, 2, &n, &err),
	                 PK_OK);
	assert_int_equal(n, 3);
	assert_string_equal(got[0], "a");
	assert_string_equal(got[1], "b");
	/* A flag's value is never taken for another flag: "-o name" is -o's value. */
	assert_int_equal(pk_flags_collect(table, F_N, 5, ARGV("prog", "-o", "json", "-ojson", "-V"),
	                                  F_FORMAT, got, 2, &n, &err),
	                 PK_OK);
	assert_int_equal(n, 2);
	assert_int_equal(pk_flags_collect(table, F_N, 4, ARGV("prog", "-o", "--name", "x"), F_NAME,
	                                  got, 2, &n, &err),
	                 PK_ERR_INVALID); /* -o's value "--name" is not a format */
	assert_int_equal(pk_flags_collect(table, F_N, 5, ARGV("prog", "x", "--", "--name", "y"),
	                                  F_NAME, got, 2, &n, &err),
	                 PK_OK);
	assert_int_equal(n, 0);
	/* A bad command line is refused as pk_flags_parse refuses it. */
	assert_int_equal(pk_flags_collect(table, F_N, 3, ARGV("prog", "--name=a", "--workers=0"),
	                                  F_NAME, got, 2, &n, &err),
	                 PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "--workers"));
	assert_int_equal(n, 0);
	assert_int_equal(pk_flags_collect(table, F_N, 1, ARGV("prog"), F_N, got, 2, &n, &err),
	                 PK_ERR_INVALID);
	assert_int_equal(pk_flags_collect(table, F_N, 0, NULL, F_NAME, got, 2, &n, &err),
	                 PK_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),   cmocka_unit_test(test_spellings),
	    cmocka_unit_test(test_bools),      cmocka_unit_test(test_numbers),
	    cmocka_unit_test(test_hostports),  cmocka_unit_test(test_bad_tables),
	    cmocka_unit_test(test_errors),     cmocka_unit_test(test_help_from_table),
	    cmocka_unit_test(test_parse_only), cmocka_unit_test(test_collect),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
