/*
 * flags.h - command-line flags as one table (name, type, default, range,
 * help), parsed from argv and turned into --help text, so the help can never
 * disagree with what the parser accepts.
 *
 * Accepted spellings: --name value, --name=value, -x value, -xvalue,
 * bundled short switches (-vR), "--" to end the flags, and "-" as a
 * positional argument (standard input).
 */
#ifndef PK_FLAGS_H
#define PK_FLAGS_H

#include <stdio.h>

#include "pk.h"

enum pk_flag_type {
	PK_FLAG_BOOL,   /* a switch: --strict */
	PK_FLAG_COUNT,  /* a switch that counts: -v, -vv */
	PK_FLAG_CHOICE, /* one of `range`, "a|b|c" */
	PK_FLAG_STRING, /* any text */
};

struct pk_flag {
	const char *name; /* long name without the dashes */
	char short_name;  /* 0 when none */
	enum pk_flag_type type;
	const char *def;   /* default for CHOICE and STRING; NULL for switches */
	const char *range; /* CHOICE: allowed values as "a|b"; else NULL */
	const char *help;
};

struct pk_flag_value {
	bool set;
	unsigned count;  /* BOOL and COUNT: times given */
	const char *str; /* CHOICE and STRING: borrowed from argv */
};

/*
 * Parses argv[0..argc) (the caller skips the program and command names)
 * against `table`. `vals` has one entry per flag and is zeroed here.
 * Positional arguments are stored, in order, in `pos` (room for argc
 * entries, borrowed from argv). Returns PK_OK, or PK_ERR_INVALID with a
 * message naming the flag.
 */
PK_MUST_CHECK int pk_flags_parse(const struct pk_flag *table, size_t n, int argc,
                                 char *const argv[], struct pk_flag_value *vals, const char **pos,
                                 size_t *npos, struct pk_err *err);

/* The value of a CHOICE or STRING flag: what was given, else its default. */
const char *pk_flags_get_string(const struct pk_flag *table, const struct pk_flag_value *vals,
                                size_t i);

/* Writes "Usage: <usage>\n\n<summary>\n\nFlags:\n" and one entry per flag. */
void pk_flags_print_help(FILE *f, const char *usage, const char *summary,
                         const struct pk_flag *table, size_t n);

#endif
