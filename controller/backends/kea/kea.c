/* kea.c - the Kea backend's side of the seam; see kea.h. */
#include "kea.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "kea_internal.h"
#include "log.h"
#include "objects.h"

static const struct pk_pool_kind *kea_kinds(void *self, size_t *n)
{
	(void)self;
	return pk_pool_kinds_of_backend(PK_KEA_BACKEND, n);
}

static bool kea_serves(void *self, const json_t *pool_ref)
{
	struct kea_backend *b = self;
	const struct pk_pool_kind *k = pk_pool_kind_of_ref(pool_ref);
	return k != NULL && pk_backend_kind(&b->seam, k->kind) == k;
}

static int kea_view_pool(void *self, struct pk_pool_view *v)
{
	struct kea_backend *b = self;
	pthread_mutex_lock(&b->mu);
	struct kea_pool *p = kea_pool_state(b, v->key, v->obj);
	if (p != NULL && !p->valid) {
		v->facts.state = PK_POOL_INVALID;
		snprintf(v->text, sizeof(v->text), "%s", p->invalid);
	}
	pthread_mutex_unlock(&b->mu);
	return p != NULL ? PK_OK : PK_ERR_NOMEM;
}

static void kea_check_address(void *self, const struct pk_pool_view *pool,
                              const struct pk_claim_id *id, const json_t *claim,
                              const json_t *address, struct pk_claim_facts *f)
{
	struct kea_backend *b = self;
	struct pk_addr a;
	struct pk_err err;
	const char *text = pk_json_cstr_at(json_object_get(address, "spec"), "address");
	pthread_mutex_lock(&b->mu);
	struct kea_pool *p = kea_pool_find(b, pool->key);
	bool valid = p != NULL && p->valid;
	bool taken = valid && text != NULL && pk_address_parse(text, &a, NULL, &err) == PK_OK &&
	             kea_held_elsewhere(b, pool->key, id->key, a.v);
	pk_claim_facts_check_address(f, claim, address, valid ? &p->spec : NULL, taken);
	pthread_mutex_unlock(&b->mu);
}

/* The job of a claim's call, everything copied from the pass. */
static struct kea_job *job_of(const struct pk_claim_id *id, const char *pool_key,
                              const struct kea_pool *p, bool give_back, unsigned term)
{
	struct kea_job *j = calloc(1, sizeof(*j));
	if (j == NULL)
		return NULL;
	j->give_back = give_back;
	j->term = term;
	snprintf(j->claim_key, sizeof(j->claim_key), "%s", id->key);
	snprintf(j->ns, sizeof(j->ns), "%s", id->ns);
	snprintf(j->name, sizeof(j->name), "%s", id->name);
	j->has_cluster = id->cluster != NULL;
	snprintf(j->cluster, sizeof(j->cluster), "%s", id->cluster ? id->cluster : "");
	j->has_uid = id->uid != NULL;
	snprintf(j->uid, sizeof(j->uid), "%s", id->uid ? id->uid : "");
	snprintf(j->pool_key, sizeof(j->pool_key), "%s", pool_key);
	snprintf(j->server, sizeof(j->server), "%s", p->server);
	j->family = p->spec.family;
	return j;
}

static void lease_of(const struct kea_pool *p, const struct kea_claim *c,
                     struct pk_address_lease *l)
{
	memset(l, 0, sizeof(*l));
	pk_address_format(&c->address, l->address);
	if (p->spec.has_gateway)
		pk_address_format_v(p->spec.gateway, p->spec.family, l->gateway);
	l->prefix = p->spec.has_prefix ? p->spec.prefix : pk_address_bits(p->spec.family);
	l->fresh = c->made;
}

/* Starts the claim's call (under b->mu): PENDING, or TRANSIENT when memory ran out. */
static void start_call(struct kea_backend *b, struct kea_claim *c, const struct pk_claim_id *id,
                       const struct kea_pool *p, bool give_back, struct pk_backend_result *out)
{
	struct kea_job *j = job_of(id, p->key, p, give_back, b->term);
	if (j == NULL) {
		pk_backend_result_set(out, PK_BACKEND_TRANSIENT, NULL, "out of memory");
		return;
	}
	kea_job_queue(b, j);
	c->call = give_back ? KEA_GIVING_BACK : KEA_TAKING;
	c->answered = false;
	snprintf(c->pool_key, sizeof(c->pool_key), "%s", p->key);
	pk_backend_result_set(out, PK_BACKEND_PENDING, NULL, "%s", "");
}

static void kea_ensure_address(void *self, const struct pk_pool_view *pool,
                               const struct pk_claim_id *id, struct pk_address_lease *lease,
                               struct pk_backend_result *out)
{
	struct kea_backend *b = self;
	pk_backend_result_set(out, PK_BACKEND_OK, NULL, "%s", "");
	pthread_mutex_lock(&b->mu);
	struct kea_pool *p = kea_pool_find(b, pool->key);
	struct kea_claim *c = p != NULL && p->valid ? kea_claim_get(b, id->key, true) : NULL;
	if (c == NULL)
		pk_backend_result_set(out, PK_BACKEND_TRANSIENT, NULL, "%s",
		                      p == NULL || p->valid ? "out of memory"
		                                            : "the pool is not valid");
	else if (c->call != KEA_IDLE || c->releasing)
		pk_backend_result_set(out, PK_BACKEND_PENDING, NULL, "%s", "");
	else if (c->held && strcmp(c->pool_key, pool->key) == 0)
		lease_of(p, c, lease); /* taken (this pass or an earlier one), or seen */
	else if (c->answered && c->answer.status != PK_BACKEND_OK) {
		*out = c->answer; /* told once; the next ask starts again */
		c->answered = false;
	} else
		start_call(b, c, id, p, false, out);
	if (out->status == PK_BACKEND_OK)
		c->answered = false;
	pthread_mutex_unlock(&b->mu);
}

static void kea_abandon_address(void *self, const struct pk_claim_id *id,
                                const struct pk_address_lease *lease)
{
	struct kea_backend *b = self;
	struct pk_backend_result ignored;
	if (!lease->fresh)
		return; /* the claim's before this pass: it stays */
	pthread_mutex_lock(&b->mu);
	struct kea_claim *c = kea_claim_get(b, id->key, false);
	struct kea_pool *p = c != NULL ? kea_pool_find(b, c->pool_key) : NULL;
	/* Given back in the background; if that fails, the claim's next take finds the lease. */
	if (c != NULL && p != NULL && c->call == KEA_IDLE) {
		c->held = false;
		start_call(b, c, id, p, true, &ignored);
	}
	pthread_mutex_unlock(&b->mu);
}

static bool kea_holds(void *self, const struct pk_claim_id *id)
{
	struct kea_backend *b = self;
	pthread_mutex_lock(&b->mu);
	const struct kea_claim *c = kea_claim_get(b, id->key, false);
	bool held = c != NULL && (c->held || c->releasing);
	pthread_mutex_unlock(&b->mu);
	return held;
}

/* The give-back's answer, collected (under b->mu). */
static void released(struct kea_backend *b, struct kea_claim *c, const struct pk_claim_id *id,
                     struct pk_release_note *note, struct pk_backend_result *result)
{
	*result = c->answer;
	c->answered = false;
	if (result->status != PK_BACKEND_OK)
		return; /* still releasing: the next ask tries again */
	note->released = c->released > 0;
	pk_address_format(&c->address, note->address);
	pk_pool_next_counts_moved(&result->next, c->pool_key);
	result->next.wake = true;
	kea_claim_drop(b, id->key);
}

static void kea_release_address(void *self, const struct pk_claim_id *id,
                                struct pk_release_note *note, struct pk_backend_result *result)
{
	struct kea_backend *b = self;
	memset(note, 0, sizeof(*note));
	pk_backend_result_set(result, PK_BACKEND_OK, NULL, "%s", "");
	pthread_mutex_lock(&b->mu);
	struct kea_claim *c = kea_claim_get(b, id->key, false);
	struct kea_pool *p = c != NULL ? kea_pool_find(b, c->pool_key) : NULL;
	if (c == NULL) {
		/* Nothing known: nothing to give back. */
	} else if (c->call != KEA_IDLE) {
		pk_backend_result_set(result, PK_BACKEND_PENDING, NULL, "%s", "");
		c->releasing = true;
	} else if (c->releasing && c->answered && !c->held) {
		released(b, c, id, note, result);
	} else if (p == NULL || !p->valid) {
		/* Which server the lease is at is unknown (its pool was never seen by this
		 * process): a deletion is never blocked on it; a resync finds the lease. */
		pk_log_warn("release without the pool: the lease stays in Kea until a resync",
		            PK_LOG_STR("claim", id->key), PK_LOG_STR("pool", c->pool_key));
		kea_claim_drop(b, id->key);
	} else {
		/* Also a take that answered after the release was asked for: given back too. */
		c->held = false;
		c->releasing = true;
		start_call(b, c, id, p, true, result);
	}
	pthread_mutex_unlock(&b->mu);
}

static void kea_address_seen(void *self, const json_t *address, struct pk_pool_next *next)
{
	struct kea_backend *b = self;
	char pk[PK_OBJECT_KEY_MAX], key[PK_OBJECT_KEY_MAX];
	struct pk_addr a;
	if (!kea_address_of(b, address, key, pk, &a))
		return;
	pthread_mutex_lock(&b->mu);
	struct kea_claim *c = kea_claim_get(b, key, true);
	bool changed = c != NULL && (!c->held || c->address.v != a.v || strcmp(c->pool_key, pk));
	/* Its IPAddress exists: the lease is no longer this pass's to undo. */
	if (c != NULL && !changed)
		c->made = false;
	if (changed) {
		c->held = true;
		c->address = a;
		snprintf(c->pool_key, sizeof(c->pool_key), "%s", pk);
		struct kea_pool *p = kea_pool_find(b, pk);
		if (p != NULL && p->valid) {
			pthread_mutex_lock(&p->mu);
			int rc = pk_allocator_adopt(p->kp.alloc, a.v);
			pthread_mutex_unlock(&p->mu);
			(void)rc; /* known as used already */
		}
	}
	pthread_mutex_unlock(&b->mu);
	if (changed)
		pk_pool_next_counts_moved(next, pk);
}

struct load_ctx {
	struct kea_backend *b;
	size_t n;
};

static int load_page(void *ud, const json_t *page)
{
	struct load_ctx *l = ud;
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(page, "items"), i, a)
	{
		struct pk_pool_next ignored;
		memset(&ignored, 0, sizeof(ignored));
		kea_address_seen(l->b, a, &ignored);
		l->n++;
	}
	return 0;
}

/* A new term: the IPAddresses, from a consistent read, are what is held; calls start again. */
static int kea_on_leading(void *self)
{
	struct kea_backend *b = self;
	struct load_ctx l = {b, 0};
	pthread_mutex_lock(&b->mu);
	b->term++;
	pk_strmap_free(b->claims, free);
	b->claims = pk_strmap_new();
	pthread_mutex_unlock(&b->mu);
	if (b->claims == NULL)
		return PK_ERR_NOMEM;
	int rc = kea_list_addresses(b, load_page, &l);
	if (rc != PK_OK)
		return rc;
	malloc_trim(0);
	pk_log_info("leading: Kea backend's IPAddresses read", PK_LOG_UINT("ipaddresses", l.n));
	return PK_OK;
}

static void kea_cancel(void *self)
{
	struct kea_backend *b = self;
	pthread_mutex_lock(&b->mu);
	b->term++; /* answers in flight are dropped */
	kea_jobs_cancel(b);
	pthread_mutex_unlock(&b->mu);
}

struct ready_scan {
	char *why;
	size_t len;
	bool ready;
};

static void server_ready(void *ud, const char *name, void *value)
{
	struct ready_scan *r = ud;
	const struct kea_server *s = value;
	if (!r->ready || s->last == PK_KEA_ANSWERED)
		return;
	r->ready = false;
	snprintf(r->why, r->len, "KeaServer %s: %s", name, s->last_text);
}

static bool kea_ready(void *self, char *why, size_t len)
{
	struct kea_backend *b = self;
	struct ready_scan r = {why, len, true};
	pthread_mutex_lock(&b->mu);
	pk_strmap_foreach(b->servers, server_ready, &r);
	pthread_mutex_unlock(&b->mu);
	return r.ready;
}

static void kea_free(void *self)
{
	struct kea_backend *b = self;
	if (b == NULL)
		return;
	kea_callers_stop(b);
	kea_records_free(b);
	kea_connections_free(b);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

static const struct pk_backend_ops kea_ops = {
    .kinds = kea_kinds,
    .serves = kea_serves,
    .view_pool = kea_view_pool,
    .check_address = kea_check_address,
    .ensure_address = kea_ensure_address,
    .abandon_address = kea_abandon_address,
    .holds = kea_holds,
    .release_address = kea_release_address,
    .address_seen = kea_address_seen,
    .on_leading = kea_on_leading,
    .reconcile_pool = kea_reconcile_pool,
    .resync = kea_resync,
    .watches = kea_watches,
    .watched = kea_watched,
    .cancel = kea_cancel,
    .ready = kea_ready,
    .write_metrics = kea_write_metrics,
    .free = kea_free,
};

int pk_kea_new(const struct pk_backend_host *host, struct pk_backend *out)
{
	struct kea_backend *b = calloc(1, sizeof(*b));
	if (b == NULL)
		return PK_ERR_NOMEM;
	b->host = *host;
	b->seam = (struct pk_backend){&kea_ops, b};
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	if (kea_records_init(b) != PK_OK || kea_connections_init(b) != PK_OK ||
	    kea_callers_start(b) != PK_OK) {
		kea_free(b);
		return PK_ERR_NOMEM;
	}
	*out = b->seam;
	return PK_OK;
}
