/*
 * test_server_slow.c - the server against clients that are slow or large:
 * a body or headers trickling past the request timeout, a connection that
 * never speaks, chunked uploads, kept-alive connections between requests,
 * and the allowance large bodies share. Raw GnuTLS clients on 127.0.0.1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>

#include "server_fixture.h"

/* Runs steps against a second server with a 1 s request timeout and a 3 s idle timeout. */
static void on_slow_server(void **state, void (*steps)(uint16_t port))
{
	struct fixture *f = *state;
	struct pk_server_config cfg;
	second_config(f, "127.0.0.1", &cfg);
	cfg.request_timeout = 1;
	cfg.idle_timeout = 3;
	struct pk_server *s = second_start(&cfg);
	steps(pk_server_port(s, PK_SERVER_WEBHOOK));
	second_stop(f, s);
}

static const char SLOW_HEAD[] =
    "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    "Content-Length: 20\r\n\r\n";

static void slow_bodies(uint16_t port)
{
	char buf[4096];

	/* A body trickling in past the deadline (never idle long enough to be cut): 408. */
	struct tls_client c;
	tls_connect(&c, port);
	tls_send(&c, SLOW_HEAD);
	const char *chunks[] = {"{\"a\":", "\"bbbb", "bbbbb", "bbbbb\"}"};
	for (size_t i = 0; i < 4; i++) {
		tls_send(&c, chunks[i]);
		if (i < 3)
			usleep(500 * 1000);
	}
	tls_read_all(&c, buf, sizeof(buf));
	if (strncmp(buf, "HTTP/1.1 408", 12) != 0)
		fail_msg("want 408, got: %s", buf);
	tls_close(&c);

	/* A body that stops: the connection is closed after the request timeout. */
	tls_connect(&c, port);
	tls_send(&c, SLOW_HEAD);
	tls_send(&c, "{\"a\":");
	double t0 = now_seconds();
	tls_read_all(&c, buf, sizeof(buf));
	double waited = now_seconds() - t0;
	assert_true(waited < 5.0);
	assert_null(strstr(buf, "200 OK"));
	tls_close(&c);
}

static void slow_headers(uint16_t port)
{
	char buf[4096];

	/* A connection that never sends headers goes the same way. */
	struct tls_client c;
	tls_connect(&c, port);
	double t0 = now_seconds();
	tls_read_all(&c, buf, sizeof(buf));
	assert_true(now_seconds() - t0 < 5.0);
	assert_int_equal(buf[0], '\0');
	tls_close(&c);

	/* Headers trickling in, a byte every 0.3 s, never idle: cut at the 1 s deadline,
	 * well before the 3 s idle timeout. */
	tls_connect(&c, port);
	const char *trickle = "POST /validate HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaa";
	t0 = now_seconds();
	bool cut = false;
	for (size_t i = 0; trickle[i] != '\0' && !cut; i++) {
		cut = gnutls_record_send(c.s, trickle + i, 1) != 1;
		usleep(300 * 1000);
		struct pollfd pf = {.fd = c.fd, .events = POLLIN};
		cut = cut || poll(&pf, 1, 0) == 1;
	}
	assert_true(cut);
	assert_true(now_seconds() - t0 < 2.5);
	tls_close(&c);
}

/*
 * With the default 10 s request timeout, a connection still without its
 * headers is cut at PK_SERVER_HEADER_TIMEOUT (5 s), and one that announces
 * 100 bytes of body and sends one at the listener's body deadline (2 s),
 * not at the request deadline (20 s).
 */
static void test_short_deadlines(void **state)
{
	struct fixture *f = *state;
	struct pk_server_config cfg;
	second_config(f, "127.0.0.1", &cfg);
	assert_int_equal(cfg.request_timeout, 10);
	struct pk_server *s = second_start(&cfg);
	uint16_t port = pk_server_port(s, PK_SERVER_WEBHOOK);
	char buf[4096];
	struct tls_client silent, slow;
	tls_connect(&silent, port);
	double t0 = now_seconds();
	tls_connect(&slow, port);
	tls_send(&slow, "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{");
	double t1 = now_seconds();
	tls_read_all(&slow, buf, sizeof(buf));
	double body_took = now_seconds() - t1;
	if (body_took < 1.5 || body_took > 3.5)
		fail_msg("a stalled 100-byte body was cut after %.1f s, want about 2", body_took);
	assert_null(strstr(buf, "200 OK"));
	tls_read_all(&silent, buf, sizeof(buf));
	double head_took = now_seconds() - t0;
	if (head_took < 4.5 || head_took > 6.5)
		fail_msg("a connection without headers was cut after %.1f s, want about %d",
		         head_took, PK_SERVER_HEADER_TIMEOUT);
	tls_close(&slow);
	tls_close(&silent);
	second_stop(f, s);
}

static void chunked_and_kept_alive(uint16_t port)
{
	char buf[4096];

	/* A chunked upload is answered before its body, in JSON, so that broken chunk
	 * framing never reaches libmicrohttpd's own HTML answer. */
	struct tls_client c;
	tls_connect(&c, port);
	tls_send(&c, "POST /validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	             "ZZ\r\nnot hex\r\n0\r\n\r\n");
	tls_read_all(&c, buf, sizeof(buf));
	if (strncmp(buf, "HTTP/1.1 411", 12) != 0 || strstr(buf, "application/json") == NULL ||
	    strstr(buf, "{\"error\":\"Content-Length is required\"}") == NULL)
		fail_msg("want a 411 JSON answer, got: %s", buf);
	tls_close(&c);

	/* A kept-alive connection lives past the request timeout between requests. */
	tls_connect(&c, port);
	tls_send(&c, "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
	tls_read_all(&c, buf, sizeof(buf));
	assert_true(!strncmp(buf, "HTTP/1.1 400", 12));
	usleep(1800 * 1000);
	tls_send(&c, "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
	tls_read_all(&c, buf, sizeof(buf));
	assert_true(!strncmp(buf, "HTTP/1.1 400", 12));
	tls_close(&c);
}

static void test_slow_bodies(void **state)
{
	on_slow_server(state, slow_bodies);
}

static void test_slow_headers(void **state)
{
	on_slow_server(state, slow_headers);
}

static void test_chunked_and_kept_alive(void **state)
{
	on_slow_server(state, chunked_and_kept_alive);
}

/*
 * Large bodies share one allowance: four 3 MB uploads in progress hold it,
 * a fifth is answered 503 before its body, a small review still passes, and
 * the allowance comes back when the uploads go.
 */
static void test_large_bodies(void **state)
{
	struct fixture *f = *state;
	char buf[4096];
	const char *head = "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 3000000\r\n\r\n[";
	struct tls_client up[4];
	for (int i = 0; i < 4; i++) {
		tls_connect(&up[i], f->port);
		tls_send(&up[i], head);
	}
	usleep(300 * 1000);
	struct tls_client c;
	tls_connect(&c, f->port);
	tls_send(&c, head);
	tls_read_all(&c, buf, sizeof(buf));
	if (strncmp(buf, "HTTP/1.1 503", 12) != 0 || strstr(buf, "application/json") == NULL ||
	    strstr(buf, "requests larger than 65536 bytes may together hold at most 12582912 "
	                "bytes, which those in progress use; retry") == NULL)
		fail_msg("want a 503 JSON answer, got: %s", buf);
	tls_close(&c);
	struct reply r;
	request(f, "/validate", "POST", REVIEW, strlen(REVIEW), &r);
	assert_int_equal(r.status, 200);
	for (int i = 0; i < 4; i++)
		tls_close(&up[i]);
	/* Given back: a large body is read and judged again. */
	char *big = malloc(100000);
	assert_non_null(big);
	memset(big, ' ', 100000);
	big[0] = '[';
	big[99999] = ']';
	for (int i = 0; i < 50; i++) {
		request(f, "/validate", "POST", big, 100000, &r);
		if (r.status != 503)
			break;
		usleep(100 * 1000);
	}
	assert_int_equal(r.status, 400);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slow_bodies),     cmocka_unit_test(test_slow_headers),
	    cmocka_unit_test(test_short_deadlines), cmocka_unit_test(test_chunked_and_kept_alive),
	    cmocka_unit_test(test_large_bodies),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
