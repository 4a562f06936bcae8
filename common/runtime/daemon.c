/* daemon.c - the shared start of poolkeeper's programs: flags, --help, logs, signals. */
#include "daemon.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

/* SIGTERM and SIGINT, blocked by pk_daemon_start for pk_daemon_wait_signal. */
static sigset_t stop_signals;

/* The flags every program has, after its own. */
enum { C_LOG_FORMAT, C_V, C_VERSION, C_HELP, C_COUNT };

static const struct pk_flag common_flags[C_COUNT] = {
    [C_LOG_FORMAT] = {"log-format", 0, PK_FLAG_CHOICE, "text", "text|json",
                      "log lines as key=value text or JSON"},
    [C_V] = {"v", 'v', PK_FLAG_UINT, "0", "0..10",
             "log verbosity: 1 or more also logs debug events"},
    [C_VERSION] = {"version", 0, PK_FLAG_BOOL, NULL, NULL, "print the version and exit"},
    [C_HELP] = {"help", 'h', PK_FLAG_BOOL, NULL, NULL, "print this help and exit"},
};

/* One command line: the program's table and the common flags, and their values. */
struct line {
	struct pk_flag *table;
	struct pk_flag_value *vals;
	size_t n;
	const struct pk_flag_value *common; /* vals + the program's count */
};

static int usage_error(const struct pk_daemon *d, const struct pk_err *err)
{
	char hint[160];
	snprintf(hint, sizeof(hint), "see %s --help", d->program);
	pk_log_error("invalid command line", PK_LOG_STR("error", err->msg),
	             PK_LOG_STR("hint", hint));
	return 2;
}

/* --help or --version when given: the status to exit with; else PK_DAEMON_RUN. */
static int help_or_version(const struct pk_daemon *d, const struct line *l)
{
	if (pk_flags_get_bool(l->common, C_HELP))
		pk_flags_print_help(stdout, d->usage, d->summary, l->table, l->n);
	else if (pk_flags_get_bool(l->common, C_VERSION))
		printf("%s %s\n", d->program, d->version);
	else
		return PK_DAEMON_RUN;
	return fflush(stdout) == 0 ? 0 : 1;
}

/* --log-format and --v: the table has checked both already. */
static void set_up_log(const struct line *l)
{
	enum pk_log_format f = PK_LOG_TEXT;
	struct pk_err e;
	if (pk_log_parse_format(pk_flags_get_string(common_flags, l->common, C_LOG_FORMAT), &f,
	                        &e) != PK_OK)
		f = PK_LOG_TEXT;
	pk_log_set_format(f);
	pk_log_set_level(pk_flags_get_num(l->common, C_V) >= 1 ? PK_LOG_DEBUG : PK_LOG_INFO);
}

/* Parses the command line, --help and --version, the program's options: as pk_daemon_start. */
static int read_line(const struct pk_daemon *d, const struct line *l, int argc, char **argv)
{
	struct pk_err err = {{0}};
	int status = PK_DAEMON_RUN;
	if (pk_flags_parse_only(l->table, l->n, argc, argv, l->vals, &err) != PK_OK)
		status = usage_error(d, &err);
	else if ((status = help_or_version(d, l)) == PK_DAEMON_RUN && d->options != NULL) {
		struct pk_daemon_args a = {l->table, l->n, l->vals, argc, argv};
		if (d->options(d->opts, &a, &err) != PK_OK)
			status = usage_error(d, &err);
	}
	if (status == PK_DAEMON_RUN)
		set_up_log(l);
	return status;
}

int pk_daemon_start(const struct pk_daemon *d, int argc, char **argv)
{
	struct line l = {.n = d->nflags + C_COUNT};
	l.table = calloc(l.n, sizeof(*l.table));
	l.vals = calloc(l.n, sizeof(*l.vals));
	if (l.table == NULL || l.vals == NULL) {
		free(l.table);
		free(l.vals);
		pk_log_error("out of memory");
		return 1;
	}
	memcpy(l.table, d->flags, d->nflags * sizeof(*l.table));
	memcpy(l.table + d->nflags, common_flags, sizeof(common_flags));
	l.common = l.vals + d->nflags;
	int status = read_line(d, &l, argc, argv);
	free(l.table);
	free(l.vals);
	if (status != PK_DAEMON_RUN)
		return status;
	if (d->signals) {
		/* Every thread started from here on inherits this mask; main waits for them. */
		sigemptyset(&stop_signals);
		sigaddset(&stop_signals, SIGTERM);
		sigaddset(&stop_signals, SIGINT);
		pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
	}
	signal(SIGPIPE, SIG_IGN);
	return PK_DAEMON_RUN;
}

int pk_daemon_main(const struct pk_daemon *d, int argc, char **argv, int (*run)(void *ud),
                   void (*stop)(void *ud), void *ud)
{
	int status = pk_daemon_start(d, argc, argv);
	if (status != PK_DAEMON_RUN)
		return status;
	status = run(ud);
	stop(ud);
	if (status == 0)
		pk_log_info("stopped");
	return status;
}

int pk_daemon_wait_signal(long timeout_ms)
{
	int sig = 0;
	if (timeout_ms < 0) {
		while (sigwait(&stop_signals, &sig) != 0)
			;
		return sig;
	}
	struct timespec t = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
	sig = sigtimedwait(&stop_signals, NULL, &t);
	return sig == SIGTERM || sig == SIGINT ? sig : 0;
}

const char *pk_daemon_signal_name(int sig)
{
	return sig == SIGTERM ? "SIGTERM" : "SIGINT";
}
