/*
 * inputs.h - turning lint's FILE|DIR|- arguments into the list of files to
 * read.
 *
 * A file named on the command line is read whatever its name, if it is a
 * regular file. "-" stands for standard input. A directory contributes its
 * *.yaml, *.yml and *.json entries, sorted by name, skipping names that
 * start with '.', and, with PK_INPUTS_RECURSIVE (lint's default;
 * --no-recursive turns it off), its subdirectories' in turn, so a
 * kustomize base and its overlays are found. Only regular files are
 * taken, so a FIFO named *.yaml in an untrusted tree cannot stall the run.
 * A symbolic link is followed only where it stays inside the argument's
 * tree (by real path), unless PK_INPUTS_FOLLOW_SYMLINKS; each directory is
 * walked once per run (by device and inode), so a link loop ends where it
 * started. An entry that cannot be used (a dangling *.yaml link, a link out
 * of the tree, a FIFO, a subdirectory that cannot be listed) is kept in
 * `bad` with the path and the reason, and the walk goes on.
 */
#ifndef PK_INPUTS_H
#define PK_INPUTS_H

#include <sys/types.h>

#include "pk.h"

#define PK_INPUTS_MAX_FILES 100000 /* per run */
#define PK_INPUTS_MAX_DEPTH 32     /* directory levels below an argument */

/* pk_inputs_add's flags */
#define PK_INPUTS_RECURSIVE       1u /* walk subdirectories */
#define PK_INPUTS_FOLLOW_SYMLINKS 2u /* links may lead out of the argument's tree */

struct pk_inputs_bad {
	char *path;    /* owned */
	char *message; /* owned; names the path and the reason */
};

struct pk_inputs {
	char **paths; /* owned */
	size_t n;
	size_t cap;
	struct pk_inputs_bad *bad; /* entries that could not be used */
	size_t n_bad, cap_bad;
	struct {
		dev_t dev;
		ino_t ino;
	} * dirs; /* directories walked */
	size_t n_dirs, cap_dirs;
};

/*
 * Appends what `arg` names, as `flags` (PK_INPUTS_*) say. A path that does
 * not exist, is neither a directory nor a regular file, or a directory that
 * cannot be listed is PK_ERR_INVALID; more than PK_INPUTS_MAX_FILES files is
 * PK_ERR_TOO_BIG with the path and the reason in err;
 * what was added before stays. `*found` (may be NULL) is set to the number
 * of files this argument contributed.
 */
PK_MUST_CHECK int pk_inputs_add(struct pk_inputs *in, const char *arg, unsigned flags,
                                size_t *found, struct pk_err *err);

/* True for names ending in .yaml, .yml or .json. */
bool pk_inputs_is_manifest_name(const char *name);

void pk_inputs_free(struct pk_inputs *in);

#endif
