/* metrics.c - counters and a latency histogram, rendered for Prometheus. */
#include "metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

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

/* Repairs, by owner kind: rows 0..PK_METRICS_REPAIR_KINDS-1 are kinds in the order first
 * seen, the last row is "other". */
#define NREPAIRS  5
#define OTHER_ROW PK_METRICS_REPAIR_KINDS
static const char *const repair_names[NREPAIRS] = {
    "controller", "blockOwnerDeletion", "clusterName", "skipped:permission", "skipped:timeout"};
#define SKIPPED_PERMISSION 3 /* the first "skipped:": the rest are reasons */

struct repair_row {
	char kind[64];
	atomic_uint_fast64_t n[NREPAIRS];
};

#define NVERDICTS 4 /* enum pk_client_verdict; [0] (ok) is never counted */

struct pk_metrics {
	atomic_uint_fast64_t requests[NENDPOINTS][NRESULTS];
	pthread_mutex_t kinds_lock; /* taken to add a row; rows are never removed */
	atomic_size_t nkinds;       /* rows in use, published after the row's name is written */
	struct repair_row repairs[PK_METRICS_REPAIR_KINDS + 1];
	struct histogram duration[NENDPOINTS];
	atomic_uint_fast64_t reloads[2]; /* [0] failure, [1] success */
	atomic_uint_fast64_t unauthenticated[NVERDICTS];
	atomic_uint_fast64_t ca_reloads[2]; /* [0] failure, [1] success */
	atomic_int_fast64_t expiry;
	unsigned long long (*oversized)(void *ud); /* set before the listeners start */
	void *oversized_ud;
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
	if (m == NULL)
		return NULL;
	pthread_mutex_init(&m->kinds_lock, NULL);
	atomic_init(&m->nkinds, 0);
	snprintf(m->repairs[OTHER_ROW].kind, sizeof(m->repairs[OTHER_ROW].kind), "other");
	return m;
}

void pk_metrics_free(struct pk_metrics *m)
{
	if (m == NULL)
		return;
	pthread_mutex_destroy(&m->kinds_lock);
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

/* Whether kind may be a label value of its own: 1..63 of [A-Za-z0-9]. */
static bool plain_kind(const char *kind)
{
	size_t n = kind != NULL ? strlen(kind) : 0;
	bool ok = n > 0 && n <= 63;
	for (size_t i = 0; ok && i < n; i++)
		ok = (kind[i] >= 'a' && kind[i] <= 'z') || (kind[i] >= 'A' && kind[i] <= 'Z') ||
		     (kind[i] >= '0' && kind[i] <= '9');
	return ok;
}

/* The row of kind among the first n rows, or NULL. */
static struct repair_row *find_row(struct pk_metrics *m, const char *kind, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(m->repairs[i].kind, kind) == 0)
			return &m->repairs[i];
	return NULL;
}

/* The row of kind: its own (added when there is room), else "other". */
static struct repair_row *repair_row(struct pk_metrics *m, const char *kind)
{
	if (!plain_kind(kind))
		return &m->repairs[OTHER_ROW];
	struct repair_row *r =
	    find_row(m, kind, atomic_load_explicit(&m->nkinds, memory_order_acquire));
	if (r != NULL)
		return r;
	pthread_mutex_lock(&m->kinds_lock);
	size_t n = atomic_load_explicit(&m->nkinds, memory_order_relaxed);
	r = find_row(m, kind, n); /* added by another thread meanwhile? */
	if (r == NULL && n < PK_METRICS_REPAIR_KINDS) {
		r = &m->repairs[n];
		snprintf(r->kind, sizeof(r->kind), "%s", kind);
		atomic_store_explicit(&m->nkinds, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&m->kinds_lock);
	return r != NULL ? r : &m->repairs[OTHER_ROW];
}

static int repair_index(const char *what)
{
	for (int i = 0; what != NULL && i < NREPAIRS; i++)
		if (strcmp(what, repair_names[i]) == 0)
			return i;
	return -1;
}

void pk_metrics_count_repair(void *ctx, const char *owner_kind, const char *what)
{
	struct pk_metrics *m = ctx;
	int w = repair_index(what);
	if (m == NULL || w < 0)
		return;
	atomic_fetch_add_explicit(&repair_row(m, owner_kind)->n[w], 1, memory_order_relaxed);
}

uint64_t pk_metrics_get_repairs(struct pk_metrics *m, const char *label, const char *what)
{
	int w = repair_index(what);
	if (w < 0 || label == NULL)
		return 0;
	struct repair_row *r =
	    strcmp(label, "other") == 0
	        ? &m->repairs[OTHER_ROW]
	        : find_row(m, label, atomic_load_explicit(&m->nkinds, memory_order_acquire));
	return r != NULL ? atomic_load_explicit(&r->n[w], memory_order_relaxed) : 0;
}

void pk_metrics_count_unauthenticated(struct pk_metrics *m, int verdict)
{
	if (m != NULL && verdict > 0 && verdict < NVERDICTS)
		atomic_fetch_add_explicit(&m->unauthenticated[verdict], 1, memory_order_relaxed);
}

uint64_t pk_metrics_get_unauthenticated(const struct pk_metrics *m, int verdict)
{
	return verdict > 0 && verdict < NVERDICTS
	           ? atomic_load_explicit(&m->unauthenticated[verdict], memory_order_relaxed)
	           : 0;
}

void pk_metrics_count_client_ca_reload(struct pk_metrics *m, bool ok)
{
	if (m != NULL)
		atomic_fetch_add_explicit(&m->ca_reloads[ok ? 1 : 0], 1, memory_order_relaxed);
}

uint64_t pk_metrics_get_reloads(const struct pk_metrics *m, bool ok)
{
	return atomic_load_explicit(&m->reloads[ok ? 1 : 0], memory_order_relaxed);
}

/* The exposition text under a hard cap; `failed` sticks once a write fails. */
struct text {
	struct pk_buf b;
	bool failed;
};

#define TEXT_MAX (1u << 20)

static void text_add(struct text *t, const char *fmt, ...) PK_PRINTF(2, 3);
static void text_add(struct text *t, const char *fmt, ...)
{
	if (t->failed)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (pk_buf_vprintf(&t->b, fmt, ap) != PK_OK)
		t->failed = true;
	va_end(ap);
}

static unsigned long long load(const atomic_uint_fast64_t *v)
{
	return (unsigned long long)atomic_load_explicit(v, memory_order_relaxed);
}

/* The HELP and TYPE lines of a family. */
static void add_family(struct text *t, const char *name, const char *type, const char *help)
{
	text_add(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample: name{k1="v1",k2="v2"} n, without labels where k1 is NULL and with one where
 * k2 is. */
static void add_sample(struct text *t, const char *name, const char *k1, const char *v1,
                       const char *k2, const char *v2, unsigned long long n)
{
	if (k1 == NULL)
		text_add(t, "%s %llu\n", name, n);
	else if (k2 == NULL)
		text_add(t, "%s{%s=\"%s\"} %llu\n", name, k1, v1, n);
	else
		text_add(t, "%s{%s=\"%s\",%s=\"%s\"} %llu\n", name, k1, v1, k2, v2, n);
}

#define REQUESTS "poolkeeper_webhook_requests_total"
#define DURATION "poolkeeper_webhook_request_duration_seconds"
#define RELOADS  "poolkeeper_webhook_certificate_reloads_total"
#define EXPIRY   "poolkeeper_webhook_certificate_expiry_timestamp_seconds"
#define REPAIRS  "poolkeeper_webhook_claim_repairs_total"
#define SKIPPED  "poolkeeper_webhook_claim_repairs_skipped_total"
#define OVERSIZE "poolkeeper_webhook_cache_oversized_objects_total"
#define UNAUTH   "poolkeeper_webhook_unauthenticated_requests_total"
#define CARELOAD "poolkeeper_webhook_client_ca_reloads_total"

static void render_requests(struct text *t, const struct pk_metrics *m)
{
	add_family(t, REQUESTS, "counter", "Admission requests answered, by endpoint and result.");
	for (size_t e = 0; e < NENDPOINTS; e++)
		for (size_t r = 0; r < NRESULTS; r++)
			add_sample(t, REQUESTS, "endpoint", endpoint_names[e], "result",
			           result_names[r], load(&m->requests[e][r]));
}

static void render_durations(struct text *t, const struct pk_metrics *m)
{
	add_family(t, DURATION, "histogram", "Time from the request's headers to its answer.");
	for (size_t e = 0; e < NENDPOINTS; e++) {
		const struct histogram *h = &m->duration[e];
		unsigned long long cum = 0;
		for (size_t b = 0; b <= NBUCKETS; b++) {
			char le[32];
			if (b < NBUCKETS)
				snprintf(le, sizeof(le), "%g", buckets[b]);
			else
				snprintf(le, sizeof(le), "+Inf");
			cum += load(&h->bucket[b]);
			add_sample(t, DURATION "_bucket", "endpoint", endpoint_names[e], "le", le,
			           cum);
		}
		/* The count is this scrape's +Inf bucket, so the two always agree. */
		double sum = (double)load(&h->sum_ns) / 1e9;
		text_add(t, DURATION "_sum{endpoint=\"%s\"} %.9f\n", endpoint_names[e], sum);
		add_sample(t, DURATION "_count", "endpoint", endpoint_names[e], NULL, NULL, cum);
	}
}

static void render_certificate(struct text *t, const struct pk_metrics *m)
{
	add_family(t, RELOADS, "counter", "Serving certificate reload attempts, by result.");
	add_sample(t, RELOADS, "result", "success", NULL, NULL, load(&m->reloads[1]));
	add_sample(t, RELOADS, "result", "failure", NULL, NULL, load(&m->reloads[0]));
	add_family(t, EXPIRY, "gauge", "notAfter of the serving certificate in use.");
	text_add(t, EXPIRY " %lld\n",
	         (long long)atomic_load_explicit(&m->expiry, memory_order_relaxed));
}

static void render_client_auth(struct text *t, const struct pk_metrics *m)
{
	add_family(t, UNAUTH, "counter",
	           "Requests refused before their body was read, for want of a valid client "
	           "certificate, by reason.");
	for (int v = 1; v < NVERDICTS; v++)
		add_sample(t, UNAUTH, "reason", pk_client_verdict_name((enum pk_client_verdict)v),
		           NULL, NULL, load(&m->unauthenticated[v]));
	add_family(t, CARELOAD, "counter", "Client CA bundle reload attempts, by result.");
	add_sample(t, CARELOAD, "result", "success", NULL, NULL, load(&m->ca_reloads[1]));
	add_sample(t, CARELOAD, "result", "failure", NULL, NULL, load(&m->ca_reloads[0]));
}

/* Repairs: every kind that has a row, and "other" once it has counted anything. */
static void render_repairs(struct text *t, const struct pk_metrics *m)
{
	size_t rows[PK_METRICS_REPAIR_KINDS + 1];
	size_t nrows = atomic_load_explicit(&m->nkinds, memory_order_acquire);
	for (size_t k = 0; k < nrows; k++)
		rows[k] = k;
	uint64_t other_sum = 0;
	for (int w = 0; w < NREPAIRS; w++)
		other_sum += load(&m->repairs[OTHER_ROW].n[w]);
	if (other_sum > 0)
		rows[nrows++] = OTHER_ROW;
	add_family(t, REPAIRS, "counter",
	           "Owner references and cluster names the mutating webhook completed on claims, "
	           "by the owner's kind and what it set.");
	for (size_t i = 0; i < nrows; i++)
		for (int w = 0; w < SKIPPED_PERMISSION; w++)
			add_sample(t, REPAIRS, "owner_kind", m->repairs[rows[i]].kind, "repair",
			           repair_names[w], load(&m->repairs[rows[i]].n[w]));
	add_family(t, SKIPPED, "counter",
	           "blockOwnerDeletion left unset on a claim's owner reference, by the owner's "
	           "kind and why.");
	for (size_t i = 0; i < nrows; i++)
		for (int w = SKIPPED_PERMISSION; w < NREPAIRS; w++)
			add_sample(t, SKIPPED, "owner_kind", m->repairs[rows[i]].kind, "reason",
			           repair_names[w] + strlen("skipped:"),
			           load(&m->repairs[rows[i]].n[w]));
}

void pk_metrics_set_oversized_source(struct pk_metrics *m, unsigned long long (*fn)(void *ud),
                                     void *ud)
{
	m->oversized = fn;
	m->oversized_ud = ud;
}

char *pk_metrics_render(const struct pk_metrics *m, size_t *len)
{
	struct text t = {.failed = false};
	pk_buf_init(&t.b, TEXT_MAX - 1);
	if (pk_buf_reserve(&t.b, 8191) != PK_OK)
		return NULL;
	render_requests(&t, m);
	render_durations(&t, m);
	render_certificate(&t, m);
	render_client_auth(&t, m);
	render_repairs(&t, m);
	add_family(
	    &t, OVERSIZE, "counter",
	    "Object versions over the cache's cap on one object (PK_TRIM_MAX_BYTES), kept as "
	    "their name only.");
	text_add(&t, OVERSIZE " %llu\n", m->oversized != NULL ? m->oversized(m->oversized_ud) : 0);
	if (t.failed) {
		pk_buf_free(&t.b);
		return NULL;
	}
	return pk_buf_take(&t.b, len);
}

const char *pk_client_verdict_name(enum pk_client_verdict v)
{
	switch (v) {
	case PK_CLIENT_OK:
		return "ok";
	case PK_CLIENT_NO_CERT:
		return "no_certificate";
	case PK_CLIENT_BAD_CERT:
		return "invalid_certificate";
	case PK_CLIENT_NAME_NOT_ALLOWED:
		return "name_not_allowed";
	}
	return "invalid_certificate";
}
