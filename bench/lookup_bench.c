/*
 * lookup_bench.c - pk_lookup_bench: the webhook's admission decision for
 * one AdmissionReview with its lookups (webhook/lookup.c) against the
 * cluster $KUBECONFIG names, in one of the two modes, in a process of its
 * own so that its peak RSS is the mode's (bench/lookup_bench.sh runs both,
 * and the built poolkeeper-webhook, in the same run). A program that prints
 * figures, never a test.
 *
 *   pk_lookup_bench --mode cached|live --review FILE [-r REPEATS]
 *   pk_lookup_bench --mode create --namespace NS --pool NAME --first A.B.C.D -n N
 *
 *   cached  the informer caches (what poolkeeper-webhook does): waits until
 *           every cache has listed, then decides the review REPEATS times;
 *   live    every lookup reads the API server (the lookups before the
 *           caches): a LIST of every IPAddress for a pool's addresses;
 *   create  N IPAddresses of GlobalIPPool NAME in namespace NS, "NAME-<i>",
 *           addresses from A.B.C.D on, 32 requests at a time with no
 *           client-side rate limit (those that exist already are kept).
 *
 * Prints one line for the driver:
 *   RESULT mode=M repeats=R load_s=S min_ms=A p50_ms=B max_ms=C allowed=Y|N
 *          rss_kb=D peak_rss_kb=E
 * load_s is the time to open the lookups (cached: until every cache has
 * listed); rss_kb is the resident set once loaded, before the first review.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "flags.h"
#include "kube.h"
#include "kube_client.h"
#include "kube_config.h"
#include "lookup.h"
#include "rules.h"

#define PROG     "pk_lookup_bench"
#define CREATORS 32

enum { F_MODE, F_REVIEW, F_REPEATS, F_NAMESPACE, F_POOL, F_FIRST, F_COUNT, F_HELP, F_NFLAGS };

static const struct pk_flag flags[F_NFLAGS] = {
    [F_MODE] = {"mode", 0, PK_FLAG_CHOICE, "cached", "cached|live|create",
                "the lookups (informer caches, or a read of the API server each), or create "
                "the IPAddresses"},
    [F_REVIEW] = {"review", 0, PK_FLAG_STRING, "", "FILE", "the AdmissionReview to decide"},
    [F_REPEATS] = {"repeats", 'r', PK_FLAG_UINT, "20", "1..100000", "decisions to time"},
    [F_NAMESPACE] = {"namespace", 0, PK_FLAG_STRING, "", "NS", "create: the namespace"},
    [F_POOL] = {"pool", 0, PK_FLAG_STRING, "", "NAME", "create: the GlobalIPPool"},
    [F_FIRST] = {"first", 0, PK_FLAG_STRING, "", "A.B.C.D", "create: the first address"},
    [F_COUNT] = {"count", 'n', PK_FLAG_UINT, "0", "0..16000000", "create: how many"},
    [F_HELP] = {"help", 'h', PK_FLAG_BOOL, NULL, NULL, "print this help"},
};

/* ---- create ---- */

struct creator {
	struct pk_kube_client *client;
	const char *ns, *pool;
	uint32_t first;
	long n;
	atomic_long next, failed;
};

static void *create_some(void *arg)
{
	struct creator *c = arg;
	long i;
	while ((i = atomic_fetch_add(&c->next, 1)) < c->n) {
		char name[300], text[INET_ADDRSTRLEN];
		struct in_addr a = {.s_addr = htonl(c->first + (uint32_t)i)};
		inet_ntop(AF_INET, &a, text, sizeof(text));
		snprintf(name, sizeof(name), "%s-%07ld", c->pool, i);
		json_t *o =
		    json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:{s:s}, s:{s:s, s:s, "
		              "s:s}}}",
		              "apiVersion", PK_CAPI_IPAM_GROUP "/v1beta2", "kind", "IPAddress",
		              "metadata", "name", name, "namespace", c->ns, "spec", "address", text,
		              "prefix", 16, "claimRef", "name", name, "poolRef", "apiGroup",
		              PK_POOL_GROUP, "kind", PK_GLOBAL_POOL_KIND, "name", c->pool);
		struct pk_kube_ref r = {.group = PK_CAPI_IPAM_GROUP,
		                        .version = "v1beta2",
		                        .resource = "ipaddresses",
		                        .namespace = c->ns};
		struct pk_kube_error e;
		enum pk_kube_reason rc =
		    o != NULL ? pk_kube_client_create(c->client, &r, o, NULL, NULL, &e)
		              : PK_KUBE_INVALID;
		json_decref(o);
		if (rc != PK_KUBE_OK && rc != PK_KUBE_ALREADY_EXISTS &&
		    atomic_fetch_add(&c->failed, 1) == 0)
			fprintf(stderr, PROG ": create IPAddress %s: %s\n", name,
			        rc == PK_KUBE_INVALID ? "out of memory" : e.message);
	}
	return NULL;
}

static int create(const char *ns, const char *pool, const char *first, long n)
{
	struct in_addr a;
	if (ns[0] == '\0' || pool[0] == '\0' || inet_pton(AF_INET, first, &a) != 1) {
		fprintf(stderr, PROG ": create needs --namespace, --pool and an IPv4 --first\n");
		return 2;
	}
	struct pk_kube_config *cfg = NULL;
	struct pk_kube_config_opts co = {.allow_exec = true};
	struct pk_kube_client_opts o = {.qps = -1, .user_agent = PROG};
	struct creator c = {.ns = ns, .pool = pool, .first = ntohl(a.s_addr), .n = n};
	struct pk_err err;
	if (pk_kube_config_load(&co, &cfg, &err) != PK_OK ||
	    pk_kube_client_new(cfg, &o, &c.client, &err) != PK_OK) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 1;
	}
	atomic_init(&c.next, 0);
	atomic_init(&c.failed, 0);
	long long t0 = pk_kube_now_ns();
	pthread_t t[CREATORS];
	int started = 0;
	while (started < CREATORS && pthread_create(&t[started], NULL, create_some, &c) == 0)
		started++;
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	double s = (double)(pk_kube_now_ns() - t0) / 1e9;
	printf("RESULT mode=create addresses=%ld failed=%ld seconds=%.1f per_second=%.0f\n", n,
	       atomic_load(&c.failed), s, (double)n / s);
	pk_kube_client_free(c.client);
	pk_kube_config_free(cfg);
	return atomic_load(&c.failed) == 0 ? 0 : 1;
}

/* ---- the decision ---- */

/* A line of /proc/self/status ("VmRSS", "VmHWM") in kB, or -1. */
static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	size_t n = strlen(key);
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			kb = strtol(line + n + 1, NULL, 10);
			break;
		}
	}
	if (f != NULL)
		fclose(f);
	return kb;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	size_t got;
	while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			char *more = realloc(buf, cap * 2);
			if (more == NULL) {
				free(buf);
				buf = NULL;
			}
			buf = more;
			cap *= 2;
		}
	}
	fclose(f);
	*len = n;
	return buf;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct pk_flag_value vals[F_NFLAGS];
	struct pk_err err = {{0}};
	if (pk_flags_parse_only(flags, F_NFLAGS, argc, argv, vals, &err) != PK_OK) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 2;
	}
	if (pk_flags_get_bool(vals, F_HELP)) {
		pk_flags_print_help(stdout, PROG " --mode cached|live|create [flags]",
		                    "Times the webhook's decision of one review, cached or live.",
		                    flags, F_NFLAGS);
		return 0;
	}
	const char *mode = pk_flags_get_string(flags, vals, F_MODE);
	if (strcmp(mode, "create") == 0)
		return create(pk_flags_get_string(flags, vals, F_NAMESPACE),
		              pk_flags_get_string(flags, vals, F_POOL),
		              pk_flags_get_string(flags, vals, F_FIRST),
		              (long)pk_flags_get_num(vals, F_COUNT));
	bool live = strcmp(mode, "live") == 0;
	const char *path = pk_flags_get_string(flags, vals, F_REVIEW);
	unsigned repeats = (unsigned)pk_flags_get_num(vals, F_REPEATS);
	size_t len = 0;
	char *body = path[0] != '\0' ? read_file(path, &len) : NULL;
	if (body == NULL) {
		fprintf(stderr, PROG ": --review: cannot read \"%s\"\n", path);
		return 2;
	}

	long long t0 = pk_kube_now_ns();
	struct pk_lookup *l = NULL;
	if (pk_lookup_open_mode(NULL, live ? PK_LOOKUP_LIVE : PK_LOOKUP_CACHED, &l, &err) !=
	        PK_OK ||
	    l == NULL) {
		fprintf(stderr, PROG ": no API access (set KUBECONFIG): %s\n", err.msg);
		return 1;
	}
	if (!pk_lookup_wait_ready(l, 600 * 1000)) {
		fprintf(stderr, PROG ": the caches did not load in 600 s\n");
		return 1;
	}
	double load_s = (double)(pk_kube_now_ns() - t0) / 1e9;
	long rss_kb = status_kb("VmRSS");

	struct pk_admission_config cfg = {.claims = PK_ENFORCE_DENY,
	                                  .foreign_claims = PK_ENFORCE_WARN,
	                                  .lookup = pk_lookup_admission(l)};
	double *ms = calloc(repeats, sizeof(*ms));
	bool allowed = true;
	for (unsigned i = 0; ms != NULL && i < repeats; i++) {
		int status = 0;
		json_t *resp = NULL;
		long long s = pk_kube_now_ns();
		pk_admission_review(&cfg, PK_ADMISSION_VALIDATE, body, len, &status, &resp);
		ms[i] = (double)(pk_kube_now_ns() - s) / 1e6;
		const json_t *r = json_object_get(resp, "response");
		if (status != 200 || !json_is_true(json_object_get(r, "allowed"))) {
			if (allowed)
				fprintf(stderr, PROG ": not allowed: %s\n",
				        json_string_value(json_object_get(
				            json_object_get(r, "status"), "message")));
			allowed = false;
		}
		json_decref(resp);
	}
	if (ms == NULL) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	qsort(ms, repeats, sizeof(*ms), cmp_double);
	printf("RESULT mode=%s repeats=%u load_s=%.2f min_ms=%.2f p50_ms=%.2f max_ms=%.2f "
	       "allowed=%s rss_kb=%ld peak_rss_kb=%ld\n",
	       live ? "live" : "cached", repeats, load_s, ms[0], ms[repeats / 2], ms[repeats - 1],
	       allowed ? "Y" : "N", rss_kb, status_kb("VmHWM"));
	free(ms);
	free(body);
	pk_lookup_close(l);
	return 0;
}
