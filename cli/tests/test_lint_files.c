/*
 * test_lint_files.c - lint over files read on threads (pk_lint_add_files):
 * the same report for any number of threads, in the order the paths were
 * given; unreadable and unloadable files; checks across files that need
 * an object loaded later (an IPAddress before its pool, a pool overlapping
 * one in a later file).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lint.h"
#include "report.h"
#include "tempdir.h"

#define POOL(kind, ns, name, addrs)                                                             \
	"apiVersion: " PK_POOL_API_VERSION "\nkind: " kind "\nmetadata:\n  name: " name "\n" ns \
	"spec:\n  addresses: " addrs "\n  prefix: 24\n"

#define ADDRESS(name, pool, address)                                                              \
	"apiVersion: " PK_CAPI_IPAM_GROUP "/v1beta2\nkind: " PK_ADDRESS_KIND "\nmetadata:\n"      \
	"  name: " name "\n  namespace: default\n  ownerReferences:\n"                            \
	"  - {apiVersion: " PK_CAPI_IPAM_GROUP "/v1beta2, kind: " PK_CLAIM_KIND ", name: c-" name \
	", uid: u1, controller: true, blockOwnerDeletion: true}\n"                                \
	"  - {apiVersion: " PK_POOL_API_VERSION ", kind: " PK_POOL_KIND ", name: " pool           \
	", uid: u2, blockOwnerDeletion: true}\n"                                                  \
	"spec:\n  claimRef: {name: c-" name "}\n"                                                 \
	"  poolRef: {apiGroup: " PK_POOL_GROUP ", kind: " PK_POOL_KIND ", name: " pool "}\n"      \
	"  address: " address "\n  prefix: 24\n"

struct files {
	char dir[4096];
	char *paths[16];
	size_t n;
};

static void add_file(struct files *f, const char *name, const char *text)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	if (text != NULL) {
		FILE *out = fopen(path, "w");
		assert_non_null(out);
		assert_int_equal(fwrite(text, 1, strlen(text), out), strlen(text));
		assert_int_equal(fclose(out), 0);
	}
	f->paths[f->n] = strdup(path);
	assert_non_null(f->paths[f->n++]);
}

static void files_free(struct files *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->paths[i]);
	pk_test_tempdir_remove(f->dir);
}

/* The files of every test: later files hold what earlier ones need. */
static void make_files(struct files *f)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(pk_test_tempdir_make(f->dir, sizeof(f->dir), "pk-lint-files"), 0);
	/* a.yaml: an IPAddress outside its pool, which only b.yaml holds. */
	add_file(f, "a.yaml",
	         ADDRESS("a1", "p", "10.9.9.9") "---\n" ADDRESS("a2", "p", "10.1.0.7"));
	/* b.yaml: the pool, then a pool overlapping one in c.yaml. */
	add_file(f, "b.yaml",
	         POOL(PK_POOL_KIND, "", "p", "[10.1.0.0/24]") "---\n" POOL(PK_GLOBAL_POOL_KIND, "",
	                                                                   "g", "[10.2.0.0/24]"));
	/* c.yaml: overlaps g; in another namespace, overlaps nothing else. */
	add_file(f, "c.yaml", POOL(PK_POOL_KIND, "  namespace: other\n", "q", "[10.2.0.128/25]"));
	/* d.yaml: does not load, though its first document would. */
	add_file(f, "d.yaml", POOL(PK_POOL_KIND, "", "r", "[10.3.0.0/24]") "---\na: [\n");
	add_file(f, "missing.yaml", NULL);
	for (size_t k = 0; k < 6; k++) {
		char name[32], text[2048];
		snprintf(name, sizeof(name), "more-%zu.yaml", k);
		snprintf(text, sizeof(text),
		         POOL(PK_POOL_KIND, "", "m%zu",
		              "[10.%zu.0.0/24]") "---\n" ADDRESS("m%zu", "m%zu", "10.%zu.0.9"),
		         k, k + 100, k, k, k, k, k, k + 100);
		add_file(f, name, text);
	}
}

static char *report(const struct pk_lint *l)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	assert_non_null(out);
	pk_report_write_text(out, l, true, false);
	assert_int_equal(fclose(out), 0);
	return text;
}

static struct pk_lint *lint_files(const struct files *f, unsigned jobs)
{
	struct pk_lint *l = pk_lint_new();
	assert_non_null(l);
	assert_int_equal(pk_lint_add_files(l, f->paths, f->n, jobs), PK_OK);
	assert_int_equal(pk_lint_run(l), PK_OK);
	return l;
}

static const struct pk_lint_object *find(const struct pk_lint *l, const char *name)
{
	size_t n;
	const struct pk_lint_object *o = pk_lint_objects(l, &n);
	for (size_t i = 0; i < n; i++)
		if (o[i].name != NULL && !strcmp(o[i].name, name))
			return &o[i];
	return NULL;
}

static bool has(const struct pk_lint_object *o, const char *rule, const char *want)
{
	for (size_t k = 0; o != NULL && k < o->n_findings; k++)
		if (!strcmp(o->findings[k].rule, rule) && strstr(o->findings[k].v.message, want))
			return true;
	return false;
}

/* What is found, file by file, on one thread. */
static void test_across_files(void **state)
{
	(void)state;
	struct files f;
	make_files(&f);
	struct pk_lint *l = lint_files(&f, 1);
	struct pk_lint_totals t = pk_lint_get_totals(l);
	assert_int_equal(t.files, 11);
	assert_int_equal(t.unreadable, 1);
	assert_int_equal(t.unloadable, 1);
	/* d.yaml did not load: none of its objects is kept, not even its good first one. */
	assert_null(find(l, "r"));
	assert_int_equal(t.objects, 2 + 2 + 1 + 12);
	/* a1 is checked against its pool, which loaded after it. */
	assert_int_equal(find(l, "a1")->status, PK_LINT_DENY);
	assert_true(has(find(l, "a1"), "ipaddress/spec.address", "10.9.9.9"));
	/* found after every file loaded, it is placed by reading a.yaml again */
	const struct pk_lint_finding *a1 = &find(l, "a1")->findings[0];
	assert_int_equal(a1->line, 12); /* "  address: 10.9.9.9" */
	assert_int_equal(a1->column, 3);
	assert_int_equal(find(l, "a2")->status, PK_LINT_PASS);
	/* q overlaps g, loaded before it: reported once, on q, naming g and where. */
	assert_true(has(find(l, "q"), "pool-overlap", "b.yaml:"));
	assert_int_equal(find(l, "q")->findings[0].line, 7); /* "  addresses: [...]" */
	assert_int_equal(find(l, "g")->n_findings, 0);
	assert_int_equal(find(l, "p")->status, PK_LINT_PASS);
	assert_non_null(find(l, "p")->pool);
	assert_string_equal(find(l, "p")->pool->subnet, "10.1.0.0/24");
	for (size_t k = 0; k < 6; k++) {
		char name[8];
		snprintf(name, sizeof(name), "m%zu", k);
		assert_int_equal(find(l, name)->status, PK_LINT_PASS);
	}
	assert_int_equal(pk_lint_exit_code(l, false), 2);
	pk_lint_free(l);
	files_free(&f);
}

/* Threads change nothing a user sees: the report is the same, object for object. */
static void test_jobs_same_report(void **state)
{
	(void)state;
	struct files f;
	make_files(&f);
	struct pk_lint *one = lint_files(&f, 1);
	char *want = report(one);
	for (unsigned jobs = 2; jobs <= 5; jobs++) {
		struct pk_lint *l = lint_files(&f, jobs);
		char *got = report(l);
		assert_string_equal(got, want);
		free(got);
		pk_lint_free(l);
	}
	/* More threads than files, and more than the cap, are fine. */
	struct pk_lint *l = lint_files(&f, PK_LINT_MAX_JOBS + 10);
	char *got = report(l);
	assert_string_equal(got, want);
	free(got);
	pk_lint_free(l);
	free(want);
	pk_lint_free(one);
	files_free(&f);
}

/* A file over the size cap is a problem of its own; the others load. */
static void test_cap_per_file(void **state)
{
	(void)state;
	struct files f;
	make_files(&f);
	struct pk_lint *l = pk_lint_new();
	assert_non_null(l);
	pk_lint_set_max_file_size(l, 200); /* a.yaml and b.yaml are larger */
	assert_int_equal(pk_lint_add_files(l, f.paths, 3, 2), PK_OK);
	assert_int_equal(pk_lint_run(l), PK_OK);
	size_t np;
	const struct pk_lint_problem *p = pk_lint_problems(l, &np);
	assert_int_equal(np, 2);
	assert_non_null(strstr(p[0].source, "a.yaml"));
	assert_non_null(strstr(p[1].source, "b.yaml"));
	assert_non_null(strstr(p[0].message, "over the limit of 200 bytes"));
	assert_non_null(find(l, "q"));
	pk_lint_free(l);
	files_free(&f);
}

/* No paths: nothing to do, on any number of threads. */
static void test_no_files(void **state)
{
	(void)state;
	struct pk_lint *l = pk_lint_new();
	assert_non_null(l);
	assert_int_equal(pk_lint_add_files(l, NULL, 0, 4), PK_OK);
	assert_int_equal(pk_lint_run(l), PK_OK);
	assert_int_equal(pk_lint_get_totals(l).files, 0);
	assert_int_equal(pk_lint_exit_code(l, true), 0);
	pk_lint_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_across_files),
	    cmocka_unit_test(test_jobs_same_report),
	    cmocka_unit_test(test_cap_per_file),
	    cmocka_unit_test(test_no_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
