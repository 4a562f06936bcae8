/*
 * lint_bench.c - `poolkeeper lint` at scale: N objects (a fifth pools in
 * distinct /24s over 50 namespaces, two fifths claims on them, two fifths
 * IPAddresses in them) in files of 5,000 documents, linted whole; beside
 * the baseline of the same text through the manifest loader only. Each
 * measurement runs in its own child, so that its peak RSS is its own.
 * Prints figures; it never fails on time.
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
	struct pk_buf *files;
	size_t n;
};

static int make_input(size_t objects, struct input *in)
{
	in->n = (objects + PER_FILE - 1) / PER_FILE;
	in->files = calloc(in->n ? in->n : 1, sizeof(*in->files));
	if (in->files == NULL)
		return PK_ERR_NOMEM;
	for (size_t i = 0; i < objects; i++) {
		struct pk_buf *b = &in->files[i / PER_FILE];
		b->max = PK_MANIFEST_MAX_BYTES;
		if (append_object(b, i) != PK_OK)
			return PK_ERR_NOMEM;
	}
	return PK_OK;
}

/* The baseline: every file through the manifest loader, nothing checked. */
static int load_only(const struct input *in)
{
	for (size_t i = 0; i < in->n; i++) {
		struct pk_manifest m = {0};
		struct pk_err err;
		if (pk_manifest_parse_buffer(in->files[i].p, in->files[i].len, "bench.yaml", NULL,
		                             &m, &err) != PK_OK) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		pk_manifest_free(&m);
	}
	return 0;
}

static int lint_all(const struct input *in)
{
	struct pk_lint *l = pk_lint_new();
	if (l == NULL)
		return 1;
	for (size_t i = 0; i < in->n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "bench-%zu.yaml", i);
		if (pk_lint_add_buffer(l, in->files[i].p, in->files[i].len, name) != PK_OK)
			return 1;
	}
	if (pk_lint_run(l) != PK_OK)
		return 1;
	struct pk_lint_totals t = pk_lint_get_totals(l);
	fprintf(stderr, "  lint: %zu objects, %zu passed, %zu warned, %zu denied, %zu findings\n",
	        t.objects, t.passed, t.warned, t.denied, t.deny + t.warn);
	pk_lint_free(l);
	return 0;
}

/* Runs fn in a child; its wall time and peak RSS. */
static int measure(const char *what, int (*fn)(const struct input *), const struct input *in)
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
	double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	printf("%-22s %9.0f ms wall %9.1f ms CPU %8.1f MiB peak RSS\n", what, ms,
	       (double)ru.ru_utime.tv_sec * 1e3 + (double)ru.ru_utime.tv_usec / 1e3 +
	           (double)ru.ru_stime.tv_sec * 1e3 + (double)ru.ru_stime.tv_usec / 1e3,
	       (double)ru.ru_maxrss / 1024.0);
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
	struct input in;
	if (make_input(objects, &in) != PK_OK) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	size_t bytes = 0;
	for (size_t i = 0; i < in.n; i++)
		bytes += in.files[i].len;
	printf("%zu objects in %zu files, %.1f MiB of YAML (held by the parent before fork)\n",
	       objects, in.n, (double)bytes / 1048576.0);
	int rc = measure("baseline (load only)", load_only, &in) ||
	         measure("lint (load + check)", lint_all, &in);
	for (size_t i = 0; i < in.n; i++)
		pk_buf_free(&in.files[i]);
	free(in.files);
	return rc;
}
