/* test_fair_pool.c - the fair pool takes turns between sources' lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "fair_pool.h"

struct record {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool open;      /* the gate the blocking job waits at */
	char order[64]; /* each job's tag, in the order they ran */
	size_t n;
	unsigned stopped; /* jobs run as PK_FAIR_STOPPING */
	unsigned shed;    /* jobs run as PK_FAIR_SHED */
};

struct job {
	struct pk_fair_job base;
	struct record *r;
	char tag;
	bool blocks;
};

static void run(struct pk_fair_job *j, enum pk_fair_turn turn)
{
	struct job *job = (struct job *)j;
	struct record *r = job->r;
	pthread_mutex_lock(&r->mu);
	while (job->blocks && !r->open)
		pthread_cond_wait(&r->cv, &r->mu);
	if (r->n + 1 < sizeof(r->order))
		r->order[r->n++] = job->tag;
	if (turn == PK_FAIR_STOPPING)
		r->stopped++;
	if (turn == PK_FAIR_SHED)
		r->shed++;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static struct pk_httpd_source src(const char *ip)
{
	struct pk_httpd_source s = {.family = AF_INET};
	inet_pton(AF_INET, ip, s.addr);
	return s;
}

static void record_init(struct record *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
}

/* r cleared, and a pool of `threads` threads that holds at most max_bytes waiting. */
static struct pk_fair_pool *started(struct record *r, unsigned threads, size_t max_bytes)
{
	record_init(r);
	struct pk_fair_pool *p = NULL;
	struct pk_err err;
	assert_int_equal(pk_fair_pool_start("test", threads, max_bytes, &p, &err), PK_OK);
	return p;
}

static void gate(struct record *r, bool open)
{
	pthread_mutex_lock(&r->mu);
	r->open = open;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Waits until n jobs have run (at most 5 s). */
static void ran(struct record *r, size_t n)
{
	for (int i = 0; i < 500; i++) {
		pthread_mutex_lock(&r->mu);
		size_t got = r->n;
		pthread_mutex_unlock(&r->mu);
		if (got >= n)
			return;
		usleep(10 * 1000);
	}
	fail_msg("%zu of %zu jobs ran", r->n, n);
}

/* Pushes a job; a blocking one is running (not waiting) before this returns. */
static void push_sized(struct pk_fair_pool *p, struct job *j, struct record *r, const char *ip,
                       char tag, bool blocks, size_t bytes)
{
	*j = (struct job){
	    .base = {.run = run, .bytes = bytes}, .r = r, .tag = tag, .blocks = blocks};
	struct pk_httpd_source s = src(ip);
	pk_fair_pool_push(p, &s, &j->base);
	for (int i = 0; blocks && pk_fair_pool_waiting(p) > 0 && i < 500; i++)
		usleep(10 * 1000);
}

static void push(struct pk_fair_pool *p, struct job *j, struct record *r, const char *ip, char tag,
                 bool blocks)
{
	push_sized(p, j, r, ip, tag, blocks, 0);
}

/*
 * One source with five jobs queued, then another with one: the other's
 * runs next, not after the five. A source whose line emptied is
 * remembered: it does not come back as one never served.
 */
static void test_light_source_goes_first(void **state)
{
	(void)state;
	struct record r;
	struct pk_fair_pool *p = started(&r, 1, 0);
	struct job jobs[16];
	push(p, &jobs[0], &r, "127.0.2.1", 'x', true);
	for (int i = 0; i < 5; i++)
		push(p, &jobs[1 + i], &r, "127.0.2.1", (char)('1' + i), false);
	push(p, &jobs[6], &r, "127.0.0.1", 'A', false);
	assert_int_equal(pk_fair_pool_waiting(p), 6);
	gate(&r, true);
	ran(&r, 7);
	assert_string_equal(r.order, "xA12345");

	/* 127.0.2.1 was served last and its line is empty; pushed first, it still
	 * goes last: a new source first, then the apiserver (served long ago). */
	gate(&r, false);
	push(p, &jobs[7], &r, "127.0.2.9", 'y', true);
	push(p, &jobs[8], &r, "127.0.2.1", '6', false);
	push(p, &jobs[9], &r, "127.0.2.2", 'N', false);
	push(p, &jobs[10], &r, "127.0.0.1", 'B', false);
	gate(&r, true);
	ran(&r, 11);
	assert_string_equal(r.order, "xA12345yNB6");
	assert_int_equal(r.stopped, 0);
	pk_fair_pool_stop(p);
}

/* Two lines of several jobs take turns. */
static void test_full_lines_take_turns(void **state)
{
	(void)state;
	struct record r;
	struct pk_fair_pool *p = started(&r, 1, 0);
	struct job jobs[8];
	push(p, &jobs[0], &r, "10.0.0.9", 'x', true);
	for (int i = 0; i < 3; i++)
		push(p, &jobs[1 + i], &r, "10.0.0.1", (char)('a' + i), false);
	for (int i = 0; i < 3; i++)
		push(p, &jobs[4 + i], &r, "10.0.0.2", (char)('A' + i), false);
	gate(&r, true);
	ran(&r, 7);
	assert_string_equal(r.order, "xaAbBcC");
	pk_fair_pool_stop(p);
}

struct stopper {
	struct pk_fair_pool *p;
};

static void *stop_main(void *arg)
{
	pk_fair_pool_stop(((struct stopper *)arg)->p);
	return NULL;
}

/* Stopping runs every waiting job at once, told so; the running one finishes as it was. */
static void test_stop_answers_waiting(void **state)
{
	(void)state;
	struct record r;
	struct pk_fair_pool *p = started(&r, 2, 0);
	struct job jobs[8];
	push(p, &jobs[0], &r, "10.0.0.1", 'x', true);
	push(p, &jobs[1], &r, "10.0.0.1", 'y', true);
	for (int i = 0; i < 4; i++)
		push(p, &jobs[2 + i], &r, "10.0.0.2", (char)('a' + i), false);
	assert_int_equal(pk_fair_pool_waiting(p), 4);
	struct stopper st = {p};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, stop_main, &st), 0);
	usleep(100 * 1000);
	gate(&r, true);
	pthread_join(t, NULL);
	assert_int_equal(r.n, 6);
	assert_int_equal(r.stopped, 4);
}

/*
 * Past max_bytes the newest job of the source holding most is shed at
 * once, never another source's: a flood from one address of 100-byte jobs
 * into a pool of 1,000 bytes keeps the other source's job, and what runs
 * afterwards is that job and the flood's oldest.
 */
static void test_flood_sheds_its_own(void **state)
{
	(void)state;
	struct record r;
	struct pk_fair_pool *p = started(&r, 1, 1000);
	struct job jobs[40];
	push_sized(p, &jobs[0], &r, "10.0.0.9", 'x', true, 100);
	push_sized(p, &jobs[1], &r, "10.0.0.1", 'A', false, 300);
	for (int i = 0; i < 20; i++)
		push_sized(p, &jobs[2 + i], &r, "10.0.0.2", (char)('a' + i), false, 100);
	/* 300 bytes of 10.0.0.1 and 700 of the flood wait: 13 of its 20 were shed at once. */
	pthread_mutex_lock(&r.mu);
	unsigned shed = r.shed;
	pthread_mutex_unlock(&r.mu);
	assert_int_equal(shed, 13);
	assert_int_equal(pk_fair_pool_shed(p), 13);
	assert_int_equal(pk_fair_pool_waiting(p), 8);
	/* The shed ones are the flood's newest, in the order they were shed. */
	assert_memory_equal(r.order, "hijklmnopqrst", 13);
	/* One job larger than the bound is shed at once, even alone in its line. */
	push_sized(p, &jobs[30], &r, "10.0.0.3", 'Z', false, 2000);
	assert_int_equal(pk_fair_pool_shed(p), 14);
	assert_int_equal(r.order[13], 'Z');
	gate(&r, true);
	ran(&r, 14 + 9);
	assert_string_equal(r.order + 14, "xAabcdefg");
	assert_int_equal(r.stopped, 0);
	pk_fair_pool_stop(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_light_source_goes_first),
	    cmocka_unit_test(test_full_lines_take_turns),
	    cmocka_unit_test(test_stop_answers_waiting),
	    cmocka_unit_test(test_flood_sheds_its_own),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
