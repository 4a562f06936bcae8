/*
 * run_main.h - a command's main function called in the suite's own
 * process, with its standard output and error captured: for the flag and
 * usage checks of the poolkeeper subcommands. Include after <cmocka.h>.
 */
#ifndef PK_TEST_RUN_MAIN_H
#define PK_TEST_RUN_MAIN_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* main_fn(argv) with args (at most 15, each under 128 bytes) as argv; its standard output and
 * error into out and err (each cap bytes, NUL-terminated); its return value. */
static inline int run_main(int (*main_fn)(int, char **), const char *const *args, size_t n,
                           char *out, char *err, size_t cap)
{
	static char copies[16][128];
	char *argv[16];
	assert_true(n < 16);
	for (size_t i = 0; i < n; i++) {
		assert_true(strlen(args[i]) < sizeof(copies[i]));
		snprintf(copies[i], sizeof(copies[i]), "%s", args[i]);
		argv[i] = copies[i];
	}
	argv[n] = NULL;
	FILE *fo = tmpfile(), *fe = tmpfile();
	assert_true(fo != NULL && fe != NULL);
	fflush(stdout);
	fflush(stderr);
	int so = dup(1), se = dup(2);
	dup2(fileno(fo), 1);
	dup2(fileno(fe), 2);
	int status = main_fn((int)n, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	FILE *fs[2] = {fo, fe};
	char *bufs[2] = {out, err};
	for (int k = 0; k < 2; k++) {
		rewind(fs[k]);
		size_t got = fread(bufs[k], 1, cap - 1, fs[k]);
		bufs[k][got] = '\0';
		fclose(fs[k]);
	}
	return status;
}

#endif
