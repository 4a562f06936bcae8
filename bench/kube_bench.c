/*
 * kube_bench.c - pk_kube_bench: how fast poolkeeper's Kubernetes client
 * lists and watches, and how much memory it takes, next to kubectl on the
 * same objects in the same run. A program that prints figures, never a test.
 *
 *   KUBECONFIG=... pk_kube_bench [-n OBJECTS] [-k KUBECTL]
 *
 * It creates a namespace pk-bench-<pid> with OBJECTS ConfigMaps (default
 * 10,000; each with a label and a 200-byte value, about the size of an
 * IPAddress), then measures, each in a child process so that peak RSS is
 * that phase's alone (getrusage of the child):
 *   list            pk_kube_client_list_all, 500 per page, the whole List kept as JSON
 *   kubectl         `kubectl get configmaps -n NS -o json` (output to /dev/null)
 *   watch           a watch from "now": the server streams one synthetic ADDED
 *                   event per object; each event is split, decoded and dropped
 *   informer/json   an informer storing each object's json_t
 *   informer/compact an informer storing a 48-byte struct per object (transform)
 * and deletes the namespace at the end.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_kube.h"
#include "json.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_informer.h"
#include "kube_watch.h"
#include "parse.h"

static struct pk_kube_config *cfg;
static struct pk_kube_client *cli;
static char ns[64];
static long nobj = 10000;

static _Noreturn void fail(const char *what, enum pk_kube_reason rc, const struct pk_kube_error *e)
{
	bench_kube_fail("pk_kube_bench", what, rc, e);
}

static void connect_client(void)
{
	bench_kube_connect("pk_kube_bench", 1u << 30, NULL, &cfg, &cli);
}

static void disconnect(void)
{
	bench_kube_disconnect(&cfg, &cli);
}

/* ---- setup ---- */

struct filler {
	long from, to;
};

static void *fill(void *arg)
{
	struct filler *f = arg;
	char value[201];
	memset(value, 'x', 200);
	value[200] = '\0';
	struct pk_kube_ref r = {.version = "v1", .resource = "configmaps", .namespace = ns};
	for (long i = f->from; i < f->to; i++) {
		char name[32];
		snprintf(name, sizeof(name), "bench-%05ld", i);
		json_t *o = json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1",
		                      "kind", "ConfigMap", "metadata", "name", name, "labels",
		                      "app", "pk-bench", "data", "v", value);
		bench_kube_create("pk_kube_bench", cli, &r, o);
	}
	return NULL;
}

static void setup(void)
{
	connect_client();
	snprintf(ns, sizeof(ns), "pk-bench-%d", (int)getpid());
	bench_kube_namespace("pk_kube_bench", cli, ns);
	enum { NT = 16 };
	pthread_t t[NT];
	struct filler f[NT];
	for (int i = 0; i < NT; i++) {
		f[i] = (struct filler){nobj * i / NT, nobj * (i + 1) / NT};
		pthread_create(&t[i], NULL, fill, &f[i]);
	}
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	disconnect();
}

static void teardown(void)
{
	connect_client();
	struct pk_kube_ref r = {.version = "v1", .resource = "namespaces", .name = ns};
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_client_delete(cli, &r, NULL, NULL, &e);
	if (rc != PK_KUBE_OK)
		fprintf(stderr, "pk_kube_bench: delete namespace %s: %s\n", ns, e.message);
	disconnect();
}

/* ---- phases, each in a child ---- */

static long long now_ns(void)
{
	return pk_kube_now_ns();
}

static int phase_list(void)
{
	connect_client();
	struct pk_kube_ref r = {.version = "v1", .resource = "configmaps", .namespace = ns};
	struct pk_kube_list_opts o = {.limit = 500};
	json_t *list;
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_client_list_all(cli, &r, &o, &list, &e);
	if (rc != PK_KUBE_OK)
		fail("list", rc, &e);
	long n = (long)json_array_size(json_object_get(list, "items"));
	json_decref(list);
	disconnect();
	return n == nobj ? 0 : 2;
}

static long events;
static atomic_int stop;

static int count_event(void *ud, const struct pk_kube_event *ev)
{
	(void)ud;
	if (ev->type == PK_KUBE_EVENT_ADDED && ++events >= nobj)
		atomic_store(&stop, 1);
	return atomic_load(&stop);
}

static int phase_watch(void)
{
	connect_client();
	struct pk_kube_ref r = {.version = "v1", .resource = "configmaps", .namespace = ns};
	struct pk_kube_watch_opts o = {.timeout_s = 300, .stop = &stop};
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_watch_run(cli, &r, &o, count_event, NULL, NULL, 0, &e);
	if (rc != PK_KUBE_CANCELLED)
		fail("watch", rc, &e);
	disconnect();
	return events == nobj ? 0 : 2;
}

struct compact {
	char name[32];
	long long rv;
	unsigned char flags;
};

static void *to_compact(void *ud, const json_t *obj)
{
	(void)ud;
	struct compact *c = malloc(sizeof(*c));
	if (c == NULL)
		return NULL;
	snprintf(c->name, sizeof(c->name), "%s", pk_json_meta_cstr(obj, "name"));
	c->rv = strtoll(pk_json_meta_cstr(obj, "resourceVersion"), NULL, 10);
	c->flags = 0;
	return c;
}

static int phase_informer(bool compact)
{
	connect_client();
	struct pk_kube_informer_opts o = {
	    .ref = {.version = "v1", .resource = "configmaps", .namespace = ns},
	    .transform = compact ? to_compact : NULL,
	};
	struct pk_kube_informer *inf = bench_kube_informer("pk_kube_bench", cli, &o, 300000);
	size_t n = pk_kube_informer_count(inf);
	pk_kube_informer_free(inf);
	disconnect();
	return (long)n == nobj ? 0 : 2;
}

struct result {
	double seconds;
	long rss_kib;
	int status;
};

/* Runs fn (or argv) in a child; its wall time and peak RSS. */
static struct result measure(int (*fn)(void), char *const *argv)
{
	struct result r = {0};
	fflush(NULL);
	long long t0 = now_ns();
	pid_t pid = fork();
	if (pid == 0) {
		if (argv != NULL) {
			int fd = open("/dev/null", O_WRONLY);
			dup2(fd, 1);
			execvp(argv[0], argv);
			_exit(127);
		}
		_exit(fn());
	}
	int status = 0;
	struct rusage ru;
	wait4(pid, &status, 0, &ru);
	r.seconds = (double)(now_ns() - t0) / 1e9;
	r.rss_kib = ru.ru_maxrss;
	r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return r;
}

static int list_phase(void)
{
	return phase_list();
}
static int watch_phase(void)
{
	return phase_watch();
}
static int informer_json(void)
{
	return phase_informer(false);
}
static int informer_compact(void)
{
	return phase_informer(true);
}

static void row(const char *what, struct result r)
{
	printf("| %-34s | %8.2f | %12.0f | %9.1f |%s\n", what, r.seconds,
	       r.seconds > 0 ? (double)nobj / r.seconds : 0, (double)r.rss_kib / 1024.0,
	       r.status ? " (failed)" : "");
}

int main(int argc, char **argv)
{
	const char *kubectl = "kubectl";
	int opt;
	while ((opt = getopt(argc, argv, "n:k:")) != -1) {
		if (opt == 'n') {
			int64_t v;
			if (pk_parse_i64(optarg, 1, 1000000, &v, NULL) != PK_OK) {
				fprintf(stderr, "pk_kube_bench: -n takes 1..1000000\n");
				return 2;
			}
			nobj = (long)v;
		} else if (opt == 'k') {
			kubectl = optarg;
		} else {
			fprintf(stderr, "usage: pk_kube_bench [-n OBJECTS] [-k KUBECTL]\n");
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	long long t0 = now_ns();
	setup();
	printf(
	    "pk_kube_bench: %ld ConfigMaps (200-byte value each) created in namespace %s in %.1f "
	    "s\n\n",
	    nobj, ns, (double)(now_ns() - t0) / 1e9);
	printf("| %-34s | %8s | %12s | %9s |\n", "phase", "seconds", "objects/s", "peak RSS MiB");
	printf("|%s|%s|%s|%s|\n", "------------------------------------", "----------",
	       "--------------", "-----------");
	row("list (client, 500 per page)", measure(list_phase, NULL));
	char *kargv[] = {strdup(kubectl), strdup("get"), strdup("configmaps"), strdup("-n"),
	                 strdup(ns),      strdup("-o"),  strdup("json"),       NULL};
	row("kubectl get configmaps -o json", measure(NULL, kargv));
	row("watch (client, synthetic ADDED)", measure(watch_phase, NULL));
	row("informer, json_t store", measure(informer_json, NULL));
	row("informer, 48-byte transform store", measure(informer_compact, NULL));
	teardown();
	return 0;
}
