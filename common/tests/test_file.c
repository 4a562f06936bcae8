/*
 * test_file.c - whole files under a byte cap: a regular file at, under and
 * over the cap, a pipe at and over the cap, an empty file, and the errors
 * (missing file, a folder) carrying errno.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "file.h"
#include "tempdir.h"

static char dir[256];

static int setup(void **state)
{
	(void)state;
	return pk_test_tempdir_make(dir, sizeof(dir), "pk-file");
}

static int teardown(void **state)
{
	(void)state;
	return pk_test_tempdir_remove(dir);
}

/* dir/name holding n bytes of 'a'; its path in path. */
static void make_file(const char *name, size_t n, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (size_t i = 0; i < n; i++)
		fputc('a', f);
	assert_int_equal(fclose(f), 0);
}

static void test_regular_file(void **state)
{
	(void)state;
	char path[512], *buf = NULL;
	size_t len = 0;
	int e = -1;
	make_file("ten", 10, path, sizeof(path));
	/* under and exactly at the cap: read whole, NUL-terminated */
	assert_int_equal(pk_read_file(path, 11, &buf, &len, &e), PK_OK);
	assert_int_equal(len, 10);
	assert_string_equal(buf, "aaaaaaaaaa");
	assert_int_equal(e, 0);
	free(buf);
	assert_int_equal(pk_read_file(path, 10, &buf, &len, &e), PK_OK);
	assert_int_equal(len, 10);
	free(buf);
	/* one byte over: refused before reading, nothing handed out */
	assert_int_equal(pk_read_file(path, 9, &buf, &len, &e), PK_ERR_TOO_BIG);
	assert_null(buf);
	assert_int_equal(len, 0);
}

static void test_empty_file(void **state)
{
	(void)state;
	char path[512], *buf = NULL;
	size_t len = 1;
	int e = -1;
	make_file("empty", 0, path, sizeof(path));
	assert_int_equal(pk_read_file(path, 0, &buf, &len, &e), PK_OK);
	assert_non_null(buf);
	assert_string_equal(buf, "");
	assert_int_equal(len, 0);
	free(buf);
}

static void test_errors(void **state)
{
	(void)state;
	char path[512], *buf = NULL;
	size_t len = 0;
	int e = 0;
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(pk_read_file(path, 100, &buf, &len, &e), PK_ERR_IO);
	assert_int_equal(e, ENOENT);
	assert_null(buf);
	e = 0;
	assert_int_equal(pk_read_file(dir, 100, &buf, &len, &e), PK_ERR_IO);
	assert_int_equal(e, EISDIR);
	assert_null(buf);
	e = 0;
	assert_int_equal(pk_read_fd(-1, 100, &buf, &len, &e), PK_ERR_IO);
	assert_int_equal(e, EBADF);
}

/* Reads n bytes written by a child into a pipe, capped at max. */
static int read_pipe(size_t n, size_t max, char **buf, size_t *len)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		char chunk[4096];
		memset(chunk, 'b', sizeof(chunk));
		for (size_t done = 0; done < n;) {
			size_t k = n - done < sizeof(chunk) ? n - done : sizeof(chunk);
			ssize_t w = write(p[1], chunk, k);
			if (w <= 0)
				_exit(0); /* the reader stopped at its cap */
			done += (size_t)w;
		}
		_exit(0);
	}
	close(p[1]);
	int e = 0;
	int rc = pk_read_fd(p[0], max, buf, len, &e);
	close(p[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return rc;
}

static void test_pipe(void **state)
{
	(void)state;
	char *buf = NULL;
	size_t len = 0;
	/* more than one 64 KiB step, exactly at the cap */
	assert_int_equal(read_pipe(200000, 200000, &buf, &len), PK_OK);
	assert_int_equal(len, 200000);
	assert_int_equal(buf[199999], 'b');
	assert_int_equal(buf[200000], '\0');
	free(buf);
	/* one byte over */
	assert_int_equal(read_pipe(200001, 200000, &buf, &len), PK_ERR_TOO_BIG);
	assert_null(buf);
	assert_int_equal(len, 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(test_regular_file),
	    T(test_empty_file),
	    T(test_errors),
	    T(test_pipe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
