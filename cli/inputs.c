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

static void free_names(char ***names, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		free((*names)[i]);
	free(*names);
	*names = NULL;
	*n = 0;
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

/* An entry that could not be used: kept, and the walk goes on. */
static int add_bad(struct pk_inputs *in, const char *path, const char *message)
{
	if (pk_array_reserve(&in->bad, &in->cap_bad, in->n_bad + 1, sizeof(*in->bad)) != PK_OK)
		return PK_ERR_NOMEM;
	struct pk_inputs_bad *b = &in->bad[in->n_bad];
	b->path = strdup(path);
	b->message = strdup(message);
	if (b->path == NULL || b->message == NULL) {
		free(b->path);
		free(b->message);
		return PK_ERR_NOMEM;
	}
	in->n_bad++;
	return PK_OK;
}

/* Whether the directory st was walked before in this run; remembers it when not. */
static int seen_dir(struct pk_inputs *in, const struct stat *st, bool *seen)
{
	for (size_t i = 0; i < in->n_dirs; i++) {
		if (in->dirs[i].dev == st->st_dev && in->dirs[i].ino == st->st_ino) {
			*seen = true;
			return PK_OK;
		}
	}
	*seen = false;
	if (pk_array_reserve(&in->dirs, &in->cap_dirs, in->n_dirs + 1, sizeof(*in->dirs)) != PK_OK)
		return PK_ERR_NOMEM;
	in->dirs[in->n_dirs].dev = st->st_dev;
	in->dirs[in->n_dirs].ino = st->st_ino;
	in->n_dirs++;
	return PK_OK;
}

/* The names in dir but dot files, sorted so that order never depends on the file system. */
static int list_dir(const char *dir, char ***out, size_t *count, struct pk_err *err)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return fail_errno(err, dir, "list directory", errno);
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
	*out = names;
	*count = n;
	if (rc != PK_OK)
		free_names(out, count);
	return rc;
}

static int add_dir(struct pk_inputs *in, const char *dir, bool recursive, unsigned depth,
                   struct pk_err *err);

/* One entry of a directory: a manifest, a directory to walk, or a bad entry. */
static int add_entry(struct pk_inputs *in, const char *path, const char *name, bool recursive,
                     unsigned depth, struct pk_err *err)
{
	struct stat st;
	bool seen;
	if (stat(path, &st) != 0) {
		/* A dangling symlink among manifests is worth reporting. */
		if (!pk_inputs_is_manifest_name(name))
			return PK_OK;
		struct pk_err why = {{0}};
		fail_errno(&why, path, "read", errno);
		return add_bad(in, path, why.msg) == PK_OK
		           ? PK_OK
		           : pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	if (S_ISDIR(st.st_mode)) {
		if (!recursive)
			return PK_OK;
		if (seen_dir(in, &st, &seen) != PK_OK)
			return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		return seen ? PK_OK : add_dir(in, path, recursive, depth + 1, err);
	}
	return pk_inputs_is_manifest_name(name) ? push(in, path, err) : PK_OK;
}

static int add_dir(struct pk_inputs *in, const char *dir, bool recursive, unsigned depth,
                   struct pk_err *err)
{
	char **names = NULL;
	size_t n = 0;
	if (depth > PK_INPUTS_MAX_DEPTH)
		return pk_err_set(err, PK_ERR_INVALID, "%s: more than %d directory levels", dir,
		                  PK_INPUTS_MAX_DEPTH);
	int rc = list_dir(dir, &names, &n, err);
	if (rc != PK_OK) {
		if (depth == 0 || rc != PK_ERR_INVALID)
			return rc;
		/* A subdirectory that cannot be listed is a bad entry; the walk goes on. */
		return add_bad(in, dir, err->msg) == PK_OK
		           ? PK_OK
		           : pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; rc == PK_OK && i < n; i++) {
		char *path = join(dir, names[i]);
		rc = path ? add_entry(in, path, names[i], recursive, depth, err)
		          : pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		free(path);
	}
	free_names(&names, &n);
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
	else if (S_ISDIR(st.st_mode)) {
		bool seen;
		rc = seen_dir(in, &st, &seen);
		if (rc != PK_OK)
			rc = pk_err_set(err, rc, "out of memory");
		else if (!seen)
			rc = add_dir(in, arg, recursive, 0, err);
	} else
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
	for (size_t i = 0; i < in->n_bad; i++) {
		free(in->bad[i].path);
		free(in->bad[i].message);
	}
	free(in->bad);
	free(in->dirs);
	memset(in, 0, sizeof(*in));
}
