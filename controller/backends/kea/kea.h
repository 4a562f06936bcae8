/*
 * kea.h - the Kea backend: addresses leased from an ISC Kea DHCP server
 * through its Control Agent (kea_client.h), keyed on what survives
 * clusterctl move (kea_lease.h), taken and given back by the allocation
 * engine (kea_alloc.h).
 *
 * A Kea pool's spec is a pool's (addresses, prefix, gateway, ...) plus
 * `server`, the KeaServer whose agent it leases through, and `subnetId`,
 * the Kea subnet its addresses lie in. A KeaServer's connection (URL, CA,
 * credentials, owner) reaches the backend through pk_kea_server_set.
 *
 * No worker waits on Kea: ensure_address and release_address start the
 * claim's call on one of the backend's own threads and answer PENDING;
 * the answer queues the claim (host->queue_claim), whose next pass gets
 * it. cancel ends the calls in flight and drops their answers.
 */
#ifndef PK_KEA_H
#define PK_KEA_H

#include "backend.h"

/* The backend's name (--backends) and its pool kinds' backend in pool_ref.c. */
#define PK_KEA_BACKEND "kea"

int pk_kea_new(const struct pk_backend_host *host, struct pk_backend *out);

/* A KeaServer's connection (strings copied; ca NULL: the system's roots; user NULL: none;
 * owner "" or NULL: none), or, with url NULL, the server forgotten. PK_ERR_NOMEM. */
int pk_kea_server_set(struct pk_backend *b, const char *name, const char *url, const char *ca,
                      const char *user, const char *password, const char *owner);

#endif
