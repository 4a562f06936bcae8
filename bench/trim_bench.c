/*
 * trim_bench.c - how much of the informers' memory the trimmed copies
 * (common/kube/trim.c) save: 10,000 objects as the API server returns them
 * (managedFields and all), parsed with jansson as the informer does, then
 * trimmed; jansson's allocations are counted through json_set_alloc_funcs.
 *
 * Kinds: claims made by an infrastructure provider (its controller's
 * managedFields, owner reference to the machine), claims applied with
 * kubectl (the last-applied annotation too), and the IPAddresses
 * poolkeeper makes. Bytes are what malloc_usable_size reports for
 * jansson's blocks (glibc adds 8 bytes a block on top); the JSON size is
 * the object as compact text; the time is one pk_trim_* call.
 *
 * Usage: pk_trim_bench [objects] (default 10000)
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "trim.h"

static size_t live_bytes, live_blocks;

static void *count_malloc(size_t n)
{
	void *p = malloc(n);
	if (p != NULL) {
		live_bytes += malloc_usable_size(p);
		live_blocks++;
	}
	return p;
}

static void count_free(void *p)
{
	if (p == NULL)
		return;
	live_bytes -= malloc_usable_size(p);
	live_blocks--;
	free(p);
}

static long long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The parts the API server and the controllers add, as they write them (k: keys escaped). */
#define READY_FIELDS                                                                \
	"\"f:status\":{\".\":{},\"f:addressRef\":{\".\":{},\"f:name\":{}},"         \
	"\"f:conditions\":{\".\":{},\"k:{\\\"type\\\":\\\"Ready\\\"}\":{\".\":{},"  \
	"\"f:lastTransitionTime\":{},\"f:message\":{},\"f:observedGeneration\":{}," \
	"\"f:reason\":{},\"f:status\":{},\"f:type\":{}}}}"

#define STATUS_TAIL                                                                         \
	"\"status\":{\"addressRef\":{\"name\":\"%s\"},\"conditions\":[{\"type\":\"Ready\"," \
	"\"status\":\"True\",\"reason\":\"Allocated\",\"message\":\"address 10.%d.%d.%d "   \
	"allocated in IPAddress %s/%s\",\"lastTransitionTime\":\"2026-01-02T03:04:06Z\","   \
	"\"observedGeneration\":1}]}}"

/* A claim an infrastructure provider made for a machine. Arguments: name, ns, uid, rv,
 * machine, machine uid, cluster, name, a, b, c, ns, name. */
#define PROVIDER_CLAIM                                                                          \
	"{\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"kind\":\"IPAddressClaim\","        \
	"\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"%s\","                    \
	"\"resourceVersion\":\"%d\",\"generation\":1,"                                          \
	"\"creationTimestamp\":\"2026-01-02T03:04:05Z\","                                       \
	"\"finalizers\":[\"ipam.poolkeeper.io/release-address\"],"                              \
	"\"labels\":{\"cluster.x-k8s.io/cluster-name\":\"%s\"},"                                \
	"\"ownerReferences\":[{\"apiVersion\":\"infrastructure.cluster.x-k8s.io/v1beta1\","     \
	"\"kind\":\"Metal3Machine\",\"name\":\"%s\",\"uid\":\"%s\",\"controller\":true,"        \
	"\"blockOwnerDeletion\":true}],"                                                        \
	"\"managedFields\":[{\"manager\":\"capm3-manager\",\"operation\":\"Update\","           \
	"\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"time\":\"2026-01-02T03:04:05Z\","   \
	"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{\".\":{},"     \
	"\"f:cluster.x-k8s.io/cluster-name\":{}},\"f:ownerReferences\":{\".\":{},"              \
	"\"k:{\\\"uid\\\":\\\"m-0000-4000-8000\\\"}\":{}}},\"f:spec\":{\".\":{},"               \
	"\"f:clusterName\":{},\"f:poolRef\":{}}}},"                                             \
	"{\"manager\":\"poolkeeper-controller\",\"operation\":\"Update\","                      \
	"\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"time\":\"2026-01-02T03:04:05Z\","   \
	"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:finalizers\":{\".\":{}," \
	"\"v:\\\"ipam.poolkeeper.io/release-address\\\"\":{}}}}},"                              \
	"{\"manager\":\"poolkeeper-controller\",\"operation\":\"Update\","                      \
	"\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"time\":\"2026-01-02T03:04:06Z\","   \
	"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{" READY_FIELDS                               \
	"},\"subresource\":\"status\"}]},"                                                      \
	"\"spec\":{\"poolRef\":{\"apiGroup\":\"ipam.poolkeeper.io\",\"kind\":\"IPPool\","       \
	"\"name\":\"nodes\"},\"clusterName\":\"%s\"}," STATUS_TAIL

/* A claim applied with kubectl. Arguments: last-applied (escaped), name, ns, uid, rv,
 * cluster, cluster, name, a, b, c, ns, name. */
#define KUBECTL_CLAIM                                                                             \
	"{\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"kind\":\"IPAddressClaim\","          \
	"\"metadata\":{\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":"    \
	"\"%s\"},\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"%s\","                            \
	"\"resourceVersion\":\"%d\",\"generation\":1,"                                            \
	"\"creationTimestamp\":\"2026-01-02T03:04:05Z\","                                         \
	"\"finalizers\":[\"ipam.poolkeeper.io/release-address\"],"                                \
	"\"labels\":{\"cluster.x-k8s.io/cluster-name\":\"%s\"},"                                  \
	"\"managedFields\":[{\"manager\":\"kubectl-client-side-apply\",\"operation\":\"Update\"," \
	"\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"time\":\"2026-01-02T03:04:05Z\","     \
	"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:annotations\":{\".\":{},"  \
	"\"f:kubectl.kubernetes.io/last-applied-configuration\":{}},\"f:labels\":{\".\":{},"      \
	"\"f:cluster.x-k8s.io/cluster-name\":{}}},\"f:spec\":{\".\":{},\"f:clusterName\":{},"     \
	"\"f:poolRef\":{}}}},"                                                                    \
	"{\"manager\":\"poolkeeper-controller\",\"operation\":\"Update\","                        \
	"\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"time\":\"2026-01-02T03:04:05Z\","     \
	"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:finalizers\":{\".\":{},"   \
	"\"v:\\\"ipam.poolkeeper.io/release-address\\\"\":{}}}}},"                                \
	"{\"manager\":\"poolkeeper-controller\",\"operation\":\"Update\","                        \
	"\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"time\":\"2026-01-02T03:04:06Z\","     \
	"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{" READY_FIELDS                                 \
	"},\"subresource\":\"status\"}]},"                                                        \
	"\"spec\":{\"poolRef\":{\"apiGroup\":\"ipam.poolkeeper.io\",\"kind\":\"IPPool\","         \
	"\"name\":\"nodes\"},\"clusterName\":\"%s\"}," STATUS_TAIL

/* What kubectl records as last applied (itself JSON, escaped into the annotation).
 * Arguments: cluster, name, ns, cluster. */
#define LAST_APPLIED                                                                      \
	"{\\\"apiVersion\\\":\\\"ipam.cluster.x-k8s.io/v1beta2\\\",\\\"kind\\\":"         \
	"\\\"IPAddressClaim\\\",\\\"metadata\\\":{\\\"annotations\\\":{},\\\"labels\\\":" \
	"{\\\"cluster.x-k8s.io/cluster-name\\\":\\\"%s\\\"},\\\"name\\\":\\\"%s\\\","     \
	"\\\"namespace\\\":\\\"%s\\\"},\\\"spec\\\":{\\\"clusterName\\\":\\\"%s\\\","     \
	"\\\"poolRef\\\":{\\\"apiGroup\\\":\\\"ipam.poolkeeper.io\\\",\\\"kind\\\":"      \
	"\\\"IPPool\\\","                                                                 \
	"\\\"name\\\":\\\"nodes\\\"}}}\\n"

/* An IPAddress as poolkeeper creates it. Arguments: name, ns, uid, rv, cluster, name,
 * claim uid, pool uid, a, b, c, name. */
#define ADDRESS                                                                                    \
	"{\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"kind\":\"IPAddress\","                \
	"\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"%s\","                       \
	"\"resourceVersion\":\"%d\",\"generation\":1,"                                             \
	"\"creationTimestamp\":\"2026-01-02T03:04:05Z\","                                          \
	"\"finalizers\":[\"ipam.poolkeeper.io/protect-address\"],"                                 \
	"\"labels\":{\"cluster.x-k8s.io/cluster-name\":\"%s\"},"                                   \
	"\"ownerReferences\":[{\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\","                  \
	"\"kind\":\"IPAddressClaim\",\"name\":\"%s\",\"uid\":\"%s\",\"controller\":true,"          \
	"\"blockOwnerDeletion\":true},{\"apiVersion\":\"ipam.poolkeeper.io/v1alpha1\","            \
	"\"kind\":\"IPPool\",\"name\":\"nodes\",\"uid\":\"%s\",\"controller\":false,"              \
	"\"blockOwnerDeletion\":true}],"                                                           \
	"\"managedFields\":[{\"manager\":\"poolkeeper-controller\",\"operation\":\"Update\","      \
	"\"apiVersion\":\"ipam.cluster.x-k8s.io/v1beta2\",\"time\":\"2026-01-02T03:04:05Z\","      \
	"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:finalizers\":{\".\":{},"    \
	"\"v:\\\"ipam.poolkeeper.io/protect-address\\\"\":{}},\"f:labels\":{\".\":{},"             \
	"\"f:cluster.x-k8s.io/cluster-name\":{}},\"f:ownerReferences\":{\".\":{},"                 \
	"\"k:{\\\"uid\\\":\\\"c-0000-4000-8000\\\"}\":{},"                                         \
	"\"k:{\\\"uid\\\":\\\"p-0000-4000-8000\\\"}\":{}}},\"f:spec\":{\".\":{},"                  \
	"\"f:address\":{},\"f:claimRef\":{},\"f:gateway\":{},\"f:poolRef\":{},\"f:prefix\":{}}}}]" \
	"},"                                                                                       \
	"\"spec\":{\"address\":\"10.%d.%d.%d\",\"prefix\":16,\"gateway\":\"10.0.0.1\","            \
	"\"claimRef\":{\"name\":\"%s\"},\"poolRef\":{\"apiGroup\":\"ipam.poolkeeper.io\","         \
	"\"kind\":\"IPPool\",\"name\":\"nodes\"}}}"

enum kind { PROVIDER, KUBECTL, IPADDRESS };

static char *text_of(enum kind k, int i, char *buf, size_t len)
{
	char name[96], ns[32], uid[48], muid[48], cluster[32], machine[80], last[1024];
	snprintf(ns, sizeof(ns), "team-%d", i % 20);
	snprintf(cluster, sizeof(cluster), "cluster-%d", i % 200);
	snprintf(machine, sizeof(machine), "%s-md-0-%05x", cluster, i);
	snprintf(name, sizeof(name), "%s-ip-0", machine);
	snprintf(uid, sizeof(uid), "5b0c7a1e-%04x-4000-8000-%012x", i & 0xffff, i);
	snprintf(muid, sizeof(muid), "9d3e55f0-%04x-4000-8000-%012x", i & 0xffff, i);
	int rv = 48213 + i, a = (i >> 16) & 255, b = (i >> 8) & 255, c = i & 255;
	int n = -1;
	switch (k) {
	case PROVIDER:
		n = snprintf(buf, len, PROVIDER_CLAIM, name, ns, uid, rv, cluster, machine, muid,
		             cluster, name, a, b, c, ns, name);
		break;
	case KUBECTL:
		snprintf(last, sizeof(last), LAST_APPLIED, cluster, name, ns, cluster);
		n = snprintf(buf, len, KUBECTL_CLAIM, last, name, ns, uid, rv, cluster, cluster,
		             name, a, b, c, ns, name);
		break;
	case IPADDRESS:
		n = snprintf(buf, len, ADDRESS, name, ns, muid, rv, cluster, name, uid,
		             "0c1d2e3f-0000-4000-8000-000000000001", a, b, c, name);
		break;
	}
	if (n < 0 || (size_t)n >= len) {
		fprintf(stderr, "object text too long\n");
		exit(3);
	}
	return buf;
}

static json_t *parse(enum kind k, int i, char *buf, size_t len)
{
	json_error_t e;
	json_t *o = json_loads(text_of(k, i, buf, len), 0, &e);
	if (o == NULL) {
		fprintf(stderr, "fixture does not parse: %s (column %d)\n", e.text, e.column);
		exit(3);
	}
	return o;
}

/*
 * Whole: n objects parsed and kept, as an informer without a transform
 * keeps them. Trimmed: each parsed, trimmed and let go at once, as an
 * informer with the trim as its transform does; only the copies stay.
 */
static void run(enum kind k, const char *what, int n)
{
	json_t **objs = calloc((size_t)n, sizeof(*objs));
	char *buf = malloc(16384);
	if (objs == NULL || buf == NULL)
		exit(3);
	size_t text_whole = 0, text_trimmed = 0;

	size_t b0 = live_bytes, k0 = live_blocks;
	for (int i = 0; i < n; i++)
		objs[i] = parse(k, i, buf, 16384);
	size_t whole = live_bytes - b0, whole_blocks = live_blocks - k0;
	for (int i = 0; i < n; i++) {
		text_whole += json_dumpb(objs[i], NULL, 0, JSON_COMPACT);
		json_decref(objs[i]);
	}

	long long trim_ns = 0;
	for (int i = 0; i < n; i++) {
		json_t *o = parse(k, i, buf, 16384);
		long long t0 = mono_ns();
		objs[i] = k == IPADDRESS ? pk_trim_address(o) : pk_trim_claim(o);
		trim_ns += mono_ns() - t0;
		json_decref(o);
		if (objs[i] == NULL)
			exit(3);
	}
	size_t trimmed = live_bytes - b0, trimmed_blocks = live_blocks - k0;
	for (int i = 0; i < n; i++) {
		text_trimmed += json_dumpb(objs[i], NULL, 0, JSON_COMPACT);
		json_decref(objs[i]);
	}
	printf("%-24s %6d %9.0f %9.0f %7.1f %7.1f %6.0f %6.0f %6.0f %6.0f %6.0f\n", what, n,
	       (double)text_whole / n, (double)text_trimmed / n, (double)whole / 1048576.0,
	       (double)trimmed / 1048576.0, (double)whole / n, (double)trimmed / n,
	       (double)whole_blocks / n, (double)trimmed_blocks / n, (double)trim_ns / n);
	free(objs);
	free(buf);
}

int main(int argc, char **argv)
{
	int n = 10000;
	if (argc > 1) {
		char *end = NULL;
		long v = strtol(argv[1], &end, 10);
		if (end == argv[1] || *end != '\0' || v < 1 || v > 1000000) {
			fprintf(stderr, "usage: %s [objects 1..1000000]\n", argv[0]);
			return 2;
		}
		n = (int)v;
	}
	/* before jansson allocates anything */
	json_set_alloc_funcs(count_malloc, count_free);
	printf("%-24s %6s %9s %9s %7s %7s %6s %6s %6s %6s %6s\n", "", "", "JSON B", "JSON B", "MiB",
	       "MiB", "B/obj", "B/obj", "blocks", "blocks", "ns");
	printf("%-24s %6s %9s %9s %7s %7s %6s %6s %6s %6s %6s\n", "objects", "n", "whole",
	       "trimmed", "whole", "trimmed", "whole", "trimmed", "whole", "trimmed", "trim");
	run(PROVIDER, "claims (by a provider)", n);
	run(KUBECTL, "claims (kubectl apply)", n);
	run(IPADDRESS, "IPAddresses", n);
	if (live_blocks != 0)
		fprintf(stderr, "%zu jansson blocks still live\n", live_blocks);
	return 0;
}
