/* daemon.c - the shared start of poolkeeper's programs: flags, --help, logs, signals. */
#include "daemon.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"

/* SIGTERM and SIGINT, blocked by pk_daemon_start for pk_daemon_wait_signal. */
static sigset_t stop_signals;

static int usage_error(const struct pk_daemon *d, const struct pk_err *err)
{
	char hint[160];
	snprintf(hint, sizeof(hint), "see %s --help", d->program);
	pk_log_error("invalid command line", PK_LOG_STR("error", err->msg),
	             PK_LOG_STR("hint", hint));
	return 2;
}

/* --help or --version when given: the status to exit with; else PK_DAEMON_RUN. */
static int help_or_version(const struct pk_daemon *d, const struct pk_flag_value *vals)
{
	size_t help = pk_flags_find(d->flags, d->nflags, "help"),
	       version = pk_flags_find(d->flags, d->nflags, "version");
	if (help < d->nflags && pk_flags_get_bool(vals, help))
		pk_flags_print_help(stdout, d->usage, d->summary, d->flags, d->nflags);
	else if (version < d->nflags && pk_flags_get_bool(vals, version))
		printf("%s %s\n", d->program, d->version);
	else
		return PK_DAEMON_RUN;
	return fflush(stdout) == 0 ? 0 : 1;
}

/* --log-format and --v: the table has checked both already. */
static void set_up_log(const struct pk_daemon *d, const struct pk_flag_value *vals)
{
	size_t format = pk_flags_find(d->flags, d->nflags, "log-format"),
	       v = pk_flags_find(d->flags, d->nflags, "v");
	enum pk_log_format f = PK_LOG_TEXT;
	struct pk_err e;
	if (format < d->nflags &&
	    pk_log_parse_format(pk_flags_get_string(d->flags, vals, format), &f, &e) != PK_OK)
		f = PK_LOG_TEXT;
	pk_log_set_format(f);
	bool debug = v < d->nflags && pk_flags_get_num(vals, v) >= 1;
	pk_log_set_level(debug ? PK_LOG_DEBUG : PK_LOG_INFO);
}

int pk_daemon_start(const struct pk_daemon *d, int argc, char **argv)
{
	struct pk_flag_value *vals = calloc(d->nflags, sizeof(*vals));
	struct pk_err err = {{0}};
	if (vals == NULL) {
		pk_log_error("out of memory");
		return 1;
	}
	int status = PK_DAEMON_RUN;
	if (pk_flags_parse_only(d->flags, d->nflags, argc, argv, vals, &err) != PK_OK)
		status = usage_error(d, &err);
	else if ((status = help_or_version(d, vals)) == PK_DAEMON_RUN && d->options != NULL &&
	         d->options(d->opts, vals, argc, argv, &err) != PK_OK)
		status = usage_error(d, &err);
	if (status == PK_DAEMON_RUN)
		set_up_log(d, vals);
	free(vals);
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
