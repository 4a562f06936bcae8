/*
 * proc.h - running a built poolkeeper binary from a unit suite: start it
 * with its stdout and stderr in files, wait for a line on its stderr, stop
 * it, read its exit status; a free loopback port to give it, and a plain
 * HTTP GET of its health listener.
 *
 * The child runs without KUBECONFIG and KUBERNETES_SERVICE_HOST, so that
 * a binary reaches only the API a test names with --kubeconfig. Include
 * after <cmocka.h>: failures end the test with fail_msg.
 */
#ifndef PK_TEST_PROC_H
#define PK_TEST_PROC_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tempdir.h" /* the folder a test runs a binary in */

/* A started binary. */
struct proc {
	pid_t pid;
	const char *bin;
	char out[400]; /* its stdout, a file */
	char err[400]; /* its stderr, a file */
};

/* The file at path into buf (NUL-terminated, cut at cap - 1); "" when it cannot be read. */
static inline void proc_slurp(const char *path, char *buf, size_t cap)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return;
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/*
 * Starts bin with args (NULL-terminated, at most 38), its stdout and stderr
 * into dir/out.N and dir/err.N, N counting the starts of this process.
 */
static inline void proc_start(struct proc *p, const char *dir, const char *bin,
                              const char *const *args)
{
	static unsigned seq;
	p->bin = bin;
	snprintf(p->out, sizeof(p->out), "%s/out.%u", dir, seq);
	snprintf(p->err, sizeof(p->err), "%s/err.%u", dir, seq++);
	const char *argv[40];
	size_t n = 0;
	argv[n++] = bin;
	for (size_t i = 0; args[i] != NULL && n < 39; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	p->pid = fork();
	if (p->pid < 0)
		fail_msg("fork: cannot start %s", bin);
	if (p->pid == 0) {
		int o = open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(p->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(o, 1);
		dup2(e, 2);
		unsetenv("KUBECONFIG");
		unsetenv("KUBERNETES_SERVICE_HOST");
		execv(bin, (char *const *)(uintptr_t)argv);
		_exit(127);
	}
}

/* Waits for the binary to exit; its exit status. A binary killed by a signal fails the test. */
static inline int proc_finish(struct proc *p)
{
	int st = 0;
	if (waitpid(p->pid, &st, 0) != p->pid)
		fail_msg("waitpid: %s was not started by this test", p->bin);
	if (!WIFEXITED(st))
		fail_msg("%s did not exit normally (status %d)", p->bin, st);
	return WEXITSTATUS(st);
}

/* Sends sig and waits; the exit status. */
static inline int proc_stop(struct proc *p, int sig)
{
	kill(p->pid, sig);
	return proc_finish(p);
}

/* Kills the binary (SIGKILL) and reaps it, as a test gives up on it. */
static inline void proc_kill(struct proc *p)
{
	int st = 0;
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &st, 0);
}

/*
 * Runs bin with args to its end; its exit status, its stdout into out
 * (when not NULL) and its stderr into err.
 */
static inline int proc_run(const char *dir, const char *bin, const char *const *args, char *out,
                           size_t ocap, char *err, size_t ecap)
{
	struct proc p;
	proc_start(&p, dir, bin, args);
	int rc = proc_finish(&p);
	if (out != NULL)
		proc_slurp(p.out, out, ocap);
	proc_slurp(p.err, err, ecap);
	unlink(p.out);
	unlink(p.err);
	return rc;
}

/* Waits (up to 20 s) until the binary's stderr holds `want`; the text so far into buf. */
static inline bool proc_wait_for(const struct proc *p, const char *want, char *buf, size_t cap)
{
	for (int i = 0; i < 200; i++) {
		proc_slurp(p->err, buf, cap);
		if (strstr(buf, want) != NULL)
			return true;
		struct timespec t = {0, 100 * 1000 * 1000};
		nanosleep(&t, NULL);
	}
	return false;
}

/* proc_wait_for, and when the line never comes: the binary killed, the test failed. */
static inline void proc_expect(struct proc *p, const char *want, char *buf, size_t cap)
{
	if (!proc_wait_for(p, want, buf, cap)) {
		proc_kill(p);
		fail_msg("no \"%s\" from %s in: %s", want, p->bin, buf);
	}
}

/* A loopback port free now (bound and let go), for a binary to listen on. */
static inline uint16_t proc_free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	socklen_t len = sizeof(sa);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
		fail_msg("no free loopback port");
	close(fd);
	return ntohs(sa.sin_port);
}

/* The status code of a plain GET of path on 127.0.0.1:port, or -1. */
static inline int proc_http_get(uint16_t port, const char *path)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	char req[256], resp[512];
	int n = snprintf(req, sizeof(req),
	                 "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	ssize_t w = write(fd, req, (size_t)n);
	ssize_t r = w == n ? read(fd, resp, sizeof(resp) - 1) : -1;
	close(fd);
	if (r < 12)
		return -1;
	resp[r] = '\0';
	char *end = NULL;
	long code = strtol(resp + 9, &end, 10);
	return end == resp + 12 ? (int)code : -1;
}

#endif
