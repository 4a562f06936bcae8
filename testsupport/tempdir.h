/*
 * tempdir.h - a fresh temporary folder for a test ($TMPDIR, else /tmp:
 * "<prefix>-XXXXXX"), and its removal with everything in it (symbolic
 * links are removed, never followed). Include after <cmocka.h>.
 */
#ifndef PK_TEST_TEMPDIR_H
#define PK_TEST_TEMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Makes the folder, its path into dir (len bytes); 0, or -1 when it cannot. */
static inline int pk_test_tempdir_make(char *dir, size_t len, const char *prefix)
{
	const char *tmp = getenv("TMPDIR");
	int n = snprintf(dir, len, "%s/%s-XXXXXX", tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp",
	                 prefix);
	if (n < 0 || (size_t)n >= len)
		return -1;
	return mkdtemp(dir) != NULL ? 0 : -1;
}

/* Removes path and everything under it (rm -rf); 0, or -1 when something stays. */
static inline int pk_test_tempdir_remove(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	DIR *d = opendir(path);
	if (d == NULL)
		return -1;
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char sub[4096];
		int n = snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		if (n < 0 || (size_t)n >= sizeof(sub) || pk_test_tempdir_remove(sub) != 0)
			rc = -1;
	}
	closedir(d);
	return rmdir(path) == 0 ? rc : -1;
}

#endif
