/*
 * incluster.h - the in-process allocator backend (backend.h): poolkeeper's
 * IPPool and GlobalIPPool (ipam.poolkeeper.io/v1alpha1), each served by an
 * allocator (allocator.h) in this process.
 *
 * The record of held addresses (one per IPAddress of a pool served, whoever
 * created it), the pool states and their allocators are shared by the
 * workers under one mutex that is never held across an API call: a lease
 * takes the lowest free address and records it as held under the lock (so
 * a spec change that rebuilds the allocator keeps it); the reconciler then
 * creates the IPAddress without it and abandons the lease if the create
 * surely failed. Allocation within a pool is therefore serialised, and
 * claims of any pool are worked on in parallel.
 *
 * Leadership (on_leading): every IPAddress is read with resourceVersion
 * unset (a consistent read, not the informer's cache) and each poolkeeper
 * address recorded as held before any key is processed; a pool's allocator
 * is built from that record when first needed (with the quarantine
 * recorded in the pool's status) and kept current from the controller's
 * own writes and IPAddress events. Two IPAddresses holding one address are
 * logged and reported on the pool's Ready condition, as an Event and a
 * metric, never changed.
 *
 * The pool reconciler (pool_reconciler.c) writes each pool's status
 * (counts, Ready, the quarantine, so it survives a restart) and keeps the
 * protect-pool finalizer on while any address of the pool is held.
 */
#ifndef PK_INCLUSTER_H
#define PK_INCLUSTER_H

#include "backend.h"

/* The kind of the backend's (IPPool, GlobalIPPool) that a poolRef names, or NULL. */
const struct pk_pool_kind *pk_incluster_kind(const json_t *pool_ref);

/* The backend; host is copied (its pointers borrowed). PK_ERR_NOMEM. */
PK_MUST_CHECK int pk_incluster_new(const struct pk_backend_host *host, struct pk_backend *out);

#endif
