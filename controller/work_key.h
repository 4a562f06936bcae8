/*
 * work_key.h - the controller's work keys: what one queue entry names,
 * typed, with one format and one parse.
 *
 *   claim       c/<ns>/<name>          an IPAddressClaim, and the IPAddress named like it
 *   pool        p/<kind>/<ns>/<name>   a pool's status and finalizer (ns empty when the
 *                                      pool kind is not namespaced)
 *   pool grace  g/<kind>/<ns>/<name>   the same, queued when a reuse grace period ends: a key
 *                                      of its own, so the earlier status sync of the pool
 *                                      does not absorb it
 *   resync      r/                     the backends' periodic comparison with the systems
 *                                      they keep records in (backend.h, resync)
 *
 * The queue (queue.h) keys on the text; the workers parse it back. Pure.
 */
#ifndef PK_WORK_KEY_H
#define PK_WORK_KEY_H

#include <stdbool.h>
#include <stddef.h>

#include "pk.h"
#include "pool_ref.h"

/* Room for any formatted key (kind 63, namespace 63, name 253, the slashes and prefix). */
#define PK_WORK_KEY_MAX 400

enum pk_work_kind {
	PK_WORK_CLAIM = 0,
	PK_WORK_POOL,
	PK_WORK_POOL_GRACE,
	PK_WORK_RESYNC,
};

struct pk_work_key {
	enum pk_work_kind kind;
	char pool_kind[64]; /* pools: "IPPool", "GlobalIPPool"; claims: "" */
	char namespace[64]; /* "" for a pool kind that is not namespaced */
	char name[254];
};

/* Fills k (strings truncated to their fields); NULL is "". */
void pk_work_key_claim(struct pk_work_key *k, const char *ns, const char *name);
void pk_work_key_pool(struct pk_work_key *k, enum pk_work_kind kind, const char *pool_kind,
                      const char *ns, const char *name);

/* Fills k as the resync key. */
void pk_work_key_resync(struct pk_work_key *k);

/* The queue text of k into buf (PK_WORK_KEY_MAX is enough); false when it did not fit. */
bool pk_work_key_format(const struct pk_work_key *k, char *buf, size_t len);

/* The key a queue text names; false (k unspecified) when it is not one of the forms above. */
bool pk_work_key_parse(const char *text, struct pk_work_key *k);

/* The parts of a pool key, copied into k (as a PK_WORK_POOL key); false when malformed. */
bool pk_pool_key_parse(const char *pool_key, struct pk_work_key *k);

/* The informer key "<ns>/<name>" (or "<name>") split into ns and name (copied into k). */
void pk_object_key_parse(const char *key, struct pk_work_key *k);

#endif
