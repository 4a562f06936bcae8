/* metrics.c - counters and a latency histogram, rendered for Prometheus. */
#include "metrics.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Upper bounds, in seconds; admission answers are sub-millisecond when healthy. */
static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                 0.1,    0.25,  0.5,    1,     2.5,  5,     10};
#define NBUCKETS   (sizeof(buckets) / sizeof(buckets[0]))
#define NENDPOINTS 2
#define NRESULTS   3

struct histogram {
	atomic_uint_fast64_t bucket[NBUCKETS + 1]; /* the last one is +Inf; not cumulative */
	atomic_uint_fast64_t sum_ns;
};

struct pk_metrics {
	atomic_uint_fast64_t requests[NENDPOINTS][NRESULTS];
	struct histogram duration[NENDPOINTS];
	atomic_uint_fast64_t reloads[2]; /* [0] failure, [1] success */
	atomic_int_fast64_t expiry;
};

static const char *const endpoint_names[NENDPOINTS] = {"validate", "mutate"};
static const char *const result_names[NRESULTS] = {"allowed", "denied", "error"};

static size_t endpoint_index(enum pk_admission_endpoint e)
{
	return e == PK_ADMISSION_MUTATE ? 1 : 0;
}

struct pk_metrics *pk_metrics_new(void)
{
	struct pk_metrics *m = calloc(1, sizeof(*m));
	return m;
}

void pk_metrics_free(struct pk_metrics *m)
{
	free(m);
}

void pk_metrics_observe_request(struct pk_metrics *m, enum pk_admission_endpoint endpoint,
                                enum pk_metrics_result result, double seconds)
{
	if (m == NULL)
		return;
	size_t e = endpoint_index(endpoint);
	size_t r = (size_t)result < NRESULTS ? (size_t)result : PK_METRICS_ERROR;
	atomic_fetch_add_explicit(&m->requests[e][r], 1, memory_order_relaxed);
	if (!(seconds >= 0)) /* also catches NaN */
		seconds = 0;
	struct histogram *h = &m->duration[e];
	size_t b = 0;
	while (b < NBUCKETS && seconds > buckets[b])
		b++;
	atomic_fetch_add_explicit(&h->bucket[b], 1, memory_order_relaxed);
	double ns = seconds * 1e9;
	atomic_fetch_add_explicit(&h->sum_ns, ns > 1e18 ? (uint64_t)1e18 : (uint64_t)ns,
	                          memory_order_relaxed);
}

void pk_metrics_count_reload(struct pk_metrics *m, bool ok)
{
	if (m != NULL)
		atomic_fetch_add_explicit(&m->reloads[ok ? 1 : 0], 1, memory_order_relaxed);
}

void pk_metrics_set_cert_expiry(struct pk_metrics *m, int64_t not_after)
{
	if (m != NULL)
		atomic_store_explicit(&m->expiry, not_after, memory_order_relaxed);
}

uint64_t pk_metrics_get_requests(const struct pk_metrics *m, enum pk_admission_endpoint endpoint,
                                 enum pk_metrics_result result)
{
	if ((size_t)result >= NRESULTS)
		return 0;
	return atomic_load_explicit(&m->requests[endpoint_index(endpoint)][result],
	                            memory_order_relaxed);
}

uint64_t pk_metrics_get_reloads(const struct pk_metrics *m, bool ok)
{
	return atomic_load_explicit(&m->reloads[ok ? 1 : 0], memory_order_relaxed);
}

/* A growing text buffer with a hard cap; `failed` sticks once a write fails. */
struct text {
	char *buf;
	size_t len;
	size_t cap;
	bool failed;
};

#define TEXT_MAX (1u << 20)

static void text_add(struct text *t, const char *fmt, ...) PK_PRINTF(2, 3);
static void text_add(struct text *t, const char *fmt, ...)
{
	if (t->failed)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if ((size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		size_t ncap = t->cap * 2;
		if (ncap > TEXT_MAX) {
			t->failed = true;
			return;
		}
		char *nb = realloc(t->buf, ncap);
		if (nb == NULL) {
			t->failed = true;
			return;
		}
		t->buf = nb;
		t->cap = ncap;
	}
}

char *pk_metrics_render(const struct pk_metrics *m, size_t *len)
{
	struct text t = {.buf = malloc(8192), .len = 0, .cap = 8192, .failed = false};
	if (t.buf == NULL)
		return NULL;
	t.buf[0] = '\0';

	text_add(&t, "# HELP poolkeeper_webhook_requests_total Admission requests answered, "
	             "by endpoint and result.\n"
	             "# TYPE poolkeeper_webhook_requests_total counter\n");
	for (size_t e = 0; e < NENDPOINTS; e++)
		for (size_t r = 0; r < NRESULTS; r++)
			text_add(&t,
			         "poolkeeper_webhook_requests_total{endpoint=\"%s\",result=\"%s\"} "
			         "%llu\n",
			         endpoint_names[e], result_names[r],
			         (unsigned long long)atomic_load_explicit(&m->requests[e][r],
			                                                  memory_order_relaxed));

	text_add(&t, "# HELP poolkeeper_webhook_request_duration_seconds Time from the request's "
	             "headers to its answer.\n"
	             "# TYPE poolkeeper_webhook_request_duration_seconds histogram\n");
	for (size_t e = 0; e < NENDPOINTS; e++) {
		const struct histogram *h = &m->duration[e];
		unsigned long long cum = 0;
		for (size_t b = 0; b <= NBUCKETS; b++) {
			cum += atomic_load_explicit(&h->bucket[b], memory_order_relaxed);
			if (b < NBUCKETS)
				text_add(&t,
				         "poolkeeper_webhook_request_duration_seconds_bucket{"
				         "endpoint=\"%s\",le=\"%g\"} %llu\n",
				         endpoint_names[e], buckets[b], cum);
			else
				text_add(&t,
				         "poolkeeper_webhook_request_duration_seconds_bucket{"
				         "endpoint=\"%s\",le=\"+Inf\"} %llu\n",
				         endpoint_names[e], cum);
		}
		/* The count is this scrape's +Inf bucket, so the two always agree. */
		unsigned long long count = cum;
		double sum = (double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) / 1e9;
		text_add(
		    &t,
		    "poolkeeper_webhook_request_duration_seconds_sum{endpoint=\"%s\"} %.9f\n"
		    "poolkeeper_webhook_request_duration_seconds_count{endpoint=\"%s\"} %llu\n",
		    endpoint_names[e], sum, endpoint_names[e], count);
	}

	text_add(&t,
	         "# HELP poolkeeper_webhook_certificate_reloads_total Serving certificate reload "
	         "attempts, by result.\n"
	         "# TYPE poolkeeper_webhook_certificate_reloads_total counter\n"
	         "poolkeeper_webhook_certificate_reloads_total{result=\"success\"} %llu\n"
	         "poolkeeper_webhook_certificate_reloads_total{result=\"failure\"} %llu\n",
	         (unsigned long long)atomic_load_explicit(&m->reloads[1], memory_order_relaxed),
	         (unsigned long long)atomic_load_explicit(&m->reloads[0], memory_order_relaxed));
	text_add(&t,
	         "# HELP poolkeeper_webhook_certificate_expiry_timestamp_seconds notAfter of the "
	         "serving certificate in use.\n"
	         "# TYPE poolkeeper_webhook_certificate_expiry_timestamp_seconds gauge\n"
	         "poolkeeper_webhook_certificate_expiry_timestamp_seconds %lld\n",
	         (long long)atomic_load_explicit(&m->expiry, memory_order_relaxed));

	if (t.failed) {
		free(t.buf);
		return NULL;
	}
	*len = t.len;
	return t.buf;
}
