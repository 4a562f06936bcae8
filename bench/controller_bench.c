/*
 * controller_bench.c - pk_controller_bench: the client side of the
 * controller benchmark (bench/controller_bench.sh drives it). A program that
 * prints figures, never a test. Every request goes through libpkkube with no
 * client-side rate limit, so the apiserver is what limits it.
 *
 *   pk_controller_bench prepare   --namespace NS -n N [--paused] [--cidr C --prefix P]
 *       Creates the namespace, IPPool "bench" (C/P, by default 10.64.0.0/16 and 16;
 *       with --paused it carries the cluster.x-k8s.io/paused annotation) and N
 *       IPAddressClaims on it, 16 at a time.
 *   pk_controller_bench baseline  --namespace NS -n N [--workers W] [--order phase|claim]
 *       The ceiling: with no controller running, performs for each of the N
 *       claims exactly the writes a provider cannot avoid, built by the
 *       controller's own builders (controller/objects.c): the JSON patch adding
 *       the finalizer (testing the resourceVersion), the IPAddress create, the
 *       merge patch of the claim's status (addressRef and Ready). W workers
 *       take the claims in order; --order phase (the default) does one write for
 *       every claim before the next write (the order a FIFO work queue
 *       produces), --order claim each claim's three writes one after the other.
 *   pk_controller_bench wait      --namespace NS -n N [--unpause] [--controller-pid PID]
 *       Watches the claims (an informer), removes the pool's paused annotation
 *       (--unpause) and measures the time until N claims are Ready, with the
 *       controller's CPU seconds in that window and its peak RSS
 *       (/proc/PID/stat and /proc/PID/status).
 *   pk_controller_bench addresses --namespace NS -n N [--cidr C --prefix P]
 *       Creates IPPool "bench" (by default 10.64.0.0/14, prefix 14) and N
 *       IPAddresses from it, as the controller writes them (spec, poolRef,
 *       claimRef; owner reference to the pool only, since there are no claims).
 *   pk_controller_bench cleanup   --namespace NS
 *       Takes the finalizers off the claims, IPAddresses and pools of NS and
 *       deletes them (16 at a time), deletes the namespace and waits until it
 *       is gone.
 *
 * Timed commands end with one line for the driver:
 *   RESULT key=value ...
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_kube.h"
#include "decide.h"
#include "flags.h"
#include "incluster.h"
#include "json.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_informer.h"
#include "objects.h"
#include "parse.h"
#include "rules.h"

#define PROG          "pk_controller_bench"
#define CLAIM_VERSION "v1beta2"
#define POOL_VERSION  "v1alpha1"
#define POOL_NAME     "bench"
#define MANAGER       "pk-controller-bench"
#define CREATORS      16

enum {
	F_NAMESPACE,
	F_COUNT_N,
	F_WORKERS,
	F_ORDER,
	F_PAUSED,
	F_UNPAUSE,
	F_PID,
	F_CIDR,
	F_PREFIX,
	F_TIMEOUT,
	F_HELP,
	F_NFLAGS,
};

static const struct pk_flag flags[F_NFLAGS] = {
    [F_NAMESPACE] = {"namespace", 0, PK_FLAG_STRING, "", NULL, "namespace of the run"},
    [F_COUNT_N] = {"count", 'n', PK_FLAG_STRING, "1000", NULL,
                   "claims (prepare, baseline, wait) or IPAddresses (addresses)"},
    [F_WORKERS] = {"workers", 0, PK_FLAG_STRING, "1", NULL,
                   "baseline: claims written at once (1..64)"},
    [F_ORDER] = {"order", 0, PK_FLAG_CHOICE, "phase", "claim|phase",
                 "baseline: a claim's three writes one after the other (claim), or each "
                 "write for every claim before the next (phase)"},
    [F_PAUSED] = {"paused", 0, PK_FLAG_BOOL, NULL, NULL, "prepare: create the pool paused"},
    [F_UNPAUSE] = {"unpause", 0, PK_FLAG_BOOL, NULL, NULL,
                   "wait: start the clock by removing the pool's paused annotation"},
    [F_PID] = {"controller-pid", 0, PK_FLAG_STRING, "0", NULL,
               "wait: the controller's pid, for CPU seconds and peak RSS (0: none)"},
    [F_CIDR] = {"cidr", 0, PK_FLAG_STRING, "", NULL,
                "the pool's IPv4 CIDR (prepare: 10.64.0.0/16; addresses: 10.64.0.0/14)"},
    [F_PREFIX] = {"prefix", 0, PK_FLAG_STRING, "", NULL, "the pool's prefix (default: the CIDR's)"},
    [F_TIMEOUT] = {"timeout", 0, PK_FLAG_STRING, "3600", NULL,
                   "seconds to wait for Ready claims or a deleted namespace"},
    [F_HELP] = {"help", 'h', PK_FLAG_BOOL, NULL, NULL, "print this help"},
};

#define USAGE   PROG " prepare|baseline|wait|addresses|cleanup --namespace NS [-n N] [flags]"
#define SUMMARY "The client side of poolkeeper's controller benchmark (bench/controller_bench.sh)."

static struct pk_kube_config *cfg;
static struct pk_kube_client *cli;
static const char *ns;
static long count = 1000;
static long workers = 1;
static long timeout_s = 3600;
static uint32_t cidr_base;
static unsigned cidr_bits;
static unsigned prefix;

static _Noreturn void fail(const char *what, const char *obj, const struct pk_kube_error *e)
{
	fprintf(stderr, PROG ": %s %s: %s: %s\n", what, obj ? obj : "",
	        pk_kube_reason_name(e->reason), e->message);
	exit(1);
}

static _Noreturn void fail_oom(void)
{
	fprintf(stderr, PROG ": out of memory\n");
	exit(1);
}

static double now_s(void)
{
	return (double)pk_kube_now_ns() / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void connect_client(void)
{
	/* no client-side limit; big lists of 100,000 objects fit */
	bench_kube_connect(PROG, 1u << 30, PROG, &cfg, &cli);
}

static struct pk_kube_ref claims_ref(const char *name)
{
	struct pk_kube_ref r = {.group = PK_CAPI_IPAM_GROUP,
	                        .version = CLAIM_VERSION,
	                        .resource = "ipaddressclaims",
	                        .namespace = ns,
	                        .name = name};
	return r;
}

static struct pk_kube_ref addresses_ref(const char *name)
{
	struct pk_kube_ref r = claims_ref(name);
	r.resource = "ipaddresses";
	return r;
}

static struct pk_kube_ref pools_ref(const char *name)
{
	struct pk_kube_ref r = {.group = PK_POOL_GROUP,
	                        .version = POOL_VERSION,
	                        .resource = "ippools",
	                        .namespace = ns,
	                        .name = name};
	return r;
}

/* ---- flags ---- */

static long parse_long(int idx, const char *s, long min, long max)
{
	uint64_t v;
	struct pk_err err;
	if (pk_parse_uint(s != NULL ? s : "", (uint64_t)min, (uint64_t)max, &v, &err) != PK_OK) {
		fprintf(stderr, PROG ": --%s %s\n", flags[idx].name, err.msg);
		exit(2);
	}
	return (long)v;
}

/* "a.b.c.d/n" into cidr_base and cidr_bits. */
static void parse_cidr(const char *s)
{
	char ip[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : 0;
	struct in_addr a;
	if (slash == NULL || n == 0 || n >= sizeof(ip)) {
		fprintf(stderr,
		        PROG ": --cidr must be an IPv4 CIDR such as 10.64.0.0/16, got \"%s\"\n", s);
		exit(2);
	}
	memcpy(ip, s, n);
	ip[n] = '\0';
	if (inet_pton(AF_INET, ip, &a) != 1) {
		fprintf(stderr, PROG ": --cidr: \"%s\" is not an IPv4 address\n", ip);
		exit(2);
	}
	cidr_bits = (unsigned)parse_long(F_CIDR, slash + 1, 8, 30);
	cidr_base = ntohl(a.s_addr) & ~((1u << (32 - cidr_bits)) - 1u);
}

/* The i-th address handed out (0-based): the pool's first usable address plus i. */
static void address_text(long i, char *buf, size_t len)
{
	struct in_addr a = {.s_addr = htonl(cidr_base + 1u + (uint32_t)i)};
	if (inet_ntop(AF_INET, &a, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "0.0.0.0");
}

static long capacity(void)
{
	return (1L << (32 - cidr_bits)) - 2;
}

/* ---- a parallel loop over [0, n) ---- */

struct par {
	atomic_long next;
	long n;
	void (*fn)(void *ud, long i);
	void *ud;
	atomic_long done;
	double started;
	const char *what;
};

static void *par_main(void *arg)
{
	struct par *p = arg;
	for (;;) {
		long i = atomic_fetch_add(&p->next, 1);
		if (i >= p->n)
			return NULL;
		p->fn(p->ud, i);
		long d = atomic_fetch_add(&p->done, 1) + 1;
		if (p->what != NULL && d % 10000 == 0)
			fprintf(stderr, PROG ": %s: %ld of %ld (%.0f/s)\n", p->what, d, p->n,
			        (double)d / (now_s() - p->started));
	}
}

static void parallel_for(long threads, long n, void (*fn)(void *, long), void *ud, const char *what)
{
	struct par p = {.n = n, .fn = fn, .ud = ud, .started = now_s(), .what = what};
	atomic_init(&p.next, 0);
	atomic_init(&p.done, 0);
	pthread_t t[64];
	if (threads > 64)
		threads = 64;
	for (long i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, par_main, &p) != 0) {
			fprintf(stderr, PROG ": cannot start a thread\n");
			exit(1);
		}
	for (long i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
}

/* ---- set-up ---- */

static void create_pool(bool paused)
{
	char cidr[64], first[INET_ADDRSTRLEN];
	struct in_addr a = {.s_addr = htonl(cidr_base)};
	if (inet_ntop(AF_INET, &a, first, sizeof(first)) == NULL)
		fail_oom();
	snprintf(cidr, sizeof(cidr), "%s/%u", first, cidr_bits);
	json_t *o =
	    json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:[s], s:i}}", "apiVersion",
	              PK_POOL_GROUP "/" POOL_VERSION, "kind", PK_POOL_KIND, "metadata", "name",
	              POOL_NAME, "namespace", ns, "spec", "addresses", cidr, "prefix", (int)prefix);
	if (o == NULL)
		fail_oom();
	if (paused)
		json_object_set_new(json_object_get(o, "metadata"), "annotations",
		                    json_pack("{s:s}", PK_PAUSED_ANNOTATION, "true"));
	struct pk_kube_ref r = pools_ref(NULL);
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_client_create(cli, &r, o, NULL, NULL, &e);
	json_decref(o);
	if (rc != PK_KUBE_OK)
		fail("create IPPool", POOL_NAME, &e);
}

static void claim_name(long i, char *buf, size_t len)
{
	snprintf(buf, len, "claim-%06ld", i);
}

static void create_claim(void *ud, long i)
{
	(void)ud;
	char name[32];
	claim_name(i, name, sizeof(name));
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{s:s, s:s, s:s}}}", "apiVersion",
	                      PK_CAPI_IPAM_GROUP "/" CLAIM_VERSION, "kind", "IPAddressClaim",
	                      "metadata", "name", name, "namespace", ns, "spec", "poolRef",
	                      "apiGroup", PK_POOL_GROUP, "kind", PK_POOL_KIND, "name", POOL_NAME);
	if (o == NULL)
		fail_oom();
	struct pk_kube_ref r = claims_ref(NULL);
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_client_create(cli, &r, o, NULL, NULL, &e);
	json_decref(o);
	if (rc != PK_KUBE_OK)
		fail("create IPAddressClaim", name, &e);
}

static int cmd_prepare(bool paused)
{
	if (count > capacity()) {
		fprintf(stderr, PROG ": -n %ld claims do not fit a /%u pool (%ld addresses)\n",
		        count, cidr_bits, capacity());
		return 2;
	}
	bench_kube_namespace(PROG, cli, ns);
	create_pool(paused);
	double t0 = now_s();
	parallel_for(CREATORS, count, create_claim, NULL, "claims created");
	double s = now_s() - t0;
	printf("%ld IPAddressClaims created in namespace %s in %.2f s (%.0f/s, %d at a time); "
	       "pool %s%s\n",
	       count, ns, s, (double)count / s, CREATORS, POOL_NAME, paused ? " (paused)" : "");
	printf("RESULT mode=prepare claims=%ld seconds=%.3f\n", count, s);
	return 0;
}

/* ---- watching claims become Ready ---- */

struct claim_item {
	bool ready;
};

static atomic_long ready_count;

static void *claim_transform(void *ud, const json_t *obj)
{
	(void)ud;
	struct claim_item *it = malloc(sizeof(*it));
	if (it == NULL)
		return NULL;
	const json_t *c = pk_meta_condition(
	    json_object_get(json_object_get(obj, "status"), "conditions"), "Ready");
	const char *s = pk_json_cstr_at(c, "status");
	it->ready = s != NULL && strcmp(s, "True") == 0;
	return it;
}

static void on_add(void *ud, const char *key, const void *item)
{
	(void)ud;
	(void)key;
	if (((const struct claim_item *)item)->ready)
		atomic_fetch_add(&ready_count, 1);
}

static void on_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)ud;
	(void)key;
	bool was = ((const struct claim_item *)old)->ready,
	     is = ((const struct claim_item *)item)->ready;
	if (is && !was)
		atomic_fetch_add(&ready_count, 1);
	else if (was && !is)
		atomic_fetch_sub(&ready_count, 1);
}

static void on_delete(void *ud, const char *key, const void *item)
{
	(void)ud;
	(void)key;
	if (((const struct claim_item *)item)->ready)
		atomic_fetch_sub(&ready_count, 1);
}

static struct pk_kube_informer *watch_claims(void)
{
	struct pk_kube_informer_opts o = {
	    .ref = claims_ref(NULL),
	    .transform = claim_transform,
	    .handlers = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete},
	};
	o.ref.name = NULL;
	return bench_kube_informer(PROG ": watching claims", cli, &o, 120000);
}

/* When the first claim and half the claims (of those not Ready at the start) became Ready. */
static double first_ready_s, half_ready_s;

/* Waits until n claims are Ready; the time they were seen, or < 0 on timeout. */
static double wait_ready(double t0, long had)
{
	double next_report = now_s() + 10;
	first_ready_s = half_ready_s = -1;
	long ready;
	while ((ready = atomic_load(&ready_count)) < count) {
		double t = now_s();
		if (first_ready_s < 0 && ready > had)
			first_ready_s = t - t0;
		if (half_ready_s < 0 && ready - had >= (count - had + 1) / 2)
			half_ready_s = t - t0;
		if (t - t0 > (double)timeout_s)
			return -1;
		if (t >= next_report) {
			fprintf(stderr, PROG ": %ld of %ld claims Ready after %.0f s\n",
			        atomic_load(&ready_count), count, t - t0);
			next_report = t + 10;
		}
		sleep_ms(5);
	}
	double t = now_s();
	if (first_ready_s < 0)
		first_ready_s = t - t0;
	if (half_ready_s < 0)
		half_ready_s = t - t0;
	return t;
}

/* ---- the controller's process: CPU seconds and memory from /proc ---- */

struct proc_sample {
	double cpu_s;
	long hwm_kib, rss_kib;
};

static bool proc_sample(long pid, struct proc_sample *s)
{
	memset(s, 0, sizeof(*s));
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* After "pid (comm) ": field 3 (state) onwards; utime and stime are 14 and 15. */
	char *p = strrchr(buf, ')');
	if (p == NULL)
		return false;
	p++;
	unsigned long long ticks = 0;
	for (int field = 3; field <= 15; field++) {
		while (*p == ' ')
			p++;
		char *end = p;
		while (*end != ' ' && *end != '\0')
			end++;
		if (field >= 14)
			ticks += strtoull(p, NULL, 10);
		p = end;
	}
	long hz = sysconf(_SC_CLK_TCK);
	s->cpu_s = (double)ticks / (double)(hz > 0 ? hz : 100);
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	char line[256];
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "VmHWM:", 6) == 0)
			s->hwm_kib = strtol(line + 6, NULL, 10);
		else if (strncmp(line, "VmRSS:", 6) == 0)
			s->rss_kib = strtol(line + 6, NULL, 10);
	}
	fclose(f);
	return true;
}

static void unpause_pool(void)
{
	json_t *patch = json_pack("{s:{s:{s:n}}}", "metadata", "annotations", PK_PAUSED_ANNOTATION);
	struct pk_kube_ref r = pools_ref(POOL_NAME);
	struct pk_kube_error e;
	enum pk_kube_reason rc =
	    pk_kube_client_patch(cli, &r, PK_KUBE_PATCH_MERGE, patch, NULL, NULL, &e);
	json_decref(patch);
	if (rc != PK_KUBE_OK)
		fail("unpause IPPool", POOL_NAME, &e);
}

static int cmd_wait(bool unpause, long pid)
{
	struct pk_kube_informer *inf = watch_claims();
	long had = atomic_load(&ready_count);
	struct proc_sample p0 = {0}, p1 = {0};
	if (pid > 0 && !proc_sample(pid, &p0)) {
		fprintf(stderr, PROG ": --controller-pid %ld: no such process\n", pid);
		return 1;
	}
	double t0 = now_s();
	if (unpause)
		unpause_pool();
	double t1 = wait_ready(t0, had);
	bool alive = pid > 0 && proc_sample(pid, &p1);
	pk_kube_informer_free(inf);
	if (t1 < 0) {
		printf("timed out after %ld s: %ld of %ld claims Ready\n", timeout_s,
		       atomic_load(&ready_count), count);
		return 1;
	}
	double s = t1 - t0;
	printf("%ld claims Ready in %.2f s (%.1f claims/s; %ld were Ready at the start); "
	       "the first after %.2f s, half after %.2f s\n",
	       count, s, (double)count / s, had, first_ready_s, half_ready_s);
	if (alive)
		printf("controller pid %ld: %.2f CPU seconds in that time (%.2f in all), "
		       "peak RSS %.1f MiB, RSS now %.1f MiB\n",
		       pid, p1.cpu_s - p0.cpu_s, p1.cpu_s, (double)p1.hwm_kib / 1024.0,
		       (double)p1.rss_kib / 1024.0);
	printf("RESULT mode=controller claims=%ld seconds=%.3f per_s=%.1f cpu_s=%.2f "
	       "total_cpu_s=%.2f hwm_kib=%ld rss_kib=%ld first_s=%.3f half_s=%.3f\n",
	       count, s, (double)count / s, p1.cpu_s - p0.cpu_s, p1.cpu_s, p1.hwm_kib, p1.rss_kib,
	       first_ready_s, half_ready_s);
	return 0;
}

/* ---- the baseline: the writes a provider cannot avoid, nothing else ---- */

struct baseline {
	json_t *claims; /* items, in the order the list returned them */
	const char *pool_uid;
};

/* 1. The finalizer, as a JSON patch that tests the resourceVersion. */
static void baseline_finalizer(void *ud, long i)
{
	struct baseline *b = ud;
	const json_t *claim = json_array_get(b->claims, (size_t)i);
	const char *name = pk_json_meta_cstr(claim, "name");
	struct pk_kube_write_opts w = {.field_manager = MANAGER};
	struct pk_kube_error e;
	struct pk_kube_ref r = claims_ref(name);
	json_t *patch = pk_objects_finalizer_add_patch(claim, PK_CLAIM_FINALIZER);
	if (patch == NULL)
		fail_oom();
	enum pk_kube_reason rc =
	    pk_kube_client_patch(cli, &r, PK_KUBE_PATCH_JSON, patch, &w, NULL, &e);
	json_decref(patch);
	if (rc != PK_KUBE_OK)
		fail("add claim finalizer", name, &e);
}

/* 2. The IPAddress, named like the claim. */
static void baseline_address(void *ud, long i)
{
	struct baseline *b = ud;
	const json_t *claim = json_array_get(b->claims, (size_t)i);
	const char *name = pk_json_meta_cstr(claim, "name");
	struct pk_kube_write_opts w = {.field_manager = MANAGER};
	struct pk_kube_error e;
	char text[INET_ADDRSTRLEN];
	address_text(i, text, sizeof(text));
	struct pk_ipaddress_spec spec = {
	    .api_version = PK_CAPI_IPAM_GROUP "/" CLAIM_VERSION,
	    .address = text,
	    .prefix = prefix,
	    .pool_kind = pk_incluster_kind(pk_json_path(claim, "spec", "poolRef")),
	    .pool_name = POOL_NAME,
	    .pool_uid = b->pool_uid};
	json_t *obj = pk_objects_ipaddress(claim, &spec);
	if (obj == NULL)
		fail_oom();
	struct pk_kube_ref r = addresses_ref(NULL);
	enum pk_kube_reason rc = pk_kube_client_create(cli, &r, obj, &w, NULL, &e);
	json_decref(obj);
	if (rc != PK_KUBE_OK)
		fail("create IPAddress", name, &e);
}

/* 3. The claim's status: addressRef and Ready, as a merge patch. */
static void baseline_status(void *ud, long i)
{
	struct baseline *b = ud;
	const json_t *claim = json_array_get(b->claims, (size_t)i);
	const char *name = pk_json_meta_cstr(claim, "name");
	struct pk_kube_write_opts w = {.field_manager = MANAGER};
	struct pk_kube_error e;
	char text[INET_ADDRSTRLEN], msg[PK_ERR_MSG_MAX];
	address_text(i, text, sizeof(text));
	snprintf(msg, sizeof(msg), "address %s allocated in IPAddress %s/%s", text, ns, name);
	const json_t *g = json_object_get(json_object_get(claim, "metadata"), "generation");
	struct pk_condition cond = {.type = "Ready",
	                            .status = true,
	                            .reason = "Allocated",
	                            .message = msg,
	                            .generation = json_is_integer(g) ? json_integer_value(g) : -1};
	json_t *patch = pk_objects_claim_status_patch(claim, name, &cond, (long long)time(NULL));
	if (patch == NULL)
		fail_oom();
	struct pk_kube_ref r = claims_ref(name);
	r.subresource = "status";
	enum pk_kube_reason rc =
	    pk_kube_client_patch(cli, &r, PK_KUBE_PATCH_MERGE, patch, &w, NULL, &e);
	json_decref(patch);
	if (rc != PK_KUBE_OK)
		fail("patch claim status", name, &e);
}

static void baseline_claim(void *ud, long i)
{
	baseline_finalizer(ud, i);
	baseline_address(ud, i);
	baseline_status(ud, i);
}

static int cmd_baseline(bool by_phase)
{
	/* What the controller has in its caches before it writes: the claims and the pool. */
	struct pk_kube_ref r = claims_ref(NULL);
	struct pk_kube_list_opts lo = {.limit = 500};
	struct pk_kube_error e;
	json_t *list = NULL, *pool = NULL;
	if (pk_kube_client_list_all(cli, &r, &lo, &list, &e) != PK_KUBE_OK)
		fail("list IPAddressClaims in", ns, &e);
	r = pools_ref(POOL_NAME);
	if (pk_kube_client_get(cli, &r, &pool, &e) != PK_KUBE_OK)
		fail("get IPPool", POOL_NAME, &e);
	struct baseline b = {.claims = json_object_get(list, "items"),
	                     .pool_uid = pk_json_meta_cstr(pool, "uid")};
	long n = (long)json_array_size(b.claims);
	if (n != count || b.pool_uid == NULL) {
		fprintf(stderr, PROG ": namespace %s has %ld claims, expected -n %ld\n", ns, n,
		        count);
		return 1;
	}
	if (count > capacity()) {
		fprintf(stderr, PROG ": -n %ld claims do not fit a /%u pool\n", count, cidr_bits);
		return 2;
	}
	/* The same watch on the claims as during the controller's run: the same load. */
	struct pk_kube_informer *inf = watch_claims();
	double t0 = now_s();
	if (by_phase) {
		parallel_for(workers, count, baseline_finalizer, &b, NULL);
		parallel_for(workers, count, baseline_address, &b, NULL);
		parallel_for(workers, count, baseline_status, &b, NULL);
	} else {
		parallel_for(workers, count, baseline_claim, &b, NULL);
	}
	double t1 = now_s();
	double t2 = wait_ready(t0, 0);
	pk_kube_informer_free(inf);
	json_decref(list);
	json_decref(pool);
	double s = t1 - t0;
	printf("baseline: %ld claims x 3 writes (finalizer JSON patch, IPAddress create, status "
	       "merge patch), %s, in %.2f s with %ld worker(s): %.1f claims/s, %.0f writes/s; "
	       "all seen Ready after %.2f s\n",
	       count, by_phase ? "each write for every claim in turn" : "claim by claim", s,
	       workers, (double)count / s, 3.0 * (double)count / s, t2 > 0 ? t2 - t0 : -1.0);
	printf("RESULT mode=baseline order=%s claims=%ld workers=%ld seconds=%.3f per_s=%.1f "
	       "ready_seconds=%.3f\n",
	       by_phase ? "phase" : "claim", count, workers, s, (double)count / s,
	       t2 > 0 ? t2 - t0 : -1.0);
	return t2 > 0 ? 0 : 1;
}

/* ---- 100,000 IPAddresses for the memory figure ---- */

struct addr_run {
	const char *pool_uid;
};

static void create_address(void *ud, long i)
{
	struct addr_run *a = ud;
	char name[32], claim[32], text[INET_ADDRSTRLEN];
	snprintf(name, sizeof(name), "addr-%07ld", i);
	snprintf(claim, sizeof(claim), "claim-%07ld", i);
	address_text(i, text, sizeof(text));
	json_t *o =
	    json_pack("{s:s, s:s, s:{s:s, s:s, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]},"
	              " s:{s:s, s:i, s:{s:s}, s:{s:s, s:s, s:s}}}",
	              "apiVersion", PK_CAPI_IPAM_GROUP "/" CLAIM_VERSION, "kind", "IPAddress",
	              "metadata", "name", name, "namespace", ns, "ownerReferences", "apiVersion",
	              PK_POOL_GROUP "/" POOL_VERSION, "kind", PK_POOL_KIND, "name", POOL_NAME,
	              "uid", a->pool_uid, "controller", 0, "blockOwnerDeletion", 1, "spec",
	              "address", text, "prefix", (int)prefix, "claimRef", "name", claim, "poolRef",
	              "apiGroup", PK_POOL_GROUP, "kind", PK_POOL_KIND, "name", POOL_NAME);
	if (o == NULL)
		fail_oom();
	struct pk_kube_ref r = addresses_ref(NULL);
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_client_create(cli, &r, o, NULL, NULL, &e);
	json_decref(o);
	if (rc != PK_KUBE_OK && rc != PK_KUBE_ALREADY_EXISTS)
		fail("create IPAddress", name, &e);
}

static int cmd_addresses(void)
{
	if (count > capacity()) {
		fprintf(stderr, PROG ": -n %ld addresses do not fit a /%u pool (%ld addresses)\n",
		        count, cidr_bits, capacity());
		return 2;
	}
	bench_kube_namespace(PROG, cli, ns);
	create_pool(false);
	json_t *pool = NULL;
	struct pk_kube_ref r = pools_ref(POOL_NAME);
	struct pk_kube_error e;
	if (pk_kube_client_get(cli, &r, &pool, &e) != PK_KUBE_OK)
		fail("get IPPool", POOL_NAME, &e);
	struct addr_run a = {.pool_uid = pk_json_meta_cstr(pool, "uid")};
	double t0 = now_s();
	parallel_for(CREATORS, count, create_address, &a, "IPAddresses created");
	double s = now_s() - t0;
	json_decref(pool);
	printf("%ld IPAddresses created in namespace %s in %.1f s (%.0f/s, %d at a time)\n", count,
	       ns, s, (double)count / s, CREATORS);
	printf("RESULT mode=addresses addresses=%ld seconds=%.3f\n", count, s);
	return 0;
}

/* ---- clean-up ---- */

struct names {
	char **v;
	bool *finalized;
	long n, cap;
	struct pk_kube_ref ref;
	bool delete;
};

static int collect_names(void *ud, const json_t *page)
{
	struct names *l = ud;
	size_t i;
	const json_t *o;
	json_array_foreach(json_object_get(page, "items"), i, o)
	{
		bool fin = json_array_size(
		               json_object_get(json_object_get(o, "metadata"), "finalizers")) > 0;
		if (!fin && !l->delete)
			continue;
		if (l->n == l->cap) {
			l->cap = l->cap ? l->cap * 2 : 1024;
			char **v = realloc(l->v, (size_t)l->cap * sizeof(*v));
			if (v == NULL)
				fail_oom();
			l->v = v;
			bool *f = realloc(l->finalized, (size_t)l->cap * sizeof(*f));
			if (f == NULL)
				fail_oom();
			l->finalized = f;
		}
		l->finalized[l->n] = fin;
		l->v[l->n] = strdup(pk_json_meta_cstr(o, "name"));
		if (l->v[l->n] == NULL)
			fail_oom();
		l->n++;
	}
	return 0;
}

/* Takes the object's finalizers off, then (l->delete) deletes it. */
static void clear_one(void *ud, long i)
{
	struct names *l = ud;
	struct pk_kube_ref r = l->ref;
	r.name = l->v[i];
	struct pk_kube_error e;
	enum pk_kube_reason rc = PK_KUBE_OK;
	if (l->finalized[i]) {
		json_t *patch = json_pack("{s:{s:n}}", "metadata", "finalizers");
		rc = pk_kube_client_patch(cli, &r, PK_KUBE_PATCH_MERGE, patch, NULL, NULL, &e);
		json_decref(patch);
		if (rc != PK_KUBE_OK && rc != PK_KUBE_NOT_FOUND)
			fail("remove finalizers of", r.name, &e);
	}
	if (l->delete &&rc == PK_KUBE_OK) {
		rc = pk_kube_client_delete(cli, &r, NULL, NULL, &e);
		if (rc != PK_KUBE_OK && rc != PK_KUBE_NOT_FOUND)
			fail("delete", r.name, &e);
	}
}

/*
 * Every object of r's collection: finalizers off and, with del, deleted,
 * 16 at a time (the apiserver deletes a collection one object at a time,
 * which makes a namespace of 100,000 objects slow to go). Returns how many
 * objects it touched.
 */
static long clear_objects(struct pk_kube_ref r, bool del)
{
	struct names l = {.ref = r, .delete = del};
	struct pk_kube_list_opts lo = {.limit = 500};
	struct pk_kube_error e;
	enum pk_kube_reason rc =
	    pk_kube_client_list_pages(cli, &r, &lo, collect_names, &l, NULL, 0, &e);
	if (rc == PK_KUBE_NOT_FOUND)
		return 0;
	if (rc != PK_KUBE_OK)
		fail("list", r.resource, &e);
	parallel_for(CREATORS, l.n, clear_one, &l, NULL);
	for (long i = 0; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
	free(l.finalized);
	return l.n;
}

static long clear_all(bool del)
{
	return clear_objects(claims_ref(NULL), del) + clear_objects(addresses_ref(NULL), del) +
	       clear_objects(pools_ref(NULL), del);
}

static int cmd_cleanup(void)
{
	struct pk_kube_ref nsr = {.version = "v1", .resource = "namespaces", .name = ns};
	json_t *o = NULL;
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_client_get(cli, &nsr, &o, &e);
	json_decref(o);
	if (rc == PK_KUBE_NOT_FOUND)
		return 0;
	if (rc != PK_KUBE_OK)
		fail("get namespace", ns, &e);
	double t0 = now_s(), next_sweep = t0 + 30;
	long n = clear_all(true);
	rc = pk_kube_client_delete(cli, &nsr, NULL, NULL, &e);
	if (rc != PK_KUBE_OK && rc != PK_KUBE_NOT_FOUND)
		fail("delete namespace", ns, &e);
	for (;;) {
		rc = pk_kube_client_get(cli, &nsr, &o, &e);
		json_decref(o);
		o = NULL;
		if (rc == PK_KUBE_NOT_FOUND)
			break;
		if (rc != PK_KUBE_OK)
			fail("get namespace", ns, &e);
		double t = now_s();
		if (t - t0 > (double)timeout_s) {
			fprintf(stderr, PROG ": namespace %s still there after %ld s\n", ns,
			        timeout_s);
			return 1;
		}
		/* Objects that gained a finalizer since (a controller still running). */
		if (t >= next_sweep) {
			n += clear_all(false);
			next_sweep = t + 30;
		}
		sleep_ms(250);
	}
	fprintf(stderr, PROG ": namespace %s deleted in %.1f s (%ld objects cleared)\n", ns,
	        now_s() - t0, n);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		pk_flags_print_help(stderr, USAGE, SUMMARY, flags, F_NFLAGS);
		return 2;
	}
	const char *cmd = argv[1];
	static const char *const cmds[] = {"prepare", "baseline", "wait", "addresses", "cleanup"};
	bool known = strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		known |= strcmp(cmd, cmds[i]) == 0;
	if (!known) {
		fprintf(stderr,
		        PROG ": unknown command \"%s\" (prepare, baseline, wait, addresses, "
		             "cleanup)\n",
		        cmd);
		return 2;
	}
	struct pk_flag_value vals[F_NFLAGS];
	const char **pos = calloc((size_t)argc + 1, sizeof(*pos));
	size_t npos = 0;
	struct pk_err err;
	if (pos == NULL)
		fail_oom();
	int prc = pk_flags_parse(flags, F_NFLAGS, argc - 2, argv + 2, vals, pos, &npos, &err);
	free(pos);
	if (prc != PK_OK) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 2;
	}
	if (pk_flags_get_bool(vals, F_HELP) || strcmp(cmd, "-h") == 0 ||
	    strcmp(cmd, "--help") == 0) {
		pk_flags_print_help(stdout, USAGE, SUMMARY, flags, F_NFLAGS);
		return 0;
	}
	ns = pk_flags_get_string(flags, vals, F_NAMESPACE);
	if (*ns == '\0') {
		fprintf(stderr, PROG ": --namespace is required\n");
		return 2;
	}
	count = parse_long(F_COUNT_N, pk_flags_get_string(flags, vals, F_COUNT_N), 1, 10000000);
	workers = parse_long(F_WORKERS, pk_flags_get_string(flags, vals, F_WORKERS), 1, 64);
	timeout_s = parse_long(F_TIMEOUT, pk_flags_get_string(flags, vals, F_TIMEOUT), 1, 86400);
	long pid = parse_long(F_PID, pk_flags_get_string(flags, vals, F_PID), 0, 1L << 30);
	const char *cidr = pk_flags_get_string(flags, vals, F_CIDR);
	parse_cidr(*cidr ? cidr : strcmp(cmd, "addresses") == 0 ? "10.64.0.0/14" : "10.64.0.0/16");
	const char *pf = pk_flags_get_string(flags, vals, F_PREFIX);
	prefix = *pf ? (unsigned)parse_long(F_PREFIX, pf, 1, 32) : cidr_bits;
	signal(SIGPIPE, SIG_IGN);
	connect_client();
	int rc;
	if (strcmp(cmd, "prepare") == 0)
		rc = cmd_prepare(pk_flags_get_bool(vals, F_PAUSED));
	else if (strcmp(cmd, "baseline") == 0)
		rc = cmd_baseline(strcmp(pk_flags_get_string(flags, vals, F_ORDER), "phase") == 0);
	else if (strcmp(cmd, "wait") == 0)
		rc = cmd_wait(pk_flags_get_bool(vals, F_UNPAUSE), pid);
	else if (strcmp(cmd, "addresses") == 0)
		rc = cmd_addresses();
	else
		rc = cmd_cleanup();
	fflush(stdout);
	pk_kube_client_free(cli);
	pk_kube_config_free(cfg);
	return rc;
}
