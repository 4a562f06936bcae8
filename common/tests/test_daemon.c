/*
 * test_daemon.c - the start poolkeeper's programs share: usage errors
 * (exit 2, one log line naming the flag and the hint), --help with the
 * ranges and --version on stdout (exit 0; 1 when stdout cannot be written),
 * the program's own options, the log format and level, and the stop
 * signals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

enum { F_WORKERS, F_COUNT };

static const struct pk_flag flags[F_COUNT] = {
    [F_WORKERS] = {"workers", 0, PK_FLAG_UINT, "2", "1..64", "workers"},
};

struct opts {
	unsigned calls;
	uint64_t workers;
	bool refuse;
};

static int read_opts(void *ud, const struct pk_daemon_args *args, struct pk_err *err)
{
	struct opts *o = ud;
	o->calls++;
	o->workers = pk_flags_get_num(args->vals, F_WORKERS);
	/* The common flags follow the program's, in the table handed over. */
	assert_int_equal(args->n, F_COUNT + 4);
	assert_string_equal(args->table[F_COUNT].name, "log-format");
	assert_string_equal(args->table[args->n - 1].name, "help");
	if (o->refuse)
		return pk_err_set(err, PK_ERR_INVALID, "--workers (%llu) is refused here",
		                  (unsigned long long)o->workers);
	return PK_OK;
}

static struct opts opts;
static const struct pk_daemon daemon_spec = {.program = "pk-test",
                                             .version = "1.2.3",
                                             .usage = "pk-test [flags]",
                                             .summary = "A test daemon.",
                                             .flags = flags,
                                             .nflags = F_COUNT,
                                             .options = read_opts,
                                             .opts = &opts,
                                             .signals = true};

/* What one start wrote: its status, stdout and log lines (with a line "started" after it). */
struct outcome {
	int status;
	char out[8192];
	char log[4096];
};

static void read_all(int fd, char *buf, size_t cap)
{
	lseek(fd, 0, SEEK_SET);
	ssize_t n = read(fd, buf, cap - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
}

/*
 * pk_daemon_start on argv (NULL-terminated), with stdout to `out_path` (a
 * temporary file when NULL) and the program's options step refusing when
 * `refuse`.
 */
static void start_as(struct outcome *o, const char *out_path, bool refuse, const char *const *argv)
{
	char lt[] = "/tmp/pk-daemon-log-XXXXXX", ot[] = "/tmp/pk-daemon-out-XXXXXX";
	int lfd = mkstemp(lt), ofd = out_path ? open(out_path, O_WRONLY) : mkstemp(ot);
	assert_true(lfd >= 0 && ofd >= 0);
	unlink(lt);
	if (out_path == NULL)
		unlink(ot);
	int argc = 0;
	while (argv[argc] != NULL)
		argc++;
	memset(&opts, 0, sizeof(opts));
	opts.refuse = refuse;
	pk_log_set_fd(lfd);
	fflush(stdout);
	int saved = dup(1);
	dup2(ofd, 1);
	o->status = pk_daemon_start(&daemon_spec, argc, (char **)(uintptr_t)argv);
	if (o->status == PK_DAEMON_RUN)
		pk_log_info("started");
	__fpurge(stdout); /* what /dev/full did not take */
	clearerr(stdout);
	dup2(saved, 1);
	close(saved);
	pk_log_set_fd(2);
	o->out[0] = '\0';
	if (out_path == NULL)
		read_all(ofd, o->out, sizeof(o->out));
	else
		close(ofd);
	read_all(lfd, o->log, sizeof(o->log));
}

static void start(struct outcome *o, const char *out_path, const char *const *argv)
{
	start_as(o, out_path, false, argv);
}

#define ARGV(...) ((const char *const[]){"pk-test", __VA_ARGS__, NULL})

static void test_usage_errors(void **state)
{
	(void)state;
	struct outcome o = {0};
	start(&o, NULL, ARGV("--workers=65"));
	assert_int_equal(o.status, 2);
	assert_string_equal(o.out, "");
	assert_non_null(strstr(o.log, "level=error msg=\"invalid command line\""));
	assert_non_null(strstr(o.log, "--workers must be an integer in 1..64"));
	assert_non_null(strstr(o.log, "65"));
	assert_non_null(strstr(o.log, "hint=\"see pk-test --help\""));
	assert_int_equal(opts.calls, 0);
	/* A bad value fails before --help is looked at. */
	start(&o, NULL, ARGV("--help", "--workers", "0"));
	assert_int_equal(o.status, 2);
	assert_string_equal(o.out, "");
	/* The program's own refusal is a usage error too; still in text, before --log-format. */
	start_as(&o, NULL, true, ARGV("--workers=7", "--log-format=json"));
	assert_int_equal(o.status, 2);
	assert_int_equal(opts.calls, 1);
	assert_non_null(strstr(o.log, "level=error msg=\"invalid command line\" "
	                              "error=\"--workers (7) is refused here\""));
	start(&o, NULL, ARGV("stray"));
	assert_int_equal(o.status, 2);
	assert_non_null(strstr(o.log, "unexpected argument"));
}

static void test_help_and_version(void **state)
{
	(void)state;
	struct outcome o = {0};
	start(&o, NULL, ARGV("--help"));
	assert_int_equal(o.status, 0);
	assert_int_equal(opts.calls, 0);
	assert_string_equal(o.log, "");
	assert_non_null(strstr(o.out, "Usage: pk-test [flags]\n\nA test daemon.\n\nFlags:\n"));
	assert_non_null(strstr(o.out, "--workers N"));
	assert_non_null(strstr(o.out, "workers (1..64, default 2)"));
	assert_non_null(strstr(o.out, "(0..10, default 0)"));
	start(&o, NULL, ARGV("-h"));
	assert_int_equal(o.status, 0);
	start(&o, NULL, ARGV("--version"));
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out, "pk-test 1.2.3\n");
	/* Help that cannot be written is a failure. */
	if (access("/dev/full", W_OK) == 0) {
		start(&o, "/dev/full", ARGV("--help"));
		assert_int_equal(o.status, 1);
	}
}

static void test_runs_with_log_set_up(void **state)
{
	(void)state;
	struct outcome o = {0};
	start(&o, NULL, ARGV("--workers=7", "-v", "1", "--log-format=json"));
	assert_int_equal(o.status, PK_DAEMON_RUN);
	assert_int_equal(opts.calls, 1);
	assert_int_equal(opts.workers, 7);
	assert_true(pk_log_enabled(PK_LOG_DEBUG));
	assert_non_null(strstr(o.log, "\"level\":\"info\",\"msg\":\"started\""));
	assert_int_equal(o.log[0], '{');
	start(&o, NULL, ARGV("--workers=3"));
	assert_int_equal(o.status, PK_DAEMON_RUN);
	assert_false(pk_log_enabled(PK_LOG_DEBUG));
	assert_true(pk_log_enabled(PK_LOG_INFO));
	assert_non_null(strstr(o.log, "level=info msg=\"started\""));
}

/* SIGTERM and SIGINT are blocked by the start, and taken by pk_daemon_wait_signal. */
static void test_signals(void **state)
{
	(void)state;
	struct outcome o = {0};
	start(&o, NULL, ARGV("--workers=3"));
	assert_int_equal(o.status, PK_DAEMON_RUN);
	assert_int_equal(pk_daemon_wait_signal(0), 0);
	assert_int_equal(pk_daemon_wait_signal(50), 0);
	assert_int_equal(raise(SIGTERM), 0);
	assert_int_equal(pk_daemon_wait_signal(1000), SIGTERM);
	assert_int_equal(raise(SIGINT), 0);
	assert_int_equal(pk_daemon_wait_signal(-1), SIGINT);
	assert_string_equal(pk_daemon_signal_name(SIGTERM), "SIGTERM");
	assert_string_equal(pk_daemon_signal_name(SIGINT), "SIGINT");
	/* SIGPIPE is ignored: a write to a closed pipe fails instead of ending the process. */
	int p[2];
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	assert_int_equal(write(p[1], "x", 1), -1);
	close(p[1]);
}

struct lifecycle {
	int status; /* what run returns */
	unsigned runs, stops;
};

static int lc_run(void *ud)
{
	struct lifecycle *lc = ud;
	lc->runs++;
	return lc->status;
}

static void lc_stop(void *ud)
{
	struct lifecycle *lc = ud;
	lc->stops++;
}

/* pk_daemon_main with run returning `status`; its exit status, its log into buf. */
static int main_with(struct lifecycle *lc, int status, const char *const *argv, char *buf,
                     size_t cap)
{
	char lt[] = "/tmp/pk-daemon-log-XXXXXX";
	int lfd = mkstemp(lt), argc = 0;
	assert_true(lfd >= 0);
	unlink(lt);
	while (argv[argc] != NULL)
		argc++;
	*lc = (struct lifecycle){.status = status};
	pk_log_set_fd(lfd);
	int rc = pk_daemon_main(&daemon_spec, argc, (char **)(uintptr_t)argv, lc_run, lc_stop, lc);
	pk_log_set_fd(2);
	read_all(lfd, buf, cap);
	return rc;
}

/* run, then stop whatever run returned, then "stopped" after a clean end only. */
static void test_main_lifecycle(void **state)
{
	(void)state;
	struct lifecycle lc;
	char log[4096];
	assert_int_equal(main_with(&lc, 0, ARGV("--workers=3"), log, sizeof(log)), 0);
	assert_int_equal(lc.runs, 1);
	assert_int_equal(lc.stops, 1);
	assert_non_null(strstr(log, "msg=\"stopped\""));
	assert_int_equal(main_with(&lc, 1, ARGV("--workers=3"), log, sizeof(log)), 1);
	assert_int_equal(lc.stops, 1);
	assert_null(strstr(log, "stopped"));
	assert_int_equal(main_with(&lc, 0, ARGV("--workers=0"), log, sizeof(log)), 2);
	assert_int_equal(lc.runs + lc.stops, 0);
	assert_non_null(strstr(log, "invalid command line"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_usage_errors),         cmocka_unit_test(test_help_and_version),
	    cmocka_unit_test(test_runs_with_log_set_up), cmocka_unit_test(test_signals),
	    cmocka_unit_test(test_main_lifecycle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
