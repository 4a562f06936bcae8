/*
 * kea_internal.h - the Kea backend's state, shared by its files (kea.c:
 * the seam; kea_calls.c: the threads that call Kea; kea_records.c: servers,
 * pools and claims). Not for use outside backends/kea/.
 *
 * Locking: b->mu guards the servers, pools and claims maps and the job
 * queue; a pool's own mutex guards its allocator only, and is never held
 * across a call to Kea, nor together with b->mu.
 */
#ifndef PK_KEA_INTERNAL_H
#define PK_KEA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "backend.h"
#include "kea.h"
#include "kea_alloc.h"
#include "pool.h"
#include "strmap.h"

/* The resources the backend watches (kea_watches), by index. */
enum { KEA_WATCH_SERVERS = 0, KEA_WATCH_SECRETS };

/* Threads that call Kea: that many claims' calls are in flight at once. */
#define KEA_CALLERS 4

/* A KeaServer's connection, as the backend was last told it. */
struct kea_server {
	char *url, *ca, *user, *password, *owner;
	size_t ca_len;
	enum pk_kea_outcome last; /* the last call's outcome (for ready) */
	char last_text[PK_ERR_MSG_MAX];
};

/* A Kea pool, decoded from its spec. */
struct kea_pool {
	char key[PK_OBJECT_KEY_MAX];
	char uid[128];
	long long generation;
	char server[254];
	long subnet_id;
	bool valid;
	char invalid[PK_ERR_MSG_MAX];
	struct pk_pool spec;
	pthread_mutex_t mu;    /* guards kp.alloc */
	struct pk_kea_pool kp; /* the engine's view: key, family, subnet, allocator */
	unsigned refs;         /* callers using it now (under b->mu) */
	bool retired;          /* replaced by a newer spec: freed when refs drops to 0 */
};

/* What the backend knows of one claim (key "<ns>/<name>"). */
struct kea_claim {
	char pool_key[PK_OBJECT_KEY_MAX];
	bool held;      /* an address is the claim's: leased for it, or its IPAddress seen */
	bool releasing; /* its release was asked for and is not confirmed yet */
	struct pk_addr address;
	bool made; /* leased by this process's take (else found or seen) */
	enum { KEA_IDLE, KEA_TAKING, KEA_GIVING_BACK } call;
	bool answered;                   /* the last call's answer waits to be asked for */
	struct pk_backend_result answer; /* its result (OK: taken, or given back) */
	unsigned released;               /* the give-back's count of leases deleted */
};

/* One of the threads that call Kea. */
struct kea_caller {
	struct kea_backend *b;
	size_t slot; /* in b->running */
	pthread_t thread;
};

struct kea_backend {
	struct pk_backend_host host;
	struct pk_backend seam;
	pthread_mutex_t mu;
	pthread_cond_t cv;                    /* a job is queued, or stopping */
	struct pk_strmap *servers;            /* name -> struct kea_server */
	struct pk_strmap *pools;              /* pool key -> struct kea_pool */
	struct pk_strmap *claims;             /* claim key -> struct kea_claim */
	struct pk_strmap *server_specs;       /* KeaServer name -> what its spec says */
	struct pk_strmap *credentials;        /* Secret name -> its username and password */
	struct kea_job *head, *tail;          /* the jobs waiting for a caller */
	struct kea_job *running[KEA_CALLERS]; /* each caller's job in flight, or NULL */
	unsigned term;              /* bumped by cancel: answers of an older term are dropped */
	bool stopping;              /* free: the callers exit */
	atomic_uint leases_missing; /* IPAddresses without their lease, at the last resync */
	struct kea_caller callers[KEA_CALLERS];
	size_t ncallers;
};

/* One claim's call, as a caller runs it: everything copied, nothing borrowed. */
struct kea_job {
	struct kea_job *next;
	bool give_back; /* else take */
	unsigned term;
	atomic_int cancelled; /* set by cancel: the call ends at once (the client's flag) */
	char claim_key[PK_OBJECT_KEY_MAX];
	char ns[64], name[254], cluster[254], uid[128];
	bool has_cluster, has_uid;
	char pool_key[PK_OBJECT_KEY_MAX];
	char server[254];
	enum pk_family family;
};

/* kea_records.c: a copy of s, NULL for NULL (and when memory runs out); and a secret's text
 * wiped before it is freed, so that no copy of a password is left in the heap. */
char *kea_dup(const char *s);
void kea_wipe(char *secret);

/* kea_records.c (under b->mu unless said) */
int kea_records_init(struct kea_backend *b);
void kea_records_free(struct kea_backend *b);
struct kea_claim *kea_claim_get(struct kea_backend *b, const char *key, bool create);
void kea_claim_drop(struct kea_backend *b, const char *key);
/* The pool state of key from the cached pool (made or refreshed when its generation or UID
 * changed); NULL when memory ran out. */
struct kea_pool *kea_pool_state(struct kea_backend *b, const char *key, const json_t *pool);
struct kea_pool *kea_pool_find(struct kea_backend *b, const char *key);
/* A caller is done with p (taken with p->refs++): a retired state is freed with its last. */
void kea_pool_put(struct kea_backend *b, struct kea_pool *p);
/* An IPAddress of a Kea pool: its claim's key, its pool's key and its address; false when
 * it is none (another backend's, or an address that does not parse). Any thread. */
bool kea_address_of(struct kea_backend *b, const json_t *address, char key[PK_OBJECT_KEY_MAX],
                    char pool_key[PK_OBJECT_KEY_MAX], struct pk_addr *a);
/* Every IPAddress, page by page (a consistent read through the host's writer): PK_OK,
 * PK_ERR_NOMEM or PK_ERR_API. b->mu not held. */
int kea_list_addresses(struct kea_backend *b, int (*page)(void *ud, const json_t *page), void *ud);
/* How many claims the backend knows to hold an address of the pool. */
size_t kea_pool_held(struct kea_backend *b, const char *pool_key);
/* Whether another claim than key holds addr in the pool. */
bool kea_held_elsewhere(struct kea_backend *b, const char *pool_key, const char *key, pk_u128 addr);
/* The endpoint of a server (pointers into b's record: valid under b->mu, or copied). */
bool kea_server_endpoint(struct kea_backend *b, const char *name, struct pk_kea_endpoint *ep);

/* kea_pool_status.c (b->mu not held) */
int kea_reconcile_pool(void *self, const struct pk_work_key *k, const json_t *pool,
                       struct pk_pool_next *next);
void kea_write_metrics(void *self, FILE *f);

/* kea_connections.c (b->mu not held): the watches and watched ops. */
int kea_connections_init(struct kea_backend *b);
void kea_connections_free(struct kea_backend *b);
const struct pk_backend_watch *kea_watches(void *self, size_t *n);
void kea_watched(void *self, size_t i, const char *key, const json_t *obj, bool *requeue);

/* kea_resync.c (b->mu not held): the resync op. */
int kea_resync(void *self);

/* A server's connection copied out of its record, for a call made without b->mu. */
struct kea_conn {
	char *url, *ca, *user, *password, *owner;
	size_t ca_len;
};

/* kea_calls.c */
/* Copies the named server's connection (under b->mu); false when unknown or out of memory
 * (c is then still freed with kea_conn_free). */
bool kea_conn_copy(struct kea_backend *b, const char *server, struct kea_conn *c);
void kea_conn_free(struct kea_conn *c);
int kea_callers_start(struct kea_backend *b);
void kea_callers_stop(struct kea_backend *b);
/* Queues a job (under b->mu). */
void kea_job_queue(struct kea_backend *b, struct kea_job *j);
/* Ends every call in flight and drops every job queued (under b->mu). */
void kea_jobs_cancel(struct kea_backend *b);

#endif
