/*
 * backend_set.h - several pool backends side by side, as one backend: the
 * controller's --backends with more than one name. Each question goes to
 * the member it is about:
 *
 *   a claim's poolRef     the member whose kinds it names (serves)
 *   a pool view           the member that declared the view's kind (view_pool,
 *                         check_address, ensure_address)
 *   an IPAddress          the member whose kinds its spec.poolRef names (address_seen)
 *   a pool work key       the member with a kind of that name (reconcile_pool)
 *   a claim's identity    the member that holds an address for it (holds, abandon_address,
 *                         release_address)
 *   the whole             every member, in order (on_leading, cancel, ready: the first not
 *                         ready says why, write_metrics, free)
 *
 * A slow member holds up only its own claims: the set adds no lock and no
 * wait of its own, so each member keeps its own threading (backend.h).
 */
#ifndef PK_BACKEND_SET_H
#define PK_BACKEND_SET_H

#include <stddef.h>

#include "backend.h"
#include "pk.h"

/* At most this many members. */
#define PK_BACKEND_SET_MAX 8

/*
 * The set of members[0..n) as one backend in *out. The set owns the
 * members from then on (its free frees them), also when it fails: then
 * every member is freed and out is untouched. PK_ERR_INVALID for no member,
 * too many, or two that declare one kind; PK_ERR_NOMEM.
 */
PK_MUST_CHECK int pk_backend_set_new(const struct pk_backend *members, size_t n,
                                     struct pk_backend *out, struct pk_err *err);

#endif
