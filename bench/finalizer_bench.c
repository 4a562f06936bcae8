/*
 * finalizer_bench.c - what a tenant's claims with long finalizer lists
 * cost the daemons' caches (issue 20, section 2): CLAIMS claims with
 * FINALIZERS finalizers of 277 bytes each (1.19 MB a claim at 4,300), on
 * another provider's pool (the attack) and on a poolkeeper pool with
 * poolkeeper's finalizer in the middle, each run through the transform
 * its informer calls: the controller's pk_cache_keep_claim
 * (pk_finalizer_bench_controller) or the webhook's claim feed
 * (pk_finalizer_bench_webhook). One source, built once per daemon: their
 * cache.h headers name different structs. A program that prints figures,
 * never a test.
 *
 * Bytes are what malloc_usable_size reports for the items the informer
 * would store (the informer adds its key and resourceVersion to each).
 * It uses only the transforms' public entry points, so the same file
 * measures an older tree too (docs/benchmarks.md).
 *
 * Usage: pk_finalizer_bench_{controller,webhook} [claims] [finalizers]
 *        (default 200 4300)
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "api.h"
#include "cache.h"
#include "parse.h"
#include "pool_ref.h"
#include "rules.h"
#include "tenant.h"

static json_t *claim(long i, long nfin, bool ours)
{
	char name[64];
	snprintf(name, sizeof(name), "tenant-claim-%ld", i);
	json_t *fins = pk_test_tenant_finalizers(
	    (size_t)nfin, ours ? (size_t)nfin / 2 : (size_t)nfin, PK_CLAIM_FINALIZER);
	if (fins == NULL) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:o}, s:{s:{s:s, s:s, s:s}}}",
	                      "apiVersion", PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2, "kind",
	                      PK_CLAIM_KIND, "metadata", "name", name, "namespace", "tenant", "uid",
	                      "0f8fad5b-d9cb-469f-a165-70867728950e", "resourceVersion", "123456",
	                      "finalizers", fins, "spec", "poolRef", "apiGroup",
	                      ours ? PK_POOL_GROUP : PK_CAPI_IPAM_GROUP, "kind",
	                      ours ? PK_POOL_KIND : "InClusterIPPool", "name", "nodes");
	if (o == NULL) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return o;
}

#if PK_BENCH_DAEMON == 1
#define DAEMON "controller"

static const struct pk_pool_kind kinds[] = {
    {.kind = PK_POOL_KIND, .namespaced = true},
    {.kind = PK_GLOBAL_POOL_KIND, .namespaced = false},
};

static const struct pk_pool_kind *bench_kinds(void *self, size_t *n)
{
	(void)self;
	*n = sizeof(kinds) / sizeof(kinds[0]);
	return kinds;
}

static bool bench_serves(void *self, const json_t *ref)
{
	(void)self;
	return pk_pool_kind_of_ref(ref) != NULL;
}

static const struct pk_backend_ops ops = {.kinds = bench_kinds, .serves = bench_serves};
static struct pk_backend backend = {.ops = &ops};
static struct pk_cache cache = {.backend = &backend};

static void *transform(const json_t *o)
{
	return pk_cache_keep_claim(&cache, o);
}
#else
#define DAEMON "webhook"

static struct pk_kube_informer_opts io;

static void *transform(const json_t *o)
{
	if (io.transform == NULL) {
		struct pk_cache *c = pk_cache_new();
		if (c == NULL)
			exit(1);
		pk_cache_feed(c, PK_CACHE_CLAIMS, &io); /* c lives on with the process */
	}
	return io.transform(io.transform_ud, o);
}
#endif

static void run(long n, long nfin, bool ours)
{
	void **items = calloc((size_t)n, sizeof(*items));
	size_t held = 0, text = 0;
	long long ns = 0;
	for (long i = 0; i < n; i++) {
		json_t *o = claim(i, nfin, ours);
		if (i == 0) {
			char *t = json_dumps(o, JSON_COMPACT);
			text = t != NULL ? strlen(t) : 0;
			free(t);
		}
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		items[i] = transform(o);
		clock_gettime(CLOCK_MONOTONIC, &b);
		ns += (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
		held += items[i] != NULL ? malloc_usable_size(items[i]) : 0;
		json_decref(o);
	}
	printf("%-10s %-22s %6ld %10ld %12zu %12zu %10.1f %10.1f\n", DAEMON,
	       ours ? "poolkeeper pool" : "another provider's", n, nfin, text, held,
	       (double)held / (double)n, (double)ns / (double)n / 1000.0);
	for (long i = 0; i < n; i++)
		free(items[i]);
	free(items);
}

int main(int argc, char **argv)
{
	int64_t n = 200, nfin = 4300;
	if ((argc > 1 && pk_parse_i64(argv[1], 1, 100000, &n, NULL) != PK_OK) ||
	    (argc > 2 && pk_parse_i64(argv[2], 0, 100000, &nfin, NULL) != PK_OK)) {
		fprintf(stderr, "usage: %s [claims 1..100000] [finalizers 0..100000]\n", argv[0]);
		return 2;
	}
	printf("%-10s %-22s %6s %10s %12s %12s %10s %10s\n", "daemon", "claims on", "claims",
	       "finalizers", "JSON bytes", "cache bytes", "per claim", "us each");
	run(n, nfin, false);
	run(n, nfin, true);
	return 0;
}
