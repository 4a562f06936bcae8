/*
 * backend.h - the seam between the CAPI IPAM contract and where addresses
 * come from. The claim reconciler (claim_reconciler.h) speaks the
 * contract: it reads claims, IPAddresses and Clusters, decides
 * (decide.h), writes claims and creates IPAddresses. A pool backend
 * answers the questions only the address source can: which pools it
 * serves, what state a pool is in, which address a claim gets, and when an
 * address is free again. The in-process allocator is one backend
 * (backends/incluster/); an external IPAM would be another, in a folder of
 * its own, with no change to the reconciler.
 *
 * A backend makes no API call of its own and never reads the cache: the
 * reconciler hands it the pool with each call that is about one (struct
 * pk_pool_view, reconcile_pool), and the writer (writer.h) and Events come
 * through the host (struct pk_backend_host) it is given at creation. It
 * queues no pool work either: what an operation changed comes back in its
 * struct pk_pool_next, and the controller queues what follows.
 *
 * Threading: every op may be called from any worker thread at once, but
 * never twice at once for one claim key (the queue hands a key to one
 * worker at a time). A backend guards its own state.
 */
#ifndef PK_BACKEND_H
#define PK_BACKEND_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "address.h"
#include "decide.h"
#include "external_id.h"
#include "pk.h"
#include "pool_ref.h"
#include "work_key.h"
#include "writer.h"

struct pk_kube_object_ref;

/* What the controller offers a backend (all borrowed; valid while the controller lives). */
struct pk_backend_host {
	void *ud;
	struct pk_writer *writer;
	/* Queues the claim (its "<ns>/<name>") after delay_ms: a PENDING answer arrived. */
	void (*queue_claim)(void *ud, const char *claim_key, long delay_ms);
	/* Posts an Event about an object (written off the work path; dropped when full). */
	void (*post_event)(void *ud, const struct pk_kube_object_ref *regarding, bool warning,
	                   const char *reason, const char *action, const char *message);
	/* The IPAddresses' resource (for the consistent read at on_leading). */
	const char *ipam_version; /* "v1beta2" or "v1beta1" */
	const char *namespace;    /* NULL: every namespace */
	/* The deadline of each call a backend makes to another system: one that has not
	 * answered by then ends as PK_BACKEND_TRANSIENT (PK_BACKEND_CALL_TIMEOUT_MS). */
	long call_timeout_ms;
};

/* The deadline of one call to another system. */
#define PK_BACKEND_CALL_TIMEOUT_MS 10000L

/*
 * The claim an operation is about. A backend that keeps records elsewhere
 * keys them on what survives clusterctl move, the claim's namespace, name
 * and cluster, never on its UID, which a move changes; the UID tells a
 * claim deleted and created again under the same name from the old one.
 */
struct pk_claim_id {
	const char *ns, *name; /* never NULL */
	const char *cluster;   /* spec.clusterName, else the deprecated label; NULL: none */
	const char *uid;       /* NULL: unknown (the claim is gone) */
	const char *key;       /* "<ns>/<name>": the work queue's key */
	/* The external ID on the claim's IPAddress (external_id.h) when the pass sees one; NULL
	 * otherwise (no IPAddress, or none recorded). A hint: the backend checks that the
	 * record it names is this claim's. */
	const char *external_id;
};

/*
 * A resource a backend reads beside its pools: its connection objects (a
 * KeaServer: where the other system is) and the Secrets they name (its
 * credentials). The controller watches each and tells the backend of every
 * change (watched), so credentials are re-read when their Secret changes.
 * Secrets are read only in the controller's own namespace
 * (pk_controller_opts.credentials_namespace), which is all its RBAC grants.
 */
struct pk_backend_watch {
	const char *group; /* "": the core group */
	const char *version, *resource;
	bool namespaced; /* watched in the credentials namespace only; else cluster-scoped */
};

/* A claim's pool, read once per pass: the reconciler fills it from the cache and the kind
 * the backend declares (pk_backend_view_pool); the backend's view_pool adds the rest. */
struct pk_pool_view {
	struct pk_pool_facts facts;  /* missing, deleting, paused, invalid or active */
	char key[PK_OBJECT_KEY_MAX]; /* "<kind>/<ns>/<name>"; "" when no kind of the backend's */
	char text[PK_ERR_MSG_MAX];   /* why it is invalid, for its status; else "" */
	json_t *obj;                 /* the pool as cached (owned), or NULL */
};

/* Releases what a view holds (NULL is fine). */
void pk_pool_view_clear(struct pk_pool_view *v);

/* The address a claim gets, for its IPAddress. */
struct pk_address_lease {
	char address[PK_ADDR_STRLEN];
	unsigned prefix;
	char gateway[PK_ADDR_STRLEN]; /* "" : none */
	bool fresh; /* newly handed out (else: the address already held, re-created) */
	/* The backend's own ID of the record it made in another system, or "": the reconciler
	 * records it on the IPAddress (PK_EXTERNAL_ID_ANNOTATION, external_id.h), and hands it
	 * back in struct pk_claim_id whenever a pass sees that IPAddress. */
	char external_id[PK_EXTERNAL_ID_MAX];
};

/* What an operation that may touch another system came to. */
enum pk_backend_status {
	PK_BACKEND_OK = 0,    /* done (ensure_address: the lease is filled) */
	PK_BACKEND_EXHAUSTED, /* ensure_address: nothing free; the claim waits for a release */
	PK_BACKEND_STALE,     /* ensure_address: the address recorded for the claim may not be
	                         handed to it again: release it once its IPAddress is gone, then
	                         ask again */
	PK_BACKEND_PENDING,   /* asked, no answer yet: the worker goes on to other keys, and the
	                         backend queues the claim again (host->queue_claim) once the
	                         answer is in */
	PK_BACKEND_TRANSIENT, /* failed for now: asked again after retry_after_ms (0: the work
	                         queue's backoff) */
	PK_BACKEND_PERMANENT, /* failed until someone changes something: asked again only after
	                         PK_BACKEND_PERMANENT_RETRY_MS or a change to the claim or pool */
};

/* How long a permanent failure waits before it is asked again anyway. */
#define PK_BACKEND_PERMANENT_RETRY_MS (5L * 60L * 1000L)

/* How long the controller waits before it writes a pool's status after its counts moved
 * (several changes in that time make one write). */
#define PK_POOL_SYNC_DELAY_MS 300L

/*
 * What an operation changed that the controller follows up: it queues
 * the pool's status sync, its look when a reuse grace period ends, the
 * pool's claims not yet bound, or one claim. Nothing when pool_key and
 * claim_key are "".
 */
struct pk_pool_next {
	char pool_key[PK_OBJECT_KEY_MAX];  /* the pool it is about, or "" */
	bool sync;                         /* its counts moved (PK_POOL_SYNC_DELAY_MS) */
	bool wake;                         /* it has room again: its unbound claims are queued */
	long grace_ms;                     /* > 0: looked at again then (PK_WORK_POOL_GRACE) */
	char claim_key[PK_OBJECT_KEY_MAX]; /* a claim to look at again now ("<ns>/<name>"), or "" */
};

/*
 * The result of ensure_address and release_address. With a reason (a
 * condition reason, CamelCase), the claim says it: Ready=False with the
 * reason and message, and an Event; without one (an internal failure, such
 * as memory), nothing is written and the key is retried with backoff.
 */
struct pk_backend_result {
	enum pk_backend_status status;
	long retry_after_ms; /* PK_BACKEND_TRANSIENT: when to ask again; 0: backoff */
	char reason[64];
	char message[PK_ERR_MSG_MAX];
	struct pk_pool_next next; /* whatever the status */
};

/* next says the pool's counts moved (its status is written soon). */
void pk_pool_next_counts_moved(struct pk_pool_next *next, const char *pool_key);

/* Sets r to status with a reason and a formatted message, and nothing to follow (r->next).
 * Returns r. */
struct pk_backend_result *pk_backend_result_set(struct pk_backend_result *r,
                                                enum pk_backend_status status, const char *reason,
                                                const char *fmt, ...) PK_PRINTF(4, 5);

/* What a release gave back (for the reconciler's log, metric and Event). */
struct pk_release_note {
	bool released;                /* false: the backend held nothing for the claim */
	char address[PK_ADDR_STRLEN]; /* its pool: the result's next.pool_key */
	long long grace_seconds; /* the address waits that long before it is handed out again */
};

struct pk_backend_ops {
	/* The pool kinds served (static, pool_kind.h); the controller watches each. */
	const struct pk_pool_kind *(*kinds)(void *self, size_t *n);
	/* Whether a poolRef names a pool of this backend. */
	bool (*serves)(void *self, const json_t *pool_ref);
	/* Optional (NULL: a pool is what its facts say). An active pool's view, as
	 * pk_backend_view_pool read it: the backend adds what only it knows (a spec it cannot
	 * use: facts.state PK_POOL_INVALID and text). PK_ERR_NOMEM. */
	int (*view_pool)(void *self, struct pk_pool_view *v);
	/* Facts the backend adds before an IPAddress of the claim's is adopted: whether it is
	 * one the pool hands out and no other IPAddress holds (pk_claim_facts_check_address). */
	void (*check_address)(void *self, const struct pk_pool_view *pool,
	                      const struct pk_claim_id *id, const json_t *claim,
	                      const json_t *address, struct pk_claim_facts *f);
	/* The claim's address, recorded as held before its IPAddress is created (so that no
	 * other claim gets it): OK with the lease filled, or what else it came to (*out). */
	void (*ensure_address)(void *self, const struct pk_pool_view *pool,
	                       const struct pk_claim_id *id, struct pk_address_lease *lease,
	                       struct pk_backend_result *out);
	/* The IPAddress of a fresh lease was surely not created: the address is free at once. */
	void (*abandon_address)(void *self, const struct pk_claim_id *id,
	                        const struct pk_address_lease *lease);
	/* Whether an address is held for the claim (its IPAddress). */
	bool (*holds)(void *self, const struct pk_claim_id *id);
	/* The claim's IPAddress is gone (a consistent read said so): release its address. Not
	 * OK (*result): the claim keeps its finalizer and is asked again as the result says;
	 * a release the other system already forgot (not found) is OK. */
	void (*release_address)(void *self, const struct pk_claim_id *id,
	                        struct pk_release_note *out, struct pk_backend_result *result);
	/* An IPAddress was seen (the cache or a create's answer): record what it holds, adopting
	 * an address created elsewhere and counting duplicates; *next: what that changed. */
	void (*address_seen)(void *self, const json_t *address, struct pk_pool_next *next);
	/* Leadership started: rebuild every record from a consistent read, before any key is
	 * processed. PK_OK, or an error (tried again). */
	int (*on_leading)(void *self);
	/* Work on one pool (PK_WORK_POOL, PK_WORK_POOL_GRACE), the pool as cached (never NULL:
	 * a pool gone is no work): its status and finalizer; *next: what follows. */
	int (*reconcile_pool)(void *self, const struct pk_work_key *k, const json_t *pool,
	                      struct pk_pool_next *next);
	/* Optional (NULL: nothing but pools). The other resources the backend reads. */
	const struct pk_backend_watch *(*watches)(void *self, size_t *n);
	/* With watches: an object of watches()[i] was added or changed (obj, as the informer
	 * keeps it: identity, generation, spec, data and type), or deleted (obj NULL); key is
	 * "<ns>/<name>" or "<name>". Called from the informer's thread: it must not wait on
	 * the network. *requeue: the backend's claims not Ready yet should be looked at again
	 * (a connection or its credentials changed). */
	void (*watched)(void *self, size_t i, const char *key, const json_t *obj, bool *requeue);
	/* Optional (NULL: nothing to compare). While this process leads, every resync period
	 * (pk_controller_opts): compare the other system's records with the IPAddresses (a
	 * consistent read through the writer); repair what can be repaired (a record whose
	 * IPAddress and claim are both gone, left by a create whose answer was lost: released)
	 * and report the rest (an IPAddress whose record is gone: an Event and the backend's
	 * metrics). Runs on a worker; its calls have deadlines. PK_OK, or an error (logged;
	 * the next period tries again). */
	int (*resync)(void *self);
	/* Optional (NULL: no calls of its own). Leadership was lost, or the process is stopping:
	 * end every call in flight at once. Their answers are dropped and no claim is queued
	 * for them; the next leadership's on_leading starts again from the other system's
	 * records. Called from any thread; it does not wait for the calls to end. */
	void (*cancel)(void *self);
	/* Optional (NULL: always ready). Whether the backend can serve claims now (its system
	 * reachable, its credentials accepted), for /readyz; when not, why, naming what. Called
	 * from the health listener's thread: it must not wait on the network. */
	bool (*ready)(void *self, char *why, size_t len);
	/* Prometheus text of the pools' gauges. */
	void (*write_metrics)(void *self, FILE *f);
	void (*free)(void *self);
};

struct pk_backend {
	const struct pk_backend_ops *ops;
	void *self;
};

/* The pool key of a poolRef seen from namespace ns, for a backend's kinds; false when the
 * backend does not serve it or it names no pool. */
bool pk_backend_pool_key(const struct pk_backend *b, const json_t *pool_ref, const char *ns,
                         char *out, size_t len);

/* The view of the claim's pool: the cached pool (consumed; NULL when not cached) and the
 * facts of the kind of b's its poolRef names, completed by b's view_pool when the pool is
 * active. PK_OK, or PK_ERR_NOMEM. */
int pk_backend_view_pool(const struct pk_backend *b, const json_t *claim, json_t *pool,
                         struct pk_pool_view *out);

/* Whether b has a resync op. */
bool pk_backend_resyncs(const struct pk_backend *b);

/* b's cancel op, when it has one. */
void pk_backend_cancel(const struct pk_backend *b);

/* b's ready op, true when it has none. */
bool pk_backend_ready(const struct pk_backend *b, char *why, size_t len);

/* The kind of b's whose name is kind, or NULL. */
const struct pk_pool_kind *pk_backend_kind(const struct pk_backend *b, const char *kind);

#endif
