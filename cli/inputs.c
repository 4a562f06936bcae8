/* inputs.c - expanding lint's arguments into files; directory walks are sorted and bounded. */
#include "inputs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "manifest.h"

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

/* One argument's walk: where it started (resolved) and how it goes. */
struct walk {
	struct pk_inputs *in;
	unsigned flags; /* PK_INPUTS_* */
	char *root;     /* the argument's real path; NULL with PK_INPUTS_FOLLOW_SYMLINKS */
	struct pk_err *err;
};

static int bad_entry(const struct walk *w, const char *path, const char *message)
{
	return add_bad(w->in, path, message) == PK_OK
	           ? PK_OK
	           : pk_err_set(w->err, PK_ERR_NOMEM, "out of memory");
}

/* A bad entry whose message is formatted; its buffer holds two whole paths and leaves
 * the stack before the walk goes deeper. */
PK_PRINTF(3, 4)
__attribute__((noinline)) static int bad_entryf(const struct walk *w, const char *path,
                                                const char *fmt, ...)
{
	char message[2 * PATH_MAX + 256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	return bad_entry(w, path, message);
}

/*
 * A symbolic link that leads out of the argument's tree is not followed:
 * `*out` is then set, and the link reported if the walk would have read it
 * or entered it. A tree from "/" holds everything; a dangling link is left
 * for stat to report.
 */
__attribute__((noinline)) static int link_out_of_tree(const struct walk *w, const char *path,
                                                      bool manifest, bool *out)
{
	*out = false;
	char *real = realpath(path, NULL);
	if (real == NULL)
		return PK_OK;
	size_t n = strlen(w->root);
	*out = strcmp(w->root, "/") != 0 &&
	       (strncmp(real, w->root, n) != 0 || (real[n] != '/' && real[n] != '\0'));
	struct stat st;
	bool dir = stat(real, &st) == 0 && S_ISDIR(st.st_mode);
	int rc = PK_OK;
	if (*out && (manifest || (dir && (w->flags & PK_INPUTS_RECURSIVE))))
		rc = bad_entryf(w, path,
		                "%s: skipped: a symbolic link to %s, outside %s "
		                "(--follow-symlinks reads it)",
		                path, real, w->root);
	free(real);
	return rc;
}

static int add_dir(const struct walk *w, const char *dir, unsigned depth);

/*
 * One entry of a directory: a manifest, a directory to walk, or a bad entry.
 * Only regular files are read, so that a FIFO named *.yaml cannot stall the
 * run; a link out of the tree is not followed unless the flags say so.
 */
static int add_entry(const struct walk *w, const char *path, const char *name, unsigned depth)
{
	struct stat st;
	bool seen, manifest = pk_inputs_is_manifest_name(name);
	if (lstat(path, &st) != 0)
		return PK_OK; /* gone since it was listed */
	if (S_ISLNK(st.st_mode) && w->root != NULL) {
		bool out;
		int rc = link_out_of_tree(w, path, manifest, &out);
		if (rc != PK_OK || out)
			return rc;
	}
	if (stat(path, &st) != 0) {
		/* A dangling symlink among manifests is worth reporting. */
		if (!manifest)
			return PK_OK;
		struct pk_err e = {{0}};
		fail_errno(&e, path, "read", errno);
		return bad_entry(w, path, e.msg);
	}
	if (S_ISDIR(st.st_mode)) {
		if (!(w->flags & PK_INPUTS_RECURSIVE))
			return PK_OK;
		if (seen_dir(w->in, &st, &seen) != PK_OK)
			return pk_err_set(w->err, PK_ERR_NOMEM, "out of memory");
		return seen ? PK_OK : add_dir(w, path, depth + 1);
	}
	if (!manifest)
		return PK_OK;
	if (!S_ISREG(st.st_mode))
		return bad_entryf(w, path, "%s: skipped: %s, not a regular file", path,
		                  pk_manifest_file_kind(st.st_mode));
	return push(w->in, path, w->err);
}

static int add_dir(const struct walk *w, const char *dir, unsigned depth)
{
	struct pk_err *err = w->err;
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
		return bad_entry(w, dir, err->msg);
	}
	for (size_t i = 0; rc == PK_OK && i < n; i++) {
		char *path = join(dir, names[i]);
		rc = path ? add_entry(w, path, names[i], depth)
		          : pk_err_set(err, PK_ERR_NOMEM, "out of memory");
		free(path);
	}
	free_names(&names, &n);
	return rc;
}

/* A directory argument: its tree, from its real path unless links may leave it. */
static int add_tree(struct pk_inputs *in, const char *arg, const struct stat *st, unsigned flags,
                    struct pk_err *err)
{
	bool seen;
	struct walk w = {.in = in, .flags = flags, .err = err};
	if (seen_dir(in, st, &seen) != PK_OK)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	if (seen)
		return PK_OK;
	if (!(flags & PK_INPUTS_FOLLOW_SYMLINKS) && (w.root = realpath(arg, NULL)) == NULL)
		return errno == ENOMEM ? pk_err_set(err, PK_ERR_NOMEM, "out of memory")
		                       : fail_errno(err, arg, "resolve", errno);
	int rc = add_dir(&w, arg, 0);
	free(w.root);
	return rc;
}

int pk_inputs_add(struct pk_inputs *in, const char *arg, unsigned flags, size_t *found,
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
		rc = add_tree(in, arg, &st, flags, err);
	else if (!S_ISREG(st.st_mode))
		rc = pk_err_set(err, PK_ERR_INVALID,
		                "%s: skipped: %s, not a regular file (pipe it to - instead)", arg,
		                pk_manifest_file_kind(st.st_mode));
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
	for (size_t i = 0; i < in->n_bad; i++) {
		free(in->bad[i].path);
		free(in->bad[i].message);
	}
	free(in->bad);
	free(in->dirs);
	memset(in, 0, sizeof(*in));
}
