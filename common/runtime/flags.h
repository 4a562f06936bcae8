/*
 * flags.h - command-line flags as one table (name, type, default, range,
 * help), parsed from argv and turned into --help text, so the help can never
 * disagree with what the parser accepts.
 *
 * Accepted spellings: --name value, --name=value, -x value, -xvalue,
 * bundled short switches (-vR), "--" to end the flags, and "-" as a
 * positional argument (standard input). A boolean is true when given bare
 * (--leader-elect) and takes a value only after "=" (--leader-elect=false),
 * as Go's flag package reads them: it never takes the next argument.
 *
 * Values are checked while parsing, so an error names the flag and the
 * value before the program does anything: numbers and durations against
 * the flag's range, choices against their words.
 */
#ifndef PK_FLAGS_H
#define PK_FLAGS_H

#include <stdio.h>

#include "parse.h"
#include "pk.h"

enum pk_flag_type {
	PK_FLAG_BOOL,     /* --strict, --strict=true, --strict=false; `def` "true" or NULL */
	PK_FLAG_COUNT,    /* a switch that counts: -v, -vv */
	PK_FLAG_CHOICE,   /* one of `range`, "a|b|c" */
	PK_FLAG_STRING,   /* any text; `range`, when set, names it in --help ("HOST:PORT") */
	PK_FLAG_UINT,     /* a decimal in `range`, "min..max" */
	PK_FLAG_DURATION, /* a Go duration ("15s", "1m30s") in `range`, "min..max" ("1s..10m") */
};

struct pk_flag {
	const char *name; /* long name without the dashes */
	char short_name;  /* 0 when none */
	enum pk_flag_type type;
	const char *def;   /* default as text; NULL for switches and for no default */
	const char *range; /* see the types; shown by --help */
	const char *help;
};

struct pk_flag_value {
	bool set;        /* given on the command line */
	unsigned count;  /* BOOL and COUNT: times given */
	const char *str; /* CHOICE, STRING, UINT, DURATION: borrowed from argv */
	bool on;         /* BOOL: the value, its default when not given */
	uint64_t num;    /* UINT: the value; DURATION: nanoseconds; the default when not given */
};

/*
 * Flags several poolkeeper programs share, spelled once: use them as
 * initialisers in a program's table, e.g. `[F_KUBECONFIG] =
 * PK_FLAG_DEF_KUBECONFIG,`. The flags every program has (--log-format, --v,
 * --version, --help) are daemon.h's.
 */
#define PK_FLAG_DEF_KUBECONFIG                                                                    \
	{                                                                                         \
		"kubeconfig", 0, PK_FLAG_STRING, NULL, "FILE",                                    \
		    "kubeconfig for API access; else $KUBECONFIG, else the pod's service account" \
	}
/* -h/--help of the poolkeeper CLI's commands (the daemons' is daemon.h's). */
#define PK_FLAG_DEF_HELP                                                         \
	{                                                                        \
		"help", 'h', PK_FLAG_BOOL, NULL, NULL, "show this help and exit" \
	}
#define PK_FLAG_DEF_HEALTH_ADDR                                                        \
	{                                                                              \
		"health-probe-bind-address", 0, PK_FLAG_STRING, ":8081", "HOST:PORT",  \
		    "plain HTTP listener for /healthz and /readyz; empty HOST: every " \
		    "address, port 0: any free port"                                   \
	}
#define PK_FLAG_DEF_METRICS_ADDR                                                 \
	{                                                                        \
		"metrics-bind-address", 0, PK_FLAG_STRING, ":8080", "HOST:PORT", \
		    "plain HTTP listener for /metrics; 0 turns metrics off"      \
	}

/*
 * Parses argv[0..argc) (the caller skips the program and command names)
 * against `table`. `vals` has one entry per flag and is filled here, the
 * defaults first. Positional arguments are stored, in order, in `pos`
 * (room for argc entries, borrowed from argv). Returns PK_OK, or
 * PK_ERR_INVALID with a message naming the flag and the value (a table
 * whose default or range does not parse is reported the same way).
 */
PK_MUST_CHECK int pk_flags_parse(const struct pk_flag *table, size_t n, int argc,
                                 char *const argv[], struct pk_flag_value *vals, const char **pos,
                                 size_t *npos, struct pk_err *err);

/*
 * A daemon's command line: argv[0] is the program, every other argument a
 * flag. Like pk_flags_parse on argv + 1, but a positional argument is an
 * error naming it. Returns PK_OK, PK_ERR_INVALID or PK_ERR_NOMEM.
 */
PK_MUST_CHECK int pk_flags_parse_only(const struct pk_flag *table, size_t n, int argc,
                                      char *const argv[], struct pk_flag_value *vals,
                                      struct pk_err *err);

/*
 * Every value a repeatable flag (`idx`, one that takes a value) was given,
 * in order, from a daemon's command line (argv[0] the program) that
 * pk_flags_parse_only has accepted: pk_flags_parse keeps only the last.
 * The first `max` go into out; *count says how many were given, beyond
 * `max` too. Returns PK_OK, PK_ERR_INVALID or PK_ERR_NOMEM.
 */
PK_MUST_CHECK int pk_flags_collect(const struct pk_flag *table, size_t n, int argc,
                                   char *const argv[], size_t idx, const char **out, size_t max,
                                   size_t *count, struct pk_err *err);

/* The text of a flag: what was given, else its default. */
const char *pk_flags_get_string(const struct pk_flag *table, const struct pk_flag_value *vals,
                                size_t i);

/* A BOOL flag's value. */
bool pk_flags_get_bool(const struct pk_flag_value *vals, size_t i);

/* A UINT flag's value, or a DURATION flag's in nanoseconds. */
uint64_t pk_flags_get_num(const struct pk_flag_value *vals, size_t i);

/*
 * A STRING flag's value (or default) as HOST:PORT (pk_parse_hostport). With
 * `off` not NULL, the value "0" is accepted too and sets *off (a listener
 * turned off, as controller-runtime's --metrics-bind-address=0). The error
 * names the flag and the value.
 */
PK_MUST_CHECK int pk_flags_get_hostport(const struct pk_flag *table,
                                        const struct pk_flag_value *vals, size_t i,
                                        struct pk_hostport *out, bool *off, struct pk_err *err);

/*
 * Writes "Usage: <usage>\n\n<summary>\n\nFlags:\n" and one entry per flag:
 * its spellings, help, range and default.
 */
void pk_flags_print_help(FILE *f, const char *usage, const char *summary,
                         const struct pk_flag *table, size_t n);

#endif
