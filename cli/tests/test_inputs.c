/* test_inputs.c - which files a FILE|DIR|- argument contributes, in which order. */
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

#include "inputs.h"
#include "tempdir.h"

static char root[200];

static void touch(const char *rel)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("kind: A\n", f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	if (pk_test_tempdir_make(root, sizeof(root), "pk_inputs") != 0)
		return -1;
	char path[256];
	snprintf(path, sizeof(path), "%s/sub", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/.hidden", root);
	mkdir(path, 0755);
	touch("b.yaml");
	touch("a.yml");
	touch("c.json");
	touch("notes.txt");
	touch(".dot.yaml");
	touch("sub/d.yaml");
	touch(".hidden/e.yaml");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return pk_test_tempdir_remove(root);
}

static const char *base(const char *p)
{
	return p + strlen(root) + 1;
}

static void test_directory_sorted_not_recursive(void **state)
{
	(void)state;
	struct pk_inputs in = {0};
	struct pk_err err;
	size_t found;
	assert_int_equal(pk_inputs_add(&in, root, false, &found, &err), PK_OK);
	assert_int_equal(found, 3);
	assert_string_equal(base(in.paths[0]), "a.yml");
	assert_string_equal(base(in.paths[1]), "b.yaml");
	assert_string_equal(base(in.paths[2]), "c.json");
	pk_inputs_free(&in);
}

static void test_directory_recursive(void **state)
{
	(void)state;
	struct pk_inputs in = {0};
	struct pk_err err;
	char slashed[256];
	snprintf(slashed, sizeof(slashed), "%s/", root);
	assert_int_equal(pk_inputs_add(&in, slashed, true, NULL, &err), PK_OK);
	assert_int_equal(in.n, 4);
	assert_string_equal(base(in.paths[3]), "sub/d.yaml"); /* no "//" either */
	pk_inputs_free(&in);
}

static void test_files_and_stdin(void **state)
{
	(void)state;
	struct pk_inputs in = {0};
	struct pk_err err;
	char path[256];
	snprintf(path, sizeof(path), "%s/notes.txt", root);
	/* A file named on the command line is read whatever its extension. */
	assert_int_equal(pk_inputs_add(&in, path, false, NULL, &err), PK_OK);
	assert_int_equal(pk_inputs_add(&in, "-", false, NULL, &err), PK_OK);
	assert_int_equal(in.n, 2);
	assert_string_equal(in.paths[1], "-");
	pk_inputs_free(&in);
}

static void test_missing_path(void **state)
{
	(void)state;
	struct pk_inputs in = {0};
	struct pk_err err;
	assert_int_equal(pk_inputs_add(&in, "/nonexistent/pools.yaml", false, NULL, &err),
	                 PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "/nonexistent/pools.yaml"));
	assert_non_null(strstr(err.msg, "No such file"));
	assert_int_equal(in.n, 0);
	pk_inputs_free(&in);
}

/* More files than a run takes is "too big", and what was added before stays. */
static void test_too_many_files(void **state)
{
	(void)state;
	struct pk_inputs in = {0};
	struct pk_err err;
	for (int i = 0; i < PK_INPUTS_MAX_FILES; i++)
		assert_int_equal(pk_inputs_add(&in, "-", false, NULL, &err), PK_OK);
	size_t found = 1;
	assert_int_equal(pk_inputs_add(&in, "-", false, &found, &err), PK_ERR_TOO_BIG);
	assert_non_null(strstr(err.msg, "more than 100000 files to lint"));
	assert_int_equal(found, 0);
	assert_int_equal(in.n, PK_INPUTS_MAX_FILES);
	pk_inputs_free(&in);
}

static void test_manifest_names(void **state)
{
	(void)state;
	assert_true(pk_inputs_is_manifest_name("a.yaml"));
	assert_true(pk_inputs_is_manifest_name("a.yml"));
	assert_true(pk_inputs_is_manifest_name("a.json"));
	assert_false(pk_inputs_is_manifest_name(".yaml"));
	assert_false(pk_inputs_is_manifest_name("a.yaml.bak"));
	assert_false(pk_inputs_is_manifest_name("yaml"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_directory_sorted_not_recursive),
	    cmocka_unit_test(test_directory_recursive),
	    cmocka_unit_test(test_files_and_stdin),
	    cmocka_unit_test(test_missing_path),
	    cmocka_unit_test(test_too_many_files),
	    cmocka_unit_test(test_manifest_names),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
