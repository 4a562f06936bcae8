/*
 * inputs.h - turning lint's FILE|DIR|- arguments into the list of files to
 * read.
 *
 * A file named on the command line is read whatever its name. "-" stands
 * for standard input. A directory contributes its *.yaml, *.yml and *.json
 * entries, sorted by name, skipping names that start with '.'; it is not
 * descended into unless `recursive` is set (like kubectl's -R), so
 * `poolkeeper lint examples/` leaves examples/invalid/ alone.
 */
#ifndef PK_INPUTS_H
#define PK_INPUTS_H

#include "pk.h"

#define PK_INPUTS_MAX_FILES 100000 /* per run */
#define PK_INPUTS_MAX_DEPTH 32     /* directory levels below an argument */

struct pk_inputs {
	char **paths; /* owned */
	size_t n;
	size_t cap;
};

/*
 * Appends what `arg` names. A path that does not exist or a directory that
 * cannot be listed is PK_ERR_INVALID with the path and the reason in err,
 * more than PK_INPUTS_MAX_FILES files (or entries in one directory)
 * PK_ERR_TOO_BIG; what was added before stays. `*found` (may be NULL) is set to the number
 * of files this argument contributed.
 */
PK_MUST_CHECK int pk_inputs_add(struct pk_inputs *in, const char *arg, bool recursive,
                                size_t *found, struct pk_err *err);

/* True for names ending in .yaml, .yml or .json. */
bool pk_inputs_is_manifest_name(const char *name);

void pk_inputs_free(struct pk_inputs *in);

#endif
