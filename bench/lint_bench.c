/*
 * lint_bench.c - `poolkeeper lint` at scale: N objects (a fifth pools in
 * distinct /24s over 50 namespaces, two fifths claims on them, two fifths
 * IPAddresses in them) written to files of 5,000 documents in a temporary
 * folder, then linted as the command does (pk_lint_add_files, pk_lint_run)
 * on one thread and on two; beside the baseline of the same files read
 * and loaded by the manifest loader only, on one thread. Each measurement
 * runs in its own child, so that its peak RSS is its own, five times: it
 * prints the fastest run's wall and CPU time, the median wall time and the
 * largest peak RSS. Prints figures; it never fails on time.
 *
 *   pk_lint_bench [OBJECTS]     (default 50000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "lint.h"
#include "manifest.h"
#include "tempdir.h"

#define PER_FILE 5000

/* The text of object i: pool, claim or address, by i mod 5. */
static int append_object(struct pk_buf *b, size_t i)
{
	char t[1024];
	size_t pool = i / 5, ns = pool % 50;
	int n;
	switch (i % 5) {
	case 0:
		n = snprintf(t, sizeof(t),
		             "apiVersion: ipam.poolkeeper.io/v1alpha1\nkind: IPPool\nmetadata: "
		             "{name: pool-%zu, namespace: ns-%zu}\nspec: {addresses: "
		             "[10.%zu.%zu.0/24], prefix: 24, gateway: 10.%zu.%zu.1}\n---\n",
		             pool, ns, pool / 256, pool % 256, pool / 256, pool % 256);
		break;
	case 1:
	case 2:
		n = snprintf(
		    t, sizeof(t),
		    "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddressClaim\nmetadata:"
		    "\n  name: claim-%zu\n  namespace: ns-%zu\n  ownerReferences:\n  - "
		    "{apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: "
		    "Metal3Machine, name: m-%zu, uid: u-%zu, controller: true, "
		    "blockOwnerDeletion: true}\nspec:\n  clusterName: c-%zu\n  poolRef: "
		    "{apiGroup: ipam.poolkeeper.io, kind: IPPool, name: pool-%zu}\n---\n",
		    i, ns, i, i, ns, pool);
		break;
	default:
		n = snprintf(
		    t, sizeof(t),
		    "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata:\n"
		    "  name: addr-%zu\n  namespace: ns-%zu\n  ownerReferences:\n  - "
		    "{apiVersion: ipam.cluster.x-k8s.io/v1beta2, kind: IPAddressClaim, "
		    "name: claim-%zu, uid: c-%zu, controller: true, blockOwnerDeletion: true}\n"
		    "  - {apiVersion: ipam.poolkeeper.io/v1alpha1, kind: IPPool, name: "
		    "pool-%zu, uid: p-%zu, blockOwnerDeletion: true}\nspec:\n  claimRef: "
		    "{name: claim-%zu}\n  poolRef: {apiGroup: ipam.poolkeeper.io, kind: IPPool, "
		    "name: pool-%zu}\n  address: 10.%zu.%zu.%zu\n  prefix: 24\n---\n",
		    i, ns, i - 2, i - 2, pool, pool, i - 2, pool, pool / 256, pool % 256,
		    10 + i % 5);
		break;
	}
	return pk_buf_append(b, t, (size_t)n);
}

struct input {
	char **paths;
	size_t n;
	size_t bytes;
	unsigned jobs; /* for lint_files */
};

/* Writes the objects to files under dir, 5,000 to a file. */
static int make_input(size_t objects, const char *dir, struct input *in)
{
	in->n = (objects + PER_FILE - 1) / PER_FILE;
	in->paths = calloc(in->n ? in->n : 1, sizeof(*in->paths));
	if (in->paths == NULL)
		return PK_ERR_NOMEM;
	for (size_t f = 0; f < in->n; f++) {
		struct pk_buf b = {.max = PK_MANIFEST_MAX_BYTES};
		char path[4200];
		snprintf(path, sizeof(path), "%s/bench-%02zu.yaml", dir, f);
		for (size_t i = f * PER_FILE; i < objects && i < (f + 1) * PER_FILE; i++)
			if (append_object(&b, i) != PK_OK)
				return PK_ERR_NOMEM;
		FILE *out = fopen(path, "w");
		int ok = out != NULL && fwrite(b.p, 1, b.len, out) == b.len;
		ok = out != NULL && fclose(out) == 0 && ok;
		in->bytes += b.len;
		pk_buf_free(&b);
		if (!ok || (in->paths[f] = strdup(path)) == NULL)
			return PK_ERR_INVALID;
	}
	return PK_OK;
}

/* The baseline: every file read and through the manifest loader, nothing checked. */
static int load_only(const struct input *in)
{
	for (size_t i = 0; i < in->n; i++) {
		struct pk_manifest m = {0};
		struct pk_err err;
		char *buf;
		size_t len;
		if (pk_manifest_read_file(in->paths[i], PK_MANIFEST_MAX_BYTES, &buf, &len, &err) !=
		        PK_OK ||
		    pk_manifest_parse_buffer(buf, len, in->paths[i], NULL, &m, &err) != PK_OK) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		free(buf);
		pk_manifest_free(&m);
	}
	return 0;
}

static int lint_files(const struct input *in)
{
	struct pk_lint *l = pk_lint_new();
	if (l == NULL || pk_lint_add_files(l, in->paths, in->n, in->jobs) != PK_OK ||
	    pk_lint_run(l) != PK_OK)
		return 1;
	struct pk_lint_totals t = pk_lint_get_totals(l);
	fprintf(stderr, "  lint: %zu objects, %zu passed, %zu warned, %zu denied, %zu findings\n",
	        t.objects, t.passed, t.warned, t.denied, t.deny + t.warn);
	pk_lint_free(l);
	return t.passed == t.objects ? 0 : 1;
}

#define RUNS 5 /* each measurement; the fastest is printed, with the median wall time */

struct run {
	double wall, cpu, rss;
};

/* Runs fn in a child; its wall time, CPU time and peak RSS. */
static int run_once(int (*fn)(const struct input *), const struct input *in, struct run *r)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		_exit(fn(in));
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	r->wall = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	r->cpu = (double)ru.ru_utime.tv_sec * 1e3 + (double)ru.ru_utime.tv_usec / 1e3 +
	         (double)ru.ru_stime.tv_sec * 1e3 + (double)ru.ru_stime.tv_usec / 1e3;
	r->rss = (double)ru.ru_maxrss / 1024.0;
	return 0;
}

static int cmp_wall(const void *pa, const void *pb)
{
	const struct run *x = pa, *y = pb;
	return (x->wall > y->wall) - (x->wall < y->wall);
}

/* RUNS runs of fn: the fastest's figures, the median wall time, the largest peak RSS. */
static int measure(const char *what, int (*fn)(const struct input *), const struct input *in)
{
	struct run r[RUNS];
	double rss = 0;
	for (size_t k = 0; k < RUNS; k++) {
		if (run_once(fn, in, &r[k]) != 0)
			return 1;
		rss = r[k].rss > rss ? r[k].rss : rss;
	}
	qsort(r, RUNS, sizeof(*r), cmp_wall);
	printf("%-22s %7.0f ms wall (median %5.0f) %7.0f ms CPU %6.1f MiB peak RSS\n", what,
	       r[0].wall, r[RUNS / 2].wall, r[0].cpu, rss);
	return 0;
}

int main(int argc, char **argv)
{
	size_t objects = 50000;
	if (argc > 1)
		objects = (size_t)strtoull(argv[1], NULL, 10);
	if (objects == 0 || objects > 1000000) {
		fprintf(stderr, "usage: pk_lint_bench [OBJECTS in 1..1000000]\n");
		return 2;
	}
	struct input in = {0};
	char dir[4096];
	if (pk_test_tempdir_make(dir, sizeof(dir), "pk-lint-bench") != 0 ||
	    make_input(objects, dir, &in) != PK_OK) {
		fprintf(stderr, "cannot write the input files\n");
		return 1;
	}
	printf("%zu objects in %zu files, %.1f MiB of YAML, in %s\n", objects, in.n,
	       (double)in.bytes / 1048576.0, dir);
	int rc = measure("baseline (load only)", load_only, &in);
	in.jobs = 1;
	rc = rc || measure("lint, 1 thread", lint_files, &in);
	in.jobs = 2;
	rc = rc || measure("lint, 2 threads", lint_files, &in);
	for (size_t i = 0; i < in.n; i++)
		free(in.paths[i]);
	free(in.paths);
	pk_test_tempdir_remove(dir);
	return rc;
}
