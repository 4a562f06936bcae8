/*
 * pool_reconciler.c - the in-process backend's pool reconciler: each
 * pool's status (counts, Ready, the quarantine) and the protect-pool
 * finalizer, written through the host's writer; and the pools' gauges.
 * See incluster.h.
 */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "incluster_internal.h"
#include "json.h"
#include "kube.h"
#include "kube_events.h"
#include "log.h"
#include "metrics.h"
#include "objects.h"

struct quarantine_out {
	json_t *list;
	enum pk_family family;
	long long first_end; /* 0: none */
};

static bool quarantine_entry(pk_u128 addr, int64_t not_before, void *ctx)
{
	struct quarantine_out *q = ctx;
	char t[PK_ADDR_STRLEN];
	pk_address_format_v(addr, q->family, t);
	if (q->first_end == 0 || not_before < q->first_end)
		q->first_end = not_before;
	return pk_objects_quarantine_add(q->list, t, not_before);
}

/* What a pool's status says, taken under the backend's mutex. */
struct pool_report {
	struct pk_alloc_counts n;
	struct pk_condition cond;
	char msg[PK_ERR_MSG_MAX];
	json_t *quarantine;
	long long first_end;
	size_t holding;
	unsigned duplicates;
	bool wake;
};

/* The Ready condition of a valid pool, from its counts. */
static void ready_condition(const struct pool_state *s, struct pool_report *r)
{
	char fr[PK_COUNT_STRLEN], tot[PK_COUNT_STRLEN], oor[PK_COUNT_STRLEN];
	pk_count_format(r->n.free, fr);
	pk_count_format(r->n.total, tot);
	pk_u128_format(r->n.out_of_range, oor);
	if (s->duplicates > 0) {
		r->cond.status = false;
		r->cond.reason = "DuplicateAddresses";
		snprintf(r->msg, sizeof(r->msg),
		         "%u duplicate address(es) found and left as they are: %s", s->duplicates,
		         s->duplicate_text);
	} else if (r->n.out_of_range > 0) {
		r->cond.status = true;
		r->cond.reason = "AddressesOutOfRange";
		snprintf(r->msg, sizeof(r->msg),
		         "%s address(es) in use lie outside the pool's addresses; %s of %s free",
		         oor, fr, tot);
	} else {
		r->cond.status = true;
		r->cond.reason = "Ready";
		snprintf(r->msg, sizeof(r->msg), "%s of %s addresses free", fr, tot);
	}
	if (r->n.quarantined > 0 && strlen(r->msg) < sizeof(r->msg) - 80) {
		char qt[PK_COUNT_STRLEN];
		size_t l = strlen(r->msg);
		snprintf(r->msg + l, sizeof(r->msg) - l,
		         "; %s released address(es) in their reuse grace period",
		         pk_u128_format(r->n.quarantined, qt));
	}
}

/* Under mu: the report of the pool's state s. */
static void report(struct incluster *b, struct pool_state *s, const char *pool_key,
                   struct pool_report *r)
{
	r->holding = incl_pool_held(b, pool_key);
	r->cond.generation = s->generation;
	r->duplicates = s->duplicates;
	if (!s->valid) {
		r->cond.status = false;
		r->cond.reason = "InvalidSpec";
		snprintf(r->msg, sizeof(r->msg), "%s", s->invalid);
		return;
	}
	pk_allocator_expire(s->alloc, incl_wall_now());
	pk_allocator_counts(s->alloc, &r->n);
	ready_condition(s, r);
	struct quarantine_out q = {json_array(), s->pool.family, 0};
	if (q.list != NULL)
		pk_allocator_each_quarantined(s->alloc, quarantine_entry, &q);
	r->quarantine = q.list;
	r->first_end = q.first_end;
	/* Addresses whose reuse grace period ended are free now. */
	r->wake = s->waiters && (r->n.free.lo > 0 || r->n.free.carry > 0);
	if (r->wake)
		s->waiters = false;
}

/* Writes the finalizer and the status of the pool (ref) from r; *finalized says whether the
 * finalizer write went through (the status is written only then). */
static int write_pool(struct incluster *b, const json_t *pool, struct pk_kube_ref *ref,
                      const struct pk_work_key *k, const char *pool_key,
                      const struct pool_report *r, bool *finalized)
{
	/* A finalizer on the pool while addresses from it exist. */
	int rc = pk_writer_patch(
	    b->host.writer, ref, false,
	    r->holding > 0 ? pk_objects_finalizer_add_patch(pool, PK_POOL_FINALIZER)
	                   : pk_objects_finalizer_remove_patch(pool, PK_POOL_FINALIZER),
	    r->holding > 0 ? "add pool finalizer" : "remove pool finalizer", pool_key, NULL);
	*finalized = rc == PK_OK;
	if (rc != PK_OK)
		return rc;
	json_t *patch =
	    pk_objects_pool_status_patch(pool, &r->n, &r->cond, r->quarantine, incl_wall_now());
	if (patch == NULL)
		return PK_OK;
	ref->subresource = "status";
	struct pk_kube_error e;
	enum pk_kube_reason kr =
	    b->host.writer->ops->patch(b->host.writer->self, ref, true, patch, NULL, &e);
	json_decref(patch);
	if (kr != PK_KUBE_OK && kr != PK_KUBE_NOT_FOUND)
		return pk_writer_failed("pool status", pool_key, &e);
	if (kr == PK_KUBE_OK && r->duplicates > 0) {
		char api[128];
		snprintf(api, sizeof(api), "%s/%s", ref->group, ref->version);
		struct pk_kube_object_ref o = {.api_version = api,
		                               .kind = k->pool_kind,
		                               .namespace = ref->namespace,
		                               .name = k->name,
		                               .uid = pk_json_meta_cstr(pool, "uid")};
		b->host.post_event(b->host.ud, &o, true, "DuplicateAddresses", "Reconcile", r->msg);
	}
	return PK_OK;
}

int incl_reconcile_pool(void *self, const struct pk_work_key *k, const json_t *pool,
                        struct pk_pool_next *next)
{
	struct incluster *b = self;
	const struct pk_pool_kind *kind = pk_backend_kind(&b->seam, k->pool_kind);
	if (kind == NULL)
		return PK_OK;
	char pk[PK_OBJECT_KEY_MAX];
	pk_pool_key(k->pool_kind, k->namespace, k->name, pk, sizeof(pk));
	snprintf(next->pool_key, sizeof(next->pool_key), "%s", pk);
	struct pool_report r;
	memset(&r, 0, sizeof(r));
	r.cond.type = "Ready";
	r.cond.message = r.msg;
	pthread_mutex_lock(&b->mu);
	struct pool_state *s = incl_pool_state(b, pk, pool);
	if (s != NULL)
		report(b, s, pk, &r);
	pthread_mutex_unlock(&b->mu);
	int rc = PK_ERR_NOMEM;
	bool finalized = false;
	if (s != NULL) {
		struct pk_kube_ref ref = {.group = kind->group,
		                          .version = kind->version,
		                          .resource = kind->resource,
		                          .namespace = kind->namespaced ? k->namespace : NULL,
		                          .name = k->name};
		rc = write_pool(b, pool, &ref, k, pk, &r, &finalized);
		next->wake = finalized && r.wake;
	}
	/* The next end of a grace period (restored after a restart, too) syncs the pool again. */
	if (finalized && r.first_end > 0) {
		long long in = r.first_end - incl_wall_now();
		next->grace_ms = (in > 0 ? (long)in * 1000 : 0) + 100;
	}
	json_decref(r.quarantine);
	return rc;
}

struct pool_metrics {
	FILE *f;
	int which; /* 0 total, 1 used, 2 free, 3 out of range, 4 quarantined, 5 duplicates */
};

static const char *const pool_gauges[][2] = {
    {"poolkeeper_pool_addresses", "Usable addresses of a pool."},
    {"poolkeeper_pool_used_addresses", "Addresses of a pool held by an IPAddress."},
    {"poolkeeper_pool_free_addresses", "Addresses of a pool free now."},
    {"poolkeeper_pool_out_of_range_addresses",
     "Addresses in use that lie outside the pool's addresses."},
    {"poolkeeper_pool_quarantined_addresses", "Released addresses in their reuse grace period."},
    {"poolkeeper_pool_duplicate_addresses",
     "Addresses held by more than one IPAddress (left as they are)."},
};

static void pool_metric(void *ud, const char *key, void *value)
{
	struct pool_metrics *pm = ud;
	const struct pool_state *s = value;
	if (!s->valid || s->alloc == NULL)
		return;
	struct pk_alloc_counts n;
	pk_allocator_counts(s->alloc, &n);
	char v[PK_COUNT_STRLEN];
	struct pk_work_key k;
	if (!pk_pool_key_parse(key, &k))
		return;
	switch (pm->which) {
	case 0:
		pk_count_format(n.total, v);
		break;
	case 1:
		pk_count_format(n.used, v);
		break;
	case 2:
		pk_count_format(n.free, v);
		break;
	case 3:
		pk_u128_format(n.out_of_range, v);
		break;
	case 4:
		pk_u128_format(n.quarantined, v);
		break;
	default:
		snprintf(v, sizeof(v), "%u", s->duplicates);
		break;
	}
	fprintf(pm->f, "%s{namespace=\"%s\",pool=\"%s\",kind=\"%s\"} %s\n",
	        pool_gauges[pm->which][0], k.namespace, k.name, k.pool_kind, v);
}

void incl_write_metrics(void *self, FILE *f)
{
	struct incluster *b = self;
	pthread_mutex_lock(&b->mu);
	for (int w = 0; w < 6; w++) {
		pk_metrics_head(f, pool_gauges[w][0], "gauge", pool_gauges[w][1]);
		struct pool_metrics pm = {f, w};
		pk_strmap_foreach(b->states, pool_metric, &pm);
	}
	pthread_mutex_unlock(&b->mu);
}
