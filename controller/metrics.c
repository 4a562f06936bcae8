/* metrics.c - the claim reconciler's counters and time-to-Ready histogram; see metrics.h. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "metrics.h"
#include "pk.h"
#include "strmap.h"

/* Seconds from a claim being seen to Ready: the histogram's upper bounds. */
static const double ready_buckets[PK_READY_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                       1,     2.5,  5,     10,   30,  60,   300};

struct pk_metrics_seen {
	pthread_mutex_t mu;
	struct pk_strmap *map; /* claim ns/name -> long long first seen */
};

int pk_metrics_init(struct pk_metrics *m)
{
	*m = (struct pk_metrics){0};
	m->seen = calloc(1, sizeof(*m->seen));
	if (m->seen == NULL || (m->seen->map = pk_strmap_new()) == NULL) {
		free(m->seen);
		m->seen = NULL;
		return PK_ERR_NOMEM;
	}
	pthread_mutex_init(&m->seen->mu, NULL);
	return PK_OK;
}

void pk_metrics_release(struct pk_metrics *m)
{
	if (m->seen == NULL)
		return;
	pk_strmap_free(m->seen->map, free);
	pthread_mutex_destroy(&m->seen->mu);
	free(m->seen);
	m->seen = NULL;
}

long long pk_metrics_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void pk_metrics_seen(struct pk_metrics *m, const char *key, long long now_ns)
{
	pthread_mutex_lock(&m->seen->mu);
	if (pk_strmap_get(m->seen->map, key) == NULL) {
		long long *t = malloc(sizeof(*t));
		if (t != NULL) {
			*t = now_ns;
			if (pk_strmap_put(m->seen->map, key, t, NULL) != PK_OK)
				free(t);
		}
	}
	pthread_mutex_unlock(&m->seen->mu);
}

void pk_metrics_forget(struct pk_metrics *m, const char *key)
{
	pthread_mutex_lock(&m->seen->mu);
	free(pk_strmap_remove(m->seen->map, key));
	pthread_mutex_unlock(&m->seen->mu);
}

void pk_metrics_ready(struct pk_metrics *m, const char *key, long long now_ns)
{
	pthread_mutex_lock(&m->seen->mu);
	long long *t = pk_strmap_remove(m->seen->map, key);
	pthread_mutex_unlock(&m->seen->mu);
	if (t == NULL)
		return;
	long long ns = now_ns - *t;
	free(t);
	double s = (double)ns / 1e9;
	size_t i = 0;
	while (i < PK_READY_BUCKETS && s > ready_buckets[i])
		i++;
	atomic_fetch_add(&m->ready_count[i], 1);
	atomic_fetch_add(&m->ready_sum_us, (unsigned long long)(ns / 1000));
}

void pk_metrics_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void write_histogram(const struct pk_metrics *m, FILE *f)
{
	pk_metrics_head(f, "poolkeeper_claim_ready_seconds", "histogram",
	                "Seconds from a claim being seen unbound to its Ready condition written.");
	unsigned long long cum = 0;
	for (size_t i = 0; i < PK_READY_BUCKETS; i++) {
		cum += atomic_load(&m->ready_count[i]);
		fprintf(f, "poolkeeper_claim_ready_seconds_bucket{le=\"%g\"} %llu\n",
		        ready_buckets[i], cum);
	}
	cum += atomic_load(&m->ready_count[PK_READY_BUCKETS]);
	fprintf(f, "poolkeeper_claim_ready_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
	fprintf(f, "poolkeeper_claim_ready_seconds_sum %.6f\n",
	        (double)atomic_load(&m->ready_sum_us) / 1e6);
	fprintf(f, "poolkeeper_claim_ready_seconds_count %llu\n", cum);
}

void pk_metrics_write(const struct pk_metrics *m, FILE *f)
{
	pk_metrics_head(f, "poolkeeper_reconciles_total", "counter", "Work keys processed.");
	fprintf(f, "poolkeeper_reconciles_total %llu\n",
	        (unsigned long long)atomic_load(&m->reconciles));
	pk_metrics_head(f, "poolkeeper_allocations_total", "counter", "Addresses allocated.");
	fprintf(f, "poolkeeper_allocations_total %llu\n",
	        (unsigned long long)atomic_load(&m->allocations));
	pk_metrics_head(f, "poolkeeper_releases_total", "counter", "Addresses released.");
	fprintf(f, "poolkeeper_releases_total %llu\n",
	        (unsigned long long)atomic_load(&m->releases));
	pk_metrics_head(f, "poolkeeper_allocation_failures_total", "counter",
	                "Claims that could not get an address, by reason.");
	fprintf(f,
	        "poolkeeper_allocation_failures_total{reason=\"PoolExhausted\"} %llu\n"
	        "poolkeeper_allocation_failures_total{reason=\"PoolNotReady\"} %llu\n"
	        "poolkeeper_allocation_failures_total{reason=\"AllocationFailed\"} %llu\n",
	        (unsigned long long)atomic_load(&m->failures_exhausted),
	        (unsigned long long)atomic_load(&m->failures_not_ready),
	        (unsigned long long)atomic_load(&m->failures_other));
	pk_metrics_head(f, "poolkeeper_inconsistent_ipaddresses_total", "counter",
	                "IPAddresses named like a claim and owned by it that were not adopted: "
	                "another claim or pool, an address the pool does not hand out, or one "
	                "another IPAddress of the pool holds. Counted when the claim's Ready "
	                "condition first says so.");
	fprintf(f, "poolkeeper_inconsistent_ipaddresses_total %llu\n",
	        (unsigned long long)atomic_load(&m->inconsistent));
	pk_metrics_head(f, "poolkeeper_cache_oversized_objects_total", "counter",
	                "Object versions over the informers' cap on one cached object "
	                "(PK_TRIM_MAX_BYTES), kept as their name only.");
	fprintf(f, "poolkeeper_cache_oversized_objects_total %llu\n",
	        (unsigned long long)atomic_load(&m->cache_oversized));
	write_histogram(m, f);
}
