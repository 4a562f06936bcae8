/* incluster.c - the in-process allocator backend's side of the seam; see incluster.h. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "incluster.h"
#include "incluster_internal.h"
#include "json.h"
#include "kube.h"
#include "log.h"
#include "pool_ref.h"
#include "rules.h"

static const struct pk_pool_kind *incl_kinds(void *self, size_t *n)
{
	(void)self;
	return pk_pool_kinds_of_backend(PK_INCLUSTER_BACKEND, n);
}

const struct pk_pool_kind *pk_incluster_kind(const json_t *pool_ref)
{
	const struct pk_pool_kind *k = pk_pool_kind_of_ref(pool_ref);
	return k != NULL && strcmp(k->backend, PK_INCLUSTER_BACKEND) == 0 ? k : NULL;
}

static bool incl_serves(void *self, const json_t *pool_ref)
{
	(void)self;
	return pk_incluster_kind(pool_ref) != NULL;
}

static int incl_view_pool(void *self, struct pk_pool_view *v)
{
	struct incluster *b = self;
	pthread_mutex_lock(&b->mu);
	struct pool_state *s = incl_pool_state(b, v->key, v->obj);
	if (s != NULL && !s->valid) {
		v->facts.state = PK_POOL_INVALID;
		snprintf(v->text, sizeof(v->text), "%s", s->invalid);
	}
	pthread_mutex_unlock(&b->mu);
	return s != NULL ? PK_OK : PK_ERR_NOMEM;
}

static void incl_check_address(void *self, const struct pk_pool_view *pool,
                               const struct pk_claim_id *id, const json_t *claim,
                               const json_t *address, struct pk_claim_facts *f)
{
	struct incluster *b = self;
	pthread_mutex_lock(&b->mu);
	struct pool_state *s = incl_state_find(b, pool->key);
	bool valid = s != NULL && s->valid;
	/* Before an existing IPAddress is taken as the claim's allocation. */
	pk_claim_facts_check_address(f, claim, address, valid ? &s->pool : NULL,
	                             valid && incl_held_elsewhere(b, id->key));
	pthread_mutex_unlock(&b->mu);
}

/* The lease of t from s (under mu). */
static void lease_of(const struct pool_state *s, const struct tentative *t,
                     struct pk_address_lease *l)
{
	memset(l, 0, sizeof(*l));
	pk_address_format_v(t->v, s->pool.family, l->address);
	if (s->pool.has_gateway)
		pk_address_format_v(s->pool.gateway, s->pool.family, l->gateway);
	l->prefix = s->pool.has_prefix ? s->pool.prefix : pk_address_bits(s->pool.family);
	l->fresh = t->fresh;
}

static void exhausted_message(const struct pk_pool_view *pool, const struct tentative *t, char *msg,
                              size_t len)
{
	struct pk_work_key k;
	if (!pk_pool_key_parse(pool->key, &k))
		k.pool_kind[0] = k.namespace[0] = k.name[0] = '\0';
	snprintf(msg, len,
	         "%.20s %.63s%s%.253s has no free address (%s usable, all in use or in their "
	         "reuse grace period); the claim is retried when one is released",
	         k.pool_kind, k.namespace, k.namespace[0] != '\0' ? "/" : "", k.name, t->total);
}

/*
 * In-process: never pending. Out of memory, or a pool whose spec became
 * invalid since the view was read, is TRANSIENT without a reason (backoff;
 * the next pass reports an invalid spec).
 */
static void incl_ensure_address(void *self, const struct pk_pool_view *pool,
                                const struct pk_claim_id *id, struct pk_address_lease *lease,
                                struct pk_backend_result *out)
{
	struct incluster *b = self;
	struct tentative t;
	pk_backend_result_set(out, PK_BACKEND_OK, NULL, "%s", "");
	pthread_mutex_lock(&b->mu);
	struct pool_state *s = incl_pool_state(b, pool->key, pool->obj);
	int rc = s == NULL ? PK_ERR_NOMEM : !s->valid ? PK_ERR_INVALID : PK_OK;
	if (rc == PK_OK && incl_held_stale(b, s, id->key))
		out->status = PK_BACKEND_STALE;
	else if (rc == PK_OK && (rc = incl_take_address(b, s, id->key, &t)) == PK_OK) {
		if (t.exhausted)
			out->status = PK_BACKEND_EXHAUSTED;
		else
			lease_of(s, &t, lease);
	}
	pthread_mutex_unlock(&b->mu);
	if (rc != PK_OK) {
		pk_backend_result_set(out, PK_BACKEND_TRANSIENT, NULL, "%s",
		                      rc == PK_ERR_NOMEM ? "out of memory"
		                                         : "the pool is not valid");
		return;
	}
	if (out->status == PK_BACKEND_EXHAUSTED) {
		snprintf(out->reason, sizeof(out->reason), "%s", PK_REASON_POOL_EXHAUSTED);
		exhausted_message(pool, &t, out->message, sizeof(out->message));
	} else if (out->status == PK_BACKEND_OK) {
		pk_pool_next_counts_moved(&out->next, pool->key);
	}
}

static void incl_abandon_address(void *self, const struct pk_claim_id *id,
                                 const struct pk_address_lease *lease)
{
	struct incluster *b = self;
	if (!lease->fresh)
		return; /* the address was the claim's before this lease: it stays */
	pthread_mutex_lock(&b->mu);
	incl_untake_address(b, id->key);
	pthread_mutex_unlock(&b->mu);
}

static bool incl_holds(void *self, const struct pk_claim_id *id)
{
	struct incluster *b = self;
	pthread_mutex_lock(&b->mu);
	bool held = pk_strmap_get(b->held, id->key) != NULL;
	pthread_mutex_unlock(&b->mu);
	return held;
}

static void incl_release_address(void *self, const struct pk_claim_id *id,
                                 struct pk_release_note *out, struct pk_backend_result *result)
{
	struct incluster *b = self;
	struct released r;
	memset(out, 0, sizeof(*out));
	pk_backend_result_set(result, PK_BACKEND_OK, NULL, "%s", ""); /* in-process: never fails */
	pthread_mutex_lock(&b->mu);
	incl_release_held(b, id->key, &r);
	pthread_mutex_unlock(&b->mu);
	if (!r.done)
		return;
	out->released = true;
	snprintf(out->address, sizeof(out->address), "%s", r.text);
	out->grace_seconds = r.grace;
	struct pk_pool_next *next = &result->next;
	pk_pool_next_counts_moved(next, r.pool_key);
	next->grace_ms = r.grace > 0 ? (long)(r.grace * 1000 + 100) : 0;
	next->wake = r.wake;
	snprintf(next->claim_key, sizeof(next->claim_key), "%s", r.still_held_by);
}

static void incl_address_seen(void *self, const json_t *address, struct pk_pool_next *next)
{
	struct incluster *b = self;
	char pk[PK_OBJECT_KEY_MAX];
	pthread_mutex_lock(&b->mu);
	bool recorded = incl_held_record(b, address, pk, sizeof(pk));
	pthread_mutex_unlock(&b->mu);
	/* An IPAddress seen for the first time (by hand, moved, or ours): the pool's counts
	 * move. */
	if (recorded)
		pk_pool_next_counts_moved(next, pk);
}

struct load_ctx {
	struct incluster *b;
	size_t n;
};

static int load_page(void *ud, const json_t *page)
{
	struct load_ctx *l = ud;
	size_t i;
	json_t *a;
	char pk[PK_OBJECT_KEY_MAX];
	pthread_mutex_lock(&l->b->mu);
	json_array_foreach(json_object_get(page, "items"), i, a)
	{
		(void)incl_held_record(l->b, a, pk, sizeof(pk));
		l->n++;
	}
	pthread_mutex_unlock(&l->b->mu);
	return 0;
}

/*
 * Every IPAddress, page by page (only one page of JSON in memory at a
 * time), recorded as held in a fresh record with no pool states. The
 * controller processes no key until this succeeded.
 */
static int incl_on_leading(void *self)
{
	struct incluster *b = self;
	struct pk_kube_ref r = {.group = PK_CAPI_IPAM_GROUP,
	                        .version = b->host.ipam_version,
	                        .resource = PK_ADDRESS_RESOURCE,
	                        .namespace = b->host.namespace};
	struct pk_kube_error e;
	struct load_ctx l = {b, 0};
	pthread_mutex_lock(&b->mu);
	int rc = incl_records_reset(b);
	pthread_mutex_unlock(&b->mu);
	if (rc != PK_OK)
		return rc;
	if (b->host.writer->ops->list(b->host.writer->self, &r, load_page, &l, &e) != PK_KUBE_OK) {
		if (e.reason != PK_KUBE_CANCELLED)
			pk_log_error("cannot list IPAddresses", PK_LOG_STR("error", e.message),
			             PK_LOG_STR("reason", pk_kube_reason_name(e.reason)));
		return e.reason == PK_KUBE_NOMEM ? PK_ERR_NOMEM : PK_ERR_API;
	}
	/* The pages' memory goes back to the system, not only to the heap. */
	malloc_trim(0);
	pk_log_info("leading: IPAddresses read", PK_LOG_UINT("ipaddresses", l.n));
	return PK_OK;
}

static void incl_free(void *self)
{
	struct incluster *b = self;
	if (b == NULL)
		return;
	incl_records_free(b);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

static const struct pk_backend_ops incl_ops = {
    .kinds = incl_kinds,
    .serves = incl_serves,
    .view_pool = incl_view_pool,
    .check_address = incl_check_address,
    .ensure_address = incl_ensure_address,
    .abandon_address = incl_abandon_address,
    .holds = incl_holds,
    .release_address = incl_release_address,
    .address_seen = incl_address_seen,
    .on_leading = incl_on_leading,
    .reconcile_pool = incl_reconcile_pool,
    .write_metrics = incl_write_metrics,
    .free = incl_free,
};

int pk_incluster_new(const struct pk_backend_host *host, struct pk_backend *out)
{
	struct incluster *b = calloc(1, sizeof(*b));
	if (b == NULL)
		return PK_ERR_NOMEM;
	b->host = *host;
	b->seam.ops = &incl_ops;
	b->seam.self = b;
	pthread_mutex_init(&b->mu, NULL);
	if (incl_records_init(b) != PK_OK) {
		incl_free(b);
		return PK_ERR_NOMEM;
	}
	*out = b->seam;
	return PK_OK;
}
