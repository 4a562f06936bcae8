/*
 * kea_calls.c - the Kea backend's callers: KEA_CALLERS threads that take
 * claims' jobs in order and run each against Kea (kea_alloc.h), so that no
 * controller worker ever waits on Kea. A job's answer is kept on the
 * claim's record and the claim is queued (host->queue_claim); an answer of
 * an older term (cancel came meanwhile) is dropped and queues nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "kea_internal.h"
#include "log.h"

void kea_job_queue(struct kea_backend *b, struct kea_job *j)
{
	j->next = NULL;
	if (b->tail != NULL)
		b->tail->next = j;
	else
		b->head = j;
	b->tail = j;
	pthread_cond_signal(&b->cv);
}

void kea_jobs_cancel(struct kea_backend *b)
{
	for (size_t i = 0; i < KEA_CALLERS; i++)
		if (b->running[i] != NULL)
			atomic_store(&b->running[i]->cancelled, 1);
	while (b->head != NULL) {
		struct kea_job *j = b->head;
		b->head = j->next;
		free(j);
	}
	b->tail = NULL;
}

void kea_conn_free(struct kea_conn *c)
{
	free(c->url);
	free(c->ca);
	free(c->user);
	kea_wipe(c->password);
	free(c->owner);
}

bool kea_conn_copy(struct kea_backend *b, const char *server, struct kea_conn *c)
{
	const struct kea_server *s = pk_strmap_get(b->servers, server);
	memset(c, 0, sizeof(*c));
	if (s == NULL)
		return false;
	c->url = kea_dup(s->url);
	c->ca = kea_dup(s->ca);
	c->ca_len = s->ca_len;
	c->user = kea_dup(s->user);
	c->password = kea_dup(s->password);
	c->owner = kea_dup(s->owner);
	return c->url != NULL && c->owner != NULL;
}

/* The last call's outcome of a server, for ready (under b->mu). */
static void note_outcome(struct kea_backend *b, const char *server,
                         const struct pk_backend_result *r)
{
	struct kea_server *s = pk_strmap_get(b->servers, server);
	if (s == NULL)
		return;
	bool down = strcmp(r->reason, PK_KEA_REASON_UNREACHABLE) == 0 ||
	            strcmp(r->reason, PK_KEA_REASON_CREDENTIALS) == 0 ||
	            strcmp(r->reason, PK_KEA_REASON_UNAVAILABLE) == 0;
	s->last = down ? PK_KEA_UNREACHABLE : PK_KEA_ANSWERED;
	snprintf(s->last_text, sizeof(s->last_text), "%s", down ? r->message : "");
}

/* Runs one job against Kea (b->mu not held). */
static void run(struct kea_backend *b, const struct kea_job *j, const struct kea_conn *c,
                struct pk_kea_taken *taken, unsigned *released, struct pk_backend_result *res)
{
	struct pk_kea_endpoint ep = {.url = c->url,
	                             .ca_pem = c->ca,
	                             .ca_len = c->ca_len,
	                             .user = c->user,
	                             .password = c->password,
	                             .timeout_ms = b->host.call_timeout_ms,
	                             .cancel = &j->cancelled};
	struct pk_kea_claim who = {.owner = c->owner,
	                           .ns = j->ns,
	                           .name = j->name,
	                           .cluster = j->has_cluster ? j->cluster : NULL,
	                           .uid = j->has_uid ? j->uid : NULL,
	                           .pool = j->pool_key};
	/* The pool's engine view: its allocator is guarded by its own mutex; the state is
	 * held (refs) so that a newer spec does not free it under the call. */
	pthread_mutex_lock(&b->mu);
	struct kea_pool *p = kea_pool_find(b, j->pool_key);
	if (p != NULL)
		p->refs++;
	pthread_mutex_unlock(&b->mu);
	struct pk_kea_pool *kp = p != NULL && p->valid ? &p->kp : NULL;
	if (j->give_back)
		pk_kea_give_back(&ep, kp, j->family, &who, released, res);
	else if (kp == NULL)
		pk_backend_result_set(res, PK_BACKEND_TRANSIENT, NULL, "%s changed meanwhile",
		                      j->pool_key);
	else
		pk_kea_take(&ep, kp, &who, taken, res);
	if (p != NULL) {
		pthread_mutex_lock(&b->mu);
		kea_pool_put(b, p);
		pthread_mutex_unlock(&b->mu);
	}
}

/* Keeps the job's answer on the claim's record and queues the claim (b->mu not held). */
static void answer(struct kea_backend *b, const struct kea_job *j, const struct pk_kea_taken *taken,
                   unsigned released, const struct pk_backend_result *res)
{
	pthread_mutex_lock(&b->mu);
	bool current = j->term == b->term;
	struct kea_claim *c = kea_claim_get(b, j->claim_key, false);
	/* An abandoned lease's give-back runs in the background: its answer is nobody's to
	 * collect, yet a take of the claim that waited for it is queued all the same. */
	bool waited = current && c != NULL && (!j->give_back || c->releasing);
	if (current && c != NULL) {
		c->call = KEA_IDLE;
		c->answered = waited;
		c->answer = *res;
		c->released = released;
		if (!j->give_back && res->status == PK_BACKEND_OK) {
			c->held = true;
			c->address = taken->address;
			c->made = taken->made;
		}
		note_outcome(b, j->server, res);
	}
	pthread_mutex_unlock(&b->mu);
	if (current && c != NULL)
		b->host.queue_claim(b->host.ud, j->claim_key, 0);
}

static void *caller_main(void *arg)
{
	const struct kea_caller *me = arg;
	struct kea_backend *b = me->b;
	pthread_mutex_lock(&b->mu);
	for (;;) {
		while (b->head == NULL && !b->stopping)
			pthread_cond_wait(&b->cv, &b->mu);
		if (b->stopping)
			break;
		struct kea_job *j = b->head;
		b->head = j->next;
		if (b->head == NULL)
			b->tail = NULL;
		struct kea_conn c;
		bool known = kea_conn_copy(b, j->server, &c);
		b->running[me->slot] = j;
		pthread_mutex_unlock(&b->mu);
		struct pk_kea_taken taken = {0};
		unsigned released = 0;
		struct pk_backend_result res;
		if (known)
			run(b, j, &c, &taken, &released, &res);
		else
			pk_backend_result_set(&res, PK_BACKEND_PERMANENT, PK_KEA_REASON_UNREACHABLE,
			                      "KeaServer %s is not known (or out of memory)",
			                      j->server);
		kea_conn_free(&c);
		answer(b, j, &taken, released, &res);
		pthread_mutex_lock(&b->mu);
		b->running[me->slot] = NULL;
		free(j);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

int kea_callers_start(struct kea_backend *b)
{
	for (; b->ncallers < KEA_CALLERS; b->ncallers++) {
		struct kea_caller *c = &b->callers[b->ncallers];
		c->b = b;
		c->slot = b->ncallers;
		if (pthread_create(&c->thread, NULL, caller_main, c) != 0)
			return PK_ERR_NOMEM;
	}
	return PK_OK;
}

void kea_callers_stop(struct kea_backend *b)
{
	pthread_mutex_lock(&b->mu);
	b->stopping = true;
	kea_jobs_cancel(b);
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	for (; b->ncallers > 0; b->ncallers--)
		pthread_join(b->callers[b->ncallers - 1].thread, NULL);
}
