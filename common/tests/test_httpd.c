/*
 * test_httpd.c - the shared listeners on 127.0.0.1 driven over raw
 * sockets: the health and metrics answers, the header deadline against a
 * client that is never idle, the limit that closes or makes room at once,
 * /healthz with its connection pool full of slow clients, and
 * libmicrohttpd's own error answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "httpd.h"
#include "log.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A connection to 127.0.0.1:port from the source address `from` (any of 127/8). */
static int dial_from(uint16_t port, const char *from)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in src = {.sin_family = AF_INET};
	inet_pton(AF_INET, from, &src.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static int dial(uint16_t port)
{
	return dial_from(port, "127.0.0.1");
}

static void say(int fd, const char *text)
{
	assert_int_equal(send(fd, text, strlen(text), MSG_NOSIGNAL), (ssize_t)strlen(text));
}

/* Reads until the peer closes or `wait_s` pass; returns what came (NUL-terminated). */
static size_t hear(int fd, char *buf, size_t cap, double wait_s)
{
	size_t len = 0;
	double end = now_s() + wait_s;
	buf[0] = '\0';
	while (len + 1 < cap) {
		int left = (int)((end - now_s()) * 1000);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, left) != 1)
			break;
		ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
	}
	return len;
}

/* A GET on fd, answered 200 within half a second. */
static void get_ok(int fd)
{
	char buf[2048];
	say(fd, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
	hear(fd, buf, sizeof(buf), 0.5);
	assert_non_null(strstr(buf, "HTTP/1.1 200"));
}

/* True when the peer has closed the connection within `wait_s`. */
static bool closed_within(int fd, double wait_s)
{
	char buf[4096];
	double end = now_s() + wait_s;
	for (;;) {
		int left = (int)((end - now_s()) * 1000);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, left) != 1)
			return false;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
		if (n < 0)
			return false;
	}
}

/* One GET on a new connection: the status code, the whole answer into buf. */
static int get(uint16_t port, const char *method, const char *path, char *buf, size_t cap)
{
	int fd = dial(port);
	char req[256];
	snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", method,
	         path);
	say(fd, req);
	hear(fd, buf, cap, 5);
	close(fd);
	int status = 0;
	if (strncmp(buf, "HTTP/1.1 ", 9) == 0)
		status = (int)strtol(buf + 9, NULL, 10);
	return status;
}

/* ---- the health and metrics listeners ---- */

struct probe_state {
	bool ready;
	int metrics_calls;
};

static bool ready_fn(void *ud, char *why, size_t len)
{
	struct probe_state *st = ud;
	if (!st->ready)
		snprintf(why, len, "informers not synced");
	return st->ready;
}

static char *metrics_fn(void *ud, size_t *len)
{
	struct probe_state *st = ud;
	st->metrics_calls++;
	char *t = strdup("poolkeeper_up 1\n");
	*len = t ? strlen(t) : 0;
	return t;
}

static struct pk_httpd_probes *start_probes(struct probe_state *st, bool metrics_off)
{
	struct pk_httpd_probes_config c = {
	    .metrics_off = metrics_off, .ready = ready_fn, .metrics = metrics_fn, .ud = st};
	snprintf(c.health_address.host, sizeof(c.health_address.host), "127.0.0.1");
	snprintf(c.metrics_address.host, sizeof(c.metrics_address.host), "127.0.0.1");
	struct pk_httpd_probes *p = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_httpd_probes_start(&c, &p, &err), PK_OK);
	return p;
}

static void test_probes(void **state)
{
	(void)state;
	struct probe_state st = {.ready = false};
	struct pk_httpd_probes *p = start_probes(&st, false);
	uint16_t hp = pk_httpd_probes_port(p, false), mp = pk_httpd_probes_port(p, true);
	assert_true(hp != 0 && mp != 0 && hp != mp);
	char buf[4096];

	assert_int_equal(get(hp, "GET", "/healthz", buf, sizeof(buf)), 200);
	assert_non_null(strstr(buf, "\r\n\r\nok\n"));
	assert_int_equal(get(hp, "GET", "/readyz", buf, sizeof(buf)), 503);
	assert_non_null(strstr(buf, "informers not synced\n"));
	st.ready = true;
	assert_int_equal(get(hp, "GET", "/readyz", buf, sizeof(buf)), 200);
	assert_int_equal(get(hp, "HEAD", "/healthz", buf, sizeof(buf)), 200);
	assert_int_equal(get(hp, "POST", "/healthz", buf, sizeof(buf)), 405);
	assert_non_null(strstr(buf, "Allow: GET, HEAD"));
	assert_int_equal(get(hp, "GET", "/metrics", buf, sizeof(buf)), 404);
	assert_int_equal(get(hp, "GET", "/healthz/x", buf, sizeof(buf)), 404);

	assert_int_equal(get(mp, "GET", "/metrics", buf, sizeof(buf)), 200);
	assert_non_null(strstr(buf, "text/plain; version=0.0.4"));
	assert_non_null(strstr(buf, "poolkeeper_up 1\n"));
	assert_int_equal(st.metrics_calls, 1);
	assert_int_equal(get(mp, "GET", "/healthz", buf, sizeof(buf)), 404);
	assert_int_equal(get(mp, "DELETE", "/metrics", buf, sizeof(buf)), 405);
	pk_httpd_probes_stop(p);

	/* Metrics off: no second listener. */
	p = start_probes(&st, true);
	assert_int_equal(pk_httpd_probes_port(p, true), 0);
	assert_int_equal(get(pk_httpd_probes_port(p, false), "GET", "/healthz", buf, sizeof(buf)),
	                 200);
	pk_httpd_probes_stop(p);
}

/* Slow clients from four sources fill the health listener; kubelet's probe still gets its answer.
 */
static void test_probes_with_slow_clients(void **state)
{
	(void)state;
	struct probe_state st = {.ready = true};
	struct pk_httpd_probes *p = start_probes(&st, true);
	uint16_t hp = pk_httpd_probes_port(p, false);
	int slow[PK_HTTPD_PROBE_MAX_CONNECTIONS + 8];
	size_t n = sizeof(slow) / sizeof(slow[0]);
	static const char *const from[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"};
	for (size_t i = 0; i < n; i++) {
		slow[i] = dial_from(hp, from[i % 4]);
		(void)send(slow[i], "G", 1, MSG_NOSIGNAL);
	}
	usleep(200 * 1000);
	for (size_t i = 0; i < n; i++)
		(void)send(slow[i], "E", 1, MSG_NOSIGNAL);
	char buf[4096];
	for (int round = 0; round < 3; round++) {
		double t0 = now_s();
		assert_int_equal(get(hp, "GET", "/healthz", buf, sizeof(buf)), 200);
		assert_true(now_s() - t0 < 2.0);
	}
	for (size_t i = 0; i < n; i++)
		close(slow[i]);
	pk_httpd_probes_stop(p);
}

/*
 * The controller's and the webhook's health port: a client opening
 * connections keeps its share (a quarter of 64) and no more, its newest
 * taking the place of its own oldest; the kubelet, from another address, is
 * answered at once each time.
 */
static void test_probes_per_source(void **state)
{
	(void)state;
	struct probe_state st = {.ready = true};
	struct pk_httpd_probes *p = start_probes(&st, true);
	uint16_t hp = pk_httpd_probes_port(p, false);
	enum { SHARE = PK_HTTPD_PROBE_MAX_CONNECTIONS / PK_HTTPD_PER_SOURCE_SHARE, OVER = 4 };
	int storm[SHARE + OVER];
	for (size_t i = 0; i < SHARE + OVER; i++) {
		storm[i] = dial_from(hp, "127.0.0.9");
		usleep(5 * 1000); /* a clear order of arrival */
	}
	for (size_t i = 0; i < SHARE + OVER; i++)
		if (closed_within(storm[i], i < OVER ? 1.0 : 0.02) != (i < OVER))
			fail_msg("connection %zu of the storm: want %s", i,
			         i < OVER ? "closed" : "open");
	char buf[4096];
	for (int round = 0; round < 3; round++) {
		double t0 = now_s();
		assert_int_equal(get(hp, "GET", "/healthz", buf, sizeof(buf)), 200);
		assert_true(now_s() - t0 < 1.0);
	}
	for (size_t i = 0; i < SHARE + OVER; i++)
		close(storm[i]);
	pk_httpd_probes_stop(p);
}

/* ---- limits, on a listener of their own ---- */

struct echo {
	int requests;
};

/* Reads a request to its end, then answers {} (the connection is kept alive). */
static enum MHD_Result echo_handler(void *ud, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *upload_data,
                                    size_t *upload_data_size, void **req)
{
	(void)method;
	(void)upload_data;
	struct echo *e = ud;
	if (*req == NULL) {
		*req = e;
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	e->requests++;
	if (strcmp(url, "/big") == 0) {
		/* More than the sockets can buffer: a client that does not read holds it. */
		size_t n = 16u * 1024u * 1024u;
		char *big = malloc(n);
		assert_non_null(big);
		memset(big, ' ', n);
		return pk_httpd_respond(conn, 200, "text/plain", big, n, true, NULL, false);
	}
	return pk_httpd_respond(conn, 200, "application/json", "{}", 2, false, NULL, false);
}

static struct pk_httpd *start_limited(struct echo *e, const struct pk_httpd_limits *l)
{
	struct pk_httpd_config c = {
	    .name = "test",
	    .threads = 2,
	    .limits = *l,
	    .handler = echo_handler,
	    .ud = e,
	};
	snprintf(c.address.host, sizeof(c.address.host), "127.0.0.1");
	struct pk_httpd *h = NULL;
	struct pk_err err = {{0}};
	assert_int_equal(pk_httpd_start(&c, &h, &err), PK_OK);
	return h;
}

static struct pk_httpd *start_echo(struct echo *e, unsigned max, unsigned header_timeout)
{
	struct pk_httpd_limits l = {.max_connections = max,
	                            .header_timeout = header_timeout,
	                            .request_timeout = 2,
	                            .idle_timeout = 20,
	                            .connection_memory = 8192};
	return start_limited(e, &l);
}

/* The header deadline counts from accept: a client that is never idle is still cut. */
static void test_header_deadline(void **state)
{
	(void)state;
	struct echo e = {0};
	struct pk_httpd *h = start_echo(&e, 16, 1);
	int fd = dial(pk_httpd_port(h));
	const char *req = "GET / HTTP/1.1\r\nHost: t\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	double t0 = now_s();
	bool cut = false;
	for (size_t i = 0; req[i] != '\0' && !cut; i++) {
		if (send(fd, req + i, 1, MSG_NOSIGNAL) != 1)
			cut = true;
		else
			cut = closed_within(fd, 0.2);
	}
	double took = now_s() - t0;
	assert_true(cut);
	/* At 1 s, well before the 21 s idle backstop; the byte every 0.2 s never let it idle. */
	assert_true(took > 0.8 && took < 4.0);
	close(fd);
	struct pk_httpd_stats s;
	pk_httpd_get_stats(h, &s);
	assert_true(s.timed_out >= 1);
	assert_int_equal(e.requests, 0);

	/* A client in time is answered, and its kept-alive connection outlives the header
	 * deadline: the idle timeout applies between requests. */
	fd = dial(pk_httpd_port(h));
	get_ok(fd);
	assert_false(closed_within(fd, 1.5));
	get_ok(fd);
	close(fd);
	pk_httpd_stop(h);
}

/* A request whose body stops is cut at the request deadline. */
static void test_request_deadline(void **state)
{
	(void)state;
	struct echo e = {0};
	struct pk_httpd *h = start_echo(&e, 16, 5);
	int fd = dial(pk_httpd_port(h));
	say(fd, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{");
	double t0 = now_s();
	bool cut = false;
	for (int i = 0; i < 40 && !cut; i++) {
		(void)send(fd, " ", 1, MSG_NOSIGNAL);
		cut = closed_within(fd, 0.2);
	}
	assert_true(cut);
	assert_true(now_s() - t0 < 4.0);
	close(fd);
	pk_httpd_stop(h);
}

/*
 * The body deadline is scaled to the announced length: 100 bytes announced
 * and one sent is cut at body_timeout (1 s here), long before the 20 s
 * request deadline, though a byte comes every 0.2 s.
 */
static void test_body_deadline(void **state)
{
	(void)state;
	struct echo e = {0};
	struct pk_httpd_limits l = {.max_connections = 16,
	                            .header_timeout = 20,
	                            .request_timeout = 20,
	                            .body_timeout = 1,
	                            .body_rate = 1000,
	                            .idle_timeout = 20,
	                            .connection_memory = 8192};
	struct pk_httpd *h = start_limited(&e, &l);
	int fd = dial(pk_httpd_port(h));
	say(fd, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{");
	double t0 = now_s();
	bool cut = false;
	for (int i = 0; i < 50 && !cut; i++) {
		(void)send(fd, " ", 1, MSG_NOSIGNAL);
		cut = closed_within(fd, 0.2);
	}
	double took = now_s() - t0;
	assert_true(cut);
	assert_true(took > 0.8 && took < 2.5);
	close(fd);
	struct pk_httpd_stats s;
	pk_httpd_get_stats(h, &s);
	assert_int_equal(s.timed_out, 1);

	/* 3000 bytes announced may take 1 s plus 3 s: sent over 2.5 s, they are answered. */
	fd = dial(pk_httpd_port(h));
	say(fd, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3000\r\n\r\n");
	char part[301];
	memset(part, ' ', 300);
	part[300] = '\0';
	for (int i = 0; i < 10; i++) {
		usleep(250 * 1000);
		say(fd, part);
	}
	char buf[2048];
	hear(fd, buf, sizeof(buf), 1.0);
	assert_non_null(strstr(buf, "HTTP/1.1 200"));

	/* The next request on the kept-alive connection has a deadline of its own, and a
	 * request without a body has none but the request deadline. */
	usleep(1500 * 1000);
	say(fd, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
	hear(fd, buf, sizeof(buf), 1.0);
	assert_non_null(strstr(buf, "HTTP/1.1 200"));
	close(fd);
	pk_httpd_get_stats(h, &s);
	assert_int_equal(s.timed_out, 1);
	assert_int_equal(e.requests, 2);
	pk_httpd_stop(h);
}

/* At the limit, the connection that waited longest without a request makes room. */
static void test_limit_makes_room(void **state)
{
	(void)state;
	struct echo e = {0};
	struct pk_httpd *h = start_echo(&e, 4, 30);
	uint16_t port = pk_httpd_port(h);
	int idle[4];
	for (int i = 0; i < 4; i++) {
		idle[i] = dial(port);
		usleep(50 * 1000); /* a clear order of arrival */
	}
	char buf[2048];
	double t0 = now_s();
	assert_int_equal(get(port, "GET", "/", buf, sizeof(buf)), 200);
	assert_true(now_s() - t0 < 2.0);
	/* The oldest went; the others are still open. */
	assert_true(closed_within(idle[0], 1.0));
	for (int i = 1; i < 4; i++)
		assert_false(closed_within(idle[i], 0.1));
	struct pk_httpd_stats s;
	pk_httpd_get_stats(h, &s);
	assert_int_equal(s.evicted, 1);
	assert_int_equal(s.refused, 0);
	for (int i = 0; i < 4; i++)
		close(idle[i]);
	pk_httpd_stop(h);
}

/*
 * At the limit, stalled connections make room before an idle kept-alive
 * one (the apiserver's, between reviews), though it is the oldest: first
 * bodies not in past the grace, oldest first, then a new connection's
 * headers not in past the grace.
 */
static void test_stalled_evicted_first(void **state)
{
	(void)state;
	struct echo e = {0};
	struct pk_httpd_limits l = {.max_connections = 4,
	                            .header_timeout = 30,
	                            .request_timeout = 20,
	                            .body_timeout = 20,
	                            .idle_timeout = 30,
	                            .connection_memory = 8192};
	struct pk_httpd *h = start_limited(&e, &l);
	uint16_t port = pk_httpd_port(h);
	int kept = dial(port);
	get_ok(kept);
	usleep(50 * 1000);
	int head = dial(port);
	say(head, "GET / HTTP/1.1\r\nHost: t\r\nX-Slow: a");
	usleep(50 * 1000);
	int body[2];
	for (int i = 0; i < 2; i++) {
		body[i] = dial(port);
		say(body[i], "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{");
		usleep(50 * 1000);
	}
	usleep((useconds_t)(PK_HTTPD_STALL_GRACE * 1000 + 300) * 1000);

	int order[] = {body[0], body[1], head}, fresh[3];
	for (int i = 0; i < 3; i++) {
		/* Each newcomer stays, kept alive, so the next needs room again. */
		fresh[i] = dial(port);
		get_ok(fresh[i]);
		if (!closed_within(order[i], 1.0))
			fail_msg("eviction %d: not the one expected", i);
		for (int j = i + 1; j < 3; j++)
			assert_false(closed_within(order[j], 0.02));
	}
	struct pk_httpd_stats s;
	pk_httpd_get_stats(h, &s);
	assert_int_equal(s.evicted, 3);
	/* The kept-alive connection was never touched. */
	get_ok(kept);
	close(kept);
	for (int i = 0; i < 3; i++) {
		close(order[i]);
		close(fresh[i]);
	}
	pk_httpd_stop(h);
}

/*
 * Waits (at most 2 s) until the listener has taken in `n` connections since
 * it started: with two pool threads, the next connection's accept may
 * otherwise run before the last one is counted.
 */
static void accepted(struct pk_httpd *h, unsigned long long n)
{
	struct pk_httpd_stats st;
	for (int i = 0; i < 200; i++) {
		pk_httpd_get_stats(h, &st);
		if (st.accepted >= n)
			return;
		usleep(10 * 1000);
	}
	fail_msg("the listener took in %llu connections, not %llu", st.accepted, n);
}

/* Waits (2 s at most) until the listener counts more than n bytes in its budget. */
static void memory_above(struct pk_httpd *h, size_t n)
{
	struct pk_httpd_stats st;
	for (int i = 0; i < 200; i++) {
		pk_httpd_get_stats(h, &st);
		if (st.memory > n)
			return;
		usleep(10 * 1000);
	}
	fail_msg("the listener counts %zu bytes, not more than %zu", st.memory, n);
}

/*
 * At the limit, with nothing stalled, the room comes from the source that
 * holds most connections: a client opening new connections (not yet
 * stalled) pushes out its own, never the older kept-alive connection of
 * another source (the apiserver's between reviews).
 */
static void test_busiest_source_makes_room(void **state)
{
	(void)state;
	struct echo e = {0};
	struct pk_httpd_limits l = {.max_connections = 4,
	                            .header_timeout = 30,
	                            .request_timeout = 20,
	                            .idle_timeout = 30,
	                            .connection_memory = 8192};
	struct pk_httpd *h = start_limited(&e, &l);
	uint16_t port = pk_httpd_port(h);
	int kept = dial_from(port, "127.0.0.2");
	get_ok(kept);
	usleep(50 * 1000);
	int many[5];
	for (int i = 0; i < 3; i++) {
		many[i] = dial_from(port, "127.0.0.3");
		usleep(50 * 1000);
	}
	accepted(h, 4);
	/* Two more from the busy source, and one from a third: each time the busy
	 * source's oldest goes. */
	many[3] = dial_from(port, "127.0.0.3");
	assert_true(closed_within(many[0], 1.0));
	accepted(h, 5);
	many[4] = dial_from(port, "127.0.0.3");
	assert_true(closed_within(many[1], 1.0));
	accepted(h, 6);
	int third = dial_from(port, "127.0.0.4");
	assert_true(closed_within(many[2], 1.0));
	assert_false(closed_within(many[3], 0.05));
	assert_false(closed_within(many[4], 0.05));
	assert_false(closed_within(third, 0.05));
	struct pk_httpd_stats s;
	pk_httpd_get_stats(h, &s);
	assert_int_equal(s.evicted, 3);
	/* The kept-alive connection was never touched. */
	get_ok(kept);
	close(kept);
	close(third);
	for (int i = 0; i < 5; i++)
		close(many[i]);
	pk_httpd_stop(h);
}

/*
 * At the limit, a client whose connections all have a request in progress
 * (bodies within their grace) may not push out the idle kept-alive
 * connection of a source that holds fewer: its new connection is closed at
 * once, and the kept-alive one still serves. A new connection of the
 * source with fewer may take the busy client's place once one of its
 * connections is idle.
 */
static void test_busy_source_spares_fewer(void **state)
{
	(void)state;
	struct echo e = {0};
	struct pk_httpd_limits l = {.max_connections = 4,
	                            .header_timeout = 30,
	                            .request_timeout = 20,
	                            .idle_timeout = 30,
	                            .body_timeout = 20,
	                            .connection_memory = 8192};
	struct pk_httpd *h = start_limited(&e, &l);
	uint16_t port = pk_httpd_port(h);
	int kept = dial_from(port, "127.0.0.2");
	get_ok(kept);
	int busy[4];
	for (int i = 0; i < 3; i++) {
		busy[i] = dial_from(port, "127.0.0.3");
		say(busy[i], "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nx");
	}
	accepted(h, 4);
	usleep(100 * 1000);
	busy[3] = dial_from(port, "127.0.0.3");
	assert_true(closed_within(busy[3], 1.0));
	for (int i = 0; i < 3; i++)
		assert_false(closed_within(busy[i], 0.05));
	struct pk_httpd_stats s;
	pk_httpd_get_stats(h, &s);
	assert_int_equal(s.evicted, 0);
	assert_int_equal(s.refused, 1);
	get_ok(kept);
	close(kept);
	for (int i = 0; i < 4; i++)
		close(busy[i]);
	pk_httpd_stop(h);
}

static const struct pk_httpd_limits budget_limits = {.max_connections = 16,
                                                     .header_timeout = 30,
                                                     .request_timeout = 30,
                                                     .body_timeout = 30,
                                                     .idle_timeout = 30,
                                                     .connection_memory = 32768,
                                                     .memory_budget = 65536};

/* An unfinished header of about n bytes. */
static void send_header_bytes(int fd, size_t n)
{
	static char big[32768];
	memset(big, 'a', sizeof(big));
	say(fd, "GET / HTTP/1.1\r\nHost: t\r\nX-Big: ");
	assert_true(n <= sizeof(big));
	assert_int_equal(send(fd, big, n, MSG_NOSIGNAL), (ssize_t)n);
}

/*
 * Unfinished headers count in the listener's memory budget (64 KiB here),
 * though each connection is within its own 32 KiB: the connection that
 * pushes the total past it makes the one stalled longest go, and the rest
 * stay.
 */
static void test_memory_budget_headers(void **state)
{
	(void)state;
	struct echo e = {0};
	struct pk_httpd *h = start_limited(&e, &budget_limits);
	uint16_t port = pk_httpd_port(h);
	int c[4];
	for (int i = 0; i < 2; i++) {
		c[i] = dial(port);
		send_header_bytes(c[i], 20000);
		usleep(50 * 1000);
	}
	usleep((useconds_t)(PK_HTTPD_STALL_GRACE * 1000 + 300) * 1000);
	struct pk_httpd_stats s;
	pk_httpd_get_stats(h, &s);
	assert_true(s.memory >= 40000 && s.memory < 65536);
	assert_int_equal(s.over_memory, 0);
	c[2] = dial(port);
	send_header_bytes(c[2], 20000);
	usleep(50 * 1000);
	c[3] = dial(port);
	send_header_bytes(c[3], 10000);
	assert_true(closed_within(c[0], 1.0));
	for (int i = 1; i < 4; i++)
		assert_false(closed_within(c[i], 0.05));
	pk_httpd_get_stats(h, &s);
	assert_int_equal(s.over_memory, 1);
	assert_int_equal(s.timed_out, 0);
	assert_true(s.memory <= 65536);
	for (int i = 0; i < 4; i++)
		close(c[i]);
	pk_httpd_stop(h);
}

/*
 * A body counts as announced, from its headers on. Answers the clients do
 * not read hold the budget (a request whose body is in is never cut): a
 * new connection is then closed at accept, and gets in again once they go.
 */
static void test_memory_budget_bodies(void **state)
{
	(void)state;
	struct echo e = {0};
	struct pk_httpd *h = start_limited(&e, &budget_limits);
	uint16_t port = pk_httpd_port(h);
	/* Each charged its headers and its 33000 bytes, capped at 32 KiB: together over 64 KiB. */
	static char req[40000];
	int n = snprintf(req, sizeof(req),
	                 "POST /big HTTP/1.1\r\nHost: t\r\nContent-Length: 33000\r\n\r\n");
	memset(req + n, ' ', 33000);
	size_t len = (size_t)n + 33000;
	int c[3];
	for (int i = 0; i < 2; i++) {
		c[i] = dial(port);
		/* In one write, so the body is in before the budget is next counted. */
		assert_int_equal(send(c[i], req, len, MSG_NOSIGNAL), (ssize_t)len);
		usleep(100 * 1000);
	}
	memory_above(h, 65536);
	struct pk_httpd_stats s;
	int late = dial(port);
	assert_true(closed_within(late, 1.0));
	close(late);
	pk_httpd_get_stats(h, &s);
	assert_int_equal(s.refused, 1);
	assert_int_equal(s.over_memory, 0);
	for (int i = 0; i < 2; i++)
		close(c[i]);
	usleep(400 * 1000);
	char buf[2048];
	assert_int_equal(get(port, "GET", "/", buf, sizeof(buf)), 200);

	/* A stalled body that pushes the total past the budget is cut, the oldest first. */
	for (int i = 0; i < 2; i++) {
		c[i] = dial(port);
		say(c[i], "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 30000\r\n\r\n{");
		usleep(50 * 1000);
	}
	usleep((useconds_t)(PK_HTTPD_STALL_GRACE * 1000 + 300) * 1000);
	c[2] = dial(port);
	say(c[2], "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 30000\r\n\r\n{");
	assert_true(closed_within(c[0], 1.0));
	assert_false(closed_within(c[1], 0.05));
	assert_false(closed_within(c[2], 0.05));
	pk_httpd_get_stats(h, &s);
	assert_int_equal(s.over_memory, 1);
	for (int i = 0; i < 3; i++)
		close(c[i]);
	pk_httpd_stop(h);
}

/* When every connection has a request in progress, a new one is closed at once. */
static void test_limit_closes_at_once(void **state)
{
	(void)state;
	struct echo e = {0};
	struct pk_httpd *h = start_echo(&e, 4, 30);
	uint16_t port = pk_httpd_port(h);
	int busy[4];
	for (int i = 0; i < 4; i++) {
		busy[i] = dial(port);
		say(busy[i], "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n{");
	}
	usleep(300 * 1000);
	int fd = dial(port);
	double t0 = now_s();
	assert_true(closed_within(fd, 1.0));
	assert_true(now_s() - t0 < 1.0);
	close(fd);
	struct pk_httpd_stats s;
	pk_httpd_get_stats(h, &s);
	assert_true(s.refused >= 1);
	assert_int_equal(s.evicted, 0);
	/* The busy ones were not touched, and finish. */
	char buf[2048];
	say(busy[0], "        }");
	hear(busy[0], buf, sizeof(buf), 1.0);
	assert_non_null(strstr(buf, "HTTP/1.1 200"));
	for (int i = 0; i < 4; i++)
		close(busy[i]);
	pk_httpd_stop(h);
}

/* The defaults: a quarter of the limit, at least 16, never past the limit. */
static void test_per_source_defaults(void **state)
{
	(void)state;
	static const struct {
		unsigned max, set, want;
	} cases[] = {
	    {1000, 0, 250}, {64, 0, 16}, {40, 0, 16}, {4, 0, 4}, {1000, 3, 3}, {8, 100, 8},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pk_httpd_limits l = {.max_connections = cases[i].max,
		                            .per_source = cases[i].set};
		struct pk_httpd_limits r = pk_httpd_limits_resolve(&l);
		if (r.per_source != cases[i].want)
			fail_msg("case %zu: max %u, per source %u: want %u, got %u", i,
			         cases[i].max, cases[i].set, cases[i].want, r.per_source);
	}
}

/*
 * A source at its share makes room among its own connections only: another
 * source's older idle connection is left alone. When each of its own has a
 * request in progress, its next connection is closed at accept (counted as
 * refused), though the listener has room; another source still gets in.
 */
static void test_per_source_limit(void **state)
{
	(void)state;
	struct echo e = {0};
	struct pk_httpd_limits l = {.max_connections = 16,
	                            .per_source = 2,
	                            .header_timeout = 30,
	                            .request_timeout = 5,
	                            .idle_timeout = 20,
	                            .connection_memory = 8192};
	struct pk_httpd *h = start_limited(&e, &l);
	uint16_t port = pk_httpd_port(h);
	int other = dial_from(port, "127.0.0.3");
	usleep(50 * 1000);
	int mine[3];
	for (int i = 0; i < 3; i++) {
		mine[i] = dial_from(port, "127.0.0.2");
		usleep(50 * 1000);
	}
	assert_true(closed_within(mine[0], 1.0));
	assert_false(closed_within(mine[1], 0.05));
	assert_false(closed_within(mine[2], 0.05));
	assert_false(closed_within(other, 0.05));
	struct pk_httpd_stats s;
	pk_httpd_get_stats(h, &s);
	assert_int_equal(s.evicted, 1);
	assert_int_equal(s.refused, 0);
	close(mine[0]);

	/* Both of its own busy: the next is refused. */
	for (int i = 1; i < 3; i++)
		say(mine[i], "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n{");
	usleep(200 * 1000);
	mine[0] = dial_from(port, "127.0.0.2");
	assert_true(closed_within(mine[0], 1.0));
	close(mine[0]);
	pk_httpd_get_stats(h, &s);
	assert_int_equal(s.refused, 1);
	assert_int_equal(s.evicted, 1);

	char buf[2048];
	assert_int_equal(get(port, "GET", "/", buf, sizeof(buf)), 200);
	assert_false(closed_within(other, 0.05));
	for (int i = 1; i < 3; i++)
		close(mine[i]);
	close(other);
	pk_httpd_stop(h);
}

/*
 * The protocol errors libmicrohttpd answers itself, before any handler sees
 * a request (docs/webhook.md lists them): their statuses, and the
 * connection closed after them. The handler never runs.
 */
static void test_library_errors(void **state)
{
	(void)state;
	struct echo e = {0};
	struct pk_httpd *h = start_echo(&e, 16, 5);
	uint16_t port = pk_httpd_port(h);
	static char huge[20000];
	memset(huge, 'a', sizeof(huge) - 1);
	struct {
		const char *head, *tail;
		int status;
	} cases[] = {
	    {"GARBAGE LINE\r\n\r\n", "", 400},
	    {"GET / HTTP/1.1\r\nHost: t\r\nNoColonHere\r\n\r\n", "", 400},
	    {"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n", "", 400},
	    {"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n", "",
	     413},
	    {"GET / HTTP/1.1\r\nHost: t\r\nX-Big: ", "\r\n\r\n", 431},
	    {"GET /", " HTTP/1.1\r\nHost: t\r\n\r\n", 414},
	    {"GET / HTTP/2.0\r\nHost: t\r\n\r\n", "", 505},
	    {"GET / HTTP/0.9\r\nHost: t\r\n\r\n", "", 505},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = dial(port);
		say(fd, cases[i].head);
		if (cases[i].tail[0] != '\0') {
			(void)send(fd, huge, strlen(huge), MSG_NOSIGNAL);
			(void)send(fd, cases[i].tail, strlen(cases[i].tail), MSG_NOSIGNAL);
		}
		char buf[4096];
		hear(fd, buf, sizeof(buf), 3);
		close(fd);
		char want[32];
		snprintf(want, sizeof(want), "HTTP/1.1 %d ", cases[i].status);
		if (strncmp(buf, want, strlen(want)) != 0 ||
		    strstr(buf, "Connection: close") == NULL)
			fail_msg("case %zu: want %s with Connection: close, got: %.200s", i, want,
			         buf);
	}
	assert_int_equal(e.requests, 0);
	pk_httpd_stop(h);
}

static void test_start_errors(void **state)
{
	(void)state;
	struct echo e = {0};
	struct pk_httpd *h = start_echo(&e, 4, 5);
	struct pk_httpd_config c = {
	    .name = "second",
	    .limits = {.max_connections = 4,
	               .header_timeout = 1,
	               .request_timeout = 1,
	               .idle_timeout = 1,
	               .connection_memory = 8192},
	    .handler = echo_handler,
	};
	snprintf(c.address.host, sizeof(c.address.host), "127.0.0.1");
	c.address.port = pk_httpd_port(h);
	struct pk_httpd *h2 = NULL;
	struct pk_err err = {{0}};
	assert_int_not_equal(pk_httpd_start(&c, &h2, &err), PK_OK);
	char want[64];
	snprintf(want, sizeof(want), "127.0.0.1:%u (second)", c.address.port);
	assert_non_null(strstr(err.msg, want));
	c.address.port = 0;
	c.limits.header_timeout = 0;
	assert_int_not_equal(pk_httpd_start(&c, &h2, &err), PK_OK);
	assert_non_null(strstr(err.msg, "second listener"));
	pk_httpd_stop(h);
}

/* The lines both daemons announce their listeners with. */
static void test_listening_lines(void **state)
{
	(void)state;
	char path[] = "/tmp/pk-httpd-log-XXXXXX", buf[2048];
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	pk_log_set_fd(fd);
	pk_log_set_level(PK_LOG_INFO);
	struct pk_httpd_probes_config c = {.health_address = {"127.0.0.1", 0},
	                                   .metrics_address = {"", 8080}};
	pk_httpd_log_listening("webhook", 9443, &c.metrics_address);
	pk_httpd_log_probes(&c, 41000, 8080);
	c.metrics_off = true;
	pk_httpd_log_probes(&c, 41001, 0);
	pk_log_set_level(PK_LOG_ERROR);
	pk_log_set_fd(2);
	lseek(fd, 0, SEEK_SET);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	static const char *const want[] = {
	    "msg=\"listening\" listener=webhook port=9443 address=all\n",
	    "msg=\"listening\" listener=health port=41000 address=127.0.0.1\n",
	    "msg=\"listening\" listener=metrics port=8080 address=all\n",
	    "msg=\"listening\" listener=health port=41001 address=127.0.0.1\n",
	    "msg=\"metrics off\" flag=\"--metrics-bind-address=0\"\n",
	};
	const char *at = buf;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *hit = strstr(at, want[i]);
		if (hit == NULL)
			fail_msg("no \"%s\" (in order) in:\n%s", want[i], buf);
		at = hit + strlen(want[i]);
	}
	assert_null(strstr(at, "listener=metrics"));
}

int main(void)
{
	pk_log_set_level(PK_LOG_ERROR);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_probes),
	    cmocka_unit_test(test_probes_with_slow_clients),
	    cmocka_unit_test(test_probes_per_source),
	    cmocka_unit_test(test_header_deadline),
	    cmocka_unit_test(test_request_deadline),
	    cmocka_unit_test(test_body_deadline),
	    cmocka_unit_test(test_limit_makes_room),
	    cmocka_unit_test(test_limit_closes_at_once),
	    cmocka_unit_test(test_stalled_evicted_first),
	    cmocka_unit_test(test_busiest_source_makes_room),
	    cmocka_unit_test(test_busy_source_spares_fewer),
	    cmocka_unit_test(test_memory_budget_headers),
	    cmocka_unit_test(test_memory_budget_bodies),
	    cmocka_unit_test(test_per_source_defaults),
	    cmocka_unit_test(test_per_source_limit),
	    cmocka_unit_test(test_library_errors),
	    cmocka_unit_test(test_start_errors),
	    cmocka_unit_test(test_listening_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
