/*
 * incluster_internal.h - the in-process allocator backend's state, shared
 * by its files (incluster.c: the seam; held.c: the held record and pool
 * states; pool_reconciler.c: pool status, finalizer and gauges). Not for
 * use outside backends/incluster/.
 */
#ifndef PK_INCLUSTER_INTERNAL_H
#define PK_INCLUSTER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "address.h"
#include "allocator.h"
#include "count.h"
#include "backend.h"
#include "pool.h"
#include "strmap.h"

/* An address held by an IPAddress; the map's key is the IPAddress's namespace/name. */
struct held {
	pk_u128 addr;
	const char *pool_key; /* kind/ns/name, interned (incl_pool_name) */
	enum pk_family family;
};

struct pool_state {
	char key[PK_OBJECT_KEY_MAX]; /* kind/ns/name */
	char uid[128];
	long long generation;
	bool valid;
	char invalid[PK_ERR_MSG_MAX];
	struct pk_pool pool;
	struct pk_allocator *alloc;
	unsigned duplicates;
	char duplicate_text[320];
	bool waiters; /* a claim was told the pool is exhausted */
};

struct incluster {
	struct pk_backend_host host;
	struct pk_backend seam;       /* this backend, as the controller holds it */
	pthread_mutex_t mu;           /* held, states and their allocators */
	struct pk_strmap *held;       /* IPAddress ns/name -> struct held */
	struct pk_strmap *states;     /* pool key -> struct pool_state */
	struct pk_strmap *pool_names; /* pool key -> its one copy (and its held count) */
};

/* What a release found (under mu), for the work after it (outside). */
struct released {
	bool done;
	bool wake; /* claims wait on the pool */
	long long grace;
	char pool_key[PK_OBJECT_KEY_MAX];
	char text[PK_ADDR_STRLEN];
	char still_held_by[PK_OBJECT_KEY_MAX]; /* a duplicate: the other IPAddress, or "" */
};

/* What a lease takes from the pool state under mu. */
struct tentative {
	pk_u128 v;
	bool fresh;                  /* newly handed out (else: re-creating the held address) */
	bool exhausted;              /* none free */
	char total[PK_COUNT_STRLEN]; /* usable addresses, when exhausted */
};

long long incl_wall_now(void);

/* held.c; every function but the lifecycle ones is called under mu. */
int incl_records_init(struct incluster *b);
void incl_records_free(struct incluster *b);
int incl_records_reset(struct incluster *b);
struct pool_state *incl_state_find(struct incluster *b, const char *pool_key);
struct pool_state *incl_pool_state(struct incluster *b, const char *pool_key, const json_t *pool);
size_t incl_pool_held(struct incluster *b, const char *pool_key);
bool incl_held_record(struct incluster *b, const json_t *address, char *pool_key, size_t len);
bool incl_held_elsewhere(struct incluster *b, const char *key);
bool incl_held_stale(struct incluster *b, const struct pool_state *s, const char *key);
void incl_release_held(struct incluster *b, const char *key, struct released *out);
int incl_take_address(struct incluster *b, struct pool_state *s, const char *key,
                      struct tentative *t);
void incl_untake_address(struct incluster *b, const char *key);

/* pool_reconciler.c (outside mu) */
int incl_reconcile_pool(void *self, const struct pk_work_key *k, const json_t *pool,
                        struct pk_pool_next *next);
void incl_write_metrics(void *self, FILE *f);

#endif
