/* inputs.c - expanding lint's arguments into files; directory walks are sorted and bounded. */
#include "inputs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"

static int push(struct pk_inputs *in, const char *path, struct pk_err *err)
{
	if (in->n >= PK_INPUTS_MAX_FILES)
		return pk_err_set(err, PK_ERR_TOO_BIG, "more than %d files to lint",
		                  PK_INPUTS_MAX_FILES);
	if (pk_array_reserve(&in->paths, &in->cap, in->n + 1, sizeof(*in->paths)) != PK_OK)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	char *copy = strdup(path);
	if (copy == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	in->paths[in->n++] = copy;
	return PK_OK;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n > m && !strcmp(s + n - m, suffix);
}

bool pk_inputs_is_manifest_name(const char *name)
{
	return ends_with(name, ".yaml") || ends_with(name, ".yml") || ends_with(name, ".json");
}

static int fail_errno(struct pk_err *err, const char *path, const char *what, int e)
{
	char reason[128];
	if (strerror_r(e, reason, sizeof(reason)) != 0)
		snprintf(reason, sizeof(reason), "error %d", e);
	return pk_err_set(err, PK_ERR_INVALID, "%s: cannot %s: %s", path, what, reason);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	bool slash = dl > 0 && dir[dl - 1] == '/';
	size_t len = dl + strlen(name) + 2;
	char *p = malloc(len);
	if (p != NULL)
		snprintf(p, len, "%s%s%s", dir, slash ? "" : "/", name);
	return p;
}

static int add_dir(struct pk_inputs *in, const char *dir, bool recursive, unsigned depth,
                   struct pk_err *err)
{
	if (depth > PK_INPUTS_MAX_DEPTH)
		return pk_err_set(err, PK_ERR_INVALID, "%s: more than %d directory levels", dir,
		                  PK_INPUTS_MAX_DEPTH);
	DIR *d = opendir(dir);
	if (d == NULL)
		return fail_errno(err, dir, "list directory", errno);

	/* Collect and sort the names first so output order never depends on
	 * the file system. */
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = PK_OK;
	struct dirent *e;
	errno = 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n >= PK_INPUTS_MAX_FILES) {
			rc = pk_err_set(err, PK_ERR_TOO_BIG, "%s: more than %d entries", dir,
			                PK_INPUTS_MAX_FILES);
			break;
		}
		if (pk_array_reserve(&names, &cap, n + 1, sizeof(*names)) != PK_OK) {
			rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
			break;
		}
		names[n] = strdup(e->d_name);
		if (names[n] == NULL) {
			rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
			break;
		}
		n++;
	}
	if (rc == PK_OK && errno != 0)
		rc = fail_errno(err, dir, "list directory", errno);
	closedir(d);
	if (rc == PK_OK && n > 1)
		qsort(names, n, sizeof(*names), cmp_names);

	for (size_t i = 0; rc == PK_OK && i < n; i++) {
		char *path = join(dir, names[i]);
		if (path == NULL) {
			rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
			break;
		}
		struct stat st;
		if (stat(path, &st) != 0) {
			/* A dangling symlink among manifests is worth reporting. */
			if (pk_inputs_is_manifest_name(names[i]))
				rc = fail_errno(err, path, "read", errno);
		} else if (S_ISDIR(st.st_mode)) {
			if (recursive)
				rc = add_dir(in, path, recursive, depth + 1, err);
		} else if (pk_inputs_is_manifest_name(names[i])) {
			rc = push(in, path, err);
		}
		free(path);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

int pk_inputs_add(struct pk_inputs *in, const char *arg, bool recursive, size_t *found,
                  struct pk_err *err)
{
	size_t before = in->n;
	int rc;
	struct stat st;
	if (!strcmp(arg, "-"))
		rc = push(in, arg, err);
	else if (stat(arg, &st) != 0)
		rc = fail_errno(err, arg, "read", errno);
	else if (S_ISDIR(st.st_mode))
		rc = add_dir(in, arg, recursive, 0, err);
	else
		rc = push(in, arg, err);
	if (found != NULL)
		*found = in->n - before;
	return rc;
}

void pk_inputs_free(struct pk_inputs *in)
{
	if (in == NULL)
		return;
	for (size_t i = 0; i < in->n; i++)
		free(in->paths[i]);
	free(in->paths);
	in->paths = NULL;
	in->n = in->cap = 0;
}
