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

static char root[] = "/tmp/pk_inputs_XXXXXX";

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
	if (mkdtemp(root) == NULL)
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
	static const char *const files[] = {"b.yaml",    "a.yml",      "c.json",        "notes.txt",
	                                    ".dot.yaml", "sub/d.yaml", ".hidden/e.yaml"};
	char path[256];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, files[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/sub", root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/.hidden", root);
	rmdir(path);
	rmdir(root);
	return 0;
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
	assert_int_equal(pk_inputs_add(&in, root, 0, &found, &err), PK_OK);
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
	assert_int_equal(pk_inputs_add(&in, slashed, PK_INPUTS_RECURSIVE, NULL, &err), PK_OK);
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
	assert_int_equal(pk_inputs_add(&in, path, 0, NULL, &err), PK_OK);
	assert_int_equal(pk_inputs_add(&in, "-", 0, NULL, &err), PK_OK);
	assert_int_equal(in.n, 2);
	assert_string_equal(in.paths[1], "-");
	pk_inputs_free(&in);
}

static void test_missing_path(void **state)
{
	(void)state;
	struct pk_inputs in = {0};
	struct pk_err err;
	assert_int_equal(pk_inputs_add(&in, "/nonexistent/pools.yaml", 0, NULL, &err),
	                 PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "/nonexistent/pools.yaml"));
	assert_non_null(strstr(err.msg, "No such file"));
	assert_int_equal(in.n, 0);
	pk_inputs_free(&in);
}

/*
 * A kustomize-like tree with manifests only in subdirectories, a link back
 * to its root (a loop), a second link to a directory already walked, and a
 * dangling *.yaml link: each file once, the bad entry kept, the walk whole.
 */
static void test_links_loops_and_bad_entries(void **state)
{
	(void)state;
	char t[] = "/tmp/pk_walk_XXXXXX", p[256], q[256];
	assert_non_null(mkdtemp(t));
	static const char *const dirs[] = {"base", "overlays", "overlays/prod"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", t, dirs[i]);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	snprintf(p, sizeof(p), "%s/base/pool.yaml", t);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/overlays/prod/patch.yaml", t);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/overlays/prod/loop", t);
	assert_int_equal(symlink(t, p), 0);
	snprintf(p, sizeof(p), "%s/same", t);
	snprintf(q, sizeof(q), "%s/base", t);
	assert_int_equal(symlink(q, p), 0);
	snprintf(p, sizeof(p), "%s/dangling.yaml", t);
	assert_int_equal(symlink("/nonexistent/pk.yaml", p), 0);

	struct pk_inputs in = {0};
	struct pk_err err;
	assert_int_equal(pk_inputs_add(&in, t, PK_INPUTS_RECURSIVE, NULL, &err), PK_OK);
	assert_int_equal(in.n, 2);
	assert_non_null(strstr(in.paths[0], "/base/pool.yaml"));
	assert_non_null(strstr(in.paths[1], "/overlays/prod/patch.yaml"));
	assert_int_equal(in.n_bad, 1);
	assert_non_null(strstr(in.bad[0].path, "dangling.yaml"));
	assert_non_null(strstr(in.bad[0].message, "No such file"));
	pk_inputs_free(&in);

	/* not recursive: nothing at the top */
	assert_int_equal(pk_inputs_add(&in, t, 0, NULL, &err), PK_OK);
	assert_int_equal(in.n, 0);
	assert_int_equal(in.n_bad, 1);
	pk_inputs_free(&in);

	static const char *const rm[] = {"dangling.yaml", "same", "overlays/prod/loop",
	                                 "overlays/prod/patch.yaml", "base/pool.yaml"};
	for (size_t i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "%s/%s", t, rm[i]);
		unlink(p);
	}
	for (size_t i = 3; i-- > 0;) {
		snprintf(p, sizeof(p), "%s/%s", t, dirs[i]);
		rmdir(p);
	}
	rmdir(t);
}

static void write_file(const char *path)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("kind: A\n", f);
	fclose(f);
}

/* A FIFO named *.yaml is reported, not taken: reading it would wait for a writer. */
static void test_fifo_not_taken(void **state)
{
	(void)state;
	char t[] = "/tmp/pk_fifo_XXXXXX", p[256], q[256];
	assert_non_null(mkdtemp(t));
	snprintf(p, sizeof(p), "%s/x.yaml", t);
	assert_int_equal(mkfifo(p, 0600), 0);
	snprintf(q, sizeof(q), "%s/ok.yaml", t);
	write_file(q);

	struct pk_inputs in = {0};
	struct pk_err err;
	assert_int_equal(pk_inputs_add(&in, t, PK_INPUTS_RECURSIVE, NULL, &err), PK_OK);
	assert_int_equal(in.n, 1);
	assert_string_equal(in.paths[0], q);
	assert_int_equal(in.n_bad, 1);
	assert_string_equal(in.bad[0].path, p);
	assert_non_null(strstr(in.bad[0].message, p));
	assert_non_null(strstr(in.bad[0].message, "a FIFO, not a regular file"));
	pk_inputs_free(&in);

	/* named on the command line: refused too, with the way round it */
	assert_int_equal(pk_inputs_add(&in, p, 0, NULL, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, p));
	assert_non_null(strstr(err.msg, "a FIFO, not a regular file"));
	assert_int_equal(in.n, 0);
	pk_inputs_free(&in);
	unlink(p);
	unlink(q);
	rmdir(t);
}

/*
 * Links that stay in the argument's tree are followed; links out of it (to
 * a file, to a directory) are reported with their target and not taken,
 * unless PK_INPUTS_FOLLOW_SYMLINKS.
 */
static void test_links_out_of_tree(void **state)
{
	(void)state;
	char t[] = "/tmp/pk_tree_XXXXXX", o[] = "/tmp/pk_outside_XXXXXX", p[256], q[256];
	assert_non_null(mkdtemp(t));
	assert_non_null(mkdtemp(o));
	snprintf(p, sizeof(p), "%s/secret.yaml", o);
	write_file(p);
	snprintf(p, sizeof(p), "%s/sub", t);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/sub/in.yaml", t);
	write_file(p);
	snprintf(q, sizeof(q), "%s/here.yaml", t); /* in the tree, through ".." */
	assert_int_equal(symlink("sub/../sub/in.yaml", q), 0);
	snprintf(p, sizeof(p), "%s/secret.yaml", o);
	snprintf(q, sizeof(q), "%s/out.yaml", t);
	assert_int_equal(symlink(p, q), 0);
	snprintf(q, sizeof(q), "%s/sub/outdir", t);
	assert_int_equal(symlink(o, q), 0);
	snprintf(q, sizeof(q), "%s/notes.txt", t); /* never read: not worth a word */
	assert_int_equal(symlink(p, q), 0);

	struct pk_inputs in = {0};
	struct pk_err err;
	assert_int_equal(pk_inputs_add(&in, t, PK_INPUTS_RECURSIVE, NULL, &err), PK_OK);
	assert_int_equal(in.n, 2);
	assert_non_null(strstr(in.paths[0], "/here.yaml"));
	assert_non_null(strstr(in.paths[1], "/sub/in.yaml"));
	assert_int_equal(in.n_bad, 2);
	assert_non_null(strstr(in.bad[0].path, "/out.yaml"));
	assert_non_null(strstr(in.bad[0].message, "/out.yaml: skipped: a symbolic link to"));
	assert_non_null(strstr(in.bad[0].message, "/secret.yaml, outside"));
	assert_non_null(strstr(in.bad[0].message, "--follow-symlinks"));
	assert_non_null(strstr(in.bad[1].path, "/sub/outdir"));
	assert_non_null(strstr(in.bad[1].message, "outside"));
	pk_inputs_free(&in);

	/* not recursive: the directory link is not entered, so not reported */
	assert_int_equal(pk_inputs_add(&in, t, 0, NULL, &err), PK_OK);
	assert_int_equal(in.n, 1);
	assert_int_equal(in.n_bad, 1);
	assert_non_null(strstr(in.bad[0].path, "/out.yaml"));
	pk_inputs_free(&in);

	assert_int_equal(
	    pk_inputs_add(&in, t, PK_INPUTS_RECURSIVE | PK_INPUTS_FOLLOW_SYMLINKS, NULL, &err),
	    PK_OK);
	assert_int_equal(in.n, 4);
	assert_non_null(strstr(in.paths[1], "/out.yaml"));
	assert_non_null(strstr(in.paths[3], "/sub/outdir/secret.yaml"));
	assert_int_equal(in.n_bad, 0);
	pk_inputs_free(&in);

	static const char *const rm[] = {"notes.txt", "sub/outdir", "out.yaml", "here.yaml",
	                                 "sub/in.yaml"};
	for (size_t i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "%s/%s", t, rm[i]);
		unlink(p);
	}
	snprintf(p, sizeof(p), "%s/sub", t);
	rmdir(p);
	rmdir(t);
	snprintf(p, sizeof(p), "%s/secret.yaml", o);
	unlink(p);
	rmdir(o);
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
	    cmocka_unit_test(test_manifest_names),
	    cmocka_unit_test(test_links_loops_and_bad_entries),
	    cmocka_unit_test(test_fifo_not_taken),
	    cmocka_unit_test(test_links_out_of_tree),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
