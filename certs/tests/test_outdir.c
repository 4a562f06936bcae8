/*
 * test_outdir.c - the certificate files: modes whatever the umask, atomic
 * replacement (no temporary left behind, a reader holding the old file
 * still reads it whole), missing files, caps, folders created, and the
 * failures naming the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outdir.h"
#include "tempdir.h"

static char dir[256];

static int setup(void **state)
{
	(void)state;
	return pk_test_tempdir_make(dir, sizeof(dir), "pk-outdir");
}

static int teardown(void **state)
{
	(void)state;
	return pk_test_tempdir_remove(dir);
}

static mode_t mode_of(const char *name)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(stat(p, &st), 0);
	return st.st_mode & 07777;
}

static size_t entries(void)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static void test_write_read_modes(void **state)
{
	(void)state;
	struct pk_err err = {{0}};
	/* A permissive umask must not make a key readable, nor a strict one hide a certificate. */
	mode_t old = umask(0);
	assert_int_equal(pk_outdir_write(dir, "tls.key", "KEY", 3, PK_OUTDIR_KEY_MODE, &err),
	                 PK_OK);
	umask(077);
	assert_int_equal(pk_outdir_write(dir, "tls.crt", "CERT\n", 5, PK_OUTDIR_CERT_MODE, &err),
	                 PK_OK);
	umask(old);
	assert_int_equal(mode_of("tls.key"), 0600);
	assert_int_equal(mode_of("tls.crt"), 0644);

	char *data = NULL;
	size_t len = 0;
	mode_t m = 0;
	assert_int_equal(pk_outdir_read(dir, "tls.crt", &data, &len, &m, &err), PK_OK);
	assert_int_equal(len, 5);
	assert_string_equal(data, "CERT\n");
	assert_int_equal(m, 0644);
	free(data);

	/* A missing file is no error, just nothing. */
	assert_int_equal(pk_outdir_read(dir, "ca.crt", &data, &len, NULL, &err), PK_OK);
	assert_null(data);
	assert_int_equal(len, 0);
	assert_int_equal(entries(), 2);
}

static void test_atomic_replace(void **state)
{
	(void)state;
	struct pk_err err = {{0}};
	assert_int_equal(pk_outdir_write(dir, "tls.crt", "old", 3, 0644, &err), PK_OK);
	char p[512];
	snprintf(p, sizeof(p), "%s/tls.crt", dir);
	int fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	struct stat before, after;
	assert_int_equal(fstat(fd, &before), 0);
	assert_int_equal(pk_outdir_write(dir, "tls.crt", "new!", 4, 0644, &err), PK_OK);
	/* A reader that opened the old file still reads it whole: it was renamed over. */
	char buf[8] = {0};
	assert_int_equal(read(fd, buf, sizeof(buf)), 3);
	assert_string_equal(buf, "old");
	close(fd);
	assert_int_equal(stat(p, &after), 0);
	assert_true(before.st_ino != after.st_ino);
	char *data = NULL;
	size_t len = 0;
	assert_int_equal(pk_outdir_read(dir, "tls.crt", &data, &len, NULL, &err), PK_OK);
	assert_string_equal(data, "new!");
	free(data);
	/* No temporary file is left behind. */
	assert_int_equal(entries(), 1);
	/* A mode is narrowed in place. */
	assert_int_equal(pk_outdir_write(dir, "k", "x", 1, 0644, &err), PK_OK);
	assert_int_equal(pk_outdir_chmod(dir, "k", 0600, &err), PK_OK);
	assert_int_equal(mode_of("k"), 0600);
}

static void test_prepare(void **state)
{
	(void)state;
	struct pk_err err = {{0}};
	char sub[512];
	snprintf(sub, sizeof(sub), "%s/a/b/c", dir);
	assert_int_equal(pk_outdir_prepare(sub, &err), PK_OK);
	struct stat st;
	assert_int_equal(stat(sub, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* Again: already there. */
	assert_int_equal(pk_outdir_prepare(sub, &err), PK_OK);
	/* A file where the folder should be. */
	assert_int_equal(pk_outdir_write(dir, "file", "x", 1, 0644, &err), PK_OK);
	snprintf(sub, sizeof(sub), "%s/file", dir);
	assert_int_equal(pk_outdir_prepare(sub, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "is not a folder"));
	snprintf(sub, sizeof(sub), "%s/file/below", dir);
	assert_int_equal(pk_outdir_prepare(sub, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "cannot create folder"));
	assert_int_equal(pk_outdir_prepare("", &err), PK_ERR_INVALID);
}

static void test_failures(void **state)
{
	(void)state;
	struct pk_err err = {{0}};
	char *data = NULL;
	size_t len = 0;
	/* Writing into a folder that does not exist names the file. */
	char missing[512];
	snprintf(missing, sizeof(missing), "%s/nope", dir);
	assert_int_equal(pk_outdir_write(missing, "tls.key", "k", 1, 0600, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "nope/tls.key"));
	/* A folder where a file should be. */
	char sub[512];
	snprintf(sub, sizeof(sub), "%s/ca.crt", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(pk_outdir_read(dir, "ca.crt", &data, &len, NULL, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "not a regular file"));
	/* A file over the cap is refused, not read. */
	snprintf(sub, sizeof(sub), "%s/big", dir);
	FILE *f = fopen(sub, "w");
	assert_non_null(f);
	assert_int_equal(fseek(f, PK_OUTDIR_MAX_FILE, SEEK_SET), 0);
	fputc('x', f);
	fclose(f);
	assert_int_equal(pk_outdir_read(dir, "big", &data, &len, NULL, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "larger than"));
	assert_null(data);
	/* Exactly the cap is fine. */
	assert_int_equal(truncate(sub, PK_OUTDIR_MAX_FILE), 0);
	assert_int_equal(pk_outdir_read(dir, "big", &data, &len, NULL, &err), PK_OK);
	assert_int_equal(len, PK_OUTDIR_MAX_FILE);
	free(data);
	/* An unreadable file (when not root: root reads anything). */
	if (geteuid() != 0) {
		assert_int_equal(chmod(sub, 0), 0);
		assert_int_equal(pk_outdir_read(dir, "big", &data, &len, NULL, &err),
		                 PK_ERR_INVALID);
		assert_non_null(strstr(err.msg, "cannot read"));
	}
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(test_write_read_modes),
	    T(test_atomic_replace),
	    T(test_prepare),
	    T(test_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
