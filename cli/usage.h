/*
 * usage.h - `poolkeeper usage`: each poolkeeper pool's total, used and free
 * addresses, exact (decimal strings: an IPv6 pool can hold 2^64 and more),
 * and its top consumers by cluster name, from a live cluster's objects
 * (live.h).
 *
 * An IPAddress counts for the pool its spec.poolRef names (live.h's
 * pk_live_address_in_pool); its consumer is the cluster of the claim its
 * spec.claimRef names (pk_rules_claim_cluster_name: spec.clusterName, else
 * the cluster-name label), "(no cluster)" when the claim has none or is
 * gone. Used counts the addresses held inside the pool's usable set, once
 * each; free is total less used; addresses held outside it count in
 * outOfRange. A pool whose spec does not decode has no counts (valid false).
 */
#ifndef PK_USAGE_H
#define PK_USAGE_H

#include <jansson.h>
#include <stdio.h>

#include "count.h"
#include "live.h"

#define PK_USAGE_NO_CLUSTER "(no cluster)"

struct pk_usage_consumer {
	const char *cluster; /* borrowed from the listed objects, or PK_USAGE_NO_CLUSTER */
	size_t addresses;
};

struct pk_usage_pool {
	const json_t *pool; /* borrowed */
	bool valid;
	const char *family; /* "IPv4", "IPv6" */
	char total[PK_COUNT_STRLEN], used[PK_COUNT_STRLEN], free_[PK_COUNT_STRLEN],
	    out_of_range[PK_COUNT_STRLEN];
	struct pk_usage_consumer *top; /* the most addresses first, then by name */
	size_t ntop;
};

struct pk_usage {
	struct pk_usage_pool *pools;
	size_t n;
};

/* Computes each listed pool's usage, keeping at most `top` consumers (l indexed).
 * PK_OK or PK_ERR_NOMEM. Valid while l is. */
PK_MUST_CHECK int pk_usage_compute(const struct pk_live *l, size_t top, struct pk_usage *out);
void pk_usage_free(struct pk_usage *u);

/* A table: POOL FAMILY TOTAL USED FREE TOP CONSUMERS. */
void pk_usage_write_text(FILE *f, const struct pk_usage *u);

/* {"pools": [{kind, namespace, name, family, total, used, free, outOfRange,
 * consumers: [{cluster, addresses}]}]}; NULL when out of memory. */
json_t *pk_usage_to_json(const struct pk_usage *u);

/* The command: argv after "usage". Returns the exit status (0, or 2). */
int pk_usage_main(int argc, char *argv[]);

#endif
