/*
 * bigobj_bench.c - pk_bigobj_bench: what hostile-size objects cost the
 * client and the controller's informers. A program that prints figures,
 * never a test.
 *
 *   KUBECONFIG=... pk_bigobj_bench [-n OBJECTS] [-s ANNOTATION_BYTES]
 *
 * It creates two namespaces of OBJECTS IPAddressClaims each (default 300):
 * in one every claim carries one annotation of ANNOTATION_BYTES (default
 * 256 KiB less its key: the API server's limit on all annotations of an
 * object), in the other none (the baseline). Each phase runs in a child
 * process, so each peak RSS is that phase's own (getrusage of the child):
 *   informer           the controller's informer (pk_trim_claim as the
 *                      transform) until synced, with the client's default
 *                      caps (16 MiB a page, 3 MiB an object), or a 64 MiB page
 *   pages, 250 a page  pk_kube_client_list_pages as the leader reads
 *                      IPAddresses at the start of its term
 * and prints the GET requests each made (pages read again smaller count).
 * It deletes both namespaces at the end.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_kube.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_informer.h"
#include "parse.h"
#include "rules.h"
#include "trim.h"

#define PAD_KEY "bench.poolkeeper.io/pad"

static struct pk_kube_config *cfg;
static struct pk_kube_client *cli;
static char ns_big[64], ns_small[64], version[16];
static long nobj = 300;
static long pad = 256 * 1024 - 64;

static _Noreturn void fail(const char *what, enum pk_kube_reason rc, const struct pk_kube_error *e)
{
	bench_kube_fail("pk_bigobj_bench", what, rc, e);
}

static void connect_client(size_t page_cap)
{
	bench_kube_connect("pk_bigobj_bench", page_cap, NULL, &cfg, &cli);
}

static void disconnect(void)
{
	bench_kube_disconnect(&cfg, &cli);
}

static struct pk_kube_ref claims(const char *ns)
{
	struct pk_kube_ref r = {.group = PK_CAPI_IPAM_GROUP,
	                        .version = version,
	                        .resource = "ipaddressclaims",
	                        .namespace = ns};
	return r;
}

/* ---- setup ---- */

struct filler {
	const char *ns;
	long from, to;
	const char *value; /* NULL: no annotation */
};

static void *fill(void *arg)
{
	struct filler *f = arg;
	struct pk_kube_ref r = claims(f->ns);
	char api[64];
	snprintf(api, sizeof(api), "%s/%s", PK_CAPI_IPAM_GROUP, version);
	for (long i = f->from; i < f->to; i++) {
		char name[32];
		snprintf(name, sizeof(name), "claim-%05ld", i);
		json_t *o =
		    json_pack("{s:s,s:s,s:{s:s},s:{s:{s:s,s:s,s:s}}}", "apiVersion", api, "kind",
		              "IPAddressClaim", "metadata", "name", name, "spec", "poolRef",
		              "apiGroup", PK_POOL_GROUP, "kind", PK_POOL_KIND, "name", "bench");
		if (f->value != NULL)
			json_object_set_new(json_object_get(o, "metadata"), "annotations",
			                    json_pack("{s:s}", PAD_KEY, f->value));
		bench_kube_create("pk_bigobj_bench", cli, &r, o);
	}
	return NULL;
}

static void make_namespace(const char *ns, const char *value)
{
	bench_kube_namespace("pk_bigobj_bench", cli, ns);
	enum { NT = 4 };
	pthread_t t[NT];
	struct filler f[NT];
	for (int i = 0; i < NT; i++) {
		f[i] = (struct filler){ns, nobj * i / NT, nobj * (i + 1) / NT, value};
		pthread_create(&t[i], NULL, fill, &f[i]);
	}
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
}

static void setup(void)
{
	connect_client(0);
	static const char *const want[] = {"v1beta2", "v1beta1", NULL};
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_client_preferred_version(cli, PK_CAPI_IPAM_GROUP, want,
	                                                          version, sizeof(version), &e);
	if (rc != PK_KUBE_OK || version[0] == '\0')
		fail("IPAddressClaim version", rc, &e);
	snprintf(ns_big, sizeof(ns_big), "pk-bigobj-%d", (int)getpid());
	snprintf(ns_small, sizeof(ns_small), "pk-smallobj-%d", (int)getpid());
	char *value = malloc((size_t)pad + 1);
	memset(value, 'x', (size_t)pad);
	value[pad] = '\0';
	make_namespace(ns_small, NULL);
	make_namespace(ns_big, value);
	free(value);
	disconnect();
}

static void teardown(void)
{
	connect_client(0);
	const char *nss[] = {ns_big, ns_small};
	for (int i = 0; i < 2; i++) {
		struct pk_kube_ref r = {.version = "v1", .resource = "namespaces", .name = nss[i]};
		struct pk_kube_error e;
		if (pk_kube_client_delete(cli, &r, NULL, NULL, &e) != PK_KUBE_OK)
			fprintf(stderr, "pk_bigobj_bench: delete namespace %s: %s\n", nss[i],
			        e.message);
	}
	disconnect();
}

/* ---- phases, each in a child ---- */

static unsigned long long gets;

static void count_gets(void *ud, const char *method, long code, unsigned long long n)
{
	(void)ud;
	(void)code;
	if (strcmp(method, "GET") == 0)
		gets += n;
}

/* The child's figures go back through a pipe. */
struct figures {
	long objects;
	unsigned long long gets;
};

static int out_fd = -1;

static int report(long objects)
{
	pk_kube_client_request_stats(cli, count_gets, NULL);
	struct figures f = {objects, gets};
	if (write(out_fd, &f, sizeof(f)) != (ssize_t)sizeof(f))
		return 1;
	return objects == nobj ? 0 : 2;
}

static void *trim(void *ud, const json_t *obj)
{
	(void)ud;
	return pk_trim_claim(obj);
}

static void release(void *ud, void *item)
{
	(void)ud;
	json_decref(item);
}

static int informer(const char *ns, size_t page_cap)
{
	connect_client(page_cap);
	struct pk_kube_informer_opts o = {.ref = claims(ns), .transform = trim, .release = release};
	struct pk_kube_informer *inf = bench_kube_informer("pk_bigobj_bench", cli, &o, 600000);
	long n = (long)pk_kube_informer_count(inf);
	int rc = report(n);
	pk_kube_informer_free(inf);
	disconnect();
	return rc;
}

static long listed;

static int count_page(void *ud, const json_t *page)
{
	(void)ud;
	listed += (long)json_array_size(json_object_get(page, "items"));
	return 0;
}

static int pages(const char *ns)
{
	connect_client(0);
	struct pk_kube_ref r = claims(ns);
	struct pk_kube_list_opts o = {.limit = 250};
	struct pk_kube_error e;
	enum pk_kube_reason rc =
	    pk_kube_client_list_pages(cli, &r, &o, count_page, NULL, NULL, 0, &e);
	if (rc != PK_KUBE_OK)
		fail("list pages", rc, &e);
	int x = report(listed);
	disconnect();
	return x;
}

static int small_informer(void)
{
	return informer(ns_small, 0);
}
static int big_informer(void)
{
	return informer(ns_big, 0);
}
static int big_informer_64(void)
{
	return informer(ns_big, 64u << 20);
}
static int small_pages(void)
{
	return pages(ns_small);
}
static int big_pages(void)
{
	return pages(ns_big);
}

static void measure(const char *what, int (*fn)(void))
{
	int p[2];
	if (pipe(p) != 0)
		exit(1);
	fflush(NULL);
	long long t0 = pk_kube_now_ns();
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		out_fd = p[1];
		_exit(fn());
	}
	close(p[1]);
	struct figures f = {0};
	ssize_t got = read(p[0], &f, sizeof(f));
	close(p[0]);
	int status = 0;
	struct rusage ru;
	wait4(pid, &status, 0, &ru);
	double s = (double)(pk_kube_now_ns() - t0) / 1e9;
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	printf("| %-44s | %7ld | %8.2f | %9.1f | %12llu |%s\n", what,
	       got == (ssize_t)sizeof(f) ? f.objects : -1, s, (double)ru.ru_maxrss / 1024.0, f.gets,
	       code ? " (failed)" : "");
}

static long number(const char *flag, const char *text, long lo, long hi)
{
	int64_t v;
	if (pk_parse_i64(text, lo, hi, &v, NULL) != PK_OK) {
		fprintf(stderr, "pk_bigobj_bench: %s takes %ld..%ld\n", flag, lo, hi);
		exit(2);
	}
	return (long)v;
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "n:s:")) != -1) {
		if (opt == 'n') {
			nobj = number("-n", optarg, 1, 100000);
		} else if (opt == 's') {
			pad = number("-s", optarg, 1, 256 * 1024 - 64);
		} else {
			fprintf(stderr,
			        "usage: pk_bigobj_bench [-n OBJECTS] [-s ANNOTATION_BYTES]\n");
			return 2;
		}
	}
	long long t0 = pk_kube_now_ns();
	setup();
	printf("pk_bigobj_bench: %ld IPAddressClaims (%s) with a %ld-byte annotation in %s, %ld "
	       "without in %s, created in %.1f s\n\n",
	       nobj, version, pad, ns_big, nobj, ns_small, (double)(pk_kube_now_ns() - t0) / 1e9);
	printf("| %-44s | %7s | %8s | %9s | %12s |\n", "phase", "objects", "seconds",
	       "peak RSS MiB", "GET requests");
	printf("|----------------------------------------------|---------|----------|-----------|"
	       "--------------|\n");
	char big[3][64];
	snprintf(big[0], sizeof(big[0]), "informer, %ld-byte claims, 16 MiB pages", pad);
	snprintf(big[1], sizeof(big[1]), "informer, %ld-byte claims, 64 MiB pages", pad);
	snprintf(big[2], sizeof(big[2]), "list pages of 250, %ld-byte claims", pad);
	measure("informer, small claims (baseline)", small_informer);
	measure(big[0], big_informer);
	measure(big[1], big_informer_64);
	measure("list pages of 250, small claims (baseline)", small_pages);
	measure(big[2], big_pages);
	teardown();
	return 0;
}
