/*
 * daemon.h - the start every poolkeeper program's main() shares, in one
 * place:
 *
 *   1. the command line against the program's flag table, followed by the
 *      flags every program has: --log-format, -v/--v, --version and
 *      -h/--help (last in --help too); a bad flag or value is logged as
 *      "invalid command line" (naming the flag, the value and "see
 *      <program> --help") and the program exits 2;
 *   2. --help (the table's help) or --version ("<program> <version>") on
 *      stdout, exit 0 (1 when stdout cannot be written);
 *   3. the program's own reading of the flags (names, the rules between
 *      flags), whose errors are usage errors as in 1;
 *   4. the log format (--log-format) and level (--v 1 or more: debug);
 *   5. signals: SIGPIPE ignored; for a daemon, SIGTERM and SIGINT blocked
 *      in every thread started afterwards, for pk_daemon_wait_signal.
 */
#ifndef PK_DAEMON_H
#define PK_DAEMON_H

#include <stdbool.h>
#include <stddef.h>

#include "flags.h"
#include "pk.h"

/* A parsed command line, as the program's options step reads it. */
struct pk_daemon_args {
	const struct pk_flag *table; /* the program's flags, then the common four */
	size_t n;
	/* vals[i] is table[i]'s value, so the program's own indices hold */
	const struct pk_flag_value *vals;
	int argc; /* the whole command line, for pk_flags_collect */
	char **argv;
};

/* Reads the parsed flags into the program's options (`opts`); an error is a usage error. */
typedef int (*pk_daemon_options_fn)(void *opts, const struct pk_daemon_args *args,
                                    struct pk_err *err);

/* In this order, so that a main() may spell one on a line or two. */
struct pk_daemon {
	const char *program;         /* "poolkeeper-controller": --version and the usage hint */
	const char *version;         /* PK_VERSION */
	const char *usage;           /* --help: "Usage: <usage>" */
	const char *summary;         /* --help: the paragraph after the usage */
	const struct pk_flag *flags; /* the program's own, without the common four */
	size_t nflags;
	pk_daemon_options_fn options; /* may be NULL */
	void *opts;
	bool signals; /* a daemon: SIGTERM and SIGINT end it (pk_daemon_wait_signal) */
};

/* pk_daemon_start's answer when the program goes on. */
#define PK_DAEMON_RUN (-1)

/*
 * Steps 1 to 5 above. Returns PK_DAEMON_RUN when the program goes on,
 * else the status main() returns: 0 after --help or --version, 1 when
 * stdout could not take them, 2 after a usage error.
 */
int pk_daemon_start(const struct pk_daemon *d, int argc, char **argv);

/*
 * A daemon's whole main(): pk_daemon_start, then run(ud) for the exit
 * status, then stop(ud) whatever run returned (it stops what run started),
 * then "stopped" logged when the status is 0.
 */
int pk_daemon_main(const struct pk_daemon *d, int argc, char **argv, int (*run)(void *ud),
                   void (*stop)(void *ud), void *ud);

/*
 * Waits up to timeout_ms (a negative one: for ever) for SIGTERM or SIGINT,
 * which pk_daemon_start blocked (a daemon's, `signals` true). Returns the
 * signal, or 0 when none came.
 */
int pk_daemon_wait_signal(long timeout_ms);

/* "SIGTERM" or "SIGINT", as the daemons log the signal that ends them. */
const char *pk_daemon_signal_name(int sig);

#endif
