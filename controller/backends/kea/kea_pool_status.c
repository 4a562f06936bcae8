/*
 * kea_pool_status.c - a Kea pool's protect-pool finalizer and status, and
 * its gauges. The counts are what this process knows: the pool's usable
 * addresses, those its claims hold, and those Kea answered were taken by
 * others (a DHCP client, another management cluster).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "json.h"
#include "kea_internal.h"
#include "kube.h"
#include "metrics.h"
#include "objects.h"

/* What the status says, taken under the locks. */
struct report {
	struct pk_alloc_counts n;
	size_t held;
	bool valid;
	char msg[PK_ERR_MSG_MAX];
	long long generation;
};

static void take_report(struct kea_backend *b, struct kea_pool *p, struct report *r)
{
	memset(r, 0, sizeof(*r));
	r->generation = p->generation;
	r->held = kea_pool_held(b, p->key);
	r->valid = p->valid;
	if (!p->valid) {
		snprintf(r->msg, sizeof(r->msg), "%s", p->invalid);
		return;
	}
	pthread_mutex_lock(&p->mu);
	pk_allocator_counts(p->kp.alloc, &r->n);
	pthread_mutex_unlock(&p->mu);
	char fr[PK_COUNT_STRLEN], tot[PK_COUNT_STRLEN];
	snprintf(r->msg, sizeof(r->msg),
	         "%s of %s addresses free as far as known (Kea subnet %ld of KeaServer %s)",
	         pk_count_format(r->n.free, fr), pk_count_format(r->n.total, tot), p->subnet_id,
	         p->server);
}

int kea_reconcile_pool(void *self, const struct pk_work_key *k, const json_t *pool,
                       struct pk_pool_next *next)
{
	struct kea_backend *b = self;
	const struct pk_pool_kind *kind = pk_backend_kind(&b->seam, k->pool_kind);
	if (kind == NULL)
		return PK_OK;
	char pk[PK_OBJECT_KEY_MAX];
	pk_pool_key(k->pool_kind, k->namespace, k->name, pk, sizeof(pk));
	snprintf(next->pool_key, sizeof(next->pool_key), "%s", pk);
	struct report r;
	pthread_mutex_lock(&b->mu);
	struct kea_pool *p = kea_pool_state(b, pk, pool);
	if (p != NULL)
		take_report(b, p, &r);
	pthread_mutex_unlock(&b->mu);
	if (p == NULL)
		return PK_ERR_NOMEM;
	struct pk_kube_ref ref = {.group = kind->group,
	                          .version = kind->version,
	                          .resource = kind->resource,
	                          .namespace = kind->namespaced ? k->namespace : NULL,
	                          .name = k->name};
	/* A finalizer on the pool while claims hold addresses of it. */
	int rc =
	    pk_writer_patch(b->host.writer, &ref, false,
	                    r.held > 0 ? pk_objects_finalizer_add_patch(pool, PK_POOL_FINALIZER)
	                               : pk_objects_finalizer_remove_patch(pool, PK_POOL_FINALIZER),
	                    r.held > 0 ? "add pool finalizer" : "remove pool finalizer", pk, NULL);
	if (rc != PK_OK)
		return rc;
	struct pk_condition cond = {.type = "Ready",
	                            .status = r.valid,
	                            .reason = r.valid ? "Ready" : "InvalidSpec",
	                            .message = r.msg,
	                            .generation = r.generation};
	json_t *patch =
	    pk_objects_pool_status_patch(pool, &r.n, &cond, NULL, (long long)time(NULL));
	if (patch == NULL)
		return PK_OK;
	ref.subresource = "status";
	rc = pk_writer_patch(b->host.writer, &ref, true, patch, "pool status", pk, NULL);
	return rc;
}

struct gauges {
	FILE *f;
	struct kea_backend *b;
};

static void pool_gauges(void *ud, const char *key, void *value)
{
	struct gauges *g = ud;
	struct kea_pool *p = value;
	struct pk_work_key k;
	if (!p->valid || !pk_pool_key_parse(key, &k))
		return;
	struct pk_alloc_counts n;
	pthread_mutex_lock(&p->mu);
	pk_allocator_counts(p->kp.alloc, &n);
	pthread_mutex_unlock(&p->mu);
	char used[PK_COUNT_STRLEN];
	fprintf(g->f,
	        "poolkeeper_kea_pool_used_addresses{namespace=\"%s\",pool=\"%s\",kind=\"%s\","
	        "server=\"%s\"} %s\n",
	        k.namespace, k.name, k.pool_kind, p->server, pk_count_format(n.used, used));
}

void kea_write_metrics(void *self, FILE *f)
{
	struct kea_backend *b = self;
	struct gauges g = {f, b};
	pk_metrics_head(f, "poolkeeper_kea_pool_used_addresses", "gauge",
	                "Addresses of a Kea pool known to be leased (by its claims or others).");
	pthread_mutex_lock(&b->mu);
	pk_strmap_foreach(b->pools, pool_gauges, &g);
	pthread_mutex_unlock(&b->mu);
	pk_metrics_head(f, "poolkeeper_kea_leases_missing", "gauge",
	                "IPAddresses of Kea pools whose lease was gone at the last resync.");
	fprintf(f, "poolkeeper_kea_leases_missing %u\n", atomic_load(&b->leases_missing));
}
