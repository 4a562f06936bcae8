/*
 * fake_remote.h - a pool backend whose addresses come from a system across
 * a network, for the controller's suites: every call to it runs on a
 * thread of its own, so ensure_address answers PENDING at once and the
 * backend queues the claim (host's queue_claim) when the answer is in.
 * Include after <cmocka.h> and json_fixture.h.
 *
 * The test holds every call until it opens the gate (fake_remote_open), so
 * that "a slow system holds no worker" needs no clock: a call that blocked
 * the worker would not return before the gate opens. Faults, each for the
 * next call only:
 *
 *   REMOTE_5XX      the system answered 503                  transient, backoff
 *   REMOTE_429      429 with Retry-After (retry_after_ms)    transient, after that
 *   REMOTE_TIMEOUT  no answer before the call's deadline     transient, backoff
 *   REMOTE_LOST     the system made the lease, and its answer was lost on the way
 *
 * The system's leases are keyed as a real backend must key them, on what
 * survives clusterctl move (namespace, name, cluster), so a call retried
 * after a lost answer finds the lease it made. fake_remote_restart forgets
 * what the backend knew, never what the system holds; on_leading reads it
 * back. Each call waits at most deadline_ms (the host's call_timeout_ms;
 * 0: no deadline) and then ends as a timeout; cancel ends every call at
 * once, answering nothing and queueing no claim.
 */
#ifndef PK_TEST_FAKE_REMOTE_H
#define PK_TEST_FAKE_REMOTE_H

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend.h"

#define REMOTE_SLOTS 16

enum remote_fault { REMOTE_OK = 0, REMOTE_5XX, REMOTE_429, REMOTE_TIMEOUT, REMOTE_LOST };

enum remote_state { R_NONE = 0, R_ASKING, R_ANSWERED, R_FAILED };

struct remote_lease {
	char key[200]; /* "<ns>/<name>/<cluster>" */
	char address[PK_ADDR_STRLEN];
};

struct remote_local {
	char key[200];
	char claim_key[PK_OBJECT_KEY_MAX];
	enum remote_state state;
	bool fresh;
	char address[PK_ADDR_STRLEN];
	struct pk_backend_result failure;
};

struct fake_remote {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool open;                                /* the gate: calls are answered */
	struct remote_lease server[REMOTE_SLOTS]; /* the system: survives restarts */
	unsigned next_host, adds;                 /* leases the system made */
	struct remote_local local[REMOTE_SLOTS];  /* what the backend knows */
	enum remote_fault fault;
	long retry_after_ms;
	pthread_t threads[REMOTE_SLOTS * 4];
	size_t nthreads;
	unsigned answers;                    /* calls answered (and the claim queued) */
	unsigned resyncs;                    /* resync's count */
	unsigned watched;                    /* watched's count */
	char watched_key[PK_OBJECT_KEY_MAX]; /* the last one's key, "-" when it went */
	int resync_rc;                       /* what resync answers */
	bool down;                           /* ready says the system is unreachable */
	char checked_id[PK_EXTERNAL_ID_MAX]; /* the external ID check_address was handed */
	long deadline_ms;                    /* each call's deadline; 0: none */
	unsigned cancels; /* cancel's count: a call started before a cancel is dropped */
	unsigned dropped; /* calls ended by a cancel */
	void (*queue_claim)(void *ud, const char *claim_key, long delay_ms);
	void *ud;
};

struct remote_call {
	struct fake_remote *fr;
	size_t slot;
	unsigned cancels; /* fr->cancels when the call began */
};

static const struct pk_pool_kind remote_kinds[] = {{"RemoteIPPool", "remote.ipam.example.org", "v1",
                                                    "remoteippools", true, "remote",
                                                    PK_POOL_SPEC_RANGES}};

static inline void remote_key(const struct pk_claim_id *id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s/%s", id->ns, id->name, id->cluster ? id->cluster : "");
}

static inline struct remote_local *remote_local_find(struct fake_remote *fr, const char *key,
                                                     bool add)
{
	struct remote_local *free_slot = NULL;
	for (size_t i = 0; i < REMOTE_SLOTS; i++) {
		if (fr->local[i].state != R_NONE && strcmp(fr->local[i].key, key) == 0)
			return &fr->local[i];
		if (free_slot == NULL && fr->local[i].state == R_NONE)
			free_slot = &fr->local[i];
	}
	if (add && free_slot != NULL) {
		memset(free_slot, 0, sizeof(*free_slot));
		snprintf(free_slot->key, sizeof(free_slot->key), "%s", key);
	}
	return add ? free_slot : NULL;
}

static inline struct remote_lease *remote_server_find(struct fake_remote *fr, const char *key)
{
	for (size_t i = 0; i < REMOTE_SLOTS; i++)
		if (fr->server[i].key[0] != '\0' && strcmp(fr->server[i].key, key) == 0)
			return &fr->server[i];
	return NULL;
}

/* The system's side of a lease call: the lease the key has, else a new one. */
static inline struct remote_lease *remote_server_lease(struct fake_remote *fr, const char *key)
{
	struct remote_lease *l = remote_server_find(fr, key);
	for (size_t i = 0; l == NULL && i < REMOTE_SLOTS; i++)
		if (fr->server[i].key[0] == '\0') {
			l = &fr->server[i];
			snprintf(l->key, sizeof(l->key), "%s", key);
			snprintf(l->address, sizeof(l->address), "10.9.0.%u", ++fr->next_host);
			fr->adds++;
		}
	return l;
}

static inline void *remote_call_run(void *arg)
{
	struct remote_call *c = arg;
	struct fake_remote *fr = c->fr;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += fr->deadline_ms / 1000;
	until.tv_nsec += (fr->deadline_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&fr->mu);
	bool late = false;
	while (!fr->open && fr->cancels == c->cancels && !late) {
		if (fr->deadline_ms > 0)
			late = pthread_cond_timedwait(&fr->cv, &fr->mu, &until) == ETIMEDOUT;
		else
			pthread_cond_wait(&fr->cv, &fr->mu);
	}
	struct remote_local *l = &fr->local[c->slot];
	if (fr->cancels != c->cancels) {
		if (l->state == R_ASKING)
			l->state = R_NONE;
		fr->dropped++;
		pthread_mutex_unlock(&fr->mu);
		free(c);
		return NULL;
	}
	enum remote_fault fault = late ? REMOTE_TIMEOUT : fr->fault;
	if (!late)
		fr->fault = REMOTE_OK;
	struct remote_lease *s = NULL;
	char key[sizeof(l->key)];
	memcpy(key, l->key, sizeof(key));
	if (fault == REMOTE_OK || fault == REMOTE_LOST)
		s = remote_server_lease(fr, key);
	if (fault == REMOTE_OK && s != NULL) {
		l->state = R_ANSWERED;
		l->fresh = true;
		snprintf(l->address, sizeof(l->address), "%s", s->address);
	} else {
		l->state = R_FAILED;
		struct pk_backend_result *r = &l->failure;
		if (fault == REMOTE_429) {
			pk_backend_result_set(r, PK_BACKEND_TRANSIENT, "BackendBusy",
			                      "the remote system answered 429, Retry-After %ld ms",
			                      fr->retry_after_ms);
			r->retry_after_ms = fr->retry_after_ms;
		} else if (fault == REMOTE_5XX) {
			pk_backend_result_set(r, PK_BACKEND_TRANSIENT, "BackendUnavailable",
			                      "the remote system answered 503");
		} else {
			pk_backend_result_set(r, PK_BACKEND_TRANSIENT, "BackendTimeout",
			                      "the remote system did not answer in time");
		}
	}
	char claim_key[PK_OBJECT_KEY_MAX];
	snprintf(claim_key, sizeof(claim_key), "%s", l->claim_key);
	fr->answers++;
	pthread_mutex_unlock(&fr->mu);
	if (fr->queue_claim != NULL)
		fr->queue_claim(fr->ud, claim_key, 0);
	free(c);
	return NULL;
}

static inline const struct pk_pool_kind *remote_kinds_fn(void *self, size_t *n)
{
	(void)self;
	*n = 1;
	return remote_kinds;
}

static inline bool remote_serves(void *self, const json_t *ref)
{
	(void)self;
	const char *g = json_string_value(json_object_get(ref, "apiGroup"));
	const char *k = json_string_value(json_object_get(ref, "kind"));
	return g != NULL && k != NULL && strcmp(g, remote_kinds[0].group) == 0 &&
	       strcmp(k, remote_kinds[0].kind) == 0;
}

/* The remote pool, as the cache would hold it. */
static inline json_t *remote_pool(void)
{
	return load("{'metadata': {'name': 'remote', 'namespace': 'ns', 'uid': 'ru'}}");
}

static inline void remote_check(void *self, const struct pk_pool_view *pool,
                                const struct pk_claim_id *id, const json_t *claim,
                                const json_t *address, struct pk_claim_facts *f)
{
	struct fake_remote *fr = self;
	(void)pool, (void)claim, (void)address;
	snprintf(fr->checked_id, sizeof(fr->checked_id), "%s",
	         id->external_id ? id->external_id : "");
	f->address_check = PK_ADDRESS_CONSISTENT;
}

static inline void remote_ensure(void *self, const struct pk_pool_view *pool,
                                 const struct pk_claim_id *id, struct pk_address_lease *lease,
                                 struct pk_backend_result *out)
{
	struct fake_remote *fr = self;
	(void)pool;
	char key[200];
	remote_key(id, key, sizeof(key));
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&fr->mu);
	struct remote_local *l = remote_local_find(fr, key, true);
	assert_non_null(l);
	if (l->state == R_ANSWERED) {
		memset(lease, 0, sizeof(*lease));
		snprintf(lease->address, sizeof(lease->address), "%s", l->address);
		snprintf(lease->external_id, sizeof(lease->external_id), "rec/%s", l->address);
		lease->prefix = 24;
		lease->fresh = l->fresh;
		l->fresh = false;
		out->status = PK_BACKEND_OK;
	} else if (l->state == R_FAILED) {
		*out = l->failure;
		l->state = R_NONE; /* the next pass asks again */
	} else {
		out->status = PK_BACKEND_PENDING;
		if (l->state == R_NONE) {
			l->state = R_ASKING;
			snprintf(l->claim_key, sizeof(l->claim_key), "%s", id->key);
			struct remote_call *c = malloc(sizeof(*c));
			assert_non_null(c);
			*c = (struct remote_call){fr, (size_t)(l - fr->local), fr->cancels};
			assert_true(fr->nthreads < sizeof(fr->threads) / sizeof(fr->threads[0]));
			assert_int_equal(
			    pthread_create(&fr->threads[fr->nthreads++], NULL, remote_call_run, c),
			    0);
		}
	}
	pthread_mutex_unlock(&fr->mu);
}

static inline void remote_abandon(void *self, const struct pk_claim_id *id,
                                  const struct pk_address_lease *lease)
{
	(void)self, (void)id, (void)lease;
}

static inline bool remote_holds(void *self, const struct pk_claim_id *id)
{
	struct fake_remote *fr = self;
	char key[200];
	remote_key(id, key, sizeof(key));
	pthread_mutex_lock(&fr->mu);
	struct remote_local *l = remote_local_find(fr, key, false);
	bool held = l != NULL && l->state == R_ANSWERED;
	pthread_mutex_unlock(&fr->mu);
	return held;
}

static inline void remote_release(void *self, const struct pk_claim_id *id,
                                  struct pk_release_note *out, struct pk_backend_result *result)
{
	struct fake_remote *fr = self;
	char key[200];
	remote_key(id, key, sizeof(key));
	memset(out, 0, sizeof(*out));
	memset(result, 0, sizeof(*result));
	pthread_mutex_lock(&fr->mu);
	struct remote_lease *s = remote_server_find(fr, key);
	struct remote_local *l = remote_local_find(fr, key, false);
	if (s != NULL) {
		out->released = true;
		snprintf(out->address, sizeof(out->address), "%s", s->address);
		memset(s, 0, sizeof(*s));
	}
	if (l != NULL)
		memset(l, 0, sizeof(*l));
	pthread_mutex_unlock(&fr->mu);
}

static inline void remote_seen(void *self, const json_t *address, struct pk_pool_next *next)
{
	(void)self, (void)address, (void)next;
}

/* Leadership: what the system holds is read back (what a restart forgot). */
static inline int remote_on_leading(void *self)
{
	struct fake_remote *fr = self;
	pthread_mutex_lock(&fr->mu);
	for (size_t i = 0; i < REMOTE_SLOTS; i++) {
		if (fr->server[i].key[0] == '\0')
			continue;
		struct remote_local *l = remote_local_find(fr, fr->server[i].key, true);
		l->state = R_ANSWERED;
		l->fresh = false;
		snprintf(l->address, sizeof(l->address), "%s", fr->server[i].address);
	}
	pthread_mutex_unlock(&fr->mu);
	return PK_OK;
}

static inline int remote_reconcile_pool(void *self, const struct pk_work_key *k, const json_t *pool,
                                        struct pk_pool_next *next)
{
	(void)self, (void)k, (void)pool, (void)next;
	return PK_OK;
}

/* The remote system's connection object, and the Secrets in the credentials namespace. */
static const struct pk_backend_watch remote_watch_list[] = {
    {"remote.ipam.example.org", "v1", "remoteservers", false},
    {"", "v1", "secrets", true},
};

static inline const struct pk_backend_watch *remote_watches(void *self, size_t *n)
{
	(void)self;
	*n = 2;
	return remote_watch_list;
}

static inline void remote_watched(void *self, size_t i, const char *key, const json_t *obj,
                                  bool *requeue)
{
	struct fake_remote *fr = self;
	pthread_mutex_lock(&fr->mu);
	fr->watched++;
	snprintf(fr->watched_key, sizeof(fr->watched_key), "%zu %s", i, obj ? key : "-");
	pthread_mutex_unlock(&fr->mu);
	*requeue = i == 1; /* new credentials: the claims try again */
}

static inline int remote_resync(void *self)
{
	struct fake_remote *fr = self;
	pthread_mutex_lock(&fr->mu);
	fr->resyncs++;
	pthread_mutex_unlock(&fr->mu);
	return fr->resync_rc;
}

static inline void remote_cancel(void *self)
{
	struct fake_remote *fr = self;
	pthread_mutex_lock(&fr->mu);
	fr->cancels++;
	pthread_cond_broadcast(&fr->cv);
	pthread_mutex_unlock(&fr->mu);
}

static inline bool remote_ready(void *self, char *why, size_t len)
{
	struct fake_remote *fr = self;
	pthread_mutex_lock(&fr->mu);
	bool down = fr->down;
	pthread_mutex_unlock(&fr->mu);
	if (down)
		snprintf(why, len, "remote: https://ipam.example.org unreachable");
	return !down;
}

static inline void remote_metrics(void *self, FILE *f)
{
	(void)self;
	fprintf(f, "remote_up 1\n");
}

/* Opens the gate: every call held so far, and every later one, is answered. */
static inline void fake_remote_open(struct fake_remote *fr)
{
	pthread_mutex_lock(&fr->mu);
	fr->open = true;
	pthread_cond_broadcast(&fr->cv);
	pthread_mutex_unlock(&fr->mu);
}

/* A counter of fr's (answers, dropped), read under its lock. */
static inline unsigned fake_remote_read(struct fake_remote *fr, const unsigned *counter)
{
	pthread_mutex_lock(&fr->mu);
	unsigned v = *counter;
	pthread_mutex_unlock(&fr->mu);
	return v;
}

/* Waits (5 s at most) until a counter of fr's reaches n. */
static inline void fake_remote_wait(struct fake_remote *fr, const unsigned *counter, unsigned n)
{
	for (int i = 0; i < 500; i++) {
		if (fake_remote_read(fr, counter) >= n)
			return;
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	fail_msg("the remote system's counter is at %u, not %u", fake_remote_read(fr, counter), n);
}

/* Waits (5 s at most) until n calls have been answered. */
static inline void fake_remote_wait_answers(struct fake_remote *fr, unsigned n)
{
	fake_remote_wait(fr, &fr->answers, n);
}

/* The backend restarts: it forgets what it knew; the system forgets nothing. */
static inline void fake_remote_restart(struct fake_remote *fr)
{
	pthread_mutex_lock(&fr->mu);
	memset(fr->local, 0, sizeof(fr->local));
	pthread_mutex_unlock(&fr->mu);
}

static inline void remote_free(void *self)
{
	struct fake_remote *fr = self;
	fake_remote_open(fr);
	for (size_t i = 0; i < fr->nthreads; i++)
		pthread_join(fr->threads[i], NULL);
	fr->nthreads = 0;
}

static const struct pk_backend_ops remote_ops = {
    .kinds = remote_kinds_fn,
    .serves = remote_serves,
    .check_address = remote_check,
    .ensure_address = remote_ensure,
    .abandon_address = remote_abandon,
    .holds = remote_holds,
    .release_address = remote_release,
    .address_seen = remote_seen,
    .on_leading = remote_on_leading,
    .reconcile_pool = remote_reconcile_pool,
    .resync = remote_resync,
    .watches = remote_watches,
    .watched = remote_watched,
    .cancel = remote_cancel,
    .ready = remote_ready,
    .write_metrics = remote_metrics,
    .free = remote_free,
};

static inline void fake_remote_init(struct fake_remote *fr)
{
	memset(fr, 0, sizeof(*fr));
	pthread_mutex_init(&fr->mu, NULL);
	pthread_cond_init(&fr->cv, NULL);
}

static inline void fake_remote_destroy(struct fake_remote *fr)
{
	remote_free(fr);
	pthread_mutex_destroy(&fr->mu);
	pthread_cond_destroy(&fr->cv);
}

#endif
